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
//! A created handle holds the Rust API's `Ctx` (made by `team_create_ctx`, ended by
//! `ctx_destroy`); the default one stands for the handle's own calls. A context's
//! quiet and fence are the Rust context's, which complete and order *at least* its own
//! operations, as OpenSHMEM allows. This module owns the handles and their
//! validation; it must not move data.

use crate::state::{bad_arg, shmem, OrDie};
use crate::team::{self, TeamHandle};
use rust::{Ctx, CtxOptions};
use std::ffi::c_long;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What a `shmem_ctx_t` points to.
pub struct CtxHandle {
    /// Cleared by `shmem_ctx_destroy` (never for the default context).
    live: AtomicBool,
    /// The team the context was made on (`SHMEM_TEAM_WORLD` for `shmem_ctx_create`).
    team: &'static TeamHandle,
    /// The Rust context: `None` for the default context (the handle's own calls) and
    /// after `shmem_ctx_destroy` took it.
    ctx: Mutex<Option<Ctx>>,
}

impl CtxHandle {
    /// The Rust context of a created context (`None` for the default one).
    #[allow(dead_code)] // for the context-taking routines of the other families
    pub(crate) fn rust_ctx(&self) -> MutexGuard<'_, Option<Ctx>> {
        self.ctx.lock().unwrap_or_else(|e| e.into_inner())
    }
}

static DEFAULT: CtxHandle = CtxHandle {
    live: AtomicBool::new(true),
    team: team::world_handle(),
    ctx: Mutex::new(None),
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

/// A new context on `team` with `options` (through the Rust API's `team_create_ctx`,
/// which refuses unknown option bits and destroyed teams), or why not.
fn create(
    routine: &str,
    team: &'static TeamHandle,
    options: c_long,
) -> Result<*const CtxHandle, ()> {
    let shmem = shmem(routine);
    let options = u64::try_from(options).map_err(|_| ())?;
    let options = CtxOptions::from_bits(options).map_err(|_| ())?;
    let rust_team = team.team.get().ok_or(())?;
    let ctx = shmem.team_create_ctx(rust_team, options).map_err(|_| ())?;
    // Leaked on purpose: handles are never freed (see the module doc).
    let handle: &'static CtxHandle = Box::leak(Box::new(CtxHandle {
        live: AtomicBool::new(true),
        team,
        ctx: Mutex::new(Some(ctx)),
    }));
    team::on_destroy(destroy_contexts_of);
    made().push(handle);
    Ok(handle)
}

/// The contexts made by `create` that were live when last looked at, so that
/// `shmem_team_destroy` can destroy a team's contexts.
static MADE: Mutex<Vec<&'static CtxHandle>> = Mutex::new(Vec::new());

fn made() -> MutexGuard<'static, Vec<&'static CtxHandle>> {
    MADE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Marks `handle` dead and ends its Rust context (completing its operations).
fn destroy(routine: &str, handle: &CtxHandle) {
    // Marked dead first, so that no other thread starts a call on it meanwhile.
    handle.live.store(false, Ordering::Release);
    let taken = handle.ctx.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(ctx) = taken {
        shmem(routine).ctx_destroy(ctx).or_die(routine);
    }
}

/// Destroys every live context made on `team` (OpenSHMEM: destroying a team destroys
/// the contexts created from it); `shmem_team_destroy` calls it, through
/// `team::on_destroy`, before the team goes.
fn destroy_contexts_of(routine: &str, team: &TeamHandle) {
    let mine: Vec<&'static CtxHandle> = {
        let mut made = made();
        made.retain(|h| h.live.load(Ordering::Acquire));
        made.iter()
            .copied()
            .filter(|h| std::ptr::eq(h.team, team))
            .collect()
    };
    for handle in mine {
        destroy(routine, handle);
    }
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
    destroy(ROUTINE, handle);
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
    let handle = unsafe { check(ROUTINE, ctx) };
    let shmem = crate::state::shmem(ROUTINE);
    match handle.rust_ctx().as_ref() {
        Some(ctx) => shmem.ctx_quiet(ctx),
        None => shmem.quiet(),
    }
    .or_die(ROUTINE);
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
    let handle = unsafe { check(ROUTINE, ctx) };
    let shmem = crate::state::shmem(ROUTINE);
    match handle.rust_ctx().as_ref() {
        Some(ctx) => shmem.ctx_fence(ctx),
        None => shmem.fence(),
    }
    .or_die(ROUTINE);
}
