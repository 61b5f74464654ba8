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

mod control;
mod handlers;
mod link;
#[cfg(test)]
mod link_tests;
mod pending;
mod progress;
mod record;
mod ring;

pub(crate) use control::{ControlOp, Wake};
use link::check_link_record;
pub(crate) use link::{HostLink, LinkPayload, LinkSink};
pub use record::{
    AmHeader, BadRecord, H_ATOMIC, H_CONTROL, H_ECHO, H_FLUSH, H_FPGA_GET, H_FPGA_PUT, H_GET,
    H_PUT, USER_BASE, USER_HANDLERS,
};

use crate::error::Error;
use crate::segment::JobSegments;
use crate::sync::{notify, Poll, WaitPolicy};
use handlers::{handle_echo, handle_flush, handle_get, handle_put};
use pending::{Applied, PendingTable, Reply, ReplyTo};
use record::{RingRole, F_ERROR, F_LAST, F_REPLY, HDR};
use ring::{RawBytes, Ring};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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

/// Everything of the AM layer one PE owns.
pub struct AmEngine {
    segs: Arc<JobSegments>,
    policy: WaitPolicy,
    /// Producer locks: request ring me -> d, reply ring me -> d.
    request_locks: Vec<Mutex<()>>,
    reply_locks: Vec<Mutex<()>>,
    reply_pump: Mutex<()>,
    pending: PendingTable,
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
    /// The conduit to the PEs of other hosts (whose segments are not mapped here).
    link: Option<Arc<dyn HostLink>>,
}

/// Largest payload of one record sent over a link: a link has no ring to share, so a
/// put or a get reply travels in one record up to this size.
const LINK_RECORD_MAX: usize = 1 << 30;

impl AmEngine {
    /// Creates the engine with the built-in handlers registered. `link` reaches the
    /// PEs whose segments are not mapped here; a job on one host has none.
    pub fn new(
        segs: Arc<JobSegments>,
        policy: WaitPolicy,
        link: Option<Arc<dyn HostLink>>,
    ) -> Result<AmEngine, Error> {
        if segs.spans_hosts() && link.is_none() {
            return Err(Error::Bootstrap(
                "some PEs are on another host but no conduit between hosts was set up".into(),
            ));
        }
        let n = segs.n();
        let engine = AmEngine {
            segs,
            policy,
            request_locks: (0..n).map(|_| Mutex::new(())).collect(),
            reply_locks: (0..n).map(|_| Mutex::new(())).collect(),
            reply_pump: Mutex::new(()),
            pending: PendingTable::new(),
            handlers: (0..(USER_BASE + USER_HANDLERS))
                .map(|_| OnceLock::new())
                .collect(),
            posted: (0..n).map(|_| AtomicU64::new(0)).collect(),
            flushed: (0..n).map(|_| AtomicU64::new(0)).collect(),
            posted_total: AtomicU64::new(0),
            covered_total: AtomicU64::new(0),
            failed_puts: (0..n).map(|_| Mutex::new(None)).collect(),
            shutdown: AtomicBool::new(false),
            link,
        };
        let builtins: [(u16, Handler); 5] = [
            (H_PUT, Arc::new(handle_put)),
            (H_GET, Arc::new(handle_get)),
            (H_FLUSH, Arc::new(handle_flush)),
            (H_ECHO, Arc::new(handle_echo)),
            (H_CONTROL, Arc::new(control::handle_control)),
        ];
        for (id, h) in builtins {
            let _ = engine.handlers[id as usize].set(h);
        }
        Ok(engine)
    }

    /// The link to PE `to` when its segment is not mapped here (it is on another
    /// host), `None` when a ring reaches it.
    #[inline]
    fn link_to(&self, to: usize) -> Option<&dyn HostLink> {
        match self.segs.peer(to) {
            Some(_) => None,
            None => self.link.as_deref(),
        }
    }

    // The links exist with the `mpi` feature.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    /// Checks a record the link received from PE `src` with `payload` bytes (another
    /// process's words); a bad one ends the job naming the sender, as a corrupt ring
    /// does.
    fn check_from_link(&self, src: usize, h: &AmHeader, payload: usize, replies: bool) {
        if let Err(why) = check_link_record(h, src, payload, replies, self.handlers.len()) {
            crate::fatal::end_job(
                self.me(),
                &format!("bad active-message record from PE {src} over the link: {why}"),
            );
        }
    }

    /// Largest payload of one record to PE `to`: a quarter ring on this host, a
    /// link's record limit to another host.
    fn max_payload_to(&self, to: usize) -> usize {
        match self.link_to(to) {
            Some(_) => LINK_RECORD_MAX,
            None => self.max_payload(),
        }
    }

