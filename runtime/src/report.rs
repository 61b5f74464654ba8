//! How a job ended, and why one could not start: [`ExitCause`], [`JobOutcome`],
//! [`JobReport`], [`LaunchError`], their one-line messages and the exit code a launcher
//! exits with for each (the table in the README's "Exit codes" section).
//!
//! This module owns the vocabulary of outcomes and their wording. It must not observe
//! processes or decide outcomes (that is `supervise`), nor print anything: a launcher
//! prints [`JobReport::message`] (with [`JobReport::advice`]) or a [`LaunchError`] once.

use std::fmt;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use crate::signals::signal_name;
#[cfg(doc)]
use crate::{run_job, JobSpec, OutputMode};

/// Exit code for a usage error: a bad option, an impossible topology (`-n 0`), a
/// profile given with `--profile` that cannot be loaded (clap uses it too).
pub const EXIT_USAGE: i32 = 2;
/// Exit code for a bad configuration variable (`SHMEM_SYMMETRIC_SIZE=abc`, a
/// `SHMEMPLUS_PROFILE` that cannot be loaded): `EX_CONFIG` of sysexits.h.
pub const EXIT_CONFIG: i32 = 78;
/// Exit code when the program cannot be executed (found, but not executable).
pub const EXIT_NOT_EXECUTABLE: i32 = 126;
/// Exit code when the program is not found.
pub const EXIT_NOT_FOUND: i32 = 127;
/// Exit code when the job exceeded its timeout.
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit code of a PE that ended the job itself because it could not go on correctly
/// (the library's fatal exit path); the launcher passes it on.
pub const EXIT_PE_FATAL: i32 = 70;
/// Exit code of a Rust program that panicked on its main thread.
pub const EXIT_RUST_PANIC: i32 = 101;

/// Why a PE process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCause {
    /// It exited with this status code.
    Code(i32),
    /// It was killed by this signal.
    Signal(i32),
}

impl ExitCause {
    /// Whether this is a clean exit (code 0).
    pub fn is_success(self) -> bool {
        self == ExitCause::Code(0)
    }

    /// The shell convention: the code, or 128 + the signal number.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitCause::Code(c) => c,
            ExitCause::Signal(s) => 128 + s,
        }
    }

    pub(crate) fn from_status(status: ExitStatus) -> ExitCause {
        match (status.code(), status.signal()) {
            (Some(c), _) => ExitCause::Code(c),
            (None, Some(s)) => ExitCause::Signal(s),
            // Neither: stopped/continued statuses are never returned by wait(); treat as
            // an unknown failure rather than success.
            (None, None) => ExitCause::Code(-1),
        }
    }
}

impl fmt::Display for ExitCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExitCause::Code(c) => write!(f, "exited with code {c}"),
            ExitCause::Signal(s) => write!(f, "was killed by signal {s} ({})", signal_name(s)),
        }
    }
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Every PE exited with code 0.
    Success,
    /// The first PE that failed; the others were then ended.
    PeFailed {
        /// Its rank.
        pe: u32,
        /// Its process id.
        pid: u32,
        /// How it ended.
        cause: ExitCause,
    },
    /// The job ran longer than [`JobSpec::timeout`].
    TimedOut {
        /// The timeout.
        after: Duration,
    },
    /// The launcher received this signal (with [`JobSpec::handle_signals`]).
    Interrupted {
        /// The signal number.
        signal: i32,
    },
    /// A PE joined the job (connected to the bootstrap socket) and exited with status
    /// 0 without finalizing while other PEs still ran: they would have waited for it
    /// forever in their next collective call, so the job was ended.
    PeLeftEarly {
        /// Its rank.
        pe: u32,
        /// Its process id.
        pid: u32,
    },
    /// A PE called `global_exit(code)`: every PE was ended and the job's exit code is
    /// `code` (0 included), whatever the others were doing.
    GlobalExit {
        /// Its rank.
        pe: u32,
        /// Its process id.
        pid: u32,
        /// The code it asked the job to exit with.
        code: i32,
    },
}

