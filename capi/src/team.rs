//! Team handles as C sees them (`shmem_team_t`): a pointer to a [`TeamHandle`], and
//! the team routines of OpenSHMEM 1.5 section 9.4: `shmem_team_my_pe`, `n_pes`,
//! `split_strided` (negative strides included), `split_2d`, `translate_pe`,
//! `get_config`, `sync` and `destroy`.
//!
//! `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED` point to two static handles filled by
//! `shmem_init`; a split makes a boxed handle. `shmem_team_destroy` destroys the team
//! (the Rust API then refuses it) and marks the handle destroyed, but keeps its few
//! bytes: a later use of the destroyed handle is an error message naming the routine,
//! never a read of freed memory.
//!
//! This module owns the handles and their validation. It must not implement teams:
//! the Rust API's `Team` does.

use crate::state::{bad_arg, shmem, OrDie};
use rust::{Shmem, Team};
use std::ffi::c_long;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// `SHMEM_TEAM_NUM_CONTEXTS`: the `num_contexts` member of a team configuration.
const NUM_CONTEXTS: c_long = 1;

/// `shmem_team_config_t`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TeamConfig {
    /// Contexts the program means to create on the team (a hint: this library has no
    /// limit beyond memory).
    pub num_contexts: i32,
}

/// What a `shmem_team_t` points to.
pub struct TeamHandle {
    /// The team; empty until `shmem_init` for the two predefined handles.
    pub(crate) team: OnceLock<Team>,
    /// The configuration the team was made with (zeros for the predefined teams).
    config: TeamConfig,
    /// Set by `shmem_team_destroy`.
    destroyed: AtomicBool,
}

impl TeamHandle {
    const fn new(team: OnceLock<Team>, config: TeamConfig) -> TeamHandle {
        TeamHandle {
            team,
            config,
            destroyed: AtomicBool::new(false),
        }
    }
}

static WORLD: TeamHandle = TeamHandle::new(OnceLock::new(), TeamConfig { num_contexts: 0 });
static SHARED: TeamHandle = TeamHandle::new(OnceLock::new(), TeamConfig { num_contexts: 0 });

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

/// The handle of `SHMEM_TEAM_WORLD`.
pub(crate) const fn world_handle() -> &'static TeamHandle {
    &WORLD
}

/// The handle `team` points to if it names a live team.
///
/// # Safety
/// As for [`resolve`].
pub(crate) unsafe fn handle(team: *const TeamHandle) -> Option<&'static TeamHandle> {
    // SAFETY: the caller's contract, passed on; a handle that `lookup` accepts is a
    // static or a box never freed, so it lives for the rest of the process.
    unsafe { lookup(team) }.ok()?;
    // SAFETY: as above.
    Some(unsafe { &*team })
}

/// Fills the predefined handles; called by `shmem_init`.
pub(crate) fn install_predefined(shmem: &Shmem) {
    let _ = WORLD.team.set(shmem.team_world());
    let _ = SHARED.team.set(shmem.team_shared());
}

/// The team a `shmem_team_t` names, for `routine`; ends the job with a message for
/// `SHMEM_TEAM_INVALID`, a destroyed team or a handle used before `shmem_init`.
///
/// # Safety
/// `team` must be null or a handle this library returned (destroyed or not: handles
/// are never freed).
pub(crate) unsafe fn resolve<'a>(routine: &str, team: *const TeamHandle) -> &'a Team {
    // SAFETY: the caller's contract, passed on.
    match unsafe { lookup(team) } {
        Ok(team) => team,
        Err(why) => bad_arg(routine, "team", why),
    }
}

/// The team of a handle, or why there is none.
///
/// # Safety
/// As for [`resolve`].
unsafe fn lookup<'a>(team: *const TeamHandle) -> Result<&'a Team, &'static str> {
    if team.is_null() {
        return Err("SHMEM_TEAM_INVALID");
    }
    // SAFETY: the caller's contract: a handle of this library, which is never freed
    // (statics, or boxes leaked on purpose).
    let handle = unsafe { &*team };
    if handle.destroyed.load(Ordering::Acquire) {
        return Err("a destroyed team");
    }
    handle.team.get().ok_or("used before shmem_init")
}

/// A new handle for `team` (or `SHMEM_TEAM_INVALID` for `None`), kept until the process
/// ends (see the module doc).
fn new_handle(team: Option<Team>, config: TeamConfig) -> *const TeamHandle {
    match team {
        Some(team) => Box::into_raw(Box::new(TeamHandle::new(OnceLock::from(team), config))),
        None => std::ptr::null(),
    }
}

