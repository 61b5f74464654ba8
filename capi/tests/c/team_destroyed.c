/* A call on a destroyed context (argv[1] = "ctx") or team ("team") must end the job
 * with a message naming the routine, not read freed memory. */
#include <shmem.h>
#include <string.h>

int main(int argc, char **argv) {
    shmem_init();
    if (argc > 1 && strcmp(argv[1], "team") == 0) {
        shmem_team_t t;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), NULL, 0, &t);
        shmem_team_destroy(t);
        shmem_team_sync(t);
    } else {
        shmem_ctx_t ctx;
        shmem_ctx_create(0, &ctx);
        shmem_ctx_destroy(ctx);
        shmem_ctx_quiet(ctx);
    }
    shmem_finalize();
    return 0;
}
