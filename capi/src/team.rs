//! Team handles as C sees them (`shmem_team_t`): a pointer to a [`TeamHandle`].
//! `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED` point to two static handles filled by
//! `shmem_init`; a split makes a boxed handle that `shmem_team_destroy` frees.
//!
//! This module owns the handles and their validation. It must not implement teams:
//! the Rust API's `Team` does.

use crate::state::bad_arg;
use rust::{Shmem, Team};
use std::sync::OnceLock;

/// What a `shmem_team_t` points to.
pub struct TeamHandle {
    /// The team; empty until `shmem_init` for the two predefined handles.
    pub(crate) team: OnceLock<Team>,
}

static WORLD: TeamHandle = TeamHandle {
    team: OnceLock::new(),
};
static SHARED: TeamHandle = TeamHandle {
    team: OnceLock::new(),
};

/// A `shmem_team_t` exported to C (a pointer that C code only passes back).
#[repr(transparent)]
pub struct CTeam(pub *const TeamHandle);

// SAFETY: the pointer names a `TeamHandle`, whose contents (`OnceLock<Team>`, and
// `Team` is Send + Sync) are safe to share between threads; C code never writes
// through it.
unsafe impl Sync for CTeam {}

/// `SHMEM_TEAM_WORLD`: every PE of the job.
#[no_mangle]
pub static SHMEM_TEAM_WORLD: CTeam = CTeam(&WORLD);

/// `SHMEM_TEAM_SHARED`: the PEs of this PE's node (that share memory with it).
#[no_mangle]
pub static SHMEM_TEAM_SHARED: CTeam = CTeam(&SHARED);

/// Fills the predefined handles; called by `shmem_init`.
pub(crate) fn install_predefined(shmem: &Shmem) {
    let _ = WORLD.team.set(shmem.team_world());
    let _ = SHARED.team.set(shmem.team_shared());
}

/// The team a `shmem_team_t` names, for `routine`; ends the job with a message for
/// `SHMEM_TEAM_INVALID` or a handle used before `shmem_init`.
///
/// # Safety
/// `team` must be null or a handle this library returned and that was not destroyed.
pub(crate) unsafe fn resolve<'a>(routine: &str, team: *const TeamHandle) -> &'a Team {
    if team.is_null() {
        bad_arg(routine, "team", "SHMEM_TEAM_INVALID")
    }
    // SAFETY: the caller's contract: a live handle of this library.
    let handle = unsafe { &*team };
    match handle.team.get() {
        Some(team) => team,
        None => bad_arg(routine, "team", "used before shmem_init"),
    }
}

/// This PE's number in `team`, or -1 if it is not a member (OpenSHMEM
/// `shmem_team_my_pe`).
///
/// # Safety
/// `team` must be `SHMEM_TEAM_INVALID` or a live team handle.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_my_pe(team: *const TeamHandle) -> i32 {
    if team.is_null() {
        return -1;
    }
    // SAFETY: the caller's contract, passed on.
    let team = unsafe { resolve("shmem_team_my_pe", team) };
    team.my_pe() as i32
}

/// The number of PEs in `team`, or -1 for `SHMEM_TEAM_INVALID` (OpenSHMEM
/// `shmem_team_n_pes`).
///
/// # Safety
/// `team` must be `SHMEM_TEAM_INVALID` or a live team handle.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_n_pes(team: *const TeamHandle) -> i32 {
    if team.is_null() {
        return -1;
    }
    // SAFETY: the caller's contract, passed on.
    let team = unsafe { resolve("shmem_team_n_pes", team) };
    team.n_pes() as i32
}
