//! The handle's atomic memory operations (`atomic_fetch`, `atomic_set`, `_swap`,
//! `_compare_swap`, `_add`, `_inc`, `_and`, `_or`, `_xor` and their fetching forms).
//!
//! This module owns the argument checks of those calls; the route applies them (an
//! atomic on a mapped CPU heap is one instruction on the shared mapping; on board
//! memory, or with the `am` conduit, the owning PE applies it). It must not define
//! what an operation does to a word (`atomic` does).
//!
//! # Ordering (OpenSHMEM 1.5 sections 9.5 to 9.10)
//!
//! - Atomics are atomic with respect to every other atomic on the same word from any
//!   PE, whatever the place, but not with respect to `put`/`get` on it.
//! - A fetching atomic returns with the old value; a non-fetching one (set, add, inc,
//!   and, or, xor) may complete later and is completed by `quiet`, like a put.

use super::{Place, Shmem, SymVec};
use crate::atomic::{AtomicInt, AtomicOp};
use crate::emulate::RmaOp;
use crate::error::Result;

impl Shmem {
    /// Applies `op` to `obj[index]` on PE `pe` and returns the old value (0 for a
    /// non-fetching operation that went without waiting for a reply).
    fn atomic<T: AtomicInt>(
        &self,
        (obj, index, pe): (&SymVec<T>, usize, u32),
        op: AtomicOp,
        operand: T,
        cond: T,
        fetching: bool,
    ) -> Result<T> {
        let inner = self.live()?;
        let target = self.check_pe(pe)?;
        let (offset, _) = self.locate(obj, index, 1)?;
        let route = inner.route(None, target, obj.place);
        let rma = if fetching { RmaOp::Get } else { RmaOp::Put };
        let old = self.timed(&route, rma, (0, offset), T::WIDTH, (false, true), || {
            route.atomic(
                inner,
                offset,
                T::WIDTH,
                op,
                operand.to_bits(),
                cond.to_bits(),
                fetching,
            )
        })?;
        if fetching && obj.place == Place::Cpu {
            // The value read may come from another PE's write: not before its delivery.
            inner.observe(target, offset);
        }
        Ok(T::from_bits(old))
    }
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn atomic_fetch<T: AtomicInt>(&self, obj: &SymVec<T>, index: usize, pe: u32) -> Result<T> {
        self.atomic(
            (obj, index, pe),
            AtomicOp::Fetch,
            T::zeroed(),
            T::zeroed(),
            true,
        )
    }

    /// Atomically writes `value` into `obj[index]` on PE `pe` (`shmem_atomic_set`;
    /// completed by `quiet`).
    pub fn atomic_set<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<()> {
        self.atomic((obj, index, pe), AtomicOp::Set, value, T::zeroed(), false)
            .map(drop)
    }

    /// Atomically replaces `obj[index]` on PE `pe` with `value`; returns the old value.
    pub fn atomic_swap<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.atomic((obj, index, pe), AtomicOp::Swap, value, T::zeroed(), true)
    }

    /// Atomically replaces `obj[index]` on PE `pe` with `value` if it equals `cond`;
    /// returns the old value either way (`shmem_atomic_compare_swap`).
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let x = shmem.alloc::<u32>(1, shmemplus::Place::Cpu)?;
    /// assert_eq!(shmem.atomic_compare_swap(&x, 0, 0, 7, 0)?, 0); // 0 -> 7
    /// assert_eq!(shmem.atomic_compare_swap(&x, 0, 0, 9, 0)?, 7); // not 0: unchanged
    /// assert_eq!(shmem.atomic_fetch(&x, 0, 0)?, 7);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn atomic_compare_swap<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        cond: T,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.atomic((obj, index, pe), AtomicOp::CompareSwap, value, cond, true)
    }

    /// Atomically adds `value` to `obj[index]` on PE `pe` (wrapping); returns the old
    /// value (`shmem_atomic_fetch_add`).
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let counter = shmem.alloc::<u64>(1, shmemplus::Place::Cpu)?;
    /// shmem.barrier_all()?;
    /// let ticket = shmem.atomic_fetch_add(&counter, 0, 1, 0)?; // unique per PE
    /// assert!(ticket < shmem.n_pes() as u64);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn atomic_fetch_add<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.atomic((obj, index, pe), AtomicOp::Add, value, T::zeroed(), true)
    }

    /// Atomically adds `value` to `obj[index]` on PE `pe` (completed by `quiet`).
    pub fn atomic_add<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<()> {
        self.atomic((obj, index, pe), AtomicOp::Add, value, T::zeroed(), false)
            .map(drop)
    }

    /// Atomically increments `obj[index]` on PE `pe`; returns the old value.
    pub fn atomic_fetch_inc<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        pe: u32,
    ) -> Result<T> {
        self.atomic(
            (obj, index, pe),
            AtomicOp::Add,
            T::from_bits(1),
            T::zeroed(),
            true,
        )
    }

    /// Atomically increments `obj[index]` on PE `pe` (completed by `quiet`).
    pub fn atomic_inc<T: AtomicInt>(&self, obj: &SymVec<T>, index: usize, pe: u32) -> Result<()> {
        self.atomic(
            (obj, index, pe),
            AtomicOp::Add,
            T::from_bits(1),
            T::zeroed(),
            false,
        )
        .map(drop)
    }

    /// Atomic bitwise AND into `obj[index]` on PE `pe`; returns the old value.
    pub fn atomic_fetch_and<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.atomic((obj, index, pe), AtomicOp::And, value, T::zeroed(), true)
    }

    /// Atomic bitwise AND into `obj[index]` on PE `pe` (completed by `quiet`).
    pub fn atomic_and<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<()> {
        self.atomic((obj, index, pe), AtomicOp::And, value, T::zeroed(), false)
            .map(drop)
    }

    /// Atomic bitwise OR into `obj[index]` on PE `pe`; returns the old value.
    pub fn atomic_fetch_or<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.atomic((obj, index, pe), AtomicOp::Or, value, T::zeroed(), true)
    }

    /// Atomic bitwise OR into `obj[index]` on PE `pe` (completed by `quiet`).
    pub fn atomic_or<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<()> {
        self.atomic((obj, index, pe), AtomicOp::Or, value, T::zeroed(), false)
            .map(drop)
    }

    /// Atomic bitwise XOR into `obj[index]` on PE `pe`; returns the old value.
    pub fn atomic_fetch_xor<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.atomic((obj, index, pe), AtomicOp::Xor, value, T::zeroed(), true)
    }

    /// Atomic bitwise XOR into `obj[index]` on PE `pe` (completed by `quiet`).
    pub fn atomic_xor<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        value: T,
        pe: u32,
    ) -> Result<()> {
        self.atomic((obj, index, pe), AtomicOp::Xor, value, T::zeroed(), false)
            .map(drop)
    }
}
