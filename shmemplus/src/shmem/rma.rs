//! One-sided RMA: `put`, `get`, `p`, `g`, `put_from`/`get_into` between any two
//! places, the non-blocking forms, and `fence`/`quiet`.
//!
//! This module owns the argument checks of those calls (PE, object, range) and their
//! order of steps (check, start the clock, move, charge). It must not decide how the
//! bytes travel (`route` does) nor what the model charges (`emulate`).

use super::{Inner, Place, Shmem, SymVec};
use crate::am::{H_FPGA_GET, H_FPGA_PUT};
use crate::config::Conduit;
use crate::emulate::{Hop, RmaOp};
use crate::error::{Error, Result};
use bytemuck::Pod;
use std::sync::atomic::{fence, Ordering};

/// Bytes staged at a time by transfers between two symmetric objects (a board read
/// feeding a network send, say): large enough to amortise each step, small enough to
/// stay in cache and never need a buffer the size of the transfer.
pub(super) const STAGE_BYTES: usize = 1 << 20;

impl Shmem {
    /// Copies `src` into `dest[index..index + src.len()]` on PE `pe`. Returns when
    /// `src` may be reused; use [`Shmem::quiet`] (or a barrier) for completion.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let dest = shmem.alloc::<u32>(8, shmemplus::Place::Cpu)?;
    /// shmem.put(&dest, 2, &[7, 8, 9], shmem.my_pe())?;
    /// shmem.quiet()?;
    /// let mut back = [0u32; 4];
    /// shmem.get(&dest, 1, &mut back, shmem.my_pe())?;
    /// assert_eq!(back, [0, 7, 8, 9]);
    /// // Out of range: an error, nothing written.
    /// assert!(shmem.put(&dest, 6, &[1, 2, 3], 0).is_err());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn put<T: Pod>(&self, dest: &SymVec<T>, index: usize, src: &[T], pe: u32) -> Result<()> {
        self.put_with(dest, index, src, pe, false)
    }

    /// `put`, whose modeled time is waited for now or (`deferred`, for `put_nbi`) at
    /// the next `quiet`.
    pub(super) fn put_with<T: Pod>(
        &self,
        dest: &SymVec<T>,
        index: usize,
        src: &[T],
        pe: u32,
        deferred: bool,
    ) -> Result<()> {
        let inner = self.live()?;
        let target = self.check_pe(pe)?;
        let (offset, bytes) = self.locate(dest, index, src.len())?;
        let src_bytes: &[u8] = bytemuck::cast_slice(src);
        debug_assert_eq!(src_bytes.len(), bytes);
        // The modeled clock starts before the copy, so the copy hides in the model.
        let start = inner.emulation.as_ref().map(|_| netsim::now_ns());
        self.move_in(target, dest.place, offset, src_bytes)?;
        if let Some(start) = start {
            let remote = (target, dest.place, offset);
            self.emulate(RmaOp::Put, None, remote, bytes, start, deferred);
        }
        Ok(())
    }

    /// Copies `src[index..index + dst.len()]` from PE `pe` into `dst`; returns with the
    /// data. `src` may live on the CPU or on a board of `pe`'s node.
    pub fn get<T: Pod>(&self, src: &SymVec<T>, index: usize, dst: &mut [T], pe: u32) -> Result<()> {
        let inner = self.live()?;
        let target = self.check_pe(pe)?;
        let (offset, bytes) = self.locate(src, index, dst.len())?;
        let start = inner.emulation.as_ref().map(|_| netsim::now_ns());
        self.move_out(target, src.place, offset, bytemuck::cast_slice_mut(dst))?;
        if let Some(start) = start {
            self.emulate(
                RmaOp::Get,
                None,
                (target, src.place, offset),
                bytes,
                start,
                false,
            );
        }
        Ok(())
    }

    /// Copies `count` elements from this PE's own copy of `src` (at `src_index`; on the
    /// CPU or on one of this node's boards) into `dest[dest_index..]` on PE `pe`: the
    /// SHMEM+ transfer between any two places, e.g. from a local board to a remote
    /// board. Returns when the source may be reused; `quiet` completes it.
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let (a, b) = (shmem.alloc::<u8>(64, Place::Cpu)?, shmem.alloc::<u8>(64, Place::Cpu)?);
    /// shmem.local_write(&a, 0, &[1, 2, 3])?;
    /// shmem.put_from(&b, 10, &a, 0, 3, shmem.my_pe())?;
    /// shmem.quiet()?;
    /// assert_eq!(shmem.local_to_vec(&b)?[10..13], [1, 2, 3]);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn put_from<T: Pod>(
        &self,
        dest: &SymVec<T>,
        dest_index: usize,
        src: &SymVec<T>,
        src_index: usize,
        count: usize,
        pe: u32,
    ) -> Result<()> {
        self.live()?;
        let target = self.check_pe(pe)?;
        let (src_off, bytes) = self.locate(src, src_index, count)?;
        let (dest_off, _) = self.locate(dest, dest_index, count)?;
        let (local, remote) = ((src.place, src_off), (target, dest.place, dest_off));
        self.transfer_between(RmaOp::Put, local, remote, bytes, false)
    }

    /// Copies `count` elements of `src[src_index..]` on PE `pe` into this PE's own copy
    /// of `dest` at `dest_index` (either on the CPU or on one of this node's boards);
    /// returns when the data is in place.
    pub fn get_into<T: Pod>(
        &self,
        dest: &SymVec<T>,
        dest_index: usize,
        src: &SymVec<T>,
        src_index: usize,
        count: usize,
        pe: u32,
    ) -> Result<()> {
        let (local, remote, bytes) = self.get_route(dest, dest_index, src, src_index, count, pe)?;
        self.transfer_between(RmaOp::Get, local, remote, bytes, false)
    }

    /// The checked (local, remote, bytes) of a get from `src[src_index..]` on PE `pe`
    /// into this PE's `dest[dest_index..]`.
    #[allow(clippy::type_complexity)]
    pub(super) fn get_route<T: Pod>(
        &self,
        dest: &SymVec<T>,
        dest_index: usize,
        src: &SymVec<T>,
        src_index: usize,
        count: usize,
        pe: u32,
    ) -> Result<((Place, usize), (usize, Place, usize), usize)> {
        self.live()?;
        let target = self.check_pe(pe)?;
        let (src_off, bytes) = self.locate(src, src_index, count)?;
        let (dest_off, _) = self.locate(dest, dest_index, count)?;
        Ok(((dest.place, dest_off), (target, src.place, src_off), bytes))
    }

    /// A transfer between this PE's own `local` (place, offset) and `remote` (PE,
    /// place, offset), staged in `STAGE_BYTES` pieces: a put reads local and writes
    /// remote, a get the other way round. Offsets were checked by the caller.
    pub(super) fn transfer_between(
        &self,
        op: RmaOp,
        (place, offset): (Place, usize),
        remote: (usize, Place, usize),
        bytes: usize,
        deferred: bool,
    ) -> Result<()> {
        let start = self.inner.emulation.as_ref().map(|_| netsim::now_ns());
        let (target, remote_place, remote_offset) = remote;
        let inner = &self.inner;
        if (place, remote_place, inner.config.conduit) == (Place::Cpu, Place::Cpu, Conduit::Shm) {
            // Both ends are mapped CPU heaps: one copy, no staging.
            let mine = inner.segs.mine().heap_base();
            let theirs = inner.segs.segs[target].heap_base();
            // SAFETY: both ranges were checked against their objects by the caller, so
            // they lie inside mapped heaps. They can only overlap when the target is
            // this PE, and `ptr::copy` (memmove) is used then.
            unsafe {
                let (from, to) = match op {
                    RmaOp::Put => (mine.add(offset), theirs.add(remote_offset)),
                    RmaOp::Get => (theirs.add(remote_offset), mine.add(offset)),
                };
                if target == inner.segs.me {
                    std::ptr::copy(from, to, bytes);
                } else {
                    crate::copy::copy_bytes(from, to, bytes);
                }
            }
            if op == RmaOp::Put {
                inner.wake_later(target);
            }
            if let Some(start) = start {
                self.emulate(op, Some((place, offset)), remote, bytes, start, deferred);
            }
            return Ok(());
        }
        // A transfer from this PE's memory to the same memory (`put_from`/`get_into`
        // of one object to itself) may read and write overlapping ranges; the result
        // must be that of `memmove`. Each piece is read whole into the stage before it
        // is written, so only the order of the pieces matters: when the destination
        // lies above an overlapping source, go from the last piece to the first, so
        // that no piece is written over source bytes a later piece has yet to read
        // (forward order is right in every other case). That holds even when the
        // writes are AMs applied later: they only ever land on bytes already read.
        let (src_off, dst_off) = match op {
            RmaOp::Put => (offset, remote_offset),
            RmaOp::Get => (remote_offset, offset),
        };
        let same_memory = target == inner.segs.me && place == remote_place;
        let backward = same_memory && dst_off > src_off && dst_off - src_off < bytes;
        let pieces = bytes.div_ceil(STAGE_BYTES);
        let mut stage = vec![0u8; bytes.min(STAGE_BYTES)];
        // at < bytes, and the caller checked offset + bytes (and remote_offset + bytes)
        // against their objects, so the sums below cannot overflow.
        for k in 0..pieces {
            // Below `bytes` (piece index < pieces), so neither step can overflow.
            let index = if backward { pieces - 1 - k } else { k };
            let at = index * STAGE_BYTES;
            let piece = &mut stage[..STAGE_BYTES.min(bytes - at)];
            match op {
                RmaOp::Put => {
                    self.move_out_own(place, offset + at, piece)?;
                    self.move_in(target, remote_place, remote_offset + at, piece)?;
                }
                RmaOp::Get => {
                    self.move_out(target, remote_place, remote_offset + at, piece)?;
                    self.move_in_own(place, offset + at, piece)?;
                }
            }
        }
        if let Some(start) = start {
            self.emulate(op, Some((place, offset)), remote, bytes, start, deferred);
        }
        Ok(())
    }

    /// Moves `src` into `place` memory of PE `target` at byte `offset` (checked by the
    /// caller against the object): a copy into a mapped CPU heap, an AM, or a DMA write
    /// into one of this PE's boards.
    pub(super) fn move_in(
        &self,
        target: usize,
        place: Place,
        offset: usize,
        src: &[u8],
    ) -> Result<()> {
        let inner = &self.inner;
        match place {
            Place::Cpu => match inner.config.conduit {
                Conduit::Shm => {
                    // SAFETY: offset..offset+len is inside the target's heap (`locate`
                    // checked it against the object, which the allocator placed inside
                    // the heap) and the target's segment stays mapped while `inner`
                    // lives. Safe code has no slice into a symmetric heap, and the
                    // unsafe `local_slice*` contract forbids puts into memory such a
                    // slice covers while it lives; should a source overlap the range
                    // anyway, `copy_may_overlap` moves it as `memmove` would. Concurrent
                    // access to the target range by other PEs is the program's race, as
                    // in OpenSHMEM; we never create a Rust reference to shared bytes.
                    unsafe {
                        copy_may_overlap(
                            src.as_ptr(),
                            inner.segs.segs[target].heap_base().add(offset),
                            src.len(),
                            target == inner.segs.me,
                        )
                    };
                    inner.wake_later(target);
                    Ok(())
                }
                Conduit::Am => {
                    inner.am.put(target, offset, src);
                    Ok(())
                }
            },
            Place::Fpga(b) => {
                let board = inner.boards.board(b)?;
                if target == inner.segs.me {
                    board
                        .write(offset as u64, src)
                        .map(|_| ())
                        .map_err(|source| Error::Board { board: b, source })
                } else {
                    inner
                        .am
                        .put_via(target, H_FPGA_PUT, u64::from(b), offset, src);
                    Ok(())
                }
            }
        }
    }

    /// Moves `src` into this PE's own `place` memory at `offset` directly (no conduit:
    /// it is this PE's memory), complete on return.
    pub(super) fn move_in_own(&self, place: Place, offset: usize, src: &[u8]) -> Result<()> {
        match place {
            Place::Cpu => {
                // SAFETY: in bounds of this PE's heap (checked by the caller against the
                // object); `src` is `transfer_between`'s private staging buffer (the
                // only caller), so the ranges cannot overlap.
                unsafe {
                    crate::copy::copy_bytes(
                        src.as_ptr(),
                        self.inner.segs.mine().heap_base().add(offset),
                        src.len(),
                    )
                };
                Ok(())
            }
            Place::Fpga(_) => self.move_in(self.inner.segs.me, place, offset, src),
        }
    }

    /// Moves bytes out of this PE's own `place` memory at `offset` directly.
    pub(super) fn move_out_own(&self, place: Place, offset: usize, dst: &mut [u8]) -> Result<()> {
        match place {
            Place::Cpu => {
                // SAFETY: as in `move_in_own`, in the other direction.
                unsafe {
                    crate::copy::copy_bytes(
                        self.inner.segs.mine().heap_base().add(offset),
                        dst.as_mut_ptr(),
                        dst.len(),
                    )
                };
                Ok(())
            }
            Place::Fpga(_) => self.move_out(self.inner.segs.me, place, offset, dst),
        }
    }

    /// Moves bytes out of `place` memory of PE `target` at `offset` into `dst`.
    pub(super) fn move_out(
        &self,
        target: usize,
        place: Place,
        offset: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        let inner = &self.inner;
        match place {
            Place::Cpu => match inner.config.conduit {
                Conduit::Shm => {
                    // SAFETY: as in `move_in`, with the roles swapped: the source range
                    // is in bounds of the target's mapped heap, and `dst` is an
                    // exclusive buffer of exactly that many bytes (overlap, which the
                    // `local_slice_mut` contract rules out, would still be a memmove).
                    unsafe {
                        copy_may_overlap(
                            inner.segs.segs[target].heap_base().add(offset),
                            dst.as_mut_ptr(),
                            dst.len(),
                            target == inner.segs.me,
                        )
                    };
                    Ok(())
                }
                Conduit::Am => inner.am.get(target, offset, dst),
            },
            Place::Fpga(b) => {
                let board = inner.boards.board(b)?;
                if target == inner.segs.me {
                    board
                        .read(offset as u64, dst)
                        .map(|_| ())
                        .map_err(|source| Error::Board { board: b, source })
                } else {
                    inner
                        .am
                        .get_via(target, H_FPGA_GET, u64::from(b), offset, dst)
                }
            }
        }
    }

    /// Charges an operation's route to the emulated cluster and waits as its semantics
    /// say (a put until its source is free, a get until its data is in place),
    /// packetized as the packet policy decides. Offsets were checked by the caller.
    pub(super) fn emulate(
        &self,
        op: RmaOp,
        local: Option<(Place, usize)>,
        remote: (usize, Place, usize),
        bytes: usize,
        start: u64,
        deferred: bool,
    ) {
        let Some(emu) = &self.inner.emulation else {
            return;
        };
        let (pe, place, offset) = remote;
        let mut hops_of = |at: usize, len: usize| {
            self.hops(
                op,
                local.map(|(l, o)| (l, o + at)),
                (pe, place, offset + at),
                len,
            )
            .unwrap_or_default()
        };
        let packet = self.packet_size(op, local.map(|l| l.0), (pe, place), bytes, &mut hops_of);
        emu.transfer_packets(op, bytes, packet, start, deferred, &mut hops_of);
    }

    /// The hops of a transfer of `bytes` between this PE and `(pe, place, offset)`:
    /// for a put, from this PE's `local` place (a host buffer when `None`) to the
    /// remote one; for a get, the request, then from the remote place back to `local`.
    /// DMA hops are charged on the span the board's engine really moves.
    pub(super) fn hops(
        &self,
        op: RmaOp,
        local: Option<(Place, usize)>,
        (pe, place, offset): (usize, Place, usize),
        bytes: usize,
    ) -> Result<Vec<Hop>> {
        let me = self.inner.segs.me;
        let span = |b: u32, off: usize| -> Result<u64> {
            let board = self.inner.boards.board(b)?;
            board
                .span(off as u64, bytes as u64)
                .map(|s| s.len)
                .map_err(|source| Error::Board { board: b, source })
        };
        let l = bytes as u64;
        let mut hops = Vec::with_capacity(4);
        match op {
            RmaOp::Put => {
                if let Some((Place::Fpga(b), off)) = local {
                    hops.push(Hop::Read {
                        pe: me,
                        board: b,
                        bytes: span(b, off)?,
                    });
                }
                hops.push(Hop::Net {
                    from: me,
                    to: pe,
                    bytes: l,
                });
                if let Place::Fpga(b) = place {
                    hops.push(Hop::Write {
                        pe,
                        board: b,
                        bytes: span(b, offset)?,
                    });
                }
            }
            RmaOp::Get => {
                hops.push(Hop::Net {
                    from: me,
                    to: pe,
                    bytes: 0,
                });
                if let Place::Fpga(b) = place {
                    hops.push(Hop::Read {
                        pe,
                        board: b,
                        bytes: span(b, offset)?,
                    });
                }
                hops.push(Hop::Net {
                    from: pe,
                    to: me,
                    bytes: l,
                });
                if let Some((Place::Fpga(b), off)) = local {
                    hops.push(Hop::Write {
                        pe: me,
                        board: b,
                        bytes: span(b, off)?,
                    });
                }
            }
        }
        Ok(hops)
    }

    /// Puts one element (OpenSHMEM `p`).
    pub fn p<T: Pod>(&self, dest: &SymVec<T>, index: usize, value: T, pe: u32) -> Result<()> {
        self.put(dest, index, std::slice::from_ref(&value), pe)
    }

    /// Gets one element (OpenSHMEM `g`).
    pub fn g<T: Pod>(&self, src: &SymVec<T>, index: usize, pe: u32) -> Result<T> {
        let mut v = T::zeroed();
        self.get(src, index, std::slice::from_mut(&mut v), pe)?;
        Ok(v)
    }

    /// Orders puts: puts to a PE issued before `fence` are delivered before puts to the
    /// same PE issued after it.
    pub fn fence(&self) -> Result<()> {
        let inner = self.live()?;
        match inner.config.conduit {
            // Shared-memory puts are stores; a release fence orders them. Puts to
            // boards travel as AMs, which a later store could overtake: complete them.
            Conduit::Shm => {
                fence(Ordering::Release);
                inner.flush_wakes();
                inner.am.quiet()?;
            }
            // AMs from one PE to another are served in order (one FIFO ring per pair).
            Conduit::Am => {}
        }
        Ok(())
    }

    /// Completes every put this PE issued: after `quiet` they are visible at their
    /// targets.
    pub fn quiet(&self) -> Result<()> {
        self.live()?.quiet()
    }
}

