//! Symmetric global and static data: the executable's writable data (`.data` and
//! `.bss`) made part of each PE's CPU memory, as OpenSHMEM requires of a C program's
//! globals (`static long x; shmem_long_p(&x, 5, 1);`).
//!
//! This module owns finding that data (`find_executable_data`, over the pure rule
//! `data_region`) and moving it into the PE's segment (`adopt`: copy the bytes into
//! the segment's static area, then map the area over the data). It must not lay out
//! the segment (`segment`) or decide when start-up does this (`shmem::init`, which
//! calls `adopt` before any thread of the library runs and before any peer learns the
//! segment's name). Design and limits: `docs/architecture.md` §5.4.

use crate::error::{Error, Result};
use std::os::fd::BorrowedFd;

/// The executable's writable data, page-aligned, now (after `adopt`) backed by this
/// PE's static area: address `lo + k` is CPU offset `static_offset + k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticRegion {
    /// First byte (page-aligned).
    pub lo: usize,
    /// Bytes (a page multiple, not 0).
    pub len: usize,
}

impl StaticRegion {
    /// The offset of `addr` in the region, if it lies inside.
    pub fn offset_of(&self, addr: usize) -> Option<usize> {
        addr.checked_sub(self.lo).filter(|&off| off < self.len)
    }
}

/// A program header's span, in the object's own addresses (before the load bias).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// `p_vaddr`.
    pub vaddr: usize,
    /// `p_memsz`.
    pub memsz: usize,
}

/// The writable data of an object loaded at `bias` whose writable `PT_LOAD` headers
/// are `loads` and whose `PT_GNU_RELRO` is `relro`: for each load,
/// `[max(floor(vaddr), ceil(relro end)), ceil(vaddr + memsz))` plus the bias, rounded
/// to `page`. RELRO is left out: the loader made it read-only after relocation, and
/// mapping writable memory over it would undo that. A load wholly inside RELRO (lld
/// gives RELRO a load of its own) has no data. `None` when no load has data; an error
/// for more than one (a layout this library does not map) or an address that
/// overflows.
pub fn data_region(
    bias: usize,
    loads: &[Span],
    relro: Option<Span>,
    page: usize,
) -> Result<Option<StaticRegion>, String> {
    let overflow = || "a program header's address overflows".to_string();
    let floor = |x: usize| x - x % page;
    let ceil = |x: usize| x.checked_next_multiple_of(page).ok_or_else(overflow);
    let relro = match relro {
        Some(r) => {
            let start = bias.checked_add(r.vaddr).ok_or_else(overflow)?;
            Some((start, start.checked_add(r.memsz).ok_or_else(overflow)?))
        }
        None => None,
    };
    let mut found = None;
    for l in loads {
        let start = bias.checked_add(l.vaddr).ok_or_else(overflow)?;
        let end = start.checked_add(l.memsz).ok_or_else(overflow)?;
        let (mut lo, hi) = (floor(start), ceil(end)?);
        if let Some((r_start, r_end)) = relro {
            if r_start < hi && r_end > lo {
                lo = lo.max(ceil(r_end)?);
            }
        }
        if lo >= hi {
            continue;
        }
        if found.is_some() {
            return Err(
                "the executable has more than one writable segment outside RELRO; \
                 symmetric data supports one (.data and .bss together)"
                    .to_string(),
            );
        }
        found = Some(StaticRegion { lo, len: hi - lo });
    }
    Ok(found)
}

/// The system's page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the process; no memory is passed.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page).unwrap_or(4096)
}

/// What the `dl_iterate_phdr` callback collects from the main program.
#[derive(Default)]
struct Headers {
    /// Whether the first object was the main program (empty name).
    main: bool,
    bias: usize,
    loads: Vec<Span>,
    relro: Option<Span>,
    /// A header whose fields do not fit in `usize`.
    bad: bool,
}

/// `dl_iterate_phdr`'s callback: records the first object's writable loads and its
/// RELRO, then stops the iteration.
///
/// # Safety
/// `info` points at a valid `dl_phdr_info` for the call and `data` at a `Headers`
/// (as `dl_iterate_phdr` guarantees for the arguments `find_executable_data` gives).
unsafe extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: see the function's contract; `data` is the `&mut Headers` that
    // `find_executable_data` passed and nothing else uses it during the call.
    let (info, found) = unsafe { (&*info, &mut *data.cast::<Headers>()) };
    // SAFETY: dlpi_name is null or a NUL-terminated string the loader owns.
    found.main = info.dlpi_name.is_null() || unsafe { *info.dlpi_name } == 0;
    if !found.main || info.dlpi_phdr.is_null() {
        return 1;
    }
    // SAFETY: the loader gives dlpi_phnum headers at dlpi_phdr, valid during the call.
    let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
    let span = |vaddr, memsz| match (usize::try_from(vaddr), usize::try_from(memsz)) {
        (Ok(vaddr), Ok(memsz)) => Some(Span { vaddr, memsz }),
        _ => None,
    };
    found.bias = usize::try_from(info.dlpi_addr).unwrap_or(usize::MAX);
    for h in headers {
        let is_data = h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_W != 0;
        if !is_data && h.p_type != libc::PT_GNU_RELRO {
            continue;
        }
        match span(h.p_vaddr, h.p_memsz) {
            Some(s) if is_data => found.loads.push(s),
            Some(s) => found.relro = Some(s),
            None => found.bad = true,
        }
    }
    1
}

