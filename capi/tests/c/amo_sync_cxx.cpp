// The C++ overloads of the atomics and waits: the same names as the C11 generics,
// picked by the argument types, with and without a context.
#include <shmem.h>
#include "check.h"

int main() {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *counter = static_cast<long *>(shmem_malloc(sizeof(long)));
    unsigned long long *bits = static_cast<unsigned long long *>(shmem_malloc(sizeof(unsigned long long)));
    int *flag = static_cast<int *>(shmem_malloc(sizeof(int)));
    short *shorts = static_cast<short *>(shmem_malloc(2 * sizeof(short)));
    double *d = static_cast<double *>(shmem_malloc(sizeof(double)));
    *counter = 0; *bits = 0; *flag = 0; shorts[0] = shorts[1] = 0; *d = 0;
    shmem_barrier_all();

    long t = shmem_atomic_fetch_add(counter, 2L, 0);
    CHECK(t >= 0 && t < 3L * n, "fetch_add gave %ld", t); // others add 3 each
    shmem_atomic_inc(SHMEM_CTX_DEFAULT, counter, 0);
    shmem_atomic_or(bits, 1ULL << me, 0);
    long f = -1;
    shmem_atomic_fetch_nbi(&f, counter, me);
    shmem_quiet();
    CHECK(f >= 0, "nbi fetch %ld", f);
    shmem_atomic_set(flag, left == right ? 7 : me + 1, right);
    shmem_atomic_set(d, 0.5 * me, right);
    shmem_wait_until(flag, SHMEM_CMP_EQ, left == right ? 7 : left + 1);
    shmem_p(&shorts[1], static_cast<short>(me + 5), right);
    CHECK(shmem_wait_until_any(shorts, 2, nullptr, SHMEM_CMP_EQ, static_cast<short>(left + 5)) == 1,
          "wait_until_any");
    shmem_barrier_all();
    CHECK(shmem_test(flag, SHMEM_CMP_NE, 0) == 1, "test");
    CHECK(shmem_atomic_fetch(d, me) == 0.5 * left, "double %f", *d);
    int old = shmem_atomic_compare_swap(flag, left == right ? 7 : left + 1, -1, me);
    CHECK(old == (left == right ? 7 : left + 1) && *flag == -1, "compare_swap %d", old);
    CHECK(shmem_swap(flag, 3, me) == -1, "deprecated int swap");
    if (me == 0) {
        CHECK(*counter == 3L * n, "counter %ld", *counter);
        CHECK(*bits == (n >= 64 ? ~0ULL : (1ULL << n) - 1), "bits %llx", *bits);
    }
    shmem_barrier_all();
    REPORT_OK("amo_sync_cxx");
    shmem_finalize();
    return 0;
}
