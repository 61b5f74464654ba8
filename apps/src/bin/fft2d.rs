//! `fft2d`: the distributed two-dimensional FFT of an N x N complex f32 image, rows
//! distributed over the PEs, row FFTs on the boards or on the CPUs, corner turns in
//! between (see `shmemplus_apps::fft`).
//!
//! ```text
//! shmemrun -n 4 target/release/fft2d --size 1024 --verify
//! shmemrun -n 4 target/release/fft2d --size 4096 --device cpu
//! shmemrun -n 4 --fpgas 1 --clock virtual target/release/fft2d --schedule oracle --verify
//! ```

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde::Serialize;
use shmemplus::{Error, Place};
use shmemplus_apps::board::{cpu_basis, seconds_per_element, BoardSpeed};
use shmemplus_apps::devices::{self, DeviceLine};
use shmemplus_apps::fft::corner_turn::CornerTurn;
use shmemplus_apps::fft::distributed::{self, fft2d_distributed, BoardRows};
use shmemplus_apps::fft::serial::{fft2d, input_row, max_relative_error, RowFft};
use shmemplus_apps::fft::{kernel, Complex32};
use shmemplus_apps::oracle::{self, Trial};
use shmemplus_apps::phases::{ms, Phase, PhaseTimer};
use shmemplus_apps::trained::{self, TrainedFile};
use std::process::ExitCode;

/// The largest error `--verify` accepts, relative to the largest output magnitude.
const TOLERANCE: f64 = 1e-4;

/// How the rows of a pass are shared between the CPUs and the boards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Schedule {
    /// Whole passes on one device (`--device`).
    Static,
    /// FastFit: each PE's CPU and its boards take chunks of its rows at run time
    /// (`shmemplus_cosched`, a loop per PE).
    Fastfit,
    /// Every static split of each PE's rows between its CPU and its boards, 0% to 100%
    /// on the CPU in 10% steps, the split `--split-assume` gives and FastFit, each
    /// `--oracle-rounds` times in shuffled rounds; the best split (lowest median) is
    /// reported in full.
    Oracle,
}

/// Where the row FFTs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Device {
    /// On the CPU of each PE.
    Cpu,
    /// On the boards of each PE's node (the PE's partitions), as a mock kernel.
    Fpga,
}

