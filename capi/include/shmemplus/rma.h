/* Remote memory access (OpenSHMEM 1.5 section 9.5): put and get in typed, sized,
 * memory and scalar forms, blocking, non-blocking (nbi), strided (iput/iget) and
 * with a signal (put_signal, signal_fetch), each with its context form
 * (shmem_ctx_...), plus C11 type-generic macros and C++ overloads (shmem.h includes
 * this).
 *
 * Strides (dst, sst) count elements and must be at least 1: OpenSHMEM 1.5 does not
 * define zero or negative strides, and this library ends the job naming the
 * argument. sig_op is SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD; any other value ends the
 * job. */
#ifndef SHMEMPLUS_RMA_H
#define SHMEMPLUS_RMA_H

SHMEMPLUS_BEGIN_C

#define SHMEMPLUS_DECL_RMA_OPS(T, PUT, GET, SIG, CTX)                                   \
    void PUT(CTX T *dest, const T *source, size_t nelems, int pe);                      \
    void GET(CTX T *dest, const T *source, size_t nelems, int pe);                      \
    void PUT##_nbi(CTX T *dest, const T *source, size_t nelems, int pe);                \
    void GET##_nbi(CTX T *dest, const T *source, size_t nelems, int pe);                \
    void SIG(CTX T *dest, const T *source, size_t nelems, uint64_t *sig_addr,           \
             uint64_t signal, int sig_op, int pe);                                      \
    void SIG##_nbi(CTX T *dest, const T *source, size_t nelems, uint64_t *sig_addr,     \
                   uint64_t signal, int sig_op, int pe);
#define SHMEMPLUS_DECL_STRIDED(T, IPUT, IGET, CTX)                                      \
    void IPUT(CTX T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
              int pe);                                                                  \
    void IGET(CTX T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
              int pe);

#define SHMEMPLUS_CTX_ARG shmem_ctx_t ctx,
#define SHMEMPLUS_NO_ARG

/* Typed: shmem_long_put, shmem_ctx_long_put, ... */
#define SHMEMPLUS_DECL_RMA(T, N)                                                        \
    SHMEMPLUS_DECL_RMA_OPS(T, shmem_##N##_put, shmem_##N##_get, shmem_##N##_put_signal, \
                           SHMEMPLUS_NO_ARG)                                          \
    SHMEMPLUS_DECL_RMA_OPS(T, shmem_ctx_##N##_put, shmem_ctx_##N##_get,             \
                           shmem_ctx_##N##_put_signal, SHMEMPLUS_CTX_ARG)             \
    SHMEMPLUS_DECL_STRIDED(T, shmem_##N##_iput, shmem_##N##_iget, SHMEMPLUS_NO_ARG)     \
    SHMEMPLUS_DECL_STRIDED(T, shmem_ctx_##N##_iput, shmem_ctx_##N##_iget, SHMEMPLUS_CTX_ARG)
SHMEMPLUS_RMA_TYPES(SHMEMPLUS_DECL_RMA)
#undef SHMEMPLUS_DECL_RMA

/* Scalar p and g (long double's are inline functions below). */
#define SHMEMPLUS_DECL_PG(T, N)                                                         \
    void shmem_##N##_p(T *dest, T value, int pe);                                       \
    T shmem_##N##_g(const T *source, int pe);                                           \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                  \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);
#define SHMEMPLUS_NOT_LONGDOUBLE(X)                                                     \
    X(float, float) X(double, double) X(char, char) X(signed char, schar)               \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)                    \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)             \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)            \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)             \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)         \
    X(ptrdiff_t, ptrdiff)
SHMEMPLUS_NOT_LONGDOUBLE(SHMEMPLUS_DECL_PG)
#undef SHMEMPLUS_DECL_PG

/* Sized: shmem_put64, shmem_iput64, shmem_put64_signal, shmem_ctx_put64, ... */
#define SHMEMPLUS_DECL_SIZED(B)                                                         \
    SHMEMPLUS_DECL_RMA_OPS(void, shmem_put##B, shmem_get##B, shmem_put##B##_signal,  \
                           SHMEMPLUS_NO_ARG)                                          \
    SHMEMPLUS_DECL_RMA_OPS(void, shmem_ctx_put##B, shmem_ctx_get##B,                \
                           shmem_ctx_put##B##_signal, SHMEMPLUS_CTX_ARG)              \
    SHMEMPLUS_DECL_STRIDED(void, shmem_iput##B, shmem_iget##B, SHMEMPLUS_NO_ARG)        \
    SHMEMPLUS_DECL_STRIDED(void, shmem_ctx_iput##B, shmem_ctx_iget##B, SHMEMPLUS_CTX_ARG)
SHMEMPLUS_SIZES(SHMEMPLUS_DECL_SIZED)
#undef SHMEMPLUS_DECL_SIZED

/* Memory (bytes): shmem_putmem, shmem_ctx_putmem_signal, ... */
SHMEMPLUS_DECL_RMA_OPS(void, shmem_putmem, shmem_getmem, shmem_putmem_signal,
                       SHMEMPLUS_NO_ARG)
SHMEMPLUS_DECL_RMA_OPS(void, shmem_ctx_putmem, shmem_ctx_getmem, shmem_ctx_putmem_signal,
                       SHMEMPLUS_CTX_ARG)

/* This PE's own signal word, read atomically. */
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);

SHMEMPLUS_END_C

/* long double passes by value in x87 registers, which the library (written in Rust)
 * cannot take: its p and g are these inline functions over put and get. */
static inline void shmem_longdouble_p(long double *dest, long double value, int pe) {
    shmem_longdouble_put(dest, &value, 1, pe);
}
static inline long double shmem_longdouble_g(const long double *source, int pe) {
    long double value;
    shmem_longdouble_get(&value, source, 1, pe);
    return value;
}
static inline void shmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value,
                                          int pe) {
    shmem_ctx_longdouble_put(ctx, dest, &value, 1, pe);
}
static inline long double shmem_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source,
                                                 int pe) {
    long double value;
    shmem_ctx_longdouble_get(ctx, &value, source, 1, pe);
    return value;
}

