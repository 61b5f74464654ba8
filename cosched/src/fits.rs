//! What a node's boards and their driver learn from timed chunks: the line through
//! the boards' samples, which a node's boards fit together ([`LineFit`], [`NodeFits`],
//! shared as [`SharedTraining`]) and hand to a later loop ([`Trained`]); what a
//! chunk costs the driver's thread ([`DriverFit`]); the CPU path's own time per
//! iteration on one driver thread ([`PerItem`]).
//!
//! This module owns those measurements and fits. It must not choose chunk sizes
//! (`sizing` does, from them) nor time anything (the drivers do, and tell it what
//! they measured).

use crate::fastfit::{PipelineModel, Sample};
use crate::report::Trained;
use std::sync::{Arc, Mutex};

/// A line through timed chunks: the first two sizes seen fit a [`PipelineModel`]
/// (each size's mean time); later, a chunk larger than any measured so far moves the
/// line's far end to it (the training samples are small, and on a kernel of a few
/// microseconds' latency their slope is mostly noise: the 2D FFT's one- and four-row
/// samples on native gave 0.17 or 1.2 us a row, its chunks of a hundred rows 0.6),
/// and so does a smaller one that took less per iteration than the far end (which
/// a pipeline cannot: see [`LineFit::add`]); other chunks change nothing. What the
/// boards of one
/// node learn together: they are alike (one bitfile, one link, one driver), so they
/// train at once, board 0 on the small sample and the others on the large one, and
/// the first two sizes that complete on the node fit one model for all of them (a node
/// with one board trains as FastFit does, one sample after the other). What a
/// board's chunks cost its driver's thread is a [`DriverFit`].
///
/// The second size may be modeled ([`Transfers`](crate::sizing::Transfers)): the line then goes through the
/// measured small sample and the modeled one, provisionally, until a chunk of another
/// size is measured; that chunk replaces the modeled sample (its size was chosen by
/// the provisional line, so no chunk is spent on it), and the line is final.
#[derive(Debug, Default, Clone)]
pub(crate) struct LineFit {
    pub(crate) samples: Vec<Sample>,
    /// A modeled second sample, until a measured one of another size replaces it.
    pub(crate) modeled: Option<Sample>,
    pub(crate) fit: Option<([Sample; 2], PipelineModel)>,
}

impl LineFit {
    /// A chunk completed: until the line is final, it is a sample; after, only if it
    /// is larger than every chunk measured so far, or smaller and it took less per
    /// iteration than the line's far end (the largest size measured), which then
    /// leaves.
    ///
    /// A pipeline's time per iteration falls as its chunk grows, so a smaller chunk
    /// that took less per iteration than the far end says the far end paid something
    /// a pipeline does not (a stall of the host). On the 2-core VM the 2D FFT's
    /// 64-row training sample took 90-100 us where it takes 43 in 23 of 248 row
    /// passes: through it the board looked three times slower than it is, took
    /// chunks of 45-49 rows (so no larger chunk ever moved the far end), and the
    /// column pass, started from that line, began with seven chunks of one or two
    /// rows. Chunks no larger than the smallest size do not move the far end (the
    /// line would span too little to have a slope).
    pub(crate) fn add(&mut self, sample: Sample) {
        if self.is_final() {
            let sizes = self.samples.iter().map(|s| s.items);
            let (Some(smallest), Some(far)) = (sizes.clone().min(), sizes.max()) else {
                return;
            };
            if sample.items <= far {
                let far_per_item = self.mean(far) / far as f64;
                let faster = sample.seconds / (sample.items as f64) < far_per_item;
                if !(smallest < sample.items && sample.items < far && faster) {
                    return;
                }
                self.samples.retain(|s| s.items != far);
            }
        }
        self.samples.push(sample);
        self.refit();
    }

    /// The mean time of the measured chunks of `items` iterations (NaN if none).
    /// Allocates nothing, as [`LineFit::refit`]: the driver refits after every board
    /// chunk, on the thread that serves the boards.
    fn mean(&self, items: u64) -> f64 {
        let (sum, count) = self
            .samples
            .iter()
            .filter(|s| s.items == items)
            .fold((0.0, 0u32), |(sum, count), s| (sum + s.seconds, count + 1));
        sum / f64::from(count)
    }

    /// A modeled second sample (ignored once a line exists).
    pub(crate) fn add_modeled(&mut self, sample: Sample) {
        if self.fit.is_none() {
            self.modeled = Some(sample);
            self.refit();
        }
    }

    /// Whether the line's time does not rise with the size: its larger size took no
    /// longer than its smaller one (the line is then flat, and says nothing of an
    /// iteration's cost).
    pub(crate) fn falls(&self) -> bool {
        self.fit.is_some_and(|([a, b], _)| b.seconds <= a.seconds)
    }