/// Distributed 2D FFT of an N x N complex f32 image (run it under shmemrun).
///
/// Rows are split in equal blocks over the PEs (N must be a multiple of the number of
/// PEs). Phases: load (generate the input), row FFTs, a corner turn (distributed
/// transpose), column FFTs, a second corner turn; with --device fpga the rows go to the
/// boards, through the kernel and back before each turn; with --slab-rows the FFTs and
/// the turn of a pass are one phase, in slabs of rows. PE 0 prints the
/// time of each phase, the share spent in corner turns, and the speedup over a serial
/// rustfft 2D FFT of the same image on one core. Times are on the job clock: virtual
/// time under SHMEMPLUS_CLOCK=virtual (the CPU path's speed is then the modeled
/// core's: this host's CPU time / the profile's cpu_speed).
#[derive(Debug, Parser)]
#[command(
    name = "fft2d",
    version,
    after_help = "Examples:\n  \
      shmemrun -n 4 target/release/fft2d --verify\n  \
      shmemrun -n 4 target/release/fft2d --size 4096 --device cpu --verify\n  \
      shmemrun --profile novo-g -n 4 target/release/fft2d --size 2048 --verify\n  \
      shmemrun -n 4 --fpgas 2 target/release/fft2d --schedule fastfit --verify\n  \
      shmemrun -n 4 --fpgas 1 --clock virtual target/release/fft2d --schedule oracle --verify"
)]
struct Args {
    /// N: the image is N x N (at most 16384: a 2 GiB image).
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=16384))]
    size: usize,
    /// Where the row and column FFTs run (with --schedule static).
    #[arg(long, value_enum, default_value_t = Device::Fpga)]
    device: Device,
    /// static: each pass on --device; fastfit: each PE's rows shared at run time
    /// between its CPU and its boards (FastFit's model sizes the boards' chunks);
    /// oracle: every static CPU/board split of the rows in 10% steps, the assumed
    /// split and FastFit, each --oracle-rounds times, and the best split reported.
    #[arg(long, value_enum, default_value_t = Schedule::Static)]
    schedule: Schedule,
    /// With --schedule oracle: the speed ratio (board / CPU core) the static split it
    /// compares with assumes, to try a wrong guess. Each PE puts 1 / (1 + B S / P) of
    /// its rows on its CPU (B boards and P PEs per node). Default: --board-speedup.
    #[arg(long, value_name = "S")]
    split_assume: Option<f64>,
    /// With --schedule oracle: how many times it runs each of its configurations
    /// (every split, the assumed split, and FastFit followed by FastFit trained), in
    /// rounds of a shuffled order (a new order each round, the same on every PE, from
    /// --seed); each time it reports is the median of that configuration's runs.
    /// Runs late in a job came out faster than early ones, so a fixed order favours
    /// what runs last. Default 5.
    #[arg(long, value_name = "R",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=oracle::MAX_ROUNDS as u64))]
    oracle_rounds: Option<usize>,
    /// Seed of the input image.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many times faster than one CPU core a board computes FFTs (the kernel's
    /// RATSS time is set from this and the CPU path's measured speed).
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    board_speedup: f64,
    /// Fix the CPU path's speed (ns per point of a row FFT) instead of measuring it.
    #[arg(long, value_name = "NS")]
    cpu_ns_per_point: Option<f64>,
    /// Compare the result with the serial 2D FFT (max error relative to the largest
    /// magnitude <= 1e-4); prints "verified".
    #[arg(long)]
    verify: bool,
    /// Skip the serial baseline (and so the speedup line); not with --verify.
    #[arg(long, conflicts_with = "verify")]
    no_baseline: bool,
    /// Run each CPU pass as one phase in slabs of ROWS rows: a slab's row FFTs, then
    /// its corner turn (non-blocking puts) while it is in the cache; a PE starts
    /// turning without waiting for the others. The report then takes the turns' share
    /// from PE 0's clock. By default a pass is two phases, FFTs then turn, a barrier
    /// between them: measured faster on 2 cores (the shm conduit's put is a copy, so
    /// nothing overlaps but the PEs' skew, and smaller slabs mean more puts).
    #[arg(long, value_name = "ROWS",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    slab_rows: Option<usize>,
    /// Print the report as one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// With --schedule fastfit (or oracle: its FastFit run of median time): write every
    /// device's chunks of both passes to this file (a timeline, JSON: seconds since
    /// the row pass's loop started, the column pass's chunks after the corner turn),
    /// for `shmemplus cosched-plot FILE -o throughput.png`.
    #[arg(long, value_name = "FILE")]
    devices: Option<std::path::PathBuf>,
    /// With --schedule fastfit: the boards start the row pass from the lines
    /// (FastFit's model, the driver's cost, the CPU's speed) in this file, if it
    /// exists, instead of training; after the run PE 0 writes what its boards knew at
    /// the column pass's end to it (JSON), with the setting they were learned in
    /// (size, board speed, profile, clock, PEs, boards per node): a run of another
    /// setting refuses the file. Every PE reads the file: on several hosts, each
    /// needs its copy.
    #[arg(long, value_name = "FILE")]
    trained: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    n: usize,
    n_pes: u32,
    nodes: u32,
    boards_per_node: u32,
    profile: String,
    /// The job clock every time of the report is on: `wall` or `virtual`.
    clock: &'static str,
    device: Device,
    schedule: Schedule,
    /// With FastFit (and the oracle's FastFit run): rows PE 0's CPU and boards
    /// transformed, both passes.
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_rows: Option<FastfitRows>,
    /// With FastFit (and the oracle's FastFit run): the speed ratio, board / CPU core
    /// per row, that its devices measured (`shmemplus_cosched::speed_ratio`): what
    /// `--split-assume` stands for. It differs from `--board-speedup` when the CPU
    /// path does not run at the speed the boards' time was set from.
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_speed_ratio: Option<f64>,
    /// With FastFit and --trained: whether the boards started from the file's lines,
    /// and whether this run's were written to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    trained: Option<TrainedFile>,
    /// With FastFit: what each device did, both passes (the text report's table).
    #[serde(skip)]
    devices: Vec<DeviceLine>,
    /// With the oracle: every static split's `parallel_s` and `passes_s`, each the
    /// median of its runs (the report's other figures are the best split's median
    /// run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sweep: Vec<SplitTime>,
    /// With the oracle: the speed ratio its static split assumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    split_assume: Option<f64>,
    /// With the oracle: that static split's `parallel_s` (the median of its runs, as
    /// every oracle time).
    #[serde(skip_serializing_if = "Option::is_none")]
    static_s: Option<f64>,
    /// With the oracle: FastFit's `parallel_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_s: Option<f64>,
    /// With the oracle: the static split's row and column passes, without the
    /// corner turns (the work a schedule shares; the turns are the same under all).
    #[serde(skip_serializing_if = "Option::is_none")]
    static_passes_s: Option<f64>,
    /// With the oracle: FastFit's passes, as `static_passes_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_passes_s: Option<f64>,
    /// With the oracle: FastFit started from the lines its timed run learned (as
    /// `--trained` would start it), `parallel_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_trained_s: Option<f64>,
    /// With the oracle: that trained run's passes, as `static_passes_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_trained_passes_s: Option<f64>,
    board_speedup: Option<f64>,
    cpu_ns_per_point: Option<f64>,
    /// What the CPU path's speed stands for (this host's core, or the modeled core).
    cpu_basis: Option<String>,
    kernel_modeled_s: f64,
    kernel_done_after_s: f64,
    phases: Vec<Phase>,
    parallel_s: f64,
    /// The corner turns' seconds: their phase, or with slabs PE 0's own time inside
    /// the turns of the passes.
    turn_s: f64,
    /// `turn_s / parallel_s`.
    corner_turn_share: f64,
    /// Whether the turns ran inside the passes (slabs) rather than as phases.
    turns_in_passes: bool,
    serial_s: Option<f64>,
    speedup: Option<f64>,
    max_relative_error: Option<f64>,
    verified: Option<bool>,
}

