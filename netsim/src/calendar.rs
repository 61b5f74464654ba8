//! Gap-filling reservation calendars: the timelines of shared resources in virtual time.
//!
//! A [`Calendar`] keeps the recent busy intervals `[start, end)` (ns) of one resource and
//! places each reservation in the earliest gap that fits, so the result does not depend
//! on the real-time order in which processes ask: a PE whose virtual clock lags behind
//! still finds the resource idle at its own instant even if a PE ahead of it reserved a
//! later interval first. A single "busy until" word ([`crate::timeline::reserve`]) is
//! exact only when requests arrive in modeled order, which wall-clock emulation
//! guarantees and virtual time does not.
//!
//! This module owns the calendar's layout (plain atomics, valid when all-zero, meant to
//! be embedded in memory shared by several processes), its lock, and the placement of
//! one reservation ([`Calendar::reserve`]) or of one reservation on two calendars at
//! once ([`reserve_pair`]). It must not allocate the calendars nor know which resource,
//! node or PE a calendar stands for; the caller embeds them where every process sees
//! them (see `docs/architecture.md`).
//!
//! # Capacity and the floor (the trade-off)
//!
//! A calendar holds at most [`CAPACITY`] intervals, kept sorted and merged when
//! adjacent (back-to-back reservations of a saturated resource take one slot). When a
//! new interval would exceed the capacity, the OLDEST interval (earliest in time) is
//! dropped and the calendar's `floor` is raised to its end: from then on nothing is
//! placed before the floor, as if the resource had been busy all along until then.
//! Reservations therefore never overlap; what is lost is only gap filling in the far
//! past: a request that lags more than [`CAPACITY`] busy periods behind is placed at or
//! after the floor instead of in its gap (later than exact, never earlier), and which
//! interval was dropped can depend on the real order of requests. Within the window of
//! the last [`CAPACITY`] busy periods the calendar is exact and order-independent for
//! requests that do not overlap in virtual time.
//!
//! # The lock, and why it is sound across processes
//!
//! Every operation that reads or changes the intervals holds the calendar's lock word
//! (an `AtomicU32`: 0 free, non-zero held), taken with a compare-and-swap `0 -> 1`
//! (`Acquire`) and released by storing 0 (`Release`). Mutual exclusion holds across
//! processes as well as threads: the word is one location of physical memory that every
//! process maps, and an atomic read-modify-write on it is atomic with respect to every
//! CPU whatever virtual address it is reached through; only one CAS can see 0 and win.
//! The interval data is read and written only while holding the lock, so the
//! release/acquire pair on the word orders one holder's writes before the next holder's
//! reads (the same hardware guarantee the lock-free timelines of
//! [`crate::timeline`] already rely on between processes).
//!
//! A waiter spins a bounded number of times ([`SPINS_BEFORE_YIELD`]) and then yields the
//! CPU between attempts, so a holder preempted on a busy 2-core machine gets to run. The
//! critical section is short (at most a few hundred word copies, no system call, no
//! allocation, nothing that can panic on the shared data) and a panic would release the
//! lock on unwinding. If a process dies while holding the lock (killed by a signal),
//! the lock is never released and other processes using that calendar would wait
//! forever; but a PE that dies ends the job (the launcher terminates every other PE),
//! so the waiters are ended with it.
//!
//! Two calendars ([`reserve_pair`]) are locked without a global order (addresses are
//! not one: each process may map the shared memory at a different address): a thread
//! waits only for its first lock, then merely TRIES the second for a bounded number of
//! spins and, failing, releases the first and starts over with the other calendar
//! first. No thread ever waits while holding a lock, so there is no deadlock.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// How many busy intervals a calendar keeps (see the module docs for what happens
/// beyond).
pub const CAPACITY: usize = 48;

/// How many times a waiter polls a held lock before yielding the CPU between polls.
pub const SPINS_BEFORE_YIELD: u32 = 128;

/// The busy intervals of one shared resource in (virtual) time, with gap-filling
/// reservation. Lives in shared memory: all-zero bytes are a valid empty calendar.
///
/// ```
/// use netsim::Calendar;
/// let nic = Calendar::new();
/// // A PE at 1.0 ms reserves first; one at 0.5 ms still finds the NIC idle then.
/// assert_eq!(nic.reserve(1_000_000, 100_000), (1_000_000, 1_100_000));
/// assert_eq!(nic.reserve(500_000, 50_000), (500_000, 550_000));
/// ```
#[repr(C)]
pub struct Calendar {
    /// The lock word: 0 free, non-zero held.
    lock: AtomicU32,
    /// How many entries of `starts`/`ends` are in use (clamped to [`CAPACITY`] on read).
    len: AtomicU32,
    /// Nothing is placed before this instant (raised when an interval is dropped).
    floor: AtomicU64,
    /// Interval starts, sorted, for the first `len` entries.
    starts: [AtomicU64; CAPACITY],
    /// Interval ends (exclusive), `starts[i] < ends[i] <= starts[i + 1]`.
    ends: [AtomicU64; CAPACITY],
}

