//! The clock a PE's modeled time runs on: the host's monotonic clock (wall-clock
//! emulation, the default) or this PE's own virtual clock (`SHMEMPLUS_CLOCK=virtual`).
//!
//! This module owns reading the job clock, waiting for ("reaching") a modeled instant,
//! and the virtual clock's bookkeeping: the instant itself, and the CPU time the
//! program spends between library calls, which advances the virtual clock scaled by
//! the profile's CPU speed. It must not charge hops or know routes (`emulate` does) and
//! must not move bytes.
//!
//! **Virtual time.** A PE's virtual clock is one `u64` of nanoseconds from 0 at `init`.
//! It only moves forward: by [`JobClock::reach`] (a modeled instant that an operation
//! completes at: a get's reply, a put's injection, `quiet`'s latest delivery, a
//! barrier's release, the delivery of the write a wait saw), by [`JobClock::advance`]
//! (modeled work), and by CPU time spent outside the library. The CPU time is the
//! calling thread's (`CLOCK_THREAD_CPUTIME_ID`), measured from the moment the outermost
//! library call on that thread returned to the moment the next one starts
//! ([`JobClock::enter`] and the guard it returns), divided by the profile's
//! `cpu_speed` (1 = as fast as this host). Time inside library calls is not counted:
//! the modeled costs replace it (the real copies are the emulation's, not the
//! cluster's). Several threads of one PE share its clock.
//!
//! **The reading's own cost.** Reading a thread's CPU time is a system call (about
//! 0.5 us on a VM, no vDSO), and the interval between the reading as a call returns
//! and the one as the next call enters holds half of each: a program's computation
//! plus one reading's cost. Counted as it is, every library call would add that cost
//! to the virtual clock, a bias against programs that make many small calls (a
//! scheduler that reads the clock around every chunk). The clock measures the
//! cost once when it is made and takes it off each interval it counts: the median of
//! [`CALIBRATION_READS`] back-to-back readings, which is what an interval holds
//! typically. The least reading is not: on the 2-core VM the project is measured on,
//! the least of 4096 readings was 0.68-0.70 us, their median 0.81-0.83 and their
//! mean 0.85-0.88, so that taking off the least left about 0.15 us in every
//! interval: some 10 us, by that count, of a FastFit pass of the 2D FFT (about 70
//! calls) against 2 us of a static one (a dozen). The median is robust to a
//! reading that an interrupt lengthened during the calibration; an interval's count
//! is then right on average within the median's distance from the mean (30-50 ns),
//! and one that is shorter than a reading counts 0.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::config::ClockKind;

thread_local! {
    /// Library calls in progress on this thread, and the thread's CPU time (ns) when the
    /// outermost one last returned (`None` before the first).
    static CALLS: Cell<(u32, Option<u64>)> = const { Cell::new((0, None)) };
}

/// The calling thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Back-to-back readings of the thread's CPU time the virtual clock takes to learn
/// what one reading costs (see the module doc): odd, so that one is the median;
/// about 0.2 ms of a PE's `init` on a VM (256 readings).
pub(crate) const CALIBRATION_READS: usize = 255;

/// What one reading of the thread's CPU time adds to the interval it ends, in ns: the
/// median of `CALIBRATION_READS` differences between back-to-back readings.
fn reading_cost_ns() -> u64 {
    // Each reading ends one difference and starts the next.
    let mut last = thread_cpu_ns();
    let costs: Vec<u64> = (0..CALIBRATION_READS)
        .map(|_| {
            let now = thread_cpu_ns();
            let cost = now.saturating_sub(last);
            last = now;
            cost
        })
        .collect();
    typical_cost_ns(costs)
}

/// The median of measured reading costs (the upper one of an even count; 0 for
/// none): what an interval holds typically, whatever a few lengthened readings
/// measured (see the module doc).
fn typical_cost_ns(mut costs: Vec<u64>) -> u64 {
    costs.sort_unstable();
    costs.get(costs.len() / 2).copied().unwrap_or(0)
}

/// The virtual clock of one PE (see the module doc).
#[derive(Debug)]
pub(crate) struct VirtualClock {
    now_ns: AtomicU64,
    /// Modeled CPU speed relative to this host (finite, > 0).
    cpu_speed: f64,
    count_cpu: AtomicBool,
    /// What a reading of the thread's CPU time adds to a counted interval (ns),
    /// taken off each one.
    reading_ns: u64,
}

/// The clock of one PE's modeled time.
#[derive(Debug)]
pub(crate) enum JobClock {
    /// The host's monotonic clock; `origin` is the job's instant 0 on it (an
    /// `Instant`, read through libc, so that a native job touches no vDSO lookup of
    /// its own: programs stay runnable under valgrind).
    Wall {
        /// This PE's `init`.
        origin: std::sync::Mutex<std::time::Instant>,
    },
    /// This PE's virtual clock.
    Virtual(VirtualClock),
}