/// One static split the oracle tried.
#[derive(Debug, Clone, Serialize)]
struct SplitTime {
    /// The share of each PE's rows on its CPU (0 to 1, in steps of 0.1; rounded to
    /// whole rows).
    cpu_share: f64,
    /// Its time, all phases after load (the median of its runs).
    parallel_s: f64,
    /// Its row and column passes alone, without the corner turns (the median of its
    /// runs' passes).
    passes_s: f64,
}

/// Where PE 0's rows went under FastFit, both passes.
#[derive(Debug, Clone, Copy, Serialize)]
struct FastfitRows {
    cpu: u64,
    boards: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            shmemplus::stderr_line(format_args!("fft2d: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

/// Without an explicit `SHMEM_SYMMETRIC_SIZE`, makes the CPU heap big enough for this
/// size (every PE computes the same value from the same job size).
fn size_the_heap(n: usize) {
    if std::env::var_os("SHMEM_SYMMETRIC_SIZE").is_some() {
        return;
    }
    let pes = std::env::var(shmemplus::launch::ENV_N_PES)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    // The corner turn's send and receive objects, R x N elements each.
    let need = (n / pes)
        .saturating_mul(n)
        .saturating_mul(size_of::<Complex32>())
        .saturating_mul(2);
    let with_room = need.saturating_add(64 << 20).div_ceil(1 << 20);
    if with_room > 128 {
        // Before init, while this process has one thread.
        std::env::set_var("SHMEM_SYMMETRIC_SIZE", format!("{with_room}M"));
    }
}

/// A vector of `len` zeros, or an error that says how much memory was asked for.
fn zeros(len: usize, what: &str) -> Result<Vec<Complex32>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        anyhow::anyhow!(
            "cannot allocate {what} ({:.1} GiB): use a smaller --size or more PEs",
            (len * size_of::<Complex32>()) as f64 / (1u64 << 30) as f64
        )
    })?;
    v.resize(len, Complex32::new(0.0, 0.0));
    Ok(v)
}

