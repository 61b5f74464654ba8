//! Ending the job from inside a PE when a failure leaves it no correct way on: a
//! corrupt active-message ring, a panic on the progress thread, or a failure that only
//! this PE sees in a call the other PEs have already committed to (a collective step,
//! the zeroing of an allocation). Its peers would otherwise wait for it forever.
//!
//! This module owns that exit path (one line on stderr, exit code 70; the launcher then
//! ends the other PEs and names this one) and the test hook that provokes the committed
//! case. It must not decide *when* a failure is fatal: the callers do, and only after
//! every cheaper outcome (the same error on every PE) is out of reach. It must not try
//! to clean up shared state either: the launcher removes the job's shared memory.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Exit status of a PE that ended the job itself (`EX_SOFTWARE` of sysexits.h): the
/// launcher reports "PE p exited with code 70" after this PE's own message.
pub(crate) const FATAL_EXIT_CODE: i32 = 70;

/// Prints `shmemplus: PE {pe}: {what}; ending the job` on stderr and exits the process
/// with [`FATAL_EXIT_CODE`]. Safe to call from any thread: `exit` does not wait for
/// other threads, and nothing here takes a lock that a waiting thread of this PE could
/// hold.
pub(crate) fn end_job(pe: usize, what: &str) -> ! {
    // Not `eprintln!`: it panics when stderr is closed, and this must reach the exit;
    // and one write, so that it does not interleave with other PEs' lines.
    crate::stderr_line(format_args!("shmemplus: PE {pe}: {what}; ending the job"));
    // Under mpirun the MPI job ends with it (mpirun names the rank, which is the PE).
    if let Some(abort) = JOB_ABORT.get() {
        abort(FATAL_EXIT_CODE);
    }
    std::process::exit(FATAL_EXIT_CODE)
}

/// How the launcher of this job is told to end every PE, when it is not `shmemplus`'s
/// own (`shmemrun` sees the exit code): set once by the conduit that formed the job
/// (`MPI_Abort` under mpirun). A hook, so that this module depends on no conduit.
static JOB_ABORT: std::sync::OnceLock<fn(i32)> = std::sync::OnceLock::new();

/// Makes [`end_job`] call `abort(code)` before it exits (the first call wins).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn set_job_abort(abort: fn(i32)) {
    let _ = JOB_ABORT.set(abort);
}

/// Ends the job because PE `pe` cannot complete `call`, which the other PEs have
/// committed to (see [`end_job`]).
pub(crate) fn abort_job(pe: u32, call: &str, why: &dyn std::fmt::Display) -> ! {
    end_job(
        pe as usize,
        &format!(
            "{call} failed on this PE after the other PEs had committed to it ({why}); they would wait for PE {pe} forever"
        ),
    )
}

/// The call whose next committed step must fail (a test hook, see
/// [`Shmem::inject_local_failure`](crate::Shmem::inject_local_failure)). One process is
/// one PE, so a process-wide value is this PE's.
static INJECTED: Mutex<Option<String>> = Mutex::new(None);
/// Whether `INJECTED` may hold a call (keeps the lock off every step's path).
static ARMED: AtomicBool = AtomicBool::new(false);

/// `r`'s value, or the end of the job (see [`abort_job`]) if `r` is an error or a
/// failure of `call` was injected on this PE.
pub(crate) fn committed<T>(pe: u32, call: &str, r: crate::Result<T>) -> T {
    if take_injected(call) {
        abort_job(
            pe,
            call,
            &"injected local failure (a test of the abort path)",
        );
    }
    match r {
        Ok(v) => v,
        Err(e) => abort_job(pe, call, &e),
    }
}

/// Arms a one-shot failure of the next committed step of `call` on this PE.
pub(crate) fn inject(call: &str) {
    *INJECTED.lock().unwrap_or_else(|e| e.into_inner()) = Some(call.to_string());
    ARMED.store(true, Ordering::Release);
}

/// Whether a failure of `call` was injected (and disarms it).
fn take_injected(call: &str) -> bool {
    if !ARMED.load(Ordering::Acquire) {
        return false;
    }
    let mut armed = INJECTED.lock().unwrap_or_else(|e| e.into_inner());
    if armed.as_deref() == Some(call) {
        *armed = None;
        true
    } else {
        false
    }
}