/// Marks one library call in progress on this thread (see [`JobClock::enter`]); when
/// the outermost one ends, computation starts counting again.
pub(crate) struct InCall {
    /// On the virtual clock: whether computation is counted; `None` on the wall clock,
    /// where the guard does nothing (it stays off the hot path: no thread-local access).
    counting: Option<bool>,
}

impl Drop for InCall {
    #[inline]
    fn drop(&mut self) {
        let Some(counting) = self.counting else {
            return;
        };
        CALLS.with(|c| {
            let (depth, mark) = c.get();
            let depth = depth.saturating_sub(1);
            let mark = if depth == 0 && counting {
                Some(thread_cpu_ns())
            } else {
                mark
            };
            c.set((depth, mark));
        });
    }
}

impl JobClock {
    /// The clock `kind` names, for a profile whose CPUs run at `cpu_speed` times this
    /// host's (values that are not finite and positive count as 1).
    pub(crate) fn new(kind: ClockKind, cpu_speed: f64) -> JobClock {
        match kind {
            ClockKind::Wall => JobClock::Wall {
                origin: std::sync::Mutex::new(std::time::Instant::now()),
            },
            ClockKind::Virtual => JobClock::Virtual(VirtualClock {
                now_ns: AtomicU64::new(0),
                cpu_speed: if cpu_speed.is_finite() && cpu_speed > 0.0 {
                    cpu_speed
                } else {
                    1.0
                },
                count_cpu: AtomicBool::new(true),
                reading_ns: reading_cost_ns(),
            }),
        }
    }

    /// Which clock this is.
    pub(crate) fn kind(&self) -> ClockKind {
        match self {
            JobClock::Wall { .. } => ClockKind::Wall,
            JobClock::Virtual(_) => ClockKind::Virtual,
        }
    }

    /// Whether this is the virtual clock.
    #[inline]
    pub(crate) fn is_virtual(&self) -> bool {
        matches!(self, JobClock::Virtual(_))
    }

    /// Sets the job's instant 0 to now (wall clock; the virtual clock starts at 0), and
    /// starts counting computation on this thread from here.
    pub(crate) fn start(&self) {
        match self {
            JobClock::Wall { origin } => {
                *origin.lock().unwrap_or_else(|e| e.into_inner()) = std::time::Instant::now();
            }
            JobClock::Virtual(v) => {
                v.now_ns.store(0, Ordering::Relaxed);
                CALLS.with(|c| c.set((0, Some(thread_cpu_ns()))));
            }
        }
    }

    /// Enters a library call: on the virtual clock, the CPU time this thread spent
    /// since the outermost library call last returned is added (scaled) first. Keep
    /// the guard for the call's length.
    #[inline]
    pub(crate) fn enter(&self) -> InCall {
        let JobClock::Virtual(v) = self else {
            return InCall { counting: None };
        };
        let counting = v.count_cpu.load(Ordering::Relaxed);
        CALLS.with(|c| {
            let (depth, mark) = c.get();
            if depth == 0 {
                if let (true, Some(mark)) = (counting, mark) {
                    let spent = thread_cpu_ns()
                        .saturating_sub(mark)
                        .saturating_sub(v.reading_ns);
                    let modeled = (spent as f64 / v.cpu_speed) as u64;
                    v.now_ns.fetch_add(modeled, Ordering::Relaxed);
                }
            }
            c.set((depth.saturating_add(1), None));
        });
        InCall {
            counting: Some(counting),
        }
    }

