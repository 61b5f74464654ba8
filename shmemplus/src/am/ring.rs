//! One single-producer/single-consumer ring of records in shared memory: pushing a
//! record (producer side) and peeking/advancing (consumer side), with every field the
//! consumer reads checked by `record::check_record` first.
//!
//! Correctness of the ring: the producer writes the record bytes, then publishes them
//! with a Release store of `tail`; the consumer loads `tail` with Acquire, so it sees
//! the bytes, and gives them back with a Release store of `head`, which the producer
//! loads with Acquire before reusing the space. Each side is one thread at a time (the
//! producer's process-local lock, the consumer's pump or progress thread), so the two
//! counters each have a single writer.
//!
//! This module owns ring memory. It must not decide what a record means, wait, or
//! notify anyone (the engine does both).

use super::record::{check_record, AmHeader, BadRecord, RingRole, F_PAD, HDR};
use crate::segment::{JobSegments, RingHeader};
use bytemuck::Zeroable;
use std::sync::atomic::Ordering;

/// The bytes of a payload to send, by address: either a borrowed slice or memory that
/// another PE may write concurrently (the symmetric heap, served to a get), which must
/// not be viewed as a `&[u8]` (a shared reference promises no concurrent writes). The
/// only read is the raw copy into the ring.
#[derive(Clone, Copy)]
pub(super) struct RawBytes {
    pub(super) ptr: *const u8,
    pub(super) len: usize,
    /// The bytes stay mapped for the engine's life (heap bytes), so a link may read
    /// them after the send returns; a borrowed slice only until then.
    pub(super) lives_with_engine: bool,
}

impl RawBytes {
    pub(super) fn of(bytes: &[u8]) -> RawBytes {
        RawBytes {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
            lives_with_engine: false,
        }
    }

    /// The `len` bytes at `ptr`, from this PE's heap.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay mapped and readable for the engine's life (until
    /// its link is settled at shutdown); its contents may change concurrently
    /// (readers copy them raw, never by reference).
    pub(super) unsafe fn heap(ptr: *const u8, len: usize) -> RawBytes {
        RawBytes {
            ptr,
            len,
            lives_with_engine: true,
        }
    }

    /// The `n` bytes from `start` on; the caller keeps `start + n <= len`.
    pub(super) fn range(self, start: usize, n: usize) -> RawBytes {
        debug_assert!(start + n <= self.len);
        RawBytes {
            ptr: self.ptr.wrapping_add(start),
            len: n,
            lives_with_engine: self.lives_with_engine,
        }
    }
}

/// A view of one SPSC ring.
pub(super) struct Ring<'a> {
    hdr: &'a RingHeader,
    data: *mut u8,
    cap: u64,
}

impl<'a> Ring<'a> {
    pub(super) fn of(segs: &'a JobSegments, owner: usize, index: usize) -> Ring<'a> {
        let Some(seg) = segs.peer(owner) else {
            // The engine reaches a PE of another host through its link, never a ring.
            unreachable!("ring of PE {owner}, whose segment is not mapped here")
        };
        let (hdr, data) = seg.ring(index);
        Ring {
            hdr,
            data,
            cap: seg.layout().ring_bytes as u64,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.hdr.head.load(Ordering::Acquire) == self.hdr.tail.load(Ordering::Acquire)
    }

    /// Appends one record if there is room. Only the producer PE calls this, under its
    /// process-local producer lock for this ring. The caller keeps `payload` within
    /// `max_payload`, so a record fits a quarter of the ring.
    pub(super) fn try_push(&self, mut h: AmHeader, payload: RawBytes) -> bool {
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
            let pad = AmHeader::pad(contiguous as u32);
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
    pub(super) fn peek(&self, role: RingRole) -> Result<Option<(AmHeader, &[u8])>, BadRecord> {
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
    pub(super) fn advance(&self, h: &AmHeader) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::am::record::{F_LAST, F_REPLY, H_PUT, USER_BASE, USER_HANDLERS};
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
