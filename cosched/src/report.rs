//! What a co-scheduled loop reports: per device (each PE's CPU, each board) its
//! chunks, iterations, busy and idle time, timeline, and for a board its FastFit
//! training and model; [`speed_ratio`] is the board/core speed ratio the devices
//! measured; [`gather`] brings every PE's devices to PE 0, and a
//! [`Timeline`] is what a program writes for `shmemplus cosched-plot`.
//!
//! This module owns the report's types and their gathering. It must not measure or
//! decide anything: the runner and the sizers fill the reports.

use crate::fastfit::{PipelineModel, Sample};
use crate::stats::median;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use shmemplus::{Place, Shmem};
use std::fmt;

/// A device that runs chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Device {
    /// The CPU path of a PE (its calling thread).
    Cpu {
        /// The PE.
        pe: u32,
    },
    /// A board, driven by its node's first PE.
    Board {
        /// The PE that drives it.
        pe: u32,
        /// Its node.
        node: u32,
        /// The board's number on the node.
        board: u32,
    },
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu { pe } => write!(f, "PE {pe} CPU"),
            Device::Board { pe, node, board } => {
                write!(f, "node {node} board {board} (PE {pe})")
            }
        }
    }
}

/// One chunk on a device's timeline, in seconds since the loop started.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// When the device started the chunk.
    pub start_s: f64,
    /// When it had the chunk's results.
    pub end_s: f64,
    /// Iterations in the chunk.
    pub items: u64,
    /// Where its time went, if its driver recorded it (every driver does; a span
    /// made elsewhere may not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Steps>,
}

impl Span {
    /// The same chunk on a clock `by_s` seconds later (every instant moved, its steps'
    /// too): a loop's spans on the clock of an earlier loop's start.
    ///
    /// ```
    /// use shmemplus_cosched::{Span, Steps};
    /// let mut span = Span {
    ///     start_s: 2.0, end_s: 3.0, items: 4,
    ///     steps: Some(Steps { asked_s: 1.5, board: None }),
    /// };
    /// span.shift(10.0);
    /// assert_eq!((span.start_s, span.end_s), (12.0, 13.0));
    /// assert_eq!(span.steps.map(|s| s.asked_s), Some(11.5));
    /// ```
    pub fn shift(&mut self, by_s: f64) {
        self.start_s += by_s;
        self.end_s += by_s;
        if let Some(steps) = &mut self.steps {
            steps.asked_s += by_s;
            if let Some(b) = &mut steps.board {
                b.staged_s += by_s;
                b.done_s += by_s;
                b.served_s += by_s;
                b.fetched_s += by_s;
            }
        }
    }
}

/// Where one chunk's time went: instants on the loop's clock (seconds since the loop
/// started, as [`Span`]'s), read by its driver as it went. A CPU chunk has its take;
/// a board chunk also its staging, its kernel's DONE and its driver's service and
/// fetch. [`DeviceReport::step_totals`] adds them up for a device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Steps {
    /// When its device (a board's driver) asked the pool for it: sizing the chunk and
    /// taking it run from here to the span's `start_s`.
    pub asked_s: f64,
    /// A board chunk's steps after its take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<BoardSteps>,
}

/// A board chunk's steps after its take ([`Steps::board`]), instants on the loop's
/// clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BoardSteps {
    /// Its inputs staged and its kernel started (staging runs from the span's
    /// `start_s` to here).
    pub staged_s: f64,
    /// Its kernel's DONE; where the board gives no instant of it (the wall clock),
    /// when the driver's wait for it returned.
    pub done_s: f64,
    /// When its driver came to it to fetch its results: after DONE if the driver was
    /// busy with something else (it waited for the driver), before it if the driver
    /// then waited for the kernel.
    pub served_s: f64,
    /// Its results fetched, on the driver's clock (the span's `end_s` leaves out the
    /// wait for the driver).
    pub fetched_s: f64,
}

