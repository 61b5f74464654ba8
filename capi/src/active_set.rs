//! The legacy active-set collectives of OpenSHMEM (deprecated in 1.5, used by most
//! existing C programs): `shmem_barrier`, `shmem_sync` (the four-argument form),
//! `shmem_broadcast32/64`, `shmem_collect32/64`, `shmem_fcollect32/64`,
//! `shmem_alltoall32/64`, `shmem_alltoalls32/64` and `shmem_TYPE_OP_to_all`.
//!
//! # Why not teams
//!
//! An active set (`PE_start`, `logPE_stride`, `PE_size`) is collective over its members
//! only, while a Rust `Team` can only be made by a split that every PE of the parent
//! (the world) calls. A team per active set cannot be made on demand, so these calls
//! do not use teams. They are built on the Rust API's atomics, waits, puts and gets,
//! with the caller's `pSync` array as the only shared state, which is what the array
//! exists for:
//!
//! - synchronisation: member 0 of the set counts arrivals in its `pSync[0]` (an atomic
//!   add from each other member), waits for `PE_size - 1`, resets the word and
//!   releases each member by setting that member's `pSync[1]`; a released member
//!   resets its own `pSync[1]`. A barrier is a `quiet` and then that; every word is
//!   back at `SHMEM_SYNC_VALUE` (0) when the call returns, and no word is written for
//!   the next call before its owner has reset it, so one `pSync` can serve
//!   consecutive calls of the same set;
//! - data: each call synchronises (every destination is free), moves its data with
//!   puts (or gets, for the reductions) through the Rust API's route, completes them
//!   (`quiet`) and synchronises again. `collect` passes running offsets along the set
//!   in `pSync[2]` (member i tells member i + 1 where its block starts).
//!
//! Limits: O(`PE_size`) steps at member 0 per synchronisation and one put or get per
//! member pair (the Rust team collectives use trees and spread the work); the
//! reductions read every member's source and ignore `pWrk`; two calls that overlap in
//! time must use different `pSync` arrays, as the specification requires. Reductions
//! of `long double` are inline functions in the header (`shmemplus/longdouble.h`):
//! Rust has no 80-bit float.
//!
//! This module owns that protocol. It must not move bytes itself (every transfer is a
//! Rust API call) nor keep state between calls.

use crate::addr::{self, bytes_of};
use crate::coll::object;
use crate::state::{bad_arg, shmem, OrDie};
use bytemuck::Pod;
use rust::{Cmp, ReduceOp, Reducible, Shmem, SymVec};
use std::ffi::{c_long, c_void};

/// Words of `pSync` this protocol uses (`SHMEM_*_SYNC_SIZE` is larger).
const SYNC_WORDS: usize = 3;
/// `pSync` words: arrivals (at member 0), release (at each member), collect offset.
const ARRIVED: usize = 0;
const RELEASED: usize = 1;
const OFFSET: usize = 2;

/// An active set: world PEs `start + stride * i`, `i < size`, this PE being member `me`.
#[derive(Clone, Copy)]
pub(crate) struct ActiveSet {
    start: u32,
    stride: u32,
    size: u32,
    me: u32,
}

impl ActiveSet {
    /// The active set of a call of `routine`; ends the job with a message if it is not
    /// a set of existing PEs or this PE is not in it.
    pub(crate) fn new(routine: &str, start: i32, log_stride: i32, size: i32) -> ActiveSet {
        let n = shmem(routine).n_pes();
        let me = shmem(routine).my_pe();
        let Ok(start) = u32::try_from(start) else {
            bad_arg(routine, "PE_start", &format!("{start} is not a PE number"))
        };
        let stride = match u32::try_from(log_stride) {
            Ok(log) if log < 31 => 1u32 << log,
            _ => bad_arg(
                routine,
                "logPE_stride",
                &format!("{log_stride} is not between 0 and 30"),
            ),
        };
        let size = match u32::try_from(size) {
            Ok(size) if size >= 1 => size,
            _ => bad_arg(routine, "PE_size", &format!("{size} is not at least 1")),
        };
        let last = u64::from(start) + u64::from(stride) * u64::from(size - 1);
        if last >= u64::from(n) {
            bad_arg(
                routine,
                "PE_size",
                &format!("the active set (start {start}, stride {stride}, size {size}) reaches PE {last} of {n}"),
            )
        }
        let rel = me
            .checked_sub(start)
            .filter(|r| r % stride == 0 && r / stride < size);
        let Some(rel) = rel else {
            bad_arg(
                routine,
                "PE_start",
                &format!("PE {me} is not in the active set (start {start}, stride {stride}, size {size})"),
            )
        };
        ActiveSet {
            start,
            stride,
            size,
            me: rel / stride,
        }
    }

