//! The co-scheduler's cost per chunk: a loop of `n` iterations with an empty CPU path
//! in chunks of one iteration on every PE's CPU (no boards), so that the loop's time
//! is the scheduling alone: the take (one remote `atomic_fetch_add` on PE 0's
//! counter), the chunk-size update and the bookkeeping of the report.
//!
//! Run as `shmemrun -n 4 target/release/cosched_overhead [N]` (default N = 20000).
//! PE 0 prints one JSON line: `{"n_pes", "chunks", "busiest_pe_chunks", "seconds",
//! "us_per_chunk"}`: the chunks all PEs took and the most one PE took, as the loop's
//! reports count them, the loop's time (its slowest PE's), and that time divided by
//! the chunks one PE took on average (every PE takes chunks at the same time, as in
//! a real loop).

use shmemplus::{Place, ReduceOp};
use shmemplus_cosched::{gather, run, NoBoards, Options};

/// The co-scheduler's cost per chunk: a loop of N one-iteration chunks with an empty
/// CPU path on every PE (no boards). Run it under `shmemrun`; PE 0 prints one JSON
/// line.
#[derive(clap::Parser)]
#[command(version)]
struct Args {
    /// Iterations of the timed loop (each a chunk of its own).
    #[arg(default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    n: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = <Args as clap::Parser>::parse().n;
    let shmem = shmemplus::init()?;
    let options = Options {
        boards: false,
        samples: Some((1, 2)),
        // Every chunk one iteration: the CPU's chunk is at least 1 and an empty path
        // takes no time.
        cpu_chunk_s: 1e-12,
        ..Options::default()
    };
    // One untimed loop first (allocations, first touches).
    run(&shmem, n / 10 + 1, &options, |_| Ok(()), &NoBoards)?;
    let report = run(&shmem, n, &options, |_| Ok(()), &NoBoards)?;
    // The loop's time is its slowest PE's: with more PEs than cores a PE may be off
    // its core while the others take every chunk, and its own loop then lasts
    // microseconds (one empty take and the closing barrier).
    let slowest = shmem.alloc::<f64>(1, Place::Cpu)?;
    shmem.local_write(&slowest, 0, &[report.elapsed_s])?;
    shmem.reduce(&shmem.team_world(), &slowest, &slowest, 1, ReduceOp::Max)?;
    let seconds = shmem.local_read_one(&slowest, 0)?;
    // The chunks every PE took, as the reports count them (not assumed from `n`).
    if let Some(devices) = gather(&shmem, &report)? {
        let chunks: u64 = devices.iter().map(|d| d.chunks).sum();
        let items: u64 = devices.iter().map(|d| d.items).sum();
        if items != n {
            return Err(format!("the reports count {items} iterations of {n}").into());
        }
        let busiest = devices.iter().map(|d| d.chunks).max().unwrap_or(0);
        let per_pe = chunks as f64 / f64::from(shmem.n_pes());
        println!(
            "{{\"n_pes\":{},\"chunks\":{chunks},\"busiest_pe_chunks\":{busiest},\"seconds\":{:.6},\"us_per_chunk\":{:.3}}}",
            shmem.n_pes(),
            seconds,
            seconds / per_pe * 1e6
        );
    }
    shmem.finalize()?;
    Ok(())
}
