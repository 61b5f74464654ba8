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
//! counter. A pool per PE ([`WorkPool::per_pe`]: the counter in each PE's own memory,
//! taken by that PE's devices only) needs no turns, and the argument above holds for
//! each PE's counter alone.
//!
//! This module owns the counter and the take. It must not size chunks (the runner
//! does) nor run iterations.

use crate::{Error, Result};
use shmemplus::{Place, Shmem, SymVec};
use std::ops::Range;

/// The PE whose memory holds a job-wide pool's counter.
const HOME: u32 = 0;
/// The counter's object: one 4 KiB block (its first word is the counter).
const COUNTER_BLOCK_WORDS: usize = 4096 / 8;

/// A loop of `n` iterations shared by every PE of the job (see the module doc), or,
/// [`WorkPool::per_pe`], one loop per PE shared by that PE's own devices.
pub struct WorkPool {
    counter: SymVec<u64>,
    n: u64,
    /// The PE whose memory holds the counter.
    home: u32,
    /// Whether takes wait for their turn in virtual-time order (job-wide pools: the
    /// PEs race for one counter; a PE's own pool is taken from its one thread in
    /// its own clock's order, or from its board threads on the wall clock).
    ordered: bool,
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
        WorkPool::create(shmem, n, workers, HOME, true)
    }

    /// A pool of `n` iterations on each PE, for `workers` workers of that PE
    /// (collective, as [`WorkPool::new`]): each PE's counter lives in its own memory
    /// and only its own devices take from it, so takes need no turns, and no barrier
    /// beyond the allocation's own: no other PE ever touches the counter.
    pub fn per_pe(shmem: &Shmem, n: u64, workers: u64) -> Result<WorkPool> {
        WorkPool::create(shmem, n, workers, shmem.my_pe(), false)
    }

    fn create(shmem: &Shmem, n: u64, workers: u64, home: u32, ordered: bool) -> Result<WorkPool> {
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
        // A 4 KiB block of its own: under the virtual clock a large write stamps the
        // 4 KiB blocks it covers, and a take (a fetching atomic) observes its word's
        // block stamp. Next to the application's data (CBIR's table of results on PE
        // 0), every take after a large write there took that write's delivery time.
        let counter = shmem.alloc_aligned::<u64>(COUNTER_BLOCK_WORDS, 4096, Place::Cpu)?;
        if shmem.my_pe() == home {
            shmem.atomic_set(&counter, 0, 0u64, home)?;
        }
        if ordered {
            shmem.join_turns()?;
            // Every PE's counter set and every PE in the turns before anyone takes.
            // A PE's own pool (not ordered) is set by its PE before its own takes,
            // and the allocation's closing barrier already made it a symmetric object
            // on every PE.
            shmem.barrier_all()?;
        }
        Ok(WorkPool {
            counter,
            n,
            home,
            ordered,
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
        if self.ordered {
            shmem.wait_turn()?;
        }
        self.take_unordered(shmem, want)
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
        if self.ordered {
            shmem.wait_turn()?;
        }
        let handed_out = shmem.atomic_fetch(&self.counter, 0, self.home)?;
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
        let want = want.clamp(1, self.n);
        let old = shmem.atomic_fetch_add(&self.counter, 0, want, self.home)?;
        if old >= self.n {
            return Ok(None);
        }
        let end = old.saturating_add(want).min(self.n);
        Ok(Some(Chunk {
            range: old..end,
            left: self.n - end,
        }))
    }

    /// This PE takes no more turns (its ordered takers have stopped): the others no
    /// longer wait for it. Call it before anything that waits for other PEs.
    pub fn stop_turns(&self, shmem: &Shmem) -> Result<()> {
        if self.ordered {
            shmem.leave_turns()?;
        }
        Ok(())
    }

    /// Frees the counter (collective, after every taker of this PE has stopped).
    pub fn free(self, shmem: &Shmem) -> Result<()> {
        self.stop_turns(shmem)?;
        if self.ordered {
            // Nobody may take from PE 0's counter once it is freed. A PE's own pool
            // has no other taker than its own devices, stopped by now; `free` itself
            // completes this PE's puts and agrees with the others.
            shmem.barrier_all()?;
        }
        shmem.free(self.counter)?;
        Ok(())
    }
}
