//! Shared-memory segments: one per PE, holding that PE's control block (signals,
//! barrier flags, collective records), its inbound active-message rings, its CPU
//! symmetric heap and its static area (the program's data, see `statics`). Owns
//! creating, naming, mapping and unlinking segments and the layout inside them. It
//! must not implement synchronisation protocols or allocation: `sync`, `am` and `heap`
//! give meaning to the bytes laid out here, and `statics` maps the static area over
//! the program's data.
//!
//! Length: about 660 lines of code and 165 of unit tests; the layout and the code that
//! maps it are one concern and stay together.
//!
//! Layout of the segment of a job of `n` PEs (offsets page-aligned where noted):
//!
//! ```text
//! 0        SegmentHeader (magic, layout version, pe, n_pes, sizes)
//! 4096     Control (signals, barrier flags, collective records, emulated NIC
//!          timelines), page-aligned
//! ...      2n rings: request ring from PE s at index s, reply ring from s at n + s
//! ...      CPU symmetric heap (page-aligned), heap_bytes long
//! ...      static area (page-aligned, right after the heap rounded up to a page),
//!          static_bytes long (0 unless `init_with` asked for symmetric data)
//! ```
//!
//! The CPU offsets of a PE are one range: `[0, heap_bytes)` is the heap and
//! `[static_offset, static_offset + static_bytes)` the static area, where
//! `static_offset` is `heap_bytes` rounded up to a page (equal to it for the usual
//! page-multiple heap sizes). `Layout::cpu_bytes` is where that range ends.
//!
//! All-zero bytes are the valid initial state of every control structure, which is
//! what a fresh shared-memory object holds.

use crate::error::Error;
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Magic number at the start of every segment ("SHMEM+\0\1").
const MAGIC: u64 = 0x5348_4d45_4d2b_0001;
/// Version of the layout below; bumped on any change.
const LAYOUT_VERSION: u32 = 8;
const PAGE: usize = 4096;
/// Barrier rounds supported: a dissemination barrier over g node groups takes
/// ceil(log2 g) rounds, so 16 rounds cover 65536 nodes.
pub const MAX_BARRIER_ROUNDS: usize = 16;
/// Teams a PE can belong to at once (world and shared included), as OpenSHMEM's
/// `_SHMEM_TEAMS_MAX`-style fixed pool: each has synchronisation words in every
/// member's control block.
pub const MAX_TEAMS: usize = 32;
/// Boards per node the control block has DMA timelines for.
pub const MAX_BOARDS: usize = 16;
/// Delivery stamps per PE under the virtual clock ([`Control::stamps`]): a power of two.
pub const STAMP_SLOTS: usize = 1024;
/// Block delivery stamps per PE under the virtual clock ([`Control::block_stamps`]): a
/// power of two.
pub const BLOCK_STAMP_SLOTS: usize = 1024;

