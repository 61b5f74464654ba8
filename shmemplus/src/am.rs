//! The active-message layer: fixed binary headers plus raw payloads carried by
//! single-producer/single-consumer rings in shared memory, a table of handlers, the
//! per-PE progress thread that serves requests, and the pending-operation table that
//! replies complete.
//!
//! Rings: for every ordered pair (s, d) there is a *request* ring s -> d and a *reply*
//! ring s -> d, both in d's segment (the consumer's). Requests are served by d's
//! progress thread; replies are drained by whichever thread of d holds the reply pump
//! (a thread waiting for a completion or for ring space, or the progress thread while
//! it is awake anyway). Every wait in the library drains replies. Handlers never
//! send requests, only replies, and every thread that waits for ring space keeps
//! draining replies, so two PEs replying to each other cannot deadlock. Records on a
//! ring are served in order, so AMs from one PE to another are delivered in order.
//!
//! This module owns the transport of AMs and the built-in handlers for RMA on the CPU
//! heap (put, get, flush) and echo, and the validation of every record it reads. It
//! must not decide *which* conduit a transfer uses (the RMA calls of `shmem` do) nor
//! wait by itself in ways other than `sync::WaitPolicy`.

use crate::error::Error;
use crate::segment::{JobSegments, RingHeader};
use crate::sync::{notify, Poll, WaitPolicy};
use bytemuck::{Pod, Zeroable};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

/// Record flag: padding to the end of the ring; skip it.
const F_PAD: u16 = 1;
/// Record flag: a reply (carries the request's token).
const F_REPLY: u16 = 2;
/// Record flag: the reply reports an error; the payload is its message.
const F_ERROR: u16 = 4;
/// Record flag: last record of a reply.
const F_LAST: u16 = 8;

/// Built-in handler: write the payload at heap offset `args[0]`.
pub const H_PUT: u16 = 1;
/// Built-in handler: reply with `args[1]` bytes from heap offset `args[0]`.
pub const H_GET: u16 = 2;
/// Built-in handler: reply once every earlier request from the sender is applied;
/// the reply is an error if one of those puts failed.
pub const H_FLUSH: u16 = 3;
/// Built-in handler: reply with the request's payload (AM round-trip measurements).
pub const H_ECHO: u16 = 4;
/// Built-in handler (module `fpga`): DMA-write the payload to board `args[1]` at
/// offset `args[0]` of this PE's partition.
pub const H_FPGA_PUT: u16 = 5;
/// Built-in handler (module `fpga`): reply with `args[1]` bytes DMA-read from board
/// `args[2]` at offset `args[0]`.
pub const H_FPGA_GET: u16 = 6;
/// Built-in handler (module `atomic`): apply an atomic operation to a word of this
/// PE's CPU heap or boards; arguments in `atomic::am_args`.
pub const H_ATOMIC: u16 = 7;
/// First handler id of user handlers; user id `u` is table slot `USER_BASE + u`.
pub const USER_BASE: u16 = 16;
/// Number of user handler ids (`0..USER_HANDLERS`).
pub const USER_HANDLERS: u16 = 64;

/// The fixed binary header of every AM record (64 bytes, little-endian host layout:
/// the rings never leave the host).
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable, PartialEq, Eq)]
pub struct AmHeader {
    /// Bytes of this record in the ring: header + payload, rounded up to 8.
    pub len: u32,
    /// `F_*` flags.
    pub flags: u16,
    /// Handler id (table slot).
    pub handler: u16,
    /// The sending PE.
    pub src_pe: u32,
    /// Bytes of payload after the header.
    pub payload_len: u32,
    /// Matches replies to their request; 0 = no reply wanted.
    pub token: u64,
    /// Handler arguments (offsets, lengths).
    pub args: [u64; 4],
    _reserved: u64,
}

const HDR: usize = size_of::<AmHeader>();

impl AmHeader {
    /// A request header for `handler` with `args`.
    pub fn request(handler: u16, token: u64, args: [u64; 4]) -> AmHeader {
        AmHeader {
            handler,
            token,
            args,
            ..AmHeader::zeroed()
        }
    }
}

/// Flags a record may carry.
const KNOWN_FLAGS: u16 = F_PAD | F_REPLY | F_ERROR | F_LAST;

/// Why a record read from a ring cannot be trusted. The ring's producer is another
/// process, so every field is checked before it is used; a record that fails a check
/// means the ring is corrupt (or another program wrote into the job's memory), and the
/// consumer cannot find the next record: the PE ends the job with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRecord {
    /// The producer's and consumer's positions do not describe a ring of this size.
    #[error("ring positions are corrupt: head {head}, tail {tail}, capacity {cap}")]
    Positions {
        /// Bytes ever consumed.
        head: u64,
        /// Bytes ever produced.
        tail: u64,
        /// Ring capacity.
        cap: u64,
    },
    /// A record length that is zero, unaligned, past the published bytes or across
    /// the end of the ring.
    #[error("record at ring byte {at} has length {len} (published: {avail}, to the ring's end: {to_end})")]
    Length {
        /// Ring position of the record.
        at: u64,
        /// Its length field.
        len: u32,
        /// Bytes published after it.
        avail: u64,
        /// Bytes from it to the end of the ring.
        to_end: u64,
    },
    /// A payload length that does not match the record length.
    #[error(
        "record at ring byte {at} has payload length {payload_len} in a record of {len} bytes"
    )]
    PayloadLength {
        /// Ring position of the record.
        at: u64,
        /// Its payload length field.
        payload_len: u32,
        /// Its record length field.
        len: u32,
    },
    /// Flags outside the known set, or a request on a reply ring (or the reverse).
    #[error("record at ring byte {at} has flags {flags:#x}, which a {kind} ring does not carry")]
    Flags {
        /// Ring position of the record.
        at: u64,
        /// Its flags.
        flags: u16,
        /// "request" or "reply".
        kind: &'static str,
    },
    /// A sender field that is not the ring's producer.
    #[error("record at ring byte {at} claims sender PE {claimed} on PE {producer}'s ring")]
    Sender {
        /// Ring position of the record.
        at: u64,
        /// The sender field.
        claimed: u32,
        /// The PE that owns the producer side of the ring.
        producer: usize,
    },
    /// A handler id outside the handler table.
    #[error("record at ring byte {at} names handler {handler}, outside the table of {table}")]
    Handler {
        /// Ring position of the record.
        at: u64,
        /// The handler field.
        handler: u16,
        /// Size of the handler table.
        table: usize,
    },
}

