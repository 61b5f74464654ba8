//! Virtual time between PEs: how one PE's clock reaches another's through the data
//! they exchange. Owns the delivery stamps that writes leave in the target's control
//! block, the stamps a wait or a fetching atomic observes, and the merge of clocks at
//! barriers and collective arrivals. With the wall clock every function here does
//! nothing (waiting for real already orders time). It must not charge hops
//! (`emulate`) nor move bytes (`route`).
//!
//! **The rule** (`docs/architecture.md` §12): no PE observes data before its virtual
//! delivery time. A write into a PE's CPU memory stamps the words it covers with its
//! delivery instant, *before* the bytes move (so a reader that sees the bytes sees the
//! stamp: the stamp is a `fetch_max` with release order, then the copy or the AM; the
//! reader's acquire load of the word precedes its acquire load of the stamp). The
//! stamp is at least the delivery of the writer's latest put to the same PE, so a flag
//! written after data to that PE (with or without `fence`) never lets the data be
//! observed early; data to another PE is ordered before the flag only by `quiet`,
//! which moves the writer's clock past its delivery (OpenSHMEM's own rule). Counting
//! every PE's puts instead would stamp a flag to one PE with the delivery of a slow
//! transfer to another, and the flag's reader would wait for it in virtual time. A wait that
//! returns, or a fetching atomic, moves the reader's clock to at least the stamps of
//! the words it saw.
//!
//! Stamps sit in two tables per PE, each slot keeping the maximum it was given:
//! - a write of fewer than [`BLOCK_WRITE_WORDS`] words stamps each word's slot of
//!   [`STAMP_SLOTS`] word slots, by a hash of the word's offset;
//! - a larger write stamps the slot of each 4 KiB block it covers, of
//!   [`BLOCK_STAMP_SLOTS`] block slots, by a hash of the block's index (all of them if
//!   it covers that many blocks).
//!
//! A reader of a word takes the larger of its word slot and its block slot, so it sees
//! every write that covered it. A slot shared by two words (or blocks), or a word
//! written again, can make a reader's clock later than the write it waited for: the
//! result is still causal (never earlier), and it is exact (and deterministic) when
//! the writes to a slot happen in the same order in real and in virtual time, as in
//! every program whose communication pattern does not depend on timing. The block
//! table is what keeps large writes from reaching every word: with one table, a write
//! of 8 KiB or more stamped every slot, so a flag waited for elsewhere in the PE's
//! memory could take the time of a large message from another PE that happened to be
//! written first in real time but delivered later in virtual time.
//!
//! **Barriers.** Each member publishes its clock at arrival in its own control block
//! (slot by epoch parity); after the release every member takes the maximum over the
//! team plus the barrier's modeled cost (one small message per dissemination round
//! between nodes). The slot of epoch `e` is written again only at epoch `e + 2`, which
//! no member reaches before every member has left epoch `e + 1`, hence finished
//! reading epoch `e`'s slot.

use super::route::Route;
use super::{Inner, Place};
use crate::segment::{BLOCK_STAMP_SLOTS, STAMP_SLOTS};
use crate::team::TeamInner;
use std::sync::atomic::Ordering;

/// Writes of this many words or more stamp blocks rather than words.
pub(crate) const BLOCK_WRITE_WORDS: usize = 64;
/// Bytes of a block of the block table.
const BLOCK_BYTES: usize = 4096;

/// Fibonacci hashing of `key` onto `slots` (a power of two) slots.
#[inline]
fn hash_slot(key: u64, slots: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - slots.trailing_zeros())) as usize
}

/// The stamp slot of the 8-byte word at CPU byte `offset`.
#[inline]
fn slot(offset: usize) -> usize {
    hash_slot((offset / 8) as u64, STAMP_SLOTS)
}

/// The block stamp slot of the 4 KiB block holding CPU byte `offset`.
#[inline]
fn block_slot(offset: usize) -> usize {
    hash_slot((offset / BLOCK_BYTES) as u64, BLOCK_STAMP_SLOTS)
}

impl Inner {
    /// The instant a write to PE `target` issued now by this PE is stamped with: no
    /// earlier than `delivered` (its own modeled delivery, if charged), this PE's
    /// clock, and every put it issued before to `target`. Puts to other PEs do not
    /// count: OpenSHMEM orders them only by `quiet`, which moves this PE's clock past
    /// their delivery (so a flag to one PE after data to another, with `quiet`
    /// between, is still stamped after the data).
    pub(super) fn write_stamp(&self, target: usize, delivered: Option<u64>) -> u64 {
        let mut t = self.clock.now_ns();
        if let Some(d) = delivered {
            t = t.max(d);
        }
        if let Some(emu) = &self.emulation {
            t = t.max(emu.undelivered_to(target));
        }
        t
    }

