/* hello.c: the C quick start of shmemplus (the README shows this program).
 *
 *   target/release/shmemcc capi/examples/hello.c -o hello
 *   target/release/shmemrun -n 4 ./hello
 *
 * Every PE puts its number into a global variable of the next PE (global and static
 * variables are symmetric) and its square into a symmetric heap array of it; after a
 * barrier, each PE prints what its left neighbour sent. */
#include <shmem.h>
#include <stdio.h>

static int from_left = -1;          /* globals and statics are symmetric objects */

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
    long *squares = shmem_malloc(sizeof(long));
    shmem_int_p(&from_left, me, right);
    shmem_p(squares, (long)me * me, right);          /* C11 type-generic form */
    shmem_barrier_all();
    printf("PE %d of %d: PE %d sent %d and %ld\n", me, n, (me + n - 1) % n, from_left, *squares);
    shmem_free(squares);
    shmem_finalize();
    return 0;
}
