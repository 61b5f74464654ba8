//! The wire format of one active-message record: the flags, the built-in handler ids,
//! the fixed 64-byte header, and the validation of a header read from a ring
//! (`check_record`).
//!
//! This module owns what a record *is* and when it can be trusted. It must not touch
//! ring memory (that is `ring`) or act on a record (that is the engine).

use bytemuck::{Pod, Zeroable};

/// Record flag: padding to the end of the ring; skip it.
pub(super) const F_PAD: u16 = 1;
/// Record flag: a reply (carries the request's token).
pub(super) const F_REPLY: u16 = 2;
/// Record flag: the reply reports an error; the payload is its message.
pub(super) const F_ERROR: u16 = 4;
/// Record flag: last record of a reply.
pub(super) const F_LAST: u16 = 8;

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
/// Built-in handler (module `control`): apply `ControlOp` `args[0]` to the word at
/// byte `args[1]` of this PE's control block with operand `args[2]`, then wake
/// signal `args[3]` (`Wake`): the control path to a PE of another host.
pub const H_CONTROL: u16 = 8;
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

pub(super) const HDR: usize = size_of::<AmHeader>();

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

    /// A pad record of `len` bytes (to the end of the ring).
    pub(super) fn pad(len: u32) -> AmHeader {
        AmHeader {
            len,
            flags: F_PAD,
            ..AmHeader::zeroed()
        }
    }
}

/// Flags a record may carry.
pub(super) const KNOWN_FLAGS: u16 = F_PAD | F_REPLY | F_ERROR | F_LAST;

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
pub(super) struct RingRole {
    /// The PE that produces into the ring.
    pub(super) producer: usize,
    /// Replies (true) or requests (false).
    pub(super) replies: bool,
    /// Size of the handler table (request handler ids must be below it).
    pub(super) handlers: usize,
}

/// Checks a record header against the ring state it was read from: `pos` is its ring
/// position, `avail` the bytes published from it on (tail - head), `cap` the ring size.
/// Only the first 8 bytes (length and flags) of a pad record are meaningful.
pub(super) fn check_record(
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
