//! C addresses in the multilevel address space: which place of this PE, and which
//! byte offset in it, a pointer names.
//!
//! The CPU place is the PE's symmetric heap (and its static data, when the Rust
//! library mapped it): real memory, found by `Shmem::locate_addr`. A board has no
//! address in this process, so each board of this PE gets a *window*: a range of
//! address space reserved with no access rights, as large as the board's partition,
//! whose byte `i` names byte `i` of the board. `shmemx_fpga_malloc` hands out window
//! addresses; every put, get and atomic accepts them like heap addresses, and a
//! program that dereferences one gets a segmentation fault, never another object's
//! bytes. The windows stay reserved until the process ends, so that no later mapping
//! can reuse their addresses.
//!
//! This module owns the windows and the translation. It must not read or write
//! through any address.

use crate::state::{bad_arg, OrDie};
use rust::{AddressMap, Place, PlaceSpace, Shmem};
use std::ffi::c_void;
use std::sync::OnceLock;

/// The reserved board windows of this PE: board `b`'s window starts at
/// `base + b * per_board`.
struct Windows {
    base: usize,
    per_board: usize,
    boards: u32,
}

static WINDOWS: OnceLock<Windows> = OnceLock::new();

/// What every put and get looks up, made once at `shmem_init`: where CPU memory lies
/// and each place as one object of bytes (valid until finalize, after which the Rust
/// API refuses them), so that a call translates its address with a few compares.
struct Cached {
    map: AddressMap,
    cpu: PlaceSpace<u8>,
    boards: Vec<PlaceSpace<u8>>,
}

static CACHED: OnceLock<Cached> = OnceLock::new();

/// Reserves the board windows and makes the cached lookups; called once, by
/// `shmem_init`.
pub(crate) fn install(shmem: &Shmem, routine: &str) {
    reserve_board_windows(shmem, routine);
    let boards = (0..shmem.fpgas())
        .map(|b| shmem.place_space::<u8>(Place::Fpga(b)).or_die(routine))
        .collect();
    let _ = CACHED.set(Cached {
        map: shmem.address_map(),
        cpu: shmem.place_space::<u8>(Place::Cpu).or_die(routine),
        boards,
    });
}

/// `place` as one object of bytes, for `routine` (an invalid board ends the job).
#[inline]
pub(crate) fn bytes(shmem: &Shmem, routine: &str, place: Place) -> &'static PlaceSpace<u8> {
    let cached = match CACHED.get() {
        Some(cached) => cached,
        None => crate::state::die(Some(shmem.my_pe()), routine, "called before shmem_init"),
    };
    match place {
        Place::Cpu => &cached.cpu,
        Place::Fpga(b) => match cached.boards.get(b as usize) {
            Some(space) => space,
            // Not a board of this node: the Rust API says which boards there are.
            None => match shmem.place_space::<u8>(place) {
                Ok(_) => bad_arg(routine, "place", &format!("board {b} has no window")),
                Err(e) => crate::state::fail(routine, e),
            },
        },
    }
}

/// Reserves one window per board of this node (nothing when there are no boards).
fn reserve_board_windows(shmem: &Shmem, routine: &str) {
    let boards = shmem.fpgas();
    let per_board = usize::try_from(shmem.fpga_heap_bytes()).unwrap_or(usize::MAX);
    if boards == 0 || per_board == 0 {
        return;
    }
    let Some(total) = per_board.checked_mul(boards as usize) else {
        bad_arg(
            routine,
            "boards",
            "the board windows do not fit the address space",
        )
    };
    // SAFETY: an anonymous, private mapping at an address of the kernel's choosing
    // cannot overlap any existing mapping; PROT_NONE and MAP_NORESERVE make it address
    // space only (no memory is committed and no access is allowed).
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        let err = std::io::Error::last_os_error();
        bad_arg(
            routine,
            "boards",
            &format!("cannot reserve board windows: {err}"),
        )
    }
    let _ = WINDOWS.set(Windows {
        base: base as usize,
        per_board,
        boards,
    });
}

