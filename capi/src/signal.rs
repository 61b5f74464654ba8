//! Signalled puts from C: the body of every `shmem_..._put_signal[_nbi]` (typed,
//! sized and memory forms, generated with the rest of the RMA family) and
//! `shmem_signal_fetch`.
//!
//! This module owns turning the signal's C arguments (`sig_addr`, `signal`, `sig_op`)
//! into one call of the Rust API's `put_signal`, `put_signal_nbi` or `signal_fetch`,
//! which own the order "data, then signal". It must not move bytes or update the
//! signal word itself.

use crate::addr::{self, bytes_of, pe_arg};
use crate::state::{bad_arg, shmem, OrDie};
use rust::{Place, PlaceSpace, Shmem, SignalOp};
use std::ffi::c_void;

/// `SHMEM_SIGNAL_SET` of `shmem.h`.
const SHMEM_SIGNAL_SET: i32 = 0;
/// `SHMEM_SIGNAL_ADD` of `shmem.h`.
const SHMEM_SIGNAL_ADD: i32 = 1;

/// The signal word `sig_addr` of `routine` as (the place's space of words, index);
/// ends the job when it is not a symmetric, 8-byte aligned address.
fn signal_word(shmem: &Shmem, routine: &str, sig_addr: *const u64) -> (PlaceSpace<u64>, usize) {
    let (place, offset) = addr::symmetric(shmem, routine, "sig_addr", sig_addr.cast());
    if offset % size_of::<u64>() != 0 {
        bad_arg(
            routine,
            "sig_addr",
            &format!("{sig_addr:p} is not aligned to 8 bytes (a signal is a uint64_t)"),
        )
    }
    let space = addr::space::<u64>(shmem, routine, place);
    (space, offset / size_of::<u64>())
}

/// Puts `nelems` elements of `elem` bytes from `src` into the symmetric `dest` on PE
/// `pe`, then updates the signal word `sig_addr` there with `signal` (`sig_op`:
/// `SHMEM_SIGNAL_SET` or `SHMEM_SIGNAL_ADD`); the data arrives before the signal.
/// `nbi`: complete at the next quiet.
///
/// # Safety
/// `src` must be readable for the whole range (the C caller's contract, as in
/// OpenSHMEM); a board window address is refused, as the Rust API takes a signalled
/// put's data from this process's memory.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn put_signal(
    routine: &str,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    elem: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: i32,
    pe: i32,
    nbi: bool,
) {
    let op = match sig_op {
        SHMEM_SIGNAL_SET => SignalOp::Set,
        SHMEM_SIGNAL_ADD => SignalOp::Add,
        other => bad_arg(
            routine,
            "sig_op",
            &format!("{other} is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD"),
        ),
    };
    let bytes = bytes_of(routine, nelems, elem);
    let shmem = shmem(routine);
    let pe = pe_arg(routine, pe);
    let (place, offset) = addr::symmetric(shmem, routine, "dest", dest);
    let dest_space = addr::bytes(shmem, routine, place);
    let (sig_space, sig_index) = signal_word(shmem, routine, sig_addr);
    let data: &[u8] = if bytes == 0 {
        &[]
    } else {
        if src.is_null() {
            bad_arg(routine, "source", "null pointer")
        }
        if let Some((Place::Fpga(board), _)) = addr::in_board_window(src) {
            bad_arg(
                routine,
                "source",
                &format!("{src:p} is in the window of board {board}; a signalled put takes its data from this process's memory"),
            )
        }
        // SAFETY: the caller guarantees `src` is readable for `bytes` bytes (the
        // OpenSHMEM contract of every put); it is not a board window (refused above),
        // so it is memory of this process.
        unsafe { std::slice::from_raw_parts(src.cast::<u8>(), bytes) }
    };
    let put_signal = if nbi {
        Shmem::put_signal_nbi::<u8>
    } else {
        Shmem::put_signal::<u8>
    };
    let done = put_signal(
        shmem, dest_space, offset, data, &sig_space, sig_index, signal, op, pe,
    );
    done.or_die(routine)
}

/// This PE's own signal word `sig_addr`, read atomically (OpenSHMEM
/// `shmem_signal_fetch`).
///
/// # Safety
/// `sig_addr` must be a symmetric address (anything else ends the job).
#[no_mangle]
pub unsafe extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    const ROUTINE: &str = "shmem_signal_fetch";
    let shmem = shmem(ROUTINE);
    let (space, index) = signal_word(shmem, ROUTINE, sig_addr);
    shmem.signal_fetch(&space, index).or_die(ROUTINE)
}
