//! The co-scheduled loop: every PE's CPU and every board of the job take chunks of
//! one [`WorkPool`] until it is empty; chunk sizes follow the crate's `sizing` module.
//!
//! Who drives what: each PE's calling thread runs its CPU chunks. With
//! [`Scope::Job`] (one pool for the job) the first PE of each node also drives its
//! node's boards; with [`Scope::Pe`] (a pool per PE, over the PE's own data) every PE
//! drives its own partitions of its node's boards. Boards are driven through the
//! application's [`BoardPath`] (`start` stages a chunk and starts its kernel,
//! `finish` fetches its results).
//!
//! - **Wall clock**: one thread per board, each blocked on its kernel's DONE
//!   (`BoardRun::wait`: no busy wait), so boards are served as soon as they finish
//!   whatever the CPU does. The threads come from a pool kept for the process
//!   (`board_threads`); one that waits for the CPU blocks until the CPU loop
//!   publishes what it waits for (`progress`).
//! - **Virtual clock**: a PE has one clock, so it drives its boards from its one
//!   thread as a simulation would: it starts every idle board, runs a CPU chunk in
//!   eight pieces (which move its clock), and between pieces completes the boards
//!   whose DONE instant (`BoardRun::done_at`) has passed and restarts them; when its
//!   CPU has nothing left it waits for the earliest DONE. A board thus waits at most
//!   one piece (about `Options::cpu_chunk_s / 8`) to be served, and its chunk choice
//!   counts that wait (see `sizing`). A board that trains alone on its node, driven
//!   through a path that keeps chunks apart (`BoardPath::keeps_chunks_apart`), has
//!   its large sample started right behind its small one (`queue_samples`).
//! - **Failover**: a board whose `start`, kernel or `finish` fails is retired and its
//!   chunk is run at once by the CPU path on the same PE; only if that fails too does
//!   the loop fail, naming the board. When every PE's devices have stopped, every PE
//!   drains the pool on its CPU path, so the loop completes even if every board
//!   failed. No chunk is lost.
//!
//! This module owns the drivers. It must not know what an iteration computes (the
//! caller's closures do), how chunks are sized (`sizing`) nor how the pool stays exact
//! (`pool`).

pub use crate::options::{BoardBytes, Options, Scope, CPU_FIRST_PIECE_MARGIN};
pub use crate::paths::{BoardPath, NoBoards};

use crate::board_threads;
use crate::fastfit::Sample;
use crate::fits::start_cost_kept;
use crate::fits::{CpuLearned, NodeFits, PerItem, SharedTraining};
use crate::paths::{failover, CpuPath};
use crate::plan::NodeNow;
use crate::pool::{check_length, Chunk, WorkPool};
use crate::progress::CpuProgress;
use crate::report::{BoardSteps, Device, DeviceReport, Report, Span, Steps};
use crate::sizing::piece_size;
use crate::sizing::{BoardSizer, BoardsSeen, CpuSizer, Transfers};
use crate::{Error, Result};
use shmemplus::config::ClockKind;
use shmemplus::{BoardRun, Place, RmaOp, Shmem};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A loop's options checked against the job (`check`): the counts every driver
/// goes by.
pub(crate) struct Checked {
    cpu_first_piece_hold_s: f64,
    /// The boards of this PE's node a PE drives (`Options::boards`).
    pub(crate) per_node: u32,
    /// The PEs whose CPUs share the pool.
    pes: u64,
    /// The boards that take from the pool.
    boards_in_pool: u64,
    /// The CPUs that take from the pool.
    cpus: u64,
    /// Both.
    workers: u64,
    /// The training samples' sizes, within `max_chunk`.
    samples: (u64, u64),
    /// `Options::max_board_chunk` (`u64::MAX` for none).
    max_chunk: u64,
    /// The boards this PE drives.
    my_boards: u32,
}

/// What the adaptive drivers of a loop start from, worked out before the loop
/// (`prepare_adaptive`): nothing in it has taken an iteration or touched a board.
///
/// The sizers and reports are made here, not when the loop starts. Made in the
/// timed pass, after a corner turn had pushed their code and data out of the caches,
/// a 2D FFT row pass's four board sizers took 2.0 us of the driver's clock (0.4 us
/// made again at once), and from the loop's start to its first take went 3.8 us
/// (median of 24 PE-passes; 3.5 with one board) against 1.45 (1.3) made here
/// (native, virtual clock, 2-core VM, 2026-12-06).
pub(crate) struct Adaptive {
    checked: Checked,
    training: SharedTraining,
    one_driver: bool,
    /// This PE's boards, each with its sizer and report.
    boards: Vec<Slot>,
    /// This PE's CPU's report, if the CPUs take part.
    cpu_report: Option<DeviceReport>,
    /// The sizer this PE's CPU starts from; the end's drain starts from it too.
    cpu_sizer: CpuSizer,
}

/// The spans a device's report has room for before the loop: the 2D FFT's row pass
/// ran 3-4 chunks a board and 5-30 on a PE's CPU, CBIR's a few tens; beyond it the
/// report grows as it must.
const SPANS_RESERVED: usize = 32;

/// Checks `options` for a loop of `n` iterations on this job (no collective call).
///
/// Errors: `n == 0`, options out of range, no device, a loop too long for its pool.
pub(crate) fn check(shmem: &Shmem, n: u64, options: &Options) -> Result<Checked> {
    if !(options.cpu_chunk_s.is_finite() && options.cpu_chunk_s > 0.0) {
        return Err(Error::Option(format!(
            "cpu_chunk_s must be finite and > 0, got {}",
            options.cpu_chunk_s
        )));
    }
    let cpu_first_piece_hold_s = first_piece_hold_s(options)?;
    if n == 0 {
        return Err(Error::EmptyLoop);
    }
    let me = shmem.my_pe();
    let topo = shmem.topology();
    let per_node = if options.boards { shmem.fpgas() } else { 0 };
    // The PEs whose CPUs, and the boards, that share one pool.
    let (pes, boards_in_pool) = match options.scope {
        Scope::Job => (
            u64::from(shmem.n_pes()),
            u64::from(topo.nodes) * u64::from(per_node),
        ),
        Scope::Pe => (1, u64::from(per_node)),
    };
    let cpus = if options.cpus { pes } else { 0 };
    let workers = cpus + boards_in_pool;
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
    let max_chunk = match options.max_board_chunk {
        Some(0) => return Err(Error::Option("max_board_chunk must be at least 1".into())),
        Some(max) => max,
        None => u64::MAX,
    };
    // Two different sizes within the limit (a limit of 1 leaves one size: no model).
    let samples = (
        samples.0.min(max_chunk.div_ceil(4)),
        samples.1.min(max_chunk),
    );
    // Every PE also drains its pool once at the end: count it among the takers.
    check_length(n, workers + pes)?;
    let my_boards = match options.scope {
        Scope::Job if me != shmem.node() * topo.pes_per_node => 0,
        _ => per_node,
    };
    Ok(Checked {
        cpu_first_piece_hold_s,
        per_node,
        pes,
        boards_in_pool,
        cpus,
        workers,
        samples,
        max_chunk,
        my_boards,
    })
}

