/* Atomic memory operations (OpenSHMEM 1.5 section 9.7): typed, context and
 * non-blocking forms, the deprecated names, C11 type-generic macros and C++ overloads
 * (shmem.h includes this). The non-blocking fetching forms complete before they
 * return. */
#ifndef SHMEMPLUS_AMO_H
#define SHMEMPLUS_AMO_H

SHMEMPLUS_BEGIN_C

/* A fetching AMO with operands ARGS (each `T name`) and its _nbi and ctx forms. */
#define SHMEMPLUS_DECL_AMO_F(T, N, OP, PARAMS)                                          \
    T shmem_##N##_##OP(T *dest SHMEMPLUS_UNPAREN PARAMS, int pe);                       \
    T shmem_ctx_##N##_##OP(shmem_ctx_t ctx, T *dest SHMEMPLUS_UNPAREN PARAMS, int pe);  \
    void shmem_##N##_##OP##_nbi(T *fetch, T *dest SHMEMPLUS_UNPAREN PARAMS, int pe);    \
    void shmem_ctx_##N##_##OP##_nbi(shmem_ctx_t ctx, T *fetch,                          \
                                    T *dest SHMEMPLUS_UNPAREN PARAMS, int pe);
/* A non-fetching AMO and its ctx form. */
#define SHMEMPLUS_DECL_AMO_N(T, N, OP, PARAMS)                                          \
    void shmem_##N##_##OP(T *dest SHMEMPLUS_UNPAREN PARAMS, int pe);                    \
    void shmem_ctx_##N##_##OP(shmem_ctx_t ctx, T *dest SHMEMPLUS_UNPAREN PARAMS, int pe);
#define SHMEMPLUS_UNPAREN(...) __VA_ARGS__

#define SHMEMPLUS_DECL_AMO_EXT(T, N)                                                    \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                                \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);           \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);               \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source,   \
                                          int pe);                                      \
    SHMEMPLUS_DECL_AMO_N(T, N, atomic_set, (, T value))                                 \
    SHMEMPLUS_DECL_AMO_F(T, N, atomic_swap, (, T value))
SHMEMPLUS_AMO_STANDARD_TYPES(SHMEMPLUS_DECL_AMO_EXT)
SHMEMPLUS_AMO_EXTENDED_ONLY_TYPES(SHMEMPLUS_DECL_AMO_EXT)
#undef SHMEMPLUS_DECL_AMO_EXT

#define SHMEMPLUS_DECL_AMO_STD(T, N)                                                    \
    SHMEMPLUS_DECL_AMO_F(T, N, atomic_compare_swap, (, T cond, T value))                \
    SHMEMPLUS_DECL_AMO_F(T, N, atomic_fetch_inc, ())                                    \
    SHMEMPLUS_DECL_AMO_N(T, N, atomic_inc, ())                                          \
    SHMEMPLUS_DECL_AMO_F(T, N, atomic_fetch_add, (, T value))                           \
    SHMEMPLUS_DECL_AMO_N(T, N, atomic_add, (, T value))
SHMEMPLUS_AMO_STANDARD_TYPES(SHMEMPLUS_DECL_AMO_STD)
#undef SHMEMPLUS_DECL_AMO_STD

#define SHMEMPLUS_DECL_AMO_BIT(T, N)                                                    \
    SHMEMPLUS_DECL_AMO_F(T, N, atomic_fetch_and, (, T value))                           \
    SHMEMPLUS_DECL_AMO_N(T, N, atomic_and, (, T value))                                 \
    SHMEMPLUS_DECL_AMO_F(T, N, atomic_fetch_or, (, T value))                            \
    SHMEMPLUS_DECL_AMO_N(T, N, atomic_or, (, T value))                                  \
    SHMEMPLUS_DECL_AMO_F(T, N, atomic_fetch_xor, (, T value))                           \
    SHMEMPLUS_DECL_AMO_N(T, N, atomic_xor, (, T value))
SHMEMPLUS_AMO_BITWISE_TYPES(SHMEMPLUS_DECL_AMO_BIT)
#undef SHMEMPLUS_DECL_AMO_BIT
#undef SHMEMPLUS_DECL_AMO_F
#undef SHMEMPLUS_DECL_AMO_N