// Embedded about 34 times per control block: keep each well under 1 KiB.
const _: () = assert!(std::mem::size_of::<Calendar>() <= 1024);

impl Default for Calendar {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Calendar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let busy = {
            let _held = self.lock();
            Busy::load(self)
        };
        f.debug_struct("Calendar")
            .field("floor", &busy.floor)
            .field("intervals", &busy.as_slice())
            .finish()
    }
}

impl Calendar {
    /// An empty calendar (the same state as all-zero bytes).
    pub const fn new() -> Self {
        Self {
            lock: AtomicU32::new(0),
            len: AtomicU32::new(0),
            floor: AtomicU64::new(0),
            starts: [const { AtomicU64::new(0) }; CAPACITY],
            ends: [const { AtomicU64::new(0) }; CAPACITY],
        }
    }

    /// Reserves `occupancy_ns` at the earliest `start >= max(earliest_ns, floor)` such
    /// that `[start, start + occupancy_ns)` overlaps no recorded interval; records it
    /// and returns `(start, end)`. Arithmetic saturates at `u64::MAX`.
    ///
    /// A zero occupancy overlaps nothing: it returns `(t, t)` with
    /// `t = max(earliest_ns, floor)` and records nothing.
    ///
    /// ```
    /// let dma = netsim::Calendar::new();
    /// assert_eq!(dma.reserve(0, 100), (0, 100));
    /// assert_eq!(dma.reserve(300, 100), (300, 400));
    /// assert_eq!(dma.reserve(50, 100), (100, 200)); // fills the gap [100, 300)
    /// assert_eq!(dma.reserve(50, 150), (400, 550)); // does not fit before 300
    /// ```
    pub fn reserve(&self, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64) {
        if occupancy_ns == 0 {
            let at = earliest_ns.max(self.floor.load(Ordering::Acquire));
            return (at, at);
        }
        let _held = self.lock();
        let mut busy = Busy::load(self);
        let span = busy.place(earliest_ns, occupancy_ns);
        busy.store(self);
        span
    }

    /// The instant before which nothing is placed (0 until the calendar overflowed).
    pub fn floor(&self) -> u64 {
        self.floor.load(Ordering::Acquire)
    }

    /// The recorded busy intervals, sorted (a snapshot, for tests and diagnostics).
    pub fn intervals(&self) -> Vec<(u64, u64)> {
        let _held = self.lock();
        Busy::load(self).as_slice().to_vec()
    }

    /// Takes the lock: spins [`SPINS_BEFORE_YIELD`] times, then yields between polls.
    fn lock(&self) -> Held<'_> {
        let mut polls = 0u32;
        loop {
            if let Some(held) = self.try_lock() {
                return held;
            }
            // Test before the next CAS so waiters only read the shared line.
            while self.lock.load(Ordering::Relaxed) != 0 {
                if polls < SPINS_BEFORE_YIELD {
                    polls += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Takes the lock if it is free, without waiting.
    fn try_lock(&self) -> Option<Held<'_>> {
        self.lock
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Held(&self.lock))
    }

    /// Tries to take the lock for a bounded number of polls (never yields: the caller
    /// holds another lock and must not wait long with it).
    fn try_lock_briefly(&self) -> Option<Held<'_>> {
        for _ in 0..SPINS_BEFORE_YIELD {
            if self.lock.load(Ordering::Relaxed) == 0 {
                if let Some(held) = self.try_lock() {
                    return Some(held);
                }
            }
            std::hint::spin_loop();
        }
        None
    }
}

/// A held calendar lock; dropping it (also on unwinding) releases the lock.
struct Held<'a>(&'a AtomicU32);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Locks two different calendars (see the module docs: no thread waits while holding
/// a lock, so two threads locking (a, b) and (b, a) cannot deadlock).
fn lock_both<'a>(a: &'a Calendar, b: &'a Calendar) -> (Held<'a>, Held<'a>) {
    let (mut first, mut second) = (a, b);
    loop {
        let held = first.lock();
        if let Some(other) = second.try_lock_briefly() {
            return (held, other);
        }
        drop(held);
        std::thread::yield_now();
        std::mem::swap(&mut first, &mut second);
    }
}

