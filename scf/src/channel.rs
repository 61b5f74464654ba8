//! Channels: the one-way, bounded message queues between two tasks, built on
//! symmetric memory, remote atomics and one-sided puts.
//!
//! Owns the buffers, the two counters per channel and the order of the steps below. It
//! must not know what a task is or decide which task runs where (`run` does both).
//!
//! # The protocol
//!
//! Channel `c` carries one message of `bytes` per iteration from its sender (a task on
//! PE `s`) to its receiver (a task on PE `r`). Its memory:
//! - `buf[c]`: `SLOTS` message slots of `stride >= bytes` bytes, allocated in the
//!   receiver's place (its PE's CPU heap, or its board), so that a message is written
//!   once, straight where the receiver (or its kernel) reads it;
//! - `ready[c]` on PE `r` (CPU): how many messages have been delivered;
//! - `acked[c]` on PE `s` (CPU): how many messages the receiver has finished with.
//!
//! Message `i` (iteration `i`) goes into slot `i % SLOTS`.
//! - Send `i`: wait until `acked[c] >= i + 1 - SLOTS` (the slot's previous message,
//!   `i - SLOTS`, is released); put the bytes into the slot on PE `r` (`put` from a
//!   host buffer, `put_from` from a board); `fence`; atomically add 1 to `ready[c]` on
//!   PE `r`.
//! - Receive `i`: wait until `ready[c] >= i + 1`; read the slot (or let the kernel read
//!   it); atomically add 1 to `acked[c]` on PE `s`.
//!
//! Why it is correct:
//! - One sender and one receiver per channel, each handling iterations in increasing
//!   order, so `ready` and `acked` count up by one per message and never skip.
//! - The receiver reads slot `i % SLOTS` only after `ready >= i + 1`. The fence orders
//!   the data before the increment (OpenSHMEM's fence orders puts and atomics to one
//!   PE, board memory included), so the bytes of message `i` are there.
//! - The sender overwrites slot `i % SLOTS` only after `acked >= i + 1 - SLOTS`, that
//!   is after the receiver released message `i - SLOTS`, the slot's previous content.
//!   The receiver releases only after it (or its kernel, whose DONE it waited for) is
//!   done reading. So no message is overwritten before it is read.
//! - No deadlock: every PE runs its tasks in one global order (iteration, then the
//!   graph's topological order), each task receiving before sending. Take the blocked
//!   step that is first in that order. A blocked receive of `i` waits for the send of
//!   `i`, which comes earlier in the order (its task precedes in topological order);
//!   a blocked send of `i` waits for the receive of `i - SLOTS`, earlier too. The PE
//!   owing that earlier step is blocked at a step no later than it, contradicting the
//!   choice. So some step can always proceed.
//! - The counters are `u64` and grow by one per iteration: the graph's iteration limit
//!   (2^32) keeps them far from wrapping. Every value read from another PE is a
//!   counter compared with `>=`; the slot index comes from the local iteration, never
//!   from shared memory.
//!
//! `tests/tests/scf.rs` runs graphs of several hundred iterations with one slot
//! (every step waits on its partner) and checks each message's contents.

use crate::error::Result;
use crate::graph::{Placement, TaskGraph};
use shmemplus::{Cmp, Place, Shmem, SymVec};

/// Message slots per channel: the sender may run this many iterations ahead.
pub const SLOTS: u64 = 2;

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
        let n = graph.channels.len().max(1);
        let ready = shmem.alloc::<u64>(n, Place::Cpu)?;
        let acked = shmem.alloc::<u64>(n, Place::Cpu)?;
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

    /// Bytes per message of channel `c`.
    pub(crate) fn bytes(&self, c: usize) -> usize {
        self.bytes[c]
    }

    /// Sender: waits until slot `i % SLOTS` of channel `c` is free.
    pub(crate) fn wait_slot(&self, shmem: &Shmem, c: usize, i: u64) -> Result<()> {
        if let Some(released) = (i + 1).checked_sub(self.slots) {
            if released > 0 {
                shmem.wait_until(&self.acked, c, Cmp::Ge, released)?;
            }
        }
        Ok(())
    }

    /// Sender: delivers message `i` of channel `c` from host memory, then signals it.
    pub(crate) fn deliver(&self, shmem: &Shmem, c: usize, i: u64, data: &[u8]) -> Result<()> {
        let r = self.ends[c].1.pe;
        shmem.put(&self.bufs[c], self.slot(c, i), data, r)?;
        self.signal(shmem, c)
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
        self.signal(shmem, c)
    }

    fn signal(&self, shmem: &Shmem, c: usize) -> Result<()> {
        shmem.fence()?;
        shmem.atomic_add(&self.ready, c, 1u64, self.ends[c].1.pe)?;
        Ok(())
    }

    /// Receiver: waits until message `i` of channel `c` has arrived.
    pub(crate) fn wait_message(&self, shmem: &Shmem, c: usize, i: u64) -> Result<()> {
        shmem.wait_until(&self.ready, c, Cmp::Ge, i + 1)?;
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
    pub(crate) fn release(&self, shmem: &Shmem, c: usize) -> Result<()> {
        shmem.atomic_add(&self.acked, c, 1u64, self.ends[c].0.pe)?;
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
