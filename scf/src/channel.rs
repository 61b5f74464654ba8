//! Channels: the one-way, bounded message queues between two tasks, built on
//! symmetric memory, remote atomics and one-sided puts.
//!
//! Owns the buffers, the two counters per channel and the order of the steps below. It
//! must not know what a task is or decide which task runs where (`run` does both).
//!
//! # The protocol
//!
//! Channel `c` carries one message of `bytes` per iteration from its sender (a task on
//! PE `s`) to its receiver (a task on PE `r`). Message `i` (iteration `i`) goes into
//! slot `k = i % SLOTS`. The channel's memory:
//! - `buf[c]`: `SLOTS` message slots of `stride >= bytes` bytes, allocated in the
//!   receiver's place (its PE's CPU heap, or its board), so that a message is written
//!   once, straight where the receiver (or its kernel) reads it;
//! - `ready[c][k]` on PE `r` (CPU): `i + 1` once message `i` is in slot `k`;
//! - `acked[c][k]` on PE `s` (CPU): `i + 1` once the receiver is done with message `i`
//!   of slot `k`.
//!
//! The steps:
//! - Send `i`: if `i >= SLOTS`, wait until `acked[c][k] >= i - SLOTS + 1` (the slot's
//!   previous message, `i - SLOTS`, is released); put the bytes into slot `k` on PE `r`
//!   (`put` from a host buffer, `put_from` from a board); `fence`; atomically set
//!   `ready[c][k] = i + 1` on PE `r`.
//! - Receive `i`: wait until `ready[c][k] >= i + 1`; read the slot (or let the kernel
//!   read it); atomically set `acked[c][k] = i + 1` on PE `s`.
//!
//! Why it is correct:
//! - One sender and one receiver per channel, each handling iterations in increasing
//!   order. Each counter word has one writer, and the values it is given for slot `k`
//!   (`k + 1`, `k + SLOTS + 1`, ...) increase, so `>=` on them is exact.
//! - The receiver reads slot `k` for message `i` only after `ready[c][k] >= i + 1`, which
//!   only the send of message `i` (or a later one in that slot, which cannot happen
//!   before message `i` is released) sets. The fence orders the data before the counter
//!   (OpenSHMEM's fence orders puts and atomics to one PE, board memory included), so
//!   the bytes of message `i` are there.
//! - The sender overwrites slot `k` with message `i` only after `acked[c][k] >= i -
//!   SLOTS + 1`, that is after the receiver released message `i - SLOTS`, the slot's
//!   previous content. The receiver releases only after it (or its kernel, whose DONE it
//!   waited for) is done reading. So no message is overwritten before it is read.
//! - One word per slot, rather than one counter per channel, is what makes the virtual
//!   clock exact: a waiting PE's clock reaches the delivery time stamped on the word it
//!   saw, and the word of slot `k` holds message `i`'s stamp until message `i` is
//!   released. A single counter could already carry the next message's later stamp
//!   when the receiver looks, and the run's time would depend on real-time scheduling.
//!   For the same reason the counters sit in 4 KiB blocks of their own, apart from the
//!   message slots whose large puts stamp whole blocks.
//! - No deadlock: every PE runs its tasks in one global order (iteration, then the
//!   graph's topological order), each task receiving before sending. Take the blocked
//!   step that is first in that order. A blocked receive of `i` waits for the send of
//!   `i`, which comes earlier in the order (its task precedes in topological order);
//!   a blocked send of `i` waits for the receive of `i - SLOTS`, earlier too. The PE
//!   owing that earlier step is blocked at a step no later than it, contradicting the
//!   choice. So some step can always proceed.
//! - The counters are `u64` and at most the iteration count plus one (the graph's
//!   limit is 2^32). Every value read from another PE is a counter compared with `>=`;
//!   the slot index comes from the local iteration, never from shared memory.
//!
//! `tests/tests/scf.rs` runs graphs of several hundred iterations with one slot
//! (every step waits on its partner) and checks each message's contents.

