/* Put and get: typed, sized, memory and scalar forms, blocking and non-blocking,
 * with C11 type-generic macros and C++ overloads (shmem.h includes this). */
#ifndef SHMEMPLUS_RMA_H
#define SHMEMPLUS_RMA_H

SHMEMPLUS_BEGIN_C

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);

#define SHMEMPLUS_DECL_RMA(T, N)                                                        \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);              \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);              \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);          \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);
SHMEMPLUS_RMA_TYPES(SHMEMPLUS_DECL_RMA)
#undef SHMEMPLUS_DECL_RMA

#define SHMEMPLUS_DECL_PG(T, N)                                                         \
    void shmem_##N##_p(T *dest, T value, int pe);                                       \
    T shmem_##N##_g(const T *source, int pe);
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

#define SHMEMPLUS_DECL_SIZED(B)                                                         \
    void shmem_put##B(void *dest, const void *source, size_t nelems, int pe);           \
    void shmem_get##B(void *dest, const void *source, size_t nelems, int pe);           \
    void shmem_put##B##_nbi(void *dest, const void *source, size_t nelems, int pe);     \
    void shmem_get##B##_nbi(void *dest, const void *source, size_t nelems, int pe);
SHMEMPLUS_SIZES(SHMEMPLUS_DECL_SIZED)
#undef SHMEMPLUS_DECL_SIZED

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

#if defined(__cplusplus)
#define SHMEMPLUS_CXX_RMA(T, N)                                                         \
    static inline void shmem_put(T *d, const T *s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); } \
    static inline void shmem_get(T *d, const T *s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); } \
    static inline void shmem_put_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_put_nbi(d, s, n, pe); } \
    static inline void shmem_get_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_get_nbi(d, s, n, pe); } \
    static inline void shmem_p(T *d, T v, int pe) { shmem_##N##_p(d, v, pe); }          \
    static inline T shmem_g(const T *s, int pe) { return shmem_##N##_g(s, pe); }
/* C++ overloads over the distinct C types (int8_t and friends are typedefs of these). */
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
/* C11 type-generic forms, dispatched on the destination's (or source's) type. */
#define SHMEMPLUS_GENERIC(ptr, op)                                                      \
    _Generic(*(ptr),                                                                    \
        float: shmem_float_##op, double: shmem_double_##op,                             \
        long double: shmem_longdouble_##op, char: shmem_char_##op,                      \
        signed char: shmem_schar_##op, short: shmem_short_##op, int: shmem_int_##op,    \
        long: shmem_long_##op, long long: shmem_longlong_##op,                          \
        unsigned char: shmem_uchar_##op, unsigned short: shmem_ushort_##op,             \
        unsigned int: shmem_uint_##op, unsigned long: shmem_ulong_##op,                 \
        unsigned long long: shmem_ulonglong_##op)
#define shmem_put(dest, source, nelems, pe) SHMEMPLUS_GENERIC(dest, put)(dest, source, nelems, pe)
#define shmem_get(dest, source, nelems, pe) SHMEMPLUS_GENERIC(dest, get)(dest, source, nelems, pe)
#define shmem_put_nbi(dest, source, nelems, pe) SHMEMPLUS_GENERIC(dest, put_nbi)(dest, source, nelems, pe)
#define shmem_get_nbi(dest, source, nelems, pe) SHMEMPLUS_GENERIC(dest, get_nbi)(dest, source, nelems, pe)
#define shmem_p(dest, value, pe) SHMEMPLUS_GENERIC(dest, p)(dest, value, pe)
#define shmem_g(source, pe) SHMEMPLUS_GENERIC(source, g)(source, pe)
#endif

#endif /* SHMEMPLUS_RMA_H */