    /// Whether the line goes through measured chunks only (later chunks change
    /// nothing).
    pub(crate) fn is_final(&self) -> bool {
        self.fit.is_some() && self.modeled.is_none()
    }

    /// Once two sizes have been measured, the line goes through the smallest and the
    /// largest (each the mean of its chunks' times) and is final; before that, through
    /// the measured size and the modeled sample, if any.
    ///
    /// A smaller size that took as long as the largest or longer paid something a
    /// pipeline does not (a first use, a stall of the host): the line then starts
    /// from the smallest size that was faster than the largest, if there is one. On
    /// the 2-core VM the virtual clock counts stalls of 70-300 us about once per
    /// millisecond of computation over megabytes, and the first sample of a job's
    /// first loop took 100-160 us where it takes 17 (the 2D FFT's 16 rows on native,
    /// 2 of 6 jobs): through it and the 174-row chunk of 101 us that followed, the
    /// line fell and said the board had a latency of 101 us and no cost per row,
    /// for the rest of the loop and for the next one, which started from it.
    pub(crate) fn refit(&mut self) {
        let mean = |items: u64| Sample {
            items,
            seconds: self.mean(items),
        };
        let (Some(small), Some(large)) = (
            self.samples.iter().map(|s| s.items).min(),
            self.samples.iter().map(|s| s.items).max(),
        ) else {
            return;
        };
        if small != large {
            let b = mean(large);
            // The sizes below the largest, smallest first: the first faster than it.
            let next_size = |after: u64| {
                self.samples
                    .iter()
                    .map(|s| s.items)
                    .filter(|&items| items > after && items < large)
                    .min()
            };
            let mut size = Some(small);
            let mut a = None;
            while let Some(items) = size {
                let at = mean(items);
                if at.seconds < b.seconds {
                    a = Some(at);
                    break;
                }
                size = next_size(items);
            }
            let a = a.unwrap_or_else(|| mean(small));
            // Unusable times (not finite, not positive) leave the node untrained: its
            // boards keep the large sample's size.
            if let Ok(model) = PipelineModel::fit(a, b) {
                self.fit = Some(([a, b], model));
                self.modeled = None;
            }
        } else if let Some(m) = self.modeled.filter(|m| m.items != small) {
            let a = mean(small);
            let (a, b) = if a.items < m.items { (a, m) } else { (m, a) };
            match PipelineModel::fit(a, b) {
                Ok(model) => self.fit = Some(([a, b], model)),
                // A modeled sample that gives no line is dropped: the node trains on
                // a measured one.
                Err(_) => self.modeled = None,
            }
        }
    }
}

/// What a board's chunks cost the driver's thread (staging and fetching): the least
/// squares line through every measured chunk, its latency and slope kept at 0 or
/// more.
///
/// Why not a [`LineFit`]: a driver's cost is a few microseconds of the thread's own
/// work between library calls (on native the transfers cost the clock about
/// nothing), so two chunks' costs differ by their noise, and a line through two
/// sizes took that noise for a cost per iteration. A deadline plan staggers a node's
/// boards by the driver's cost of each chunk (`plan::DeadlinePlan`): the 2D FFT's
/// trained pass at 16 nodes with 4 boards (2048 x 2048) was planned from a driver line
/// through 27 rows in 0.8 us and 43 in 5.3 (0.29 us a row, where the stagings
/// were 0.07 us a row apart), and its boards' chunks shrank 49, 35, 26, 18 (a test
/// build that did not stagger them planned 37, 31, 30, 30, and its boards ended
/// within 3 us of each other); a PE whose next largest chunk's cost held a stall
/// then planned 82, 31, 11, 4, and the pass took twice the static split's. Every
/// chunk counts here, so one stall among the loop's chunks moves the line by its
/// share of them.
///
/// The second size may be modeled, as for [`LineFit`]: until two sizes are measured
/// the line goes through the measured one's mean time and the modeled sample.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct DriverFit {
    /// Sums over the measured chunks: count, items, seconds, items^2, items * seconds.
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
    /// The smallest and largest measured sizes.
    sizes: Option<(u64, u64)>,
    /// A modeled second sample, until a measured one of another size makes it moot.
    modeled: Option<Sample>,
}

impl DriverFit {
    /// The fit through an earlier loop's two points (each counts as one chunk).
    pub(crate) fn seeded(samples: [Sample; 2]) -> DriverFit {
        let mut fit = DriverFit::default();
        for sample in samples {
            fit.add(sample);
        }
        fit
    }

    /// The line an earlier loop's two points give ([`DriverFit::seeded`]), as a loop
    /// started from them reads it.
    pub(crate) fn line_through(samples: [Sample; 2]) -> Option<PipelineModel> {
        DriverFit::seeded(samples).fit().map(|(_, line)| line)
    }

