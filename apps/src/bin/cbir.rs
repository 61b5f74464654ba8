//! `cbir`: content-based image retrieval on CPUs and boards, as in SHMEM+.
//!
//! The database (synthetic, or a directory of images) is split over the nodes; inside a
//! node between the CPUs of its PEs and its boards, in proportion to speed. Every image's
//! colour auto-correlogram is compared with the query's; the boards' results are
//! gathered on PE 0 in one of the three ways of docs/model.md §4, sorted, and the top
//! k reported with the time of each phase and the model's prediction of the gather.
//!
//! ```text
//! shmemrun -n 4 target/release/cbir --verify
//! shmemrun --profile novo-g -n 8 --pes-per-node 1 target/release/cbir --images 22000 --gather 1
//! ```

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde::Serialize;
use shmemplus::model::GatherApproach;
use shmemplus::{Place, SymVec};
use shmemplus_apps::board::{cpu_basis, seconds_per_element, BoardSpeed};
use shmemplus_apps::cbir::correlogram::{correlogram, Features, FEATURES};
use shmemplus_apps::cbir::gather::{self, Buffers, Prediction, ROOT};
use shmemplus_apps::cbir::generator::Synthetic;
use shmemplus_apps::cbir::loader::{load_image, ImageDir};
use shmemplus_apps::cbir::plan::{Device, Plan, Share};
use shmemplus_apps::cbir::search::{record, sad, top_k, Hit, TopK};
use shmemplus_apps::cbir::{kernel, IndexedImage, PIXELS, SIDE};
use shmemplus_apps::devices::{self, DeviceLine};
use shmemplus_apps::oracle::{self, Trial};
use shmemplus_apps::phases::{deviation, ms, Phase, PhaseTimer};
use shmemplus_apps::trained::{self, TrainedFile};
use std::path::PathBuf;
use std::process::ExitCode;

/// Content-based image retrieval with colour auto-correlograms on the CPUs and the FPGA
/// boards of a simulated cluster (run it under shmemrun).
///
/// Images are 128x128, 64 colours. The feature of an image counts, for each colour c
/// and distance d in {1,3,5,7}, the (pixel, neighbour) pairs of colour c at distance d
/// in the 8 directions; similarity is the sum of absolute differences.
/// PE 0 prints a report: the time of each phase (static: load, compute (the boards'
/// inputs put without blocking, their kernels, the CPUs' share meanwhile), gather,
/// gather cpus, sort) and, on a profile with modeled costs, the model's prediction for
/// the gather approach chosen. Times are on the job clock: virtual time under
/// SHMEMPLUS_CLOCK=virtual (the CPU path's speed is then the modeled core's: this
/// host's CPU time / the profile's cpu_speed).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "cbir",
    version,
    after_help = "Examples:\n  \
      shmemrun -n 4 target/release/cbir --verify\n  \
      shmemrun --profile novo-g -n 8 --pes-per-node 1 target/release/cbir --images 22000 --gather 1\n  \
      shmemrun -n 2 target/release/cbir --dir photos/ --query photos/cat.png --top-k 5"
)]
struct Args {
    /// Images in the database: synthetic images to generate (default 2000; the SHMEM+
    /// database had 22000), or the first N images of --dir (default all).
    #[arg(long, value_name = "N")]
    images: Option<u32>,
    /// Load the database from this directory of PNG/PPM/PGM/PBM/PNM files (file-name
    /// order; resampled to 128x128 and quantised to the palette) instead of generating
    /// it.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// With --dir: the query image (default: the directory's first image).
    #[arg(long, value_name = "FILE", requires = "dir")]
    query: Option<PathBuf>,
    /// Seed of the synthetic database.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Near-duplicates of the query planted in the synthetic database (the ground
    /// truth).
    #[arg(long, value_name = "N", default_value_t = 5)]
    planted: u32,
    /// How many results to report.
    #[arg(long, value_name = "K", default_value_t = 10)]
    top_k: usize,
    /// How the boards' results reach PE 0 (docs/model.md §4): 1 = PE 0 gets from
    /// every board in turn; 2 = each node puts from each of its boards to PE 0; 3 = each
    /// node collects its boards into CPU memory, then sends one put.
    #[arg(long, value_name = "1|2|3", default_value_t = 2,
          value_parser = clap::value_parser!(u8).range(1..=3))]
    gather: u8,
    /// Where correlograms are computed: cpu, fpga, or hybrid (split by speed).
    #[arg(long, value_enum, default_value_t = Device::Hybrid)]
    device: Device,
    /// How many times faster than one CPU core a board computes correlograms (the
    /// kernel's RATSS time is set from this and the CPU path's measured speed).
    #[arg(long, value_name = "S", default_value_t = 20.0)]
    board_speedup: f64,
    /// How images are shared between the CPUs and the boards: static (a split fixed
    /// before the run, in proportion to --split-assume), fastfit (chunks taken at run
    /// time from a pool in PE 0's memory: boards in chunks sized by the FastFit model
    /// after two timed samples, CPUs in chunks sized by their measured speed), or
    /// oracle (every static split with 0%, 10%, ..., 100% of the images on the CPUs,
    /// the assumed split and FastFit, each --oracle-rounds times in shuffled rounds;
    /// reports the best split's median run).
    #[arg(long, value_enum, default_value_t = Schedule::Static)]
    schedule: Schedule,
    /// The board / CPU-core speed ratio the static split assumes (default:
    /// --board-speedup, the boards' true speed), to try a wrong guess; with --schedule
    /// oracle, the static split it compares with the best.
    #[arg(long, value_name = "S")]
    split_assume: Option<f64>,
    /// With --schedule oracle: how many times it runs each of its configurations
    /// (every split, the assumed split and FastFit), in rounds of a shuffled order (a
    /// new order each round, the same on every PE, from --seed); each time it reports
    /// is the median of that configuration's runs. Runs late in a job gain from its
    /// drift, so a fixed order favours what runs last. Default 5.
    #[arg(long, value_name = "R",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=oracle::MAX_ROUNDS as u64))]
    oracle_rounds: Option<usize>,
    /// With --schedule fastfit (or oracle: its last FastFit run): write every device's
    /// chunks (a timeline, JSON) to this file, for `shmemplus cosched-plot FILE -o
    /// throughput.png`.
    #[arg(long, value_name = "FILE")]
    devices: Option<PathBuf>,
    /// With --schedule fastfit: the boards start from the lines (FastFit's model,
    /// the driver's cost, the CPU's speed) in this file, if it exists, instead of
    /// training; after the run PE 0 writes what its node's boards learned to it (JSON).
    /// The file also holds the setting the lines were learned in (images, board
    /// speed, profile, clock, PEs, boards per node): a run of another setting refuses
    /// it. Every PE reads the file: on several hosts, each needs its copy (a PE
    /// without one trains).
    #[arg(long, value_name = "FILE")]
    trained: Option<PathBuf>,
    /// With --schedule fastfit (and oracle's FastFit run): the fraction of a board's
    /// peak throughput its chunks must reach, in (0, 1).
    #[arg(long, value_name = "R", default_value_t = shmemplus_cosched::Rho::DEFAULT.get())]
    rho: f64,
    /// Fix the CPU path's speed (ns per pixel) instead of measuring it at start-up, for
    /// reproducible board timings.
    #[arg(long, value_name = "NS")]
    cpu_ns_per_pixel: Option<f64>,
    /// Check the top k against a serial computation on PE 0 (and, for the synthetic
    /// database, against the planted ground truth); prints "verified".
    #[arg(long)]
    verify: bool,
    /// Print the report as one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// How images are shared between the CPUs and the boards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Schedule {
    /// A split fixed before the run, in proportion to speed (`Plan`).
    Static,
    /// FastFit: chunks taken at run time (`shmemplus_cosched`).
    Fastfit,
    /// The best static split, found by running every CPU share of 0%, 10%, ..., 100%
    /// of each node's images (the MultiStatic baseline of FastFit's paper).
    Oracle,
}