/// The configuration `config` says under `mask`, for `routine` (zeros for members
/// the mask leaves out, as the specification's defaults).
///
/// # Safety
/// `config` must be null or point to a readable `shmem_team_config_t`.
unsafe fn read_config(routine: &str, config: *const TeamConfig, mask: c_long) -> TeamConfig {
    if mask & !NUM_CONTEXTS != 0 {
        bad_arg(
            routine,
            "config_mask",
            &format!("{mask:#x} has bits other than SHMEM_TEAM_NUM_CONTEXTS"),
        )
    }
    if mask == 0 {
        return TeamConfig::default();
    }
    if config.is_null() {
        bad_arg(routine, "config", "null pointer with a nonzero config_mask")
    }
    // SAFETY: the caller's contract: non-null and readable.
    let given = unsafe { *config };
    if given.num_contexts < 0 {
        bad_arg(routine, "config", "num_contexts is negative")
    }
    given
}

/// Writes `value` through the out-pointer `out` (argument `arg` of `routine`).
///
/// # Safety
/// `out` must be null (refused) or writable.
unsafe fn write_out<T>(routine: &str, arg: &str, out: *mut T, value: T) {
    if out.is_null() {
        bad_arg(routine, arg, "null pointer")
    }
    // SAFETY: the caller's contract: non-null and writable.
    unsafe { out.write(value) }
}

/// Makes a team from `parent`'s PEs `start + stride * i`, `i < size` (OpenSHMEM
/// `shmem_team_split_strided`; collective over `parent`). A negative stride numbers the
/// new team downwards from `start`. Members get the new team in `*new_team`, the other
/// parent PEs `SHMEM_TEAM_INVALID`; returns 0, or nonzero on every member with
/// `SHMEM_TEAM_INVALID` when the split fails (bad arguments on any member, arguments
/// that differ between members, no team slot left).
///
/// # Safety
/// `parent` must be a team handle; `config` null or readable; `new_team` writable.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent: *const TeamHandle,
    start: i32,
    stride: i32,
    size: i32,
    config: *const TeamConfig,
    config_mask: c_long,
    new_team: *mut *const TeamHandle,
) -> i32 {
    const ROUTINE: &str = "shmem_team_split_strided";
    let shmem = shmem(ROUTINE);
    // SAFETY: the caller's contract, passed on.
    let parent = unsafe { resolve(ROUTINE, parent) };
    // SAFETY: the caller's contract, passed on.
    let config = unsafe { read_config(ROUTINE, config, config_mask) };
    // A negative start or size cannot be a team; the Rust split refuses it on every
    // member alike (as start past the parent / size 0), which keeps them in step.
    let start = u32::try_from(start).unwrap_or(u32::MAX);
    let size = u32::try_from(size).unwrap_or(0);
    let (status, team) = match shmem.team_split_strided_signed(parent, start, stride, size) {
        Ok(team) => (0, new_handle(team, config)),
        Err(_) => (-1, std::ptr::null()),
    };
    // SAFETY: the caller's contract, passed on.
    unsafe { write_out(ROUTINE, "new_team", new_team, team) };
    status
}

/// Splits `parent` into a grid of `xrange` columns (OpenSHMEM `shmem_team_split_2d`;
/// collective over `parent`): `*xaxis_team` is this PE's row (consecutive parent
/// PEs), `*yaxis_team` its column. Returns 0, or nonzero on every member with both
/// teams `SHMEM_TEAM_INVALID`.
///
/// # Safety
/// `parent` must be a team handle; the configs null or readable; the team pointers
/// writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn shmem_team_split_2d(
    parent: *const TeamHandle,
    xrange: i32,
    xaxis_config: *const TeamConfig,
    xaxis_mask: c_long,
    xaxis_team: *mut *const TeamHandle,
    yaxis_config: *const TeamConfig,
    yaxis_mask: c_long,
    yaxis_team: *mut *const TeamHandle,
) -> i32 {
    const ROUTINE: &str = "shmem_team_split_2d";
    let shmem = shmem(ROUTINE);
    // SAFETY: the caller's contract, passed on.
    let parent = unsafe { resolve(ROUTINE, parent) };
    // SAFETY: the caller's contract, passed on.
    let (xconfig, yconfig) = unsafe {
        (
            read_config(ROUTINE, xaxis_config, xaxis_mask),
            read_config(ROUTINE, yaxis_config, yaxis_mask),
        )
    };
    // xrange 0 or negative: refused by the Rust split on every member alike.
    let xrange = u32::try_from(xrange).unwrap_or(0);
    let (status, x, y) = match shmem.team_split_2d(parent, xrange) {
        Ok((row, column)) => (
            0,
            new_handle(Some(row), xconfig),
            new_handle(Some(column), yconfig),
        ),
        Err(_) => (-1, std::ptr::null(), std::ptr::null()),
    };
    // SAFETY: the caller's contract, passed on.
    unsafe {
        write_out(ROUTINE, "xaxis_team", xaxis_team, x);
        write_out(ROUTINE, "yaxis_team", yaxis_team, y);
    }
    status
}

