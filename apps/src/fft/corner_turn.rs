//! The corner turn: the distributed transpose of an N x N matrix whose rows are split
//! in equal blocks of `R = N / P` rows over the P PEs.
//!
//! PE `p` holds rows `p*R .. (p+1)*R`. Cut into P square blocks of R x R, its block `q`
//! (columns `q*R ..`) belongs to PE `q` after the transpose: source row `i`, column
//! `q*R + j` becomes row `j`, column `p*R + i` of PE `q`'s rows of the transpose.
//!
//! There is no pack or unpack pass. The source rows are read once, a few columns at a
//! time, into a small tile that stays in the cache ([`TILE_BYTES`]); each row of the
//! tile is then one `put_nbi` of up to `R` contiguous elements straight to its place in
//! the destination PE's symmetric object. The memory traffic is one read of the source
//! and one write of the destination, as in a serial transpose. The rows can go in
//! slabs ([`CornerTurn::turn_slab`]), so that a slab is turned while it is still in the
//! cache from its row FFTs; `quiet` and a barrier complete the turn.
//!
//! This module owns that data movement and the symmetric objects it lands in. It must
//! not compute FFTs or time anything (the `fft2d` binary does both).

use super::serial::{transpose_strided, transpose_to_ptr};
use super::Complex32;
use shmemplus::{Place, Shmem, SymVec};

/// Source rows per tile: each tile row is one put of this many elements (2 KiB), and a
/// tile reads this many rows, few enough pages for the TLB.
pub const TILE_ROWS: usize = 256;

/// The tile of one put round: about this many bytes, so that it stays in a core's L2
/// cache between its transpose and its puts.
pub const TILE_BYTES: usize = 256 << 10;

/// The symmetric objects of the corner turns of one matrix size and job, and the tile.
/// Make it once; use it for every turn.
pub struct CornerTurn {
    n: usize,
    rows: usize,
    objects: [SymVec<Complex32>; 2],
    tile: Vec<Complex32>,
}

/// One of the two symmetric objects of a [`CornerTurn`], each `R * N` elements: the
/// first turn lands in one and the second in the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    /// The first object.
    A,
    /// The second object.
    B,
}

impl CornerTurn {
    /// Allocates the objects for an `n` x `n` matrix (collective). `n` must be a
    /// multiple of the number of PEs.
    pub fn new(shmem: &Shmem, n: usize) -> anyhow::Result<CornerTurn> {
        let p = shmem.n_pes() as usize;
        if n == 0 || n % p != 0 {
            anyhow::bail!(
                "the corner turn needs N to be a positive multiple of the {p} PEs, got N = {n}"
            );
        }
        let rows = n / p;
        let len = rows
            .checked_mul(n)
            .ok_or_else(|| anyhow::anyhow!("the corner turn: {rows} x {n} elements overflow"))?;
        let a = shmem.alloc::<Complex32>(len, Place::Cpu)?;
        let b = shmem.alloc::<Complex32>(len, Place::Cpu)?;
        // Touch both objects now, so that the turns do not pay for first-touch page
        // faults (measured: the first turn of 128 MiB took 7x longer than the next).
        // At least one row of R: R <= N <= 16384 < 2^17, and R <= len.
        let zeros = vec![Complex32::new(0.0, 0.0); len.min(1 << 17)];
        for obj in [&a, &b] {
            for at in (0..len).step_by(zeros.len().max(1)) {
                let k = zeros.len().min(len - at);
                shmem.local_write(obj, at, &zeros[..k])?;
            }
        }
        shmem.barrier_all()?;
        // Then write zeros where this PE's turns will write on every PE (its columns
        // of every row), so that this process's own mapping of the other PEs' heaps
        // has its pages in place before the first turn (perf: page faults in the
        // copies took most of a cold turn). No two PEs write the same element.
        let me = shmem.my_pe() as usize;
        for q in 0..p {
            for obj in [&a, &b] {
                for j in 0..rows {
                    shmem.put(obj, j * n + me * rows, &zeros[..rows], q as u32)?;
                }
            }
        }
        shmem.quiet()?;
        shmem.barrier_all()?;
        Ok(CornerTurn {
            n,
            rows,
            objects: [a, b],
            tile: Vec::new(),
        })
    }

    /// Rows per PE (`R`).
    pub fn rows_per_pe(&self) -> usize {
        self.rows
    }