/// The result of [`run_job`].
#[derive(Debug, Clone)]
pub struct JobReport {
    /// How the job ended.
    pub outcome: JobOutcome,
    /// How each PE ended, by rank; `None` if it could not be reaped (should not happen).
    pub exits: Vec<Option<ExitCause>>,
    /// Process id of each PE, by rank (also its process group id).
    pub pids: Vec<u32>,
    /// The job id (`SHMEMPLUS_JOB_ID`).
    pub job_id: String,
    /// Wall-clock time from the first spawn to the end of cleanup.
    pub elapsed: Duration,
    /// Each PE's stdout, by rank; only with [`OutputMode::Capture`], else empty.
    pub stdout: Vec<String>,
    /// Each PE's stderr, by rank; only with [`OutputMode::Capture`], else empty.
    pub stderr: Vec<String>,
}

impl JobReport {
    /// One line saying how the job ended, e.g. `PE 3 (pid 1234) was killed by signal 9
    /// (SIGKILL)`, `PE 1 (pid 99) exited with code 2` or `job exceeded the timeout of 5s`.
    pub fn message(&self) -> String {
        match &self.outcome {
            JobOutcome::Success => format!("all {} PEs exited successfully", self.exits.len()),
            JobOutcome::PeFailed { pe, pid, cause } => format!("PE {pe} (pid {pid}) {cause}"),
            JobOutcome::PeLeftEarly { pe, pid } => format!(
                "PE {pe} (pid {pid}) exited with code 0 without finalizing shmemplus while other PEs still ran"
            ),
            JobOutcome::GlobalExit { pe, pid, code } => {
                format!("PE {pe} (pid {pid}) ended the job with global_exit({code})")
            }
            JobOutcome::TimedOut { after } => format!("job exceeded the timeout of {after:?}"),
            JobOutcome::Interrupted { signal } => format!(
                "job interrupted by signal {signal} ({})",
                signal_name(*signal)
            ),
        }
    }

    /// The exit code a launcher should exit with: 0 on success, the failed PE's code
    /// (or 128 + its signal), 124 on timeout, 128 + the signal when interrupted, the
    /// code of a `global_exit`.
    pub fn exit_code(&self) -> i32 {
        match &self.outcome {
            JobOutcome::Success => 0,
            JobOutcome::PeFailed { cause, .. } => match cause.shell_code() {
                // A failure must never look like success (or wrap to it modulo 256).
                c if c & 0xff == 0 => 1,
                c => c,
            },
            JobOutcome::TimedOut { .. } => EXIT_TIMEOUT,
            JobOutcome::Interrupted { signal } => 128 + signal,
            JobOutcome::PeLeftEarly { .. } => 1,
            // The code asked for; one that wraps to 0 modulo 256 is not success.
            JobOutcome::GlobalExit { code, .. } => match *code {
                c if c != 0 && c & 0xff == 0 => 1,
                c => c,
            },
        }
    }

    /// What to do about the outcome, when there is something more to say than
    /// [`JobReport::message`]: where the PE's own message is, or which option to change.
    /// It speaks of the PE's message "above", so it fits a launcher whose PEs write to
    /// its own stderr (not [`OutputMode::Capture`]).
    pub fn advice(&self) -> Option<&'static str> {
        match &self.outcome {
            JobOutcome::PeFailed { cause, .. } => match *cause {
                ExitCause::Code(EXIT_RUST_PANIC) => {
                    Some("code 101 is a Rust panic: the PE's panic message is above")
                }
                ExitCause::Code(EXIT_PE_FATAL) => {
                    Some("the PE ended the job itself: its reason is the line above")
                }
                ExitCause::Signal(9) => Some(
                    "SIGKILL came from outside the job: a user, a script, or the kernel's out-of-memory killer; see dmesg",
                ),
                ExitCause::Signal(_) => None,
                ExitCause::Code(_) => None,
            },
            JobOutcome::PeLeftEarly { .. } => {
                Some("every PE must call finalize (or drop its handle) before it exits")
            }
            JobOutcome::TimedOut { .. } => Some("raise --timeout if the job needs longer"),
            JobOutcome::Success | JobOutcome::Interrupted { .. } | JobOutcome::GlobalExit { .. } => {
                None
            }
        }
    }
}

