//! Lazy wake-ups: a plain put into another PE's heap only *notes* that the target may
//! have to be woken; the putting PE's next `quiet`, `fence`, barrier or wait pays for
//! the wake-ups it owes, so a put stays a plain copy.
//!
//! This module owns the note-and-flush protocol between the threads of one PE. It must
//! not know what a put is or how a sleeper sleeps: it hands each target that needs a
//! wake-up to a callback, after the SeqCst fence that the protocol of `sync` asks of a
//! notifier.
//!
//! # The protocol, and why no wake-up is lost with any number of threads
//!
//! Nothing is ever cleared, so no thread can erase another thread's note. A note stores
//! a *stamp*, a value no other note of this process uses (a per-thread counter with the
//! thread's own high bits), first into `stamp[to]` and then into `latest`, both with
//! Release stores: two plain stores on the put path, no read-modify-write.
//!
//! A flush loads `latest` (Acquire). Equal to `flushed` means every note up to that
//! stamp was handed on by some flush: nothing to do, two loads. Otherwise it loads
//! every `stamp[to]` (Acquire), picks the targets whose stamp differs from
//! `notified[to]`, records the new stamps, issues one SeqCst fence and hands the picked
//! targets to the callback; then it records `latest` in `flushed`.
//!
//! - A flush that reads a note's stamp (in `latest` or `stamp[to]`) synchronizes with
//!   it, so the data stored before the note is visible before the fence, which is what
//!   the sleep/wake protocol of `sync` needs.
//! - A note whose `latest` store comes after a flush's load of `latest` leaves
//!   `latest != flushed` behind it (stamps never repeat), so the next flush scans.
//!   A note whose `stamp[to]` the scan missed is in that case too: the note stores
//!   `latest` after `stamp[to]`, so if the flush had read that `latest` it would see
//!   the stamp.
//! - Two flushes at once may both wake a target (one futex call too many) or one may
//!   find the other's record and skip: then the other is between its record and its
//!   callback, so the wake-up is on its way, not lost.

use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Which targets this PE's threads stored into since they were last woken.
pub(crate) struct LazyWakes {
    /// Per target: the stamp of the last note for it.
    stamp: Vec<AtomicU64>,
    /// Per target: the stamp a flush last handed on.
    notified: Vec<AtomicU64>,
    /// The stamp of the last note for any target.
    latest: AtomicU64,
    /// The value of `latest` that the last complete flush covered.
    flushed: AtomicU64,
}

/// Bits of a stamp that count a thread's notes; the bits above number the thread.
const COUNTER_BITS: u32 = 40;

/// A stamp no other note of this process has used or will use.
fn next_stamp() -> u64 {
    /// Thread numbers handed out so far (the first is 1, so no stamp is 0).
    static THREADS: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        // 0: this thread has no number yet.
        static NEXT: Cell<u64> = const { Cell::new(0) };
    }
    NEXT.with(|next| {
        let mut stamp = next.get();
        if stamp & ((1 << COUNTER_BITS) - 1) == 0 {
            // First note of this thread, or 2^40 notes used up: take a new number.
            stamp = (THREADS.fetch_add(1, Ordering::Relaxed) + 1) << COUNTER_BITS | 1;
        }
        next.set(stamp + 1);
        stamp
    })
}

impl LazyWakes {
    /// No notes, for a job of `n` PEs.
    pub(crate) fn new(n: usize) -> LazyWakes {
        LazyWakes {
            stamp: (0..n).map(|_| AtomicU64::new(0)).collect(),
            notified: (0..n).map(|_| AtomicU64::new(0)).collect(),
            latest: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
        }
    }

    /// Notes that the calling thread stored into PE `to`'s memory (after the stores).
    #[inline]
    pub(crate) fn note(&self, to: usize) {
        let stamp = next_stamp();
        self.stamp[to].store(stamp, Ordering::Release);
        self.latest.store(stamp, Ordering::Release);
    }

