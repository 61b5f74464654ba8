//! Waiting and waking across PEs: the sleep/wake protocol on a control block's signal
//! words, the spin-then-yield-then-sleep wait policy, and the dissemination barrier.
//!
//! This module owns *how* a PE waits so that no wait burns a core for long and no wait
//! is unbounded in CPU. It must not know what it waits for beyond a condition closure,
//! and it must not touch the symmetric heap.
//!
//! # The wake protocol
//!
//! A waiter reads `seq`, registers in `sleepers`, issues a SeqCst fence, re-checks its
//! condition and then futex-waits on `seq` expecting the value it read. A notifier
//! makes its condition true, issues a SeqCst fence, and only if `sleepers` is non-zero
//! bumps `seq` and calls futex wake. By the total order of SeqCst fences either the
//! waiter sees the condition, or the notifier sees the sleeper (and the futex then
//! returns at once or is woken). A notifier with no sleeper pays one fence and one load:
//! no syscall on the fast path.

use crate::segment::{Padded, SignalWord};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a sleeping waiter stays in the kernel before it looks again (so a wait is
/// never stuck on a lost wake-up, and shutdown is noticed).
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// Wakes the sleepers of `signal`, if any, after the caller made its condition true.
pub fn notify(signal: &SignalWord) {
    fence(Ordering::SeqCst);
    notify_fenced(signal);
}

/// `notify` for a caller that has issued the SeqCst fence itself since making its
/// condition true (one fence can then serve several signals).
pub fn notify_fenced(signal: &SignalWord) {
    if signal.sleepers.load(Ordering::SeqCst) > 0 {
        signal.seq.fetch_add(1, Ordering::SeqCst);
        let _ = rustix::thread::futex::wake(
            &signal.seq,
            rustix::thread::futex::Flags::empty(),
            u32::MAX,
        );
    }
}

/// How eagerly a waiter spins before it yields and sleeps.
#[derive(Debug, Clone, Copy)]
pub struct WaitPolicy {
    /// Busy-poll this long.
    pub spin: Duration,
    /// Then poll with `sched_yield` between checks this long.
    pub yield_for: Duration,
}

impl WaitPolicy {
    /// A policy for a job of `host_pes` PEs on this host: when the PEs (each with a
    /// user thread and a progress thread) outnumber the cores, spinning steals the
    /// core that the awaited PE needs, so spin only briefly and yield instead.
    pub fn for_host(host_pes: usize) -> WaitPolicy {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if host_pes <= cores {
            WaitPolicy {
                spin: Duration::from_micros(50),
                yield_for: Duration::from_micros(200),
            }
        } else {
            WaitPolicy {
                // Each poll that finds nothing should hand the core over at once: on
                // a 2-core VM a switch costs ~2 us, and a 2 us spin per wake-up made
                // an 8-PE barrier twice as slow (32 us against 14 us).
                spin: Duration::ZERO,
                yield_for: Duration::from_micros(500),
            }
        }
    }

    /// Waits until `ready()` is true, calling `work()` (for example draining replies)
    /// between checks and sleeping on `signal` when the spin and yield phases are over.
    /// `work` returning true counts as progress and restarts the spin phase.
    pub fn wait(
        &self,
        signal: &SignalWord,
        mut ready: impl FnMut() -> bool,
        mut work: impl FnMut() -> bool,
    ) {
        let mut phase_start = Instant::now();
        let mut elapsed = Duration::ZERO;
        let mut polls: u32 = 0;
        loop {
            if ready() {
                return;
            }
            if work() {
                phase_start = Instant::now();
                elapsed = Duration::ZERO;
                continue;
            }
            if elapsed < self.spin {
                std::hint::spin_loop();
                polls = polls.wrapping_add(1);
                // Reading the clock costs ~20 ns; while spinning, look every 32 polls.
                if polls % 32 == 0 {
                    elapsed = phase_start.elapsed();
                }
                continue;
            }
            if elapsed < self.spin + self.yield_for {
                std::thread::yield_now();
                elapsed = phase_start.elapsed();
                continue;
            }
            // Spin and yield phases are over: sleep (repeatedly, until ready).
            sleep_unless(signal, &mut ready);
        }
    }
}

/// One sleep on `signal` unless `ready()` already holds (see the module doc).
pub fn sleep_unless(signal: &SignalWord, ready: &mut impl FnMut() -> bool) {
    let seen = signal.seq.load(Ordering::SeqCst);
    signal.sleepers.fetch_add(1, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    if !ready() {
        let ts = rustix::thread::futex::Timespec {
            tv_sec: 0,
            tv_nsec: SLEEP_SLICE.as_nanos() as _,
        };
        // EAGAIN (seq moved), ETIMEDOUT and EINTR all mean "look again".
        let _ = rustix::thread::futex::wait(
            &signal.seq,
            rustix::thread::futex::Flags::empty(),
            seen,
            Some(&ts),
        );
    }
    signal.sleepers.fetch_sub(1, Ordering::SeqCst);
}

/// The dissemination barrier over flags in the PEs' control blocks.
///
/// In round k PE i writes the barrier epoch into flag k of PE (i + 2^k) mod n and waits
/// for its own flag k to reach the epoch. After ceil(log2 n) rounds every PE has heard,
/// transitively, from every other, so the barrier completes in O(log n) steps with no
/// central counter. Each flag has exactly one writer, so plain release stores suffice;
/// flags only grow, so no reset is needed between barriers. `before_signal(to)` runs
/// before each flag write (the network emulation delays it there).
pub fn dissemination_barrier<'a>(
    me: usize,
    n: usize,
    epoch: u64,
    flags_of: impl Fn(usize) -> (&'a [Padded<AtomicU64>], &'a SignalWord),
    policy: &WaitPolicy,
    mut work: impl FnMut() -> bool,
    before_signal: impl Fn(usize),
) {
    let (my_flags, my_signal) = flags_of(me);
    let mut dist = 1usize;
    let mut round = 0usize;
    while dist < n {
        let to = (me + dist) % n;
        let (their_flags, their_signal) = flags_of(to);
        before_signal(to);
        their_flags[round].store(epoch, Ordering::Release);
        notify(their_signal);
        let flag = &my_flags[round];
        policy.wait(
            my_signal,
            || flag.load(Ordering::Acquire) >= epoch,
            &mut work,
        );
        dist <<= 1;
        round += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn sleeper_is_woken_by_notify() {
        let sig = Arc::new(SignalWord::default());
        let flag = Arc::new(AtomicBool::new(false));
        let (s2, f2) = (sig.clone(), flag.clone());
        let t = std::thread::spawn(move || {
            let p = WaitPolicy {
                spin: Duration::ZERO,
                yield_for: Duration::ZERO,
            };
            let start = Instant::now();
            p.wait(&s2, || f2.load(Ordering::Acquire), || false);
            start.elapsed()
        });
        std::thread::sleep(Duration::from_millis(20));
        flag.store(true, Ordering::Release);
        notify(&sig);
        let waited = t.join().unwrap();
        // Woken by the notify, not by the 50 ms sleep slice running out repeatedly.
        assert!(waited < Duration::from_secs(2), "{waited:?}");
    }
}
