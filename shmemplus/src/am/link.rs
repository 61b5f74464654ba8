//! The conduit between hosts as the AM layer sees it: a [`HostLink`] carries whole
//! records (header and payload) to and from the PEs whose segments are not mapped
//! here, on two channels (requests and replies), in order per pair of PEs and per
//! channel, as a ring does.
//!
//! This module owns the contract of a link and the validation of every record a link
//! delivers (`check_link_record`). It must not know how a link moves bytes (the MPI
//! conduit does, in `mpi_conduit`) nor act on a record (the engine does).

use super::record::{AmHeader, F_ERROR, F_LAST, F_PAD, F_REPLY, KNOWN_FLAGS};
use super::ring::RawBytes;

/// A record's bytes as a link sends them: a private buffer, or heap bytes that may
/// change while they are read (see `RawBytes`).
#[derive(Clone, Copy)]
pub(crate) struct LinkPayload {
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(super) raw: RawBytes,
}

// The accessors serve the links, which exist with the `mpi` feature.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
impl LinkPayload {
    /// The address of the first byte.
    pub fn ptr(&self) -> *const u8 {
        self.raw.ptr
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// Whether the bytes stay readable after `send` returns, until the link is
    /// settled (heap bytes served to a get): a link may then send them uncopied.
    pub fn outlives_send(&self) -> bool {
        self.raw.lives_with_engine
    }
}

/// Where a link hands the records it receives, one at a time.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) trait LinkSink {
    /// Where the `header.payload_len` payload bytes of a record from `src` that is
    /// not yet received may be written in place, if anywhere (a put's range of the
    /// heap, a get's reply buffer). Called before [`deliver`](Self::deliver) for
    /// the large records a link receives in two parts.
    fn place(&mut self, src: usize, header: &AmHeader) -> Option<*mut u8>;

    /// One whole record from `src`: its payload, or `None` when the link wrote it at
    /// the address `place` gave.
    fn deliver(&mut self, src: usize, header: &AmHeader, payload: Option<&[u8]>);
}

/// The transport between hosts, behind the AM engine.
///
/// Contract, which the engine relies on:
/// - records to one PE on one channel arrive in the order they were sent (the engine
///   sends each channel's records to one PE under one lock);
/// - `send` of a reply never waits for the receiver (a handler calls it on the
///   progress thread, and two progress threads replying to each other must not
///   deadlock); `send` of a request may wait until the receiver's progress thread
///   takes the record, never for anything else;
/// - `poll` delivers each record once, whole, to one caller.
pub(crate) trait HostLink: Send + Sync {
    /// Sends one record to PE `to` (on the reply channel if `reply`). The header's
    /// `payload_len` is `payload.len()` (which may exceed a ring's record limit).
    /// The payload must stay readable until `send` returns; a link that needs it
    /// longer copies it.
    fn send(&self, to: usize, reply: bool, header: &AmHeader, payload: LinkPayload);

    /// Hands the records that have arrived on the reply (or request) channel to
    /// `sink` and returns whether there was any.
    fn poll(&self, reply: bool, sink: &mut dyn LinkSink) -> bool;

    /// Whether a record waits on either channel (no record is taken).
    fn has_incoming(&self) -> bool;

    /// Completes every send still in flight (at shutdown).
    fn settle(&self);
}

/// Checks a record a link received from PE `src` with `payload` bytes against what the
/// engine expects on that channel (`role`): the link carries another process's words.
pub(crate) fn check_link_record(
    h: &AmHeader,
    src: usize,
    payload: usize,
    replies: bool,
    handlers: usize,
) -> Result<(), String> {
    if h.payload_len as usize != payload {
        return Err(format!(
            "record says {} payload bytes but carries {payload}",
            h.payload_len
        ));
    }
    let kind_bit = if replies { F_REPLY } else { 0 };
    if h.flags & !(KNOWN_FLAGS & !F_PAD) != 0
        || h.flags & F_REPLY != kind_bit
        || (!replies && h.flags & (F_ERROR | F_LAST) != 0)
    {
        return Err(format!(
            "record has flags {:#x} on the wrong channel",
            h.flags
        ));
    }
    if h.src_pe as usize != src {
        return Err(format!(
            "record claims PE {} but came from PE {src}",
            h.src_pe
        ));
    }
    if !replies && usize::from(h.handler) >= handlers {
        return Err(format!(
            "record names handler {} outside the table of {}",
            h.handler, handlers
        ));
    }
    Ok(())
}
