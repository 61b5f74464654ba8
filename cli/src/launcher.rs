//! The job launcher and supervisor: the launcher side of `shmemplus::launch`.
//!
//! This module owns everything `shmemrun` (and `shmemplus bench`, and the integration
//! tests) needs to run an SPMD job on this machine:
//!
//! - the job identity: a random job id and per-job secret;
//! - spawning the N PEs with the environment contract of [`shmemplus::launch`], each in
//!   its own process group (one signal reaches a PE and its children) and with
//!   `PR_SET_PDEATHSIG = SIGKILL` (a PE dies with a killed launcher; its own children
//!   are then beyond reach, as no launcher code runs);
//! - serving the bootstrap protocol (authentication and allgather rounds) on a Linux
//!   abstract unix socket `@shmemplus-<job id>`; it never interprets the gathered bytes;
//! - supervision: the first PE that exits non-zero or dies by a signal, a timeout, or
//!   (optionally) SIGINT/SIGTERM/SIGHUP to the launcher ends the job: SIGTERM to every
//!   PE's process group, SIGKILL after [`TERM_GRACE`];
//! - output forwarding (inherited, `[pe N] `-tagged, or captured);
//! - cleanup after every outcome: every process of every PE group is gone and reaped (for
//!   direct children), and every `/dev/shm` entry named with the job's prefix is removed.
//!
//! It does not know what PEs exchange (that is `shmemplus::bootstrap`), nor the CLI (that
//! is `bin/shmemrun.rs`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shmemplus::launch::{self, ToLauncher, ToPe};
use shmemplus::Topology;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long PEs get between SIGTERM and SIGKILL when the job is ended.
pub const TERM_GRACE: Duration = Duration::from_millis(500);
/// How long the launcher waits for SIGKILLed processes to disappear before giving up.
const KILL_WAIT: Duration = Duration::from_secs(3);
/// How long output forwarding may take to drain after the PEs are gone.
const OUTPUT_DRAIN: Duration = Duration::from_secs(1);
/// An unauthenticated connection must send its `Auth` frame within this time.
const AUTH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest first (`Auth`) frame accepted: a stranger cannot make the launcher allocate
/// [`launch::MAX_FRAME_BYTES`] before proving it knows the secret.
const AUTH_MAX_FRAME: u32 = 4096;
/// Poll interval while waiting for process groups to empty.
const POLL: Duration = Duration::from_millis(20);

/// What happens to the PEs' stdout and stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// The PEs write straight to the launcher's stdout/stderr (the default).
    #[default]
    Inherit,
    /// Every line is prefixed with `[pe N] ` and written to the launcher's stdout or
    /// stderr; a partial last line is completed with a newline at end of stream.
    Tagged,
    /// Each PE's output is collected into [`JobReport::stdout`] / [`JobReport::stderr`]
    /// (decoded lossily as UTF-8).
    Capture,
}

/// What to run: the program, the number of PEs, their topology and the job's limits.
///
/// PE 0 inherits the launcher's stdin when it is not a terminal and the output mode is
/// not [`OutputMode::Capture`]; every other PE (and PE 0 otherwise) reads `/dev/null`.
/// (PEs sit in their own process groups, so a PE reading the terminal would be stopped.)
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Number of PEs (at least 1).
    pub n_pes: u32,
    /// PEs per simulated node (see [`Topology::resolve`]).
    pub pes_per_node: Option<u32>,
    /// Number of simulated nodes (see [`Topology::resolve`]).
    pub nodes: Option<u32>,
    /// End the job with [`JobOutcome::TimedOut`] after this long.
    pub timeout: Option<Duration>,
    /// Where the PEs' output goes.
    pub output: OutputMode,
    /// The program every PE runs (looked up in `PATH` like a shell would).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment for every PE (the `SHMEMPLUS_*` contract variables win).
    pub env: Vec<(OsString, OsString)>,
    /// End the job with [`JobOutcome::Interrupted`] on SIGINT, SIGTERM or SIGHUP to the
    /// launcher. This installs process-wide handlers that stay installed after
    /// [`run_job`] returns, so only a launcher binary should set it.
    pub handle_signals: bool,
}

impl JobSpec {
    /// A job of `n_pes` PEs running `program` without arguments: one PE per node, no
    /// timeout, inherited output, no signal handling.
    pub fn new(n_pes: u32, program: impl Into<OsString>) -> Self {
        JobSpec {
            n_pes,
            pes_per_node: None,
            nodes: None,
            timeout: None,
            output: OutputMode::Inherit,
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            handle_signals: false,
        }
    }
}

