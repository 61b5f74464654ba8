//! The deadline plan: on the one thread that drives a node's boards (the virtual
//! clock's driver), the chunk of the board being served, such that the node's boards,
//! staged one after the other, end together.
//!
//! A planned round (`Round`: one chunk for every board of a PE and one for its CPU,
//! made from this plan by `round`) and the round kept with trained lines
//! (`PlannedRound`) are data of this module too, so that the lines (`report`) can
//! carry one without depending on the driver that runs it.
//!
//! This module owns that plan and those data. It must not take work or time
//! anything, nor decide when the plan applies (`sizing` and `round` do).

use crate::fastfit::PipelineModel;

/// A loop's planned round: each board's chunk (by board number; 0: the board sits
/// the loop out) and the CPU path's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Round {
    pub(crate) boards: Vec<u64>,
    pub(crate) cpu: u64,
}

/// What a round was planned for: the loop's length, the boards, whether the CPU
/// takes part and the largest board chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoundKey {
    pub(crate) n: u64,
    pub(crate) boards: u32,
    pub(crate) cpus: bool,
    pub(crate) max_chunk: Option<u64>,
}

/// A round kept with the lines it was planned from ([`Trained`](crate::Trained)),
/// or none: a round whose run left its lines as they were hands them on with it, so
/// that a next loop like it does not plan again. A cache: it says nothing the lines
/// do not (the same lines plan the same round), so any two compare equal.
///
/// A loop that learned or changed its lines hands on none: the next loop plans when
/// it is prepared. Planned at the end of the loop that learned them instead (until
/// 2026-12-03), the plan cost the 2D FFT's row pass 4-6 us inside its timed pass,
/// where the column pass, prepared before its timer, plans outside it.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlannedRound(pub(crate) Option<(RoundKey, Round)>);

impl PartialEq for PlannedRound {
    fn eq(&self, _: &PlannedRound) -> bool {
        true
    }
}

/// The node's other boards as the one-thread driver sees them when it gives one of
/// them a chunk (`BoardSizer::set_node_now`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NodeNow {
    /// Idle boards of the node that the driver gives a chunk right after this one.
    pub(crate) queued: u32,
    /// For each busy board of the node: seconds since its chunk's staging began, and
    /// the chunk's iterations.
    pub(crate) busy: Vec<(f64, u64)>,
    /// The start-up cost the thread's CPU path has still to pay in this loop (its
    /// first piece's time beyond its iterations', as an earlier loop measured it; 0
    /// once its first piece has run, or when unknown).
    pub(crate) cpu_start_s: f64,
    /// Iterations the driver's own CPU path has taken in this loop so far.
    pub(crate) cpu_taken: u64,
}

/// The chunks that end a node's part of the loop at one instant when one thread
/// drives the node's boards (and runs its CPU path between them).
///
/// The thread stages the chunks one after the other, each board's once the one
/// before it is staged (`staging`'s cost), and it spends `driver`'s cost (staging and
/// fetching) on each chunk in all; a chunk of `c` started `t` seconds from now is
/// done at `t + board.seconds(c)`. For a deadline
/// `e` seconds from now, each board can finish one chunk that ends by `e`:
/// - this board, staged now, `(e - board.latency_s) / board.item_s` iterations;
/// - each queued idle board, staged once the previous one's staging is done;
/// - each busy board, once its chunk in flight is done (as the model times it);
/// - the PE's own CPU, in the thread time the boards' staging and fetching (and its
///   start-up cost, `NodeNow::cpu_start_s`) leave before `e`; the node's other CPUs
///   at their rate all along.
///
/// What they finish grows with `e`; the deadline is the `e` at which it is the node's
/// part of what is left, found by regula falsi ([`first_reaching`]), and this board's
/// chunk is its share of that plan. When a kernel's iteration lasts longer than its
/// staging (native: 7 us against 3), the chunks given one after the other shrink
/// geometrically: the first is larger than an even share and the last, started last,
/// is short.
#[derive(Debug, Clone)]
pub(crate) struct DeadlinePlan<'a> {
    pub(crate) board: PipelineModel,
    /// What a chunk costs the thread, staging and fetching.
    pub(crate) driver: PipelineModel,
    /// What staging a chunk holds the thread before the next board can be staged.
    ///
    /// Not the whole `driver`: a board's fetch comes after its DONE, once every
    /// board is staged. Staggered by the driver's whole cost, the 2D FFT's trained
    /// pass at 16 nodes with 4 boards (2048 x 2048, native) planned chunks of 45,
    /// 35, 27 and 21 rows where the stagings were 1.3-2.7 us apart, and the first
    /// board ended 23 us after the last.
    pub(crate) staging: PipelineModel,
    /// The node's part of the iterations left.
    pub(crate) left: f64,
    pub(crate) node: &'a NodeNow,
    /// The CPU path's seconds per iteration on the driver's thread, if it takes.
    pub(crate) own_cpu_item_s: Option<f64>,
    /// Iterations per second of the node's other CPUs.
    pub(crate) others_rate: f64,
}

