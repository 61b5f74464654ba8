//! The table of operations waiting for their replies, indexed by the token a request
//! carries. Any thread of the PE may start an operation and wait for it; whichever
//! thread holds the reply pump applies replies to it.
//!
//! The table is a `sharded_slab::Slab`: inserting takes a slot of the inserting thread's
//! shard and looking up a token is a few atomic loads, so threads of one PE never
//! serialise on a table lock (a single `Mutex<HashMap>` did, once per request and once
//! per reply record). The token is the slab key plus one (0 means "no reply wanted").
//!
//! Why it is correct:
//! - A token names one operation only while it is in the table: the slab's key carries
//!   a generation, so a stale or forged token (a reply record is written by another
//!   process) finds nothing and is dropped; it can never complete a later operation
//!   that reuses the slot.
//! - The pump writes an operation's reply (its data, its error) before the Release
//!   store of `done`; the waiter reads them only after an Acquire load of `done` saw
//!   `true`, and then takes the entry out of the table, which waits until the pump has
//!   let go of it. After that, no record can reach it: its token is gone.
//! - Only the thread holding the pump writes to an entry (the pump is a lock), and the
//!   waiter reads only after `done`, so the data and error mutexes are never contended;
//!   they are there to keep the code safe without an argument about `UnsafeCell`.
//!
//! This module owns the table. It must not read rings or send anything.

use crate::error::Error;
use sharded_slab::Slab;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Replies larger than this are not preallocated from the size a reply record
/// announces (the announcement comes from another process); they grow as they arrive.
const PRESIZE_LIMIT: usize = 16 << 20;

/// Where an operation's reply goes.
#[derive(Debug, Clone, Copy)]
pub(super) enum ReplyTo {
    /// Kept in the entry and handed to the waiter (user AM replies, flushes).
    Kept,
    /// Written straight into the waiter's buffer at `addr..addr + len`, which the
    /// waiter keeps exclusively borrowed and untouched until `done` (gets, fetching
    /// atomics).
    Buffer { addr: usize, len: usize },
}

/// An operation waiting for its reply.
pub(super) struct Pending {
    to: ReplyTo,
    data: Mutex<Vec<u8>>,
    error: Mutex<Option<String>>,
    done: AtomicBool,
}

/// What one reply record did to its operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Applied {
    /// No operation has this token (stale or forged): the record was dropped.
    Unknown,
    /// Applied; more records of the reply are to come.
    Partial,
    /// Applied; the operation is complete.
    Completed,
}

/// The operations of one PE that wait for replies.
pub(super) struct PendingTable {
    slab: Slab<Pending>,
}

impl PendingTable {
    pub(super) fn new() -> PendingTable {
        PendingTable { slab: Slab::new() }
    }

    /// Registers an operation whose reply goes to `to`; returns its token (never 0).
    pub(super) fn start(&self, to: ReplyTo) -> Result<u64, Error> {
        let key = self
            .slab
            .insert(Pending {
                to,
                data: Mutex::new(Vec::new()),
                error: Mutex::new(None),
                done: AtomicBool::new(false),
            })
            .ok_or_else(|| {
                Error::InvalidArgument(
                    "too many active-message operations in flight on this thread".into(),
                )
            })?;
        // A slab key is below 2^USED_BITS <= 2^64 - 1, so the sum cannot wrap.
        Ok(key as u64 + 1)
    }

    /// Whether the operation `token` is complete. A token not in the table counts as
    /// complete, so that a waiter can never wait for a reply nobody will apply.
    pub(super) fn is_done(&self, token: u64) -> bool {
        self.entry(token)
            .is_none_or(|p| p.done.load(Ordering::Acquire))
    }

