//! The MPI link between hosts: AM records as MPI messages on the library's
//! communicator.
//!
//! A record is one message (header and payload) on the channel's header tag when its
//! payload is at most `INLINE_BYTES`; a larger payload follows as a second message on
//! the channel's data tag, sent from the caller's buffer (a request: the user thread
//! may wait until the receiver takes it) or from a copy (a reply: never waits), and
//! received by the thread that took the header, right after it.
//!
//! Why it is correct: records of one channel to one PE are sent under the engine's
//! lock for that channel and PE, so their header messages and their data messages
//! leave in the same order; MPI does not let two messages of one sender, tag and
//! communicator overtake each other, and one thread at a time takes a channel's
//! headers (the progress thread for requests, the reply pump's holder for replies)
//! and takes a record's data message before the next header, so the n-th data message
//! from a PE is the one of the n-th large record from it. Replies never wait for the
//! receiver (copies, `MPI_Isend`), and a request waits only for the receiver's
//! progress thread, which never waits for a request itself: two hosts cannot deadlock
//! on the link.
//!
//! This module owns the tags, the message layout and the buffers in flight. It must
//! not interpret a record beyond its length (the engine checks and applies it).

use super::Comm;
use crate::am::{AmHeader, HostLink, LinkPayload, LinkSink};
use mpi::ffi;
use std::ffi::c_int;
use std::sync::Mutex;

/// Header messages of requests.
const TAG_REQUEST: c_int = 1;
/// Data messages of requests with a large payload.
const TAG_REQUEST_DATA: c_int = 2;
/// Header messages of replies.
const TAG_REPLY: c_int = 3;
/// Data messages of replies with a large payload.
const TAG_REPLY_DATA: c_int = 4;

/// Payloads up to this size travel inside the header message (one message, one copy
/// into it); larger ones as a data message of their own (no copy for a request).
const INLINE_BYTES: usize = 16 << 10;

const HDR: usize = size_of::<AmHeader>();

/// A send in flight and the bytes it reads, kept until MPI is done with them.
struct InFlight {
    request: ffi::MPI_Request,
    /// The bytes, or `None` for heap bytes that outlive the link's sends.
    _bytes: Option<Vec<u8>>,
}

// SAFETY: an MPI_Request is a handle that any thread may test under
// MPI_THREAD_MULTIPLE; it is only touched under the `in_flight` lock.
unsafe impl Send for InFlight {}

/// The link of one PE.
pub(crate) struct MpiLink {
    /// This PE (named when a peer's record is malformed).
    me: usize,
    comm: Comm,
    in_flight: Mutex<Vec<InFlight>>,
    /// Receive buffers of the request and reply channels (one thread at a time each).
    buffers: [Mutex<(Vec<u8>, Vec<u8>)>; 2],
}

impl MpiLink {
    pub(super) fn new(me: usize, comm: Comm) -> MpiLink {
        MpiLink {
            me,
            comm,
            in_flight: Mutex::new(Vec::new()),
            buffers: [
                Mutex::new((Vec::new(), Vec::new())),
                Mutex::new((Vec::new(), Vec::new())),
            ],
        }
    }

    /// Starts sending `bytes` to `to` and keeps them until the send completes.
    fn send_owned(&self, to: usize, tag: c_int, bytes: Vec<u8>) {
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        // SAFETY: `bytes` is kept in `in_flight` with its request (a Vec's buffer
        // does not move with the Vec) until MPI reports the send complete in `reap`.
        unsafe { self.isend(to, tag, ptr, len, Some(bytes)) }
    }