/// The most images one board chunk may hold under FastFit (its staging buffer on the
/// host is this many images: 2048 x 16 KiB = 32 MiB).
const MAX_BOARD_CHUNK: u64 = 2048;

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            shmemplus::stderr_line(format_args!("cbir: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

/// Where images come from.
enum Source {
    Synthetic(Synthetic),
    Dir {
        dir: ImageDir,
        query: Option<PathBuf>,
        count: u32,
    },
}

impl Source {
    fn new(args: &Args) -> Result<Source> {
        match &args.dir {
            None => {
                let n = args.images.unwrap_or(2000);
                if n == 0 {
                    bail!("--images must be at least 1");
                }
                Ok(Source::Synthetic(Synthetic::new(
                    args.seed,
                    n,
                    args.planted,
                )))
            }
            Some(path) => {
                let dir = ImageDir::open(path)?;
                let available = u32::try_from(dir.len()).unwrap_or(u32::MAX);
                let count = match args.images {
                    None => available,
                    Some(0) => bail!("--images must be at least 1"),
                    Some(n) if n > available => bail!(
                        "--images {n}, but {} holds only {available} images",
                        path.display()
                    ),
                    Some(n) => n,
                };
                Ok(Source::Dir {
                    dir,
                    query: args.query.clone(),
                    count,
                })
            }
        }
    }

    fn len(&self) -> u32 {
        match self {
            Source::Synthetic(s) => s.len(),
            Source::Dir { count, .. } => *count,
        }
    }

    fn query(&self) -> Result<IndexedImage> {
        Ok(match self {
            Source::Synthetic(s) => s.query(),
            Source::Dir { query: Some(q), .. } => load_image(q)?,
            Source::Dir { dir, .. } => dir.load(0)?,
        })
    }

    /// Writes image `id` into `out` (PIXELS bytes).
    fn fill(&self, id: u32, out: &mut [u8]) -> Result<()> {
        match self {
            Source::Synthetic(s) => s.fill(id, out),
            Source::Dir { dir, .. } => out.copy_from_slice(dir.load(id as usize)?.pixels()),
        }
        Ok(())
    }

    /// The pixels of a share's images, one after the other.
    fn load(&self, share: Share) -> Result<Vec<u8>> {
        let mut px = Vec::new();
        let bytes = share.count as usize * PIXELS;
        px.try_reserve_exact(bytes).map_err(|_| {
            anyhow::anyhow!(
                "cannot hold {} images ({:.1} GiB) in memory: use fewer --images or more PEs",
                share.count,
                bytes as f64 / (1u64 << 30) as f64
            )
        })?;
        px.resize(bytes, 0);
        for (i, out) in px.chunks_exact_mut(PIXELS).enumerate() {
            self.fill(share.first + i as u32, out)?;
        }
        Ok(px)
    }

    fn planted(&self) -> Option<&[u32]> {
        match self {
            Source::Synthetic(s) => Some(s.planted()),
            Source::Dir { .. } => None,
        }
    }

    fn describe(&self, seed: u64) -> String {
        match self {
            Source::Synthetic(s) => format!(
                "{} synthetic images (seed {seed}; {} near-duplicates of the query planted)",
                s.len(),
                s.planted().len()
            ),
            Source::Dir { dir, count, .. } => {
                format!("{count} images from {}", dir.dir().display())
            }
        }
    }
}

/// One board's inputs in its memory (its results are in a vector of their own, the
/// gather's input).
struct BoardInputs {
    images: SymVec<u8>,
    query: SymVec<u32>,
}

/// Each board's inputs (`images` images and the query) and results (`records`
/// records), in board memory; nothing if `used` is false. Collective.
fn alloc_boards(
    shmem: &shmemplus::Shmem,
    used: bool,
    images: usize,
    records: usize,
) -> Result<(Vec<BoardInputs>, Vec<SymVec<u64>>)> {
    let (mut inputs, mut results) = (Vec::new(), Vec::new());
    if used {
        for b in 0..shmem.fpgas() {
            inputs.push(BoardInputs {
                images: shmem.alloc::<u8>(images * PIXELS, Place::Fpga(b))?,
                query: shmem.alloc::<u32>(FEATURES, Place::Fpga(b))?,
            });
            results.push(shmem.alloc::<u64>(records, Place::Fpga(b))?);
        }
    }
    Ok((inputs, results))
}

/// Frees what [`alloc_boards`] allocated. Collective.
fn free_boards(
    shmem: &shmemplus::Shmem,
    inputs: Vec<BoardInputs>,
    results: Vec<SymVec<u64>>,
) -> Result<()> {
    for (b, r) in inputs.into_iter().zip(results) {
        shmem.free(b.images)?;
        shmem.free(b.query)?;
        shmem.free(r)?;
    }
    Ok(())
}

/// What the boards' kernels reported, per board.
#[derive(Debug, Clone, Copy, Serialize, Default)]
struct KernelStat {
    node: u32,
    board: u32,
    images: u32,
    modeled_s: f64,
    done_after_s: f64,
}

#[derive(Debug, Serialize)]
struct GatherReport {
    approach: u8,
    description: &'static str,
    measured_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    predicted: Option<Prediction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    no_prediction: Option<String>,
}

#[derive(Debug, Serialize)]
struct Report {
    database: String,
    images: u32,
    n_pes: u32,
    nodes: u32,
    pes_per_node: u32,
    boards_per_node: u32,
    profile: String,
    /// The job clock every time of the report is on: `wall` or `virtual`.
    clock: &'static str,
    device: Device,
    board_speedup: f64,
    /// How images were shared: `static` or `fastfit`.
    schedule: Schedule,
    /// The speed ratio the static split assumed (`None` under FastFit).
    split_assume: Option<f64>,
    images_on_cpus: u32,
    images_on_boards: u32,
    max_per_board: u32,
    cpu_ns_per_pixel: Option<f64>,
    /// What the CPU path's speed stands for (this host's core, or the modeled core).
    cpu_basis: Option<String>,
    kernel_ops_per_cycle: Option<f64>,
    phases: Vec<Phase>,
    total_s: f64,
    gather: Option<GatherReport>,
    kernels: Vec<KernelStat>,
    /// Under FastFit: what each CPU and board did.
    devices: Vec<DeviceLine>,
    /// Under FastFit with --trained: whether the boards started from the file's
    /// lines (else they trained), and whether this run's lines were written to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    trained: Option<TrainedFile>,
    /// Under the oracle: every static split tried and its total time (the median of
    /// its runs).
    sweep: Vec<SplitTime>,
    /// Under the oracle: the total time of the static split (in proportion to
    /// --split-assume, default --board-speedup) and of FastFit, run in the same
    /// rounds as the sweep (medians of their runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    static_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_s: Option<f64>,
    /// Under the oracle: the images FastFit's run put on the CPUs (the job's), to set
    /// beside the best split's share.
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_images_on_cpus: Option<u32>,
    /// Under FastFit (and the oracle's FastFit run): the speed ratio, board / CPU core
    /// per image, that its devices measured (`shmemplus_cosched::speed_ratio`): what
    /// `--split-assume` stands for. It differs from `--board-speedup` when the CPU
    /// path does not run at the speed the boards' time was set from.
    #[serde(skip_serializing_if = "Option::is_none")]
    fastfit_speed_ratio: Option<f64>,
    top: Vec<Hit>,
    planted: Option<Vec<u32>>,
    ground_truth_ok: Option<bool>,
    verified: Option<bool>,
    serial_s: Option<f64>,
}

impl Report {
    /// The fields every schedule fills alike (the job, the speeds, the phases, the
    /// top k); the split's own fields are zero or empty for the caller to set.
    #[allow(clippy::too_many_arguments)]
    fn common(
        args: &Args,
        source: &Source,
        shmem: &shmemplus::Shmem,
        schedule: Schedule,
        (speed, basis, timing): (
            Option<BoardSpeed>,
            Option<String>,
            Option<shmemplus::fpga_mock::KernelTiming>,
        ),
        timer: &PhaseTimer,
        top: Vec<Hit>,
    ) -> Report {
        let topo = shmem.topology();
        Report {
            database: source.describe(args.seed),
            images: source.len(),
            n_pes: topo.n_pes,
            nodes: topo.nodes,
            pes_per_node: topo.pes_per_node,
            boards_per_node: shmem.fpgas(),
            profile: shmem.profile().name.clone(),
            clock: shmem.clock().name(),
            device: args.device,
            board_speedup: args.board_speedup,
            schedule,
            split_assume: None,
            images_on_cpus: 0,
            images_on_boards: 0,
            max_per_board: 0,
            cpu_ns_per_pixel: speed.map(|s| s.cpu_seconds_per_element * 1e9),
            cpu_basis: basis,
            kernel_ops_per_cycle: timing.map(|t| t.ops_per_cycle),
            phases: timer.phases().to_vec(),
            total_s: timer.total(),
            gather: None,
            kernels: Vec::new(),
            devices: Vec::new(),
            trained: None,
            sweep: Vec::new(),
            static_s: None,
            fastfit_s: None,
            fastfit_images_on_cpus: None,
            fastfit_speed_ratio: None,
            top,
            planted: source.planted().map(<[u32]>::to_vec),
            ground_truth_ok: None,
            verified: None,
            serial_s: None,
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let source = Source::new(args)?;
    let shmem = shmemplus::init()?;
    // Checked before any PE allocates anything.
    shmemplus_cosched::Rho::new(args.rho).context("--rho")?;
    if args.oracle_rounds.is_some() && args.schedule != Schedule::Oracle {
        bail!("--oracle-rounds applies to --schedule oracle");
    }
    if args.schedule == Schedule::Fastfit && args.split_assume.is_some() {
        bail!("--split-assume applies to the static split (--schedule static or oracle)");
    }
    if args.schedule == Schedule::Static && args.devices.is_some() {
        bail!("--devices applies to --schedule fastfit or oracle");
    }
    if args.schedule != Schedule::Fastfit && args.trained.is_some() {
        bail!("--trained applies to --schedule fastfit");
    }
    match args.schedule {
        Schedule::Fastfit => run_fastfit(args, &source, shmem),
        Schedule::Oracle => run_oracle(args, &source, shmem),
        Schedule::Static => {
            if let (Some(run), _) = run_static(args, &source, &shmem)? {
                conclude(
                    args,
                    &shmem,
                    &source,
                    &run.query,
                    run.report,
                    run.timing.as_ref(),
                )?;
            }
            shmem.finalize()?;
            Ok(())
        }
    }
}

/// A static run's outcome on PE 0: its report, the kernel timing, the query.
struct StaticRun {
    report: Report,
    timing: Option<shmemplus::fpga_mock::KernelTiming>,
    query: Features,
}

/// One run with the static split of `args` (device, --split-assume): every phase,
/// collective. Returns the outcome on PE 0 (`None` on the other PEs) and, on every
/// PE, the CPU path's speed in ns per pixel if the boards were used.
fn run_static(
    args: &Args,
    source: &Source,
    shmem: &shmemplus::Shmem,
) -> Result<(Option<StaticRun>, Option<f64>)> {
    let approach = GatherApproach::from_number(args.gather)
        .with_context(|| format!("--gather must be 1, 2 or 3, got {}", args.gather))?;
    let (me, topo, boards) = (shmem.my_pe(), shmem.topology(), shmem.fpgas());
    let node = shmem.node();
    let split_assume = args.split_assume.unwrap_or(args.board_speedup);
    let plan = Plan::new(
        source.len(),
        topo.nodes,
        topo.pes_per_node,
        boards,
        args.device,
        split_assume,
    )
    .map_err(anyhow::Error::msg)
    .context("--split-assume / --board-speedup")?;
    let leader = plan.leader(node) == me;
    let uses_boards = plan.uses_boards();

    // Symmetric objects: the same sizes on every PE, in the same order.
    let max_board = plan.max_board_share() as usize;
    let (on_boards, board_results) = alloc_boards(shmem, uses_boards, max_board, max_board)?;
    let query_cpu = shmem.alloc::<u32>(FEATURES, Place::Cpu)?;
    let speed_cpu = shmem.alloc::<f64>(1, Place::Cpu)?;
    let root_board = shmem.alloc::<u64>((plan.total_board() as usize).max(1), Place::Cpu)?;
    let root_cpu = shmem.alloc::<u64>((plan.total_cpu() as usize).max(1), Place::Cpu)?;
    let node_stage =
        shmem.alloc::<u64>((plan.max_node_board_total() as usize).max(1), Place::Cpu)?;
    let stats_len = (topo.nodes * boards) as usize * 2;
    let stats = shmem.alloc::<f64>(stats_len.max(1), Place::Cpu)?;

    let mut timer = PhaseTimer::new(shmem);
    let my_cpu = plan.cpu_share(me);

    // Load: every PE its CPU share, every leader its boards' shares; PE 0 computes the
    // query's features and sends them to everyone.
    let (cpu_images, mut board_images) = timer.run("load", || -> Result<_> {
        let cpu = source.load(my_cpu)?;
        let mut on_board = Vec::new();
        if leader && uses_boards {
            for b in 0..boards {
                on_board.push(source.load(plan.board_share(node, b))?);
            }
        }
        if me == ROOT {
            let q = source.query()?;
            shmem.local_write(&query_cpu, 0, &correlogram(q.pixels(), SIDE, SIDE))?;
        }
        shmem.broadcast(&shmem.team_world(), &query_cpu, &query_cpu, FEATURES, ROOT)?;
        Ok((cpu, on_board))
    })?;
    let mut query: Features = [0; FEATURES];
    shmem.local_read(&query_cpu, 0, &mut query)?;

    // The boards' speed: the CPU path's, measured on PE 0 (or given), times the speedup.
    let (speed, timing, basis) = if uses_boards {
        let sample = sample_image(&cpu_images, &board_images);
        let (speed, timing, basis) = board_timing(args, shmem, &speed_cpu, sample, leader)?;
        (Some(speed), Some(timing), Some(basis))
    } else {
        (None, None, None)
    };

    let mut cpu_records = Vec::with_capacity(my_cpu.count as usize);
    // The boards' images and the query go out with put_nbi, all boards' DMA at once;
    // each kernel starts once its board's inputs are in (kernel_start is ordered after
    // this PE's puts into the board), and the CPUs compute their share meanwhile.
    timer.run("compute", || -> Result<()> {
        let mut runs = Vec::new();
        if leader {
            for (b, (bufs, px)) in (0..boards).zip(on_boards.iter().zip(&board_images)) {
                if plan.board_share(node, b).count > 0 {
                    shmem.put_nbi(&bufs.images, 0, px, me)?;
                    shmem.put_nbi(&bufs.query, 0, &query, me)?;
                }
            }
            for ((b, bufs), results) in (0..boards).zip(&on_boards).zip(&board_results) {
                let share = plan.board_share(node, b);
                if share.count > 0 {
                    let a = [
                        bufs.images.heap_offset() as u64,
                        u64::from(share.count),
                        bufs.query.heap_offset() as u64,
                        results.heap_offset() as u64,
                        u64::from(share.first),
                    ];
                    runs.push(shmem.kernel_start(b, kernel::KERNEL, &a)?);
                }
            }
        }
        board_images.clear();
        for (i, px) in cpu_images.chunks_exact(PIXELS).enumerate() {
            let f = correlogram(px, SIDE, SIDE);
            cpu_records.push(record(sad(&f, &query), my_cpu.first + i as u32));
        }
        let mut mine = vec![0.0f64; 2 * boards as usize];
        for run in runs {
            let (b, done) = (run.board(), run.wait()?);
            mine[2 * b as usize] = done.modeled_s;
            mine[2 * b as usize + 1] = done.elapsed_s;
        }
        if leader && uses_boards {
            shmem.put(&stats, (node * boards) as usize * 2, &mine, ROOT)?;
        }
        Ok(())
    })?;
    drop(cpu_images);

    if uses_boards {
        let bufs = Buffers {
            board_results: &board_results,
            root_results: &root_board,
            node_stage: &node_stage,
        };
        timer.run("gather", || gather::gather(shmem, &plan, approach, &bufs))?;
    }
    timer.run("gather cpus", || -> Result<()> {
        if !cpu_records.is_empty() {
            shmem.put(&root_cpu, plan.cpu_offset(me) as usize, &cpu_records, ROOT)?;
        }
        Ok(shmem.quiet()?)
    })?;
    let top = timer.run("sort", || -> Result<Vec<Hit>> {
        if me != ROOT {
            return Ok(Vec::new());
        }
        let mut all = shmem.local_to_vec(&root_board)?;
        all.truncate(plan.total_board() as usize);
        let mut cpu = shmem.local_to_vec(&root_cpu)?;
        cpu.truncate(plan.total_cpu() as usize);
        all.extend_from_slice(&cpu);
        Ok(top_k(&mut all, args.top_k))
    })?;

    let prediction = if me == ROOT && uses_boards {
        Some(gather::predict(shmem, &plan, approach))
    } else {
        None
    };
    let kernel_stats = if me == ROOT && uses_boards {
        let v = shmem.local_to_vec(&stats)?;
        (0..topo.nodes)
            .flat_map(|n| (0..boards).map(move |b| (n, b)))
            .map(|(n, b)| {
                let i = 2 * (n * boards + b) as usize;
                KernelStat {
                    node: n,
                    board: b,
                    images: plan.board_share(n, b).count,
                    modeled_s: v[i],
                    done_after_s: v[i + 1],
                }
            })
            .collect()
    } else {
        Vec::new()
    };

    free_boards(shmem, on_boards, board_results)?;
    for obj in [root_board, root_cpu, node_stage] {
        shmem.free(obj)?;
    }
    shmem.free(query_cpu)?;
    shmem.free(speed_cpu)?;
    shmem.free(stats)?;
    let cpu_ns = speed.map(|s| s.cpu_seconds_per_element * 1e9);

    if me == ROOT {
        let report = Report {
            split_assume: Some(split_assume),
            images_on_cpus: plan.total_cpu(),
            images_on_boards: plan.total_board(),
            max_per_board: plan.max_board_share(),
            gather: uses_boards.then(|| GatherReport {
                approach: approach.number(),
                description: gather::describe(approach),
                measured_s: timer.seconds("gather"),
                predicted: prediction.as_ref().and_then(|p| p.as_ref().ok().cloned()),
                no_prediction: prediction.as_ref().and_then(|p| p.as_ref().err().cloned()),
            }),
            kernels: kernel_stats,
            ..Report::common(
                args,
                source,
                shmem,
                Schedule::Static,
                (speed, basis, timing),
                &timer,
                top,
            )
        };
        return Ok((
            Some(StaticRun {
                report,
                timing,
                query,
            }),
            cpu_ns,
        ));
    }
    Ok((None, cpu_ns))
}

/// One static split the oracle tried.
#[derive(Debug, Clone, Serialize)]
struct SplitTime {
    /// The share of each node's images on its CPUs (0 to 1, in steps of 0.1).
    cpu_share: f64,
    /// The run's total time.
    total_s: f64,
}

/// `args` set to the static split with `step` tenths of each node's images on its
/// CPUs (`--device fpga` for 0%, `cpu` for 100%, else the hybrid split whose
/// assumed speed ratio gives that share), for `ppn` PEs and `boards` boards a node.
fn split_args(args: &Args, step: u32, ppn: u32, boards: u32) -> Args {
    let mut a = args.clone();
    let cpu_share = f64::from(step) / 10.0;
    a.device = match step {
        0 => Device::Fpga,
        10 => Device::Cpu,
        _ => Device::Hybrid,
    };
    // A node's CPUs weigh 1 each and its boards S each: a CPU share f is
    // S = ppn (1 - f) / (f boards).
    a.split_assume = (step > 0 && step < 10)
        .then(|| f64::from(ppn) * (1.0 - cpu_share) / (cpu_share * f64::from(boards)));
    a
}

/// `--schedule oracle`: every static split with 0%, 10%, ..., 100% of each node's
/// images on its CPUs, the static split `--split-assume` gives, and FastFit, each
/// `--oracle-rounds` times in rounds of an order of their own (`oracle::round_order`:
/// with one run each in a fixed order, the runs after the sweep gained about 1% from
/// the job's drift), all with the CPU speed measured by the first warm-up. PE 0
/// reports every split's median time and the best split's median run in full, with
/// the medians of the assumed split and of FastFit.
fn run_oracle(args: &Args, source: &Source, shmem: shmemplus::Shmem) -> Result<()> {
    let (ppn, boards) = (shmem.topology().pes_per_node, shmem.fpgas());
    if boards == 0 {
        bail!("--schedule oracle compares CPU/board splits, and this job has no boards");
    }
    if args.device != Device::Hybrid {
        bail!("--schedule oracle tries every split itself: leave --device at hybrid");
    }
    // Step 0 runs twice before anything counts, so that every split is timed warm:
    // the first run touches every buffer, and the second still gets fresh pages for
    // its largest (the allocator only keeps memory of that size after one has been
    // freed from its heap), which cost step 0 up to 5 ms of page faults on native.
    // The first also measures the CPU path's speed, which every later run keeps.
    const WARM_UPS: usize = 2;
    let mut run_args = args.clone();
    for _ in 0..WARM_UPS {
        let (_, cpu_ns) = run_static(&split_args(&run_args, 0, ppn, boards), source, &shmem)?;
        run_args.cpu_ns_per_pixel = run_args.cpu_ns_per_pixel.or(cpu_ns);
    }
    let args_given = args;
    let args = &run_args;
    // FastFit's first run touches its staging buffers: a warm-up too.
    let stagings = Stagings::default();
    fastfit_once(args, source, &shmem, &stagings)?;
    let rounds = args.oracle_rounds.unwrap_or(oracle::DEFAULT_ROUNDS);
    let trials = oracle::trials();
    // PE 0's runs (the other PEs' are `None`).
    let mut splits: Vec<Vec<StaticRun>> = (0..=10).map(|_| Vec::new()).collect();
    let (mut assumed, mut fastfits) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for trial in oracle::round_order(&trials, args.seed, round) {
            match trial {
                Trial::Split(step) => {
                    let (run, _) =
                        run_static(&split_args(args, step, ppn, boards), source, &shmem)?;
                    if let (Some(run), Some(runs)) = (run, splits.get_mut(step as usize)) {
                        runs.push(run);
                    }
                }
                Trial::Assumed => {
                    let (run, _) = run_static(args, source, &shmem)?;
                    assumed.extend(run.map(|r| r.report.total_s));
                }
                Trial::Fastfit => {
                    fastfits.extend(fastfit_once(args, source, &shmem, &stagings)?);
                }
            }
        }
    }
    let mut sweep = Vec::new();
    let mut best: Option<StaticRun> = None;
    for (step, runs) in (0u32..).zip(splits) {
        let Some(run) = oracle::median_by(runs, |r| r.report.total_s) else {
            continue;
        };
        sweep.push(SplitTime {
            cpu_share: f64::from(step) / 10.0,
            total_s: run.report.total_s,
        });
        if best
            .as_ref()
            .is_none_or(|b| run.report.total_s < b.report.total_s)
        {
            best = Some(run);
        }
    }
    let fastfit = oracle::median_by(fastfits, |r| r.report.total_s);
    if let Some(mut best) = best {
        best.report.schedule = Schedule::Oracle;
        best.report.sweep = sweep;
        best.report.static_s = (!assumed.is_empty()).then(|| oracle::upper_median(assumed));
        best.report.fastfit_images_on_cpus = fastfit.as_ref().map(|r| r.report.images_on_cpus);
        best.report.fastfit_speed_ratio =
            fastfit.as_ref().and_then(|r| r.report.fastfit_speed_ratio);
        best.report.fastfit_s = fastfit.map(|r| r.report.total_s);
        conclude(
            args_given,
            &shmem,
            source,
            &best.query,
            best.report,
            best.timing.as_ref(),
        )?;
    }
    shmem.finalize()?;
    Ok(())
}

/// Writes the pixels of images `range`, one after the other, at the start of `px` (a
/// buffer kept from chunk to chunk: a fresh one per chunk would pay its page faults
/// every time) and returns them. `px` only grows: cut to each chunk's length, a larger
/// chunk after a smaller one zeroed the difference before the images overwrote it
/// (a board's production chunk after its 24-image sample: 6 MB written twice, and
/// staging cost 7-9 us an image where the sample's cost 4-6).
fn load_chunk<'p>(
    source: &Source,
    range: &std::ops::Range<u64>,
    px: &'p mut Vec<u8>,
) -> Result<&'p [u8], String> {
    let bytes = usize::try_from(range.end - range.start)
        .ok()
        .and_then(|images| images.checked_mul(PIXELS))
        .ok_or("a chunk's pixels overflow the address space")?;
    if px.len() < bytes {
        px.resize(bytes, 0);
    }
    let chunk = &mut px[..bytes];
    for (id, out) in range.clone().zip(chunk.chunks_exact_mut(PIXELS)) {
        source.fill(id as u32, out).map_err(|e| format!("{e:#}"))?;
    }
    Ok(chunk)
}

/// A staging buffer per caller (the CPU path, each board), reused chunk after chunk.
type Staging = std::sync::Mutex<Vec<u8>>;

/// The staging buffers of FastFit runs, kept from run to run (the oracle runs FastFit
/// twice, and only the second counts, as every static split is timed warm): a
/// buffer's pages are touched once per process, as a real host pins its DMA buffers
/// once, not once per run.
#[derive(Default)]
struct Stagings {
    /// One per board of this PE's node (grown on first use).
    boards: std::sync::Mutex<Vec<std::sync::Arc<Staging>>>,
    /// The CPU path's, one per thread that runs a chunk at once.
    cpu: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl Stagings {
    /// The buffers of `n` boards.
    fn boards(&self, n: usize) -> Vec<std::sync::Arc<Staging>> {
        let mut boards = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        while boards.len() < n {
            boards.push(std::sync::Arc::default());
        }
        boards[..n].to_vec()
    }
}

/// How a chunk of images runs on a board of this PE's node under FastFit: its pixels
/// into the board, the kernel, and its records kept on the board (see [`Kept`]).
struct CbirBoards<'a> {
    shmem: &'a shmemplus::Shmem,
    source: &'a Source,
    inputs: &'a [BoardInputs],
    results: &'a [SymVec<u64>],
    /// Per board, CPU memory its records are fetched into after the loop (`collect`).
    fetched: &'a [SymVec<u64>],
    all: &'a SymVec<u64>,
    staging: Vec<std::sync::Arc<Staging>>,
    /// Per board, the records it holds.
    kept: Vec<std::sync::Mutex<Kept>>,
    /// Records a board's results area holds.
    capacity: u64,
}

/// The records a board has computed and still holds. They stay in its memory until
/// the loop ends (or its results area is full) and then come back in one fetch, not
/// one per chunk: on a profile such as novo-g every DMA costs 0.65 ms whatever its
/// size, so a fetch per chunk made FastFit pay one round trip per chunk that a static
/// split, which fetches once, does not.
///
/// A board has one chunk in flight at a time (its driver calls `start` and `finish`
/// in turn), so `start` writes the kernel's records after `len` and `finish` counts
/// them; a chunk whose kernel fails is never counted (the loop reruns it elsewhere).
#[derive(Default)]
struct Kept {
    /// Records in the board's results area, from its start.
    len: u64,
    /// The chunks whose records those are, in that order.
    ranges: Vec<std::ops::Range<u64>>,
}

impl CbirBoards<'_> {
    fn kept(&self, board: u32) -> Result<std::sync::MutexGuard<'_, Kept>, String> {
        let kept = self
            .kept
            .get(board as usize)
            .ok_or_else(|| format!("board {board}: this node has {}", self.kept.len()))?;
        Ok(kept.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Fetches the records `board` holds (one blocking DMA) and puts them into PE 0's
    /// table (`deliver`); the board then holds none. On an error the records are still
    /// counted as held, so that the caller can recompute them.
    fn fetch(&self, board: u32, kept: &mut Kept) -> Result<(), String> {
        if kept.len == 0 {
            return Ok(());
        }
        let held = usize::try_from(kept.len).map_err(|e| e.to_string())?;
        let mut records = vec![0u64; held];
        let me = self.shmem.my_pe();
        self.shmem
            .get(&self.results[board as usize], 0, &mut records, me)
            .map_err(|e| e.to_string())?;
        self.deliver(kept, &records)
    }

    /// Puts `records`, the records of `kept`'s chunks in their order (a board's, or
    /// the CPU path's after the loop), into PE 0's table, one `put_nbi` per run of
    /// adjacent chunks; `kept` then holds none.
    fn deliver(&self, kept: &mut Kept, records: &[u64]) -> Result<(), String> {
        let e = |e: shmemplus::Error| e.to_string();
        let held = records.len();
        let mut at = 0usize;
        for run in adjacent_runs(&kept.ranges) {
            let len = usize::try_from(run.end - run.start).map_err(|e| e.to_string())?;
            let end = at
                .checked_add(len)
                .filter(|&end| end <= held)
                .ok_or("the kept chunks hold more records than the board")?;
            // Completed by the barrier that ends the loop's phase (or the records'
            // phase after it); PE 0 reads its table only after both.
            self.shmem
                .put_nbi(self.all, run.start as usize, &records[at..end], ROOT)
                .map_err(e)?;
            at = end;
        }
        *kept = Kept::default();
        Ok(())
    }

    /// After the loop: every board's records into PE 0's table. The boards' DMAs run
    /// at once (a `get_nbi` each into `fetched`, one `quiet`): one after the other,
    /// 4 boards on novo-g cost 4.8 ms, four DMA latencies. A board whose records
    /// cannot be fetched has its chunks recomputed by `cpu` (nothing is lost); only if
    /// that fails too is it an error, naming the board.
    fn collect(
        &self,
        cpu: &dyn Fn(std::ops::Range<u64>) -> Result<(), String>,
    ) -> Result<(), String> {
        let me = self.shmem.my_pe();
        let mut issued = Vec::with_capacity(self.kept.len());
        for board in 0..self.kept.len() as u32 {
            let held = self.kept(board)?.len;
            let dest = self.fetched.get(board as usize);
            let started = match (usize::try_from(held), dest) {
                (Ok(0), _) => Ok(()),
                (Ok(held), Some(dest)) => self
                    .shmem
                    .get_nbi(dest, 0, &self.results[board as usize], 0, held, me)
                    .map_err(|e| e.to_string()),
                (Err(e), _) => Err(e.to_string()),
                (_, None) => Err(format!("no fetch buffer for board {board}")),
            };
            issued.push(started);
        }
        let completed = self.shmem.quiet().map_err(|e| e.to_string());
        for (board, started) in (0..).zip(issued) {
            let mut kept = self.kept(board)?;
            let fetched = started.and(completed.clone()).and_then(|()| {
                let mut records = vec![0u64; usize::try_from(kept.len).map_err(|e| e.to_string())?];
                if let (false, Some(src)) = (records.is_empty(), self.fetched.get(board as usize)) {
                    self.shmem
                        .local_read(src, 0, &mut records)
                        .map_err(|e| e.to_string())?;
                }
                self.deliver(&mut kept, &records)
            });
            if let Err(why) = fetched {
                let node = self.shmem.node();
                shmemplus::stderr_line(format_args!(
                    "cbir: node {node} board {board}: its records could not be fetched \
                     ({why}); recomputing its {} images on PE {}",
                    kept.len,
                    self.shmem.my_pe()
                ));
                recompute(&mut kept, cpu).map_err(|e| {
                    format!(
                        "node {node} board {board}: its records could not be fetched \
                         ({why}), and recomputing them failed: {e}"
                    )
                })?;
            }
        }
        Ok(())
    }
}

/// The chunks whose records a board holds, recomputed by `cpu` in the order they
/// were taken (their records could not be fetched); the board then holds none. A chunk
/// that fails there is an error naming its images, and it and the chunks after it
/// stay counted as held.
fn recompute(
    kept: &mut Kept,
    cpu: &dyn Fn(std::ops::Range<u64>) -> Result<(), String>,
) -> Result<(), String> {
    while let Some(range) = kept.ranges.first().cloned() {
        cpu(range.clone()).map_err(|e| format!("images {}..{}: {e}", range.start, range.end))?;
        kept.ranges.remove(0);
        kept.len = kept.len.saturating_sub(range.end - range.start);
    }
    *kept = Kept::default();
    Ok(())
}

/// `ranges` with each run of adjacent ranges (one's end the next's start) merged.
fn adjacent_runs(ranges: &[std::ops::Range<u64>]) -> Vec<std::ops::Range<u64>> {
    let mut runs: Vec<std::ops::Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match runs.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => runs.push(r.clone()),
        }
    }
    runs
}

