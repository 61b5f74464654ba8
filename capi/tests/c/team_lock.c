/* Distributed locks from C: a lock protects a non-atomic read-modify-write of a
 * counter on PE 0 (get, then put), so the final count is exact; test_lock reports a
 * held lock and acquires a free one. */
#include <shmem.h>
#include "check.h"

#define ITERS 50

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    long *lock = shmem_malloc(2 * sizeof(long));
    long *counter = shmem_malloc(sizeof(long));
    lock[0] = lock[1] = 0;
    *counter = 0;
    shmem_barrier_all();

    for (int i = 0; i < ITERS; i++) {
        if (i % 2 == 0) {
            shmem_set_lock(&lock[1]);
        } else {
            while (shmem_test_lock(&lock[1]) != 0) {
            }
        }
        long c = shmem_long_g(counter, 0);
        shmem_long_p(counter, c + 1 + me, 0);
        shmem_clear_lock(&lock[1]);
    }
    shmem_barrier_all();
    long want = (long)ITERS * n + (long)ITERS * n * (n - 1) / 2;
    CHECK(shmem_long_g(counter, 0) == want, "counter %ld, want %ld", shmem_long_g(counter, 0), want);

    /* PE 0 holds lock[0]: every other PE's test fails; after the release, one wins. */
    if (me == 0) shmem_set_lock(&lock[0]);
    shmem_barrier_all();
    if (me != 0) CHECK(shmem_test_lock(&lock[0]) == 1, "a held lock was acquired");
    shmem_barrier_all();
    if (me == 0) shmem_clear_lock(&lock[0]);
    shmem_barrier_all();
    if (me == n - 1) {
        CHECK(shmem_test_lock(&lock[0]) == 0, "a free lock was not acquired");
        shmem_clear_lock(&lock[0]);
    }
    shmem_barrier_all();
    shmem_free(counter);
    shmem_free(lock);
    REPORT_OK("team_lock");
    shmem_finalize();
    return 0;
}