/// Makes `spec` run on the cluster `profile` (a built-in name or a TOML path): exports
/// `SHMEMPLUS_PROFILE` to the PEs (a file as an absolute path, so PEs in any working
/// directory find it) and, where the caller gave no topology, takes the profile's:
/// `n_pes` = the profile's nodes x PEs per node when `n_pes` is `None`, and the
/// profile's PEs per node when neither `pes_per_node` nor `nodes` is set.
///
/// ```
/// use shmemplus_cli::launcher::{apply_profile, JobSpec};
/// let mut spec = JobSpec::new(1, "hello");
/// let profile = apply_profile(&mut spec, "mu", None).unwrap();
/// assert_eq!(spec.n_pes, profile.topology.nodes * profile.topology.pes_per_node);
/// assert!(apply_profile(&mut spec, "no-such-profile", None).is_err());
/// ```
pub fn apply_profile(
    spec: &mut JobSpec,
    name_or_path: &str,
    n_pes: Option<u32>,
) -> Result<shmemplus::netsim::Profile, shmemplus::netsim::ProfileError> {
    let profile = shmemplus::netsim::Profile::load(name_or_path)?;
    let t = &profile.topology;
    spec.n_pes = n_pes.unwrap_or(t.nodes * t.pes_per_node);
    if spec.pes_per_node.is_none() && spec.nodes.is_none() {
        spec.pes_per_node = Some(t.pes_per_node);
    }
    let value = match std::path::Path::new(name_or_path) {
        p if p.is_file() => std::fs::canonicalize(p)
            .map(|p| p.into_os_string())
            .unwrap_or_else(|_| name_or_path.into()),
        _ => name_or_path.into(),
    };
    spec.env.retain(|(k, _)| k != "SHMEMPLUS_PROFILE");
    spec.env.push(("SHMEMPLUS_PROFILE".into(), value));
    Ok(profile)
}

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

    fn from_status(status: ExitStatus) -> ExitCause {
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
            JobOutcome::TimedOut { after } => format!("job exceeded the timeout of {after:?}"),
            JobOutcome::Interrupted { signal } => format!(
                "job interrupted by signal {signal} ({})",
                signal_name(*signal)
            ),
        }
    }

    /// The exit code a launcher should exit with: 0 on success, the failed PE's code
    /// (or 128 + its signal), 124 on timeout, 128 + the signal when interrupted.
    pub fn exit_code(&self) -> i32 {
        match &self.outcome {
            JobOutcome::Success => 0,
            JobOutcome::PeFailed { cause, .. } => match cause.shell_code() {
                // A failure must never look like success (or wrap to it modulo 256).
                c if c & 0xff == 0 => 1,
                c => c,
            },
            JobOutcome::TimedOut { .. } => 124,
            JobOutcome::Interrupted { signal } => 128 + signal,
            JobOutcome::PeLeftEarly { .. } => 1,
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
    #[error("cannot start PE {pe} as `{program}`: {source}")]
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

/// Runs a job to completion and cleans up after it.
///
/// Returns `Ok` for every job that started, whatever its outcome (see
/// [`JobReport::outcome`]); `Err` only when the job could not start. When this returns,
/// every PE process group is empty, the direct children are reaped, the bootstrap socket
/// is closed and the job's `/dev/shm` entries are removed.
///
/// Runs a current-thread tokio runtime on the calling thread; the PEs are spawned from
/// this thread (their parent-death signal is tied to it), so do not call it from within
/// an async runtime.
pub fn run_job(spec: &JobSpec) -> Result<JobReport, LaunchError> {
    let topology = Topology::resolve(spec.n_pes, spec.pes_per_node, spec.nodes)
        .map_err(LaunchError::BadTopology)?;
    // 64 random bits keep concurrent jobs apart. The id is not secret (the bootstrap
    // socket's name shows it in /proc/net/unix): what a stranger cannot know is the
    // secret and the random part of each segment's name (`segment::unique_name`).
    let job_id = random_hex(8)?;
    let secret = random_hex(32)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| LaunchError::Os {
            what: "starting the launcher's async runtime",
            source,
        })?;
    let result = runtime.block_on(supervise(spec, topology, &job_id, &secret));
    // Whatever happened, leave no shared memory of this job behind.
    sweep_shm(&job_id);
    result
}

/// The abstract socket name of a job (without the leading `@`).
pub fn socket_name(job_id: &str) -> String {
    format!("shmemplus-{job_id}")
}

/// Everything about a job's PEs that the supervision loop tracks.
struct Pes {
    pids: Vec<u32>,
    exits: Vec<Option<ExitCause>>,
    reaped: Vec<bool>,
}

impl Pes {
    /// Process groups that may still hold processes: those whose leader is not reaped
    /// (the id cannot have been reused) plus those with a live member in `/proc`.
    fn live_groups(&self) -> Vec<u32> {
        let scanned = live_group_members(&self.pids);
        self.pids
            .iter()
            .zip(&self.reaped)
            .filter(|&(pid, reaped)| !reaped || scanned.iter().any(|&(_, g)| g == *pid))
            .map(|(&pid, _)| pid)
            .collect()
    }

    fn signal_all(&self, sig: i32) {
        for pgid in self.live_groups() {
            tracing::debug!(pgid, sig, "signalling PE process group");
            kill_group(pgid, sig);
        }
    }
}

/// Teardown progress of the supervision loop.
#[derive(Debug, Clone, Copy)]
enum Teardown {
    Running,
    Terminating { kill_at: Instant },
    Killed { give_up_at: Instant },
}

async fn supervise(
    spec: &JobSpec,
    topology: Topology,
    job_id: &str,
    secret: &str,
) -> Result<JobReport, LaunchError> {
    let n = spec.n_pes as usize;
    let start = Instant::now();

    // Signals first, so an early Ctrl-C is not lost.
    let mut signals = if spec.handle_signals {
        Some(Signals::new()?)
    } else {
        None
    };

    let name = socket_name(job_id);
    let address = format!("@{name}");
    let listener = bind_abstract(&name).map_err(|source| LaunchError::Socket {
        address: address.clone(),
        source,
    })?;
    tracing::debug!(%address, n_pes = n, "bootstrap socket listening");

    let (exit_tx, mut exit_rx) = mpsc::unbounded_channel::<(u32, io::Result<ExitStatus>)>();
    let mut pes = Pes {
        pids: Vec::with_capacity(n),
        exits: vec![None; n],
        reaped: vec![false; n],
    };
    let output = Output::new(spec.output, n);
    let mut output_tasks = Vec::new();

    for pe in 0..spec.n_pes {
        let mut child = match spawn_pe(spec, topology, job_id, secret, &address, pe) {
            Ok(child) => child,
            Err(source) => {
                tracing::error!(pe, %source, "spawn failed; ending the PEs already started");
                abort_start(&mut pes, &mut exit_rx).await;
                return Err(LaunchError::Spawn {
                    pe,
                    program: spec.program.to_string_lossy().into_owned(),
                    source,
                });
            }
        };
        let pid = child.id().unwrap_or(0);
        tracing::debug!(pe, pid, "PE started");
        pes.pids.push(pid);
        output_tasks.extend(output.attach(pe, &mut child));
        let tx = exit_tx.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            let _ = tx.send((pe, status));
        });
    }

    let deadline = spec.timeout.map(|t| start + t);
    let mut outcome: Option<JobOutcome> = None;
    let mut teardown = Teardown::Running;
    let mut remaining = n;
    let mut bootstrap = Bootstrap::new(spec.n_pes, secret.to_owned());

    while remaining > 0 {
        let teardown_deadline = match teardown {
            Teardown::Running => None,
            Teardown::Terminating { kill_at } => Some(kill_at),
            Teardown::Killed { give_up_at } => Some(give_up_at),
        };
        let mut end_job: Option<JobOutcome> = None;
        tokio::select! {
            Some((pe, status)) = exit_rx.recv() => {
                remaining -= 1;
                let i = pe as usize;
                pes.reaped[i] = true;
                match status {
                    Ok(status) => {
                        let cause = ExitCause::from_status(status);
                        tracing::debug!(pe, %cause, "PE ended");
                        pes.exits[i] = Some(cause);
                        if !cause.is_success() {
                            end_job = Some(JobOutcome::PeFailed { pe, pid: pes.pids[i], cause });
                        } else {
                            bootstrap.pe_exited_ok(pe);
                        }
                    }
                    Err(e) => tracing::error!(pe, error = %e, "could not wait for PE"),
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => bootstrap.accept(stream),
                Err(e) => tracing::warn!(error = %e, "bootstrap accept failed"),
            },
            Some(event) = bootstrap.events.recv() => bootstrap.handle(event),
            _ = sleep_opt(deadline), if outcome.is_none() => {
                tracing::debug!("job timed out");
                end_job = spec.timeout.map(|after| JobOutcome::TimedOut { after });
            }
            Some(signal) = Signals::recv_opt(&mut signals) => {
                if outcome.is_none() {
                    end_job = Some(JobOutcome::Interrupted { signal });
                } else {
                    // A second signal: stop being polite.
                    tracing::debug!(signal, "second signal; killing the PEs now");
                    pes.signal_all(libc::SIGKILL);
                    teardown = Teardown::Killed { give_up_at: Instant::now() + KILL_WAIT };
                }
            }
            _ = sleep_opt(teardown_deadline) => match teardown {
                Teardown::Terminating { .. } => {
                    tracing::debug!("PEs still alive after SIGTERM; sending SIGKILL");
                    pes.signal_all(libc::SIGKILL);
                    teardown = Teardown::Killed { give_up_at: Instant::now() + KILL_WAIT };
                }
                Teardown::Killed { .. } => {
                    tracing::error!(remaining, "PEs did not end after SIGKILL; giving up on them");
                    break;
                }
                Teardown::Running => {}
            },
        }
        // A PE that left without finalizing strands the others, unless none is left.
        if let Some(pe) = bootstrap.left_early.pop() {
            if remaining > 0 && end_job.is_none() {
                end_job = Some(JobOutcome::PeLeftEarly {
                    pe,
                    pid: pes.pids[pe as usize],
                });
            }
        }
        if let (Some(o), None) = (end_job, &outcome) {
            tracing::debug!(outcome = ?o, "ending the job");
            outcome = Some(o);
            if matches!(teardown, Teardown::Running) {
                pes.signal_all(libc::SIGTERM);
                teardown = Teardown::Terminating {
                    kill_at: Instant::now() + TERM_GRACE,
                };
            }
        }
    }

    // The PEs are gone: stop serving, then make sure nothing of theirs survives.
    drop(listener);
    bootstrap.close_all();
    // Leftovers (a PE's background children) get what is left of the SIGTERM grace.
    let grace = match teardown {
        Teardown::Running => TERM_GRACE,
        Teardown::Terminating { kill_at } => kill_at.saturating_duration_since(Instant::now()),
        Teardown::Killed { .. } => Duration::ZERO,
    };
    sweep_groups(&pes, grace).await;
    let (stdout, stderr) = output.finish(output_tasks).await;

    Ok(JobReport {
        outcome: outcome.unwrap_or(JobOutcome::Success),
        exits: pes.exits,
        pids: pes.pids,
        job_id: job_id.to_owned(),
        elapsed: start.elapsed(),
        stdout,
        stderr,
    })
}

