//! The `collectives` route group of `shmemplus bench`: barrier, broadcast, fcollect and
//! alltoall over the world team, each repetition's figure the slowest PE's, with every
//! destination checked after the timed calls.
//!
//! Owns the block sizes, the source pattern and the collectives' table; it must not
//! write the JSON file or plot (see [`super::report`]).

use super::report::{cores, machine_context, Record, RecordFn};
use super::route::Collective;
use super::stats::time_together;
use super::BenchOptions;
use shmemplus::Place;

/// Per-PE block sizes of the collectives (`--quick`: the 8 B and 64 KiB ones).
pub(super) const COLLECTIVE_BLOCKS: [usize; 4] = [8, 1 << 10, 64 << 10, 1 << 20];

/// The collectives' block sizes for a run.
pub(super) fn collective_blocks(quick: bool) -> Vec<usize> {
    if quick {
        vec![COLLECTIVE_BLOCKS[0], COLLECTIVE_BLOCKS[2]]
    } else {
        COLLECTIVE_BLOCKS.to_vec()
    }
}

/// Calls of a collective per timed repetition: a few for small blocks, so the figure is
/// less the skew of leaving the barrier before it; one for large ones.
pub(super) fn collective_batch(bytes: usize) -> usize {
    if bytes <= 1 << 10 {
        10
    } else {
        1
    }
}

/// Byte `k` of block `j` of PE `pe`'s collective source.
pub(super) fn pattern(pe: usize, j: usize, k: usize) -> u8 {
    (pe.wrapping_mul(37) ^ j.wrapping_mul(11)).wrapping_add(k) as u8
}

/// Barrier, broadcast (root 0), fcollect and alltoall over the world team, with
/// per-PE blocks of `u8` in the CPU heap. Each repetition: `barrier_all`, every PE
/// times its calls, the slowest PE's time counts (max-reduced). Checks every
/// destination after the timed calls.
pub(super) fn collectives(
    shmem: &shmemplus::Shmem,
    opts: &BenchOptions,
    reps: usize,
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let nu = n as usize;
    let blocks = collective_blocks(opts.quick);
    let max_block = blocks.iter().copied().max().unwrap_or(8);
    let src = shmem.alloc::<u8>(nu * max_block, Place::Cpu).map_err(err)?;
    let dst = shmem.alloc::<u8>(nu * max_block, Place::Cpu).map_err(err)?;
    let time_objs = (
        shmem.alloc::<f64>(1, Place::Cpu).map_err(err)?,
        shmem.alloc::<f64>(1, Place::Cpu).map_err(err)?,
    );
    let times = (&time_objs.0, &time_objs.1);
    let team = shmem.team_world();
    let mut out = Vec::new();
    if me == 0 {
        println!(
            "shmemplus bench: collectives over team_world, conduit {}, profile {}, {} clock; \
             per repetition: barrier_all, every PE times its calls ({} per rep for blocks <= 1 KiB, \
             else 1), the slowest PE's time counts (max-reduced over PEs); medians of {reps} reps; \
             MB/s = bytes delivered to each PE / time (broadcast: block; fcollect, alltoall: n_pes * block)\n\
             machine: {}",
            shmem.config().conduit.name(),
            shmem.profile().name,
            shmem.clock().name(),
            collective_batch(1),
            machine_context(n, cores())
        );
    }
    let batch = if opts.quick { 200 } else { 1000 };
    let barrier = time_together(shmem, times, reps, batch, || shmem.barrier_all()).map_err(err)?;
    if me == 0 {
        println!(
            "barrier_all, {n} PEs: median {:.3} us (slowest PE, {batch} barriers per rep)",
            barrier.slowest * 1e6
        );
        out.push(record(
            "collectives",
            "barrier",
            0,
            barrier.slowest,
            0.0,
            None,
            None,
        ));
    }
    for coll in Collective::ALL {
        if me == 0 {
            println!(
                "{} ({n} PEs{}):",
                coll.name(),
                if coll == Collective::Broadcast {
                    ", root 0"
                } else {
                    ""
                }
            );
            println!("{:>10} {:>12} {:>12}", "bytes", "latency_us", "MB/s");
        }
        for &block in &blocks {
            // Block j of this PE's source (alltoall sends block j to PE j; broadcast
            // and fcollect send block 0).
            let data: Vec<u8> = (0..nu * block)
                .map(|i| pattern(me as usize, i / block, i % block))
                .collect();
            shmem.local_write(&src, 0, &data).map_err(err)?;
            let call = || match coll {
                Collective::Broadcast => shmem.broadcast(&team, &dst, &src, block, 0),
                Collective::Fcollect => shmem.fcollect(&team, &dst, &src, block),
                Collective::Alltoall => shmem.alltoall(&team, &dst, &src, block),
            };
            let t =
                time_together(shmem, times, reps, collective_batch(block), call).map_err(err)?;
            // Check: clear this PE's destination, one more call, compare.
            shmem.barrier_all().map_err(err)?;
            let span = if coll == Collective::Broadcast {
                block
            } else {
                nu * block
            };
            shmem.local_write(&dst, 0, &vec![0u8; span]).map_err(err)?;
            call().map_err(err)?;
            let got = shmem.local_to_vec(&dst).map_err(err)?;
            let expect = |i: usize| match coll {
                Collective::Broadcast => pattern(0, 0, i),
                Collective::Fcollect => pattern(i / block, 0, i % block),
                Collective::Alltoall => pattern(i / block, me as usize, i % block),
            };
            if let Some(i) = (0..span).find(|&i| got[i] != expect(i)) {
                return Err(format!(
                    "{} check, {block} B blocks: PE {me}'s dest byte {i} is {}, expected {}",
                    coll.name(),
                    got[i],
                    expect(i)
                ));
            }
            if me == 0 {
                let bytes = coll.delivered(block, nu) as f64;
                let bw = bytes / t.slowest;
                println!("{:>10} {:>12.3} {:>12.1}", block, t.slowest * 1e6, bw / 1e6);
                out.push(record(
                    "collectives",
                    coll.name(),
                    block,
                    t.slowest,
                    bw,
                    None,
                    None,
                ));
            }
        }
    }
    shmem.barrier_all().map_err(err)?;
    shmem.free(time_objs.1).map_err(err)?;
    shmem.free(time_objs.0).map_err(err)?;
    shmem.free(dst).map_err(err)?;
    shmem.free(src).map_err(err)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_sizes_and_bandwidth_bytes() {
        assert_eq!(collective_blocks(false), [8, 1024, 65536, 1 << 20]);
        assert_eq!(collective_blocks(true), [8, 65536]);
        assert_eq!(Collective::Broadcast.delivered(1024, 4), 1024);
        assert_eq!(Collective::Fcollect.delivered(1024, 4), 4096);
        assert_eq!(Collective::Alltoall.delivered(1024, 4), 4096);
    }
}
