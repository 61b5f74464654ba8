//! `shmemplus-fault-pe`: a test tool, not for users. A real shmemplus PE (the library's
//! own `init`, segments and barriers) that fails on demand, so the runtime's handling of
//! each fault can be tested end to end through `shmemrun`.
//!
//! Usage: `shmemplus-fault-pe MODE [PE]`. After `init` and a first barrier every PE
//! prints `ready <pid> <job id>` on stdout. Then, by mode:
//!
//! - `hello`: finalizes and exits 0.
//! - `complain`: every PE writes `fault-pe: PE P of N: complaining on purpose, as
//!   every PE does at once` on stderr (a line formatted from several pieces), all
//!   right after the same barrier; then a barrier, and exit 0.
//! - `panic P`: PE `P` panics with `fault-pe: PE P panics on purpose`; the others wait
//!   in a barrier until the launcher ends them.
//! - `barrier-loop`: every PE runs barriers until something ends it (for a test that
//!   kills one PE from outside); it gives up after 60 s, so it never runs forever.
//! - `global-exit P CODE`: PE `P` prints `global exit CODE` and calls
//!   `global_exit(CODE)`; the others wait in a barrier it never enters.
//!
//! Exits 2 on a bad command line, 1 when `init` or a barrier fails.

use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    let target = args.get(1).and_then(|p| p.parse::<u32>().ok());
    let code = args.get(2).and_then(|c| c.parse::<i32>().ok());
    let known = match mode {
        "hello" | "complain" | "barrier-loop" => true,
        "panic" => target.is_some(),
        "global-exit" => target.is_some() && code.is_some(),
        _ => false,
    };
    if !known {
        shmemplus::stderr_line(
            "usage: shmemplus-fault-pe hello | complain | panic PE | barrier-loop | global-exit PE CODE",
        );
        std::process::exit(2);
    }
    if let Err(e) = run(mode, target, code.unwrap_or(0)) {
        shmemplus::stderr_line(format_args!("fault-pe: {e}"));
        std::process::exit(1);
    }
}

fn run(mode: &str, target: Option<u32>, code: i32) -> shmemplus::Result<()> {
    let shmem = shmemplus::init()?;
    let me = shmem.my_pe();
    shmem.barrier_all()?;
    let job = std::env::var(shmemplus::launch::ENV_JOB_ID).unwrap_or_default();
    println!("ready {} {job}", std::process::id());
    match mode {
        "complain" => {
            let n = shmem.n_pes();
            // Five pieces (three literals between two numbers, then "as"): written
            // a piece at a time, the test of whole lines catches it in nearly every
            // job of 8 PEs (three pieces: in about two thirds of its runs).
            shmemplus::stderr_line(format_args!(
                "fault-pe: PE {me} of {n}: complaining on purpose, {} every PE does at once",
                "as"
            ));
            shmem.barrier_all()?;
        }
        "panic" => {
            if Some(me) == target {
                panic!("fault-pe: PE {me} panics on purpose");
            }
            shmem.barrier_all()?;
        }
        "global-exit" => {
            // Every PE's `ready` line is out before anyone ends the job.
            shmem.barrier_all()?;
            if Some(me) == target {
                // Unflushed on purpose (no newline flush by a later call): global_exit
                // must flush it.
                print!("global exit {code}");
                shmem.global_exit(code);
            }
            shmem.barrier_all()?;
        }
        "barrier-loop" => {
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until {
                shmem.barrier_all()?;
            }
        }
        _ => {}
    }
    shmem.finalize()
}