/// What a consumer expects of the records on one ring.
#[derive(Debug, Clone, Copy)]
struct RingRole {
    /// The PE that produces into the ring.
    producer: usize,
    /// Replies (true) or requests (false).
    replies: bool,
    /// Size of the handler table (request handler ids must be below it).
    handlers: usize,
}

/// Checks a record header against the ring state it was read from: `pos` is its ring
/// position, `avail` the bytes published from it on (tail - head), `cap` the ring size.
/// Only the first 8 bytes (length and flags) of a pad record are meaningful.
fn check_record(
    h: &AmHeader,
    pos: u64,
    avail: u64,
    cap: u64,
    role: RingRole,
) -> Result<(), BadRecord> {
    let to_end = cap - pos;
    let len = u64::from(h.len);
    let bad_len = BadRecord::Length {
        at: pos,
        len: h.len,
        avail,
        to_end,
    };
    if len == 0 || len % 8 != 0 || len > avail || len > to_end {
        return Err(bad_len);
    }
    if h.flags & F_PAD != 0 {
        // A pad runs exactly to the end of the ring (the producer pads only there).
        return if len == to_end { Ok(()) } else { Err(bad_len) };
    }
    if len < HDR as u64 {
        return Err(bad_len);
    }
    let want = (HDR as u64 + u64::from(h.payload_len)).next_multiple_of(8);
    if want != len {
        return Err(BadRecord::PayloadLength {
            at: pos,
            payload_len: h.payload_len,
            len: h.len,
        });
    }
    let kind_bit = if role.replies { F_REPLY } else { 0 };
    let reply_only = F_ERROR | F_LAST;
    if h.flags & !KNOWN_FLAGS != 0
        || h.flags & F_REPLY != kind_bit
        || (!role.replies && h.flags & reply_only != 0)
    {
        return Err(BadRecord::Flags {
            at: pos,
            flags: h.flags,
            kind: if role.replies { "reply" } else { "request" },
        });
    }
    if h.src_pe as usize != role.producer {
        return Err(BadRecord::Sender {
            at: pos,
            claimed: h.src_pe,
            producer: role.producer,
        });
    }
    if !role.replies && usize::from(h.handler) >= role.handlers {
        return Err(BadRecord::Handler {
            at: pos,
            handler: h.handler,
            table: role.handlers,
        });
    }
    Ok(())
}

/// The bytes of a payload to send, by address: either a borrowed slice or memory that
/// another PE may write concurrently (the symmetric heap, served to a get), which must
/// not be viewed as a `&[u8]` (a shared reference promises no concurrent writes). The
/// only read is the raw copy into the ring.
#[derive(Clone, Copy)]
struct RawBytes {
    ptr: *const u8,
    len: usize,
}

impl RawBytes {
    fn of(bytes: &[u8]) -> RawBytes {
        RawBytes {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }

    /// The `len` bytes at `ptr`, from this PE's heap.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay mapped and readable while the value is used; its
    /// contents may change concurrently (readers copy them raw, never by reference).
    unsafe fn heap(ptr: *const u8, len: usize) -> RawBytes {
        RawBytes { ptr, len }
    }

    /// The `n` bytes from `start` on; the caller keeps `start + n <= len`.
    fn range(self, start: usize, n: usize) -> RawBytes {
        debug_assert!(start + n <= self.len);
        RawBytes {
            ptr: self.ptr.wrapping_add(start),
            len: n,
        }
    }
}

/// A view of one SPSC ring.
struct Ring<'a> {
    hdr: &'a RingHeader,
    data: *mut u8,
    cap: u64,
}

