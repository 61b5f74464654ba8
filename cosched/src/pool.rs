//! The loop's iterations as a work pool in the global address space: one symmetric
//! `u64` counter, kept on PE 0, that says how many iterations have been handed out.
//! A worker takes a chunk with one remote `atomic_fetch_add` of its size; there is no
//! central server and no lock.
//!
//! Why it is exact: each take adds its size `c` to the counter atomically (on PE 0's
//! memory, whoever calls), so the values before the adds are distinct and the ranges
//! `[old, old + c)` are disjoint and, in order of `old`, contiguous from 0. A take
//! whose `old` is `n` or more gets nothing and its worker stops; a take that straddles
//! `n` is cut at `n`. So every iteration below `n` is handed out exactly once. The
//! counter never overflows: every worker stops at its first empty take, and a take is
//! at most `n`, so the counter stays below `n * (workers + 1)`, which [`WorkPool::new`]
//! checks fits in a `u64`.
//!
//! Under the virtual clock the PEs take in the order of their virtual clocks, not of
//! real time (`Shmem::wait_turn`): otherwise a PE whose modeled work costs little real
//! time would take everything, and the others' clocks would jump to its stamps on the
//! counter.
//!
//! A pool per PE ([`WorkPool::per_pe`]) is taken by that PE's own devices only (its
//! CPU and the threads that drive its boards, all in its process): its counter is a
//! process-local atomic, with no allocation, no barrier and no turns, and the argument
//! above holds for each PE's counter alone (`fetch_add` is one atomic read-modify-write
//! on it, whatever thread calls).
//!
//! This module owns the counter and the take. It must not size chunks (the runner
//! does) nor run iterations.

use crate::{Error, Result};
use shmemplus::{Place, Shmem, SymVec};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// The PE whose memory holds a job-wide pool's counter.
const HOME: u32 = 0;
/// The counter's object: one 4 KiB block (its first word is the counter).
const COUNTER_BLOCK_WORDS: usize = 4096 / 8;

/// A loop of `n` iterations shared by every PE of the job (see the module doc), or,
/// [`WorkPool::per_pe`], one loop per PE shared by that PE's own devices.
pub struct WorkPool {
    counter: Counter,
    n: u64,
}

/// Where a pool's counter lives.
enum Counter {
    /// A job-wide pool: a symmetric word on PE `home`, taken by remote atomics, in
    /// virtual-time order under the virtual clock.
    Symmetric { word: SymVec<u64>, home: u32 },
    /// A PE's own pool: taken by its own threads only (from its one thread in its own
    /// clock's order, or from its board threads on the wall clock).
    Local(AtomicU64),
}

/// A chunk taken from the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The iterations to run (never empty).
    pub range: Range<u64>,
    /// Iterations still in the pool right after this take (a hint: others take too).
    pub left: u64,
}

impl WorkPool {
    /// A pool of `n` iterations for `workers` workers in all (collective: every PE
    /// calls it with the same arguments, and it ends with a barrier). `n` must be at
    /// least 1 and `n * (workers + 1)` must fit in a `u64`.
    pub fn new(shmem: &Shmem, n: u64, workers: u64) -> Result<WorkPool> {
        check_length(n, workers)?;
        // A 4 KiB block of its own: under the virtual clock a large write stamps the
        // 4 KiB blocks it covers, and a take (a fetching atomic) observes its word's
        // block stamp. Next to the application's data (CBIR's table of results on PE
        // 0), every take after a large write there took that write's delivery time.
        let word = shmem.alloc_aligned::<u64>(COUNTER_BLOCK_WORDS, 4096, Place::Cpu)?;
        if shmem.my_pe() == HOME {
            shmem.atomic_set(&word, 0, 0u64, HOME)?;
        }
        shmem.join_turns()?;
        // Every PE's counter set and every PE in the turns before anyone takes.
        shmem.barrier_all()?;
        Ok(WorkPool {
            counter: Counter::Symmetric { word, home: HOME },
            n,
        })
    }

    /// A pool of `n` iterations of this PE's own, for `workers` workers of this PE
    /// (not collective): its counter is a local atomic (see the module doc), since no
    /// other PE ever takes from it. The same limits as [`WorkPool::new`].
    ///
    /// ```
    /// use shmemplus_cosched::WorkPool;
    /// let pool = WorkPool::per_pe(10, 2)?;
    /// assert_eq!(pool.take_local(4).map(|c| c.range), Some(0..4));
    /// assert_eq!(pool.take_local(8).map(|c| (c.range, c.left)), Some((4..10, 0)));
    /// assert_eq!(pool.take_local(1), None);
    /// # Ok::<(), shmemplus_cosched::Error>(())
    /// ```
    pub fn per_pe(n: u64, workers: u64) -> Result<WorkPool> {
        check_length(n, workers)?;
        Ok(WorkPool {
            counter: Counter::Local(AtomicU64::new(0)),
            n,
        })
    }

    /// The loop's length.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Always false: a pool has at least one iteration.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Takes up to `want` iterations (at least 1, at most `n`); `None` once the pool is
    /// empty. A worker must stop taking after the first `None` (the overflow argument
    /// of the module doc counts on it).
    pub fn take(&self, shmem: &Shmem, want: u64) -> Result<Option<Chunk>> {
        // Under the virtual clock, takes from a job-wide pool happen in virtual-time
        // order.
        if self.ordered() {
            shmem.wait_turn()?;
        }
        self.take_unordered(shmem, want)
    }

    /// Whether takes wait for their turn in virtual-time order (job-wide pools).
    fn ordered(&self) -> bool {
        matches!(self.counter, Counter::Symmetric { .. })
    }

