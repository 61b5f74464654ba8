/* The symmetric heap: calloc gives zeros on every PE, also in space a freed object
 * had written; realloc keeps the prefix and its object is symmetric; align gives
 * the alignment asked for; malloc_with_hints gives a usable object; size 0 gives
 * NULL. Values come from other PEs, so a wrong address shows. */
#include <shmem.h>
#include <stdint.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;

    /* Dirty some heap, free it, then calloc: the new object must be zero. */
    unsigned char *dirty = shmem_malloc(4096);
    for (int i = 0; i < 4096; i++) dirty[i] = 0xa5;
    shmem_free(dirty);
    long *z = shmem_calloc(512, sizeof(long));
    CHECK(z != NULL, "calloc returned NULL");
    for (int i = 0; i < 512; i++) CHECK(z[i] == 0, "calloc'd z[%d] = %ld", i, z[i]);
    CHECK(shmem_calloc(0, 8) == NULL && shmem_calloc(8, 0) == NULL, "calloc of 0 bytes");
    CHECK(shmem_malloc(0) == NULL, "malloc(0)");

    /* realloc: grow, the prefix stays; the object is symmetric (put into it). */
    for (int i = 0; i < 512; i++) z[i] = me * 1000 + i;
    shmem_barrier_all();
    long *g = shmem_realloc(z, 2048 * sizeof(long));
    CHECK(g != NULL, "realloc returned NULL");
    for (int i = 0; i < 512; i++) CHECK(g[i] == me * 1000 + i, "realloc lost g[%d] = %ld", i, g[i]);
    shmem_long_p(&g[2047], 5000 + me, right);
    shmem_barrier_all();
    CHECK(g[2047] == 5000 + left, "g[2047] = %ld after a put from PE %d", g[2047], left);
    /* shrink */
    long *s = shrealloc(g, 16 * sizeof(long));
    for (int i = 0; i < 16; i++) CHECK(s[i] == me * 1000 + i, "shrink lost s[%d] = %ld", i, s[i]);
    long *fresh = shmem_realloc(NULL, 64); /* realloc(NULL) allocates */
    CHECK(fresh != NULL, "realloc(NULL, 64)");

    /* align: several powers of two, each usable as a put target. */
    size_t aligns[] = {8, 64, 256, 1024, 4096, 65536, 1 << 21};
    for (unsigned k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
        int *a = k % 2 ? shmem_align(aligns[k], 100 * sizeof(int)) : shmemalign(aligns[k], 100 * sizeof(int));
        CHECK(a != NULL && (uintptr_t)a % aligns[k] == 0, "align %zu gave %p", aligns[k], (void *)a);
        shmem_int_p(&a[99], (int)(k * 10) + me, right);
        shmem_barrier_all();
        CHECK(a[99] == (int)(k * 10) + left, "aligned a[99] = %d", a[99]);
        shmem_free(a);
    }

    /* hints are accepted; the object works with atomics-sized traffic. */
    uint64_t *h = shmem_malloc_with_hints(8 * sizeof(uint64_t), SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    CHECK(h != NULL && h[3] == 0, "malloc_with_hints");
    shmem_barrier_all(); /* every PE has seen its zero before anyone puts */
    shmem_uint64_p(&h[3], (uint64_t)me << 32, right);
    shmem_barrier_all();
    CHECK(h[3] == (uint64_t)left << 32, "hinted h[3] = %llu", (unsigned long long)h[3]);
    CHECK(shmem_malloc_with_hints(0, 0) == NULL, "malloc_with_hints(0)");

    shmem_free(h);
    shmem_free(fresh);
    shmem_realloc(s, 0); /* realloc to 0 frees */
    REPORT_OK("setup_memory");
    shmem_finalize();
    return 0;
}
