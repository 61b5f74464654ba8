//! The FastFit model of a board: a pipeline that takes `latency_s` to fill and
//! `item_s` per iteration once full, so a chunk of `c` iterations takes
//! `latency_s + c * item_s` (issue latency per item plus completion latency, as in
//! FastFit), whatever it includes (staging the data, GO, DONE, the results' way back).
//!
//! Its throughput `c / (latency_s + c * item_s)` rises with the chunk towards the peak
//! `1 / item_s`; the smallest chunk that reaches a fraction `rho` of the peak is
//! `c = rho * latency_s / ((1 - rho) * item_s)`. Larger chunks gain little and leave
//! fewer, coarser pieces to share at the end of the loop; smaller ones waste the board
//! on pipeline fill.
//!
//! This module owns the model, its fit from two timed chunks and the chunk choice. It
//! must not time anything or take work: the runner does.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// The fraction of a board's peak throughput that its chunks must reach, in (0, 1).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
pub struct Rho(f64);

impl Rho {
    /// The default: 0.99, the top of the paper's range (0.9 to 0.99). A board's chunk
    /// is also capped by its share of what is left (the crate's `sizing`), which
    /// does the balancing towards the end of the loop that a smaller rho's finer
    /// chunks would, so the chunk can aim at 99% of the peak and pay the board's
    /// latency fewer times. Measured in CBIR (`fastfit_vs_oracle`): 0.99 was as fast
    /// as 0.95 or faster everywhere, by up to 8% with 8000 images on novo-g.
    pub const DEFAULT: Rho = Rho(0.99);

    /// `rho`, if it lies strictly between 0 and 1.
    ///
    /// ```
    /// use shmemplus_cosched::Rho;
    /// assert!(Rho::new(0.9).is_ok());
    /// assert!(Rho::new(1.0).is_err() && Rho::new(0.0).is_err() && Rho::new(f64::NAN).is_err());
    /// ```
    pub fn new(rho: f64) -> Result<Rho> {
        if rho > 0.0 && rho < 1.0 {
            Ok(Rho(rho))
        } else {
            Err(Error::Rho(rho))
        }
    }

    /// The fraction.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// One timed chunk: `items` iterations took `seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Iterations in the chunk.
    pub items: u64,
    /// Seconds from handing the chunk to the board to having its results.
    pub seconds: f64,
}

/// A board as a pipeline: `latency_s + c * item_s` seconds for a chunk of `c`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PipelineModel {
    /// Seconds to fill and drain the pipeline (the completion latency), >= 0.
    pub latency_s: f64,
    /// Seconds per iteration once full (the issue latency per item), > 0.
    pub item_s: f64,
}

impl PipelineModel {
    /// The model through two samples of different sizes (FastFit's training phase).
    ///
    /// Measurements on a shared machine are noisy, so the fit is kept physical: a
    /// negative latency is taken as 0. When the larger chunk was not slower, the
    /// per-item time is lost in the noise of a latency that dominates both: the
    /// latency is the smaller time (a chunk takes at least its latency), and the
    /// per-item time a hundredth of that latency spread over the larger chunk, so
    /// that FastFit's chunk is large (boards then take their share of the loop, not
    /// one iteration at a time). Sizes that are equal or zero, and times that are not
    /// finite and positive, are an error.
    ///
    /// ```
    /// use shmemplus_cosched::{PipelineModel, Sample};
    /// // 100 items in 3 ms, 400 items in 6 ms: 2 ms of latency, 10 us per item.
    /// let m = PipelineModel::fit(
    ///     Sample { items: 100, seconds: 3e-3 },
    ///     Sample { items: 400, seconds: 6e-3 },
    /// )?;
    /// assert!((m.latency_s - 2e-3).abs() < 1e-12 && (m.item_s - 1e-5).abs() < 1e-15);
    /// # Ok::<(), shmemplus_cosched::Error>(())
    /// ```
    pub fn fit(a: Sample, b: Sample) -> Result<PipelineModel> {
        for s in [a, b] {
            if s.items == 0 || !(s.seconds.is_finite() && s.seconds > 0.0) {
                return Err(Error::Fit(format!(
                    "a sample needs items > 0 and a finite time > 0, got {} items in {} s",
                    s.items, s.seconds
                )));
            }
        }
        if a.items == b.items {
            return Err(Error::Fit(format!(
                "the two samples have the same size ({} items)",
                a.items
            )));
        }
        let (small, large) = if a.items < b.items { (a, b) } else { (b, a) };
        let slope = (large.seconds - small.seconds) / (large.items - small.items) as f64;
        if slope > 0.0 {
            let latency_s = (small.seconds - small.items as f64 * slope).max(0.0);
            Ok(PipelineModel {
                latency_s,
                item_s: slope,
            })
        } else {
            let latency_s = small.seconds.min(large.seconds);
            Ok(PipelineModel {
                latency_s,
                item_s: latency_s / (100.0 * large.items as f64),
            })
        }
    }