fn run(args: &Args) -> Result<()> {
    let n = args.size;
    size_the_heap(n);
    let shmem = shmemplus::init()?;
    let (me, p, topo) = (shmem.my_pe(), shmem.n_pes() as usize, shmem.topology());
    if n % p != 0 {
        bail!("--size {n} is not a multiple of the {p} PEs: rows are split in equal blocks");
    }
    let r = n / p;
    let mut fft = RowFft::new(n);
    let mut ct = CornerTurn::new(&shmem, n)?;
    let boards = shmem.fpgas();

    // With boards: this PE's rows split over its partitions of the node's boards.
    let mut on_boards: Vec<BoardRows> = Vec::new();
    let mut speed = None;
    let mut basis = None;
    // FastFit and the oracle share rows between the CPU and the boards at will.
    let shared = args.schedule != Schedule::Static;
    let schedule_flag = match args.schedule {
        Schedule::Oracle => "--schedule oracle",
        _ => "--schedule fastfit",
    };
    if shared && args.device == Device::Cpu {
        bail!(
            "{schedule_flag} shares rows between the CPUs and the boards: leave --device at fpga"
        );
    }
    if args.devices.is_some() && args.schedule == Schedule::Static {
        bail!("--devices applies to --schedule fastfit or oracle");
    }
    if args.trained.is_some() && args.schedule != Schedule::Fastfit {
        bail!("--trained applies to --schedule fastfit");
    }
    // An earlier run's lines (every PE reads the file, before any board object).
    let setting = trained::Setting::of_job(
        &shmem,
        "fft2d",
        format!("{n} x {n}, boards {}x a CPU core", args.board_speedup),
    );
    let lines = match &args.trained {
        Some(path) => trained::read(path, &setting)?,
        None => None,
    };
    if args.oracle_rounds.is_some() && args.schedule != Schedule::Oracle {
        bail!("--oracle-rounds applies to --schedule oracle");
    }
    if let Some(s) = args.split_assume {
        if args.schedule != Schedule::Oracle {
            bail!("--split-assume sets the static split the oracle compares with: use it with --schedule oracle");
        }
        if !(s.is_finite() && s > 0.0) {
            bail!("--split-assume {s}: a speed ratio must be a positive number");
        }
    }
    if args.device == Device::Fpga {
        if boards == 0 {
            return Err(Error::NoBoards).context(if shared {
                format!("{schedule_flag} needs boards: use --device cpu or shmemrun --fpgas N")
            } else {
                "--device fpga needs boards: use --device cpu or shmemrun --fpgas N".to_string()
            });
        }
        // Static: this PE's rows split over its boards. FastFit and the oracle: each
        // board's object can hold all of them (a chunk is at most that).
        let per = if shared {
            r
        } else {
            r.div_ceil(boards as usize)
        };
        let mut first = 0;
        for board in 0..boards {
            // Shared: every board may take any of the rows (`first` is unused).
            let count = if shared { r } else { per.min(r - first) };
            let obj = shmem.alloc::<Complex32>(per * n, Place::Fpga(board))?;
            // Written once now, so that the first pass does not pay for the board
            // memory's first touch (as the corner turn's objects are).
            let zeros = vec![Complex32::default(); (per * n).clamp(1, 1 << 17)];
            for at in (0..per * n).step_by(zeros.len()) {
                let k = zeros.len().min(per * n - at);
                shmem.put_nbi(&obj, at, &zeros[..k], me)?;
            }
            shmem.quiet()?;
            on_boards.push(BoardRows {
                board,
                first,
                count,
                obj,
            });
            if !shared {
                first += count;
            }
        }
        let cpu_s = match args.cpu_ns_per_point {
            Some(ns) => {
                basis = Some("given".to_string());
                ns * 1e-9
            }
            None => {
                basis = Some(cpu_basis(&shmem));
                calibrate(&shmem, &mut fft, args.seed)?
            }
        };
        let s = BoardSpeed {
            cpu_seconds_per_element: cpu_s,
            speedup: args.board_speedup,
        };
        let timing = s
            .timing(kernel::pipeline_latency_cycles(n), kernel::ops_per_point(n))
            .map_err(anyhow::Error::msg)
            .context("--cpu-ns-per-point / --board-speedup")?;
        for b in 0..boards {
            shmem.fpga_configure(b, kernel::bitfile(&fft, timing))?;
        }
        speed = Some(s);
    }

    // The serial baseline (and the reference the results are checked against) on PE
    // 0, before the distributed runs: the oracle checks each of its runs.
    let mut reference = None;
    let mut serial_s = None;
    if me == 0 && !args.no_baseline {
        let mut data = zeros(n * n, "the serial baseline's input")?;
        for (i, row) in data.chunks_exact_mut(n).enumerate() {
            input_row(args.seed, n, i, row);
        }
        // Written (so touched) before the clock starts, as the distributed run's
        // buffers are.
        let mut scratch = zeros(n * n, "the serial baseline's scratch")?;
        let t = shmem.now();
        fft2d(&mut fft, &mut data, &mut scratch);
        serial_s = Some(shmem.now().saturating_sub(t).as_secs_f64());
        reference = args.verify.then_some(data);
    }
    let mut check = Check {
        verify: args.verify,
        reference,
        result: Vec::new(),
        max_error: None,
    };

    let mut job = Job {
        shmem: &shmem,
        seed: args.seed,
        fft: &mut fft,
        ct: &mut ct,
        rows: zeros(r * n, "this PE's rows")?,
        cpu_row_s: speed
            .as_ref()
            .map(|s: &BoardSpeed| s.cpu_seconds_per_element * n as f64),
    };
    let device = match args.device {
        Device::Cpu => distributed::Device::Cpu {
            slab_rows: args.slab_rows,
        },
        Device::Fpga if shared => distributed::Device::Fastfit {
            boards: &on_boards,
            trained: lines.as_ref(),
            cpu_row_s: job.cpu_row_s,
        },
        Device::Fpga => distributed::Device::Boards(&on_boards),
    };
    let mut oracle = None;
    let mut oracle_ff_devices = None;
    let best = if args.schedule == Schedule::Oracle {
        let mut o = sweep(&mut job, &on_boards, &mut check, args, topo.pes_per_node)?;
        let best = o.best;
        oracle_ff_devices = Some(std::mem::take(&mut o.fastfit.devices));
        oracle = Some((o.sweep, o.split_assume, o.fixed, o.fastfit));
        best
    } else {
        let run = job.run(&device)?;
        check.result_of(&job, &run.outcome)?;
        run
    };
    let Job { rows, .. } = job;
    drop(rows);
    for b in on_boards {
        shmem.free(b.obj)?;
    }
    ct.free(&shmem)?;

    let (parallel_s, timer, mut outcome) = (best.parallel_s, best.timer, best.outcome);
    // The turns' phase when they have one; otherwise PE 0's clock inside the passes.
    let turns_in_passes = timer.seconds(distributed::TURNS) == 0.0;
    let turn_s = if turns_in_passes {
        outcome.turn_s
    } else {
        timer.seconds(distributed::TURNS)
    };
    if me == 0 {
        let (sweep, split_assume, static_s, fastfit) = match oracle {
            Some((sweep, assume, static_s, fastfit)) => {
                (sweep, Some(assume), Some(static_s), Some(fastfit))
            }
            None => (Vec::new(), None, None, None),
        };
        // FastFit's devices: this run's, or the oracle's FastFit run's.
        let mut ff_devices = match &mut oracle_ff_devices {
            Some(d) => std::mem::take(d),
            None => std::mem::take(&mut outcome.devices),
        };
        devices::sort(&mut ff_devices);
        if let Some(path) = &args.devices {
            let title = format!(
                "fft2d fastfit: {n} x {n}, {} PEs, {boards} board(s) per node, profile {}",
                topo.n_pes,
                shmem.profile().name
            );
            devices::write_timeline(path, title, &shmem, ff_devices.clone())?;
        }
        let trained_file = match &args.trained {
            Some(path) => Some(trained::write(
                path,
                &setting,
                lines.is_some(),
                outcome.trained.as_ref(),
            )?),
            None => None,
        };
        let fastfit_rows = match (&fastfit, args.schedule) {
            (Some(f), _) => Some(f.rows),
            (None, Schedule::Fastfit) => Some(FastfitRows {
                cpu: outcome.cpu_rows,
                boards: outcome.board_rows,
            }),
            _ => None,
        };
        let report = Report {
            n,
            n_pes: topo.n_pes,
            nodes: topo.nodes,
            boards_per_node: boards,
            profile: shmem.profile().name.clone(),
            clock: shmem.clock().name(),
            device: args.device,
            schedule: args.schedule,
            fastfit_rows,
            fastfit_speed_ratio: shmemplus_cosched::speed_ratio(&ff_devices),
            trained: trained_file,
            devices: if args.schedule == Schedule::Fastfit {
                ff_devices.iter().map(DeviceLine::of).collect()
            } else {
                Vec::new()
            },
            sweep,
            split_assume,
            static_s: static_s.map(|s| s.parallel_s),
            fastfit_s: fastfit.as_ref().map(|f| f.times.parallel_s),
            static_passes_s: static_s.map(|s| s.passes_s),
            fastfit_passes_s: fastfit.as_ref().map(|f| f.times.passes_s),
            fastfit_trained_s: fastfit.as_ref().map(|f| f.trained.parallel_s),
            fastfit_trained_passes_s: fastfit.as_ref().map(|f| f.trained.passes_s),
            board_speedup: speed.map(|s| s.speedup),
            cpu_ns_per_point: speed.map(|s| s.cpu_seconds_per_element * 1e9),
            cpu_basis: basis,
            kernel_modeled_s: outcome.kernel_modeled_s,
            kernel_done_after_s: outcome.kernel_done_after_s,
            phases: timer.phases().to_vec(),
            parallel_s,
            turn_s,
            corner_turn_share: if parallel_s > 0.0 {
                turn_s / parallel_s
            } else {
                0.0
            },
            turns_in_passes,
            serial_s,
            speedup: serial_s
                .filter(|_| parallel_s > 0.0)
                .map(|s| s / parallel_s),
            max_relative_error: check.max_error,
            verified: check.max_error.map(|e| e <= TOLERANCE),
        };
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{}", text(&report));
        }
        if let Some(ok) = report.verified {
            if !ok {
                shmem.finalize()?;
                bail!(
                    "verification failed: max relative error {:e} > {TOLERANCE:e}",
                    report.max_relative_error.unwrap_or(f64::NAN)
                );
            }
            if !args.json {
                println!("verified");
            }
        }
    }
    shmem.finalize()?;
    Ok(())
}

