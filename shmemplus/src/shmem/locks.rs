//! Distributed locks: `set_lock`, `try_set_lock`, `clear_lock`: a ticket lock in one
//! symmetric `u64`, homed on PE 0 (first come, first served).
//!
//! This module owns the lock word's layout and protocol. It must not implement the
//! atomics it is made of (the route applies them) or how a PE sleeps (`sync`).

use super::route::Route;
use super::{Inner, Place, Shmem, SymVec};
use crate::atomic::AtomicOp;
use crate::emulate::RmaOp;
use crate::error::{Error, Result};
use crate::sync::Poll;

/// Lock word layout: next ticket in the high half, ticket being served in the low half.
const TICKET: u64 = 1 << 32;
const SERVING: u64 = TICKET - 1;
impl Shmem {
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
        let route = inner.route(None, 0, Place::Cpu);
        // One modeled fetch for the poll that saw the lock free; the holder's release
        // is observed after it.
        self.timed(&route, RmaOp::Get, (0, offset), 8, (false, false), || {
            inner.wait_word(&route, offset, |w| w & SERVING == ticket)
        })?;
        inner.observe(0, offset);
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
    /// Waits until `ready(word)` for the u64 at `offset` of the CPU heap `route` leads
    /// to, sleeping on its PE's user signal (which atomics on that heap notify).
    fn wait_word(
        &self,
        route: &Route,
        offset: usize,
        mut ready: impl FnMut(u64) -> bool,
    ) -> Result<()> {
        self.flush_wakes();
        self.policy.wait(
            // The lock word's owner notifies its own user signal; a PE of another host
            // has none here, so this PE polls on its own (in slices).
            &self
                .segs
                .peer(route.pe)
                .unwrap_or(self.segs.mine())
                .control()
                .user_signal,
            || match route.atomic(self, offset, 8, AtomicOp::Fetch, 0, 0, true) {
                Ok(w) if ready(w) => Poll::Ready(Ok(())),
                Ok(_) if self.am.pump_replies() => Poll::Progress,
                Ok(_) => Poll::Idle,
                Err(e) => Poll::Ready(Err(e)),
            },
        )
    }
}
