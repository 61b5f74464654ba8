//! Collective allocation of symmetric objects: `alloc`, `free`, the symmetry check
//! every PE passes before any commits, and the zeroing of reused heap blocks.
//!
//! This module owns the per-place heaps' bookkeeping during those calls. It must not
//! choose where in a heap a block goes (`heap` does) and must not leave a PE waiting:
//! a failure that only one PE sees after every PE committed ends the job (`fatal`).

use super::{Collectives, Place, Shmem, SymVec};
use crate::diag;
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

/// Kinds of collective call, as written in the symmetry records.
pub(super) const COLL_ALLOC: u64 = 1;
pub(super) const COLL_FREE: u64 = 2;
/// The size word of an allocation whose byte size overflows.
pub(super) const OVERFLOWING_SIZE: u64 = u64::MAX;
/// The plan word of an allocation refused for its arguments (`alloc_as`).
pub(super) const REFUSED_PLAN: u64 = u64::MAX - 3;

impl Shmem {
    pub(super) fn coll(&self) -> MutexGuard<'_, Collectives> {
        self.inner.coll.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates a symmetric object of `len` elements on every PE (collective: every
    /// PE must call it with the same `len`, `T` size and place, in the same order).
    ///
    /// The object is 64-byte aligned (4 KiB aligned from 64 KiB up), zero-filled, and
    /// ready for remote access when the call returns on every PE (it ends with a
    /// barrier). A mismatch between PEs returns [`Error::NonSymmetric`] on every PE;
    /// an exhausted heap returns [`Error::HeapExhausted`] (on a board,
    /// [`Error::BoardHeapExhausted`]) on every PE, and a `len` whose size in bytes
    /// overflows returns [`Error::SizeOverflow`] on every PE.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<f64>(1024, shmemplus::Place::Cpu)?;
    /// assert_eq!(v.len(), 1024);
    /// assert_eq!(v.heap_offset() % 64, 0);
    /// // Too big for the heap: a clear error, nothing allocated.
    /// let err = shmem.alloc::<u8>(1 << 40, shmemplus::Place::Cpu).unwrap_err();
    /// assert!(err.to_string().contains("SHMEM_SYMMETRIC_SIZE"));
    /// // Too big for any heap: the size itself overflows.
    /// let err = shmem.alloc::<u64>(usize::MAX / 4, shmemplus::Place::Cpu).unwrap_err();
    /// assert!(matches!(err, shmemplus::Error::SizeOverflow { .. }));
    /// shmem.free(v)?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn alloc<T: Pod>(&self, len: usize, place: Place) -> Result<SymVec<T>> {
        self.alloc_as(len, align_of::<T>(), place, Ok(()))
    }

    /// `alloc` with alignment `align` (at least `T`'s). `refused` is an argument error
    /// this PE found before the collective (see `alloc_variants`): it still takes part in
    /// the symmetry check, publishing a plan no heap makes, and returns the error
    /// after it, so every PE returns an error and none waits.
    pub(super) fn alloc_as<T: Pod>(
        &self,
        len: usize,
        align: usize,
        place: Place,
        refused: Result<()>,
    ) -> Result<SymVec<T>> {
        let inner = self.live()?;
        // A size that overflows is not returned yet: this PE must still take part in
        // the symmetry check, or the PEs that did not overflow would wait for it
        // forever. It is published as a size no request can have (`u64::MAX`, with
        // the element count beside it), so PEs that all overflow alike pass the check
        // and all return SizeOverflow below, and PEs that differ all get NonSymmetric.
        let bytes = Error::bytes_of(len, size_of::<T>());
        let mut coll = self.coll();
        let slot = self.heap_slot(place);
        let planned = match (&slot, &bytes, &refused) {
            (_, _, Err(_)) => REFUSED_PLAN,
            (Ok(i), Ok(bytes), Ok(())) => match coll.heaps[*i].alloc.plan(*bytes, align) {
                Ok(off) => off as u64,
                Err(_) => u64::MAX,
            },
            (Err(_), _, _) => u64::MAX - 1,
            (Ok(_), Err(_), _) => u64::MAX - 2,
        };
        let (size_word, len_word) = match &bytes {
            Ok(b) => (*b as u64, 0),
            Err(_) => (OVERFLOWING_SIZE, len as u64),
        };
        self.symmetric_check(
            &mut coll,
            [
                COLL_ALLOC,
                size_word,
                align as u64,
                place.to_wire(),
                planned,
                len_word,
            ],
        )?;
        refused?;
        let bytes = bytes?;
        let slot = slot?;
        let heap = &mut coll.heaps[slot];
        let offset = heap.alloc.alloc(bytes, align).map_err(|e| match place {
            Place::Cpu => Error::HeapExhausted {
                requested: e.requested,
                largest_free: e.largest_free,
                heap: heap.alloc.size(),
            },
            Place::Fpga(board) => Error::BoardHeapExhausted {
                board,
                requested: e.requested,
                largest_free: e.largest_free,
                partition: heap.alloc.size(),
            },
        })?;
        // Memory below the high-water mark was used before: clear it so the object
        // starts zeroed on every PE. Above it the memory is still fresh zeros. The
        // allocator placed [offset, offset + bytes) inside the heap: the end fits.
        let end = offset.saturating_add(bytes);
        let reused_end = end.min(heap.high_water);
        heap.high_water = heap.high_water.max(end);
        let zeroed = if reused_end > offset {
            self.zero(place, offset, reused_end - offset)
        } else {
            Ok(())
        };
        // Every PE is committed to the closing barrier now: a failure here is this
        // PE's alone and must not leave the others waiting in it.
        crate::fatal::committed(inner.me, "alloc", zeroed);
        self.barrier_locked(&mut coll);
        diag::debug(
            inner.me,
            format_args!("symmetric alloc of {bytes} bytes at heap offset {offset} on {place}"),
        );
        Ok(SymVec {
            offset,
            len,
            place,
            job: inner.job,
            _elem: PhantomData,
        })
    }