    /// Stamps the words of `bytes` at CPU `offset` of PE `pe` with `t` (virtual clock
    /// only; call before the bytes move).
    pub(super) fn stamp(&self, pe: usize, offset: usize, bytes: usize, t: u64) {
        let control = self.segs.seg(pe).control();
        let words = bytes.div_ceil(8).max(1);
        if words < BLOCK_WRITE_WORDS {
            for w in 0..words {
                control.stamps[slot(offset.saturating_add(w * 8))].fetch_max(t, Ordering::AcqRel);
            }
            return;
        }
        let first = offset / BLOCK_BYTES;
        let last = offset.saturating_add(bytes.max(1) - 1) / BLOCK_BYTES;
        if last - first + 1 >= BLOCK_STAMP_SLOTS {
            for s in &control.block_stamps {
                s.fetch_max(t, Ordering::AcqRel);
            }
        } else {
            for b in first..=last {
                control.block_stamps[block_slot(b * BLOCK_BYTES)].fetch_max(t, Ordering::AcqRel);
            }
        }
    }

    /// Stamps the target of `route` at `offset` for a write of `bytes` delivered at
    /// `delivered`, if the clock is virtual and the target is CPU memory.
    pub(super) fn stamp_route(
        &self,
        route: &Route,
        offset: usize,
        bytes: usize,
        delivered: Option<u64>,
    ) {
        if self.clock.is_virtual() && route.place == Place::Cpu {
            self.stamp(
                route.pe,
                offset,
                bytes,
                self.write_stamp(route.pe, delivered),
            );
        }
    }

    /// Moves this PE's clock to at least the stamp of the word at CPU `offset` of PE
    /// `pe` (a wait on this PE saw it, or a fetching atomic read it).
    pub(super) fn observe(&self, pe: usize, offset: usize) {
        if self.clock.is_virtual() {
            let control = self.segs.seg(pe).control();
            let t = control.stamps[slot(offset)]
                .load(Ordering::Acquire)
                .max(control.block_stamps[block_slot(offset)].load(Ordering::Acquire));
            self.clock.reach(t);
        }
    }

    /// Publishes this PE's clock for `team`'s barrier of `epoch` (before arriving).
    pub(super) fn publish_barrier_clock(&self, team: &TeamInner, epoch: u64) {
        if self.clock.is_virtual() {
            let t = self.clock.now_ns();
            self.segs.mine().control().teams[team.slot].clock[(epoch & 1) as usize]
                .store(t, Ordering::Release);
        }
    }

    /// After `team`'s barrier of `epoch` released: this PE's clock becomes the latest
    /// member's arrival plus the barrier's modeled cost.
    pub(super) fn merge_barrier_clock(&self, team: &TeamInner, epoch: u64) {
        if !self.clock.is_virtual() {
            return;
        }
        let parity = (epoch & 1) as usize;
        let latest = (0..team.size)
            .map(|i| {
                let pe = team.world(i);
                self.segs.seg(pe).control().teams[team.slot].clock[parity].load(Ordering::Acquire)
            })
            .max()
            .unwrap_or(0);
        let groups = team.groups.len() as u64;
        let rounds = u64::from(64 - groups.saturating_sub(1).leading_zeros());
        let cost = self
            .emulation
            .as_ref()
            .map_or(0, |e| e.message_ns().saturating_mul(rounds));
        self.clock.reach(latest.saturating_add(cost));
    }

    /// Stamps a collective data arrival signalled to world PE `to` in `team`'s slot with
    /// `delivered` (the signal's modeled delivery, if charged).
    pub(super) fn stamp_arrival(&self, team: &TeamInner, to: usize, delivered: Option<u64>) {
        if self.clock.is_virtual() {
            let t = self.write_stamp(to, delivered);
            self.segs.seg(to).control().teams[team.slot]
                .arrival_stamp
                .fetch_max(t, Ordering::AcqRel);
        }
    }

    /// After this PE saw its collective arrivals in `team`'s slot: its clock reaches
    /// their latest delivery.
    pub(super) fn observe_arrivals(&self, team: &TeamInner) {
        if self.clock.is_virtual() {
            let t = self.segs.mine().control().teams[team.slot]
                .arrival_stamp
                .load(Ordering::Acquire);
            self.clock.reach(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_spread_neighbouring_words() {
        let slots: std::collections::HashSet<usize> = (0..64).map(|w| slot(w * 8)).collect();
        assert!(slots.len() >= 60, "{}", slots.len());
        assert!((0..10_000).all(|w| slot(w * 8) < STAMP_SLOTS));
        assert_eq!(slot(8), slot(15), "bytes of one word share a slot");
    }

    #[test]
    fn block_slots_spread_neighbouring_blocks() {
        let slots: std::collections::HashSet<usize> =
            (0..256).map(|b| block_slot(b * BLOCK_BYTES)).collect();
        assert_eq!(slots.len(), 256, "256 neighbouring blocks, 256 slots");
        assert_eq!(block_slot(0), block_slot(BLOCK_BYTES - 1));
    }
}
