/* Programs that are wrong on purpose, one per mode (argv[1]); each must end the job
 * with one line naming the PE, the routine and what is wrong. Only PE 1 errs where
 * that is possible, so the message must name the right PE. */
#include <shmem.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "before-init") == 0) {
        long *x = shmem_malloc(8); /* no shmem_init yet */
        (void)x;
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe();
    long *heap = shmem_malloc(4 * sizeof(long));
    if (strcmp(mode, "bad-pe") == 0 && me == 1) {
        shmem_long_put(heap, heap, 4, -3);
    } else if (strcmp(mode, "not-symmetric") == 0 && me == 1) {
        long on_stack[4] = {1, 2, 3, 4};
        shmem_long_put(on_stack, heap, 4, 0);
    } else if (strcmp(mode, "heap-exhausted") == 0) {
        void *huge = shmem_malloc((size_t)1 << 46);
        (void)huge;
    } else if (strcmp(mode, "finalize-twice") == 0) {
        shmem_free(heap);
        shmem_finalize();
        if (me == 1) shmem_finalize();
        return 0;
    } else if (strcmp(mode, "after-finalize") == 0) {
        shmem_finalize();
        if (me == 1) shmem_barrier_all();
        return 0;
    } else if (strcmp(mode, "global-exit") == 0) {
        if (me == 2) shmem_global_exit(7); /* the others wait in the barrier below */
    } else if (strcmp(mode, "bad-alignment") == 0) {
        void *a = shmem_align(48, 64);
        (void)a;
    } else if (strcmp(mode, "big-alignment") == 0) {
        void *a = shmem_align((size_t)1 << 22, 64);
        (void)a;
    } else if (strcmp(mode, "free-twice") == 0) {
        shmem_free(heap);
        shmem_free(heap);
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
