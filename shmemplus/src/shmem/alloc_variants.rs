//! The OpenSHMEM allocation variants over `alloc`/`free`: `alloc_zeroed`
//! (`shmem_calloc`), `alloc_aligned` (`shmem_align`), `alloc_with_hints`
//! (`shmem_malloc_with_hints`, [`MallocHints`]) and `realloc` (`shmem_realloc`).
//!
//! This module owns those calls' argument rules (a power-of-two alignment, known hint
//! bits), which it hands to `alloc_as` so that a PE with bad arguments still takes
//! part in the symmetry check and every PE returns an error. It must not place blocks
//! or zero memory itself (`alloc` and `heap` do).

use super::{Place, Shmem, SymVec};
use crate::error::{Error, Result};
use bytemuck::Pod;

/// Hints for [`Shmem::alloc_with_hints`] (`SHMEM_MALLOC_*`), bit flags with the
/// values of the OpenSHMEM reference headers: `ATOMICS_REMOTE` 1, `SIGNAL_REMOTE` 2.
/// The library places hinted objects like any other (each is a valid hint to ignore);
/// unknown bits make the allocation fail with [`Error::InvalidArgument`] on every PE.
///
/// ```
/// use shmemplus::MallocHints;
/// assert_eq!((MallocHints::ATOMICS_REMOTE | MallocHints::SIGNAL_REMOTE).0, 3);
/// assert_eq!(MallocHints::default(), MallocHints::NONE);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MallocHints(pub u64);

impl MallocHints {
    /// No hint: the same as `alloc`.
    pub const NONE: MallocHints = MallocHints(0);
    /// The object is used mostly by remote atomics.
    pub const ATOMICS_REMOTE: MallocHints = MallocHints(1);
    /// The object is used mostly for signals (`put_signal`, `signal_wait_until`).
    pub const SIGNAL_REMOTE: MallocHints = MallocHints(2);
    const KNOWN: u64 = 1 | 2;
}

impl std::ops::BitOr for MallocHints {
    type Output = MallocHints;
    fn bitor(self, rhs: MallocHints) -> MallocHints {
        MallocHints(self.0 | rhs.0)
    }
}

impl Shmem {
    /// `alloc`, named for `shmem_calloc`: the object is zero on every PE when the call
    /// returns, also in heap space a freed object had written (`alloc` always clears
    /// reused space; this name states the guarantee).
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let dirty = shmem.alloc::<u8>(256, Place::Cpu)?;
    /// shmem.local_write(&dirty, 0, &[0xff; 256])?;
    /// shmem.free(dirty)?;
    /// let clean = shmem.alloc_zeroed::<u8>(256, Place::Cpu)?;
    /// assert!(shmem.local_to_vec(&clean)?.iter().all(|&b| b == 0));
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn alloc_zeroed<T: Pod>(&self, len: usize, place: Place) -> Result<SymVec<T>> {
        self.alloc(len, place)
    }

    /// `alloc` with the object's heap offset (and CPU address) a multiple of `align`
    /// bytes (`shmem_align`; collective like `alloc`). `align` must be a power of two,
    /// else every PE gets [`Error::InvalidArgument`]; alignments below 64 bytes give
    /// `alloc`'s 64.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc_aligned::<u8>(100, 8192, shmemplus::Place::Cpu)?;
    /// assert_eq!(v.heap_offset() % 8192, 0);
    /// assert!(shmem.alloc_aligned::<u8>(100, 48, shmemplus::Place::Cpu).is_err());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn alloc_aligned<T: Pod>(
        &self,
        len: usize,
        align: usize,
        place: Place,
    ) -> Result<SymVec<T>> {
        let refused = if align.is_power_of_two() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "alignment {align} is not a power of two"
            )))
        };
        self.alloc_as(len, align.max(align_of::<T>()), place, refused)
    }

    /// `alloc` with usage hints (`shmem_malloc_with_hints`; collective like `alloc`).
    /// Known hints are accepted and change nothing; unknown bits are
    /// [`Error::InvalidArgument`] on every PE.
    ///
    /// ```
    /// use shmemplus::{MallocHints, Place};
    /// let shmem = shmemplus::init()?;
    /// let counters = shmem.alloc_with_hints::<u64>(4, MallocHints::ATOMICS_REMOTE, Place::Cpu)?;
    /// shmem.atomic_add(&counters, 0, 5, shmem.my_pe())?;
    /// assert!(shmem.alloc_with_hints::<u64>(4, MallocHints(8), Place::Cpu).is_err());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn alloc_with_hints<T: Pod>(
        &self,
        len: usize,
        hints: MallocHints,
        place: Place,
    ) -> Result<SymVec<T>> {
        let refused = match hints.0 & !MallocHints::KNOWN {
            0 => Ok(()),
            unknown => Err(Error::InvalidArgument(format!(
                "allocation hints {:#x} have unknown bits {unknown:#x} (ATOMICS_REMOTE 1, SIGNAL_REMOTE 2)",
                hints.0
            ))),
        };
        self.alloc_as(len, align_of::<T>(), place, refused)
    }

    /// Resizes a symmetric object to `new_len` elements (`shmem_realloc`; collective
    /// like `alloc`, with the same `obj` and `new_len` on every PE). A new object is
    /// allocated, every PE copies the first `min(old, new)` elements of its own copy
    /// into it, and the old object is freed; `obj` then names the new one (elements
    /// past the old length are zero). On an error `obj` is unchanged and still valid.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let mut v = shmem.alloc::<u32>(3, shmemplus::Place::Cpu)?;
    /// shmem.local_write(&v, 0, &[1, 2, 3])?;
    /// shmem.realloc(&mut v, 5)?;
    /// assert_eq!(shmem.local_to_vec(&v)?, [1, 2, 3, 0, 0]);
    /// shmem.realloc(&mut v, 2)?;
    /// assert_eq!(shmem.local_to_vec(&v)?, [1, 2]);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn realloc<T: Pod>(&self, obj: &mut SymVec<T>, new_len: usize) -> Result<()> {
        let inner = self.live()?;
        // Every PE names its own object: a foreign one is refused on every PE alike.
        self.locate(obj, 0, 0)?;
        let new = self.alloc_as::<T>(new_len, align_of::<T>(), obj.place, Ok(()))?;
        let keep = obj.len.min(new_len);
        let me = self.my_pe();
        // Every PE is past the allocation's closing barrier and will free the old
        // object next: a copy that fails on this PE alone must end the job.
        let copied = self
            .put_from(&new, 0, obj, 0, keep, me)
            .and_then(|()| self.quiet());
        crate::fatal::committed(inner.me, "realloc", copied);
        // `free` synchronises before it returns, so no PE puts into the new object
        // before every PE has copied into its own copy.
        let old = std::mem::replace(obj, new);
        self.free(old)
    }
}
