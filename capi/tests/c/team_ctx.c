/* Contexts from C: create on the world and on a team, get_team, quiet/fence on a
 * context, refused options and teams, destroy. */
#include <shmem.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();

    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED, &ctx) == 0, "ctx_create");
    CHECK(ctx != SHMEM_CTX_INVALID && ctx != SHMEM_CTX_DEFAULT, "a new context");
    shmem_team_t t = SHMEM_TEAM_INVALID;
    CHECK(shmem_ctx_get_team(ctx, &t) == 0 && t == SHMEM_TEAM_WORLD, "ctx team is the world");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD, "default team");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0 && t == SHMEM_TEAM_INVALID, "invalid ctx");

    /* A context on the team of the upper half of the PEs. */
    shmem_team_t upper;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n / 2, 1, n - n / 2, NULL, 0, &upper) == 0,
          "split");
    shmem_ctx_t tctx = SHMEM_CTX_DEFAULT;
    int rc = shmem_team_create_ctx(upper, 0, &tctx);
    if (me >= n / 2) {
        CHECK(rc == 0 && tctx != SHMEM_CTX_INVALID, "team_create_ctx returned %d", rc);
        CHECK(shmem_ctx_get_team(tctx, &t) == 0 && t == upper, "ctx team is the upper team");
        CHECK(shmem_team_my_pe(t) == me - n / 2, "its my_pe");
    } else {
        CHECK(rc != 0 && tctx == SHMEM_CTX_INVALID, "a context on SHMEM_TEAM_INVALID: %d", rc);
    }
    shmem_ctx_t bad = SHMEM_CTX_DEFAULT;
    CHECK(shmem_ctx_create(1L << 20, &bad) != 0 && bad == SHMEM_CTX_INVALID, "unknown options");

    /* Puts completed through a context's quiet are visible after a barrier. */
    long *x = shmem_malloc(sizeof(long));
    *x = -1;
    shmem_barrier_all();
    shmem_long_p(x, 100 + me, (me + 1) % n);
    shmem_ctx_fence(ctx);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(*x == 100 + (me + n - 1) % n, "x = %ld", *x);

    shmem_ctx_destroy(tctx); /* SHMEM_CTX_INVALID on the lower half: no effect */
    shmem_ctx_destroy(ctx);
    shmem_ctx_destroy(SHMEM_CTX_INVALID);
    CHECK(shmem_ctx_get_team(ctx, &t) != 0 && t == SHMEM_TEAM_INVALID, "destroyed ctx");

    /* Destroying a team destroys the contexts made on it. */
    shmem_ctx_t kept = SHMEM_CTX_INVALID;
    if (me >= n / 2) {
        CHECK(shmem_team_create_ctx(upper, 0, &kept) == 0, "a second context on the upper team");
        shmem_ctx_quiet(kept);
    }
    shmem_ctx_t other = SHMEM_CTX_INVALID;
    CHECK(shmem_ctx_create(0, &other) == 0, "a world context");
    shmem_team_destroy(upper);
    if (me >= n / 2)
        CHECK(shmem_ctx_get_team(kept, &t) != 0 && t == SHMEM_TEAM_INVALID, "the team's context outlived it");
    CHECK(shmem_ctx_get_team(other, &t) == 0 && t == SHMEM_TEAM_WORLD, "a world context died with the team");
    shmem_ctx_destroy(other);
    shmem_free(x);
    REPORT_OK("team_ctx");
    shmem_finalize();
    return 0;
}
