/*
 * osh_rma.c - OSU-style put/get latency and bandwidth between two PEs, written
 * against OpenSHMEM (Open MPI's OSHMEM). Its twin against shmemplus is
 * benches/src/bin/rma_bw.rs: same loops, same buffers, same output; rma.sh runs the
 * two in turn and compares them.
 *
 * PE 0 does all the transfers, to or from PE 1; PE 1 only waits in barriers.
 * Buffers: the private side is ONE malloc'd buffer of the largest size (so it sits
 * where malloc puts large blocks: 16 bytes past a page boundary with glibc); the
 * remote side is one shmem_malloc'd symmetric buffer of the same size.
 *
 *   put_lat / get_lat (8 B): a loop of ITERS x (one put + shmem_quiet) or
 *                            ITERS x (one blocking get); latency = time / ITERS.
 *   put / get (every size):  a window of W puts of the same buffer followed by one
 *                            shmem_quiet (get: W blocking gets); W = clamp(4 MiB /
 *                            size, 1, 64). Bandwidth = W * size / time.
 * Every figure is the median of REPS timed repetitions after 3 untimed ones.
 * Output: one JSON line per figure on PE 0, the same fields as osh_bench.c.
 *
 * Environment knobs (optional):
 *   OSH_RMA_REPS  repetitions per figure (default 21)
 *   OSH_RMA_ITERS latency loop length (default 10000)
 *   OSH_RMA_MIN / OSH_RMA_MAX  smallest / largest bandwidth size (4096 / 33554432)
 */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

#define MAX_REPS 101
#define WARMUP 3

static double median(double *t, int n)
{
    qsort(t, n, sizeof(double), cmp_double);
    return t[n / 2];
}

/* The "impl" field of the output: "oshmem" when built with oshcc; rma.sh builds the
 * same source with shmemcc and -DOSH_RMA_IMPL='"shmemplus-c"'. */
#ifndef OSH_RMA_IMPL
#define OSH_RMA_IMPL "oshmem"
#endif

/* secs: per operation; bytes_moved: per operation (0 for a latency figure). */
static void emit(const char *op, size_t bytes, double secs, double bytes_moved)
{
    if (bytes_moved > 0)
        printf("{\"impl\":\"" OSH_RMA_IMPL "\",\"op\":\"%s\",\"n_pes\":2,\"bytes\":%zu,"
               "\"latency_us\":%.4f,\"bandwidth_mbps\":%.2f}\n",
               op, bytes, secs * 1e6, bytes_moved / secs / 1e6);
    else
        printf("{\"impl\":\"" OSH_RMA_IMPL "\",\"op\":\"%s\",\"n_pes\":2,\"bytes\":%zu,"
               "\"latency_us\":%.4f,\"bandwidth_mbps\":null}\n",
               op, bytes, secs * 1e6);
    fflush(stdout);
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() != 2) {
        if (me == 0) fprintf(stderr, "osh_rma needs exactly 2 PEs\n");
        shmem_global_exit(2);
    }
    int reps = (int)env_long("OSH_RMA_REPS", 21);
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    long iters = env_long("OSH_RMA_ITERS", 10000);
    if (iters < 1) iters = 1;
    size_t min = (size_t)env_long("OSH_RMA_MIN", 4096);
    size_t max = (size_t)env_long("OSH_RMA_MAX", 32L << 20);
    if (min < 1) min = 1;
    if (max < 8) max = 8;

    unsigned char *sym = shmem_malloc(max);
    unsigned char *src = malloc(max);
    unsigned char *dst = malloc(max);
    if (!sym || !src || !dst) {
        fprintf(stderr, "PE %d: allocation of %zu bytes failed\n", me, max);
        shmem_global_exit(2);
    }
    for (size_t i = 0; i < max; i++) src[i] = (unsigned char)(i * 7 + 1);
    memset(dst, 0, max);
    memset(sym, 0, max);
    if (me == 0)
        fprintf(stderr, "# osh_rma: reps=%d iters=%ld sizes %zu..%zu; private buffers at page+%zu, "
                "symmetric buffer at page+%zu\n",
                reps, iters, min, max, (size_t)src & 4095, (size_t)sym & 4095);
    shmem_barrier_all();

    double t[MAX_REPS];
    int bad = 0;
    if (me == 0) {
        for (int r = 0; r < WARMUP + reps; r++) {
            double t0 = now_s();
            for (long i = 0; i < iters; i++) {
                shmem_putmem(sym, src, 8, 1);
                shmem_quiet();
            }
            if (r >= WARMUP) t[r - WARMUP] = (now_s() - t0) / (double)iters;
        }
        emit("put_lat", 8, median(t, reps), 0);
        for (int r = 0; r < WARMUP + reps; r++) {
            double t0 = now_s();
            for (long i = 0; i < iters; i++) shmem_getmem(dst, sym, 8, 1);
            if (r >= WARMUP) t[r - WARMUP] = (now_s() - t0) / (double)iters;
        }
        emit("get_lat", 8, median(t, reps), 0);

        for (size_t n = min; n <= max; n *= 2) {
            size_t w = (4u << 20) / n;
            if (w < 1) w = 1;
            if (w > 64) w = 64;
            for (int r = 0; r < WARMUP + reps; r++) {
                double t0 = now_s();
                for (size_t k = 0; k < w; k++) shmem_putmem(sym, src, n, 1);
                shmem_quiet();
                if (r >= WARMUP) t[r - WARMUP] = now_s() - t0;
            }
            emit("put", n, median(t, reps) / (double)w, (double)n);
            for (int r = 0; r < WARMUP + reps; r++) {
                double t0 = now_s();
                for (size_t k = 0; k < w; k++) shmem_getmem(dst, sym, n, 1);
                if (r >= WARMUP) t[r - WARMUP] = now_s() - t0;
            }
            emit("get", n, median(t, reps) / (double)w, (double)n);
            /* The get brought back what the put wrote. */
            if (memcmp(dst, src, n) != 0) bad = 1;
            memset(dst, 0, n);
        }
    }
    shmem_barrier_all();
    if (bad) fprintf(stderr, "PE %d: put/get result check FAILED\n", me);
    free(dst);
    free(src);
    shmem_free(sym);
    shmem_finalize();
    return bad;
}