use crate::error::Result;
use crate::graph::{Placement, TaskGraph};
use shmemplus::{Cmp, Place, Shmem, SymVec};

/// Message slots per channel: the sender may run this many iterations ahead.
pub const SLOTS: u64 = 2;

/// Alignment and size granule of the counter arrays: the virtual clock's block of
/// stamps (4 KiB).
const COUNTER_BLOCK: usize = 4096;

/// Slot stride alignment in bytes (a cache line, and a multiple of the boards' DMA
/// alignment).
const STRIDE_ALIGN: u64 = 64;

/// Every channel of a graph on this PE's side.
pub(crate) struct Channels {
    ready: SymVec<u64>,
    acked: SymVec<u64>,
    bufs: Vec<SymVec<u8>>,
    stride: Vec<usize>,
    ends: Vec<(Placement, Placement)>,
    bytes: Vec<usize>,
    slots: u64,
}

/// The slot stride for messages of `bytes`.
fn stride_of(bytes: u64) -> Result<usize> {
    let stride = bytes
        .checked_next_multiple_of(STRIDE_ALIGN)
        .and_then(|s| usize::try_from(s).ok())
        .ok_or_else(|| shmemplus::Error::SizeOverflow {
            what: format!("an SCF channel slot for messages of {bytes} bytes"),
        })?;
    Ok(stride)
}

impl Channels {
    /// Allocates every channel's slots and counters: collective, in channel order.
    pub(crate) fn alloc(
        shmem: &Shmem,
        graph: &TaskGraph,
        places: &[Placement],
        slots: u64,
    ) -> Result<Channels> {
        let words = usize::try_from(slots)
            .ok()
            .and_then(|k| graph.channels.len().max(1).checked_mul(k))
            .ok_or_else(|| shmemplus::Error::SizeOverflow {
                what: format!(
                    "{slots} counters for each of {} channels",
                    graph.channels.len()
                ),
            })?;
        // The counters fill 4 KiB blocks of their own: under the virtual clock a large
        // message stamps the blocks it covers, and a counter sharing one would take
        // that message's delivery time (see the module doc, "One word per slot").
        let counter_words = words
            .checked_next_multiple_of(COUNTER_BLOCK / 8)
            .ok_or_else(|| shmemplus::Error::SizeOverflow {
                what: format!("{words} SCF channel counters"),
            })?;
        let ready = shmem.alloc_aligned::<u64>(counter_words, COUNTER_BLOCK, Place::Cpu)?;
        let acked = shmem.alloc_aligned::<u64>(counter_words, COUNTER_BLOCK, Place::Cpu)?;
        let mut bufs = Vec::with_capacity(graph.channels.len());
        let mut stride = Vec::with_capacity(graph.channels.len());
        let mut ends = Vec::with_capacity(graph.channels.len());
        let mut bytes = Vec::with_capacity(graph.channels.len());
        for c in &graph.channels {
            let s = stride_of(c.bytes)?;
            let len = usize::try_from(slots)
                .ok()
                .and_then(|k| s.checked_mul(k))
                .ok_or_else(|| shmemplus::Error::SizeOverflow {
                    what: format!("{slots} SCF channel slots of {s} bytes"),
                })?;
            let to = places[c.to];
            let place = match to.board {
                Some(b) => Place::Fpga(b),
                None => Place::Cpu,
            };
            bufs.push(shmem.alloc::<u8>(len, place)?);
            stride.push(s);
            ends.push((places[c.from], to));
            // Graph validation bounds bytes by MAX_MESSAGE_BYTES (1 GiB): fits a usize.
            bytes.push(c.bytes as usize);
        }
        Ok(Channels {
            ready,
            acked,
            bufs,
            stride,
            ends,
            bytes,
            slots,
        })
    }

