/* Team collectives from C (1.5 forms): broadcast, collect, fcollect, alltoall(s) and
 * every reduction operator, on the world, on a negative-stride team (numbered from
 * the last PE down) and on the even PEs. Every expected value is computed from PE
 * numbers. */
#include <shmem.h>
#include <complex.h>
#include "check.h"

/* long double reductions work on globals too (symmetric like the heap). */
static long double ld_src[3], ld_res[3];

/* Symmetric buffers, allocated once by every PE (shmem_malloc is collective over the
 * world, so a subset team must not allocate). */
static struct {
    long *src, *dst, *l, *lr;
    int *isrc, *idst;
    char *bs, *bd;
    unsigned int *u, *ur;
    signed char *c, *cr;
    double *d, *dr;
    float *f, *fr;
    double _Complex *z, *zr;
} B;

static void alloc_buffers(int n) {
    B.src = shmem_malloc(64 * sizeof(long));
    B.dst = shmem_malloc(64 * sizeof(long));
    B.l = shmem_malloc(3 * sizeof(long));
    B.lr = shmem_malloc(3 * sizeof(long));
    B.isrc = shmem_malloc(2 * sizeof(int));
    B.idst = shmem_malloc(2 * (size_t)n * sizeof(int));
    B.bs = shmem_malloc(4);
    B.bd = shmem_malloc(4 * (size_t)n);
    B.u = shmem_malloc(2 * sizeof(unsigned));
    B.ur = shmem_malloc(2 * sizeof(unsigned));
    B.c = shmem_malloc(1);
    B.cr = shmem_malloc(1);
    B.d = shmem_malloc(2 * sizeof(double));
    B.dr = shmem_malloc(2 * sizeof(double));
    B.f = shmem_malloc(sizeof(float));
    B.fr = shmem_malloc(sizeof(float));
    B.z = shmem_malloc(sizeof(double _Complex));
    B.zr = shmem_malloc(sizeof(double _Complex));
    CHECK(B.src && B.zr, "shmem_malloc failed");
}

static void moves(shmem_team_t team, const char *what) {
    int me = shmem_team_my_pe(team);
    int n = shmem_team_n_pes(team);
    int world = shmem_my_pe();
    long *src = B.src;
    long *dst = B.dst;
    for (int i = 0; i < 64; i++) { src[i] = 1000 * me + i; dst[i] = -1; }

    /* Broadcast from team PE 1 (type-generic). */
    shmem_broadcast(team, dst, src, 5, 1 % n);
    for (int i = 0; i < 5; i++)
        CHECK(dst[i] == 1000 * (1 % n) + i, "%s broadcast dst[%d] = %ld", what, i, dst[i]);
    CHECK(dst[5] == -1, "%s broadcast wrote past nelems", what);

    /* fcollect of two ints each: block i is team PE i's. */
    int *isrc = B.isrc;
    int *idst = B.idst;
    isrc[0] = me; isrc[1] = -world;
    shmem_int_fcollect(team, idst, isrc, 2);
    for (int i = 0; i < n; i++) {
        int w = shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
        CHECK(idst[2 * i] == i && idst[2 * i + 1] == -w, "%s fcollect block %d: %d %d", what, i,
              idst[2 * i], idst[2 * i + 1]);
    }

    /* collect: team PE i gives i + 1 elements 10 * i + k. */
    for (int k = 0; k <= me; k++) src[k] = 10 * me + k;
    shmem_long_collect(team, dst, src, (size_t)me + 1);
    int at = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k <= i; k++, at++)
            CHECK(dst[at] == 10 * i + k, "%s collect dst[%d] = %ld", what, at, dst[at]);

    /* alltoall: block j of PE i holds 100 * i + j and lands in block i of PE j. */
    for (int j = 0; j < n; j++) src[j] = 100 * me + j;
    shmem_alltoall(team, dst, src, 1);
    for (int i = 0; i < n; i++)
        CHECK(dst[i] == 100 * i + me, "%s alltoall dst[%d] = %ld", what, i, dst[i]);

    /* alltoalls: 2 elements per block, 3 apart in source, 2 apart in dest. */
    for (int j = 0; j < n; j++)
        for (int k = 0; k < 2; k++) src[(j * 2 + k) * 3] = 100 * me + 10 * j + k;
    for (int i = 0; i < 64; i++) dst[i] = -1;
    shmem_long_alltoalls(team, dst, src, 2, 3, 2);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
            CHECK(dst[(i * 2 + k) * 2] == 100 * i + 10 * me + k && dst[(i * 2 + k) * 2 + 1] == -1,
                  "%s alltoalls from %d element %d: %ld", what, i, k, dst[(i * 2 + k) * 2]);

    /* Byte forms. */
    char *bs = B.bs, *bd = B.bd;
    for (int k = 0; k < 4; k++) bs[k] = (char)(me * 4 + k);
    shmem_fcollectmem(team, bd, bs, 4);
    for (int i = 0; i < 4 * n; i++) CHECK(bd[i] == (char)i, "%s fcollectmem byte %d", what, i);
    shmem_broadcastmem(team, bd, bs, 4, n - 1);
    CHECK(bd[3] == (char)((n - 1) * 4 + 3), "%s broadcastmem", what);

}