impl shmemplus_cosched::BoardPath for CbirBoards<'_> {
    fn start(
        &self,
        board: u32,
        range: std::ops::Range<u64>,
    ) -> Result<shmemplus::BoardRun, String> {
        let (bufs, results) = (&self.inputs[board as usize], &self.results[board as usize]);
        let count = range.end - range.start;
        let mut kept = self.kept(board)?;
        if kept.len.saturating_add(count) > self.capacity {
            self.fetch(board, &mut kept)?;
        }
        // The kernel writes its records after the ones the board holds.
        let records_at = kept
            .len
            .checked_mul(size_of::<u64>() as u64)
            .and_then(|b| b.checked_add(results.heap_offset() as u64))
            .ok_or("the board's results offset overflows")?;
        drop(kept);
        let mut px = self.staging[board as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let pixels = load_chunk(self.source, &range, &mut px)?;
        let me = self.shmem.my_pe();
        // Non-blocking: the kernel starts once the pixels are in (kernel_start is
        // ordered after this PE's puts into the board), and meanwhile the thread
        // serves the other boards and computes on the CPU. `px` may be reused at once.
        self.shmem
            .put_nbi(&bufs.images, 0, pixels, me)
            .map_err(|e| e.to_string())?;
        let args = [
            bufs.images.heap_offset() as u64,
            count,
            bufs.query.heap_offset() as u64,
            records_at,
            range.start,
        ];
        self.shmem
            .kernel_start(board, kernel::KERNEL, &args)
            .map_err(|e| e.to_string())
    }

    fn finish(&self, board: u32, range: std::ops::Range<u64>) -> Result<(), String> {
        let mut kept = self.kept(board)?;
        kept.len += range.end - range.start;
        kept.ranges.push(range);
        Ok(())
    }
}

