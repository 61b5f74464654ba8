//! The co-scheduler's cost per chunk.
//!
//! - **CPU chunks** (the default): a loop of `n` iterations with an empty CPU path in
//!   chunks of one iteration on every PE's CPU (no boards), so that the loop's time
//!   is the scheduling alone: the take (one remote `atomic_fetch_add` on PE 0's
//!   counter), the chunk-size update and the bookkeeping of the report.
//! - **Board chunks** (`--boards`): a loop of `n` iterations on the boards alone, each
//!   PE driving its own partitions of its node's boards (`Scope::Pe`), in chunks of
//!   one iteration of the standard bitfile's `add-one` kernel (nothing staged, nothing
//!   fetched). The boards start from the model an untimed loop before learned, so
//!   every take runs the sizer's deadline plan, as a production chunk does. Each
//!   chunk's time is then the driver's work (the take and the plan, starting the
//!   kernel, completing it, the report's bookkeeping) plus the kernel's modeled time
//!   for one element, which the bench prints beside it (`kernel_us`), and with one
//!   board per node the difference (`driver_us_per_board_chunk`; with more, one
//!   board's kernel runs while the driver serves another, and it is `null`). Run it
//!   with one PE per node on the virtual clock, where one thread drives the boards
//!   and the driver's own time is its CPU time: `shmemrun -n 2 --pes-per-node 1
//!   --fpgas 1 --clock virtual target/release/cosched_overhead --boards`.
//!
//! Run as `shmemrun -n 4 target/release/cosched_overhead [N]` (default N = 20000).
//! PE 0 prints one JSON line: `{"n_pes", "chunks", "busiest_pe_chunks", "seconds",
//! "us_per_chunk"}`: the chunks all PEs took and the most one PE took, as the loop's
//! reports count them, the loop's time (its slowest PE's), and that time divided by
//! the chunks one PE took on average (every PE takes chunks at the same time, as in
//! a real loop). With `--boards` it adds `"boards"` (per node), `"kernel_us"` and
//! `"driver_us_per_board_chunk"`, and `chunks` are board chunks.

use shmemplus::fpga_mock::kernels::{standard_bitfile, ADD_ONE, STANDARD_TIMING};
use shmemplus::{BoardRun, Place, ReduceOp, Shmem, SymVec};
use shmemplus_cosched::{gather, run, BoardPath, NoBoards, Options, Report, Scope};
use std::ops::Range;

/// The co-scheduler's cost per chunk: a loop of N one-iteration chunks with an empty
/// CPU path on every PE (no boards), or (`--boards`) of N one-iteration `add-one`
/// kernels on the boards. Run it under `shmemrun`; PE 0 prints one JSON line.
#[derive(clap::Parser)]
#[command(version)]
struct Args {
    /// Iterations of the timed loop (each a chunk of its own).
    #[arg(default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    n: u64,
    /// Board chunks instead of CPU chunks (needs boards: `shmemrun --fpgas 1`).
    #[arg(long)]
    boards: bool,
}

/// A board chunk: `add-one` over one word of this PE's partition of the board per
/// iteration, nothing staged or fetched.
struct AddOne<'a> {
    shmem: &'a Shmem,
    /// A word per board, on that board.
    words: &'a [SymVec<u32>],
}

