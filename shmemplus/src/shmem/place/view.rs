//! Views of part of a place's symmetric space: a [`SymVec`] naming `len` elements at
//! a given byte offset, the same range on every PE. Interfaces that deal in raw
//! addresses use them where a call acts on a whole object (the C binding's waits and
//! tests watch exactly the array they were given, not the whole heap).
//!
//! This module owns making such a view and checking that it lies inside the place and
//! is aligned to its elements. It must not read or write memory.

use super::{Place, Shmem, SymVec};
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::marker::PhantomData;

impl Shmem {
    /// `len` elements of `T` starting at byte `offset` of `place`'s symmetric space,
    /// as one object (see [`Shmem::place_space`] for the whole space). `offset` must
    /// be a multiple of `size_of::<T>()` and the range must lie inside the place.
    ///
    /// ```
    /// use shmemplus::{Cmp, Place};
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<u32>(4, Place::Cpu)?;
    /// shmem.local_write(&v, 0, &[5, 6, 7, 8])?;
    /// let middle = shmem.place_view::<u32>(Place::Cpu, v.heap_offset() + 4, 2)?;
    /// assert_eq!(shmem.local_to_vec(&middle)?, [6, 7]);
    /// assert!(shmem.test_all(&middle, None, Cmp::Gt, 5)?);
    /// assert!(shmem.place_view::<u32>(Place::Cpu, v.heap_offset() + 2, 1).is_err());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn place_view<T: Pod>(&self, place: Place, offset: usize, len: usize) -> Result<SymVec<T>> {
        let space = self.place_space::<T>(place)?;
        let elem = size_of::<T>().max(1);
        if offset % elem != 0 {
            return Err(Error::InvalidArgument(format!(
                "byte offset {offset} is not a multiple of the element size {elem}"
            )));
        }
        // The view's elements are space elements offset/elem .. +len: the range check
        // every access makes, done once here.
        self.locate(&space, offset / elem, len)?;
        Ok(SymVec {
            offset,
            len,
            place,
            job: space.job,
            _elem: PhantomData,
        })
    }
}