    /// A chunk of `sample.items` cost the thread `sample.seconds`; a chunk of no
    /// iterations or a time that is not a finite number >= 0 is left out.
    pub(crate) fn add(&mut self, sample: Sample) {
        if sample.items == 0 || !(sample.seconds.is_finite() && sample.seconds >= 0.0) {
            return;
        }
        let (x, y) = (sample.items as f64, sample.seconds);
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
        self.sizes = Some(match self.sizes {
            Some((lo, hi)) => (lo.min(sample.items), hi.max(sample.items)),
            None => (sample.items, sample.items),
        });
    }

    /// A modeled second sample (ignored once two sizes are measured).
    pub(crate) fn add_modeled(&mut self, sample: Sample) {
        if !self.is_final() {
            self.modeled = Some(sample);
        }
    }

    /// Whether two sizes have been measured (the line is then the measured chunks'
    /// alone).
    pub(crate) fn is_final(&self) -> bool {
        self.sizes.is_some_and(|(lo, hi)| lo < hi)
    }

    /// The line's two points once it is final (for [`Trained`]).
    pub(crate) fn final_points(&self) -> Option<[Sample; 2]> {
        self.fit()
            .filter(|_| self.is_final())
            .map(|(samples, _)| samples)
    }

    /// The line, with its points at the smallest and the largest size measured (for
    /// [`Trained::driver`]); `None` before two sizes (or one and a modeled sample)
    /// or where the numbers give no usable line.
    pub(crate) fn fit(&self) -> Option<([Sample; 2], PipelineModel)> {
        let (lo, hi) = self.sizes?;
        if lo == hi {
            let mean = Sample {
                items: lo,
                seconds: self.sy / self.n,
            };
            let m = self.modeled.filter(|m| m.items != lo)?;
            let (a, b) = if lo < m.items { (mean, m) } else { (m, mean) };
            return PipelineModel::fit(a, b).ok().map(|model| ([a, b], model));
        }
        let spread = self.n * self.sxx - self.sx * self.sx;
        let slope = (self.n * self.sxy - self.sx * self.sy) / spread;
        let intercept = (self.sy - slope * self.sx) / self.n;
        let (latency_s, item_s) = if slope <= 0.0 {
            // No cost per iteration to see: the mean cost of a chunk.
            (self.sy / self.n, 0.0)
        } else if intercept < 0.0 {
            // Through the origin.
            (0.0, self.sxy / self.sxx)
        } else {
            (intercept, slope)
        };
        let model = PipelineModel { latency_s, item_s };
        let at = |items: u64| Sample {
            items,
            seconds: model.seconds(items),
        };
        let usable = |s: Sample| s.seconds.is_finite() && s.seconds > 0.0;
        let (a, b) = (at(lo), at(hi));
        (usable(a) && usable(b) && model.item_s.is_finite()).then_some(([a, b], model))
    }
}

/// What one node's boards learn together, shared by their sizers (and threads).
#[derive(Debug, Default)]
pub(crate) struct NodeFits {
    /// A chunk's time from staging to results: FastFit's model.
    pub(crate) kernel: LineFit,
    /// What a chunk costs the driver's thread (staging and fetching, not the wait
    /// for DONE), known on the one-thread driver.
    pub(crate) driver: DriverFit,
    /// What staging a chunk costs the driver's thread: the part of `driver` before
    /// the next board can be staged (the fetch comes after the chunk's DONE).
    pub(crate) staging: DriverFit,
    /// Training chunks of the small and of the large size taken on the node and not
    /// failed.
    pub(crate) sampling: [u32; 2],
    /// Iterations in those training chunks.
    pub(crate) sampled_items: u64,
    /// The node's boards that stopped taking (failed, or dearer than the CPU).
    pub(crate) retired: u64,
    /// Whether the model that sized the first chunks after training had a modeled
    /// second sample (a measured chunk replaced it later).
    pub(crate) second_modeled: bool,
}

impl NodeFits {
    /// A node's boards that start trained: the lines of an earlier loop's.
    pub(crate) fn trained(trained: &Trained) -> NodeFits {
        let line = |samples: [Sample; 2]| {
            let mut line = LineFit::default();
            for sample in samples {
                line.add(sample);
            }
            line
        };
        NodeFits {
            kernel: line(trained.kernel),
            driver: trained.driver.map(DriverFit::seeded).unwrap_or_default(),
            staging: trained.staging.map(DriverFit::seeded).unwrap_or_default(),
            ..NodeFits::default()
        }
    }

    /// What the node's boards learned, once their model is final (measured chunks
    /// only), with what the driver measured of its PE's CPU path (`cpu`).
    pub(crate) fn learned(&self, cpu: CpuLearned) -> Option<Trained> {
        let final_line = |line: &LineFit| line.fit.filter(|_| line.is_final());
        let (kernel, model) = final_line(&self.kernel)?;
        Some(Trained {
            kernel,
            model,
            driver: self.driver.final_points(),
            staging: self.staging.final_points(),
            cpu_rate: cpu.rate,
            cpu_item_s: cpu.item_s,
            cpu_start_s: cpu.start_s,
            planned: Default::default(),
        })
    }
}

