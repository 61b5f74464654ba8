//! Library setup and query: `shmem_init`, `shmem_init_thread`, `shmem_finalize`,
//! `shmem_my_pe`, `shmem_n_pes`, `shmem_barrier_all`, `shmem_quiet`, `shmem_fence`,
//! the accessibility queries and `shmem_ptr`, `shmem_info_get_*`, `shmem_global_exit`,
//! the legacy names (`start_pes`, `_my_pe`, `_num_pes`) and the deprecated cache
//! routines (no-ops).
//!
//! This module owns the C entry points of start-up and shutdown. It must not keep
//! state of its own beyond what `state` holds.

use crate::addr;
use crate::state::{self, die, shmem, OrDie};
use std::ffi::{c_char, c_void};

/// Starts this PE (OpenSHMEM `shmem_init`). A second call while initialized does
/// nothing; a call after `shmem_finalize` ends the job with a message.
#[no_mangle]
pub extern "C" fn shmem_init() {
    init_once("shmem_init");
}

/// The common body of every start-up routine.
pub(crate) fn init_once(routine: &str) {
    if state::initialized() {
        if state::finalized() {
            die(
                None,
                routine,
                "called after shmem_finalize (a job starts once)",
            )
        }
        return;
    }
    // Global and static variables are symmetric objects in OpenSHMEM: the library maps
    // this program's data into the PE's segment (see `InitOptions::symmetric_data`).
    let options = rust::InitOptions::new().symmetric_data(true);
    let handle = rust::init_with(options).or_die(routine);
    addr::install(&handle, routine);
    crate::team::install_predefined(&handle);
    state::install(handle);
}

/// Ends this PE's part in the job (OpenSHMEM `shmem_finalize`): a barrier of all PEs,
/// then the library's shutdown. A second call ends the job with a message.
#[no_mangle]
pub extern "C" fn shmem_finalize() {
    const ROUTINE: &str = "shmem_finalize";
    let handle = shmem(ROUTINE);
    if !state::mark_finalized() {
        die(Some(handle.my_pe()), ROUTINE, "called twice")
    }
    handle.barrier_all().or_die(ROUTINE);
    handle.finalize().or_die(ROUTINE);
}

/// This PE's number (OpenSHMEM `shmem_my_pe`).
#[no_mangle]
pub extern "C" fn shmem_my_pe() -> i32 {
    shmem("shmem_my_pe").my_pe() as i32
}

/// The number of PEs (OpenSHMEM `shmem_n_pes`).
#[no_mangle]
pub extern "C" fn shmem_n_pes() -> i32 {
    shmem("shmem_n_pes").n_pes() as i32
}

/// Completes this PE's puts, then waits for every PE (OpenSHMEM `shmem_barrier_all`).
#[no_mangle]
pub extern "C" fn shmem_barrier_all() {
    const ROUTINE: &str = "shmem_barrier_all";
    shmem(ROUTINE).barrier_all().or_die(ROUTINE);
}

/// Completes every put this PE issued (OpenSHMEM `shmem_quiet`).
#[no_mangle]
pub extern "C" fn shmem_quiet() {
    const ROUTINE: &str = "shmem_quiet";
    shmem(ROUTINE).quiet().or_die(ROUTINE);
}

/// Orders this PE's puts to each PE (OpenSHMEM `shmem_fence`).
#[no_mangle]
pub extern "C" fn shmem_fence() {
    const ROUTINE: &str = "shmem_fence";
    shmem(ROUTINE).fence().or_die(ROUTINE);
}

/// `SHMEM_THREAD_*` (shmem.h) of a Rust thread level.
fn thread_level(level: rust::ThreadLevel) -> i32 {
    match level {
        rust::ThreadLevel::Single => 0,
        rust::ThreadLevel::Funneled => 1,
        rust::ThreadLevel::Serialized => 2,
        rust::ThreadLevel::Multiple => 3,
    }
}

/// The largest `SHMEM_THREAD_*` value, `SHMEM_THREAD_MULTIPLE`.
const THREAD_MULTIPLE: i32 = 3;

/// Starts this PE with a thread level (OpenSHMEM `shmem_init_thread`): the level the
/// library provides (`SHMEM_THREAD_MULTIPLE`, whatever is requested) is written to
/// `provided` (when not null).
/// Returns 0, or -1 without starting anything for a `requested` level that is not
/// one of the four `SHMEM_THREAD_*` values.
///
/// # Safety
/// `provided` must be null or point to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn shmem_init_thread(requested: i32, provided: *mut i32) -> i32 {
    if !(0..=THREAD_MULTIPLE).contains(&requested) {
        return -1;
    }
    const ROUTINE: &str = "shmem_init_thread";
    init_once(ROUTINE);
    let level = thread_level(shmem(ROUTINE).query_thread());
    if !provided.is_null() {
        // SAFETY: the caller's contract: a writable int.
        unsafe { provided.write(level) };
    }
    0
}