    /// How many iterations have been handed out so far.
    fn handed_out(&self, shmem: &Shmem) -> Result<u64> {
        Ok(match &self.counter {
            Counter::Symmetric { word, home } => shmem.atomic_fetch(word, 0, *home)?,
            Counter::Local(count) => count.load(Ordering::Acquire),
        })
    }

    /// Takes up to `want` iterations from a PE's own pool ([`WorkPool::per_pe`]); `None`
    /// once it is empty, or if this is a job-wide pool (take those with
    /// [`WorkPool::take`]).
    pub fn take_local(&self, want: u64) -> Option<Chunk> {
        match &self.counter {
            Counter::Local(count) => self.cut(
                count.fetch_add(want.clamp(1, self.n), Ordering::AcqRel),
                want,
            ),
            Counter::Symmetric { .. } => None,
        }
    }

    /// The chunk of a take that found `old` iterations handed out and added `want`
    /// (clamped as the take clamps it).
    fn cut(&self, old: u64, want: u64) -> Option<Chunk> {
        if old >= self.n {
            return None;
        }
        let end = old.saturating_add(want.clamp(1, self.n)).min(self.n);
        Some(Chunk {
            range: old..end,
            left: self.n - end,
        })
    }

    /// [`WorkPool::take`] with the size decided in its turn: `want(handed_out)` is
    /// given how many iterations had been handed out right before (read from the
    /// counter) and returns the size to take, or `None` to take nothing. `Ok(None)`
    /// if the pool is empty or `want` took nothing.
    pub fn take_sized(
        &self,
        shmem: &Shmem,
        want: impl FnOnce(u64) -> Option<u64>,
    ) -> Result<Option<Chunk>> {
        if self.ordered() {
            shmem.wait_turn()?;
        }
        let handed_out = self.handed_out(shmem)?;
        if handed_out >= self.n {
            return Ok(None);
        }
        match want(handed_out) {
            Some(size) => self.take_unordered(shmem, size),
            None => Ok(None),
        }
    }

    /// [`WorkPool::take`] in real-time order, for a PE that has left the turns (see
    /// [`WorkPool::stop_turns`]).
    pub fn take_unordered(&self, shmem: &Shmem, want: u64) -> Result<Option<Chunk>> {
        match &self.counter {
            Counter::Symmetric { word, home } => {
                let old = shmem.atomic_fetch_add(word, 0, want.clamp(1, self.n), *home)?;
                Ok(self.cut(old, want))
            }
            Counter::Local(_) => Ok(self.take_local(want)),
        }
    }

    /// This PE takes no more turns (its ordered takers have stopped): the others no
    /// longer wait for it. Call it before anything that waits for other PEs.
    pub fn stop_turns(&self, shmem: &Shmem) -> Result<()> {
        if self.ordered() {
            shmem.leave_turns()?;
        }
        Ok(())
    }

    /// Frees the counter of a job-wide pool (collective, after every taker of this PE
    /// has stopped); a PE's own pool just drops.
    pub fn free(self, shmem: &Shmem) -> Result<()> {
        self.stop_turns(shmem)?;
        if let Counter::Symmetric { word, .. } = self.counter {
            // Nobody may take from PE 0's counter once it is freed.
            shmem.barrier_all()?;
            shmem.free(word)?;
        }
        Ok(())
    }
}

/// A loop of `n` iterations for `workers` workers: `n >= 1`, and `n * (workers + 1)`
/// fits in a `u64` (the module doc's overflow argument).
pub(crate) fn check_length(n: u64, workers: u64) -> Result<()> {
    if n == 0 {
        return Err(Error::EmptyLoop);
    }
    if workers
        .checked_add(1)
        .and_then(|w| n.checked_mul(w))
        .is_none()
    {
        return Err(Error::TooLong { n, workers });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_pool_hands_every_iteration_out_once_to_racing_threads() {
        // Four threads take chunks of 1 to 7 from one PE's own pool until it is
        // empty; every iteration must be taken exactly once, and each thread's takes
        // must stop at its first empty one.
        for n in [1u64, 5, 999, 20_000] {
            let pool = WorkPool::per_pe(n, 4).unwrap();
            let taken: Vec<Vec<Range<u64>>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4u64)
                    .map(|t| {
                        let pool = &pool;
                        s.spawn(move || {
                            let mut mine = Vec::new();
                            let mut want = t + 1;
                            while let Some(chunk) = pool.take_local(want) {
                                assert!(!chunk.range.is_empty() && chunk.range.end <= n);
                                assert_eq!(chunk.left, n - chunk.range.end);
                                mine.push(chunk.range);
                                want = want % 7 + 1;
                            }
                            mine
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut seen = vec![0u8; n as usize];
            for range in taken.into_iter().flatten() {
                for i in range {
                    seen[i as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "n = {n}: {seen:?}");
        }
    }

    #[test]
    fn a_pool_refuses_an_empty_loop_and_one_its_counter_could_overflow() {
        assert!(matches!(WorkPool::per_pe(0, 3), Err(Error::EmptyLoop)));
        assert!(matches!(
            WorkPool::per_pe(u64::MAX / 2, 2),
            Err(Error::TooLong { workers: 2, .. })
        ));
        let pool = WorkPool::per_pe(u64::MAX / 3, 2).unwrap();
        // A take larger than the loop is cut at its end.
        assert_eq!(
            pool.take_local(u64::MAX).map(|c| c.range),
            Some(0..u64::MAX / 3)
        );
        assert_eq!(pool.take_local(u64::MAX), None);
        assert_eq!(pool.take_local(1), None);
    }
}