/// What a distributed run needs, kept from run to run (the oracle runs many).
struct Job<'a> {
    shmem: &'a shmemplus::Shmem,
    seed: u64,
    fft: &'a mut RowFft,
    ct: &'a mut CornerTurn,
    /// This PE's rows: the input, regenerated by each run's "load" phase.
    rows: Vec<Complex32>,
    /// The CPU path's seconds per row as the run assumes it (`--cpu-ns-per-point`
    /// or its calibration, from which the boards' timing was set), if boards run:
    /// FastFit's estimate of a CPU row before it measures one.
    cpu_row_s: Option<f64>,
}

/// One distributed run, as this PE saw it.
struct Run {
    timer: PhaseTimer,
    outcome: distributed::Outcome,
    /// All phases after load.
    parallel_s: f64,
}

impl Run {
    /// The row and column passes alone: the phases of a shared or static pass,
    /// without the corner turns.
    fn passes_s(&self) -> f64 {
        self.timer.seconds(distributed::ROW_FFTS) + self.timer.seconds(distributed::COLUMN_FFTS)
    }

    /// Its time and its passes' alone.
    fn times(&self) -> RunTimes {
        RunTimes {
            parallel_s: self.parallel_s,
            passes_s: self.passes_s(),
        }
    }
}

/// A run's time (all phases after load) and its passes' alone (`Run::passes_s`).
#[derive(Debug, Clone, Copy)]
struct RunTimes {
    parallel_s: f64,
    passes_s: f64,
}

impl Job<'_> {
    /// Loads this PE's rows and runs the distributed 2D FFT on `device` (collective).
    fn run(&mut self, device: &distributed::Device<'_>) -> Result<Run> {
        let (me, n) = (self.shmem.my_pe() as usize, self.ct.n());
        let r = self.ct.rows_per_pe();
        let mut timer = PhaseTimer::new(self.shmem);
        let (rows, seed) = (&mut self.rows, self.seed);
        timer.run("load", || -> Result<()> {
            for (i, row) in rows.chunks_exact_mut(n).enumerate() {
                input_row(seed, n, me * r + i, row);
            }
            Ok(())
        })?;
        let outcome = fft2d_distributed(
            self.shmem,
            self.fft,
            self.ct,
            &mut self.rows,
            device,
            &mut timer,
        )?;
        let parallel_s = timer.total() - timer.seconds("load");
        Ok(Run {
            timer,
            outcome,
            parallel_s,
        })
    }
}

