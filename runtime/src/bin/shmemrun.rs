//! `shmemrun`: starts an SPMD job of N PEs and supervises it (see the
//! `shmemplus_runtime` library). It owns the command line, the checks made once before
//! any PE starts (options, profile, the PEs' configuration), and printing each fault as
//! one line with a documented exit code. It must not hold job logic: that is the
//! library's.
//!
//! Exit status (the README's "Exit codes" table): 0 when every PE exited 0; the first
//! failing PE's code (or 128 + signal); 124 on timeout; 128 + signal when interrupted;
//! 2 for a usage error; 78 for a bad configuration variable; 127 (126) when the program
//! is missing (not executable); 1 for other launch errors.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use shmemplus_runtime::{
    apply_profile, run_job, JobOutcome, JobSpec, OutputMode, EXIT_CONFIG, EXIT_USAGE,
};

/// Start PROGRAM as an SPMD job of N PEs and supervise it: if any PE fails, the whole job
/// is ended. Logs go to stderr, filtered by RUST_LOG (default: warn).
#[derive(Debug, Parser)]
#[command(
    name = "shmemrun",
    version,
    after_help = "Exit status: 0 when every PE exited 0; 2 usage error; 78 bad configuration \
variable (nothing started); 127 program not found; 126 not executable; 124 --timeout; \
otherwise the first failing PE's code (70: it ended the job itself; 101: it panicked) \
or 128 + the signal that killed it; 128 + N when shmemrun itself got signal N."
)]
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
    /// Write a Chrome trace (Perfetto, chrome://tracing) of every hop and call to PATH
    /// (default: the SHMEMPLUS_TRACE variable).
    #[arg(long, value_name = "PATH")]
    trace: Option<std::path::PathBuf>,
    /// The clock the modeled time runs on: wall (modeled hops make the initiating
    /// thread wait in real time) or virtual (every PE has its own clock from 0 that
    /// communication, board kernels and computation advance; nothing sleeps, and
    /// reports print virtual time). Sets SHMEMPLUS_CLOCK for the PEs (default: that
    /// variable, else wall).
    #[arg(long, value_name = "wall|virtual")]
    clock: Option<String>,
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

/// A fault found before or while running the job: the one line to print (after
/// `shmemrun: `) and the exit code.
struct Fault {
    code: i32,
    line: String,
}

fn fault(code: i32, line: impl Into<String>) -> Fault {
    Fault {
        code,
        line: line.into(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // No colour codes into pipes and files.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let code = match run(cli) {
        Ok(code) => code,
        Err(Fault { code, line }) => {
            shmemplus::stderr_line(format_args!("shmemrun: {line}"));
            code
        }
    };
    // A failure must never look like success, nor wrap to it modulo 256.
    ExitCode::from(
        u8::try_from(code & 0xff)
            .ok()
            .filter(|&c| c != 0 || code == 0)
            .unwrap_or(1),
    )
}

/// Checks everything that can be checked before a PE starts, runs the job, and returns
/// the exit code of a job that ran to the end (successfully or not).
fn run(cli: Cli) -> Result<i32, Fault> {
    let mut command = cli.command.into_iter();
    let Some(program) = command.next() else {
        return Err(fault(
            EXIT_USAGE,
            "no program given (shmemrun -n N PROGRAM [ARGS...])",
        ));
    };
    let mut spec = JobSpec::new(cli.n_pes.unwrap_or(0), program);
    spec.args = command.collect();
    spec.pes_per_node = cli.pes_per_node;
    spec.nodes = cli.nodes;
    if let Some(f) = cli.fpgas {
        if f > 16 {
            return Err(fault(
                EXIT_USAGE,
                format!("--fpgas {f}: at most 16 boards per node"),
            ));
        }
        spec.env
            .push(("SHMEMPLUS_FPGAS".into(), f.to_string().into()));
    }
    if let Some(clock) = &cli.clock {
        let kind = shmemplus::config::ClockKind::parse(clock)
            .map_err(|why| fault(EXIT_USAGE, format!("bad --clock: {why}")))?;
        spec.env
            .push(("SHMEMPLUS_CLOCK".into(), kind.name().into()));
    }
    if let Some(profile) = &cli.profile {
        apply_profile(&mut spec, profile, cli.n_pes)
            .map_err(|e| fault(EXIT_USAGE, format!("bad --profile: {e}")))?;
    } else if let Some(profile) = std::env::var("SHMEMPLUS_PROFILE")
        .ok()
        .filter(|p| !p.is_empty())
    {
        apply_profile(&mut spec, &profile, cli.n_pes).map_err(|e| {
            fault(
                EXIT_CONFIG,
                format!("bad SHMEMPLUS_PROFILE in the environment: {e}"),
            )
        })?;
    } else if cli.n_pes.is_none() {
        return Err(fault(
            EXIT_USAGE,
            "give the number of PEs with -n N (or a --profile)",
        ));
    }
    // Once here, not once per PE: the shape of the job, then the configuration every PE
    // would read at init (the library's own parser, so shmemrun and the PEs agree).
    shmemplus::Topology::resolve(spec.n_pes, spec.pes_per_node, spec.nodes)
        .map_err(|e| fault(EXIT_USAGE, e.to_string()))?;
    spec.pe_config()
        .map_err(|e| fault(EXIT_CONFIG, format!("{e}; no PE was started")))?;
    spec.timeout = cli.timeout;
    spec.output = if cli.tag_output {
        OutputMode::Tagged
    } else {
        OutputMode::Inherit
    };
    spec.handle_signals = true;
    let trace = match cli
        .trace
        .or_else(|| std::env::var_os(shmemplus::trace::ENV_TRACE).map(Into::into))
    {
        Some(p) if p.as_os_str().is_empty() => {
            return Err(fault(
                EXIT_CONFIG,
                "SHMEMPLUS_TRACE is empty; give the file to write the trace to",
            ))
        }
        Some(p) => Some(spec.trace_to(&p).map_err(|e| {
            fault(
                EXIT_USAGE,
                format!("--trace {}: cannot write it: {e}", p.display()),
            )
        })?),
        None => None,
    };

    let report = run_job(&spec);
    if let Some(path) = &trace {
        merge_trace(path, spec.n_pes);
    }
    let report = report.map_err(|e| fault(e.exit_code(), e.to_string()))?;
    match report.outcome {
        JobOutcome::Success => return Ok(0),
        // The program chose the code (shmem_global_exit): nothing to report.
        JobOutcome::GlobalExit { .. } => return Ok(report.exit_code()),
        _ => {}
    }
    let mut line = format!("{}; ending the job", report.message());
    if let Some(advice) = report.advice() {
        line.push_str(&format!(" ({advice})"));
    }
    Err(fault(report.exit_code(), line))
}

/// Merges the PEs' trace fragments into `path` (they are deleted in any case) and says
/// where the trace is, and whether it is partial, on stderr.
fn merge_trace(path: &std::path::Path, n_pes: u32) {
    let shown = path.display();
    match shmemplus::trace::merge_fragments(path, n_pes) {
        Ok(m) if m.missing.is_empty() => {
            shmemplus::stderr_line(format_args!("shmemrun: trace written to {shown} ({} events)", m.events))
        }
        Ok(m) => shmemplus::stderr_line(format_args!(
            "shmemrun: the trace {shown} is partial: no events from PEs {:?} ({} events from the others)",
            m.missing, m.events
        )),
        Err(e) => shmemplus::stderr_line(format_args!("shmemrun: cannot write the trace {shown}: {e}")),
    }
}
