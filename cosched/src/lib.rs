//! FastFit co-scheduling for shmemplus jobs: the iterations of a data-parallel loop
//! are shared by every PE's CPU and every board of the job at run time, with no
//! split chosen in advance (Rodríguez et al., "Lightweight asynchronous scheduling in
//! heterogeneous reconfigurable systems", 2021).
//!
//! - [`fastfit`]: the pipeline model of a board kernel, fitted from two timed chunks,
//!   and the chunk at which a board reaches a fraction rho of its peak throughput.
//! - [`pool`]: the loop's iterations as a shared counter in the global address space,
//!   taken in chunks by remote atomics (no central server).
//! - [`run`](mod@run): the drivers (each PE's CPU; the boards of a node, driven by
//!   its first PE from one thread per board on the wall clock or from the PE's one
//!   thread on the virtual clock), failover when a board fails, and the final drain;
//!   `round`: a trained loop of a PE on the virtual clock run as one planned round;
//!   `prepared`: a [`Loop`] made ready (checked, planned) before it runs;
//!   `options`: how a loop is configured ([`Options`]); `paths`: the application's
//!   CPU path and [`BoardPath`], and failing a board's chunk over to the CPU path.
//! - `fits`: what a node's boards and their driver learn from timed chunks (the line
//!   through the boards' samples, the CPU path's time per iteration on one thread);
//!   `sizing`: what a board (FastFit) or a CPU (measured throughput) asks for next,
//!   from them; `plan`: on one driver thread, the board chunks that end a node's
//!   boards together; `stats`: the median they and the reports share.
//! - [`report`]: what each device did.
//!
//! This crate owns *who runs which iterations and when*. It must not know what an
//! iteration computes or move the application's data: the caller's closures do.
//!
//! ```no_run
//! use shmemplus_cosched::{run, NoBoards, Options};
//! let shmem = shmemplus::init()?;
//! // Every PE calls run; here on the CPUs only (a `BoardPath` stages a chunk on a
//! // board and starts its kernel, then fetches its results).
//! let options = Options { boards: false, ..Options::default() };
//! let report = run(
//!     &shmem,
//!     1_000_000,
//!     &options,
//!     |range| { for _i in range { /* CPU work */ } Ok(()) },
//!     &NoBoards,
//! )?;
//! for d in &report.devices {
//!     println!("{}: {} chunks, {} iterations", d.device, d.chunks, d.items);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod board_threads;
pub mod fastfit;
mod fits;
mod options;
mod paths;
mod plan;
pub mod pool;
mod prepared;
mod progress;
pub mod report;
mod round;
pub mod run;
mod sizing;
mod stats;

pub use fastfit::{PipelineModel, Rho, Sample};
pub use pool::WorkPool;
pub use prepared::{run, Loop};
pub use report::{
    gather, speed_ratio, BoardFit, BoardSteps, Device, DeviceReport, Report, Span, StepTotals,
    Steps, StopReason, Timeline, Trained,
};
pub use run::{BoardBytes, BoardPath, NoBoards, Options, Scope, CPU_FIRST_PIECE_MARGIN};

/// What can go wrong in co-scheduling.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// rho must lie strictly between 0 and 1.
    #[error("rho must be in (0, 1), got {0}")]
    Rho(f64),
    /// Two samples of one size (or unusable times) cannot fit a model.
    #[error("cannot fit the pipeline model: {0}")]
    Fit(String),
    /// A loop of no iterations.
    #[error("a co-scheduled loop needs at least one iteration")]
    EmptyLoop,
    /// The loop is too long for the shared counter to stay exact.
    #[error("a loop of {n} iterations is too long for {workers} workers (the shared counter could overflow)")]
    TooLong {
        /// The iterations asked for.
        n: u64,
        /// The workers of the job.
        workers: u64,
    },
    /// Options that leave no device to run the loop on.
    #[error("no device to run the loop on: {0}")]
    NoDevice(String),
    /// A setting out of range.
    #[error("bad option: {0}")]
    Option(String),
    /// The CPU body failed on a chunk.
    #[error("PE {pe}: the CPU path failed on iterations {first}..{end}: {why}")]
    Cpu {
        /// The PE.
        pe: u32,
        /// The chunk's first iteration.
        first: u64,
        /// One past its last.
        end: u64,
        /// What the body said.
        why: String,
    },
    /// A board failed and its chunk could not be rerun on the CPU either.
    #[error("board {board} of PE {pe} failed on iterations {first}..{end} ({board_error}), and the CPU path failed on them too: {cpu_error}")]
    Board {
        /// The PE driving the board.
        pe: u32,
        /// The board.
        board: u32,
        /// The chunk's first iteration.
        first: u64,
        /// One past its last.
        end: u64,
        /// What the board body said.
        board_error: String,
        /// What the CPU body said.
        cpu_error: String,
    },
    /// A stored [`Trained`] (read back with [`Trained::from_json`]) is not one that
    /// [`run()`] could have made.
    #[error("unusable trained lines: {0}")]
    Trained(String),
    /// The threads that drive the boards on the wall clock could not be started.
    #[error("could not start the board threads: {0}")]
    Threads(String),
    /// A call of the library failed.
    #[error(transparent)]
    Shmem(#[from] shmemplus::Error),
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
