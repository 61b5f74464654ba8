//! Timelines of shared resources, and waiting for modeled deadlines.
//!
//! A timeline records when a resource (a node's NIC send or receive side, a board's DMA
//! read or write channel) is busy. In wall-clock emulation it is one `AtomicU64` holding
//! the instant (ns of `CLOCK_MONOTONIC`) until which the resource is busy; in virtual
//! time it is a gap-filling [`Calendar`] (ns of virtual time). The [`Timeline`] trait is
//! what both offer. This module owns the lock-free reservation of busy-until words, the
//! charging of a transfer or a hop on any [`Timeline`] (turning a [`Cost`] into "start",
//! "injected" and "delivered" instants) and the accurate, core-friendly wait for a
//! deadline.
//!
//! It must not allocate or own the timelines: they live in memory the caller owns
//! (typically the job's shared control segment, so that every process of the host sees
//! the same ones; `CLOCK_MONOTONIC` is the same clock in every process). It must not know
//! which resource belongs to which node, board or PE. The charging functions take the
//! current time as an argument, so they are pure given their inputs and testable with a
//! fake clock; only [`now_ns`] and [`wait_until`] read the real clock.

use std::cell::Cell;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::calendar::{self, Calendar};
use crate::cost::{secs_to_ns, Cost};

/// The current `CLOCK_MONOTONIC` time in nanoseconds: the clock of every timeline.
///
/// The same clock in every process of the host, so instants can be compared across
/// processes sharing timelines.
///
/// ```
/// let a = netsim::timeline::now_ns();
/// let b = netsim::timeline::now_ns();
/// assert!(b >= a);
/// ```
pub fn now_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    // CLOCK_MONOTONIC is never negative; clamp defensively instead of wrapping.
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Reserves `occupancy_ns` of a resource, starting no earlier than `earliest_ns` and no
/// earlier than the end of what is already reserved; returns `(start, end)` and leaves
/// the timeline busy until `end`.
///
/// Lock-free (a compare-and-swap loop), safe to call concurrently from many threads and
/// processes on the same timeline. A timeline starts idle at 0. A reservation never moves
/// a timeline backwards.
///
/// ```
/// use std::sync::atomic::AtomicU64;
/// use netsim::timeline::reserve;
/// let nic = AtomicU64::new(0);
/// assert_eq!(reserve(&nic, 100, 50), (100, 150)); // idle: starts at `earliest`
/// assert_eq!(reserve(&nic, 120, 50), (150, 200)); // busy: queues behind
/// ```
pub fn reserve(busy_until: &AtomicU64, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64) {
    let mut current = busy_until.load(Ordering::Acquire);
    loop {
        let start = earliest_ns.max(current);
        let end = start.saturating_add(occupancy_ns);
        match busy_until.compare_exchange_weak(current, end, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return (start, end),
            Err(seen) => current = seen,
        }
    }
}

/// A resource's timeline: something transfers and hops can be charged on.
///
/// Implemented by a busy-until word (`AtomicU64`: requests queue in the order they
/// arrive, exact when they arrive in modeled order, as in wall-clock emulation) and by a
/// [`Calendar`] (requests fill the earliest gap, exact whatever order they arrive in, as
/// virtual time needs).
pub trait Timeline {
    /// Reserves `occupancy_ns` no earlier than `earliest_ns`; returns `(start, end)`.
    fn reserve(&self, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64);

    /// Reserves `occupancy_ns` on `self` (a sender) and `recv` (a receiver) for a
    /// cut-through transfer no earlier than `earliest_ns`; returns `(start, end)`: when
    /// the first of them starts and when the last of them ends.
    fn reserve_pair(&self, recv: &Self, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64);
}

impl Timeline for AtomicU64 {
    /// [`reserve`]: queues behind everything already reserved.
    fn reserve(&self, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64) {
        reserve(self, earliest_ns, occupancy_ns)
    }

    /// The sender from `earliest_ns`, the receiver from the sender's start (data streams
    /// through, the receiver does not wait for the sender to finish); two
    /// reservations that may each queue.
    fn reserve_pair(&self, recv: &Self, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64) {
        let (send_start, _) = reserve(self, earliest_ns, occupancy_ns);
        let (_, recv_end) = reserve(recv, send_start, occupancy_ns);
        (send_start, recv_end)
    }
}

impl Timeline for Calendar {
    /// [`Calendar::reserve`]: the earliest gap that fits.
    fn reserve(&self, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64) {
        Calendar::reserve(self, earliest_ns, occupancy_ns)
    }