/// Pads and aligns a value to its own cache line, so that words written by different
/// PEs never share a line.
#[repr(C, align(64))]
#[derive(Default)]
pub struct Padded<T>(pub T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A wake-up word: waiters sleep on `seq` (futex), notifiers bump it when `sleepers`
/// says someone sleeps. The protocol is in `sync::Signal`.
#[repr(C)]
#[derive(Default)]
pub struct SignalWord {
    /// Bumped by a notifier that sees sleepers; waiters futex-wait on it.
    pub seq: AtomicU32,
    /// Number of threads currently committed to sleeping on `seq`.
    pub sleepers: AtomicU32,
}

/// One slot of a collective record: what a PE says it is doing in its collective call
/// number `seq` (kind and arguments), read by every other PE to check symmetry.
#[repr(C)]
#[derive(Default)]
pub struct CollRecord {
    /// Collective sequence number + 1 (0 = never written).
    pub seq: AtomicU64,
    /// What the call is and its arguments (meaning given by the caller).
    pub words: [AtomicU64; 6],
}

/// The control block of a PE. Fields written by other PEs sit on their own lines.
#[repr(C)]
pub struct Control {
    /// Woken when something a user thread of this PE waits for arrives (barrier flags,
    /// completions).
    pub user_signal: Padded<SignalWord>,
    /// Woken when a message arrives in one of this PE's inbound rings.
    pub progress_signal: Padded<SignalWord>,
    /// Woken when a ring this PE produces into gets free space.
    pub space_signal: Padded<SignalWord>,
    /// Synchronisation words of each team slot this PE may be a member of (slot 0 is
    /// the world team, slot 1 the node's shared team).
    pub teams: [TeamSync; MAX_TEAMS],
    /// Two slots (by collective sequence parity) describing this PE's current
    /// collective call, for the symmetry check.
    pub coll: [Padded<CollRecord>; 2],
    /// Emulated NIC of this PE's node, send side: busy-until instant (ns, monotonic
    /// clock). Only the node's first PE's copy is used (see `emulate`).
    pub nic_send: Padded<AtomicU64>,
    /// Emulated NIC of this PE's node, receive side (as `nic_send`).
    pub nic_recv: Padded<AtomicU64>,
    /// Emulated DMA read channel (board -> host) of each board of this PE's node
    /// (node leader's copy only, as the NIC).
    pub dma_read: [Padded<AtomicU64>; MAX_BOARDS],
    /// Emulated DMA write channel (host -> board) of each board of this PE's node.
    pub dma_write: [Padded<AtomicU64>; MAX_BOARDS],
    /// Virtual clock: delivery instants of the writes into this PE's memory, by word
    /// slot (see `shmem::vtime`). Written by the writers, read by this PE's waits.
    pub stamps: [AtomicU64; STAMP_SLOTS],
    /// Virtual clock: delivery instants of the large writes into this PE's memory, by
    /// 4 KiB block slot (see `shmem::vtime`).
    pub block_stamps: [AtomicU64; BLOCK_STAMP_SLOTS],
    /// Virtual clock: the clock this PE last published for turns in virtual-time order
    /// (`shmem::turns`); `u64::MAX` once it takes no more turns. Written by this PE,
    /// read by the others.
    pub turn_clock: Padded<AtomicU64>,
    /// Virtual clock: the reservation calendars of this PE's node's resources (node
    /// leader's copy only, as the busy-until words above, which the wall clock uses).
    pub calendars: NodeCalendars,
}

/// The calendars of one node's emulated resources under the virtual clock (gap-filling
/// reservations, `netsim::Calendar`), one per timeline of the wall clock.
#[repr(C)]
pub struct NodeCalendars {
    /// NIC send side.
    pub nic_send: netsim::Calendar,
    /// NIC receive side.
    pub nic_recv: netsim::Calendar,
    /// DMA read channel (board -> host) of each board.
    pub dma_read: [netsim::Calendar; MAX_BOARDS],
    /// DMA write channel (host -> board) of each board.
    pub dma_write: [netsim::Calendar; MAX_BOARDS],
}

/// The words one team slot needs in a member's control block. Which words of which
/// member are used is `team`'s business; all only grow (epochs and counts), so they
/// never need a reset between uses of a slot by successive teams.
#[repr(C)]
#[derive(Default)]
pub struct TeamSync {
    /// Dissemination rounds between node groups (group leaders' copies): flag of round
    /// k holds the epoch of the last barrier in which group (g - 2^k) signalled.
    pub rounds: [Padded<AtomicU64>; MAX_BARRIER_ROUNDS],
    /// Group leader's copy: arrivals of the group's members, over all barriers.
    pub arrived: Padded<AtomicU64>,
    /// Group leader's copy: epoch of the last barrier the group was released from.
    pub released: Padded<AtomicU64>,
    /// Group leader's copy: where the group's waiters sleep.
    pub signal: Padded<SignalWord>,
    /// Collective data arrivals at this member (signals of broadcast, collect, ...).
    pub arrivals: Padded<AtomicU64>,
    /// Two words this member publishes to the others in a split of this team (its
    /// free slots with the call's descriptor and its highest barrier epoch, then
    /// whether its slot claim held).
    pub scratch: [Padded<AtomicU64>; 2],
    /// Two descriptors (by collective parity) of this member's current collective
    /// call, which every member checks against every other's after the call's
    /// opening barrier (meaning given by `shmem::collectives`).
    pub calls: [Padded<[AtomicU64; CALL_WORDS]>; 2],
    /// Virtual clock: this member's clock when it arrived at the team's barrier, by
    /// epoch parity (see `shmem::vtime`).
    pub clock: [Padded<AtomicU64>; 2],
    /// Virtual clock: the latest delivery instant of the collective data arrivals
    /// signalled to this member (`arrivals`).
    pub arrival_stamp: Padded<AtomicU64>,
}

/// Words of one collective-call descriptor in [`TeamSync::calls`].
pub const CALL_WORDS: usize = 8;

/// Producer and consumer positions of one ring, on separate lines.
#[repr(C)]
#[derive(Default)]
pub struct RingHeader {
    /// Bytes ever consumed (written by the consumer).
    pub head: Padded<AtomicU64>,
    /// Bytes ever produced (written by the producer).
    pub tail: Padded<AtomicU64>,
}

#[repr(C)]
struct SegmentHeader {
    magic: u64,
    layout_version: u32,
    pe: u32,
    n_pes: u32,
    _pad: u32,
    heap_bytes: u64,
    ring_bytes: u64,
    static_bytes: u64,
}

/// Where each part sits inside a segment of a given job shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// PEs in the job (number of rings per kind).
    pub n_pes: usize,
    /// Bytes of data per ring (a power of two).
    pub ring_bytes: usize,
    /// Bytes of symmetric heap.
    pub heap_bytes: usize,
    /// Bytes of static area (a page multiple; 0 without symmetric data).
    pub static_bytes: usize,
    control_offset: usize,
    rings_offset: usize,
    ring_stride: usize,
    heap_offset: usize,
    total: usize,
}