/// This executable's writable data (see [`data_region`]), or `None` if it has none.
pub fn find_executable_data() -> Result<Option<StaticRegion>> {
    let mut found = Headers::default();
    // SAFETY: `visit` matches the callback type and its contract: `data` is `found`,
    // exclusively borrowed for the call, and `visit` does not unwind.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut found).cast()) };
    let unsupported = |why: String| {
        Error::InvalidArgument(format!("symmetric static data is unavailable: {why}"))
    };
    if !found.main || found.bad || found.bias == usize::MAX {
        return Err(unsupported(
            "the program headers of the executable could not be read".into(),
        ));
    }
    data_region(found.bias, &found.loads, found.relro, page_size()).map_err(unsupported)
}

/// Makes `region` (the executable's data) this PE's static area: copies its bytes
/// into the area and maps the area over it, so that from then on every global of the
/// program in `region` *is* the static area and a peer's put into it lands in the
/// variable. Never undone: the program uses its globals until it exits.
///
/// Why this preserves every value: the bytes are copied first and the same pages of
/// the same object are then mapped at the same addresses, so every variable reads
/// what it held, at the address it had (references and pointers into the region stay
/// valid). Nothing may write the region between the copy and the mapping: this
/// thread does neither allocate nor touch a global in between, the library has no
/// thread yet, and no peer has the segment's name yet. A thread of the program's own
/// that writes a global while `init` runs can lose that write: the documented limit.
///
/// Alignment: `lo`, `len` and the area's file offset are page multiples, so every
/// variable keeps its address and, in the segment, its alignment (at most a page).
/// RELRO is not in `region` (see [`data_region`]). A libc variable copy-relocated
/// into the executable's `.bss` (`stdout`, `environ`, ...) moves with it: libc
/// reaches it through its GOT, i.e. at the same address, so it keeps working (and is
/// symmetric like any global).
///
/// # Safety
/// `region` must come from [`find_executable_data`] in this process, `area`, `fd` and
/// `file_offset` from `Segment::static_area` of a segment whose static area is
/// `region.len` bytes, and no other thread of the process may write the region while
/// this runs (call it before starting threads, first thing in `main`).
pub unsafe fn adopt(
    region: StaticRegion,
    area: *mut u8,
    fd: BorrowedFd<'_>,
    file_offset: u64,
) -> Result<()> {
    let page = page_size();
    let file_page = usize::try_from(file_offset).is_ok_and(|o| o % page == 0);
    if region.lo % page != 0 || region.len % page != 0 || region.len == 0 || !file_page {
        return Err(Error::InvalidArgument(format!(
            "symmetric static data: {} bytes at {:#x} or segment offset {file_offset} \
             is not a multiple of the {page}-byte page",
            region.len, region.lo
        )));
    }
    let lo = region.lo as *mut u8;
    // SAFETY: [lo, lo + len) is the executable's mapped writable data (the loader
    // mapped every byte of its loads up to the rounded end), `area` has len bytes
    // (the caller's contract), and the two do not overlap (the area is in the
    // segment's mapping). No other thread writes either meanwhile (the contract).
    unsafe { std::ptr::copy_nonoverlapping(lo.cast_const(), area, region.len) };
    use rustix::mm::{MapFlags, ProtFlags};
    // SAFETY: replaces the pages at [lo, lo + len) by the area's pages, which hold the
    // same bytes (copied above): every Rust object there keeps its address and value.
    // The range is the executable's own data, never memory the allocator or a stack
    // owns, and page-aligned (checked above).
    let mapped = unsafe {
        rustix::mm::mmap(
            lo.cast(),
            region.len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED | MapFlags::FIXED,
            fd,
            file_offset,
        )
    };
    match mapped {
        Ok(p) if p == lo.cast() => Ok(()),
        // A failed MAP_FIXED may already have removed the old pages: the program's
        // globals may be gone, and nothing that uses them (stderr's lock, the
        // allocator, ...) can run. Say so with a raw write and end the process.
        _ => unmapped_data(),
    }
}

