//! Cleanup: making sure nothing of a job survives it. Signalling PE process groups,
//! finding their live members in `/proc`, and sweeping the job's `/dev/shm` entries.
//!
//! This module owns the process-group and shared-memory sweeps and the only `kill`
//! calls of the runtime. It must not decide when to end a job (that is `supervise`), and
//! it never signals anything but a PE's own process group (never pid 0, 1 or -1).

use std::io;
use std::time::Duration;

use shmemplus::launch;
use tokio::time::Instant;

/// How long the launcher waits for SIGKILLed processes to disappear before giving up.
pub(crate) const KILL_WAIT: Duration = Duration::from_secs(3);
/// Poll interval while waiting for process groups to empty.
const POLL: Duration = Duration::from_millis(20);

/// The process groups of a job's PEs (each PE leads its own group) and whether each
/// leader was reaped.
pub(crate) struct Pes {
    pub(crate) pids: Vec<u32>,
    pub(crate) exits: Vec<Option<crate::ExitCause>>,
    pub(crate) reaped: Vec<bool>,
}

impl Pes {
    /// Process groups that may still hold processes: those whose leader is not reaped
    /// (the id cannot have been reused) plus those with a live member in `/proc`.
    pub(crate) fn live_groups(&self) -> Vec<u32> {
        let scanned = live_group_members(&self.pids);
        self.pids
            .iter()
            .zip(&self.reaped)
            .filter(|&(pid, reaped)| !reaped || scanned.iter().any(|&(_, g)| g == *pid))
            .map(|(&pid, _)| pid)
            .collect()
    }

    /// Sends `sig` to every PE process group that may still hold a process.
    pub(crate) fn signal_all(&self, sig: i32) {
        for pgid in self.live_groups() {
            tracing::debug!(pgid, sig, "signalling PE process group");
            kill_group(pgid, sig);
        }
    }
}

/// Makes sure every PE process group is empty: SIGTERM (if `grace` is non-zero), then
/// SIGKILL, each with a bounded wait. Catches a PE's background children, also after a
/// successful job.
pub(crate) async fn sweep_groups(pes: &Pes, grace: Duration) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn sweep_shm_removes_only_this_jobs_entries() {
        let job = crate::spawn::random_hex(8).unwrap();
        let other = crate::spawn::random_hex(8).unwrap();
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