/// Reserves `occupancy_ns` on two calendars at once (a cut-through transfer occupying a
/// sender NIC and a receiver NIC together): the earliest
/// `start >= max(earliest_ns, both floors)` where both are free for the occupancy,
/// recorded on both; returns `(start, end)`.
///
/// If `a` and `b` are the same calendar, the two occupancies cannot share it: they are
/// placed like two reservations, the second from the first's start (so right after the
/// first if nothing is in the way), and the result spans both: `(first start, second
/// end)`. The same as two transfers queueing on one busy-until word.
///
/// ```
/// use netsim::{reserve_pair, Calendar};
/// let (send, recv) = (Calendar::new(), Calendar::new());
/// send.reserve(0, 100);
/// recv.reserve(150, 100);
/// // Free on the sender from 100, on the receiver before 150 or from 250: both at 250.
/// assert_eq!(reserve_pair(&send, &recv, 0, 100), (250, 350));
/// assert_eq!(reserve_pair(&send, &recv, 0, 50), (100, 150)); // the common gap
/// ```
pub fn reserve_pair(a: &Calendar, b: &Calendar, earliest_ns: u64, occupancy_ns: u64) -> (u64, u64) {
    if std::ptr::eq(a, b) {
        if occupancy_ns == 0 {
            return a.reserve(earliest_ns, 0);
        }
        let _held = a.lock();
        let mut busy = Busy::load(a);
        let (start, _) = busy.place(earliest_ns, occupancy_ns);
        let (_, end) = busy.place(start, occupancy_ns);
        busy.store(a);
        return (start, end);
    }
    if occupancy_ns == 0 {
        let at = earliest_ns.max(a.floor()).max(b.floor());
        return (at, at);
    }
    let _held = lock_both(a, b);
    let (mut busy_a, mut busy_b) = (Busy::load(a), Busy::load(b));
    let start = common_fit(&busy_a, &busy_b, earliest_ns, occupancy_ns);
    let end = start.saturating_add(occupancy_ns);
    busy_a.insert(start, end);
    busy_b.insert(start, end);
    busy_a.store(a);
    busy_b.store(b);
    (start, end)
}

/// The earliest start `>= from` where both `a` and `b` are free for `occupancy`.
///
/// Invariant: no feasible start lies in `[from, t)`. Each round moves `t` to `a`'s
/// first fit from `t`, then to `b`'s first fit from there; if `b` did not have to move
/// it, both fit. Otherwise `t` strictly grows to the end of one of `b`'s intervals (or
/// its floor), which happens at most once per interval, so the loop ends within
/// `CAPACITY + 2` rounds.
fn common_fit(a: &Busy, b: &Busy, from: u64, occupancy: u64) -> u64 {
    let mut t = from;
    loop {
        let at_a = a.first_fit(t, occupancy);
        let at_b = b.first_fit(at_a, occupancy);
        if at_b == at_a {
            return at_a;
        }
        t = at_b;
    }
}

/// A private copy of a calendar's state, worked on while its lock is held.
struct Busy {
    floor: u64,
    len: usize,
    /// Sorted, non-overlapping `[start, end)`, `len` used; one spare slot for insertion.
    spans: [(u64, u64); CAPACITY + 1],
}

impl Busy {
    /// Copies the calendar's state (the caller holds its lock). A corrupt length is
    /// clamped, so no index goes out of bounds whatever the shared memory holds.
    fn load(cal: &Calendar) -> Self {
        let len = usize::try_from(cal.len.load(Ordering::Relaxed))
            .unwrap_or(CAPACITY)
            .min(CAPACITY);
        let mut spans = [(0, 0); CAPACITY + 1];
        for ((span, start), end) in spans.iter_mut().zip(&cal.starts).zip(&cal.ends).take(len) {
            *span = (start.load(Ordering::Relaxed), end.load(Ordering::Relaxed));
        }
        Self {
            floor: cal.floor.load(Ordering::Relaxed),
            len,
            spans,
        }
    }

    /// Writes the state back (the caller holds the calendar's lock).
    fn store(&self, cal: &Calendar) {
        for ((span, start), end) in self.as_slice().iter().zip(&cal.starts).zip(&cal.ends) {
            start.store(span.0, Ordering::Relaxed);
            end.store(span.1, Ordering::Relaxed);
        }
        // `len <= CAPACITY` always holds, so the conversion never fails.
        cal.len
            .store(u32::try_from(self.len).unwrap_or(0), Ordering::Relaxed);
        cal.floor.store(self.floor, Ordering::Release);
    }

    fn as_slice(&self) -> &[(u64, u64)] {
        &self.spans[..self.len.min(CAPACITY)]
    }

