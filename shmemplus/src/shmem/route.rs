//! How bytes reach a place of a PE: the one place that knows the conduits.
//!
//! A [`Route`] is resolved once per operation by [`Inner::route`] from this PE's end
//! (a place of its own, or a private buffer), the target place and PE, the conduit
//! and whether the target is this PE: a few branches, with no allocation, lock or
//! lookup, since it sits on every put and get. It knows how to put (move bytes in),
//! get (move bytes out), apply an atomic, move bytes between two symmetric objects,
//! which hops the transfer crosses (for the emulated clock and the model), and how
//! puts on it are ordered and completed (`fence`, `quiet`). The RMA, atomic,
//! signal, lock and tuning calls all go through it; none of them matches on a
//! conduit.
//!
//! This module must not check arguments (the calls do, before they resolve a route:
//! every offset here is in bounds of its object), decide packet sizes (`tuning`) or
//! define costs (`emulate`).
//!
//! # A new conduit touches
//!
//! - `config.rs`: the `Conduit` variant, its `SHMEMPLUS_CONDUIT` name and parsing;
//! - this file: which [`Reach`] `Inner::route` gives each place under it, a `Reach`
//!   variant if its transfers are of a new kind (its `put`, `get` and `atomic` arms
//!   below), and its line in `Inner::fence_puts` and `Inner::quiet`;
//! - its transport, in a module of its own (as `am/` is for [`Reach::Am`]), started
//!   in `shmem/init.rs` beside the AM engine if it needs a thread or a connection.
//!
//! That is the data path. The control path (barrier flags, collective arrivals, the
//! descriptors `alloc` and the collectives compare) goes through
//! `AmEngine::control_word`: a word of a mapped control block, or an `H_CONTROL`
//! record to a PE of another host. Between hosts every reach is [`Reach::Am`]: the AM
//! engine's link (the MPI conduit, `mpi_conduit`) carries the records
//! (`docs/architecture.md` §13).
//!
//! # The clock
//!
//! [`Shmem::timed`] here orders each operation's steps for the job's clock (`clock`:
//! wall or virtual), and `shmem::vtime` carries virtual time between PEs.

use super::{Inner, Place, Shmem};
use crate::am::{H_ATOMIC, H_FPGA_GET, H_FPGA_PUT};
use crate::atomic::{apply_at, apply_on_board, AtomicOp};
use crate::config::Conduit;
use crate::emulate::{Completion, Hop, RmaOp};
use crate::error::{Error, Result};
use crate::sync::notify;
use std::sync::atomic::{fence, Ordering};

/// Bytes staged at a time by transfers between two symmetric objects (a board read
/// feeding a network send, say): large enough to amortise each step, small enough to
/// stay in cache and never need a buffer the size of the transfer.
const STAGE_BYTES: usize = 1 << 20;

/// How this PE reaches one place of one PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// A CPU heap mapped into this process (the `shm` conduit): a put is a copy, an
    /// atomic one instruction on the mapping. Puts are plain stores: a release fence
    /// orders them, a SeqCst fence completes them, and the target is woken lazily.
    Mapped { pe: usize },
    /// A board of this PE: a DMA by the calling thread, complete on return.
    OwnBoard { board: u32 },
    /// Active messages to `pe`'s progress thread, which applies them to `place`
    /// there. Those from one PE to another are served in order (one FIFO ring per
    /// pair); `am.quiet` completes them.
    Am { pe: usize, place: Place },
}

/// The route of one operation between this PE and `place` of PE `pe`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Route {
    /// This PE's end of a transfer between two symmetric objects (the source of a
    /// put, the destination of a get), which it always reaches directly; `None` for
    /// a private buffer.
    pub(super) local: Option<Place>,
    /// The target PE.
    pub(super) pe: usize,
    /// The target place.
    pub(super) place: Place,
    /// How the target place is reached.
    pub(super) reach: Reach,
}

/// The state of a timed operation while its bytes move (see [`Shmem::timed`]).
pub(super) struct TimedCall<'c> {
    _span: crate::trace::Span<'c>,
    /// On the virtual clock, the call's guard (computation is not counted inside).
    _call: Option<crate::clock::InCall>,
    /// On an emulated wall clock, when the clock started (before the bytes move, so
    /// the real copy hides in the modeled time).
    wall_start: Option<u64>,
}

