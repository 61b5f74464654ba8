//! The co-scheduler's cost per chunk: a loop of `n` iterations with an empty CPU path
//! in chunks of one iteration on every PE's CPU (no boards), so that the loop's time
//! is the scheduling alone: the take (one remote `atomic_fetch_add` on PE 0's
//! counter), the chunk-size update and the bookkeeping of the report.
//!
//! Run as `shmemrun -n 4 target/release/cosched_overhead [N]` (default N = 20000).
//! PE 0 prints one JSON line: `{"n_pes", "chunks", "seconds", "us_per_chunk"}`, where
//! `us_per_chunk` is the loop's time divided by the chunks one PE took on average
//! (every PE takes chunks at the same time, as in a real loop).

use shmemplus_cosched::{run, NoBoards, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 20_000,
    };
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
    if shmem.my_pe() == 0 {
        let per_pe = n as f64 / f64::from(shmem.n_pes());
        println!(
            "{{\"n_pes\":{},\"chunks\":{n},\"seconds\":{:.6},\"us_per_chunk\":{:.3}}}",
            shmem.n_pes(),
            report.elapsed_s,
            report.elapsed_s / per_pe * 1e6
        );
    }
    shmem.finalize()?;
    Ok(())
}