/// Works out what the adaptive drivers of a loop of `n` iterations with `options`
/// (`checked`) start from: the boards' training sizes and modeled transfers, the
/// lines of a trained start (nothing taken, no board touched).
pub(crate) fn prepare_adaptive(
    shmem: &Shmem,
    n: u64,
    options: &Options,
    checked: Checked,
) -> Result<Adaptive> {
    let Checked {
        boards_in_pool,
        cpus,
        workers,
        samples,
        max_chunk,
        my_boards,
        ..
    } = checked;
    let training: SharedTraining = match &options.trained {
        Some(trained) if my_boards > 0 => Arc::new(Mutex::new(NodeFits::trained(trained))),
        _ => SharedTraining::default(),
    };
    let one_driver = shmem.clock() == ClockKind::Virtual;
    let largest = max_chunk.min(n);
    // What a chunk moves, if the model may price it: a profile whose hops all cost
    // nothing (native) prices nothing, and the model is not asked (with 4 boards
    // its eight queries took 2.7-4.5 us of the driver's clock before the node's
    // first chunk, in an FFT pass of about 50 us).
    let bytes_to_price = options
        .board_bytes
        .filter(|_| my_boards > 0 && !shmem.profile().is_free());
    // With priced transfers and no samples given, this node's boards train on the
    // size whose transfers the model prices cheapest beyond their share at the
    // largest chunk (the boards of a node are alike: board 0's route stands for all).
    let board_samples = match (options.samples, bytes_to_price) {
        (None, Some(bytes)) => match cheapest_sample(shmem, bytes, samples.0, largest)? {
            Some(small) if small != samples.0 => {
                let large = samples.1.max(small.saturating_mul(4)).min(max_chunk);
                if large > small {
                    (small, large)
                } else {
                    samples
                }
            }
            _ => samples,
        },
        _ => samples,
    };
    let transfers: Vec<Option<Transfers>> = match bytes_to_price {
        Some(bytes) => (0..my_boards)
            .map(|board| -> Result<Option<Transfers>> {
                let at = |items: u64| modeled_transfers(shmem, board, bytes, items);
                Ok(match (at(board_samples.0)?, at(largest)?) {
                    (Some(small), Some(big)) => Some(Transfers {
                        small: Sample {
                            items: board_samples.0,
                            seconds: small.total_s(),
                        },
                        largest: Sample {
                            items: largest,
                            seconds: big.total_s(),
                        },
                        small_held_s: small.held_s(bytes.inputs_in_background),
                        largest_held_s: big.held_s(bytes.inputs_in_background),
                    }),
                    _ => None,
                })
            })
            .collect::<Result<_>>()?,
        None => vec![None; my_boards as usize],
    };
    // A CPU's first chunk, before its speed is known: FastFit's default small
    // sample, whatever the boards' samples (an application's larger ones, chosen for
    // a measurable kernel slope, would hold a short loop's CPU for its whole length).
    let cpu_first = (n / workers.saturating_mul(64)).min(samples.0).max(1);
    let (me, node) = (shmem.my_pe(), shmem.node());
    let boards = (0..my_boards)
        .map(|board| {
            let device = Device::Board {
                pe: me,
                node,
                board,
            };
            let sizer = BoardSizer::new(
                board_samples,
                options.rho,
                (board, boards_in_pool, cpus),
                one_driver,
                max_chunk,
                n,
                training.clone(),
            )
            .with_transfers(transfers.get(board as usize).copied().flatten())
            .with_node_boards(u64::from(my_boards))
            .with_cpu_first(cpu_first)
            .with_cpu_estimate(options.cpu_item_estimate_s)
            .with_every_board_samples(options.every_board_samples);
            let stopped = stopped_before_the_loop(n, device, &sizer);
            Slot {
                retired: stopped.is_some(),
                report: stopped.unwrap_or_else(|| DeviceReport::with_room(device, SPANS_RESERVED)),
                sizer,
                flight: None,
                queued: None,
            }
        })
        .collect();
    let cpu_report = options
        .cpus
        .then(|| DeviceReport::with_room(Device::Cpu { pe: me }, SPANS_RESERVED));
    let cpu_sizer =
        CpuSizer::new(cpu_first, options.cpu_chunk_s, workers, n).with_boards(BoardsSeen {
            boards: boards_in_pool,
            cpus,
            node_boards: u64::from(my_boards),
            training: training.clone(),
            training_chunk: board_samples.1,
        });
    Ok(Adaptive {
        checked,
        training,
        one_driver,
        boards,
        cpu_report,
        cpu_sizer,
    })
}

/// Runs a loop of `n` iterations with `options` on the adaptive drivers, from what
/// `prepare_adaptive` worked out (see [`run()`]).
pub(crate) fn run_adaptive<B: BoardPath>(
    shmem: &Shmem,
    n: u64,
    options: &Options,
    setup: Adaptive,
    cpu: &CpuPath<'_>,
    boards: &B,
) -> Result<Report> {
    let Adaptive {
        checked:
            Checked {
                cpu_first_piece_hold_s,
                pes,
                workers,
                my_boards,
                ..
            },
        training,
        one_driver,
        boards: slots,
        cpu_report,
        cpu_sizer,
    } = setup;
    let me = shmem.my_pe();
    let takers = workers + pes;
    let pool = match options.scope {
        Scope::Job => WorkPool::new(shmem, n, takers)?,
        Scope::Pe => WorkPool::per_pe(n, takers)?,
    };
    let ctx = Ctx {
        shmem,
        pool: &pool,
        cpu,
        start: shmem.now(),
        cpu_rate: AtomicU64::new(0f64.to_bits()),
        cpu_item_s: AtomicU64::new(0f64.to_bits()),
        cpu_start_s: AtomicU64::new(0f64.to_bits()),
        cpu_first_piece_hold_s,
        cpu_chunk_s: options.cpu_chunk_s,
        cpu_taken: AtomicU64::new(0),
        cpu_typical_s: AtomicU64::new(0f64.to_bits()),
        cpu_progress: CpuProgress::default(),
    };
    // A trained start also knows the CPU path's speed (until this loop measures it).
    let usable = |x: f64| x.is_finite() && x > 0.0;
    if let Some(t) = options.trained.as_ref().filter(|_| my_boards > 0) {
        if usable(t.cpu_rate) {
            ctx.cpu_rate.store(t.cpu_rate.to_bits(), Ordering::Relaxed);
        }
        if usable(t.cpu_item_s) {
            ctx.cpu_item_s
                .store(t.cpu_item_s.to_bits(), Ordering::Relaxed);
        }
        if usable(t.cpu_start_s) {
            ctx.cpu_start_s
                .store(t.cpu_start_s.to_bits(), Ordering::Relaxed);
        }
    }
    let cpu = cpu_report.map(|report| (report, cpu_sizer.clone()));
    let mut devices = if one_driver {
        one_thread(&ctx, cpu, slots, boards)?
    } else {
        threads(&ctx, cpu, slots, boards)?
    };
    // Whatever is left once every PE's devices have stopped (boards failed, say) runs
    // on the CPU paths. A PE leaves the turns before the barrier, or the PEs still
    // taking would wait for its clock.
    pool.stop_turns(shmem)?;
    if options.scope == Scope::Job {
        // The others' devices may still be taking from PE 0's counter. A PE's own
        // pool (`Scope::Pe`) has no taker but this PE's devices, all stopped now.
        shmem.barrier_all()?;
    }
    drain(&ctx, &mut devices, cpu_sizer)?;
    let start = ctx.start;
    let trained = if my_boards > 0 {
        let speed = |a: &AtomicU64| f64::from_bits(a.load(Ordering::Relaxed));
        training
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .learned(CpuLearned {
                rate: speed(&ctx.cpu_rate),
                item_s: speed(&ctx.cpu_item_s),
                start_s: speed(&ctx.cpu_start_s),
            })
    } else {
        None
    };
    pool.free(shmem)?;
    let elapsed_s = shmem.now().saturating_sub(start).as_secs_f64();
    for d in &mut devices {
        d.idle_s = (elapsed_s - d.busy_s).max(0.0);
    }
    Ok(Report {
        pe: me,
        elapsed_s,
        devices,
        planned_round: false,
        trained,
    })
}

