//! The symmetric heap from C: `shmem_malloc`, `shmem_calloc`, `shmem_align`,
//! `shmem_malloc_with_hints`, `shmem_realloc`, `shmem_free`, their legacy names
//! (`shmalloc`, `shmemalign`, `shrealloc`, `shfree`) and the table of live
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
    alloc_by(routine, size, |shmem| shmem.alloc::<u8>(size, place))
}

/// The common body of the allocation routines: `make` is the Rust API's collective
/// allocation of `size` (> 0) bytes; its object goes into the live table and its
/// address is returned. Size 0 returns null on every PE after a barrier.
pub(crate) fn alloc_by(
    routine: &str,
    size: usize,
    make: impl FnOnce(&Shmem) -> rust::Result<SymVec<u8>>,
) -> *mut c_void {
    let shmem = shmem(routine);
    if size == 0 {
        // Still a collective point: every PE passes the same size, so all skip alike;
        // the barrier keeps the "returns when every PE allocated" rule.
        shmem.barrier_all().or_die(routine);
        return std::ptr::null_mut();
    }
    let obj = make(shmem).or_die(routine);
    keep(shmem, routine, obj)
}

/// Enters `obj` into the live table and returns this PE's address of it.
fn keep(shmem: &Shmem, routine: &str, obj: SymVec<u8>) -> *mut c_void {
    let addr = address_of(shmem, routine, &obj);
    live()
        .get_or_insert_with(HashMap::new)
        .insert((obj.place(), obj.heap_offset()), obj);
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
    free_as("shmem_free", ptr)
}

/// The body of `shmem_free` and its other names.
pub(crate) fn free_as(routine: &str, ptr: *mut c_void) {
    let shmem = shmem(routine);
    if ptr.is_null() {
        shmem.barrier_all().or_die(routine);
        return;
    }
    let obj = take_live(shmem, routine, ptr);
    shmem.free(obj).or_die(routine);
}

/// Allocates `count` objects of `size` bytes on every PE, all bytes zero (OpenSHMEM
/// `shmem_calloc`; collective). Returns null when either is 0; a product that
/// overflows ends the job.
#[no_mangle]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    const ROUTINE: &str = "shmem_calloc";
    let bytes = match count.checked_mul(size) {
        Some(bytes) => bytes,
        None => bad_arg(
            ROUTINE,
            "count",
            &format!("{count} objects of {size} bytes overflow the address space"),
        ),
    };
    alloc_by(ROUTINE, bytes, |shmem| {
        shmem.alloc_zeroed::<u8>(bytes, Place::Cpu)
    })
}

/// The legacy name of [`shmem_malloc`].
#[no_mangle]
pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
    alloc_at("shmalloc", size, Place::Cpu)
}

/// The legacy name of [`shmem_free`].
#[no_mangle]
pub extern "C" fn shfree(ptr: *mut c_void) {
    free_as("shfree", ptr)
}

/// Allocates `size` bytes on every PE at an address that is a multiple of
/// `alignment`, a power of two up to 2 MiB (OpenSHMEM `shmem_align`;
/// collective). Another alignment ends the job.
#[no_mangle]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    align_as("shmem_align", alignment, size)
}

/// The legacy name of [`shmem_align`].
#[no_mangle]
pub extern "C" fn shmemalign(alignment: usize, size: usize) -> *mut c_void {
    align_as("shmemalign", alignment, size)
}

fn align_as(routine: &str, alignment: usize, size: usize) -> *mut c_void {
    if !alignment.is_power_of_two() {
        bad_arg(
            routine,
            "alignment",
            &format!("{alignment} is not a power of two"),
        )
    }
    // Alignments the heap's addresses cannot have are refused by the Rust API on
    // every PE alike, which ends the job naming the alignment.
    alloc_by(routine, size, |shmem| {
        shmem.alloc_aligned::<u8>(size, alignment, Place::Cpu)
    })
}

/// `shmem_malloc` with usage hints (`SHMEM_MALLOC_*`; OpenSHMEM
/// `shmem_malloc_with_hints`; collective). Known hints are accepted; unknown bits end
/// the job.
#[no_mangle]
pub extern "C" fn shmem_malloc_with_hints(size: usize, hints: std::ffi::c_long) -> *mut c_void {
    const ROUTINE: &str = "shmem_malloc_with_hints";
    let Ok(bits) = u64::try_from(hints) else {
        bad_arg(ROUTINE, "hints", &format!("{hints} is negative"))
    };
    alloc_by(ROUTINE, size, |shmem| {
        shmem.alloc_with_hints::<u8>(size, rust::MallocHints(bits), Place::Cpu)
    })
}

/// Resizes a symmetric allocation on every PE, keeping its first `min(old, new)`
/// bytes (OpenSHMEM `shmem_realloc`; collective). Null `ptr` allocates; size 0 frees
/// and returns null. The object may move: the old address is invalid afterwards.
#[no_mangle]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    realloc_as("shmem_realloc", ptr, size)
}

/// The legacy name of [`shmem_realloc`].
#[no_mangle]
pub extern "C" fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    realloc_as("shrealloc", ptr, size)
}

fn realloc_as(routine: &str, ptr: *mut c_void, size: usize) -> *mut c_void {
    if ptr.is_null() {
        return alloc_at(routine, size, Place::Cpu);
    }
    if size == 0 {
        free_as(routine, ptr);
        return std::ptr::null_mut();
    }
    let shmem = shmem(routine);
    let mut obj = take_live(shmem, routine, ptr);
    shmem.realloc(&mut obj, size).or_die(routine);
    keep(shmem, routine, obj)
}