/* Deprecated names (OpenSHMEM 1.3's, deprecated by 1.4). */
#define SHMEMPLUS_DECL_AMO_DEPX(T, N)                                                   \
    T shmem_##N##_fetch(const T *source, int pe);                                       \
    void shmem_##N##_set(T *dest, T value, int pe);                                     \
    T shmem_##N##_swap(T *dest, T value, int pe);
#define SHMEMPLUS_DECL_AMO_DEP(T, N)                                                    \
    SHMEMPLUS_DECL_AMO_DEPX(T, N)                                                       \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);                              \
    T shmem_##N##_finc(T *dest, int pe);                                                \
    void shmem_##N##_inc(T *dest, int pe);                                              \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                       \
    void shmem_##N##_add(T *dest, T value, int pe);
SHMEMPLUS_DECL_AMO_DEP(int, int)
SHMEMPLUS_DECL_AMO_DEP(long, long)
SHMEMPLUS_DECL_AMO_DEP(long long, longlong)
SHMEMPLUS_AMO_EXTENDED_ONLY_TYPES(SHMEMPLUS_DECL_AMO_DEPX)
#undef SHMEMPLUS_DECL_AMO_DEP
#undef SHMEMPLUS_DECL_AMO_DEPX
/* The untyped swap of the earliest SHMEM, on a long. */
long shmem_swap(long *dest, long value, int pe);

SHMEMPLUS_END_C

#if defined(__cplusplus)
/* C++ overloads over the distinct C types (int32_t and friends are typedefs of these). */
#define SHMEMPLUS_CXX_AMO_F(T, N, OP, PARAMS, ARGS)                                     \
    static inline T shmem_##OP(T *d SHMEMPLUS_UNPAREN PARAMS, int pe) {                 \
        return shmem_##N##_##OP(d SHMEMPLUS_UNPAREN ARGS, pe);                          \
    }                                                                                   \
    static inline T shmem_##OP(shmem_ctx_t c, T *d SHMEMPLUS_UNPAREN PARAMS, int pe) {  \
        return shmem_ctx_##N##_##OP(c, d SHMEMPLUS_UNPAREN ARGS, pe);                   \
    }                                                                                   \
    static inline void shmem_##OP##_nbi(T *f, T *d SHMEMPLUS_UNPAREN PARAMS, int pe) {  \
        shmem_##N##_##OP##_nbi(f, d SHMEMPLUS_UNPAREN ARGS, pe);                        \
    }                                                                                   \
    static inline void shmem_##OP##_nbi(shmem_ctx_t c, T *f, T *d SHMEMPLUS_UNPAREN PARAMS, \
                                        int pe) {                                       \
        shmem_ctx_##N##_##OP##_nbi(c, f, d SHMEMPLUS_UNPAREN ARGS, pe);                 \
    }
#define SHMEMPLUS_CXX_AMO_N(T, N, OP, PARAMS, ARGS)                                     \
    static inline void shmem_##OP(T *d SHMEMPLUS_UNPAREN PARAMS, int pe) {              \
        shmem_##N##_##OP(d SHMEMPLUS_UNPAREN ARGS, pe);                                 \
    }                                                                                   \
    static inline void shmem_##OP(shmem_ctx_t c, T *d SHMEMPLUS_UNPAREN PARAMS, int pe) { \
        shmem_ctx_##N##_##OP(c, d SHMEMPLUS_UNPAREN ARGS, pe);                          \
    }
#define SHMEMPLUS_CXX_AMO_EXT(T, N)                                                     \
    static inline T shmem_atomic_fetch(const T *s, int pe) {                            \
        return shmem_##N##_atomic_fetch(s, pe);                                         \
    }                                                                                   \
    static inline T shmem_atomic_fetch(shmem_ctx_t c, const T *s, int pe) {             \
        return shmem_ctx_##N##_atomic_fetch(c, s, pe);                                  \
    }                                                                                   \
    static inline void shmem_atomic_fetch_nbi(T *f, const T *s, int pe) {               \
        shmem_##N##_atomic_fetch_nbi(f, s, pe);                                         \
    }                                                                                   \
    static inline void shmem_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe) { \
        shmem_ctx_##N##_atomic_fetch_nbi(c, f, s, pe);                                  \
    }                                                                                   \
    SHMEMPLUS_CXX_AMO_N(T, N, atomic_set, (, T v), (, v))                               \
    SHMEMPLUS_CXX_AMO_F(T, N, atomic_swap, (, T v), (, v))
