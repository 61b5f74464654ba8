//! The multilevel address space from C (`shmemx.h`): how many boards this PE's node
//! has, collective allocation on a board (returning a board *window address*, see
//! `addr`), which place an address names, and running a kernel of the standard
//! bitfile on a board of this node. Puts, gets and atomics to board addresses are the
//! ordinary `shmem_` routines.
//!
//! This module owns those `shmemx_` entry points and their argument checks. It must
//! not move data (the Rust API's Route does) nor implement a board (`fpga-mock`).

use crate::addr;
use crate::memory::{alloc_at, free_as};
use crate::state::{bad_arg, fail, shmem, OrDie};
use rust::fpga_mock::{kernels::standard_bitfile, BoardError};
use rust::{Error, Place, Shmem};
use std::ffi::{c_char, c_void, CStr};

/// `SHMEMX_PLACE_CPU` (shmemx.h): what `shmemx_place_of` says of a CPU heap address.
const PLACE_CPU: i32 = -1;
/// `SHMEMX_PLACE_NONE` (shmemx.h): what `shmemx_place_of` says of any other address.
const PLACE_NONE: i32 = -2;

/// The boards of this PE's node (`shmemrun --fpgas N`, else the profile's count).
#[no_mangle]
pub extern "C" fn shmemx_n_fpgas() -> i32 {
    i32::try_from(shmem("shmemx_n_fpgas").fpgas()).unwrap_or(i32::MAX)
}

/// Bytes of this PE's partition of each board: its board symmetric heap size.
#[no_mangle]
pub extern "C" fn shmemx_fpga_heap_size() -> usize {
    let bytes = shmem("shmemx_fpga_heap_size").fpga_heap_bytes();
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// `board` as a board of this node, for `routine`; anything else ends the job.
fn board_arg(shmem: &Shmem, routine: &str, board: i32) -> u32 {
    let boards = shmem.fpgas();
    match u32::try_from(board) {
        Ok(b) if b < boards => b,
        _ if boards == 0 => bad_arg(routine, "board", &format!("{board}: {}", Error::NoBoards)),
        _ => bad_arg(
            routine,
            "board",
            &format!("{board} is not a board of this node (boards 0..{boards})"),
        ),
    }
}

/// Allocates `size` bytes on board `board` of every PE's node (collective, like
/// `shmem_malloc`) and returns this PE's window address of the object, or null for
/// size 0.
#[no_mangle]
pub extern "C" fn shmemx_fpga_malloc(board: i32, size: usize) -> *mut c_void {
    const ROUTINE: &str = "shmemx_fpga_malloc";
    let b = board_arg(shmem(ROUTINE), ROUTINE, board);
    alloc_at(ROUTINE, size, Place::Fpga(b))
}

/// Frees an object of `shmemx_fpga_malloc` on every PE (collective, like
/// `shmem_free`).
#[no_mangle]
pub extern "C" fn shmemx_fpga_free(ptr: *mut c_void) {
    free_as("shmemx_fpga_free", ptr)
}

/// Which place `addr` names: the board number for a board window address,
/// `SHMEMX_PLACE_CPU` for the CPU's symmetric memory, `SHMEMX_PLACE_NONE` for an
/// address that is not symmetric.
#[no_mangle]
pub extern "C" fn shmemx_place_of(addr: *const c_void) -> i32 {
    match addr::locate(shmem("shmemx_place_of"), addr) {
        Some((Place::Cpu, _)) => PLACE_CPU,
        Some((Place::Fpga(b), _)) => i32::try_from(b).unwrap_or(PLACE_NONE),
        None => PLACE_NONE,
    }
}

/// The byte offset of a board window address in its board's partition: what a kernel
/// argument naming that object is. An address that is not on a board ends the job.
#[no_mangle]
pub extern "C" fn shmemx_fpga_offset(addr: *const c_void) -> u64 {
    const ROUTINE: &str = "shmemx_fpga_offset";
    match addr::symmetric(shmem(ROUTINE), ROUTINE, "addr", addr) {
        (Place::Fpga(_), offset) => offset as u64,
        (Place::Cpu, _) => bad_arg(
            ROUTINE,
            "addr",
            &format!("{addr:p} is CPU memory, not a board address"),
        ),
    }
}

/// Runs `kernel` of the standard bitfile (`add-one`, `fail`, `panic`) on board
/// `board` of this node with `nargs` arguments, loading the bitfile into this PE's
/// partition first if nothing is loaded there, and waits for DONE. Returns 0 when the
/// kernel completed, -1 (after a line on stderr) when it failed or does not exist.
///
/// # Safety
/// `kernel` must be a zero-terminated string; `args` must point to `nargs` readable
/// `uint64_t` (or be anything when `nargs` is 0).
#[no_mangle]
pub unsafe extern "C" fn shmemx_fpga_run(
    board: i32,
    kernel: *const c_char,
    args: *const u64,
    nargs: usize,
) -> i32 {
    const ROUTINE: &str = "shmemx_fpga_run";
    let shmem = shmem(ROUTINE);
    let b = board_arg(shmem, ROUTINE, board);
    if kernel.is_null() {
        bad_arg(ROUTINE, "kernel", "null pointer")
    }
    // SAFETY: the caller's contract: a zero-terminated string (not null, checked).
    let name = unsafe { CStr::from_ptr(kernel) };
    let Ok(name) = name.to_str() else {
        bad_arg(ROUTINE, "kernel", "not UTF-8")
    };
    let args: &[u64] = if nargs == 0 {
        &[]
    } else if args.is_null() {
        bad_arg(ROUTINE, "args", "null pointer with nargs > 0")
    } else {
        // SAFETY: the caller's contract: `nargs` readable u64s (not null, checked).
        unsafe { std::slice::from_raw_parts(args, nargs) }
    };
    let started = match shmem.kernel_start(b, name, args) {
        Err(Error::Board {
            source: BoardError::NotConfigured,
            ..
        }) => {
            shmem.fpga_configure(b, standard_bitfile()).or_die(ROUTINE);
            shmem.kernel_start(b, name, args)
        }
        other => other,
    };
    // On the job clock: under virtual time the kernel's modeled time moves the PE's.
    let done = started.and_then(|run| run.wait());
    match done {
        Ok(_) => 0,
        Err(e @ Error::Board { .. }) => {
            kernel_failed(shmem.my_pe(), name, &e);
            -1
        }
        Err(other) => fail(ROUTINE, other),
    }
}

/// Reports a kernel that did not complete, without ending the job.
#[cold]
fn kernel_failed(pe: u32, kernel: &str, err: &Error) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "shmemplus: PE {pe}: shmemx_fpga_run: kernel {kernel:?}: {err}"
    );
}
