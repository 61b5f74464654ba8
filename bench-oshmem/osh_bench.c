/*
 * osh_bench.c - OpenSHMEM micro-benchmarks for same-machine comparison
 * with shmemplus.  Targets the OpenSHMEM 1.4 API (what Open MPI 4.1.x
 * OSHMEM implements): active-set collectives with pSync arrays.  If a
 * 1.5 implementation is used (SHMEM_MINOR_VERSION >= 5) the team-based
 * *mem collectives are used instead.
 *
 * Output: one JSON line per figure on PE 0:
 *   {"impl":"oshmem","op":...,"n_pes":N,"bytes":B,"latency_us":X,"bandwidth_mbps":Y}
 *
 * Timing method: every figure is measured REPS times (after WARMUP
 * untimed runs); in each repetition each PE times its own part; the
 * per-repetition times are max-reduced over all PEs (shmem_double_max_to_all)
 * and PE 0 prints the median of those maxima.
 *
 * Environment knobs (optional):
 *   OSH_BENCH_REPS      repetitions per figure (default 21)
 *   OSH_BENCH_AMO_ITERS fetch_add ops per timed loop (default 10000)
 *   OSH_BENCH_BAR_ITERS barriers per timed loop (default 1000)
 *   OSH_BENCH_MAX_BYTES largest per-PE block (default 1048576)
 */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

/* -DOSH_BENCH_LEGACY forces the 1.4 active-set collectives on a 1.5 library too. */
#if defined(SHMEM_MAJOR_VERSION) && defined(SHMEM_MINOR_VERSION) && !defined(OSH_BENCH_LEGACY) && \
    (SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5))
#define USE_TEAMS 1
#else
#define USE_TEAMS 0
#endif

/* The "impl" field of the output: "oshmem" when built with oshcc; built with shmemcc,
 * pass -DOSH_BENCH_IMPL='"shmemplus-c"'. */
#ifndef OSH_BENCH_IMPL
#define OSH_BENCH_IMPL "oshmem"
#endif

#define MAX_REPS 101
#define WARMUP 3

static int me, npes, reps;

static long psync_bcast[SHMEM_BCAST_SYNC_SIZE];
static long psync_coll[SHMEM_COLLECT_SYNC_SIZE];
static long psync_a2a[SHMEM_ALLTOALL_SYNC_SIZE];
static long psync_red[SHMEM_REDUCE_SYNC_SIZE];
static double pwrk_red[MAX_REPS / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double t_local[MAX_REPS];
static double t_max[MAX_REPS];
static long amo_target;

static void init_psync(long *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = SHMEM_SYNC_VALUE;
}

/* Max-reduce t_local[0..reps) over PEs into t_max; return median (valid on all PEs). */
static double reduce_median(void)
{
    shmem_barrier_all();
    shmem_double_max_to_all(t_max, t_local, reps, 0, 0, npes, pwrk_red, psync_red);
    shmem_barrier_all();
    double tmp[MAX_REPS];
    memcpy(tmp, t_max, sizeof(double) * reps);
    qsort(tmp, reps, sizeof(double), cmp_double);
    return tmp[reps / 2];
}

static void emit(const char *op, long bytes, double latency_s, double bw_bytes)
{
    if (me != 0) return;
    double lat_us = latency_s * 1e6;
    if (bw_bytes > 0)
        printf("{\"impl\":\"" OSH_BENCH_IMPL "\",\"op\":\"%s\",\"n_pes\":%d,\"bytes\":%ld,"
               "\"latency_us\":%.4f,\"bandwidth_mbps\":%.2f}\n",
               op, npes, bytes, lat_us, bw_bytes / latency_s / 1e6);
    else
        printf("{\"impl\":\"" OSH_BENCH_IMPL "\",\"op\":\"%s\",\"n_pes\":%d,\"bytes\":%ld,"
               "\"latency_us\":%.4f,\"bandwidth_mbps\":null}\n",
               op, npes, bytes, lat_us);
    fflush(stdout);
}

static void bench_fetch_add(long iters)
{
    int target = (me + 1) % npes;
    volatile long sink = 0;
    amo_target = 0;
    shmem_barrier_all();
    for (int r = 0; r < WARMUP + reps; r++) {
        shmem_barrier_all();
        double t0 = now_s();
        for (long i = 0; i < iters; i++)
            sink += shmem_atomic_fetch_add(&amo_target, 1L, target);
        double t1 = now_s();
        if (r >= WARMUP) t_local[r - WARMUP] = (t1 - t0) / (double)iters;
    }
    shmem_barrier_all();
    long expect = (long)iters * (WARMUP + reps);
    if (amo_target != expect)
        fprintf(stderr, "PE %d: fetch_add check FAILED: %ld != %ld\n", me, amo_target, expect);
    (void)sink;
    double med = reduce_median();
    emit("fetch_add", 8, med, 0);
}

static void bench_barrier(long iters)
{
    for (int r = 0; r < WARMUP + reps; r++) {
        shmem_barrier_all();
        double t0 = now_s();
        for (long i = 0; i < iters; i++)
            shmem_barrier_all();
        double t1 = now_s();
        if (r >= WARMUP) t_local[r - WARMUP] = (t1 - t0) / (double)iters;
    }
    double med = reduce_median();
    emit("barrier_all", 0, med, 0);
}

enum coll { BCAST, FCOLLECT, ALLTOALL };

static void run_coll(enum coll c, void *dst, const void *src, size_t block)
{
    size_t nelems = block / 8; /* 64-bit elements */
    (void)nelems;
    switch (c) {
    case BCAST:
#if USE_TEAMS
        shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, block, 0);
#else
        shmem_broadcast64(dst, src, nelems, 0, 0, 0, npes, psync_bcast);
#endif
        break;
    case FCOLLECT:
#if USE_TEAMS
        shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, block);
#else
        shmem_fcollect64(dst, src, nelems, 0, 0, npes, psync_coll);
#endif
        break;
    case ALLTOALL:
#if USE_TEAMS
        shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, block);