/// The window address of byte `offset` of board `board`, if that board has a window
/// and the offset is inside it.
pub(crate) fn board_addr(board: u32, offset: usize) -> Option<*mut c_void> {
    let w = WINDOWS.get()?;
    if board >= w.boards || offset >= w.per_board {
        return None;
    }
    let at = w.base + board as usize * w.per_board + offset;
    Some(at as *mut c_void)
}

/// The place and byte offset `addr` names, or `None` when it is not symmetric.
#[inline]
pub(crate) fn locate(shmem: &Shmem, addr: *const c_void) -> Option<(Place, usize)> {
    let cpu = match CACHED.get() {
        Some(cached) => cached.map.locate(addr.cast()),
        None => shmem.locate_addr(addr.cast()).map(|(_, offset)| offset),
    };
    cpu.map(|offset| (Place::Cpu, offset))
        .or_else(|| in_board_window(addr))
}

/// The board and offset `addr` names if it is a board window address; `None` for any
/// other address (CPU memory included). The private side of a put or get needs only
/// this: CPU memory of this process is read or written in place, whether symmetric or
/// not.
#[inline]
pub(crate) fn in_board_window(addr: *const c_void) -> Option<(Place, usize)> {
    let w = WINDOWS.get()?;
    let rel = (addr as usize).checked_sub(w.base)?;
    let board = rel / w.per_board;
    (board < w.boards as usize).then(|| (Place::Fpga(board as u32), rel % w.per_board))
}

/// The place and offset of `addr`, argument `arg` of `routine`; ends the job with a
/// message naming both when `addr` is not a symmetric address.
#[inline]
pub(crate) fn symmetric(
    shmem: &Shmem,
    routine: &str,
    arg: &str,
    addr: *const c_void,
) -> (Place, usize) {
    match locate(shmem, addr) {
        Some(found) => found,
        None => not_symmetric(routine, arg, addr),
    }
}

/// [`symmetric`] with the place's byte space ([`bytes`]), from one look at the cache:
/// what every put and get needs of its symmetric side.
#[inline]
pub(crate) fn symmetric_bytes(
    shmem: &Shmem,
    routine: &str,
    arg: &str,
    addr: *const c_void,
) -> (Place, usize, &'static PlaceSpace<u8>) {
    if let Some(cached) = CACHED.get() {
        if let Some(offset) = cached.map.locate(addr.cast()) {
            return (Place::Cpu, offset, &cached.cpu);
        }
    }
    let (place, offset) = symmetric(shmem, routine, arg, addr);
    (place, offset, bytes(shmem, routine, place))
}

#[cold]
#[inline(never)]
fn not_symmetric(routine: &str, arg: &str, addr: *const c_void) -> ! {
    bad_arg(
        routine,
        arg,
        &format!(
            "{addr:p} is not a symmetric address (not in the symmetric heap, the program's global or static data, or a board window)"
        ),
    )
}

/// `pe` as a PE number; a negative one ends the job naming `routine`.
#[inline]
pub(crate) fn pe_arg(routine: &str, pe: i32) -> u32 {
    match u32::try_from(pe) {
        Ok(pe) => pe,
        Err(_) => bad_arg(routine, "pe", &format!("{pe} is not a PE number")),
    }
}

/// `nelems * elem` bytes; an overflow ends the job naming `routine`.
#[inline]
pub(crate) fn bytes_of(routine: &str, nelems: usize, elem: usize) -> usize {
    match nelems.checked_mul(elem) {
        Some(bytes) => bytes,
        None => bad_arg(
            routine,
            "nelems",
            &format!("{nelems} elements of {elem} bytes overflow the address space"),
        ),
    }
}

/// The symmetric space of `place` seen as elements of `T` (see
/// `Shmem::place_space`), for `routine`.
#[inline]
pub(crate) fn space<T: bytemuck::Pod>(
    shmem: &Shmem,
    routine: &str,
    place: Place,
) -> rust::PlaceSpace<T> {
    shmem.place_space::<T>(place).or_die(routine)
}
