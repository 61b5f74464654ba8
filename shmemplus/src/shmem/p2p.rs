//! Point-to-point synchronisation: `wait_until`, `test` and their all/any/some
//! forms, `put_signal`, `signal_fetch` and `signal_wait_until`.
//!
//! This module owns reading this PE's own words atomically while it waits and the
//! order of a signalled put (data, `fence`, signal). It must not implement how a PE
//! sleeps (`sync` does) or how the bytes travel (`route`).
//!
//! # Ordering (OpenSHMEM 1.5 sections 9.8 and 9.9)
//!
//! - `put_signal` delivers the data before the signal: a PE that sees the signal (with
//!   `signal_wait_until`, `wait_until` or `signal_fetch`) sees the data.
//! - `wait_until` returns once the word satisfies the comparison; stores into the word
//!   by other PEs are seen without polling a core to death: the waiter spins briefly,
//!   yields, then sleeps on a futex that writers wake (puts wake lazily, at the
//!   writer's next `quiet`, `fence`, barrier or wait; atomics and signals at once; a
//!   sleeper also looks again every 50 ms).

mod vector;

use super::{Place, Shmem, SymVec};
use crate::atomic::{apply_at, AtomicInt, AtomicOp, Cmp, SignalOp};
use crate::error::{Error, Result};
use crate::sync::Poll;
use bytemuck::Pod;

/// The elements of `idx` whose word satisfies `<cmp> value(i)`.
fn hits<T: AtomicInt>(
    idx: &[usize],
    words: &[T],
    cmp: Cmp,
    value: &impl Fn(usize) -> T,
) -> Vec<usize> {
    idx.iter()
        .copied()
        .filter(|&i| cmp.holds(words[i], value(i)))
        .collect()
}

impl Shmem {
    /// Reads this PE's own `obj` word by word (atomically, so a concurrent atomic or
    /// signal is never seen torn).
    fn read_words<T: AtomicInt>(&self, obj: &SymVec<T>, out: &mut Vec<T>) -> Result<()> {
        self.read_some_words(obj, 0, obj.len(), out)
    }