/// A device's chunks' steps added up ([`DeviceReport::step_totals`]), in seconds:
/// what its chunks spent being taken, staged, run by the kernel, waiting for their
/// driver after DONE and fetched (a board), or being taken and run (a CPU, its run
/// counting the board service its driver did between the chunk's pieces).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTotals {
    /// The chunks whose steps were recorded.
    pub chunks: u64,
    /// Sizing and taking them.
    pub take_s: f64,
    /// A board's: staging their inputs.
    pub staging_s: f64,
    /// A board's: from the kernel's start to its DONE.
    pub kernel_s: f64,
    /// A board's: from DONE until the driver came to fetch the results.
    pub waited_s: f64,
    /// A board's: fetching the results (from DONE or the driver's coming, whichever
    /// was later).
    pub fetch_s: f64,
    /// A CPU's: running them.
    pub run_s: f64,
}

impl StepTotals {
    /// Adds one span's steps (none: nothing).
    fn add(&mut self, span: &Span) {
        let Some(steps) = span.steps else {
            return;
        };
        // Every part is at least 0: instants a driver read in order, but a DONE
        // the board modeled may lie before the driver's coming or after it.
        let part = |from: f64, to: f64| (to - from).max(0.0);
        self.chunks += 1;
        self.take_s += part(steps.asked_s, span.start_s);
        match steps.board {
            Some(b) => {
                self.staging_s += part(span.start_s, b.staged_s);
                self.kernel_s += part(b.staged_s, b.done_s);
                self.waited_s += part(b.done_s, b.served_s);
                self.fetch_s += part(b.served_s.max(b.done_s), b.fetched_s);
            }
            None => self.run_s += part(span.start_s, span.end_s),
        }
    }

    /// `self`'s parts divided by its chunks (all 0 for none).
    pub fn per_chunk(&self) -> StepTotals {
        let n = self.chunks.max(1) as f64;
        StepTotals {
            chunks: self.chunks,
            take_s: self.take_s / n,
            staging_s: self.staging_s / n,
            kernel_s: self.kernel_s / n,
            waited_s: self.waited_s / n,
            fetch_s: self.fetch_s / n,
            run_s: self.run_s / n,
        }
    }
}

/// What a board's training found and how its chunks compared with the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardFit {
    /// The two training chunks.
    pub samples: [Sample; 2],
    /// The model through them.
    pub model: PipelineModel,
    /// The chunk the model chose for `rho` (its latency plus `service_s`), last.
    pub chunk: u64,
    /// The model's time for that chunk.
    pub predicted_s: f64,
    /// The median over the chunks after training of their measured time (staging to
    /// results) divided by the model's time for their size (`None` if the loop ended
    /// with the training).
    pub measured_over_model: Option<f64>,
    /// The mean wait from a chunk's DONE until its driver served it, which the chunk
    /// choice adds to the model's latency (0 with a thread per board).
    pub service_s: f64,
    /// Whether the board trained on one chunk: the model that sized its first chunks
    /// after training had a modeled second sample (the largest chunk's transfers
    /// priced by the communication model, `Options::board_bytes`). The first measured
    /// chunk of another size then replaced it, so `samples` are measured unless the
    /// loop ended first.
    #[serde(default)]
    pub second_sample_modeled: bool,
}