static void reductions(shmem_team_t team, const char *what) {
    int me = shmem_team_my_pe(team);
    int n = shmem_team_n_pes(team);
    long *l = B.l, *lr = B.lr;
    l[0] = me + 1; l[1] = (me * 7) % 5 - 2; l[2] = -(long)me;
    shmem_long_sum_reduce(team, lr, l, 3);
    CHECK(lr[0] == (long)n * (n + 1) / 2, "%s sum %ld", what, lr[0]);
    CHECK(lr[2] == -(long)n * (n - 1) / 2, "%s sum[2] %ld", what, lr[2]);
    long mx = -100, mn = 100, fact = 1;
    for (int i = 0; i < n; i++) {
        long v = (i * 7) % 5 - 2;
        if (v > mx) mx = v;
        if (v < mn) mn = v;
        fact *= i + 1;
    }
    shmem_max_reduce(team, lr, l, 3);
    CHECK(lr[0] == n && lr[1] == mx && lr[2] == 0, "%s max %ld %ld %ld", what, lr[0], lr[1], lr[2]);
    shmem_min_reduce(team, lr, l, 3);
    CHECK(lr[0] == 1 && lr[1] == mn && lr[2] == 1 - n, "%s min %ld %ld", what, lr[0], lr[1]);
    shmem_prod_reduce(team, l, l, 1); /* in place */
    CHECK(l[0] == fact, "%s prod %ld, want %ld", what, l[0], fact);

    unsigned int *u = B.u, *ur = B.ur;
    u[0] = 1u << me; u[1] = ~(1u << me);
    shmem_or_reduce(team, ur, u, 2);
    CHECK(ur[0] == (1u << n) - 1 && ur[1] == ~0u, "%s or %#x", what, ur[0]);
    shmem_and_reduce(team, ur, u, 2);
    CHECK(ur[0] == (n == 1 ? 1u : 0u) && ur[1] == ~((1u << n) - 1), "%s and %#x", what, ur[1]);
    u[0] = (unsigned)me * 3;
    unsigned x = 0;
    for (int i = 0; i < n; i++) x ^= (unsigned)i * 3;
    shmem_uint_xor_reduce(team, ur, u, 1);
    CHECK(ur[0] == x, "%s xor %u, want %u", what, ur[0], x);
    signed char *c = B.c, *cr = B.cr;
    c[0] = (signed char)(0x70 | me);
    shmem_and_reduce(team, cr, c, 1); /* int8 */
    CHECK(cr[0] == 0x70, "%s int8 and %d", what, cr[0]);

    double *d = B.d, *dr = B.dr;
    d[0] = 0.5 * me; d[1] = -1.5 * me;
    shmem_sum_reduce(team, dr, d, 2);
    CHECK(dr[0] == 0.25 * n * (n - 1) && dr[1] == -0.75 * n * (n - 1), "%s double sum %g", what, dr[0]);
    shmem_double_max_reduce(team, dr, d, 2);
    CHECK(dr[0] == 0.5 * (n - 1) && dr[1] == 0.0, "%s double max %g %g", what, dr[0], dr[1]);
    float *f = B.f, *fr = B.fr;
    f[0] = (float)(me + 1);
    shmem_float_prod_reduce(team, fr, f, 1);
    CHECK(fr[0] == (float)fact, "%s float prod %g", what, fr[0]);

    double _Complex *z = B.z, *zr = B.zr;
    *z = me + 2.0 * me * I;
    shmem_complexd_sum_reduce(team, zr, z, 1);
    double s = 0.5 * n * (n - 1);
    CHECK(creal(*zr) == s && cimag(*zr) == 2 * s, "%s complex sum %g%+gi", what, creal(*zr), cimag(*zr));
    /* A complex product: (1 + 0i)(1 + 1i)...(1 + (n-1)i), Gaussian integers, exact. */
    *z = 1.0 + me * I;
    shmem_complexd_prod_reduce(team, zr, z, 1);
    double _Complex want = 1.0;
    for (int j = 0; j < n; j++) want *= 1.0 + j * I;
    CHECK(*zr == want, "%s complex prod %g%+gi, want %g%+gi", what, creal(*zr), cimag(*zr), creal(want), cimag(want));
    shmem_prod_reduce(team, zr, z, 1); /* the C11 generic form reaches complex too */
    CHECK(*zr == want, "%s generic complex prod %g%+gi", what, creal(*zr), cimag(*zr));

    /* long double: every operator (header inline functions over getmem and team sync). */
    ld_src[0] = 0.5L * me; ld_src[1] = 1.0L + me; ld_src[2] = -(long double)me;
    shmem_longdouble_sum_reduce(team, ld_res, ld_src, 3);
    CHECK(ld_res[0] == 0.25L * n * (n - 1) && ld_res[1] == n + 0.5L * n * (n - 1), "%s long double sum %Lg %Lg", what, ld_res[0], ld_res[1]);
    shmem_max_reduce(team, ld_res, ld_src, 3);
    CHECK(ld_res[0] == 0.5L * (n - 1) && ld_res[2] == 0.0L, "%s long double max %Lg %Lg", what, ld_res[0], ld_res[2]);
    shmem_longdouble_min_reduce(team, ld_res, ld_src, 3);
    CHECK(ld_res[0] == 0.0L && ld_res[2] == -(long double)(n - 1), "%s long double min %Lg", what, ld_res[2]);
    shmem_prod_reduce(team, &ld_res[1], &ld_src[1], 1);
    CHECK(ld_res[1] == (long double)fact, "%s long double prod %Lg", what, ld_res[1]);

}

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    alloc_buffers(n);
    moves(SHMEM_TEAM_WORLD, "world");
    reductions(SHMEM_TEAM_WORLD, "world");
    shmem_sync_all();
    shmem_sync(SHMEM_TEAM_WORLD); /* the 1.5 one-argument form */

    shmem_team_t down, even;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &down) == 0, "down");
    moves(down, "down");
    reductions(down, "down");
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0, "even");
    /* The even PEs reduce while the odd ones wait at the world barrier below. */
    if (me % 2 == 0) {
        reductions(even, "even");
        moves(even, "even");
    }
    shmem_barrier_all();
    shmem_team_destroy(even);
    shmem_team_destroy(down);
    REPORT_OK("coll_team");
    shmem_finalize();
    return 0;
}
