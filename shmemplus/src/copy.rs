//! The data path's byte copy: for every transfer of 1 KiB or more, the copy method
//! that measured fastest on this machine for that size and placement.
//!
//! No single method wins everywhere. On AMD Zen, glibc's `memcpy` (`rep movsb` for
//! mid sizes) slows down when the destination sits a little *above* the source
//! modulo 4 KiB (4K aliasing: a load is falsely held behind a recent store with the
//! same low 12 address bits) - the placement of every get from the page-aligned
//! symmetric heap into a `malloc`'d buffer, which glibc puts 16 bytes past a page.
//! The old cure, copying backwards in blocks, is itself slower than a good forward
//! copy; and at 8 MiB and up, non-temporal stores can win. So the first copy of 1 KiB
//! or more in a process runs a calibration (its timing loops bounded by `BUDGET`;
//! 16-20 ms in all on the 2-core development VM, half of it faulting in its buffers)
//! that times each candidate method at a few size classes, in the aliasing placement
//! and in another, keeps the best time of several interleaved trials (noise only ever
//! adds time) and stores the winners in a table. A copy then costs one table lookup
//! more than a plain `memcpy`; copies under 1 KiB never look. Every method copies
//! exactly the same bytes; only their speed differs, so the choice cannot change a
//! result. Measured speeds and the table: `RUST_LOG=shmemplus::copy=debug`; the
//! before/after figures against Open MPI's OSHMEM are in `bench-oshmem/RESULTS.md`.
//!
//! This module owns that choice and the methods and nothing else; it must not know
//! about PEs or heaps.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Copies shorter than this go straight to `memcpy` (it loads them whole first, and
/// the 8-byte latency must not pay for a lookup).
const TABLE_MIN_BYTES: usize = 1024;
/// log2 of `TABLE_MIN_BYTES`: size class 0 is [1 KiB, 2 KiB).
const MIN_SHIFT: u32 = 10;
/// Size classes: powers of two from 1 KiB; the last one holds everything from 32 MiB.
const CLASSES: usize = 16;
/// The size classes the calibration measures: every one from 4 KiB to 1 MiB (the
/// mid sizes first, so they are the last to be cut by `BUDGET`), then 8 MiB, then 1
/// and 2 KiB. Every other class takes the choice of the measured class below it
/// (`fill_floor`). At 8 MiB the two buffers spill out of this core's caches, which is
/// what decides for or against non-temporal stores; 2 and 4 MiB still fit, and
/// measuring 32 MiB copies would cost tens of ms and 64 MiB of memory.
const MEASURED: [usize; 12] = [2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 0, 1];
/// From this class up (8 MiB) only the aliasing placement is measured, with three
/// trials and without the backward copy, and its choice serves both placements:
/// copies this large cost ~1 ms each, and what decides there is whether the data
/// stays in the caches, not the placement (the backward copy measured 14-20 GB/s
/// against 22-27 for the forward one there).
const ONE_PLACEMENT_CLASS: usize = 13;
/// Non-temporal stores are only tried from this class up (256 KiB): below it the
/// data is meant to stay in the caches, and they always lose there.
const STREAM_MIN_CLASS: usize = 8;
/// `(dst - src) mod 4096` in `1..ALIAS_WINDOW` counts as the aliasing placement.
const ALIAS_WINDOW: usize = 512;
/// Wall-clock bound of the calibration's timing loops; classes not reached by then
/// take the choice of the measured class below them.
const BUDGET: Duration = Duration::from_millis(20);
/// Interleaved timing trials per method and class (the best one counts).
const TRIALS: usize = 3;
/// Another method replaces `memcpy` only when it is at least this much faster
/// (in 1/100), so that a draw within the noise keeps the plain library call.
const MARGIN_PERCENT: u32 = 4;
/// Non-temporal stores must be at least this much faster than the best cached
/// method (see `choose`).
const STREAM_MARGIN_PERCENT: u32 = 10;

/// One way to copy. Every method copies exactly `len` bytes from `src` to `dst` and
/// writes nothing else; the methods differ only in speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    /// `ptr::copy_nonoverlapping`, i.e. the C library's `memcpy`.
    Memcpy,
    /// 256-byte blocks from the end to the start, each loaded whole before it is
    /// stored (so a store can only alias source bytes that were already loaded).
    Backward,
    /// The same, with the block held in eight AVX2 registers.
    #[cfg(target_arch = "x86_64")]
    Backward32,
    /// Forward, software pipelined, through AVX2 registers (see `x86::forward`).
    #[cfg(target_arch = "x86_64")]
    Forward32,
    /// Forward with non-temporal (cache-bypassing) AVX2 stores and an `sfence`.
    #[cfg(target_arch = "x86_64")]
    Stream32,
}

