//! Chunk sizes: what a board or a CPU asks the pool for next, from what its earlier
//! chunks took.
//!
//! - A board ([`BoardSizer`]) trains first. The boards of a node are alike (one
//!   bitfile, one link, one driver), so they train together
//!   ([`LineFit`](crate::fits::LineFit)): board 0 takes the small sample and the
//!   others the large one, at once, and the first two sizes that complete on the node
//!   fit one [`PipelineModel`] for all of them (a node
//!   of one board takes the two samples one after the other, as FastFit does). From
//!   then on a board asks for FastFit's chunk, the one at which it reaches `rho` of its
//!   peak, but never more than its *share* of what was left at its last take: the
//!   chunk `c` such that if every board of the job took `c` and the CPUs ran
//!   meanwhile at this PE's measured CPU rate, all would end together
//!   (`boards * c + cpus * rate * (latency + c * item_s) = left`). Without that cap
//!   the first boards to take would swallow the loop and the last would idle; with
//!   it the chunks shrink towards the end of the loop, as in guided self-scheduling,
//!   weighted by the devices' speeds. Never more than the board's buffers hold
//!   (`max`). The loop's tail is the CPUs': once they would do all that is left
//!   within the model's latency, a board stops (a chunk of any size would end later).
//!   When one thread drives the boards and a CPU (the virtual clock's
//!   driver), a chunk's DONE may wait for the driver; the mean of that wait is added to
//!   the model's latency, since the chunk must amortise it too.
//!   On that one thread, which stages the node's chunks one after the other, a
//!   board's chunk is instead its part of a plan in which the node's boards end
//!   together (`plan`; capped at twice the share unless the model prices
//!   the transfers).
//!   With the communication model's price of its transfers (`Options::board_bytes`),
//!   a board on that one thread does not even train when the transfers alone cost the
//!   thread as much per iteration as the CPU path; given the application's estimate
//!   of a CPU iteration, it decides that before the loop where twice the estimate
//!   already says so (`stops_on_estimate`). A loop may start trained, from an
//!   earlier loop's lines (`Options::trained`). Until a CPU has run a chunk it counts
//!   for nothing in a share or a plan, so a board leaves each CPU of the loop its
//!   first chunk: the CPU is measured in the loop, and counts from then on. On the
//!   one thread, before its first piece of a loop, the driver's own CPU is left out
//!   of the plan when it would save the node less than twice the start-up cost it
//!   has still to pay. Right after training, what the boards
//!   share is no more than what every node's training leaves (`round_left`). A board
//!   whose buffers hold no more than the small sample takes that size throughout,
//!   untrained (chunks of one size fit no line).
//! - A CPU ([`CpuSizer`]): chunks that take about `cpu_chunk_s` at its measured
//!   (smoothed) throughput, no more than its share of what is left; near the end no
//!   more than it can do while the job drains the rest; and when its PE drives boards,
//!   no more than their large training sample while they train, then no more than its
//!   speed-weighted share (CPUs at its rate, working boards at their model's peak).
//!
//! This module owns those rules and the report of a board's fit. It must not take
//! work or time anything: the drivers do and tell it what happened.

use crate::fastfit::{PipelineModel, Rho, Sample};
use crate::fits::{DriverFit, SharedTraining};
use crate::plan::{cpu_item_planned_s, staging_within, DeadlinePlan, NodeNow, DEFAULT_CPU_SPREAD};
use crate::report::{BoardFit, StopReason};
use crate::stats::median;
use std::cell::Cell;

/// The communication model's price of a board chunk's transfers (its inputs put into
/// the board, its results got back, `Options::board_bytes`) at two sizes: the small
/// training sample and the largest chunk the board may take.
///
/// With it a board trains on one chunk instead of two: what the small sample took
/// beyond its modeled transfers (the kernel, the application's own staging work) is
/// taken to grow in proportion to the chunk, and the second sample is the largest
/// chunk's modeled transfers plus that much. On a link whose every transfer costs a
/// fixed latency of milliseconds (novo-g's DMA: 2 ms for 48 KiB, 26 ms for 8 MB) the
/// second sample was one more such latency before the model existed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Transfers {
    pub(crate) small: Sample,
    pub(crate) largest: Sample,
    /// Of `small`'s and `largest`'s seconds, those that hold the driver's thread: all
    /// of them, but for the inputs' put when the board path stages with `put_nbi`
    /// (`BoardBytes::inputs_in_background`), whose DMA runs while the thread goes on.
    pub(crate) small_held_s: f64,
    pub(crate) largest_held_s: f64,
}

impl Transfers {
    /// Seconds per iteration for which the largest chunk's transfers hold the
    /// driver's thread.
    fn held_item_s(&self) -> f64 {
        self.largest_held_s / self.largest.items as f64
    }

    /// Whether the transfers hold the driver's thread for most of their time.
    fn hold_the_thread(&self) -> bool {
        self.largest_held_s * 2.0 > self.largest.seconds
    }

    /// The modeled second sample of the board's chunk time, from `measured`, a chunk
    /// of the small size (`None` for any other size).
    fn modeled_large(&self, measured: Sample) -> Option<Sample> {
        self.modeled(measured, (self.small.seconds, self.largest.seconds))
    }

    /// The same for the driver's thread time: only the transfers that hold it.
    fn modeled_large_held(&self, measured: Sample) -> Option<Sample> {
        self.modeled(measured, (self.small_held_s, self.largest_held_s))
    }

    /// The largest chunk's `priced.1` plus, per iteration, what `measured` (of the
    /// small size, whose price is `priced.0`) took beyond its price.
    fn modeled(&self, measured: Sample, priced: (f64, f64)) -> Option<Sample> {
        if measured.items != self.small.items || !measured.seconds.is_finite() {
            return None;
        }
        let rest = (measured.seconds - priced.0).max(0.0) / measured.items as f64;
        Some(Sample {
            items: self.largest.items,
            seconds: priced.1 + rest * self.largest.items as f64,
        })
    }
}

/// A board's chunk sizes (see the module doc).
#[derive(Debug, Clone)]
pub(crate) struct BoardSizer {
    samples: (u64, u64),
    rho: Rho,
    /// The board's number on its node (board 0 trains on the small sample).
    board: u32,
    /// Boards of the job.
    boards: u64,
    /// Boards of its node (its driver's; `boards` unless said, `with_node_boards`).
    node_boards: u64,
    /// PEs whose CPUs take chunks.
    cpus: u64,
    max: u64,
    training: SharedTraining,
    /// Chunks this board has taken.
    taken: u64,
    /// Measured over modeled time of each chunk after training.
    ratios: Vec<f64>,
    /// Iterations left in the pool after this board's last take.
    left: u64,
    /// Mean seconds from a chunk's DONE to the driver serving it (0 when a thread
    /// waits on each board), and how many were averaged.
    service_s: f64,
    served: u64,
    /// Why the board stopped taking, if it did.
    stopped: Cell<Option<StopReason>>,
    /// The communication model's price of this board's transfers, if the model
    /// knows it: see [`BoardSizer::want`] and [`Transfers`].
    transfers: Option<Transfers>,
    /// Whether its last take was sized by the model (after training).
    production: bool,
    /// Whether its chunk in flight is a training sample, and of the small size (the
    /// earlier of two in flight: `queued`).
    in_training: Option<bool>,
    /// Whether its large training sample was taken behind the small one, still in
    /// flight ([`BoardSizer::queued_sample`]); it is `in_training` once the small
    /// one is done.
    queued: bool,
    /// The sample size its last `want` asked for (`true`: the small one).
    sample_asked: Cell<Option<bool>>,
    /// Whether one thread drives this node's boards (and its CPU).
    one_thread: bool,
    /// Whether every idle board of the node takes a training sample rather than wait
    /// for the model (`Options::every_board_samples`).
    every_board_samples: bool,
    /// Whether its last `want` said to wait for the node's model.
    waiting: Cell<bool>,
    /// The one-thread driver's view of the node's boards at this take.
    node_now: Option<NodeNow>,
    /// The CPU path's typical seconds per iteration (`fits::PerItem::typical`), as
    /// the driver last said (`set_cpu_typical`): what the decision to train at all
    /// goes by.
    cpu_typical_s: Option<f64>,
    /// The spread of the CPU path's time per iteration (`fits::PerItem::spread`), as
    /// the driver last said (`set_cpu_spread`): how high the deadline plan counts it.
    cpu_spread: Option<f64>,
    /// The driver's CPU's iterations taken (`NodeNow::cpu_taken`) at this board's
    /// last take.
    cpu_taken_at_take: u64,
    /// A CPU's first chunk (`with_cpu_first`): what the board leaves each CPU of
    /// the loop while no CPU has been measured.
    cpu_first: u64,
    /// The loop's length.
    n: u64,
    /// The application's estimate of the CPU path's seconds per iteration
    /// (`with_cpu_estimate`), if it gave one.
    cpu_estimate_s: Option<f64>,
}

/// The stop rule on a board's own thread before its first chunk
/// (`StopReason::Outlasted`): `cpus` CPUs at `cpu_item_s` an iteration
/// (`cpu_estimated`: twice the application's estimate, else their typical time) do
/// the `left` iterations before the small sample's modeled transfers alone are done.
fn cpus_outlast(
    t: Transfers,
    left: u64,
    cpu_item_s: f64,
    cpus: u64,
    cpu_estimated: bool,
) -> Option<StopReason> {
    let cpus_s = left as f64 * cpu_item_s / cpus.max(1) as f64;
    (cpus_s < t.small.seconds).then_some(StopReason::Outlasted {
        left,
        sample_s: t.small.seconds,
        cpus_s,
        cpu_estimated,
    })
}

/// How many times the application's estimate of the CPU path's iteration
/// (`Options::cpu_item_estimate_s`) a board takes it to be when it decides on that
/// estimate not to train ([`BoardSizer::stops_on_estimate`]): a decision that stands
/// even if the CPU turns out twice as slow as the application said. On novo-g the 2D
/// FFT's boards stop at 8x (a row's modeled transfers hold the thread 43 us, the CPU
/// takes 5).
pub(crate) const ESTIMATE_MARGIN: f64 = 2.0;

impl BoardSizer {
    pub(crate) fn new(
        samples: (u64, u64),
        rho: Rho,
        (board, boards, cpus): (u32, u64, u64),
        one_thread: bool,
        max: u64,
        n: u64,
        training: SharedTraining,
    ) -> Self {
        BoardSizer {
            samples,
            rho,
            board,
            boards: boards.max(1),
            node_boards: boards.max(1),
            cpus,
            max: max.max(1),
            training,
            taken: 0,
            ratios: Vec::new(),
            left: n,
            service_s: 0.0,
            served: 0,
            stopped: Cell::new(None),
            transfers: None,
            production: false,
            in_training: None,
            queued: false,
            sample_asked: Cell::new(None),
            one_thread,
            every_board_samples: false,
            waiting: Cell::new(false),
            node_now: None,
            cpu_typical_s: None,
            cpu_spread: None,
            cpu_taken_at_take: 0,
            cpu_first: 0,
            n,
            cpu_estimate_s: None,
        }
    }

    /// Makes every idle board of the node take a training sample rather than wait
    /// for the model, where no priced transfer holds the one driver thread
    /// (`Options::every_board_samples`).
    pub(crate) fn with_every_board_samples(mut self, every: bool) -> Self {
        self.every_board_samples = every;
        self
    }

    /// Gives the sizer the application's estimate of the CPU path's seconds per
    /// iteration (not finite or not positive: none), for
    /// [`BoardSizer::stops_on_estimate`].
    pub(crate) fn with_cpu_estimate(mut self, estimate_s: Option<f64>) -> Self {
        self.cpu_estimate_s = estimate_s.filter(|t| t.is_finite() && *t > 0.0);
        self
    }