/// What a node finishes by a deadline in a [`DeadlinePlan`].
#[derive(Debug, Clone, Copy)]
struct Finished {
    /// Iterations, every device's.
    items: f64,
    /// The iterations of the board being served.
    mine: f64,
    /// The iterations of the driver's own CPU path (0 without it).
    own_cpu: f64,
}

impl DeadlinePlan<'_> {
    /// What the node finishes by `e` seconds from now.
    fn finished_by(&self, e: f64) -> Finished {
        self.walk_by(e, |_| {})
    }

    /// The chunks of the plan of deadline `e` (from [`DeadlinePlan::deadline`]): this
    /// board's, then each queued board's in the order they are staged (fractions of
    /// an iteration; the busy boards' are not in it), and the driver's own CPU
    /// path's iterations (0 without it).
    pub(crate) fn round_by(&self, e: f64) -> (Vec<f64>, f64) {
        let mut chunks = Vec::with_capacity(1 + self.node.queued as usize);
        let finished = self.walk_by(e, |c| chunks.push(c));
        (chunks, finished.own_cpu)
    }

    /// [`DeadlinePlan::finished_by`], telling `staged` each chunk of this board and
    /// the queued ones as the plan stages them.
    fn walk_by(&self, e: f64, mut staged: impl FnMut(f64)) -> Finished {
        let chunk_by =
            |start: f64| ((e - start - self.board.latency_s) / self.board.item_s).max(0.0);
        let cost = |line: &PipelineModel, c: f64| {
            if c > 0.0 {
                line.latency_s + c * line.item_s
            } else {
                0.0
            }
        };
        let (driver, staging) = (|c| cost(&self.driver, c), |c| cost(&self.staging, c));
        let mine = chunk_by(0.0);
        staged(mine);
        let (mut items, mut thread, mut next) = (mine, driver(mine), staging(mine));
        for _ in 0..self.node.queued {
            let c = chunk_by(next);
            staged(c);
            items += c;
            thread += driver(c);
            next += staging(c);
        }
        for &(ran, chunk) in &self.node.busy {
            let c = chunk_by((self.board.seconds(chunk) - ran).max(0.0));
            items += c;
            thread += driver(c);
        }
        let own_cpu = self
            .own_cpu_item_s
            .map_or(0.0, |t| (e - thread - self.node.cpu_start_s).max(0.0) / t);
        Finished {
            items: items + own_cpu + self.others_rate * e,
            mine,
            own_cpu,
        }
    }

    /// This board's chunk in the plan (at least 1); `None` if the numbers are not
    /// usable (not finite, or a board that does no work). The sizer weighs the
    /// driver's CPU first (`sizing::weighing_own_cpu`); the tests ask directly.
    #[cfg(test)]
    pub(crate) fn first_chunk(&self) -> Option<u64> {
        Some(self.chunk_by(self.deadline()?))
    }

    /// This board's chunk in the plan of deadline `e` (from [`DeadlinePlan::deadline`]),
    /// at least 1.
    pub(crate) fn chunk_by(&self, e: f64) -> u64 {
        let mine = self.finished_by(e).mine;
        // Rounded up, but not for the search's last 32nd. `as` saturates, and NaN
        // gives 0.
        ((mine - 1.0 / 32.0).ceil() as u64).max(1)
    }

    /// What the plan of deadline `e` saves the node by counting the driver's own
    /// CPU path: the iterations the CPU runs by `e`, as the node's boards (this one,
    /// the queued and the busy ones, alike) would have run them, in seconds.
    pub(crate) fn own_cpu_saves_by(&self, e: f64) -> f64 {
        let boards = 1.0 + f64::from(self.node.queued) + self.node.busy.len() as f64;
        self.finished_by(e).own_cpu * self.board.item_s / boards
    }

    /// The plan's deadline: seconds from now at which the node has finished what is
    /// left (within a 32nd of an iteration's time); `None` as for `first_chunk`.
    pub(crate) fn deadline(&self) -> Option<f64> {
        let usable = |x: f64| x.is_finite() && x >= 0.0;
        if !(usable(self.left)
            && usable(self.board.latency_s)
            && self.board.item_s.is_finite()
            && self.board.item_s > 0.0
            && usable(self.driver.latency_s)
            && usable(self.driver.item_s)
            && usable(self.staging.latency_s)
            && usable(self.staging.item_s)
            && usable(self.others_rate)
            && usable(self.node.cpu_start_s)
            && self.own_cpu_item_s.is_none_or(|t| t.is_finite() && t > 0.0))
        {
            return None;
        }
        // By `hi` this board alone finishes everything left. A board asks before
        // every chunk, on the thread that drives the boards and runs the CPU path,
        // so the search stops within a 32nd of an iteration (of this board's chunk),
        // not at the float's last bit.
        let hi = self.board.seconds(self.left.ceil() as u64);
        Some(first_reaching(
            |e| self.finished_by(e).items - self.left,
            hi,
            self.board.item_s / 32.0,
            1.0 / 32.0,
        ))
    }
}