    /// Starts sending the `len` bytes at `ptr` to `to`; `keep` (the bytes' owner, if
    /// any) is dropped when the send completes.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay readable until the send completes: owned by `keep`,
    /// or memory that lives until the link is settled. `len` fits a c_int (records
    /// are at most the engine's 1 GiB limit plus a header).
    unsafe fn isend(
        &self,
        to: usize,
        tag: c_int,
        ptr: *const u8,
        len: usize,
        keep: Option<Vec<u8>>,
    ) {
        let mut request = std::mem::MaybeUninit::<ffi::MPI_Request>::uninit();
        // SAFETY: the caller keeps the bytes readable until completion; the request
        // is written by MPI_Isend before it is read.
        let request = unsafe {
            ffi::MPI_Isend(
                ptr.cast(),
                len as c_int,
                ffi::RSMPI_UINT8_T,
                to as c_int,
                tag,
                self.comm.0,
                request.as_mut_ptr(),
            );
            request.assume_init()
        };
        self.lock_in_flight().push(InFlight {
            request,
            _bytes: keep,
        });
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, Vec<InFlight>> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops the sends MPI has completed (and drives MPI's progress).
    fn reap(&self) {
        let mut in_flight = self.lock_in_flight();
        in_flight.retain_mut(|f| {
            let mut done: c_int = 0;
            // SAFETY: `f.request` is an active request of ours; MPI_Test frees it
            // when it reports completion, after which we drop it.
            unsafe {
                ffi::MPI_Test(&mut f.request, &mut done, ffi::RSMPI_STATUS_IGNORE);
            }
            done == 0
        });
    }

    /// Takes the next record of one channel, if one has arrived.
    fn take(&self, reply: bool, sink: &mut dyn LinkSink) -> bool {
        let (tag, data_tag) = match reply {
            true => (TAG_REPLY, TAG_REPLY_DATA),
            false => (TAG_REQUEST, TAG_REQUEST_DATA),
        };
        let mut guard = self.buffers[usize::from(reply)]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let (head, data) = &mut *guard;
        let mut flag: c_int = 0;
        let mut message = std::mem::MaybeUninit::<ffi::MPI_Message>::uninit();
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        // SAFETY: the out-pointers are valid; the message and status are read only
        // when MPI sets the flag, which means it wrote them.
        let (mut message, status) = unsafe {
            ffi::MPI_Improbe(
                ffi::RSMPI_ANY_SOURCE,
                tag,
                self.comm.0,
                &mut flag,
                message.as_mut_ptr(),
                status.as_mut_ptr(),
            );
            if flag == 0 {
                return false;
            }
            (message.assume_init(), status.assume_init())
        };
        let src = status.MPI_SOURCE as usize;
        let mut count: c_int = 0;
        // SAFETY: `status` describes the matched message; `head` is resized to its
        // length before MPI_Mrecv writes into it.
        unsafe {
            ffi::MPI_Get_count(&status, ffi::RSMPI_UINT8_T, &mut count);
            head.resize(count.max(0) as usize, 0);
            ffi::MPI_Mrecv(
                head.as_mut_ptr().cast(),
                count,
                ffi::RSMPI_UINT8_T,
                &mut message,
                ffi::RSMPI_STATUS_IGNORE,
            );
        }
        let Some(header) = head
            .get(..HDR)
            .map(bytemuck::pod_read_unaligned::<AmHeader>)
        else {
            crate::fatal::end_job(
                self.me,
                &format!("PE {src} sent a {count}-byte record over MPI, shorter than a header"),
            );
        };
        let inline = head.len() - HDR;
        let wanted = header.payload_len as usize;
        if inline == wanted {
            sink.deliver(src, &header, Some(&head[HDR..]));
            return true;
        }
        if inline != 0 || wanted <= INLINE_BYTES {
            crate::fatal::end_job(
                self.me,
                &format!(
                    "PE {src} sent a record of {wanted} payload bytes with {inline} inline over MPI"
                ),
            );
        }
        // In place when the sink has a place for it (a put's heap range, a get's
        // buffer), else in this channel's buffer.
        let placed = sink.place(src, &header);
        let to = match placed {
            Some(at) => at,
            None => {
                data.resize(wanted, 0);
                data.as_mut_ptr()
            }
        };
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        let mut got: c_int = 0;
        // SAFETY: `to` has room for `wanted` bytes: `data` was resized to that, and a
        // sink's place is writable for the header's payload length (its contract).
        // `wanted` fits a c_int (a larger claim is cut by the cast, and then fails the
        // count check below). MPI_Recv writes at most that many.
        unsafe {
            ffi::MPI_Recv(
                to.cast(),
                wanted.min(c_int::MAX as usize) as c_int,
                ffi::RSMPI_UINT8_T,
                src as c_int,
                data_tag,
                self.comm.0,
                status.as_mut_ptr(),
            );
            ffi::MPI_Get_count(status.as_ptr(), ffi::RSMPI_UINT8_T, &mut got);
        }
        if got as usize != wanted {
            crate::fatal::end_job(
                self.me,
                &format!("PE {src} sent {got} data bytes over MPI for a record of {wanted}"),
            );
        }
        match placed {
            Some(_) => sink.deliver(src, &header, None),
            None => sink.deliver(src, &header, Some(data)),
        }
        true
    }
}

impl HostLink for MpiLink {
    fn send(&self, to: usize, reply: bool, header: &AmHeader, payload: LinkPayload) {
        let (tag, data_tag) = match reply {
            true => (TAG_REPLY, TAG_REPLY_DATA),
            false => (TAG_REQUEST, TAG_REQUEST_DATA),
        };
        let inline = payload.len() <= INLINE_BYTES;
        let mut head = Vec::with_capacity(HDR + if inline { payload.len() } else { 0 });
        head.extend_from_slice(bytemuck::bytes_of(header));
        if inline && !payload.is_empty() {
            // SAFETY: the payload is readable for its length until `send` returns
            // (the `HostLink` contract); it may change meanwhile (heap bytes), so it
            // is copied raw, never viewed as a slice.
            unsafe {
                let at = head.len();
                head.reserve(payload.len());
                crate::copy::copy_bytes(payload.ptr(), head.as_mut_ptr().add(at), payload.len());
                head.set_len(at + payload.len());
            }
        }
        self.send_owned(to, tag, head);
        if !inline {
            if reply && payload.outlives_send() {
                // SAFETY: heap bytes stay mapped until the link is settled at
                // shutdown (`outlives_send`); their length is below the record limit.
                unsafe { self.isend(to, data_tag, payload.ptr(), payload.len(), None) };
            } else if reply {
                let mut copy = Vec::with_capacity(payload.len());
                // SAFETY: as above.
                unsafe {
                    crate::copy::copy_bytes(payload.ptr(), copy.as_mut_ptr(), payload.len());
                    copy.set_len(payload.len());
                }
                self.send_owned(to, data_tag, copy);
            } else {
                // SAFETY: the payload is readable for its length until `send` returns,
                // and MPI_Send returns only when it no longer reads it; its length is
                // at most the engine's 1 GiB record limit, which fits a c_int.
                unsafe {
                    ffi::MPI_Send(
                        payload.ptr().cast(),
                        payload.len() as c_int,
                        ffi::RSMPI_UINT8_T,
                        to as c_int,
                        data_tag,
                        self.comm.0,
                    );
                }
            }
        }
        self.reap();
    }

    fn poll(&self, reply: bool, sink: &mut dyn LinkSink) -> bool {
        let mut any = false;
        // A bounded batch keeps the caller's other duties (local rings) served.
        for _ in 0..64 {
            if !self.take(reply, sink) {
                break;
            }
            any = true;
        }
        self.reap();
        any
    }

    fn has_incoming(&self) -> bool {
        [TAG_REQUEST, TAG_REPLY].into_iter().any(|tag| {
            let mut flag: c_int = 0;
            // SAFETY: a probe on the library's communicator; the status is ignored.
            unsafe {
                ffi::MPI_Iprobe(
                    ffi::RSMPI_ANY_SOURCE,
                    tag,
                    self.comm.0,
                    &mut flag,
                    ffi::RSMPI_STATUS_IGNORE,
                );
            }
            flag != 0
        })
    }

    fn settle(&self) {
        while !self.lock_in_flight().is_empty() {
            self.reap();
            std::thread::yield_now();
        }
    }
}