/// Writes the thread level the library provides (OpenSHMEM `shmem_query_thread`).
///
/// # Safety
/// `provided` must point to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn shmem_query_thread(provided: *mut i32) {
    const ROUTINE: &str = "shmem_query_thread";
    let level = thread_level(shmem(ROUTINE).query_thread());
    if provided.is_null() {
        state::bad_arg(ROUTINE, "provided", "null pointer")
    }
    // SAFETY: the caller's contract: a writable int (not null, checked above).
    unsafe { provided.write(level) };
}

/// Whether PE `pe` can be reached by RMA and atomics (OpenSHMEM
/// `shmem_pe_accessible`): 1 for every PE of the job, 0 for any other number.
#[no_mangle]
pub extern "C" fn shmem_pe_accessible(pe: i32) -> i32 {
    let shmem = shmem("shmem_pe_accessible");
    i32::from(u32::try_from(pe).is_ok_and(|pe| shmem.pe_accessible(pe)))
}

/// Whether `addr` is symmetric, so that it can name PE `pe`'s copy (OpenSHMEM
/// `shmem_addr_accessible`): 1 for an address in the symmetric heap, the program's
/// static data (when symmetric) or a board window, with `pe` a PE of the job.
#[no_mangle]
pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: i32) -> i32 {
    let shmem = shmem("shmem_addr_accessible");
    let pe_ok = u32::try_from(pe).is_ok_and(|pe| shmem.pe_accessible(pe));
    i32::from(pe_ok && addr::locate(shmem, addr).is_some())
}

/// The address of `dest` on PE `pe` that this process can load and store directly
/// (OpenSHMEM `shmem_ptr`): for symmetric CPU memory of this PE, or of a PE on this
/// node under the `shm` conduit. Null for everything else: board memory, a PE on
/// another node of an emulated cluster (or any PE under the `am` conduit), an address that is not symmetric, a PE
/// outside the job. Never an address of another object.
#[no_mangle]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe: i32) -> *mut c_void {
    let shmem = shmem("shmem_ptr");
    match u32::try_from(pe) {
        // This PE's own symmetric memory: the address itself (for a global, not the
        // second mapping of it that the library reaches it through).
        Ok(pe) if pe == shmem.my_pe() => match addr::locate(shmem, dest) {
            Some((rust::Place::Cpu, _)) => dest.cast_mut(),
            _ => std::ptr::null_mut(),
        },
        Ok(pe) => shmem
            .ptr_addr(dest.cast(), pe)
            .map_or(std::ptr::null_mut(), |p| p.cast()),
        Err(_) => std::ptr::null_mut(),
    }
}

/// `shmem_ptr` for PE `pe` of `team` (OpenSHMEM `shmem_team_ptr`): null when `pe`
/// is not a PE of the team, else what `shmem_ptr` gives for its world number.
///
/// # Safety
/// `team` must be a live team handle (or `SHMEM_TEAM_INVALID`, which ends the job).
#[no_mangle]
pub unsafe extern "C" fn shmem_team_ptr(
    team: *const crate::team::TeamHandle,
    dest: *const c_void,
    pe: i32,
) -> *mut c_void {
    // SAFETY: the caller's contract, passed on.
    let team = unsafe { crate::team::resolve("shmem_team_ptr", team) };
    let world = u32::try_from(pe).ok().and_then(|pe| team.world_pe(pe));
    match world.and_then(|w| i32::try_from(w).ok()) {
        Some(w) => shmem_ptr(dest, w),
        None => std::ptr::null_mut(),
    }
}

/// Ends every PE of the job with exit status `status` (OpenSHMEM
/// `shmem_global_exit`); `shmemrun` exits with that status. Never returns. The C
/// streams are flushed first, so what the program printed is not lost.
#[no_mangle]
pub extern "C" fn shmem_global_exit(status: i32) -> ! {
    let shmem = shmem("shmem_global_exit");
    // SAFETY: fflush(NULL) flushes every open output stream; it takes the streams'
    // own locks and touches no memory of ours.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    shmem.global_exit(status)
}