/// Ends the process after a failed remap of its data, touching no global.
fn unmapped_data() -> ! {
    const MSG: &[u8] = b"shmemplus: mapping the program's static data into its symmetric \
        segment failed; the program's globals may be gone; ending the process\n";
    // SAFETY: write(2) of a constant buffer to stderr, then _exit: neither reads or
    // writes memory of the program beyond MSG.
    unsafe {
        libc::write(2, MSG.as_ptr().cast(), MSG.len());
        libc::_exit(crate::fatal::FATAL_EXIT_CODE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: usize = 4096;
    fn span(vaddr: usize, memsz: usize) -> Span {
        Span { vaddr, memsz }
    }

    #[test]
    fn one_load_after_relro_gnu_ld_style() {
        // One RW load: RELRO (.got, .data.rel.ro) then .data and .bss.
        let load = span(0x3d_e50, 0x2_0000);
        let relro = span(0x3d_e50, 0x11b0); // ends at 0x3f000, a page boundary
        let r = data_region(0x5555_0000_0000, &[load], Some(relro), P)
            .unwrap()
            .unwrap();
        assert_eq!(r.lo, 0x5555_0000_0000 + 0x3f000);
        // End 0x5de50 rounds up to 0x5e000.
        assert_eq!(r.lo + r.len, 0x5555_0000_0000 + 0x5e000);
        assert_eq!(r.offset_of(r.lo + 8), Some(8));
        assert_eq!(r.offset_of(r.lo + r.len), None);
        assert_eq!(r.offset_of(r.lo - 1), None);
    }

    #[test]
    fn relro_ending_inside_a_page_excludes_that_page() {
        let r = data_region(0, &[span(0x1000, 0x3000)], Some(span(0x1000, 0x1800)), P)
            .unwrap()
            .unwrap();
        assert_eq!((r.lo, r.len), (0x3000, 0x1000));
    }

    #[test]
    fn lld_style_relro_load_of_its_own_is_skipped() {
        // As this workspace's binaries: RELRO has a load of its own, data the next.
        let loads = [span(0x39_8960, 0x2_36a0), span(0x3b_c0c8, 0xd00)];
        let relro = span(0x39_8960, 0x2_36a0);
        let r = data_region(0x1000_0000, &loads, Some(relro), P)
            .unwrap()
            .unwrap();
        assert_eq!((r.lo, r.len), (0x1000_0000 + 0x3b_c000, 0x1000));
    }

    #[test]
    fn no_relro_starts_at_the_load_page() {
        let r = data_region(0, &[span(0x2010, 0x10)], None, P)
            .unwrap()
            .unwrap();
        assert_eq!((r.lo, r.len), (0x2000, 0x1000));
        // A relro elsewhere does not cut the load.
        let r = data_region(0, &[span(0x2010, 0x10)], Some(span(0x9000, 0x100)), P)
            .unwrap()
            .unwrap();
        assert_eq!((r.lo, r.len), (0x2000, 0x1000));
    }

    #[test]
    fn nothing_writable_outside_relro_is_none() {
        assert_eq!(data_region(0, &[], None, P), Ok(None));
        let only_relro = span(0x1000, 0x2000);
        assert_eq!(data_region(0, &[only_relro], Some(only_relro), P), Ok(None));
    }

    #[test]
    fn two_data_loads_or_overflow_are_errors() {
        let two = [span(0x1000, 0x100), span(0x5000, 0x100)];
        assert!(data_region(0, &two, None, P)
            .unwrap_err()
            .contains("more than one"));
        let e = data_region(usize::MAX - 10, &[span(0x1000, 0x100)], None, P).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
        let e = data_region(0, &[span(usize::MAX - 10, 5)], None, P).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
    }

    #[test]
    fn this_test_binary_has_data_holding_its_globals() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static GLOBAL: AtomicU64 = AtomicU64::new(7);
        static ZEROED: AtomicU64 = AtomicU64::new(0);
        GLOBAL.fetch_add(1, Ordering::Relaxed);
        let r = find_executable_data()
            .unwrap()
            .expect("a test binary has globals");
        assert_eq!(r.lo % page_size(), 0);
        assert_eq!(r.len % page_size(), 0);
        for addr in [&GLOBAL as *const _ as usize, &ZEROED as *const _ as usize] {
            assert!(r.offset_of(addr).is_some(), "{addr:#x} not in {r:x?}");
        }
        // Constant data is not writable data.
        static TEXT: &str = "read-only";
        assert!(r.offset_of(TEXT.as_ptr() as usize).is_none());
    }
}
