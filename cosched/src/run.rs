//! The co-scheduled loop: every PE's CPU and every board of the job take chunks of
//! one [`WorkPool`] until it is empty.
//!
//! - **Boards** (FastFit): the first PE of each node drives its node's boards, one
//!   thread per board, each blocked in the caller's board body while its chunk runs
//!   (no busy wait here; the body blocks on the kernel's DONE). A board's first two
//!   chunks are its training samples (`Options::samples`); from them [`PipelineModel`]
//!   gives the chunk at which the board reaches `rho` of its peak, which it takes from
//!   then on, but never more than its share of what is left (`left / workers`, at
//!   least the larger sample): two samples on a busy machine can fit a model whose
//!   chunk would swallow the loop.
//! - **CPUs**: each PE's calling thread takes chunks sized from its measured
//!   throughput so that one takes about `Options::cpu_chunk_s`, and no more than its
//!   share of what is left (`left / workers`), so that the loop's tail is not one CPU
//!   chunk while the boards wait.
//! - **Failover**: a board whose body fails is retired, and its chunk is run at once
//!   by the CPU path on the same PE; only if that fails too does the loop fail, naming
//!   the board. No chunk is lost.
//!
//! Every device's chunks, busy time and timeline go into the [`Report`].
//!
//! This module owns the workers and their chunk sizes. It must not know what an
//! iteration computes (the caller's closures do) nor how the pool stays exact
//! ([`pool`](crate::pool) does).

use crate::fastfit::{PipelineModel, Rho, Sample};
use crate::pool::WorkPool;
use crate::{Error, Result};
use serde::Serialize;
use shmemplus::config::ClockKind;
use shmemplus::Shmem;
use std::fmt;
use std::ops::Range;

/// How a loop is co-scheduled. `Options::default()` is FastFit's configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Options {
    /// The fraction of its peak throughput a board's chunk must reach (default 0.95).
    pub rho: Rho,
    /// Sizes of each board's two training chunks; `None` (the default): the first is
    /// `n / (64 * workers)` (at least 1), the second four times that.
    pub samples: Option<(u64, u64)>,
    /// Seconds a CPU chunk should take once the CPU's throughput is known (default
    /// 2 ms: the remote take that starts a chunk costs microseconds).
    pub cpu_chunk_s: f64,
    /// Whether the PEs' CPUs take chunks (default true).
    pub cpus: bool,
    /// Whether the boards take chunks (default true; a job without boards runs on the
    /// CPUs).
    pub boards: bool,
    /// The largest chunk a board may take (its buffers' capacity), training samples
    /// included; `None` (the default): no limit.
    pub max_board_chunk: Option<u64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            rho: Rho::DEFAULT,
            samples: None,
            cpu_chunk_s: 2e-3,
            cpus: true,
            boards: true,
            max_board_chunk: None,
        }
    }
}

/// A device that runs chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Span {
    /// When the device started the chunk.
    pub start_s: f64,
    /// When it had the chunk's results.
    pub end_s: f64,
    /// Iterations in the chunk.
    pub items: u64,
}

/// What a board's training found and how its chunks compared with the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardFit {
    /// The two training chunks.
    pub samples: [Sample; 2],
    /// The model through them.
    pub model: PipelineModel,
    /// The chunk the model chose for `rho`.
    pub chunk: u64,
    /// The model's time for that chunk.
    pub predicted_s: f64,
    /// The median measured time of the chunks of that size (`None` if the loop ended
    /// before one ran).
    pub measured_s: Option<f64>,
}

/// What one device did.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

impl DeviceReport {
    fn new(device: Device) -> DeviceReport {
        DeviceReport {
            device,
            chunks: 0,
            items: 0,
            busy_s: 0.0,
            idle_s: 0.0,
            spans: Vec::new(),
            fit: None,
            failed: None,
        }
    }

