//! Library setup and query: `shmem_init`, `shmem_finalize`, `shmem_my_pe`,
//! `shmem_n_pes`, `shmem_barrier_all`, `shmem_quiet`, `shmem_fence`.
//!
//! This module owns the C entry points of start-up and shutdown. It must not keep
//! state of its own beyond what `state` holds.

use crate::addr;
use crate::state::{self, die, shmem, OrDie};

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
    addr::reserve_board_windows(&handle, routine);
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