impl Inner {
    pub(super) fn quiet(&self) -> Result<()> {
        if !self.flush_wakes() {
            fence(Ordering::SeqCst);
        }
        // AM puts: every put with the am conduit, and puts to other PEs' boards.
        self.am.quiet()?;
        if let Some(emu) = &self.emulation {
            emu.quiet();
        }
        Ok(())
    }

    /// Notes that this PE stored into PE `to`'s CPU heap, so that `to` is woken if
    /// it sleeps in a wait (done lazily by `flush_wakes`: a put stays a plain copy).
    #[inline]
    pub(super) fn wake_later(&self, to: usize) {
        self.wakes.note(to);
    }

    /// Wakes the PEs this PE stored into since the last call, if they sleep (the
    /// protocol and its argument are in `wake`). Runs in `quiet`, `fence`, barriers
    /// and before this PE waits, so a PE asleep in `wait_until` learns of a put
    /// promptly. Returns whether it issued a SeqCst fence.
    pub(super) fn flush_wakes(&self) -> bool {
        self.wakes
            .flush(|pe| crate::sync::notify_fenced(&self.segs.segs[pe].control().user_signal))
    }
}

/// Copies `len` bytes from `src` to `dst` as `memmove` does when the two ranges
/// overlap (`ptr::copy`), else with the data path's `copy::copy_bytes`. For copies
/// whose ranges are not known to be disjoint (a caller's buffer against this PE's own
/// heap); the check is two comparisons. Only this PE's own heap can overlap a
/// caller's buffer (safe code reaches no other mapping), so the callers pass
/// `may_overlap = false` for another PE's heap and skip the check.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
#[inline]
pub(super) unsafe fn copy_may_overlap(src: *const u8, dst: *mut u8, len: usize, may_overlap: bool) {
    if !may_overlap {
        // SAFETY: forwarded to the caller, who knows the ranges are disjoint.
        return unsafe { crate::copy::copy_bytes(src, dst, len) };
    }
    let (s, d) = (src as usize, dst as usize);
    // Ranges of live memory do not wrap the address space, so neither sum overflows.
    let overlap = s < d.wrapping_add(len) && d < s.wrapping_add(len);
    if overlap {
        // SAFETY: forwarded to the caller; `ptr::copy` allows overlap.
        unsafe { std::ptr::copy(src, dst, len) }
    } else {
        // SAFETY: forwarded to the caller, and the ranges are disjoint.
        unsafe { crate::copy::copy_bytes(src, dst, len) }
    }
}
