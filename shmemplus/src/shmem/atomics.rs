//! The handle's atomic memory operations, point-to-point synchronisation (`wait_until`,
//! `test` and their all/any/some forms, `put_signal`, `signal_wait_until`), the
//! non-blocking RMA calls and distributed locks.
//!
//! This module owns the routing and argument checks of those calls: an atomic on a
//! same-host CPU heap is one instruction on the shared mapping; on board memory (or
//! with the `am` conduit) the owning PE applies it. It must not define what an
//! operation does to a word (`atomic` does) or how a PE sleeps (`sync` does).
//!
//! # Ordering (OpenSHMEM 1.5 sections 9.5 to 9.10)
//!
//! - Atomics are atomic with respect to every other atomic on the same word from any
//!   PE, whatever the place, but not with respect to `put`/`get` on it.
//! - A fetching atomic returns with the old value; a non-fetching one (set, add, inc,
//!   and, or, xor) may complete later and is completed by `quiet`, like a put.
//! - `put_signal` delivers the data before the signal: a PE that sees the signal (with
//!   `signal_wait_until`, `wait_until` or `signal_fetch`) sees the data.
//! - `put_nbi` and `get_nbi` are completed by `quiet` (a `get_nbi`'s data may be read
//!   only after it). Today both move their bytes before returning, but on an emulated
//!   cluster their modeled time runs on until `quiet`, so several overlap on the
//!   network and the boards' DMA channels; programs must not rely on the early bytes.
//! - `wait_until` returns once the word satisfies the comparison; stores into the word
//!   by other PEs are seen without polling a core to death: the waiter spins briefly,
//!   yields, then sleeps on a futex that writers wake (puts wake lazily, at the
//!   writer's next `quiet`, `fence`, barrier or wait; atomics and signals at once; a
//!   sleeper also looks again every 50 ms).

use super::{Inner, Shmem, SymVec};
use crate::am::H_ATOMIC;
use crate::atomic::{apply_at, apply_on_board, AtomicInt, AtomicOp, Cmp, SignalOp};
use crate::config::Conduit;
use crate::emulate::RmaOp;
use crate::error::{Error, Result};
use crate::sync::{notify, Poll};
use crate::Place;
use bytemuck::Pod;

