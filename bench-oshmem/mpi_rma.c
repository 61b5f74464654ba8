/*
 * mpi_rma.c - the put/get figures of osh_rma.c, measured with MPI-3 one-sided
 * communication (RMA windows) instead of OpenSHMEM: same loops, sizes, knobs and
 * JSON lines, with "impl":"mpi-osc". mpi_rma.sh runs it under several Open MPI osc
 * components / transports. It exists to put a number on what MPI one-sided
 * put/get would give between two ranks on this machine (shmemplus's MPI conduit
 * uses two-sided messages instead).
 *
 * Rank 0 does all the transfers, to or from rank 1's window; rank 1 only waits in
 * barriers. The window is one MPI_Win_allocate'd buffer of the largest size on each
 * rank (disp_unit 1), in one passive-target epoch (MPI_Win_lock_all) for the whole
 * run; the private side is ONE malloc'd buffer of the largest size, as in osh_rma.c.
 *
 *   put_lat / get_lat (8 B): a loop of ITERS x (one MPI_Put + MPI_Win_flush) or
 *                            ITERS x (one MPI_Get + MPI_Win_flush, i.e. a blocking
 *                            get); latency = time / ITERS.
 *   put / get (every size):  a window of W MPI_Puts of the same buffer followed by
 *                            one MPI_Win_flush (get: W blocking gets, each MPI_Get +
 *                            MPI_Win_flush, like osh_rma.c's shmem_getmem);
 *                            W = clamp(4 MiB / size, 1, 64). Bandwidth = W * size / time.
 * Every figure is the median of REPS timed repetitions after 3 untimed ones.
 * Output: one JSON line per figure on rank 0, the same fields as osh_rma.c.
 *
 * Environment knobs (optional), as osh_rma.c:
 *   OSH_RMA_REPS  repetitions per figure (default 21)
 *   OSH_RMA_ITERS latency loop length (default 10000)
 *   OSH_RMA_MIN / OSH_RMA_MAX  smallest / largest bandwidth size (4096 / 33554432)
 *
 * Build and run: mpicc -O2 -o mpi_rma mpi_rma.c && mpirun -np 2 ./mpi_rma
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

#define MAX_REPS 101
#define WARMUP 3

#ifndef OSH_RMA_IMPL
#define OSH_RMA_IMPL "mpi-osc"
#endif

static double median(double *t, int n)
{
    qsort(t, n, sizeof(double), cmp_double);
    return t[n / 2];
}

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

static const char *level_name(int l)
{
    return l == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE"
         : l == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
         : l == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
         : l == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "unknown";
}

int main(int argc, char **argv)
{
    int provided = -1, me, np;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2) {
        if (me == 0) fprintf(stderr, "mpi_rma needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
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
    if (max > (size_t)0x7fffffff) {
        if (me == 0) fprintf(stderr, "mpi_rma: OSH_RMA_MAX must fit in an int\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    unsigned char *sym = NULL;
    MPI_Win win;
    /* Window creation is where Open MPI picks an osc component, and fails if none of
     * the allowed ones can serve: report that on one line (mpi_rma.sh shows it). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Win_allocate((MPI_Aint)max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &sym, &win);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "mpi_rma: rank %d: MPI_Win_allocate failed: %s\n", me, msg);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL);
    unsigned char *src = malloc(max);
    unsigned char *dst = malloc(max);
    if (!sym || !src || !dst) {
        fprintf(stderr, "rank %d: allocation of %zu bytes failed\n", me, max);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < max; i++) src[i] = (unsigned char)(i * 7 + 1);
    memset(dst, 0, max);
    memset(sym, 0, max);
    if (me == 0)
        fprintf(stderr, "# mpi_rma: thread level requested MPI_THREAD_MULTIPLE, provided %s; "
                "reps=%d iters=%ld sizes %zu..%zu; private buffers at page+%zu, "
                "window at page+%zu\n",
                level_name(provided), reps, iters, min, max, (size_t)src & 4095,
                (size_t)sym & 4095);
    MPI_Win_lock_all(0, win);
    MPI_Win_sync(win); /* the memset of the window is visible to RMA from here on */
    MPI_Barrier(MPI_COMM_WORLD);

    double t[MAX_REPS];
    int bad = 0;
    if (me == 0) {
        for (int r = 0; r < WARMUP + reps; r++) {
            double t0 = now_s();
            for (long i = 0; i < iters; i++) {
                MPI_Put(src, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }
            if (r >= WARMUP) t[r - WARMUP] = (now_s() - t0) / (double)iters;
        }
        emit("put_lat", 8, median(t, reps), 0);
        for (int r = 0; r < WARMUP + reps; r++) {
            double t0 = now_s();
            for (long i = 0; i < iters; i++) {
                MPI_Get(dst, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }
            if (r >= WARMUP) t[r - WARMUP] = (now_s() - t0) / (double)iters;
        }
        emit("get_lat", 8, median(t, reps), 0);

        for (size_t n = min; n <= max; n *= 2) {
            size_t w = (4u << 20) / n;
            if (w < 1) w = 1;
            if (w > 64) w = 64;
            for (int r = 0; r < WARMUP + reps; r++) {
                double t0 = now_s();
                for (size_t k = 0; k < w; k++)
                    MPI_Put(src, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                MPI_Win_flush(1, win);
                if (r >= WARMUP) t[r - WARMUP] = now_s() - t0;
            }
            emit("put", n, median(t, reps) / (double)w, (double)n);
            for (int r = 0; r < WARMUP + reps; r++) {
                double t0 = now_s();
                for (size_t k = 0; k < w; k++) {
                    MPI_Get(dst, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                    MPI_Win_flush(1, win);
                }
                if (r >= WARMUP) t[r - WARMUP] = now_s() - t0;
            }
            emit("get", n, median(t, reps) / (double)w, (double)n);
            /* The get brought back what the put wrote. */
            if (memcmp(dst, src, n) != 0) bad = 1;
            memset(dst, 0, n);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD); /* every transfer of rank 0 was flushed before this */
    MPI_Win_sync(win);
    if (me == 1) {
        /* The puts landed in rank 1's window (the largest size wrote the most). */
        size_t last = min;
        while (last * 2 <= max) last *= 2;
        if (min <= max && memcmp(sym, src, last) != 0) bad = 1;
    }
    MPI_Win_unlock_all(win);
    if (bad) fprintf(stderr, "rank %d: put/get result check FAILED\n", me);
    free(dst);
    free(src);
    MPI_Win_free(&win);
    MPI_Finalize();
    return bad;
}