    /// [`calendar::reserve_pair`]: the earliest gap common to both.
    fn reserve_pair(&self, recv: &Self, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64) {
        calendar::reserve_pair(self, recv, earliest_ns, occupancy_ns)
    }
}

/// The instants a charged transfer or hop starts and completes at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    /// When the first resource started working on it (ns): with `delivered_ns`, the
    /// span a trace draws for the hop.
    pub start_ns: u64,
    /// When the data has left the sender: the sender may reuse its buffer (ns).
    pub injected_ns: u64,
    /// When the data is complete at the target (ns).
    pub delivered_ns: u64,
}

/// Charges a transfer of `bytes` over a sender resource and a receiver resource (e.g.
/// the NIC send side of one node and the NIC receive side of another), cut-through.
///
/// Both sides are occupied for the cost's occupancy, the receiver from the sender's
/// start (data streams through, it does not wait for the sender to finish), no earlier
/// than `now_ns`: [`Timeline::reserve_pair`]. `start_ns` is when the sender starts,
/// `injected_ns` the receiver's end (the last byte has been accepted), `delivered_ns`
/// adds the cost's latency.
///
/// `send` and `recv` should be different timelines; if they are the same, the two
/// reservations simply queue one after the other.
///
/// ```
/// use std::sync::atomic::AtomicU64;
/// use netsim::cost::Cost;
/// use netsim::timeline::charge_transfer;
/// // 1 us latency, 1 GB/s: 1000 bytes occupy the link for 1 us.
/// let net = Cost::LogGp { latency: 1e-6, overhead: 0.0, gap: 0.0, bandwidth: 1e9 };
/// let (send, recv) = (AtomicU64::new(0), AtomicU64::new(0));
/// let c = charge_transfer(&send, &recv, 10_000, &net, 1000);
/// assert_eq!((c.start_ns, c.injected_ns, c.delivered_ns), (10_000, 11_000, 12_000));
/// ```
pub fn charge_transfer<T: Timeline>(
    send: &T,
    recv: &T,
    now_ns: u64,
    cost: &Cost,
    bytes: u64,
) -> Charge {
    let occupancy = secs_to_ns(cost.occupancy(bytes));
    let latency = secs_to_ns(cost.latency(bytes));
    let (start, end) = send.reserve_pair(recv, now_ns, occupancy);
    Charge {
        start_ns: start,
        injected_ns: end,
        delivered_ns: end.saturating_add(latency),
    }
}

/// Charges one hop of `bytes` on a single resource (e.g. a board's DMA channel):
/// `start_ns` is when its occupancy starts, `injected_ns` when it ends, `delivered_ns`
/// adds the latency.
///
/// ```
/// use std::sync::atomic::AtomicU64;
/// use netsim::cost::Cost;
/// use netsim::timeline::charge_hop;
/// let dma = Cost::Table { points: vec![(32, 100e-6)] };
/// let channel = AtomicU64::new(0);
/// assert_eq!(charge_hop(&channel, 0, &dma, 32).delivered_ns, 100_000);
/// let queued = charge_hop(&channel, 0, &dma, 32);
/// assert_eq!((queued.start_ns, queued.delivered_ns), (100_000, 200_000));
/// ```
pub fn charge_hop<T: Timeline>(channel: &T, now_ns: u64, cost: &Cost, bytes: u64) -> Charge {
    let occupancy = secs_to_ns(cost.occupancy(bytes));
    let latency = secs_to_ns(cost.latency(bytes));
    let (start, end) = channel.reserve(now_ns, occupancy);
    Charge {
        start_ns: start,
        injected_ns: end,
        delivered_ns: end.saturating_add(latency),
    }
}

/// How long before a deadline [`wait_until`] stops sleeping and starts polling. It must
/// exceed the kernel's wake-up lateness: measured here (2-core VM, 1 us timer slack) an
/// absolute sleep woke 6 us late at the median and 26 us late at worst over 200 sleeps.
pub const SLEEP_MARGIN_NS: u64 = 50_000;

/// Below this remaining time [`wait_until`] spins instead of yielding the CPU.
pub const SPIN_NS: u64 = 2_000;

/// The timer slack [`wait_until`] sets on each thread that waits (ns).
pub const TIMER_SLACK_NS: u64 = 1_000;

thread_local! {
    static SLACK_SET: Cell<bool> = const { Cell::new(false) };
}