#else
        shmem_alltoall64(dst, src, nelems, 0, 0, npes, psync_a2a);
#endif
        break;
    }
}

static int check_coll(enum coll c, const unsigned char *dst, size_t block)
{
    /* source on PE p, block q, byte i = (p*31 + q*7 + i) & 0xff */
    for (int q = 0; q < (c == BCAST ? 1 : npes); q++) {
        for (size_t i = 0; i < block; i++) {
            unsigned char want;
            if (c == BCAST) want = (unsigned char)((0 * 31 + 0 * 7 + i) & 0xff);
            else if (c == FCOLLECT) want = (unsigned char)((q * 31 + 0 * 7 + i) & 0xff);
            else want = (unsigned char)((q * 31 + me * 7 + i) & 0xff);
            if (dst[(size_t)q * block + i] != want) return 0;
        }
    }
    return 1;
}

static void bench_coll(enum coll c, const char *name, size_t block,
                       unsigned char *src, unsigned char *dst)
{
    size_t nsrc = (c == ALLTOALL) ? (size_t)npes : 1;
    for (size_t q = 0; q < nsrc; q++)
        for (size_t i = 0; i < block; i++)
            src[q * block + i] = (unsigned char)((me * 31 + q * 7 + i) & 0xff);
    size_t ndst = (c == BCAST) ? 1 : (size_t)npes;
    memset(dst, 0, ndst * block);
    shmem_barrier_all();

    for (int r = 0; r < WARMUP + reps; r++) {
        shmem_barrier_all();
        double t0 = now_s();
        run_coll(c, dst, src, block);
        double t1 = now_s();
        if (r >= WARMUP) t_local[r - WARMUP] = t1 - t0;
    }
    shmem_barrier_all();
    /* 1.4 broadcast does not write dest on the root; skip root check. */
    if (!(c == BCAST && me == 0 && !USE_TEAMS) && !check_coll(c, dst, block))
        fprintf(stderr, "PE %d: %s %zu B result check FAILED\n", me, name, block);

    double med = reduce_median();
    double delivered = (c == BCAST) ? (double)block : (double)npes * (double)block;
    emit(name, (long)block, med, delivered);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();

    reps = (int)env_long("OSH_BENCH_REPS", 21);
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    long amo_iters = env_long("OSH_BENCH_AMO_ITERS", 10000);
    long bar_iters = env_long("OSH_BENCH_BAR_ITERS", 1000);
    size_t max_bytes = (size_t)env_long("OSH_BENCH_MAX_BYTES", 1 << 20);

    init_psync(psync_bcast, SHMEM_BCAST_SYNC_SIZE);
    init_psync(psync_coll, SHMEM_COLLECT_SYNC_SIZE);
    init_psync(psync_a2a, SHMEM_ALLTOALL_SYNC_SIZE);
    init_psync(psync_red, SHMEM_REDUCE_SYNC_SIZE);

    if (me == 0) {
        fprintf(stderr, "# osh_bench: n_pes=%d reps=%d amo_iters=%ld bar_iters=%ld "
                "max_bytes=%zu api=%s (SHMEM %d.%d)\n",
                npes, reps, amo_iters, bar_iters, max_bytes,
                USE_TEAMS ? "1.5-teams" : "1.4-active-set",
                SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
    }

    unsigned char *src = shmem_malloc((size_t)npes * max_bytes);
    unsigned char *dst = shmem_malloc((size_t)npes * max_bytes);
    if (!src || !dst) {
        if (me == 0)
            fprintf(stderr, "shmem_malloc of %zu bytes failed; raise SHMEM_SYMMETRIC_SIZE\n",
                    2 * (size_t)npes * max_bytes);
        shmem_global_exit(2);
    }
    shmem_barrier_all();

    bench_fetch_add(amo_iters);
    bench_barrier(bar_iters);

    static const size_t sizes[] = {8, 1024, 64 * 1024, 1024 * 1024};
    const struct { enum coll c; const char *name; } colls[] = {
        {BCAST, "broadcast"}, {FCOLLECT, "fcollect"}, {ALLTOALL, "alltoall"}};
    for (size_t k = 0; k < 3; k++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            if (sizes[s] <= max_bytes)
                bench_coll(colls[k].c, colls[k].name, sizes[s], src, dst);

    shmem_barrier_all();
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
