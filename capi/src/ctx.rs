//! Context handles as C sees them (`shmem_ctx_t`): a pointer to a [`CtxHandle`], and
//! the context routines of OpenSHMEM 1.5 section 9.5: `shmem_ctx_create`,
//! `shmem_team_create_ctx`, `shmem_ctx_destroy`, `shmem_ctx_get_team`,
//! `shmem_ctx_quiet`, `shmem_ctx_fence`.
//!
//! `SHMEM_CTX_DEFAULT` points to a static handle; `shmem_ctx_create` makes boxed ones.
//! `shmem_ctx_destroy` marks a handle dead but keeps its few bytes, so that a call on
//! a destroyed context is an error message naming the routine, never a read of freed
//! memory; the default context cannot be destroyed.
//!
//! A context's operations go through the same Rust calls as the default context's:
//! its quiet and fence complete and order *at least* its own operations, which
//! OpenSHMEM allows. This module owns the handles and their validation; it must not
//! move data.

use crate::state::{bad_arg, shmem, OrDie};
use crate::team::{self, TeamHandle};
use std::ffi::c_long;
use std::sync::atomic::{AtomicBool, Ordering};

/// The option bits a context may be created with: `SHMEM_CTX_SERIALIZED`,
/// `SHMEM_CTX_PRIVATE`, `SHMEM_CTX_NOSTORE`.
const KNOWN_OPTIONS: c_long = 0b111;

/// What a `shmem_ctx_t` points to.
pub struct CtxHandle {
    /// Cleared by `shmem_ctx_destroy` (never for the default context).
    live: AtomicBool,
    /// The team the context was made on (`SHMEM_TEAM_WORLD` for `shmem_ctx_create`).
    team: &'static TeamHandle,
    /// The options it was made with.
    options: c_long,
}

impl CtxHandle {
    /// The options the context was made with (`SHMEM_CTX_*` bits).
    #[allow(dead_code)] // for the context-taking routines of the other families
    pub(crate) fn options(&self) -> c_long {
        self.options
    }
}

static DEFAULT: CtxHandle = CtxHandle {
    live: AtomicBool::new(true),
    team: team::world_handle(),
    options: 0,
};

/// A `shmem_ctx_t` exported to C.
#[repr(transparent)]
pub struct CCtx(pub *const CtxHandle);

// SAFETY: the pointer names an immutable `CtxHandle`; C code never writes through it.
unsafe impl Sync for CCtx {}

/// `SHMEM_CTX_DEFAULT`: the default context.
#[no_mangle]
pub static SHMEM_CTX_DEFAULT: CCtx = CCtx(&DEFAULT);

/// Checks that `ctx` names a live context, for `routine`; ends the job with a
/// message for `SHMEM_CTX_INVALID`.
///
/// # Safety
/// `ctx` must be null or a handle this library returned and that was not destroyed.
pub(crate) unsafe fn check(routine: &str, ctx: *const CtxHandle) -> &'static CtxHandle {
    if ctx.is_null() {
        bad_arg(routine, "ctx", "SHMEM_CTX_INVALID")
    }
    // SAFETY: the caller's contract: a handle of this library, which is never freed
    // (the default one is static, the others are boxes kept on purpose).
    let handle: &'static CtxHandle = unsafe { &*ctx };
    if !handle.live.load(Ordering::Acquire) {
        bad_arg(routine, "ctx", "a destroyed context")
    }
    handle
}

/// A new context on `team` with `options`, or why not.
fn create(
    routine: &str,
    team: &'static TeamHandle,
    options: c_long,
) -> Result<*const CtxHandle, ()> {
    shmem(routine);
    if options & !KNOWN_OPTIONS != 0 {
        return Err(());
    }
    Ok(Box::into_raw(Box::new(CtxHandle {
        live: AtomicBool::new(true),
        team,
        options,
    })))
}

/// Writes a context (or `SHMEM_CTX_INVALID` on failure) into `*out` and returns 0 or
/// nonzero.
///
/// # Safety
/// `out` must be null (refused) or writable.
unsafe fn hand_out(
    routine: &str,
    out: *mut *const CtxHandle,
    made: Result<*const CtxHandle, ()>,
) -> i32 {
    if out.is_null() {
        bad_arg(routine, "ctx", "null pointer")
    }
    let (status, ctx) = match made {
        Ok(ctx) => (0, ctx),
        Err(()) => (1, std::ptr::null()),
    };
    // SAFETY: the caller's contract: `out` is writable (checked non-null).
    unsafe { out.write(ctx) };
    status
}