/// Lowers this thread's timer slack (default 50 us) so that sleeps end close to when
/// asked; done once per thread. Failure is harmless (waits just get less precise
/// sleeps, which the polling phase absorbs).
fn lower_timer_slack() {
    SLACK_SET.with(|set| {
        if !set.get() {
            set.set(true);
            if let Some(slack) = NonZeroU64::new(TIMER_SLACK_NS) {
                let _ = rustix::thread::set_current_timer_slack(Some(slack));
            }
        }
    });
}

/// Waits until [`now_ns`] `>= deadline_ns`; returns at once if it already is.
///
/// Far from the deadline it sleeps (an absolute `clock_nanosleep` on `CLOCK_MONOTONIC`)
/// until [`SLEEP_MARGIN_NS`] before it, with the thread's timer slack lowered to
/// [`TIMER_SLACK_NS`]; then it yields the CPU between polls, and spins only for the
/// last [`SPIN_NS`]. So long waits do not burn a core, and short ones end within about
/// a microsecond or two of the deadline on an unloaded machine.
///
/// ```
/// use netsim::timeline::{now_ns, wait_until};
/// let deadline = now_ns() + 20_000; // 20 us
/// wait_until(deadline);
/// assert!(now_ns() >= deadline);
/// ```
pub fn wait_until(deadline_ns: u64) {
    loop {
        match wait_step(now_ns(), deadline_ns) {
            WaitStep::Done => return,
            WaitStep::SleepUntil(wake_ns) => {
                lower_timer_slack();
                sleep_until(wake_ns);
            }
            WaitStep::Yield => std::thread::yield_now(),
            WaitStep::Spin => std::hint::spin_loop(),
        }
    }
}

/// What [`wait_until`] does next, given the time now and the deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStep {
    /// The deadline has passed: return.
    Done,
    /// Far from the deadline: sleep until this instant ([`SLEEP_MARGIN_NS`] before it).
    SleepUntil(u64),
    /// Near: give the CPU to another thread, then poll again.
    Yield,
    /// Within [`SPIN_NS`]: busy-poll.
    Spin,
}

/// The policy of [`wait_until`] as a pure function of `now_ns` (testable with a fake
/// clock).
///
/// ```
/// use netsim::timeline::{wait_step, WaitStep, SLEEP_MARGIN_NS};
/// assert_eq!(wait_step(10, 5), WaitStep::Done);
/// assert_eq!(wait_step(0, 1_000_000), WaitStep::SleepUntil(1_000_000 - SLEEP_MARGIN_NS));
/// ```
pub fn wait_step(now_ns: u64, deadline_ns: u64) -> WaitStep {
    match deadline_ns.checked_sub(now_ns) {
        None | Some(0) => WaitStep::Done,
        Some(left) if left > SLEEP_MARGIN_NS => WaitStep::SleepUntil(deadline_ns - SLEEP_MARGIN_NS),
        Some(left) if left > SPIN_NS => WaitStep::Yield,
        Some(_) => WaitStep::Spin,
    }
}