/// The communication model's seconds for a board chunk's two transfers.
#[derive(Debug, Clone, Copy)]
struct ChunkTransfers {
    /// Its inputs put into the board.
    put_s: f64,
    /// Its results got back.
    get_s: f64,
}

impl ChunkTransfers {
    fn total_s(&self) -> f64 {
        self.put_s + self.get_s
    }

    /// The seconds that hold the driver's thread (`BoardBytes::inputs_in_background`).
    fn held_s(&self, inputs_in_background: bool) -> f64 {
        match inputs_in_background {
            true => self.get_s,
            false => self.total_s(),
        }
    }
}

/// The communication model's seconds for putting `items` iterations' inputs into
/// board `board` of this PE's node and getting their results back; `None` when the
/// profile models no cost, or the model cannot price that chunk (it does not fit the
/// board: the sizer then goes by measurement alone). Errors: a chunk whose bytes
/// overflow.
fn modeled_transfers(
    shmem: &Shmem,
    board: u32,
    bytes: BoardBytes,
    items: u64,
) -> Result<Option<ChunkTransfers>> {
    let size = |per_item: u64, what: &str| {
        items
            .checked_mul(per_item)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| {
                Error::Option(format!(
                    "board_bytes: {items} iterations of {per_item} bytes {what} overflow"
                ))
            })
    };
    let (to, from) = (
        size(bytes.to_board, "to the board")?,
        size(bytes.from_board, "from the board")?,
    );
    let me = shmem.my_pe();
    let modeled = |op, len: usize| {
        if len == 0 {
            return Some(0.0);
        }
        shmem
            .modeled_route_seconds(op, None, Place::Fpga(board), me, len)
            .ok()
            .flatten()
    };
    Ok(match (modeled(RmaOp::Put, to), modeled(RmaOp::Get, from)) {
        (Some(put_s), Some(get_s)) if items > 0 => Some(ChunkTransfers { put_s, get_s }),
        _ => None,
    })
}

/// The small training sample for board 0 of this PE's node when the model prices its
/// transfers: of `from`, `2 * from`, `4 * from`, ... up to an eighth of `largest`, the
/// size whose modeled transfers cost the least *beyond* what its iterations cost at
/// the largest chunk's rate (the sample's own overhead: on a
/// link with a fixed cost per transfer, a larger sample costs less per iteration and
/// also spreads the kernel's fixed costs, which a one-chunk model would otherwise
/// count per iteration; ties go to the larger). `None` when nothing is priced.
fn cheapest_sample(
    shmem: &Shmem,
    bytes: BoardBytes,
    from: u64,
    largest: u64,
) -> Result<Option<u64>> {
    let Some(at_largest) = modeled_transfers(shmem, 0, bytes, largest)? else {
        return Ok(None);
    };
    let per_item = at_largest.total_s() / largest.max(1) as f64;
    let mut best: Option<(u64, f64)> = None;
    let mut size = from.max(1);
    while size <= largest / 8 {
        if let Some(t) = modeled_transfers(shmem, 0, bytes, size)? {
            let overhead = t.total_s() - size as f64 * per_item;
            if best.is_none_or(|(_, least)| overhead <= least) {
                best = Some((size, overhead));
            }
        }
        let Some(next) = size.checked_mul(2) else {
            break;
        };
        size = next;
    }
    Ok(best.map(|(size, _)| size))
}

/// What every driver needs.
struct Ctx<'a> {
    shmem: &'a Shmem,
    pool: &'a WorkPool,
    cpu: &'a CpuPath<'a>,
    /// The loop's start on the job clock.
    start: std::time::Duration,
    /// This PE's CPU throughput so far (f64 bits, iterations per second), at which
    /// its boards' sizers count every CPU of the job.
    cpu_rate: AtomicU64,
    /// One-thread driver only: the CPU path's own seconds per iteration (its pieces,
    /// without the boards served between them; f64 bits, 0 until known), against
    /// which a board's cost on the same thread is weighed.
    cpu_item_s: AtomicU64,
    /// One-thread driver only: the CPU path's start-up cost in a loop (f64 bits, 0
    /// until known; see `PerItem::start_s`): a trained start's until this loop
    /// measures its own, then what `start_cost_kept` keeps of both.
    cpu_start_s: AtomicU64,
    /// How soon a training sample's DONE must be due for the CPU's first piece to
    /// wait for it (`first_piece_hold_s`).
    cpu_first_piece_hold_s: f64,
    /// `Options::cpu_chunk_s`.
    cpu_chunk_s: f64,
    /// Iterations this PE's CPU path has taken in this loop so far.
    cpu_taken: AtomicU64,
    /// Wall-clock driver only: the CPU path's typical seconds per iteration over its
    /// chunks (f64 bits, 0 until known; `PerItem::typical`), which a board waits for
    /// before it trains (`BoardSizer::want`).
    cpu_typical_s: AtomicU64,
    /// Wall-clock driver only: this PE's CPU loop's progress, bumped when the loop
    /// has published what a board may wait for (`cpu_loop`) and ended once, whatever
    /// ends it (the pool was empty, an error, a panic: `CpuDone`'s drop), or at once
    /// if there is none. A board that waits for the CPU blocks on it
    /// (`CpuProgress::wait_past`).
    cpu_progress: CpuProgress,
}