/// Lock word layout: next ticket in the high half, ticket being served in the low half.
const TICKET: u64 = 1 << 32;
const SERVING: u64 = TICKET - 1;

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
        let start = inner.emulation.as_ref().map(|_| netsim::now_ns());
        let old = inner.apply_atomic(
            target,
            obj.place,
            offset,
            T::WIDTH,
            op,
            operand.to_bits(),
            cond.to_bits(),
            fetching,
        )?;
        if let Some(start) = start {
            let rma = if fetching { RmaOp::Get } else { RmaOp::Put };
            self.emulate(
                rma,
                None,
                (target, obj.place, offset),
                T::WIDTH,
                start,
                false,
            );
        }
        Ok(T::from_bits(old))
    }

    /// Atomically reads `obj[index]` on PE `pe` (`shmem_atomic_fetch`).
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let x = shmem.alloc::<i64>(1, shmemplus::Place::Cpu)?;
    /// shmem.atomic_set(&x, 0, -5, 0)?;
    /// shmem.quiet()?;
    /// assert_eq!(shmem.atomic_fetch(&x, 0, 0)?, -5);
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

    // ------------------------------------------------------------ point-to-point

    /// Reads this PE's own `obj` word by word (atomically, so a concurrent atomic or
    /// signal is never seen torn).
    fn read_words<T: AtomicInt>(&self, obj: &SymVec<T>, out: &mut Vec<T>) -> Result<()> {
        let inner = self.live()?;
        let (offset, bytes) = self.locate(obj, 0, obj.len())?;
        out.clear();
        match obj.place {
            Place::Cpu => {
                let base = inner.segs.mine().heap_base();
                // Word starts by stepping (no multiplication): every `at` is below
                // offset + bytes, which `locate` checked.
                for at in (offset..offset + bytes).step_by(T::WIDTH.max(1)) {
                    // SAFETY: the word is inside this PE's heap (checked by `locate`)
                    // and aligned (objects are 64-byte aligned, elements T-aligned).
                    let bits = unsafe { apply_at(base.add(at), T::WIDTH, AtomicOp::Fetch, 0, 0) };
                    out.push(T::from_bits(bits));
                }
            }
            Place::Fpga(b) => {
                let board = inner.boards.board(b)?;
                out.resize(obj.len(), T::zeroed());
                let _serial = inner.boards.atomic_lock();
                board
                    .read(offset as u64, bytemuck::cast_slice_mut(out))
                    .map_err(|source| Error::Board { board: b, source })?;
            }
        }
        Ok(())
    }

    /// Waits until `check(words)` gives an answer, reading this PE's own `obj`.
    fn wait_words<T: AtomicInt, R>(
        &self,
        obj: &SymVec<T>,
        mut check: impl FnMut(&[T]) -> Option<R>,
    ) -> Result<R> {
        let inner = self.live()?;
        let mut words = Vec::with_capacity(obj.len());
        inner.flush_wakes();
        inner
            .policy
            .wait(&inner.segs.mine().control().user_signal, || {
                match self.read_words(obj, &mut words) {
                    Ok(()) => {
                        if let Some(answer) = check(&words) {
                            return Poll::Ready(Ok(answer));
                        }
                    }
                    Err(e) => return Poll::Ready(Err(e)),
                }
                inner.flush_wakes();
                if inner.am.pump_replies() {
                    Poll::Progress
                } else {
                    Poll::Idle
                }
            })
    }

    /// Waits until this PE's own `ivar[index] <cmp> value` holds
    /// (`shmem_wait_until`). Another PE's put, atomic or signal makes it true.
    ///
    /// ```
    /// use shmemplus::{Cmp, Place};
    /// let shmem = shmemplus::init()?;
    /// let flag = shmem.alloc::<u64>(1, Place::Cpu)?;
    /// shmem.atomic_set(&flag, 0, 3, shmem.my_pe())?;
    /// shmem.wait_until(&flag, 0, Cmp::Ge, 3)?;
    /// assert!(shmem.test(&flag, 0, Cmp::Eq, 3)?);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn wait_until<T: AtomicInt>(
        &self,
        ivar: &SymVec<T>,
        index: usize,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        self.locate(ivar, index, 1)?;
        self.wait_words(ivar, |w| cmp.holds(w[index], value).then_some(()))
    }

    /// Whether this PE's own `ivar[index] <cmp> value` holds now (`shmem_test`).
    pub fn test<T: AtomicInt>(
        &self,
        ivar: &SymVec<T>,
        index: usize,
        cmp: Cmp,
        value: T,
    ) -> Result<bool> {
        self.locate(ivar, index, 1)?;
        let mut words = Vec::new();
        self.read_words(ivar, &mut words)?;
        Ok(cmp.holds(words[index], value))
    }

    /// The indices of `ivars` taking part: those whose `skip` entry is false (all when
    /// `skip` is `None`; OpenSHMEM's `status` array, where non-zero excludes).
    fn included(len: usize, skip: Option<&[bool]>) -> Result<Vec<usize>> {
        match skip {
            None => Ok((0..len).collect()),
            Some(s) if s.len() == len => Ok((0..len).filter(|&i| !s[i]).collect()),
            Some(s) => Err(Error::InvalidArgument(format!(
                "skip mask has {} entries for {len} variables",
                s.len()
            ))),
        }
    }

    /// Waits until every included element of this PE's own `ivars` satisfies
    /// `<cmp> value` (`shmem_wait_until_all`; `skip[i] == true` leaves element `i`
    /// out).
    pub fn wait_until_all<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        let idx = Self::included(ivars.len(), skip)?;
        self.wait_words(ivars, |w| {
            idx.iter().all(|&i| cmp.holds(w[i], value)).then_some(())
        })
    }

    /// Waits until some included element satisfies the comparison and returns its
    /// index, or `None` at once if every element is skipped (`shmem_wait_until_any`).
    pub fn wait_until_any<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        let idx = Self::included(ivars.len(), skip)?;
        if idx.is_empty() {
            return Ok(None);
        }
        self.wait_words(ivars, |w| {
            idx.iter()
                .copied()
                .find(|&i| cmp.holds(w[i], value))
                .map(Some)
        })
    }

    /// Waits until at least one included element satisfies the comparison and returns
    /// the indices of all that do (`shmem_wait_until_some`); empty at once if every
    /// element is skipped.
    pub fn wait_until_some<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        let idx = Self::included(ivars.len(), skip)?;
        if idx.is_empty() {
            return Ok(Vec::new());
        }
        self.wait_words(ivars, |w| {
            let hits: Vec<usize> = idx
                .iter()
                .copied()
                .filter(|&i| cmp.holds(w[i], value))
                .collect();
            (!hits.is_empty()).then_some(hits)
        })
    }

    /// The included indices of `ivars` and which of them satisfy the comparison now.
    fn test_now<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<(usize, Vec<usize>)> {
        let idx = Self::included(ivars.len(), skip)?;
        let mut w = Vec::new();
        self.read_words(ivars, &mut w)?;
        let hits = idx
            .iter()
            .copied()
            .filter(|&i| cmp.holds(w[i], value))
            .collect();
        Ok((idx.len(), hits))
    }

    /// Whether every included element satisfies the comparison now (`shmem_test_all`).
    pub fn test_all<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<bool> {
        let (included, hits) = self.test_now(ivars, skip, cmp, value)?;
        Ok(hits.len() == included)
    }

    /// An included element that satisfies the comparison now, if any (`shmem_test_any`).
    pub fn test_any<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        Ok(self.test_now(ivars, skip, cmp, value)?.1.first().copied())
    }

    /// The included elements that satisfy the comparison now (`shmem_test_some`).
    pub fn test_some<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        Ok(self.test_now(ivars, skip, cmp, value)?.1)
    }

    // ------------------------------------------------------------ signals

    /// Puts `src` into `dest[index..]` on PE `pe`, then updates `sig[sig_index]` there
    /// with `signal` (set or add): the data is delivered before the signal
    /// (`shmem_put_signal`). Returns when `src` may be reused.
    ///
    /// ```
    /// use shmemplus::{Cmp, Place, SignalOp};
    /// let shmem = shmemplus::init()?;
    /// let (data, sig) = (shmem.alloc::<u8>(4, Place::Cpu)?, shmem.alloc::<u64>(1, Place::Cpu)?);
    /// let me = shmem.my_pe();
    /// shmem.put_signal(&data, 0, b"ping", &sig, 0, 1, SignalOp::Add, me)?;
    /// assert_eq!(shmem.signal_wait_until(&sig, 0, Cmp::Eq, 1)?, 1);
    /// assert_eq!(shmem.local_to_vec(&data)?, b"ping");
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal<T: Pod>(
        &self,
        dest: &SymVec<T>,
        index: usize,
        src: &[T],
        sig: &SymVec<u64>,
        sig_index: usize,
        signal: u64,
        op: SignalOp,
        pe: u32,
    ) -> Result<()> {
        // Check everything before moving anything.
        self.live()?;
        self.check_pe(pe)?;
        self.locate(dest, index, src.len())?;
        self.locate(sig, sig_index, 1)?;
        self.put(dest, index, src, pe)?;
        self.fence()?;
        match op {
            SignalOp::Set => self.atomic_set(sig, sig_index, signal, pe),
            SignalOp::Add => self.atomic_add(sig, sig_index, signal, pe),
        }
    }

    /// `put_signal`, completed by `quiet` (`shmem_put_signal_nbi`).
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal_nbi<T: Pod>(
        &self,
        dest: &SymVec<T>,
        index: usize,
        src: &[T],
        sig: &SymVec<u64>,
        sig_index: usize,
        signal: u64,
        op: SignalOp,
        pe: u32,
    ) -> Result<()> {
        self.put_signal(dest, index, src, sig, sig_index, signal, op, pe)
    }

    /// This PE's own `sig[index]`, read atomically (`shmem_signal_fetch`).
    pub fn signal_fetch(&self, sig: &SymVec<u64>, index: usize) -> Result<u64> {
        self.atomic_fetch(sig, index, self.my_pe())
    }

    /// Waits until this PE's own `sig[index] <cmp> value` and returns the signal
    /// (`shmem_signal_wait_until`).
    pub fn signal_wait_until(
        &self,
        sig: &SymVec<u64>,
        index: usize,
        cmp: Cmp,
        value: u64,
    ) -> Result<u64> {
        self.locate(sig, index, 1)?;
        self.wait_words(sig, |w| cmp.holds(w[index], value).then_some(w[index]))
    }

    // ------------------------------------------------------------ non-blocking RMA

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

    // ------------------------------------------------------------ locks

    fn check_lock(&self, lock: &SymVec<u64>) -> Result<usize> {
        if lock.place != Place::Cpu {
            return Err(Error::InvalidArgument(format!(
                "a lock must be a symmetric u64 on the CPU, not on {}",
                lock.place
            )));
        }
        Ok(self.locate(lock, 0, 1)?.0)
    }

    /// Acquires the distributed lock `lock[0]` (a symmetric `u64`, zero when
    /// allocated), waiting as long as another PE holds it (`shmem_set_lock`). The lock
    /// is a ticket lock homed on PE 0: first come, first served.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let lock = shmem.alloc::<u64>(1, shmemplus::Place::Cpu)?;
    /// shmem.set_lock(&lock)?;
    /// assert!(!shmem.try_set_lock(&lock)?); // held (by us)
    /// shmem.clear_lock(&lock)?;
    /// assert!(shmem.try_set_lock(&lock)?);
    /// shmem.clear_lock(&lock)?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn set_lock(&self, lock: &SymVec<u64>) -> Result<()> {
        let offset = self.check_lock(lock)?;
        let ticket = self.atomic_fetch_add(lock, 0, TICKET, 0)? >> 32;
        let inner = self.live()?;
        let start = inner.emulation.as_ref().map(|_| netsim::now_ns());
        inner.wait_word(0, offset, |w| w & SERVING == ticket)?;
        if let Some(start) = start {
            // One modeled fetch for the poll that saw the lock free.
            self.emulate(RmaOp::Get, None, (0, Place::Cpu, offset), 8, start, false);
        }
        Ok(())
    }

    /// Acquires `lock` if it is free and returns `true`; returns `false` at once if it
    /// is held. (OpenSHMEM's `shmem_test_lock` returns 0 on success: the sense here is
    /// the Rust one.)
    pub fn try_set_lock(&self, lock: &SymVec<u64>) -> Result<bool> {
        self.check_lock(lock)?;
        let word = self.atomic_fetch(lock, 0, 0)?;
        if word >> 32 != word & SERVING {
            return Ok(false);
        }
        let next = word.wrapping_add(TICKET);
        Ok(self.atomic_compare_swap(lock, 0, word, next, 0)? == word)
    }

    /// Releases `lock`, after completing this PE's puts so that the next holder sees
    /// them (`shmem_clear_lock`).
    pub fn clear_lock(&self, lock: &SymVec<u64>) -> Result<()> {
        self.check_lock(lock)?;
        self.quiet()?;
        let mut word = self.atomic_fetch(lock, 0, 0)?;
        loop {
            // Bump the served ticket without carrying into the next-ticket half.
            let next = (word & !SERVING) | (word.wrapping_add(1) & SERVING);
            let seen = self.atomic_compare_swap(lock, 0, word, next, 0)?;
            if seen == word {
                return Ok(());
            }
            word = seen;
        }
    }
}