/// Why a board stopped taking chunks before the pool was empty
/// ([`DeviceReport::stopped`]; `Measured` and `Predicted`: one driver thread only).
/// Its words are its `Display`.
///
/// A report keeps the numbers and makes the words only when it is shown: the
/// runner retires a board inside the loop, where formatting four reasons (eight
/// floats) after the 2D FFT's corner turn cost the driver's thread about 20 us of a
/// pass of 1.2 ms on novo-g.
///
/// ```
/// use shmemplus_cosched::StopReason;
/// let why = StopReason::Tail { left: 50, latency_s: 2e-3, cpus_s: 125e-6 };
/// assert_eq!(
///     why.to_string(),
///     "stopped: the CPUs do the 50 iterations left in 125.00 us, less than the board's latency (2000.00 us)"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum StopReason {
    /// Trained, and its measured staging and fetching per iteration, at the chunk it
    /// would take next, cost the thread at least the CPU's iteration (a board whose
    /// transfers are dear, or a small chunk at the end of the loop).
    Measured {
        /// The chunk it would have taken.
        chunk: u64,
        /// Seconds an iteration of that chunk costs the thread through the board.
        driver_item_s: f64,
        /// Seconds an iteration takes on the thread's CPU path.
        cpu_item_s: f64,
    },
    /// The model's transfers alone cost that much: it did not train.
    Predicted {
        /// Seconds an iteration's modeled transfers hold the thread (largest chunk).
        driver_item_s: f64,
        /// Seconds an iteration takes on the thread's CPU path, as weighed: its
        /// typical time, or twice the application's estimate (`cpu_estimated`).
        cpu_item_s: f64,
        /// Whether it decided before the loop measured the CPU, on the application's
        /// estimate (`Options::cpu_item_estimate_s`), the transfers costing at least
        /// twice that.
        #[serde(default)]
        cpu_estimated: bool,
    },
    /// On a thread of its own: the CPUs would do all that was left before the
    /// model's transfers of a training sample alone are done. It did not train.
    Outlasted {
        /// Iterations left.
        left: u64,
        /// Seconds of the training sample's modeled transfers.
        sample_s: f64,
        /// Seconds the CPUs take for what is left (at their typical time; or at
        /// twice the application's estimate, `cpu_estimated`).
        cpus_s: f64,
        /// Whether it decided before the loop measured the CPU, on the application's
        /// estimate (`Options::cpu_item_estimate_s`).
        #[serde(default)]
        cpu_estimated: bool,
    },
    /// The CPUs finish what is left before a chunk of any size would end on the
    /// board (its latency): the loop's tail is theirs.
    Tail {
        /// Iterations left.
        left: u64,
        /// The board's latency, seconds.
        latency_s: f64,
        /// Seconds the CPUs take for what is left.
        cpus_s: f64,
    },
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |s: f64| s * 1e6;
        match *self {
            StopReason::Measured {
                chunk,
                driver_item_s,
                cpu_item_s,
            } => write!(
                f,
                "stopped: in its next chunk ({chunk} iterations) an iteration would cost the PE's thread {:.2} us through the board (staging and fetching), {:.2} us on the CPU",
                us(driver_item_s),
                us(cpu_item_s)
            ),
            StopReason::Predicted {
                driver_item_s,
                cpu_item_s,
                cpu_estimated,
            } => write!(
                f,
                "never trained: the model's transfers alone cost the PE's thread {:.2} us an iteration at the largest chunk, the CPU {:.2} us{}",
                us(driver_item_s),
                us(cpu_item_s),
                if cpu_estimated { " (twice the application's estimate, before the loop measured it)" } else { "" }
            ),
            StopReason::Outlasted {
                left,
                sample_s,
                cpus_s,
                cpu_estimated,
            } => write!(
                f,
                "never trained: the CPUs do the {left} iterations left in {:.2} us{}, before the model's transfers of a training sample alone ({:.2} us)",
                us(cpus_s),
                if cpu_estimated { " at twice the application's estimate" } else { "" },
                us(sample_s)
            ),
            StopReason::Tail {
                left,
                latency_s,
                cpus_s,
            } => write!(
                f,
                "stopped: the CPUs do the {left} iterations left in {:.2} us, less than the board's latency ({:.2} us)",
                us(cpus_s),
                us(latency_s)
            ),
        }
    }
}