    /// The current instant on the timelines' clock, in ns: the monotonic clock (wall),
    /// or this PE's virtual clock.
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        match self {
            JobClock::Wall { .. } => netsim::now_ns(),
            JobClock::Virtual(v) => v.now_ns.load(Ordering::Acquire),
        }
    }

    /// Time since the job's instant 0.
    pub(crate) fn elapsed(&self) -> Duration {
        match self {
            JobClock::Wall { origin } => origin.lock().unwrap_or_else(|e| e.into_inner()).elapsed(),
            JobClock::Virtual(v) => Duration::from_nanos(v.now_ns.load(Ordering::Acquire)),
        }
    }

    /// Reaches instant `t_ns` of [`JobClock::now_ns`]'s clock: waits for it (wall), or
    /// moves the virtual clock to it if it is later.
    #[inline]
    pub(crate) fn reach(&self, t_ns: u64) {
        match self {
            JobClock::Wall { .. } => netsim::wait_until(t_ns),
            JobClock::Virtual(v) => {
                v.now_ns.fetch_max(t_ns, Ordering::AcqRel);
            }
        }
    }

    /// Modeled work of `d`: sleeps for it (wall), or adds it to the virtual clock.
    pub(crate) fn advance(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        match self {
            JobClock::Wall { .. } => netsim::wait_until(netsim::now_ns().saturating_add(ns)),
            JobClock::Virtual(v) => {
                v.now_ns.fetch_add(ns, Ordering::AcqRel);
            }
        }
    }

    /// Whether computation between library calls advances the virtual clock now
    /// (always false on the wall clock, where there is nothing to count).
    pub(crate) fn counts_cpu_time(&self) -> bool {
        match self {
            JobClock::Virtual(v) => v.count_cpu.load(Ordering::Relaxed),
            _ => false,
        }
    }

    /// Whether computation between calls advances the virtual clock (default yes).
    pub(crate) fn count_cpu_time(&self, on: bool) {
        if let JobClock::Virtual(v) = self {
            v.count_cpu.store(on, Ordering::Relaxed);
            // Do not count the time spent up to now either way.
            CALLS.with(|c| {
                let (depth, _) = c.get();
                c.set((depth, on.then(thread_cpu_ns)));
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spends `ms` of this thread's CPU time.
    fn burn(ms: u64) {
        let t = thread_cpu_ns();
        let mut x = 0u64;
        while thread_cpu_ns() - t < ms * 1_000_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    #[test]
    fn virtual_clock_counts_computation_between_calls_only() {
        let clock = JobClock::new(ClockKind::Virtual, 0.5);
        clock.start();
        burn(20);
        let call = clock.enter();
        let after_work = clock.now_ns();
        // 20 ms of CPU on a CPU half as fast: at least 40 ms of virtual time.
        assert!(after_work >= 40_000_000, "{after_work}");
        burn(20); // inside a call: not counted
        drop(call);
        let call = clock.enter();
        assert!(clock.now_ns() - after_work < 10_000_000);
        drop(call);
    }

    #[test]
    fn library_calls_with_nothing_between_them_count_a_reading_less() {
        let calibrated = JobClock::new(ClockKind::Virtual, 1.0);
        let JobClock::Virtual(v) = &calibrated else {
            unreachable!("a virtual clock was made")
        };
        let reading = v.reading_ns;
        // The same clock without the calibration, as it counted before.
        let uncorrected = JobClock::Virtual(VirtualClock {
            now_ns: AtomicU64::new(0),
            cpu_speed: 1.0,
            count_cpu: AtomicBool::new(true),
            reading_ns: 0,
        });
        // Nanoseconds counted per empty call, over 10 000 calls.
        let per_call = |clock: &JobClock| {
            const CALLS: u64 = 10_000;
            clock.start();
            for _ in 0..CALLS {
                drop(clock.enter());
            }
            let call = clock.enter();
            let counted = clock.now_ns() / (CALLS + 1);
            drop(call);
            counted
        };
        // The least of five rounds each, interleaved: other work on the host (tests
        // beside this one, a debug build) adds to both, never takes away.
        let (mut with, mut without) = (u64::MAX, u64::MAX);
        for _ in 0..5 {
            with = with.min(per_call(&calibrated));
            without = without.min(per_call(&uncorrected));
        }
        // Uncorrected, each call counts one reading more (about 0.5 us on a VM): the
        // interval between two calls holds half of each reading.
        assert!(
            reading > 0 && with + reading / 2 <= without,
            "{with} ns counted per empty call, {without} ns uncorrected; a reading costs {reading} ns"
        );
    }

    #[test]
    fn a_reading_costs_its_median_not_its_least_nor_an_interrupted_one() {
        // Readings as the VM measures them: most about 0.8 us, a few at the floor,
        // one lengthened by an interrupt. The least would leave 0.1 us in every
        // counted interval; a mean would take the interrupt off every interval.
        let mut costs = vec![820; 200];
        costs.extend([690; 20]);
        costs.extend([830; 34]);
        costs.push(60_000);
        assert_eq!(costs.len(), CALIBRATION_READS);
        assert_eq!(typical_cost_ns(costs), 820);
        assert_eq!(typical_cost_ns(vec![700, 900]), 900);
        assert_eq!(typical_cost_ns(Vec::new()), 0);
    }

    #[test]
    fn reach_and_advance_only_move_forward() {
        let clock = JobClock::new(ClockKind::Virtual, 1.0);
        clock.count_cpu_time(false);
        clock.reach(500);
        clock.reach(100);
        assert_eq!(clock.now_ns(), 500);
        clock.advance(Duration::from_nanos(25));
        assert_eq!(clock.elapsed(), Duration::from_nanos(525));
        burn(5);
        let _call = clock.enter();
        assert_eq!(clock.now_ns(), 525, "CPU time is off");
    }

    #[test]
    fn wall_clock_waits_for_real() {
        let clock = JobClock::new(ClockKind::Wall, 1.0);
        clock.start();
        let t0 = std::time::Instant::now();
        clock.reach(netsim::now_ns() + 2_000_000);
        clock.advance(Duration::from_millis(2));
        assert!(t0.elapsed() >= Duration::from_millis(4));
        assert!(clock.elapsed() >= Duration::from_millis(4));
    }
}