/// `x` rounded up to a multiple of `to`, or `None` on overflow.
const fn round_up(x: usize, to: usize) -> Option<usize> {
    x.checked_next_multiple_of(to)
}

/// The largest segment a mapping can be: pointer offsets inside one allocation must
/// fit in an `isize`.
const MAX_SEGMENT: usize = isize::MAX as usize;

impl Layout {
    /// Total bytes of one segment.
    pub fn total_bytes(&self) -> usize {
        self.total
    }

    /// The CPU offset of the static area: the heap's bytes rounded up to a page.
    #[inline]
    pub fn static_offset(&self) -> usize {
        // Layout::new checked that the heap and static area fit: no overflow.
        self.total - self.heap_offset - self.static_bytes
    }

    /// One past the last CPU offset a PE has: the end of the static area, or of the
    /// heap when there is none.
    #[inline]
    pub fn cpu_bytes(&self) -> usize {
        if self.static_bytes == 0 {
            self.heap_bytes
        } else {
            self.total - self.heap_offset
        }
    }

    /// Computes the layout for `n_pes` PEs, rings of `ring_bytes`, a heap of
    /// `heap_bytes` and a static area of `static_bytes` (a page multiple). Every size
    /// is checked: a shape whose segment does not fit in the address arithmetic is
    /// [`Error::BadConfig`] naming the variable that sets the size
    /// (`SHMEMPLUS_AM_RING` for the rings, `SHMEM_SYMMETRIC_SIZE` for the heap and the
    /// program's data after it).
    pub fn new(
        n_pes: usize,
        ring_bytes: usize,
        heap_bytes: usize,
        static_bytes: usize,
    ) -> Result<Layout, Error> {
        if static_bytes % PAGE != 0 {
            return Err(Error::InvalidArgument(format!(
                "a static area of {static_bytes} bytes is not a multiple of {PAGE}"
            )));
        }
        let too_large = |var: &'static str, why: String| {
            Error::BadConfig {
            var,
            why: format!(
                "{why} do not fit in one segment (at most {MAX_SEGMENT} bytes); ask for less, e.g. 512M"
            ),
        }
        };
        let control_offset = PAGE;
        // Constant sizes: cannot overflow, checked all the same.
        let rings_offset = (control_offset.checked_add(size_of::<Control>()))
            .and_then(|end| round_up(end, PAGE))
            .ok_or_else(|| Error::InvalidArgument("control block size overflows".into()))?;
        let ring_stride = size_of::<RingHeader>()
            .checked_add(ring_bytes)
            .and_then(|r| round_up(r, PAGE))
            .ok_or_else(|| {
                too_large(
                    "SHMEMPLUS_AM_RING",
                    format!("a ring of {ring_bytes} bytes and its header"),
                )
            })?;
        let heap_offset = n_pes
            .checked_mul(2)
            .and_then(|rings| rings.checked_mul(ring_stride))
            .and_then(|r| r.checked_add(rings_offset))
            .and_then(|o| round_up(o, PAGE))
            .filter(|&o| o <= MAX_SEGMENT)
            .ok_or_else(|| {
                too_large(
                    "SHMEMPLUS_AM_RING",
                    format!("2 x {n_pes} rings of {ring_bytes} bytes (for {n_pes} PEs)"),
                )
            })?;
        let total = round_up(heap_bytes, PAGE)
            .and_then(|h| h.checked_add(static_bytes))
            .and_then(|h| heap_offset.checked_add(h))
            .filter(|&t| t <= MAX_SEGMENT)
            .ok_or_else(|| {
                too_large(
                    "SHMEM_SYMMETRIC_SIZE",
                    format!("a heap of {heap_bytes} bytes, {static_bytes} bytes of program data and {heap_offset} bytes of control block and rings"),
                )
            })?;
        Ok(Layout {
            n_pes,
            ring_bytes,
            heap_bytes,
            static_bytes,
            control_offset,
            rings_offset,
            ring_stride,
            heap_offset,
            total,
        })
    }
}

/// A mapped segment: this PE's own or a peer's.
pub struct Segment {
    base: NonNull<u8>,
    layout: Layout,
    /// The POSIX shm name while it exists (owner side, until unlinked).
    name: Option<String>,
    owner: bool,
    /// The shared-memory object (own segment only), to map its static area over the
    /// program's data.
    fd: Option<OwnedFd>,
}