impl<'a> Ring<'a> {
    fn of(segs: &'a JobSegments, owner: usize, index: usize) -> Ring<'a> {
        let seg = &segs.segs[owner];
        let (hdr, data) = seg.ring(index);
        Ring {
            hdr,
            data,
            cap: seg.layout().ring_bytes as u64,
        }
    }

    fn is_empty(&self) -> bool {
        self.hdr.head.load(Ordering::Acquire) == self.hdr.tail.load(Ordering::Acquire)
    }

    /// Appends one record if there is room. Only the producer PE calls this, under its
    /// process-local producer lock for this ring. The caller keeps `payload` within
    /// `max_payload`, so a record fits a quarter of the ring.
    fn try_push(&self, mut h: AmHeader, payload: RawBytes) -> bool {
        let rec = (HDR + payload.len).next_multiple_of(8) as u64;
        debug_assert!(rec <= self.cap / 4);
        let mut tail = self.hdr.tail.load(Ordering::Relaxed);
        let head = self.hdr.head.load(Ordering::Acquire);
        let pos = tail % self.cap;
        let contiguous = self.cap - pos;
        if rec > contiguous {
            // Pad to the end of the ring, then place the record at its start.
            if tail + contiguous + rec - head > self.cap {
                return false;
            }
            let pad = AmHeader {
                len: contiguous as u32,
                flags: F_PAD,
                ..AmHeader::zeroed()
            };
            // SAFETY: bytes [pos, cap) are free (checked above) and owned by the
            // producer until the tail store below publishes them; contiguous >= 8 and
            // a pad record only needs its first 8 bytes (len, flags) to be read.
            unsafe { write_header_prefix(self.data.add(pos as usize), &pad, contiguous as usize) };
            tail += contiguous;
        } else if tail + rec - head > self.cap {
            return false;
        }
        let pos = (tail % self.cap) as usize;
        h.len = rec as u32;
        h.payload_len = payload.len as u32;
        // SAFETY: [pos, pos + rec) is free ring space owned by the producer (room was
        // checked against `head`, and the record does not wrap); the Release store of
        // the tail publishes it to the consumer. `payload` is readable for its length
        // (the contract of `RawBytes`) and lies outside the ring.
        unsafe {
            std::ptr::copy_nonoverlapping(bytemuck::bytes_of(&h).as_ptr(), self.data.add(pos), HDR);
            crate::copy::copy_bytes(payload.ptr, self.data.add(pos + HDR), payload.len);
        }
        self.hdr.tail.store(tail + rec, Ordering::Release);
        true
    }

    /// The oldest record, if any: its header and its payload in place, after every
    /// field was checked against the ring (`check_record`). Only the consumer calls
    /// this; the payload stays valid until `advance`.
    fn peek(&self, role: RingRole) -> Result<Option<(AmHeader, &[u8])>, BadRecord> {
        loop {
            let head = self.hdr.head.load(Ordering::Relaxed);
            let tail = self.hdr.tail.load(Ordering::Acquire);
            if head == tail {
                return Ok(None);
            }
            // The producer writes `tail`; it must be ahead of `head` by at most a ring.
            let avail = tail.wrapping_sub(head);
            if avail > self.cap || head % 8 != 0 || tail % 8 != 0 {
                return Err(BadRecord::Positions {
                    head,
                    tail,
                    cap: self.cap,
                });
            }
            let pos = head % self.cap;
            // SAFETY: pos < cap and at most `cap - pos` bytes are read, so the copy
            // stays in the ring's data area; [head, tail) was published by the
            // producer's Release store of the tail, which we loaded with Acquire, and
            // the producer does not touch these bytes until we advance the head.
            let h: AmHeader = unsafe {
                let mut h = AmHeader::zeroed();
                let n = (self.cap - pos).min(HDR as u64) as usize;
                std::ptr::copy_nonoverlapping(
                    self.data.add(pos as usize),
                    bytemuck::bytes_of_mut(&mut h).as_mut_ptr(),
                    n,
                );
                h
            };
            check_record(&h, pos, avail, self.cap, role)?;
            if h.flags & F_PAD != 0 {
                self.hdr
                    .head
                    .store(head + u64::from(h.len), Ordering::Release);
                continue;
            }
            // SAFETY: `check_record` proved HDR + payload_len <= len <= cap - pos, so
            // the payload lies inside the ring's data area and inside the published
            // record, which the producer leaves alone until `advance`.
            let payload = unsafe {
                std::slice::from_raw_parts(
                    self.data.add(pos as usize + HDR),
                    h.payload_len as usize,
                )
            };
            return Ok(Some((h, payload)));
        }
    }

    /// Releases the record returned by the last `peek`.
    fn advance(&self, h: &AmHeader) {
        let head = self.hdr.head.load(Ordering::Relaxed);
        self.hdr
            .head
            .store(head + u64::from(h.len), Ordering::Release);
    }
}

/// Writes the first `min(len, HDR)` bytes of `h` at `dst`.
///
/// # Safety
/// `dst..dst+min(len, HDR)` must be writable memory owned by the caller.
unsafe fn write_header_prefix(dst: *mut u8, h: &AmHeader, len: usize) {
    // SAFETY: forwarded to the caller.
    unsafe { std::ptr::copy_nonoverlapping(bytemuck::bytes_of(h).as_ptr(), dst, len.min(HDR)) }
}

/// An incoming request as a handler sees it.
pub struct Incoming<'a> {
    /// The sending PE.
    pub src: usize,
    /// Its header.
    pub header: AmHeader,
    /// Its payload, in the ring (valid during the handler only).
    pub payload: &'a [u8],
}

