/* A program in the style before OpenSHMEM 1.2: start_pes, _my_pe, _num_pes,
 * shmalloc and shfree, and no shmem_finalize (the library finalizes at exit). */
#include <shmem.h>
#include "check.h"

int main(void) {
    start_pes(0);
    int me = _my_pe();
    int n = _num_pes();
    int *ring = shmalloc(2 * sizeof(int));
    CHECK(ring != NULL, "shmalloc returned NULL");
    shmem_int_p(&ring[1], 7 * me + 1, (me + 1) % n);
    shmem_barrier_all();
    int left = (me + n - 1) % n;
    CHECK(ring[0] == 0 && ring[1] == 7 * left + 1, "ring holds %d %d", ring[0], ring[1]);
    shmem_barrier_all();
    shfree(ring);
    REPORT_OK("setup_legacy");
    return 0;
}