    /// Reads `count` words of this PE's own `obj` from `first` (as [`Self::read_words`]):
    /// a wait on one word polls that word only, whatever the object's size.
    fn read_some_words<T: AtomicInt>(
        &self,
        obj: &SymVec<T>,
        first: usize,
        count: usize,
        out: &mut Vec<T>,
    ) -> Result<()> {
        let inner = self.live()?;
        let (offset, bytes) = self.locate(obj, first, count)?;
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
                out.resize(count, T::zeroed());
                let _serial = inner.boards.atomic_lock();
                board
                    .read(offset as u64, bytemuck::cast_slice_mut(out))
                    .map_err(|source| Error::Board { board: b, source })?;
            }
        }
        Ok(())
    }

    /// On the virtual clock, this PE has seen `obj[i]` for each `i` of `idx`: its clock
    /// reaches the delivery of the writes that made them (`vtime`).
    fn saw<T: AtomicInt>(&self, obj: &SymVec<T>, idx: &[usize]) -> Result<()> {
        let inner = self.live()?;
        if obj.place == Place::Cpu && inner.clock.is_virtual() {
            // The wait's end in virtual time: the delivery of the writes it saw.
            let _span = crate::trace::span("observe", &inner.clock);
            let (offset, _) = self.locate(obj, 0, obj.len())?;
            for &i in idx {
                // `i` indexes `obj`, whose bytes `locate` checked: no overflow.
                inner.observe(inner.segs.me, offset + i * T::WIDTH);
            }
        }
        Ok(())
    }

    /// Waits until `check(words)` gives an answer, reading this PE's own `obj`.
    fn wait_words<T: AtomicInt, R>(
        &self,
        obj: &SymVec<T>,
        check: impl FnMut(&[T]) -> Option<R>,
    ) -> Result<R> {
        self.wait_some_words(obj, 0, obj.len(), check)
    }

    /// Waits until `check(words)` gives an answer, reading `count` words of this PE's
    /// own `obj` from `first` (`words[0]` is `obj[first]`).
    fn wait_some_words<T: AtomicInt, R>(
        &self,
        obj: &SymVec<T>,
        first: usize,
        count: usize,
        mut check: impl FnMut(&[T]) -> Option<R>,
    ) -> Result<R> {
        let inner = self.live()?;
        let _call = inner.clock.enter();
        let _span = crate::trace::span("wait", &inner.clock);
        let mut words = Vec::with_capacity(count);
        inner.flush_wakes();
        inner
            .policy
            .wait(&inner.segs.mine().control().user_signal, || {
                match self.read_some_words(obj, first, count, &mut words) {
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
        self.wait_some_words(ivar, index, 1, |w| cmp.holds(w[0], value).then_some(()))?;
        self.saw(ivar, &[index])
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
        let mut words = Vec::with_capacity(1);
        self.read_some_words(ivar, index, 1, &mut words)?;
        let holds = cmp.holds(words[0], value);
        if holds {
            self.saw(ivar, &[index])?;
        }
        Ok(holds)
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
        self.wait_all_of(ivars, &idx, cmp, |_| value)
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
        self.wait_any_of(ivars, &idx, cmp, |_| value)
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
        self.wait_some_of(ivars, &idx, cmp, |_| value)
    }

    /// Whether every included element satisfies the comparison now (`shmem_test_all`).
    pub fn test_all<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<bool> {
        let idx = Self::included(ivars.len(), skip)?;
        Ok(self.hits_now(ivars, &idx, cmp, |_| value)?.len() == idx.len())
    }

    /// An included element that satisfies the comparison now, if any (`shmem_test_any`).
    pub fn test_any<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        let idx = Self::included(ivars.len(), skip)?;
        Ok(self.hits_now(ivars, &idx, cmp, |_| value)?.first().copied())
    }

    /// The included elements that satisfy the comparison now (`shmem_test_some`).
    pub fn test_some<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        let idx = Self::included(ivars.len(), skip)?;
        self.hits_now(ivars, &idx, cmp, |_| value)
    }

    // The bodies the scalar forms above and the vector forms (`p2p/vector.rs`) share:
    // element `i` of `idx` is compared with `value(i)` (one value for all, or its own).
    // The predicates passed to `wait_words` only read the words they are given.

    /// Waits until every element of `idx` satisfies its comparison.
    pub(super) fn wait_all_of<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        idx: &[usize],
        cmp: Cmp,
        value: impl Fn(usize) -> T,
    ) -> Result<()> {
        self.wait_words(ivars, |w| {
            idx.iter().all(|&i| cmp.holds(w[i], value(i))).then_some(())
        })?;
        self.saw(ivars, idx)
    }

    /// Waits until some element of `idx` satisfies its comparison and returns it;
    /// `None` at once when `idx` is empty.
    pub(super) fn wait_any_of<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        idx: &[usize],
        cmp: Cmp,
        value: impl Fn(usize) -> T,
    ) -> Result<Option<usize>> {
        if idx.is_empty() {
            return Ok(None);
        }
        let found = self.wait_words(ivars, |w| {
            idx.iter()
                .copied()
                .find(|&i| cmp.holds(w[i], value(i)))
                .map(Some)
        })?;
        self.saw(ivars, found.as_slice())?;
        Ok(found)
    }

    /// Waits until some element of `idx` satisfies its comparison and returns all
    /// that do; empty at once when `idx` is empty.
    pub(super) fn wait_some_of<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        idx: &[usize],
        cmp: Cmp,
        value: impl Fn(usize) -> T,
    ) -> Result<Vec<usize>> {
        if idx.is_empty() {
            return Ok(Vec::new());
        }
        let found = self.wait_words(ivars, |w| {
            let found = hits(idx, w, cmp, &value);
            (!found.is_empty()).then_some(found)
        })?;
        self.saw(ivars, &found)?;
        Ok(found)
    }

    /// The elements of `idx` that satisfy their comparison now.
    pub(super) fn hits_now<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        idx: &[usize],
        cmp: Cmp,
        value: impl Fn(usize) -> T,
    ) -> Result<Vec<usize>> {
        let mut w = Vec::new();
        self.read_words(ivars, &mut w)?;
        let found = hits(idx, &w, cmp, &value);
        self.saw(ivars, &found)?;
        Ok(found)
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
        let signal =
            self.wait_some_words(sig, index, 1, |w| cmp.holds(w[0], value).then_some(w[0]))?;
        self.saw(sig, &[index])?;
        Ok(signal)
    }
}