// SAFETY: a Segment is a mapping of shared memory. All access to it goes through raw
// pointers or through atomics (control structures); the mapping itself lives until
// Drop, so sharing the handle between threads is sound.
unsafe impl Send for Segment {}
// SAFETY: as above; no method hands out `&mut` to mapped memory.
unsafe impl Sync for Segment {}

/// Alignment of the first byte of every CPU heap in this process's address space: an
/// object allocated at a heap offset aligned to `a <= HEAP_ALIGN` has an address
/// aligned to `a` too (`shmem_align`, `Shmem::alloc_aligned`). 2 MiB is also the huge
/// page size.
pub const HEAP_ALIGN: usize = 2 << 20;

/// Maps `len` bytes of `fd` (or anonymous memory) shared and read-write, at an
/// address where byte `heap_offset` of the mapping is [`HEAP_ALIGN`]-aligned.
fn map_shared(
    fd: Option<std::os::fd::BorrowedFd<'_>>,
    len: usize,
    heap_offset: usize,
) -> Result<NonNull<u8>, Error> {
    use rustix::mm::{MapFlags, ProtFlags};
    let prot = ProtFlags::READ | ProtFlags::WRITE;
    let failed = |e: std::io::Error| {
        Error::os(
            format!(
                "mapping {len} bytes of shared memory (a segment holds SHMEM_SYMMETRIC_SIZE bytes \
                 of heap and 2 rings of SHMEMPLUS_AM_RING bytes per PE: lower them)"
            ),
            e,
        )
    };
    let reserve = len
        .checked_add(HEAP_ALIGN)
        .ok_or_else(|| failed(std::io::Error::other("size overflows the address space")))?;
    // SAFETY: a fresh private reservation with no access at an address of the
    // kernel's choosing: it overlaps nothing, and nothing refers to it yet.
    let start = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            reserve,
            ProtFlags::empty(),
            MapFlags::PRIVATE | MapFlags::NORESERVE,
        )
    }
    .map_err(|e| failed(e.into()))? as usize;
    // The first address at or after `start` whose byte `heap_offset` is aligned: less
    // than HEAP_ALIGN past `start`, so `base..base + len` lies inside the reservation.
    // `heap_offset` is below `len`, so none of this overflows (`start + reserve` is an
    // address the kernel handed out).
    let base = (start + heap_offset).next_multiple_of(HEAP_ALIGN) - heap_offset;
    // SAFETY: `base..base + len` lies inside the reservation made above, which no
    // other code knows of; MAP_FIXED replaces exactly those pages of it. The mapping
    // is unmapped only in Segment::drop.
    let mapped = unsafe {
        let at = base as *mut std::ffi::c_void;
        let fixed = MapFlags::SHARED | MapFlags::FIXED;
        match fd {
            Some(fd) => rustix::mm::mmap(at, len, prot, fixed, fd, 0),
            None => rustix::mm::mmap_anonymous(at, len, prot, fixed),
        }
    };
    let release = |from: usize, to: usize| {
        if to > from {
            // SAFETY: the slack before and after the segment belongs to the
            // reservation, which nothing else uses.
            let _ = unsafe { rustix::mm::munmap(from as *mut std::ffi::c_void, to - from) };
        }
    };
    match mapped {
        Ok(_) => {
            release(start, base);
            release(base + len, start + reserve);
        }
        Err(e) => {
            release(start, start + reserve);
            return Err(failed(e.into()));
        }
    }
    NonNull::new(base as *mut u8)
        .ok_or_else(|| Error::os("mmap", std::io::Error::other("null mapping")))
}

