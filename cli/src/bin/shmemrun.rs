//! `shmemrun`: starts an SPMD job of N PEs and supervises it (see
//! `shmemplus_cli::launcher`). The CLI only; all behaviour lives in the launcher library.
//!
//! Exit status: 0 when every PE exited 0; the first failing PE's code (or 128 + signal);
//! 124 on timeout; 128 + signal when interrupted; 2 for bad options; 127 (126) when the
//! program is missing (not executable); 1 for other launch errors.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use shmemplus_cli::launcher::{
    apply_profile, run_job, JobOutcome, JobSpec, LaunchError, OutputMode,
};

/// Start PROGRAM as an SPMD job of N PEs and supervise it: if any PE fails, the whole job
/// is ended. Logs go to stderr, filtered by RUST_LOG (default: warn).
#[derive(Debug, Parser)]
#[command(name = "shmemrun", version)]
struct Cli {
    /// Number of PEs (default with --profile: the profile's nodes x PEs per node).
    #[arg(short = 'n', long = "np", value_name = "N")]
    n_pes: Option<u32>,
    /// PEs per simulated node (PE p is on node p / M).
    #[arg(long, value_name = "M")]
    pes_per_node: Option<u32>,
    /// Number of simulated nodes.
    #[arg(long, value_name = "K")]
    nodes: Option<u32>,
    /// End the job after this many seconds (fractions allowed).
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    timeout: Option<Duration>,
    /// Prefix every output line with `[pe N] `.
    #[arg(long)]
    tag_output: bool,
    /// Cluster profile to emulate: native, mu, novo-g, or a TOML file (default: the
    /// SHMEMPLUS_PROFILE variable, else native). Its topology is the default; -n,
    /// --pes-per-node and --nodes override it.
    #[arg(long, value_name = "NAME|PATH")]
    profile: Option<String>,
    /// FPGA boards per node (default: the profile's).
    #[arg(long, value_name = "F")]
    fpgas: Option<u32>,
    /// The program and its arguments.
    #[arg(
        value_name = "PROGRAM",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<OsString>,
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if secs <= 0.0 {
        return Err("the timeout must be positive".into());
    }
    Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();

    let mut command = cli.command.into_iter();
    let Some(program) = command.next() else {
        eprintln!("shmemrun: no program given");
        return ExitCode::from(2);
    };
    let mut spec = JobSpec::new(cli.n_pes.unwrap_or(0), program);
    spec.args = command.collect();
    spec.pes_per_node = cli.pes_per_node;
    spec.nodes = cli.nodes;
    let profile = cli.profile.or_else(|| {
        std::env::var("SHMEMPLUS_PROFILE")
            .ok()
            .filter(|p| !p.is_empty())
    });
    if let Some(profile) = profile {
        if let Err(e) = apply_profile(&mut spec, &profile, cli.n_pes) {
            eprintln!("shmemrun: bad --profile: {e}");
            return ExitCode::from(2);
        }
    } else if cli.n_pes.is_none() {
        eprintln!("shmemrun: give the number of PEs with -n N (or a --profile)");
        return ExitCode::from(2);
    }
    if let Some(f) = cli.fpgas {
        if f > 16 {
            eprintln!("shmemrun: --fpgas {f}: at most 16 boards per node");
            return ExitCode::from(2);
        }
        spec.env
            .push(("SHMEMPLUS_FPGAS".into(), f.to_string().into()));
    }
    spec.timeout = cli.timeout;
    spec.output = if cli.tag_output {
        OutputMode::Tagged
    } else {
        OutputMode::Inherit
    };
    spec.handle_signals = true;

    match run_job(&spec) {
        Ok(report) => {
            if report.outcome != JobOutcome::Success {
                eprintln!("shmemrun: {}; ending the job", report.message());
            }
            ExitCode::from(u8::try_from(report.exit_code() & 0xff).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("shmemrun: {e}");
            ExitCode::from(match &e {
                LaunchError::BadTopology(_) => 2,
                LaunchError::Spawn { source, .. } => match source.kind() {
                    std::io::ErrorKind::NotFound => 127,
                    std::io::ErrorKind::PermissionDenied => 126,
                    _ => 1,
                },
                _ => 1,
            })
        }
    }
}
