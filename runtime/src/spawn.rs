//! Spawning: starting one PE process with the environment contract of
//! [`shmemplus::launch`], in its own process group and with a parent-death signal, and
//! the job's random identity (job id and secret).
//!
//! This module owns `fork`/`exec` of PEs and what each PE inherits (environment,
//! stdin, stdout/stderr pipes). It must not wait for, signal or supervise a PE (that is
//! `supervise` and `cleanup`), nor read its output (that is `output`).

use std::io::{self, IsTerminal};
use std::process::Stdio;

use shmemplus::launch;
use shmemplus::Topology;

use crate::{JobSpec, LaunchError, OutputMode};

/// Starts PE `pe` of the job. The child is killed if the returned handle is dropped.
pub(crate) fn spawn_pe(
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

/// `n_bytes` random bytes in lower-case hex (job ids and secrets).
pub(crate) fn random_hex(n_bytes: usize) -> Result<String, LaunchError> {
    let mut buf = vec![0u8; n_bytes];
    getrandom::fill(&mut buf).map_err(|e| LaunchError::Os {
        what: "reading random bytes for the job id and secret",
        source: io::Error::other(e.to_string()),
    })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