impl Segment {
    /// Creates this PE's segment as POSIX shared memory `/name` (mode 0600, must not
    /// exist yet) and maps it. An existing name is an error, never opened: whoever
    /// made it (another user, a stale job) would otherwise share this PE's memory.
    /// Name it with [`unique_name`].
    pub fn create(name: &str, pe: u32, layout: Layout) -> Result<Segment, Error> {
        use rustix::fs::Mode;
        use rustix::shm::OFlags;
        let cname = shm_path(name)?;
        // O_EXCL: fails on any existing entry, a symlink included (never followed).
        let fd = rustix::shm::open(
            cname.as_c_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(|e| {
            let what = if e == rustix::io::Errno::EXIST {
                format!(
                    "creating shared memory /dev/shm/{name}: the name already exists and was \
                     made by another process; a PE only maps a segment it created itself"
                )
            } else {
                format!("creating shared memory /dev/shm/{name}")
            };
            Error::os(what, e)
        })?;
        let mut seg = Segment {
            base: NonNull::dangling(),
            layout,
            name: Some(name.to_string()),
            owner: true,
            fd: None,
        };
        // From here on `seg` unlinks the name if anything fails (Drop).
        let grow = rustix::fs::ftruncate(&fd, layout.total as u64);
        if let Err(e) = grow {
            return Err(Error::os(
                format!(
                    "sizing /dev/shm/{name} to {} bytes (is /dev/shm full? lower \
                     SHMEM_SYMMETRIC_SIZE or SHMEMPLUS_AM_RING)",
                    layout.total
                ),
                e,
            ));
        }
        seg.base = map_shared(Some(fd.as_fd()), layout.total, layout.heap_offset)?;
        seg.fd = Some(fd);
        seg.write_header(pe);
        Ok(seg)
    }

    /// Creates an anonymous segment (a one-PE job started without a launcher): a
    /// memory file with no name in `/dev/shm`, so that its static area can be mapped
    /// over the program's data like a named segment's.
    pub fn anonymous(pe: u32, layout: Layout) -> Result<Segment, Error> {
        use rustix::fs::MemfdFlags;
        let fd = rustix::fs::memfd_create(c"shmemplus-solo", MemfdFlags::CLOEXEC)
            .map_err(|e| Error::os("creating the one-PE job's segment (memfd_create)", e))?;
        rustix::fs::ftruncate(&fd, layout.total as u64).map_err(|e| {
            Error::os(
                format!(
                    "sizing the one-PE job's segment to {} bytes (lower SHMEM_SYMMETRIC_SIZE)",
                    layout.total
                ),
                e,
            )
        })?;
        let base = map_shared(Some(fd.as_fd()), layout.total, layout.heap_offset)?;
        let seg = Segment {
            base,
            layout,
            name: None,
            owner: true,
            fd: Some(fd),
        };
        seg.write_header(pe);
        Ok(seg)
    }

    /// Maps a peer's segment by name and checks its header.
    pub fn open(name: &str, pe: u32, layout: Layout) -> Result<Segment, Error> {
        use rustix::fs::Mode;
        use rustix::shm::OFlags;
        let cname = shm_path(name)?;
        let fd = rustix::shm::open(cname.as_c_str(), OFlags::RDWR, Mode::empty())
            .map_err(|e| Error::os(format!("opening PE {pe}'s segment /dev/shm/{name}"), e))?;
        let size = rustix::fs::fstat(&fd)
            .map_err(|e| Error::os(format!("fstat /dev/shm/{name}"), e))?
            .st_size;
        if size as u64 != layout.total as u64 {
            return Err(Error::Bootstrap(format!(
                "PE {pe}'s segment is {size} bytes, expected {}: PEs disagree on SHMEM_SYMMETRIC_SIZE or SHMEMPLUS_AM_RING",
                layout.total
            )));
        }
        let base = map_shared(Some(fd.as_fd()), layout.total, layout.heap_offset)?;
        let seg = Segment {
            base,
            layout,
            name: None,
            owner: false,
            fd: None,
        };
        // SAFETY: the mapping is at least a page long and page-aligned, and the header
        // is plain integers written once by the owner before it published the name.
        let hdr = unsafe { &*(seg.base.as_ptr() as *const SegmentHeader) };
        if hdr.magic != MAGIC || hdr.layout_version != LAYOUT_VERSION || hdr.pe != pe {
            return Err(Error::Bootstrap(format!(
                "/dev/shm/{name} is not PE {pe}'s segment of this library version"
            )));
        }
        Ok(seg)
    }

    fn write_header(&self, pe: u32) {
        // SAFETY: the segment is freshly created and not yet published to any other
        // process or thread; the header area is within the first page.
        unsafe {
            (self.base.as_ptr() as *mut SegmentHeader).write(SegmentHeader {
                magic: MAGIC,
                layout_version: LAYOUT_VERSION,
                pe,
                n_pes: self.layout.n_pes as u32,
                _pad: 0,
                heap_bytes: self.layout.heap_bytes as u64,
                ring_bytes: self.layout.ring_bytes as u64,
                static_bytes: self.layout.static_bytes as u64,
            })
        }
    }

    /// Removes the segment's name from `/dev/shm` (the mapping stays valid). Called by
    /// the owner once every PE has mapped it, so that nothing is left behind even if
    /// the job is killed later.
    pub fn unlink(&mut self) -> Result<(), Error> {
        if let Some(name) = self.name.take() {
            let cname = shm_path(&name)?;
            rustix::shm::unlink(cname.as_c_str())
                .map_err(|e| Error::os(format!("unlinking /dev/shm/{name}"), e))?;
        }
        Ok(())
    }

    /// The layout of this segment.
    #[inline]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The control block.
    pub fn control(&self) -> &Control {
        // SAFETY: the control block lies inside the mapping at a page-aligned offset,
        // all-zero bytes are a valid `Control` (atomics and integers only), and every
        // field has interior mutability, so shared references across threads and
        // processes are sound.
        unsafe { &*(self.base.as_ptr().add(self.layout.control_offset) as *const Control) }
    }

    /// The header and data pointer of ring `index` (see the module doc for indices).
    pub fn ring(&self, index: usize) -> (&RingHeader, *mut u8) {
        assert!(index < 2 * self.layout.n_pes, "ring index out of range");
        let off = self.layout.rings_offset + index * self.layout.ring_stride;
        // SAFETY: `off` is inside the mapping (Layout::new reserved 2n strides), page
        // aligned; RingHeader is atomics only, valid when zeroed. The data area starts
        // right after the header and is ring_bytes long, within the stride.
        unsafe {
            let p = self.base.as_ptr().add(off);
            (&*(p as *const RingHeader), p.add(size_of::<RingHeader>()))
        }
    }

    /// The first byte of the symmetric heap.
    #[inline]
    pub fn heap_base(&self) -> *mut u8 {
        // SAFETY: heap_offset < total by construction of the layout.
        unsafe { self.base.as_ptr().add(self.layout.heap_offset) }
    }

    /// Bytes of symmetric heap.
    #[inline]
    pub fn heap_bytes(&self) -> usize {
        self.layout.heap_bytes
    }

    /// One past the last CPU offset: `heap_base().add(offset)` is this segment's
    /// memory for every `offset` below it (heap, page rounding and static area).
    #[inline]
    pub fn cpu_bytes(&self) -> usize {
        self.layout.cpu_bytes()
    }

    /// The static area of this PE's own segment: its first byte in this mapping, the
    /// shared-memory object and the area's offset in it (to map it a second time),
    /// or `None` for a peer's segment.
    pub fn static_area(&self) -> Option<(*mut u8, BorrowedFd<'_>, u64)> {
        let fd = self.fd.as_ref()?.as_fd();
        let at = self.layout.heap_offset + self.layout.static_offset();
        // SAFETY: heap_offset + static_offset <= total (Layout::new), inside the mapping.
        Some((unsafe { self.base.as_ptr().add(at) }, fd, at as u64))
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        if self.owner {
            let _ = self.unlink();
        }
        if self.base != NonNull::dangling() {
            // SAFETY: base/total describe the mapping made in `map_shared`; after this
            // no pointer derived from it is used (the Segment is being dropped and the
            // library drops all users of a segment before it). The second mapping of
            // the static area, over the program's data, is a separate mapping and
            // stays: the program keeps using its globals after finalize.
            let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.layout.total) };
        }
    }
}