    /// Whether the board stops before its first take on the application's estimate
    /// of the CPU path (`with_cpu_estimate`) alone, by the rules that `want` applies
    /// once the CPU's typical time is known, with the CPU taken to be
    /// [`ESTIMATE_MARGIN`] times slower than the estimate: on one driver thread, the
    /// largest chunk's modeled transfers hold the thread at least that long per
    /// iteration (`StopReason::Predicted`); on a thread of its own and untrained, the
    /// CPUs would do the loop's `left` iterations at that time before a training
    /// sample's modeled transfers alone are done (`StopReason::Outlasted`). If so it
    /// records why (`stop_reason`); the driver then retires it and never drives it.
    ///
    /// Without this a board waits for the CPU's typical time, two pieces or chunks
    /// into the loop: on novo-g the 2D FFT's CPU ran a pass as a row, the boards'
    /// 16-row training chunk in pieces and then the rest, and on the wall clock the
    /// board threads ran and waited beside it.
    pub(crate) fn stops_on_estimate(&self, left: u64) -> bool {
        let (Some(estimate_s), Some(t), true) =
            (self.cpu_estimate_s, self.transfers, self.cpus > 0)
        else {
            return false;
        };
        let slow_cpu_s = ESTIMATE_MARGIN * estimate_s;
        let why = if self.one_thread {
            self.transfers_outweigh(slow_cpu_s, true)
        } else if self.taken == 0 && self.model().is_none() {
            cpus_outlast(t, left, slow_cpu_s, self.cpus, true)
        } else {
            None
        };
        if why.is_some() {
            self.stopped.set(why);
        }
        why.is_some()
    }

    /// The stop rule on one driver thread (`StopReason::Predicted`): the largest
    /// chunk's modeled transfers hold the thread at least `cpu_item_s` per
    /// iteration, the time the CPU path is weighed at (`cpu_estimated`: twice the
    /// application's estimate, else its typical time). `None` without a price.
    fn transfers_outweigh(&self, cpu_item_s: f64, cpu_estimated: bool) -> Option<StopReason> {
        let held = self.transfers.map(|t| t.held_item_s())?;
        (held > 0.0 && held >= cpu_item_s).then_some(StopReason::Predicted {
            driver_item_s: held,
            cpu_item_s,
            cpu_estimated,
        })
    }

    /// Says how many iterations a CPU's first chunk is (`CpuSizer::new`'s `first`).
    /// A board sized while no CPU has been measured leaves that many for each CPU of
    /// the loop (see [`BoardSizer::want`]).
    pub(crate) fn with_cpu_first(mut self, cpu_first: u64) -> Self {
        self.cpu_first = cpu_first;
        self
    }

    /// Gives the sizer the communication model's price of this board's transfers
    /// (ignored unless both sizes are usable and the largest is the larger).
    pub(crate) fn with_transfers(mut self, transfers: Option<Transfers>) -> Self {
        let usable = |s: Sample| s.items > 0 && s.seconds.is_finite() && s.seconds >= 0.0;
        self.transfers = transfers
            .filter(|t| usable(t.small) && usable(t.largest) && t.largest.items > t.small.items);
        self
    }

    /// Says how many of the job's boards are on this board's node (`1..=boards`;
    /// out of range: all of them). With one driver thread, the node's part of what is
    /// left bounds its chunks (see [`BoardSizer::want`]).
    pub(crate) fn with_node_boards(mut self, node_boards: u64) -> Self {
        if (1..=self.boards).contains(&node_boards) {
            self.node_boards = node_boards;
        }
        self
    }

    /// The one-thread driver's view of the node's other boards, for the next `want`.
    pub(crate) fn set_node_now(&mut self, node: NodeNow) {
        self.node_now = Some(node);
    }

    /// The CPU path's typical seconds per iteration (`None`: not known yet; not
    /// finite or not positive: none), for the next `want`.
    pub(crate) fn set_cpu_typical(&mut self, item_s: Option<f64>) {
        self.cpu_typical_s = item_s.filter(|t| t.is_finite() && *t > 0.0);
    }

    /// The spread of the CPU path's time per iteration (`None`: not measured yet;
    /// not finite or negative: none), for the next `want`: until there is one, the
    /// plan takes [`DEFAULT_CPU_SPREAD`].
    pub(crate) fn set_cpu_spread(&mut self, spread: Option<f64>) {
        self.cpu_spread = spread.filter(|s| s.is_finite() && *s >= 0.0);
    }

    /// The node's model with this board's wait for its driver added to the latency:
    /// the board's own latency plus that wait is what a chunk must amortise.
    fn model(&self) -> Option<PipelineModel> {
        let training = self.training.lock().unwrap_or_else(|e| e.into_inner());
        training.kernel.fit.map(|(_, mut model)| {
            model.latency_s += self.service_s;
            model
        })
    }

    /// The chunk to ask for next; `cpu_rate` is this PE's CPU throughput so far
    /// (iterations per second, 0 if unknown), at which every CPU of the job is
    /// counted. `cpu_item_s` (the one-thread driver's): the CPU path's own seconds per
    /// iteration on the thread that also drives this board; once trained, the board
    /// stops (`None`) if an iteration costs that thread more through the board
    /// (staging and fetching) than on the CPU, as long as the CPUs take part. See the
    /// module doc.
    ///
    /// With priced transfers (`with_transfers`) and CPUs in the loop, the board does
    /// not train until the CPU's typical time per iteration is known (it waits; the
    /// driver gives it with [`BoardSizer::set_cpu_typical`], not as `cpu_item_s`,
    /// which a slow first piece sets), and not at all (it stops):
    /// - on one driver thread, if the model's transfers alone for its largest chunk
    ///   hold the thread as long per iteration as the CPU takes: training would pay
    ///   a chunk latency only to learn that;
    /// - on a thread of its own, if the CPUs would do all that is left before the
    ///   model's transfers of the small sample alone are done: its sample would end
    ///   the loop later than the CPUs would without it.
    ///
    /// It trains on the small sample alone (the large one is modeled, see
    /// [`Transfers`]) unless that gave no model.
    pub(crate) fn want(
        &self,
        cpu_rate: f64,
        cpu_item_s: Option<f64>,
        handed_out: u64,
    ) -> Option<u64> {
        self.waiting.set(false);
        let priced = self.transfers.is_some_and(|t| t.held_item_s() > 0.0);
        if priced && self.one_thread && self.cpus > 0 {
            let Some(t) = self.cpu_typical_s else {
                self.waiting.set(true);
                return None;
            };
            if let Some(why) = self.transfers_outweigh(t, false) {
                self.stopped.set(Some(why));
                return None;
            }
        }
        let Some(model) = self.model() else {
            // On a thread of its own, before its first chunk: a sample that ends after
            // the CPUs would have done everything only holds the loop's end.
            if let (Some(t), false, true, 0) =
                (self.transfers, self.one_thread, self.cpus > 0, self.taken)
            {
                let Some(item_s) = self.cpu_typical_s else {
                    self.waiting.set(true);
                    return None;
                };
                let left = self.n.saturating_sub(handed_out);
                if let Some(why) = cpus_outlast(t, left, item_s, self.cpus, false) {
                    self.stopped.set(Some(why));
                    return None;
                }
            }
            // Buffers that hold no more than the small sample: chunks of one size fit
            // no line, so the board takes that size throughout (it would otherwise
            // wait for a model that never comes).
            if self.sample_size(true) >= self.sample_size(false) {
                return Some(self.sample_size(false));
            }
            let (sampling, small_seen) = {
                let t = self.training.lock().unwrap_or_else(|e| e.into_inner());
                (t.sampling, !t.kernel.samples.is_empty())
            };
            // With the transfers priced, the small sample alone gives the model (the
            // large one is modeled); only if it did not is a large one taken.
            let large_needed = self.transfers.is_none() || small_seen;
            let small = if self.one_thread {
                // The node's two samples, one of each size; the other boards wait
                // for the model rather than hold the one thread with more samples.
                // But where the small sample alone gives the model and staging
                // leaves the thread free (the inputs' DMA runs in the background),
                // every idle board takes a small sample too: a chunk costs the thread
                // little, the board would idle through the first sample's DMA
                // latency otherwise (novo-g: 3.5 ms), and samples of one size
                // average into the line's small point. And where the application
                // says its chunks cost the thread little (`every_board_samples`)
                // and no priced transfer holds it, every idle board takes a large
                // sample where the line needs one (see `Options`).
                let sample_too =
                    !large_needed && self.transfers.is_some_and(|t| !t.hold_the_thread());
                let large_too = large_needed
                    && self.every_board_samples
                    && !self.transfers.is_some_and(|t| t.hold_the_thread());
                match sampling {
                    [0, _] => true,
                    [_, 0] if large_needed => false,
                    _ if sample_too => true,
                    _ if large_too => false,
                    _ => {
                        self.waiting.set(true);
                        return None;
                    }
                }
            } else {
                self.taken == 0 && self.board == 0
            };
            self.sample_asked.set(Some(small));
            return Some(self.sample_size(small));
        };
        let fastfit = model.chunk_for(self.rho);
        // The node's driver line, and whether its kernel line falls (see the plan's
        // bound below).
        let (driver, staging, falls) = {
            let t = self.training.lock().unwrap_or_else(|e| e.into_inner());
            let line = |fit: &DriverFit| fit.fit().map(|(_, line)| line);
            (line(&t.driver), line(&t.staging), t.kernel.falls())
        };
        let cpus = self.cpus as f64;
        // What the driver's own CPU path is counted at where this chunk is weighed
        // against the iterations the CPU would run meanwhile: high, the more so the
        // cheaper the node's boards' iterations (`plan::cpu_item_planned_s`).
        let planned_cpu_item_s = cpu_item_s.filter(|&t| t > 0.0).map(|t| {
            let spread = self.cpu_spread.unwrap_or(DEFAULT_CPU_SPREAD);
            cpu_item_planned_s(t, model.item_s / self.node_boards as f64, spread)
        });
        // Every board (alike) takes `c` of what was left at its last take, and the
        // CPUs run meanwhile, so that all end together:
        // boards * c + cpus * (what one CPU does while a board runs c) = left.
        let (per_latency, per_item) = match (planned_cpu_item_s, driver) {
            // One thread drives the boards and runs the CPU path: while a board runs
            // `c` (latency + c * item_s) the CPU has the thread but for the chunk's
            // staging and fetching (driver.latency + c * driver.item_s).
            (Some(t), Some(d)) => (
                (model.latency_s - d.latency_s).max(0.0) / t,
                (model.item_s - d.item_s).max(0.0) / t,
            ),
            // The CPU has its own thread: its measured rate.
            _ => (
                cpu_rate.max(0.0) * model.latency_s,
                cpu_rate.max(0.0) * model.item_s,
            ),
        };
        // The CPUs' seconds per iteration: the CPU path's own on a shared thread,
        // else the measured rate's; `None` while this PE's CPU has run no chunk.
        let cpu_s = cpu_item_s
            .filter(|&t| t > 0.0)
            .or((cpu_rate > 0.0).then(|| 1.0 / cpu_rate));
        // A CPU not measured yet counts for nothing in the share and the plan below,
        // and the boards would take all that is left: in the FFT's passes on native,
        // whose board samples are due too soon for the CPU's first piece to run
        // before them (`run::waiting_for_samples`), the CPU never ran a row, in
        // either pass, where the best static split puts 10-20% of the rows on it.
        // So the boards leave each CPU its first chunk: the CPU is measured in this
        // loop, and counts in the chunks after (and in the loops that start from this
        // one's lines).
        let reserved = match (cpu_s, self.cpus > 0) {
            (None, true) => self.cpus.saturating_mul(self.cpu_first),
            _ => 0,
        };
        let left = self.n.saturating_sub(handed_out).saturating_sub(reserved);
        // The tail: a chunk of any size ends on the board no sooner than its
        // latency, so when the job's CPUs do all that is left in less, whatever the
        // board took would end the loop later (and the share below would still
        // give it an iteration: a row of the FFT cost a 12 us kernel where the CPU
        // takes 3).
        if let (Some(t), true) = (cpu_s, self.cpus > 0) {
            // On a shared thread, plus the start-up cost the CPU path has still to pay.
            let start_s = match (&self.node_now, cpu_item_s) {
                (Some(node), Some(_)) => node.cpu_start_s,
                _ => 0.0,
            };
            let cpus_s = left as f64 * t / cpus + start_s;
            if cpus_s < model.latency_s {
                self.stopped.set(Some(StopReason::Tail {
                    left,
                    latency_s: model.latency_s,
                    cpus_s,
                }));
                return None;
            }
        }
        let share_of = |left: u64| {
            let share = (left as f64 - cpus * per_latency) / (self.boards as f64 + cpus * per_item);
            // `as` saturates, and NaN gives 0.
            (share.ceil() as u64).max(1)
        };
        // Right after training the boards take together, so what was left at this
        // board's last take is what they share (the others' first chunks, taken a
        // moment ago, come out of it). Later the others are amid chunks like this
        // one's last, and what is left now is what remains to share: without this cap
        // the last round's first takers would each take what was left a round ago.
        let round_left = self.round_left().saturating_sub(reserved);
        let mut share = share_of(round_left);
        if self.production {
            share = share.min(share_of(left));
        }
        let mut chunk = fastfit.min(share).min(self.max);
        // One thread stages every chunk of the node, one after the other: the node's
        // boards end together when this chunk is the first of the deadline plan.
        if let (true, Some(d), Some(node)) = (self.one_thread, driver, &self.node_now) {
            let node_part = self.node_boards as f64 / self.boards as f64;
            let node_cpus = cpus * node_part;
            // As for the share above: right after training every node's boards take
            // together, so the node's part is of what was left at this board's last
            // take, less what the node's boards took since (its busy ones) and what
            // the driver's own CPU took since (novo-g, CBIR, one board per node: its
            // 15 images during the 3.3 ms sample were counted as still to share, and
            // the CPU ended 4 ms before the board). The node's other PEs' CPUs, on
            // threads of their own, are not seen here.
            let node_left = if self.production {
                left as f64 * node_part
            } else {
                let busy: u64 = node.busy.iter().map(|&(_, items)| items).sum();
                let cpu_since = node.cpu_taken.saturating_sub(self.cpu_taken_at_take);
                (round_left as f64 * node_part - busy as f64 - cpu_since as f64).max(0.0)
            };
            // Staging and fetching are part of a chunk's time.
            let d = PipelineModel {
                latency_s: d.latency_s.min(model.latency_s),
                item_s: d.item_s.min(model.item_s),
            };
            let plan = DeadlinePlan {
                board: model,
                driver: d,
                staging: staging_within(staging, d),
                left: node_left,
                node,
                own_cpu_item_s: planned_cpu_item_s.filter(|_| node_cpus > 0.0),
                others_rate: (node_cpus - 1.0).max(0.0) * cpu_rate.max(0.0),
            };
            // The plan leans on the lines fitted from the small training chunks.
            // Where the communication model prices the transfers, the driver's
            // line is known to be mostly transfers, and a thread that the staging
            // keeps busy is real (novo-g's DMA: one board may take all the node's
            // part, saving the other boards' transfer latencies). Otherwise a
            // kernel slope measured too flat (the FFT's one- and four-row samples
            // on native: 0.17 us a row against 0.6 in production) makes the
            // staging look as dear as the whole chunk, and would give this board
            // everything and leave the others idle. A plan puts B / (1 + q + ... +
            // q^(B-1)) times an even share on the first of B boards (native CBIR,
            // 4 boards: about 1.5), so twice the share bounds what a bad line
            // costs there. A line that falls (its larger sample took no longer)
            // says nothing of an iteration's cost, and the plan built on its flat
            // slope gives the first board all it may: the node's first chunk pays
            // for the first use of the board path (page faults, cold caches), and
            // in the FFT's row pass on native (4-row and 16-row samples, 19-22 us
            // against 18-19) the first two of four boards took two shares each
            // and the other two idled through the pass. Then each board takes its
            // share, until a measured chunk gives the line a slope.
            let bound = if self.transfers.is_some_and(|t| t.hold_the_thread()) {
                u64::MAX
            } else if falls {
                share
            } else {
                share.saturating_mul(2)
            };
            if let Some(first) = first_chunk_weighing_own_cpu(&plan) {
                chunk = fastfit.min(first).min(bound).min(self.max);
            }
        }
        // The CPUs' first chunks stay theirs whatever the rounding above (the plan's
        // last board of four took the one row left for the FFT's CPU). With nothing
        // else left, the board waits for them.
        if reserved > 0 {
            if left == 0 {
                self.waiting.set(true);
                return None;
            }
            chunk = chunk.min(left);
        }
        // On a shared thread, a chunk that costs the thread more per iteration than
        // the CPU path would is not worth taking.
        if let (Some(t), Some(d), true) = (cpu_item_s, driver, self.cpus > 0) {
            let per_item = d.seconds(chunk) / chunk as f64;
            if per_item >= t {
                self.stopped.set(Some(StopReason::Measured {
                    chunk,
                    driver_item_s: per_item,
                    cpu_item_s: t,
                }));
                return None;
            }
        }
        Some(chunk)
    }

