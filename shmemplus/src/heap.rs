//! The symmetric heap allocator: hands out offsets inside one PE's heap.
//!
//! It is deterministic: the same sequence of `alloc`/`free` calls on every PE yields the
//! same offsets, which is what makes an object symmetric. It owns offsets only; it must
//! not touch memory, and it does not check symmetry across PEs (the collective layer in
//! `shmem` does, before it commits an allocation).

use std::collections::BTreeMap;

/// Minimum alignment of every allocation (docs/architecture.md §5.3: at least 64 bytes).
pub const MIN_ALIGN: usize = 64;
/// Allocations of at least this size are page-aligned, which keeps large copies away
/// from 4 KiB aliasing between unrelated buffers.
pub const PAGE_ALIGN_FROM: usize = 64 << 10;

/// First-fit allocator over `[0, size)` with coalescing on free.
#[derive(Debug, Clone)]
pub struct HeapAllocator {
    size: usize,
    /// Free blocks: offset -> length.
    free: BTreeMap<usize, usize>,
    /// Live blocks: offset -> length (as reserved, after alignment padding is split off).
    live: BTreeMap<usize, usize>,
}

/// Why an allocation could not be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    /// Bytes asked for, rounded up.
    pub requested: usize,
    /// The largest free block.
    pub largest_free: usize,
}

impl HeapAllocator {
    /// An empty heap of `size` bytes.
    pub fn new(size: usize) -> HeapAllocator {
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        HeapAllocator {
            size,
            free,
            live: BTreeMap::new(),
        }
    }

    /// Heap size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The alignment used for a block of `bytes` with element alignment `align`, or
    /// `None` when no power of two at least `align` fits in a `usize`.
    pub fn alignment_for(bytes: usize, align: usize) -> Option<usize> {
        let base = align.max(MIN_ALIGN).checked_next_power_of_two()?;
        Some(if bytes >= PAGE_ALIGN_FROM {
            base.max(4096)
        } else {
            base
        })
    }

    /// The bytes a request of `bytes` reserves: at least 1, rounded up to `MIN_ALIGN`;
    /// `None` when the rounding overflows (no heap can hold such a block).
    fn reserved(bytes: usize) -> Option<usize> {
        bytes.max(1).checked_next_multiple_of(MIN_ALIGN)
    }

    /// Where a block of `bytes` would go, without taking it.
    ///
    /// Never panics: a request whose rounding or alignment overflows simply does not
    /// fit, and is [`Exhausted`] like any other request larger than the free space.
    pub fn plan(&self, bytes: usize, align: usize) -> Result<usize, Exhausted> {
        self.place(bytes, align).map(|(start, _)| start)
    }

    /// The start and reserved length of the first free block that fits the request.
    fn place(&self, bytes: usize, align: usize) -> Result<(usize, usize), Exhausted> {
        let exhausted = |requested| Exhausted {
            requested,
            largest_free: self.free.values().copied().max().unwrap_or(0),
        };
        let Some(reserved) = Self::reserved(bytes) else {
            return Err(exhausted(bytes));
        };
        let Some(align) = Self::alignment_for(reserved, align) else {
            return Err(exhausted(reserved));
        };
        for (&off, &len) in &self.free {
            // Every free block lies inside [0, size), so `off + len` cannot overflow;
            // the alignment and the end of the new block are checked all the same.
            let Some(start) = off.checked_next_multiple_of(align) else {
                continue;
            };
            let fits = start
                .checked_add(reserved)
                .zip(off.checked_add(len))
                .is_some_and(|(end, free_end)| end <= free_end);
            if fits {
                return Ok((start, reserved));
            }
        }
        Err(exhausted(reserved))
    }

    /// Takes a block of `bytes` (rounded up to 64) aligned to at least `align`.
    pub fn alloc(&mut self, bytes: usize, align: usize) -> Result<usize, Exhausted> {
        let (start, reserved) = self.place(bytes, align)?;
        let Some((&off, &len)) = self.free.range(..=start).next_back() else {
            // `place` returned a start inside a free block; keep the heap unchanged if
            // that ever failed to hold rather than panic.
            return Err(Exhausted {
                requested: reserved,
                largest_free: self.free.values().copied().max().unwrap_or(0),
            });
        };
        // `place` proved off <= start and start + reserved <= off + len (no overflow).
        self.free.remove(&off);
        if start > off {
            self.free.insert(off, start - off);
        }
        let end = start + reserved;
        if end < off + len {
            self.free.insert(end, off + len - end);
        }
        self.live.insert(start, reserved);
        Ok(start)
    }