    /// The world PE of member `i` (< size: below n_pes, checked by `new`).
    fn pe(&self, i: u32) -> u32 {
        self.start + self.stride * i
    }
}

/// The `pSync` array at `p_sync` as an object of `SYNC_WORDS` words.
fn sync_words(shmem: &Shmem, routine: &str, p_sync: *mut c_long) -> SymVec<u64> {
    let (place, offset) = addr::symmetric(shmem, routine, "pSync", p_sync.cast());
    if offset % align_of::<u64>() != 0 {
        bad_arg(routine, "pSync", "not aligned for a long")
    }
    shmem
        .place_view::<u64>(place, offset, SYNC_WORDS)
        .or_die(routine)
}

/// Returns when every member of `set` has called it (see the module doc). Completes
/// nothing.
fn sync(shmem: &Shmem, routine: &str, set: ActiveSet, ps: &SymVec<u64>) {
    if set.size == 1 {
        return;
    }
    let me = shmem.my_pe();
    if set.me == 0 {
        let others = u64::from(set.size - 1);
        shmem
            .wait_until(ps, ARRIVED, Cmp::Ge, others)
            .or_die(routine);
        // A fetching swap: the reset is done before anyone is released.
        shmem.atomic_swap(ps, ARRIVED, 0, me).or_die(routine);
        for i in 1..set.size {
            shmem.atomic_set(ps, RELEASED, 1, set.pe(i)).or_die(routine);
        }
    } else {
        shmem.atomic_add(ps, ARRIVED, 1, set.pe(0)).or_die(routine);
        shmem.wait_until(ps, RELEASED, Cmp::Ne, 0).or_die(routine);
        shmem.atomic_swap(ps, RELEASED, 0, me).or_die(routine);
    }
}

/// The synchronisation and `pSync` of a data-moving call, for `routine`.
fn open(routine: &str, set: ActiveSet, p_sync: *mut c_long) -> (&'static Shmem, SymVec<u64>) {
    let shmem = shmem(routine);
    let ps = sync_words(shmem, routine, p_sync);
    sync(shmem, routine, set, &ps);
    (shmem, ps)
}

/// Completes this PE's transfers and synchronises the set: after it every member's
/// data is in place.
fn close(shmem: &Shmem, routine: &str, set: ActiveSet, ps: &SymVec<u64>) {
    shmem.quiet().or_die(routine);
    sync(shmem, routine, set, ps);
}

/// `nelems * i`, for `routine` (a block index).
fn block(routine: &str, i: u32, nelems: usize) -> usize {
    bytes_of(routine, i as usize, nelems)
}

/// Copies `nelems` elements of `source` on member `root` into `dest` on every other
/// member (not on the root, as the specification says).
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
#[allow(clippy::too_many_arguments)] // the C routine's arguments
pub(crate) unsafe fn broadcast<T: Pod>(
    routine: &str,
    set: ActiveSet,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    root: i32,
    p_sync: *mut c_long,
) {
    let root = match u32::try_from(root) {
        Ok(r) if r < set.size => r,
        _ => bad_arg(
            routine,
            "PE_root",
            &format!("{root} is not a member of the active set"),
        ),
    };
    let (shmem, ps) = open(routine, set, p_sync);
    if set.me == root {
        let d = object::<T>(shmem, routine, "dest", dest, nelems);
        let s = object::<T>(shmem, routine, "source", source, nelems);
        for i in (0..set.size).filter(|&i| i != root) {
            shmem
                .put_from(&d, 0, &s, 0, nelems, set.pe(i))
                .or_die(routine);
        }
    }
    close(shmem, routine, set, &ps);
}

