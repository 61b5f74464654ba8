/* Collectives (OpenSHMEM 1.5 section 9.9): the team forms, the reductions, and the
 * deprecated active-set forms still used by most programs, with C11 type-generic
 * macros and C++ overloads (shmem.h includes this). Team routines return 0; a failed
 * call ends the job with a message naming the PE and the routine. */
#ifndef SHMEMPLUS_COLL_H
#define SHMEMPLUS_COLL_H

/* Reduction types (Table 10): X(C type, TYPENAME). long double's reductions are
 * inline functions in shmemplus/longdouble.h. */
#define SHMEMPLUS_REDUCE_BITWISE_TYPES(X)                                               \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)             \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)            \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)             \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)
#define SHMEMPLUS_REDUCE_ARITH_TYPES(X)                                                 \
    X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)       \
    X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar)                \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)             \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)                  \
    X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)           \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float)             \
    X(double, double)
/* Legacy _to_all types: X(C type, TYPENAME). */
#define SHMEMPLUS_TO_ALL_BITWISE_TYPES(X)                                               \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEMPLUS_TO_ALL_ARITH_TYPES(X)                                                 \
    X(short, short) X(int, int) X(long, long) X(long long, longlong) X(float, float)    \
    X(double, double)

SHMEMPLUS_BEGIN_C

void shmem_sync_all(void);

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

#define SHMEMPLUS_DECL_COLL(T, N)                                                        \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, \
                              int PE_root);                                             \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems);  \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems);
SHMEMPLUS_RMA_TYPES(SHMEMPLUS_DECL_COLL)
#undef SHMEMPLUS_DECL_COLL

#define SHMEMPLUS_DECL_REDUCE(T, N, OP)                                                 \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define SHMEMPLUS_DECL_BITWISE(T, N)                                                    \
    SHMEMPLUS_DECL_REDUCE(T, N, and) SHMEMPLUS_DECL_REDUCE(T, N, or)                    \
    SHMEMPLUS_DECL_REDUCE(T, N, xor)
#define SHMEMPLUS_DECL_ARITH(T, N)                                                      \
    SHMEMPLUS_DECL_REDUCE(T, N, max) SHMEMPLUS_DECL_REDUCE(T, N, min)                   \
    SHMEMPLUS_DECL_REDUCE(T, N, sum) SHMEMPLUS_DECL_REDUCE(T, N, prod)
SHMEMPLUS_REDUCE_BITWISE_TYPES(SHMEMPLUS_DECL_BITWISE)
SHMEMPLUS_REDUCE_ARITH_TYPES(SHMEMPLUS_DECL_ARITH)

/* Deprecated active-set forms. pSync holds SHMEM_*_SYNC_SIZE longs, all
 * SHMEM_SYNC_VALUE before first use (and again when each call returns). */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);
#define SHMEMPLUS_DECL_SIZED_COLL(B)                                                    \
    void shmem_broadcast##B(void *dest, const void *source, size_t nelems, int PE_root,  \
                            int PE_start, int logPE_stride, int PE_size, long *pSync);  \
    void shmem_collect##B(void *dest, const void *source, size_t nelems, int PE_start,   \
                          int logPE_stride, int PE_size, long *pSync);                  \
    void shmem_fcollect##B(void *dest, const void *source, size_t nelems, int PE_start,  \
                           int logPE_stride, int PE_size, long *pSync);                 \
    void shmem_alltoall##B(void *dest, const void *source, size_t nelems, int PE_start,  \
                           int logPE_stride, int PE_size, long *pSync);                 \
    void shmem_alltoalls##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                            size_t nelems, int PE_start, int logPE_stride, int PE_size, \
                            long *pSync);
SHMEMPLUS_DECL_SIZED_COLL(32)
SHMEMPLUS_DECL_SIZED_COLL(64)
#undef SHMEMPLUS_DECL_SIZED_COLL

