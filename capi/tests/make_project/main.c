#include <shmem.h>
#include <stdio.h>
#include "ring.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    long sum = ring_sum();
    long want = (long)n * (n - 1) / 2;
    if (me == 0 && sum != want) {
        fprintf(stderr, "PE 0: the token came back as %ld, not %ld\n", sum, want);
        return 1;
    }
    printf("PE %d: ring ok\n", me);
    shmem_finalize();
    return 0;
}