    /// Removes the completed operation `token` and returns its kept reply data, or the
    /// error its reply reported.
    pub(super) fn finish(&self, token: u64) -> Result<Vec<u8>, String> {
        let Some(p) = key_of(token).and_then(|k| self.slab.take(k)) else {
            return Err("the operation's reply was lost".into());
        };
        if let Some(why) = p.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(why);
        }
        Ok(p.data.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// Applies one reply record to its operation: `error` marks an error record (the
    /// payload is its message), `at` is the record's byte offset in the reply,
    /// `total` the reply size the record announces, `last` whether it ends the reply.
    /// Only the thread holding the reply pump calls this.
    #[cfg(test)]
    pub(super) fn apply(
        &self,
        token: u64,
        error: bool,
        at: u64,
        total: u64,
        last: bool,
        payload: &[u8],
    ) -> Applied {
        self.apply_reply(token, error, (at, total, last), Reply::Bytes(payload))
    }

    /// Where a reply record of `len` bytes at byte `at` of operation `token` may be
    /// written in place (by a link receiving it): inside the waiter's buffer, if the
    /// operation has one that covers the record. Only the reply pump's holder calls
    /// this, then [`apply_reply`](Self::apply_reply) with `Reply::Placed` once the
    /// bytes are there.
    pub(super) fn placement(&self, token: u64, at: u64, len: usize) -> Option<*mut u8> {
        let p = self.entry(token)?;
        let at = usize::try_from(at).ok()?;
        match p.to {
            ReplyTo::Buffer { addr, len: size } if at.checked_add(len)? <= size => {
                Some((addr as *mut u8).wrapping_add(at))
            }
            _ => None,
        }
    }

    /// [`apply`](Self::apply) of a record whose bytes are `reply`: given, or already
    /// written in place (at the address [`placement`](Self::placement) gave).
    pub(super) fn apply_reply(
        &self,
        token: u64,
        error: bool,
        (at, total, last): (u64, u64, bool),
        reply: Reply<'_>,
    ) -> Applied {
        let payload = match reply {
            Reply::Bytes(bytes) => bytes,
            Reply::Placed(len) => {
                let Some(p) = self.entry(token) else {
                    return Applied::Unknown;
                };
                let end = usize::try_from(at).ok().and_then(|at| at.checked_add(len));
                if let (true, ReplyTo::Buffer { len: size, .. }) = (last, p.to) {
                    if end != Some(size) {
                        self.fail(&p, format!("reply of {end:?} bytes for {size} requested"));
                    }
                }
                return if last {
                    p.done.store(true, Ordering::Release);
                    Applied::Completed
                } else {
                    Applied::Partial
                };
            }
        };
        let Some(p) = self.entry(token) else {
            return Applied::Unknown;
        };
        if error {
            *p.error.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(String::from_utf8_lossy(payload).into_owned());
        } else {
            let end = usize::try_from(at)
                .ok()
                .and_then(|at| at.checked_add(payload.len()).map(|end| (at, end)));
            match (p.to, end) {
                (ReplyTo::Buffer { addr, len }, Some((at, end))) if end <= len => {
                    // SAFETY: `addr..addr + len` is the waiter's exclusively borrowed
                    // buffer (`ReplyTo::Buffer`), untouched by it until `done` is set
                    // below; `at..end` lies inside it (checked just above), and the
                    // payload lives in a ring, never in that buffer.
                    unsafe {
                        crate::copy::copy_bytes(
                            payload.as_ptr(),
                            (addr as *mut u8).add(at),
                            payload.len(),
                        )
                    };
                    if last && end != len {
                        self.fail(&p, format!("reply of {end} bytes for {len} requested"));
                    }
                }
                (ReplyTo::Buffer { len, .. }, _) => {
                    self.fail(&p, format!("reply larger than the {len} bytes requested"));
                }
                (ReplyTo::Kept, _) => {
                    let mut data = p.data.lock().unwrap_or_else(|e| e.into_inner());
                    if data.is_empty() {
                        let announced = usize::try_from(total).unwrap_or(usize::MAX);
                        data.reserve(announced.min(PRESIZE_LIMIT));
                    }
                    data.extend_from_slice(payload);
                }
            }
        }
        if last {
            p.done.store(true, Ordering::Release);
            Applied::Completed
        } else {
            Applied::Partial
        }
    }

    fn fail(&self, p: &Pending, why: String) {
        p.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(why);
    }

    fn entry(&self, token: u64) -> Option<sharded_slab::Entry<'_, Pending>> {
        self.slab.get(key_of(token)?)
    }
}

/// The bytes of one reply record.
#[derive(Clone, Copy)]
pub(super) enum Reply<'a> {
    /// Given here, to copy where they belong.
    Bytes(&'a [u8]),
    /// This many, already in place (see [`PendingTable::placement`]).
    Placed(usize),
}