/// The line a deadline plan staggers a node's boards by ([`DeadlinePlan::staging`]):
/// the measured staging's, no dearer than the driver's whole cost (`driver`, of which
/// it is a part); the driver's before staging has a line of its own (or from lines
/// written before staging was measured).
pub(crate) fn staging_within(
    staging: Option<PipelineModel>,
    driver: PipelineModel,
) -> PipelineModel {
    staging.map_or(driver, |s| PipelineModel {
        latency_s: s.latency_s.min(driver.latency_s),
        item_s: s.item_s.min(driver.item_s),
    })
}

/// How far a deadline plan takes the driver's CPU path's time per iteration to be off,
/// as a fraction of it, before the loop has measured its spread
/// ([`cpu_item_planned_s`]): a trained start's time, measured on one or two rows
/// in the 2D FFT's row pass, was off by a fifth and more.
pub(crate) const DEFAULT_CPU_SPREAD: f64 = 0.75;

/// The time per iteration at which a deadline plan counts the driver's own CPU path
/// whose measured time is `cpu_item_s` and spread `spread` (the standard deviation of
/// its pieces' times over their mean, `PerItem::spread`), when the node's boards
/// together take `boards_item_s` per iteration: `t (1 + s (t - b) / (t + b))`, never
/// less than `t`. Numbers that are not finite, or not positive (a negative spread
/// counts as 0), leave `cpu_item_s` as it is.
///
/// The plan makes the node's devices end together, but its two errors do not cost
/// the same. An iteration planned on the CPU that the CPU has not done when the
/// boards end costs the loop a CPU iteration, or a board chunk more (its latency and
/// the driver's service of it: 15-25 us in the 2D FFT on native); one planned on the
/// boards that the CPU would have done costs a board iteration (a fifth of a CPU row
/// there). And the CPU's time is the plan's least certain number: the virtual clock
/// counts the host's stalls and cache misses as computation, and a trained start's
/// time may rest on one or two rows. With the CPU's time off by about a fraction `s`
/// either way, the plan that costs least counts it high, the more so the cheaper a
/// board iteration is (a newsvendor's quantile, here in a simple form that is 1 when
/// the boards are no faster than the CPU and `1 + s` when they are infinitely
/// faster).
///
/// Measured on the FFT's trained column pass (native, 1 board per node, 4 PEs, 40
/// jobs each, the slowest PE's pass): the CPU counted at its time, 1.5x and 2x took
/// 164, 146 and 145 us (its rows, planned to end with the board's, ran past it, and
/// the board took a second chunk for the rest in about 2 passes of 3). With a fixed
/// spread of 0.75 instead of a measured one, CBIR on novo-g with 1 board per node,
/// whose CPU's images (210-300 us each) spread 0.04-0.13 in most PEs, put 15% of the
/// images on the CPUs where the best split puts 20%, and took 1.03x the best split's
/// time instead of 0.98x.
pub(crate) fn cpu_item_planned_s(cpu_item_s: f64, boards_item_s: f64, spread: f64) -> f64 {
    let (t, b) = (cpu_item_s, boards_item_s);
    if !(t.is_finite() && t > 0.0 && b.is_finite() && b > 0.0 && spread.is_finite()) {
        return cpu_item_s;
    }
    t * (1.0 + spread.max(0.0) * ((t - b) / (t + b)).max(0.0))
}

