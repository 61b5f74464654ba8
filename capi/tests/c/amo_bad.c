/* PE 1 makes the wrong call named by argv[1]; the job must end with a message naming
 * the PE, the routine and the argument. */
#include <shmem.h>
#include <string.h>

int main(int argc, char **argv) {
    shmem_init();
    long *x = shmem_malloc(2 * sizeof(long));
    int *flags = shmem_malloc(2 * sizeof(int));
    long private_word = 0;
    const char *what = argc > 1 ? argv[1] : "";
    if (shmem_my_pe() == 1) {
        if (!strcmp(what, "misaligned")) shmem_long_atomic_add((long *)((char *)x + 4), 1, 0);
        if (!strcmp(what, "private")) shmem_long_atomic_inc(&private_word, 0);
        if (!strcmp(what, "pe")) (void)shmem_int_atomic_fetch_inc(flags, 9);
        if (!strcmp(what, "cmp")) shmem_int_wait_until(flags, 42, 0);
        if (!strcmp(what, "ctx")) shmem_ctx_long_atomic_inc(SHMEM_CTX_INVALID, x, 0);
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
