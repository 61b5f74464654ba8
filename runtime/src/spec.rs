//! What a job is: [`JobSpec`] (program, PE count, topology, limits, output mode, extra
//! environment), applying a cluster profile to it, and checking the configuration its
//! PEs will read.
//!
//! This module owns the description of a job and checks on it that need no process. It
//! must not start, signal or wait for anything (that is `spawn` and `supervise`), and it
//! must not parse configuration itself: [`JobSpec::pe_config`] asks the library's own
//! parser (`shmemplus::Config`), so the launcher and the PEs always agree.

use std::ffi::OsString;
use std::time::Duration;

#[cfg(doc)]
use crate::{run_job, JobOutcome, JobReport};
#[cfg(doc)]
use shmemplus::Topology;

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
/// use shmemplus_runtime::{apply_profile, JobSpec};
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

impl JobSpec {
    /// Makes the PEs trace the job (`shmemrun --trace PATH`): creates `path` now (an
    /// unwritable path fails before any PE starts) and exports its absolute form as
    /// `SHMEMPLUS_TRACE`, so each PE writes the fragment `PATH.pe<N>` at `finalize`.
    /// Returns that absolute path; after the job, merge the fragments into it with
    /// [`shmemplus::trace::merge_fragments`], whatever the outcome.
    ///
    /// ```
    /// use shmemplus_runtime::JobSpec;
    /// let dir = std::env::temp_dir();
    /// let mut spec = JobSpec::new(2, "hello");
    /// let path = spec.trace_to(&dir.join("doc-trace.json")).unwrap();
    /// assert!(path.is_absolute());
    /// assert!(spec.env.iter().any(|(k, v)| k == "SHMEMPLUS_TRACE" && v == path.as_os_str()));
    /// # std::fs::remove_file(path).unwrap();
    /// ```
    pub fn trace_to(&mut self, path: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
        std::fs::File::create(path)?;
        let path = std::fs::canonicalize(path)?;
        let var = shmemplus::trace::ENV_TRACE;
        self.env.retain(|(k, _)| k != var);
        self.env.push((var.into(), path.clone().into()));
        Ok(path)
    }

    /// The configuration every PE of this job will read at `init`, parsed by the
    /// library's own parser from the environment the PEs will get: this process's
    /// environment overridden by [`JobSpec::env`].
    ///
    /// `shmemrun` calls this before it starts any PE, so a bad `SHMEM_SYMMETRIC_SIZE`
    /// is reported once instead of once per PE. [`run_job`] does not call it: a
    /// library user may run programs that are not shmemplus PEs, or want the PEs to
    /// report the error themselves.
    ///
    /// ```
    /// use shmemplus_runtime::JobSpec;
    /// let mut spec = JobSpec::new(2, "hello");
    /// spec.env.push(("SHMEM_SYMMETRIC_SIZE".into(), "abc".into()));
    /// let err = spec.pe_config().unwrap_err();
    /// assert!(err.to_string().contains("SHMEM_SYMMETRIC_SIZE"), "{err}");
    /// ```
    pub fn pe_config(&self) -> Result<shmemplus::Config, shmemplus::Error> {
        shmemplus::Config::from_lookup(|name| {
            match self.env.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => Some(v.to_string_lossy().into_owned()),
                None => std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pe_config_reads_the_spec_env_over_the_process_env() {
        let mut spec = JobSpec::new(1, "true");
        spec.env.push(("SHMEM_SYMMETRIC_SIZE".into(), "2M".into()));
        assert_eq!(spec.pe_config().unwrap().symmetric_size, 2 << 20);
        // The last setting wins, as it does for the PE's environment.
        spec.env.push(("SHMEM_SYMMETRIC_SIZE".into(), "abc".into()));
        let err = spec.pe_config().unwrap_err().to_string();
        assert!(
            err.starts_with("bad value for SHMEM_SYMMETRIC_SIZE: "),
            "{err}"
        );
        spec.env.push(("SHMEM_SYMMETRIC_SIZE".into(), "4K".into()));
        assert_eq!(spec.pe_config().unwrap().symmetric_size, 4096);
    }
}