/// After a spawn failure: kill the PEs already started and reap them (bounded).
async fn abort_start(
    pes: &mut Pes,
    exit_rx: &mut mpsc::UnboundedReceiver<(u32, io::Result<ExitStatus>)>,
) {
    pes.signal_all(libc::SIGKILL);
    let give_up = Instant::now() + KILL_WAIT;
    let mut left = pes.pids.len();
    while left > 0 {
        match tokio::time::timeout_at(give_up, exit_rx.recv()).await {
            Ok(Some((pe, _))) => {
                pes.reaped[pe as usize] = true;
                left -= 1;
            }
            _ => break,
        }
    }
    sweep_groups(pes, Duration::ZERO).await;
}

/// Makes sure every PE process group is empty: SIGTERM (if `grace` is non-zero), then
/// SIGKILL, each with a bounded wait. Catches a PE's background children, also after a
/// successful job.
async fn sweep_groups(pes: &Pes, grace: Duration) {
    let mut live = pes.live_groups();
    for (sig, wait) in [(libc::SIGTERM, grace), (libc::SIGKILL, KILL_WAIT)] {
        if live.is_empty() {
            return;
        }
        if wait.is_zero() {
            continue;
        }
        for &pgid in &live {
            tracing::debug!(pgid, sig, "PE process group outlived its PE; signalling it");
            kill_group(pgid, sig);
        }
        let until = Instant::now() + wait;
        loop {
            live = pes.live_groups();
            if live.is_empty() || Instant::now() >= until {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
    }
    if !live.is_empty() {
        tracing::error!(groups = ?live, "processes of these PE groups survived SIGKILL");
    }
}

fn kill_group(pgid: u32, sig: i32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return; // never signal "all processes" or init's group
    }
    // SAFETY: plain syscall; ESRCH (group already gone) is expected and ignored.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// Processes (pid, pgid) that belong to one of `pgids` and are not zombies, from `/proc`.
pub fn live_group_members(pgids: &[u32]) -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((state, pgrp)) = parse_stat(&stat) {
            if pgids.contains(&pgrp) && !matches!(state, 'Z' | 'X' | 'x') {
                out.push((pid, pgrp));
            }
        }
    }
    out
}