/// `--schedule fastfit`: every PE's CPU and every board take chunks of images from one
/// pool until none is left (`shmemplus_cosched::run`). A CPU chunk is loaded, computed
/// and its records put straight into PE 0's table of all images; a board chunk is
/// loaded by the node's first PE, put into the board, run, and its records fetched and
/// put into the same table. PE 0 then sorts the table.
fn run_fastfit(args: &Args, source: &Source, shmem: shmemplus::Shmem) -> Result<()> {
    if let Some(run) = fastfit_once(args, source, &shmem, &Stagings::default())? {
        conclude(
            args,
            &shmem,
            source,
            &run.query,
            run.report,
            run.timing.as_ref(),
        )?;
    }
    shmem.finalize()?;
    Ok(())
}

/// One FastFit run (collective); the outcome on PE 0, `None` on the other PEs.
fn fastfit_once(
    args: &Args,
    source: &Source,
    shmem: &shmemplus::Shmem,
    stagings: &Stagings,
) -> Result<Option<StaticRun>> {
    let (me, topo, boards) = (shmem.my_pe(), shmem.topology(), shmem.fpgas());
    let node = shmem.node();
    let leader = me == node * topo.pes_per_node;
    let n = source.len();
    if args.device == Device::Fpga && boards == 0 {
        bail!(
            "--device fpga needs boards, and this job has none: use --device cpu, or start \
             the job with shmemrun --fpgas N"
        );
    }
    let use_boards = args.device != Device::Cpu && boards > 0;
    // An earlier run's lines, if --trained names a file that exists (read by every
    // PE before anything collective, so a bad file stops them all at one point).
    let setting = trained::Setting::of_job(
        shmem,
        "cbir",
        format!("{n} images, boards {}x a CPU core", args.board_speedup),
    );
    let trained = match &args.trained {
        Some(path) => trained::read(path, &setting)?,
        None => None,
    };
    let started_trained = trained.is_some();
    // A board's memory holds the query features, the records it keeps (all of the
    // loop's if a quarter of the memory holds them, else what a quarter holds; see
    // `Kept`) and a chunk's images.
    let free = shmem
        .fpga_heap_bytes()
        .saturating_sub(4 * FEATURES as u64 + 4096);
    let records = u64::from(n).min(free / 4 / size_of::<u64>() as u64);
    let room = (free - records * size_of::<u64>() as u64) / PIXELS as u64;
    let max_chunk = MAX_BOARD_CHUNK.min(room).min(u64::from(n)).max(1);
    let records = records.max(max_chunk);

    // Symmetric objects, the same on every PE in the same order.
    let (on_boards, board_results) = alloc_boards(
        shmem,
        use_boards,
        usize::try_from(max_chunk)?,
        usize::try_from(records)?,
    )?;
    // Per board, CPU memory its records come back into after the loop.
    let record_count = usize::try_from(records)?;
    let fetched = board_results
        .iter()
        .map(|_| shmem.alloc::<u64>(record_count, Place::Cpu))
        .collect::<Result<Vec<_>, _>>()?;
    let query_cpu = shmem.alloc::<u32>(FEATURES, Place::Cpu)?;
    let speed_cpu = shmem.alloc::<f64>(1, Place::Cpu)?;
    let all = shmem.alloc::<u64>(n as usize, Place::Cpu)?;

    let mut timer = PhaseTimer::new(shmem);
    timer.run("query", || -> Result<()> {
        if me == ROOT {
            let q = source.query()?;
            shmem.local_write(&query_cpu, 0, &correlogram(q.pixels(), SIDE, SIDE))?;
        }
        Ok(shmem.broadcast(&shmem.team_world(), &query_cpu, &query_cpu, FEATURES, ROOT)?)
    })?;
    let mut query: Features = [0; FEATURES];
    shmem.local_read(&query_cpu, 0, &mut query)?;
    let (speed, timing, basis) = if use_boards {
        let mut sample = vec![0u8; PIXELS];
        source.fill(0, &mut sample)?;
        let (speed, timing, basis) = board_timing(args, shmem, &speed_cpu, &sample, leader)?;
        if leader {
            for bufs in &on_boards {
                shmem.put(&bufs.query, 0, &query, me)?;
            }
        }
        (Some(speed), Some(timing), Some(basis))
    } else {
        (None, None, None)
    };

    // The CPU path's buffers, by thread (a failed board's chunk reruns on its thread).
    let cpu_staging = &stagings.cpu;
    // The CPU path's records, by first image, kept until the loop has ended (as the
    // boards keep theirs): a put into PE 0's table per chunk during the loop wrote
    // there at each PE's own virtual time, and a take from the pool's counter, whose
    // delivery-stamp slot such a write can share (docs/architecture.md §12), then
    // jumped to it (16 nodes on novo-g: gaps of 0.1-0.6 ms between a CPU's chunks).
    let cpu_records = std::sync::Mutex::new(Vec::<(u64, Vec<u64>)>::new());
    let cpu = |range: std::ops::Range<u64>| -> Result<(), String> {
        let mut px = cpu_staging
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default();
        let records: Vec<u64> = range
            .clone()
            .zip(load_chunk(source, &range, &mut px)?.chunks_exact(PIXELS))
            .map(|(id, p)| record(sad(&correlogram(p, SIDE, SIDE), &query), id as u32))
            .collect();
        cpu_staging
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(px);
        cpu_records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((range.start, records));
        Ok(())
    };
    let board_path = CbirBoards {
        shmem,
        source,
        inputs: &on_boards,
        results: &board_results,
        fetched: &fetched,
        all: &all,
        staging: stagings.boards(on_boards.len()),
        kept: on_boards.iter().map(|_| Default::default()).collect(),
        capacity: records,
    };
    // Each board's staging buffer, touched once for the chunks it is likely to take
    // (twice its even share of the node's images: under the virtual clock the first
    // board given a chunk takes more than an even share, since the boards after it
    // start later and take less), as a host pins its DMA
    // buffers before it streams through them: a timed phase of its own, so that
    // touching memory is neither hidden nor counted as a board's work.
    let likely = u64::from(n)
        .div_ceil(u64::from(topo.nodes) * u64::from(boards.max(1)))
        .saturating_mul(2)
        .min(max_chunk);
    timer.run("staging buffers", || {
        let bytes = usize::try_from(likely)?.saturating_mul(PIXELS);
        for buffer in board_path.staging.iter().filter(|_| leader) {
            let mut px = buffer.lock().unwrap_or_else(|e| e.into_inner());
            // A buffer that held as much before is touched already (a chunk's load
            // shortens it, but keeps its pages).
            if px.capacity() < bytes {
                px.resize(bytes, 0);
            }
        }
        Ok::<(), anyhow::Error>(())
    })?;
    let options = shmemplus_cosched::Options {
        trained,
        rho: shmemplus_cosched::Rho::new(args.rho).context("--rho")?,
        cpus: args.device != Device::Fpga,
        boards: use_boards,
        max_board_chunk: Some(max_chunk),
        // An image's pixels go to the board (put_nbi: `CbirBoards::start`). Its
        // record stays there until the loop has ended (`CbirBoards::collect` fetches
        // a board's records in one get), so a chunk moves nothing back.
        board_bytes: Some(shmemplus_cosched::BoardBytes {
            to_board: PIXELS as u64,
            from_board: 0,
            inputs_in_background: true,
        }),
        ..Default::default()
    };
    // Checked and its boards' training priced before the timed phase, as a static
    // split's shares are worked out before its phase.
    let ready = shmemplus_cosched::Loop::prepare(shmem, u64::from(n), &options)?;
    let report = timer.run("co-scheduled", || ready.run(cpu, &board_path))?;
    timer.run("records", || -> Result<()> {
        board_path
            .collect(&cpu)
            .map_err(|e| anyhow::anyhow!("PE {me}: {e}"))?;
        // The CPU path's records (a board's recomputed ones among them), in image
        // order, one put per run of adjacent chunks as a board's (`deliver`); the
        // phase's closing barrier completes them.
        let mut chunks =
            std::mem::take(&mut *cpu_records.lock().unwrap_or_else(|e| e.into_inner()));
        chunks.sort_unstable_by_key(|&(start, _)| start);
        let mut kept = Kept::default();
        let mut records = Vec::new();
        for (start, chunk) in chunks {
            let len = chunk.len() as u64;
            kept.ranges.push(start..start + len);
            kept.len += len;
            records.extend_from_slice(&chunk);
        }
        board_path
            .deliver(&mut kept, &records)
            .map_err(|e| anyhow::anyhow!("PE {me}: {e}"))?;
        Ok(())
    })?;
    // PE 0's node's lines (the nodes are alike) for the next run, outside the phases.
    let trained_file = match (&args.trained, me == ROOT) {
        (Some(path), true) => Some(trained::write(
            path,
            &setting,
            started_trained,
            report.trained.as_ref(),
        )?),
        _ => None,
    };

    // Every PE's devices on PE 0: CPUs first (by PE), then boards (by node, board).
    let mut devices = shmemplus_cosched::gather(shmem, &report)?.unwrap_or_default();
    devices::sort(&mut devices);
    let lines: Vec<DeviceLine> = devices.iter().map(DeviceLine::of).collect();
    let speed_ratio = shmemplus_cosched::speed_ratio(&devices);
    if let (Some(path), true) = (&args.devices, me == ROOT) {
        let title = format!(
            "cbir fastfit: {n} images, {} PEs, {boards} board(s) per node, profile {}",
            topo.n_pes,
            shmem.profile().name
        );
        devices::write_timeline(path, title, shmem, devices)?;
    }
    let top = timer.run("sort", || -> Result<Vec<Hit>> {
        if me != ROOT {
            return Ok(Vec::new());
        }
        let mut records = shmem.local_to_vec(&all)?;
        Ok(top_k(&mut records, args.top_k))
    })?;

    free_boards(shmem, on_boards, board_results)?;
    for f in fetched {
        shmem.free(f)?;
    }
    shmem.free(all)?;
    shmem.free(query_cpu)?;
    shmem.free(speed_cpu)?;

    if me == ROOT {
        let on_cpus: u64 = lines
            .iter()
            .filter(|l: &&DeviceLine| l.device.ends_with("CPU"))
            .map(|l| l.items)
            .sum();
        let report = Report {
            images_on_cpus: on_cpus as u32,
            images_on_boards: n - on_cpus as u32,
            max_per_board: max_chunk as u32,
            devices: lines,
            fastfit_speed_ratio: speed_ratio,
            trained: trained_file,
            ..Report::common(
                args,
                source,
                shmem,
                Schedule::Fastfit,
                (speed, basis, timing),
                &timer,
                top,
            )
        };
        return Ok(Some(StaticRun {
            report,
            timing,
            query,
        }));
    }
    Ok(None)
}