    /// Frees a symmetric object (collective: every PE frees the same objects in the
    /// same order). Completes outstanding puts first (`quiet`) and synchronises, so no
    /// PE can still be writing into the object.
    pub fn free<T: Pod>(&self, obj: SymVec<T>) -> Result<()> {
        let inner = self.live()?;
        if obj.job != inner.job {
            return Err(Error::ForeignObject);
        }
        // A failed earlier put is reported after the collective part, which the other
        // PEs wait for.
        let completed = self.quiet();
        let mut coll = self.coll();
        // `alloc` checked this product; an object cannot hold more than the heap.
        let bytes = obj.len.saturating_mul(size_of::<T>());
        self.symmetric_check(
            &mut coll,
            [
                COLL_FREE,
                obj.offset as u64,
                bytes as u64,
                obj.place.to_wire(),
                0,
                0,
            ],
        )?;
        let slot = self.heap_slot(obj.place)?;
        if !coll.heaps[slot].alloc.free(obj.offset) {
            return Err(Error::ForeignObject);
        }
        completed
    }

    /// The index of `place`'s heap in `Collectives::heaps`, or why the place does not
    /// exist in this job.
    pub(super) fn heap_slot(&self, place: Place) -> Result<usize> {
        match place {
            Place::Cpu => Ok(0),
            Place::Fpga(b) => self.inner.boards.board(b).map(|_| 1 + b as usize),
        }
    }

    /// Clears `len` bytes of this PE's `place` memory at `offset` (a block being
    /// reused by a new object; nobody else may touch it yet).
    pub(super) fn zero(&self, place: Place, offset: usize, len: usize) -> Result<()> {
        match place {
            Place::Cpu => {
                // SAFETY: offset..offset+len lies inside this PE's heap (the allocator
                // only hands out in-bounds blocks) and belongs to the new object, which
                // no PE may touch before the allocation's closing barrier.
                unsafe {
                    std::ptr::write_bytes(self.inner.segs.mine().heap_base().add(offset), 0, len)
                };
                Ok(())
            }
            Place::Fpga(b) => {
                let board = self.inner.boards.board(b)?;
                let zeros = vec![0u8; len.min(1 << 20)];
                for start in (0..len).step_by(zeros.len().max(1)) {
                    let n = zeros.len().min(len - start);
                    board
                        .write((offset + start) as u64, &zeros[..n])
                        .map_err(|source| Error::Board { board: b, source })?;
                }
                Ok(())
            }
        }
    }

    /// Publishes this PE's description of the current collective, synchronises, and
    /// compares it with every other PE's. On a mismatch every PE returns an error that
    /// names the first PE that differs.
    pub(super) fn symmetric_check(&self, coll: &mut Collectives, words: [u64; 6]) -> Result<()> {
        let inner = &self.inner;
        coll.seq += 1;
        let seq = coll.seq;
        let slot = (seq % 2) as usize;
        let rec = &inner.segs.mine().control().coll[slot];
        for (w, v) in rec.words.iter().zip(words) {
            w.store(v, Ordering::Relaxed);
        }
        rec.seq.store(seq, Ordering::Release);
        self.barrier_locked(coll);
        for pe in 0..inner.segs.n() {
            // Mapped here, or one round trip each to a PE of another host.
            let their_seq = inner.am.control_word(pe, |c| &c.coll[slot].seq).load()?;
            let theirs = inner.am.control_words(pe, |c| &c.coll[slot].words[..])?;
            if their_seq != seq || theirs != words {
                return Err(Error::NonSymmetric(format!(
                    "collective call #{seq}: PE {} {} but PE {pe} {}",
                    inner.me,
                    describe(&words),
                    describe(&theirs)
                )));
            }
        }
        Ok(())
    }

    pub(super) fn barrier_locked(&self, _coll: &mut Collectives) {
        self.inner.world_barrier()
    }
}

pub(super) fn describe(words: &[u64]) -> String {
    match words[0] {
        COLL_ALLOC if words[1] == OVERFLOWING_SIZE => format!(
            "allocates {} elements, whose size overflows, on {}",
            words[5],
            Place::wire_name(words[3])
        ),
        COLL_ALLOC if words[4] == REFUSED_PLAN => format!(
            "allocates {} bytes (alignment {}) on {}, refused for its arguments",
            words[1],
            words[2],
            Place::wire_name(words[3])
        ),
        COLL_ALLOC => format!(
            "allocates {} bytes (alignment {}) on {}",
            words[1],
            words[2],
            Place::wire_name(words[3])
        ),
        COLL_FREE => format!(
            "frees the object at heap offset {} ({} bytes)",
            words[1], words[2]
        ),
        0 => "has not made this collective call".to_string(),
        k => format!("makes collective call of kind {k}"),
    }
}
