//! A PE's CPU loop's progress, as the board threads of the wall-clock driver wait
//! for it: a generation count that the CPU loop bumps when it has published what a
//! board may wait for (its first chunk's rate, its typical time) and a flag set
//! once when the loop ends, whatever ends it. A board thread whose sizer waits for
//! the CPU (`BoardSizer::waiting`) blocks until the count moves or the loop ends,
//! instead of sleeping and looking again.
//!
//! This module owns that signal only. It must not know what the CPU loop publishes
//! nor why a board waits (the sizers do).
//!
//! **Why no wake-up is lost.** A board thread reads the generation ([`CpuProgress::seen`])
//! *before* it reads what the CPU loop published, then, if it must wait, waits for
//! the generation to move past what it read ([`CpuProgress::wait_past`]). The CPU
//! loop publishes *before* it bumps. Both the read and the bump hold the mutex, so
//! either the board's read comes after the bump (the unlock after the bump happens
//! before the board's lock, so the board sees what was published before it), or the
//! bump comes after the read, and then `wait_past` finds the generation moved (it
//! checks under the mutex before it sleeps) or sleeps first and is woken by the
//! bump's notification (a waiter is counted under the mutex before the condition
//! variable releases it atomically, and the bump notifies when it finds one).
//! `wait_past` is also bounded ([`CpuProgress::wait_past`]'s `bound`): a reason to
//! wait that the CPU loop's progress does not end costs a look per bound, never a
//! hang.
//!
//! Before it (until 2026-11-28) a waiting board thread slept 50 us between looks:
//! with four boards on each of two PEs (the 2D FFT on novo-g, wall clock, 2 cores)
//! eight threads woke 20,000 times a second each beside the two PEs' CPU loops, and
//! when a loop ended its board threads noticed up to a sleep later.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The CPU loop's progress (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct CpuProgress {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Bumped each time the CPU loop publishes what a board may wait for.
    generation: u64,
    /// The CPU loop has ended (or there is none).
    ended: bool,
    /// Threads in `wait_past` now.
    waiting: u32,
}

impl CpuProgress {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while the mutex is held leaves a count and a flag: still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The generation now, to pass to [`CpuProgress::wait_past`]: read it before
    /// reading what the CPU loop published.
    pub(crate) fn seen(&self) -> u64 {
        self.state().generation
    }

    /// Whether the CPU loop has ended.
    pub(crate) fn ended(&self) -> bool {
        self.state().ended
    }

    /// The CPU loop has published what a chunk taught it: wakes the waiting threads.
    pub(crate) fn bump(&self) {
        let mut s = self.state();
        s.generation = s.generation.wrapping_add(1);
        if s.waiting > 0 {
            self.changed.notify_all();
        }
    }

    /// The CPU loop has ended (or there is none): no thread waits for it any longer.
    pub(crate) fn end(&self) {
        let mut s = self.state();
        s.ended = true;
        if s.waiting > 0 {
            self.changed.notify_all();
        }
    }

    /// Blocks until the generation is no longer `seen`, or the CPU loop has ended, or
    /// `bound` has passed, whichever comes first (at once if one already has).
    pub(crate) fn wait_past(&self, seen: u64, bound: Duration) {
        let mut s = self.state();
        s.waiting = s.waiting.saturating_add(1);
        let (mut s, _timed_out) = self
            .changed
            .wait_timeout_while(s, bound, |s| s.generation == seen && !s.ended)
            .unwrap_or_else(|e| e.into_inner());
        s.waiting = s.waiting.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Instant;

    /// Far longer than any wake-up takes, so that a test that reaches it has lost one.
    const LONG: Duration = Duration::from_secs(20);

    #[test]
    fn a_bump_between_the_read_and_the_wait_is_not_lost() {
        let p = CpuProgress::default();
        let seen = p.seen();
        p.bump();
        let t = Instant::now();
        p.wait_past(seen, LONG);
        assert!(t.elapsed() < LONG / 2, "waited {:?}", t.elapsed());
        assert_ne!(p.seen(), seen);
    }

    #[test]
    fn the_end_releases_a_waiter_and_every_later_one() {
        let p = CpuProgress::default();
        let seen = p.seen();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let t = Instant::now();
                p.wait_past(seen, LONG);
                t.elapsed()
            });
            std::thread::sleep(Duration::from_millis(20));
            p.end();
            let waited = waiter.join().expect("the waiter panicked");
            assert!(waited < LONG / 2, "waited {waited:?}");
        });
        assert!(p.ended());
        let t = Instant::now();
        p.wait_past(p.seen(), LONG);
        assert!(t.elapsed() < LONG / 2);
    }

    #[test]
    fn a_wait_with_nothing_coming_ends_at_its_bound() {
        let p = CpuProgress::default();
        let t = Instant::now();
        p.wait_past(p.seen(), Duration::from_millis(30));
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(30), "waited {waited:?}");
        assert!(waited < LONG / 2, "waited {waited:?}");
        assert_eq!(p.state().waiting, 0);
    }

    /// The protocol of the module doc under load: a publisher stores a value and
    /// bumps, many times; waiters that read the generation, then the value, and wait
    /// only while the value is not the last, must all see the last value and return
    /// long before the bound (a lost wake-up would leave one waiting for it).
    #[test]
    fn waiters_that_read_before_they_wait_see_every_publication() {
        const ROUNDS: u64 = 2_000;
        for _ in 0..5 {
            let p = CpuProgress::default();
            let value = AtomicU64::new(0);
            let t = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|| loop {
                        let seen = p.seen();
                        if value.load(Ordering::Relaxed) == ROUNDS {
                            break;
                        }
                        p.wait_past(seen, LONG);
                    });
                }
                for v in 1..=ROUNDS {
                    value.store(v, Ordering::Relaxed);
                    p.bump();
                    if v % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
            });
            assert!(t.elapsed() < LONG / 2, "took {:?}", t.elapsed());
            assert_eq!(p.state().waiting, 0);
        }
    }
}