/// PE 0's end of a run: checks the ground truth and (with --verify) the serial top k,
/// and prints the report. A failed verification finalizes and is an error.
fn conclude(
    args: &Args,
    shmem: &shmemplus::Shmem,
    source: &Source,
    query: &Features,
    mut report: Report,
    timing: Option<&shmemplus::fpga_mock::KernelTiming>,
) -> Result<()> {
    if let Some(planted) = source.planted() {
        report.ground_truth_ok = Some(ground_truth_ok(&report.top, planted));
    }
    if args.verify {
        let t = shmem.now();
        let serial = serial_top_k(source, query, args.top_k)?;
        report.serial_s = Some(shmem.now().saturating_sub(t).as_secs_f64());
        report.verified = Some(serial == report.top && report.ground_truth_ok.unwrap_or(true));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", text(&report, timing));
    }
    if args.verify {
        if report.verified != Some(true) {
            shmem.finalize()?;
            bail!(
                "verification failed: the top {} differ from the serial computation \
                 or miss the planted near-duplicates",
                args.top_k
            );
        }
        if !args.json {
            println!("verified");
        }
    }
    Ok(())
}

/// The boards' speed and kernel timing: the CPU path's speed, measured on PE 0 on
/// `sample` (or given by --cpu-ns-per-pixel) and broadcast through `speed_cpu`, times
/// --board-speedup; node leaders load the bitfile on their boards. Collective.
fn board_timing(
    args: &Args,
    shmem: &shmemplus::Shmem,
    speed_cpu: &SymVec<f64>,
    sample: &[u8],
    leader: bool,
) -> Result<(BoardSpeed, shmemplus::fpga_mock::KernelTiming, String)> {
    let (cpu_s, basis) = match args.cpu_ns_per_pixel {
        Some(ns) => (ns * 1e-9, "given".to_string()),
        None => {
            if shmem.my_pe() == ROOT {
                let mut sink = 0u32;
                let s = seconds_per_element(shmem, 8 * PIXELS as u64, 3, || {
                    for _ in 0..8 {
                        sink ^= correlogram(std::hint::black_box(sample), SIDE, SIDE)[0];
                    }
                });
                std::hint::black_box(sink);
                shmem.local_write(speed_cpu, 0, &[s])?;
            }
            shmem.broadcast(&shmem.team_world(), speed_cpu, speed_cpu, 1, ROOT)?;
            (shmem.local_read_one(speed_cpu, 0)?, cpu_basis(shmem))
        }
    };
    let speed = BoardSpeed {
        cpu_seconds_per_element: cpu_s,
        speedup: args.board_speedup,
    };
    let timing = speed
        .timing(kernel::PIPELINE_LATENCY_CYCLES, kernel::OPS_PER_PIXEL)
        .map_err(anyhow::Error::msg)
        .context("--cpu-ns-per-pixel / --board-speedup")?;
    if leader {
        for b in 0..shmem.fpgas() {
            shmem.fpga_configure(b, kernel::bitfile(timing))?;
        }
    }
    Ok((speed, timing, basis))
}

