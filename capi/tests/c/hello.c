/* The C quick start: every PE writes its number into the next PE's symmetric
 * variable, heap-allocated, and checks what its left neighbour wrote. */
#include <shmem.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    long *slot = shmem_malloc(4 * sizeof(long));
    CHECK(slot != NULL, "shmem_malloc returned NULL");
    long mine[4] = {me, me * 10, me * 100, -me};
    shmem_long_put(slot, mine, 4, (me + 1) % n);
    shmem_barrier_all();
    int left = (me + n - 1) % n;
    CHECK(slot[0] == left && slot[1] == left * 10 && slot[2] == left * 100 && slot[3] == -left,
          "slot holds %ld %ld %ld %ld, left neighbour is %d", slot[0], slot[1], slot[2], slot[3], left);
    shmem_barrier_all(); /* every PE has checked before anyone writes again */
    /* Scalar and type-generic forms. */
    shmem_p(&slot[1], (long)(1000 + me), (me + 1) % n);
    shmem_barrier_all();
    CHECK(shmem_g(&slot[1], me) == 1000 + left, "p/g gave %ld", slot[1]);
    long back[4];
    shmem_getmem(back, slot, sizeof back, left);
    CHECK(back[1] == 1000 + (left + n - 1) % n, "getmem gave %ld", back[1]);
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n,
          "world team says %d of %d", shmem_team_my_pe(SHMEM_TEAM_WORLD), shmem_team_n_pes(SHMEM_TEAM_WORLD));
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
    shmem_free(slot);
    REPORT_OK("hello");
    shmem_finalize();
    return 0;
}