    /// Hands every PE noted since its last wake-up to `wake`, after one SeqCst fence.
    /// Returns whether it issued that fence (it does when anything was noted).
    pub(crate) fn flush(&self, mut wake: impl FnMut(usize)) -> bool {
        let latest = self.latest.load(Ordering::Acquire);
        if latest == self.flushed.load(Ordering::Relaxed) {
            return false;
        }
        // In chunks of 64 targets, so the picked set is one word on the stack.
        for (chunk, stamps) in self.stamp.chunks(64).enumerate() {
            let mut picked = 0u64;
            for (i, stamp) in stamps.iter().enumerate() {
                let s = stamp.load(Ordering::Acquire);
                let notified = &self.notified[chunk * 64 + i];
                if s != notified.load(Ordering::Relaxed) {
                    notified.store(s, Ordering::Relaxed);
                    picked |= 1 << i;
                }
            }
            fence(Ordering::SeqCst);
            while picked != 0 {
                let i = picked.trailing_zeros() as usize;
                picked &= picked - 1;
                wake(chunk * 64 + i);
            }
        }
        self.flushed.store(latest, Ordering::Relaxed);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::SignalWord;
    use crate::sync::{notify_fenced, WaitPolicy};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn stamps_never_repeat_across_threads() {
        let mut all: Vec<u64> = (0..4)
            .map(|_| std::thread::spawn(|| (0..1000).map(|_| next_stamp()).collect::<Vec<_>>()))
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.extend((0..1000).map(|_| next_stamp()));
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        assert!(all.iter().all(|&s| s != 0));
    }

    #[test]
    fn a_flush_hands_on_each_noted_target_once() {
        let w = LazyWakes::new(130);
        assert!(!w.flush(|_| panic!("nothing was noted")));
        for to in [3, 70, 129, 3] {
            w.note(to);
        }
        let mut got = Vec::new();
        assert!(w.flush(|pe| got.push(pe)));
        assert_eq!(got, [3, 70, 129]);
        assert!(!w.flush(|_| panic!("all were handed on")));
    }

    /// Writer threads store a value and note the target; *another* thread flushes.
    /// The waiter sleeps at once with a 600 s slice, so one wake-up lost (a note that
    /// a flush erased, or a flush that ran before the data was visible) would hang:
    /// the bound below turns that into a failure.
    #[test]
    fn wake_ups_noted_by_one_thread_and_flushed_by_another_arrive() {
        const ROUNDS: u64 = 1500;
        let wakes = Arc::new(LazyWakes::new(1));
        let signal = Arc::new(SignalWord::default());
        let data = Arc::new(AtomicU64::new(0));
        let asked = Arc::new(AtomicU64::new(0));
        let (finished, finish) = std::sync::mpsc::channel();
        // The waiter: waits for each value in turn, then asks for the next one.
        {
            let (signal, data, asked, finished) = (
                signal.clone(),
                data.clone(),
                asked.clone(),
                finished.clone(),
            );
            std::thread::spawn(move || {
                let sleepy = WaitPolicy {
                    spin: Duration::ZERO,
                    yield_for: Duration::ZERO,
                    sleep_slice: Duration::from_secs(600),
                };
                for r in 1..=ROUNDS {
                    asked.store(r, Ordering::Release);
                    sleepy.wait_until(&signal, || data.load(Ordering::Acquire) >= r, || false);
                }
                let _ = finished.send(());
            });
        }
        // Two writers take turns storing the asked value; a third thread flushes.
        for parity in 0..2u64 {
            let (wakes, data, asked) = (wakes.clone(), data.clone(), asked.clone());
            std::thread::spawn(move || {
                let mut last = 0;
                while last < ROUNDS {
                    let r = asked.load(Ordering::Acquire);
                    if r > last && r % 2 == parity {
                        data.store(r, Ordering::Relaxed);
                        wakes.note(0);
                        last = r;
                    } else if r == ROUNDS {
                        return;
                    }
                    std::thread::yield_now();
                }
            });
        }
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let (wakes, signal, done) = (wakes.clone(), signal.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    wakes.flush(|_| notify_fenced(&signal));
                    std::thread::yield_now();
                }
            });
        }
        let outcome = finish.recv_timeout(Duration::from_secs(120));
        done.store(true, Ordering::Release);
        outcome.expect("a wake-up was lost: the waiter stalled");
    }
}
