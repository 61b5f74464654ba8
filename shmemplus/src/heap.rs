//! The symmetric heap allocator: hands out offsets inside one PE's heap.
//!
//! It is deterministic: the same sequence of `alloc`/`free` calls on every PE yields the
//! same offsets, which is what makes an object symmetric. It owns offsets only; it must
//! not touch memory, and it does not check symmetry across PEs (the collective layer in
//! `shmem` does, before it commits an allocation).

use std::collections::BTreeMap;

/// Minimum alignment of every allocation (DESIGN.md: at least 64 bytes).
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

    /// The alignment used for a block of `bytes` with element alignment `align`.
    pub fn alignment_for(bytes: usize, align: usize) -> usize {
        let base = align.max(MIN_ALIGN).next_power_of_two();
        if bytes >= PAGE_ALIGN_FROM {
            base.max(4096)
        } else {
            base
        }
    }

    /// Where a block of `bytes` would go, without taking it.
    pub fn plan(&self, bytes: usize, align: usize) -> Result<usize, Exhausted> {
        let bytes = bytes.max(1).div_ceil(MIN_ALIGN) * MIN_ALIGN;
        let align = Self::alignment_for(bytes, align);
        for (&off, &len) in &self.free {
            let start = off.div_ceil(align) * align;
            if start.checked_add(bytes).is_some_and(|end| end <= off + len) {
                return Ok(start);
            }
        }
        Err(Exhausted {
            requested: bytes,
            largest_free: self.free.values().copied().max().unwrap_or(0),
        })
    }

    /// Takes a block of `bytes` (rounded up to 64) aligned to at least `align`.
    pub fn alloc(&mut self, bytes: usize, align: usize) -> Result<usize, Exhausted> {
        let start = self.plan(bytes, align)?;
        let bytes = bytes.max(1).div_ceil(MIN_ALIGN) * MIN_ALIGN;
        let (&off, &len) = self
            .free
            .range(..=start)
            .next_back()
            .expect("plan returned a start inside a free block");
        self.free.remove(&off);
        if start > off {
            self.free.insert(off, start - off);
        }
        let end = start + bytes;
        if end < off + len {
            self.free.insert(end, off + len - end);
        }
        self.live.insert(start, bytes);
        Ok(start)
    }

    /// Returns the block at `offset`. Returns false if no live block starts there.
    pub fn free(&mut self, offset: usize) -> bool {
        let Some(mut len) = self.live.remove(&offset) else {
            return false;
        };
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
    }
}
