//! Calendars under concurrency: many threads reserving on shared calendars (single and
//! pair reservations, pairs locked in both orders) never get overlapping intervals and
//! never deadlock; and requests that do not overlap in time get the same placement
//! whatever order (or interleaving of threads) they are issued in.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use netsim::calendar::CAPACITY;
use netsim::{reserve_pair, Calendar};

/// What one test may take at most before it is declared deadlocked.
const BOUND: Duration = Duration::from_secs(60);

/// A request: on one calendar or on two at once, no earlier than `earliest` for `occ`.
#[derive(Debug, Clone, Copy)]
struct Request {
    on: (usize, Option<usize>),
    earliest: u64,
    occ: u64,
}

impl Request {
    fn issue(&self, cals: &[Calendar]) -> (u64, u64) {
        match self.on {
            (a, None) => cals[a].reserve(self.earliest, self.occ),
            (a, Some(b)) => reserve_pair(&cals[a], &cals[b], self.earliest, self.occ),
        }
    }
}

/// xorshift64*: a small deterministic generator (no dependency needed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Runs `work(t)` on `threads` threads; returns their results, or panics if they do
/// not all finish within [`BOUND`] (a deadlock would otherwise hang the test).
fn run_bounded<T: Send + 'static>(
    threads: usize,
    work: impl Fn(usize) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let work = Arc::new(work);
    let (tx, rx) = mpsc::channel();
    for t in 0..threads {
        let (tx, work) = (tx.clone(), Arc::clone(&work));
        std::thread::spawn(move || {
            let _ = tx.send((t, work(t)));
        });
    }
    drop(tx);
    let deadline = Instant::now() + BOUND;
    let mut out: Vec<Option<T>> = (0..threads).map(|_| None).collect();
    for _ in 0..threads {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((t, result)) => out[t] = Some(result),
            Err(e) => panic!("threads did not finish within {BOUND:?} (deadlock?): {e}"),
        }
    }
    out.into_iter().flatten().collect()
}

/// Asserts that `spans` (of one calendar) are pairwise disjoint.
fn assert_disjoint(cal: usize, spans: &mut [(u64, u64)]) {
    spans.sort_unstable();
    for w in spans.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "calendar {cal}: {:?} overlaps {:?}",
            w[0],
            w[1]
        );
    }
}

#[test]
fn concurrent_reservations_never_overlap_nor_deadlock() {
    const CALS: usize = 3;
    const THREADS: usize = 4;
    const OPS: usize = 20_000;
    let cals: Arc<Vec<Calendar>> = Arc::new((0..CALS).map(|_| Calendar::new()).collect());
    let shared = Arc::clone(&cals);
    let results = run_bounded(THREADS, move |t| {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
        (0..OPS)
            .map(|_| {
                let a = rng.below(CALS as u64) as usize;
                // Half single reservations, half pairs; a pair's order is random, so
                // (a, b) and (b, a) are both locked concurrently.
                let b = (rng.below(2) == 0)
                    .then(|| (a + 1 + rng.below(CALS as u64 - 1) as usize) % CALS);
                let req = Request {
                    on: (a, b),
                    earliest: rng.below(2_000_000),
                    occ: 1 + rng.below(5_000),
                };
                (req, req.issue(&shared))
            })
            .collect::<Vec<_>>()
    });
    let mut per_cal: Vec<Vec<(u64, u64)>> = vec![Vec::new(); CALS];
    let mut pairs = 0;
    for (req, (start, end)) in results.into_iter().flatten() {
        assert!(start >= req.earliest, "{req:?} placed at {start}");
        assert_eq!(end - start, req.occ, "{req:?}");
        per_cal[req.on.0].push((start, end));
        if let Some(b) = req.on.1 {
            pairs += 1;
            per_cal[b].push((start, end));
        }
    }
    assert!(pairs > THREADS * OPS / 4, "the mix had pair reservations");
    for (i, spans) in per_cal.iter_mut().enumerate() {
        assert_disjoint(i, spans);
        // The calendar's own record is sorted, disjoint, within capacity and above
        // its floor (it overflowed: the requests spread over thousands of intervals).
        let cal = &cals[i];
        let mut kept = cal.intervals();
        assert!(kept.len() <= CAPACITY);
        assert!(cal.floor() > 0, "calendar {i} overflowed");
        assert!(kept.iter().all(|&(s, e)| s >= cal.floor() && s < e));
        let sorted = kept.clone();
        assert_disjoint(i, &mut kept);
        assert_eq!(kept, sorted, "calendar {i} keeps its intervals sorted");
    }
}

