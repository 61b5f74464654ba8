//! `shmemplus bench`: put/get latency and bandwidth, barrier and AM round-trip times,
//! measured the way the OSU micro-benchmarks do, next to plain memcpy of the same sizes
//! on the same buffers in the same run.
//!
//! This module owns the options and the entry points ([`run`], the launching side, and
//! [`run_pe`], the PE side); its submodules own one concern each: `job` the job and the
//! order of the measurements, `route` the routes and `--routes`, `rma` the route
//! measurements, `ops` barrier, AM round trips and contention, `atomics` and
//! `collectives` the route groups, `sweep` the packet sweep, `stats` medians and timing
//! loops, `report` the JSON records, plot and file outputs. The job is started through
//! [`crate::launcher`] (the PEs are this same binary running the hidden `bench-pe`
//! subcommand); nothing here may contain transport code.
//!
//! Every figure is read on the job clock (`Shmem::now`, see `stats`): real time under
//! `--clock wall`, the PE's virtual time under `--clock virtual`, where the computation
//! between library calls is not counted, so the figures are communication only.
//!
//! Method (per size, PE 0 measuring against PE 1, every figure a median over
//! repetitions after warm-up):
//! - put latency: one put followed by `quiet`, per iteration;
//! - get latency: one blocking get per iteration;
//! - bandwidth: a window of puts (or gets) on the same source and destination buffers
//!   followed by one `quiet`;
//! - memcpy: the same window of plain copies from the same source buffer into the
//!   measuring PE's own copy of the destination object (the put direction; both
//!   ratio columns divide by it).

mod atomics;
mod collectives;
mod job;
mod ops;
mod pingpong;
mod report;
mod rma;
mod route;
mod stats;
mod sweep;

pub use job::{run, run_pe};
pub use report::Record;
pub use route::{Route, RouteSelection};
pub use stats::{median, percentile};

/// Options of `shmemplus bench` (shared by the launching side and the PEs).
#[derive(Debug, Clone, clap::Args)]
pub struct BenchOptions {
    /// Number of PEs of the benchmark job.
    #[arg(short = 'n', long = "np", default_value_t = 2)]
    pub n_pes: u32,
    /// Number of simulated nodes (default: one PE per node).
    #[arg(long)]
    pub nodes: Option<u32>,
    /// Conduit for put/get: shm (shared mapping) or am (active messages).
    #[arg(long, default_value = "shm")]
    pub conduit: String,
    /// What to measure: any of rma, barrier, am, contention, packet-sweep,
    /// scf-pingpong (comma separated). `scf-pingpong`: round-trip bandwidth of a
    /// ping-pong between PE 0's CPU and PE 1's CPU and board, through SHMEM+ and SCF. `contention`: every PE but 0 puts 8 MiB to PE 0 at once, against one
    /// alone. `packet-sweep`: remote FPGA -> FPGA puts of 4-32 MiB with the tuned
    /// (auto) packet and every candidate of the model's packet search. Default:
    /// rma,barrier,am; none when `--routes` names only route groups.
    #[arg(long, value_delimiter = ',')]
    pub ops: Vec<String>,
    /// Routes for `rma`: cpu-cpu, cpu-fpga-local, cpu-fpga-remote, fpga-fpga-local,
    /// fpga-fpga-remote; and the route groups `atomics` (atomic latencies on the CPU
    /// heap) and `collectives` (barrier, broadcast, fcollect, alltoall over the world
    /// team), which run whatever `--ops` says; `all` is every route and both groups.
    #[arg(long, default_value = "cpu-cpu", value_delimiter = ',')]
    pub routes: Vec<String>,
    /// Cluster profile to emulate (native, mu, novo-g or a TOML file); default: the
    /// SHMEMPLUS_PROFILE variable, else native.
    #[arg(long, value_name = "NAME|PATH")]
    pub profile: Option<String>,
    /// The clock the job's modeled time runs on: wall (real time; modeled hops sleep)
    /// or virtual (every PE's own clock; nothing sleeps, so emulated sweeps run at the
    /// host's speed). Every figure is read on this clock, and under virtual time
    /// computation between calls is not counted (communication only; the memcpy
    /// reference is CPU time scaled by the profile's CPU speed). Default: the
    /// SHMEMPLUS_CLOCK variable, else wall.
    #[arg(long, value_name = "wall|virtual")]
    pub clock: Option<String>,
    /// Draw bandwidth against size, one curve per route and op, to FILE.svg or FILE.png.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// Smallest transfer in bytes (powers of two from here).
    #[arg(long, default_value = "8", value_parser = parse_size_arg)]
    pub min_size: usize,
    /// Largest transfer in bytes.
    #[arg(long, default_value = "32M", value_parser = parse_size_arg)]
    pub max_size: usize,
    /// Offset the private source buffer by this many bytes from a page boundary (the
    /// destination is page-aligned), to measure misaligned copies: 0 to 4095.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..4096))]
    pub misalign: u16,
    /// Repetitions per figure (the median is reported).
    #[arg(long, default_value_t = 15)]
    pub reps: usize,
    /// Few sizes and repetitions: a smoke run for CI.
    #[arg(long)]
    pub quick: bool,
    /// Write one JSON record per (route, op, bytes) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

fn parse_size_arg(s: &str) -> Result<usize, String> {
    shmemplus::config::parse_size(s)
}