    /// The earliest start `>= max(from, floor)` where `[start, start + occupancy)`
    /// overlaps no interval (saturating: may return `u64::MAX`).
    fn first_fit(&self, from: u64, occupancy: u64) -> u64 {
        let mut t = from.max(self.floor);
        for &(start, end) in self.as_slice() {
            if end <= t {
                continue; // entirely before the candidate
            }
            if t.saturating_add(occupancy) <= start {
                break; // fits before it, hence before every later one
            }
            t = end; // overlaps: try right after it
        }
        t
    }

    /// Places and records one reservation; returns `(start, end)`.
    fn place(&mut self, earliest: u64, occupancy: u64) -> (u64, u64) {
        let start = self.first_fit(earliest, occupancy);
        let end = start.saturating_add(occupancy);
        self.insert(start, end);
        (start, end)
    }

    /// Records `[start, end)`, which overlaps no interval; merges it with adjacent
    /// ones; on overflow drops the oldest interval and raises the floor to its end.
    fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return; // empty (a saturated reservation at u64::MAX): nothing to record
        }
        let len = self.len.min(CAPACITY);
        let pos = self.spans[..len].partition_point(|&(s, _)| s < start);
        let joins_prev = pos > 0 && self.spans[pos - 1].1 == start;
        let joins_next = pos < len && self.spans[pos].0 == end;
        match (joins_prev, joins_next) {
            (true, true) => {
                self.spans[pos - 1].1 = self.spans[pos].1;
                self.spans.copy_within(pos + 1..len, pos);
                self.len = len - 1;
            }
            (true, false) => self.spans[pos - 1].1 = end,
            (false, true) => self.spans[pos].0 = start,
            (false, false) => {
                // The spare slot at CAPACITY makes room for one more before trimming.
                self.spans.copy_within(pos..len, pos + 1);
                self.spans[pos] = (start, end);
                self.len = len + 1;
                if self.len > CAPACITY {
                    self.floor = self.floor.max(self.spans[0].1);
                    self.spans.copy_within(1..self.len, 0);
                    self.len -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_zero_bytes_are_an_empty_calendar() {
        // SAFETY: `Calendar` is `repr(C)` and made only of `AtomicU32`/`AtomicU64` (and
        // arrays of them), for which all-zero bytes are a valid value (0).
        let cal: Calendar = unsafe { std::mem::zeroed() };
        assert_eq!(cal.floor(), 0);
        assert!(cal.intervals().is_empty());
        assert_eq!(cal.reserve(10, 5), (10, 15));
        assert_eq!(cal.intervals(), vec![(10, 15)]);
    }

    #[test]
    fn lagging_request_fills_the_gap_in_either_order() {
        // PE A at 1.0 ms wants [1.0, 1.1) ms, PE B at 0.5 ms wants 0.05 ms.
        let a_first = Calendar::new();
        let a = a_first.reserve(1_000_000, 100_000);
        let b = a_first.reserve(500_000, 50_000);
        let b_first = Calendar::new();
        let b2 = b_first.reserve(500_000, 50_000);
        let a2 = b_first.reserve(1_000_000, 100_000);
        assert_eq!((a, b), (a2, b2));
        assert_eq!(b, (500_000, 550_000));
        assert_eq!(a, (1_000_000, 1_100_000));
        assert_eq!(a_first.intervals(), b_first.intervals());
    }

    #[test]
    fn back_to_back_reservations_queue_and_merge() {
        let cal = Calendar::new();
        assert_eq!(cal.reserve(0, 1_000), (0, 1_000));
        assert_eq!(cal.reserve(200, 1_000), (1_000, 2_000));
        assert_eq!(cal.reserve(0, 500), (2_000, 2_500));
        // Adjacent intervals take one slot.
        assert_eq!(cal.intervals(), vec![(0, 2_500)]);
    }

    #[test]
    fn request_that_does_not_fit_a_gap_goes_after() {
        let cal = Calendar::new();
        cal.reserve(0, 100);
        cal.reserve(200, 100); // gap [100, 200)
        cal.reserve(400, 100); // gap [300, 400)
        assert_eq!(cal.reserve(50, 150), (500, 650));
        assert_eq!(cal.reserve(50, 100), (100, 200)); // exactly fills the first gap
        assert_eq!(cal.reserve(0, 60), (300, 360));
        assert_eq!(cal.intervals(), vec![(0, 360), (400, 650)]);
    }

    #[test]
    fn zero_occupancy_records_nothing() {
        let cal = Calendar::new();
        cal.reserve(0, 1_000);
        assert_eq!(cal.reserve(500, 0), (500, 500));
        assert_eq!(cal.intervals(), vec![(0, 1_000)]);
        assert_eq!(reserve_pair(&cal, &Calendar::new(), 7, 0), (7, 7));
    }

    #[test]
    fn overflow_drops_the_oldest_and_raises_the_floor() {
        let cal = Calendar::new();
        // CAPACITY + 1 separate intervals [10k, 10k + 5), inserted newest first.
        for k in (0..=CAPACITY as u64).rev() {
            assert_eq!(cal.reserve(10 * k, 5), (10 * k, 10 * k + 5));
        }
        assert_eq!(cal.floor(), 5);
        let kept = cal.intervals();
        assert_eq!(kept.len(), CAPACITY);
        assert_eq!(kept[0], (10, 15));
        // A request before the floor is placed at the floor, not in the lost past.
        assert_eq!(cal.reserve(0, 5), (5, 10));
        // The floor also bounds zero-occupancy requests.
        assert_eq!(cal.reserve(0, 0), (5, 5));
        // Reservations still never overlap: [5, 10) merged with [10, 15).
        assert_eq!(cal.intervals()[0], (5, 15));
    }

    #[test]
    fn overflow_by_a_reservation_before_all_others_moves_the_floor_past_it() {
        let cal = Calendar::new();
        for k in 1..=CAPACITY as u64 {
            cal.reserve(10 * k, 5);
        }
        assert_eq!(cal.reserve(0, 5), (0, 5));
        assert_eq!(cal.floor(), 5);
        assert_eq!(cal.intervals().len(), CAPACITY);
        assert_eq!(cal.reserve(0, 3), (5, 8));
    }

    #[test]
    fn saturates_at_u64_max() {
        let cal = Calendar::new();
        assert_eq!(cal.reserve(u64::MAX - 10, 100), (u64::MAX - 10, u64::MAX));
        // Nothing fits after it any more: the result is empty at u64::MAX.
        assert_eq!(cal.reserve(u64::MAX - 20, 50), (u64::MAX, u64::MAX));
        // An occupancy reaching u64::MAX overlaps it: also empty at u64::MAX.
        assert_eq!(cal.reserve(0, u64::MAX), (u64::MAX, u64::MAX));
        // But the past is still free.
        assert_eq!(cal.reserve(0, 1_000), (0, 1_000));
        assert_eq!(cal.intervals(), vec![(0, 1_000), (u64::MAX - 10, u64::MAX)]);
        let (a, b) = (Calendar::new(), Calendar::new());
        assert_eq!(
            reserve_pair(&a, &b, u64::MAX - 1, 5),
            (u64::MAX - 1, u64::MAX)
        );
        assert_eq!(reserve_pair(&a, &b, u64::MAX - 1, 5), (u64::MAX, u64::MAX));
    }

    #[test]
    fn reserve_pair_finds_a_common_gap() {
        let (s, r) = (Calendar::new(), Calendar::new());
        // Sender busy [0, 100) and [300, 400); receiver busy [100, 250) and [450, 500).
        s.reserve(0, 100);
        s.reserve(300, 100);
        r.reserve(100, 150);
        r.reserve(450, 50);
        // 50 ns: free on both in [250, 300).
        assert_eq!(reserve_pair(&s, &r, 0, 50), (250, 300));
        // 60 ns: not there any more; [400, 450) is only 50; next common gap from 500.
        assert_eq!(reserve_pair(&s, &r, 0, 60), (500, 560));
        // Recorded on both.
        assert_eq!(s.intervals(), vec![(0, 100), (250, 400), (500, 560)]);
        assert_eq!(r.intervals(), vec![(100, 300), (450, 560)]);
        // Swapping the arguments gives the same placement.
        assert_eq!(reserve_pair(&r, &s, 0, 40), (400, 440));
    }

    #[test]
    fn reserve_pair_on_one_calendar_queues_twice() {
        let cal = Calendar::new();
        cal.reserve(150, 50);
        // First 100 at [0, 100), second from 0 after it: [100, 150) fits exactly.
        assert_eq!(reserve_pair(&cal, &cal, 0, 50), (0, 100));
        // Then [100, 150) fills the gap up to 200, and the second goes after it.
        assert_eq!(reserve_pair(&cal, &cal, 0, 50), (100, 250));
        assert_eq!(cal.intervals(), vec![(0, 250)]);
    }

    #[test]
    fn debug_shows_the_intervals() {
        let cal = Calendar::new();
        cal.reserve(3, 4);
        let text = format!("{cal:?}");
        assert!(text.contains("(3, 7)"), "{text}");
    }
}
