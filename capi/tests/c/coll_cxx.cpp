// The collectives from C++: the overloads of shmem.h (broadcast, fcollect, the
// reductions, shmem_sync on a team) over a 2-D split of the world.
#include <shmem.h>
#include "check.h"

int main() {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    shmem_team_t row, col;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, nullptr, 0, &row, nullptr, 0, &col) == 0, "2d");
    int *v = static_cast<int *>(shmem_malloc(sizeof(int)));
    int *s = static_cast<int *>(shmem_malloc(sizeof(int)));
    double *all = static_cast<double *>(shmem_malloc(n * sizeof(double)));
    double *mine = static_cast<double *>(shmem_malloc(sizeof(double)));
    *v = me;
    shmem_sum_reduce(col, s, v, 1);  // the PEs of my column: me % 2, me % 2 + 2, ...
    int want = 0;
    for (int p = me % 2; p < n; p += 2) want += p;
    CHECK(*s == want, "column sum %d, want %d", *s, want);
    shmem_max_reduce(row, s, v, 1);
    CHECK(*s == (me | 1) || (*s == me && me == n - 1), "row max %d", *s);
    *mine = 1.5 * me;
    shmem_fcollect(SHMEM_TEAM_WORLD, all, mine, 1);
    for (int p = 0; p < n; p++) CHECK(all[p] == 1.5 * p, "fcollect[%d] = %g", p, all[p]);
    shmem_broadcast(row, v, v, 1, 0);
    CHECK(*v == me / 2 * 2, "row broadcast %d", *v);
    CHECK(shmem_sync(col) == 0, "sync");
    shmem_team_destroy(row);
    shmem_team_destroy(col);
    REPORT_OK("coll_cxx");
    shmem_finalize();
    return 0;
}