impl BoardPath for AddOne<'_> {
    fn start(&self, board: u32, range: Range<u64>) -> Result<BoardRun, String> {
        let word = self
            .words
            .get(board as usize)
            .ok_or_else(|| format!("no word on board {board}"))?;
        let args = [word.heap_offset() as u64, range.end - range.start];
        self.shmem
            .kernel_start(board, ADD_ONE, &args)
            .map_err(|e| e.to_string())
    }

    fn finish(&self, _: u32, _: Range<u64>) -> Result<(), String> {
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = <Args as clap::Parser>::parse();
    let n = args.n;
    let shmem = shmemplus::init()?;
    let report = if args.boards {
        board_loops(&shmem, n)?
    } else {
        let options = Options {
            boards: false,
            samples: Some((1, 2)),
            // Every chunk one iteration: the CPU's chunk is at least 1 and an empty
            // path takes no time.
            cpu_chunk_s: 1e-12,
            ..Options::default()
        };
        // One untimed loop first (allocations, first touches).
        run(&shmem, n / 10 + 1, &options, |_| Ok(()), &NoBoards)?;
        run(&shmem, n, &options, |_| Ok(()), &NoBoards)?
    };
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
        // With `--boards` every PE has a loop of its own (`Scope::Pe`).
        let loops = if args.boards {
            u64::from(shmem.n_pes())
        } else {
            1
        };
        let all = n.saturating_mul(loops);
        if items != all {
            return Err(format!("the reports count {items} iterations of {all}").into());
        }
        let busiest = devices.iter().map(|d| d.chunks).max().unwrap_or(0);
        let per_pe = chunks as f64 / f64::from(shmem.n_pes());
        let us_per_chunk = seconds / per_pe * 1e6;
        let boards = if args.boards {
            // A PE's boards run their chunks side by side: per board, the loop's time
            // over that board's chunks.
            let per_board = per_pe / f64::from(shmem.fpgas());
            let kernel_us = STANDARD_TIMING.seconds(1) * 1e6;
            let us = seconds / per_board * 1e6;
            // With one board a chunk's kernel and the driver's work follow each other;
            // with more, one board's kernel runs while the driver serves the others.
            let driver = if shmem.fpgas() == 1 {
                format!("{:.3}", us - kernel_us)
            } else {
                "null".into()
            };
            format!(
                ",\"boards\":{},\"kernel_us\":{kernel_us:.3},\"us_per_board_chunk\":{us:.3},\"driver_us_per_board_chunk\":{driver}",
                shmem.fpgas(),
            )
        } else {
            String::new()
        };
        println!(
            "{{\"n_pes\":{},\"chunks\":{chunks},\"busiest_pe_chunks\":{busiest},\"seconds\":{:.6},\"us_per_chunk\":{us_per_chunk:.3}{boards}}}",
            shmem.n_pes(),
            seconds,
        );
    }
    shmem.finalize()?;
    Ok(())
}

/// `--boards`: an untimed loop that trains the boards of each PE (and pays first
/// touches), then the timed loop of `n` one-iteration chunks on the boards alone,
/// started from what the first learned. Errors without boards.
fn board_loops(shmem: &Shmem, n: u64) -> Result<Report, Box<dyn std::error::Error>> {
    let boards = shmem.fpgas();
    if boards == 0 {
        return Err("--boards needs boards (shmemrun --fpgas 1)".into());
    }
    // The untimed loop is long enough for FastFit's two samples (a 64th of it and
    // four times that) and a chunk after them, whatever `n`. `add-one` adds 1 to as
    // many words as its chunk has iterations, from the first: a word per iteration
    // of that loop on each board holds its largest chunk (the timed loop's are 1).
    let training_n = (n / 10).max(1000);
    let words = (0..boards)
        .map(|b| shmem.alloc::<u32>(training_n as usize, Place::Fpga(b)))
        .collect::<Result<Vec<_>, _>>()?;
    for b in 0..boards {
        shmem.fpga_configure(b, standard_bitfile())?;
    }
    shmem.barrier_all()?;
    let path = AddOne {
        shmem,
        words: &words,
    };
    let on_boards = Options {
        cpus: false,
        scope: Scope::Pe,
        ..Options::default()
    };
    let first = run(shmem, training_n, &on_boards, |_| Ok(()), &path)?;
    let Some(trained) = first.trained else {
        return Err("the untimed loop's boards did not finish training".into());
    };
    let one_each = Options {
        max_board_chunk: Some(1),
        trained: Some(trained),
        ..on_boards
    };
    Ok(run(shmem, n, &one_each, |_| Ok(()), &path)?)
}
