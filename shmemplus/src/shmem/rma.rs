//! One-sided RMA: `put`, `get`, `p`, `g`, `put_from`/`get_into` between any two
//! places, the non-blocking forms, and `fence`/`quiet`.
//!
//! This module owns the argument checks of those calls (PE, object, range) and their
//! order of steps (check, start the clock, move, charge). It must not decide how the
//! bytes travel (`route` does) nor what the model charges (`emulate`).

use super::{Place, Shmem, SymVec};
use crate::emulate::RmaOp;
use crate::error::Result;
use bytemuck::Pod;

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
        let route = inner.route(None, target, dest.place);
        self.timed(
            &route,
            RmaOp::Put,
            (0, offset),
            bytes,
            (deferred, true),
            || route.put(inner, offset, src_bytes),
        )
    }

    /// Copies `src[index..index + dst.len()]` from PE `pe` into `dst`; returns with the
    /// data. `src` may live on the CPU or on a board of `pe`'s node.
    pub fn get<T: Pod>(&self, src: &SymVec<T>, index: usize, dst: &mut [T], pe: u32) -> Result<()> {
        let inner = self.live()?;
        let target = self.check_pe(pe)?;
        let (offset, bytes) = self.locate(src, index, dst.len())?;
        let route = inner.route(None, target, src.place);
        self.timed(
            &route,
            RmaOp::Get,
            (0, offset),
            bytes,
            (false, false),
            || route.get(inner, offset, bytemuck::cast_slice_mut(dst)),
        )
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
    /// place, offset) on their route: a put reads local and writes remote, a get the
    /// other way round. Offsets were checked by the caller.
    pub(super) fn transfer_between(
        &self,
        op: RmaOp,
        (place, offset): (Place, usize),
        (target, remote_place, remote_offset): (usize, Place, usize),
        bytes: usize,
        deferred: bool,
    ) -> Result<()> {
        let route = self.inner.route(Some(place), target, remote_place);
        let writes = op == RmaOp::Put;
        self.timed(
            &route,
            op,
            (offset, remote_offset),
            bytes,
            (deferred, writes),
            || route.transfer(&self.inner, op, (offset, remote_offset), bytes),
        )
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
        self.live()?.fence_puts()
    }

    /// Completes every put this PE issued: after `quiet` they are visible at their
    /// targets.
    pub fn quiet(&self) -> Result<()> {
        self.live()?.quiet()
    }

    /// Starts a put of `src` into `dest[index..]` on PE `pe`; `quiet` completes it
    /// (`shmem_put_nbi`). `src` may be reused at once. On an emulated cluster the
    /// transfer's modeled time is waited for at `quiet`, so non-blocking transfers to
    /// different boards or nodes overlap.
    pub fn put_nbi<T: Pod>(
        &self,
        dest: &SymVec<T>,
        index: usize,
        src: &[T],
        pe: u32,
    ) -> Result<()> {
        self.put_with(dest, index, src, pe, true)
    }

    /// Starts a get of `count` elements of `src[src_index..]` on PE `pe` into this PE's
    /// own `dest[dest_index..]`; read the data only after `quiet` (`shmem_get_nbi`).
    /// The destination is a symmetric object so that it outlives the transfer.
    pub fn get_nbi<T: Pod>(
        &self,
        dest: &SymVec<T>,
        dest_index: usize,
        src: &SymVec<T>,
        src_index: usize,
        count: usize,
        pe: u32,
    ) -> Result<()> {
        let (local, remote, bytes) = self.get_route(dest, dest_index, src, src_index, count, pe)?;
        self.transfer_between(RmaOp::Get, local, remote, bytes, true)
    }
}
