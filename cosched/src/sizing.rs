//! Chunk sizes: what a board or a CPU asks the pool for next, from what its earlier
//! chunks took.
//!
//! - A board ([`BoardSizer`]): its first two chunks are FastFit's training samples;
//!   from them [`PipelineModel`] gives the chunk at which the board reaches `rho` of its
//!   peak, which it asks for from then on, but never more than its share of what is
//!   left (`left / workers`, at least the larger sample): two samples on a busy machine
//!   can fit a model whose chunk would swallow the loop. Never more than the board's
//!   buffers hold (`max`). When one thread drives the boards and a CPU (the virtual
//!   clock's driver), a chunk's DONE may wait for the driver; the mean of that wait is
//!   added to the model's latency when the chunk is chosen, since the chunk must
//!   amortise it too.
//! - A CPU ([`CpuSizer`]): chunks that take about `cpu_chunk_s` at its measured
//!   (smoothed) throughput, no more than its share of what is left.
//!
//! This module owns those rules and the report of a board's fit. It must not take
//! work or time anything: the drivers do and tell it what happened.

use crate::fastfit::{PipelineModel, Rho, Sample};
use crate::report::BoardFit;

/// A board's chunk sizes (see the module doc).
#[derive(Debug, Clone)]
pub(crate) struct BoardSizer {
    samples: (u64, u64),
    rho: Rho,
    workers: u64,
    max: u64,
    trained: Vec<Sample>,
    /// The chunk after training: the model's, or the larger sample's if none fits.
    chosen: Option<u64>,
    fit: Option<BoardFit>,
    /// Measured over modeled time of each chunk after training.
    ratios: Vec<f64>,
    /// Iterations left in the pool after this board's last take.
    left: u64,
    /// Mean seconds from a chunk's DONE to the driver serving it (0 when a thread
    /// waits on each board), and how many were averaged.
    service_s: f64,
    served: u64,
}

impl BoardSizer {
    pub(crate) fn new(samples: (u64, u64), rho: Rho, workers: u64, max: u64, n: u64) -> Self {
        BoardSizer {
            samples,
            rho,
            workers: workers.max(1),
            max: max.max(1),
            trained: Vec::with_capacity(2),
            chosen: None,
            fit: None,
            ratios: Vec::new(),
            left: n,
            service_s: 0.0,
            served: 0,
        }
    }

    /// The chunk to ask for next.
    pub(crate) fn want(&self) -> u64 {
        let want = match (self.chosen, self.trained.len()) {
            (Some(c), _) => self
                .chunk_with_service()
                .unwrap_or(c)
                .min((self.left / self.workers).max(self.samples.1)),
            (None, 0) => self.samples.0,
            (None, _) => self.samples.1,
        };
        want.min(self.max)
    }

    /// The model's chunk when each chunk also waits `service_s` for the driver: the
    /// board's own latency plus that wait is what a chunk must amortise.
    fn chunk_with_service(&self) -> Option<u64> {
        self.fit.as_ref().map(|f| {
            let mut model = f.model;
            model.latency_s += self.service_s;
            model.chunk_for(self.rho)
        })
    }

    /// A chunk's DONE waited `seconds` for the driver to serve it.
    pub(crate) fn served(&mut self, seconds: f64) {
        self.served += 1;
        self.service_s += (seconds.max(0.0) - self.service_s) / self.served as f64;
    }

    /// The pool's answer to a take: what is left after it.
    pub(crate) fn took(&mut self, left: u64) {
        self.left = left;
    }

    /// A chunk of `items` took `seconds` (from staging to results).
    pub(crate) fn done(&mut self, items: u64, seconds: f64) {
        match self.chosen {
            Some(_) => {
                if let Some(f) = &self.fit {
                    self.ratios.push(seconds / f.model.seconds(items));
                }
            }
            None => {
                self.trained.push(Sample { items, seconds });
                if let [a, b] = self.trained[..] {
                    self.chosen = Some(match PipelineModel::fit(a, b) {
                        Ok(model) => {
                            let chunk = model.chunk_for(self.rho);
                            self.fit = Some(BoardFit {
                                samples: [a, b],
                                model,
                                chunk,
                                predicted_s: model.seconds(chunk),
                                measured_over_model: None,
                                service_s: 0.0,
                            });
                            chunk
                        }
                        // Two equal sizes (the pool cut a sample): keep the larger.
                        Err(_) => self.samples.1,
                    });
                }
            }
        }
    }

    /// The training's result for the report, with the median of measured over
    /// modeled time of the chunks after training.
    pub(crate) fn into_fit(mut self) -> Option<BoardFit> {
        let measured = median(&mut self.ratios);
        let chunk = self.chunk_with_service();
        let service_s = self.service_s;
        self.fit.map(|mut f| {
            f.measured_over_model = measured;
            f.service_s = service_s;
            if let Some(c) = chunk {
                f.chunk = c;
                f.predicted_s = f.model.seconds(c);
            }
            f
        })
    }
}