    /// The slot of iteration `i` (an element index into `bufs[c]`).
    fn slot(&self, c: usize, i: u64) -> usize {
        // i % slots < slots, and stride * slots was checked at allocation.
        (i % self.slots) as usize * self.stride[c]
    }

    /// The counter word of channel `c`'s slot for iteration `i` (an index into `ready`
    /// and `acked`, whose size channels x slots was checked at allocation).
    fn word(&self, c: usize, i: u64) -> usize {
        c * self.slots as usize + (i % self.slots) as usize
    }

    /// Bytes per message of channel `c`.
    pub(crate) fn bytes(&self, c: usize) -> usize {
        self.bytes[c]
    }

    /// Sender: waits until slot `i % SLOTS` of channel `c` is free.
    pub(crate) fn wait_slot(&self, shmem: &Shmem, c: usize, i: u64) -> Result<()> {
        if let Some(previous) = i.checked_sub(self.slots) {
            shmem.wait_until(&self.acked, self.word(c, i), Cmp::Ge, previous + 1)?;
        }
        Ok(())
    }

    /// Sender: delivers message `i` of channel `c` from host memory, then signals it.
    pub(crate) fn deliver(&self, shmem: &Shmem, c: usize, i: u64, data: &[u8]) -> Result<()> {
        let r = self.ends[c].1.pe;
        shmem.put(&self.bufs[c], self.slot(c, i), data, r)?;
        self.signal(shmem, c, i)
    }

    /// Sender: delivers message `i` of channel `c` from `src[offset..offset + bytes]`,
    /// an object of this PE (on its board), then signals it.
    pub(crate) fn deliver_from(
        &self,
        shmem: &Shmem,
        c: usize,
        i: u64,
        src: &SymVec<u8>,
        offset: usize,
    ) -> Result<()> {
        let r = self.ends[c].1.pe;
        shmem.put_from(
            &self.bufs[c],
            self.slot(c, i),
            src,
            offset,
            self.bytes[c],
            r,
        )?;
        self.signal(shmem, c, i)
    }

    fn signal(&self, shmem: &Shmem, c: usize, i: u64) -> Result<()> {
        shmem.fence()?;
        shmem.atomic_set(&self.ready, self.word(c, i), i + 1, self.ends[c].1.pe)?;
        Ok(())
    }

    /// Receiver: waits until message `i` of channel `c` has arrived.
    pub(crate) fn wait_message(&self, shmem: &Shmem, c: usize, i: u64) -> Result<()> {
        shmem.wait_until(&self.ready, self.word(c, i), Cmp::Ge, i + 1)?;
        Ok(())
    }

    /// Receiver: copies message `i` of channel `c` out of its slot (a CPU receiver).
    pub(crate) fn read(&self, shmem: &Shmem, c: usize, i: u64) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.bytes[c]];
        shmem.local_read(&self.bufs[c], self.slot(c, i), &mut out)?;
        Ok(out)
    }

    /// Receiver: where message `i` of channel `c` is, as (board heap offset, bytes)
    /// for a kernel (a board receiver).
    pub(crate) fn located(&self, c: usize, i: u64) -> (u64, u64) {
        (
            (self.bufs[c].heap_offset() + self.slot(c, i)) as u64,
            self.bytes[c] as u64,
        )
    }

    /// Receiver: releases message `i`'s slot to the sender.
    pub(crate) fn release(&self, shmem: &Shmem, c: usize, i: u64) -> Result<()> {
        shmem.atomic_set(&self.acked, self.word(c, i), i + 1, self.ends[c].0.pe)?;
        Ok(())
    }

    /// Frees every buffer (collective, reverse order of allocation).
    pub(crate) fn free(self, shmem: &Shmem) -> Result<()> {
        for b in self.bufs.into_iter().rev() {
            shmem.free(b)?;
        }
        shmem.free(self.acked)?;
        shmem.free(self.ready)?;
        Ok(())
    }
}