/// Parses the state and process group out of a `/proc/<pid>/stat` line.
fn parse_stat(stat: &str) -> Option<(char, u32)> {
    // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Removes every `/dev/shm` entry of job `job_id`; returns how many were removed.
pub fn sweep_shm(job_id: &str) -> usize {
    let prefix = launch::shm_prefix(job_id);
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return 0;
    };
    let mut removed = 0;
    for entry in dir.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let path = entry.path();
        match std::fs::remove_file(&path) {
            Ok(()) => {
                tracing::debug!(path = %path.display(), "removed leftover shared memory");
                removed += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot remove"),
        }
    }
    removed
}

fn bind_abstract(name: &str) -> io::Result<UnixListener> {
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr)?;
    listener.set_nonblocking(true)?;
    UnixListener::from_std(listener)
}

fn spawn_pe(
    spec: &JobSpec,
    topology: Topology,
    job_id: &str,
    secret: &str,
    address: &str,
    pe: u32,
) -> io::Result<tokio::process::Child> {
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    cmd.env(launch::ENV_PE, pe.to_string())
        .env(launch::ENV_N_PES, topology.n_pes.to_string())
        .env(launch::ENV_PES_PER_NODE, topology.pes_per_node.to_string())
        .env(launch::ENV_NODES, topology.nodes.to_string())
        .env(launch::ENV_JOB_ID, job_id)
        .env(launch::ENV_BOOTSTRAP, address)
        .env(launch::ENV_SECRET, secret);
    let inherit_stdin = pe == 0 && spec.output != OutputMode::Capture && !io::stdin().is_terminal();
    cmd.stdin(if inherit_stdin {
        Stdio::inherit()
    } else {
        Stdio::null()
    });
    let piped = spec.output != OutputMode::Inherit;
    cmd.stdout(if piped {
        Stdio::piped()
    } else {
        Stdio::inherit()
    });
    cmd.stderr(if piped {
        Stdio::piped()
    } else {
        Stdio::inherit()
    });
    cmd.process_group(0);
    cmd.kill_on_drop(true);
    let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe
    // calls (prctl, getppid) and builds an io::Error without allocating.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The launcher may have died before prctl took effect.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    cmd.spawn()
}

// ---------------------------------------------------------------------------------------
// Output forwarding

/// The output side of a job: where PE output goes and the tasks that move it.
struct Output {
    mode: OutputMode,
    /// Tagged mode: a writer thread per stream, so a blocked terminal never stalls
    /// supervision; lines are written whole, one at a time.
    tagged: Option<[LineWriter; 2]>,
    /// Capture mode: per PE (stdout, stderr) buffers; shared so that data read before an
    /// aborted task is kept.
    captured: Vec<[Arc<Mutex<Vec<u8>>>; 2]>,
}

