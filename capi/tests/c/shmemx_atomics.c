/* Atomics on board memory from C: every PE adds to and
 * swaps words of a board object on PE 0 (a board window address), through the same
 * shmem_ atomics as CPU memory; PE 0 checks exact totals, and every PE fetches them. */
#include <shmem.h>
#include <shmemx.h>
#include "check.h"

#define ROUNDS 50

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    CHECK(shmemx_n_fpgas() >= 1, "no boards: %d", shmemx_n_fpgas());
    /* Word 0: a counter; word 1: fetch_inc tickets; word 2: an OR mask. */
    uint64_t *words = shmemx_fpga_malloc(0, 4 * sizeof(uint64_t));
    CHECK(words != NULL, "shmemx_fpga_malloc");
    shmem_barrier_all();
    for (int r = 0; r < ROUNDS; r++) {
        shmem_uint64_atomic_add(&words[0], (uint64_t)(me + 1), 0);
        uint64_t ticket = shmem_uint64_atomic_fetch_inc(&words[1], 0);
        CHECK(ticket < (uint64_t)(n * ROUNDS), "ticket %llu", (unsigned long long)ticket);
    }
    shmem_uint64_atomic_or(&words[2], (uint64_t)1 << me, 0);
    shmem_quiet();
    shmem_barrier_all();
    uint64_t total = shmem_uint64_atomic_fetch(&words[0], 0);
    uint64_t tickets = shmem_uint64_atomic_fetch(&words[1], 0);
    uint64_t mask = shmem_uint64_atomic_fetch(&words[2], 0);
    uint64_t want = (uint64_t)ROUNDS * (uint64_t)n * (uint64_t)(n + 1) / 2;
    CHECK(total == want, "board counter %llu, want %llu", (unsigned long long)total, (unsigned long long)want);
    CHECK(tickets == (uint64_t)(n * ROUNDS), "tickets %llu", (unsigned long long)tickets);
    CHECK(mask == ((uint64_t)1 << n) - 1, "mask %llx", (unsigned long long)mask);
    /* compare_swap: exactly one PE wins word 3 from 0. */
    shmem_barrier_all();
    uint64_t old = shmem_uint64_atomic_compare_swap(&words[3], 0, (uint64_t)me + 100, 0);
    shmem_barrier_all();
    uint64_t winner = shmem_uint64_atomic_fetch(&words[3], 0);
    CHECK(winner >= 100 && winner < (uint64_t)(100 + n), "winner %llu", (unsigned long long)winner);
    CHECK((old == 0) == (winner == (uint64_t)me + 100), "old %llu winner %llu", (unsigned long long)old,
          (unsigned long long)winner);
    shmem_barrier_all();
    shmemx_fpga_free(words);
    REPORT_OK("shmemx_atomics");
    shmem_finalize();
    return 0;
}