/// `--verify`: each checked run's result gathered into PE 0 and compared with the
/// serial reference; the largest error over the runs.
struct Check {
    /// `--verify`: the same on every PE.
    verify: bool,
    /// The serial 2D FFT (PE 0, with `--verify`).
    reference: Option<Vec<Complex32>>,
    /// The gathered result (PE 0; allocated on first use).
    result: Vec<Complex32>,
    max_error: Option<f64>,
}

impl Check {
    /// Checks the result of the run that ended with `outcome` (collective; nothing
    /// without `--verify`).
    fn result_of(&mut self, job: &Job<'_>, outcome: &distributed::Outcome) -> Result<()> {
        if !self.verify {
            return Ok(());
        }
        let (shmem, n, r) = (job.shmem, job.ct.n(), job.ct.rows_per_pe());
        shmem.barrier_all()?;
        if let Some(reference) = &self.reference {
            if self.result.len() != reference.len() {
                self.result = zeros(n * n, "the gathered result")?;
            }
            for (pe, dst) in self.result.chunks_exact_mut(r * n).enumerate() {
                shmem.get(job.ct.object(outcome.result), 0, dst, pe as u32)?;
            }
            let e = max_relative_error(&self.result, reference);
            self.max_error = Some(self.max_error.map_or(e, |m| m.max(e)));
        }
        shmem.barrier_all()?;
        Ok(())
    }
}

/// What the oracle measured.
struct Oracle {
    best: Run,
    sweep: Vec<SplitTime>,
    /// The speed ratio of its static split, and that split's times.
    split_assume: f64,
    fixed: RunTimes,
    fastfit: FastfitRun,
}

/// FastFit's run in the oracle.
struct FastfitRun {
    times: RunTimes,
    /// The run after it, started from the lines it learned.
    trained: RunTimes,
    rows: FastfitRows,
    /// Its devices (PE 0).
    devices: Vec<shmemplus_cosched::DeviceReport>,
}

/// The run of median time of `runs` (see `oracle::median_by`), and the median of
/// their passes taken alone (which may be another run's).
fn median_run(runs: Vec<Run>) -> Result<(Run, RunTimes)> {
    let passes_s = oracle::upper_median(runs.iter().map(Run::passes_s).collect());
    let run = oracle::median_by(runs, |r| r.parallel_s)
        .ok_or_else(|| anyhow::anyhow!("the oracle has no run of a configuration"))?;
    let times = RunTimes {
        parallel_s: run.parallel_s,
        passes_s,
    };
    Ok((run, times))
}

/// The medians of `times`, each taken alone.
fn median_times(times: &[RunTimes]) -> RunTimes {
    RunTimes {
        parallel_s: oracle::upper_median(times.iter().map(|t| t.parallel_s).collect()),
        passes_s: oracle::upper_median(times.iter().map(|t| t.passes_s).collect()),
    }
}