    /// Wakes PE `src`'s producers waiting for room in a ring it fills here (a PE of
    /// another host fills no ring here).
    fn notify_space(&self, src: usize) {
        if let Some(seg) = self.segs.peer(src) {
            notify(&seg.control().space_signal);
        }
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
            crate::diag::warn(
                self.me(),
                format_args!("built-in active-message handler {id} registered twice"),
            );
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
        // Every caller splits its data into pieces of at most `max_payload_to` (a
        // quarter ring on this host); a larger record would never fit a ring and its
        // sender would wait forever.
        assert!(
            payload.len <= self.max_payload_to(to),
            "active-message payload of {} bytes past the record limit",
            payload.len
        );
        let me = self.me();
        h.src_pe = me as u32;
        if reply {
            h.flags |= F_REPLY;
        }
        let lock = if reply {
            &self.reply_locks[to]
        } else {
            &self.request_locks[to]
        };
        let link = self.link_to(to);
        let posted = {
            let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
            match link {
                Some(link) => {
                    h.payload_len = payload.len as u32;
                    link.send(to, reply, &h, LinkPayload { raw: payload });
                }
                None => self.push(to, reply, h, payload),
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
        // thread competing for the cores. A record over a link wakes nobody here:
        // the receiving host's link delivers it to a polling thread.
        if let Some(seg) = self.segs.peer(to) {
            let control = seg.control();
            notify(if reply {
                &control.user_signal
            } else {
                &control.progress_signal
            });
        }
        posted
    }

    /// Pushes one record into the ring to `to` (mapped here), waiting for room and
    /// draining replies meanwhile. The caller holds the ring's producer lock.
    fn push(&self, to: usize, reply: bool, h: AmHeader, payload: RawBytes) {
        let index = if reply {
            self.n() + self.me()
        } else {
            self.me()
        };
        let ring = Ring::of(&self.segs, to, index);
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
    }

    /// Waits for the operation `token` to complete, then removes it and returns its
    /// kept reply (empty for a reply written into the waiter's buffer).
    fn finish(&self, to: usize, token: u64) -> Result<Vec<u8>, Error> {
        let signal = &self.segs.mine().control().user_signal;
        self.policy.wait_until(
            signal,
            || self.pending.is_done(token),
            || self.pump_replies(),
        );
        self.pending
            .finish(token)
            .map_err(|why| Error::AmFailed { pe: to as u32, why })
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
        let token = self.pending.start(ReplyTo::Kept)?;
        self.send(
            to,
            false,
            AmHeader::request(handler, token, [0; 4]),
            payload,
        );
        self.finish(to, token)
    }

    /// Sends a request with `args` to built-in `handler` on PE `to` and waits for its
    /// reply of exactly one little-endian word, which the pump writes straight into
    /// this call's stack (no allocation): the fetching atomics' round trip.
    pub(crate) fn call_word(
        &self,
        to: usize,
        handler: u16,
        args: [u64; 4],
        payload: &[u8],
    ) -> Result<u64, Error> {
        let mut word = [0u8; 8];
        let token = self.pending.start(ReplyTo::Buffer {
            addr: word.as_mut_ptr() as usize,
            len: word.len(),
        })?;
        self.send(to, false, AmHeader::request(handler, token, args), payload);
        // `word` stays untouched here until `finish` has seen the last reply record.
        self.finish(to, token)?;
        Ok(u64::from_le_bytes(word))
    }

    /// Sends a request with `args` to built-in `handler` on PE `to` and waits for its
    /// whole reply.
    pub(crate) fn call_bytes(
        &self,
        to: usize,
        handler: u16,
        args: [u64; 4],
    ) -> Result<Vec<u8>, Error> {
        let token = self.pending.start(ReplyTo::Kept)?;
        self.send(to, false, AmHeader::request(handler, token, args), &[]);
        self.finish(to, token)
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
        let chunk = self.max_payload_to(to);
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
        let token = self.pending.start(ReplyTo::Buffer {
            addr: dst.as_mut_ptr() as usize,
            len: dst.len(),
        })?;
        let h = AmHeader::request(handler, token, [offset as u64, dst.len() as u64, place, 0]);
        self.send(to, false, h, &[]);
        // `dst` stays borrowed (and untouched by us) until `finish` has seen the last
        // reply, so the pump's writes into it cannot race with the caller.
        self.finish(to, token).map(|_| ())
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
        let mut first_err = None;
        for to in 0..self.n() {
            let posted = self.posted[to].load(Ordering::Acquire);
            if self.flushed[to].load(Ordering::Acquire) >= posted {
                continue;
            }
            // Without a flush nothing proves these posts applied: report, and leave
            // `flushed[to]` (and the totals) where they are, so the next quiet retries.
            let token = match self.pending.start(ReplyTo::Kept) {
                Ok(token) => token,
                Err(e) => {
                    first_err.get_or_insert(e);
                    continue;
                }
            };
            let covers = self.send(to, false, AmHeader::request(H_FLUSH, token, [0; 4]), &[]);
            waits.push((to, token, covers));
        }
        let all_flushed = first_err.is_none();
        for (to, token, covers) in waits {
            let outcome = self.finish(to, token);
            // Applied (or failed and now reported): either way these posts are done.
            self.flushed[to].fetch_max(covers, Ordering::AcqRel);
            if let Err(e) = outcome {
                first_err.get_or_insert(e);
            }
        }
        if all_flushed {
            self.covered_total.fetch_max(total, Ordering::AcqRel);
        }
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
        let chunk = self.max_payload_to(to);
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
        let mut buf = vec![0u8; self.max_payload_to(to).min(total)];
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
                self.notify_space(src);
                did = true;
            }
        }
        if let Some(link) = &self.link {
            let mut sink = ReplySink {
                engine: self,
                completed: false,
            };
            did |= link.poll(true, &mut sink);
            completed |= sink.completed;
        }
        if completed {
            notify(&self.segs.mine().control().user_signal);
        }
        did
    }

