/* Wrong arguments to RMA routines on PE 1, chosen by argv[1]; each must end the job
 * with a message naming the PE, the routine and the argument:
 *   source  a get whose source is a stack array (not symmetric)
 *   stride  an iput with a negative destination stride
 *   sig_op  a put_signal with an operator that is neither SET nor ADD */
#include <shmem.h>
#include <string.h>

int main(int argc, char **argv) {
    shmem_init();
    const char *mode = argc > 1 ? argv[1] : "";
    long *sym = (long *)shmem_malloc(8 * sizeof(long));
    uint64_t *sig = (uint64_t *)shmem_malloc(sizeof(uint64_t));
    long local[8] = {0};
    if (shmem_my_pe() == 1) {
        if (strcmp(mode, "source") == 0) shmem_long_get(sym, local, 8, 0);
        if (strcmp(mode, "stride") == 0) shmem_long_iput(sym, local, -1, 1, 4, 0);
        if (strcmp(mode, "sig_op") == 0)
            shmem_long_put_signal(sym, local, 8, sig, 1, 7, 0);
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
