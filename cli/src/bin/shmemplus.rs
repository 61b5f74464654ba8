//! `shmemplus`: the tool. `bench` (put/get, barrier, AM, contention, atomics and
//! collectives microbenchmarks), `info` (a cluster profile and its modeled hop costs),
//! `model` (the multilevel communication model's equations), `tune` (the self-tuning
//! pass and its cache), `trace-plot` (a `--trace` file as a timeline image),
//! `cosched-plot` (a co-scheduling timeline: throughput and chunks per device) and
//! `scf` (run and explore SCF task graphs).
//! `bench-pe` and `tune-pe` are the PE programs those commands launch; they are not
//! meant to be run by hand.

use clap::{Parser, Subcommand};
use shmemplus_cli::bench::{self, BenchOptions};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(name = "shmemplus", version, about = "The shmemplus tool")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure put/get latency and bandwidth (with memcpy of the same sizes in the same
    /// run), barrier_all and the AM round trip, in a job this command launches.
    Bench(BenchOptions),
    /// Print a cluster profile: topology, hop cost forms and modeled hop costs.
    Info {
        /// Profile: native, mu, novo-g or a TOML file (default: SHMEMPLUS_PROFILE, else native).
        #[arg(long, value_name = "NAME|PATH")]
        profile: Option<String>,
    },
    /// Predict transfer, best-packet, gather and kernel times with the multilevel
    /// model (docs/model.md); measures nothing.
    Model(shmemplus_cli::model_cli::ModelArgs),
    /// Run the self-tuning pass (2 PEs on 2 nodes of the profile) and print the measured
    /// hop costs and the chosen packet sizes; --report also measures each choice.
    Tune(shmemplus_cli::tune_cli::TuneOptions),
    /// One PE of a tuning job (started by `tune`, not by hand).
    #[command(hide = true)]
    TunePe {
        #[arg(long)]
        report: bool,
    },
    /// Draw a trace (`shmemrun --trace`) as a timeline: one row per PE, NIC side and
    /// board channel, one bar per call or hop.
    TracePlot {
        /// The trace file (Chrome trace-event JSON).
        #[arg(value_name = "TRACE.json")]
        trace: std::path::PathBuf,
        /// The image to write: .png or .svg.
        #[arg(
            short = 'o',
            long = "output",
            value_name = "FILE",
            default_value = "timeline.png"
        )]
        output: std::path::PathBuf,
    },
    /// Draw a co-scheduling timeline (`cbir` or `fft2d --schedule fastfit --devices
    /// FILE`): throughput per device over time (one line per CPU and board, a point
    /// per chunk), each device's chunks as bars on a row of its own (idle time shows as
    /// gaps), and a legend with each device's chunks and idle share.
    CoschedPlot {
        /// The timeline file (JSON).
        #[arg(value_name = "DEVICES.json")]
        timeline: std::path::PathBuf,
        /// The image to write: .png or .svg.
        #[arg(
            short = 'o',
            long = "output",
            value_name = "FILE",
            default_value = "throughput.png"
        )]
        output: std::path::PathBuf,
    },
    /// SCF: run a task graph under a mapping, or explore (predict, rank, measure) every
    /// mapping of a graph.
    Scf(shmemplus_cli::scf_cli::ScfArgs),
    /// One PE of a benchmark job (started by `bench`, not by hand).
    #[command(hide = true)]
    BenchPe(BenchOptions),
}

fn info(profile: Option<&str>) -> Result<(), String> {
    let env = std::env::var("SHMEMPLUS_PROFILE").ok();
    let name = profile.or(env.as_deref()).unwrap_or("native");
    let p = shmemplus::netsim::Profile::load(name).map_err(|e| e.to_string())?;
    print!("{}", shmemplus_cli::info::describe(&p));
    Ok(())
}

/// A report tool ends when its reader does (`shmemplus bench | head`), as `cat` does,
/// instead of panicking in `println!` on the broken pipe: the Rust runtime ignores
/// SIGPIPE, and this gives it back its default action. In a bench job the PE that
/// prints (PE 0) then ends by the signal and the launcher ends the job, naming it.
fn end_quietly_on_broken_pipe() {
    // SAFETY: `signal` with SIG_DFL installs no handler (no code runs on the signal),
    // and it is called first in `main`, before this process starts any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    end_quietly_on_broken_pipe();
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Bench(o) => bench::run(o),
        Command::BenchPe(o) => bench::run_pe(o),
        Command::Tune(o) => shmemplus_cli::tune_cli::run(o),
        Command::TunePe { report } => shmemplus_cli::tune_cli::run_pe(*report),
        Command::Scf(a) => shmemplus_cli::scf_cli::run(a),
        Command::Info { profile } => info(profile.as_deref()),
        Command::TracePlot { trace, output } => {
            shmemplus_cli::trace_plot::plot_trace(trace, output)
        }
        Command::CoschedPlot { timeline, output } => {
            shmemplus_cli::cosched_plot::plot_cosched(timeline, output)
        }
        // Bad model input is a usage error: exit code 2, like clap's own errors.
        Command::Model(a) => match shmemplus_cli::model_cli::run(a) {
            Err(e) => {
                shmemplus::stderr_line(format_args!("shmemplus: {e}"));
                return ExitCode::from(2);
            }
            ok => ok,
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            shmemplus::stderr_line(format_args!("shmemplus: {e}"));
            ExitCode::FAILURE
        }
    }
}
