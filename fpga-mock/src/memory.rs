//! Board memory: one anonymous, private, zero-filled mapping with `MAP_NORESERVE`, so
//! that a board of gigabytes costs only the pages actually touched.
//!
//! This module owns the mapping's lifetime (mapped on creation, unmapped when the last
//! owner drops it), the only raw copies into and out of it (bounds-checked), and the
//! residency query (`mincore(2)`). It must not hand out Rust references to the mapped
//! bytes: the progress thread's DMA, user threads and kernel workers copy in and out
//! concurrently, and overlapping concurrent accesses are the user's race, as on real
//! hardware. It knows nothing of DMA alignment, timing or kernels.

use crate::error::BoardError;
use rustix::mm::{mmap_anonymous, munmap, MapFlags, ProtFlags};
use std::ffi::c_void;
use std::ptr::NonNull;

/// Pages asked about per `mincore(2)` call: bounds the status vector (16 KiB).
const MINCORE_CHUNK_PAGES: usize = 1 << 14;

/// The board's memory mapping. Shared (in an `Arc`) by the board and its running kernel
/// workers, so the mapping outlives every copy in progress.
pub(crate) struct Mapping {
    /// Start of the mapping (page-aligned, as returned by `mmap`).
    base: NonNull<u8>,
    /// Length in bytes; fits in `usize` (checked in [`Mapping::new`]).
    len: u64,
}