    /// The matrix side (`N`).
    pub fn n(&self) -> usize {
        self.n
    }

    /// The symmetric object `which` (`R * N` elements).
    pub fn object(&self, which: Buffer) -> &SymVec<Complex32> {
        &self.objects[which as usize]
    }

    /// Turns `slab`, this PE's rows `first .. first + slab.len() / N` (of its `R`),
    /// into `dest` on every PE: for each destination PE, a few columns at a time
    /// through the tile, one `put_nbi` per tile row (`slab.len() / N` elements). The
    /// turn is complete once every PE has turned all its `R` rows, called `quiet` and
    /// met the others at a barrier.
    ///
    /// No PE may still read or write its copy of `dest` (other than through this
    /// function) until that barrier: the caller opens the turn after a barrier too.
    pub fn turn_slab(
        &mut self,
        shmem: &Shmem,
        slab: &[Complex32],
        first: usize,
        dest: Buffer,
    ) -> shmemplus::Result<()> {
        let (n, r) = (self.n, self.rows);
        let s = slab.len() / n;
        if s == 0 {
            return Ok(());
        }
        assert!(
            slab.len() % n == 0 && first.checked_add(s).is_some_and(|end| end <= r),
            "turn_slab: {} elements at row {first} are not whole rows of this PE's {r}",
            slab.len()
        );
        let (me, p) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
        let th = TILE_ROWS.min(s);
        // Columns per tile: TILE_BYTES of tile, at least 4 (a 32-byte write per source
        // row), at most the block.
        let cols = (TILE_BYTES / size_of::<Complex32>() / th).clamp(4, r);
        self.tile.resize(cols * th, Complex32::default());
        let dest = &self.objects[dest as usize];
        // The own block first: transposed straight into this PE's copy of `dest`.
        // dest[j * n + me * r + first + i] = slab[i * n + me * r + j] for i < s, j < r;
        // the last index, (r - 1) * n + me * r + first + s - 1, is below r * n because
        // first + s <= r and (me + 1) * r <= n.
        let base = shmem.local_addr(dest)?;
        assert!(dest.len() == r * n && first + s <= r && (me + 1) * r <= n);
        // SAFETY: every written index is inside this PE's copy of `dest` (above), which
        // stays mapped while `dest` lives. No other PE writes these elements (each PE
        // writes only its own columns `me * r + first ..` of the destination rows), and
        // none reads them before the turn's closing barrier (the caller's contract).
        // These are plain stores through a raw pointer, as the library's own put into
        // this PE's copy is: a slice of `dest` that this PE holds (`local_slice*`) is
        // already forbidden by those functions' contract while puts can land in it,
        // and `self` holds only handles, no reference into the object.
        unsafe { transpose_to_ptr(&slab[me * r..], n, base.add(me * r + first), n, s, r) };
        // The other blocks through the tile, starting with the right neighbour (as the
        // library's alltoall does) so that the PEs do not all write into one PE at once.
        for step in 1..p {
            let q = (me + step) % p;
            for i0 in (0..s).step_by(th) {
                let h = th.min(s - i0);
                for c0 in (0..r).step_by(cols) {
                    let c = cols.min(r - c0);
                    let tile = &mut self.tile[..c * h];
                    // tile[t * h + i] = slab[(i0 + i) * n + q * r + c0 + t]
                    transpose_strided(&slab[i0 * n + q * r + c0..], n, tile, h, h, c);
                    for (t, piece) in tile.chunks_exact(h).enumerate() {
                        let at = (c0 + t) * n + me * r + first + i0;
                        shmem.put_nbi(dest, at, piece, q as u32)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The whole turn of this PE's `R` rows (`rows`, `R * N` elements) into `dest` on
    /// every PE, completed: `quiet`, then a barrier. Collective.
    pub fn turn(
        &mut self,
        shmem: &Shmem,
        rows: &[Complex32],
        dest: Buffer,
    ) -> shmemplus::Result<()> {
        assert_eq!(
            rows.len(),
            self.rows * self.n,
            "turn: this PE holds R x N elements"
        );
        self.turn_slab(shmem, rows, 0, dest)?;
        shmem.quiet()?;
        shmem.barrier_all()
    }

    /// Frees the objects (collective).
    pub fn free(self, shmem: &Shmem) -> shmemplus::Result<()> {
        let [a, b] = self.objects;
        shmem.free(a)?;
        shmem.free(b)
    }
}
