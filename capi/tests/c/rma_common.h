/* What the RMA test programs share: this PE and its neighbours, and values made
 * from a PE's number that a wrong transfer cannot produce by accident. Define N (the
 * element count) before including this. */
#ifndef SHMEMPLUS_TEST_RMA_COMMON_H
#define SHMEMPLUS_TEST_RMA_COMMON_H

#include <shmem.h>
#include "check.h"

static int me, n, left, right;

/* shmem_init, then this PE, the job's size and the neighbours on the ring. */
static void rma_start(void) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    left = (me + n - 1) % n;
    right = (me + 1) % n;
}

/* Element i of PE pe's data in round r: at most 126 for the 4 PEs, rounds and
 * indices these programs use, so every type (signed char too) holds it. */
#define VAL(T, pe, r, i) ((T)((pe) * 20 + (r) * 7 + (i) + 1))

/* Sets buf[0..N) to round r of this PE. */
#define FILL(T, buf, r) for (int i = 0; i < N; i++) (buf)[i] = VAL(T, me, r, i)

/* Checks that buf[0..N) holds round r of PE pe. */
#define EXPECT(T, buf, pe, r, what)                                                     \
    for (int i = 0; i < N; i++)                                                         \
        CHECK((buf)[i] == VAL(T, pe, r, i), "%s %s[%d] = %ld, want %ld", #T, what, i,    \
              (long)(buf)[i], (long)VAL(T, pe, r, i))

#endif