    /// What the job's boards share in the round after this board's last take: what
    /// was left after that take; but right after training, no more than what the
    /// loop leaves once every node has taken training chunks like this node's (the
    /// nodes are alike). The first node to train saw the others' samples still in the
    /// pool, and its first chunk would take part of what they share (novo-g, CBIR, one
    /// board per node: the first board took 490 images, the last 439, where 473 each
    /// would have ended together).
    fn round_left(&self) -> u64 {
        if self.production {
            return self.left;
        }
        let sampled = self
            .training
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .sampled_items;
        let nodes = self.boards / self.node_boards;
        let after_training = self.n.saturating_sub(sampled.saturating_mul(nodes));
        self.left.min(after_training)
    }

    /// The driver retired this board (it failed or stopped): the node's CPUs stop
    /// counting it in their share.
    pub(crate) fn retire(&self) {
        self.training
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retired += 1;
    }

    /// Whether the board stopped taking (see [`BoardSizer::want`]).
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.get().is_some()
    }

    /// Why it stopped, for the report.
    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        self.stopped.get()
    }

    /// A chunk of `items` cost the driver's thread `seconds` (staging and fetching),
    /// `staged_s` of them its staging.
    pub(crate) fn cost_driver(&mut self, items: u64, seconds: f64, staged_s: f64) {
        let sample = Sample { items, seconds };
        let mut training = self.training.lock().unwrap_or_else(|e| e.into_inner());
        training.staging.add(Sample {
            items,
            seconds: staged_s,
        });
        let first = training.driver.fit().is_none();
        training.driver.add(sample);
        let large = self.transfers.and_then(|t| t.modeled_large_held(sample));
        if let (true, Some(large)) = (first, large) {
            training.driver.add_modeled(large);
        }
    }

    /// A chunk's DONE waited `seconds` for the driver to serve it.
    pub(crate) fn served(&mut self, seconds: f64) {
        self.served += 1;
        self.service_s += (seconds.max(0.0) - self.service_s) / self.served as f64;
    }

    /// The pool's answer to a take: what is left after it.
    pub(crate) fn took(&mut self, left: u64) {
        self.count_take(left);
        self.production = self.model().is_some();
        self.in_training = match self.sample_asked.take() {
            Some(small) if !self.production => Some(small),
            _ => None,
        };
        if let Some(small) = self.in_training {
            self.count_sample(small);
        }
    }

    /// The large training sample to start right behind the small one in flight
    /// (the one-thread driver does, for a [`BoardPath`](crate::BoardPath) that keeps
    /// chunks apart): its size, if this board trains alone on its node (its small
    /// sample is in flight and the node has taken no large one), the large sample
    /// is needed whatever the small one gives (no transfers priced: with them the
    /// small one alone may give the model), and the two sizes differ. `None`
    /// otherwise, and once one is queued.
    ///
    /// Why: a lone board's samples otherwise run one after the other with the
    /// driver's work between them (the small one's DONE served, its results
    /// fetched, the next take sized, the large one staged), 5-10 us of an idle
    /// board in the 2D FFT's row pass on native, whose whole pass is 130 us.
    pub(crate) fn queued_sample(&self) -> Option<u64> {
        let (small, large) = (self.sample_size(true), self.sample_size(false));
        if !self.one_thread
            || self.queued
            || self.in_training != Some(true)
            || self.transfers.is_some()
            || large <= small
        {
            return None;
        }
        let training = self.training.lock().unwrap_or_else(|e| e.into_inner());
        (training.sampling == [1, 0] && training.kernel.fit.is_none()).then_some(large)
    }

    /// The pool's answer to the take of the queued large sample
    /// ([`BoardSizer::queued_sample`]): what is left after it.
    pub(crate) fn took_queued(&mut self, left: u64) {
        self.count_take(left);
        self.queued = true;
        self.count_sample(false);
    }

    /// A take's bookkeeping: `left` after it.
    fn count_take(&mut self, left: u64) {
        self.taken += 1;
        self.left = left;
        self.cpu_taken_at_take = self.node_now.as_ref().map_or(0, |n| n.cpu_taken);
    }

    /// The node has a training sample more in flight (`small`: of the small size).
    fn count_sample(&self, small: bool) {
        let mut training = self.training.lock().unwrap_or_else(|e| e.into_inner());
        training.sampling[usize::from(!small)] += 1;
        training.sampled_items += self.sample_size(small);
    }

    /// The chunk in flight is over (done or abandoned): the queued one, if any, is
    /// the one in flight now.
    fn next_in_flight(&mut self) {
        self.in_training = std::mem::take(&mut self.queued).then_some(false);
    }

    /// The size of a training chunk (`small`: of the small sample).
    fn sample_size(&self, small: bool) -> u64 {
        let size = if small {
            self.samples.0
        } else {
            self.samples.1
        };
        size.min(self.max)
    }

    /// The chunk in flight failed (it ran on the CPU path): if it was a training
    /// sample, the node still needs one. A queued chunk is then the one in flight
    /// (abandon it too if it fails over with it).
    pub(crate) fn abandoned(&mut self) {
        if let Some(small) = self.in_training {
            self.uncount_sample(small);
        }
        self.next_in_flight();
    }

    /// The queued large sample could not start (it ran on the CPU path): the node
    /// still needs one.
    pub(crate) fn abandoned_queued(&mut self) {
        if std::mem::take(&mut self.queued) {
            self.uncount_sample(false);
        }
    }

    /// The node has a training sample of `small` size fewer in flight.
    fn uncount_sample(&self, small: bool) {
        let size = self.sample_size(small);
        let mut training = self.training.lock().unwrap_or_else(|e| e.into_inner());
        let out = &mut training.sampling[usize::from(!small)];
        *out = out.saturating_sub(1);
        training.sampled_items = training.sampled_items.saturating_sub(size);
    }

    /// Whether the last `want` said to wait for the node's model (a one-thread
    /// driver's board while two other boards take the samples).
    pub(crate) fn waiting(&self) -> bool {
        self.waiting.get()
    }

    /// Whether its last take was sized by the node's model (a production chunk, not
    /// a training sample).
    pub(crate) fn production(&self) -> bool {
        self.production
    }

    /// Whether its chunk in flight (taken and not done) is a training sample.
    pub(crate) fn in_sample(&self) -> bool {
        self.in_training.is_some()
    }

    /// A chunk of `items` took `seconds` (from staging to results; for a chunk
    /// queued behind another, from its staging as if it had begun right before its
    /// kernel could start). Chunks in flight are done in the order they were taken.
    pub(crate) fn done(&mut self, items: u64, seconds: f64) {
        self.next_in_flight();
        let sample = Sample { items, seconds };
        let mut training = self.training.lock().unwrap_or_else(|e| e.into_inner());
        match training.kernel.fit {
            Some((_, model)) if training.kernel.is_final() => {
                self.ratios.push(seconds / model.seconds(items));
                training.kernel.add(sample);
            }
            // Provisional (a modeled second sample): this chunk, if of another size
            // than the first, replaces it.
            Some(_) => training.kernel.add(sample),
            None => {
                training.kernel.add(sample);
                if let Some(large) = self.transfers.and_then(|t| t.modeled_large(sample)) {
                    training.kernel.add_modeled(large);
                    training.second_modeled = training.kernel.fit.is_some();
                }
            }
        }
    }

    /// The node's training for the report, with this board's chunk choice and the
    /// median of measured over modeled time of its chunks after training.
    pub(crate) fn into_fit(mut self) -> Option<BoardFit> {
        let measured = median(&mut self.ratios);
        let model = self.model();
        let (samples, second_modeled) = {
            let t = self.training.lock().unwrap_or_else(|e| e.into_inner());
            (t.kernel.fit.map(|(samples, _)| samples), t.second_modeled)
        };
        let (samples, model_with_service) = (samples?, model?);
        let model = PipelineModel {
            latency_s: model_with_service.latency_s - self.service_s,
            ..model_with_service
        };
        let chunk = model_with_service.chunk_for(self.rho);
        Some(BoardFit {
            samples,
            model,
            chunk,
            predicted_s: model.seconds(chunk),
            measured_over_model: measured,
            service_s: self.service_s,
            second_sample_modeled: second_modeled,
        })
    }
}

