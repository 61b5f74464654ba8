/* Global and static variables are symmetric: atomics target them on other PEs and
 * waits watch them, as with heap objects. */
#include <shmem.h>
#include "check.h"

#define K 25

long counter;               /* zero-initialised: .bss */
static int flag = -1;       /* initialised: .data */
static uint32_t mask;
static short ready[2];

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    shmem_barrier_all();
    for (int k = 0; k < K; k++) shmem_atomic_fetch_add(&counter, (long)me + 1, 0);
    shmem_atomic_or(&mask, (uint32_t)1 << me, 0);
    int was = shmem_atomic_swap(&flag, 10 * me, right);
    CHECK(was == -1, "the right neighbour's flag was %d before my swap", was);
    shmem_short_p(&ready[1], (short)(me + 1), right);
    shmem_wait_until(&flag, SHMEM_CMP_EQ, 10 * left);
    CHECK(shmem_wait_until_any(ready, 2, NULL, SHMEM_CMP_EQ, (short)(left + 1)) == 1, "ready");
    shmem_barrier_all();
    if (me == 0) {
        CHECK(counter == (long)K * n * (n + 1) / 2, "counter %ld", counter);
        CHECK(mask == (n >= 32 ? ~0u : (1u << n) - 1), "mask %x", mask);
    }
    CHECK(flag == 10 * left, "flag %d from PE %d", flag, left);
    shmem_barrier_all();
    REPORT_OK("amo_globals");
    shmem_finalize();
    return 0;
}
