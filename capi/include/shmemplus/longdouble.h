/* long double reductions (shmem.h includes this after coll.h).
 *
 * long double is x87 80-bit arithmetic, which the library (written in Rust) cannot
 * do, so these reductions are inline functions over the library's other routines:
 * every member gets each member's source array in team order with shmem_getmem and
 * combines it with the compiler's own long double arithmetic, so every member computes
 * the same result in the same order. Synchronisation: a team sync before (every
 * source is ready) and after (no member still reads a source when its owner goes on).
 * Cost: each member reads n_pes * nreduce values; fine for the sizes long double
 * reductions are used at. dest may equal source. */
#ifndef SHMEMPLUS_LONGDOUBLE_H
#define SHMEMPLUS_LONGDOUBLE_H

#include <stdlib.h>
#include <string.h>

/* The members of a team or an active set, as world PE numbers. */
typedef struct {
    shmem_team_t team; /* SHMEM_TEAM_INVALID for an active set */
    int start, stride, size;
} shmemplus_ld_set;

static inline int shmemplus_ld_pe(shmemplus_ld_set set, int member) {
    return set.team != SHMEM_TEAM_INVALID
               ? shmem_team_translate_pe(set.team, member, SHMEM_TEAM_WORLD)
               : set.start + member * set.stride;
}

static inline int shmemplus_ld_reduce(shmemplus_ld_set set, long *pSync, long double *dest,
                                      const long double *source, size_t nreduce, int op) {
    /* op: 0 max, 1 min, 2 sum, 3 prod */
    if (set.team != SHMEM_TEAM_INVALID)
        shmem_team_sync(set.team);
    else
        shmem_sync(set.start, __builtin_ctz((unsigned)set.stride), set.size, pSync);
    long double *acc = NULL, *got = NULL;
    if (nreduce > 0) {
        acc = (long double *)malloc(nreduce * sizeof(long double));
        got = (long double *)malloc(nreduce * sizeof(long double));
        if (acc == NULL || got == NULL) shmem_global_exit(70);
    }
    for (int m = 0; m < set.size; m++) {
        long double *into = m == 0 ? acc : got;
        if (nreduce > 0) shmem_getmem(into, source, nreduce * sizeof(long double), shmemplus_ld_pe(set, m));
        if (m == 0) continue;
        for (size_t i = 0; i < nreduce; i++) {
            long double a = acc[i], b = got[i];
            acc[i] = op == 0 ? (a > b ? a : b) : op == 1 ? (a < b ? a : b) : op == 2 ? a + b : a * b;
        }
    }
    if (set.team != SHMEM_TEAM_INVALID)
        shmem_team_sync(set.team);
    else
        shmem_sync(set.start, __builtin_ctz((unsigned)set.stride), set.size, pSync);
    if (nreduce > 0) memcpy(dest, acc, nreduce * sizeof(long double));
    free(acc);
    free(got);
    return 0;
}

#define SHMEMPLUS_LD_REDUCE(OP, CODE)                                                   \
    static inline int shmem_longdouble_##OP##_reduce(shmem_team_t team, long double *dest, \
                                                      const long double *source, size_t nreduce) { \
        if (team == SHMEM_TEAM_INVALID || shmem_team_my_pe(team) < 0) return -1;        \
        shmemplus_ld_set set = {team, 0, 1, shmem_team_n_pes(team)};                     \
        return shmemplus_ld_reduce(set, NULL, dest, source, nreduce, CODE);             \
    }                                                                                   \
    static inline void shmem_longdouble_##OP##_to_all(long double *dest, const long double *source, \
                                                      int nreduce, int PE_start, int logPE_stride, \
                                                      int PE_size, long double *pWrk, long *pSync) { \
        (void)pWrk;                                                                     \
        shmemplus_ld_set set = {SHMEM_TEAM_INVALID, PE_start, 1 << logPE_stride, PE_size}; \
        shmemplus_ld_reduce(set, pSync, dest, source, nreduce < 0 ? 0 : (size_t)nreduce, CODE); \
    }
SHMEMPLUS_LD_REDUCE(max, 0)
SHMEMPLUS_LD_REDUCE(min, 1)
SHMEMPLUS_LD_REDUCE(sum, 2)
SHMEMPLUS_LD_REDUCE(prod, 3)
#undef SHMEMPLUS_LD_REDUCE

#if defined(__cplusplus)
static inline int shmem_max_reduce(shmem_team_t t, long double *d, const long double *s, size_t n) { return shmem_longdouble_max_reduce(t, d, s, n); }
static inline int shmem_min_reduce(shmem_team_t t, long double *d, const long double *s, size_t n) { return shmem_longdouble_min_reduce(t, d, s, n); }
static inline int shmem_sum_reduce(shmem_team_t t, long double *d, const long double *s, size_t n) { return shmem_longdouble_sum_reduce(t, d, s, n); }
static inline int shmem_prod_reduce(shmem_team_t t, long double *d, const long double *s, size_t n) { return shmem_longdouble_prod_reduce(t, d, s, n); }
#endif

#endif /* SHMEMPLUS_LONGDOUBLE_H */
