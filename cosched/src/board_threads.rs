//! The threads that drive boards on the wall clock: one pool kept for the process,
//! at least as many threads as a loop has boards to drive, so that a loop neither
//! spawns a thread per board nor waits for the host to start one.
//!
//! Spawned afresh for each loop (until 2026-11-28), four board threads cost the 2D
//! FFT's pass 53-106 us of spawning on the 2-core VM, and a new thread could wait 1.4
//! ms for its first turn on a core (Linux starts a new thread behind the running
//! ones; a thread woken from sleep goes ahead of them): in that time its board counted
//! as training, the CPU beside it took smaller chunks, and the board decided not to
//! train only after most of the pass.
//!
//! This module owns the pool and its size. It must not know what a board thread
//! does (`run`).

use crate::{Error, Result};
use rayon_core::{ThreadPool, ThreadPoolBuilder};
use std::sync::{Arc, Mutex};

/// The process's pool, once a loop has needed one.
static POOL: Mutex<Option<Arc<ThreadPool>>> = Mutex::new(None);

/// A pool of at least `threads` threads (1 if 0): the process's, or a larger one
/// that replaces it (a loop still using the smaller one keeps it until it ends).
///
/// Two loops that run at once in one process share the pool, and one's board
/// threads may then wait for the other's to end: they are delayed, never stuck
/// (a board thread waits only for its own loop's DONEs and CPU).
pub(crate) fn at_least(threads: usize) -> Result<Arc<ThreadPool>> {
    let threads = threads.max(1);
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pool.as_ref().filter(|p| p.current_num_threads() >= threads) {
        return Ok(Arc::clone(p));
    }
    let p = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("shmemplus-board-{i}"))
        .build()
        .map_err(|e| Error::Threads(format!("{threads} board threads: {e}")))?;
    let p = Arc::new(p);
    *pool = Some(Arc::clone(&p));
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Condvar;
    use std::time::Duration;

    /// The other tests of this process share the pool and may grow it meanwhile, so
    /// the sizes are checked as bounds: a pool never shrinks.
    #[test]
    fn a_pool_is_kept_and_grows_to_what_a_loop_needs() {
        let small = at_least(2).expect("a pool of 2");
        assert!(small.current_num_threads() >= 2);
        let again = at_least(1).expect("a pool of 1");
        assert!(again.current_num_threads() >= small.current_num_threads());
        let large = at_least(small.current_num_threads() + 3).expect("a larger pool");
        assert!(large.current_num_threads() >= small.current_num_threads() + 3);
        let kept = at_least(1).expect("the larger pool again");
        assert!(kept.current_num_threads() >= large.current_num_threads());
    }

    /// Every board of a loop runs at once: jobs that each wait for all the others
    /// (as boards blocked on their DONEs while the others run) all arrive within the
    /// bound only if the pool gives each its own thread.
    #[test]
    fn every_job_of_a_scope_runs_at_once() {
        for n in [1, 4, 7] {
            let pool = at_least(n).expect("a pool");
            let arrived = Mutex::new(0usize);
            let all_here = Condvar::new();
            let late = AtomicUsize::new(0);
            pool.in_place_scope(|s| {
                for _ in 0..n {
                    s.spawn(|_| {
                        let mut count = arrived.lock().expect("the count");
                        *count += 1;
                        all_here.notify_all();
                        let (_count, wait) = all_here
                            .wait_timeout_while(count, Duration::from_secs(10), |c| *c < n)
                            .expect("the count");
                        if wait.timed_out() {
                            late.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
            });
            assert_eq!(late.load(Ordering::Relaxed), 0, "{n} jobs");
        }
    }
}
