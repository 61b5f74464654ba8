//! Supervision: [`run_job`] and the loop that watches a running job. It starts the PEs,
//! serves the bootstrap socket, and ends the job on the first PE that fails, a PE that
//! leaves without finalizing, a PE's `global_exit`, the timeout, or a signal to the
//! launcher: SIGTERM to every
//! PE group, SIGKILL after [`TERM_GRACE`]. Then it cleans up, whatever the outcome.
//!
//! This module owns the order of events and the job's outcome. It must not print
//! anything (a launcher prints the [`JobReport`] once), and it delegates the mechanics:
//! `spawn` starts processes, `bootstrap` speaks the protocol, `output` moves output,
//! `signals` receives signals, `cleanup` signals groups and sweeps `/dev/shm`.

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use shmemplus::Topology;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::bootstrap::{bind_abstract, socket_name, Bootstrap};
use crate::cleanup::{sweep_groups, sweep_shm, Pes, KILL_WAIT};
use crate::output::Output;
use crate::signals::Signals;
use crate::spawn::{random_hex, spawn_pe};
use crate::{ExitCause, JobOutcome, JobReport, JobSpec, LaunchError};

/// How long PEs get between SIGTERM and SIGKILL when the job is ended.
pub const TERM_GRACE: Duration = Duration::from_millis(500);

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
                // Not an error event: the caller prints the returned error, once.
                tracing::debug!(pe, %source, "spawn failed; ending the PEs already started");
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
        // A PE asked to end the job (`global_exit`): every PE is ended, the job's
        // exit code is the PE's.
        if let Some((pe, code)) = bootstrap.global_exit.take() {
            if end_job.is_none() {
                end_job = Some(JobOutcome::GlobalExit {
                    pe,
                    pid: pes.pids[pe as usize],
                    code,
                });
            }
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

async fn sleep_opt(until: Option<Instant>) {
    match until {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_topology_is_an_error_before_anything_starts() {
        let mut spec = JobSpec::new(4, "true");
        spec.pes_per_node = Some(2);
        spec.nodes = Some(3);
        let err = run_job(&spec).unwrap_err();
        assert!(matches!(err, LaunchError::BadTopology(_)), "{err}");
        assert!(err.to_string().contains("bad topology"), "{err}");
    }
}
