//! The `barrier`, `am` and `contention` ops of `shmemplus bench`: `barrier_all` time,
//! AM round trips (batch median and the single-trip tail), and many senders putting to
//! PE 0 at once against one alone.
//!
//! Owns these measurements and their report lines; it must not write the JSON file.

use super::report::{Record, RecordFn};
use super::stats::{median, percentile, time_per_op, Stopwatch};
use super::BenchOptions;
use shmemplus::{Place, RmaOp};
use std::hint::black_box;

/// `barrier_all` on every PE, batches timed; PE 0 prints and records the median.
pub(super) fn barrier(
    shmem: &shmemplus::Shmem,
    opts: &BenchOptions,
    reps: usize,
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let mut records = Vec::new();
    let batch = if opts.quick { 200 } else { 2000 };
    shmem.barrier_all().map_err(err)?;
    let secs = time_per_op(shmem, reps, batch, || shmem.barrier_all()).map_err(err)?;
    if me == 0 {
        println!(
            "barrier_all, {n} PEs: median {:.3} us ({} clock)",
            secs * 1e6,
            shmem.clock().name()
        );
        records.push(record("barrier", "barrier", 0, secs, 0.0, None, None));
    }
    Ok(records)
}

/// 8-byte AM round trips from PE 0 to PE 1: the median over batches and the tail of
/// single timed trips. Every PE calls this (PE 1 serves the echoes).
pub(super) fn am_roundtrip(
    shmem: &shmemplus::Shmem,
    opts: &BenchOptions,
    reps: usize,
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let me = shmem.my_pe();
    let mut records = Vec::new();
    shmem.barrier_all().map_err(err)?;
    if me == 0 {
        let payload = [7u8; 8];
        let batch = if opts.quick { 200 } else { 2000 };
        let secs = time_per_op(shmem, reps, batch, || {
            let r = shmem.am_echo(1, &payload)?;
            black_box(r);
            Ok(())
        })
        .map_err(err)?;
        // Single round trips, each timed: the tail shows stalls that a batch median
        // hides (a lost wake-up costs a whole 50 ms sleep slice).
        let trips = if opts.quick { 2000 } else { 20_000 };
        let mut single = Vec::with_capacity(trips);
        for _ in 0..trips {
            let t = Stopwatch::start(shmem);
            black_box(shmem.am_echo(1, &payload).map_err(err)?);
            single.push(t.secs());
        }
        single.sort_by(f64::total_cmp);
        let p99 = percentile(&single, 0.99);
        let max = single.last().copied().unwrap_or(f64::NAN);
        println!(
            "AM round trip, 8 bytes, PE 0 -> PE 1 ({} clock): median {:.3} us; {trips} single trips: p50 {:.3} us, p99 {:.3} us, max {:.3} us",
            shmem.clock().name(),
            secs * 1e6,
            percentile(&single, 0.5) * 1e6,
            p99 * 1e6,
            max * 1e6
        );
        records.push(record(
            "am_roundtrip",
            "am_roundtrip",
            8,
            secs,
            0.0,
            None,
            None,
        ));
        records.push(record(
            "am_roundtrip",
            "am_roundtrip_p99",
            8,
            p99,
            0.0,
            None,
            None,
        ));
    }
    shmem.barrier_all().map_err(err)?;
    Ok(records)
}

/// Bytes each sender puts in the contention measurement.
pub(super) const CONTENTION_BYTES: usize = 8 << 20;

/// Every PE but 0 puts 8 MiB into its own region of PE 0's object at once; against
/// PE 1 doing it alone. On an emulated network PE 0's receive side serialises the
/// senders, so the ratio should approach the number of senders.
pub(super) fn contention(
    shmem: &shmemplus::Shmem,
    reps: usize,
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let (me, n) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
    let target = shmem
        .alloc::<u8>(n * CONTENTION_BYTES, Place::Cpu)
        .map_err(err)?;
    let times = shmem.alloc::<f64>(n, Place::Cpu).map_err(err)?;
    let src = vec![me as u8; CONTENTION_BYTES];
    let mut alone = Vec::with_capacity(reps);
    let mut together = Vec::with_capacity(reps);
    for _ in 0..reps {
        for all in [false, true] {
            shmem.barrier_all().map_err(err)?;
            if me != 0 && (all || me == 1) {
                let t = Stopwatch::start(shmem);
                shmem
                    .put(&target, me * CONTENTION_BYTES, &src, 0)
                    .map_err(err)?;
                shmem.quiet().map_err(err)?;
                shmem.p(&times, me, t.secs(), 0).map_err(err)?;
            }
            shmem.barrier_all().map_err(err)?;
            if me == 0 {
                let t = shmem.local_to_vec(&times).map_err(err)?;
                let slowest = t[1..].iter().copied().fold(0.0, f64::max);
                if all {
                    together.push(slowest)
                } else {
                    alone.push(t[1])
                }
            }
            shmem.barrier_all().map_err(err)?;
        }
    }
    let mut out = Vec::new();
    if me == 0 {
        let (a, b) = (median(&mut alone), median(&mut together));
        let senders = n - 1;
        println!(
            "contention ({} clock): {senders} senders x 8 MiB to PE 0 at once: {:.3} ms; one alone: {:.3} ms; ratio {:.2} (a serialised receive side gives {senders})",
            shmem.clock().name(),
            b * 1e3,
            a * 1e3,
            b / a
        );
        let model_one = shmem
            .modeled_seconds(RmaOp::Put, 1, CONTENTION_BYTES)
            .map_err(err)?;
        out.push(record(
            "contention",
            "put",
            CONTENTION_BYTES,
            a,
            CONTENTION_BYTES as f64 / a,
            None,
            model_one,
        ));
        out.push(record(
            "contention",
            "put",
            senders * CONTENTION_BYTES,
            b,
            (senders * CONTENTION_BYTES) as f64 / b,
            None,
            model_one.map(|m| m * senders as f64),
        ));
    }
    shmem.free(times).map_err(err)?;
    shmem.free(target).map_err(err)?;
    Ok(out)
}
