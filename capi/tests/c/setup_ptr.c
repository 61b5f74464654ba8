/* shmem_ptr and symmetric globals: a PE's own address comes back unchanged; a peer's
 * address, when given, reaches the peer's copy (checked by the peer); it is NULL
 * under the am conduit, for a board, a private variable or a PE outside the job.
 * Globals (data and bss) are targets of puts like heap memory. */
#include <shmem.h>
#include <shmemx.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

long counter;                       /* bss */
int table[8] = {1, 2, 3, 4, 5, 6, 7, 8}; /* data */

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    const char *conduit = getenv("SHMEMPLUS_CONDUIT");
    int am = conduit != NULL && strcmp(conduit, "am") == 0;
    int one_node = shmem_team_n_pes(SHMEM_TEAM_SHARED) == n;

    long *heap = shmem_malloc(4 * sizeof(long));
    long private_var = 0;
    CHECK(shmem_ptr(heap, me) == heap && shmem_ptr(&heap[3], me) == &heap[3], "own address changed");
    CHECK(shmem_ptr(&counter, me) == &counter, "own global's address changed");
    for (int pe = 0; pe < n; pe++)
        CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, heap, pe) == shmem_ptr(heap, pe), "team_ptr differs for PE %d", pe);
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, heap, n) == NULL, "team_ptr past the team");
    shmem_pcontrol(1);
    CHECK(shmem_ptr(&private_var, me) == NULL && shmem_ptr(heap, n) == NULL && shmem_ptr(heap, -1) == NULL,
          "shmem_ptr of a private variable or a PE outside the job");
    long *peer = shmem_ptr(heap, right);
    int *peer_table = shmem_ptr(table, right);
    if (am) CHECK(peer == NULL && peer_table == NULL, "shmem_ptr to PE %d under am", right);
    if (!am && one_node) CHECK(peer != NULL && peer_table != NULL, "no shmem_ptr to PE %d on this node", right);
    /* On a cluster whose network is emulated, a PE of another node is across it. */
    const char *profile = getenv("SHMEMPLUS_PROFILE");
    int emulated = profile != NULL && strcmp(profile, "native") != 0;
    int right_on_node = shmem_team_translate_pe(SHMEM_TEAM_WORLD, right, SHMEM_TEAM_SHARED) >= 0;
    if (emulated && !right_on_node) CHECK(peer == NULL, "shmem_ptr to PE %d across the emulated network", right);
    if (!am && right_on_node) CHECK(peer != NULL, "no shmem_ptr to PE %d on this node", right);
    if (shmemx_n_fpgas() > 0) {
        void *board = shmemx_fpga_malloc(0, 64);
        CHECK(shmem_ptr(board, me) == NULL, "shmem_ptr of a board address");
        shmemx_fpga_free(board);
    }

    /* Through the pointer when there is one, by put otherwise; the peer checks. */
    if (peer != NULL) {
        peer[1] = 1000 + me;
        peer_table[7] = 70 + me;
    } else {
        shmem_long_p(&heap[1], 1000 + me, right);
        shmem_int_p(&table[7], 70 + me, right);
    }
    shmem_long_p(&counter, 500 + me, right);
    shmem_barrier_all();
    CHECK(heap[1] == 1000 + left, "heap[1] = %ld", heap[1]);
    CHECK(table[7] == 70 + left && table[0] == 1, "table = %d .. %d", table[0], table[7]);
    CHECK(counter == 500 + left, "counter = %ld", counter);
    CHECK(shmem_addr_accessible(&counter, right) == 1 && shmem_addr_accessible(table, left) == 1,
          "globals are not accessible");
    int got[8];
    shmem_int_get(got, table, 8, left);
    CHECK(got[6] == 7 && got[7] == 70 + (left + n - 1) % n, "table of PE %d: %d %d", left, got[6], got[7]);
    shmem_barrier_all();
    shmem_free(heap);
    REPORT_OK("setup_ptr");
    shmem_finalize();
    return 0;
}