    /// Returns the block at `offset`. Returns false if no live block starts there.
    pub fn free(&mut self, offset: usize) -> bool {
        let Some(mut len) = self.live.remove(&offset) else {
            return false;
        };
        // Free and live blocks are disjoint and lie inside [0, size), so every sum of
        // an offset and lengths of adjacent blocks below is at most `size`.
        let mut start = offset;
        if let Some((&prev, &plen)) = self.free.range(..offset).next_back() {
            if prev + plen == offset {
                self.free.remove(&prev);
                start = prev;
                len += plen;
            }
        }
        if let Some(nlen) = self.free.remove(&(start + len)) {
            len += nlen;
        }
        self.free.insert(start, len);
        true
    }

    /// Bytes in live blocks.
    #[cfg(test)]
    pub fn used(&self) -> usize {
        self.live.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn aligned_and_disjoint() {
        let mut h = HeapAllocator::new(1 << 20);
        let a = h.alloc(10, 8).unwrap();
        let b = h.alloc(100, 8).unwrap();
        let c = h.alloc(100_000, 8).unwrap();
        assert_eq!(a % 64, 0);
        assert_eq!(b % 64, 0);
        assert_eq!(c % 4096, 0);
        assert!(a + 64 <= b && b + 128 <= c);
    }

    #[test]
    fn exhaustion_reports_sizes() {
        let mut h = HeapAllocator::new(4096);
        h.alloc(4000, 8).unwrap();
        let e = h.alloc(200, 8).unwrap_err();
        assert_eq!(e.requested, 256);
        assert!(e.largest_free < 256);
    }

    #[test]
    fn free_coalesces_back_to_one_block() {
        let mut h = HeapAllocator::new(1 << 16);
        let xs: Vec<usize> = (0..8).map(|_| h.alloc(1000, 8).unwrap()).collect();
        for &x in xs.iter().rev().step_by(2) {
            assert!(h.free(x));
        }
        for &x in xs.iter().step_by(2) {
            assert!(h.free(x));
        }
        assert!(!h.free(xs[0]), "double free is refused");
        assert_eq!(h.used(), 0);
        assert_eq!(h.free.len(), 1);
        assert_eq!(h.alloc(1 << 16, 8).unwrap(), 0);
    }

    /// Checks the allocator's invariants: free and live blocks lie inside the heap,
    /// never overlap, and together cover it exactly.
    fn check_invariants(h: &HeapAllocator) -> Result<(), TestCaseError> {
        let mut blocks: Vec<(usize, usize)> = h
            .free
            .iter()
            .chain(&h.live)
            .map(|(&o, &l)| (o, l))
            .collect();
        blocks.sort_unstable();
        let mut covered = 0usize;
        for &(off, len) in &blocks {
            prop_assert_eq!(off, covered, "blocks overlap or leave a gap at {}", covered);
            let end = off.checked_add(len);
            prop_assert!(
                end.is_some_and(|e| e <= h.size),
                "block {off}+{len} passes the heap end"
            );
            covered = off + len;
        }
        prop_assert_eq!(covered, h.size);
        Ok(())
    }

    /// Request sizes that stress the rounding: small ones, ones near the heap size and
    /// ones near `usize::MAX`, where rounding up to 64 or to an alignment overflows.
    fn any_request() -> impl Strategy<Value = usize> {
        prop_oneof![
            0usize..5000,
            (0usize..64).prop_map(|d| usize::MAX - d),
            (usize::MAX / 2 - 4096)..(usize::MAX / 2 + 4096),
            any::<usize>(),
        ]
    }

    /// Heap sizes, from tiny to the whole address range.
    fn any_heap() -> impl Strategy<Value = usize> {
        prop_oneof![
            0usize..(1 << 20),
            (0usize..4096).prop_map(|d| usize::MAX - d),
            any::<usize>(),
        ]
    }

    #[test]
    fn huge_requests_are_exhausted_not_wrapped() {
        let mut h = HeapAllocator::new(1 << 20);
        for bytes in [
            usize::MAX,
            usize::MAX - 63,
            usize::MAX - 64,
            usize::MAX / 2 + 1,
        ] {
            let e = h.alloc(bytes, 8).unwrap_err();
            assert!(e.requested >= bytes.min(usize::MAX - 63), "{e:?}");
            assert_eq!(e.largest_free, 1 << 20);
        }
        // An alignment no power of two can hold is refused too.
        assert!(h.alloc(64, usize::MAX).is_err());
        assert_eq!(h.used(), 0, "a refused request takes nothing");
        // A heap spanning the whole address range: a request just below its size is
        // rounded up to 64 without overflow and placed inside it.
        let mut all = HeapAllocator::new(usize::MAX);
        assert_eq!(all.alloc(usize::MAX - 100, 8), Ok(0));
        assert_eq!(all.used(), usize::MAX - 63);
        let e = all.alloc(64, 8).unwrap_err();
        assert_eq!((e.requested, e.largest_free), (64, 63));
    }

    proptest! {
        /// Random alloc/free sequences: blocks never overlap, stay in bounds, and two
        /// allocators fed the same sequence agree (the heap is deterministic).
        #[test]
        fn random_sequences(ops in proptest::collection::vec((any::<bool>(), 1usize..20_000, any::<u8>()), 1..200)) {
            let mut a = HeapAllocator::new(1 << 20);
            let mut b = HeapAllocator::new(1 << 20);
            let mut live: Vec<(usize, usize)> = Vec::new();
            for (is_alloc, size, pick) in ops {
                if is_alloc || live.is_empty() {
                    let ra = a.alloc(size, 8);
                    prop_assert_eq!(ra, b.alloc(size, 8));
                    if let Ok(off) = ra {
                        prop_assert!(off + size <= 1 << 20);
                        for &(o, s) in &live {
                            prop_assert!(off + size <= o || o + s <= off, "overlap");
                        }
                        live.push((off, size));
                    }
                } else {
                    let (off, _) = live.swap_remove(pick as usize % live.len());
                    prop_assert!(a.free(off));
                    prop_assert!(b.free(off));
                }
            }
            let total: usize = a.free.values().sum::<usize>() + a.used();
            prop_assert_eq!(total, 1 << 20);
        }

        /// Any heap size, any request size and alignment up to `usize::MAX`: `plan` and
        /// `alloc` never panic, agree with each other, and every block they hand out is
        /// aligned, inside the heap, at least as long as asked and disjoint from the
        /// others; a refusal reports at least the bytes asked for and changes nothing.
        #[test]
        fn any_size_never_panics_and_stays_inside(
            size in any_heap(),
            ops in proptest::collection::vec(
                (any_request(), prop_oneof![Just(1usize), Just(8), Just(4096), any::<usize>()], any::<bool>(), any::<u8>()),
                1..60,
            ),
        ) {
            let mut h = HeapAllocator::new(size);
            let mut live: Vec<(usize, usize)> = Vec::new();
            for (bytes, align, is_alloc, pick) in ops {
                if !is_alloc && !live.is_empty() {
                    let (off, _) = live.swap_remove(pick as usize % live.len());
                    prop_assert!(h.free(off));
                    check_invariants(&h)?;
                    continue;
                }
                let planned = h.plan(bytes, align);
                let before = (h.free.clone(), h.live.clone());
                match h.alloc(bytes, align) {
                    Ok(off) => {
                        prop_assert_eq!(planned, Ok(off));
                        let end = off.checked_add(bytes.max(1));
                        prop_assert!(end.is_some_and(|e| e <= size), "block {off}+{bytes} outside a heap of {size}");
                        // Success means the alignment's power of two exists.
                        prop_assert_eq!(off % align.max(MIN_ALIGN).next_power_of_two(), 0);
                        for &(o, l) in &live {
                            prop_assert!(off + bytes.max(1) <= o || o + l <= off, "overlap");
                        }
                        live.push((off, bytes.max(1)));
                    }
                    Err(e) => {
                        prop_assert_eq!(planned, Err(e));
                        prop_assert!(e.requested >= bytes.max(1), "{:?} for {} bytes", e, bytes);
                        prop_assert_eq!((h.free.clone(), h.live.clone()), before, "a refused request changed the heap");
                    }
                }
                check_invariants(&h)?;
            }
        }
    }
}