/// What the driver measured of its PE's CPU path in a loop, for [`NodeFits::learned`]
/// (0: not measured).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuLearned {
    /// Iterations per second.
    pub(crate) rate: f64,
    /// On one driver thread: seconds per iteration.
    pub(crate) item_s: f64,
    /// On one driver thread: the start-up cost ([`PerItem::start_s`]).
    pub(crate) start_s: f64,
}

/// The training of one node's boards, shared by their sizers (and their threads).
pub(crate) type SharedTraining = Arc<Mutex<NodeFits>>;

/// Seconds per item: the first measurement until there is another, then the later
/// ones smoothed (each new one weighs half, as the CPU's rate in [`CpuSizer`](crate::sizing::CpuSizer)). The
/// first piece of a loop pays first-use costs: in a debug build under load several
/// times a row's FFT, and in a release build the 2D FFT's first row after a corner
/// turn took 9-28 us where the next took 3. Counted as the mean since the loop began,
/// it kept the time above the boards' modeled transfers for a whole short loop (the
/// boards, which should not even train there, took every row); counted at half
/// weight, it still said 6-15 us a row after the second row. A time per row that
/// high sends the loop's last rows to boards one or two at a time (the tail rule
/// weighs them against the CPU's time), each a 10 us kernel that ended the PE's pass
/// 10-25 us late.
///
/// What the first piece took beyond its iterations at the later pieces' time is the
/// CPU path's *start-up cost* in a loop ([`PerItem::start_s`]): a plan that gives the
/// CPU iterations at the later time alone gave the FFT's CPU about ten rows a pass,
/// the first of which cost 10-28 us more, and they ran past the boards' end.
///
/// A decision made once for the whole loop (whether a board trains at all) needs a
/// time that one piece does not swing: [`PerItem::typical`].
///
/// A later piece more than [`STALL_FACTOR`] times the typical time per item is a
/// stall (of the host, on the virtual clock: 70-300 us in a piece of a few FFT rows
/// of 2-7 us each), not the CPU's speed: it counts towards the typical time (so that
/// a lasting change moves it, and then the smoothed time), not the smoothed one. One
/// such piece of 3 rows made the smoothed time 50 us a row, and the board's next
/// chunk took 38 of the 39 rows left while the CPU waited for it.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PerItem {
    /// The first piece's iterations and seconds.
    first: Option<(u64, f64)>,
    /// Seconds per item of the later pieces, smoothed.
    later: Option<f64>,
    /// The last [`TYPICAL_OF`] later pieces' seconds per item (a trained start's
    /// time counts as one), oldest overwritten first.
    recent: [f64; TYPICAL_OF],
    /// How many of `recent` are set.
    recent_len: usize,
    /// Where the next one goes in `recent`.
    recent_next: usize,
    /// [`PerItem::typical`], kept as each piece comes: the driver reads it at every
    /// service of the boards, more often than pieces come.
    typical: Option<f64>,
    /// [`PerItem::spread`], kept likewise.
    spread: Option<f64>,
}

/// The later pieces [`PerItem::spread`] needs (a standard deviation of two says
/// little).
const SPREAD_OF: usize = 3;

/// The later pieces [`PerItem::typical`] looks at.
const TYPICAL_OF: usize = 8;

/// How many times the typical time per item a later piece may take and still count
/// in the smoothed time ([`PerItem`]): the 2D FFT's rows in trained loops took
/// 1.9-6.9 us (3.6x), a stalled piece 14x and more.
const STALL_FACTOR: f64 = 4.0;

impl PerItem {
    /// Starting from `seconds` per item measured in an earlier loop (a trained
    /// start; not finite or not positive: none): it stands for the later pieces
    /// until there are some, and the first piece of this loop is set aside as when
    /// it is followed by others.
    pub(crate) fn starting_at(seconds: f64) -> PerItem {
        let mut t = PerItem::default();
        if seconds.is_finite() && seconds > 0.0 {
            t.later = Some(seconds);
            t.remember(seconds);
        }
        t
    }

    fn remember(&mut self, per_item_s: f64) {
        self.recent[self.recent_next] = per_item_s;
        self.recent_next = (self.recent_next + 1) % TYPICAL_OF;
        self.recent_len = (self.recent_len + 1).min(TYPICAL_OF);
        if self.recent_len >= 2 {
            let mut seen = self.recent;
            let seen = &mut seen[..self.recent_len];
            seen.sort_unstable_by(f64::total_cmp);
            let typical = seen[(seen.len() - 1) / 2];
            self.typical = Some(typical);
            // Sorted: the stalls are the last ones.
            let kept = seen.partition_point(|&t| t <= STALL_FACTOR * typical);
            self.spread = relative_deviation(&seen[..kept]).filter(|_| kept >= SPREAD_OF);
        }
    }

