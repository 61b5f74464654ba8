/* Put with signal: SET and ADD, blocking and nbi, typed, sized, memory and context
 * forms. The receiver watches the signal with shmem_signal_fetch and, once it has
 * the expected value, checks the data, which must have arrived before the signal. */
#include <time.h>

#define N 16
#define WORDS 8
#include "rma_common.h"
/* Globals are symmetric too: a signal word and data outside the heap. */
static uint64_t global_sig;
static short global_data[N];

/* Polls this PE's signal word until it equals want (at most 30 s). */
static void await(const uint64_t *sig, uint64_t want, const char *what) {
    time_t start = time(NULL);
    uint64_t got;
    while ((got = shmem_signal_fetch(sig)) != want)
        CHECK(time(NULL) - start < 30, "%s: signal is %lu after 30 s, want %lu", what,
              (unsigned long)got, (unsigned long)want);
}

int main(void) {
    rma_start();
    uint64_t *sig = (uint64_t *)shmem_malloc(WORDS * sizeof(uint64_t));
    long *data = (long *)shmem_malloc(N * sizeof(long));
    long *all = (long *)shmem_malloc((size_t)n * sizeof(long));
    CHECK(sig && data && all, "shmem_malloc");
    for (int w = 0; w < WORDS; w++) sig[w] = 0;
    shmem_barrier_all();

    /* SET, blocking, typed: the data and then the signal left + 100. */
    long src[N];
    for (int i = 0; i < N; i++) src[i] = me * 1000 + i;
    shmem_long_put_signal(data, src, N, &sig[0], (uint64_t)me + 100, SHMEM_SIGNAL_SET, right);
    await(&sig[0], (uint64_t)left + 100, "long_put_signal SET");
    for (int i = 0; i < N; i++)
        CHECK(data[i] == left * 1000 + i, "put_signal data[%d] = %ld", i, data[i]);

    /* ADD from every PE into every PE: the signal sums 1 + ... + n, and each PE's
     * slot holds its value once the sum is complete. */
    for (int p = 0; p < n; p++) {
        long v = 7 * me + p;
        shmem_long_put_signal_nbi(&all[me], &v, 1, &sig[1], (uint64_t)me + 1, SHMEM_SIGNAL_ADD, p);
    }
    shmem_quiet();
    await(&sig[1], (uint64_t)n * (n + 1) / 2, "long_put_signal_nbi ADD");
    for (int q = 0; q < n; q++)
        CHECK(all[q] == 7 * q + me, "slot %d holds %ld", q, all[q]);
    shmem_barrier_all();

    /* Sized and memory forms, blocking and nbi, and their context forms. */
    uint64_t w64[N];
    for (int i = 0; i < N; i++) w64[i] = ((uint64_t)me << 32) + (uint64_t)i;
    shmem_put64_signal(data, w64, N, &sig[2], 1, SHMEM_SIGNAL_ADD, right);
    await(&sig[2], 1, "put64_signal");
    for (int i = 0; i < N; i++)
        CHECK((uint64_t)data[i] == ((uint64_t)left << 32) + (uint64_t)i, "put64_signal data[%d]", i);
    shmem_barrier_all();

    char bytes[N];
    for (int i = 0; i < N; i++) bytes[i] = (char)(me * 10 + i);
    shmem_putmem_signal_nbi(data, bytes, N, &sig[3], (uint64_t)me + 5, SHMEM_SIGNAL_SET, right);
    shmem_quiet();
    await(&sig[3], (uint64_t)left + 5, "putmem_signal_nbi");
    for (int i = 0; i < N; i++)
        CHECK(((char *)data)[i] == (char)(left * 10 + i), "putmem_signal byte %d", i);
    shmem_barrier_all();

    int32_t w32[N];
    for (int i = 0; i < N; i++) w32[i] = -(me * 100 + i);
    shmem_ctx_put32_signal(SHMEM_CTX_DEFAULT, data, w32, N, &sig[4], 3, SHMEM_SIGNAL_SET, right);
    await(&sig[4], 3, "ctx_put32_signal");
    for (int i = 0; i < N; i++)
        CHECK(((int32_t *)data)[i] == -(left * 100 + i), "ctx_put32_signal data[%d]", i);
    shmem_barrier_all();

    double d[N];
    for (int i = 0; i < N; i++) d[i] = me + i / 4.0;
    shmem_ctx_double_put_signal_nbi(SHMEM_CTX_DEFAULT, (double *)data, d, N, &sig[5],
                                    (uint64_t)me + 1, SHMEM_SIGNAL_ADD, right);
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
    await(&sig[5], (uint64_t)left + 1, "ctx_double_put_signal_nbi");
    for (int i = 0; i < N; i++)
        CHECK(((double *)data)[i] == left + i / 4.0, "ctx_double data[%d]", i);
    shmem_barrier_all();

    /* No data, only the signal; and a second SET replaces the first. */
    shmem_ctx_putmem_signal(SHMEM_CTX_DEFAULT, data, bytes, 0, &sig[6], 41, SHMEM_SIGNAL_SET, right);
    await(&sig[6], 41, "putmem_signal of 0 bytes");
    shmem_barrier_all();
    shmem_putmem_signal(data, bytes, 0, &sig[6], (uint64_t)me, SHMEM_SIGNAL_SET, right);
    await(&sig[6], (uint64_t)left, "second SET");
    CHECK(sig[7] == 0, "an untouched signal word changed to %lu", (unsigned long)sig[7]);

    shmem_barrier_all();

    short shorts[N];
    for (int i = 0; i < N; i++) shorts[i] = (short)(me * 100 - i);
    shmem_short_put_signal(global_data, shorts, N, &global_sig, (uint64_t)me + 9,
                           SHMEM_SIGNAL_SET, right);
    await(&global_sig, (uint64_t)left + 9, "short_put_signal into globals");
    for (int i = 0; i < N; i++)
        CHECK(global_data[i] == (short)(left * 100 - i), "global_data[%d] = %d", i, global_data[i]);

    shmem_barrier_all();
    shmem_free(all);
    shmem_free(data);
    shmem_free(sig);
    REPORT_OK("rma_signal");
    shmem_finalize();
    return 0;
}