/// Makes a context on the world team (OpenSHMEM `shmem_ctx_create`): returns 0 and
/// sets `*ctx`, or returns nonzero with `SHMEM_CTX_INVALID` for unknown option bits.
///
/// # Safety
/// `ctx` must be writable.
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_create(options: c_long, ctx: *mut *const CtxHandle) -> i32 {
    const ROUTINE: &str = "shmem_ctx_create";
    let made = create(ROUTINE, team::world_handle(), options);
    // SAFETY: the caller's contract, passed on.
    unsafe { hand_out(ROUTINE, ctx, made) }
}

/// Makes a context on `team` (OpenSHMEM `shmem_team_create_ctx`): returns 0 and sets
/// `*ctx`, or returns nonzero with `SHMEM_CTX_INVALID` for `SHMEM_TEAM_INVALID`, a
/// destroyed team or unknown option bits.
///
/// # Safety
/// `team` must be `SHMEM_TEAM_INVALID` or a team handle; `ctx` writable.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_create_ctx(
    team: *const TeamHandle,
    options: c_long,
    ctx: *mut *const CtxHandle,
) -> i32 {
    const ROUTINE: &str = "shmem_team_create_ctx";
    // SAFETY: the caller's contract, passed on.
    let made = match unsafe { team::handle(team) } {
        Some(team) => create(ROUTINE, team, options),
        None => Err(()),
    };
    // SAFETY: the caller's contract, passed on.
    unsafe { hand_out(ROUTINE, ctx, made) }
}

/// Ends a context after completing its operations (OpenSHMEM `shmem_ctx_destroy`).
/// `SHMEM_CTX_INVALID` is ignored; destroying the default context or a destroyed one
/// ends the job with a message.
///
/// # Safety
/// `ctx` must be `SHMEM_CTX_INVALID` or a context handle.
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_destroy(ctx: *const CtxHandle) {
    const ROUTINE: &str = "shmem_ctx_destroy";
    if ctx.is_null() {
        return;
    }
    // SAFETY: the caller's contract, passed on.
    let handle = unsafe { check(ROUTINE, ctx) };
    if std::ptr::eq(handle, &DEFAULT) {
        bad_arg(ROUTINE, "ctx", "SHMEM_CTX_DEFAULT cannot be destroyed")
    }
    shmem(ROUTINE).quiet().or_die(ROUTINE);
    handle.live.store(false, Ordering::Release);
}

/// The team `ctx` was made on (OpenSHMEM `shmem_ctx_get_team`): returns 0 and sets
/// `*team` (`SHMEM_TEAM_WORLD` for the default context and `shmem_ctx_create`'s), or
/// returns nonzero with `SHMEM_TEAM_INVALID` for `SHMEM_CTX_INVALID` or a destroyed
/// context.
///
/// # Safety
/// `ctx` must be `SHMEM_CTX_INVALID` or a context handle; `team` writable.
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_get_team(
    ctx: *const CtxHandle,
    team: *mut *const TeamHandle,
) -> i32 {
    const ROUTINE: &str = "shmem_ctx_get_team";
    if team.is_null() {
        bad_arg(ROUTINE, "team", "null pointer")
    }
    // SAFETY: a non-null `ctx` is a handle of this library (the caller's contract),
    // never freed.
    let found = (!ctx.is_null())
        .then(|| unsafe { &*ctx })
        .filter(|h| h.live.load(Ordering::Acquire))
        .map(|h| h.team as *const TeamHandle);
    // SAFETY: the caller's contract: `team` is writable (checked non-null).
    unsafe { team.write(found.unwrap_or(std::ptr::null())) };
    i32::from(found.is_none())
}

/// Completes the operations issued on `ctx` (OpenSHMEM `shmem_ctx_quiet`; this
/// completes all of this PE's operations, a superset).
///
/// # Safety
/// `ctx` must be `SHMEM_CTX_DEFAULT` or a live context.
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_quiet(ctx: *const CtxHandle) {
    const ROUTINE: &str = "shmem_ctx_quiet";
    // SAFETY: the caller's contract, passed on.
    unsafe { check(ROUTINE, ctx) };
    crate::state::shmem(ROUTINE).quiet().or_die(ROUTINE);
}

/// Orders the puts issued on `ctx` (OpenSHMEM `shmem_ctx_fence`; this orders all of
/// this PE's puts, a superset).
///
/// # Safety
/// `ctx` must be `SHMEM_CTX_DEFAULT` or a live context.
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_fence(ctx: *const CtxHandle) {
    const ROUTINE: &str = "shmem_ctx_fence";
    // SAFETY: the caller's contract, passed on.
    unsafe { check(ROUTINE, ctx) };
    crate::state::shmem(ROUTINE).fence().or_die(ROUTINE);
}