/// Every segment of the job as this PE sees it: its own and every peer's mapping.
pub struct JobSegments {
    /// This PE.
    pub me: usize,
    /// Segment of PE `p` at index `p` when it is mapped here: every PE of this host
    /// (this PE's own included). `None` for a PE on another host, which only the
    /// conduit between hosts reaches.
    segs: Vec<Option<Segment>>,
    /// Whether some PE is on another host.
    spans_hosts: bool,
    /// The program's data now backed by this PE's static area, if `init_with` asked
    /// for symmetric data.
    pub statics: Option<crate::statics::StaticRegion>,
}

impl JobSegments {
    /// The segments of a job, seen from PE `me`: `segs[p]` is PE `p`'s segment when it
    /// is mapped here. This PE's own must be.
    pub fn new(
        me: usize,
        segs: Vec<Option<Segment>>,
        statics: Option<crate::statics::StaticRegion>,
    ) -> Result<JobSegments, Error> {
        if segs.get(me).is_none_or(Option::is_none) {
            return Err(Error::Bootstrap(format!(
                "PE {me} has no segment of its own among {} PEs",
                segs.len()
            )));
        }
        let spans_hosts = segs.iter().any(Option::is_none);
        Ok(JobSegments {
            me,
            segs,
            spans_hosts,
            statics,
        })
    }

    /// Number of PEs.
    pub fn n(&self) -> usize {
        self.segs.len()
    }

    /// This PE's own segment.
    #[inline]
    pub fn mine(&self) -> &Segment {
        match &self.segs[self.me] {
            Some(seg) => seg,
            // `new` refuses a job without this PE's own segment.
            None => unreachable!("a PE always maps its own segment"),
        }
    }

    /// PE `pe`'s segment, if it is mapped here (it is on this host).
    #[inline]
    pub fn peer(&self, pe: usize) -> Option<&Segment> {
        self.segs.get(pe).and_then(Option::as_ref)
    }

    /// PE `pe`'s segment, which the caller knows is mapped here (a PE of this host:
    /// its route is `Mapped`, or it is this PE's node leader).
    #[inline]
    pub fn seg(&self, pe: usize) -> &Segment {
        match &self.segs[pe] {
            Some(seg) => seg,
            None => unreachable!("PE {pe} is on another host: its segment is not mapped"),
        }
    }

