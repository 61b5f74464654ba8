//! The harness of the PE programs (`src/bin/*`): starting a scenario on a handle and
//! ending the PE on failure, turning library errors into the message a scenario fails
//! with, checking that a call failed the right way, reading mode arguments, and
//! measuring the CPU time a PE spends. It owns no scenario and never talks to the
//! launcher: job-side helpers are in the crate root.

use rand::{rngs::StdRng, SeedableRng};
use shmemplus::{Error, Place, Shmem};
use std::process::ExitCode;

/// A library error as the message a scenario fails with.
pub fn e2s(e: Error) -> String {
    e.to_string()
}

/// Checks that `r` failed with an error `ok` accepts, printing it as "`what`: error".
pub fn expect_err<T>(
    what: &str,
    r: shmemplus::Result<T>,
    ok: impl Fn(&Error) -> bool,
) -> Result<(), String> {
    match r {
        Err(e) if ok(&e) => {
            println!("{what}: {e}");
            Ok(())
        }
        Err(e) => Err(format!("{what}: wrong error {e:?}")),
        Ok(_) => Err(format!("{what}: accepted")),
    }
}

/// Fails the current scenario (returns `Err` from the enclosing function) with a
/// message when `got != want`.
#[macro_export]
macro_rules! ensure_eq {
    ($got:expr, $want:expr, $($what:tt)+) => {{
        let (got, want) = (&$got, &$want);
        if got != want {
            return Err(format!("{}: got {:?}, want {:?}", format!($($what)+), got, want));
        }
    }};
}

/// `cpu` (default) or `fpga` (board 0) from a mode argument.
pub fn place_arg(a: Option<&str>) -> Result<Place, String> {
    match a {
        None | Some("cpu") => Ok(Place::Cpu),
        Some("fpga") => Ok(Place::Fpga(0)),
        Some(other) => Err(format!("unknown place '{other}' (cpu or fpga)")),
    }
}

/// Fails unless this job's nodes have the board `place` names (if it names one).
pub fn need_boards(shmem: &Shmem, place: Place) -> Result<(), String> {
    match place {
        Place::Fpga(b) if b >= shmem.fpgas() => Err(format!(
            "this mode needs board {b} ({} boards per node): run with --fpgas",
            shmem.fpgas()
        )),
        _ => Ok(()),
    }
}

/// A generator seeded by a hash of `parts`, so that any PE can replay what any other
/// PE drew from the same parts.
pub fn seeded(parts: &[u64]) -> StdRng {
    StdRng::seed_from_u64(crate::hash(parts))
}

/// Runs `f` and returns what it returned, the wall-clock seconds it took, and the share
/// of one core the whole process (every thread, the progress thread included) used
/// meanwhile.
pub fn cpu_share<R>(f: impl FnOnce() -> R) -> (R, f64, f64) {
    let (c0, w0) = (cpu_seconds(), std::time::Instant::now());
    let r = f();
    let (used, wall) = (cpu_seconds() - c0, w0.elapsed().as_secs_f64());
    (r, wall, used / wall)
}

/// CPU seconds of the whole process, all threads (utime + stime in /proc/self/stat,
/// in ticks of 1/100 s on Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat are the 12th and 13th after the command name.
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Prints "`program` failed: `why`" and ends this PE with status 1 at once. Dropping a
/// handle would finalize implicitly, which waits in a barrier for PEs that may be
/// blocked on this one, so the message would never appear.
pub fn fail_now(program: &str, why: &str) -> ! {
    eprintln!("{program} failed: {why}");
    std::process::exit(1)
}

/// Runs a scenario on a fresh handle and finalizes it; a failure of the scenario ends
/// this PE at once (see [`fail_now`]). A failed `init` or `finalize` is returned.
pub fn with_handle(
    program: &str,
    scenario: impl FnOnce(&Shmem) -> Result<(), String>,
) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    if let Err(e) = scenario(&shmem) {
        fail_now(program, &e);
    }
    shmem.finalize().map_err(e2s)
}

/// The exit status of a PE program whose scenario ended with `result`: success, or
/// "`program` failed: error" on stderr and status 1.
pub fn exit_code(program: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program} failed: {e}");
            ExitCode::FAILURE
        }
    }
}