/// What one device did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    /// The device.
    pub device: Device,
    /// Chunks it completed.
    pub chunks: u64,
    /// Iterations it completed. A failed board's chunk, rerun on the CPU path
    /// ([`DeviceReport::failed`] names it), is counted by neither device: the
    /// devices' items then sum to less than the loop's length.
    pub items: u64,
    /// Seconds it spent running chunks: the time its spans cover, a span that
    /// overlaps the one before it (a chunk queued behind another on its board, which
    /// starts before the first one's fetch ends) counted from that one's end.
    pub busy_s: f64,
    /// Seconds of the loop it spent not running chunks (from the loop's start until
    /// every PE had finished).
    pub idle_s: f64,
    /// Its chunks in order.
    pub spans: Vec<Span>,
    /// A board's training and model (`None` for a CPU, or a board that never finished
    /// its training).
    pub fit: Option<BoardFit>,
    /// Why a board was retired, if it failed (its chunk was rerun on the CPU path).
    pub failed: Option<String>,
    /// Why a board stopped taking chunks before the pool was empty, if it did: the
    /// CPUs do what is left within the board's latency (the loop's tail), or, on one
    /// driver thread, it costs that thread more per iteration than the CPU.
    #[serde(default)]
    pub stopped: Option<StopReason>,
}

impl DeviceReport {
    pub(crate) fn new(device: Device) -> DeviceReport {
        DeviceReport::with_room(device, 0)
    }

    /// A report of no chunk yet, with room for `spans` spans (made before a loop, so
    /// that recording its first chunks allocates nothing).
    pub(crate) fn with_room(device: Device, spans: usize) -> DeviceReport {
        DeviceReport {
            device,
            chunks: 0,
            items: 0,
            busy_s: 0.0,
            idle_s: 0.0,
            spans: Vec::with_capacity(spans),
            fit: None,
            failed: None,
            stopped: None,
        }
    }

    /// Its chunks' steps added up (the chunks whose driver recorded them).
    ///
    /// ```
    /// use shmemplus_cosched::{BoardSteps, Device, DeviceReport, Span, Steps};
    /// // A board chunk asked for at 1 us, staged from 2 to 3, DONE at 13; its
    /// // driver came at 15 and had the results at 16 (the span leaves out the 2 us
    /// // it waited for the driver).
    /// let board = BoardSteps { staged_s: 3e-6, done_s: 13e-6, served_s: 15e-6, fetched_s: 16e-6 };
    /// let span = Span {
    ///     start_s: 2e-6, end_s: 14e-6, items: 8,
    ///     steps: Some(Steps { asked_s: 1e-6, board: Some(board) }),
    /// };
    /// let d = DeviceReport {
    ///     device: Device::Board { pe: 0, node: 0, board: 0 }, chunks: 1, items: 8,
    ///     busy_s: 12e-6, idle_s: 0.0, spans: vec![span], fit: None, failed: None,
    ///     stopped: None,
    /// };
    /// let t = d.step_totals();
    /// assert_eq!(t.chunks, 1);
    /// let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    /// assert!(close(t.take_s, 1e-6) && close(t.staging_s, 1e-6) && close(t.kernel_s, 10e-6));
    /// assert!(close(t.waited_s, 2e-6) && close(t.fetch_s, 1e-6) && t.run_s == 0.0);
    /// ```
    pub fn step_totals(&self) -> StepTotals {
        let mut totals = StepTotals::default();
        for span in &self.spans {
            totals.add(span);
        }
        totals
    }

    /// Adds a chunk that ran `span`. A device's chunks are recorded in the order they
    /// start, so the part of `span` before the last one's end is time already
    /// counted as busy.
    pub(crate) fn record(&mut self, span: Span) {
        self.chunks += 1;
        self.items += span.items;
        let from = self
            .spans
            .last()
            .map_or(span.start_s, |last| span.start_s.max(last.end_s));
        self.busy_s += (span.end_s - from).max(0.0);
        self.spans.push(span);
    }
}

/// What this PE's devices did in one loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// This PE.
    pub pe: u32,
    /// Seconds from the loop's start until every PE had finished it.
    pub elapsed_s: f64,
    /// This PE's CPU (if it took part) and the boards it drove.
    pub devices: Vec<DeviceReport>,
    /// Whether the loop ran as one planned round (a trained start of a loop per PE
    /// on the virtual clock: one chunk per board and one for the CPU, sized before
    /// the first), not chunk by chunk.
    pub planned_round: bool,
    /// What the boards this PE drove learned, if they finished training: give it to
    /// the next loop of the same kernel and iterations (`Options::trained`) and its
    /// boards start at FastFit's chunks, without training again.
    pub trained: Option<Trained>,
}

