//! Objects named by raw position: `object_at` makes a [`SymVec`] for `len` elements at a
//! byte offset of a place, for interfaces that deal in addresses (the C binding's
//! collectives and locks take a pointer and a count, where the Rust calls take an
//! object).
//!
//! This module owns only the range check of such a view. It must not allocate (the
//! view names memory that `alloc` or the program's static data already hold) or move
//! data.

use super::{Place, Shmem, SymVec};
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::marker::PhantomData;

impl Shmem {
    /// The `len` elements of `T` that start `byte_offset` bytes into `place`'s
    /// symmetric space, as one object (the same range on every PE). It must lie
    /// inside the place's space ([`Error::OutOfBounds`] otherwise, in bytes); it need
    /// not be one allocation, and the call is local (not collective).
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<u32>(8, Place::Cpu)?;
    /// shmem.local_write(&v, 0, &[0, 1, 2, 3, 4, 5, 6, 7])?;
    /// // Elements 2..5 of `v`, named by their byte offset.
    /// let part = shmem.object_at::<u32>(Place::Cpu, v.heap_offset() + 8, 3)?;
    /// assert_eq!(shmem.local_to_vec(&part)?, [2, 3, 4]);
    /// assert!(shmem.object_at::<u32>(Place::Cpu, usize::MAX - 2, 1).is_err());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn object_at<T: Pod>(
        &self,
        place: Place,
        byte_offset: usize,
        len: usize,
    ) -> Result<SymVec<T>> {
        let space = self.place_space::<u8>(place)?;
        let end = len
            .checked_mul(size_of::<T>())
            .and_then(|bytes| byte_offset.checked_add(bytes));
        match end {
            Some(end) if end <= space.len => Ok(SymVec {
                offset: byte_offset,
                len,
                place,
                job: space.job,
                _elem: PhantomData,
            }),
            _ => Err(Error::OutOfBounds {
                start: byte_offset,
                end: end.unwrap_or(usize::MAX),
                len: space.len,
            }),
        }
    }
}
