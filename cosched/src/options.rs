//! How a co-scheduled loop is configured ([`Options`], FastFit's defaults in
//! `Options::default()`): who shares it ([`Scope`]), what a board chunk moves
//! ([`BoardBytes`]), the training samples, the lines of an earlier loop.
//!
//! This module owns the options and their defaults. It must not check them against
//! a loop (`run` does, at the loop's start) nor act on them.

use crate::fastfit::Rho;
use crate::report::Trained;
use serde::Serialize;

/// How a loop is co-scheduled. `Options::default()` is FastFit's configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Options {
    /// The fraction of its peak throughput a board's chunk must reach (default 0.99,
    /// [`Rho::DEFAULT`]).
    pub rho: Rho,
    /// Sizes of each board's two training chunks; `None` (the default): the first is
    /// `n / (64 * workers)` (at least 1), the second four times that.
    pub samples: Option<(u64, u64)>,
    /// Seconds a CPU chunk should take once the CPU's throughput is known (default
    /// 2 ms: the remote take that starts a chunk costs microseconds, and under the
    /// virtual clock a board waits for at most one CPU chunk to be served).
    pub cpu_chunk_s: f64,
    /// Whether the PEs' CPUs take chunks (default true). Without them they still
    /// drain the pool at the end if boards failed.
    pub cpus: bool,
    /// Whether the boards take chunks (default true; a job without boards runs on the
    /// CPUs).
    pub boards: bool,
    /// The largest chunk a board may take (its buffers' capacity), training samples
    /// included; `None` (the default): no limit.
    pub max_board_chunk: Option<u64>,
    /// Who shares the loop (default [`Scope::Job`]).
    pub scope: Scope,
    /// What a board chunk moves per iteration, if the caller says. With it each board
    /// asks the communication model what the transfers of its small training sample
    /// and of its largest chunk cost, and
    /// - trains on one chunk instead of two: the second sample is the largest chunk's
    ///   modeled transfers plus what the first took beyond its own, in proportion
    ///   (`BoardFit::second_sample_modeled`);
    /// - does not train at all, if the CPUs take part, when on the virtual clock's
    ///   one driver thread the transfers alone cost the thread as much per iteration
    ///   as the CPU path, or when on the wall clock (a thread per board) the CPUs
    ///   would do all that is left before a training sample's modeled transfers
    ///   alone are done. Both go by the CPU path's typical time per iteration (known
    ///   after two pieces or chunks beyond its first, which the boards wait for: the
    ///   first ones can pay first-use costs many times a piece's).
    ///
    /// `None` (the default): two measured samples, as FastFit trains. Nothing changes
    /// on a profile that models no costs (native).
    pub board_bytes: Option<BoardBytes>,
    /// What the boards learned in an earlier loop of the same kernel over iterations
    /// of the same size ([`Report::trained`](crate::Report::trained) of this PE): its boards take FastFit's
    /// chunks from the start and do not train (`samples` is then unused). A pass of
    /// a kernel run again (the 2D FFT's column pass after its row pass) pays its
    /// training once. `None` (the default): the boards train.
    pub trained: Option<Trained>,
    /// The application's estimate of the CPU path's seconds per iteration, before
    /// the loop measures it (an upper bound does; finite and > 0). On the virtual
    /// clock's one driver thread the CPU's first piece, whose time is not known yet,
    /// waits for a training sample due within [`CPU_FIRST_PIECE_MARGIN`] times this
    /// estimate, and runs beside one due later: the CPU is then measured before the
    /// node's first production chunk is sized. `None` (the default): it waits for
    /// every sample due within a CPU chunk's time (`cpu_chunk_s`), since a first
    /// piece of unknown length could hold the thread past the sample's DONE.
    ///
    /// With `board_bytes`, a board also decides on it before the loop not to train,
    /// where the rules that otherwise wait for the CPU's measured typical time would
    /// stop it even with the CPU twice as slow as this estimate: then it takes no
    /// chunk, on the wall clock no thread runs for it, and its report says it
    /// decided on the estimate ([`crate::StopReason::Predicted`] or
    /// [`crate::StopReason::Outlasted`] with `cpu_estimated`). Where twice the estimate
    /// does not decide, the board waits for the CPU's typical time as without one.
    ///
    /// ```
    /// use shmemplus_cosched::{run, Error, NoBoards, Options};
    /// let shmem = shmemplus::init()?;
    /// let cpu = |_: std::ops::Range<u64>| Ok(());
    /// // A CPU iteration of about 5 us (the 2D FFT's 1024-point row at 5 ns a point).
    /// // On the CPUs only: no board path is given.
    /// let options = Options {
    ///     boards: false,
    ///     cpu_item_estimate_s: Some(5.1e-6),
    ///     ..Options::default()
    /// };
    /// let report = run(&shmem, 100, &options, cpu, &NoBoards)?;
    /// assert_eq!(report.devices.iter().map(|d| d.items).sum::<u64>(), 100);
    /// // An estimate that says nothing is refused.
    /// let zero = Options { cpu_item_estimate_s: Some(0.0), ..options };
    /// assert!(matches!(run(&shmem, 100, &zero, cpu, &NoBoards), Err(Error::Option(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub cpu_item_estimate_s: Option<f64>,
    /// On the virtual clock's one driver thread, whether every board of a node that
    /// would wait for the node's model while two of them take its training samples
    /// takes a large sample too (default false). For a board path whose chunks cost
    /// the thread little beside their kernels: the 2D FFT's rows on native, whose
    /// kernels are latency-bound, so that the waiting boards idled through a round
    /// as long as the static split's whole pass. Not where the stagings are dear:
    /// CBIR on native, whose stagings cost the thread about 5 us an image, took
    /// 0.88x the best split with it at 4 boards per node, 0.77x without. Where the
    /// communication model prices transfers that hold the thread (a blocking DMA),
    /// the boards wait all the same.
    pub every_board_samples: bool,
}

/// How many times the application's estimate of an iteration
/// ([`Options::cpu_item_estimate_s`]) a training sample's DONE must still be away for
/// the CPU's first piece to run beside it: a loop's first piece pays first-use
/// costs (the 2D FFT's first row: 5-9 us where later ones take 1.6-2.3).
pub const CPU_FIRST_PIECE_MARGIN: f64 = 4.0;

/// Bytes a board chunk moves per iteration ([`Options::board_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BoardBytes {
    /// Into the board (the iteration's inputs).
    pub to_board: u64,
    /// Back from the board (its results).
    pub from_board: u64,
    /// Whether the board path puts the inputs with `put_nbi` and starts the kernel
    /// without a `quiet` (`Shmem::kernel_start` orders the kernel after the PE's puts
    /// into its board): the inputs' DMA then runs while the driver's thread goes on
    /// (on the virtual clock), and only the results' transfer is counted as holding
    /// the thread. `false`: the inputs are put with a blocking `put`.
    pub inputs_in_background: bool,
}

/// Who shares a co-scheduled loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One loop over the job: every PE's CPU and every board of every node take from
    /// one pool on PE 0; the first PE of each node drives its node's boards. For work
    /// any PE can do (CBIR's images, generated or read by whoever takes them).
    #[default]
    Job,
    /// One loop per PE over its own data: each PE's CPU and its own partitions of
    /// its node's boards take from a pool in its own memory (the iterations are the
    /// PE's, `0..n` on every PE). For work that lives on the PE (the 2D FFT's rows).
    Pe,
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
            scope: Scope::Job,
            board_bytes: None,
            trained: None,
            cpu_item_estimate_s: None,
            every_board_samples: false,
        }
    }
}