    pub(crate) fn add(&mut self, items: u64, seconds: f64) {
        if items == 0 {
            return;
        }
        let seconds = seconds.max(0.0);
        if self.first.is_none() {
            self.first = Some((items, seconds));
        } else {
            let measured = seconds / items as f64;
            let stalled = self.typical.is_some_and(|t| measured > STALL_FACTOR * t);
            if !stalled {
                self.later = Some(self.later.map_or(measured, |t| 0.5 * t + 0.5 * measured));
            }
            self.remember(measured);
        }
    }

    /// The time per item a decision for the whole loop can go by: the lower median
    /// of the last [`TYPICAL_OF`] pieces after the first (a trained start's time
    /// counts as one); `None` until there are two, so that one slow piece among them
    /// is not it. Not the first piece, which pays first-use costs (the FFT's first
    /// 2048-point row after a corner turn: 273 us, the next 26), and not the next
    /// one alone, which can pay them too (16 PEs on 2 cores: a first row of 31 us,
    /// then four rows in 0.39 ms, then 13 us a row), nor the smoothed time, which
    /// one slow piece can multiply (a row of 300 us among rows of 5 made it 150): a
    /// board weighed against any of them trained on novo-g where the CPU is 8-17x
    /// faster than its transfers, and its 2.8 ms latency and its production chunk
    /// of half the PE's rows made the pass 10 ms longer than the CPU alone.
    pub(crate) fn typical(&self) -> Option<f64> {
        self.typical
    }

    /// How far the later pieces' times per item lie from their mean, as a fraction
    /// of it (their standard deviation over their mean): of the last
    /// [`TYPICAL_OF`] pieces after the first (a trained start's time counts as one),
    /// stalls left out (see [`STALL_FACTOR`]); `None` until [`SPREAD_OF`] such
    /// pieces. The deadline plan counts the CPU path higher the larger it is
    /// (`plan::cpu_item_planned_s`). Measured on the 2-core VM: the 2D FFT's one-row
    /// pieces in its column passes (native), 0.17 in the median window of eight
    /// (quartiles 0.11 and 0.48); CBIR's images at a loop's end (4 PEs, novo-g and
    /// native), 0.04-0.13 in six PEs of eight, 0.23 and 0.48 in two.
    pub(crate) fn spread(&self) -> Option<f64> {
        self.spread
    }

    /// Whether this loop has measured a piece (a trained start's time is not one).
    pub(crate) fn measured(&self) -> bool {
        self.first.is_some()
    }

    /// Seconds per item (0 before any).
    pub(crate) fn per_item(&self) -> f64 {
        let first = self.first.map(|(items, seconds)| seconds / items as f64);
        self.later.or(first).unwrap_or(0.0)
    }

    /// The start-up cost measured in this loop: what its first piece took beyond its
    /// iterations at the later time (at least 0), once both are known (the later time
    /// may be a trained start's).
    pub(crate) fn start_s(&self) -> Option<f64> {
        let ((items, seconds), later) = (self.first?, self.later?);
        Some((seconds - items as f64 * later).max(0.0))
    }
}

/// The standard deviation of `values` over their mean (`None` for fewer than two,
/// or a mean that is not finite and positive).
fn relative_deviation(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if !(mean.is_finite() && mean > 0.0) {
        return None;
    }
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    Some(variance.sqrt() / mean)
}