struct LineWriter {
    tx: std::sync::mpsc::Sender<Vec<u8>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl LineWriter {
    fn spawn(to_stderr: bool) -> LineWriter {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in rx {
                let result = if to_stderr {
                    io::stderr().lock().write_all(&line)
                } else {
                    let mut out = io::stdout().lock();
                    out.write_all(&line).and_then(|()| out.flush())
                };
                if result.is_err() {
                    break; // our own stdout is gone; drop the rest
                }
            }
            let _ = done_tx.send(());
        });
        LineWriter { tx, done }
    }
}

impl Output {
    fn new(mode: OutputMode, n: usize) -> Output {
        Output {
            mode,
            tagged: (mode == OutputMode::Tagged)
                .then(|| [LineWriter::spawn(false), LineWriter::spawn(true)]),
            captured: if mode == OutputMode::Capture {
                (0..n).map(|_| Default::default()).collect()
            } else {
                Vec::new()
            },
        }
    }

    /// Starts the tasks that read a freshly spawned PE's pipes.
    fn attach(&self, pe: u32, child: &mut tokio::process::Child) -> Vec<JoinHandle<()>> {
        let mut tasks = Vec::new();
        let streams: [Option<Box<dyn AsyncRead + Send + Unpin>>; 2] = [
            child.stdout.take().map(|s| Box::new(s) as _),
            child.stderr.take().map(|s| Box::new(s) as _),
        ];
        for (i, stream) in streams.into_iter().enumerate() {
            let Some(stream) = stream else { continue };
            match self.mode {
                OutputMode::Inherit => {}
                OutputMode::Tagged => {
                    if let Some(writers) = &self.tagged {
                        let tx = writers[i].tx.clone();
                        tasks.push(tokio::spawn(forward_tagged(pe, stream, tx)));
                    }
                }
                OutputMode::Capture => {
                    let buf = self.captured[pe as usize][i].clone();
                    tasks.push(tokio::spawn(capture(stream, buf)));
                }
            }
        }
        tasks
    }

    /// Waits (bounded) for the output tasks to reach end of stream, then returns the
    /// captured output (empty vectors unless capturing).
    async fn finish(self, tasks: Vec<JoinHandle<()>>) -> (Vec<String>, Vec<String>) {
        let until = Instant::now() + OUTPUT_DRAIN;
        for task in tasks {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(until, task).await.is_err() {
                tracing::warn!("PE output did not reach end of stream; dropping the rest");
                abort.abort();
            }
        }
        if let Some(writers) = self.tagged {
            for w in writers {
                drop(w.tx);
                // Bounded: a stuck terminal must not hang the launcher.
                let _ = w.done.recv_timeout(OUTPUT_DRAIN);
            }
        }
        let text = |b: &Arc<Mutex<Vec<u8>>>| match b.lock() {
            Ok(v) => String::from_utf8_lossy(&v).into_owned(),
            Err(poisoned) => String::from_utf8_lossy(&poisoned.into_inner()).into_owned(),
        };
        self.captured
            .iter()
            .map(|[out, err]| (text(out), text(err)))
            .unzip()
    }
}

async fn forward_tagged(
    pe: u32,
    stream: impl AsyncRead + Unpin,
    tx: std::sync::mpsc::Sender<Vec<u8>>,
) {
    let prefix = format!("[pe {pe}] ");
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = prefix.clone().into_bytes();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(_) => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
            Err(e) => {
                tracing::debug!(pe, error = %e, "reading PE output failed");
                break;
            }
        }
    }
}