    /// Whether some PE of the job is on another host (reached only through the
    /// conduit between hosts).
    #[inline]
    pub fn spans_hosts(&self) -> bool {
        self.spans_hosts
    }
}

/// Random bytes in a segment name: 128 bits, beyond guessing.
const NAME_RANDOM_BYTES: usize = 16;

/// A fresh name for PE `pe`'s segment in job `job_id`:
/// `shmemplus-<job id>-pe<pe>-<32 random hex digits>`.
///
/// The job id is not secret (the launcher's abstract socket `@shmemplus-<job id>` is
/// listed in `/proc/net/unix` for every local user), so a name made of it alone could
/// be created first by someone else. The random part cannot be guessed, and
/// [`Segment::create`] refuses a name that exists anyway; the PEs learn each other's
/// names through the authenticated bootstrap. The name keeps the job's prefix
/// (`launch::shm_prefix`), so the launcher's sweep still finds it.
pub fn unique_name(job_id: &str, pe: u32) -> Result<String, Error> {
    let mut random = [0u8; NAME_RANDOM_BYTES];
    getrandom::fill(&mut random).map_err(|e| {
        Error::os(
            "reading random bytes for a shared-memory name",
            std::io::Error::other(e.to_string()),
        )
    })?;
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{}pe{pe}-{hex}", crate::launch::shm_prefix(job_id)))
}

