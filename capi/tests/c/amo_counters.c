/* Every PE hammers counters on PE 0 with each arithmetic AMO over several types: the
 * totals must be exact, fetch_inc tickets distinct, and one compare_swap must win. */
#include <shmem.h>
#include "check.h"

#define K 40

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    long *ticket = shmem_malloc(sizeof(long));
    int *sum = shmem_malloc(sizeof(int));
    unsigned int *usum = shmem_malloc(sizeof(unsigned int));
    uint64_t *incs = shmem_malloc(sizeof(uint64_t));
    size_t *ssum = shmem_malloc(sizeof(size_t));
    ptrdiff_t *down = shmem_malloc(sizeof(ptrdiff_t));
    int32_t *cas = shmem_malloc(sizeof(int32_t));
    long long *winner = shmem_malloc(sizeof(long long));
    int *hits = shmem_malloc((size_t)n * K * sizeof(int));
    *ticket = 0; *sum = 0; *usum = 0; *incs = 0; *ssum = 0; *down = 0; *cas = 0; *winner = 0;
    for (int i = 0; i < n * K; i++) hits[i] = 0;
    shmem_barrier_all();

    for (int k = 0; k < K; k++) {
        long t = shmem_atomic_fetch_inc(ticket, 0);
        CHECK(t >= 0 && t < n * K, "ticket %ld out of range", t);
        shmem_int_atomic_inc(&hits[t], 0); /* each ticket must be handed out once */
        shmem_atomic_add(sum, me + 1, 0);
        unsigned int before = shmem_atomic_fetch_add(SHMEM_CTX_DEFAULT, usum, 2u, 0);
        CHECK(before % 2 == 0 && before < 2u * n * K, "fetch_add saw %u", before);
        shmem_uint64_atomic_inc(incs, 0);
        shmem_ctx_size_atomic_add(SHMEM_CTX_DEFAULT, ssum, (size_t)k, 0);
        shmem_atomic_add(down, (ptrdiff_t)-3, 0);
        /* An increment built from compare_swap: retry until no other PE got between. */
        int32_t seen = shmem_atomic_fetch(cas, 0);
        for (;;) {
            int32_t old = shmem_atomic_compare_swap(cas, seen, seen + 1, 0);
            if (old == seen) break;
            seen = old;
        }
    }
    long long mine = shmem_atomic_compare_swap(winner, 0LL, (long long)(me + 1), 0);
    shmem_barrier_all();

    if (me == 0) {
        CHECK(*ticket == (long)n * K, "ticket %ld, want %d", *ticket, n * K);
        for (int i = 0; i < n * K; i++) CHECK(hits[i] == 1, "ticket %d handed out %d times", i, hits[i]);
        CHECK(*sum == K * n * (n + 1) / 2, "sum %d, want %d", *sum, K * n * (n + 1) / 2);
        CHECK(*usum == 2u * n * K, "usum %u", *usum);
        CHECK(*incs == (uint64_t)n * K, "incs %llu", (unsigned long long)*incs);
        CHECK(*ssum == (size_t)n * K * (K - 1) / 2, "ssum %zu", *ssum);
        CHECK(*down == (ptrdiff_t)-3 * n * K, "down %td", *down);
        CHECK(*cas == n * K, "compare_swap increments gave %d, want %d", (int)*cas, n * K);
    }
    /* Exactly one PE found 0 and installed its number; everyone agrees on it. */
    long long w = shmem_longlong_atomic_fetch(winner, 0);
    CHECK(w >= 1 && w <= n, "winner %lld", w);
    CHECK((mine == 0) == (w == me + 1), "PE %d saw %lld, winner is %lld", me, mine, w);
    shmem_barrier_all();
    REPORT_OK("amo_counters");
    shmem_finalize();
    return 0;
}