#if defined(__cplusplus)
/* C++ overloads over the distinct C types (int8_t ... ptrdiff_t are typedefs of
 * these), each with its context form. */
#define SHMEMPLUS_CXX_RMA(T, N)                                                         \
    static inline void shmem_put(T *d, const T *s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); } \
    static inline void shmem_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put(c, d, s, n, pe); } \
    static inline void shmem_get(T *d, const T *s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); } \
    static inline void shmem_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get(c, d, s, n, pe); } \
    static inline void shmem_put_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_put_nbi(d, s, n, pe); } \
    static inline void shmem_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put_nbi(c, d, s, n, pe); } \
    static inline void shmem_get_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_get_nbi(d, s, n, pe); } \
    static inline void shmem_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get_nbi(c, d, s, n, pe); } \
    static inline void shmem_p(T *d, T v, int pe) { shmem_##N##_p(d, v, pe); }          \
    static inline void shmem_p(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_p(c, d, v, pe); } \
    static inline T shmem_g(const T *s, int pe) { return shmem_##N##_g(s, pe); }        \
    static inline T shmem_g(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_g(c, s, pe); } \
    static inline void shmem_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_##N##_iput(d, s, dst, sst, n, pe); } \
    static inline void shmem_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_ctx_##N##_iput(c, d, s, dst, sst, n, pe); } \
    static inline void shmem_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_##N##_iget(d, s, dst, sst, n, pe); } \
    static inline void shmem_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_ctx_##N##_iget(c, d, s, dst, sst, n, pe); } \
    static inline void shmem_put_signal(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { shmem_##N##_put_signal(d, s, n, sig, v, op, pe); } \
    static inline void shmem_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { shmem_ctx_##N##_put_signal(c, d, s, n, sig, v, op, pe); } \
    static inline void shmem_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { shmem_##N##_put_signal_nbi(d, s, n, sig, v, op, pe); } \
    static inline void shmem_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sig, v, op, pe); }
SHMEMPLUS_CXX_RMA(float, float)
SHMEMPLUS_CXX_RMA(double, double)
SHMEMPLUS_CXX_RMA(long double, longdouble)
SHMEMPLUS_CXX_RMA(char, char)
SHMEMPLUS_CXX_RMA(signed char, schar)
SHMEMPLUS_CXX_RMA(short, short)
SHMEMPLUS_CXX_RMA(int, int)
SHMEMPLUS_CXX_RMA(long, long)
SHMEMPLUS_CXX_RMA(long long, longlong)
SHMEMPLUS_CXX_RMA(unsigned char, uchar)
SHMEMPLUS_CXX_RMA(unsigned short, ushort)
SHMEMPLUS_CXX_RMA(unsigned int, uint)
SHMEMPLUS_CXX_RMA(unsigned long, ulong)
SHMEMPLUS_CXX_RMA(unsigned long long, ulonglong)
#undef SHMEMPLUS_CXX_RMA
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* C11 type-generic forms, dispatched on the destination's (or, for g, the source's)
 * type. The basic types cover int8_t ... ptrdiff_t, which are typedefs of them (a
 * _Generic must not name one type twice). Each name takes the context as an optional
 * first argument, told apart by the number of arguments. */
#define SHMEMPLUS_RMA_GENERIC(ptr, pre, op)                                             \
    _Generic(*(ptr),                                                                    \
        float: pre##float_##op, double: pre##double_##op,                               \
        long double: pre##longdouble_##op, char: pre##char_##op,                        \
        signed char: pre##schar_##op, short: pre##short_##op, int: pre##int_##op,       \
        long: pre##long_##op, long long: pre##longlong_##op,                            \
        unsigned char: pre##uchar_##op, unsigned short: pre##ushort_##op,               \
        unsigned int: pre##uint_##op, unsigned long: pre##ulong_##op,                   \
        unsigned long long: pre##ulonglong_##op)
/* The number of arguments (1 to 8) of a call, and the name NAME<count>. */
#define SHMEMPLUS_RMA_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, N, ...) N
#define SHMEMPLUS_RMA_NARGS(...) SHMEMPLUS_RMA_NARGS_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define SHMEMPLUS_RMA_PASTE_(a, b) a##b
#define SHMEMPLUS_RMA_PASTE(a, b) SHMEMPLUS_RMA_PASTE_(a, b)
#define SHMEMPLUS_RMA_BY_NARGS(name, ...)                                               \
    SHMEMPLUS_RMA_PASTE(name, SHMEMPLUS_RMA_NARGS(__VA_ARGS__))(__VA_ARGS__)

#define shmem_put(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_PUT_, __VA_ARGS__)
#define SHMEMPLUS_PUT_4(d, s, n, pe) SHMEMPLUS_RMA_GENERIC(d, shmem_, put)(d, s, n, pe)
#define SHMEMPLUS_PUT_5(c, d, s, n, pe) SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, put)(c, d, s, n, pe)
#define shmem_get(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_GET_, __VA_ARGS__)
#define SHMEMPLUS_GET_4(d, s, n, pe) SHMEMPLUS_RMA_GENERIC(d, shmem_, get)(d, s, n, pe)
#define SHMEMPLUS_GET_5(c, d, s, n, pe) SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, get)(c, d, s, n, pe)
#define shmem_put_nbi(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_PUT_NBI_, __VA_ARGS__)
#define SHMEMPLUS_PUT_NBI_4(d, s, n, pe) SHMEMPLUS_RMA_GENERIC(d, shmem_, put_nbi)(d, s, n, pe)
#define SHMEMPLUS_PUT_NBI_5(c, d, s, n, pe)                                             \
    SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, put_nbi)(c, d, s, n, pe)
#define shmem_get_nbi(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_GET_NBI_, __VA_ARGS__)
#define SHMEMPLUS_GET_NBI_4(d, s, n, pe) SHMEMPLUS_RMA_GENERIC(d, shmem_, get_nbi)(d, s, n, pe)
#define SHMEMPLUS_GET_NBI_5(c, d, s, n, pe)                                             \
    SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, get_nbi)(c, d, s, n, pe)
#define shmem_p(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_P_, __VA_ARGS__)
#define SHMEMPLUS_P_3(d, v, pe) SHMEMPLUS_RMA_GENERIC(d, shmem_, p)(d, v, pe)
#define SHMEMPLUS_P_4(c, d, v, pe) SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, p)(c, d, v, pe)
#define shmem_g(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_G_, __VA_ARGS__)
#define SHMEMPLUS_G_2(s, pe) SHMEMPLUS_RMA_GENERIC(s, shmem_, g)(s, pe)
#define SHMEMPLUS_G_3(c, s, pe) SHMEMPLUS_RMA_GENERIC(s, shmem_ctx_, g)(c, s, pe)
#define shmem_iput(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_IPUT_, __VA_ARGS__)
#define SHMEMPLUS_IPUT_6(d, s, dst, sst, n, pe)                                         \
    SHMEMPLUS_RMA_GENERIC(d, shmem_, iput)(d, s, dst, sst, n, pe)
#define SHMEMPLUS_IPUT_7(c, d, s, dst, sst, n, pe)                                      \
    SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, iput)(c, d, s, dst, sst, n, pe)
#define shmem_iget(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_IGET_, __VA_ARGS__)
#define SHMEMPLUS_IGET_6(d, s, dst, sst, n, pe)                                         \
    SHMEMPLUS_RMA_GENERIC(d, shmem_, iget)(d, s, dst, sst, n, pe)
#define SHMEMPLUS_IGET_7(c, d, s, dst, sst, n, pe)                                      \
    SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, iget)(c, d, s, dst, sst, n, pe)
