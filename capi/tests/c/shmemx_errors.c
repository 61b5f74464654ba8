/* Board routines used wrongly on purpose (argv[1] picks how); each must end the job
 * with one line naming the PE, the routine and the argument. */
#include <shmem.h>
#include <shmemx.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe();
    long *x = shmem_malloc(8);
    if (strcmp(mode, "bad-board") == 0) {
        void *p = shmemx_fpga_malloc(shmemx_n_fpgas(), 64);
        (void)p;
    } else if (strcmp(mode, "cpu-offset") == 0 && me == 1) {
        (void)shmemx_fpga_offset(x);
    } else if (strcmp(mode, "board-exhausted") == 0) {
        void *p = shmemx_fpga_malloc(0, shmemx_fpga_heap_size() + 1);
        (void)p;
    }
    shmem_free(x);
    shmem_finalize();
    return 0;
}