/// How many times its start-up cost the driver's own CPU must save the node to take
/// part in a plan before its first piece of the loop
/// ([`first_chunk_weighing_own_cpu`]): once for the cost itself, once for how
/// much it and the CPU's time per iteration vary from loop to loop.
const CPU_START_MARGIN: f64 = 2.0;

/// The board's first chunk of `plan`, or of the same plan without the driver's own
/// CPU path when that CPU, before its first piece of the loop, saves the node less
/// than [`CPU_START_MARGIN`] times the start-up cost it has still to pay
/// (`NodeNow::cpu_start_s`): what it saves is what its iterations by the plan's
/// deadline would have cost the node's boards, shared among them
/// ([`DeadlinePlan::own_cpu_saves_by`]). One deadline search for a plan that keeps the
/// CPU; `None` if the plan's numbers are not usable.
///
/// The plan counts that cost, but the cost varies by its own size from loop to loop
/// (the FFT's first row after a corner turn: 2-28 us), and so does the CPU's time
/// per iteration early in a loop (the FFT's trained loops: 1.9-6.9 us a row); a CPU
/// that saves little runs its last iterations after the boards have ended, and the
/// loop ends with them. In the FFT on native (a row: 0.5 us on a board, 2-5 us on
/// the CPU's thread), trained, with 2 boards per node the CPU's 15-26 of a PE's 256
/// rows saved the boards 5-7 us (1-1.4x its start-up cost) and the passes took
/// 1.37x the best split's with them, 1.17x without; with 4 boards (5-14 rows, 1-2
/// us) 1.6x against 1.3x. With one board its 35-55 rows save 18-29 us (4-8x) and
/// the passes took 1.08-1.14x against 1.19x.
fn first_chunk_weighing_own_cpu(plan: &DeadlinePlan<'_>) -> Option<u64> {
    let (plan, e) = weighing_own_cpu(plan)?;
    Some(plan.chunk_by(e))
}

/// `plan`, or the same plan without the driver's own CPU path when that CPU saves
/// the node too little for its start-up cost (as [`first_chunk_weighing_own_cpu`]
/// weighs it), with its deadline; `None` if the numbers are not usable. A trained
/// start's planned round (`round`) is weighed so too.
pub(crate) fn weighing_own_cpu<'a>(plan: &DeadlinePlan<'a>) -> Option<(DeadlinePlan<'a>, f64)> {
    let e = plan.deadline()?;
    let start_s = plan.node.cpu_start_s;
    let weighed = plan.own_cpu_item_s.is_some() && start_s > 0.0;
    if weighed && plan.own_cpu_saves_by(e) < CPU_START_MARGIN * start_s {
        let without = DeadlinePlan {
            own_cpu_item_s: None,
            ..plan.clone()
        };
        let e = without.deadline()?;
        return Some((without, e));
    }
    Some((plan.clone(), e))
}

/// A CPU's chunk sizes (see the module doc).
#[derive(Debug, Clone)]
pub(crate) struct CpuSizer {
    want: u64,
    chunk_s: f64,
    workers: u64,
    /// Iterations per second, smoothed over the last chunks.
    rate: Option<f64>,
    /// How fast the whole job drains the pool (iterations per second, smoothed), from
    /// what was handed out between this CPU's takes.
    drain: Option<f64>,
    /// Where this CPU's last take started, and when.
    last_take: Option<(u64, f64)>,
    /// The loop's length.
    n: u64,
    /// The boards this CPU shares the loop with, once its node's have a model.
    boards: Option<BoardsSeen>,
}

/// What a CPU knows of the boards it shares a loop with: its node's training, taken
/// to stand for every node's boards (they are alike, as the boards' share assumes).
#[derive(Debug, Clone)]
pub(crate) struct BoardsSeen {
    /// Boards that take from the pool.
    pub(crate) boards: u64,
    /// PEs whose CPUs take from it.
    pub(crate) cpus: u64,
    /// Boards of this PE's node that this PE drives (0: it drives none, and knows
    /// nothing of their speed).
    pub(crate) node_boards: u64,
    pub(crate) training: SharedTraining,
    /// The boards' large training sample: the most a CPU takes while they train.
    pub(crate) training_chunk: u64,
}

impl BoardsSeen {
    /// The job's boards that still take when `retired` of this node's have retired,
    /// every node's counted as this node's (they are alike, as a share assumes).
    /// Exact: `boards` is a multiple of `node_boards` (one node's, or every node's).
    fn taking(&self, retired: u64) -> u64 {
        if self.node_boards == 0 {
            return self.boards;
        }
        let retired = retired.min(self.node_boards);
        // At most `boards`: `retired <= node_boards`.
        self.boards - self.boards.saturating_mul(retired) / self.node_boards
    }
}

impl CpuSizer {
    pub(crate) fn new(first: u64, chunk_s: f64, workers: u64, n: u64) -> CpuSizer {
        CpuSizer {
            want: first.max(1),
            chunk_s,
            workers: workers.max(1),
            rate: None,
            drain: None,
            last_take: None,
            n,
            boards: None,
        }
    }

    /// Lets the CPU weigh its share against the boards' speed once their model is
    /// known (see [`CpuSizer::want_now`]).
    pub(crate) fn with_boards(mut self, boards: BoardsSeen) -> Self {
        self.boards = (boards.node_boards > 0 && boards.boards > 0).then_some(boards);
        self
    }

    /// The CPU's speed-weighted share of `left` iterations: what it does in the time
    /// in which all devices, at their speeds, would do `left` (the CPUs at this one's
    /// rate, the boards at their model's peak, those retired not counted). While the
    /// boards train (no model yet), no more than their large sample: a CPU that does
    /// not know how fast they are must not hold what they may do in a fraction of the
    /// time. `None` once the boards are all retired, or with no rate yet.
    fn share(&self, left: u64) -> Option<u64> {
        let seen = self.boards.as_ref()?;
        let fits = seen.training.lock().unwrap_or_else(|e| e.into_inner());
        if fits.retired >= seen.node_boards {
            return None;
        }
        let Some((_, model)) = fits.kernel.fit else {
            return Some(seen.training_chunk.max(1));
        };
        let rate = self.rate.filter(|r| *r > 0.0)?;
        let board_rate = seen.taking(fits.retired) as f64 / model.item_s;
        if !(model.item_s > 0.0 && board_rate.is_finite()) {
            return None;
        }
        let total = seen.cpus as f64 * rate + board_rate;
        // `as` saturates, and NaN gives 0.
        Some(((left as f64 * rate / total).ceil() as u64).max(1))
    }

    /// The chunk to ask for next.
    pub(crate) fn want(&self) -> u64 {
        self.want
    }

    /// The chunk to ask for next when `handed_out` iterations have been handed out:
    /// also no longer than the job needs to drain what is left at the rate it has
    /// been draining, so that near the end a CPU does not hold the last iterations
    /// while faster devices idle.
    ///
    /// Once the boards' model is known ([`CpuSizer::with_boards`]), also no more than
    /// its speed-weighted share of what is left: without it a CPU's second chunk,
    /// sized to `chunk_s` before any drain rate is known, could hold iterations the
    /// boards would do many times faster (a short loop ended with the CPU alone).
    pub(crate) fn want_now(&self, handed_out: u64) -> u64 {
        let left = self.n.saturating_sub(handed_out);
        let mut want = match (self.drain, self.rate) {
            (Some(drain), Some(rate)) if drain > 0.0 => {
                let left_s = left as f64 / drain;
                // `as` saturates, and NaN gives 0.
                let cap = ((rate * left_s).ceil() as u64).max(1);
                self.want.min(cap)
            }
            _ => self.want,
        };
        if let Some(share) = self.share(left) {
            want = want.min(share);
        }
        want
    }

    /// This CPU took a chunk starting at iteration `start` at `at_s` (seconds on the
    /// loop's clock).
    pub(crate) fn took(&mut self, start: u64, at_s: f64) {
        if let Some((before, then)) = self.last_take {
            if at_s > then && start > before {
                let measured = (start - before) as f64 / (at_s - then);
                self.drain = Some(self.drain.map_or(measured, |d| 0.5 * d + 0.5 * measured));
            }
        }
        self.last_take = Some((start, at_s));
    }

    /// Its throughput (iterations per second, smoothed) so far; 0 before its first
    /// chunk.
    pub(crate) fn rate(&self) -> f64 {
        self.rate.unwrap_or(0.0)
    }

    /// A chunk of `items` took `seconds`, leaving `left` in the pool.
    pub(crate) fn done(&mut self, items: u64, seconds: f64, left: u64) {
        let measured = items as f64 / seconds.max(1e-9);
        let rate = self.rate.map_or(measured, |r| 0.5 * r + 0.5 * measured);
        self.rate = Some(rate);
        // `as` saturates; the pool clamps to the loop's length.
        let sized = ((rate * self.chunk_s) as u64).max(1);
        self.want = sized.min((left / self.workers_taking()).max(1));
    }

    /// The loop's workers that still take (at least 1): its CPUs and the boards not
    /// retired, every node's counted as this node's (they are alike, as the share
    /// assumes); all of them while this CPU knows nothing of the boards.
    ///
    /// A CPU takes no more than its even part of what is left, so that the others
    /// get theirs; retired boards take nothing. Counting them, a CPU left alone by
    /// its boards (the 2D FFT on novo-g, whose boards stop because a row's DMA
    /// costs more than the CPU's row) halved its chunks with 1 board per node and
    /// took a fifth of what was left with 4: about 25 chunks of a PE's 256 rows, each
    /// in pieces, and FastFit's passes took 1.07-1.21x those of the split with all
    /// rows on the CPUs.
    fn workers_taking(&self) -> u64 {
        let Some(seen) = self.boards.as_ref().filter(|s| s.node_boards > 0) else {
            return self.workers.max(1);
        };
        let retired = seen
            .training
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retired;
        let retired_in_job = seen.boards - seen.taking(retired);
        self.workers.saturating_sub(retired_in_job).max(1)
    }
}

/// Pieces a CPU chunk is run in under the one-thread driver, with the boards served
/// between pieces: a board whose DONE comes during a CPU chunk waits for one piece at
/// most.
const CPU_PIECES: u64 = 8;

