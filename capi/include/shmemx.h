/* shmemx.h: the shmemplus extensions of OpenSHMEM, the multilevel address space.
 *
 * Each node of a job may have FPGA boards (`shmemrun --fpgas N`, or a cluster profile
 * with boards such as `SHMEMPLUS_PROFILE=novo-g`); each PE owns a partition of every
 * board of its node. Board memory is symmetric like the CPU heap: an object that
 * shmemx_fpga_malloc allocates on board b exists on board b of every PE's node, and
 * the pointer it returns is a *window address* naming this PE's copy. Window
 * addresses work in every shmem_ put, get and atomic routine, as destination or
 * source, for any PE (local board, remote board, board to board):
 *
 *     long *cpu = shmem_malloc(n * sizeof(long));
 *     long *dev = shmemx_fpga_malloc(0, n * sizeof(long));
 *     shmem_long_put(dev, cpu, n, pe);      // CPU memory -> board 0 of pe's node
 *     shmem_long_put(dev, dev, n, other);   // this PE's board -> another PE's board
 *     shmem_long_get(cpu, dev, n, pe);      // board 0 of pe's node -> CPU
 *
 * A window address must never be dereferenced: the window is reserved address space
 * without access rights (a load or store through it is a segmentation fault).
 * Include shmem.h first. */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

/* What shmemx_place_of says of an address that is not on a board. */
#define SHMEMX_PLACE_CPU (-1)  /* the CPU's symmetric memory */
#define SHMEMX_PLACE_NONE (-2) /* not a symmetric address */

SHMEMPLUS_BEGIN_C

/* The number of boards of this PE's node (0 when the job has none).
 *
 *     if (shmemx_n_fpgas() == 0) { shmem_global_exit(1); }
 */
int shmemx_n_fpgas(void);

/* Bytes of this PE's partition of each board: the most one PE can allocate there.
 *
 *     size_t room = shmemx_fpga_heap_size();
 */
size_t shmemx_fpga_heap_size(void);

/* Allocates `size` bytes on board `board` of every PE's node; collective (every PE
 * calls it with the same arguments, like shmem_malloc); the bytes start as zero.
 * Returns this PE's window address of the object, NULL for size 0. A board that does
 * not exist or an exhausted board heap ends the job with a message.
 *
 *     uint32_t *v = shmemx_fpga_malloc(0, 1024 * sizeof(uint32_t));
 */
void *shmemx_fpga_malloc(int board, size_t size);

/* Frees an object of shmemx_fpga_malloc on every PE (collective).
 *
 *     shmemx_fpga_free(v);
 */
void shmemx_fpga_free(void *ptr);

/* Which place `addr` names: the board number (0, 1, ...) for a window address,
 * SHMEMX_PLACE_CPU for the symmetric heap (and symmetric static data),
 * SHMEMX_PLACE_NONE for anything else.
 *
 *     if (shmemx_place_of(v) == 0) { ... v is on board 0 ... }
 */
int shmemx_place_of(const void *addr);

/* The byte offset of a window address in its board partition: the form a kernel
 * takes addresses in. Any other address ends the job with a message.
 *
 *     uint64_t at = shmemx_fpga_offset(&v[16]);
 */
uint64_t shmemx_fpga_offset(const void *addr);

/* Runs `kernel` on board `board` of this PE's node, on this PE's partition, and
 * waits until it is DONE. The kernels are those of the standard bitfile (loaded on
 * first use): "add-one" with args {offset, count} adds 1 to `count` uint32_t at a
 * board offset; "fail" always fails. Returns 0 when the kernel completed, -1 (with a
 * message on stderr) when it failed or does not exist. Local only: to process data
 * on another node's board, that node's PE runs the kernel.
 *
 *     uint64_t args[2] = { shmemx_fpga_offset(v), 1024 };
 *     if (shmemx_fpga_run(0, "add-one", args, 2) != 0) { ... }
 */
int shmemx_fpga_run(int board, const char *kernel, const uint64_t *args, size_t nargs);

SHMEMPLUS_END_C

#endif /* SHMEMX_H */