impl Inner {
    /// The route from this PE's `local` end to `place` of PE `pe` (checked by the
    /// caller). A board that does not exist is refused when the route is used.
    #[inline(always)]
    pub(super) fn route(&self, local: Option<Place>, pe: usize, place: Place) -> Route {
        let reach = match (place, self.config.conduit) {
            // A CPU heap of this host is mapped; one on another host is reached
            // through the AM engine, whose link carries the records there.
            (Place::Cpu, Conduit::Shm)
                if !self.segs.spans_hosts() || self.segs.peer(pe).is_some() =>
            {
                Reach::Mapped { pe }
            }
            (Place::Fpga(board), _) if pe == self.segs.me => Reach::OwnBoard { board },
            (place, Conduit::Shm | Conduit::Am) => Reach::Am { pe, place },
        };
        Route {
            local,
            pe,
            place,
            reach,
        }
    }

    /// `fence`: puts to a PE issued before it, on any route, are delivered before
    /// puts to the same PE issued after it.
    pub(super) fn fence_puts(&self) -> Result<()> {
        // Modeled time: this PE's puts into its own boards now order its later writes
        // to itself (its puts to other PEs do already, `Emulation::undelivered_to`).
        if let Some(emu) = &self.emulation {
            emu.record_delivery_to(self.segs.me, emu.undelivered_to_boards());
        }
        match self.config.conduit {
            // Mapped puts are stores; a release fence orders them. Puts to other PEs'
            // boards travel as AMs, which a later store could overtake: complete them.
            Conduit::Shm => {
                fence(Ordering::Release);
                self.flush_wakes();
                self.am.quiet()?;
            }
            // Every route to another PE is an AM, in order per pair of PEs; this
            // PE's own boards complete each put on return.
            Conduit::Am => {}
        }
        Ok(())
    }

    /// `quiet`: every put issued before it, on any route, is visible at its target.
    #[inline]
    pub(super) fn quiet(&self) -> Result<()> {
        // Counted and traced only when either is on (the native fast path skips both
        // guards, whose drops would otherwise stay on it).
        if !self.untimed.load(Ordering::Relaxed) {
            let _call = self.clock.enter();
            let _span = crate::trace::span("quiet", &self.clock);
            return self.complete_puts();
        }
        self.complete_puts()
    }

    /// The body of `quiet`.
    #[inline(always)]
    fn complete_puts(&self) -> Result<()> {
        // Mapped puts: stores, made visible by a SeqCst fence (flushing the wake-ups
        // issues one when there is anyone to wake).
        if !self.flush_wakes() {
            fence(Ordering::SeqCst);
        }
        // AM puts: every put with the am conduit, and puts to other PEs' boards.
        self.am.quiet()?;
        // Deferred modeled time (`put_nbi`, `get_nbi`).
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
            .flush(|pe| crate::sync::notify_fenced(&self.segs.seg(pe).control().user_signal))
    }
}