/// Why a job could not be run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// `n_pes`, `pes_per_node` and `nodes` describe an impossible job.
    #[error(transparent)]
    BadTopology(shmemplus::Error),
    /// A PE could not be started (missing program, permissions, ...).
    #[error("{}", spawn_message(*pe, program, source))]
    Spawn {
        /// The PE that failed to start (PEs before it were started and then ended).
        pe: u32,
        /// The program, as given.
        program: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The bootstrap socket could not be created.
    #[error("bootstrap socket {address}: {source}")]
    Socket {
        /// The socket address (`@name` for an abstract socket).
        address: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Another OS facility failed (random numbers, the async runtime, signal handlers).
    #[error("{what}: {source}")]
    Os {
        /// What the launcher was doing.
        what: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl LaunchError {
    /// The exit code a launcher should exit with (see the constants of this module):
    /// [`EXIT_USAGE`] for a bad topology, [`EXIT_NOT_FOUND`] or [`EXIT_NOT_EXECUTABLE`]
    /// when the program cannot be started, 1 for the rest.
    pub fn exit_code(&self) -> i32 {
        match self {
            LaunchError::BadTopology(_) => EXIT_USAGE,
            LaunchError::Spawn { source, .. } => match source.kind() {
                io::ErrorKind::NotFound => EXIT_NOT_FOUND,
                io::ErrorKind::PermissionDenied => EXIT_NOT_EXECUTABLE,
                _ => 1,
            },
            LaunchError::Socket { .. } | LaunchError::Os { .. } => 1,
        }
    }
}

/// The message of [`LaunchError::Spawn`]: what was wrong and what to do.
fn spawn_message(pe: u32, program: &str, source: &io::Error) -> String {
    let looked_up = if program.contains('/') {
        "check the path"
    } else {
        "give its path, or a name found in PATH"
    };
    match source.kind() {
        io::ErrorKind::NotFound => format!("program not found: {program} ({looked_up})"),
        io::ErrorKind::PermissionDenied => format!(
            "program not executable: {program} (permission denied; check that it is a program with execute permission)"
        ),
        _ => format!("cannot start PE {pe} as {program}: {source}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcome: JobOutcome) -> JobReport {
        JobReport {
            outcome,
            exits: vec![Some(ExitCause::Code(0)); 4],
            pids: vec![1, 2, 3, 4],
            job_id: "00".into(),
            elapsed: Duration::ZERO,
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }

    #[test]
    fn messages_and_exit_codes() {
        let r = report(JobOutcome::PeFailed {
            pe: 3,
            pid: 1234,
            cause: ExitCause::Signal(9),
        });
        assert_eq!(
            r.message(),
            "PE 3 (pid 1234) was killed by signal 9 (SIGKILL)"
        );
        assert_eq!(r.exit_code(), 137);
        let r = report(JobOutcome::PeFailed {
            pe: 1,
            pid: 99,
            cause: ExitCause::Code(2),
        });
        assert_eq!(r.message(), "PE 1 (pid 99) exited with code 2");
        assert_eq!(r.exit_code(), 2);
        let r = report(JobOutcome::TimedOut {
            after: Duration::from_secs(5),
        });
        assert_eq!(r.message(), "job exceeded the timeout of 5s");
        assert_eq!(r.exit_code(), 124);
        let r = report(JobOutcome::Interrupted { signal: 2 });
        assert_eq!(r.message(), "job interrupted by signal 2 (SIGINT)");
        assert_eq!(r.exit_code(), 130);
        let r = report(JobOutcome::Success);
        assert_eq!(r.exit_code(), 0);
        assert_eq!(r.message(), "all 4 PEs exited successfully");
        let r = report(JobOutcome::GlobalExit {
            pe: 1,
            pid: 7,
            code: 7,
        });
        assert_eq!(r.exit_code(), 7);
        assert_eq!(
            r.message(),
            "PE 1 (pid 7) ended the job with global_exit(7)"
        );
        assert_eq!(r.advice(), None);
        for (code, exit) in [(0, 0), (256, 1), (-1, -1)] {
            let r = report(JobOutcome::GlobalExit {
                pe: 0,
                pid: 1,
                code,
            });
            assert_eq!(r.exit_code(), exit, "global_exit({code})");
        }
        // A failure never maps to exit code 0 (or 256).
        let r = report(JobOutcome::PeFailed {
            pe: 0,
            pid: 5,
            cause: ExitCause::Code(256),
        });
        assert_ne!(r.exit_code() & 0xff, 0);
    }
}