/// Writes the OpenSHMEM version this library implements (OpenSHMEM
/// `shmem_info_get_version`; callable before `shmem_init`).
///
/// # Safety
/// `major` and `minor` must point to writable `int`s.
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut i32, minor: *mut i32) {
    const ROUTINE: &str = "shmem_info_get_version";
    if major.is_null() || minor.is_null() {
        let arg = if major.is_null() { "major" } else { "minor" };
        state::bad_arg(ROUTINE, arg, "null pointer")
    }
    let (spec_major, spec_minor) = rust::SPEC_VERSION;
    // SAFETY: the caller's contract: two writable ints (not null, checked above).
    unsafe {
        major.write(i32::try_from(spec_major).unwrap_or(i32::MAX));
        minor.write(i32::try_from(spec_minor).unwrap_or(i32::MAX));
    }
}

/// `SHMEM_VENDOR_STRING` (shmem.h), which `shmem_info_get_name` writes.
const VENDOR_STRING: &[u8] = b"shmemplus";
/// `SHMEM_MAX_NAME_LEN` (shmem.h): the most `shmem_info_get_name` writes, its
/// terminating zero included.
const MAX_NAME_LEN: usize = 256;
const _: () = assert!(VENDOR_STRING.len() < MAX_NAME_LEN);

/// Writes the vendor string `SHMEM_VENDOR_STRING` and a terminating zero to `name`
/// (OpenSHMEM `shmem_info_get_name`; at most `SHMEM_MAX_NAME_LEN` bytes; callable
/// before `shmem_init`).
///
/// # Safety
/// `name` must point to at least `SHMEM_MAX_NAME_LEN` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    if name.is_null() {
        state::bad_arg("shmem_info_get_name", "name", "null pointer")
    }
    // SAFETY: the caller's contract: `SHMEM_MAX_NAME_LEN` writable bytes, more than
    // the string and its zero (checked at compile time above); a private buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(VENDOR_STRING.as_ptr(), name.cast(), VENDOR_STRING.len());
        name.add(VENDOR_STRING.len()).write(0);
    }
}

/// Starts this PE (the legacy `start_pes`; the argument is ignored, as OpenSHMEM
/// says). Such a program may end without `shmem_finalize`: the library finalizes
/// when it exits.
#[no_mangle]
pub extern "C" fn start_pes(_npes: i32) {
    init_once("start_pes");
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: registers a function with C linkage and no arguments, which lives as
        // long as the program (it is part of this library, never unloaded).
        if unsafe { libc::atexit(finalize_at_exit) } != 0 {
            die(None, "start_pes", "cannot register the finalize at exit")
        }
    });
}

/// The implicit `shmem_finalize` of a program started by `start_pes`, which predates
/// `shmem_finalize` and so never calls it: at exit, unless the program finalized.
/// Errors are reported, not acted on (nothing may end the process inside `exit`).
extern "C" fn finalize_at_exit() {
    const ROUTINE: &str = "shmem_finalize (at exit)";
    if !state::initialized() || !state::mark_finalized() {
        return;
    }
    let handle = shmem(ROUTINE);
    if let Err(e) = handle.barrier_all().and_then(|()| handle.finalize()) {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "shmemplus: PE {}: {ROUTINE}: {e}",
            handle.my_pe()
        );
    }
}

/// This PE's number (the legacy `_my_pe`).
#[no_mangle]
pub extern "C" fn _my_pe() -> i32 {
    shmem("_my_pe").my_pe() as i32
}

/// The number of PEs (the legacy `_num_pes`).
#[no_mangle]
pub extern "C" fn _num_pes() -> i32 {
    shmem("_num_pes").n_pes() as i32
}

// The deprecated cache routines of OpenSHMEM (section "Cache Management"): this
// library keeps no cache of remote data, so each does nothing, as the specification
// allows.

/// Deprecated no-op (OpenSHMEM `shmem_clear_cache_inv`).
#[no_mangle]
pub extern "C" fn shmem_clear_cache_inv() {}

/// Deprecated no-op (OpenSHMEM `shmem_set_cache_inv`).
#[no_mangle]
pub extern "C" fn shmem_set_cache_inv() {}

/// Deprecated no-op (OpenSHMEM `shmem_clear_cache_line_inv`).
#[no_mangle]
pub extern "C" fn shmem_clear_cache_line_inv(_dest: *mut c_void) {}

/// Deprecated no-op (OpenSHMEM `shmem_set_cache_line_inv`).
#[no_mangle]
pub extern "C" fn shmem_set_cache_line_inv(_dest: *mut c_void) {}

/// Deprecated no-op (OpenSHMEM `shmem_udcflush`).
#[no_mangle]
pub extern "C" fn shmem_udcflush() {}

/// Deprecated no-op (OpenSHMEM `shmem_udcflush_line`).
#[no_mangle]
pub extern "C" fn shmem_udcflush_line(_dest: *mut c_void) {}