#define SHMEMPLUS_DECL_TO_ALL(T, N, OP)                                                 \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start,  \
                                   int logPE_stride, int PE_size, T *pWrk, long *pSync);
#define SHMEMPLUS_DECL_TO_ALL_BITWISE(T, N)                                             \
    SHMEMPLUS_DECL_TO_ALL(T, N, and) SHMEMPLUS_DECL_TO_ALL(T, N, or)                    \
    SHMEMPLUS_DECL_TO_ALL(T, N, xor)
#define SHMEMPLUS_DECL_TO_ALL_ARITH(T, N)                                               \
    SHMEMPLUS_DECL_TO_ALL(T, N, max) SHMEMPLUS_DECL_TO_ALL(T, N, min)                   \
    SHMEMPLUS_DECL_TO_ALL(T, N, sum) SHMEMPLUS_DECL_TO_ALL(T, N, prod)
SHMEMPLUS_TO_ALL_BITWISE_TYPES(SHMEMPLUS_DECL_TO_ALL_BITWISE)
SHMEMPLUS_TO_ALL_ARITH_TYPES(SHMEMPLUS_DECL_TO_ALL_ARITH)

#if !defined(__cplusplus)
/* Complex sums and products (C only: C++ has no _Complex). */
int shmem_complexd_sum_reduce(shmem_team_t team, double _Complex *dest,
                              const double _Complex *source, size_t nreduce);
int shmem_complexf_sum_reduce(shmem_team_t team, float _Complex *dest,
                              const float _Complex *source, size_t nreduce);
int shmem_complexd_prod_reduce(shmem_team_t team, double _Complex *dest,
                               const double _Complex *source, size_t nreduce);
int shmem_complexf_prod_reduce(shmem_team_t team, float _Complex *dest,
                               const float _Complex *source, size_t nreduce);
SHMEMPLUS_DECL_TO_ALL(double _Complex, complexd, sum)
SHMEMPLUS_DECL_TO_ALL(float _Complex, complexf, sum)
SHMEMPLUS_DECL_TO_ALL(double _Complex, complexd, prod)
SHMEMPLUS_DECL_TO_ALL(float _Complex, complexf, prod)
#endif

#undef SHMEMPLUS_DECL_REDUCE
#undef SHMEMPLUS_DECL_BITWISE
#undef SHMEMPLUS_DECL_ARITH
#undef SHMEMPLUS_DECL_TO_ALL
#undef SHMEMPLUS_DECL_TO_ALL_BITWISE
#undef SHMEMPLUS_DECL_TO_ALL_ARITH

SHMEMPLUS_END_C

#if defined(__cplusplus)
/* C++ overloads over the distinct C types (int8_t and friends are typedefs of these). */
#define SHMEMPLUS_CXX_COLL(T, N)                                                        \
    static inline int shmem_broadcast(shmem_team_t t, T *d, const T *s, size_t n, int r) { return shmem_##N##_broadcast(t, d, s, n, r); } \
    static inline int shmem_collect(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_collect(t, d, s, n); } \
    static inline int shmem_fcollect(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_fcollect(t, d, s, n); } \
    static inline int shmem_alltoall(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_alltoall(t, d, s, n); } \
    static inline int shmem_alltoalls(shmem_team_t t, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n) { return shmem_##N##_alltoalls(t, d, s, dst, sst, n); }
#define SHMEMPLUS_CXX_REDUCE(T, N, OP)                                                  \
    static inline int shmem_##OP##_reduce(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_##OP##_reduce(t, d, s, n); }
#define SHMEMPLUS_CXX_BITWISE(T, N)                                                     \
    SHMEMPLUS_CXX_REDUCE(T, N, and) SHMEMPLUS_CXX_REDUCE(T, N, or) SHMEMPLUS_CXX_REDUCE(T, N, xor)
#define SHMEMPLUS_CXX_ARITH(T, N)                                                       \
    SHMEMPLUS_CXX_REDUCE(T, N, max) SHMEMPLUS_CXX_REDUCE(T, N, min)                     \
    SHMEMPLUS_CXX_REDUCE(T, N, sum) SHMEMPLUS_CXX_REDUCE(T, N, prod)
#define SHMEMPLUS_CXX_DISTINCT(X)                                                       \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)          \
    X(signed char, schar) X(short, short) X(int, int) X(long, long)                     \
    X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)            \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)