#define SHMEMPLUS_CXX_AMO_STD(T, N)                                                     \
    SHMEMPLUS_CXX_AMO_F(T, N, atomic_compare_swap, (, T k, T v), (, k, v))              \
    SHMEMPLUS_CXX_AMO_F(T, N, atomic_fetch_inc, (), ())                                 \
    SHMEMPLUS_CXX_AMO_N(T, N, atomic_inc, (), ())                                       \
    SHMEMPLUS_CXX_AMO_F(T, N, atomic_fetch_add, (, T v), (, v))                         \
    SHMEMPLUS_CXX_AMO_N(T, N, atomic_add, (, T v), (, v))
#define SHMEMPLUS_CXX_AMO_BIT(T, N)                                                     \
    SHMEMPLUS_CXX_AMO_F(T, N, atomic_fetch_and, (, T v), (, v))                         \
    SHMEMPLUS_CXX_AMO_N(T, N, atomic_and, (, T v), (, v))                               \
    SHMEMPLUS_CXX_AMO_F(T, N, atomic_fetch_or, (, T v), (, v))                          \
    SHMEMPLUS_CXX_AMO_N(T, N, atomic_or, (, T v), (, v))                                \
    SHMEMPLUS_CXX_AMO_F(T, N, atomic_fetch_xor, (, T v), (, v))                         \
    SHMEMPLUS_CXX_AMO_N(T, N, atomic_xor, (, T v), (, v))
