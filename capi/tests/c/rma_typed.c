/* Typed, sized and memory put/get, their nbi forms, p/g, and the context form of
 * each on SHMEM_CTX_DEFAULT: every PE writes values made from its own number into
 * its right neighbour and checks what its left neighbour wrote; gets read back from
 * the right neighbour what this PE wrote there. */
#include <string.h>

#define N 8
#include "rma_common.h"

/* put, get, put_nbi, get_nbi, p, g, and the same on the default context. */
#define TYPED(T, NAME)                                                                  \
    do {                                                                                \
        T *dst = (T *)shmem_malloc(N * sizeof(T));                                      \
        CHECK(dst != NULL, "shmem_malloc");                                             \
        T src[N], back[N];                                                              \
        FILL(T, src, 0);                                                                \
        shmem_##NAME##_put(dst, src, N, right);                                         \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, 0, "put");                                                 \
        shmem_##NAME##_get(back, dst, N, right);                                        \
        EXPECT(T, back, me, 0, "get");                                                  \
        shmem_barrier_all();                                                            \
        FILL(T, src, 1);                                                                \
        shmem_##NAME##_put_nbi(dst, src, N, right);                                     \
        shmem_quiet();                                                                  \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, 1, "put_nbi");                                             \
        memset(back, 0, sizeof back);                                                   \
        shmem_##NAME##_get_nbi(back, dst, N, right);                                    \
        shmem_quiet();                                                                  \
        EXPECT(T, back, me, 1, "get_nbi");                                              \
        shmem_barrier_all();                                                            \
        FILL(T, src, 2);                                                                \
        shmem_ctx_##NAME##_put(SHMEM_CTX_DEFAULT, dst, src, N, right);                  \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, 2, "ctx_put");                                             \
        shmem_ctx_##NAME##_get(SHMEM_CTX_DEFAULT, back, dst, N, right);                 \
        EXPECT(T, back, me, 2, "ctx_get");                                              \
        shmem_barrier_all();                                                            \
        FILL(T, src, 3);                                                                \
        shmem_ctx_##NAME##_put_nbi(SHMEM_CTX_DEFAULT, dst, src, N, right);              \
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                             \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, 3, "ctx_put_nbi");                                         \
        memset(back, 0, sizeof back);                                                   \
        shmem_ctx_##NAME##_get_nbi(SHMEM_CTX_DEFAULT, back, dst, N, right);             \
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                             \
        EXPECT(T, back, me, 3, "ctx_get_nbi");                                          \
        shmem_barrier_all();                                                            \
        shmem_##NAME##_p(&dst[1], VAL(T, me, 4, 1), right);                             \
        shmem_ctx_##NAME##_p(SHMEM_CTX_DEFAULT, &dst[2], VAL(T, me, 4, 2), right);      \
        shmem_barrier_all();                                                            \
        CHECK(dst[1] == VAL(T, left, 4, 1) && dst[2] == VAL(T, left, 4, 2),             \
              "%s p: %ld %ld", #T, (long)dst[1], (long)dst[2]);                         \
        CHECK(shmem_##NAME##_g(&dst[1], right) == VAL(T, me, 4, 1), "%s g", #T);        \
        CHECK(shmem_ctx_##NAME##_g(SHMEM_CTX_DEFAULT, &dst[2], right) == VAL(T, me, 4, 2), \
              "%s ctx_g", #T);                                                          \
        CHECK(shmem_##NAME##_g(&dst[0], right) == VAL(T, me, 3, 0), "%s g untouched", #T); \
        shmem_barrier_all();                                                            \
        shmem_free(dst);                                                                \
    } while (0)

/* shmem_putB/getB and their nbi and context forms, on elements of type T. */
#define SIZED(T, B)                                                                     \
    do {                                                                                \
        T *dst = (T *)shmem_malloc(N * sizeof(T));                                      \
        CHECK(dst != NULL, "shmem_malloc");                                             \
        T src[N], back[N];                                                              \
        FILL(T, src, 0);                                                                \
        shmem_put##B(dst, src, N, right);                                               \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, 0, "put" #B);                                              \
        shmem_get##B(back, dst, N, right);                                              \
        EXPECT(T, back, me, 0, "get" #B);                                               \
        shmem_barrier_all();                                                            \
        FILL(T, src, 1);                                                                \
        shmem_put##B##_nbi(dst, src, N, right);                                         \
        shmem_quiet();                                                                  \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, 1, "put" #B "_nbi");                                       \
        memset(back, 0, sizeof back);                                                   \
        shmem_get##B##_nbi(back, dst, N, right);                                        \
        shmem_quiet();                                                                  \
        EXPECT(T, back, me, 1, "get" #B "_nbi");                                        \
        shmem_barrier_all();                                                            \
        FILL(T, src, 2);                                                                \
        shmem_ctx_put##B(SHMEM_CTX_DEFAULT, dst, src, N, right);                        \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, 2, "ctx_put" #B);                                          \
        shmem_ctx_get##B(SHMEM_CTX_DEFAULT, back, dst, N, right);                       \
        EXPECT(T, back, me, 2, "ctx_get" #B);                                           \
        shmem_barrier_all();                                                            \
        FILL(T, src, 3);                                                                \
        shmem_ctx_put##B##_nbi(SHMEM_CTX_DEFAULT, dst, src, N, right);                  \
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                             \
        shmem_barrier_all();                                                            \
        EXPECT(T, dst, left, 3, "ctx_put" #B "_nbi");                                   \
        memset(back, 0, sizeof back);                                                   \
        shmem_ctx_get##B##_nbi(SHMEM_CTX_DEFAULT, back, dst, N, right);                 \
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                             \
        EXPECT(T, back, me, 3, "ctx_get" #B "_nbi");                                    \
        shmem_barrier_all();                                                            \
        shmem_free(dst);                                                                \
    } while (0)

int main(void) {
    rma_start();

    TYPED(float, float);
    TYPED(double, double);
    TYPED(long double, longdouble);
    TYPED(char, char);
    TYPED(signed char, schar);
    TYPED(short, short);
    TYPED(int, int);
    TYPED(long, long);
    TYPED(long long, longlong);
    TYPED(unsigned char, uchar);
    TYPED(unsigned short, ushort);
    TYPED(unsigned int, uint);
    TYPED(unsigned long, ulong);
    TYPED(unsigned long long, ulonglong);
    TYPED(int8_t, int8);
    TYPED(int16_t, int16);
    TYPED(int32_t, int32);
    TYPED(int64_t, int64);
    TYPED(uint8_t, uint8);
    TYPED(uint16_t, uint16);
    TYPED(uint32_t, uint32);
    TYPED(uint64_t, uint64);
    TYPED(size_t, size);
    TYPED(ptrdiff_t, ptrdiff);

    SIZED(uint8_t, 8);
    SIZED(uint16_t, 16);
    SIZED(uint32_t, 32);
    SIZED(uint64_t, 64);
    SIZED(unsigned __int128, 128);
    SIZED(unsigned char, mem);

    REPORT_OK("rma_typed");
    shmem_finalize();
    return 0;
}