impl Ctx<'_> {
    /// The CPU path's typical seconds per iteration, if the wall-clock driver's CPU
    /// loop knows it.
    fn cpu_typical(&self) -> Option<f64> {
        let t = f64::from_bits(self.cpu_typical_s.load(Ordering::Acquire));
        (t > 0.0).then_some(t)
    }

    /// Seconds since the loop started, on the job clock.
    fn now_s(&self) -> f64 {
        self.at_s(self.shmem.now())
    }

    /// Instant `t` of the job clock in seconds since the loop started.
    fn at_s(&self, t: std::time::Duration) -> f64 {
        t.saturating_sub(self.start).as_secs_f64()
    }

    /// A board's next take (`None`: the pool is empty, or the board stops taking:
    /// see `BoardSizer::want`).
    fn board_take(&self, sizer: &BoardSizer) -> Result<Option<Chunk>> {
        let cpu_rate = f64::from_bits(self.cpu_rate.load(Ordering::Relaxed));
        let cpu_item_s = f64::from_bits(self.cpu_item_s.load(Ordering::Relaxed));
        let cpu_item_s = (cpu_item_s > 0.0).then_some(cpu_item_s);
        self.pool.take_sized(self.shmem, |handed_out| {
            sizer.want(cpu_rate, cpu_item_s, handed_out)
        })
    }

    /// This PE's CPU's next take, of at most `cap` iterations (`None`: the pool is
    /// empty).
    fn cpu_take(&self, sizer: &mut CpuSizer, cap: u64) -> Result<Option<Chunk>> {
        let chunk = self.pool.take_sized(self.shmem, |handed_out| {
            Some(sizer.want_now(handed_out).min(cap.max(1)))
        })?;
        if let Some(chunk) = &chunk {
            sizer.took(chunk.range.start, self.now_s());
            self.cpu_taken
                .fetch_add(chunk.range.end - chunk.range.start, Ordering::Relaxed);
        }
        Ok(chunk)
    }

    /// Records this PE's CPU throughput for its boards' sizers.
    fn set_cpu_rate(&self, sizer: &CpuSizer) {
        self.cpu_rate
            .store(sizer.rate().to_bits(), Ordering::Relaxed);
    }

    /// Runs iterations `range` on the CPU path.
    fn cpu_call(&self, range: Range<u64>) -> Result<()> {
        (self.cpu)(range.clone()).map_err(|why| Error::Cpu {
            pe: self.shmem.my_pe(),
            first: range.start,
            end: range.end,
            why,
        })
    }

    /// Runs one CPU chunk, asked for at `asked_s`, and records it.
    fn cpu_chunk(&self, range: Range<u64>, asked_s: f64, report: &mut DeviceReport) -> Result<f64> {
        let start_s = self.now_s();
        self.cpu_call(range.clone())?;
        let end_s = self.now_s();
        report.record(Span {
            start_s,
            end_s,
            items: range.end - range.start,
            steps: Some(Steps {
                asked_s,
                board: None,
            }),
        });
        Ok(end_s - start_s)
    }

    /// A board failed on `range`: reruns it on the CPU path and says why the board is
    /// retired.
    fn failover(&self, board: u32, range: Range<u64>, board_error: String) -> Result<String> {
        failover(self.shmem, self.cpu, board, range, board_error)
    }
}