/// Puts this member's `nelems` elements of `source` at element `at` of every member's
/// `dest`.
fn put_to_all<T: Pod>(
    shmem: &Shmem,
    routine: &str,
    set: ActiveSet,
    (dest, source): (*mut c_void, *const c_void),
    at: usize,
    nelems: usize,
) {
    let end = at
        .checked_add(nelems)
        .unwrap_or_else(|| bad_arg(routine, "nelems", "too large"));
    let d = object::<T>(shmem, routine, "dest", dest, end);
    let s = object::<T>(shmem, routine, "source", source, nelems);
    for step in 0..set.size {
        let i = (set.me + step) % set.size;
        shmem
            .put_from(&d, at, &s, 0, nelems, set.pe(i))
            .or_die(routine);
    }
}

/// Concatenates every member's `nelems` elements (counts may differ) into `dest` on
/// every member, in set order.
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
pub(crate) unsafe fn collect<T: Pod>(
    routine: &str,
    set: ActiveSet,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    p_sync: *mut c_long,
) {
    let (shmem, ps) = open(routine, set, p_sync);
    let at = if set.me == 0 {
        0
    } else {
        // Member me - 1 stores (its offset + its count + 1): never 0.
        shmem.wait_until(&ps, OFFSET, Cmp::Ne, 0).or_die(routine);
        let word = shmem
            .atomic_swap(&ps, OFFSET, 0, shmem.my_pe())
            .or_die(routine);
        usize::try_from(word.saturating_sub(1))
            .unwrap_or_else(|_| bad_arg(routine, "nelems", "too large"))
    };
    if set.me + 1 < set.size {
        let next = at
            .checked_add(nelems)
            .and_then(|end| u64::try_from(end).ok()?.checked_add(1))
            .unwrap_or_else(|| bad_arg(routine, "nelems", "the collected total overflows"));
        shmem
            .atomic_set(&ps, OFFSET, next, set.pe(set.me + 1))
            .or_die(routine);
    }
    put_to_all::<T>(shmem, routine, set, (dest, source), at, nelems);
    close(shmem, routine, set, &ps);
}

/// Concatenates `nelems` elements of every member's `source` into `dest` on every
/// member, in set order.
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
pub(crate) unsafe fn fcollect<T: Pod>(
    routine: &str,
    set: ActiveSet,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    p_sync: *mut c_long,
) {
    let (shmem, ps) = open(routine, set, p_sync);
    let at = block(routine, set.me, nelems);
    put_to_all::<T>(shmem, routine, set, (dest, source), at, nelems);
    close(shmem, routine, set, &ps);
}

/// Sends block j of every member's `source` to member j, into block i of its `dest`
/// for sender i.
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
pub(crate) unsafe fn alltoall<T: Pod>(
    routine: &str,
    set: ActiveSet,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    p_sync: *mut c_long,
) {
    let (shmem, ps) = open(routine, set, p_sync);
    let total = block(routine, set.size, nelems);
    let d = object::<T>(shmem, routine, "dest", dest, total);
    let s = object::<T>(shmem, routine, "source", source, total);
    // Block indices below `total`, which did not overflow.
    let at = nelems * set.me as usize;
    for step in 0..set.size {
        let j = (set.me + step) % set.size;
        let from = nelems * j as usize;
        shmem
            .put_from(&d, at, &s, from, nelems, set.pe(j))
            .or_die(routine);
    }
    close(shmem, routine, set, &ps);
}