/// Requests on three calendars whose windows `[earliest, earliest + occ)` are pairwise
/// disjoint in time (some exactly adjacent, so intervals merge), fewer than
/// [`CAPACITY`] per calendar.
fn disjoint_requests() -> Vec<Request> {
    let mut rng = Rng(42);
    let mut at = 0;
    (0..40)
        .map(|_| {
            let a = rng.below(3) as usize;
            let b = (rng.below(3) == 0).then_some((a + 1) % 3);
            let occ = 100 + rng.below(900);
            // Every third request starts exactly where the previous one ended.
            at += if rng.below(3) == 0 {
                0
            } else {
                rng.below(5_000)
            };
            let req = Request {
                on: (a, b),
                earliest: at,
                occ,
            };
            at += occ;
            req
        })
        .collect()
}

/// Busy intervals `[start, end)`, e.g. the placement of each request by index.
type Spans = Vec<(u64, u64)>;

/// Issues `reqs` in the order `order` on fresh calendars; returns each request's
/// placement (by request index) and the calendars' final intervals.
fn issue_in(reqs: &[Request], order: &[usize]) -> (Spans, Vec<Spans>) {
    let cals: Vec<Calendar> = (0..3).map(|_| Calendar::new()).collect();
    let mut placed = vec![(0, 0); reqs.len()];
    for &k in order {
        placed[k] = reqs[k].issue(&cals);
    }
    (placed, cals.iter().map(Calendar::intervals).collect())
}

#[test]
fn placement_does_not_depend_on_the_order_of_requests() {
    let reqs = disjoint_requests();
    let n = reqs.len();
    let forward: Vec<usize> = (0..n).collect();
    let reverse: Vec<usize> = (0..n).rev().collect();
    let mut shuffled = forward.clone();
    let mut rng = Rng(7);
    for i in (1..n).rev() {
        shuffled.swap(i, rng.below(i as u64 + 1) as usize);
    }
    assert_ne!(shuffled, forward);
    let expected = issue_in(&reqs, &forward);
    // Non-overlapping in time: each request is placed exactly at its earliest instant.
    for (req, &placed) in reqs.iter().zip(&expected.0) {
        assert_eq!(placed, (req.earliest, req.earliest + req.occ));
    }
    assert_eq!(issue_in(&reqs, &reverse), expected);
    assert_eq!(issue_in(&reqs, &shuffled), expected);

    // Concurrently: three threads issue interleaved thirds, in reverse; host
    // scheduling decides the real order, the result must not change.
    let cals: Arc<Vec<Calendar>> = Arc::new((0..3).map(|_| Calendar::new()).collect());
    let shared = Arc::clone(&cals);
    let mine = Arc::new(reqs.clone());
    let results = run_bounded(3, move |t| {
        (0..mine.len())
            .rev()
            .filter(|k| k % 3 == t)
            .map(|k| (k, mine[k].issue(&shared)))
            .collect::<Vec<_>>()
    });
    let mut placed = vec![(0, 0); n];
    for (k, span) in results.into_iter().flatten() {
        placed[k] = span;
    }
    assert_eq!(placed, expected.0);
    let kept: Vec<_> = cals.iter().map(Calendar::intervals).collect();
    assert_eq!(kept, expected.1);
    assert!(
        cals.iter().all(|c| c.floor() == 0),
        "stayed within capacity"
    );
}
