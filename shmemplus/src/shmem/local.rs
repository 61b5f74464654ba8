//! Access to this PE's own copy of a symmetric object: `local_read`/`local_write`
//! (a DMA for board memory), the unsafe borrowing `local_slice`/`local_slice_mut`,
//! raw addresses (`local_addr`, `locate_addr`, `static_region`) and the object that
//! names all CPU memory (`place_space`), by which an interface that deals in addresses
//! reaches heap and symmetric globals alike.
//!
//! This module owns the safety contract of those borrows. It must not reach another
//! PE's memory (`rma` and `route` do) or map the program's data (`statics` does).

use super::{Place, Shmem, SymVec};
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::marker::PhantomData;

/// A whole place of every PE as one object of `T`s (from [`Shmem::place_space`]):
/// element `i` is the bytes at offset `i * size_of::<T>()` of the place (for the CPU,
/// on the heap or in the static area). It dereferences to a [`SymVec`] for the RMA, atomic and wait calls; it
/// is not one that `free` takes, since it names memory no `alloc` made.
pub struct PlaceSpace<T: Pod>(SymVec<T>);

impl<T: Pod> std::ops::Deref for PlaceSpace<T> {
    type Target = SymVec<T>;
    fn deref(&self) -> &SymVec<T> {
        &self.0
    }
}

impl<T: Pod> std::fmt::Debug for PlaceSpace<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PlaceSpace").field(&self.0).finish()
    }
}

