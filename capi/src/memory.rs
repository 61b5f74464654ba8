//! The symmetric heap from C: `shmem_malloc`, `shmem_free` and the table of live
//! allocations that lets `shmem_free` find the object a pointer names.
//!
//! This module owns that table (one entry per live allocation of any place, keyed by
//! place and heap offset). It must not choose where a block goes: the Rust library's
//! collective `alloc` does, on every PE alike.

use crate::addr;
use crate::state::{bad_arg, shmem, OrDie};
use rust::{Place, Shmem, SymVec};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

/// Live allocations by (place, heap offset).
type LiveTable = HashMap<(Place, usize), SymVec<u8>>;

static LIVE: Mutex<Option<LiveTable>> = Mutex::new(None);

fn live() -> MutexGuard<'static, Option<LiveTable>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Allocates `size` bytes on every PE at `place` (collective) and returns this PE's
/// address of the object (a board window address for a board), or null for size 0.
pub(crate) fn alloc_at(routine: &str, size: usize, place: Place) -> *mut c_void {
    let shmem = shmem(routine);
    if size == 0 {
        // Still a collective point: every PE passes the same size, so all skip alike;
        // the barrier keeps the "returns when every PE allocated" rule.
        shmem.barrier_all().or_die(routine);
        return std::ptr::null_mut();
    }
    let obj = shmem.alloc::<u8>(size, place).or_die(routine);
    let addr = address_of(shmem, routine, &obj);
    live()
        .get_or_insert_with(HashMap::new)
        .insert((place, obj.heap_offset()), obj);
    addr
}

/// This PE's address of `obj`.
pub(crate) fn address_of(shmem: &Shmem, routine: &str, obj: &SymVec<u8>) -> *mut c_void {
    match obj.place() {
        Place::Cpu => shmem.local_addr(obj).or_die(routine).cast(),
        Place::Fpga(b) => match addr::board_addr(b, obj.heap_offset()) {
            Some(at) => at,
            None => bad_arg(routine, "place", &format!("board {b} has no window")),
        },
    }
}

/// Takes the live allocation that starts at `ptr` out of the table; ends the job when
/// `ptr` is not the start of one.
pub(crate) fn take_live(shmem: &Shmem, routine: &str, ptr: *mut c_void) -> SymVec<u8> {
    let (place, offset) = addr::symmetric(shmem, routine, "ptr", ptr);
    match live().as_mut().and_then(|t| t.remove(&(place, offset))) {
        Some(obj) => obj,
        None => bad_arg(
            routine,
            "ptr",
            &format!("{ptr:p} is not the start of a live symmetric allocation"),
        ),
    }
}

/// Allocates `size` bytes of the symmetric heap on every PE (OpenSHMEM
/// `shmem_malloc`; collective). Returns null for size 0. An exhausted heap ends the
/// job with a message that names the size and `SHMEM_SYMMETRIC_SIZE`.
#[no_mangle]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    alloc_at("shmem_malloc", size, Place::Cpu)
}

/// Frees a symmetric allocation on every PE (OpenSHMEM `shmem_free`; collective).
/// Null does nothing but still synchronises.
#[no_mangle]
pub extern "C" fn shmem_free(ptr: *mut c_void) {
    const ROUTINE: &str = "shmem_free";
    let shmem = shmem(ROUTINE);
    if ptr.is_null() {
        shmem.barrier_all().or_die(ROUTINE);
        return;
    }
    let obj = take_live(shmem, ROUTINE, ptr);
    shmem.free(obj).or_die(ROUTINE);
}
