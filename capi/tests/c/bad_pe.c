/* PE 1 puts to a PE that does not exist: the job must end with a message naming the
 * PE, the routine and the argument. */
#include <shmem.h>

static long target;

int main(void) {
    shmem_init();
    long *x = shmem_malloc(sizeof(long));
    if (shmem_my_pe() == 1) shmem_long_p(x, 1, 7);
    shmem_barrier_all();
    (void)target;
    shmem_finalize();
    return 0;
}
