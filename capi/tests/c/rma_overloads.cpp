// The C++ overloads of the RMA family (shmem_put, shmem_get, ..., each also with a
// context first), on several types: an overload of the wrong type would not compile
// or would move the wrong number of bytes, which the checks see.
#include <shmem.h>
#include "check.h"

static const int N = 6;
static int me, n, left, right;
static uint64_t *sig;

template <typename T> static T val(int pe, int r, int i) { return (T)(pe * 20 + r * 7 + i + 1); }

template <typename T> static void expect(const T *buf, int pe, int r, const char *what) {
    for (int i = 0; i < N; i++)
        CHECK(buf[i] == val<T>(pe, r, i), "%s[%d] = %ld, want %ld", what, i, (long)buf[i],
              (long)val<T>(pe, r, i));
}

// The non-context overloads when ctx is null, else the context ones.
template <typename T> static void round_trip(shmem_ctx_t ctx, int r) {
    T *dst = (T *)shmem_malloc(3 * N * sizeof(T));
    CHECK(dst != NULL, "shmem_malloc");
    T src[3 * N], back[3 * N];
    for (int i = 0; i < 2 * N; i++) src[i] = val<T>(me, r, i);
    if (ctx) shmem_put(ctx, dst, src, N, right); else shmem_put(dst, src, N, right);
    shmem_barrier_all();
    expect(dst, left, r, "put");
    if (ctx) shmem_get(ctx, back, dst, N, right); else shmem_get(back, dst, N, right);
    expect(back, me, r, "get");
    shmem_barrier_all();
    for (int i = 0; i < N; i++) src[i] = val<T>(me, r + 1, i);
    if (ctx) shmem_put_nbi(ctx, dst, src, N, right); else shmem_put_nbi(dst, src, N, right);
    shmem_quiet();
    shmem_barrier_all();
    expect(dst, left, r + 1, "put_nbi");
    if (ctx) shmem_get_nbi(ctx, back, dst, N, right); else shmem_get_nbi(back, dst, N, right);
    shmem_quiet();
    expect(back, me, r + 1, "get_nbi");
    shmem_barrier_all();
    T v = val<T>(me, 9, 2);
    if (ctx) shmem_p(ctx, &dst[2], v, right); else shmem_p(&dst[2], v, right);
    shmem_barrier_all();
    CHECK(dst[2] == val<T>(left, 9, 2), "p");
    T g = ctx ? shmem_g(ctx, &dst[2], right) : shmem_g(&dst[2], right);
    CHECK(g == val<T>(me, 9, 2), "g");
    shmem_barrier_all();
    for (int i = 0; i < 3 * N; i++) src[i] = val<T>(me, r + 2, i);
    // Stride 2 from stride 3; back at stride 1 from stride 2.
    if (ctx) shmem_iput(ctx, dst, src, 2, 3, N, right); else shmem_iput(dst, src, 2, 3, N, right);
    shmem_barrier_all();
    for (int i = 0; i < N; i++) CHECK(dst[2 * i] == val<T>(left, r + 2, 3 * i), "iput[%d]", i);
    if (ctx) shmem_iget(ctx, back, dst, 1, 2, N, right); else shmem_iget(back, dst, 1, 2, N, right);
    for (int i = 0; i < N; i++) CHECK(back[i] == val<T>(me, r + 2, 3 * i), "iget[%d]", i);
    shmem_barrier_all();
    *sig = 0;
    shmem_barrier_all();
    for (int i = 0; i < N; i++) src[i] = val<T>(me, r + 3, i);
    if (ctx) {
        shmem_put_signal(ctx, dst, src, N, sig, 1, SHMEM_SIGNAL_ADD, right);
        shmem_put_signal_nbi(ctx, dst + N, src, N, sig, 2, SHMEM_SIGNAL_ADD, right);
    } else {
        shmem_put_signal(dst, src, N, sig, 1, SHMEM_SIGNAL_ADD, right);
        shmem_put_signal_nbi(dst + N, src, N, sig, 2, SHMEM_SIGNAL_ADD, right);
    }
    shmem_quiet();
    shmem_barrier_all();
    CHECK(shmem_signal_fetch(sig) == 3, "signal %lu", (unsigned long)shmem_signal_fetch(sig));
    expect(dst, left, r + 3, "put_signal");
    expect(dst + N, left, r + 3, "put_signal_nbi");
    shmem_barrier_all();
    shmem_free(dst);
}

template <typename T> static void both() {
    round_trip<T>(SHMEM_CTX_INVALID, 0);
    round_trip<T>(SHMEM_CTX_DEFAULT, 4);
}

int main() {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    left = (me + n - 1) % n;
    right = (me + 1) % n;
    sig = (uint64_t *)shmem_malloc(sizeof(uint64_t));
    CHECK(sig != NULL, "shmem_malloc");
    both<char>();
    both<signed char>();
    both<short>();
    both<int>();
    both<long>();
    both<long long>();
    both<unsigned int>();
    both<unsigned long>();
    both<float>();
    both<double>();
    both<long double>();
    both<uint64_t>();
    both<size_t>();
    shmem_free(sig);
    REPORT_OK("rma_overloads");
    shmem_finalize();
    return 0;
}
