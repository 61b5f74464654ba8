/* Bitwise AMOs build a mask from every PE's bit; float and double set, fetch and swap
 * carry exact values; nbi fetches are read after quiet; the deprecated names work. */
#include <shmem.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    uint64_t *mask = shmem_malloc(sizeof(uint64_t));
    unsigned int *umask = shmem_malloc(sizeof(unsigned int));
    int32_t *x32 = shmem_malloc(sizeof(int32_t));
    float *f = shmem_malloc(sizeof(float));
    double *d = shmem_malloc(sizeof(double));
    long *lcount = shmem_malloc(sizeof(long));
    int *icount = shmem_malloc(sizeof(int));
    long long *ll = shmem_malloc(sizeof(long long));
    long *legacy = shmem_malloc(sizeof(long));
    *mask = 0; *umask = ~0u; *x32 = 0; *f = 0; *d = 0; *lcount = 0; *icount = 0; *ll = 0; *legacy = 0;
    shmem_barrier_all();

    /* Bitwise: OR in my bit, AND out my bit of an all-ones word, XOR a pattern. */
    uint64_t before = shmem_atomic_fetch_or(mask, (uint64_t)1 << (8 * me), 0);
    CHECK((before & ((uint64_t)1 << (8 * me))) == 0, "my bit was already set: %llx", (unsigned long long)before);
    shmem_uint_atomic_and(umask, ~(1u << me), 0);
    shmem_ctx_int32_atomic_xor(SHMEM_CTX_DEFAULT, x32, (int32_t)(0x11 << me), 0);
    /* Float and double: set on the right neighbour, values derived from my number. */
    shmem_atomic_set(f, (float)me + 0.25f, right);
    shmem_double_atomic_set(d, -1.5 * (double)me, right);
    shmem_barrier_all();

    uint64_t want = 0;
    unsigned int uwant = ~0u;
    int32_t xwant = 0;
    for (int p = 0; p < n; p++) {
        want |= (uint64_t)1 << (8 * p);
        uwant &= ~(1u << p);
        xwant ^= 0x11 << p;
    }
    CHECK(shmem_uint64_atomic_fetch(mask, 0) == want, "mask %llx, want %llx",
          (unsigned long long)shmem_uint64_atomic_fetch(mask, 0), (unsigned long long)want);
    CHECK(shmem_atomic_fetch(umask, 0) == uwant, "umask %x, want %x", shmem_atomic_fetch(umask, 0), uwant);
    CHECK(shmem_atomic_fetch(x32, 0) == xwant, "xor %x, want %x", (unsigned)shmem_atomic_fetch(x32, 0), (unsigned)xwant);
    CHECK(*f == (float)left + 0.25f, "float %f from PE %d", (double)*f, left);
    CHECK(shmem_atomic_fetch(SHMEM_CTX_DEFAULT, d, me) == -1.5 * (double)left, "double %f", *d);
    /* swap returns the value the left neighbour set, then holds mine. */
    shmem_barrier_all();
    float got = shmem_atomic_swap(f, 100.0f + (float)me, right);
    CHECK(got == (float)me + 0.25f, "float swap returned %f", (double)got);
    double dgot = shmem_ctx_double_atomic_swap(SHMEM_CTX_DEFAULT, d, 0.125 * me, right);
    CHECK(dgot == -1.5 * (double)me, "double swap returned %f", dgot);
    shmem_barrier_all();
    CHECK(*f == 100.0f + (float)left && *d == 0.125 * left, "after swap: %f %f", (double)*f, *d);

    /* Non-blocking fetches: read after quiet. */
    long t1 = -1, t2 = -1;
    float fnbi = -1;
    uint64_t mnbi = 0;
    shmem_atomic_fetch_inc_nbi(&t1, lcount, 0);
    shmem_long_atomic_fetch_add_nbi(&t2, lcount, 10, 0);
    shmem_atomic_fetch_nbi(&fnbi, f, me);
    shmem_ctx_uint64_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &mnbi, mask, 0, 0);
    int cs = -1;
    shmem_atomic_compare_swap_nbi(&cs, icount, -1, 7, 0); /* never -1: no change */
    shmem_quiet();
    CHECK(t1 >= 0 && t1 < 11 * n && t2 >= 1, "nbi tickets %ld %ld", t1, t2);
    CHECK(fnbi == 100.0f + (float)left, "nbi float fetch %f", (double)fnbi);
    CHECK(mnbi == want, "nbi fetch_xor of 0 saw %llx", (unsigned long long)mnbi);
    CHECK(cs == 0, "nbi compare_swap fetched %d", cs);
    shmem_barrier_all();
    if (me == 0) CHECK(*lcount == 11L * n, "lcount %ld", *lcount);

    /* Deprecated names (OpenSHMEM 1.3), typed and generic, and the untyped long swap. */
    shmem_barrier_all();
    int oldi = shmem_int_finc(icount, 0);
    CHECK(oldi >= 0 && oldi < 3 * n, "finc gave %d", oldi); /* others may have added 3 */
    shmem_int_add(icount, 2, 0);
    shmem_long_inc(lcount, 0);
    long fadd = shmem_fadd(lcount, 5L, 0);
    CHECK(fadd >= 11L * n, "fadd gave %ld", fadd);
    shmem_longlong_cswap(ll, (long long)me, (long long)me + 1, 0); /* a relay: 0->1->...->n */
    long long relay = shmem_longlong_fetch(ll, 0);
    CHECK(relay >= 0 && relay <= n, "relay %lld", relay);
    long prev = (shmem_swap)(legacy, (long)me + 1, 0); /* the untyped routine itself */
    CHECK(prev >= 0 && prev <= n, "untyped swap gave %ld", prev);
    shmem_float_set(f, 2.5f, me);
    CHECK(shmem_float_fetch(f, me) == 2.5f && shmem_double_swap(d, 4.0, me) == 0.125 * left,
          "deprecated float/double");
    shmem_barrier_all();
    if (me == 0) {
        CHECK(*icount == 3 * n, "icount %d", *icount);
        CHECK(*lcount == 11L * n + n + 5L * n, "lcount %ld", *lcount);
        CHECK(*legacy >= 1 && *legacy <= n, "legacy %ld", *legacy);
    }
    shmem_barrier_all();
    REPORT_OK("amo_misc");
    shmem_finalize();
    return 0;
}