impl Method {
    fn is_stream(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self == Method::Stream32 {
            return true;
        }
        false
    }

    fn is_backward(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self == Method::Backward32 {
            return true;
        }
        self == Method::Backward
    }

    /// The methods this CPU can run, `memcpy` first.
    fn candidates() -> Vec<Method> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // `Backward32` does what `Backward` does, with fewer instructions.
            return vec![
                Method::Memcpy,
                Method::Backward32,
                Method::Forward32,
                Method::Stream32,
            ];
        }
        vec![Method::Memcpy, Method::Backward]
    }

    /// Runs this method.
    ///
    /// # Safety
    /// As `std::ptr::copy_nonoverlapping`, and the method is one of `candidates()`
    /// (the AVX2 methods need the CPU feature checked there).
    #[inline]
    unsafe fn run(self, src: *const u8, dst: *mut u8, len: usize) {
        // SAFETY: for every arm, the pointer contract is forwarded from the caller, and
        // each x86 method is only ever chosen from `candidates()`, which lists it
        // only when the CPU has the feature it needs.
        unsafe {
            match self {
                Method::Memcpy => std::ptr::copy_nonoverlapping(src, dst, len),
                Method::Backward => backward_blocks(src, dst, len),
                #[cfg(target_arch = "x86_64")]
                Method::Backward32 => x86::backward(src, dst, len),
                #[cfg(target_arch = "x86_64")]
                Method::Forward32 => x86::forward(src, dst, len),
                #[cfg(target_arch = "x86_64")]
                Method::Stream32 => x86::stream(src, dst, len),
            }
        }
    }
}

/// The calibrated choice: a method per (placement, size class).
#[derive(Debug)]
struct Plan {
    /// `[0]`: the aliasing placement, `[1]`: every other one.
    by_class: [[Method; CLASSES]; 2],
    /// How long the calibration took (for the log line).
    took: Duration,
}

impl Plan {
    #[inline]
    fn method(&self, src: *const u8, dst: *mut u8, len: usize) -> Method {
        self.by_class[placement(src, dst)][class(len)]
    }
}

/// 0 for the aliasing placement (`dst` a little above `src` modulo 4 KiB), else 1.
#[inline]
fn placement(src: *const u8, dst: *mut u8) -> usize {
    let distance = (dst as usize).wrapping_sub(src as usize) & 4095;
    usize::from(distance == 0 || distance >= ALIAS_WINDOW)
}

/// The size class of a copy of `len >= TABLE_MIN_BYTES` bytes.
#[inline]
fn class(len: usize) -> usize {
    let log = usize::BITS - 1 - len.max(1).leading_zeros();
    (log.saturating_sub(MIN_SHIFT) as usize).min(CLASSES - 1)
}

static PLAN: OnceLock<Plan> = OnceLock::new();

