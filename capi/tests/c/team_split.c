/* Team splits from C: strided (even PEs, negative strides, a split of a split), 2-D
 * grids (with a short last row), translate_pe, get_config, sync, destroy, and a split
 * that every member must refuse alike. Every expectation is computed from PE numbers. */
#include <shmem.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();

    /* The even PEs, with a configuration to read back. */
    shmem_team_config_t conf = {3};
    shmem_team_t even;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &conf,
                                      SHMEM_TEAM_NUM_CONTEXTS, &even);
    CHECK(rc == 0, "split of the even PEs returned %d", rc);
    if (me % 2 == 0) {
        CHECK(even != SHMEM_TEAM_INVALID, "an even PE got no team");
        CHECK(shmem_team_my_pe(even) == me / 2 && shmem_team_n_pes(even) == (n + 1) / 2,
              "even team: %d of %d", shmem_team_my_pe(even), shmem_team_n_pes(even));
        shmem_team_config_t got = {-1};
        CHECK(shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
                  got.num_contexts == 3,
              "config: %d", got.num_contexts);
        CHECK(shmem_team_translate_pe(even, 1, SHMEM_TEAM_WORLD) == 2, "even PE 1 is world 2");
        CHECK(shmem_team_sync(even) == 0, "team_sync");
    } else {
        CHECK(even == SHMEM_TEAM_INVALID, "an odd PE got a team");
        CHECK(shmem_team_my_pe(even) == -1 && shmem_team_n_pes(even) == -1, "invalid team queries");
    }
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, even) == -1, "world PE 1 is not even");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1, "invalid src");
    shmem_team_config_t world_conf = {-1};
    CHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &world_conf) == 0 &&
              world_conf.num_contexts == 0,
          "world config %d", world_conf.num_contexts);
    CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, 0, &world_conf) != 0, "invalid config");

    /* Every PE numbered from the last down: a negative stride. */
    shmem_team_t down;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &down) == 0,
          "split with stride -1");
    CHECK(shmem_team_my_pe(down) == n - 1 - me && shmem_team_n_pes(down) == n,
          "down team: %d of %d", shmem_team_my_pe(down), shmem_team_n_pes(down));
    for (int i = 0; i < n; i++)
        CHECK(shmem_team_translate_pe(down, i, SHMEM_TEAM_WORLD) == n - 1 - i, "down PE %d", i);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, down) == n - 1 - me, "world to down");
    CHECK(shmem_team_sync(down) == 0, "sync of the down team");

    /* Every other PE of the down team (world n-1, n-3, ...): a split of a split. */
    shmem_team_t down2;
    CHECK(shmem_team_split_strided(down, 0, 2, n / 2, NULL, 0, &down2) == 0, "split of down");
    if ((n - 1 - me) % 2 == 0) {
        CHECK(shmem_team_my_pe(down2) == (n - 1 - me) / 2, "down2 my_pe %d", shmem_team_my_pe(down2));
        CHECK(shmem_team_translate_pe(down2, 1, SHMEM_TEAM_WORLD) == n - 3, "down2 PE 1");
        CHECK(shmem_team_translate_pe(down2, 0, even) == ((n - 1) % 2 == 0 ? (n - 1) / 2 : -1),
              "down2 to even");
        shmem_team_sync(down2);
    } else {
        CHECK(down2 == SHMEM_TEAM_INVALID, "PE %d is not in down2", me);
    }

    /* Stride -2 from the last PE straight from the world. */
    shmem_team_t odd_down;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -2, n / 2, NULL, 0, &odd_down) == 0,
          "split with stride -2");
    if ((n - 1 - me) % 2 == 0)
        CHECK(shmem_team_my_pe(odd_down) == (n - 1 - me) / 2, "odd_down %d", shmem_team_my_pe(odd_down));
    else
        CHECK(odd_down == SHMEM_TEAM_INVALID, "PE %d is not in odd_down", me);

    /* A split past the parent: refused by every member, no team. */
    shmem_team_t none = SHMEM_TEAM_WORLD;
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n, NULL, 0, &none);
    CHECK(rc != 0 && none == SHMEM_TEAM_INVALID, "an impossible split returned %d", rc);
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, -1, 2, NULL, 0, &none);
    CHECK(rc != 0 && none == SHMEM_TEAM_INVALID, "a split below PE 0 returned %d", rc);

    /* 2-D grids: 2 columns, then 3 (the last row short when 3 does not divide n). */
    for (int x = 2; x <= 3; x++) {
        shmem_team_t row, col;
        rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, x, NULL, 0, &row, NULL, 0, &col);
        CHECK(rc == 0, "split_2d(%d) returned %d", x, rc);
        int row_len = (me / x * x + x <= n) ? x : n - me / x * x;
        int col_len = (n - me % x + x - 1) / x;
        CHECK(shmem_team_my_pe(row) == me % x && shmem_team_n_pes(row) == row_len,
              "x=%d row: %d of %d, want %d of %d", x, shmem_team_my_pe(row), shmem_team_n_pes(row),
              me % x, row_len);
        CHECK(shmem_team_my_pe(col) == me / x && shmem_team_n_pes(col) == col_len,
              "x=%d col: %d of %d, want %d of %d", x, shmem_team_my_pe(col), shmem_team_n_pes(col),
              me / x, col_len);
        CHECK(shmem_team_translate_pe(col, 0, SHMEM_TEAM_WORLD) == me % x, "column head");
        CHECK(shmem_team_translate_pe(row, 0, col) == (me % x == 0 ? me / x : -1), "row head in col");
        shmem_team_sync(row);
        shmem_team_sync(col);
        shmem_team_destroy(row);
        shmem_team_destroy(col);
    }

    if (odd_down != SHMEM_TEAM_INVALID) shmem_team_destroy(odd_down);
    if (down2 != SHMEM_TEAM_INVALID) shmem_team_destroy(down2);
    shmem_team_destroy(down);
    shmem_team_destroy(even); /* SHMEM_TEAM_INVALID on odd PEs: no effect */
    shmem_team_destroy(SHMEM_TEAM_INVALID);
    REPORT_OK("team_split");
    shmem_finalize();
    return 0;
}