/// The wall-clock driver: this thread runs CPU chunks, one thread of the process's
/// board pool per board (`board_threads`).
fn threads<B: BoardPath>(
    ctx: &Ctx<'_>,
    cpu: Option<(DeviceReport, CpuSizer)>,
    boards: Vec<Slot>,
    path: &B,
) -> Result<Vec<DeviceReport>> {
    let devices_in_order: Vec<Device> = boards.iter().map(|b| b.report.device).collect();
    // Each board's report, in the boards' order: those stopped before the loop now,
    // the others' when their threads end.
    let mut to_drive = Vec::new();
    let reports: Vec<Mutex<Option<Result<DeviceReport>>>> = boards
        .into_iter()
        .enumerate()
        .map(|(i, slot)| {
            let Slot {
                mut report,
                sizer,
                retired,
                ..
            } = slot;
            if retired {
                report.fit = sizer.into_fit();
                Mutex::new(Some(Ok(report)))
            } else {
                to_drive.push((i, report, sizer));
                Mutex::new(None)
            }
        })
        .collect();
    // As many threads as boards to drive (the pool keeps at least one).
    let pool = board_threads::at_least(to_drive.len())?;
    let mut devices = Vec::new();
    let mut first_error = None;
    pool.in_place_scope(|s| {
        for (i, board_report, sizer) in to_drive {
            let report = &reports[i];
            s.spawn(move |_| {
                let r = board_thread(ctx, board_report, path, sizer);
                *report.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
        // Whatever ends the CPU loop (its end, an error, a panic of the CPU path
        // unwinding through here), or if there is none, a board waiting for the CPU
        // waits no longer: the scope waits for the board threads before it passes a
        // panic on.
        let _done = CpuDone(&ctx.cpu_progress);
        if let Some((report, sizer)) = cpu {
            match cpu_loop(ctx, report, sizer) {
                Ok(r) => devices.push(r),
                Err(e) => first_error = Some(e),
            }
        }
    });
    for (&device, report) in devices_in_order.iter().zip(reports) {
        // A board thread that panicked has been passed on by the scope.
        match report.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(r)) => devices.push(r),
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            None => {
                first_error.get_or_insert(Error::Threads(format!(
                    "board {}'s thread ended without a report",
                    board_of(device)
                )));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(devices),
    }
}

/// The report of a board that stops before the loop on the application's estimate
/// of the CPU path (`BoardSizer::stops_on_estimate`), retired, or `None` if it
/// takes part: its driver never stages a chunk on it, and on the wall clock no
/// thread runs for it.
fn stopped_before_the_loop(n: u64, device: Device, sizer: &BoardSizer) -> Option<DeviceReport> {
    if !sizer.stops_on_estimate(n) {
        return None;
    }
    let mut report = DeviceReport::new(device);
    retire_stopped(sizer, &mut report);
    Some(report)
}

/// Retires a board whose sizer stopped it before the pool's end, its report saying
/// why (`BoardSizer::stop_reason`): the CPUs take the rest.
fn retire_stopped(sizer: &BoardSizer, report: &mut DeviceReport) {
    report.stopped = sizer.stop_reason();
    sizer.retire();
}

/// This PE's CPU until the pool is empty.
fn cpu_loop(ctx: &Ctx<'_>, mut report: DeviceReport, mut sizer: CpuSizer) -> Result<DeviceReport> {
    let mut own = PerItem::default();
    loop {
        let asked_s = ctx.now_s();
        let Some(chunk) = ctx.cpu_take(&mut sizer, u64::MAX)? else {
            break;
        };
        let items = chunk.range.end - chunk.range.start;
        let seconds = ctx.cpu_chunk(chunk.range, asked_s, &mut report)?;
        sizer.done(items, seconds, chunk.left);
        ctx.set_cpu_rate(&sizer);
        let known_before = (own.measured(), own.typical().is_some());
        own.add(items, seconds);
        if let Some(t) = own.typical() {
            ctx.cpu_typical_s.store(t.to_bits(), Ordering::Release);
        }
        // A board on its own thread waits for the CPU's first measured chunk (its
        // rate) or its typical time (`BoardSizer::want`): published, they look
        // again. Only then: a wake-up costs a busy host a context switch, and the
        // FFT's CPUs on novo-g run 30-60 chunks a pass beside four boards each.
        if known_before != (own.measured(), own.typical().is_some()) {
            ctx.cpu_progress.bump();
        }
    }
    Ok(report)
}

/// Ends `Ctx::cpu_progress` when dropped.
struct CpuDone<'a>(&'a CpuProgress);

impl Drop for CpuDone<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The longest a board thread waits for the CPU loop's progress before it looks
/// again anyway: every reason a board waits ends with what the CPU loop publishes
/// (its first rate, its typical time) or with its end, which wake it at once, so
/// this bounds only a reason that would not.
const CPU_WAIT_BOUND: std::time::Duration = std::time::Duration::from_millis(10);

/// The number of a board device on its node.
fn board_of(device: Device) -> u32 {
    match device {
        Device::Board { board, .. } => board,
        Device::Cpu { .. } => unreachable!("the board drivers are given boards only"),
    }
}

/// One board on its own thread (wall clock).
fn board_thread<B: BoardPath>(
    ctx: &Ctx<'_>,
    mut report: DeviceReport,
    path: &B,
    mut sizer: BoardSizer,
) -> Result<DeviceReport> {
    let board = board_of(report.device);
    loop {
        // Read before what the CPU loop published (`progress`: why no wake-up is lost).
        let seen = ctx.cpu_progress.seen();
        sizer.set_cpu_typical(ctx.cpu_typical());
        let asked_s = ctx.now_s();
        let Some(chunk) = ctx.board_take(&sizer)? else {
            // Before its first chunk it may wait for the CPU path's typical time
            // (`BoardSizer::want`), until the CPU loop has ended.
            if sizer.waiting() && !ctx.cpu_progress.ended() {
                ctx.cpu_progress.wait_past(seen, CPU_WAIT_BOUND);
                continue;
            }
            break;
        };
        sizer.took(chunk.left);
        let range = chunk.range;
        let start_s = ctx.now_s();
        // The instants between: the kernel started, and its wait returned.
        let (mut staged_s, mut done_s) = (start_s, start_s);
        let ran = path
            .start(board, range.clone())
            .and_then(|run| {
                staged_s = ctx.now_s();
                run.wait().map_err(|e| e.to_string())
            })
            .and_then(|_| {
                done_s = ctx.now_s();
                path.finish(board, range.clone())
            });
        if let Err(why) = ran {
            sizer.retire();
            report.failed = Some(ctx.failover(board, range, why)?);
            break;
        }
        let end_s = ctx.now_s();
        let items = range.end - range.start;
        report.record(Span {
            start_s,
            end_s,
            items,
            // This thread waited for the kernel from its start.
            steps: Some(Steps {
                asked_s,
                board: Some(BoardSteps {
                    staged_s,
                    done_s,
                    served_s: staged_s,
                    fetched_s: end_s,
                }),
            }),
        });
        sizer.done(items, end_s - start_s);
    }
    if sizer.stopped() {
        // Not the pool's end: the CPUs take the rest (the loop's tail).
        retire_stopped(&sizer, &mut report);
    }
    report.fit = sizer.into_fit();
    Ok(report)
}

/// A board chunk in flight (virtual clock).
struct InFlight {
    run: BoardRun,
    range: Range<u64>,
    /// When the driver asked the pool for it.
    asked_s: f64,
    start_s: f64,
    /// The driver's time in `BoardPath::start` (staging).
    staged_s: f64,
}

/// One board a PE drives, made before the loop (`prepare_adaptive`); the
/// one-thread driver keeps its chunks in flight in it.
struct Slot {
    report: DeviceReport,
    sizer: BoardSizer,
    /// The chunk whose DONE comes next.
    flight: Option<InFlight>,
    /// A chunk started behind `flight` on the same board (a lone board's large
    /// training sample: `BoardSizer::queued_sample`). Never set without `flight`:
    /// it becomes `flight` when that one completes, and fails over with it.
    queued: Option<InFlight>,
    retired: bool,
}

impl Slot {
    /// The board's number on its node.
    fn board(&self) -> u32 {
        board_of(self.report.device)
    }

    /// The board failed on chunk `range` (`why`): reruns it on the CPU path and
    /// retires the board (its sizer has given the chunk back already).
    fn retire_failed(&mut self, ctx: &Ctx<'_>, range: Range<u64>, why: String) -> Result<()> {
        self.sizer.retire();
        self.report.failed = Some(ctx.failover(self.board(), range, why)?);
        self.retired = true;
        Ok(())
    }
}

/// The virtual-clock driver: this thread drives the boards and runs CPU chunks.
fn one_thread<B: BoardPath>(
    ctx: &Ctx<'_>,
    mut cpu: Option<(DeviceReport, CpuSizer)>,
    mut slots: Vec<Slot>,
    path: &B,
) -> Result<Vec<DeviceReport>> {
    // The CPU path's own time, for the boards' sizers: a trained start's (the first
    // piece of a loop pays first-use costs: the FFT's first row after a corner turn
    // took 15-28 us where the trained time was 3, so that the CPU ran no second row
    // before the boards' DONE and the boards took the pass's last rows two at a time,
    // a 10 us kernel each) until this loop's later pieces say otherwise.
    let mut cpu_own = PerItem::starting_at(f64::from_bits(ctx.cpu_item_s.load(Ordering::Relaxed)));
    // The CPU path's start-up cost, as a trained start measured it, until its first
    // piece of this loop has paid it: the boards' plans and the CPU's first chunk
    // leave time for it.
    let cpu_start_before = f64::from_bits(ctx.cpu_start_s.load(Ordering::Relaxed));
    // Each taker stops at its first empty take (the pool's overflow argument).
    let mut boards_may_take = !slots.is_empty();
    let mut cpu_may_take = cpu.is_some();
    // Whether the CPU's first chunk ran beside a training sample due within a CPU
    // chunk's time, which only an estimate of its iteration lets it do
    // (`spread_for_plan`).
    let mut beside_short_sample = false;
    loop {
        // The start-up cost still due: none once the CPU has run a piece.
        let cpu_start_due = if cpu_own.measured() {
            0.0
        } else {
            cpu_start_before
        };
        let cpu_now = CpuNow::of(&cpu_own, cpu_start_due, &slots, beside_short_sample);
        serve_boards(ctx, path, &mut slots, &mut boards_may_take, cpu_now)?;
        // A CPU chunk, in pieces with the boards served between them, no longer than
        // the thread is free: a board's DONE waits for the piece it comes in, and
        // its staging is worth more of the thread than the CPU's iterations (else
        // the board would have stopped). Until the earliest DONE in flight the
        // thread has nothing else to do; a CPU iteration that does not fit in that
        // gap waits for the DONE instead. Before its first piece the CPU's time is
        // not known, and the piece holds the thread for as long as it takes: while
        // the boards train, it waits for the samples' DONE instead
        // (`waiting_for_samples`).
        let cap = if !cpu_own.measured() && waiting_for_samples(ctx, &slots) {
            0
        } else {
            cpu_fits(ctx, &slots, cpu_own.per_item(), cpu_start_due)
        };
        let mut cpu_ran = false;
        if let Some((report, sizer)) = cpu.as_mut().filter(|_| cpu_may_take && cap > 0) {
            // A piece's time on the thread is from the end of the boards' service
            // before it (for a chunk's first piece, from before its take) to the end
            // of its iterations: what the thread spends on the CPU path, its take
            // and bookkeeping included. The iterations alone said 2.7 us a row in
            // the FFT where a row of the CPU's one-row chunks took 3.4-3.6, and the
            // deadline plan, counting the CPU at that time, left it rows it ran
            // after the boards had ended.
            let mut from = ctx.now_s();
            let asked_s = from;
            match ctx.cpu_take(sizer, cap)? {
                Some(chunk) => {
                    if !cpu_own.measured() {
                        beside_short_sample = sample_due_within(ctx, &slots, ctx.cpu_chunk_s);
                    }
                    let items = chunk.range.end - chunk.range.start;
                    let start_s = ctx.now_s();
                    let piece = piece_size(items, slots.iter().all(|s| s.retired));
                    let mut at = chunk.range.start;
                    while at < chunk.range.end {
                        let end = at.saturating_add(piece).min(chunk.range.end);
                        ctx.cpu_call(at..end)?;
                        // Known from the first piece on: a board trained before the
                        // CPU's first chunk ends weighs itself against it.
                        cpu_own.add(end - at, ctx.now_s() - from);
                        ctx.cpu_item_s
                            .store(cpu_own.per_item().to_bits(), Ordering::Relaxed);
                        if let Some(start_s) = cpu_own.start_s() {
                            let kept = start_cost_kept(start_s, cpu_start_before);
                            ctx.cpu_start_s.store(kept.to_bits(), Ordering::Relaxed);
                        }
                        at = end;
                        // The start-up cost is paid: none is due.
                        let cpu_now = CpuNow::of(&cpu_own, 0.0, &slots, beside_short_sample);
                        serve_boards(ctx, path, &mut slots, &mut boards_may_take, cpu_now)?;
                        from = ctx.now_s();
                    }
                    let end_s = ctx.now_s();
                    report.record(Span {
                        start_s,
                        end_s,
                        items,
                        steps: Some(Steps {
                            asked_s,
                            board: None,
                        }),
                    });
                    sizer.done(items, end_s - start_s, chunk.left);
                    ctx.set_cpu_rate(sizer);
                    cpu_ran = true;
                }
                None => {
                    cpu_may_take = false;
                    boards_may_take = false;
                }
            }
        }
        if !cpu_ran {
            // Nothing for the CPU: wait for the earliest DONE. Every board that may
            // take has a chunk in flight after `serve_boards`, so none in flight means
            // nothing is left to do here.
            let earliest = slots
                .iter_mut()
                .filter(|s| s.flight.is_some())
                .min_by_key(|s| s.flight.as_ref().and_then(|f| f.run.done_at()));
            match earliest {
                Some(slot) => complete(ctx, path, slot)?,
                None => break,
            }
        }
    }
    let mut devices: Vec<DeviceReport> = cpu.map(|(r, _)| r).into_iter().collect();
    for slot in slots {
        let mut report = slot.report;
        report.fit = slot.sizer.into_fit();
        devices.push(report);
    }
    Ok(devices)
}

/// Whether a training sample of the node is in flight and due within
/// `Ctx::cpu_first_piece_hold_s` ([`first_piece_hold_s`]): the CPU's first piece,
/// whose length is not known, then waits for its DONE, so that the boards' next
/// samples and production chunks are staged first. In CBIR on native at 16 nodes a
/// CPU's first image held the thread for 270 us, while the node's samples took 30 us
/// and two of its four boards idled for their model (with one board, its second
/// sample started 320 us late); the node's stagings, 5 us an image on this thread,
/// then started that late in a loop of 3.3 ms. A sample due later (novo-g's DMA: 3.3
/// ms for CBIR's 24 images) leaves the CPU's first piece, a few iterations, the time
/// to run before it, and the boards' production chunks are then sized knowing the
/// CPU's speed.
fn waiting_for_samples(ctx: &Ctx<'_>, slots: &[Slot]) -> bool {
    sample_due_within(ctx, slots, ctx.cpu_first_piece_hold_s)
}

/// Whether a training sample of the node is in flight and due within `within_s`
/// (or at a time not known).
fn sample_due_within(ctx: &Ctx<'_>, slots: &[Slot], within_s: f64) -> bool {
    let now = ctx.shmem.now();
    slots.iter().any(|s| match &s.flight {
        Some(f) if s.sizer.in_sample() => f
            .run
            .done_at()
            .is_none_or(|done| done.saturating_sub(now).as_secs_f64() < within_s),
        _ => false,
    })
}

/// How soon a training sample's DONE must be due for the CPU's first piece to wait
/// for it: [`CPU_FIRST_PIECE_MARGIN`] times the application's estimate of an
/// iteration, if it gave one, else a CPU chunk's time (`Options::cpu_chunk_s`).
///
/// Without an estimate a first piece may take anything, and only a sample due later
/// than a whole CPU chunk leaves it the time. With one, the 2D FFT's CPU runs beside
/// the large sample of a board that trains alone (64 rows, 42 us; a row's estimate
/// 5.1 us at `--cpu-ns-per-point 5`), where it waited for both samples and then ran
/// 2 of a PE's 256 rows in the row pass: measured in the row pass, it takes 40-50
/// rows there (native, 1 board per node, oracle jobs: the slowest PE's row pass 142
/// us against 166, medians of 25 jobs). With 2 and 4 boards per node the samples
/// (8 and 32 rows, 4 and 16) end too soon, and nothing changes. An estimate that is
/// not finite and > 0 is an error.
fn first_piece_hold_s(options: &Options) -> Result<f64> {
    match options.cpu_item_estimate_s {
        None => Ok(options.cpu_chunk_s),
        Some(t) if t.is_finite() && t > 0.0 => Ok(CPU_FIRST_PIECE_MARGIN * t),
        Some(t) => Err(Error::Option(format!(
            "cpu_item_estimate_s must be finite and > 0, got {t}"
        ))),
    }
}

/// How many CPU iterations of `cpu_item_s` (0: not known yet) fit before the
/// earliest DONE of the boards in flight, after the start-up cost `start_s` still due
/// (`u64::MAX` when no board is in flight, or before the CPU's first piece: the
/// boards may wait for it).
fn cpu_fits(ctx: &Ctx<'_>, slots: &[Slot], cpu_item_s: f64, start_s: f64) -> u64 {
    let now = ctx.shmem.now();
    let earliest = slots
        .iter()
        .filter_map(|s| s.flight.as_ref().and_then(|f| f.run.done_at()))
        .min();
    match earliest {
        Some(done) => {
            iterations_within(done.saturating_sub(now).as_secs_f64(), cpu_item_s, start_s)
        }
        None => u64::MAX,
    }
}

/// Whole iterations of `item_s` seconds that fit in `gap_s` seconds after a start-up
/// cost of `start_s` (`u64::MAX` when `item_s` is not known, 0 or less).
fn iterations_within(gap_s: f64, item_s: f64, start_s: f64) -> u64 {
    if item_s.is_nan() || item_s <= 0.0 {
        return u64::MAX;
    }
    // `as` saturates, and a negative or NaN quotient gives 0.
    ((gap_s - start_s.max(0.0)) / item_s).floor() as u64
}

/// Completes the boards whose DONE has passed and gives every idle board a chunk.
/// `cpu`: the thread's CPU path as the boards' sizers see it.
fn serve_boards<B: BoardPath>(
    ctx: &Ctx<'_>,
    path: &B,
    slots: &mut [Slot],
    may_take: &mut bool,
    cpu: CpuNow,
) -> Result<()> {
    let now = ctx.shmem.now();
    for slot in slots.iter_mut() {
        // A queued chunk's DONE may have passed too.
        while slot
            .flight
            .as_ref()
            .and_then(|f| f.run.done_at())
            .is_some_and(|t| t <= now)
        {
            complete(ctx, path, slot)?;
        }
    }
    for i in 0..slots.len() {
        if !*may_take || slots[i].retired || slots[i].flight.is_some() {
            continue;
        }
        let node = node_now(ctx, slots, i, cpu);
        let slot = &mut slots[i];
        slot.sizer.set_node_now(node);
        slot.sizer.set_cpu_typical(cpu.typical_item_s);
        slot.sizer.set_cpu_spread(cpu.spread);
        let asked_s = ctx.now_s();
        let Some(chunk) = ctx.board_take(&slot.sizer)? else {
            if slot.sizer.waiting() {
                continue;
            }
            if slot.sizer.stopped() {
                // Not the pool's end: this board is dearer than the CPU it shares
                // its thread with.
                retire_stopped(&slot.sizer, &mut slot.report);
                slot.retired = true;
                continue;
            }
            *may_take = false;
            break;
        };
        slot.sizer.took(chunk.left);
        match start_chunk(ctx, path, slot.board(), chunk.range.clone(), asked_s) {
            Ok(flight) => slot.flight = Some(flight),
            Err(why) => {
                slot.sizer.abandoned();
                slot.retire_failed(ctx, chunk.range, why)?;
            }
        }
    }
    if path.keeps_chunks_apart() {
        queue_samples(ctx, path, slots, may_take)?;
    }
    Ok(())
}

/// Stages chunk `range` (asked for at `asked_s`) on `board` and starts its kernel:
/// the chunk in flight, or why the board path failed.
fn start_chunk<B: BoardPath>(
    ctx: &Ctx<'_>,
    path: &B,
    board: u32,
    range: Range<u64>,
    asked_s: f64,
) -> std::result::Result<InFlight, String> {
    let start_s = ctx.now_s();
    let run = path.start(board, range.clone())?;
    Ok(InFlight {
        run,
        range,
        asked_s,
        start_s,
        staged_s: ctx.now_s() - start_s,
    })
}

/// Starts a lone board's large training sample right behind its small one in
/// flight (`BoardSizer::queued_sample`), for a board path that keeps chunks apart.
///
/// Why it is sound: the two chunks are disjoint takes of the pool and the path
/// stages them at places of their own (`BoardPath::keeps_chunks_apart`); the board
/// runs its kernels one after the other (the virtual clock's kernel unit), so the
/// queued one's DONE comes after the first's, and `complete` finishes them in that
/// order. If the queued one cannot start, it fails over at once and the board
/// retires (its first chunk still completes); if the first one fails, the queued
/// one fails over with it, its results never fetched. No chunk is lost or run twice.
fn queue_samples<B: BoardPath>(
    ctx: &Ctx<'_>,
    path: &B,
    slots: &mut [Slot],
    may_take: &mut bool,
) -> Result<()> {
    for slot in slots.iter_mut() {
        if !*may_take || slot.retired || slot.flight.is_none() || slot.queued.is_some() {
            continue;
        }
        let Some(size) = slot.sizer.queued_sample() else {
            continue;
        };
        let asked_s = ctx.now_s();
        let Some(chunk) = ctx.pool.take(ctx.shmem, size)? else {
            // The pool's end: no board takes again (each taker stops at its first
            // empty take).
            *may_take = false;
            break;
        };
        slot.sizer.took_queued(chunk.left);
        match start_chunk(ctx, path, slot.board(), chunk.range.clone(), asked_s) {
            Ok(flight) => slot.queued = Some(flight),
            Err(why) => {
                slot.sizer.abandoned_queued();
                slot.retire_failed(ctx, chunk.range, why)?;
            }
        }
    }
    Ok(())
}

/// The spread of the CPU path's time that the node's next plan goes by (`measured`,
/// [`PerItem::spread`]): none (the plan then takes `plan::DEFAULT_CPU_SPREAD`) until
/// a board of the node has taken a production chunk in this loop, if the CPU's first
/// chunk ran beside a training sample due within a CPU chunk's time
/// (`Options::cpu_chunk_s`; which only an application's estimate of an iteration
/// lets it do: `Options::cpu_item_estimate_s`); the measured one otherwise.
///
/// Such pieces ran beside a short sample, the thread's one other task, their chunks
/// capped to end before its DONE: they spread little (the 2D FFT's rows beside a
/// board's 42 us sample: 0.05) and say nothing of how the CPU's time holds up beside
/// a production chunk, with fetches, stagings and takes between its pieces and the
/// loop's tail in chunks of a row or two. Planned at that spread, the FFT's CPU rows
/// beside the row pass's production chunk took 1.2x the plan's time (2.08 us a row
/// against 1.73) and ran 21-24 us past the board's end (medians of 25 oracle jobs,
/// native, 1 board per node), the board taking one or two short chunks more in half
/// the PE-passes; at the default spread they ended with the board. Beside a long
/// sample (CBIR on novo-g: a 3.3 ms DMA) the CPU's pieces are its production pieces
/// in all but name, and their spread stands, also for its later chunks once that
/// sample is due sooner: at the default one, CBIR on novo-g with 1 board per node
/// put 15-17% of its images on the CPUs where the best split puts 20%, and took
/// 1.02-1.03x the best split's time against 0.98-0.99.
fn spread_for_plan(
    production_started: bool,
    beside_short_sample: bool,
    measured: Option<f64>,
) -> Option<f64> {
    measured.filter(|_| production_started || !beside_short_sample)
}

/// The thread's CPU path, for the boards' sizers (`NodeNow`).
#[derive(Debug, Clone, Copy)]
struct CpuNow {
    /// Its start-up cost still due in this loop (`NodeNow::cpu_start_s`).
    start_s: f64,
    /// Its typical seconds per iteration (`BoardSizer::set_cpu_typical`).
    typical_item_s: Option<f64>,
    /// The spread of its time per iteration (`BoardSizer::set_cpu_spread`).
    spread: Option<f64>,
}

impl CpuNow {
    /// The thread's CPU path measured as `own`, with `start_s` of its start-up cost
    /// still due, for the node's boards `slots` (the spread their plans go by:
    /// `spread_for_plan`, `beside_short_sample` its second argument).
    fn of(own: &PerItem, start_s: f64, slots: &[Slot], beside_short_sample: bool) -> CpuNow {
        CpuNow {
            start_s,
            typical_item_s: own.typical(),
            spread: spread_for_plan(
                slots.iter().any(|s| s.sizer.production()),
                beside_short_sample,
                own.spread(),
            ),
        }
    }
}

/// The node's boards other than `slots[i]`, as its sizer's deadline plan counts
/// them: the idle ones given a chunk after it in this round (the slots after it; the
/// ones before it that are still idle did not take), the busy ones, and the
/// thread's CPU path (`cpu`).
fn node_now(ctx: &Ctx<'_>, slots: &[Slot], i: usize, cpu: CpuNow) -> NodeNow {
    let now_s = ctx.now_s();
    let others = slots
        .iter()
        .enumerate()
        .filter(|&(j, s)| j != i && !s.retired);
    NodeNow {
        queued: others
            .clone()
            .filter(|&(j, s)| j > i && s.flight.is_none())
            .count() as u32,
        busy: others
            .filter_map(|(_, s)| s.flight.as_ref())
            .map(|f| (now_s - f.start_s, f.range.end - f.range.start))
            .collect(),
        cpu_start_s: cpu.start_s,
        cpu_taken: ctx.cpu_taken.load(Ordering::Relaxed),
    }
}

/// Completes a board's chunk in flight: its DONE has passed, or is waited for now.
/// The chunk's time is from staging to DONE plus fetching its results; the wait from
/// DONE until this driver came to it is the service delay the sizer adds to the model.
fn complete<B: BoardPath>(ctx: &Ctx<'_>, path: &B, slot: &mut Slot) -> Result<()> {
    let Some(f) = slot.flight.take() else {
        return Ok(());
    };
    let done_s = f.run.done_at().map(|t| ctx.at_s(t));
    let finish_from = ctx.now_s();
    let mut fetch_from = finish_from;
    let ran = f.run.wait().map_err(|e| e.to_string()).and_then(|_| {
        fetch_from = ctx.now_s();
        path.finish(slot.board(), f.range.clone())
    });
    if let Err(why) = ran {
        slot.sizer.abandoned();
        slot.retire_failed(ctx, f.range, why.clone())?;
        if let Some(q) = slot.queued.take() {
            // Queued behind the failed chunk: its results are not fetched.
            slot.sizer.abandoned();
            let why = format!("queued behind a chunk that failed ({why})");
            let also = ctx.failover(slot.board(), q.range, why)?;
            if let Some(failed) = &mut slot.report.failed {
                failed.push_str("; ");
                failed.push_str(&also);
            }
        }
        return Ok(());
    }
    let now_s = ctx.now_s();
    let end_s = match done_s {
        Some(done_s) if done_s < finish_from => {
            slot.sizer.served(finish_from - done_s);
            done_s + (now_s - finish_from)
        }
        _ => now_s,
    };
    let items = f.range.end - f.range.start;
    slot.report.record(Span {
        start_s: f.start_s,
        end_s,
        items,
        steps: Some(Steps {
            asked_s: f.asked_s,
            board: Some(BoardSteps {
                staged_s: f.start_s + f.staged_s,
                done_s: done_s.unwrap_or(fetch_from),
                served_s: finish_from,
                fetched_s: now_s,
            }),
        }),
    });
    slot.sizer.done(items, end_s - f.start_s);
    // What the chunk cost the driver's thread: staging and fetching the results (not
    // the wait for DONE).
    slot.sizer
        .cost_driver(items, f.staged_s + (now_s - fetch_from), f.staged_s);
    if let Some(mut q) = slot.queued.take() {
        // Its kernel started at this one's DONE, or when its own staging ended if
        // that was later: its time is taken from its staging as if that had begun
        // right before (what it would have taken started alone), so that the
        // sizer's line and the report's kernel step are the kernel's own. Its span
        // then overlaps this one's end (this fetch ran while its kernel did), which
        // the board's busy time counts once (`DeviceReport::record`).
        let staged_end_s = q.start_s + q.staged_s;
        let kernel_from_s = done_s.unwrap_or(fetch_from).max(staged_end_s);
        q.start_s = kernel_from_s - q.staged_s;
        slot.flight = Some(q);
    }
    Ok(())
}

/// The end of the loop on this PE: takes what is left, on the CPU path, recorded as
/// this PE's CPU. Every PE drains once, after every PE's devices have stopped (with
/// `Scope::Job` a barrier; with `Scope::Pe` its own devices, which alone take from its
/// pool), so the pool is empty unless boards failed; those takes are in real-time
/// order.
fn drain(ctx: &Ctx<'_>, devices: &mut Vec<DeviceReport>, mut sizer: CpuSizer) -> Result<()> {
    let pe = ctx.shmem.my_pe();
    loop {
        let asked_s = ctx.now_s();
        let Some(chunk) = ctx.pool.take_unordered(ctx.shmem, sizer.want())? else {
            break;
        };
        let at = match devices.iter().position(|d| d.device == Device::Cpu { pe }) {
            Some(i) => i,
            None => {
                devices.insert(0, DeviceReport::new(Device::Cpu { pe }));
                0
            }
        };
        let items = chunk.range.end - chunk.range.start;
        let seconds = ctx.cpu_chunk(chunk.range, asked_s, &mut devices[at])?;
        sizer.done(items, seconds, chunk.left);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_piece_waits_for_a_sample_due_within_the_margin_over_the_estimate() {
        // No estimate: a sample due within a CPU chunk's time (2 ms) holds it.
        let options = Options::default();
        let hold = first_piece_hold_s(&options).unwrap();
        assert_eq!(hold, options.cpu_chunk_s);
        assert!(42e-6 < hold);
        assert!(3e-3 >= hold);
        // The FFT's row estimate at --cpu-ns-per-point 5 (5.12 us): the large sample
        // due in 42 us leaves the first piece its time, the small one due in 18 us
        // does not.
        let estimated = Options {
            cpu_item_estimate_s: Some(5.12e-6),
            ..Options::default()
        };
        let hold = first_piece_hold_s(&estimated).unwrap();
        assert!((hold - CPU_FIRST_PIECE_MARGIN * 5.12e-6).abs() < 1e-15);
        assert!(42e-6 >= hold);
        assert!(18e-6 < hold);
        // An estimate that says nothing is refused, not taken as "no estimate".
        for bad in [0.0, -1e-6, f64::NAN, f64::INFINITY] {
            let options = Options {
                cpu_item_estimate_s: Some(bad),
                ..Options::default()
            };
            assert!(
                matches!(first_piece_hold_s(&options), Err(Error::Option(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn pieces_beside_a_short_sample_give_the_plan_no_spread_until_production() {
        // Beside a short sample, before production: the default spread (none given).
        assert_eq!(spread_for_plan(false, true, Some(0.05)), None);
        // Once a production chunk is out, the measured one.
        assert_eq!(spread_for_plan(true, true, Some(0.05)), Some(0.05));
        // Beside long samples only (or none): the measured one from the start.
        assert_eq!(spread_for_plan(false, false, Some(0.05)), Some(0.05));
        assert_eq!(spread_for_plan(true, false, None), None);
    }

    #[test]
    fn a_cpu_chunk_before_a_board_done_leaves_time_for_the_start_up_cost() {
        // 36 us to the earliest DONE, rows of 3 us: 12 of them.
        assert_eq!(iterations_within(36e-6, 3e-6, 0.0), 12);
        // A first row that costs 20 us more: 5 rows fit (20 + 5 * 3 = 35).
        assert_eq!(iterations_within(36e-6, 3e-6, 20e-6), 5);
        // A start-up cost longer than the gap: none (the CPU waits for the DONE).
        assert_eq!(iterations_within(36e-6, 3e-6, 40e-6), 0);
        // Before the CPU's time is known it may take (the boards wait for it).
        assert_eq!(iterations_within(36e-6, 0.0, 40e-6), u64::MAX);
        assert_eq!(iterations_within(36e-6, f64::NAN, 0.0), u64::MAX);
    }
}