/// The least `e` in `[0, hi]` at which `beyond(e) >= 0`, or a point past it by at
/// most `precision` or at which `beyond` is at most `enough`: never a point before it.
/// `beyond` must rise with `e` (not strictly) and be piecewise linear, as what a node
/// finishes by a deadline beyond what is left is (each device's iterations grow
/// linearly once it starts); `beyond(hi) >= 0` is assumed (a rounding short of 0 at
/// `hi` returns `hi`).
///
/// Regula falsi, the Illinois variant (a bound kept twice in a row counts half, so
/// that the bracket closes from both sides), with a step of `precision` past a
/// secant that lands short: on a linear piece the secant lands on the crossing, or a
/// rounding short of it, and the next secant would not move. A plan with three
/// boards queued then takes about 0.15 us, where halving the bracket (about a dozen
/// rounds, each over every board of the node) took 0.6.
///
/// The deadline plan's bound: this board's chunk grows by `1 / board.item_s` per
/// second and the node's iterations at least as fast, so at a point `e` past the
/// deadline this board's chunk is at most `beyond(e)` larger than at the deadline,
/// and at most `(e - deadline) / board.item_s`.
fn first_reaching(beyond: impl Fn(f64) -> f64, hi: f64, precision: f64, enough: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, hi);
    let (beyond_lo, mut beyond_hi) = (beyond(lo), beyond(hi));
    if beyond_lo >= 0.0 {
        return lo;
    }
    if beyond_hi < 0.0 {
        return hi;
    }
    // The secant's weights: the bounds' values, a kept one halved (Illinois).
    let (mut weight_lo, mut weight_hi) = (beyond_lo, beyond_hi);
    // Which bound the last round kept: `Some(true)` the upper one.
    let mut kept_hi = None;
    for _ in 0..60 {
        if beyond_hi <= enough || hi - lo <= precision {
            break;
        }
        let secant = hi - weight_hi * (hi - lo) / (weight_hi - weight_lo);
        let e = if secant > lo && secant < hi {
            secant
        } else {
            0.5 * (lo + hi)
        };
        let at = beyond(e);
        if at >= 0.0 {
            (hi, beyond_hi, weight_hi) = (e, at, at);
            if kept_hi == Some(false) {
                weight_lo *= 0.5;
            }
            kept_hi = Some(false);
            continue;
        }
        (lo, weight_lo) = (e, at);
        if kept_hi == Some(true) {
            weight_hi *= 0.5;
        }
        kept_hi = Some(true);
        let nudge = lo + precision;
        if nudge < hi {
            let at = beyond(nudge);
            if at >= 0.0 {
                return nudge;
            }
            (lo, weight_lo) = (nudge, at);
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deadline plan for a node of boards of `item_s` seconds an iteration (no
    /// latency) whose staging costs the thread `staging_s` an iteration.
    fn plan(item_s: f64, staging_s: f64, left: f64, node: &NodeNow) -> DeadlinePlan<'_> {
        DeadlinePlan {
            board: PipelineModel {
                latency_s: 0.0,
                item_s,
            },
            driver: PipelineModel {
                latency_s: 0.0,
                item_s: staging_s,
            },
            staging: PipelineModel {
                latency_s: 0.0,
                item_s: staging_s,
            },
            left,
            node,
            own_cpu_item_s: None,
            others_rate: 0.0,
        }
    }

    #[test]
    fn the_plan_counts_a_cpu_slower_than_the_boards_high_the_more_so_the_faster_they_are() {
        let s = DEFAULT_CPU_SPREAD;
        let planned = |t: f64, b: f64| cpu_item_planned_s(t, b, s) / t;
        // Boards no faster than the CPU: its time as measured.
        assert_eq!(planned(2e-6, 2e-6), 1.0);
        assert_eq!(planned(2e-6, 5e-6), 1.0);
        // The FFT on native, 1 board: a row 2.5 us on the CPU, 0.55 on the board.
        let fft = planned(2.5e-6, 0.55e-6);
        assert!((fft - (1.0 + s * 1.95 / 3.05)).abs() < 1e-12, "{fft}");
        assert!((1.4..1.6).contains(&fft), "{fft}");
        // The faster the boards, the higher, up to 1 + the spread.
        let (slow, fast) = (planned(2.5e-6, 1e-6), planned(2.5e-6, 0.1e-6));
        assert!(
            1.0 < slow && slow < fft && fft < fast,
            "{slow} {fft} {fast}"
        );
        assert!(fast < 1.0 + s && planned(1.0, 1e-300) <= 1.0 + s);
        // The larger the spread, the higher; none: as measured.
        let at = |spread: f64| cpu_item_planned_s(2.5e-6, 0.55e-6, spread) / 2.5e-6;
        assert!(
            at(0.05) < at(0.3) && at(0.3) < at(0.75),
            "{} {}",
            at(0.05),
            at(0.3)
        );
        assert_eq!(at(0.0), 1.0);
        assert_eq!(at(-1.0), 1.0);
        // Numbers that say nothing leave the time as it is.
        assert_eq!(cpu_item_planned_s(2e-6, 0.0, s), 2e-6);
        assert_eq!(cpu_item_planned_s(2e-6, f64::NAN, s), 2e-6);
        assert_eq!(cpu_item_planned_s(2e-6, f64::INFINITY, s), 2e-6);
        assert_eq!(cpu_item_planned_s(2e-6, 1e-7, f64::NAN), 2e-6);
        assert!(cpu_item_planned_s(f64::NAN, 1e-6, s).is_nan());
        assert_eq!(cpu_item_planned_s(0.0, 1e-6, s), 0.0);
    }

    #[test]
    fn a_deadline_plan_shrinks_the_chunks_of_boards_staged_one_after_the_other() {
        // q = 1 - 3/10 = 0.7: four idle boards end together when the first takes
        // 490 (1 - q) / (1 - q^4) = 193.4, and each next one q times the last.
        let idle = NodeNow {
            queued: 3,
            busy: vec![],
            ..NodeNow::default()
        };
        let first = plan(10.0, 3.0, 490.0, &idle).first_chunk().unwrap();
        assert_eq!(first, 194);
        // The second board, right after the first's staging (3 * 193.4 s), sees it
        // busy and two boards after it: 0.7 of the first.
        let second = NodeNow {
            queued: 2,
            busy: vec![(3.0 * 193.4, 194)],
            ..NodeNow::default()
        };
        let c = plan(10.0, 3.0, 490.0 - 194.0, &second)
            .first_chunk()
            .unwrap();
        assert!((134..=137).contains(&c), "{c}");
        // Staging that costs nothing: an even share. Staging that is the whole chunk:
        // the thread is the bottleneck, and one board takes everything.
        assert_eq!(plan(10.0, 0.0, 400.0, &idle).first_chunk(), Some(100));
        assert_eq!(plan(10.0, 10.0, 400.0, &idle).first_chunk(), Some(400));
    }

    #[test]
    fn what_the_own_cpu_saves_is_its_iterations_on_the_node_boards() {
        // Boards of 10 s an iteration whose staging costs nothing; the thread's CPU
        // 40 s an iteration, 400 left. One board: the deadline e with e / 10 +
        // e / 40 = 400 is 3200 s, by which the CPU runs 80, 800 s of the board.
        let alone = NodeNow::default();
        let mut p = plan(10.0, 0.0, 400.0, &alone);
        let saves_s = |p: &DeadlinePlan<'_>| p.deadline().map(|e| p.own_cpu_saves_by(e));
        assert_eq!(saves_s(&p), Some(0.0));
        p.own_cpu_item_s = Some(40.0);
        let saves = saves_s(&p).unwrap();
        assert!((saves - 800.0).abs() < 1.0, "{saves}");
        // Four boards (three queued): e / 10 * 4 + e / 40 = 400, e = 941.2 s, the
        // CPU's 23.5 iterations are 235 s of one board, 58.8 s of the node's four.
        let four = NodeNow {
            queued: 3,
            ..NodeNow::default()
        };
        let mut p = plan(10.0, 0.0, 400.0, &four);
        p.own_cpu_item_s = Some(40.0);
        let saves = saves_s(&p).unwrap();
        assert!((saves - 58.8).abs() < 0.5, "{saves}");
        // Numbers the plan cannot use: no deadline.
        p.left = f64::NAN;
        assert_eq!(saves_s(&p), None);
    }

    #[test]
    fn a_deadline_plan_counts_busy_boards_and_the_cpus() {
        let alone = NodeNow::default();
        assert_eq!(plan(10.0, 0.0, 400.0, &alone).first_chunk(), Some(400));
        // A board whose chunk is about to end takes half of what is left.
        let busy = NodeNow {
            queued: 0,
            busy: vec![(1000.0, 100)],
            ..NodeNow::default()
        };
        assert_eq!(plan(10.0, 0.0, 400.0, &busy).first_chunk(), Some(200));
        // One that has 1000 s to go: this board takes 100 first, then both 150.
        let late = NodeNow {
            queued: 0,
            busy: vec![(0.0, 100)],
            ..NodeNow::default()
        };
        assert_eq!(plan(10.0, 0.0, 400.0, &late).first_chunk(), Some(250));
        // The node's other CPUs (0.1 iterations a second), and the thread's own CPU
        // (10 s an iteration) in the time the staging (1 s an iteration) leaves it.
        let mut p = plan(10.0, 0.0, 400.0, &alone);
        p.others_rate = 0.1;
        assert_eq!(p.first_chunk(), Some(200));
        // The thread's own CPU with a start-up cost of `start_s` still to pay.
        let own_cpu = |start_s: f64| {
            let node = NodeNow {
                cpu_start_s: start_s,
                ..NodeNow::default()
            };
            let mut p = plan(10.0, 1.0, 400.0, &node);
            p.own_cpu_item_s = Some(10.0);
            p.first_chunk()
        };
        // e = 10 c and the CPU does (e - c) / 10 = 0.9 c: c = 400 / 1.9.
        assert_eq!(own_cpu(0.0), Some(211));
        // A CPU path that has yet to pay a start-up cost of 190 s does 19 iterations
        // less: c = (400 + 19) / 1.9 = 220.5.
        assert_eq!(own_cpu(190.0), Some(221));
        // One that costs more than the whole plan leaves the CPU nothing.
        assert_eq!(own_cpu(1e9), Some(400));
    }

    #[test]
    fn a_deadline_plan_staggers_the_boards_by_their_staging_not_their_fetch() {
        // Two boards of 10 s an iteration, a chunk costing the thread 5 s an
        // iteration, of which its staging is 1: the second board is staged once the
        // first's staging is done, c1 = (e - c0) / 10 with e = 10 c0, so c0 = 400 /
        // 1.9. Staggered by the whole driver's cost, c1 = c0 / 2: c0 = 400 / 1.5.
        let two = NodeNow {
            queued: 1,
            ..NodeNow::default()
        };
        let mut p = plan(10.0, 5.0, 400.0, &two);
        p.staging.item_s = 1.0;
        assert_eq!(p.first_chunk(), Some(211));
        p.staging = p.driver;
        assert_eq!(p.first_chunk(), Some(267));
        // Either way the thread's own CPU has the time that the driver's whole cost
        // (staging and fetching every chunk) leaves it, not only the staging's.
        let (mut a, mut b) = (plan(10.0, 5.0, 400.0, &two), plan(10.0, 5.0, 400.0, &two));
        a.staging.item_s = 1.0;
        a.own_cpu_item_s = Some(100.0);
        b.own_cpu_item_s = Some(100.0);
        let (ea, eb) = (a.deadline().unwrap(), b.deadline().unwrap());
        let thread = |p: &DeadlinePlan<'_>, e: f64| {
            let (chunks, _) = p.round_by(e);
            chunks.iter().map(|c| 5.0 * c).sum::<f64>()
        };
        let (_, cpu_a) = a.round_by(ea);
        let (_, cpu_b) = b.round_by(eb);
        assert!(
            (cpu_a - (ea - thread(&a, ea)) / 100.0).abs() < 1e-9,
            "{cpu_a}"
        );
        assert!(
            (cpu_b - (eb - thread(&b, eb)) / 100.0).abs() < 1e-9,
            "{cpu_b}"
        );
    }

    /// The deadline to the float's last bit, by 200 halvings, as the plan once
    /// searched it.
    fn exact_deadline(p: &DeadlinePlan<'_>) -> f64 {
        let (mut lo, mut hi) = (0.0, p.board.seconds(p.left.ceil() as u64));
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if p.finished_by(mid).items >= p.left {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    #[test]
    fn the_deadline_search_stops_early_never_before_the_deadline() {
        let busy = NodeNow {
            queued: 2,
            busy: vec![(3e-5, 60)],
            ..NodeNow::default()
        };
        let idle = NodeNow {
            queued: 3,
            cpu_start_s: 1.5e-5,
            ..NodeNow::default()
        };
        for node in [&busy, &idle] {
            for left in [1.0, 7.0, 64.0, 255.0, 2000.0, 1e6] {
                for staging in [0.0, 1e-7, 2e-6] {
                    for cpu in [None, Some(3e-6), Some(1e-3)] {
                        let mut p = plan(5.4e-7, staging, left, node);
                        p.board.latency_s = 1.2e-5;
                        p.driver.latency_s = 3e-6;
                        p.own_cpu_item_s = cpu;
                        let (found, exact) = (p.deadline().unwrap(), exact_deadline(&p));
                        let case = format!("left {left}, staging {staging}, cpu {cpu:?}");
                        // Never before the deadline (its bisection's last bit aside), and
                        // this board's chunk there within a 32nd of an iteration of its
                        // chunk at the deadline.
                        assert!(found >= exact * (1.0 - 1e-12), "{case}: {found} < {exact}");
                        let (mine, at_exact) =
                            (p.finished_by(found).mine, p.finished_by(exact).mine);
                        assert!(
                            mine - at_exact <= 1.0 / 32.0 + 1e-9,
                            "{case}: {mine} vs {at_exact}"
                        );
                        let (chunk, exact_chunk) = (p.chunk_by(found), p.chunk_by(exact));
                        assert!(
                            chunk.abs_diff(exact_chunk) <= 1,
                            "{case}: {chunk} vs {exact_chunk}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn regula_falsi_reaches_a_crossing_in_a_few_evaluations() {
        // Counts the evaluations of `beyond`.
        let search = |beyond: &dyn Fn(f64) -> f64, hi: f64, precision: f64| {
            let calls = std::cell::Cell::new(0);
            let e = first_reaching(
                |e| {
                    calls.set(calls.get() + 1);
                    beyond(e)
                },
                hi,
                precision,
                1.0 / 32.0,
            );
            (e, calls.get())
        };
        // A line crossing at 3.7 on [0, 1000], to 1e-9: halving would take 40 rounds.
        let (e, calls) = search(&|e| 2.0 * (e - 3.7), 1000.0, 1e-9);
        assert!(
            (3.7..=3.7 + 1e-9).contains(&e) || 2.0 * (e - 3.7) <= 1.0 / 32.0,
            "{e}"
        );
        assert!(e >= 3.7, "{e}");
        assert!(calls <= 4, "{calls} evaluations");
        // A kink: flat until 10, then steep (a board that starts after its latency),
        // plus a slow device all along.
        let kinked = |e: f64| 0.01 * e + (e - 10.0).max(0.0) * 50.0 - 400.0;
        let (e, calls) = search(&kinked, 1e4, 1e-6);
        let crossing = (400.0 + 500.0) / 50.01;
        assert!(e >= crossing && e - crossing <= 1e-3, "{e} vs {crossing}");
        assert!(calls <= 10, "{calls} evaluations");
        // Reached at 0 already; a rounding short at the upper bound.
        assert_eq!(search(&|e| e, 5.0, 1e-3).0, 0.0);
        assert_eq!(search(&|e| e - 5.0 - 1e-15, 5.0, 1e-3).0, 5.0);
    }

    #[test]
    fn a_deadline_plan_refuses_unusable_numbers() {
        let idle = NodeNow::default();
        assert_eq!(plan(0.0, 0.0, 10.0, &idle).first_chunk(), None);
        assert_eq!(plan(f64::NAN, 0.0, 10.0, &idle).first_chunk(), None);
        assert_eq!(plan(1.0, f64::INFINITY, 10.0, &idle).first_chunk(), None);
        assert_eq!(plan(1.0, 0.0, -1.0, &idle).first_chunk(), None);
        let mut p = plan(1.0, 0.0, 10.0, &idle);
        p.own_cpu_item_s = Some(0.0);
        assert_eq!(p.first_chunk(), None);
        let bad_start = NodeNow {
            cpu_start_s: f64::NAN,
            ..NodeNow::default()
        };
        assert_eq!(plan(1.0, 0.0, 10.0, &bad_start).first_chunk(), None);
        // Nothing left: one iteration (the pool says whether there is one).
        assert_eq!(plan(1.0, 0.0, 0.0, &idle).first_chunk(), Some(1));
    }
}
