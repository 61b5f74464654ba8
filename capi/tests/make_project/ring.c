#include <shmem.h>
#include "ring.h"

long ring_sum(void) {
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    long *token = shmem_calloc(1, sizeof(long));
    int *arrived = shmem_calloc(1, sizeof(int));
    if (me != 0) {
        /* Wait for the left neighbour's token (bounded by the job's timeout). */
        while (shmem_int_g(arrived, me) == 0) {
        }
    }
    long value = shmem_long_g(token, me) + me;
    shmem_long_p(token, value, (me + 1) % n);
    shmem_fence();
    shmem_int_p(arrived, 1, (me + 1) % n);
    if (me == 0) {
        while (shmem_int_g(arrived, 0) == 0) {
        }
    }
    shmem_barrier_all();
    long result = shmem_long_g(token, me);
    shmem_free(arrived);
    shmem_free(token);
    return result;
}