// SAFETY: `Mapping` only holds the address of memory it owns exclusively (no other
// handle to the mapping exists). Every access goes through `copy_in` / `copy_out` /
// `resident_bytes`, which copy with raw pointers and never create Rust references to the
// mapped bytes, so moving the owner to another thread cannot invalidate anything.
unsafe impl Send for Mapping {}
// SAFETY: `&Mapping` only allows raw, bounds-checked copies. Copies from several threads
// to disjoint bytes are independent; overlapping concurrent copies are a documented data
// race on plain bytes that the user must avoid (as with DMA on real hardware): any bit
// pattern is a valid `u8`, and no Rust reference to the bytes exists whose guarantees
// could be broken.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of zero-filled, lazily backed memory.
    pub(crate) fn new(len: u64) -> Result<Mapping, BoardError> {
        if len == 0 {
            return Err(BoardError::BadConfig(
                "memory_bytes is 0: give the board some memory".into(),
            ));
        }
        let size = usize::try_from(len).map_err(|_| {
            BoardError::BadConfig(format!(
                "memory_bytes {len} does not fit this machine's address space"
            ))
        })?;
        // SAFETY: a null address hint lets the kernel pick a fresh range, so no existing
        // memory is replaced or aliased. The result is owned by the returned `Mapping`.
        let ptr = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                size,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .map_err(|e| {
            BoardError::Memory(format!(
                "cannot map {len} bytes of board memory: {e} (lower \
                 BoardConfig::memory_bytes or raise the address-space limit, ulimit -v)"
            ))
        })?;
        let base = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| BoardError::Memory("mmap returned a null mapping".into()))?;
        Ok(Mapping { base, len })
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The index of `offset` if `[offset, offset + len)` lies inside the mapping.
    fn check(&self, offset: u64, len: usize) -> Result<usize, BoardError> {
        let out_of_range = || BoardError::OutOfRange {
            offset,
            len: u64::try_from(len).unwrap_or(u64::MAX),
            memory: self.len,
        };
        let len64 = u64::try_from(len).map_err(|_| out_of_range())?;
        match offset.checked_add(len64) {
            // offset <= end <= self.len, which fits in usize (checked in `new`).
            Some(end) if end <= self.len => usize::try_from(offset).map_err(|_| out_of_range()),
            _ => Err(out_of_range()),
        }
    }

    /// Copies `data` to `[offset, offset + data.len())`; nothing is written unless the
    /// whole range is inside the mapping.
    pub(crate) fn copy_in(&self, offset: u64, data: &[u8]) -> Result<(), BoardError> {
        let start = self.check(offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: `check` proved `start + data.len() <= self.len`, so the destination is
        // inside the live mapping (it is unmapped only when the last `Arc<Mapping>` is
        // dropped, and we hold `&self`). `data` is a Rust slice the caller owns, which
        // cannot point into the mapping (no reference to mapped bytes is ever created),
        // so the ranges do not overlap. Concurrent copies to the same bytes are the
        // user's race (see `impl Sync`).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.as_ptr().add(start), data.len());
        }
        Ok(())
    }

    /// Copies `[offset, offset + out.len())` to `out`; `out` is untouched unless the
    /// whole range is inside the mapping.
    pub(crate) fn copy_out(&self, offset: u64, out: &mut [u8]) -> Result<(), BoardError> {
        let start = self.check(offset, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `copy_in`: the source is inside the live mapping, `out` is an
        // exclusive slice outside it, so the ranges do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(start),
                out.as_mut_ptr(),
                out.len(),
            );
        }
        Ok(())
    }

    /// Bytes of the mapping backed by RAM now, by `mincore(2)` (pages counted whole, the
    /// total capped at the mapping length). Pages only ever read map the shared zero
    /// page and count as resident too.
    pub(crate) fn resident_bytes(&self) -> Result<u64, BoardError> {
        let page = rustix::param::page_size();
        let total = usize::try_from(self.len)
            .map_err(|_| BoardError::Memory("mapping larger than the address space".into()))?;
        let mut status = vec![0u8; MINCORE_CHUNK_PAGES];
        let chunk_bytes = MINCORE_CHUNK_PAGES.saturating_mul(page);
        let mut resident_pages: u64 = 0;
        let mut at = 0usize;
        while at < total {
            let bytes = chunk_bytes.min(total - at);
            let pages = bytes.div_ceil(page);
            // SAFETY: `base` is page-aligned (from mmap) and `at` is a multiple of the
            // page size, so the address is page-aligned; `[at, at + bytes)` lies inside
            // the live mapping; `status` holds `MINCORE_CHUNK_PAGES >= pages` bytes, one
            // per page of the range, as mincore writes.
            let rc = unsafe {
                libc::mincore(
                    self.base.as_ptr().add(at).cast::<c_void>(),
                    bytes,
                    status.as_mut_ptr(),
                )
            };
            if rc != 0 {
                return Err(BoardError::Memory(format!(
                    "mincore on board memory failed: {}",
                    std::io::Error::last_os_error()
                )));
            }
            resident_pages += status[..pages].iter().filter(|s| **s & 1 != 0).count() as u64;
            at += bytes;
        }
        Ok(resident_pages.saturating_mul(page as u64).min(self.len))
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // `len` fits in usize (checked in `new`).
        let size = usize::try_from(self.len).unwrap_or(usize::MAX);
        // SAFETY: `base` and `size` are exactly what `mmap_anonymous` returned and was
        // given; this `Mapping` is its only owner and is being dropped, so no copy is in
        // progress (copies borrow `&Mapping`) and no Rust reference into it exists.
        // Failure (impossible for a mapping we created) would only leak address space.
        let _ = unsafe { munmap(self.base.as_ptr().cast::<c_void>(), size) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_filled_and_exact() {
        let m = Mapping::new(10_000).expect("map");
        let mut out = [0xAAu8; 16];
        m.copy_out(9_984, &mut out).expect("read");
        assert_eq!(out, [0u8; 16]);
        m.copy_in(9_990, &[1, 2, 3]).expect("write");
        m.copy_out(9_984, &mut out).expect("read");
        assert_eq!(out[5..10], [0, 1, 2, 3, 0]);
    }

    #[test]
    fn bounds() {
        let m = Mapping::new(100).expect("map");
        assert!(m.copy_in(100, &[]).is_ok());
        assert!(m.copy_in(100, &[1]).is_err());
        assert!(m.copy_in(u64::MAX, &[1]).is_err());
        let mut out = [7u8; 2];
        assert!(m.copy_out(99, &mut out).is_err());
        assert_eq!(out, [7, 7], "a refused read leaves the buffer untouched");
    }

    #[test]
    fn zero_and_huge_sizes_refused() {
        assert!(matches!(Mapping::new(0), Err(BoardError::BadConfig(_))));
        // 2^62 bytes: NORESERVE cannot help, the address space is too small.
        assert!(matches!(Mapping::new(1 << 62), Err(BoardError::Memory(_))));
    }

    #[test]
    fn resident_counts_touched_pages() {
        let page = rustix::param::page_size() as u64;
        // More than one mincore chunk, to exercise the chunking.
        let len = page * (MINCORE_CHUNK_PAGES as u64 * 2 + 3);
        let m = Mapping::new(len).expect("map");
        assert_eq!(m.resident_bytes().expect("mincore"), 0);
        m.copy_in(0, &[1]).expect("write");
        m.copy_in(len - 1, &[1]).expect("write");
        m.copy_in(page * MINCORE_CHUNK_PAGES as u64, &[1])
            .expect("write");
        let resident = m.resident_bytes().expect("mincore");
        // Three pages, or up to three huge pages where transparent huge pages are "always".
        assert!(
            resident >= 3 * page && resident <= 3 * (2 << 20),
            "{resident}"
        );
    }
}