    /// Applies one reply record; returns whether it completed its operation.
    fn complete(&self, h: &AmHeader, payload: &[u8]) -> bool {
        self.apply_reply(h, Reply::Bytes(payload))
    }

    /// Applies one reply record whose bytes are given or already in place.
    fn apply_reply(&self, h: &AmHeader, reply: Reply<'_>) -> bool {
        let applied = self.pending.apply_reply(
            h.token,
            h.flags & F_ERROR != 0,
            (h.args[0], h.args[1], h.flags & F_LAST != 0),
            reply,
        );
        if applied == Applied::Unknown {
            crate::diag::warn(
                self.me(),
                format_args!("reply for an unknown operation (token {}) dropped", h.token),
            );
        }
        applied == Applied::Completed
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

    /// The CPU range `[offset, offset + len)` of this PE (its heap, or its static area
    /// after it), if it is in bounds.
    pub(crate) fn heap_range(&self, offset: u64, len: usize) -> Result<*mut u8, String> {
        let seg = self.segs.mine();
        let cpu = seg.cpu_bytes() as u64;
        match offset.checked_add(len as u64) {
            Some(end) if end <= cpu => {
                // SAFETY: offset + len <= cpu_bytes, so the pointer stays in the
                // segment's heap or static area (`Segment::cpu_bytes`).
                Ok(unsafe { seg.heap_base().add(offset as usize) })
            }
            _ => Err(format!(
                "bytes {offset}..{} are outside the {cpu} bytes of symmetric CPU memory (heap and program data)",
                offset.saturating_add(len as u64)
            )),
        }
    }
}

/// The reply channel of a link, as the reply pump's holder drains it: a reply to a
/// get is received straight into the waiter's buffer.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
struct ReplySink<'a> {
    engine: &'a AmEngine,
    /// Whether a record completed its operation.
    completed: bool,
}

impl LinkSink for ReplySink<'_> {
    fn place(&mut self, src: usize, h: &AmHeader) -> Option<*mut u8> {
        let len = h.payload_len as usize;
        self.engine.check_from_link(src, h, len, true);
        match h.flags & F_ERROR {
            0 => self.engine.pending.placement(h.token, h.args[0], len),
            _ => None,
        }
    }

    fn deliver(&mut self, src: usize, h: &AmHeader, payload: Option<&[u8]>) {
        let applied = match payload {
            Some(bytes) => {
                self.engine.check_from_link(src, h, bytes.len(), true);
                self.engine.apply_reply(h, Reply::Bytes(bytes))
            }
            None => self
                .engine
                .apply_reply(h, Reply::Placed(h.payload_len as usize)),
        };
        self.completed |= applied;
    }
}

/// The request channel of a link, as the progress thread serves it: a large put is
/// received straight into the heap.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(super) struct RequestSink<'a>(pub(super) &'a AmEngine);

impl LinkSink for RequestSink<'_> {
    fn place(&mut self, src: usize, h: &AmHeader) -> Option<*mut u8> {
        let len = h.payload_len as usize;
        self.0.check_from_link(src, h, len, false);
        match (h.handler, h.token) {
            (H_PUT, 0) => self.0.heap_range(h.args[0], len).ok(),
            _ => None,
        }
    }

    fn deliver(&mut self, src: usize, h: &AmHeader, payload: Option<&[u8]>) {
        // A placed record is a put whose bytes are already in the heap: done.
        if let Some(bytes) = payload {
            self.0.check_from_link(src, h, bytes.len(), false);
            self.0.dispatch(src, h, bytes);
        }
    }
}