impl Route {
    /// Moves `src` into the target place at byte `offset` (checked by the caller
    /// against the object): a copy into a mapped CPU heap, an AM, or a DMA write into
    /// one of this PE's boards.
    #[inline(always)]
    pub(super) fn put(&self, inner: &Inner, offset: usize, src: &[u8]) -> Result<()> {
        match self.reach {
            Reach::Mapped { pe } => {
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
                        inner.segs.seg(pe).heap_base().add(offset),
                        src.len(),
                        pe == inner.segs.me,
                    )
                };
                inner.wake_later(pe);
                Ok(())
            }
            Reach::OwnBoard { board } => board_write(inner, board, offset, src),
            Reach::Am { pe, place } => {
                match place {
                    Place::Cpu => inner.am.put(pe, offset, src),
                    Place::Fpga(b) => {
                        inner.boards.board(b)?;
                        inner.am.put_via(pe, H_FPGA_PUT, u64::from(b), offset, src)
                    }
                }
                Ok(())
            }
        }
    }

    /// Moves bytes out of the target place at `offset` into `dst`.
    #[inline(always)]
    pub(super) fn get(&self, inner: &Inner, offset: usize, dst: &mut [u8]) -> Result<()> {
        match self.reach {
            Reach::Mapped { pe } => {
                // SAFETY: as in `put`, with the roles swapped: the source range is in
                // bounds of the target's mapped heap, and `dst` is an exclusive
                // buffer of exactly that many bytes (overlap, which the
                // `local_slice_mut` contract rules out, would still be a memmove).
                unsafe {
                    copy_may_overlap(
                        inner.segs.seg(pe).heap_base().add(offset),
                        dst.as_mut_ptr(),
                        dst.len(),
                        pe == inner.segs.me,
                    )
                };
                Ok(())
            }
            Reach::OwnBoard { board } => board_read(inner, board, offset, dst),
            Reach::Am { pe, place } => match place {
                Place::Cpu => inner.am.get(pe, offset, dst),
                Place::Fpga(b) => {
                    inner.boards.board(b)?;
                    inner.am.get_via(pe, H_FPGA_GET, u64::from(b), offset, dst)
                }
            },
        }
    }

    /// Applies an atomic to the word at `offset` of the target place and returns the
    /// old word (0 for a non-fetching one sent without waiting).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &self,
        inner: &Inner,
        offset: usize,
        width: usize,
        op: AtomicOp,
        operand: u64,
        cond: u64,
        fetching: bool,
    ) -> Result<u64> {
        match self.reach {
            Reach::Mapped { pe } => {
                // SAFETY: `offset` was checked against the object (in the target's
                // heap, which stays mapped while `inner` lives) and is aligned to the
                // element type, whose size is `width`.
                let old = unsafe {
                    apply_at(
                        inner.segs.seg(pe).heap_base().add(offset),
                        width,
                        op,
                        operand,
                        cond,
                    )
                };
                if op != AtomicOp::Fetch {
                    notify(&inner.segs.seg(pe).control().user_signal);
                }
                Ok(old)
            }
            Reach::OwnBoard { board } => {
                let old = apply_on_board(
                    &inner.boards,
                    board,
                    offset as u64,
                    width,
                    op,
                    operand,
                    cond,
                )?;
                if op != AtomicOp::Fetch {
                    notify(&inner.segs.mine().control().user_signal);
                }
                Ok(old)
            }
            Reach::Am { pe, place } => {
                if let Place::Fpga(b) = place {
                    inner.boards.board(b)?;
                }
                let args = crate::atomic::am_args(offset, place.to_wire(), op, width, operand);
                let payload = cond.to_le_bytes();
                if !fetching {
                    inner.am.post(pe, H_ATOMIC, args, &payload);
                    return Ok(0);
                }
                inner.am.call_word(pe, H_ATOMIC, args, &payload)
            }
        }
    }

    /// A transfer of `bytes` between this PE's own `local` end at `local_offset` and
    /// the target place at `remote_offset`: a put reads local and writes remote, a get
    /// the other way round. Offsets were checked by the caller.
    pub(super) fn transfer(
        &self,
        inner: &Inner,
        op: RmaOp,
        (local_offset, remote_offset): (usize, usize),
        bytes: usize,
    ) -> Result<()> {
        // A transfer between two objects always has a local place (`transfer_between`).
        debug_assert!(self.local.is_some());
        let place = self.local.unwrap_or(Place::Cpu);
        if let (Place::Cpu, Reach::Mapped { pe }) = (place, self.reach) {
            // Both ends are mapped CPU heaps: one copy, no staging.
            let mine = inner.segs.mine().heap_base();
            let theirs = inner.segs.seg(pe).heap_base();
            // SAFETY: both ranges were checked against their objects by the caller, so
            // they lie inside mapped heaps. They can only overlap when the target is
            // this PE, and `ptr::copy` (memmove) is used then.
            unsafe {
                let (from, to) = match op {
                    RmaOp::Put => (mine.add(local_offset), theirs.add(remote_offset)),
                    RmaOp::Get => (theirs.add(remote_offset), mine.add(local_offset)),
                };
                if pe == inner.segs.me {
                    std::ptr::copy(from, to, bytes);
                } else {
                    crate::copy::copy_bytes(from, to, bytes);
                }
            }
            if op == RmaOp::Put {
                inner.wake_later(pe);
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
            RmaOp::Put => (local_offset, remote_offset),
            RmaOp::Get => (remote_offset, local_offset),
        };
        let same_memory = self.pe == inner.segs.me && place == self.place;
        let backward = same_memory && dst_off > src_off && dst_off - src_off < bytes;
        let pieces = bytes.div_ceil(STAGE_BYTES);
        let mut stage = vec![0u8; bytes.min(STAGE_BYTES)];
        for k in 0..pieces {
            // Below `bytes` (piece index < pieces), so neither step can overflow; the
            // caller checked both offsets + bytes against their objects, so the sums
            // below cannot overflow either.
            let index = if backward { pieces - 1 - k } else { k };
            let at = index * STAGE_BYTES;
            let piece = &mut stage[..STAGE_BYTES.min(bytes - at)];
            match op {
                RmaOp::Put => {
                    read_own(inner, place, local_offset + at, piece)?;
                    self.put(inner, remote_offset + at, piece)?;
                }
                RmaOp::Get => {
                    self.get(inner, remote_offset + at, piece)?;
                    write_own(inner, place, local_offset + at, piece)?;
                }
            }
        }
        Ok(())
    }

    /// Whether the route crosses the network between two nodes.
    pub(super) fn crosses_nodes(&self, inner: &Inner) -> bool {
        let t = &inner.topology;
        t.node_of(self.pe as u32) != t.node_of(inner.me)
    }

    /// Whether both ends are boards: the three-stage route (DMA read, network, DMA
    /// write) that the tuning pass measures.
    pub(super) fn board_to_board(&self) -> bool {
        matches!(
            (self.local, self.place),
            (Some(Place::Fpga(_)), Place::Fpga(_))
        )
    }

    /// The hops of a transfer of `bytes` on this route, at `local_offset` of the local
    /// end and `remote_offset` of the target: for a put, from the local end (a host
    /// buffer when `None`) to the target; for a get, the request, then from the target
    /// back to the local end. DMA hops are charged on the span the board's engine
    /// really moves.
    pub(super) fn hops(
        &self,
        inner: &Inner,
        op: RmaOp,
        (local_offset, remote_offset): (usize, usize),
        bytes: usize,
    ) -> Result<Vec<Hop>> {
        let (me, pe) = (inner.segs.me, self.pe);
        let span = |b: u32, off: usize| -> Result<u64> {
            let board = inner.boards.board(b)?;
            board
                .span(off as u64, bytes as u64)
                .map(|s| s.len)
                .map_err(|source| Error::Board { board: b, source })
        };
        let l = bytes as u64;
        let mut hops = Vec::with_capacity(4);
        match op {
            RmaOp::Put => {
                if let Some(Place::Fpga(b)) = self.local {
                    hops.push(Hop::Read {
                        pe: me,
                        board: b,
                        bytes: span(b, local_offset)?,
                    });
                }
                hops.push(Hop::Net {
                    from: me,
                    to: pe,
                    bytes: l,
                });
                if let Place::Fpga(b) = self.place {
                    hops.push(Hop::Write {
                        pe,
                        board: b,
                        bytes: span(b, remote_offset)?,
                    });
                }
            }
            RmaOp::Get => {
                hops.push(Hop::Net {
                    from: me,
                    to: pe,
                    bytes: 0,
                });
                if let Place::Fpga(b) = self.place {
                    hops.push(Hop::Read {
                        pe,
                        board: b,
                        bytes: span(b, remote_offset)?,
                    });
                }
                hops.push(Hop::Net {
                    from: pe,
                    to: me,
                    bytes: l,
                });
                if let Some(Place::Fpga(b)) = self.local {
                    hops.push(Hop::Write {
                        pe: me,
                        board: b,
                        bytes: span(b, local_offset)?,
                    });
                }
            }
        }
        Ok(hops)
    }
}

