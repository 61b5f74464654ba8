/* Global and static variables as the targets of collectives, locks and legacy
 * active-set calls (OpenSHMEM makes them symmetric): fcollect and a reduction into
 * globals, a lock and a counter that are globals, a pSync that is a static array. */
#include <shmem.h>
#include "check.h"

#define MAX_PES 64

long lock;
long counter;
long mine[2];
long all[2 * MAX_PES];
static long total[2];
static long psync[SHMEM_BCAST_SYNC_SIZE];
static long bcast[3];

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    CHECK(n <= MAX_PES, "at most %d PEs", MAX_PES);
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    mine[0] = me;
    mine[1] = 10L * me;
    shmem_barrier_all();

    shmem_long_fcollect(SHMEM_TEAM_WORLD, all, mine, 2);
    for (int i = 0; i < n; i++)
        CHECK(all[2 * i] == i && all[2 * i + 1] == 10L * i, "all[%d] = %ld", 2 * i, all[2 * i]);
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, total, mine, 2);
    CHECK(total[0] == (long)n * (n - 1) / 2 && total[1] == 5L * n * (n - 1), "sum %ld", total[0]);

    for (int i = 0; i < 10; i++) {
        shmem_set_lock(&lock);
        long c = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, c + me + 1, 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    CHECK(shmem_long_g(&counter, 0) == 5L * n * (n + 1), "counter %ld", shmem_long_g(&counter, 0));

    mine[0] = 7L * me + 1;
    shmem_broadcast64(bcast, mine, 1, n - 1, 0, 0, n, psync);
    CHECK(bcast[0] == (me == n - 1 ? 0 : 7L * (n - 1) + 1), "broadcast64 into a static: %ld", bcast[0]);
    shmem_barrier_all();
    REPORT_OK("coll_statics");
    shmem_finalize();
    return 0;
}
