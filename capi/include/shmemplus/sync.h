/* Point-to-point synchronization (OpenSHMEM 1.5 section 9.10): wait and test on this
 * PE's symmetric variables, in single, all/any/some and vector forms, the deprecated
 * shmem_TYPENAME_wait, shmem_signal_wait_until, C11 type-generic macros and C++
 * overloads (shmem.h includes this). The comparisons are SHMEM_CMP_*. */
#ifndef SHMEMPLUS_SYNC_H
#define SHMEMPLUS_SYNC_H

SHMEMPLUS_BEGIN_C

#define SHMEMPLUS_DECL_P2P(T, N)                                                        \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                         \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status,         \
                                    int cmp, T cmp_value);                              \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status,       \
                                      int cmp, T cmp_value);                            \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,        \
                                       const int *status, int cmp, T cmp_value);        \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status,  \
                                           int cmp, T *cmp_values);                     \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems,                   \
                                             const int *status, int cmp,                \
                                             T *cmp_values);                            \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices, \
                                              const int *status, int cmp,               \
                                              T *cmp_values);                           \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                                \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp,       \
                             T cmp_value);                                              \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp,    \
                                T cmp_value);                                           \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,              \
                                 const int *status, int cmp, T cmp_value);              \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status,         \
                                    int cmp, T *cmp_values);                            \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status,      \
                                       int cmp, T *cmp_values);                         \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,       \
                                        const int *status, int cmp, T *cmp_values);     \
    void shmem_##N##_wait(T *ivar, T cmp_value); /* deprecated */
SHMEMPLUS_P2P_TYPES(SHMEMPLUS_DECL_P2P)
#undef SHMEMPLUS_DECL_P2P

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* The untyped long forms of OpenSHMEM 1.3 (shmem_wait is deprecated). */
void shmem_wait_until(long *ivar, int cmp, long cmp_value);
void shmem_wait(long *ivar, long cmp_value);

SHMEMPLUS_END_C