    /// Modeled seconds of a chunk of `items`.
    pub fn seconds(&self, items: u64) -> f64 {
        self.latency_s + items as f64 * self.item_s
    }

    /// Iterations per second on a chunk of `items`.
    pub fn throughput(&self, items: u64) -> f64 {
        items as f64 / self.seconds(items)
    }

    /// Iterations per second with the pipeline full: `1 / item_s`.
    pub fn peak(&self) -> f64 {
        1.0 / self.item_s
    }

    /// The smallest chunk whose throughput reaches `rho` of the peak (at least 1;
    /// saturates for a model whose latency dwarfs its per-item time).
    ///
    /// ```
    /// use shmemplus_cosched::{PipelineModel, Rho};
    /// let m = PipelineModel { latency_s: 1e-3, item_s: 1e-5 };
    /// let c = m.chunk_for(Rho::new(0.95)?);
    /// assert_eq!(c, 1900); // 0.95 * 1e-3 / (0.05 * 1e-5)
    /// assert!(m.throughput(c) >= 0.95 * m.peak() * (1.0 - 1e-12));
    /// assert!(m.throughput(c - 1) < 0.95 * m.peak());
    /// # Ok::<(), shmemplus_cosched::Error>(())
    /// ```
    pub fn chunk_for(&self, rho: Rho) -> u64 {
        let r = rho.get();
        let c = (r * self.latency_s / ((1.0 - r) * self.item_s)).ceil();
        // `as` saturates (NaN gives 0, caught by max).
        let c = (c as u64).max(1);
        // The division can round up past an exact answer: then one fewer reaches rho.
        if c > 1 && self.throughput(c - 1) >= r * self.peak() {
            c - 1
        } else {
            c
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(items: u64, seconds: f64) -> Sample {
        Sample { items, seconds }
    }

    #[test]
    fn fit_recovers_a_pipeline_in_either_order() {
        let truth = PipelineModel {
            latency_s: 2.5e-4,
            item_s: 3e-7,
        };
        let (a, b) = (
            sample(1000, truth.seconds(1000)),
            sample(9000, truth.seconds(9000)),
        );
        for (x, y) in [(a, b), (b, a)] {
            let m = PipelineModel::fit(x, y).unwrap();
            assert!((m.latency_s - truth.latency_s).abs() < 1e-12, "{m:?}");
            assert!((m.item_s - truth.item_s).abs() < 1e-15, "{m:?}");
        }
    }

    #[test]
    fn noisy_samples_stay_physical() {
        // The larger chunk was faster: no usable slope, a latency that dominates.
        let m = PipelineModel::fit(sample(100, 2e-3), sample(200, 1e-3)).unwrap();
        assert_eq!(m.latency_s, 1e-3);
        assert!((m.item_s - 5e-8).abs() < 1e-20);
        assert!(m.seconds(200) <= 1e-3 * 1.01 && m.seconds(100) < 2e-3);
        assert_eq!(m.chunk_for(Rho::new(0.95).unwrap()), 380_000);
        // A line through the samples that would cross zero time: latency 0.
        let m = PipelineModel::fit(sample(100, 1e-3), sample(200, 3e-3)).unwrap();
        assert_eq!(m.latency_s, 0.0);
        assert!((m.item_s - 2e-5).abs() < 1e-18);
    }

    #[test]
    fn bad_samples_are_refused() {
        assert!(PipelineModel::fit(sample(100, 1e-3), sample(100, 2e-3)).is_err());
        assert!(PipelineModel::fit(sample(0, 1e-3), sample(100, 2e-3)).is_err());
        for t in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(PipelineModel::fit(sample(10, t), sample(100, 2e-3)).is_err());
        }
    }

    #[test]
    fn the_chunk_is_the_smallest_that_reaches_rho() {
        for (latency_s, item_s) in [(1e-3, 1e-5), (6.4e-6, 2e-8), (0.3, 1e-9), (1e-6, 1e-3)] {
            let m = PipelineModel { latency_s, item_s };
            for r in [0.5, 0.9, 0.95, 0.99] {
                let c = m.chunk_for(Rho::new(r).unwrap());
                let goal = r * m.peak();
                assert!(
                    m.throughput(c) >= goal * (1.0 - 1e-9),
                    "{m:?} rho {r} c {c}"
                );
                if c > 1 {
                    assert!(m.throughput(c - 1) < goal, "{m:?} rho {r} c {c}");
                }
            }
        }
    }

    #[test]
    fn rho_bounds() {
        for bad in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert!(matches!(Rho::new(bad), Err(Error::Rho(_))), "{bad}");
        }
        assert_eq!(Rho::new(0.99).unwrap().get(), 0.99);
    }
}
