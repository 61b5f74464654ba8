//! shmemplus-runtime: the job runtime behind `shmemrun`, the launcher side of
//! [`shmemplus::launch`]. `shmemplus bench`, `shmemplus tune` and the integration
//! tests run their jobs through it too.
//!
//! It runs an SPMD job on this machine:
//!
//! - the job identity: a random job id and per-job secret (`spawn`);
//! - spawning the N PEs with the environment contract of [`shmemplus::launch`], each in
//!   its own process group (one signal reaches a PE and its children) and with
//!   `PR_SET_PDEATHSIG = SIGKILL` (a PE dies with a killed launcher; its own children
//!   are then beyond reach, as no launcher code runs) (`spawn`);
//! - serving the bootstrap protocol (authentication and allgather rounds) on a Linux
//!   abstract unix socket `@shmemplus-<job id>`; it never interprets the gathered bytes
//!   (`bootstrap`);
//! - supervision: the first PE that exits non-zero or dies by a signal, a timeout, or
//!   (optionally) SIGINT/SIGTERM/SIGHUP to the launcher ends the job: SIGTERM to every
//!   PE's process group, SIGKILL after [`TERM_GRACE`] (`supervise`, `signals`);
//! - output forwarding: inherited, `[pe N] `-tagged, or captured (`output`);
//! - cleanup after every outcome: every process of every PE group is gone and reaped
//!   (for direct children), and every `/dev/shm` entry named with the job's prefix is
//!   removed (`cleanup`);
//! - the outcome, its one-line message and the launcher's exit code (`report`);
//! - what a job is, and checking its PEs' configuration before any starts (`spec`).
//!
//! It does not know what PEs exchange (that is `shmemplus::bootstrap`), and the library
//! prints nothing: the `shmemrun` binary (`src/bin/shmemrun.rs`) is the command line
//! over it and prints each fault once.

mod bootstrap;
mod cleanup;
mod output;
mod report;
mod signals;
mod spawn;
mod spec;
mod supervise;

pub use bootstrap::socket_name;
pub use cleanup::{live_group_members, sweep_shm};
pub use report::{
    ExitCause, JobOutcome, JobReport, LaunchError, EXIT_CONFIG, EXIT_NOT_EXECUTABLE,
    EXIT_NOT_FOUND, EXIT_PE_FATAL, EXIT_RUST_PANIC, EXIT_TIMEOUT, EXIT_USAGE,
};
pub use signals::signal_name;
pub use spec::{apply_profile, JobSpec, OutputMode};
pub use supervise::{run_job, TERM_GRACE};