/// The CPU path's start-up cost a loop passes on, from the one it measured and the one
/// it started from: the larger of the measured one and half the earlier. A deadline
/// plan needs a cost it can count on, and the FFT's varied from 2 to 28 us from one
/// pass to the next (planned at the last one seen, the CPU's rows ran past the
/// boards' end); halved at each loop, an outlier (a page-fault storm, say) does not
/// keep the CPU out of later loops for good.
pub(crate) fn start_cost_kept(measured_s: f64, before_s: f64) -> f64 {
    measured_s.max(0.5 * before_s).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(items: u64, micros: f64) -> Sample {
        Sample {
            items,
            seconds: micros * 1e-6,
        }
    }

    #[test]
    fn the_driver_line_fits_every_chunk_so_that_one_stall_moves_it_by_its_share() {
        let mut d = DriverFit::default();
        assert_eq!(d.fit(), None);
        d.add(us(30, 3.0));
        // One size: no line, not final.
        assert!(d.fit().is_none() && !d.is_final());
        // 3 us a chunk and 0.02 us an iteration, chunks of 20-40 iterations, plus
        // one chunk whose cost held a 10 us stall: a line through the two sizes
        // the old way (the first and the stalled largest) had said 0.4 us an
        // iteration.
        let truth = |items: u64| 3.0 + 0.02 * items as f64;
        for items in [20, 25, 35, 40, 30, 20, 25, 35] {
            d.add(us(items, truth(items)));
        }
        d.add(us(45, truth(45) + 10.0));
        assert!(d.is_final());
        let ([a, b], line) = d.fit().unwrap();
        assert_eq!((a.items, b.items), (20, 45));
        assert!(line.item_s < 0.2e-6, "{line:?}");
        assert!(line.latency_s >= 0.0);
        // The points are on the line, and the line is what a trained start seeds.
        assert!((line.seconds(45) - b.seconds).abs() < 1e-15);
        let again = DriverFit::seeded([a, b]).fit().unwrap().1;
        assert!((again.item_s - line.item_s).abs() < 1e-15, "{again:?}");
        assert!(
            (again.latency_s - line.latency_s).abs() < 1e-15,
            "{again:?}"
        );
        // Exact points give the exact line.
        let mut exact = DriverFit::default();
        for items in [10, 20, 40] {
            exact.add(us(items, truth(items)));
        }
        let line = exact.fit().unwrap().1;
        assert!((line.item_s - 0.02e-6).abs() < 1e-15, "{line:?}");
        assert!((line.latency_s - 3e-6).abs() < 1e-14, "{line:?}");
    }

    #[test]
    fn a_driver_line_keeps_its_latency_and_slope_at_zero_or_more() {
        // Falling costs: no cost per iteration, the mean chunk's.
        let falling = DriverFit::seeded([us(10, 5.0), us(40, 3.0)])
            .fit()
            .unwrap()
            .1;
        assert_eq!(falling.item_s, 0.0);
        assert!((falling.latency_s - 4e-6).abs() < 1e-15, "{falling:?}");
        // A line that would cross 0 above 0 iterations: through the origin.
        let steep = DriverFit::seeded([us(27, 0.8), us(43, 5.3)])
            .fit()
            .unwrap()
            .1;
        assert_eq!(steep.latency_s, 0.0);
        let through_origin = (27.0 * 0.8 + 43.0 * 5.3) / (27.0f64.powi(2) + 43.0f64.powi(2));
        assert!(
            (steep.item_s - through_origin * 1e-6).abs() < 1e-15,
            "{steep:?}"
        );
        // Chunks of no iterations and times that are no number are left out.
        let mut d = DriverFit::default();
        d.add(us(0, 1.0));
        d.add(us(10, f64::NAN));
        d.add(us(20, -1.0));
        assert_eq!(d, DriverFit::default());
        // Costs of 0 give no usable line.
        let zero = DriverFit::seeded([us(10, 0.0), us(20, 0.0)]);
        assert!(zero.is_final() && zero.fit().is_none());
    }

    #[test]
    fn a_modeled_driver_sample_stands_until_a_second_size_is_measured() {
        let mut d = DriverFit::default();
        d.add(us(100, 300.0));
        d.add_modeled(us(2000, 4400.0));
        let ([a, b], line) = d.fit().unwrap();
        assert_eq!((a.items, b.items), (100, 2000));
        assert!(!d.is_final());
        assert!((line.seconds(2000) - 4.4e-3).abs() < 1e-12, "{line:?}");
        // Another chunk of the measured size averages into its point.
        d.add(us(100, 500.0));
        assert!((d.fit().unwrap().0[0].seconds - 400e-6).abs() < 1e-15);
        // A second measured size: the measured chunks alone, and final.
        d.add(us(200, 600.0));
        assert!(d.is_final());
        assert_eq!(d.fit().unwrap().0[1].items, 200);
        d.add_modeled(us(5000, 1.0));
        assert_eq!(d.fit().unwrap().0[1].items, 200);
    }

    #[test]
    fn a_slow_first_piece_leaves_the_cpus_time_per_item_at_the_next() {
        let mut t = PerItem::default();
        assert_eq!(t.per_item(), 0.0);
        // One row that paid 1 ms of first-use costs: alone, it is all there is.
        t.add(1, 1e-3);
        assert_eq!(t.per_item(), 1e-3);
        // Then rows of 20 us: from the next one on, the first no longer counts (a
        // mean would still say (1000 + 12 * 20) / 13 = 95 us after twelve of them,
        // and half weights 510 us after one).
        t.add(2, 40e-6);
        assert!((t.per_item() - 20e-6).abs() < 1e-15, "{}", t.per_item());
        // Later ones are smoothed: each weighs half.
        t.add(1, 40e-6);
        assert!((t.per_item() - 30e-6).abs() < 1e-15, "{}", t.per_item());
        t.add(0, 1.0);
        assert!((t.per_item() - 30e-6).abs() < 1e-15);
        // Started from an earlier loop's 20 us: this loop's slow first piece does
        // not move it, the next one does.
        let mut t = PerItem::starting_at(20e-6);
        assert_eq!(t.per_item(), 20e-6);
        assert!(!t.measured());
        t.add(1, 1e-3);
        assert!(t.measured());
        assert_eq!(t.per_item(), 20e-6);
        t.add(1, 40e-6);
        assert!((t.per_item() - 30e-6).abs() < 1e-15, "{}", t.per_item());
        // A start that is no time is none.
        assert_eq!(PerItem::starting_at(f64::NAN).per_item(), 0.0);
    }

    fn line(chunks: &[(u64, f64)]) -> LineFit {
        let mut line = LineFit::default();
        for &(items, us) in chunks {
            line.add(Sample {
                items,
                seconds: us * 1e-6,
            });
        }
        line
    }

    #[test]
    fn a_small_chunk_slower_than_the_largest_does_not_make_the_line() {
        // The 2D FFT's row pass on native: 16 rows in 17 us, 64 in 43, 174 in 101.5.
        let healthy = line(&[(16, 17.0), (64, 43.0), (174, 101.5)]);
        let ([a, b], model) = healthy.fit.unwrap();
        assert_eq!((a.items, b.items), (16, 174));
        assert!((model.item_s - 84.5e-6 / 158.0).abs() < 1e-15, "{model:?}");
        assert!(!healthy.falls());
        // The same with the first sample stalled (139 us): the two samples alone
        // fall (no better is known yet), the larger chunk then makes the line from
        // the 64 rows, which were faster than it.
        let mut stalled = line(&[(16, 139.0), (64, 43.0)]);
        assert!(stalled.falls());
        stalled.add(Sample {
            items: 174,
            seconds: 101.5e-6,
        });
        let ([a, b], model) = stalled.fit.unwrap();
        assert_eq!((a.items, b.items), (64, 174));
        assert!(!stalled.falls());
        assert!((model.item_s - 58.5e-6 / 110.0).abs() < 1e-15, "{model:?}");
        let latency_s = 43e-6 - 64.0 * 58.5e-6 / 110.0;
        assert!((model.latency_s - latency_s).abs() < 1e-12, "{model:?}");
        // Every smaller size as slow as the largest: the latency dominates what was
        // measured, and the line falls as before.
        let flat = line(&[(16, 3.4e3), (64, 3.3e3), (174, 3.3e3)]);
        assert!(flat.falls());
        let ([a, b], _) = flat.fit.unwrap();
        assert_eq!((a.items, b.items), (16, 174));
    }

    #[test]
    fn a_smaller_chunk_faster_per_iteration_replaces_a_stalled_far_end() {
        // The 2D FFT's row pass with its 64-row sample stalled (96.4 us for 43): the
        // line says 1.64 us a row.
        let mut l = line(&[(16, 17.9), (64, 96.4)]);
        assert!(l.fit.unwrap().1.item_s > 1.6e-6);
        // A chunk of 45 rows in 32.8 us (0.73 us a row against the far end's 1.5): a
        // pipeline does not do that, so the far end leaves and the line runs from 16
        // to 45 rows.
        l.add(Sample {
            items: 45,
            seconds: 32.8e-6,
        });
        let ([a, b], model) = l.fit.unwrap();
        assert_eq!((a.items, b.items), (16, 45));
        assert!((model.item_s - 14.9e-6 / 29.0).abs() < 1e-15, "{model:?}");
        assert!(l.is_final());
        // A larger chunk moves the far end as before.
        l.add(Sample {
            items: 174,
            seconds: 101.5e-6,
        });
        assert_eq!(l.fit.unwrap().0.map(|s| s.items), [16, 174]);
        // Chunks that a pipeline could have run change nothing: smaller and slower
        // per iteration than the far end, of the far end's size, or no larger than
        // the smallest size (the line would have no span).
        for (items, us) in [(45, 40.0), (174, 90.0), (16, 5.0), (8, 2.0)] {
            let before = l.fit.unwrap();
            l.add(Sample {
                items,
                seconds: us * 1e-6,
            });
            assert_eq!(l.fit.unwrap(), before, "{items} rows in {us} us");
        }
    }

    #[test]
    fn the_spread_is_the_later_pieces_deviation_over_their_mean_stalls_left_out() {
        let mut t = PerItem::default();
        // The first piece does not count; then three are needed.
        t.add(1, 300e-6);
        t.add(1, 2e-6);
        t.add(1, 4e-6);
        assert_eq!(t.spread(), None);
        // 2, 4 and 3 us: mean 3, standard deviation sqrt(2/3).
        t.add(1, 3e-6);
        let expected = (2.0f64 / 3.0).sqrt() / 3.0;
        assert!(
            (t.spread().unwrap() - expected).abs() < 1e-12,
            "{:?}",
            t.spread()
        );
        // A stall (over four times the typical time) leaves it as it was.
        t.add(1, 50e-6);
        assert!(
            (t.spread().unwrap() - expected).abs() < 1e-12,
            "{:?}",
            t.spread()
        );
        // Steady pieces: none. Only the last eight count.
        for _ in 0..8 {
            t.add(2, 6e-6);
        }
        assert_eq!(t.spread(), Some(0.0));
        // A trained start's time counts as one piece.
        let mut t = PerItem::starting_at(2e-6);
        t.add(1, 9e-6);
        t.add(1, 4e-6);
        assert_eq!(t.spread(), None);
        t.add(1, 3e-6);
        assert!(
            (t.spread().unwrap() - expected).abs() < 1e-12,
            "{:?}",
            t.spread()
        );
        assert_eq!(relative_deviation(&[1.0]), None);
        assert_eq!(relative_deviation(&[0.0, 0.0]), None);
    }

    #[test]
    fn the_typical_time_is_the_lower_median_of_the_later_pieces() {
        let mut t = PerItem::default();
        assert_eq!(t.typical(), None);
        // The first piece (a cold row of 273 us) is no typical time, nor is the next
        // alone (which may pay first-use costs too).
        t.add(1, 273e-6);
        assert_eq!(t.typical(), None);
        t.add(4, 360e-6);
        assert_eq!(t.typical(), None);
        t.add(2, 52e-6);
        assert_eq!(t.typical(), Some(26e-6));
        t.add(1, 24e-6);
        assert_eq!(t.typical(), Some(26e-6));
        // One slow piece among fast ones does not move it, nor, more than four
        // times the typical time (a stall), the smoothed time (41 us: the second
        // piece's 90 and the later 26 and 24, each weighing half).
        let smoothed = t.per_item();
        assert!((smoothed - 41e-6).abs() < 1e-12, "{smoothed}");
        t.add(1, 300e-6);
        assert_eq!(t.typical(), Some(26e-6));
        assert_eq!(t.per_item(), smoothed);
        // A piece within four times it counts: 100 us (3.8x) weighs half.
        let mut counted = t;
        counted.add(1, 100e-6);
        assert!(
            (counted.per_item() - 70.5e-6).abs() < 1e-12,
            "{}",
            counted.per_item()
        );
        t.add(1, 25e-6);
        assert_eq!(t.typical(), Some(26e-6));
        t.add(1, 23e-6);
        assert_eq!(t.typical(), Some(25e-6));
        // Only the last eight count: eight pieces of 40 us leave no trace of the rest.
        for _ in 0..8 {
            t.add(1, 40e-6);
        }
        assert_eq!(t.typical(), Some(40e-6));
        // A trained start's time counts as one of them, and this loop's first piece
        // does not.
        let mut t = PerItem::starting_at(5e-6);
        assert_eq!(t.typical(), None);
        t.add(1, 1e-3);
        assert_eq!(t.typical(), None);
        t.add(1, 300e-6);
        assert_eq!(t.typical(), Some(5e-6));
        t.add(1, 7e-6);
        assert_eq!(t.typical(), Some(7e-6));
        assert_eq!(PerItem::starting_at(f64::NAN).typical(), None);
    }

    #[test]
    fn the_first_piece_beyond_the_later_time_is_the_cpus_start_up_cost() {
        let mut t = PerItem::default();
        // Unknown until a later time is.
        t.add(2, 30e-6);
        assert_eq!(t.start_s(), None);
        // Two rows in 30 us, then rows of 3 us: 24 us of start-up.
        t.add(4, 12e-6);
        assert!(
            (t.start_s().unwrap() - 24e-6).abs() < 1e-15,
            "{:?}",
            t.start_s()
        );
        // From a trained start the first piece alone gives it.
        let mut t = PerItem::starting_at(3e-6);
        assert_eq!(t.start_s(), None);
        t.add(1, 20e-6);
        assert!((t.start_s().unwrap() - 17e-6).abs() < 1e-15);
        // A first piece faster than the later time costs nothing more.
        let mut t = PerItem::starting_at(3e-6);
        t.add(1, 1e-6);
        assert_eq!(t.start_s(), Some(0.0));
    }

    #[test]
    fn a_start_up_cost_is_kept_at_the_larger_of_the_measured_and_half_the_earlier() {
        // Loops measuring 28, 2, 2, 2 and 20 us, each from the one before.
        let mut kept = 0.0;
        let mut seen = Vec::new();
        for measured in [28e-6, 2e-6, 2e-6, 2e-6, 20e-6] {
            kept = start_cost_kept(measured, kept);
            seen.push((kept * 1e6_f64).round());
        }
        assert_eq!(seen, [28.0, 14.0, 7.0, 4.0, 20.0]);
        // A NaN earlier cost is no cost.
        assert_eq!(start_cost_kept(3e-6, f64::NAN), 3e-6);
    }
}