/// A CPU's chunk sizes (see the module doc).
#[derive(Debug, Clone)]
pub(crate) struct CpuSizer {
    want: u64,
    chunk_s: f64,
    workers: u64,
    /// Iterations per second, smoothed over the last chunks.
    rate: Option<f64>,
}

impl CpuSizer {
    pub(crate) fn new(first: u64, chunk_s: f64, workers: u64) -> CpuSizer {
        CpuSizer {
            want: first.max(1),
            chunk_s,
            workers: workers.max(1),
            rate: None,
        }
    }

    /// The chunk to ask for next.
    pub(crate) fn want(&self) -> u64 {
        self.want
    }

    /// A chunk of `items` took `seconds`, leaving `left` in the pool.
    pub(crate) fn done(&mut self, items: u64, seconds: f64, left: u64) {
        let measured = items as f64 / seconds.max(1e-9);
        let rate = self.rate.map_or(measured, |r| 0.5 * r + 0.5 * measured);
        self.rate = Some(rate);
        // `as` saturates; the pool clamps to the loop's length.
        let sized = ((rate * self.chunk_s) as u64).max(1);
        self.want = sized.min((left / self.workers).max(1));
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_trains_then_takes_the_model_chunk_within_its_share() {
        let mut s = BoardSizer::new((100, 400), Rho::DEFAULT, 4, u64::MAX, 1_000_000);
        assert_eq!(s.want(), 100);
        s.took(999_900);
        s.done(100, 2e-3 + 100.0 * 1e-5);
        assert_eq!(s.want(), 400);
        s.took(999_500);
        s.done(400, 2e-3 + 400.0 * 1e-5);
        // rho 0.95: 0.95 * 2e-3 / (0.05 * 1e-5) = 3800.
        assert_eq!(s.want(), 3800);
        // Near the end: no more than a quarter of what is left, at least 400.
        s.took(8000);
        assert_eq!(s.want(), 2000);
        s.took(100);
        assert_eq!(s.want(), 400);
        // Chunks of 3800 (modeled 0.04 s) measured 0.04, 0.042 and 0.041 s.
        s.done(3800, 0.04);
        s.done(3800, 0.042);
        s.done(3800, 0.041);
        let fit = s.into_fit().unwrap();
        assert_eq!(fit.chunk, 3800);
        assert!((fit.measured_over_model.unwrap() - 1.025).abs() < 1e-9);
        assert!((fit.predicted_s - 0.04).abs() < 1e-12);
    }

    #[test]
    fn a_board_never_asks_past_its_buffers() {
        let mut s = BoardSizer::new((100, 400), Rho::DEFAULT, 1, 250, 1_000_000);
        assert_eq!(s.want(), 100);
        s.done(100, 1e-3);
        assert_eq!(s.want(), 250);
        s.done(250, 2e-3);
        assert!(s.want() <= 250);
    }

    #[test]
    fn equal_samples_fall_back_to_the_larger_sample() {
        let mut s = BoardSizer::new((100, 400), Rho::DEFAULT, 1, u64::MAX, 1_000_000);
        s.done(100, 1e-3);
        s.done(100, 1e-3);
        assert_eq!(s.want(), 400);
        assert!(s.into_fit().is_none());
    }

    #[test]
    fn waits_for_the_driver_enlarge_the_chunk() {
        let mut s = BoardSizer::new((100, 400), Rho::DEFAULT, 1, u64::MAX, u64::MAX);
        s.done(100, 2e-3 + 100.0 * 1e-5);
        s.done(400, 2e-3 + 400.0 * 1e-5);
        assert_eq!(s.want(), 3800);
        // DONE waited 1 ms and 3 ms for the driver: 2 ms on average, as much again as
        // the board's own latency, so the chunk doubles.
        s.served(1e-3);
        s.served(3e-3);
        assert_eq!(s.want(), 7600);
        assert!((s.into_fit().unwrap().service_s - 2e-3).abs() < 1e-12);
    }

    #[test]
    fn a_cpu_sizes_chunks_from_its_throughput_and_share() {
        let mut c = CpuSizer::new(10, 2e-3, 4);
        assert_eq!(c.want(), 10);
        // 10 items in 1 ms: 10^4/s, so 20 items take 2 ms.
        c.done(10, 1e-3, 1_000_000);
        assert_eq!(c.want(), 20);
        // Twice as fast now: the smoothed rate is 1.5 * 10^4/s.
        c.done(20, 1e-3, 1_000_000);
        assert_eq!(c.want(), 30);
        // Near the end, a quarter of what is left.
        c.done(30, 1e-3, 40);
        assert_eq!(c.want(), 10);
        c.done(10, 1e-3, 0);
        assert_eq!(c.want(), 1);
    }
}