impl Inner {
    /// Applies an atomic to the word at `offset` of `place` memory of PE `target` and
    /// returns the old word (0 for a non-fetching one sent without waiting).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply_atomic(
        &self,
        target: usize,
        place: Place,
        offset: usize,
        width: usize,
        op: AtomicOp,
        operand: u64,
        cond: u64,
        fetching: bool,
    ) -> Result<u64> {
        let me = self.segs.me;
        match (place, self.config.conduit) {
            (Place::Cpu, Conduit::Shm) => {
                // SAFETY: `offset` was checked against the object (in the target's
                // heap, which stays mapped while `self` lives) and is aligned to the
                // element type, whose size is `width`.
                let old = unsafe {
                    apply_at(
                        self.segs.segs[target].heap_base().add(offset),
                        width,
                        op,
                        operand,
                        cond,
                    )
                };
                if op != AtomicOp::Fetch {
                    notify(&self.segs.segs[target].control().user_signal);
                }
                Ok(old)
            }
            (Place::Fpga(b), _) if target == me => {
                let old = apply_on_board(&self.boards, b, offset as u64, width, op, operand, cond)?;
                if op != AtomicOp::Fetch {
                    notify(&self.segs.mine().control().user_signal);
                }
                Ok(old)
            }
            (place, _) => {
                if let Place::Fpga(b) = place {
                    self.boards.board(b)?;
                }
                let code = place.to_wire();
                let args = crate::atomic::am_args(offset, code, op, width, operand);
                let payload = cond.to_le_bytes();
                if fetching {
                    self.am.call_word(target, H_ATOMIC, args, &payload)
                } else {
                    self.am.post(target, H_ATOMIC, args, &payload);
                    Ok(0)
                }
            }
        }
    }

    /// Waits until `ready(word)` for the u64 at `offset` of PE `pe`'s CPU heap,
    /// sleeping on `pe`'s user signal (which atomics on that heap notify).
    fn wait_word(
        &self,
        pe: usize,
        offset: usize,
        mut ready: impl FnMut(u64) -> bool,
    ) -> Result<()> {
        self.flush_wakes();
        self.policy
            .wait(&self.segs.segs[pe].control().user_signal, || {
                match self.apply_atomic(pe, Place::Cpu, offset, 8, AtomicOp::Fetch, 0, 0, true) {
                    Ok(w) if ready(w) => Poll::Ready(Ok(())),
                    Ok(_) if self.am.pump_replies() => Poll::Progress,
                    Ok(_) => Poll::Idle,
                    Err(e) => Poll::Ready(Err(e)),
                }
            })
    }
}
