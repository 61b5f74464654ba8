/* The deprecated active-set collectives from C: the even PEs run barrier, sync,
 * broadcast, collect, fcollect, alltoall(s) and _to_all reductions as an active set
 * (PE_start 0, logPE_stride 1) while the odd PEs run their own set with another pSync;
 * one pSync serves consecutive calls. Every expected value comes from PE numbers. */
#include <shmem.h>
#include <complex.h>
#include "check.h"

#define N 64

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    long *psync = shmem_malloc(SHMEM_REDUCE_SYNC_SIZE * sizeof(long));
    long *psync2 = shmem_malloc(SHMEM_BARRIER_SYNC_SIZE * sizeof(long));
    long *src = shmem_malloc(N * sizeof(long));
    long *dst = shmem_malloc(N * sizeof(long));
    long *wrk = shmem_malloc(SHMEM_REDUCE_MIN_WRKDATA_SIZE * sizeof(long) + 64);
    double _Complex *z = shmem_malloc(sizeof(double _Complex));
    double _Complex *zr = shmem_malloc(sizeof(double _Complex));
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) psync2[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    /* My set: the even or the odd PEs; i is my index in it. */
    int start = me % 2, size = (n - start + 1) / 2, i = me / 2;

    /* Barrier over the set, many times with one pSync, publishing a put each time. */
    for (int round = 0; round < 20; round++) {
        int next = start + 2 * ((i + 1) % size);
        shmem_long_p(&dst[round], 100 * round + me, next);
        shmem_barrier(start, 1, size, psync);
        int prev = start + 2 * ((i + size - 1) % size);
        CHECK(dst[round] == 100 * round + prev, "round %d: %ld", round, dst[round]);
    }
    shmem_sync(start, 1, size, psync2);
    shmem_sync(start, 1, size, psync2);

    if (start == 0) {
        /* broadcast64 from set member 1 (world PE 2): the root's dest is untouched. */
        for (int k = 0; k < N; k++) { src[k] = 1000 * me + k; dst[k] = -1; }
        int root = size > 1 ? 1 : 0;
        shmem_broadcast64(dst, src, 4, root, 0, 1, size, psync);
        for (int k = 0; k < 4; k++)
            CHECK(dst[k] == (i == root ? -1 : 1000 * 2 * root + k), "broadcast64 dst[%d] = %ld", k, dst[k]);

        /* collect32: member j gives j + 1 ints 10 * j + k. */
        int *is = (int *)src, *id = (int *)dst;
        for (int k = 0; k <= i; k++) is[k] = 10 * i + k;
        shmem_collect32(id, is, (size_t)i + 1, 0, 1, size, psync);
        int at = 0;
        for (int j = 0; j < size; j++)
            for (int k = 0; k <= j; k++, at++)
                CHECK(id[at] == 10 * j + k, "collect32 [%d] = %d", at, id[at]);

        /* fcollect64: two longs each. */
        src[0] = me; src[1] = -me;
        shmem_fcollect64(dst, src, 2, 0, 1, size, psync);
        for (int j = 0; j < size; j++)
            CHECK(dst[2 * j] == 2 * j && dst[2 * j + 1] == -2 * j, "fcollect64 block %d", j);

        /* alltoall32: block j of member i is 100 * i + j. */
        for (int j = 0; j < size; j++) is[j] = 100 * i + j;
        shmem_alltoall32(id, is, 1, 0, 1, size, psync);
        for (int j = 0; j < size; j++) CHECK(id[j] == 100 * j + i, "alltoall32 [%d] = %d", j, id[j]);

        /* alltoalls64: 2 per block, 3 apart in source, 2 in dest. */
        for (int j = 0; j < size; j++)
            for (int k = 0; k < 2; k++) src[(j * 2 + k) * 3] = 100 * i + 10 * j + k;
        for (int k = 0; k < N; k++) dst[k] = -1;
        shmem_alltoalls64(dst, src, 2, 3, 2, 0, 1, size, psync);
        for (int j = 0; j < size; j++)
            for (int k = 0; k < 2; k++)
                CHECK(dst[(j * 2 + k) * 2] == 100 * j + 10 * i + k && dst[(j * 2 + k) * 2 + 1] == -1,
                      "alltoalls64 from %d element %d", j, k);

        /* Reductions over the even PEs. */
        src[0] = me + 1; src[1] = me;
        shmem_long_sum_to_all(dst, src, 2, 0, 1, size, wrk, psync);
        CHECK(dst[0] == (long)size * size && dst[1] == (long)size * (size - 1), "sum_to_all %ld %ld",
              dst[0], dst[1]);
        shmem_long_max_to_all(src, src, 2, 0, 1, size, wrk, psync); /* in place */
        CHECK(src[0] == 2 * (size - 1) + 1 && src[1] == 2 * (size - 1), "max_to_all %ld", src[0]);
        short *ss = (short *)src, *sd = (short *)dst;
        ss[0] = (short)(0x0f0f | (1 << (i + 4)));
        shmem_short_and_to_all(sd, ss, 1, 0, 1, size, (short *)wrk, psync);
        CHECK(sd[0] == (short)(size == 1 ? 0x0f1f : 0x0f0f), "short and %#x", sd[0]);
        shmem_short_or_to_all(sd, ss, 1, 0, 1, size, (short *)wrk, psync);
        CHECK(sd[0] == (short)(0x0f0f | (((1 << size) - 1) << 4)), "short or %#x", sd[0]);
        double *ds = (double *)src, *dd = (double *)dst;
        ds[0] = 0.25 * me;
        shmem_double_min_to_all(dd, ds, 1, 0, 1, size, (double *)wrk, psync);
        CHECK(dd[0] == 0.0, "double min %g", dd[0]);
        ds[0] = 1.0 + 0.25 * me; /* 1 + i/2 for member i */
        shmem_double_prod_to_all(dd, ds, 1, 0, 1, size, (double *)wrk, psync);
        double prod = 1.0;
        for (int j = 0; j < size; j++) prod *= 1.0 + 0.5 * j;
        CHECK(dd[0] == prod, "double prod %g, want %g", dd[0], prod);
        *z = i + 1.0 * I;
        shmem_complexd_sum_to_all(zr, z, 1, 0, 1, size, (double _Complex *)wrk, psync);
        CHECK(creal(*zr) == 0.5 * size * (size - 1) && cimag(*zr) == size, "complex sum");
        *z = 1.0 + i * I;
        shmem_complexd_prod_to_all(zr, z, 1, 0, 1, size, (double _Complex *)wrk, psync);
        double _Complex want = 1.0;
        for (int j = 0; j < size; j++) want *= 1.0 + j * I;
        CHECK(*zr == want, "complex prod %g%+gi", creal(*zr), cimag(*zr));
        /* long double (header inline functions): sum and prod of 1 + i/2 over the set. */
        long double *ls = (long double *)src, *ld = (long double *)dst;
        ls[0] = 1.0L + 0.5L * i;
        shmem_longdouble_sum_to_all(ld, ls, 1, 0, 1, size, (long double *)wrk, psync);
        CHECK(ld[0] == size + 0.25L * size * (size - 1), "long double sum %Lg", ld[0]);
        shmem_longdouble_prod_to_all(ld, ls, 1, 0, 1, size, (long double *)wrk, psync);
        CHECK(ld[0] == (long double)prod, "long double prod %Lg, want %g", ld[0], prod);
    } else {
        /* The odd PEs meanwhile: their own reduction with their own pSync. */
        int *is = (int *)src, *id = (int *)dst;
        is[0] = me * me;
        shmem_int_xor_to_all(id, is, 1, 1, 1, size, (int *)wrk, psync2);
        int x = 0;
        for (int j = 0; j < size; j++) x ^= (2 * j + 1) * (2 * j + 1);
        CHECK(id[0] == x, "odd xor %d, want %d", id[0], x);
        shmem_int_prod_to_all(id, is, 1, 1, 1, size, (int *)wrk, psync2);
        int p = 1;
        for (int j = 0; j < size; j++) p *= (2 * j + 1) * (2 * j + 1);
        CHECK(id[0] == p, "odd prod %d, want %d", id[0], p);
    }
    /* Every pSync word is back at SHMEM_SYNC_VALUE. */
    for (int k = 0; k < SHMEM_BARRIER_SYNC_SIZE; k++)
        CHECK(psync[k] == SHMEM_SYNC_VALUE && psync2[k] == SHMEM_SYNC_VALUE, "pSync[%d] left at %ld/%ld",
              k, psync[k], psync2[k]);
    shmem_barrier_all();
    REPORT_OK("coll_legacy");
    shmem_finalize();
    return 0;
}