/// The iterations of each piece of a CPU chunk of `items` under the one-thread
/// driver: a [`CPU_PIECES`]th (at least 1), or all of them when `no_boards` (every
/// board of the thread is retired, or it drives none): pieces are there to serve the
/// boards between them, and each costs the thread its bookkeeping and clock reads.
pub(crate) fn piece_size(items: u64, no_boards: bool) -> u64 {
    if no_boards {
        items.max(1)
    } else {
        items.div_ceil(CPU_PIECES).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests' rho (their chunk sizes are worked out for it).
    fn rho95() -> Rho {
        Rho::new(0.95).unwrap()
    }

    /// A board of a job of `boards` boards and `cpus` CPUs, with its node's training.
    fn board(board: u32, boards: u64, cpus: u64, training: &SharedTraining) -> BoardSizer {
        BoardSizer::new(
            (100, 400),
            rho95(),
            (board, boards, cpus),
            false,
            u64::MAX,
            1_000_000,
            training.clone(),
        )
    }

    /// Board `board` of a node of `boards` driven by one thread (no CPUs), with
    /// `samples`, a loop of `n` and its node's training.
    fn one_driver(
        board: u32,
        boards: u64,
        samples: (u64, u64),
        n: u64,
        training: &SharedTraining,
    ) -> BoardSizer {
        BoardSizer::new(
            samples,
            rho95(),
            (board, boards, 0),
            true,
            u64::MAX,
            n,
            training.clone(),
        )
    }

    /// 2 ms of latency and 10 us per item.
    fn seconds(items: u64) -> f64 {
        2e-3 + items as f64 * 1e-5
    }

    /// The driver says what the CPU path typically takes an iteration.
    fn typical_cpu(s: &mut BoardSizer, item_s: Option<f64>) {
        s.set_cpu_typical(item_s);
    }

    /// The model's price of 100 iterations' transfers (1 ms) and of the largest
    /// chunk's (`largest`: iterations, seconds), and how much of each holds the
    /// driver's thread (`held`).
    fn priced(largest: (u64, f64), held: (f64, f64)) -> Transfers {
        Transfers {
            small: Sample {
                items: 100,
                seconds: 1e-3,
            },
            largest: Sample {
                items: largest.0,
                seconds: largest.1,
            },
            small_held_s: held.0,
            largest_held_s: held.1,
        }
    }

    /// Board 0 of 1, samples of 100 and 400, chunks of at most 1000, in a loop of
    /// `n` with `cpus` CPUs, on one driver thread or its own, its transfers priced
    /// as `transfers`.
    fn priced_board(
        one_thread: bool,
        cpus: u64,
        n: u64,
        transfers: Option<Transfers>,
    ) -> BoardSizer {
        BoardSizer::new(
            (100, 400),
            rho95(),
            (0, 1, cpus),
            one_thread,
            1000,
            n,
            SharedTraining::default(),
        )
        .with_transfers(transfers)
    }

    /// Trains `s` on its two samples (100 and 400 items, timed by `seconds`), the
    /// second leaving `left` in the pool.
    fn train(s: &mut BoardSizer, left: u64) {
        s.took(999_900);
        s.done(100, seconds(100));
        s.took(left);
        s.done(400, seconds(400));
    }

    /// One board and its driver's CPU on one thread, a loop of `n`, the board
    /// trained on 100 (taken first) and 400 (taken with `left_at_take` left): a
    /// chunk takes 2 ms and 10 us an iteration, of which its staging and fetching
    /// hold the thread 0.1 ms and 1 us an iteration.
    fn one_board_and_its_cpu(n: u64, left_at_take: u64) -> BoardSizer {
        let mut s = BoardSizer::new(
            (100, 400),
            rho95(),
            (0, 1, 1),
            true,
            u64::MAX,
            n,
            SharedTraining::default(),
        );
        s.set_node_now(NodeNow::default());
        s.took(n - 100);
        s.done(100, seconds(100));
        s.cost_driver(100, 1e-4 + 100.0 * 1e-6, 1e-4 + 100.0 * 1e-6);
        s.took(left_at_take);
        s.done(400, seconds(400));
        s.cost_driver(400, 1e-4 + 400.0 * 1e-6, 1e-4 + 400.0 * 1e-6);
        s
    }

    #[test]
    fn a_lone_board_on_one_thread_queues_its_large_sample_behind_the_small_one() {
        let training = SharedTraining::default();
        let mut s = one_driver(0, 1, (100, 400), 100_000, &training);
        // Nothing to queue before the small sample is in flight.
        assert_eq!(s.queued_sample(), None);
        assert_eq!(s.want(0.0, None, 0), Some(100));
        s.took(99_900);
        assert_eq!(s.queued_sample(), Some(400));
        s.took_queued(99_500);
        // One queued at a time, and the node counts both samples.
        assert_eq!(s.queued_sample(), None);
        assert_eq!(training.lock().unwrap().sampling, [1, 1]);
        assert_eq!(training.lock().unwrap().sampled_items, 500);
        // Done in order: the small one, then the queued large one, which is then the
        // sample in flight.
        s.done(100, seconds(100));
        assert!(s.in_sample());
        assert!(training.lock().unwrap().kernel.fit.is_none());
        s.done(400, seconds(400));
        assert!(!s.in_sample());
        let model = training.lock().unwrap().kernel.fit.unwrap().1;
        assert!((model.latency_s - 2e-3).abs() < 1e-12 && (model.item_s - 1e-5).abs() < 1e-15);
        // Trained: nothing more is queued.
        assert_eq!(s.want(0.0, None, 100_000 - 99_500), Some(3800));
        s.took(90_000);
        assert_eq!(s.queued_sample(), None);
    }

    #[test]
    fn only_a_lone_board_whose_large_sample_is_needed_queues_it() {
        // Two boards of a node on one thread: the second takes the large sample.
        let training = SharedTraining::default();
        let (mut a, mut b) = (
            one_driver(0, 2, (100, 400), 100_000, &training),
            one_driver(1, 2, (100, 400), 100_000, &training),
        );
        assert_eq!(a.want(0.0, None, 0), Some(100));
        a.took(99_900);
        assert_eq!(b.want(0.0, None, 100), Some(400));
        b.took(99_500);
        assert_eq!(a.queued_sample(), None);
        // A board on a thread of its own does not queue.
        let mut own = board(0, 1, 0, &SharedTraining::default());
        assert_eq!(own.want(0.0, None, 0), Some(100));
        own.took(999_900);
        assert_eq!(own.queued_sample(), None);
        // With its transfers priced the small sample alone may give the model.
        let mut priced = priced_board(true, 0, 100_000, Some(priced((1000, 5e-3), (1e-3, 5e-3))));
        assert_eq!(priced.want(0.0, None, 0), Some(100));
        priced.took(99_900);
        assert_eq!(priced.queued_sample(), None);
        // Samples of one size (buffers that hold no more than the small one).
        let mut one_size = BoardSizer::new(
            (100, 400),
            rho95(),
            (0, 1, 0),
            true,
            100,
            100_000,
            SharedTraining::default(),
        );
        assert_eq!(one_size.want(0.0, None, 0), Some(100));
        one_size.took(99_900);
        assert_eq!(one_size.queued_sample(), None);
    }

    #[test]
    fn samples_that_fail_over_are_given_back_to_the_node() {
        // The queued sample could not start: the node needs a large sample again.
        let training = SharedTraining::default();
        let mut s = one_driver(0, 1, (100, 400), 100_000, &training);
        assert_eq!(s.want(0.0, None, 0), Some(100));
        s.took(99_900);
        s.took_queued(99_500);
        s.abandoned_queued();
        assert_eq!(training.lock().unwrap().sampling, [1, 0]);
        assert_eq!(training.lock().unwrap().sampled_items, 100);
        assert!(s.in_sample());
        // The small one fails, and the queued one with it: both given back.
        let training = SharedTraining::default();
        let mut s = one_driver(0, 1, (100, 400), 100_000, &training);
        assert_eq!(s.want(0.0, None, 0), Some(100));
        s.took(99_900);
        s.took_queued(99_500);
        s.abandoned();
        assert!(s.in_sample());
        assert_eq!(training.lock().unwrap().sampling, [0, 1]);
        s.abandoned();
        assert!(!s.in_sample());
        assert_eq!(training.lock().unwrap().sampling, [0, 0]);
        assert_eq!(training.lock().unwrap().sampled_items, 0);
    }

    #[test]
    fn a_board_trains_then_takes_the_model_chunk_within_its_share() {
        let training = SharedTraining::default();
        let mut s = board(0, 1, 0, &training);
        assert_eq!(s.want(0.0, None, 0).unwrap(), 100);
        s.took(999_900);
        s.done(100, seconds(100));
        assert_eq!(s.want(0.0, None, 0).unwrap(), 400);
        s.took(999_500);
        s.done(400, seconds(400));
        // rho 0.95: 0.95 * 2e-3 / (0.05 * 1e-5) = 3800.
        assert_eq!(s.want(0.0, None, 0).unwrap(), 3800);
        // Near the end, alone: all that is left.
        s.took(1000);
        assert_eq!(s.want(0.0, None, 0).unwrap(), 1000);
        // Chunks of 3800 (modeled 0.04 s) measured 0.042, 0.04 and 0.041 s: the
        // first, larger than the samples, moves the line's far end to it; the others
        // change nothing and are measured against that line.
        s.done(3800, 0.042);
        s.done(3800, 0.04);
        s.done(3800, 0.041);
        let fit = s.into_fit().unwrap();
        assert_eq!(fit.samples.map(|s| s.items), [100, 3800]);
        assert!((fit.samples[1].seconds - 0.042).abs() < 1e-12);
        // Ratios 0.042 / 0.04, 0.04 / 0.042, 0.041 / 0.042: median 0.976.
        assert!((fit.measured_over_model.unwrap() - 0.041 / 0.042).abs() < 1e-9);
        // The line through (100, 3 ms) and (3800, 42 ms), and rho 0.95's chunk.
        let item_s = 0.039 / 3700.0;
        let latency_s = 3e-3 - 100.0 * item_s;
        assert!((fit.model.item_s - item_s).abs() < 1e-15);
        assert!((fit.model.latency_s - latency_s).abs() < 1e-12);
        let chunk = (0.95 * latency_s / (0.05 * item_s)).ceil() as u64;
        assert!(fit.chunk.abs_diff(chunk) <= 1, "{} {chunk}", fit.chunk);
        assert!((fit.predicted_s - fit.model.seconds(fit.chunk)).abs() < 1e-12);
    }

    #[test]
    fn the_boards_of_a_node_train_together_and_share_one_model() {
        let training = SharedTraining::default();
        let mut b0 = board(0, 8, 0, &training);
        let mut b1 = board(1, 8, 0, &training);
        let mut b2 = board(2, 8, 0, &training);
        // At once: the small sample on board 0, the large one on the others.
        assert_eq!(
            (
                b0.want(0.0, None, 0).unwrap(),
                b1.want(0.0, None, 0).unwrap(),
                b2.want(0.0, None, 0).unwrap()
            ),
            (100, 400, 400)
        );
        for b in [&mut b0, &mut b1, &mut b2] {
            b.took(999_000);
        }
        // Until both sizes have completed, no model: board 1 done, it asks for the
        // large sample again.
        b1.done(400, seconds(400));
        assert_eq!(b1.want(0.0, None, 0).unwrap(), 400);
        b0.done(100, seconds(100));
        // Now every board of the node has the model (3800), cut to its share of
        // what was left: 999000 / 8 boards.
        for b in [&b0, &b1, &b2] {
            assert_eq!(b.want(0.0, None, 0).unwrap(), 3800);
        }
        b0.took(20_000);
        assert_eq!(b0.want(0.0, None, 0).unwrap(), 2500);
        // Board 2's large sample, done after the fit: measured against the model.
        b2.done(400, seconds(400) * 1.5);
        assert!((b2.into_fit().unwrap().measured_over_model.unwrap() - 1.5).abs() < 1e-9);
    }

    #[test]
    fn the_first_chunk_after_training_shares_what_every_node_leaves() {
        // Four nodes of one board each, a loop of 10 000. This board trains first:
        // its samples leave 9 500 in the pool, but the other nodes' samples (500
        // each, like its own) come out of that too.
        let mut s = BoardSizer::new(
            (100, 400),
            rho95(),
            (0, 4, 0),
            false,
            u64::MAX,
            10_000,
            SharedTraining::default(),
        )
        .with_node_boards(1);
        assert_eq!(s.want(0.0, None, 0).unwrap(), 100);
        s.took(9_900);
        s.done(100, seconds(100));
        assert_eq!(s.want(0.0, None, 0).unwrap(), 400);
        s.took(9_500);
        s.done(400, seconds(400));
        // 8 000 after every node's training, a quarter each (not 9 500 / 4 = 2 375).
        assert_eq!(s.want(0.0, None, 2_000).unwrap(), 2_000);
        // Later rounds share what was left at the board's last take.
        s.took(4_000);
        assert_eq!(s.want(0.0, None, 6_000).unwrap(), 1_000);
    }

    #[test]
    fn a_board_whose_buffers_hold_one_sample_size_takes_it_throughout() {
        // Buffers of 80 items, samples of 100 and 400: both would be 80, and no line
        // fits chunks of one size. On one driver thread the board must not wait for
        // that model.
        let mut s = BoardSizer::new(
            (100, 400),
            rho95(),
            (0, 1, 1),
            true,
            80,
            10_000,
            SharedTraining::default(),
        );
        for left in [9_920, 9_840, 9_760] {
            assert_eq!(s.want(0.0, None, 10_000 - left), Some(80));
            assert!(!s.waiting());
            s.took(left);
            s.done(80, seconds(80));
        }
    }

    #[test]
    fn the_share_counts_the_cpus_at_their_rate() {
        let training = SharedTraining::default();
        let mut s = board(0, 2, 4, &training);
        train(&mut s, 999_500);
        s.took(3000);
        // Without CPUs: 3000 / 2 boards.
        assert_eq!(s.want(0.0, None, 0).unwrap(), 1500);
        // 4 CPUs at 10^4 items/s: 2 c + 4e4 (2e-3 + 1e-5 c) = 3000, c = 2920 / 2.4.
        assert_eq!(s.want(1e4, None, 0).unwrap(), 1217);
        // CPUs that would do what is left within one board latency (50 items / 4
        // CPUs at 10^5 items/s: 125 us, the latency 2 ms): the tail is theirs.
        s.took(50);
        assert_eq!(s.want(1e5, None, 999_950), None);
        assert!(s.stopped());
        let why = s.stop_reason().unwrap().to_string();
        assert!(
            why.contains("the 50 iterations left in 125.00 us")
                && why.contains("latency (2000.00 us)"),
            "{why}"
        );
    }

    #[test]
    fn a_board_leaves_cpus_not_measured_yet_their_first_chunks() {
        let training = SharedTraining::default();
        let mut s = board(0, 1, 2, &training).with_cpu_first(5);
        train(&mut s, 999_500);
        s.took(500);
        // Two CPUs that have run nothing count for nothing in the share, and would
        // be left nothing: the board leaves each its first chunk of 5.
        assert_eq!(s.want(0.0, None, 999_500), Some(490));
        // Once they are measured (10^4 items/s each) nothing is set aside: the
        // share counts them, 460 / (1 + 2e4 * 1e-5) = 383.3.
        assert_eq!(s.want(1e4, None, 999_500), Some(384));
        // The rounding of a share does not eat into what is left aside: with 12
        // left the board takes 2 (its share alone would be all 12).
        assert_eq!(s.want(0.0, None, 999_988), Some(2));
        // With only that left, the board waits for the CPUs (it does not stop, and
        // the driver does not take the pool for empty).
        assert_eq!(s.want(0.0, None, 999_990), None);
        assert!(s.waiting() && !s.stopped());
        // Without CPUs, or with a CPU's own time known on a shared thread, nothing
        // is set aside.
        let mut alone = board(0, 1, 0, &training).with_cpu_first(5);
        alone.took(500);
        assert_eq!(alone.want(0.0, None, 999_990), Some(10));
        assert_eq!(s.want(0.0, Some(1e-3), 999_500), Some(500));
    }

    #[test]
    fn a_driver_cpu_that_saves_less_than_twice_its_start_up_cost_sits_out() {
        // One board and its driver's CPU on one thread, trained, 1000 left.
        let sizer = |start_s: f64| {
            let mut s = one_board_and_its_cpu(1500, 1000);
            s.set_node_now(NodeNow {
                cpu_start_s: start_s,
                ..NodeNow::default()
            });
            s
        };
        // No start-up cost due: the plan counts the CPU, 1 ms an iteration, at
        // 1.735 ms (`cpu_item_planned_s`: no spread measured yet, and the board's
        // iterations are 100 times cheaper), at which it runs about 6 while the
        // board runs the rest (2 ms + 10 us c, less the thread's 0.1 ms + 1 us c of
        // staging and fetching): the board takes 994.
        let take = |start_s: f64| sizer(start_s).want(0.0, Some(1e-3), 500);
        assert!((cpu_item_planned_s(1e-3, 1e-5, DEFAULT_CPU_SPREAD) - 1.735e-3).abs() < 1e-6);
        assert_eq!(take(0.0), Some(994));
        // A CPU whose pieces were measured not to spread is counted at its time:
        // it runs about 10, the board takes 990.
        let mut steady = sizer(0.0);
        steady.set_cpu_spread(Some(0.0));
        assert_eq!(steady.want(0.0, Some(1e-3), 500), Some(990));
        steady.set_cpu_spread(Some(0.2));
        assert_eq!(steady.want(0.0, Some(1e-3), 500), Some(991));
        // Those 6.25 iterations save the board 62.5 us. A start-up cost of 30 us
        // still due (less than half of that) leaves the CPU in the plan; one of 35
        // us takes it out, and the board takes all 1000.
        assert_eq!(take(3e-5), Some(994));
        assert_eq!(take(3.5e-5), Some(1000));
        // A CPU of 100 us an iteration, counted at 161 us, runs about 64 and saves
        // 0.64 ms: it stays in with a start-up cost of 0.3 ms, not with 0.35 ms.
        let fast = |start_s: f64| sizer(start_s).want(0.0, Some(1e-4), 500).unwrap();
        assert!((930..=940).contains(&fast(3e-4)), "{}", fast(3e-4));
        assert_eq!(fast(3.5e-4), 1000);
    }

    #[test]
    fn a_board_leaves_the_tail_to_cpus_that_finish_it_within_its_latency() {
        let training = SharedTraining::default();
        let mut s = board(0, 1, 2, &training);
        train(&mut s, 999_500);
        s.took(500);
        // 2 CPUs at 10^4 items/s do 40 items in 2 ms, the board's latency: it
        // still takes (the share: 40 - 2e4 (2e-3 + 1e-5 c) = c, c = 0).
        assert_eq!(s.want(1e4, None, 999_960), Some(1));
        assert!(!s.stopped());
        // 39 take them 1.95 ms: it stops.
        assert_eq!(s.want(1e4, None, 999_961), None);
        assert!(s.stopped());
        // Without CPUs, or before their speed is known, it takes.
        let s = board(0, 1, 0, &training);
        assert!(s.want(1e4, None, 999_999).is_some() && !s.stopped());
        let s = board(0, 1, 2, &training);
        assert!(s.want(0.0, None, 999_999).is_some() && !s.stopped());
        // On a shared thread the CPU path's own time counts: 39 items at 50 us.
        let s = board(0, 1, 1, &training);
        assert_eq!(s.want(0.0, Some(5e-5), 999_961), None);
        assert!(s.stopped());
        let s = board(0, 1, 1, &training);
        assert!(s.want(0.0, Some(5e-5), 999_959).is_some() && !s.stopped());
        // The same 39 items with a start-up cost of 0.1 ms still due on the CPU
        // path: 2.05 ms, more than the latency: the board takes.
        let mut s = board(0, 1, 1, &training);
        s.set_node_now(NodeNow {
            cpu_start_s: 1e-4,
            ..NodeNow::default()
        });
        assert!(s.want(0.0, Some(5e-5), 999_961).is_some() && !s.stopped());
    }

    #[test]
    fn right_after_training_the_plan_leaves_out_what_the_cpu_took_meanwhile() {
        // One board and its driver's CPU (100 us an iteration) on one thread, a loop
        // of 1000: the board trains on 100 and 400 (2 ms + 10 us an iteration, 0.1
        // ms + 1 us of the thread). Its first production chunk is its part of what
        // was left at its last take (500), less what the CPU took since: with 50
        // taken, the plan is the one for 450 left.
        let sizer = |left_at_take: u64| one_board_and_its_cpu(1000, left_at_take);
        let now = |cpu_taken: u64| NodeNow {
            cpu_taken,
            ..NodeNow::default()
        };
        let mut s = sizer(500);
        s.set_node_now(now(0));
        let all = s.want(0.0, Some(1e-4), 500).unwrap();
        s.set_node_now(now(50));
        let after_cpu = s.want(0.0, Some(1e-4), 550).unwrap();
        let mut twin = sizer(450);
        twin.set_node_now(now(0));
        assert_eq!(after_cpu, twin.want(0.0, Some(1e-4), 550).unwrap());
        assert!(after_cpu < all, "{after_cpu} {all}");
    }

    #[test]
    fn on_a_shared_thread_a_board_leaves_the_cpu_the_time_it_does_not_use() {
        let training = SharedTraining::default();
        let mut s = board(0, 1, 1, &training);
        // The board: 2 ms + 10 us per item; of that its driver spends 1 ms + 8 us
        // per item staging and fetching.
        s.took(999_900);
        s.done(100, seconds(100));
        s.cost_driver(100, 1e-3 + 100.0 * 8e-6, 1e-3 + 100.0 * 8e-6);
        s.took(999_500);
        s.done(400, seconds(400));
        s.cost_driver(400, 1e-3 + 400.0 * 8e-6, 1e-3 + 400.0 * 8e-6);
        s.took(10_000);
        // A CPU item takes 100 us, counted at p = 161 us (`cpu_item_planned_s`):
        // while the board runs c, the CPU does (1 ms + 2 us * c) / p;
        // c + 6.2 + 0.0124 c = 10000, c = 9871. FastFit's chunk (3800) is smaller.
        let p = cpu_item_planned_s(1e-4, 1e-5, DEFAULT_CPU_SPREAD);
        assert!((p - 1.6136e-4).abs() < 1e-8, "{p}");
        assert_eq!(s.want(0.0, Some(1e-4), 0), Some(3800));
        // With 2000 left: c + 1e-3 / p + 2e-6 c / p = 2000, c = 1970 (1951 with
        // the CPU counted at 100 us).
        s.took(2000);
        let share = ((2000.0 - 1e-3 / p) / (1.0 + 2e-6 / p)).ceil() as u64;
        assert_eq!(share, 1970);
        assert_eq!(s.want(0.0, Some(1e-4), 0), Some(share));
        assert!(!s.stopped());
        // A CPU item of 8 us: the board's share would be 1500, at which an item
        // costs the thread 1 ms / 1500 + 8 us through the board, more than on the
        // CPU: the board stops.
        assert_eq!(s.want(0.0, Some(8e-6), 0), None);
        assert!(s.stopped());
        let why = s.stop_reason().unwrap().to_string();
        assert!(
            why.contains("(1500 iterations)") && why.contains("8.00 us on the CPU"),
            "{why}"
        );
    }

    #[test]
    fn a_board_whose_modeled_transfers_cost_more_than_the_cpu_never_trains() {
        // The model prices 1000 iterations' transfers at 20 ms: 20 us an iteration.
        let priced = |seconds: f64| priced((1000, seconds), (1e-3, seconds));
        let one_thread = |cpus: u64, transfers: Option<Transfers>| {
            priced_board(true, cpus, 1_000_000, transfers)
        };
        // It waits for the CPU's typical time (none before a piece after its
        // first: the first piece's time, `cpu_item_s`, says 300 us an iteration),
        // then stops if the CPU does an iteration in 20 us or less.
        let mut s = one_thread(1, Some(priced(20e-3)));
        assert_eq!(s.want(0.0, None, 0), None);
        assert!(s.waiting() && !s.stopped());
        typical_cpu(&mut s, None);
        assert_eq!(s.want(0.0, Some(300e-6), 0), None);
        assert!(s.waiting() && !s.stopped());
        typical_cpu(&mut s, Some(20e-6));
        assert_eq!(s.want(0.0, Some(300e-6), 0), None);
        assert!(s.stopped() && !s.waiting());
        let why = s.stop_reason().unwrap().to_string();
        assert!(
            why.contains("never trained") && why.contains("20.00 us"),
            "{why}"
        );
        // A CPU slower than the transfers: it trains (the small sample first),
        // whatever its first piece took.
        let mut s = one_thread(1, Some(priced(20e-3)));
        typical_cpu(&mut s, Some(21e-6));
        assert_eq!(s.want(0.0, Some(1e-6), 0), Some(100));
        assert!(!s.stopped() && !s.waiting());
        // A typical time that is not a time is none: it waits.
        for bad in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
            let mut s = one_thread(1, Some(priced(20e-3)));
            typical_cpu(&mut s, Some(bad));
            assert_eq!(s.want(0.0, Some(21e-6), 0), None, "{bad}");
            assert!(s.waiting() && !s.stopped(), "{bad}");
        }
        // Without CPUs, or without a price (a profile that models nothing), it
        // trains at once.
        assert_eq!(
            one_thread(0, Some(priced(20e-3))).want(0.0, None, 0),
            Some(100)
        );
        assert_eq!(one_thread(1, None).want(0.0, None, 0), Some(100));
        // A price that is not a time is no price.
        assert_eq!(
            one_thread(1, Some(priced(f64::NAN))).want(0.0, None, 0),
            Some(100)
        );
    }

    #[test]
    fn on_its_own_thread_a_board_whose_sample_outlasts_the_cpus_never_trains() {
        // The model prices the small sample's transfers (100 iterations) at 3 ms.
        let transfers = Transfers {
            small: Sample {
                items: 100,
                seconds: 3e-3,
            },
            ..priced((1000, 20e-3), (3e-3, 20e-3))
        };
        let own_thread = |cpus: u64, n: u64| priced_board(false, cpus, n, Some(transfers));
        // It waits for the CPU's typical time, then stops: 2 CPUs at 10 us an
        // iteration do the 500 left (of 1000, 500 handed out) in 2.5 ms.
        let mut s = own_thread(2, 1000);
        assert_eq!(s.want(0.0, None, 500), None);
        assert!(s.waiting() && !s.stopped());
        typical_cpu(&mut s, Some(10e-6));
        assert_eq!(s.want(0.0, None, 500), None);
        assert!(s.stopped() && !s.waiting());
        let why = s.stop_reason().unwrap().to_string();
        assert!(
            why.contains("never trained") && why.contains("500 iterations"),
            "{why}"
        );
        // With 700 left (3.5 ms for the CPUs) it trains, on the small sample.
        let mut s = own_thread(2, 1000);
        typical_cpu(&mut s, Some(10e-6));
        assert_eq!(s.want(0.0, None, 300), Some(100));
        // Once it has taken a chunk the rule is behind it (a later take does not
        // wait for, or weigh, the CPU's time).
        s.took(600);
        s.set_cpu_typical(None);
        assert_ne!(s.want(0.0, None, 400), None);
        // Without CPUs or without a price it trains at once.
        assert_eq!(own_thread(0, 1000).want(0.0, None, 0), Some(100));
        let unpriced = BoardSizer::new(
            (100, 400),
            rho95(),
            (0, 1, 2),
            false,
            1000,
            1000,
            SharedTraining::default(),
        );
        assert_eq!(unpriced.want(0.0, None, 0), Some(100));
    }

    #[test]
    fn a_board_stops_before_the_loop_on_the_estimate_only_with_a_margin_of_two() {
        // One driver thread; the model's transfers hold it 20 us an iteration.
        let one_thread = |estimate: Option<f64>, transfers: Option<Transfers>, cpus: u64| {
            priced_board(true, cpus, 1_000_000, transfers).with_cpu_estimate(estimate)
        };
        let twenty = || Some(priced((1000, 20e-3), (1e-3, 20e-3)));
        // An estimate of 10 us: weighed at twice that (20 us), the CPU still does an
        // iteration no slower than the transfers hold the thread. The reason keeps
        // the time it was weighed at.
        let s = one_thread(Some(10e-6), twenty(), 1);
        assert!(s.stops_on_estimate(1_000_000) && s.stopped());
        let why = s.stop_reason().unwrap();
        assert_eq!(
            why,
            StopReason::Predicted {
                driver_item_s: 20e-6,
                cpu_item_s: 20e-6,
                cpu_estimated: true
            }
        );
        assert!(why.to_string().contains("application's estimate"), "{why}");
        // 10.5 us: twice that is more than the transfers; it does not decide on
        // the estimate, and `want` still waits for the CPU's typical time.
        let s = one_thread(Some(10.5e-6), twenty(), 1);
        assert!(!s.stops_on_estimate(1_000_000) && !s.stopped());
        assert_eq!(s.want(0.0, None, 0), None);
        assert!(s.waiting());
        // No estimate, an estimate that is not a time, no price or no CPUs: no
        // decision before the loop.
        for estimate in [
            None,
            Some(f64::NAN),
            Some(0.0),
            Some(-1e-6),
            Some(f64::INFINITY),
        ] {
            assert!(!one_thread(estimate, twenty(), 1).stops_on_estimate(1_000_000));
        }
        assert!(!one_thread(Some(1e-6), None, 1).stops_on_estimate(1_000_000));
        assert!(!one_thread(Some(1e-6), twenty(), 0).stops_on_estimate(1_000_000));

        // On a thread of its own: the small sample's transfers take 3 ms; 2 CPUs.
        let transfers = Transfers {
            small: Sample {
                items: 100,
                seconds: 3e-3,
            },
            ..priced((1000, 20e-3), (3e-3, 20e-3))
        };
        let own_thread = |estimate: f64| {
            priced_board(false, 2, 1000, Some(transfers)).with_cpu_estimate(Some(estimate))
        };
        // 1000 left at twice 2.5 us, on 2 CPUs: 2.5 ms, before the sample's 3 ms.
        let s = own_thread(2.5e-6);
        assert!(s.stops_on_estimate(1000));
        match s.stop_reason() {
            Some(StopReason::Outlasted {
                left: 1000,
                cpus_s,
                cpu_estimated: true,
                ..
            }) => assert!((cpus_s - 2.5e-3).abs() < 1e-12, "{cpus_s}"),
            other => panic!("{other:?}"),
        }
        // At 3.5 us (3.5 ms at twice it) it is not proven: it waits as before.
        let s = own_thread(3.5e-6);
        assert!(!s.stops_on_estimate(1000) && !s.stopped());
        assert_eq!(s.want(0.0, None, 0), None);
        assert!(s.waiting());
        // A board that starts trained (a model) is past that rule.
        let mut trained = own_thread(1e-9);
        train(&mut trained, 500);
        assert!(!trained.stops_on_estimate(1000));
    }

    #[test]
    fn inputs_staged_in_the_background_cost_the_thread_only_the_held_transfers() {
        // The model prices 100 iterations' transfers at 1 ms and 2000 at 4 ms; the
        // inputs' put, 90% of it, runs in the background (put_nbi), so the thread is
        // held for 0.1 ms and 0.4 ms.
        let priced = |held: bool| match held {
            true => priced((2000, 4e-3), (1e-3, 4e-3)),
            false => priced((2000, 4e-3), (0.1e-3, 0.4e-3)),
        };
        let training = SharedTraining::default();
        let sizer = |board: u32, held: bool, training: &SharedTraining| {
            let mut s = BoardSizer::new(
                (100, 400),
                rho95(),
                (board, 2, 1),
                true,
                2000,
                1_000_000,
                training.clone(),
            )
            .with_transfers(Some(priced(held)));
            typical_cpu(&mut s, Some(1.5e-6));
            s
        };
        // A CPU at 1.5 us an iteration: the blocking transfers (2 us an iteration)
        // are dearer, and the board never trains; in the background (0.2 us) it does.
        let blocking = sizer(0, true, &SharedTraining::default());
        assert_eq!(blocking.want(0.0, Some(1.5e-6), 0), None);
        assert!(blocking.stopped());
        let (mut b0, mut b1) = (sizer(0, false, &training), sizer(1, false, &training));
        assert_eq!(b0.want(0.0, Some(1.5e-6), 0), Some(100));
        b0.took(1900);
        // The other board samples too, rather than wait for the model (with the
        // blocking put it waits: see `with_priced_transfers_one_sample_gives_the_model`).
        assert_eq!(b1.want(0.0, Some(1.5e-6), 100), Some(100));
        assert!(!b1.waiting() && !b1.stopped());
        b1.took(1800);
        // Board 0's sample: 2 ms on the board, 0.3 ms of the thread. The driver's
        // modeled second sample is the held transfers plus the rest in proportion:
        // 0.4 ms + (0.3 - 0.1) ms * 20 = 4.4 ms, not the whole 4 ms of transfers.
        b0.done(100, 2e-3);
        b0.cost_driver(100, 0.3e-3, 0.3e-3);
        let driver = training.lock().unwrap().driver.fit().unwrap().1;
        assert!((driver.seconds(2000) - 4.4e-3).abs() < 1e-12, "{driver:?}");
        // Board 1's sample of the same size averages into the small point: 100
        // iterations in 2.5 ms; the second sample modeled from board 0's (4 ms of
        // transfers + 1 ms * 20) stays.
        b1.done(100, 3e-3);
        let fit = b1.clone().into_fit().unwrap();
        assert!(fit.second_sample_modeled);
        assert!((fit.samples[0].seconds - 2.5e-3).abs() < 1e-12, "{fit:?}");
        assert!((fit.samples[1].seconds - 24e-3).abs() < 1e-12, "{fit:?}");
    }

    #[test]
    fn with_priced_transfers_one_sample_gives_the_model() {
        // Two boards on one driver thread; the model prices the transfers of 100
        // iterations at 1 ms and of 2000 at 4 ms.
        let transfers = priced((2000, 4e-3), (1e-3, 4e-3));
        let training = SharedTraining::default();
        let sizer = |board: u32| {
            BoardSizer::new(
                (100, 400),
                rho95(),
                (board, 2, 0),
                true,
                2000,
                1_000_000,
                training.clone(),
            )
            .with_transfers(Some(transfers))
        };
        let (mut b0, b1) = (sizer(0), sizer(1));
        // Board 0 takes the small sample; board 1 waits for the model instead of
        // taking the large one.
        assert_eq!(b0.want(0.0, None, 0), Some(100));
        b0.took(999_900);
        assert_eq!(b1.want(0.0, None, 0), None);
        assert!(b1.waiting());
        // The sample took 2 ms: 1 ms of transfers and 10 us an iteration besides.
        // The modeled second sample: 2000 iterations in 4 ms + 2000 * 10 us = 24 ms.
        b0.done(100, 2e-3);
        b0.cost_driver(100, 1.5e-3, 1.5e-3);
        let fit = b0.clone().into_fit().unwrap();
        assert!(fit.second_sample_modeled);
        assert_eq!(fit.samples[1].items, 2000);
        assert!((fit.samples[1].seconds - 24e-3).abs() < 1e-12);
        // latency + 100 item = 2 ms, latency + 2000 item = 24 ms: item 11.58 us.
        assert!((fit.model.item_s - 22e-3 / 1900.0).abs() < 1e-12, "{fit:?}");
        // Both boards now take FastFit's chunk: latency 0.842 ms, so for rho 0.95
        // 0.95 * 0.842e-3 / (0.05 * 11.58e-6) = 1382 (less than their shares).
        assert_eq!(fit.chunk, 1382);
        assert_eq!(b1.want(0.0, None, 0), Some(1382));
        assert!(!b1.waiting());
        // The first measured chunk of another size replaces the modeled sample: the
        // line then goes through 100 iterations in 2 ms and 1382 in 10 ms, and later
        // chunks are measured against it.
        let mut b1 = b1;
        b1.took(900_000);
        b1.done(1382, 10e-3);
        let fit = b1.clone().into_fit().unwrap();
        assert!(fit.second_sample_modeled);
        assert_eq!(fit.samples[1].items, 1382);
        assert!((fit.model.item_s - 8e-3 / 1282.0).abs() < 1e-12, "{fit:?}");
        b1.done(1000, fit.model.seconds(1000) * 1.1);
        assert!((b1.into_fit().unwrap().measured_over_model.unwrap() - 1.1).abs() < 1e-9);
        // A small sample that gives no model (a time that is not a time) leaves the
        // node to the large sample, as without a price.
        let training = SharedTraining::default();
        let mut lone = BoardSizer::new(
            (100, 400),
            rho95(),
            (0, 1, 0),
            true,
            2000,
            1_000_000,
            training,
        )
        .with_transfers(Some(transfers));
        assert_eq!(lone.want(0.0, None, 0), Some(100));
        lone.took(999_900);
        lone.done(100, f64::NAN);
        assert_eq!(lone.want(0.0, None, 0), Some(400));
    }

    #[test]
    fn after_its_first_model_chunk_a_board_shares_what_is_left_now() {
        let training = SharedTraining::default();
        let mut s = board(0, 4, 0, &training);
        train(&mut s, 10_000);
        // Right after training: a quarter of what was left at its last take, even
        // though the other boards have taken theirs since (6000 more handed out).
        assert_eq!(s.want(0.0, None, 1_000_000 - 10_000 + 6000), Some(2500));
        // After a model chunk: a quarter of what is left now (2000), not of what was
        // left at its last take (4000).
        s.took(4000);
        assert_eq!(s.want(0.0, None, 1_000_000 - 2000), Some(500));
    }

    #[test]
    fn on_one_driver_thread_two_boards_train_and_the_others_wait_for_the_model() {
        let training = SharedTraining::default();
        let new = |b| one_driver(b, 4, (100, 400), 1_000_000, &training);
        let (mut b0, mut b1, b2, mut b3) = (new(0), new(1), new(2), new(3));
        // Board 3 comes first: it takes the small sample, board 0 the large one.
        assert_eq!(b3.want(0.0, None, 0), Some(100));
        b3.took(999_900);
        assert_eq!(b0.want(0.0, None, 0), Some(400));
        assert!(!b0.in_sample());
        b0.took(999_500);
        assert!(b3.in_sample() && b0.in_sample());
        // The others wait (not stop).
        assert_eq!(b1.want(0.0, None, 0), None);
        assert!(b1.waiting() && !b1.stopped());
        // The small sample failed on board 3: board 1 takes it instead.
        b3.abandoned();
        assert_eq!(b1.want(0.0, None, 0), Some(100));
        b1.took(999_400);
        assert_eq!(b2.want(0.0, None, 0), None);
        b1.done(100, seconds(100));
        b0.done(400, seconds(400));
        assert!(!b1.in_sample() && !b0.in_sample());
        // The model exists: every board takes its share.
        assert_eq!(b2.want(0.0, None, 0), Some(3800));
        assert!(!b2.waiting());
    }

    #[test]
    fn with_every_board_sampling_the_idle_boards_take_large_samples_unless_a_transfer_holds_the_thread(
    ) {
        let training = SharedTraining::default();
        let new =
            |b| one_driver(b, 4, (100, 400), 1_000_000, &training).with_every_board_samples(true);
        let (mut b0, mut b1, mut b2, mut b3) = (new(0), new(1), new(2), new(3));
        assert_eq!(b3.want(0.0, None, 0), Some(100));
        b3.took(999_900);
        assert_eq!(b0.want(0.0, None, 0), Some(400));
        b0.took(999_500);
        // Board 1 takes a large sample too rather than idle through the training.
        assert_eq!(b1.want(0.0, None, 0), Some(400));
        assert!(!b1.waiting() && !b1.stopped());
        b1.took(999_100);
        // The small sample failed on board 3: board 2 takes it instead, and board
        // 3 a large one.
        b3.abandoned();
        assert_eq!(b2.want(0.0, None, 0), Some(100));
        b2.took(999_000);
        assert_eq!(b3.want(0.0, None, 0), Some(400));
        b3.took(998_600);
        b2.done(100, seconds(100));
        for b in [&mut b0, &mut b1, &mut b3] {
            b.done(400, seconds(400));
        }
        assert!(![&b0, &b1, &b2, &b3].iter().any(|b| b.in_sample()));
        // The model exists: FastFit's chunk (less than a share).
        assert_eq!(b2.want(0.0, None, 0), Some(3800));
        // Where the model prices transfers that hold the thread (a blocking DMA),
        // the other boards wait for the model all the same.
        let training = SharedTraining::default();
        let blocking = priced((2000, 4e-3), (1e-3, 4e-3));
        let held = |b| {
            one_driver(b, 4, (100, 400), 1_000_000, &training)
                .with_every_board_samples(true)
                .with_transfers(Some(blocking))
        };
        let (mut h0, h1) = (held(0), held(1));
        assert_eq!(h0.want(0.0, None, 0), Some(100));
        h0.took(999_900);
        assert_eq!(h1.want(0.0, None, 0), None);
        assert!(h1.waiting() && !h1.stopped());
    }

    #[test]
    fn on_one_driver_thread_a_line_that_falls_gives_each_board_its_share() {
        // Four boards on one thread, a loop of 256, samples of 4 and 16, staging
        // and fetching 2 us a chunk whatever its size. The first chunk of the node
        // was cold: 4 iterations took 20 us, 16 took 18.
        let first_chunk = |small_s: f64| {
            let training = SharedTraining::default();
            let new = |b| one_driver(b, 4, (4, 16), 256, &training);
            let (mut b0, mut b1, mut b2) = (new(0), new(1), new(2));
            assert_eq!(b0.want(0.0, None, 0), Some(4));
            b0.took(252);
            assert_eq!(b1.want(0.0, None, 4), Some(16));
            b1.took(236);
            b0.cost_driver(4, 2e-6, 2e-6);
            b1.cost_driver(16, 2e-6, 2e-6);
            b0.done(4, small_s);
            b1.done(16, 18e-6);
            // Board 2 is the first to take after training; board 3 comes next.
            b2.set_node_now(NodeNow {
                queued: 1,
                ..NodeNow::default()
            });
            b2.want(0.0, None, 20).unwrap()
        };
        // The share: what training left (236) over 4 boards, 59. The flat line
        // says a chunk costs its latency whatever its size, and the plan would give
        // this board up to twice that; it takes its share.
        assert_eq!(first_chunk(20e-6), 59);
        // A line that rises (4 in 12 us, 16 in 18: 0.5 us an iteration) is the
        // plan's to size.
        assert_ne!(first_chunk(12e-6), 59);
    }

    #[test]
    fn a_board_never_asks_past_its_buffers() {
        let training = SharedTraining::default();
        let mut s = BoardSizer::new(
            (100, 400),
            rho95(),
            (0, 1, 0),
            false,
            250,
            1_000_000,
            training,
        );
        assert_eq!(s.want(0.0, None, 0).unwrap(), 100);
        s.took(999_900);
        s.done(100, 1e-3);
        assert_eq!(s.want(0.0, None, 0).unwrap(), 250);
        s.took(999_650);
        s.done(250, 2e-3);
        assert!(s.want(0.0, None, 0).unwrap() <= 250);
    }

    #[test]
    fn equal_samples_fall_back_to_the_larger_sample() {
        let training = SharedTraining::default();
        let mut s = board(0, 1, 0, &training);
        s.took(999_900);
        s.done(100, 1e-3);
        s.done(100, 1e-3);
        assert_eq!(s.want(0.0, None, 0).unwrap(), 400);
        assert!(s.into_fit().is_none());
    }

    #[test]
    fn waits_for_the_driver_enlarge_the_chunk() {
        let training = SharedTraining::default();
        let mut s = board(0, 1, 0, &training);
        train(&mut s, 999_500);
        assert_eq!(s.want(0.0, None, 0).unwrap(), 3800);
        // DONE waited 1 ms and 3 ms for the driver: 2 ms on average, as much again as
        // the board's own latency, so the chunk doubles.
        s.served(1e-3);
        s.served(3e-3);
        assert_eq!(s.want(0.0, None, 0).unwrap(), 7600);
        let fit = s.into_fit().unwrap();
        assert!((fit.service_s - 2e-3).abs() < 1e-12);
        assert!((fit.model.latency_s - 2e-3).abs() < 1e-12, "{fit:?}");
    }

    #[test]
    fn a_cpu_sizes_chunks_from_its_throughput_and_share() {
        let mut c = CpuSizer::new(10, 2e-3, 4, 1_000_000);
        assert_eq!(c.want(), 10);
        assert_eq!(c.rate(), 0.0);
        // 10 items in 1 ms: 10^4/s, so 20 items take 2 ms.
        c.done(10, 1e-3, 1_000_000);
        assert_eq!(c.want(), 20);
        // Twice as fast now: the smoothed rate is 1.5 * 10^4/s.
        c.done(20, 1e-3, 1_000_000);
        assert_eq!(c.want(), 30);
        assert!((c.rate() - 1.5e4).abs() < 1e-6);
        // Near the end, a quarter of what is left.
        c.done(30, 1e-3, 40);
        assert_eq!(c.want(), 10);
        c.done(10, 1e-3, 0);
        assert_eq!(c.want(), 1);
    }

    #[test]
    fn a_cpu_takes_a_training_chunk_while_the_boards_train_then_its_weighted_share() {
        let training = SharedTraining::default();
        // 2 CPUs and 2 boards (both this PE's), training samples of 100 and 400.
        let seen = BoardsSeen {
            boards: 2,
            cpus: 2,
            node_boards: 2,
            training: training.clone(),
            training_chunk: 400,
        };
        let mut c = CpuSizer::new(10, 2e-3, 4, 1_000_000).with_boards(seen.clone());
        // 10^6 items/s: chunks of 2 ms would be 2000, and a quarter of what is left
        // allows it, but the boards' speed is not known yet: at most 400.
        c.done(10, 1e-5, 999_990);
        assert_eq!(c.want_now(10), 400);
        // The boards' model: 2 ms + 10 us an item, 10^5 items/s each at their peak.
        let mut b = board(0, 2, 2, &training);
        train(&mut b, 999_500);
        // 2 CPUs at 10^6 and 2 boards at 10^5: this CPU's share of 100 000 left is
        // 10^5 * 10^6 / (2.2 * 10^6) = 45455, so the 2 ms chunk (2000, less a
        // rounding) stands; of 2000 left it is 910.
        let two_ms = c.want();
        assert!((1999..=2000).contains(&two_ms), "{two_ms}");
        assert_eq!(c.want_now(900_000), two_ms);
        assert_eq!(c.want_now(998_000), 910);
        // One board retired: 10^5 of board speed; 2000 * 10^6 / 2.1e6 = 953.
        b.retire();
        assert_eq!(c.want_now(998_000), 953);
        // Both retired: only the CPUs are left, and nothing caps the chunk.
        b.retire();
        assert_eq!(c.want_now(998_000), two_ms);
        // Nor do the retired boards count among the workers whose even part of what
        // is left caps the next chunk: of 3000 left, the 2 CPUs' half (1500), not
        // the 4 workers' quarter (750).
        c.done(2000, 2e-3, 3000);
        assert_eq!(c.want(), 1500);
        // A PE that drives no board knows nothing of them: no cap.
        let blind = CpuSizer::new(10, 2e-3, 4, 1_000_000).with_boards(BoardsSeen {
            node_boards: 0,
            ..seen
        });
        assert_eq!(blind.want_now(10), 10);
    }

    #[test]
    fn near_the_end_a_cpu_takes_no_more_than_the_job_needs_to_drain_the_rest() {
        let mut c = CpuSizer::new(10, 2e-3, 4, 100_000);
        // 10^4 items/s: chunks of 20 (2 ms).
        c.took(0, 0.0);
        c.done(10, 1e-3, 99_990);
        assert_eq!(c.want_now(10), 20);
        // 10 000 handed out in 1 ms: the job drains 10^7 items/s.
        c.took(10_000, 1e-3);
        c.done(20, 2e-3, 89_980);
        assert_eq!(c.want_now(10_020), 20);
        // 500 left: the job needs 50 us for them, in which this CPU does 0.5 items.
        assert_eq!(c.want_now(99_500), 1);
    }

    #[test]
    fn a_cpu_chunk_runs_in_one_piece_when_no_board_is_left_to_serve() {
        assert_eq!(piece_size(64, false), 8);
        assert_eq!(piece_size(3, false), 1);
        assert_eq!(piece_size(64, true), 64);
        assert_eq!(piece_size(0, true), 1);
    }
}
