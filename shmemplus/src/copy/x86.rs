//! The AVX2 copy methods of `copy`. Every function here needs AVX2, which
//! `Method::candidates` checks before any of them can be chosen; this module must
//! not choose between them (the calibration in `copy` does).

use std::arch::x86_64::*;

/// Bytes per step of the backward copy: two groups of four 32-byte registers, all
/// loaded before any is stored.
const STEP: usize = 256;

/// Forward in 128-byte steps to a 32-byte aligned destination, software
/// pipelined: step k+1 is loaded before step k is stored. A store then aliases
/// (modulo 4 KiB) at most source bytes that were already loaded whenever the
/// destination lies up to ~256 bytes above the source, so the aliasing placement
/// runs as fast as any other; aligned stores never split a cache line.
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`, and the CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn forward(src: *const u8, dst: *mut u8, len: usize) {
    if len < 256 {
        // SAFETY: caller's contract.
        return unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
    // SAFETY: len >= 256, so every range below is inside both buffers: the first
    // 32 bytes; then from `head` (< 32) on, 128-byte steps while a whole step
    // fits, each loaded before the previous one is stored; then the rest. The
    // first 32 bytes are stored twice, with the same values, which is harmless
    // because the ranges do not overlap.
    unsafe {
        _mm256_storeu_si256(
            dst as *mut __m256i,
            _mm256_loadu_si256(src as *const __m256i),
        );
        let head = (dst as usize).wrapping_neg() & 31;
        let mut held = load4(src.add(head));
        let mut next = head + 128;
        while len - next >= 128 {
            let loaded = load4(src.add(next));
            store4(dst.add(next - 128), held);
            held = loaded;
            next += 128;
        }
        store4(dst.add(next - 128), held);
        std::ptr::copy_nonoverlapping(src.add(next), dst.add(next), len - next);
    }
}

/// Backward in 256-byte steps (each loaded whole before it is stored), the head
/// of `len % 256` bytes last.
///
/// # Safety
/// As `forward`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn backward(src: *const u8, dst: *mut u8, len: usize) {
    let mut end = len;
    while end >= STEP {
        end -= STEP;
        // SAFETY: [end, end + STEP) is inside both ranges.
        unsafe {
            let low = load4(src.add(end));
            let high = load4(src.add(end + 128));
            store4(dst.add(end), low);
            store4(dst.add(end + 128), high);
        }
    }
    // SAFETY: the head, [0, end), is inside both ranges.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, end) };
}

/// Forward with non-temporal stores to a 32-byte aligned destination, then an
/// `sfence`, so the stores are ordered before any later store (a flag or a
/// counter that tells another PE the data is there) like ordinary ones.
///
/// # Safety
/// As `forward`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn stream(src: *const u8, dst: *mut u8, len: usize) {
    let head = (dst as usize).wrapping_neg() & 31;
    let head = head.min(len);
    // SAFETY: [0, head) is inside both ranges.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
    let mut i = head;
    while len - i >= 128 {
        // SAFETY: [i, i + 128) is inside both ranges; `dst + i` is 32-byte
        // aligned (head aligned it, steps are multiples of 32), as the
        // non-temporal store requires; loads are unaligned.
        unsafe {
            let s = src.add(i) as *const __m256i;
            let d = dst.add(i) as *mut __m256i;
            let (a, b) = (_mm256_loadu_si256(s), _mm256_loadu_si256(s.add(1)));
            let (c, e) = (_mm256_loadu_si256(s.add(2)), _mm256_loadu_si256(s.add(3)));
            _mm256_stream_si256(d, a);
            _mm256_stream_si256(d.add(1), b);
            _mm256_stream_si256(d.add(2), c);
            _mm256_stream_si256(d.add(3), e);
        }
        i += 128;
    }
    _mm_sfence();
    // SAFETY: the rest, [i, len), is inside both ranges.
    unsafe { std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i) };
}

/// Four unaligned 32-byte loads from `s`.
///
/// # Safety
/// 128 bytes readable at `s`; AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn load4(s: *const u8) -> [__m256i; 4] {
    let s = s as *const __m256i;
    // SAFETY: caller's contract.
    unsafe {
        [
            _mm256_loadu_si256(s),
            _mm256_loadu_si256(s.add(1)),
            _mm256_loadu_si256(s.add(2)),
            _mm256_loadu_si256(s.add(3)),
        ]
    }
}

/// Four unaligned 32-byte stores to `d`.
///
/// # Safety
/// 128 bytes writable at `d`; AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn store4(d: *mut u8, r: [__m256i; 4]) {
    let d = d as *mut __m256i;
    for (k, v) in r.into_iter().enumerate() {
        // SAFETY: caller's contract.
        unsafe { _mm256_storeu_si256(d.add(k), v) };
    }
}