/// A table entry: runs on the progress thread of the target PE.
pub type Handler = Arc<dyn Fn(&AmEngine, Incoming<'_>) + Send + Sync>;

/// A user handler: gets the sender's PE and the payload, returns the reply payload or
/// an error message. Runs on the target's progress thread: it must not block on other
/// shmemplus operations.
pub type UserHandler = dyn Fn(u32, &[u8]) -> Result<Vec<u8>, String> + Send + Sync;

/// An operation waiting for its reply.
struct Pending {
    /// Where GET data lands (address, length), or none for replies kept in `data`.
    dst: Option<(usize, usize)>,
    data: Mutex<Vec<u8>>,
    error: Mutex<Option<String>>,
    done: AtomicBool,
}

/// Everything of the AM layer one PE owns.
pub struct AmEngine {
    segs: Arc<JobSegments>,
    policy: WaitPolicy,
    /// Producer locks: request ring me -> d, reply ring me -> d.
    request_locks: Vec<Mutex<()>>,
    reply_locks: Vec<Mutex<()>>,
    reply_pump: Mutex<()>,
    pending: Mutex<HashMap<u64, Arc<Pending>>>,
    next_token: AtomicU64,
    handlers: Vec<OnceLock<Handler>>,
    /// Per target: requests posted to it without a reply (puts, non-fetching atomics),
    /// counted under the ring's producer lock right after each push.
    posted: Vec<AtomicU64>,
    /// Per target: the highest `posted` count that a completed flush covered.
    flushed: Vec<AtomicU64>,
    /// Sum of `posted` (bumped after the per-target count) and the highest sum a
    /// completed `quiet` covered: equal means nothing to flush, read with two loads.
    posted_total: AtomicU64,
    covered_total: AtomicU64,
    /// Per source: puts from it that failed here since its last flush.
    failed_puts: Vec<Mutex<Option<String>>>,
    shutdown: AtomicBool,
}

impl AmEngine {
    /// Creates the engine with the built-in handlers registered.
    pub fn new(segs: Arc<JobSegments>, policy: WaitPolicy) -> AmEngine {
        let n = segs.n();
        let engine = AmEngine {
            segs,
            policy,
            request_locks: (0..n).map(|_| Mutex::new(())).collect(),
            reply_locks: (0..n).map(|_| Mutex::new(())).collect(),
            reply_pump: Mutex::new(()),
            pending: Mutex::new(HashMap::new()),
            next_token: AtomicU64::new(1),
            handlers: (0..(USER_BASE + USER_HANDLERS))
                .map(|_| OnceLock::new())
                .collect(),
            posted: (0..n).map(|_| AtomicU64::new(0)).collect(),
            flushed: (0..n).map(|_| AtomicU64::new(0)).collect(),
            posted_total: AtomicU64::new(0),
            covered_total: AtomicU64::new(0),
            failed_puts: (0..n).map(|_| Mutex::new(None)).collect(),
            shutdown: AtomicBool::new(false),
        };
        let builtins: [(u16, Handler); 4] = [
            (H_PUT, Arc::new(handle_put)),
            (H_GET, Arc::new(handle_get)),
            (H_FLUSH, Arc::new(handle_flush)),
            (H_ECHO, Arc::new(handle_echo)),
        ];
        for (id, h) in builtins {
            let _ = engine.handlers[id as usize].set(h);
        }
        engine
    }

    fn me(&self) -> usize {
        self.segs.me
    }

    fn n(&self) -> usize {
        self.segs.n()
    }

    /// Largest payload of one record: a quarter of a ring, so several are in flight.
    pub fn max_payload(&self) -> usize {
        self.segs.mine().layout().ring_bytes / 4 - HDR
    }

    /// Registers user handler `id` (`0..USER_HANDLERS`). Every PE should register the
    /// same handlers before any PE sends to them; a request for an unregistered id gets
    /// an error reply.
    pub fn register_user(&self, id: u16, f: Box<UserHandler>) -> Result<(), Error> {
        if id >= USER_HANDLERS {
            return Err(Error::InvalidArgument(format!(
                "active-message handler id {id} is out of range 0..{USER_HANDLERS}"
            )));
        }
        let h: Handler = Arc::new(move |engine: &AmEngine, m: Incoming<'_>| {
            // A panicking handler must not take the progress thread (and with it every
            // AM to this PE) down: it becomes an error reply.
            let call = std::panic::AssertUnwindSafe(|| f(m.src as u32, m.payload));
            let out = std::panic::catch_unwind(call)
                .unwrap_or_else(|_| Err(format!("active-message handler {id} panicked")));
            engine.reply_result(m.src, m.header.token, out);
        });
        self.handlers[(USER_BASE + id) as usize]
            .set(h)
            .map_err(|_| {
                Error::InvalidArgument(format!("active-message handler {id} is already registered"))
            })
    }

    /// Registers a built-in handler of another module (the boards' DMA handlers) in
    /// its reserved slot below `USER_BASE`.
    pub(crate) fn register_builtin(&self, id: u16, handler: Handler) {
        debug_assert!(id < USER_BASE && id > H_ECHO);
        if self.handlers[id as usize].set(handler).is_err() {
            tracing::warn!(id, "built-in active-message handler registered twice");
        }
    }

    /// Remembers that a put from `src` failed here; the sender's next flush reports it.
    pub(crate) fn record_put_failure(&self, src: usize, why: String) {
        crate::diag::warn(
            self.me(),
            format_args!("AM put refused (from PE {src}): {why}"),
        );
        *self.failed_puts[src]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(why);
    }

    /// Sends one record to `to` on the request or reply ring, waiting for room (and
    /// draining replies meanwhile). A request without a token is *posted*: it is
    /// counted in `posted[to]` before the ring lock is released. Returns `posted[to]`
    /// as it was right after this push, under the lock: every posted request counted
    /// there is ahead of this record in the ring.
    fn send(&self, to: usize, reply: bool, h: AmHeader, payload: &[u8]) -> u64 {
        self.send_raw(to, reply, h, RawBytes::of(payload))
    }

    /// `send` of a payload given by address (see `RawBytes`).
    fn send_raw(&self, to: usize, reply: bool, mut h: AmHeader, payload: RawBytes) -> u64 {
        // Every caller splits its data into pieces of at most `max_payload` (a quarter
        // ring); a larger record would never fit and its sender would wait forever.
        assert!(
            payload.len <= self.max_payload(),
            "active-message payload of {} bytes past the record limit",
            payload.len
        );
        let me = self.me();
        h.src_pe = me as u32;
        if reply {
            h.flags |= F_REPLY;
        }
        let (index, lock) = if reply {
            (self.n() + me, &self.reply_locks[to])
        } else {
            (me, &self.request_locks[to])
        };
        let ring = Ring::of(&self.segs, to, index);
        let posted = {
            let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
            if !ring.try_push(h, payload) {
                let space = &self.segs.mine().control().space_signal;
                // The push is the poll: it answers Ready exactly when it placed the
                // record, and the wait never polls again after that.
                self.policy.wait(space, || {
                    if ring.try_push(h, payload) {
                        Poll::Ready(())
                    } else if self.pump_replies() {
                        Poll::Progress
                    } else {
                        Poll::Idle
                    }
                });
            }
            if reply {
                0
            } else if h.token == 0 {
                let posted = self.posted[to].fetch_add(1, Ordering::AcqRel) + 1;
                self.posted_total.fetch_add(1, Ordering::AcqRel);
                posted
            } else {
                self.posted[to].load(Ordering::Acquire)
            }
        };
        // Requests wake the target's progress thread. Replies wake the target's user
        // threads: every thread that waits for a reply drains the reply rings itself,
        // so waking the progress thread for them would only add a third runnable
        // thread competing for the cores.
        let control = self.segs.segs[to].control();
        notify(if reply {
            &control.user_signal
        } else {
            &control.progress_signal
        });
        posted
    }

    fn new_pending(&self, dst: Option<(usize, usize)>) -> (u64, Arc<Pending>) {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let p = Arc::new(Pending {
            dst,
            data: Mutex::new(Vec::new()),
            error: Mutex::new(None),
            done: AtomicBool::new(false),
        });
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token, p.clone());
        (token, p)
    }

    /// Waits for a pending operation, then removes it and returns its reply payload.
    fn finish(&self, to: usize, token: u64, p: &Pending) -> Result<Vec<u8>, Error> {
        let signal = &self.segs.mine().control().user_signal;
        self.policy.wait_until(
            signal,
            || p.done.load(Ordering::Acquire),
            || self.pump_replies(),
        );
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&token);
        if let Some(why) = p.error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Err(Error::AmFailed { pe: to as u32, why });
        }
        Ok(std::mem::take(
            &mut *p.data.lock().unwrap_or_else(|e| e.into_inner()),
        ))
    }

    /// Sends a request to user handler `id` on PE `to` and waits for its reply.
    pub fn request(&self, to: usize, handler: u16, payload: &[u8]) -> Result<Vec<u8>, Error> {
        if payload.len() > self.max_payload() {
            return Err(Error::InvalidArgument(format!(
                "active-message payload of {} bytes exceeds the limit of {} (SHMEMPLUS_AM_RING / 4 - 64)",
                payload.len(),
                self.max_payload()
            )));
        }
        let (token, p) = self.new_pending(None);
        self.send(
            to,
            false,
            AmHeader::request(handler, token, [0; 4]),
            payload,
        );
        self.finish(to, token, &p)
    }

    /// Sends a request with `args` to built-in `handler` on PE `to` and waits for the
    /// reply payload.
    pub(crate) fn call(
        &self,
        to: usize,
        handler: u16,
        args: [u64; 4],
        payload: &[u8],
    ) -> Result<Vec<u8>, Error> {
        let (token, p) = self.new_pending(None);
        self.send(to, false, AmHeader::request(handler, token, args), payload);
        self.finish(to, token, &p)
    }

    /// Sends a request with `args` to built-in `handler` on PE `to` without waiting:
    /// like a put, it is completed (and its failure reported) by `quiet`.
    pub(crate) fn post(&self, to: usize, handler: u16, args: [u64; 4], payload: &[u8]) {
        self.send(to, false, AmHeader::request(handler, 0, args), payload);
    }

    /// Puts `src` at heap offset `offset` of PE `to` through AMs. Returns when `src`
    /// may be reused; completion at the target is `quiet`'s business.
    pub fn put(&self, to: usize, offset: usize, src: &[u8]) {
        self.put_via(to, H_PUT, 0, offset, src)
    }

    /// Puts `src` through AMs to `handler` on PE `to`, split into records whose
    /// arguments are `[offset of the piece, place]`. The handler owns the meaning of
    /// `place` (the board for the FPGA handlers). Completion is `quiet`'s business.
    pub fn put_via(&self, to: usize, handler: u16, place: u64, offset: usize, src: &[u8]) {
        let chunk = self.max_payload();
        for (i, piece) in src.chunks(chunk).enumerate() {
            let h = AmHeader::request(handler, 0, [(offset + i * chunk) as u64, place, 0, 0]);
            self.send(to, false, h, piece);
        }
    }

    /// Gets `dst.len()` bytes from heap offset `offset` of PE `to` through AMs.
    pub fn get(&self, to: usize, offset: usize, dst: &mut [u8]) -> Result<(), Error> {
        self.get_via(to, H_GET, 0, offset, dst)
    }

    /// Gets `dst.len()` bytes through AMs from `handler` on PE `to`; the request's
    /// arguments are `[offset, length, place]`.
    pub fn get_via(
        &self,
        to: usize,
        handler: u16,
        place: u64,
        offset: usize,
        dst: &mut [u8],
    ) -> Result<(), Error> {
        let (token, p) = self.new_pending(Some((dst.as_mut_ptr() as usize, dst.len())));
        let h = AmHeader::request(handler, token, [offset as u64, dst.len() as u64, place, 0]);
        self.send(to, false, h, &[]);
        // `dst` stays borrowed (and untouched by us) until `finish` has seen the last
        // reply, so the pump's writes into it cannot race with the caller.
        self.finish(to, token, &p).map(|_| ())
    }

    /// Completes every request this PE posted before the call (puts, non-fetching
    /// atomics): flushes each target with posts not yet covered and waits for the
    /// acknowledgements. Safe to call from several threads at once.
    ///
    /// Why it is correct with several threads: a post is counted in `posted[to]` under
    /// the request ring's lock right after its push, and a flush reads `posted[to]`
    /// under the same lock right after its own push (`send`'s return value, `covers`).
    /// Rings are FIFO and served in order, so the flush's reply proves every post
    /// counted in `covers` has been applied; only then is `flushed[to]` raised to
    /// `covers`. A caller's own posts were counted before it read `posted[to]` here,
    /// so it skips a target only if a *completed* flush already covered them; it never
    /// returns on the strength of another thread's flush still in flight. The totals
    /// give the same argument for the whole PE: `posted_total` is bumped after the
    /// per-target count, so reading it first and the targets after sees every post it
    /// counts. A failed put is reported by the flush that collects it, which may be
    /// another thread's `quiet` of the same PE.
    pub fn quiet(&self) -> Result<(), Error> {
        // Every quiet passes here, most with nothing to flush: two plain loads.
        let total = self.posted_total.load(Ordering::Acquire);
        if self.covered_total.load(Ordering::Acquire) >= total {
            return Ok(());
        }
        let mut waits = Vec::new();
        for to in 0..self.n() {
            let posted = self.posted[to].load(Ordering::Acquire);
            if self.flushed[to].load(Ordering::Acquire) >= posted {
                continue;
            }
            let (token, p) = self.new_pending(None);
            let covers = self.send(to, false, AmHeader::request(H_FLUSH, token, [0; 4]), &[]);
            waits.push((to, token, p, covers));
        }
        let mut first_err = None;
        for (to, token, p, covers) in waits {
            let outcome = self.finish(to, token, &p);
            // Applied (or failed and now reported): either way these posts are done.
            self.flushed[to].fetch_max(covers, Ordering::AcqRel);
            if let Err(e) = outcome {
                first_err.get_or_insert(e);
            }
        }
        self.covered_total.fetch_max(total, Ordering::AcqRel);
        first_err.map_or(Ok(()), Err)
    }

    /// Sends a reply to a request (possibly in several records), or nothing if the
    /// request wanted none.
    pub(crate) fn reply_result(&self, to: usize, token: u64, out: Result<Vec<u8>, String>) {
        if token == 0 {
            return;
        }
        match out {
            Ok(data) => self.reply_data(to, token, &data),
            Err(why) => self.reply_error(to, token, &why),
        }
    }

    pub(crate) fn reply_data(&self, to: usize, token: u64, data: &[u8]) {
        self.reply_raw(to, token, RawBytes::of(data))
    }

    /// Replies with `data` in records of at most `max_payload` bytes.
    fn reply_raw(&self, to: usize, token: u64, data: RawBytes) {
        let chunk = self.max_payload();
        let mut off = 0;
        loop {
            let end = (off + chunk).min(data.len);
            let mut h = AmHeader::request(0, token, [off as u64, data.len as u64, 0, 0]);
            if end == data.len {
                h.flags |= F_LAST;
            }
            self.send_raw(to, true, h, data.range(off, end - off));
            if end == data.len {
                return;
            }
            off = end;
        }
    }

    /// Replies with `total` bytes produced piece by piece: `fill(offset, buf)` fills
    /// `buf` with the bytes at `offset` (a board read, say), one record at a time, so a
    /// large reply never needs a buffer of its full size. An error from `fill` before
    /// the first record becomes an error reply; after it, the reply is cut short with an
    /// error record (the requester reports it).
    pub(crate) fn reply_with(
        &self,
        to: usize,
        token: u64,
        total: usize,
        mut fill: impl FnMut(usize, &mut [u8]) -> Result<(), String>,
    ) {
        let mut buf = vec![0u8; self.max_payload().min(total)];
        let mut off = 0;
        loop {
            let n = buf.len().min(total - off);
            if let Err(why) = fill(off, &mut buf[..n]) {
                return self.reply_error(to, token, &why);
            }
            let mut h = AmHeader::request(0, token, [off as u64, total as u64, 0, 0]);
            if off + n == total {
                h.flags |= F_LAST;
            }
            self.send(to, true, h, &buf[..n]);
            off += n;
            if off == total {
                return;
            }
        }
    }

    pub(crate) fn reply_error(&self, to: usize, token: u64, why: &str) {
        let mut h = AmHeader::request(0, token, [0; 4]);
        h.flags |= F_ERROR | F_LAST;
        let msg = &why.as_bytes()[..why.len().min(self.max_payload())];
        self.send(to, true, h, msg);
    }

    /// Drains every reply ring of this PE, completing pending operations. Returns
    /// whether there was reply work: records drained here, or records waiting while
    /// another thread holds the pump.
    ///
    /// Only one thread pumps at a time. A waiter that finds the pump taken must not
    /// sleep while a reply sits in a ring: the holder may have scanned that ring before
    /// the record landed, and the replier's notify may have come before the waiter
    /// registered as a sleeper, so nobody would wake it for a whole sleep slice. Hence
    /// the answer `true` when records are waiting: the waiter keeps polling, and takes
    /// the pump itself as soon as the holder lets go.
    pub fn pump_replies(&self) -> bool {
        let Ok(_g) = self.reply_pump.try_lock() else {
            return self.has_replies();
        };
        let (me, n) = (self.me(), self.n());
        let mut did = false;
        let mut completed = false;
        for src in 0..n {
            let ring = Ring::of(&self.segs, me, n + src);
            let role = self.role(src, true);
            while let Some((h, payload)) = ring.peek(role).unwrap_or_else(|e| self.corrupt(role, e))
            {
                completed |= self.complete(&h, payload);
                ring.advance(&h);
                notify(&self.segs.segs[src].control().space_signal);
                did = true;
            }
        }
        if completed {
            notify(&self.segs.mine().control().user_signal);
        }
        did
    }

    /// Applies one reply record; returns whether it completed its operation.
    fn complete(&self, h: &AmHeader, payload: &[u8]) -> bool {
        let p = {
            let table = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            match table.get(&h.token) {
                Some(p) => p.clone(),
                None => {
                    tracing::warn!(token = h.token, "reply for an unknown operation dropped");
                    return false;
                }
            }
        };
        if h.flags & F_ERROR != 0 {
            *p.error.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(String::from_utf8_lossy(payload).into_owned());
        } else {
            let at = h.args[0] as usize;
            match p.dst {
                Some((addr, len)) => {
                    if at.checked_add(payload.len()).is_some_and(|end| end <= len) {
                        // SAFETY: `addr..addr+len` is the caller's `&mut [u8]` in
                        // `get`, kept borrowed and untouched until `done` is set below;
                        // the range was bounds-checked just above.
                        unsafe {
                            crate::copy::copy_bytes(
                                payload.as_ptr(),
                                (addr as *mut u8).add(at),
                                payload.len(),
                            )
                        }
                    } else {
                        *p.error.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some("reply larger than the destination".into());
                    }
                }
                None => p
                    .data
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(payload),
            }
        }
        if h.flags & F_LAST != 0 {
            p.done.store(true, Ordering::Release);
            return true;
        }
        false
    }

    /// Serves every request waiting in this PE's request rings. Returns whether any
    /// was served.
    fn serve_requests(&self) -> bool {
        let (me, n) = (self.me(), self.n());
        let mut did = false;
        for src in 0..n {
            let ring = Ring::of(&self.segs, me, src);
            let role = self.role(src, false);
            // Bounded batch per ring keeps service fair between senders.
            for _ in 0..64 {
                let Some((h, payload)) = ring.peek(role).unwrap_or_else(|e| self.corrupt(role, e))
                else {
                    break;
                };
                match self.handlers.get(h.handler as usize).and_then(|s| s.get()) {
                    Some(handler) => handler(
                        self,
                        Incoming {
                            src,
                            header: h,
                            payload,
                        },
                    ),
                    None => self.reply_result(
                        src,
                        h.token,
                        Err(format!(
                            "no active-message handler {} is registered",
                            h.handler
                        )),
                    ),
                }
                ring.advance(&h);
                notify(&self.segs.segs[src].control().space_signal);
                did = true;
            }
        }
        did
    }

    /// What this PE expects on its request (or reply) ring from `producer`.
    fn role(&self, producer: usize, replies: bool) -> RingRole {
        RingRole {
            producer,
            replies,
            handlers: self.handlers.len(),
        }
    }

    /// A ring of this PE holds a record that fails validation: the consumer cannot
    /// find the next record, and skipping could apply half of a transfer, so the PE
    /// ends the job with a message naming the ring (the launcher names this PE).
    fn corrupt(&self, role: RingRole, why: BadRecord) -> ! {
        let kind = if role.replies { "reply" } else { "request" };
        crate::fatal::end_job(
            self.me(),
            &format!(
                "corrupt active-message {kind} ring from PE {}: {why}",
                role.producer
            ),
        )
    }

    fn has_replies(&self) -> bool {
        let (me, n) = (self.me(), self.n());
        (0..n).any(|i| !Ring::of(&self.segs, me, n + i).is_empty())
    }

    fn has_requests(&self) -> bool {
        let (me, n) = (self.me(), self.n());
        (0..n).any(|i| !Ring::of(&self.segs, me, i).is_empty())
    }

    /// The progress thread's loop: serve requests (and drain replies while awake),
    /// sleep when no request is waiting.
    fn progress_loop(&self) {
        let signal = &self.segs.mine().control().progress_signal;
        let idle = WaitPolicy {
            spin: self.policy.spin.min(std::time::Duration::from_micros(20)),
            ..self.policy
        };
        while !self.shutdown.load(Ordering::Acquire) {
            let a = self.serve_requests();
            if a {
                // Served puts and atomics may be what a user thread here waits for.
                notify(&self.segs.mine().control().user_signal);
            }
            let b = self.pump_replies();
            if !(a || b) {
                idle.wait_until(
                    signal,
                    || self.shutdown.load(Ordering::Acquire) || self.has_requests(),
                    || false,
                );
            }
        }
    }

    /// Starts the progress thread of this PE.
    pub fn start(self: &Arc<Self>) -> Result<JoinHandle<()>, Error> {
        let me = self.clone();
        std::thread::Builder::new()
            .name(format!("shmemplus-progress-{}", self.me()))
            .spawn(move || me.progress_loop())
            .map_err(|e| Error::os("starting the progress thread", e))
    }

    /// Asks the progress thread to stop (it notices within one sleep slice at most).
    pub fn stop(&self) {
        self.shutdown.store(true, Ordering::Release);
        notify(&self.segs.mine().control().progress_signal);
    }

    /// The heap range `[offset, offset + len)` of this PE, if it is in bounds.
    pub(crate) fn heap_range(&self, offset: u64, len: usize) -> Result<*mut u8, String> {
        let seg = self.segs.mine();
        let heap = seg.heap_bytes() as u64;
        match offset.checked_add(len as u64) {
            Some(end) if end <= heap => {
                // SAFETY: offset + len <= heap size, so the pointer stays in the heap.
                Ok(unsafe { seg.heap_base().add(offset as usize) })
            }
            _ => Err(format!(
                "bytes {offset}..{} are outside the symmetric heap of {heap} bytes",
                offset.saturating_add(len as u64)
            )),
        }
    }
}

