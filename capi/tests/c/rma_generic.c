/* The C11 type-generic names of the RMA family, each called without and with a
 * context as the first argument, on several types: the macro must pick the routine
 * of the element type (a wrong pick moves the wrong number of bytes, which the
 * checks see). */
#define N 6
#include "rma_common.h"

/* Round r: the generic call (CTX is empty or "SHMEM_CTX_DEFAULT,"). */
#define GENERIC(T, CTX, r0)                                                             \
    do {                                                                                \
        T *dst = (T *)shmem_malloc(3 * N * sizeof(T));                                  \
        CHECK(dst != NULL, "shmem_malloc");                                             \
        T src[3 * N], back[3 * N];                                                      \
        FILL(T, src, r0);                                                               \
        shmem_put(CTX dst, src, N, right);                                              \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, r0, "put");                                                \
        shmem_get(CTX back, dst, N, right);                                             \
        EXPECT(T, back, me, r0, "get");                                                 \
        shmem_barrier_all();                                                            \
        FILL(T, src, r0 + 1);                                                           \
        shmem_put_nbi(CTX dst, src, N, right);                                          \
        shmem_quiet();                                                                  \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, r0 + 1, "put_nbi");                                        \
        shmem_get_nbi(CTX back, dst, N, right);                                         \
        shmem_quiet();                                                                  \
        EXPECT(T, back, me, r0 + 1, "get_nbi");                                         \
        shmem_barrier_all();                                                            \
        shmem_p(CTX &dst[2], VAL(T, me, 9, 2), right);                                  \
        shmem_barrier_all();                                                            \
        CHECK(dst[2] == VAL(T, left, 9, 2), "%s p", #T);                                \
        CHECK(shmem_g(CTX &dst[2], right) == VAL(T, me, 9, 2), "%s g", #T);             \
        shmem_barrier_all();                                                            \
        /* iput at stride 2 from stride 1; iget back at stride 1 from stride 2. */      \
        for (int i = 0; i < 2 * N; i++) src[i] = VAL(T, me, r0 + 2, i);                 \
        shmem_iput(CTX dst, src, 2, 1, N, right);                                       \
        shmem_barrier_all();                                                            \
        for (int i = 0; i < N; i++)                                                     \
            CHECK(dst[2 * i] == VAL(T, left, r0 + 2, i), "%s iput[%d]", #T, i);          \
        shmem_iget(CTX back, dst, 1, 2, N, right);                                      \
        EXPECT(T, back, me, r0 + 2, "iget");                                            \
        shmem_barrier_all();                                                            \
        sig[0] = 0;                                                                     \
        shmem_barrier_all();                                                            \
        FILL(T, src, r0 + 3);                                                           \
        shmem_put_signal(CTX dst, src, N, sig, 1, SHMEM_SIGNAL_ADD, right);             \
        shmem_put_signal_nbi(CTX dst + N, src, N, sig, 2, SHMEM_SIGNAL_ADD, right);     \
        shmem_quiet();                                                                  \
        shmem_barrier_all();                                                            \
        CHECK(shmem_signal_fetch(sig) == 3, "%s put_signal: signal %lu", #T,           \
              (unsigned long)shmem_signal_fetch(sig));                                  \
        EXPECT(T, dst, left, r0 + 3, "put_signal");                                     \
        EXPECT(T, (dst + N), left, r0 + 3, "put_signal_nbi");                           \
        shmem_barrier_all();                                                            \
        shmem_free(dst);                                                                \
    } while (0)

#define COMMA ,
#define BOTH(T)                                                                         \
    GENERIC(T, , 0);                                                                    \
    GENERIC(T, SHMEM_CTX_DEFAULT COMMA, 4)

int main(void) {
    rma_start();
    uint64_t *sig = (uint64_t *)shmem_malloc(sizeof(uint64_t));
    CHECK(sig != NULL, "shmem_malloc");

    BOTH(char);
    BOTH(unsigned char);
    BOTH(short);
    BOTH(int);
    BOTH(long);
    BOTH(unsigned long long);
    BOTH(float);
    BOTH(double);
    BOTH(long double);
    BOTH(int16_t);
    BOTH(uint64_t);
    BOTH(size_t);
    BOTH(ptrdiff_t);

    shmem_free(sig);
    REPORT_OK("rma_generic");
    shmem_finalize();
    return 0;
}
