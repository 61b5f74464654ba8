// The setup and memory routines from C++, with the type-overloaded put/get: every
// PE passes values derived from its number to its right neighbour.
#include <shmem.h>
#include <cstring>
#include "check.h"

int main() {
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_SERIALIZED, &provided) == 0, "init_thread failed");
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_name(name);
    CHECK(std::strcmp(name, SHMEM_VENDOR_STRING) == 0, "name %s", name);

    double *d = static_cast<double *>(shmem_calloc(4, sizeof(double)));
    int *i = static_cast<int *>(shmem_align(256, 4 * sizeof(int)));
    CHECK(reinterpret_cast<unsigned long>(i) % 256 == 0, "align gave %p", static_cast<void *>(i));
    double dv[4] = {me + 0.5, me * 2.0, -1.0 * me, 0.25};
    shmem_put(d, dv, 4, right);   // overload: double
    shmem_p(&i[2], 40 + me, right); // overload: int
    shmem_barrier_all();
    CHECK(d[0] == left + 0.5 && d[1] == left * 2.0 && d[2] == -1.0 * left && d[3] == 0.25,
          "d = %g %g %g %g", d[0], d[1], d[2], d[3]);
    CHECK(shmem_g(&i[2], me) == 40 + left, "i[2] = %d", i[2]);
    CHECK(shmem_addr_accessible(d, right) == 1 && shmem_pe_accessible(right) == 1, "accessibility");
    shmem_barrier_all();
    shmem_free(i);
    shmem_free(d);
    REPORT_OK("setup_cxx");
    shmem_finalize();
    return 0;
}