/// [`alltoall`] with the elements of each block `sst` apart in `source` and `dst`
/// apart in `dest`.
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
#[allow(clippy::too_many_arguments)] // the C routine's arguments
pub(crate) unsafe fn alltoalls<T: Pod>(
    routine: &str,
    set: ActiveSet,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    p_sync: *mut c_long,
) {
    let n = set.size as usize;
    let dlen = crate::coll::strided_len(routine, "dst", n, nelems, dst);
    let slen = crate::coll::strided_len(routine, "sst", n, nelems, sst);
    let (shmem, ps) = open(routine, set, p_sync);
    let d = object::<T>(shmem, routine, "dest", dest, dlen);
    let s = object::<T>(shmem, routine, "source", source, slen);
    let (dst, sst) = (dst.unsigned_abs(), sst.unsigned_abs());
    let me = set.me as usize;
    for step in 0..n {
        let j = (me + step) % n;
        for k in 0..nelems {
            // Below the lengths `strided_len` checked: j * nelems + k < n * nelems.
            let (from, to) = ((j * nelems + k) * sst, (me * nelems + k) * dst);
            shmem
                .put_from(&d, to, &s, from, 1, set.pe(j as u32))
                .or_die(routine);
        }
    }
    close(shmem, routine, set, &ps);
}

/// Combines `nreduce * factor` elements of `T` of every member's `source` with `op`
/// into `dest` on every member (`factor` 2 for complex numbers, summed by component).
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
#[allow(clippy::too_many_arguments)] // the C routine's arguments
pub(crate) unsafe fn to_all<T: Reducible>(
    routine: &str,
    set: ActiveSet,
    dest: *mut c_void,
    source: *const c_void,
    nreduce: i32,
    factor: usize,
    op: ReduceOp,
    p_sync: *mut c_long,
) {
    let Ok(nreduce) = usize::try_from(nreduce) else {
        bad_arg(routine, "nreduce", &format!("{nreduce} is negative"))
    };
    let n = bytes_of(routine, nreduce, factor);
    let (shmem, ps) = open(routine, set, p_sync);
    let d = object::<T>(shmem, routine, "dest", dest, n);
    let s = object::<T>(shmem, routine, "source", source, n);
    let mut acc = vec![T::zeroed(); n];
    let mut other = vec![T::zeroed(); n];
    shmem.get(&s, 0, &mut acc, shmem.my_pe()).or_die(routine);
    for step in 1..set.size {
        let i = (set.me + step) % set.size;
        shmem.get(&s, 0, &mut other, set.pe(i)).or_die(routine);
        T::combine(op, &mut acc, &other);
    }
    // Every member has read every source before any dest (possibly the same object)
    // is written.
    sync(shmem, routine, set, &ps);
    shmem.put(&d, 0, &acc, shmem.my_pe()).or_die(routine);
    shmem.quiet().or_die(routine);
}

/// Completes this PE's puts, then waits for every member of the active set
/// (OpenSHMEM `shmem_barrier`, deprecated).
///
/// # Safety
/// `p_sync` must be a symmetric address of `SHMEM_BARRIER_SYNC_SIZE` longs.
#[no_mangle]
pub unsafe extern "C" fn shmem_barrier(
    pe_start: i32,
    log_pe_stride: i32,
    pe_size: i32,
    p_sync: *mut c_long,
) {
    const ROUTINE: &str = "shmem_barrier";
    let set = ActiveSet::new(ROUTINE, pe_start, log_pe_stride, pe_size);
    let shmem = shmem(ROUTINE);
    let ps = sync_words(shmem, ROUTINE, p_sync);
    close(shmem, ROUTINE, set, &ps);
}

/// Waits for every member of the active set, completing nothing (OpenSHMEM
/// `shmem_sync` in its deprecated active-set form).
///
/// # Safety
/// `p_sync` must be a symmetric address of `SHMEM_BARRIER_SYNC_SIZE` longs.
#[no_mangle]
pub unsafe extern "C" fn shmem_sync(
    pe_start: i32,
    log_pe_stride: i32,
    pe_size: i32,
    p_sync: *mut c_long,
) {
    const ROUTINE: &str = "shmem_sync";
    let set = ActiveSet::new(ROUTINE, pe_start, log_pe_stride, pe_size);
    let shmem = shmem(ROUTINE);
    let ps = sync_words(shmem, ROUTINE, p_sync);
    sync(shmem, ROUTINE, set, &ps);
}