/// What the boards of a node learned in one loop ([`Report::trained`]): the two
/// measured chunks of FastFit's model, on one driver thread the two that give what a
/// chunk costs that thread, and the speed of this PE's CPU path. Made by
/// [`run`](crate::run()), or read back from its JSON by [`Trained::from_json`], which
/// checks it: always two different sizes with usable times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trained {
    pub(crate) kernel: [Sample; 2],
    pub(crate) model: PipelineModel,
    pub(crate) driver: Option<[Sample; 2]>,
    /// On one driver thread: the two that give what staging a chunk costs it (the
    /// part of `driver` before the next board can be staged).
    pub(crate) staging: Option<[Sample; 2]>,
    /// This PE's CPU path at the loop's end: iterations per second, and on one
    /// driver thread its own seconds per iteration (0: not measured). The next
    /// loop's boards count the CPU from its start instead of taking everything
    /// before the CPU's first chunk is timed.
    pub(crate) cpu_rate: f64,
    pub(crate) cpu_item_s: f64,
    /// On one driver thread: what the CPU path's first piece of a loop took beyond
    /// its iterations at `cpu_item_s` (first-use costs: the FFT's first row after a
    /// corner turn), which the next loop's plan leaves the CPU time for (0: not
    /// measured).
    pub(crate) cpu_start_s: f64,
    /// The round these lines plan for a next loop like the one that learned them,
    /// planned at that loop's end (`round`); not written out.
    #[serde(skip)]
    pub(crate) planned: crate::plan::PlannedRound,
}

/// A [`Trained`] as its `Serialize` writes it, before it is checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredTrained {
    kernel: [Sample; 2],
    /// Derived from `kernel`: fitted again, not trusted.
    #[serde(rename = "model")]
    _model: serde::de::IgnoredAny,
    driver: Option<[Sample; 2]>,
    /// Absent from files written before it was measured: the driver's line stands
    /// for it.
    #[serde(default)]
    staging: Option<[Sample; 2]>,
    cpu_rate: f64,
    cpu_item_s: f64,
    /// Absent from files written before it was measured: 0, not measured.
    #[serde(default)]
    cpu_start_s: f64,
}

impl Trained {
    /// Reads back a `Trained` from the JSON its `Serialize` writes (`serde_json`), for
    /// example a file kept from an earlier job of the same kernel and iterations: its
    /// boards then start at FastFit's chunks ([`Options::trained`](crate::Options)).
    ///
    /// The text comes from outside the program, so it is checked as [`run`](crate::run())
    /// would have made it: two samples of different sizes, the smaller first, with
    /// finite positive times (the model is fitted through them again, not read), the
    /// same for the driver's and the staging's samples if any, and CPU speeds (and the CPU path's
    /// start-up cost, 0 when absent) that are finite and not negative. Anything else
    /// is [`Error::Trained`].
    ///
    /// ```
    /// use shmemplus_cosched::Trained;
    /// let text = r#"{"kernel": [{"items": 4, "seconds": 0.002}, {"items": 16, "seconds": 0.005}],
    ///     "model": {"latency_s": 0.001, "item_s": 0.00025},
    ///     "driver": null, "cpu_rate": 1000.0, "cpu_item_s": 0.0}"#;
    /// let trained = Trained::from_json(text)?;
    /// assert!((trained.model().item_s - 0.00025).abs() < 1e-12);
    /// assert!(Trained::from_json(&text.replace("0.005", "-1")).is_err());
    /// # Ok::<(), shmemplus_cosched::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Trained> {
        let bad = |why: String| Error::Trained(why);
        let stored: StoredTrained =
            serde_json::from_str(text).map_err(|e| bad(format!("not a stored Trained: {e}")))?;
        let line = |what: &str, [a, b]: [Sample; 2]| -> Result<PipelineModel> {
            if a.items >= b.items {
                return Err(bad(format!(
                    "the {what} samples must grow ({} then {} iterations)",
                    a.items, b.items
                )));
            }
            PipelineModel::fit(a, b).map_err(|e| bad(format!("the {what} samples: {e}")))
        };
        let model = line("kernel", stored.kernel)?;
        for (what, samples) in [("driver", stored.driver), ("staging", stored.staging)] {
            if let Some(samples) = samples {
                line(what, samples)?;
            }
        }
        for (what, x) in [
            ("cpu_rate", stored.cpu_rate),
            ("cpu_item_s", stored.cpu_item_s),
            ("cpu_start_s", stored.cpu_start_s),
        ] {
            if !(x.is_finite() && x >= 0.0) {
                return Err(bad(format!("{what} must be finite and >= 0, got {x}")));
            }
        }
        Ok(Trained {
            kernel: stored.kernel,
            model,
            driver: stored.driver,
            staging: stored.staging,
            cpu_rate: stored.cpu_rate,
            cpu_item_s: stored.cpu_item_s,
            cpu_start_s: stored.cpu_start_s,
            planned: Default::default(),
        })
    }

    /// The model's two chunks (the smaller first).
    pub fn samples(&self) -> [Sample; 2] {
        self.kernel
    }

    /// FastFit's model through them.
    pub fn model(&self) -> PipelineModel {
        self.model
    }
}

