//! Context handles as C sees them (`shmem_ctx_t`): a pointer to a [`CtxHandle`].
//! `SHMEM_CTX_DEFAULT` points to a static handle; `shmem_ctx_create` makes boxed ones.
//!
//! A context's operations go through the same Rust calls as the default context's:
//! its quiet and fence complete and order *at least* its own operations, which
//! OpenSHMEM allows. This module owns the handles and their validation; it must not
//! move data.

use crate::state::{bad_arg, OrDie};

/// What a `shmem_ctx_t` points to.
pub struct CtxHandle {
    /// Set for the default context; contexts made by `shmem_ctx_create` say so too.
    pub(crate) live: bool,
}

static DEFAULT: CtxHandle = CtxHandle { live: true };

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
    // SAFETY: the caller's contract: a live handle of this library, which lives until
    // `shmem_ctx_destroy` (the default one forever).
    let handle: &'static CtxHandle = unsafe { &*ctx };
    if !handle.live {
        bad_arg(routine, "ctx", "a destroyed context")
    }
    handle
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