fn handle_put(engine: &AmEngine, m: Incoming<'_>) {
    match engine.heap_range(m.header.args[0], m.payload.len()) {
        // SAFETY: `dst` is in bounds of this PE's heap (checked by heap_range); the
        // payload lives in the ring, which never overlaps the heap.
        Ok(dst) => unsafe { crate::copy::copy_bytes(m.payload.as_ptr(), dst, m.payload.len()) },
        Err(why) => engine.record_put_failure(m.src, why),
    }
    engine.reply_result(m.src, m.header.token, Ok(Vec::new()));
}

fn handle_get(engine: &AmEngine, m: Incoming<'_>) {
    let (offset, len) = (m.header.args[0], m.header.args[1] as usize);
    match engine.heap_range(offset, len) {
        Ok(src) => {
            // SAFETY: `src..src+len` is inside this PE's heap (checked above), which
            // stays mapped for the engine's life. Other PEs may write it concurrently,
            // as with any SHMEM get racing a put, so it is copied raw into the ring and
            // never viewed as a slice.
            let bytes = unsafe { RawBytes::heap(src, len) };
            engine.reply_raw(m.src, m.header.token, bytes);
        }
        Err(why) => engine.reply_error(m.src, m.header.token, &why),
    }
}

fn handle_flush(engine: &AmEngine, m: Incoming<'_>) {
    let failed = engine.failed_puts[m.src]
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let out = match failed {
        Some(why) => Err(format!("an earlier put failed: {why}")),
        None => Ok(Vec::new()),
    };
    engine.reply_result(m.src, m.header.token, out);
}

