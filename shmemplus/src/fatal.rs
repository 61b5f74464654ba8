//! Ending the job from a PE that cannot go on: a failure that only this PE sees, in a
//! call the other PEs have already committed to (they would wait for this PE forever),
//! ends this process with a message naming the PE and the call; the launcher then ends
//! the other PEs and names this one as the cause.
//!
//! This module owns that exit path and the test hook that provokes it. It must not
//! decide *when* a failure is fatal: the callers (collectives, allocation) do, and only
//! after every cheaper outcome (the same error on every PE) is out of reach.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Exit status of a PE ended by [`abort_job`] (`EX_SOFTWARE` of sysexits.h).
pub(crate) const FATAL_EXIT_CODE: i32 = 70;

/// The call whose next committed step must fail (a test hook, see
/// [`Shmem::inject_local_failure`](crate::Shmem::inject_local_failure)). One process is
/// one PE, so a process-wide value is this PE's.
static INJECTED: Mutex<Option<String>> = Mutex::new(None);
/// Whether `INJECTED` may hold a call (keeps the lock off every step's path).
static ARMED: AtomicBool = AtomicBool::new(false);

/// Prints why PE `pe` cannot complete `call` to stderr and exits the process with
/// [`FATAL_EXIT_CODE`]. Used where returning the error would leave other PEs waiting
/// for this one forever.
pub(crate) fn abort_job(pe: u32, call: &str, why: &dyn std::fmt::Display) -> ! {
    eprintln!(
        "shmemplus: fatal: PE {pe}: {call} failed on this PE after the other PEs had \
         committed to it: {why}. Ending the job, since they would wait for PE {pe} \
         forever."
    );
    std::process::exit(FATAL_EXIT_CODE)
}

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