/// Copies `len` bytes from `src` to `dst`.
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`: `src` readable and `dst` writable for `len`
/// bytes, and the two ranges do not overlap.
#[inline]
pub unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    if len < TABLE_MIN_BYTES {
        // SAFETY: forwarded to the caller.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        return;
    }
    // SAFETY: forwarded to the caller.
    unsafe { copy_by_plan(src, dst, len) }
}

/// The table's side of `copy_bytes`, kept out of line so that the small-copy path
/// inlined into every put and get stays a length check and a `memcpy`.
///
/// # Safety
/// As `copy_bytes`.
#[inline(never)]
unsafe fn copy_by_plan(src: *const u8, dst: *mut u8, len: usize) {
    let method = PLAN.get_or_init(calibrate).method(src, dst, len);
    // SAFETY: forwarded to the caller; `method` came from `candidates()`.
    unsafe { method.run(src, dst, len) }
}

/// Times every candidate at every measured size class and placement and keeps the
/// fastest; stops measuring at `BUDGET`. Unmeasured classes take the choice of the
/// measured class below them.
fn calibrate() -> Plan {
    let start = Instant::now();
    let candidates = Method::candidates();
    let largest_class = MEASURED.iter().copied().max().unwrap_or(0);
    let largest = 1usize << (MIN_SHIFT as usize + largest_class);
    // One source and one destination region, a page more than the largest copy so
    // both placements fit. Both are written first, so that their pages are real and
    // present: a never-written page reads from the shared zero page (far faster than
    // memory) and a first store to one takes a page fault.
    let span = largest + 8192;
    let src = vec![0x5Au8; span];
    let mut dst = vec![0xA5u8; span];
    let src_page = src.as_ptr().wrapping_add(src.as_ptr().align_offset(4096));
    let dst_page = dst
        .as_mut_ptr()
        .wrapping_add(dst.as_ptr().align_offset(4096));
    let setup = start.elapsed();
    let mut measured: [[Option<Method>; CLASSES]; 2] = [[None; CLASSES]; 2];
    'classes: for &c in &MEASURED {
        let len = 1usize << (MIN_SHIFT as usize + c);
        // Copies per timing: enough for ~64 KiB of traffic, so the clock's resolution
        // does not matter at small sizes; small classes also get more trials.
        let reps = (65536 / len).max(1);
        let trials = match c {
            _ if len <= 65536 => 2 * TRIALS,
            ONE_PLACEMENT_CLASS.. => 3,
            _ => TRIALS,
        };
        let places: &[(usize, usize)] = if c >= ONE_PLACEMENT_CLASS {
            &[(0, 16)]
        } else {
            &[(0, 16), (16, 0)]
        };
        let tried: Vec<Method> = candidates
            .iter()
            .copied()
            .filter(|&m| c >= STREAM_MIN_CLASS || !m.is_stream())
            .filter(|&m| c < ONE_PLACEMENT_CLASS || !m.is_backward())
            .collect();
        // The get placement (dst 16 bytes above a page-aligned src), then the put one.
        for (p, &(src_off, dst_off)) in places.iter().enumerate() {
            // SAFETY: both offsets plus `len` are inside `span` bytes past a page
            // start that itself is within the first 4096 bytes of each vector.
            let (s, d) = unsafe { (src_page.add(src_off), dst_page.add(dst_off)) };
            let mut best = vec![Duration::MAX; tried.len()];
            let mut out_of_time = false;
            // Trials with the methods interleaved. Each timed run follows an untimed
            // one of the same method, so every method is timed in its own steady
            // state (non-temporal stores, for one, leave the destination uncached for
            // whatever runs next), as it would be when a program repeats a transfer.
            for _ in 0..trials {
                for (k, m) in tried.iter().enumerate() {
                    let run = || {
                        for _ in 0..reps {
                            // SAFETY: in bounds (above), distinct vectors, `m` a
                            // candidate.
                            unsafe { m.run(std::hint::black_box(s), d, len) };
                        }
                    };
                    run();
                    let t = Instant::now();
                    run();
                    best[k] = best[k].min(t.elapsed());
                }
                out_of_time = start.elapsed() > setup + BUDGET;
                if out_of_time {
                    break;
                }
            }
            let chosen = Some(choose(&tried, &best));
            tracing::debug!(
                bytes = len,
                aliasing = p == 0,
                "copy speeds (GB/s, best of {trials}): {:?}",
                tried
                    .iter()
                    .zip(&best)
                    .map(|(m, b)| (m, (len * reps) as f64 / b.as_nanos().max(1) as f64))
                    .collect::<Vec<_>>()
            );
            measured[p][c] = chosen;
            if places.len() == 1 {
                measured[1][c] = chosen;
            }
            if out_of_time {
                break 'classes;
            }
        }
    }
    // The destination is read once so the copies cannot be optimised away.
    std::hint::black_box(&dst);
    let plan = Plan {
        by_class: measured.map(|row| fill_floor(&row)),
        took: start.elapsed(),
    };
    tracing::debug!(took = ?plan.took, by_class = ?plan.by_class, "copy methods calibrated");
    plan
}

/// Every class's method: that of the largest measured class at or below it (a method
/// measured at one size serves up to the next measured size: non-temporal stores
/// chosen at 8 MiB must not reach 4 MiB copies, which still fit in the caches), else
/// that of the smallest measured class, else `memcpy`.
fn fill_floor(row: &[Option<Method>; CLASSES]) -> [Method; CLASSES] {
    std::array::from_fn(|c| {
        row[..=c]
            .iter()
            .rev()
            .chain(&row[c + 1..])
            .find_map(|m| *m)
            .unwrap_or(Method::Memcpy)
    })
}

/// The fastest candidate by best time, with two handicaps: `memcpy` (the first
/// candidate) stays unless another beats it by `MARGIN_PERCENT`, and non-temporal
/// stores must beat the best cached method by `STREAM_MARGIN_PERCENT`, because they
/// have a cost the timing cannot see: whoever reads the data next (the target PE)
/// finds it in memory, not in a cache.
fn choose(candidates: &[Method], best: &[Duration]) -> Method {
    let below = |t: Duration, percent: u32| t.as_nanos() * u128::from(100 - percent) / 100;
    let mut winner = 0;
    for k in 1..candidates.len() {
        if !candidates[k].is_stream() && best[k] < best[winner] {
            winner = k;
        }
    }
    if winner != 0 && best[winner].as_nanos() >= below(best[0], MARGIN_PERCENT) {
        winner = 0;
    }
    for k in 0..candidates.len() {
        if candidates[k].is_stream()
            && best[k].as_nanos() < below(best[winner], STREAM_MARGIN_PERCENT)
        {
            winner = k;
        }
    }
    candidates[winner]
}

/// Copies backwards in 256-byte blocks through a local buffer (the tail first).
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`.
unsafe fn backward_blocks(src: *const u8, dst: *mut u8, len: usize) {
    const BLOCK: usize = 256;
    let mut end = len;
    let tail = len % BLOCK;
    if tail != 0 {
        end -= tail;
        // SAFETY: [end, len) is inside both ranges (caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(src.add(end), dst.add(end), tail) };
    }
    while end > 0 {
        end -= BLOCK;
        let mut block = [0u8; BLOCK];
        // SAFETY: [end, end + BLOCK) is inside both ranges; `block` is a local buffer,
        // so the block is loaded whole before it is stored.
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(end), block.as_mut_ptr(), BLOCK);
            std::ptr::copy_nonoverlapping(block.as_ptr(), dst.add(end), BLOCK);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Runs `m` on a copy of `len` bytes from offset `src_off` of a patterned buffer
    /// to offset `dst_off` of a guarded one, and checks the copy and the guards.
    fn check(m: Method, len: usize, src_off: usize, dst_off: usize) -> Result<(), String> {
        let src: Vec<u8> = (0..len + src_off).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![0xAAu8; len + dst_off + 64];
        // SAFETY: both ranges are in bounds of distinct vectors; `m` is a candidate.
        unsafe {
            m.run(
                src.as_ptr().add(src_off),
                dst.as_mut_ptr().add(dst_off),
                len,
            )
        };
        if dst[dst_off..dst_off + len] != src[src_off..src_off + len] {
            return Err(format!(
                "{m:?} len {len} src+{src_off} dst+{dst_off}: wrong bytes"
            ));
        }
        if !dst[..dst_off]
            .iter()
            .chain(&dst[dst_off + len..])
            .all(|&b| b == 0xAA)
        {
            return Err(format!(
                "{m:?} len {len} src+{src_off} dst+{dst_off}: wrote outside"
            ));
        }
        Ok(())
    }

    #[test]
    fn every_method_copies_every_small_size_at_every_alignment() {
        for m in Method::candidates() {
            for len in 0..=1100 {
                for (s, d) in [(0, 0), (1, 0), (0, 31), (16, 0), (0, 16), (33, 7)] {
                    check(m, len, s, d).unwrap();
                }
            }
        }
    }

    #[test]
    fn candidates_include_memcpy_first_and_the_avx2_ones_when_the_cpu_has_it() {
        let c = Method::candidates();
        assert_eq!(c[0], Method::Memcpy);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            c.contains(&Method::Stream32),
            std::arch::is_x86_feature_detected!("avx2")
        );
    }

    #[test]
    fn size_classes_and_placements() {
        assert_eq!(class(1024), 0);
        assert_eq!(class(2047), 0);
        assert_eq!(class(2048), 1);
        assert_eq!(class(128 << 10), 7);
        assert_eq!(class(32 << 20), CLASSES - 1);
        assert_eq!(class(usize::MAX), CLASSES - 1);
        let src = 0x10000 as *const u8;
        for (dst, want, why) in [
            (0x20010, 0, "dst 16 above: aliasing"),
            (0x20000, 1, "same offset: not aliasing"),
            (0x1fff0, 1, "dst below: not aliasing"),
            (0x20200, 1, "512 above: outside the window"),
        ] {
            assert_eq!(placement(src, dst as *mut u8), want, "{why}");
        }
    }

    #[test]
    fn unmeasured_classes_take_the_choice_measured_below_them() {
        let mut row = [None; CLASSES];
        row[3] = Some(Method::Backward);
        row[6] = Some(Method::Memcpy);
        let full = fill_floor(&row);
        assert_eq!(
            full[0],
            Method::Backward,
            "nothing below: the smallest measured"
        );
        assert_eq!(full[3], Method::Backward);
        assert_eq!(full[5], Method::Backward);
        assert_eq!(full[6], Method::Memcpy);
        assert_eq!(full[CLASSES - 1], Method::Memcpy);
        assert_eq!(fill_floor(&[None; CLASSES]), [Method::Memcpy; CLASSES]);
    }

    #[test]
    fn choose_keeps_memcpy_within_the_margin_and_takes_a_clear_winner() {
        let c = [Method::Memcpy, Method::Backward];
        let ns = Duration::from_nanos;
        assert_eq!(choose(&c, &[ns(100), ns(97)]), Method::Memcpy);
        assert_eq!(choose(&c, &[ns(100), ns(90)]), Method::Backward);
        assert_eq!(choose(&c, &[ns(100), ns(150)]), Method::Memcpy);
        assert_eq!(choose(&c, &[Duration::MAX, ns(5)]), Method::Backward);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn non_temporal_stores_must_win_clearly() {
        let c = [Method::Memcpy, Method::Forward32, Method::Stream32];
        let ns = Duration::from_nanos;
        assert_eq!(choose(&c, &[ns(100), ns(80), ns(75)]), Method::Forward32);
        assert_eq!(choose(&c, &[ns(100), ns(80), ns(70)]), Method::Stream32);
        assert_eq!(choose(&c, &[ns(100), ns(98), ns(91)]), Method::Memcpy);
        assert_eq!(choose(&c, &[ns(100), ns(98), ns(89)]), Method::Stream32);
    }

    #[test]
    fn calibration_is_bounded_and_fills_every_class_with_a_candidate() {
        let plan = calibrate();
        // The budget, plus the set-up and one trial that may run past it (generous:
        // debug builds on a loaded machine).
        assert!(
            plan.took < BUDGET + Duration::from_millis(500),
            "{:?}",
            plan.took
        );
        let candidates = Method::candidates();
        for row in &plan.by_class {
            assert!(row.iter().all(|m| candidates.contains(m)), "{plan:?}");
            assert_eq!(row[CLASSES - 1], row[13], "above 8 MiB: the 8 MiB choice");
        }
    }

    #[test]
    fn aliasing_placement_copies_exactly() {
        let mut buf: Vec<u8> = (0..40_000).map(|i| (i % 251) as u8).collect();
        let (src, dst) = buf.split_at_mut(16_384);
        let want = src[..10_000].to_vec();
        // dst - src = 16_384 + 16 - 0: 16 mod 4096, inside the aliasing window.
        let dst = &mut dst[16..];
        // SAFETY: disjoint halves of one vector, both at least 10_000 bytes long.
        unsafe { copy_bytes(src.as_ptr(), dst.as_mut_ptr(), 10_000) };
        assert_eq!(&dst[..10_000], &want[..]);
    }

    proptest! {
        /// Every method, any length up to a few KiB, any start and end alignment.
        #[test]
        fn every_method_copies_exactly(len in 0usize..6000, src_off in 0usize..128, dst_off in 0usize..128) {
            for m in Method::candidates() {
                prop_assert_eq!(check(m, len, src_off, dst_off), Ok(()));
            }
        }

        /// Through the table: any length and any relative placement copies exactly the
        /// bytes asked for and touches nothing else.
        #[test]
        fn copies_exactly(len in 0usize..9000, src_off in 0usize..4096, dst_off in 0usize..4096) {
            let src: Vec<u8> = (0..len + src_off).map(|i| (i * 7 + 3) as u8).collect();
            let mut dst = vec![0xAAu8; len + dst_off + 64];
            // SAFETY: both ranges are in bounds of distinct vectors.
            unsafe { copy_bytes(src.as_ptr().add(src_off), dst.as_mut_ptr().add(dst_off), len) };
            prop_assert_eq!(&dst[dst_off..dst_off + len], &src[src_off..src_off + len]);
            prop_assert!(dst[..dst_off].iter().all(|&b| b == 0xAA));
            prop_assert!(dst[dst_off + len..].iter().all(|&b| b == 0xAA));
        }
    }
}
