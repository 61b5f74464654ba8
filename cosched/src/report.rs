//! What a co-scheduled loop reports: per device (each PE's CPU, each board) its
//! chunks, iterations, busy and idle time, timeline, and for a board its FastFit
//! training and model; [`gather`] brings every PE's devices to PE 0, and a
//! [`Timeline`] is what a program writes for `shmemplus cosched-plot`.
//!
//! This module owns the report's types and their gathering. It must not measure or
//! decide anything: the runner and the sizers fill the reports.

use crate::fastfit::{PipelineModel, Sample};
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

/// What one device did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    /// The device.
    pub device: Device,
    /// Chunks it completed.
    pub chunks: u64,
    /// Iterations it completed.
    pub items: u64,
    /// Seconds it spent running chunks.
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
    /// Why a board stopped taking chunks before the pool was empty, if it did (on
    /// one driver thread: it costs that thread more per iteration than the CPU).
    #[serde(default)]
    pub stopped: Option<String>,
}

impl DeviceReport {
    pub(crate) fn new(device: Device) -> DeviceReport {
        DeviceReport {
            device,
            chunks: 0,
            items: 0,
            busy_s: 0.0,
            idle_s: 0.0,
            spans: Vec::new(),
            fit: None,
            failed: None,
            stopped: None,
        }
    }

    pub(crate) fn record(&mut self, span: Span) {
        self.chunks += 1;
        self.items += span.items;
        self.busy_s += span.end_s - span.start_s;
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
    /// What the boards this PE drove learned, if they finished training: give it to
    /// the next loop of the same kernel and iterations (`Options::trained`) and its
    /// boards start at FastFit's chunks, without training again.
    pub trained: Option<Trained>,
}

/// What the boards of a node learned in one loop ([`Report::trained`]): the two
/// measured chunks of FastFit's model, on one driver thread the two that give what a
/// chunk costs that thread, and the speed of this PE's CPU path. Made by
/// [`run`](crate::run()) only, so always two different sizes with usable times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trained {
    pub(crate) kernel: [Sample; 2],
    pub(crate) model: PipelineModel,
    pub(crate) driver: Option<[Sample; 2]>,
    /// This PE's CPU path at the loop's end: iterations per second, and on one
    /// driver thread its own seconds per iteration (0: not measured). The next
    /// loop's boards count the CPU from its start instead of taking everything
    /// before the CPU's first chunk is timed.
    pub(crate) cpu_rate: f64,
    pub(crate) cpu_item_s: f64,
}

impl Trained {
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
