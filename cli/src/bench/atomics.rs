//! The `atomics` route group of `shmemplus bench`: atomic latencies on a u64 in the CPU
//! heap, one PE alone and every PE at once, with the counters checked afterwards.
//!
//! Owns that measurement and its lines of the report; it must not write the JSON file.

use super::report::{cores, machine_context, Record, RecordFn};
use super::stats::{time_per_op, time_together};
use super::BenchOptions;
use shmemplus::Place;
use std::hint::black_box;

/// Atomic latencies on a u64 in the CPU heap: PE 0 alone to PE 1 (to itself in a
/// one-PE job) for fetch_add, compare_swap, add + quiet and fetch; every PE at once
/// on PE 0's counter (PE 0's time); and every PE at once on its right neighbour's
/// counter (the slowest PE's time, the OSHMEM comparison's pattern). Checks the
/// counters afterwards.
pub(super) fn atomics(
    shmem: &shmemplus::Shmem,
    opts: &BenchOptions,
    reps: usize,
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let target = if n >= 2 { 1 } else { 0 };
    let batch = if opts.quick { 1000 } else { 10_000 };
    let word = shmem.alloc::<u64>(1, Place::Cpu).map_err(err)?;
    let hot = shmem.alloc::<u64>(1, Place::Cpu).map_err(err)?;
    let ring = shmem.alloc::<u64>(1, Place::Cpu).map_err(err)?;
    let times = (
        shmem.alloc::<f64>(1, Place::Cpu).map_err(err)?,
        shmem.alloc::<f64>(1, Place::Cpu).map_err(err)?,
    );
    shmem.barrier_all().map_err(err)?;
    let mut out = Vec::new();
    let ns = |secs: f64| secs * 1e9;
    if me == 0 {
        println!(
            "shmemplus bench: atomics on a u64 in the CPU heap, conduit {}, profile {}, {} clock; \
             medians of {reps} reps of {batch} ops\nmachine: {}",
            shmem.config().conduit.name(),
            shmem.profile().name,
            shmem.clock().name(),
            machine_context(n, cores())
        );
        let fetch_add = time_per_op(shmem, reps, batch, || {
            black_box(shmem.atomic_fetch_add(&word, 0, 1u64, target)?);
            Ok(())
        })
        .map_err(err)?;
        // Every compare_swap succeeds: it expects the value the previous one left.
        let mut cur = shmem.atomic_fetch(&word, 0, target).map_err(err)?;
        let cswap = time_per_op(shmem, reps, batch, || {
            let old = shmem.atomic_compare_swap(&word, 0, cur, cur.wrapping_add(1), target)?;
            cur = if old == cur { cur.wrapping_add(1) } else { old };
            Ok(())
        })
        .map_err(err)?;
        let add = time_per_op(shmem, reps, batch, || {
            shmem.atomic_add(&word, 0, 1u64, target)?;
            shmem.quiet()
        })
        .map_err(err)?;
        let fetch = time_per_op(shmem, reps, batch, || {
            black_box(shmem.atomic_fetch(&word, 0, target)?);
            Ok(())
        })
        .map_err(err)?;
        for (op, name, secs) in [
            ("fetch_add", "fetch_add", fetch_add),
            ("compare_swap", "compare_swap (succeeding)", cswap),
            ("add_quiet", "add + quiet", add),
            ("fetch", "fetch", fetch),
        ] {
            println!(
                "atomic {name} u64, PE 0 -> PE {target}: median {:.3} us ({:.0} ns)",
                secs * 1e6,
                ns(secs)
            );
            out.push(record("atomics", op, 8, secs, 0.0, None, None));
        }
    }
    shmem.barrier_all().map_err(err)?;
    let contended = time_together(shmem, (&times.0, &times.1), reps, batch, || {
        black_box(shmem.atomic_fetch_add(&hot, 0, 1u64, 0)?);
        Ok(())
    })
    .map_err(err)?;
    let right = (me + 1) % n;
    let ringed = time_together(shmem, (&times.0, &times.1), reps, batch, || {
        black_box(shmem.atomic_fetch_add(&ring, 0, 1u64, right)?);
        Ok(())
    })
    .map_err(err)?;
    shmem.barrier_all().map_err(err)?;
    // Every PE ran one warm-up batch and `reps` timed ones on each counter.
    let per_pe = ((reps + 1) * batch) as u64;
    let got_ring = shmem.local_read_one(&ring, 0).map_err(err)?;
    if got_ring != per_pe {
        return Err(format!(
            "atomics check: PE {me}'s ring counter is {got_ring}, expected {per_pe}"
        ));
    }
    if me == 0 {
        let got_hot = shmem.local_read_one(&hot, 0).map_err(err)?;
        if got_hot != per_pe * u64::from(n) {
            return Err(format!(
                "atomics check: PE 0's contended counter is {got_hot}, expected {}",
                per_pe * u64::from(n)
            ));
        }
        println!(
            "atomic fetch_add u64, all {n} PEs -> PE 0 at once: median {:.3} us ({:.0} ns) per op on PE 0 (slowest PE {:.3} us)",
            contended.own * 1e6,
            ns(contended.own),
            contended.slowest * 1e6
        );
        println!(
            "atomic fetch_add u64, all {n} PEs -> right neighbour at once: median {:.3} us ({:.0} ns) per op, slowest PE",
            ringed.slowest * 1e6,
            ns(ringed.slowest)
        );
        out.push(record(
            "atomics",
            "fetch_add_contended",
            8,
            contended.own,
            0.0,
            None,
            None,
        ));
        out.push(record(
            "atomics",
            "fetch_add_ring",
            8,
            ringed.slowest,
            0.0,
            None,
            None,
        ));
    }
    shmem.barrier_all().map_err(err)?;
    shmem.free(times.1).map_err(err)?;
    shmem.free(times.0).map_err(err)?;
    shmem.free(ring).map_err(err)?;
    shmem.free(hot).map_err(err)?;
    shmem.free(word).map_err(err)?;
    Ok(out)
}
