//! Views of part of a place's symmetric space: a [`SymVec`] naming `len` elements at
//! a given byte offset, the same range on every PE. Interfaces that deal in raw
//! addresses use them where a call acts on a whole object (the C binding's waits and
//! tests watch exactly the array they were given, not the whole heap; its collectives
//! and locks name their arrays and lock words this way).
//!
//! This module owns making such a view and checking that it lies inside the place and
//! is aligned to its elements. It must not read or write memory.

use super::{Place, Shmem, SymVec};
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::marker::PhantomData;

impl Shmem {
    /// `len` elements of `T` starting at byte `offset` of `place`'s symmetric space,
    /// as one object, the same range on every PE (see [`Shmem::place_space`] for the
    /// whole space). It need not be one allocation, and the call is local (not
    /// collective). `offset` must be aligned for `T` ([`Error::InvalidArgument`]) and
    /// the range must lie inside the place ([`Error::OutOfBounds`], in bytes).
    ///
    /// ```
    /// use shmemplus::{Cmp, Place};
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<u32>(4, Place::Cpu)?;
    /// shmem.local_write(&v, 0, &[5, 6, 7, 8])?;
    /// let middle = shmem.place_view::<u32>(Place::Cpu, v.heap_offset() + 4, 2)?;
    /// assert_eq!(shmem.local_to_vec(&middle)?, [6, 7]);
    /// assert!(shmem.test_all(&middle, None, Cmp::Gt, 5)?);
    /// // Misaligned for u32, or past the end of the place: errors.
    /// assert!(shmem.place_view::<u32>(Place::Cpu, v.heap_offset() + 2, 1).is_err());
    /// assert!(shmem.place_view::<u32>(Place::Cpu, usize::MAX - 3, 1).is_err());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn place_view<T: Pod>(&self, place: Place, offset: usize, len: usize) -> Result<SymVec<T>> {
        let space = self.place_space::<u8>(place)?;
        let align = align_of::<T>();
        if offset % align != 0 {
            return Err(Error::InvalidArgument(format!(
                "byte offset {offset} is not aligned to {align} bytes"
            )));
        }
        let end = len
            .checked_mul(size_of::<T>())
            .and_then(|bytes| offset.checked_add(bytes));
        match end {
            // Every place starts aligned (heaps at 2 MiB, the static area at a page,
            // boards at their partition), so an aligned offset is an aligned address.
            Some(end) if end <= space.len => Ok(SymVec {
                offset,
                len,
                place,
                job: space.job,
                _elem: PhantomData,
            }),
            _ => Err(Error::OutOfBounds {
                start: offset,
                end: end.unwrap_or(usize::MAX),
                len: space.len,
            }),
        }
    }
}
