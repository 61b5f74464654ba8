//! Distributed locks from C (OpenSHMEM 1.5 section 9.11): `shmem_set_lock`,
//! `shmem_test_lock`, `shmem_clear_lock` on a symmetric `long`, zero before first use.
//!
//! This module owns turning the `long *` into the one-element object the Rust API's
//! `set_lock`/`try_set_lock`/`clear_lock` take (the Rust API owns the lock protocol:
//! a ticket lock homed on PE 0). It must not touch the lock word itself.

use crate::addr;
use crate::state::{bad_arg, shmem, OrDie};
use rust::{Shmem, SymVec};
use std::ffi::c_long;

/// The lock `lock` names, as a one-element object, for `routine`.
fn lock_object(shmem: &Shmem, routine: &str, lock: *mut c_long) -> SymVec<u64> {
    let (place, offset) = addr::symmetric(shmem, routine, "lock", lock.cast());
    if offset % align_of::<u64>() != 0 {
        bad_arg(routine, "lock", "not aligned for a long")
    }
    shmem.place_view::<u64>(place, offset, 1).or_die(routine)
}

/// Acquires the distributed lock `*lock`, waiting while another PE holds it
/// (OpenSHMEM `shmem_set_lock`; first come, first served).
///
/// # Safety
/// `lock` must be a symmetric address (it is not dereferenced here).
#[no_mangle]
pub unsafe extern "C" fn shmem_set_lock(lock: *mut c_long) {
    const ROUTINE: &str = "shmem_set_lock";
    let shmem = shmem(ROUTINE);
    let obj = lock_object(shmem, ROUTINE, lock);
    shmem.set_lock(&obj).or_die(ROUTINE);
}

/// Acquires `*lock` if it is free and returns 0; returns 1 at once if another PE holds
/// it (OpenSHMEM `shmem_test_lock`).
///
/// # Safety
/// `lock` must be a symmetric address (it is not dereferenced here).
#[no_mangle]
pub unsafe extern "C" fn shmem_test_lock(lock: *mut c_long) -> i32 {
    const ROUTINE: &str = "shmem_test_lock";
    let shmem = shmem(ROUTINE);
    let obj = lock_object(shmem, ROUTINE, lock);
    i32::from(!shmem.try_set_lock(&obj).or_die(ROUTINE))
}

/// Releases `*lock` after completing this PE's puts, so that the next holder sees them
/// (OpenSHMEM `shmem_clear_lock`).
///
/// # Safety
/// `lock` must be a symmetric address (it is not dereferenced here).
#[no_mangle]
pub unsafe extern "C" fn shmem_clear_lock(lock: *mut c_long) {
    const ROUTINE: &str = "shmem_clear_lock";
    let shmem = shmem(ROUTINE);
    let obj = lock_object(shmem, ROUTINE, lock);
    shmem.clear_lock(&obj).or_die(ROUTINE);
}