/// Every device of a loop, for a plot (`shmemplus cosched-plot`): what a program
/// writes as JSON after [`gather`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// What ran (a title for the plot).
    pub title: String,
    /// The job clock the times are on: `wall` or `virtual`.
    pub clock: String,
    /// Every device of the job.
    pub devices: Vec<DeviceReport>,
}

/// The speed ratio (board / CPU core, per iteration) a FastFit run measured: the
/// median over the CPUs' chunks of their seconds per iteration, over the median of
/// the boards' models' seconds per iteration (what an iteration adds to a chunk, the
/// kernel's latency left out). It is what a static split's assumed ratio stands for
/// (the applications' `--split-assume`), and may differ from the board speed an
/// application was given: a board's time is set from a CPU speed that the CPU path
/// need not run at.
/// `None` when no CPU ran a chunk or no board has a model.
///
/// ```
/// use shmemplus_cosched::{speed_ratio, BoardFit, Device, DeviceReport, PipelineModel, Sample, Span};
///
/// let device = |device, spans: Vec<Span>, fit| DeviceReport {
///     device, chunks: spans.len() as u64, items: spans.iter().map(|s| s.items).sum(),
///     busy_s: 0.0, idle_s: 0.0, spans, fit, failed: None, stopped: None,
/// };
/// // The CPU's chunks: 3, 2.5 and 3 us an iteration (median 3).
/// let spans = [(2, 6e-6), (4, 10e-6), (1, 3e-6)]
///     .map(|(items, seconds)| Span { start_s: 1e-3, end_s: 1e-3 + seconds, items, steps: None });
/// let cpu = device(Device::Cpu { pe: 0 }, spans.to_vec(), None);
/// // The board's model: 0.5 us an iteration beyond a 10 us latency.
/// let model = PipelineModel { latency_s: 10e-6, item_s: 0.5e-6 };
/// let fit = BoardFit {
///     samples: [Sample { items: 4, seconds: 12e-6 }, Sample { items: 16, seconds: 18e-6 }],
///     model, chunk: 64, predicted_s: model.seconds(64), measured_over_model: None,
///     service_s: 0.0, second_sample_modeled: false,
/// };
/// let board = device(Device::Board { pe: 0, node: 0, board: 0 }, Vec::new(), Some(fit));
/// let ratio = speed_ratio(&[cpu, board.clone()]).unwrap();
/// assert!((ratio - 6.0).abs() < 1e-6);
/// // No CPU chunk: no ratio.
/// assert_eq!(speed_ratio(&[board]), None);
/// ```
pub fn speed_ratio(devices: &[DeviceReport]) -> Option<f64> {
    let usable = |x: &f64| x.is_finite() && *x > 0.0;
    let mut cpu: Vec<f64> = devices
        .iter()
        .filter(|d| matches!(d.device, Device::Cpu { .. }))
        .flat_map(|d| d.spans.iter())
        .filter(|s| s.items > 0)
        .map(|s| (s.end_s - s.start_s) / s.items as f64)
        .filter(usable)
        .collect();
    let mut board: Vec<f64> = devices
        .iter()
        .filter_map(|d| d.fit.as_ref())
        .map(|f| f.model.item_s)
        .filter(usable)
        .collect();
    Some(median(&mut cpu)? / median(&mut board)?)
}