/// The slab key of `token`, if it could be one.
fn key_of(token: u64) -> Option<usize> {
    usize::try_from(token.checked_sub(1)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_kept_reply_in_pieces_is_reassembled() {
        let t = PendingTable::new();
        let token = t.start(ReplyTo::Kept).unwrap();
        assert_ne!(token, 0);
        assert!(!t.is_done(token));
        assert_eq!(t.apply(token, false, 0, 5, false, b"hel"), Applied::Partial);
        assert!(!t.is_done(token));
        assert_eq!(t.apply(token, false, 3, 5, true, b"lo"), Applied::Completed);
        assert!(t.is_done(token));
        assert_eq!(t.finish(token).unwrap(), b"hello");
        // Gone: a late or repeated record finds nothing.
        assert_eq!(t.apply(token, false, 0, 1, true, b"x"), Applied::Unknown);
        assert!(t.finish(token).is_err());
    }

    #[test]
    fn a_buffer_reply_lands_in_place_and_must_fill_it() {
        let t = PendingTable::new();
        let mut buf = [0u8; 8];
        let to = ReplyTo::Buffer {
            addr: buf.as_mut_ptr() as usize,
            len: buf.len(),
        };
        let ok = t.start(to).unwrap();
        assert_eq!(
            t.apply(ok, false, 0, 8, true, &7u64.to_le_bytes()),
            Applied::Completed
        );
        assert_eq!(t.finish(ok).unwrap(), b"");
        assert_eq!(u64::from_le_bytes(buf), 7);

        let short = t.start(to).unwrap();
        t.apply(short, false, 0, 4, true, &[1, 2, 3, 4]);
        assert!(t
            .finish(short)
            .unwrap_err()
            .contains("reply of 4 bytes for 8"));

        let long = t.start(to).unwrap();
        t.apply(long, false, 4, 9, true, &[0; 5]);
        assert!(t
            .finish(long)
            .unwrap_err()
            .contains("larger than the 8 bytes"));
        let wrapping = t.start(to).unwrap();
        t.apply(wrapping, false, u64::MAX, 0, true, &[0; 5]);
        assert!(t.finish(wrapping).is_err());
    }

    #[test]
    fn an_error_record_is_reported() {
        let t = PendingTable::new();
        let token = t.start(ReplyTo::Kept).unwrap();
        t.apply(token, true, 0, 0, true, b"no such handler");
        assert_eq!(t.finish(token).unwrap_err(), "no such handler");
    }

    #[test]
    fn a_reused_slot_does_not_answer_to_the_old_token() {
        let t = PendingTable::new();
        let old = t.start(ReplyTo::Kept).unwrap();
        t.apply(old, false, 0, 0, true, b"");
        t.finish(old).unwrap();
        let new = t.start(ReplyTo::Kept).unwrap();
        assert_ne!(old, new);
        assert_eq!(t.apply(old, false, 0, 1, true, b"x"), Applied::Unknown);
        assert!(!t.is_done(new));
    }

    /// Threads start, complete and finish operations at once, as a PE's user threads
    /// and its pump do: every reply reaches its own operation.
    #[test]
    fn concurrent_operations_get_their_own_replies() {
        let t = std::sync::Arc::new(PendingTable::new());
        let (tx, rx) = std::sync::mpsc::channel::<(u64, u64)>();
        let pump = {
            let t = t.clone();
            std::thread::spawn(move || {
                for (token, value) in rx {
                    assert_eq!(
                        t.apply(token, false, 0, 8, true, &value.to_le_bytes()),
                        Applied::Completed
                    );
                }
            })
        };
        let workers: Vec<_> = (0..4u64)
            .map(|w| {
                let (t, tx) = (t.clone(), tx.clone());
                std::thread::spawn(move || {
                    for i in 0..2000u64 {
                        let token = t.start(ReplyTo::Kept).unwrap();
                        let value = w << 32 | i;
                        tx.send((token, value)).unwrap();
                        let deadline =
                            std::time::Instant::now() + std::time::Duration::from_secs(30);
                        while !t.is_done(token) {
                            assert!(std::time::Instant::now() < deadline, "reply never applied");
                            std::thread::yield_now();
                        }
                        assert_eq!(t.finish(token).unwrap(), value.to_le_bytes());
                    }
                })
            })
            .collect();
        drop(tx);
        for w in workers {
            w.join().unwrap();
        }
        pump.join().unwrap();
    }

    proptest! {
        /// Any token a peer could write finds nothing in a table that holds other
        /// operations, and leaves them untouched.
        #[test]
        fn forged_tokens_are_dropped(forged in any::<u64>()) {
            let t = PendingTable::new();
            let live = t.start(ReplyTo::Kept).unwrap();
            prop_assume!(forged != live);
            prop_assert_eq!(t.apply(forged, false, 0, 1, true, b"x"), Applied::Unknown);
            prop_assert!(!t.is_done(live));
        }
    }
}