/// `--schedule oracle`: every static split of each PE's rows (0%, 10%, ..., 100% on
/// its CPU), the split that `--split-assume` gives, and FastFit followed by FastFit
/// started from the lines that run learned (each PE its own, as `--trained` starts
/// it: no training in either pass), `rounds` times each, every run checked with
/// `--verify`. Each round runs them in its own random order (the same on every PE:
/// the runs are collective), so that no configuration always runs early or late in
/// the job (measured with a fixed order and 2 warm-ups, 4 boards per node on native:
/// the assumed split, run after the sweep, took 0.86x the sweep's run of the very
/// same split, its passes 1.01x: the corner turns speed up over a job). The first
/// split runs twice more before it counts, and FastFit once, so that every run is
/// timed warm (its buffers' pages touched). Every reported time is the median of its
/// configuration's runs; the best split is the one of lowest median, reported in
/// full by its median run.
fn sweep(
    job: &mut Job<'_>,
    on_boards: &[BoardRows],
    check: &mut Check,
    args: &Args,
    pes_per_node: u32,
) -> Result<Oracle> {
    let r = job.ct.rows_per_pe();
    let rounds = args.oracle_rounds.unwrap_or(oracle::DEFAULT_ROUNDS);
    let trials = oracle::trials();
    let split = |cpu_rows: usize| distributed::Device::Split {
        boards: on_boards,
        cpu_rows,
    };
    let fastfit = distributed::Device::Fastfit {
        boards: on_boards,
        trained: None,
        cpu_row_s: job.cpu_row_s,
    };
    const WARM_UPS: usize = 2;
    for _ in 0..WARM_UPS {
        job.run(&split(0))?;
    }
    job.run(&fastfit)?;
    // A PE's CPU weighs 1 and its partitions of the node's B boards S B / P.
    let assume = args.split_assume.unwrap_or(args.board_speedup);
    let boards = on_boards.len() as f64;
    let share = 1.0 / (1.0 + assume * boards / f64::from(pes_per_node.max(1)));
    let assumed_rows = ((r as f64 * share).round() as usize).min(r);
    let mut splits: Vec<Vec<Run>> = (0..=10).map(|_| Vec::new()).collect();
    let (mut fixed, mut fastfits, mut trained) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for trial in oracle::round_order(&trials, args.seed, round) {
            match trial {
                Trial::Split(step) => {
                    let step = step as usize;
                    // Rounded to whole rows.
                    let run = job.run(&split((r * step + 5) / 10))?;
                    check.result_of(job, &run.outcome)?;
                    if let Some(runs) = splits.get_mut(step) {
                        runs.push(run);
                    }
                }
                Trial::Assumed => {
                    let run = job.run(&split(assumed_rows))?;
                    check.result_of(job, &run.outcome)?;
                    fixed.push(run.times());
                }
                Trial::Fastfit => {
                    let ff = job.run(&fastfit)?;
                    check.result_of(job, &ff.outcome)?;
                    let learned = ff.outcome.trained.clone();
                    let run = job.run(&distributed::Device::Fastfit {
                        boards: on_boards,
                        trained: learned.as_ref(),
                        cpu_row_s: job.cpu_row_s,
                    })?;
                    check.result_of(job, &run.outcome)?;
                    trained.push(run.times());
                    fastfits.push(ff);
                }
            }
        }
    }
    let mut sweep = Vec::new();
    let mut best: Option<Run> = None;
    for (step, runs) in splits.into_iter().enumerate() {
        let (run, times) = median_run(runs)?;
        sweep.push(SplitTime {
            cpu_share: step as f64 / 10.0,
            parallel_s: times.parallel_s,
            passes_s: times.passes_s,
        });
        if best.as_ref().is_none_or(|b| run.parallel_s < b.parallel_s) {
            best = Some(run);
        }
    }
    let best = best.ok_or_else(|| anyhow::anyhow!("the oracle ran no split"))?;
    let (ff, ff_times) = median_run(fastfits)?;
    Ok(Oracle {
        best,
        sweep,
        split_assume: assume,
        fixed: median_times(&fixed),
        fastfit: FastfitRun {
            times: ff_times,
            trained: median_times(&trained),
            rows: FastfitRows {
                cpu: ff.outcome.cpu_rows,
                boards: ff.outcome.board_rows,
            },
            devices: ff.outcome.devices,
        },
    })
}

/// The CPU path's seconds per point, measured on PE 0 on a few rows and shared with
/// every PE (collective).
fn calibrate(shmem: &shmemplus::Shmem, fft: &mut RowFft, seed: u64) -> Result<f64> {
    let n = fft.len();
    let speed = shmem.alloc::<f64>(1, Place::Cpu)?;
    if shmem.my_pe() == 0 {
        // At least 64 Ki points, at most 16 rows' worth of the real size.
        let rows = (65536 / n).clamp(1, 16);
        let mut sample = vec![Complex32::default(); rows * n];
        for (i, row) in sample.chunks_exact_mut(n).enumerate() {
            input_row(seed, n, i, row);
        }
        let mut work = sample.clone();
        let s = seconds_per_element(shmem, (rows * n) as u64, 3, || {
            work.copy_from_slice(&sample);
            fft.rows(&mut work);
        });
        for pe in 0..shmem.n_pes() {
            shmem.put(&speed, 0, &[s], pe)?;
        }
    }
    shmem.barrier_all()?;
    let s = shmem.local_read_one(&speed, 0)?;
    shmem.free(speed)?;
    Ok(s)
}

/// `x / of`, or NaN when `of` is no time.
fn ratio(x: f64, of: f64) -> f64 {
    if of > 0.0 {
        x / of
    } else {
        f64::NAN
    }
}

