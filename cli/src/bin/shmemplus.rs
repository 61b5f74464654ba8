//! `shmemplus`: the tool. Today: `bench` (put/get, barrier and AM microbenchmarks).
//! Later issues add `model`, `tune` and `info`.

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
    /// One PE of a benchmark job (started by `bench`, not by hand).
    #[command(hide = true)]
    BenchPe(BenchOptions),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Bench(o) => bench::run(o),
        Command::BenchPe(o) => bench::run_pe(o),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shmemplus: {e}");
            ExitCode::FAILURE
        }
    }
}