/// Some image to time the CPU path on: PE 0's first own image, else one of its boards'.
fn sample_image<'a>(cpu: &'a [u8], boards: &'a [Vec<u8>]) -> &'a [u8] {
    if cpu.len() >= PIXELS {
        &cpu[..PIXELS]
    } else {
        boards
            .iter()
            .find(|b| b.len() >= PIXELS)
            .map_or(&[0u8; PIXELS][..], |b| &b[..PIXELS])
    }
}

/// Whether the hits begin with the planted near-duplicates (all of them if k allows).
fn ground_truth_ok(top: &[Hit], planted: &[u32]) -> bool {
    let n = planted.len().min(top.len());
    let mut first: Vec<u32> = top[..n].iter().map(|h| h.id).collect();
    first.sort_unstable();
    if top.len() >= planted.len() {
        first == planted
    } else {
        first.iter().all(|id| planted.binary_search(id).is_ok())
    }
}

/// The top k by a serial pass over every image on this PE.
fn serial_top_k(source: &Source, query: &Features, k: usize) -> Result<Vec<Hit>> {
    let mut best = TopK::new(k);
    let mut px = vec![0u8; PIXELS];
    for id in 0..source.len() {
        source.fill(id, &mut px)?;
        best.push(record(sad(&correlogram(&px, SIDE, SIDE), query), id));
    }
    Ok(best.into_hits())
}

