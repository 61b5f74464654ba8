/* The multilevel address space from C, on every PE: CPU -> own board, CPU -> a
 * remote board, board -> remote board (the source a window address), board ->
 * board by get, a kernel run on board data, and the place queries. Every value is
 * derived from the PE that wrote it, so data from a wrong PE or place shows. */
#include <shmem.h>
#include <shmemx.h>
#include "check.h"

#define N 300

static uint32_t val(int pe, int tag, int i) { return (uint32_t)(pe * 100000 + tag * 1000 + i); }

/* Reads `n` elements of `src` (any place) on PE `pe` into private memory. */
static void fetch(uint32_t *out, const uint32_t *src, int pe) { shmem_uint32_get(out, src, N, pe); }

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int two_right = (me + 2) % n, two_left = (me + n - 2) % n;
    int boards = shmemx_n_fpgas();
    CHECK(boards >= 1, "no boards (%d)", boards);
    CHECK(shmemx_fpga_heap_size() >= 3 * N * sizeof(uint32_t), "partition of %zu bytes", shmemx_fpga_heap_size());

    uint32_t *cpu = shmem_malloc(N * sizeof(uint32_t));
    uint32_t *a = shmemx_fpga_malloc(0, N * sizeof(uint32_t));
    uint32_t *b = shmemx_fpga_malloc(boards - 1, N * sizeof(uint32_t));
    uint32_t *c = shmemx_fpga_malloc(0, N * sizeof(uint32_t));
    uint32_t mine = 0;
    CHECK(a != NULL && b != NULL && c != NULL, "fpga_malloc returned NULL");
    CHECK(shmemx_place_of(a) == 0 && shmemx_place_of(c) == 0 && shmemx_place_of(b) == boards - 1,
          "places %d %d %d", shmemx_place_of(a), shmemx_place_of(b), shmemx_place_of(c));
    CHECK(shmemx_place_of(cpu) == SHMEMX_PLACE_CPU && shmemx_place_of(&mine) == SHMEMX_PLACE_NONE,
          "cpu place %d, stack place %d", shmemx_place_of(cpu), shmemx_place_of(&mine));
    CHECK(shmem_addr_accessible(a, right) == 1, "a board address is not accessible");
    CHECK(shmemx_fpga_offset(c) != shmemx_fpga_offset(a) && shmemx_fpga_offset(&a[5]) == shmemx_fpga_offset(a) + 20,
          "offsets %llu %llu", (unsigned long long)shmemx_fpga_offset(a), (unsigned long long)shmemx_fpga_offset(c));

    uint32_t src[N], out[N];
    fetch(out, a, me);
    for (int i = 0; i < N; i++) CHECK(out[i] == 0, "fresh board memory holds %u at %d", out[i], i);

    /* CPU -> own board, CPU -> the right neighbour's board (its last board). */
    for (int i = 0; i < N; i++) src[i] = val(me, 1, i);
    shmem_uint32_put(a, src, N, me);
    for (int i = 0; i < N; i++) src[i] = val(me, 2, i);
    shmem_uint32_put(b, src, N, right);
    shmem_barrier_all();
    fetch(out, a, me);
    for (int i = 0; i < N; i++) CHECK(out[i] == val(me, 1, i), "own board a[%d] = %u", i, out[i]);
    fetch(out, b, me);
    for (int i = 0; i < N; i++) CHECK(out[i] == val(left, 2, i), "b[%d] = %u from PE %d", i, out[i], left);

    /* Board -> remote board: my a into c on the PE two to the right. */
    shmem_uint32_put(c, a, N, two_right);
    shmem_barrier_all();
    fetch(out, c, me);
    for (int i = 0; i < N; i++) CHECK(out[i] == val(two_left, 1, i), "c[%d] = %u from PE %d", i, out[i], two_left);

    /* A kernel on my board: add one to c; the right neighbour checks the result. */
    uint64_t args[2] = {shmemx_fpga_offset(c), N};
    CHECK(shmemx_fpga_run(0, "add-one", args, 2) == 0, "add-one failed");
    shmem_barrier_all();
    fetch(out, c, right);
    int writer = (right + n - 2) % n;
    for (int i = 0; i < N; i++) CHECK(out[i] == val(writer, 1, i) + 1, "PE %d's c[%d] = %u after add-one", right, i, out[i]);

    /* Board <- remote board by get: my a from the right neighbour's b (which I wrote). */
    shmem_barrier_all();
    shmem_uint32_get(a, b, N, right);
    fetch(out, a, me);
    for (int i = 0; i < N; i++) CHECK(out[i] == val(me, 2, i), "a[%d] = %u after a board-to-board get", i, out[i]);

    /* A board object as the source of a get into CPU memory of another PE's copy. */
    shmem_barrier_all(); /* the left neighbour has filled its a */
    shmem_uint32_get(cpu, a, N, left);
    for (int i = 0; i < N; i++) CHECK(cpu[i] == val(left, 2, i), "cpu[%d] = %u", i, cpu[i]);

    /* A kernel that fails reports it and leaves the job running. */
    CHECK(shmemx_fpga_run(0, "fail", NULL, 0) == -1, "the fail kernel succeeded");
    CHECK(shmemx_fpga_run(0, "no-such-kernel", NULL, 0) == -1, "an unknown kernel ran");

    shmem_barrier_all();
    shmemx_fpga_free(c);
    shmemx_fpga_free(b);
    shmemx_fpga_free(a);
    shmem_free(cpu);
    REPORT_OK("shmemx_boards");
    shmem_finalize();
    return 0;
}
