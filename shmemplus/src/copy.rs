//! The data path's byte copy: `memcpy`, except where `memcpy` is known to collapse.
//!
//! On AMD Zen, glibc's `memcpy` (which uses `rep movsb` for mid-sized copies) runs up
//! to 20x slower when the destination sits a little *above* the source modulo 4 KiB
//! (4K aliasing: each load is falsely held behind a recent store with the same low 12
//! address bits). Measured here: a 64 KiB get into a buffer 16 bytes past a page
//! boundary ran at 2.9 GB/s against 46 GB/s. In that case we copy in blocks from the
//! end to the start; every block is loaded whole before it is stored, and a store can
//! then only alias source bytes that were already loaded.
//!
//! This module owns that choice and nothing else; it must not know about PEs or heaps.

/// Copies shorter than this go straight to `memcpy` (it loads them whole first).
const ALIAS_MIN_BYTES: usize = 1024;
/// `(dst - src) mod 4096` below this counts as aliasing.
const ALIAS_WINDOW: usize = 512;
/// Block size of the backward copy: small enough to be copied as loads-then-stores.
const BLOCK: usize = 256;

/// Copies `len` bytes from `src` to `dst`.
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`: `src` readable and `dst` writable for `len`
/// bytes, and the two ranges do not overlap.
#[inline]
pub unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    let distance = (dst as usize).wrapping_sub(src as usize) & 4095;
    if len < ALIAS_MIN_BYTES || distance == 0 || distance >= ALIAS_WINDOW {
        // SAFETY: forwarded to the caller.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        return;
    }
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
        // SAFETY: [end, end + BLOCK) is inside both ranges; `block` is a local buffer
        // the compiler keeps in registers, so the block is loaded before it is stored.
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(end), block.as_mut_ptr(), BLOCK);
            std::ptr::copy_nonoverlapping(block.as_ptr(), dst.add(end), BLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn aliasing_placement_takes_the_backward_path_and_copies_exactly() {
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
        /// Any length and any relative placement copies exactly the bytes asked for
        /// and touches nothing else.
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