fn text(r: &Report, timing: Option<&shmemplus::fpga_mock::KernelTiming>) -> String {
    let mut s = String::new();
    let mut line = |l: String| {
        s.push_str(&l);
        s.push('\n');
    };
    line(format!("cbir: {}, top {}", r.database, r.top.len()));
    line(format!(
        "job: {} PEs on {} nodes x {} PE(s), {} board(s) per node, profile {}, clock {}",
        r.n_pes, r.nodes, r.pes_per_node, r.boards_per_node, r.profile, r.clock
    ));
    let device = match r.device {
        Device::Cpu => "cpu",
        Device::Fpga => "fpga",
        Device::Hybrid => "hybrid",
    };
    if r.schedule == Schedule::Fastfit {
        line(format!(
            "schedule fastfit ({device}, boards {}x a CPU core): {} images on CPUs, {} on boards (board chunks of at most {})",
            r.board_speedup, r.images_on_cpus, r.images_on_boards, r.max_per_board
        ));
        if let Some(measured) = r.fastfit_speed_ratio {
            line(format!(
                "the boards measured {measured:.1}x a CPU core per image (what --split-assume stands for)"
            ));
        }
        if let Some(t) = &r.trained {
            line(t.line());
        }
    } else if r.images_on_boards > 0 {
        let assumed = match r.split_assume {
            Some(a) if a != r.board_speedup => format!(", split assuming {a}x"),
            _ => String::new(),
        };
        line(format!(
            "split ({device}, boards {}x a CPU core{assumed}): {} images on CPUs, {} on boards (at most {} per board)",
            r.board_speedup, r.images_on_cpus, r.images_on_boards, r.max_per_board
        ));
    } else {
        line(format!("split ({device}): all {} images on CPUs", r.images));
    }
    if let (Some(t), Some(ns)) = (timing, r.cpu_ns_per_pixel) {
        line(format!(
            "board kernel (RATSS): PL {:.0} cycles, F {:.0} MHz, {:.0} ops/pixel, R {:.1} ops/cycle; CPU path {ns:.3} ns/pixel ({})",
            t.pipeline_latency_cycles,
            t.clock_hz / 1e6,
            t.ops_per_element,
            t.ops_per_cycle,
            r.cpu_basis.as_deref().unwrap_or("given")
        ));
    }
    line(format!("{:<14}{:>12}", "phase", "ms"));
    for p in &r.phases {
        let mut l = format!("{:<14}{:>12}", p.name, ms(p.seconds));
        if p.name == "compute" && !r.kernels.is_empty() {
            let modeled = r.kernels.iter().map(|k| k.modeled_s).fold(0.0, f64::max);
            let done = r.kernels.iter().map(|k| k.done_after_s).fold(0.0, f64::max);
            l += &format!(
                "   board kernels: modeled up to {} ms, DONE after up to {} ms",
                ms(modeled),
                ms(done)
            );
            if done > 1.5 * modeled {
                l += " (the mock computes on this host's cores: DONE is the later of the two)";
            }
        }
        if p.name == "gather" {
            if let Some(g) = &r.gather {
                l += &format!("   approach {}: {}", g.approach, g.description);
            }
        }
        line(l);
        if p.name == "gather" {
            if let Some(g) = &r.gather {
                match (&g.predicted, &g.no_prediction) {
                    (Some(pr), _) => {
                        let mut inputs = format!("Tr {} ms, Tn {} ms", ms(pr.tr_s), ms(pr.tn_s));
                        if let Some(t2) = pr.tn_combined_s {
                            inputs += &format!(", Tn' {} ms", ms(t2));
                        }
                        line(format!(
                            "{:<14}{:>12}   T = {}; {inputs}; measured/model {}",
                            "  model",
                            ms(pr.seconds),
                            pr.formula,
                            deviation(g.measured_s, pr.seconds)
                        ));
                    }
                    (None, Some(why)) => line(format!("{:<14}{:>12}   {why}", "  model", "n/a")),
                    (None, None) => {}
                }
            }
        }
    }
    line(format!("{:<14}{:>12}", "total", ms(r.total_s)));
    if !r.sweep.is_empty() {
        let best = r
            .sweep
            .iter()
            .map(|t| t.total_s)
            .fold(f64::INFINITY, f64::min);
        line("oracle: total ms of each static split (share of the images on the CPUs)".into());
        for t in &r.sweep {
            let mark = if t.total_s == best {
                "   best (the run above)"
            } else {
                ""
            };
            line(format!(
                "{:>13.0}%{:>12}{mark}",
                t.cpu_share * 100.0,
                ms(t.total_s)
            ));
        }
        let vs = |what: &str, t: Option<f64>| {
            t.map(|t| {
                format!(
                    "{what:<14}{:>12}   {:.2}x the best split's time",
                    ms(t),
                    t / best
                )
            })
        };
        if let Some(l) = vs("static", r.static_s) {
            line(l);
        }
        if let Some(l) = vs("fastfit", r.fastfit_s) {
            match r.fastfit_images_on_cpus {
                Some(on_cpus) => line(format!("{l}; {on_cpus} images on the CPUs")),
                None => line(l),
            }
            if let Some(measured) = r.fastfit_speed_ratio {
                line(format!(
                    "{:<14}its boards measured {measured:.1}x a CPU core per image (what --split-assume stands for)",
                    ""
                ));
            }
        }
    }
    if !r.devices.is_empty() {
        for l in devices::table(&r.devices, "images") {
            line(l);
        }
        for l in devices::steps_lines(&r.devices) {
            line(l);
        }
    }
    line(format!("top {} of {}:", r.top.len(), r.images));
    line(format!("{:>6} {:>10} {:>10}", "rank", "image", "distance"));
    for (i, h) in r.top.iter().enumerate() {
        let tag = match &r.planted {
            Some(p) if p.binary_search(&h.id).is_ok() => "  planted",
            _ => "",
        };
        line(format!("{:>6} {:>10} {:>10}{tag}", i + 1, h.id, h.distance));
    }
    if let (Some(p), Some(ok)) = (&r.planted, r.ground_truth_ok) {
        line(format!(
            "ground truth: {} planted near-duplicate(s) at {:?}: {}",
            p.len(),
            p,
            if ok {
                "all ranked first"
            } else {
                "NOT all ranked first"
            }
        ));
    }
    if let (Some(v), Some(t)) = (r.verified, r.serial_s) {
        line(format!(
            "serial check on PE 0: {:.3} s, top {} {}",
            t,
            r.top.len(),
            if v { "equal" } else { "DIFFER" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn a_boards_records_that_cannot_be_fetched_are_recomputed_chunk_by_chunk() {
        let held = || Kept {
            len: 30,
            ranges: vec![0..10, 20..30, 10..20],
        };
        let ran = RefCell::new(Vec::new());
        let cpu = |r: std::ops::Range<u64>| -> Result<(), String> {
            ran.borrow_mut().push(r);
            Ok(())
        };
        let mut kept = held();
        recompute(&mut kept, &cpu).unwrap();
        assert_eq!(*ran.borrow(), vec![0..10, 20..30, 10..20]);
        assert_eq!((kept.len, kept.ranges.len()), (0, 0));
        // A chunk that fails on the CPU too: an error naming its images; it and the
        // ones after it are still held.
        let failing = |r: std::ops::Range<u64>| -> Result<(), String> {
            if r.start == 20 {
                Err("no memory".into())
            } else {
                Ok(())
            }
        };
        let mut kept = held();
        let e = recompute(&mut kept, &failing).unwrap_err();
        assert!(e.contains("images 20..30: no memory"), "{e}");
        assert_eq!(kept.ranges, vec![20..30, 10..20]);
        assert_eq!(kept.len, 20);
    }

    #[test]
    fn a_chunk_is_its_own_images_whatever_the_buffer_held_before() {
        let source = Source::Synthetic(Synthetic::new(7, 100, 2));
        let image = |id: u32| {
            let mut px = vec![0u8; PIXELS];
            source.fill(id, &mut px).map(|()| px).unwrap_or_default()
        };
        let mut px = Vec::new();
        for range in [0..3u64, 10..40, 50..52, 60..61] {
            let chunk = load_chunk(&source, &range, &mut px).unwrap_or_default();
            assert_eq!(chunk.len(), (range.end - range.start) as usize * PIXELS);
            for (id, got) in range.clone().zip(chunk.chunks_exact(PIXELS)) {
                assert!(got == image(id as u32), "image {id} of {range:?}");
            }
        }
        // The buffer kept the largest chunk's length: later ones write over its start.
        assert_eq!(px.len(), 30 * PIXELS);
    }

    #[test]
    fn adjacent_chunks_merge_into_runs() {
        assert_eq!(
            adjacent_runs(&[0..10, 10..12, 20..30, 30..31, 5..6]),
            vec![0..12, 20..31, 5..6]
        );
        assert!(adjacent_runs(&[]).is_empty());
    }
}