fn text(r: &Report) -> String {
    let mut s = String::new();
    let mut line = |l: String| {
        s.push_str(&l);
        s.push('\n');
    };
    let mib = (r.n * r.n * size_of::<Complex32>()) as f64 / (1u64 << 20) as f64;
    line(format!(
        "fft2d: {n} x {n} complex f32 ({mib:.1} MiB), {} PEs on {} nodes, device {}, profile {}, clock {}",
        r.n_pes,
        r.nodes,
        match (r.schedule, r.device) {
            (Schedule::Fastfit, _) => format!(
                "cpu + fpga, FastFit ({} board(s) per node)",
                r.boards_per_node
            ),
            (Schedule::Oracle, _) => format!(
                "cpu + fpga, oracle: the best static split ({} board(s) per node)",
                r.boards_per_node
            ),
            (_, Device::Cpu) => "cpu".to_string(),
            (_, Device::Fpga) => format!("fpga ({} board(s) per node)", r.boards_per_node),
        },
        r.profile,
        r.clock,
        n = r.n,
    ));
    if let (Some(sp), Some(ns)) = (r.board_speedup, r.cpu_ns_per_point) {
        line(format!(
            "board kernel (RATSS): boards {sp}x a CPU core at {ns:.3} ns/point ({}); modeled {} ms, DONE after {} ms (both passes)",
            r.cpu_basis.as_deref().unwrap_or("given"),
            ms(r.kernel_modeled_s),
            ms(r.kernel_done_after_s)
        ));
    }
    if let (Some(f), Schedule::Fastfit) = (r.fastfit_rows, r.schedule) {
        line(format!(
            "schedule fastfit: PE 0 transformed {} rows on its CPU and {} on its boards (both passes)",
            f.cpu, f.boards
        ));
        if let Some(measured) = r.fastfit_speed_ratio {
            line(format!(
                "the boards measured {measured:.1}x a CPU core per row (what --split-assume stands for)"
            ));
        }
        if let Some(t) = &r.trained {
            line(t.line());
        }
        for l in devices::table(&r.devices, "rows") {
            line(l);
        }
        for l in devices::steps_lines(&r.devices) {
            line(l);
        }
    }
    line(format!("{:<14}{:>12}{:>9}", "phase", "ms", "share"));
    for p in &r.phases {
        let share = if p.name == "load" || r.parallel_s <= 0.0 {
            String::new()
        } else {
            format!("{:.1}%", 100.0 * p.seconds / r.parallel_s)
        };
        line(format!("{:<14}{:>12}{:>9}", p.name, ms(p.seconds), share));
    }
    line(format!(
        "{:<14}{:>12}   (all phases after load; corner turns {:.1}%{})",
        "parallel",
        ms(r.parallel_s),
        100.0 * r.corner_turn_share,
        if r.turns_in_passes {
            format!(", {} ms inside the passes on PE 0", ms(r.turn_s))
        } else {
            String::new()
        }
    ));
    if !r.sweep.is_empty() {
        line(
            "oracle: parallel ms of each static split (share of each PE's rows on its CPU; every time the median of its runs)".into(),
        );
        let best = r
            .sweep
            .iter()
            .map(|t| t.parallel_s)
            .fold(f64::INFINITY, f64::min);
        for t in &r.sweep {
            line(format!(
                "{:>11.0}%{:>12}{}",
                100.0 * t.cpu_share,
                ms(t.parallel_s),
                if t.parallel_s == best {
                    "   best (its median run above)"
                } else {
                    ""
                }
            ));
        }
        let vs_best = |x: f64| ratio(x, best);
        if let (Some(st), Some(assume)) = (r.static_s, r.split_assume) {
            line(format!(
                "{:<12}{:>12}   {:.2}x the best split's time (split for boards {assume}x a core)",
                "static",
                ms(st),
                vs_best(st)
            ));
        }
        if let Some(ff) = r.fastfit_s {
            let mut rows = r
                .fastfit_rows
                .map(|f| {
                    format!(
                        "; PE 0: {} rows on its CPU, {} on its boards",
                        f.cpu, f.boards
                    )
                })
                .unwrap_or_default();
            if let Some(measured) = r.fastfit_speed_ratio {
                rows += &format!("; boards measured {measured:.1}x a core per row");
            }
            line(format!(
                "{:<12}{:>12}   {:.2}x the best split's time{rows}",
                "fastfit",
                ms(ff),
                vs_best(ff)
            ));
        }
        if let Some(ft) = r.fastfit_trained_s {
            line(format!(
                "{:<12}{:>12}   {:.2}x the best split's time (started from the lines fastfit learned, as --trained)",
                "  trained",
                ms(ft),
                vs_best(ft)
            ));
        }
        // The passes alone: what the schedules share, without the corner turns.
        let best_passes = r.sweep.iter().find(|t| t.parallel_s == best);
        if let (Some(b), Some(st), Some(ff), Some(ft)) = (
            best_passes,
            r.static_passes_s,
            r.fastfit_passes_s,
            r.fastfit_trained_passes_s,
        ) {
            let vs = |x: f64| ratio(x, b.passes_s);
            line(format!(
                "passes alone (row + column phases, no corner turns): best split {} ms, \
                 static {} ms, fastfit {} ms ({:.2}x the best split's), trained {} ms ({:.2}x)",
                ms(b.passes_s).trim(),
                ms(st).trim(),
                ms(ff).trim(),
                vs(ff),
                ms(ft).trim(),
                vs(ft)
            ));
        }
    }
    if let Some(serial) = r.serial_s {
        line(format!(
            "serial rustfft 2D FFT on PE 0: {} ms; speedup {:.2}x",
            ms(serial),
            r.speedup.unwrap_or(0.0)
        ));
    }
    if let Some(e) = r.max_relative_error {
        line(format!(
            "max relative error vs serial: {e:.2e} (tolerance {TOLERANCE:.0e})"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_s_times_are_medians_each_taken_alone() {
        let t = |parallel_s, passes_s| RunTimes {
            parallel_s,
            passes_s,
        };
        // The fastest run's passes are not the fastest passes: each median alone.
        let m = median_times(&[t(1.0, 0.5), t(3.0, 0.1), t(2.0, 0.3)]);
        assert_eq!((m.parallel_s, m.passes_s), (2.0, 0.3));
    }
}