fn shm_path(name: &str) -> Result<CString, Error> {
    if name.contains('/') || name.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "bad shared-memory name '{name}'"
        )));
    }
    CString::new(format!("/{name}"))
        .map_err(|_| Error::InvalidArgument(format!("bad shared-memory name '{name}'")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn layout_is_page_aligned_and_ordered() {
        let l = Layout::new(4, 64 << 10, 1 << 20, 0).unwrap();
        assert_eq!(l.rings_offset % PAGE, 0);
        assert_eq!(l.heap_offset % PAGE, 0);
        assert!(l.heap_offset >= l.rings_offset + 8 * l.ring_stride);
        assert_eq!(l.total, l.heap_offset + (1 << 20));
    }

    #[test]
    fn static_area_follows_the_heap_at_a_page() {
        let page_heap = Layout::new(2, 4096, 1 << 20, 3 * PAGE).unwrap();
        assert_eq!(page_heap.static_offset(), 1 << 20);
        assert_eq!(page_heap.cpu_bytes(), (1 << 20) + 3 * PAGE);
        assert_eq!(
            page_heap.total_bytes(),
            page_heap.heap_offset + (1 << 20) + 3 * PAGE
        );
        // A heap that is not a page multiple: the area starts at the next page.
        let odd = Layout::new(2, 4096, 5000, PAGE).unwrap();
        assert_eq!(odd.static_offset(), 2 * PAGE);
        assert_eq!(odd.cpu_bytes(), 3 * PAGE);
        assert_eq!((odd.heap_offset + odd.static_offset()) % PAGE, 0);
        // Without one, CPU offsets end with the heap, exactly.
        let none = Layout::new(2, 4096, 5000, 0).unwrap();
        assert_eq!(none.cpu_bytes(), 5000);
        assert_eq!(none.total_bytes(), none.heap_offset + 2 * PAGE);
        assert!(Layout::new(2, 4096, 4096, PAGE + 1).is_err());
        // The static area counts toward the segment's size limit.
        let offset = Layout::new(2, 4096, 4096, 0).unwrap().heap_offset;
        let room = (MAX_SEGMENT - offset) / PAGE * PAGE;
        assert!(Layout::new(2, 4096, room - PAGE, PAGE).is_ok());
        assert!(Layout::new(2, 4096, room - PAGE, 2 * PAGE).is_err());
    }

    #[test]
    fn anonymous_segment_is_a_memory_file_with_a_static_area() {
        let layout = Layout::new(1, 4096, 8192, 2 * PAGE).unwrap();
        let seg = Segment::anonymous(0, layout).unwrap();
        let (area, fd, at) = seg.static_area().expect("own segment has an area");
        assert_eq!(at as usize % PAGE, 0);
        // SAFETY: test-only; the area lies inside the mapping (2 pages) and is unused.
        unsafe { area.add(PAGE + 8).write(9) };
        // The area is where CPU offset static_offset() + PAGE + 8 is.
        // SAFETY: as above.
        assert_eq!(unsafe { seg.heap_base().add(8192 + PAGE + 8).read() }, 9);
        // And it is the memory file's bytes at the area's offset.
        let mut byte = [0u8];
        rustix::io::pread(fd, &mut byte, at + PAGE as u64 + 8).unwrap();
        assert_eq!(byte[0], 9);
    }

    #[test]
    fn oversized_layouts_are_refused_naming_the_variable() {
        let var_of = |e: Error| match e {
            Error::BadConfig { var, why } => {
                assert!(why.contains("do not fit in one segment"), "{why}");
                var
            }
            other => panic!("expected BadConfig, got {other}"),
        };
        // Sizes whose page rounding, or sum with the rings, overflows or passes isize.
        for heap in [
            usize::MAX,
            usize::MAX - 4095,
            usize::MAX - (1 << 40) + 1,
            isize::MAX as usize,
            isize::MAX as usize - 4095,
        ] {
            let e = Layout::new(2, 256 << 10, heap, 0).unwrap_err();
            assert_eq!(var_of(e), "SHMEM_SYMMETRIC_SIZE", "heap {heap}");
        }
        let e = Layout::new(2, usize::MAX - 100, 4096, 0).unwrap_err();
        assert_eq!(var_of(e), "SHMEMPLUS_AM_RING");
        let e = Layout::new(usize::MAX / 4, 64 << 20, 4096, 0).unwrap_err();
        assert_eq!(var_of(e), "SHMEMPLUS_AM_RING");
        // The largest heap that fits is accepted with an exact total; a byte more is not.
        let offset = Layout::new(2, 4096, 4096, 0).unwrap().heap_offset;
        let largest = (MAX_SEGMENT - offset) / PAGE * PAGE;
        let l = Layout::new(2, 4096, largest, 0).unwrap();
        assert_eq!(l.total_bytes(), offset + largest);
        assert!(l.total_bytes() <= MAX_SEGMENT);
        assert!(Layout::new(2, 4096, largest + 1, 0).is_err());
    }

    #[test]
    fn named_segment_is_shared_and_unlinked() {
        let name = format!("shmemplus-unittest-{}", std::process::id());
        let layout = Layout::new(2, 4096, 8192, 0).unwrap();
        let mut a = Segment::create(&name, 1, layout).unwrap();
        assert!(std::path::Path::new(&format!("/dev/shm/{name}")).exists());
        let b = Segment::open(&name, 1, layout).unwrap();
        // SAFETY: test-only; both mappings alias the same page, nothing else uses it.
        unsafe { a.heap_base().write(42) };
        // SAFETY: as above.
        assert_eq!(unsafe { b.heap_base().read() }, 42);
        a.control().teams[3].arrivals.store(7, Ordering::Release);
        assert_eq!(b.control().teams[3].arrivals.load(Ordering::Acquire), 7);
        assert!(
            Segment::open(&name, 0, layout).is_err(),
            "wrong PE must be refused"
        );
        a.unlink().unwrap();
        assert!(!std::path::Path::new(&format!("/dev/shm/{name}")).exists());
        // The mapping outlives the name.
        // SAFETY: as above.
        assert_eq!(unsafe { b.heap_base().read() }, 42);
    }

    #[test]
    fn existing_name_is_refused() {
        let name = format!("shmemplus-unittest-dup-{}", std::process::id());
        let layout = Layout::new(1, 4096, 4096, 0).unwrap();
        let _a = Segment::create(&name, 0, layout).unwrap();
        assert!(Segment::create(&name, 0, layout).is_err());
    }

    #[test]
    fn pre_created_name_is_an_error_and_left_alone() {
        let layout = Layout::new(1, 4096, 4096, 0).unwrap();
        // Someone else made the name first: a file with their bytes.
        let name = format!("shmemplus-unittest-bait-{}", std::process::id());
        let path = format!("/dev/shm/{name}");
        std::fs::write(&path, b"bait").unwrap();
        let err = Segment::create(&name, 0, layout).err().expect("must fail");
        let msg = err.to_string();
        assert!(
            msg.contains(&path) && msg.contains("already exists"),
            "unclear error: {msg}"
        );
        // Not opened, not truncated, not unlinked.
        assert_eq!(std::fs::read(&path).unwrap(), b"bait");
        std::fs::remove_file(&path).unwrap();
        // A symlink at the name is not followed either.
        let target =
            std::env::temp_dir().join(format!("shmemplus-unittest-target-{}", std::process::id()));
        std::fs::write(&target, b"target").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(Segment::create(&name, 0, layout).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"target");
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&target).unwrap();
    }

    #[test]
    fn names_carry_the_job_prefix_and_128_random_bits() {
        let a = unique_name("ab12", 3).unwrap();
        let b = unique_name("ab12", 3).unwrap();
        assert_ne!(a, b);
        for n in [&a, &b] {
            let random = n
                .strip_prefix(&format!("{}pe3-", crate::launch::shm_prefix("ab12")))
                .unwrap_or_else(|| panic!("{n} lacks the job prefix"));
            // 32 hex digits: 128 random bits (at least 64 are needed).
            assert_eq!(random.len(), 32, "{n}");
            assert!(random.bytes().all(|c| c.is_ascii_hexdigit()), "{n}");
        }
        assert!(shm_path(&a).is_ok());
    }
}
