/* Setup and query: version and name before shmem_init, shmem_init_thread and
 * shmem_query_thread, the accessibility queries, the legacy names and the
 * deprecated no-ops, checked against values each PE can compute. */
#include <shmem.h>
#include <string.h>
#include "check.h"

int main(void) {
    int major = -1, minor = -1;
    shmem_info_get_version(&major, &minor); /* allowed before shmem_init */
    char name[SHMEM_MAX_NAME_LEN];
    memset(name, 'x', sizeof name);
    shmem_info_get_name(name);

    int provided = -1;
    int rc = shmem_init_thread(SHMEM_THREAD_FUNNELED, &provided);
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION && major == 1 && minor == 5,
          "version %d.%d", major, minor);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name '%.20s'", name);
    CHECK(rc == 0 && provided == SHMEM_THREAD_MULTIPLE, "init_thread gave %d, provided %d", rc, provided);
    int queried = -1;
    shmem_query_thread(&queried);
    CHECK(queried == SHMEM_THREAD_MULTIPLE, "query_thread gave %d", queried);
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE + 1, &provided) != 0, "an unknown level was accepted");
    CHECK(_my_pe() == me && _num_pes() == n, "legacy names say %d of %d", _my_pe(), _num_pes());

    for (int pe = 0; pe < n; pe++)
        CHECK(shmem_pe_accessible(pe) == 1, "PE %d not accessible", pe);
    CHECK(shmem_pe_accessible(n) == 0 && shmem_pe_accessible(-1) == 0, "a PE outside the job is accessible");

    long *heap = shmem_malloc(8 * sizeof(long));
    long private_var = 0;
    CHECK(shmem_addr_accessible(heap, (me + 1) % n) == 1, "heap not accessible");
    CHECK(shmem_addr_accessible(&heap[7], 0) == 1, "end of the heap object not accessible");
    CHECK(shmem_addr_accessible(&private_var, 0) == 0, "a stack variable is accessible");
    CHECK(shmem_addr_accessible(heap, n) == 0, "accessible on PE %d", n);

    /* The deprecated cache routines do nothing, and must not disturb anything. */
    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_clear_cache_line_inv(heap);
    shmem_set_cache_line_inv(heap);
    shmem_udcflush();
    shmem_udcflush_line(heap);

    heap[0] = 100 + me;
    shmem_barrier_all();
    long got = shmem_long_g(heap, (me + 1) % n);
    CHECK(got == 100 + (me + 1) % n, "right neighbour holds %ld", got);
    shmem_barrier_all();
    shmem_free(heap);
    REPORT_OK("setup_query");
    shmem_finalize();
    return 0;
}
