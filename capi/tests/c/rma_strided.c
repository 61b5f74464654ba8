/* Strided put and get (iput/iget) with strides 1, 2 and 3 on both sides, typed,
 * sized and on the default context: elements between the strided ones must keep
 * their sentinel, the strided ones must hold the values the other PE made from its
 * number. */
#define N 5
#include "rma_common.h"

#define LEN (3 * N) /* room for N elements at stride 3 */
#define SENTINEL 99
static long global[LEN];
static long priv_long[LEN];

/* Checks buf[0..LEN): element i * stride holds VAL(pe, i * other) for i < N, the
 * rest holds the sentinel. */
#define EXPECT_STRIDED(T, buf, stride, other, pe, what)                                 \
    for (int k = 0; k < LEN; k++) {                                                     \
        T want = (k % (stride) == 0 && k / (stride) < N) ? VAL(T, pe, 0, (k / (stride)) * (other)) \
                                                       : (T)SENTINEL;                   \
        CHECK((buf)[k] == want, "%s dst %d sst %d: %s[%d] = %ld, want %ld", what, dst,  \
              sst, #buf, k, (long)(buf)[k], (long)want);                                \
    }

/* One put/get pair per (dst, sst), through IPUT/IGET (extra leading arguments in
 * __VA_ARGS__, e.g. the context). */
#define STRIDED(T, what, IPUT, IGET, ...)                                               \
    do {                                                                                \
        T *sym = (T *)shmem_malloc(LEN * sizeof(T));                                    \
        CHECK(sym != NULL, "shmem_malloc");                                             \
        T priv[LEN];                                                                    \
        for (int dst = 1; dst <= 3; dst++)                                              \
            for (int sst = 1; sst <= 3; sst++) {                                        \
                /* iput: my values at stride sst into right's sym at stride dst. */     \
                for (int k = 0; k < LEN; k++) {                                         \
                    sym[k] = (T)SENTINEL;                                               \
                    priv[k] = VAL(T, me, 0, k);                                         \
                }                                                                       \
                shmem_barrier_all();                                                    \
                IPUT(__VA_ARGS__ sym, priv, dst, sst, N, right);                        \
                shmem_barrier_all();                                                    \
                EXPECT_STRIDED(T, sym, dst, sst, left, what " iput");                   \
                /* iget: right's values at stride sst into my priv at stride dst. */    \
                for (int k = 0; k < LEN; k++) {                                         \
                    sym[k] = VAL(T, me, 0, k);                                          \
                    priv[k] = (T)SENTINEL;                                              \
                }                                                                       \
                shmem_barrier_all();                                                    \
                IGET(__VA_ARGS__ priv, sym, dst, sst, N, right);                        \
                EXPECT_STRIDED(T, priv, dst, sst, right, what " iget");                 \
                shmem_barrier_all();                                                    \
            }                                                                           \
        shmem_free(sym);                                                                \
    } while (0)

#define TYPED(T, NAME)                                                                  \
    STRIDED(T, #NAME, shmem_##NAME##_iput, shmem_##NAME##_iget, );                      \
    STRIDED(T, "ctx " #NAME, shmem_ctx_##NAME##_iput, shmem_ctx_##NAME##_iget, SHMEM_CTX_DEFAULT,)
#define SIZED(T, B)                                                                     \
    STRIDED(T, #B, shmem_iput##B, shmem_iget##B, );                                     \
    STRIDED(T, "ctx " #B, shmem_ctx_iput##B, shmem_ctx_iget##B, SHMEM_CTX_DEFAULT,)

int main(void) {
    rma_start();

    TYPED(char, char);
    TYPED(short, short);
    TYPED(int, int);
    TYPED(long, long);
    TYPED(float, float);
    TYPED(double, double);
    TYPED(long double, longdouble);
    TYPED(uint64_t, uint64);
    TYPED(size_t, size);
    TYPED(unsigned char, uchar);
    SIZED(uint8_t, 8);
    SIZED(uint16_t, 16);
    SIZED(uint32_t, 32);
    SIZED(uint64_t, 64);
    SIZED(unsigned __int128, 128);

    /* A symmetric address that is not a multiple of the element size from the
     * start of its place: 16-bit elements from an odd byte. */
    unsigned char *bytes = (unsigned char *)shmem_malloc(4 * LEN + 1);
    CHECK(bytes != NULL, "shmem_malloc");
    void *odd = bytes + 1;
    uint16_t words[LEN], got[LEN];
    for (int k = 0; k < LEN; k++) words[k] = (uint16_t)(me * 1000 + k);
    shmem_barrier_all();
    shmem_iput16(odd, words, 2, 3, N, right);
    shmem_barrier_all();
    shmem_iget16(got, odd, 1, 2, N, me);
    for (int i = 0; i < N; i++)
        CHECK(got[i] == left * 1000 + 3 * i, "odd iput16/iget16 [%d] = %d", i, got[i]);
    shmem_ctx_iget16(SHMEM_CTX_DEFAULT, got, odd, 1, 2, N, right);
    for (int i = 0; i < N; i++)
        CHECK(got[i] == me * 1000 + 3 * i, "odd ctx_iget16 [%d] = %d", i, got[i]);
    shmem_barrier_all();
    shmem_free(bytes);

    /* A global array as the symmetric side. */
    for (int k = 0; k < LEN; k++) global[k] = -1;
    shmem_barrier_all();
    for (int k = 0; k < LEN; k++) priv_long[k] = me * 100 + k;
    shmem_long_iput(global, priv_long, 3, 2, N, right);
    shmem_barrier_all();
    for (int k = 0; k < LEN; k++) {
        long want = (k % 3 == 0 && k / 3 < N) ? left * 100 + (k / 3) * 2 : -1;
        CHECK(global[k] == want, "global[%d] = %ld, want %ld", k, global[k], want);
    }
    shmem_long_iget(priv_long, global, 1, 3, N, right);
    for (int i = 0; i < N; i++)
        CHECK(priv_long[i] == me * 100 + 2 * i, "iget from a global [%d] = %ld", i, priv_long[i]);
    shmem_barrier_all();

    REPORT_OK("rma_strided");
    shmem_finalize();
    return 0;
}