/// Sleeps until `target_ns` of `CLOCK_MONOTONIC`, resuming after signals.
fn sleep_until(target_ns: u64) {
    let secs = i64::try_from(target_ns / 1_000_000_000).unwrap_or(i64::MAX);
    // Below 10^9: always fits.
    let nanos = (target_ns % 1_000_000_000) as i64;
    let ts = rustix::time::Timespec {
        tv_sec: secs,
        tv_nsec: nanos,
    };
    loop {
        match rustix::thread::clock_nanosleep_absolute(rustix::time::ClockId::Monotonic, &ts) {
            Err(rustix::io::Errno::INTR) => continue,
            // Done, or sleeping is impossible: the caller's polling loop finishes the wait.
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 us latency, 1 GB/s: 1000 bytes occupy a resource for exactly 1000 ns.
    fn link() -> Cost {
        Cost::LogGp {
            latency: 1e-6,
            overhead: 0.0,
            gap: 0.0,
            bandwidth: 1e9,
        }
    }

    #[test]
    fn free_resource_starts_at_earliest() {
        let t = AtomicU64::new(0);
        assert_eq!(reserve(&t, 5_000, 300), (5_000, 5_300));
        assert_eq!(t.load(Ordering::Relaxed), 5_300);
        // Idle again later: a reservation after the busy period starts at `earliest`.
        assert_eq!(reserve(&t, 9_000, 100), (9_000, 9_100));
    }

    #[test]
    fn busy_resource_queues() {
        let t = AtomicU64::new(0);
        assert_eq!(reserve(&t, 0, 1_000), (0, 1_000));
        assert_eq!(reserve(&t, 200, 1_000), (1_000, 2_000));
        assert_eq!(reserve(&t, 500, 0), (2_000, 2_000));
        assert_eq!(t.load(Ordering::Relaxed), 2_000);
    }

    #[test]
    fn reserve_saturates() {
        let t = AtomicU64::new(u64::MAX - 10);
        assert_eq!(reserve(&t, 0, 100), (u64::MAX - 10, u64::MAX));
    }

    #[test]
    fn single_transfer_is_cut_through() {
        let (s, r) = (AtomicU64::new(0), AtomicU64::new(0));
        let c = charge_transfer(&s, &r, 1_000, &link(), 1_000);
        // Both sides busy for the same 1000 ns, overlapping (not 2000 ns in series).
        assert_eq!(s.load(Ordering::Relaxed), 2_000);
        assert_eq!(r.load(Ordering::Relaxed), 2_000);
        assert_eq!(
            c,
            Charge {
                start_ns: 1_000,
                injected_ns: 2_000,
                delivered_ns: 3_000
            }
        );
    }

    #[test]
    fn four_senders_to_one_receiver_serialise() {
        let senders: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
        let recv = AtomicU64::new(0);
        let delivered: Vec<u64> = senders
            .iter()
            .map(|s| charge_transfer(s, &recv, 0, &link(), 1_000).delivered_ns)
            .collect();
        // Occupancy 1000 ns, latency 1000 ns: k * occupancy + latency.
        assert_eq!(delivered, vec![2_000, 3_000, 4_000, 5_000]);
        // The senders themselves were each busy only for their own 1000 ns.
        for s in &senders {
            assert_eq!(s.load(Ordering::Relaxed), 1_000);
        }
    }

    #[test]
    fn disjoint_pairs_overlap() {
        let t: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
        let a = charge_transfer(&t[0], &t[1], 0, &link(), 1_000);
        let b = charge_transfer(&t[2], &t[3], 0, &link(), 1_000);
        assert_eq!(a, b);
        assert_eq!(b.delivered_ns, 2_000);
    }

    #[test]
    fn busy_sender_delays_receiver_start() {
        let (s, r) = (AtomicU64::new(0), AtomicU64::new(0));
        // The sender is busy until 5000 (e.g. sending elsewhere).
        reserve(&s, 0, 5_000);
        let c = charge_transfer(&s, &r, 0, &link(), 1_000);
        assert_eq!(c.injected_ns, 6_000);
        assert_eq!(c.delivered_ns, 7_000);
    }

    #[test]
    fn one_sender_to_two_receivers_serialises_on_the_sender() {
        let (s, r1, r2) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        let a = charge_transfer(&s, &r1, 0, &link(), 1_000);
        let b = charge_transfer(&s, &r2, 0, &link(), 1_000);
        assert_eq!(a.delivered_ns, 2_000);
        assert_eq!(b.delivered_ns, 3_000);
    }

    #[test]
    fn charge_hop_accumulates() {
        let dma = Cost::Table {
            points: vec![(32, 10e-6), (1 << 20, 1e-3)],
        };
        let ch = AtomicU64::new(0);
        let a = charge_hop(&ch, 0, &dma, 32);
        let b = charge_hop(&ch, 0, &dma, 32);
        let c = charge_hop(&ch, 100_000, &dma, 1 << 20);
        // Tables have no separate latency: injected == delivered.
        assert_eq!(
            a,
            Charge {
                start_ns: 0,
                injected_ns: 10_000,
                delivered_ns: 10_000
            }
        );
        assert_eq!(b.delivered_ns, 20_000);
        // The channel was idle by 100_000: the 1 MiB hop starts then and takes 1 ms.
        assert_eq!(c.delivered_ns, 1_100_000);
        let lat = link();
        let ch = AtomicU64::new(0);
        assert_eq!(
            charge_hop(&ch, 0, &lat, 1_000),
            Charge {
                start_ns: 0,
                injected_ns: 1_000,
                delivered_ns: 2_000
            }
        );
        assert_eq!(
            charge_hop(&ch, 0, &lat, 1_000),
            Charge {
                start_ns: 1_000,
                injected_ns: 2_000,
                delivered_ns: 3_000
            }
        );
    }

    #[test]
    fn busy_sender_start_is_reported() {
        let (s, r) = (AtomicU64::new(0), AtomicU64::new(0));
        reserve(&r, 0, 3_000);
        let c = charge_transfer(&s, &r, 500, &link(), 1_000);
        // The sender starts at once; the receiver only at 3000, so the data is in at 4000.
        assert_eq!(c.start_ns, 500);
        assert_eq!((c.injected_ns, c.delivered_ns), (4_000, 5_000));
    }

    #[test]
    fn charges_on_calendars_fill_gaps_in_either_order() {
        // A (virtual clock 1 ms) and B (0.5 ms) send 1000 bytes each over the same pair
        // of NIC sides; whichever is charged first, B finds the NICs idle at 0.5 ms.
        let run = |a_first: bool| {
            let (s, r) = (Calendar::new(), Calendar::new());
            let a = || charge_transfer(&s, &r, 1_000_000, &link(), 1_000);
            let b = || charge_transfer(&s, &r, 500_000, &link(), 1_000);
            if a_first {
                let ca = a();
                (ca, b())
            } else {
                let cb = b();
                (a(), cb)
            }
        };
        let (a, b) = run(true);
        assert_eq!((a, b), run(false));
        assert_eq!(
            b,
            Charge {
                start_ns: 500_000,
                injected_ns: 501_000,
                delivered_ns: 502_000
            }
        );
        assert_eq!(a.start_ns, 1_000_000);
        // A single busy-until word would have queued B behind A.
        let (s, r) = (AtomicU64::new(0), AtomicU64::new(0));
        charge_transfer(&s, &r, 1_000_000, &link(), 1_000);
        assert_eq!(
            charge_transfer(&s, &r, 500_000, &link(), 1_000).start_ns,
            1_001_000
        );
    }

    #[test]
    fn hops_on_a_calendar_fill_gaps() {
        let ch = Calendar::new();
        assert_eq!(charge_hop(&ch, 10_000, &link(), 1_000).start_ns, 10_000);
        let early = charge_hop(&ch, 0, &link(), 1_000);
        assert_eq!(
            (early.start_ns, early.injected_ns, early.delivered_ns),
            (0, 1_000, 2_000)
        );
        // Busy [0, 1000) and [10000, 11000): 1000 ns from 500 fit from 1000.
        assert_eq!(charge_hop(&ch, 500, &link(), 1_000).start_ns, 1_000);
        // Too long for the rest of the gap [2000, 10000): after 11000.
        assert_eq!(charge_hop(&ch, 0, &link(), 9_000).start_ns, 11_000);
    }

    #[test]
    fn concurrent_reservations_do_not_overlap() {
        let t = AtomicU64::new(0);
        let mut spans: Vec<(u64, u64)> = std::thread::scope(|sc| {
            let handles: Vec<_> = (0..4)
                .map(|_| sc.spawn(|| (0..1000).map(|_| reserve(&t, 0, 7)).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        assert_eq!(spans.len(), 4000);
        spans.sort_unstable();
        for (i, (start, end)) in spans.iter().enumerate() {
            assert_eq!((*start, *end), (i as u64 * 7, i as u64 * 7 + 7));
        }
    }

    #[test]
    fn now_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(a > 0 && b >= a);
    }

    #[test]
    fn wait_until_not_before_deadline() {
        for delta in [0u64, 1_000, 10_000, 100_000, 2_000_000] {
            let deadline = now_ns() + delta;
            wait_until(deadline);
            assert!(now_ns() >= deadline, "returned early for a {delta} ns wait");
        }
    }

    #[test]
    fn wait_until_past_deadline_returns_at_once() {
        let now = now_ns();
        let past = now.saturating_sub(3_600_000_000_000);
        // The policy for a past (or present) deadline is to return, not to sleep...
        assert_eq!(wait_step(now, past), WaitStep::Done);
        assert_eq!(wait_step(now, now), WaitStep::Done);
        assert_eq!(wait_step(now, 0), WaitStep::Done);
        // ...and the real call follows it (a sleep of an hour would hang the test).
        wait_until(past);
        wait_until(0);
        assert!(now_ns() >= now);
    }

    #[test]
    fn wait_policy_with_a_fake_clock() {
        let d = 10_000_000;
        assert_eq!(wait_step(0, d), WaitStep::SleepUntil(d - SLEEP_MARGIN_NS));
        assert_eq!(
            wait_step(d - SLEEP_MARGIN_NS - 1, d),
            WaitStep::SleepUntil(d - SLEEP_MARGIN_NS)
        );
        assert_eq!(wait_step(d - SLEEP_MARGIN_NS, d), WaitStep::Yield);
        assert_eq!(wait_step(d - SPIN_NS - 1, d), WaitStep::Yield);
        assert_eq!(wait_step(d - SPIN_NS, d), WaitStep::Spin);
        assert_eq!(wait_step(d - 1, d), WaitStep::Spin);
        assert_eq!(wait_step(d, d), WaitStep::Done);
        assert_eq!(wait_step(d + 1, d), WaitStep::Done);
    }
}