/// The number in `dest_team` of `src_team`'s PE `src_pe`, or -1 when either team is
/// `SHMEM_TEAM_INVALID` or the PE is not in both (OpenSHMEM `shmem_team_translate_pe`).
///
/// # Safety
/// Both teams must be `SHMEM_TEAM_INVALID` or team handles.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_translate_pe(
    src_team: *const TeamHandle,
    src_pe: i32,
    dest_team: *const TeamHandle,
) -> i32 {
    // SAFETY: the caller's contract, passed on.
    let (Ok(src), Ok(dest)) = (unsafe { lookup(src_team) }, unsafe { lookup(dest_team) }) else {
        return -1;
    };
    u32::try_from(src_pe)
        .ok()
        .and_then(|pe| src.translate_pe(pe, dest))
        .map_or(-1, |pe| pe as i32)
}

/// Copies the members of `team`'s configuration that `config_mask` names into
/// `*config` (OpenSHMEM `shmem_team_get_config`); returns 0, or nonzero for
/// `SHMEM_TEAM_INVALID` (with `*config` untouched).
///
/// # Safety
/// `team` must be `SHMEM_TEAM_INVALID` or a team handle; `config` writable.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_get_config(
    team: *const TeamHandle,
    config_mask: c_long,
    config: *mut TeamConfig,
) -> i32 {
    const ROUTINE: &str = "shmem_team_get_config";
    // SAFETY: the caller's contract, passed on.
    if unsafe { lookup(team) }.is_err() {
        return -1;
    }
    if config_mask & !NUM_CONTEXTS != 0 {
        bad_arg(
            ROUTINE,
            "config_mask",
            &format!("{config_mask:#x} has bits other than SHMEM_TEAM_NUM_CONTEXTS"),
        )
    }
    if config_mask & NUM_CONTEXTS != 0 {
        // SAFETY: `lookup` accepted the handle: it points to a live `TeamHandle`.
        let num_contexts = unsafe { (*team).config.num_contexts };
        if config.is_null() {
            bad_arg(ROUTINE, "config", "null pointer")
        }
        // SAFETY: the caller's contract: `config` is writable (checked non-null).
        unsafe { (*config).num_contexts = num_contexts };
    }
    0
}

/// Waits until every member of `team` has called it (OpenSHMEM `shmem_team_sync`;
/// does not complete puts). Returns 0.
///
/// # Safety
/// `team` must be a team handle.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_sync(team: *const TeamHandle) -> i32 {
    const ROUTINE: &str = "shmem_team_sync";
    let shmem = shmem(ROUTINE);
    // SAFETY: the caller's contract, passed on.
    let team = unsafe { resolve(ROUTINE, team) };
    shmem.team_sync(team).or_die(ROUTINE);
    0
}

/// Destroys `team` (OpenSHMEM `shmem_team_destroy`; collective over its members).
/// `SHMEM_TEAM_INVALID` is ignored; the world and shared teams cannot be destroyed.
///
/// # Safety
/// `team` must be `SHMEM_TEAM_INVALID` or a team handle.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_destroy(team: *const TeamHandle) {
    const ROUTINE: &str = "shmem_team_destroy";
    if team.is_null() {
        return;
    }
    let shmem = shmem(ROUTINE);
    // SAFETY: the caller's contract, passed on.
    let rust_team = unsafe { resolve(ROUTINE, team) };
    if let Some(destroy_contexts) = DESTROY_CONTEXTS.get() {
        // SAFETY: `resolve` accepted the handle: it points to a live `TeamHandle`.
        destroy_contexts(ROUTINE, unsafe { &*team });
    }
    shmem.team_destroy(rust_team.clone()).or_die(ROUTINE);
    // SAFETY: `resolve` accepted the handle: it points to a live `TeamHandle`.
    unsafe { &*team }.destroyed.store(true, Ordering::Release);
}

/// What destroys the contexts made on a team, registered by `ctx` when it makes its
/// first context: contexts know their team, teams do not know the context module
/// (OpenSHMEM: destroying a team destroys its contexts).
static DESTROY_CONTEXTS: OnceLock<fn(&str, &TeamHandle)> = OnceLock::new();

/// Registers what `shmem_team_destroy` calls to destroy a team's contexts.
pub(crate) fn on_destroy(destroy_contexts: fn(&str, &TeamHandle)) {
    let _ = DESTROY_CONTEXTS.set(destroy_contexts);
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