impl Shmem {
    pub(super) fn local_ptr<T: Pod>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        count: usize,
    ) -> Result<*mut u8> {
        let inner = self.live()?;
        if let Place::Fpga(b) = obj.place {
            return Err(Error::PlaceUnavailable(format!(
                "board {b} memory has no CPU address: copy it with local_read/local_write or get/put"
            )));
        }
        let (offset, _) = self.locate(obj, index, count)?;
        // SAFETY: `locate` checked the range against the object, which lies inside this
        // PE's CPU memory (the heap, or for `place_space` up to `cpu_bytes`), all mapped.
        Ok(unsafe { inner.segs.mine().heap_base().add(offset) })
    }

    /// Copies `obj[index..index + dst.len()]` of this PE's own copy into `dst` (a local
    /// load, no conduit involved; for an object on a board, a DMA read).
    pub fn local_read<T: Pod>(&self, obj: &SymVec<T>, index: usize, dst: &mut [T]) -> Result<()> {
        if obj.place != Place::Cpu {
            return self.get(obj, index, dst, self.my_pe());
        }
        let p = self.local_ptr(obj, index, dst.len())?;
        let dst: &mut [u8] = bytemuck::cast_slice_mut(dst);
        // SAFETY: `p` points at dst.len() in-bounds bytes of our own heap; `dst` is a
        // private exclusive buffer. No reference to the shared bytes is created.
        unsafe { crate::copy::copy_bytes(p, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Reads one element of this PE's own copy.
    pub fn local_read_one<T: Pod>(&self, obj: &SymVec<T>, index: usize) -> Result<T> {
        let mut v = T::zeroed();
        self.local_read(obj, index, std::slice::from_mut(&mut v))?;
        Ok(v)
    }

    /// Copies this PE's whole copy of `obj` into a new vector.
    pub fn local_to_vec<T: Pod>(&self, obj: &SymVec<T>) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); obj.len()];
        self.local_read(obj, 0, &mut v)?;
        Ok(v)
    }

    /// Copies `src` into this PE's own copy at `index` (a local store).
    pub fn local_write<T: Pod>(&self, obj: &SymVec<T>, index: usize, src: &[T]) -> Result<()> {
        if obj.place != Place::Cpu {
            // A DMA write into this PE's board, complete on return.
            self.put(obj, index, src, self.my_pe())?;
            return self.quiet();
        }
        let p = self.local_ptr(obj, index, src.len())?;
        let src: &[u8] = bytemuck::cast_slice(src);
        // SAFETY: as in `local_read`, in the other direction.
        unsafe { crate::copy::copy_bytes(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    /// Borrows this PE's own copy of `obj` as a slice, without copying.
    ///
    /// # Safety
    /// Other PEs can write this memory at any time with `put`. The caller must make sure
    /// none does while the slice lives (for example: between two `barrier_all` calls
    /// in a phase where no PE puts into `obj`), this PE included: no put, atomic or
    /// `local_write` into `obj` on this PE while the slice lives. Prefer
    /// [`Shmem::local_read`].
    pub unsafe fn local_slice<T: Pod>(&self, obj: &SymVec<T>) -> Result<&[T]> {
        let p = self.local_ptr(obj, 0, obj.len())?;
        // SAFETY: in bounds and aligned (heap blocks are 64-byte aligned, T: Pod); the
        // absence of concurrent writers is the caller's obligation (see above).
        Ok(unsafe { std::slice::from_raw_parts(p as *const T, obj.len()) })
    }

    /// Borrows this PE's own copy of `obj` mutably, without copying.
    ///
    /// # Safety
    /// As [`Shmem::local_slice`], and no other PE may read the memory either while the
    /// slice lives, nor this PE other than through the slice (no `get`, `put_from` or
    /// `local_read` of `obj` on this PE); and the caller must not hold two slices of
    /// one object at once.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn local_slice_mut<T: Pod>(&self, obj: &SymVec<T>) -> Result<&mut [T]> {
        let p = self.local_ptr(obj, 0, obj.len())?;
        // SAFETY: as in `local_slice`; exclusivity is the caller's obligation.
        Ok(unsafe { std::slice::from_raw_parts_mut(p as *mut T, obj.len()) })
    }

    /// The address of this PE's own copy of `obj` in this process (for interfaces
    /// that deal in raw addresses, such as a C ABI). Valid while the handle lives.
    pub fn local_addr<T: Pod>(&self, obj: &SymVec<T>) -> Result<*mut T> {
        Ok(self.local_ptr(obj, 0, 0)?.cast())
    }

    /// Translates an address in this process back to (place, CPU offset) if it lies
    /// inside this PE's symmetric heap (the inverse of [`Shmem::local_addr`]) or, with
    /// symmetric data ([`crate::InitOptions::symmetric_data`]), inside the program's
    /// global data: the same variable is at the same offset on every PE. Use the
    /// offset with [`Shmem::place_space`].
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<u32>(8, shmemplus::Place::Cpu)?;
    /// let p = shmem.local_addr(&v)?;
    /// let third = p.wrapping_add(2) as *const u8;
    /// assert_eq!(shmem.locate_addr(third), Some((shmemplus::Place::Cpu, v.heap_offset() + 8)));
    /// assert_eq!(shmem.locate_addr(std::ptr::null()), None);
    /// // Without `init_with`'s symmetric data, a global is not symmetric.
    /// static FLAG: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    /// assert_eq!(shmem.locate_addr(&FLAG as *const _ as *const u8), None);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn locate_addr(&self, addr: *const u8) -> Option<(Place, usize)> {
        let segs = &self.inner.segs;
        let seg = segs.mine();
        let addr = addr as usize;
        let in_heap = addr
            .checked_sub(seg.heap_base() as usize)
            .filter(|&off| off < seg.heap_bytes());
        let in_data = || {
            let off = segs.statics?.offset_of(addr)?;
            // off < the area's length: the sum is at most cpu_bytes.
            seg.layout().static_offset().checked_add(off)
        };
        in_heap.or_else(in_data).map(|off| (Place::Cpu, off))
    }

    /// The program's data made symmetric by
    /// [`crate::InitOptions::symmetric_data`]: its first address and length in bytes
    /// (page multiples), or `None` without it. The range stays valid after
    /// `finalize`.
    pub fn static_region(&self) -> Option<(*mut u8, usize)> {
        self.inner.segs.statics.map(|r| (r.lo as *mut u8, r.len))
    }

    /// A whole place of every PE as one object of `T`s: for [`Place::Cpu`] all CPU
    /// memory, heap and static area; for a board, this PE's partition of it. Element
    /// `offset / size_of::<T>()` is the `T` at byte `offset` of the place (from
    /// [`Shmem::locate_addr`] for the CPU; an offset that is not a multiple of
    /// `size_of::<T>()` needs a smaller `T`). Every RMA, atomic and wait call takes it;
    /// bounds are checked against the whole place, not against any one object. It is
    /// how interfaces that deal in addresses (the C binding) reach memory while every
    /// access still goes through the same range check and route.
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<u64>(4, Place::Cpu)?;
    /// let (_, offset) = shmem.locate_addr(shmem.local_addr(&v)?.cast()).unwrap();
    /// let space = shmem.place_space::<u64>(Place::Cpu)?;
    /// shmem.p(&space, offset / 8 + 3, 77, shmem.my_pe())?;
    /// shmem.quiet()?;
    /// assert_eq!(shmem.local_read_one(&v, 3)?, 77);
    /// // Past the end of CPU memory: an error, not a write.
    /// assert!(shmem.p(&space, space.len(), 1, 0).is_err());
    /// // A board the job does not have: an error.
    /// assert!(shmem.place_space::<u64>(Place::Fpga(99)).is_err());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn place_space<T: Pod>(&self, place: Place) -> Result<PlaceSpace<T>> {
        let inner = self.live()?;
        let bytes = match place {
            Place::Cpu => inner.segs.mine().cpu_bytes(),
            Place::Fpga(b) => {
                inner.boards.board(b)?;
                usize::try_from(inner.boards.partition_bytes()).unwrap_or(usize::MAX)
            }
        };
        let len = bytes.checked_div(size_of::<T>()).ok_or_else(|| {
            Error::InvalidArgument("place_space of a zero-sized type".to_string())
        })?;
        Ok(PlaceSpace(SymVec {
            offset: 0,
            len,
            place,
            job: inner.job,
            _elem: PhantomData,
        }))
    }
}