    fn record(&mut self, span: Span) {
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
}

/// Runs iterations `0..n` of a loop on every PE's CPU (`cpu(range)`) and every
/// board of the job (`board(b, range)` on the first PE of board `b`'s node), chunk by
/// chunk from one [`WorkPool`], as the module doc describes. Collective: every PE
/// calls it with the same `n` and options. Returns this PE's [`Report`] once every PE
/// has finished. Each iteration runs exactly once, on whichever device took it.
///
/// `board` must block until the chunk's results are where the caller wants them
/// (stage the inputs, `kernel_start`, `wait`, fetch the outputs); `cpu` computes a
/// chunk on this PE. Both may be called from several threads at once (one per board),
/// and `cpu` also reruns the chunk of a failed board.
///
/// Errors: `rho` outside (0, 1) (checked by [`Rho::new`]), `n == 0`, no device, a
/// virtual clock (not supported yet), and a chunk that fails on the CPU path
/// (naming the PE) or on a board and then on the CPU path (naming the board).
pub fn run<C, B>(shmem: &Shmem, n: u64, options: &Options, cpu: C, board: B) -> Result<Report>
where
    C: Fn(Range<u64>) -> std::result::Result<(), String> + Sync,
    B: Fn(u32, Range<u64>) -> std::result::Result<(), String> + Sync,
{
    if shmem.clock() == ClockKind::Virtual {
        return Err(Error::VirtualClock);
    }
    if !(options.cpu_chunk_s.is_finite() && options.cpu_chunk_s > 0.0) {
        return Err(Error::Option(format!(
            "cpu_chunk_s must be finite and > 0, got {}",
            options.cpu_chunk_s
        )));
    }
    if n == 0 {
        return Err(Error::EmptyLoop);
    }
    let me = shmem.my_pe();
    let topo = shmem.topology();
    let boards = if options.boards { shmem.fpgas() } else { 0 };
    let cpus = if options.cpus {
        u64::from(shmem.n_pes())
    } else {
        0
    };
    let workers = cpus + u64::from(topo.nodes) * u64::from(boards);
    if workers == 0 {
        return Err(Error::NoDevice(if options.boards {
            "the CPUs are excluded and the job has no boards".into()
        } else {
            "both the CPUs and the boards are excluded".into()
        }));
    }
    let samples = match options.samples {
        Some((a, b)) if a == 0 || b == 0 || a == b => {
            return Err(Error::Option(format!(
                "the training samples must be two different sizes > 0, got {a} and {b}"
            )))
        }
        Some(s) => s,
        None => {
            let first = (n / workers.saturating_mul(64)).max(1);
            (first, first.saturating_mul(4))
        }
    };
    let samples = match options.max_board_chunk {
        Some(0) => return Err(Error::Option("max_board_chunk must be at least 1".into())),
        // Two different sizes within the limit (a limit of 1 leaves one size: no model).
        Some(max) => (samples.0.min(max.div_ceil(4)), samples.1.min(max)),
        None => samples,
    };
    let pool = WorkPool::new(shmem, n, workers)?;
    let node = shmem.node();
    let drives_boards = me == node * topo.pes_per_node;
    let my_boards = if drives_boards { boards } else { 0 };
    let start = shmem.now();
    let since = |t: std::time::Duration| t.saturating_sub(start).as_secs_f64();
    let clock = || since(shmem.now());
    let outcome = std::thread::scope(|s| {
        let threads: Vec<_> = (0..my_boards)
            .map(|b| {
                let (pool, cpu, board, clock) = (&pool, &cpu, &board, &clock);
                let device = Device::Board {
                    pe: me,
                    node,
                    board: b,
                };
                s.spawn(move || {
                    board_worker(
                        shmem, pool, options, samples, workers, device, b, board, cpu, clock,
                    )
                })
            })
            .collect();
        let mut devices = Vec::new();
        let mut first_error = None;
        if cpus > 0 {
            match cpu_worker(shmem, &pool, options, samples.0, workers, &cpu, &clock) {
                Ok(r) => devices.push(r),
                Err(e) => first_error = Some(e),
            }
        }
        for t in threads {
            match t.join() {
                Ok(Ok(r)) => devices.push(r),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(devices),
        }
    });
    // A failed PE returns here without the closing barrier: its peers would wait for
    // it there, and the launcher ends the job when this PE exits with the error.
    let mut devices = outcome?;
    pool.free(shmem)?;
    let elapsed_s = clock();
    for d in &mut devices {
        d.idle_s = (elapsed_s - d.busy_s).max(0.0);
    }
    Ok(Report {
        pe: me,
        elapsed_s,
        devices,
    })
}

/// This PE's CPU: chunks sized from its measured throughput (see the module doc).
fn cpu_worker(
    shmem: &Shmem,
    pool: &WorkPool,
    options: &Options,
    first: u64,
    workers: u64,
    cpu: &(dyn Fn(Range<u64>) -> std::result::Result<(), String> + Sync),
    clock: &(dyn Fn() -> f64 + Sync),
) -> Result<DeviceReport> {
    let pe = shmem.my_pe();
    let mut report = DeviceReport::new(Device::Cpu { pe });
    let mut want = first;
    // Iterations per second, smoothed over the last chunks.
    let mut rate: Option<f64> = None;
    while let Some(chunk) = pool.take(shmem, want)? {
        let start_s = clock();
        cpu(chunk.range.clone()).map_err(|why| Error::Cpu {
            pe,
            first: chunk.range.start,
            end: chunk.range.end,
            why,
        })?;
        let end_s = clock();
        let items = chunk.range.end - chunk.range.start;
        report.record(Span {
            start_s,
            end_s,
            items,
        });
        let measured = items as f64 / (end_s - start_s).max(1e-9);
        let r = rate.map_or(measured, |r| 0.5 * r + 0.5 * measured);
        rate = Some(r);
        // `as` saturates; the pool clamps to the loop's length.
        let sized = ((r * options.cpu_chunk_s) as u64).max(1);
        want = sized.min((chunk.left / workers).max(1));
    }
    Ok(report)
}

/// One board of this node: training, then FastFit chunks; failover to the CPU path.
#[allow(clippy::too_many_arguments)]
fn board_worker(
    shmem: &Shmem,
    pool: &WorkPool,
    options: &Options,
    samples: (u64, u64),
    workers: u64,
    device: Device,
    b: u32,
    board: &(dyn Fn(u32, Range<u64>) -> std::result::Result<(), String> + Sync),
    cpu: &(dyn Fn(Range<u64>) -> std::result::Result<(), String> + Sync),
    clock: &(dyn Fn() -> f64 + Sync),
) -> Result<DeviceReport> {
    let mut report = DeviceReport::new(device);
    let mut trained: Vec<Sample> = Vec::with_capacity(2);
    // The chunk after training: the model's, or the second sample's if no model fits.
    let mut chosen: Option<u64> = None;
    let mut at_chosen: Vec<f64> = Vec::new();
    let mut left = pool.len();
    loop {
        let want = match (chosen, trained.len()) {
            // No more than its share of what is left (but never below the larger
            // sample), so that a model fitted from noisy samples cannot take the
            // loop's tail away from the other devices.
            (Some(c), _) => c.min((left / workers).max(samples.1)),
            (None, 0) => samples.0,
            (None, _) => samples.1,
        };
        let want = want.min(options.max_board_chunk.unwrap_or(u64::MAX));
        let Some(chunk) = pool.take(shmem, want)? else {
            break;
        };
        left = chunk.left;
        let items = chunk.range.end - chunk.range.start;
        let start_s = clock();
        if let Err(board_error) = board(b, chunk.range.clone()) {
            // Retire the board; its chunk runs on the CPU path so that none is lost.
            cpu(chunk.range.clone()).map_err(|cpu_error| Error::Board {
                pe: shmem.my_pe(),
                board: b,
                first: chunk.range.start,
                end: chunk.range.end,
                board_error: board_error.clone(),
                cpu_error,
            })?;
            report.failed = Some(format!(
                "failed on iterations {}..{} ({board_error}); they ran on the CPU path and the board was retired",
                chunk.range.start, chunk.range.end
            ));
            break;
        }
        let end_s = clock();
        report.record(Span {
            start_s,
            end_s,
            items,
        });
        let seconds = end_s - start_s;
        match chosen {
            Some(c) => {
                if items == c {
                    at_chosen.push(seconds);
                }
            }
            None => {
                trained.push(Sample { items, seconds });
                if trained.len() == 2 {
                    chosen = Some(match PipelineModel::fit(trained[0], trained[1]) {
                        Ok(model) => {
                            let chunk = model.chunk_for(options.rho);
                            report.fit = Some(BoardFit {
                                samples: [trained[0], trained[1]],
                                model,
                                chunk,
                                predicted_s: model.seconds(chunk),
                                measured_s: None,
                            });
                            chunk
                        }
                        // Two equal sizes (the pool cut a sample): keep the larger.
                        Err(_) => samples.1,
                    });
                }
            }
        }
    }
    if let Some(fit) = &mut report.fit {
        fit.measured_s = median(&mut at_chosen);
    }
    Ok(report)
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}