/// Moves bytes out of this PE's own `place` memory at `offset` directly (no conduit:
/// it is this PE's memory).
fn read_own(inner: &Inner, place: Place, offset: usize, dst: &mut [u8]) -> Result<()> {
    match place {
        Place::Cpu => {
            // SAFETY: in bounds of this PE's heap (checked by the caller against the
            // object); `dst` is `Route::transfer`'s private staging buffer (the only
            // caller), so the ranges cannot overlap.
            unsafe {
                crate::copy::copy_bytes(
                    inner.segs.mine().heap_base().add(offset),
                    dst.as_mut_ptr(),
                    dst.len(),
                )
            };
            Ok(())
        }
        Place::Fpga(board) => board_read(inner, board, offset, dst),
    }
}

/// Moves `src` into this PE's own `place` memory at `offset` directly, complete on
/// return.
fn write_own(inner: &Inner, place: Place, offset: usize, src: &[u8]) -> Result<()> {
    match place {
        Place::Cpu => {
            // SAFETY: as in `read_own`, in the other direction.
            unsafe {
                crate::copy::copy_bytes(
                    src.as_ptr(),
                    inner.segs.mine().heap_base().add(offset),
                    src.len(),
                )
            };
            Ok(())
        }
        Place::Fpga(board) => board_write(inner, board, offset, src),
    }
}

/// A DMA read of this PE's partition of `board` at `offset` into `dst`.
fn board_read(inner: &Inner, board: u32, offset: usize, dst: &mut [u8]) -> Result<()> {
    inner
        .boards
        .board(board)?
        .read(offset as u64, dst)
        .map(|_| ())
        .map_err(|source| Error::Board { board, source })
}