fn handle_echo(engine: &AmEngine, m: Incoming<'_>) {
    engine.reply_result(m.src, m.header.token, Ok(m.payload.to_vec()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CAP: usize = 4096;

    /// A ring over a private buffer, as a consumer and a producer see it.
    struct TestRing {
        hdr: RingHeader,
        data: Vec<u64>,
    }

    impl TestRing {
        fn new() -> TestRing {
            TestRing {
                hdr: RingHeader::default(),
                data: vec![0; CAP / 8],
            }
        }

        fn ring(&mut self) -> Ring<'_> {
            Ring {
                hdr: &self.hdr,
                data: self.data.as_mut_ptr().cast(),
                cap: CAP as u64,
            }
        }

        fn bounds(&self) -> std::ops::Range<usize> {
            let start = self.data.as_ptr() as usize;
            start..start + CAP
        }
    }

    fn role(replies: bool) -> RingRole {
        RingRole {
            producer: 3,
            replies,
            handlers: usize::from(USER_BASE + USER_HANDLERS),
        }
    }

    /// Drains `ring` like a consumer; returns the payloads, or the first bad record.
    /// Panics if it needs more steps than the ring has bytes (a loop that would hang).
    fn drain(
        ring: &Ring<'_>,
        role: RingRole,
        bounds: std::ops::Range<usize>,
    ) -> Result<Vec<Vec<u8>>, BadRecord> {
        let mut out = Vec::new();
        for _ in 0..=CAP {
            match ring.peek(role)? {
                None => return Ok(out),
                Some((h, payload)) => {
                    let (p, n) = (payload.as_ptr() as usize, payload.len());
                    assert!(
                        bounds.start <= p && p + n <= bounds.end,
                        "payload outside the ring"
                    );
                    out.push(payload.to_vec());
                    ring.advance(&h);
                }
            }
        }
        panic!("the consumer did not finish in {CAP} steps");
    }

    fn header(handler: u16, replies: bool) -> AmHeader {
        let mut h = AmHeader::request(handler, 9, [1, 2, 3, 4]);
        h.src_pe = 3;
        if replies {
            h.flags |= F_REPLY | F_LAST;
        }
        h
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever the producer side holds (random bytes, random positions), the
        /// consumer returns records inside the ring or a typed error: no panic, no
        /// out-of-bounds payload, no endless loop.
        #[test]
        fn random_rings_never_break_the_consumer(
            bytes in proptest::collection::vec(any::<u64>(), CAP / 8),
            head in any::<u64>(),
            ahead in prop_oneof![0u64..=CAP as u64 + 64, any::<u64>()],
            replies in any::<bool>(),
        ) {
            let mut t = TestRing::new();
            t.data.copy_from_slice(&bytes);
            t.hdr.head.store(head, Ordering::Relaxed);
            t.hdr.tail.store(head.wrapping_add(ahead), Ordering::Relaxed);
            let bounds = t.bounds();
            let _ = drain(&t.ring(), role(replies), bounds);
        }

        /// Valid traffic (with pads at the ring's end) passes validation unchanged;
        /// then one mutated header field is always caught, never served.
        #[test]
        fn valid_records_pass_and_mutations_are_caught(
            sizes in proptest::collection::vec(0usize..CAP / 4 - HDR, 1..12),
            skew in 0usize..CAP,
            replies in any::<bool>(),
            field in 0usize..6,
            junk in any::<u32>(),
        ) {
            let mut t = TestRing::new();
            // Start at an arbitrary aligned position so pads at the end occur.
            let start = (skew / 8 * 8) as u64;
            t.hdr.head.store(start, Ordering::Relaxed);
            t.hdr.tail.store(start, Ordering::Relaxed);
            let bounds = t.bounds();
            let mut sent = Vec::new();
            {
                let ring = t.ring();
                for (i, &n) in sizes.iter().enumerate() {
                    let payload: Vec<u8> = (0..n).map(|k| (k + i) as u8).collect();
                    if !ring.try_push(header(H_PUT, replies), RawBytes::of(&payload)) {
                        break;
                    }
                    sent.push(payload);
                }
                let got = drain(&ring, role(replies), bounds.clone()).expect("valid records pass");
                prop_assert_eq!(got, sent);
            }
            // One record, then corrupt one field of its header in place.
            let ring = t.ring();
            let payload = vec![7u8; 40];
            prop_assert!(ring.try_push(header(H_PUT, replies), RawBytes::of(&payload)));
            let pos = (ring.hdr.head.load(Ordering::Relaxed) % CAP as u64) as usize;
            let pos = if pos + HDR > CAP || {
                // A pad may lead; the record then sits at the ring's start.
                let mut h = AmHeader::zeroed();
                // SAFETY: pos < CAP and at most CAP - pos bytes are read from the buffer.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        ring.data.add(pos),
                        bytemuck::bytes_of_mut(&mut h).as_mut_ptr(),
                        (CAP - pos).min(HDR),
                    )
                };
                h.flags & F_PAD != 0
            } { 0 } else { pos };
            let mut h = AmHeader::zeroed();
            // SAFETY: pos + HDR <= CAP: the record's header lies inside the buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    ring.data.add(pos),
                    bytemuck::bytes_of_mut(&mut h).as_mut_ptr(),
                    HDR,
                )
            };
            match field {
                // Odd (unaligned) or zero.
                0 => h.len = if junk % 2 == 0 { 0 } else { junk | 1 },
                // Larger than the record holds: 48.. bytes where 40 were sent.
                1 => h.payload_len = 48 + junk % 100_000,
                2 => h.flags ^= if replies { F_REPLY } else { F_LAST },
                3 => h.flags |= 1 << (4 + junk % 12),
                4 => h.src_pe = if junk == 3 { 4 } else { junk },
                _ => {
                    if replies {
                        h.flags &= !F_REPLY;
                    } else {
                        h.handler = (USER_BASE + USER_HANDLERS).saturating_add(junk as u16 % 1000);
                    }
                }
            }
            // SAFETY: as above, writing the header back in place.
            unsafe {
                std::ptr::copy_nonoverlapping(bytemuck::bytes_of(&h).as_ptr(), ring.data.add(pos), HDR)
            };
            prop_assert!(drain(&ring, role(replies), bounds).is_err(), "mutated field {} served", field);
        }
    }

    #[test]
    fn a_zero_length_record_is_an_error_not_a_loop() {
        let mut t = TestRing::new();
        t.hdr.tail.store(64, Ordering::Relaxed);
        let bounds = t.bounds();
        let err = drain(&t.ring(), role(false), bounds).unwrap_err();
        assert!(matches!(err, BadRecord::Length { len: 0, .. }), "{err}");
    }
}
