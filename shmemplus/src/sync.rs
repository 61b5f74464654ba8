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

/// How long a sleeping waiter stays in the kernel before it looks again by default (so
/// a wait is never stuck on a lost wake-up, and shutdown is noticed).
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
    /// Then sleep on the signal at most this long before polling again (a safety net:
    /// a correct notify wakes the sleeper at once).
    pub sleep_slice: Duration,
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
                sleep_slice: SLEEP_SLICE,
            }
        } else {
            WaitPolicy {
                // Each poll that finds nothing should hand the core over at once: on
                // a 2-core VM a switch costs ~2 us, and a 2 us spin per wake-up made
                // an 8-PE barrier twice as slow (32 us against 14 us).
                spin: Duration::ZERO,
                yield_for: Duration::from_micros(500),
                sleep_slice: SLEEP_SLICE,
            }
        }
    }

    /// This policy with the phases the configuration overrides (`SHMEMPLUS_WAIT_*`).
    pub fn with_overrides(self, spin: Option<Duration>, yield_for: Option<Duration>) -> WaitPolicy {
        WaitPolicy {
            spin: spin.unwrap_or(self.spin),
            yield_for: yield_for.unwrap_or(self.yield_for),
            ..self
        }
    }

    /// Waits until `poll()` answers [`Poll::Ready`] and returns its value.
    ///
    /// Every answer of `poll` is acted upon, so a poll may have side effects (push a
    /// record, apply an operation) as long as it answers `Ready` when it did what the
    /// caller waits for: `Ready` returns at once, `Progress` restarts the spin phase,
    /// `Idle` lets the wait go on to spinning, yielding and then sleeping on `signal`.
    /// The poll made while registered as a sleeper (see the module doc) is one of
    /// these calls too: nothing it does is thrown away.
    pub fn wait<T>(&self, signal: &SignalWord, mut poll: impl FnMut() -> Poll<T>) -> T {
        let mut phase_start = Instant::now();
        let mut elapsed = Duration::ZERO;
        let mut polls: u32 = 0;
        loop {
            match poll() {
                Poll::Ready(value) => return value,
                Poll::Progress => {
                    phase_start = Instant::now();
                    elapsed = Duration::ZERO;
                    continue;
                }
                Poll::Idle => {}
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
            // Spin and yield phases are over: sleep once, then poll again.
            match sleep_unless(signal, self.sleep_slice, &mut poll) {
                Poll::Ready(value) => return value,
                Poll::Progress => {
                    phase_start = Instant::now();
                    elapsed = Duration::ZERO;
                }
                Poll::Idle => {}
            }
        }
    }

    /// Waits until the side-effect-free condition `ready()` holds, calling `work()`
    /// (reply draining, say) between checks; `work` returning true means it did or saw
    /// work, which keeps the waiter awake. Built on [`WaitPolicy::wait`].
    pub fn wait_until(
        &self,
        signal: &SignalWord,
        ready: impl Fn() -> bool,
        mut work: impl FnMut() -> bool,
    ) {
        self.wait(signal, || {
            if ready() {
                Poll::Ready(())
            } else if work() {
                Poll::Progress
            } else {
                Poll::Idle
            }
        })
    }
}

/// One answer of a wait's poll (see [`WaitPolicy::wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll<T> {
    /// What the caller waits for happened; the wait returns this value.
    Ready(T),
    /// Not yet, but work was done or is under way (replies drained or arriving): keep
    /// polling without sleeping.
    Progress,
    /// Not yet and nothing to do: the waiter may spin, yield and sleep.
    Idle,
}

/// Takes a waiter out of a signal's `sleepers` count when it leaves, even by a panic
/// in its poll (a stale count would make every notify pay a syscall).
struct Registered<'a>(&'a SignalWord);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.0.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Registers as a sleeper of `signal`, polls once, and sleeps (one slice at most) only
/// if that poll answered `Idle`. Returns the poll's answer, which the caller must act
/// on: it is never repeated here.
fn sleep_unless<T>(
    signal: &SignalWord,
    slice: Duration,
    poll: &mut impl FnMut() -> Poll<T>,
) -> Poll<T> {
    let seen = signal.seq.load(Ordering::SeqCst);
    signal.sleepers.fetch_add(1, Ordering::SeqCst);
    let _registered = Registered(signal);
    fence(Ordering::SeqCst);
    let answer = poll();
    if let Poll::Idle = answer {
        let ts = rustix::thread::futex::Timespec {
            tv_sec: slice.as_secs() as _,
            tv_nsec: slice.subsec_nanos() as _,
        };
        // EAGAIN (seq moved), ETIMEDOUT and EINTR all mean "look again".
        let _ = rustix::thread::futex::wait(
            &signal.seq,
            rustix::thread::futex::Flags::empty(),
            seen,
            Some(&ts),
        );
    }
    answer
}

