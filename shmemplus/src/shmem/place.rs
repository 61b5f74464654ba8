//! Where memory lives ([`Place`]), the names of symmetric objects ([`SymVec`]), the
//! one encoding of a place into a word, and locating elements of an object in its heap.
//!
//! This module owns those types and the range check every access starts with
//! (`Shmem::locate`: checked arithmetic, an error for any object or range that is not
//! this handle's). It must not move bytes or decide how a place is reached (`route`).

use super::Shmem;
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::fmt;
use std::marker::PhantomData;

/// Where memory lives in the multilevel address space (the SHMEM+ "affinity").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Place {
    /// The PE's host memory (its CPU symmetric heap).
    Cpu,
    /// This PE's partition of board `b` of its node (`shmemrun --fpgas N` or the
    /// profile sets the boards per node; a board that does not exist is
    /// [`Error::InvalidBoard`] or [`Error::NoBoards`]).
    Fpga(u32),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Cpu => write!(f, "Cpu"),
            Place::Fpga(b) => write!(f, "Fpga({b})"),
        }
    }
}

impl Place {
    /// The place as one word, as control blocks (symmetry records, collective call
    /// descriptors) and active-message arguments carry it: 0 is the CPU, `b + 1` is
    /// board `b`. [`Place::from_wire`] is its inverse; no other code encodes a place.
    pub(crate) fn to_wire(self) -> u64 {
        match self {
            Place::Cpu => 0,
            Place::Fpga(b) => 1 + u64::from(b),
        }
    }

    /// The place a word written by [`Place::to_wire`] names, or `None` for a word no
    /// place encodes to (a board number past `u32`): a word read from another process
    /// is refused, never truncated onto another board.
    pub(crate) fn from_wire(word: u64) -> Option<Place> {
        match word {
            0 => Some(Place::Cpu),
            w => u32::try_from(w - 1).ok().map(Place::Fpga),
        }
    }

    /// How a place word reads in a message, also when it names no place.
    pub(crate) fn wire_name(word: u64) -> String {
        match Place::from_wire(word) {
            Some(place) => place.to_string(),
            None => format!("unknown place word {word}"),
        }
    }
}

/// A symmetric object: `len` elements of `T` at the same offset in every PE's heap.
///
/// Made by [`Shmem::alloc`] (collective) and returned with [`Shmem::free`]
/// (collective). It is a name for remote memory, not a borrow of it: read and write
/// it through the handle (`put`, `get`, `local_read`, ...). Dropping it without `free`
/// leaks its heap space until the job ends.
pub struct SymVec<T: Pod> {
    pub(super) offset: usize,
    pub(super) len: usize,
    pub(super) place: Place,
    /// The tag of the handle that made it (`Inner::job`).
    pub(super) job: u64,
    pub(super) _elem: PhantomData<fn() -> T>,
}

impl<T: Pod> SymVec<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the object has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the object lives.
    pub fn place(&self) -> Place {
        self.place
    }

    /// Byte offset of the object in the symmetric heap (the same on every PE).
    pub fn heap_offset(&self) -> usize {
        self.offset
    }
}

impl<T: Pod> fmt::Debug for SymVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymVec")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("place", &self.place)
            .field("heap_offset", &self.offset)
            .finish()
    }
}

/// The error of an element range whose bytes cannot be counted (kept out of line:
/// `locate` is on every put and get).
#[cold]
#[inline(never)]
pub(super) fn overflowing_range(offset: usize, index: usize, count: usize, elem: usize) -> Error {
    Error::SizeOverflow {
        what: format!("elements {index}..+{count} of {elem} bytes at heap offset {offset}"),
    }
}

impl Shmem {
    /// Checks `obj[index..index + count]` and returns its byte offset in the heap and
    /// its byte length.
    pub(super) fn locate<T: Pod>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        count: usize,
    ) -> Result<(usize, usize)> {
        if obj.job != self.inner.job {
            return Err(Error::ForeignObject);
        }
        if index.checked_add(count).is_none_or(|end| end > obj.len) {
            return Err(Error::OutOfBounds {
                start: index,
                end: index.saturating_add(count),
                len: obj.len,
            });
        }
        // index + count <= len, and the object's len * elem bytes lie inside the heap,
        // so none of these can overflow for an object `alloc` made; they are checked
        // all the same, so that a wrong object can only ever be an error.
        let elem = size_of::<T>();
        let located = index.checked_mul(elem).and_then(|at| {
            let bytes = count.checked_mul(elem)?;
            Some((obj.offset.checked_add(at)?, bytes))
        });
        located.ok_or_else(|| overflowing_range(obj.offset, index, count, elem))
    }
}

#[cfg(test)]
mod tests {
    use super::Place;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_place_comes_back_from_its_word(board in any::<u32>()) {
            for place in [Place::Cpu, Place::Fpga(board)] {
                prop_assert_eq!(Place::from_wire(place.to_wire()), Some(place));
            }
        }

        #[test]
        fn a_word_names_a_place_exactly_when_one_encodes_to_it(word in any::<u64>()) {
            match Place::from_wire(word) {
                Some(place) => prop_assert_eq!(place.to_wire(), word),
                None => prop_assert!(word > u64::from(u32::MAX) + 1),
            }
        }
    }

    #[test]
    fn the_edges_of_the_encoding() {
        assert_eq!(Place::Cpu.to_wire(), 0);
        assert_eq!(Place::Fpga(0).to_wire(), 1);
        assert_eq!(
            Place::from_wire(u64::from(u32::MAX) + 1),
            Some(Place::Fpga(u32::MAX))
        );
        assert_eq!(Place::from_wire(u64::from(u32::MAX) + 2), None);
        assert_eq!(Place::wire_name(2), "Fpga(1)");
        assert_eq!(
            Place::wire_name(u64::MAX),
            format!("unknown place word {}", u64::MAX)
        );
    }
}