#define SHMEMPLUS_CXX_AMO_DEPX(T, N)                                                    \
    static inline T shmem_fetch(const T *s, int pe) { return shmem_##N##_fetch(s, pe); } \
    static inline void shmem_set(T *d, T v, int pe) { shmem_##N##_set(d, v, pe); }
#define SHMEMPLUS_CXX_AMO_DEP(T, N)                                                     \
    SHMEMPLUS_CXX_AMO_DEPX(T, N)                                                        \
    static inline T shmem_cswap(T *d, T c, T v, int pe) { return shmem_##N##_cswap(d, c, v, pe); } \
    static inline T shmem_finc(T *d, int pe) { return shmem_##N##_finc(d, pe); }       \
    static inline void shmem_inc(T *d, int pe) { shmem_##N##_inc(d, pe); }              \
    static inline T shmem_fadd(T *d, T v, int pe) { return shmem_##N##_fadd(d, v, pe); } \
    static inline void shmem_add(T *d, T v, int pe) { shmem_##N##_add(d, v, pe); }
/* shmem_swap on a long is the library's own (untyped) routine. */
#define SHMEMPLUS_CXX_AMO_DEP_SWAP(T, N)                                                \
    static inline T shmem_swap(T *d, T v, int pe) { return shmem_##N##_swap(d, v, pe); }

SHMEMPLUS_CXX_AMO_EXT(float, float)
SHMEMPLUS_CXX_AMO_EXT(double, double)
SHMEMPLUS_CXX_AMO_DEPX(float, float)
SHMEMPLUS_CXX_AMO_DEPX(double, double)
SHMEMPLUS_CXX_AMO_DEP_SWAP(float, float)
SHMEMPLUS_CXX_AMO_DEP_SWAP(double, double)
SHMEMPLUS_CXX_AMO_EXT(int, int)
SHMEMPLUS_CXX_AMO_STD(int, int)
SHMEMPLUS_CXX_AMO_BIT(int, int32)
SHMEMPLUS_CXX_AMO_DEP(int, int)
SHMEMPLUS_CXX_AMO_DEP_SWAP(int, int)
SHMEMPLUS_CXX_AMO_EXT(long, long)
SHMEMPLUS_CXX_AMO_STD(long, long)
SHMEMPLUS_CXX_AMO_BIT(long, int64)
SHMEMPLUS_CXX_AMO_DEP(long, long)
SHMEMPLUS_CXX_AMO_EXT(long long, longlong)
SHMEMPLUS_CXX_AMO_STD(long long, longlong)
SHMEMPLUS_CXX_AMO_DEP(long long, longlong)
SHMEMPLUS_CXX_AMO_DEP_SWAP(long long, longlong)
SHMEMPLUS_CXX_AMO_EXT(unsigned int, uint)
SHMEMPLUS_CXX_AMO_STD(unsigned int, uint)
SHMEMPLUS_CXX_AMO_BIT(unsigned int, uint)
SHMEMPLUS_CXX_AMO_EXT(unsigned long, ulong)
SHMEMPLUS_CXX_AMO_STD(unsigned long, ulong)
SHMEMPLUS_CXX_AMO_BIT(unsigned long, ulong)
SHMEMPLUS_CXX_AMO_EXT(unsigned long long, ulonglong)
SHMEMPLUS_CXX_AMO_STD(unsigned long long, ulonglong)
SHMEMPLUS_CXX_AMO_BIT(unsigned long long, ulonglong)
#undef SHMEMPLUS_CXX_AMO_F
#undef SHMEMPLUS_CXX_AMO_N
#undef SHMEMPLUS_CXX_AMO_EXT
#undef SHMEMPLUS_CXX_AMO_STD
#undef SHMEMPLUS_CXX_AMO_BIT
#undef SHMEMPLUS_CXX_AMO_DEP
#undef SHMEMPLUS_CXX_AMO_DEPX
#undef SHMEMPLUS_CXX_AMO_DEP_SWAP
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* C11 type-generic forms, dispatched on the type the first address points to; the
 * forms with a context take one argument more, which picks them. */
#define SHMEMPLUS_AMO_STD_ASSOC(pre, op)                                                \
    int: pre##int_##op, long: pre##long_##op, long long: pre##longlong_##op,            \
    unsigned int: pre##uint_##op, unsigned long: pre##ulong_##op,                       \
    unsigned long long: pre##ulonglong_##op
#define SHMEMPLUS_AMO_EXT(pre, p, op)                                                   \
    _Generic(*(p), float: pre##float_##op, double: pre##double_##op,                    \
             SHMEMPLUS_AMO_STD_ASSOC(pre, op))
#define SHMEMPLUS_AMO_STD(pre, p, op) _Generic(*(p), SHMEMPLUS_AMO_STD_ASSOC(pre, op))
#define SHMEMPLUS_AMO_BIT(pre, p, op)                                                   \
    _Generic(*(p), unsigned int: pre##uint_##op, unsigned long: pre##ulong_##op,        \
             unsigned long long: pre##ulonglong_##op, int: pre##int32_##op,             \
             long: pre##int64_##op)
#define SHMEMPLUS_PICK3(_1, _2, _3, NAME, ...) NAME
#define SHMEMPLUS_PICK4(_1, _2, _3, _4, NAME, ...) NAME
#define SHMEMPLUS_PICK5(_1, _2, _3, _4, _5, NAME, ...) NAME
#define SHMEMPLUS_PICK6(_1, _2, _3, _4, _5, _6, NAME, ...) NAME
#define SHMEMPLUS_A2(K, op, a, b) SHMEMPLUS_AMO_##K(shmem_, a, op)(a, b)
#define SHMEMPLUS_A3(K, op, a, b, c) SHMEMPLUS_AMO_##K(shmem_, a, op)(a, b, c)
#define SHMEMPLUS_A4(K, op, a, b, c, d) SHMEMPLUS_AMO_##K(shmem_, a, op)(a, b, c, d)
#define SHMEMPLUS_A5(K, op, a, b, c, d, e) SHMEMPLUS_AMO_##K(shmem_, a, op)(a, b, c, d, e)
#define SHMEMPLUS_C3(K, op, x, a, b) SHMEMPLUS_AMO_##K(shmem_ctx_, a, op)(x, a, b)
#define SHMEMPLUS_C4(K, op, x, a, b, c) SHMEMPLUS_AMO_##K(shmem_ctx_, a, op)(x, a, b, c)
#define SHMEMPLUS_C5(K, op, x, a, b, c, d) SHMEMPLUS_AMO_##K(shmem_ctx_, a, op)(x, a, b, c, d)
#define SHMEMPLUS_C6(K, op, x, a, b, c, d, e)                                           \
    SHMEMPLUS_AMO_##K(shmem_ctx_, a, op)(x, a, b, c, d, e)
#define SHMEMPLUS_ARGS2(K, op, ...) SHMEMPLUS_PICK3(__VA_ARGS__, SHMEMPLUS_C3, SHMEMPLUS_A2, 0)(K, op, __VA_ARGS__)
#define SHMEMPLUS_ARGS3(K, op, ...) SHMEMPLUS_PICK4(__VA_ARGS__, SHMEMPLUS_C4, SHMEMPLUS_A3, 0)(K, op, __VA_ARGS__)
#define SHMEMPLUS_ARGS4(K, op, ...) SHMEMPLUS_PICK5(__VA_ARGS__, SHMEMPLUS_C5, SHMEMPLUS_A4, 0)(K, op, __VA_ARGS__)
#define SHMEMPLUS_ARGS5(K, op, ...) SHMEMPLUS_PICK6(__VA_ARGS__, SHMEMPLUS_C6, SHMEMPLUS_A5, 0)(K, op, __VA_ARGS__)

#define shmem_atomic_fetch(...) SHMEMPLUS_ARGS2(EXT, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...) SHMEMPLUS_ARGS3(EXT, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEMPLUS_ARGS3(EXT, atomic_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) SHMEMPLUS_ARGS4(STD, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SHMEMPLUS_ARGS2(STD, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEMPLUS_ARGS2(STD, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEMPLUS_ARGS3(STD, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEMPLUS_ARGS3(STD, atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEMPLUS_ARGS3(BIT, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEMPLUS_ARGS3(BIT, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEMPLUS_ARGS3(BIT, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEMPLUS_ARGS3(BIT, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEMPLUS_ARGS3(BIT, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEMPLUS_ARGS3(BIT, atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) SHMEMPLUS_ARGS3(EXT, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) SHMEMPLUS_ARGS4(EXT, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) SHMEMPLUS_ARGS5(STD, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) SHMEMPLUS_ARGS3(STD, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEMPLUS_ARGS4(STD, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEMPLUS_ARGS4(BIT, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEMPLUS_ARGS4(BIT, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEMPLUS_ARGS4(BIT, atomic_fetch_xor_nbi, __VA_ARGS__)

/* Deprecated type-generic names. */
#define SHMEMPLUS_AMO_DEP(p, op)                                                        \
    _Generic(*(p), int: shmem_int_##op, long: shmem_long_##op, long long: shmem_longlong_##op)
#define SHMEMPLUS_AMO_DEPX(p, op)                                                       \
    _Generic(*(p), float: shmem_float_##op, double: shmem_double_##op,                  \
             int: shmem_int_##op, long: shmem_long_##op, long long: shmem_longlong_##op)
#define shmem_fetch(source, pe) SHMEMPLUS_AMO_DEPX(source, fetch)(source, pe)
#define shmem_set(dest, value, pe) SHMEMPLUS_AMO_DEPX(dest, set)(dest, value, pe)
#define shmem_swap(dest, value, pe) SHMEMPLUS_AMO_DEPX(dest, swap)(dest, value, pe)
#define shmem_cswap(dest, cond, value, pe) SHMEMPLUS_AMO_DEP(dest, cswap)(dest, cond, value, pe)
#define shmem_finc(dest, pe) SHMEMPLUS_AMO_DEP(dest, finc)(dest, pe)
#define shmem_inc(dest, pe) SHMEMPLUS_AMO_DEP(dest, inc)(dest, pe)
#define shmem_fadd(dest, value, pe) SHMEMPLUS_AMO_DEP(dest, fadd)(dest, value, pe)
#define shmem_add(dest, value, pe) SHMEMPLUS_AMO_DEP(dest, add)(dest, value, pe)
#endif

#endif /* SHMEMPLUS_AMO_H */