#define shmem_put_signal(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_PUT_SIGNAL_, __VA_ARGS__)
#define SHMEMPLUS_PUT_SIGNAL_7(d, s, n, sig, v, op, pe)                                 \
    SHMEMPLUS_RMA_GENERIC(d, shmem_, put_signal)(d, s, n, sig, v, op, pe)
#define SHMEMPLUS_PUT_SIGNAL_8(c, d, s, n, sig, v, op, pe)                              \
    SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, put_signal)(c, d, s, n, sig, v, op, pe)
#define shmem_put_signal_nbi(...) SHMEMPLUS_RMA_BY_NARGS(SHMEMPLUS_PUT_SIGNAL_NBI_, __VA_ARGS__)
#define SHMEMPLUS_PUT_SIGNAL_NBI_7(d, s, n, sig, v, op, pe)                             \
    SHMEMPLUS_RMA_GENERIC(d, shmem_, put_signal_nbi)(d, s, n, sig, v, op, pe)
#define SHMEMPLUS_PUT_SIGNAL_NBI_8(c, d, s, n, sig, v, op, pe)                          \
    SHMEMPLUS_RMA_GENERIC(d, shmem_ctx_, put_signal_nbi)(c, d, s, n, sig, v, op, pe)
#endif

#endif /* SHMEMPLUS_RMA_H */
