//! The process's one shmemplus handle, as the C API sees it, and the fatal path every
//! routine takes on an error.
//!
//! This module owns the global handle (set by `shmem_init`, marked finalized by
//! `shmem_finalize`) and the messages for calls made before init, after finalize, or
//! with bad arguments. It must not translate addresses (`addr`) or move data.

use rust::{Error, Shmem};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Exit status of a PE that ends the job because of a failed call: the same status the
/// Rust library uses for a PE that ends the job itself, which `shmemrun` reports as
/// "PE p exited with code 70" after this PE's own message.
pub(crate) const FATAL_EXIT_CODE: i32 = 70;

static HANDLE: OnceLock<Shmem> = OnceLock::new();
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// The handle, for `routine`; ends the job with a clear message when `shmem_init` has
/// not been called. (After `shmem_finalize` the handle refuses every call itself, and
/// that error ends the job through [`fail`].)
#[inline]
pub(crate) fn shmem(routine: &str) -> &'static Shmem {
    match HANDLE.get() {
        Some(shmem) => shmem,
        None => not_initialized(routine),
    }
}

/// Stores the handle made by `shmem_init`. Returns false if one was stored before.
pub(crate) fn install(shmem: Shmem) -> bool {
    HANDLE.set(shmem).is_ok()
}

/// Whether a handle was ever stored (init ran, possibly finalized since).
pub(crate) fn initialized() -> bool {
    HANDLE.get().is_some()
}

/// Marks the handle finalized; returns false if it already was.
pub(crate) fn mark_finalized() -> bool {
    !FINALIZED.swap(true, Ordering::AcqRel)
}

/// Whether `shmem_finalize` ran.
pub(crate) fn finalized() -> bool {
    FINALIZED.load(Ordering::Acquire)
}

#[cold]
#[inline(never)]
fn not_initialized(routine: &str) -> ! {
    if finalized() {
        die(None, routine, "called after shmem_finalize")
    }
    die(
        None,
        routine,
        "called before shmem_init (call shmem_init first)",
    )
}

/// Ends the job because `routine` failed with `err` on this PE.
#[cold]
#[inline(never)]
pub(crate) fn fail(routine: &str, err: Error) -> ! {
    let why = match err {
        Error::Finalized => "called after shmem_finalize".to_string(),
        other => other.to_string(),
    };
    die(HANDLE.get().map(Shmem::my_pe), routine, &why)
}

/// Ends the job because argument `arg` of `routine` is wrong (`why`).
#[cold]
#[inline(never)]
pub(crate) fn bad_arg(routine: &str, arg: &str, why: &str) -> ! {
    die(
        HANDLE.get().map(Shmem::my_pe),
        routine,
        &format!("argument {arg}: {why}"),
    )
}

/// Prints `shmemplus: PE p: routine: why; ending the job` and exits with
/// [`FATAL_EXIT_CODE`]; the launcher ends the other PEs and names this one.
#[cold]
#[inline(never)]
pub(crate) fn die(pe: Option<u32>, routine: &str, why: &str) -> ! {
    let who = match pe.or_else(launcher_pe) {
        Some(pe) => format!("PE {pe}"),
        None => "this PE".to_string(),
    };
    let _ = std::io::stdout().flush();
    // Not `eprintln!`: it panics when stderr is closed, and this must reach the exit;
    // and one write, so that it does not interleave with other PEs' lines.
    rust::stderr_line(format_args!(
        "shmemplus: {who}: {routine}: {why}; ending the job"
    ));
    std::process::exit(FATAL_EXIT_CODE)
}

/// This PE's number as the launcher exported it, for a message written before the
/// handle exists: only a number below the exported PE count, so a stray or garbled
/// environment never puts a wrong PE number in a message.
fn launcher_pe() -> Option<u32> {
    let number = |var: &str| std::env::var(var).ok()?.trim().parse::<u32>().ok();
    let pe = number(rust::launch::ENV_PE)?;
    let n_pes = number(rust::launch::ENV_N_PES)?;
    (pe < n_pes).then_some(pe)
}

/// Unwraps a result of the Rust API for `routine`, ending the job on an error.
pub(crate) trait OrDie<T> {
    /// The value, or the job ends with `routine`'s error.
    fn or_die(self, routine: &str) -> T;
}

impl<T> OrDie<T> for rust::Result<T> {
    #[inline]
    fn or_die(self, routine: &str) -> T {
        match self {
            Ok(v) => v,
            Err(e) => fail(routine, e),
        }
    }
}