/// The dissemination barrier over flags in the PEs' control blocks.
///
/// In round k PE i writes the barrier epoch into flag k of PE (i + 2^k) mod n and waits
/// for its own flag k to reach the epoch. After ceil(log2 n) rounds every PE has heard,
/// transitively, from every other, so the barrier completes in O(log n) steps with no
/// central counter. Each flag has exactly one writer, so release stores suffice;
/// flags only grow, so no reset is needed between barriers. `signal(to, k, epoch)`
/// raises flag k of PE `to` to `epoch` and wakes its signal: a store into a mapped
/// control block, or a message to another host, which its owner applies (and which
/// the network emulation may delay first). `mine` are this PE's flags and signal.
pub fn dissemination_barrier(
    me: usize,
    n: usize,
    epoch: u64,
    (my_flags, my_signal): (&[Padded<AtomicU64>], &SignalWord),
    policy: &WaitPolicy,
    mut work: impl FnMut() -> bool,
    signal: impl Fn(usize, usize, u64),
) {
    let mut dist = 1usize;
    let mut round = 0usize;
    while dist < n {
        let to = (me + dist) % n;
        signal(to, round, epoch);
        let flag = &my_flags[round];
        policy.wait_until(
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
    use std::sync::Arc;

    /// A policy that sleeps at once, with a slice so long that one lost wake-up would
    /// make a test run for minutes instead of milliseconds.
    fn sleepy() -> WaitPolicy {
        WaitPolicy {
            spin: Duration::ZERO,
            yield_for: Duration::ZERO,
            sleep_slice: Duration::from_secs(600),
        }
    }

    #[test]
    fn a_ready_answer_is_never_thrown_away() {
        // The poll has a side effect (it counts, like a ring push) and answers Ready on
        // its second call, which is the one made while registered as a sleeper. The
        // wait must return that value and never call the poll again.
        let signal = SignalWord::default();
        let mut calls = 0u32;
        let got = sleepy().wait(&signal, || {
            calls += 1;
            if calls == 2 {
                Poll::Ready(calls)
            } else {
                Poll::Idle
            }
        });
        assert_eq!((got, calls), (2, 2));
        assert_eq!(signal.sleepers.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn progress_keeps_the_waiter_awake() {
        // `Progress` answers never lead to a sleep: with a 600 s slice, a sleep here
        // would hang the test.
        let signal = SignalWord::default();
        let mut calls = 0u32;
        sleepy().wait(&signal, || {
            calls += 1;
            if calls == 1000 {
                Poll::Ready(())
            } else {
                Poll::Progress
            }
        });
        assert_eq!(calls, 1000);
    }

    #[test]
    fn notify_bumps_seq_only_for_sleepers() {
        let signal = SignalWord::default();
        notify(&signal);
        assert_eq!(signal.seq.load(Ordering::SeqCst), 0, "no sleeper: no bump");
        signal.sleepers.fetch_add(1, Ordering::SeqCst);
        notify(&signal);
        assert_eq!(
            signal.seq.load(Ordering::SeqCst),
            1,
            "a sleeper: the futex word moves"
        );
    }

    #[test]
    fn ping_pong_loses_no_wake_up() {
        // Two threads hand a token back and forth 2000 times, each always sleeping
        // (no spin, no yield) with a 600 s slice: a single lost wake-up hangs for ten
        // minutes, so finishing at all proves every wake-up arrived. The bound below
        // is only there to fail loudly instead of hanging CI.
        const ROUNDS: u64 = 2000;
        let signals = Arc::new([SignalWord::default(), SignalWord::default()]);
        let turn = Arc::new(AtomicU64::new(0));
        let (finished, finishes) = std::sync::mpsc::channel();
        for me in 0..2u64 {
            let (signals, turn, finished) = (signals.clone(), turn.clone(), finished.clone());
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    let mine = 2 * round + me;
                    sleepy().wait_until(
                        &signals[me as usize],
                        || turn.load(Ordering::Acquire) == mine,
                        || false,
                    );
                    turn.store(mine + 1, Ordering::Release);
                    notify(&signals[(1 - me) as usize]);
                }
                let _ = finished.send(());
            });
        }
        for _ in 0..2 {
            finishes
                .recv_timeout(Duration::from_secs(120))
                .expect("a wake-up was lost: the ping-pong stalled");
        }
        assert_eq!(turn.load(Ordering::Acquire), 2 * ROUNDS);
    }
}
