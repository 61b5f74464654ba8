/* Point-to-point synchronization: PEs set flags on each other with p and atomics,
 * and the owners wait for them with every form (single, all/any/some, vector, test
 * loops, signal_wait_until, deprecated names). Every value checked comes from the
 * sender's PE number. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <shmem.h>
#include <time.h>
#include "check.h"

/* Seconds since an arbitrary start, to bound the test loops. */
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *flags = shmem_malloc((size_t)n * sizeof(long));
    int *go = shmem_malloc(sizeof(int));
    short *s = shmem_malloc((size_t)n * sizeof(short));
    uint64_t *slots = shmem_malloc((size_t)n * sizeof(uint64_t));
    unsigned int *polled = shmem_malloc((size_t)n * sizeof(unsigned int));
    uint64_t *sig = shmem_malloc(sizeof(uint64_t));
    long *data = shmem_malloc(4 * sizeof(long));
    int *old_style = shmem_malloc(sizeof(int));
    long *untyped = shmem_malloc(sizeof(long));
    for (int i = 0; i < n; i++) { flags[i] = 0; s[i] = 0; slots[i] = 0; polled[i] = 0; }
    *go = 0; *sig = 0; *old_style = 0; *untyped = 0;
    int *status = malloc((size_t)n * sizeof(int));
    long *want = malloc((size_t)n * sizeof(long));
    size_t *idx = malloc((size_t)n * sizeof(size_t));
    CHECK(status && want && idx, "malloc");
    shmem_barrier_all();

    /* 1. All-to-all flags, waited for with the vector form; my own slot excluded. */
    for (int p = 0; p < n; p++)
        if (p != me) shmem_long_atomic_set(&flags[me], 10L + me, p);
    for (int i = 0; i < n; i++) { status[i] = i == me; want[i] = 10L + i; }
    shmem_wait_until_all_vector(flags, (size_t)n, status, SHMEM_CMP_EQ, want);
    for (int i = 0; i < n; i++)
        CHECK(i == me || flags[i] == 10L + i, "flags[%d] = %ld", i, flags[i]);
    CHECK(flags[me] == 0, "my own flag changed: %ld", flags[me]);
    CHECK(shmem_test_all_vector(flags, (size_t)n, status, SHMEM_CMP_EQ, want) == 1, "test_all_vector");
    CHECK(shmem_long_test_any_vector(flags, (size_t)n, status, SHMEM_CMP_NE, want) == SIZE_MAX,
          "test_any_vector found a mismatch");

    /* 2. One producer (PE 0) releases everyone with p. */
    if (me == 0)
        for (int p = 1; p < n; p++) shmem_int_p(go, 42, p);
    else
        shmem_wait_until(go, SHMEM_CMP_EQ, 42);
    CHECK(me == 0 || *go == 42, "go = %d", *go);

    /* 3. wait_until_any on 16-bit words: only my left neighbour writes, its number + 1. */
    shmem_short_p(&s[me], (short)(me + 1), right);
    size_t any = shmem_wait_until_any(s, (size_t)n, NULL, SHMEM_CMP_NE, (short)0);
    CHECK(any == (size_t)left && s[left] == left + 1, "any = %zu, s[left] = %d", any, s[left]);
    for (int i = 0; i < n; i++) status[i] = 1;
    CHECK(shmem_short_wait_until_any(s, (size_t)n, status, SHMEM_CMP_NE, 0) == SIZE_MAX,
          "all excluded must give SIZE_MAX");
    CHECK(shmem_ushort_test_any((unsigned short *)s, 0, NULL, SHMEM_CMP_EQ, 0) == SIZE_MAX, "nelems 0");

    /* 4. wait_until_some: every other PE increments its slot on me; gather them all,
     *    excluding the ones already seen. */
    shmem_barrier_all();
    for (int p = 0; p < n; p++)
        if (p != me) shmem_uint64_atomic_add(&slots[me], (uint64_t)me + 1, p);
    for (int i = 0; i < n; i++) status[i] = i == me;
    int seen = 0;
    while (seen < n - 1) {
        size_t got = shmem_wait_until_some(slots, (size_t)n, idx, status, SHMEM_CMP_GT, (uint64_t)0);
        CHECK(got >= 1 && got <= (size_t)(n - 1 - seen), "some gave %zu", got);
        for (size_t k = 0; k < got; k++) {
            size_t i = idx[k];
            CHECK(i < (size_t)n && !status[i] && slots[i] == i + 1, "index %zu, slot %llu", i,
                  (unsigned long long)slots[i]);
            status[i] = 1;
            seen++;
        }
    }
    for (int i = 0; i < n; i++) status[i] = i == me;
    uint64_t vals[64];
    CHECK(n <= 64, "too many PEs");
    for (int i = 0; i < n; i++) vals[i] = (uint64_t)i + 1;
    CHECK(shmem_uint64_wait_until_some_vector(slots, (size_t)n, idx, status, SHMEM_CMP_EQ, vals)
              == (size_t)(n - 1), "some_vector");

    /* 5. Test loops (bounded): each PE sets its slot on its right neighbour, which
     *    polls for its left's value. */
    shmem_barrier_all();
    shmem_uint_atomic_set(&polled[me], (unsigned)(me * 3 + 1), right);
    double start = now();
    while (!shmem_test(&polled[left], SHMEM_CMP_EQ, (unsigned)(left * 3 + 1)))
        CHECK(now() - start < 20.0, "test never saw PE %d's value", left);
    CHECK(shmem_test_all(polled, (size_t)n, NULL, SHMEM_CMP_GE, 0u) == 1, "test_all GE 0");
    CHECK(shmem_test_any(polled, (size_t)n, NULL, SHMEM_CMP_GT, 0u) == (size_t)left, "test_any");
    CHECK(shmem_test_some(polled, (size_t)n, idx, NULL, SHMEM_CMP_GT, 0u) == 1 && idx[0] == (size_t)left,
          "test_some");
    CHECK(shmem_uint_test_all(polled, (size_t)n, NULL, SHMEM_CMP_GT, 0u) == (n == 1), "test_all GT 0");

    /* 6. A signal after the data: put, fence, atomic add on the signal word. */
    shmem_barrier_all();
    long payload[4] = {me, me * 2L, me * 3L, -me};
    shmem_long_put(data, payload, 4, right);
    shmem_fence();
    shmem_uint64_atomic_add(sig, 1, right);
    uint64_t sv = shmem_signal_wait_until(sig, SHMEM_CMP_GE, 1);
    CHECK(sv == 1, "signal %llu", (unsigned long long)sv);
    CHECK(data[0] == left && data[1] == 2L * left && data[2] == 3L * left && data[3] == -left,
          "data from PE %d: %ld %ld %ld %ld", left, data[0], data[1], data[2], data[3]);

    /* 7. Deprecated: shmem_int_wait (while equal) and the untyped long forms. */
    shmem_barrier_all();
    shmem_int_atomic_set(old_style, right + 100, right);
    shmem_int_wait(old_style, 0);
    CHECK(*old_style == me + 100, "old_style %d", *old_style);
    shmem_long_atomic_add(untyped, (long)me + 1, right);
    (shmem_wait_until)(untyped, SHMEM_CMP_EQ, (long)left + 1);
    (shmem_wait)(untyped, 0L);
    shmem_barrier_all();

    free(status); free(want); free(idx);
    REPORT_OK("sync_waits");
    shmem_finalize();
    return 0;
}