SHMEMPLUS_CXX_DISTINCT(SHMEMPLUS_CXX_COLL)
SHMEMPLUS_CXX_BITWISE(unsigned char, uchar) SHMEMPLUS_CXX_BITWISE(unsigned short, ushort)
SHMEMPLUS_CXX_BITWISE(unsigned int, uint) SHMEMPLUS_CXX_BITWISE(unsigned long, ulong)
SHMEMPLUS_CXX_BITWISE(unsigned long long, ulonglong) SHMEMPLUS_CXX_BITWISE(signed char, int8)
SHMEMPLUS_CXX_BITWISE(short, int16) SHMEMPLUS_CXX_BITWISE(int, int32)
SHMEMPLUS_CXX_BITWISE(long, int64)
SHMEMPLUS_CXX_ARITH(char, char) SHMEMPLUS_CXX_ARITH(signed char, schar)
SHMEMPLUS_CXX_ARITH(short, short) SHMEMPLUS_CXX_ARITH(int, int) SHMEMPLUS_CXX_ARITH(long, long)
SHMEMPLUS_CXX_ARITH(long long, longlong) SHMEMPLUS_CXX_ARITH(unsigned char, uchar)
SHMEMPLUS_CXX_ARITH(unsigned short, ushort) SHMEMPLUS_CXX_ARITH(unsigned int, uint)
SHMEMPLUS_CXX_ARITH(unsigned long, ulong) SHMEMPLUS_CXX_ARITH(unsigned long long, ulonglong)
SHMEMPLUS_CXX_ARITH(float, float) SHMEMPLUS_CXX_ARITH(double, double)
/* The team form of shmem_sync (1.5), beside the active-set one. */
static inline int shmem_sync(shmem_team_t t) { return shmem_team_sync(t); }
#undef SHMEMPLUS_CXX_COLL
#undef SHMEMPLUS_CXX_REDUCE
#undef SHMEMPLUS_CXX_BITWISE
#undef SHMEMPLUS_CXX_ARITH
#undef SHMEMPLUS_CXX_DISTINCT
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* C11 type-generic forms, dispatched on the destination's type (SHMEMPLUS_RMA_GENERIC
 * is rma.h's list of the distinct standard types). */
#define shmem_broadcast(team, dest, source, nelems, root)                               \
    SHMEMPLUS_RMA_GENERIC(dest, shmem_, broadcast)(team, dest, source, nelems, root)
#define shmem_collect(team, dest, source, nelems)                                       \
    SHMEMPLUS_RMA_GENERIC(dest, shmem_, collect)(team, dest, source, nelems)
#define shmem_fcollect(team, dest, source, nelems)                                      \
    SHMEMPLUS_RMA_GENERIC(dest, shmem_, fcollect)(team, dest, source, nelems)
#define shmem_alltoall(team, dest, source, nelems)                                      \
    SHMEMPLUS_RMA_GENERIC(dest, shmem_, alltoall)(team, dest, source, nelems)
#define shmem_alltoalls(team, dest, source, dst, sst, nelems)                           \
    SHMEMPLUS_RMA_GENERIC(dest, shmem_, alltoalls)(team, dest, source, dst, sst, nelems)