/// A DMA write of `src` into this PE's partition of `board` at `offset`.
fn board_write(inner: &Inner, board: u32, offset: usize, src: &[u8]) -> Result<()> {
    inner
        .boards
        .board(board)?
        .write(offset as u64, src)
        .map(|_| ())
        .map_err(|source| Error::Board { board, source })
}

impl Shmem {
    /// Runs one operation on `route`: `work` moves the bytes, and the operation's
    /// modeled time is charged (at `offsets` of its local end and its target, `bytes`
    /// long) and reached as its semantics say (a put until its source is free, a get
    /// until its data is in place; `deferred`: at the next `quiet`), packetized as the
    /// packet policy decides. `writes`: the operation writes the target (a put, an
    /// atomic), which the virtual clock stamps.
    ///
    /// The order of the steps is the clock's: on the wall clock the clock starts
    /// before the bytes move, so the real copy hides in the modeled time; on the
    /// virtual clock the charge and the target's stamp come first, so that a reader
    /// who sees the bytes also sees their delivery instant (`vtime`).
    #[inline(always)]
    pub(super) fn timed<R>(
        &self,
        route: &Route,
        op: RmaOp,
        offsets: (usize, usize),
        bytes: usize,
        (deferred, writes): (bool, bool),
        work: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let inner = &*self.inner;
        // The native fast path (nothing to charge, stamp or trace) and every other path
        // call `work` once, here, so that it inlines into the operation.
        let before = match inner.untimed.load(Ordering::Relaxed) {
            true => None,
            false => Some(self.before_work(route, op, offsets, bytes, (deferred, writes))),
        };
        let result = work()?;
        if let Some(TimedCall {
            wall_start: Some(start),
            ..
        }) = before
        {
            self.charge(route, op, offsets, bytes, start, deferred);
        }
        Ok(result)
    }

    /// What [`Shmem::timed`] does before the bytes move when the operation is timed:
    /// opens its trace span; on the virtual clock charges it and stamps the target; on
    /// an emulated wall clock notes the start.
    #[inline(never)]
    fn before_work(
        &self,
        route: &Route,
        op: RmaOp,
        offsets: (usize, usize),
        bytes: usize,
        (deferred, writes): (bool, bool),
    ) -> TimedCall<'_> {
        let inner = &*self.inner;
        let span = crate::trace::span(op.call_name(writes, route.local.is_some()), &inner.clock);
        if inner.clock.is_virtual() {
            let call = inner.clock.enter();
            let done = self.charge(route, op, offsets, bytes, inner.clock.now_ns(), deferred);
            if writes {
                inner.stamp_route(route, offsets.1, bytes, done.map(|c| c.delivered));
            }
            return TimedCall {
                _span: span,
                _call: Some(call),
                wall_start: None,
            };
        }
        TimedCall {
            _span: span,
            _call: None,
            wall_start: inner.emulation.as_ref().map(|_| netsim::now_ns()),
        }
    }

    /// Charges an operation on `route` to the emulated cluster from `start` and
    /// reaches its completion (see [`Shmem::timed`]); `None` when nothing is charged.
    fn charge(
        &self,
        route: &Route,
        op: RmaOp,
        (local_offset, remote_offset): (usize, usize),
        bytes: usize,
        start: u64,
        deferred: bool,
    ) -> Option<Completion> {
        let emu = self.inner.emulation.as_ref()?;
        let mut hops_of = |at: usize, len: usize| {
            route
                .hops(
                    &self.inner,
                    op,
                    (local_offset + at, remote_offset + at),
                    len,
                )
                .unwrap_or_default()
        };
        let packet = self.packet_size(op, route, bytes, &mut hops_of);
        let done = emu.transfer_packets(op, bytes, packet, start, deferred, &mut hops_of);
        if let (Some(c), RmaOp::Put) = (done, op) {
            match route.reach {
                // A put into this PE's own board orders what comes after it through
                // the board's own queue (`kernel_start`) and through `fence`, which
                // folds it into the PE's deliveries to itself; not through this PE's
                // later writes to its own CPU memory as such (a work pool's counter
                // would otherwise wait for every DMA it staged).
                Reach::OwnBoard { board } => emu.record_delivery_to_board(board, c.delivered),
                _ => emu.record_delivery_to(route.pe, c.delivered),
            }
        }
        done
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
unsafe fn copy_may_overlap(src: *const u8, dst: *mut u8, len: usize, may_overlap: bool) {
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