async fn capture(mut stream: impl AsyncRead + Unpin, buf: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(k) => match buf.lock() {
                Ok(mut b) => b.extend_from_slice(&chunk[..k]),
                Err(_) => break,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bootstrap protocol

/// What a connection task reports to the supervision loop.
#[derive(Debug)]
enum ConnEvent {
    /// The first frame was `Auth`; `secret_ok` says whether it carried the job secret.
    Auth {
        conn: u64,
        pe: u32,
        pid: u32,
        secret_ok: bool,
    },
    Allgather {
        conn: u64,
        round: u32,
        data: Vec<u8>,
    },
    /// The PE sent `Finalized`.
    Finalized { conn: u64 },
    /// The connection ended (EOF) or broke (`error`).
    Closed { conn: u64, error: Option<String> },
}

struct Conn {
    out: mpsc::UnboundedSender<Vec<u8>>,
    reader: JoinHandle<()>,
    pe: Option<u32>,
}

/// The launcher's side of the bootstrap protocol: connections and allgather rounds.
struct Bootstrap {
    n_pes: u32,
    secret: Arc<str>,
    uid: u32,
    next_conn: u64,
    conns: HashMap<u64, Conn>,
    /// The authenticated connection of each PE.
    by_pe: Vec<Option<u64>>,
    rounds: Rounds,
    events_tx: mpsc::UnboundedSender<ConnEvent>,
    events: mpsc::UnboundedReceiver<ConnEvent>,
    /// Per PE: it authenticated at some point (it is a shmemplus PE of this job).
    joined: Vec<bool>,
    /// Per PE: it sent `Finalized`.
    finalized: Vec<bool>,
    /// Per PE: it exited with status 0 while its connection was still open, so the
    /// verdict on finalize waits for the connection's last frames.
    exited_ok: Vec<bool>,
    /// PEs found to have exited 0 without finalizing, not yet acted on.
    left_early: Vec<u32>,
}

impl Bootstrap {
    fn new(n_pes: u32, secret: String) -> Bootstrap {
        let (events_tx, events) = mpsc::unbounded_channel();
        Bootstrap {
            n_pes,
            secret: secret.into(),
            uid: rustix::process::geteuid().as_raw(),
            next_conn: 0,
            conns: HashMap::new(),
            by_pe: vec![None; n_pes as usize],
            rounds: Rounds::new(n_pes),
            events_tx,
            events,
            joined: vec![false; n_pes as usize],
            finalized: vec![false; n_pes as usize],
            exited_ok: vec![false; n_pes as usize],
            left_early: Vec::new(),
        }
    }

    /// Records that `pe` exited with status 0. If it joined and has not finalized, it
    /// left early; when its connection is still open, its last frames (perhaps a
    /// `Finalized`) are still in flight, and the verdict waits for the connection to
    /// close (see `ConnEvent::Closed`).
    fn pe_exited_ok(&mut self, pe: u32) {
        let i = pe as usize;
        if !self.joined[i] || self.finalized[i] {
            return;
        }
        if self.by_pe[i].is_some() {
            self.exited_ok[i] = true;
        } else {
            self.left_early.push(pe);
        }
    }

    fn accept(&mut self, stream: UnixStream) {
        match stream.peer_cred() {
            Ok(cred) if cred.uid() == self.uid => {}
            Ok(cred) => {
                tracing::warn!(
                    uid = cred.uid(),
                    "bootstrap connection from another user refused"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot identify bootstrap peer; refused");
                return;
            }
        }
        let conn = self.next_conn;
        self.next_conn += 1;
        tracing::debug!(conn, "bootstrap connection accepted");
        let (rd, wr) = stream.into_split();
        let (out, out_rx) = mpsc::unbounded_channel();
        tokio::spawn(write_frames(wr, out_rx));
        let reader = tokio::spawn(read_conn(
            conn,
            rd,
            self.secret.clone(),
            self.events_tx.clone(),
        ));
        self.conns.insert(
            conn,
            Conn {
                out,
                reader,
                pe: None,
            },
        );
    }

    fn send(&self, conn: u64, msg: &ToPe) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        match launch::encode(msg) {
            Ok(frame) => {
                let _ = c.out.send(frame);
            }
            Err(e) => tracing::error!(conn, error = %e, "cannot encode bootstrap reply"),
        }
    }

    /// Drops a connection: queued frames are still written, then the socket closes.
    fn close(&mut self, conn: u64) {
        if let Some(c) = self.conns.remove(&conn) {
            c.reader.abort();
            if let Some(pe) = c.pe {
                if self.by_pe[pe as usize] == Some(conn) {
                    self.by_pe[pe as usize] = None;
                }
            }
        }
    }

    fn close_all(&mut self) {
        let all: Vec<u64> = self.conns.keys().copied().collect();
        for conn in all {
            self.close(conn);
        }
    }

    fn reject(&mut self, conn: u64, reason: String) {
        tracing::warn!(conn, %reason, "bootstrap connection rejected");
        self.send(conn, &ToPe::Rejected { reason });
        self.close(conn);
    }

    fn handle(&mut self, event: ConnEvent) {
        match event {
            ConnEvent::Auth {
                conn,
                pe,
                pid,
                secret_ok,
            } => {
                if !self.conns.contains_key(&conn) {
                    return;
                }
                if !secret_ok {
                    self.reject(conn, "wrong job secret".into());
                } else if pe >= self.n_pes {
                    self.reject(
                        conn,
                        format!("PE {pe} is out of range for a job of {} PEs", self.n_pes),
                    );
                } else if self.by_pe[pe as usize].is_some() {
                    self.reject(conn, format!("PE {pe} is already connected"));
                } else {
                    tracing::debug!(conn, pe, pid, "PE authenticated");
                    self.by_pe[pe as usize] = Some(conn);
                    self.joined[pe as usize] = true;
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.pe = Some(pe);
                    }
                    self.send(conn, &ToPe::Welcome { n_pes: self.n_pes });
                }
            }
            ConnEvent::Allgather { conn, round, data } => {
                // Events queued by a connection that was closed meanwhile are ignored.
                let Some(pe) = self.conns.get(&conn).and_then(|c| c.pe) else {
                    return;
                };
                tracing::debug!(pe, round, bytes = data.len(), "allgather contribution");
                match self.rounds.contribute(pe, round, data) {
                    Ok(None) => {}
                    Ok(Some((round, data))) => {
                        tracing::debug!(round, "allgather round complete");
                        match launch::encode(&ToPe::Allgathered { round, data }) {
                            Ok(frame) => {
                                for c in self.by_pe.iter().flatten() {
                                    if let Some(c) = self.conns.get(c) {
                                        let _ = c.out.send(frame.clone());
                                    }
                                }
                            }
                            Err(e) => {
                                tracing::error!(round, error = %e, "cannot send allgather result; closing every bootstrap connection");
                                self.close_all();
                            }
                        }
                    }
                    Err(why) => {
                        tracing::warn!(pe, conn, %why, "bootstrap protocol error; closing the connection");
                        self.close(conn);
                    }
                }
            }
            ConnEvent::Finalized { conn } => {
                if let Some(pe) = self.conns.get(&conn).and_then(|c| c.pe) {
                    tracing::debug!(pe, "PE finalized");
                    self.finalized[pe as usize] = true;
                }
            }
            ConnEvent::Closed { conn, error } => {
                let pe = self.conns.get(&conn).and_then(|c| c.pe);
                if let Some(pe) = pe {
                    let i = pe as usize;
                    if self.exited_ok[i] && !self.finalized[i] {
                        self.left_early.push(pe);
                    }
                }
                match error {
                    None => tracing::debug!(conn, ?pe, "bootstrap connection closed"),
                    Some(e) => tracing::warn!(conn, ?pe, error = %e, "bootstrap connection failed"),
                }
                self.close(conn);
            }
        }
    }
}

/// A completed allgather round: its number and every PE's bytes in rank order.
type Gathered = (u32, Vec<Vec<u8>>);

/// The state of the job's allgather rounds (pure logic, no I/O).
#[derive(Debug)]
struct Rounds {
    round: u32,
    data: Vec<Option<Vec<u8>>>,
    have: usize,
}

impl Rounds {
    fn new(n_pes: u32) -> Rounds {
        Rounds {
            round: 0,
            data: vec![None; n_pes as usize],
            have: 0,
        }
    }

    /// Records PE `pe`'s bytes for `round`. Returns the completed round (its number and
    /// every PE's bytes in rank order) when this was the last contribution, or an error
    /// message when the contribution breaks the protocol.
    fn contribute(
        &mut self,
        pe: u32,
        round: u32,
        data: Vec<u8>,
    ) -> Result<Option<Gathered>, String> {
        if round != self.round {
            return Err(format!(
                "PE {pe} sent allgather round {round} while the job is in round {}",
                self.round
            ));
        }
        let slot = self
            .data
            .get_mut(pe as usize)
            .ok_or_else(|| format!("PE {pe} is out of range"))?;
        if slot.is_some() {
            return Err(format!("PE {pe} sent allgather round {round} twice"));
        }
        *slot = Some(data);
        self.have += 1;
        if self.have < self.data.len() {
            return Ok(None);
        }
        let all = self
            .data
            .iter_mut()
            .map(|d| d.take().unwrap_or_default())
            .collect();
        let done = self.round;
        self.round += 1;
        self.have = 0;
        Ok(Some((done, all)))
    }
}

async fn write_frames(mut wr: OwnedWriteHalf, mut frames: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(frame) = frames.recv().await {
        if let Err(e) = wr.write_all(&frame).await {
            tracing::debug!(error = %e, "bootstrap write failed");
            return;
        }
    }
    let _ = wr.shutdown().await;
}

async fn read_conn(
    conn: u64,
    mut rd: OwnedReadHalf,
    secret: Arc<str>,
    events: mpsc::UnboundedSender<ConnEvent>,
) {
    let closed = |error: Option<String>| ConnEvent::Closed { conn, error };
    let first = match tokio::time::timeout(AUTH_TIMEOUT, read_frame(&mut rd, AUTH_MAX_FRAME)).await
    {
        Ok(Ok(Some(msg))) => msg,
        Ok(Ok(None)) => {
            let _ = events.send(closed(None));
            return;
        }
        Ok(Err(e)) => {
            let _ = events.send(closed(Some(e.to_string())));
            return;
        }
        Err(_) => {
            let _ = events.send(closed(Some("no Auth frame within the time limit".into())));
            return;
        }
    };
    match first {
        ToLauncher::Auth {
            secret: given,
            pe,
            pid,
        } => {
            let secret_ok = constant_time_eq(given.as_bytes(), secret.as_bytes());
            let _ = events.send(ConnEvent::Auth {
                conn,
                pe,
                pid,
                secret_ok,
            });
        }
        ToLauncher::Allgather { .. } | ToLauncher::Finalized => {
            let _ = events.send(closed(Some("first frame was not Auth".into())));
            return;
        }
    }
    loop {
        let event = match read_frame(&mut rd, launch::MAX_FRAME_BYTES).await {
            Ok(Some(ToLauncher::Allgather { round, data })) => {
                ConnEvent::Allgather { conn, round, data }
            }
            Ok(Some(ToLauncher::Finalized)) => ConnEvent::Finalized { conn },
            Ok(Some(ToLauncher::Auth { .. })) => closed(Some("Auth sent twice".into())),
            Ok(None) => closed(None),
            Err(e) => closed(Some(e.to_string())),
        };
        let last = matches!(event, ConnEvent::Closed { .. });
        if events.send(event).is_err() || last {
            return;
        }
    }
}

/// Reads one frame; `Ok(None)` at end of stream (also mid-frame: the PE went away).
async fn read_frame(rd: &mut (impl AsyncRead + Unpin), max: u32) -> io::Result<Option<ToLauncher>> {
    let mut len = [0u8; 4];
    match rd.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut body = vec![0u8; launch::frame_len(len, max)?];
    match rd.read_exact(&mut body).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    launch::decode(&body).map(Some)
}

// ---------------------------------------------------------------------------------------
// Small helpers

/// The signals that end a job when [`JobSpec::handle_signals`] is set.
struct Signals(Vec<(i32, tokio::signal::unix::Signal)>);

impl Signals {
    fn new() -> Result<Signals, LaunchError> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut v = Vec::new();
        for (num, kind) in [
            (libc::SIGINT, SignalKind::interrupt()),
            (libc::SIGTERM, SignalKind::terminate()),
            (libc::SIGHUP, SignalKind::hangup()),
        ] {
            let s = signal(kind).map_err(|source| LaunchError::Os {
                what: "installing the launcher's signal handlers",
                source,
            })?;
            v.push((num, s));
        }
        Ok(Signals(v))
    }

    /// The next signal received; pending forever without handlers.
    async fn recv_opt(signals: &mut Option<Signals>) -> Option<i32> {
        let Some(Signals(list)) = signals else {
            return std::future::pending().await;
        };
        std::future::poll_fn(|cx| {
            for (num, s) in list.iter_mut() {
                if let std::task::Poll::Ready(Some(())) = s.poll_recv(cx) {
                    return std::task::Poll::Ready(Some(*num));
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

async fn sleep_opt(until: Option<Instant>) {
    match until {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

fn random_hex(n_bytes: usize) -> Result<String, LaunchError> {
    let mut buf = vec![0u8; n_bytes];
    getrandom::fill(&mut buf).map_err(|e| LaunchError::Os {
        what: "reading random bytes for the job id and secret",
        source: io::Error::other(e.to_string()),
    })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares two byte strings in time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The name of a Linux signal number, e.g. `SIGKILL` for 9.
pub fn signal_name(sig: i32) -> &'static str {
    const NAMES: [&str; 32] = [
        "signal 0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match usize::try_from(sig).ok().and_then(|i| NAMES.get(i)) {
        Some(name) if sig > 0 => name,
        _ if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&sig) => "a real-time signal",
        _ => "unknown signal",
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
        // A failure never maps to exit code 0 (or 256).
        let r = report(JobOutcome::PeFailed {
            pe: 0,
            pid: 5,
            cause: ExitCause::Code(256),
        });
        assert_ne!(r.exit_code() & 0xff, 0);
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(libc::SIGSYS), "SIGSYS");
        assert_eq!(signal_name(0), "unknown signal");
        assert_eq!(signal_name(-3), "unknown signal");
        assert_eq!(signal_name(libc::SIGRTMIN() + 1), "a real-time signal");
    }

    #[test]
    fn rounds_gather_in_rank_order() {
        let mut r = Rounds::new(3);
        assert_eq!(r.contribute(2, 0, vec![2]), Ok(None));
        assert_eq!(r.contribute(0, 0, vec![0]), Ok(None));
        assert_eq!(
            r.contribute(1, 0, vec![1, 1]),
            Ok(Some((0, vec![vec![0], vec![1, 1], vec![2]])))
        );
        // Next round starts empty.
        assert_eq!(r.contribute(0, 1, vec![]), Ok(None));
        assert!(r.contribute(0, 1, vec![]).unwrap_err().contains("twice"));
        assert!(r.contribute(1, 0, vec![]).unwrap_err().contains("round 0"));
        assert!(r.contribute(1, 2, vec![]).is_err());
        assert!(r.contribute(7, 1, vec![]).is_err());
        assert_eq!(r.contribute(1, 1, vec![]), Ok(None));
        assert_eq!(
            r.contribute(2, 1, vec![9]),
            Ok(Some((1, vec![vec![], vec![], vec![9]])))
        );
    }

    #[test]
    fn stat_lines_parse_with_odd_command_names() {
        let line = "1234 (a (weird) name) S 1 777 777 0 -1 4194560 100 0 0 0";
        assert_eq!(parse_stat(line), Some(('S', 777)));
        assert_eq!(parse_stat("99 (zz) Z 1 42 42"), Some(('Z', 42)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn own_process_group_is_found_in_proc() {
        let pgid = rustix::process::getpgrp().as_raw_nonzero().get() as u32;
        let me = std::process::id();
        assert!(live_group_members(&[pgid]).contains(&(me, pgid)));
    }

    #[test]
    fn ids_and_secrets_are_random_hex() {
        let a = random_hex(8).unwrap();
        let b = random_hex(8).unwrap();
        assert_eq!(a.len(), 16);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
        assert_eq!(random_hex(32).unwrap().len(), 64);
    }

    #[test]
    fn secret_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn bad_topology_is_an_error_before_anything_starts() {
        let mut spec = JobSpec::new(4, "true");
        spec.pes_per_node = Some(2);
        spec.nodes = Some(3);
        let err = run_job(&spec).unwrap_err();
        assert!(matches!(err, LaunchError::BadTopology(_)), "{err}");
        assert!(err.to_string().contains("bad topology"), "{err}");
    }

    #[test]
    fn sweep_shm_removes_only_this_jobs_entries() {
        let job = random_hex(8).unwrap();
        let other = random_hex(8).unwrap();
        let mine = format!("/dev/shm/{}heap", launch::shm_prefix(&job));
        let theirs = format!("/dev/shm/{}heap", launch::shm_prefix(&other));
        std::fs::write(&mine, b"x").unwrap();
        std::fs::write(&theirs, b"x").unwrap();
        assert_eq!(sweep_shm(&job), 1);
        assert!(!std::path::Path::new(&mine).exists());
        assert!(std::path::Path::new(&theirs).exists());
        std::fs::remove_file(&theirs).unwrap();
    }
}