#define SHMEMPLUS_BITWISE_GENERIC(ptr, op)                                              \
    _Generic(*(ptr),                                                                    \
        unsigned char: shmem_uchar_##op##_reduce, unsigned short: shmem_ushort_##op##_reduce, \
        unsigned int: shmem_uint_##op##_reduce, unsigned long: shmem_ulong_##op##_reduce, \
        unsigned long long: shmem_ulonglong_##op##_reduce,                              \
        signed char: shmem_int8_##op##_reduce, short: shmem_int16_##op##_reduce,        \
        int: shmem_int32_##op##_reduce, long: shmem_int64_##op##_reduce)
#define SHMEMPLUS_SUM_GENERIC(ptr, op)                                                \
    _Generic(*(ptr),                                                                    \
        char: shmem_char_##op##_reduce, signed char: shmem_schar_##op##_reduce,         \
        short: shmem_short_##op##_reduce, int: shmem_int_##op##_reduce,                 \
        long: shmem_long_##op##_reduce, long long: shmem_longlong_##op##_reduce,        \
        unsigned char: shmem_uchar_##op##_reduce, unsigned short: shmem_ushort_##op##_reduce, \
        unsigned int: shmem_uint_##op##_reduce, unsigned long: shmem_ulong_##op##_reduce, \
        unsigned long long: shmem_ulonglong_##op##_reduce,                              \
        float: shmem_float_##op##_reduce, double: shmem_double_##op##_reduce,           \
        long double: shmem_longdouble_##op##_reduce,                                    \
        double _Complex: shmem_complexd_##op##_reduce,                                  \
        float _Complex: shmem_complexf_##op##_reduce)
#define shmem_and_reduce(team, dest, source, n) SHMEMPLUS_BITWISE_GENERIC(dest, and)(team, dest, source, n)
#define shmem_or_reduce(team, dest, source, n) SHMEMPLUS_BITWISE_GENERIC(dest, or)(team, dest, source, n)
#define shmem_xor_reduce(team, dest, source, n) SHMEMPLUS_BITWISE_GENERIC(dest, xor)(team, dest, source, n)
#define shmem_sum_reduce(team, dest, source, n) SHMEMPLUS_SUM_GENERIC(dest, sum)(team, dest, source, n)
/* max and min have no complex forms: their generic list names only real types. */
#define SHMEMPLUS_REAL_GENERIC(ptr, op)                                                 \
    _Generic(*(ptr),                                                                    \
        char: shmem_char_##op##_reduce, signed char: shmem_schar_##op##_reduce,         \
        short: shmem_short_##op##_reduce, int: shmem_int_##op##_reduce,                 \
        long: shmem_long_##op##_reduce, long long: shmem_longlong_##op##_reduce,        \
        unsigned char: shmem_uchar_##op##_reduce, unsigned short: shmem_ushort_##op##_reduce, \
        unsigned int: shmem_uint_##op##_reduce, unsigned long: shmem_ulong_##op##_reduce, \
        unsigned long long: shmem_ulonglong_##op##_reduce,                              \
        float: shmem_float_##op##_reduce, double: shmem_double_##op##_reduce,           \
        long double: shmem_longdouble_##op##_reduce)
#define shmem_max_reduce(team, dest, source, n) SHMEMPLUS_REAL_GENERIC(dest, max)(team, dest, source, n)
#define shmem_min_reduce(team, dest, source, n) SHMEMPLUS_REAL_GENERIC(dest, min)(team, dest, source, n)
#define shmem_prod_reduce(team, dest, source, n) SHMEMPLUS_SUM_GENERIC(dest, prod)(team, dest, source, n)
/* shmem_sync(team) (1.5) and shmem_sync(PE_start, logPE_stride, PE_size, pSync)
 * (deprecated), told apart by the number of arguments. */
#define SHMEMPLUS_SYNC_PICK(_1, _2, _3, _4, NAME, ...) NAME
#define shmem_sync(...)                                                                 \
    SHMEMPLUS_SYNC_PICK(__VA_ARGS__, shmem_sync, shmem_sync, shmem_sync, shmem_team_sync, \
                        shmem_sync)(__VA_ARGS__)
#endif

#endif /* SHMEMPLUS_COLL_H */