#if defined(__cplusplus)
/* C++ overloads over the distinct C types (int32_t and friends are typedefs of these). */
#define SHMEMPLUS_CXX_P2P(T, N)                                                         \
    static inline void shmem_wait_until_all(T *v, size_t n, const int *s, int c, T x) { \
        shmem_##N##_wait_until_all(v, n, s, c, x);                                      \
    }                                                                                   \
    static inline size_t shmem_wait_until_any(T *v, size_t n, const int *s, int c, T x) { \
        return shmem_##N##_wait_until_any(v, n, s, c, x);                               \
    }                                                                                   \
    static inline size_t shmem_wait_until_some(T *v, size_t n, size_t *i, const int *s, \
                                               int c, T x) {                            \
        return shmem_##N##_wait_until_some(v, n, i, s, c, x);                           \
    }                                                                                   \
    static inline void shmem_wait_until_all_vector(T *v, size_t n, const int *s, int c, \
                                                   T *x) {                              \
        shmem_##N##_wait_until_all_vector(v, n, s, c, x);                               \
    }                                                                                   \
    static inline size_t shmem_wait_until_any_vector(T *v, size_t n, const int *s,      \
                                                     int c, T *x) {                     \
        return shmem_##N##_wait_until_any_vector(v, n, s, c, x);                        \
    }                                                                                   \
    static inline size_t shmem_wait_until_some_vector(T *v, size_t n, size_t *i,        \
                                                      const int *s, int c, T *x) {      \
        return shmem_##N##_wait_until_some_vector(v, n, i, s, c, x);                    \
    }                                                                                   \
    static inline int shmem_test(T *v, int c, T x) { return shmem_##N##_test(v, c, x); } \
    static inline int shmem_test_all(T *v, size_t n, const int *s, int c, T x) {        \
        return shmem_##N##_test_all(v, n, s, c, x);                                     \
    }                                                                                   \
    static inline size_t shmem_test_any(T *v, size_t n, const int *s, int c, T x) {     \
        return shmem_##N##_test_any(v, n, s, c, x);                                     \
    }                                                                                   \
    static inline size_t shmem_test_some(T *v, size_t n, size_t *i, const int *s, int c, \
                                         T x) {                                         \
        return shmem_##N##_test_some(v, n, i, s, c, x);                                 \
    }                                                                                   \
    static inline int shmem_test_all_vector(T *v, size_t n, const int *s, int c, T *x) { \
        return shmem_##N##_test_all_vector(v, n, s, c, x);                              \
    }                                                                                   \
    static inline size_t shmem_test_any_vector(T *v, size_t n, const int *s, int c,     \
                                               T *x) {                                  \
        return shmem_##N##_test_any_vector(v, n, s, c, x);                              \
    }                                                                                   \
    static inline size_t shmem_test_some_vector(T *v, size_t n, size_t *i,              \
                                                const int *s, int c, T *x) {            \
        return shmem_##N##_test_some_vector(v, n, i, s, c, x);                          \
    }
/* shmem_wait_until and shmem_wait on a long are the library's own routines. */
#define SHMEMPLUS_CXX_P2P_NOT_LONG(T, N)                                                \
    static inline void shmem_wait_until(T *v, int c, T x) { shmem_##N##_wait_until(v, c, x); } \
    static inline void shmem_wait(T *v, T x) { shmem_##N##_wait(v, x); }
SHMEMPLUS_CXX_P2P(short, short)
SHMEMPLUS_CXX_P2P(int, int)
SHMEMPLUS_CXX_P2P(long, long)
SHMEMPLUS_CXX_P2P(long long, longlong)
SHMEMPLUS_CXX_P2P(unsigned short, ushort)
SHMEMPLUS_CXX_P2P(unsigned int, uint)
SHMEMPLUS_CXX_P2P(unsigned long, ulong)
SHMEMPLUS_CXX_P2P(unsigned long long, ulonglong)
SHMEMPLUS_CXX_P2P_NOT_LONG(short, short)
SHMEMPLUS_CXX_P2P_NOT_LONG(int, int)
SHMEMPLUS_CXX_P2P_NOT_LONG(long long, longlong)
SHMEMPLUS_CXX_P2P_NOT_LONG(unsigned short, ushort)
SHMEMPLUS_CXX_P2P_NOT_LONG(unsigned int, uint)
SHMEMPLUS_CXX_P2P_NOT_LONG(unsigned long, ulong)
SHMEMPLUS_CXX_P2P_NOT_LONG(unsigned long long, ulonglong)
#undef SHMEMPLUS_CXX_P2P
#undef SHMEMPLUS_CXX_P2P_NOT_LONG
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* C11 type-generic forms, dispatched on the type of the watched variable. */
#define SHMEMPLUS_P2P_GENERIC(p, op)                                                    \
    _Generic(*(p), short: shmem_short_##op, int: shmem_int_##op, long: shmem_long_##op, \
             long long: shmem_longlong_##op, unsigned short: shmem_ushort_##op,         \
             unsigned int: shmem_uint_##op, unsigned long: shmem_ulong_##op,            \
             unsigned long long: shmem_ulonglong_##op)
#define shmem_wait_until(ivar, cmp, cmp_value)                                          \
    SHMEMPLUS_P2P_GENERIC(ivar, wait_until)(ivar, cmp, cmp_value)
#define shmem_wait(ivar, cmp_value) SHMEMPLUS_P2P_GENERIC(ivar, wait)(ivar, cmp_value)
#define shmem_test(ivar, cmp, cmp_value) SHMEMPLUS_P2P_GENERIC(ivar, test)(ivar, cmp, cmp_value)
#define shmem_wait_until_all(ivars, ...) SHMEMPLUS_P2P_GENERIC(ivars, wait_until_all)(ivars, __VA_ARGS__)
#define shmem_wait_until_any(ivars, ...) SHMEMPLUS_P2P_GENERIC(ivars, wait_until_any)(ivars, __VA_ARGS__)
#define shmem_wait_until_some(ivars, ...) SHMEMPLUS_P2P_GENERIC(ivars, wait_until_some)(ivars, __VA_ARGS__)
#define shmem_wait_until_all_vector(ivars, ...)                                         \
    SHMEMPLUS_P2P_GENERIC(ivars, wait_until_all_vector)(ivars, __VA_ARGS__)
#define shmem_wait_until_any_vector(ivars, ...)                                         \
    SHMEMPLUS_P2P_GENERIC(ivars, wait_until_any_vector)(ivars, __VA_ARGS__)
#define shmem_wait_until_some_vector(ivars, ...)                                        \
    SHMEMPLUS_P2P_GENERIC(ivars, wait_until_some_vector)(ivars, __VA_ARGS__)
#define shmem_test_all(ivars, ...) SHMEMPLUS_P2P_GENERIC(ivars, test_all)(ivars, __VA_ARGS__)
#define shmem_test_any(ivars, ...) SHMEMPLUS_P2P_GENERIC(ivars, test_any)(ivars, __VA_ARGS__)
#define shmem_test_some(ivars, ...) SHMEMPLUS_P2P_GENERIC(ivars, test_some)(ivars, __VA_ARGS__)
#define shmem_test_all_vector(ivars, ...)                                               \
    SHMEMPLUS_P2P_GENERIC(ivars, test_all_vector)(ivars, __VA_ARGS__)
#define shmem_test_any_vector(ivars, ...)                                               \
    SHMEMPLUS_P2P_GENERIC(ivars, test_any_vector)(ivars, __VA_ARGS__)
#define shmem_test_some_vector(ivars, ...)                                              \
    SHMEMPLUS_P2P_GENERIC(ivars, test_some_vector)(ivars, __VA_ARGS__)
#endif

#endif /* SHMEMPLUS_SYNC_H */
