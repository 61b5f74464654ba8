//! The corner turn: the distributed transpose of an N x N matrix whose rows are split
//! in equal blocks of `R = N / P` rows over the P PEs.
//!
//! PE `p` holds rows `p*R .. (p+1)*R`. Cut into P square blocks of R x R, its block `q`
//! (columns `q*R ..`) belongs to PE `q` after the transpose. [`corner_turn`]:
//! 1. packs: each block, transposed, into a contiguous send area (tile by tile);
//! 2. exchanges: block `q` goes to slot `p` of PE `q`'s receive object — an all-to-all
//!    of `R*R` elements per PE pair;
//! 3. unpacks: slot `p`'s row `j` is the piece `p*R ..` of transposed row `j`.
//!
//! This module owns that data movement. Step 2 is the one place where PEs exchange
//! data: the library's `alltoall` over the world team (each PE puts its blocks straight
//! into the others' receive objects, starting with its right neighbour; the collective
//! opens with a barrier, so no PE overwrites a receive object another still unpacks).

use super::serial::transpose_strided;
use super::Complex32;
use shmemplus::{Place, Shmem, SymVec};

/// The buffers of the corner turns of one matrix size and job: the symmetric send and
/// receive objects, each `R * N` elements. Make them once; use them for every turn.
pub struct CornerTurn {
    n: usize,
    rows: usize,
    recv: SymVec<Complex32>,
    send: SymVec<Complex32>,
}

impl CornerTurn {
    /// Allocates the buffers for an `n` x `n` matrix (collective). `n` must be a
    /// multiple of the number of PEs.
    pub fn new(shmem: &Shmem, n: usize) -> anyhow::Result<CornerTurn> {
        let p = shmem.n_pes() as usize;
        if n == 0 || n % p != 0 {
            anyhow::bail!(
                "the corner turn needs N to be a positive multiple of the {p} PEs, got N = {n}"
            );
        }
        let rows = n / p;
        let recv = shmem.alloc::<Complex32>(rows * n, Place::Cpu)?;
        let send = shmem.alloc::<Complex32>(rows * n, Place::Cpu)?;
        // Touch both buffers now, so that the turns do not pay for first-touch page
        // faults (measured: the first turn of 128 MiB took 7x longer than the next).
        let zeros = vec![Complex32::new(0.0, 0.0); (rows * n).min(1 << 17)];
        for obj in [&recv, &send] {
            for at in (0..rows * n).step_by(zeros.len().max(1)) {
                let k = zeros.len().min(rows * n - at);
                shmem.local_write(obj, at, &zeros[..k])?;
            }
        }
        Ok(CornerTurn {
            n,
            rows,
            recv,
            send,
        })
    }

    /// Rows per PE (`R`).
    pub fn rows_per_pe(&self) -> usize {
        self.rows
    }

    /// The symmetric receive object (handy as a landing area once the turns are done).
    pub fn recv(&self) -> &SymVec<Complex32> {
        &self.recv
    }

    /// Frees the send and receive objects (collective).
    pub fn free(self, shmem: &Shmem) -> shmemplus::Result<()> {
        shmem.free(self.send)?;
        shmem.free(self.recv)
    }
}

/// Transposes the distributed matrix: on entry `rows` holds this PE's `R` rows of the
/// `N` x `N` matrix (row-major, `R * N` elements); on return, its `R` rows of the
/// transpose. Collective: every PE calls it with its rows.
pub fn corner_turn(
    shmem: &Shmem,
    ct: &mut CornerTurn,
    rows: &mut [Complex32],
) -> shmemplus::Result<()> {
    let (n, r) = (ct.n, ct.rows);
    let block = r * r;
    assert_eq!(
        rows.len(),
        r * n,
        "corner_turn: this PE holds R x N elements"
    );
    let p = shmem.n_pes() as usize;

    // 1. Pack: send[q*R*R + j*R + i] = rows[i*N + q*R + j].
    {
        // SAFETY: only this PE touches its copy of `send`: the alltoall below pushes
        // from each PE's own send object (nobody reads another's), and no other code
        // holds a slice of it; the slice ends before the alltoall starts.
        let send = unsafe { shmem.local_slice_mut(&ct.send)? };
        for (q, dst) in send.chunks_exact_mut(block).enumerate() {
            transpose_strided(&rows[q * r..], n, dst, r, r, r);
        }
    }

    // 2. Exchange: block q of every PE's send object lands in slot p of PE q's recv.
    shmem.alltoall(&shmem.team_world(), &ct.recv, &ct.send, block)?;
    debug_assert_eq!(p * block, ct.send.len());

    // 3. Unpack: transposed row j, columns s*R.., is row j of the block from PE s.
    for s in 0..p {
        for j in 0..r {
            shmem.local_read(&ct.recv, s * block + j * r, &mut rows[j * n + s * r..][..r])?;
        }
    }
    Ok(())
}