/// Every PE's devices, on PE 0 (`None` on the others). Collective: every PE calls it
/// with its own report. Each PE's devices travel as JSON bytes into PE 0's memory at
/// an offset given by the lengths all PEs exchanged first; PE 0 checks the lengths
/// (they come from other processes) before it reads.
pub fn gather(shmem: &Shmem, report: &Report) -> Result<Option<Vec<DeviceReport>>> {
    let bad = |why: String| Error::Option(format!("gathering the reports: {why}"));
    let bytes = serde_json::to_vec(&report.devices).map_err(|e| bad(e.to_string()))?;
    let (me, n) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
    let mine = shmem.alloc::<u64>(1, Place::Cpu)?;
    let lens = shmem.alloc::<u64>(n, Place::Cpu)?;
    shmem.local_write(&mine, 0, &[bytes.len() as u64])?;
    shmem.fcollect(&shmem.team_world(), &lens, &mine, 1)?;
    let lens_v = shmem.local_to_vec(&lens)?;
    let sizes = lens_v
        .iter()
        .map(|&l| usize::try_from(l).map_err(|_| bad(format!("a length of {l} bytes"))))
        .collect::<Result<Vec<usize>>>()?;
    let total = sizes
        .iter()
        .try_fold(0usize, |a, &l| a.checked_add(l))
        .ok_or_else(|| bad("the lengths overflow".into()))?;
    let offset: usize = sizes[..me].iter().sum();
    let all = shmem.alloc::<u8>(total.max(1), Place::Cpu)?;
    if !bytes.is_empty() {
        shmem.put(&all, offset, &bytes, 0)?;
    }
    shmem.barrier_all()?;
    let out = if me == 0 {
        let data = shmem.local_to_vec(&all)?;
        let mut devices = Vec::new();
        let mut at = 0;
        for (pe, &len) in sizes.iter().enumerate() {
            let part = &data[at..at + len];
            at += len;
            let mut d: Vec<DeviceReport> =
                serde_json::from_slice(part).map_err(|e| bad(format!("PE {pe}'s report: {e}")))?;
            devices.append(&mut d);
        }
        Some(devices)
    } else {
        None
    };
    shmem.free(all)?;
    shmem.free(lens)?;
    shmem.free(mine)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_that_overlaps_the_one_before_counts_as_busy_from_its_end() {
        let span = |start_us: f64, end_us: f64| Span {
            start_s: start_us * 1e-6,
            end_s: end_us * 1e-6,
            items: 1,
            steps: None,
        };
        let mut board = DeviceReport::new(Device::Board {
            pe: 0,
            node: 0,
            board: 0,
        });
        board.record(span(2.0, 22.0));
        // Queued behind the first: its kernel started at the first's DONE (18 us),
        // before the first's fetch ended.
        board.record(span(17.0, 59.0));
        board.record(span(62.0, 154.0));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(
            close(board.busy_s, (20.0 + 37.0 + 92.0) * 1e-6),
            "{}",
            board.busy_s
        );
        assert_eq!((board.chunks, board.items, board.spans.len()), (3, 3, 3));
        // Apart, the spans add up.
        let mut cpu = DeviceReport::new(Device::Cpu { pe: 0 });
        cpu.record(span(1.0, 4.0));
        cpu.record(span(4.0, 6.5));
        assert!(close(cpu.busy_s, 5.5e-6), "{}", cpu.busy_s);
    }

    #[test]
    fn a_stop_reason_written_before_the_estimate_loads_as_measured() {
        // A timeline file from before `cpu_estimated`: the CPU's time was measured.
        let old = r#"{"why":"predicted","driver_item_s":4.3e-5,"cpu_item_s":5e-6}"#;
        let why: StopReason = serde_json::from_str(old).unwrap();
        assert_eq!(
            why,
            StopReason::Predicted {
                driver_item_s: 4.3e-5,
                cpu_item_s: 5e-6,
                cpu_estimated: false
            }
        );
        assert!(!why.to_string().contains("estimate"), "{why}");
        // Decided on the estimate: it says so, and keeps it through JSON.
        let estimated = StopReason::Outlasted {
            left: 3,
            sample_s: 2.4e-3,
            cpus_s: 30e-6,
            cpu_estimated: true,
        };
        let text = serde_json::to_string(&estimated).unwrap();
        assert_eq!(
            serde_json::from_str::<StopReason>(&text).unwrap(),
            estimated
        );
        assert!(
            estimated
                .to_string()
                .contains("at twice the application's estimate"),
            "{estimated}"
        );
    }

    fn trained() -> Trained {
        let kernel = [
            Sample {
                items: 4,
                seconds: 2e-3,
            },
            Sample {
                items: 16,
                seconds: 5e-3,
            },
        ];
        Trained {
            kernel,
            model: PipelineModel::fit(kernel[0], kernel[1]).unwrap(),
            driver: Some([
                Sample {
                    items: 4,
                    seconds: 1e-3,
                },
                Sample {
                    items: 16,
                    seconds: 2e-3,
                },
            ]),
            staging: Some([
                Sample {
                    items: 4,
                    seconds: 0.3e-3,
                },
                Sample {
                    items: 16,
                    seconds: 0.8e-3,
                },
            ]),
            cpu_rate: 2e4,
            cpu_item_s: 5e-5,
            cpu_start_s: 2.5e-4,
            planned: Default::default(),
        }
    }

    #[test]
    fn trained_lines_read_back_as_written_and_bad_ones_are_refused() {
        let t = trained();
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(Trained::from_json(&text).unwrap(), t);
        // The stored model is not trusted: it is fitted again from the samples.
        let lying = text.replace(&format!("{}", t.model.item_s), "123.0");
        assert_ne!(lying, text);
        assert_eq!(Trained::from_json(&lying).unwrap().model(), t.model);
        let refused = |text: &str, needle: &str| {
            let e = Trained::from_json(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        };
        refused("[1, 2]", "not a stored Trained");
        refused(&text.replace("\"cpu_rate\"", "\"cpu_rat\""), "not a stored");
        refused(
            &text.replacen("\"items\":16", "\"items\":4", 1),
            "must grow",
        );
        refused(
            &text.replacen("\"items\":4", "\"items\":40", 1),
            "must grow",
        );
        refused(&text.replacen("0.005", "-0.005", 1), "kernel samples");
        refused(
            &text.replace(
                r#"{"items":16,"seconds":0.002}"#,
                r#"{"items":16,"seconds":0.0}"#,
            ),
            "driver samples",
        );
        refused(&text.replace("20000.0", "-1.0"), "cpu_rate");
        refused(&text.replace("0.00025", "-0.00025"), "cpu_start_s");
        // A file written before the start-up cost was measured: not measured.
        let older = text.replace(",\"cpu_start_s\":0.00025", "");
        assert_ne!(older, text);
        assert_eq!(Trained::from_json(&older).unwrap().cpu_start_s, 0.0);
        // Staging samples are checked as the driver's; a file written before they
        // were measured has none (the driver's line stands for them).
        refused(
            &text.replace(
                r#"{"items":16,"seconds":0.0008}"#,
                r#"{"items":2,"seconds":0.0008}"#,
            ),
            "staging samples must grow",
        );
        let staging = serde_json::to_string(&t.staging).unwrap();
        let without = text.replace(&format!(",\"staging\":{staging}"), "");
        assert_ne!(without, text);
        assert_eq!(Trained::from_json(&without).unwrap().staging, None);
    }
}
