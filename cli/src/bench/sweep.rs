//! The `packet-sweep` op of `shmemplus bench`: remote FPGA -> FPGA puts of 4-32 MiB with
//! the tuned packet and every candidate of the model's packet search, against the
//! model.
//!
//! Owns the sweep and its table; it must not choose packets itself (the library's
//! `model::choose_packet` does) or write the JSON file.

use super::report::{deviation, Record, RecordFn};
use super::stats::time_per_op;
use super::BenchOptions;
use shmemplus::{Place, RmaOp};

/// A packet candidate of the sweep is measured unless the model predicts it this many
/// times slower than no packetization (tiny packets of a large transfer on a slow DMA
/// hop would take seconds per put and can only lose).
pub(super) const SWEEP_SKIP_FACTOR: f64 = 2.0;

/// Remote FPGA -> FPGA puts (PE 0's board 0 to PE 1's board 0) of 4, 8, 16 and 32 MiB
/// (up to `--max-size`): with the tuned packet (`auto`), and with every candidate of
/// the model's packet search (`model::candidate_packets`: no packetization and every
/// power of two from `model::MIN_PACKET`, less those the model predicts more than
/// [`SWEEP_SKIP_FACTOR`] times slower than no packetization); the best candidate is
/// the model's choice (`model::choose_packet`) over the measured medians. Measured
/// put + quiet against the model.
pub(super) fn packet_sweep(
    shmem: &shmemplus::Shmem,
    opts: &BenchOptions,
    reps: usize,
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    use shmemplus::{model, PacketPolicy};
    let err = |e: shmemplus::Error| e.to_string();
    let me = shmem.my_pe();
    let max = opts.max_size.max(4 << 20);
    let (src, dst) = (
        shmem.alloc::<u8>(max, Place::Fpga(0)).map_err(err)?,
        shmem.alloc::<u8>(max, Place::Fpga(0)).map_err(err)?,
    );
    let mut out = Vec::new();
    if me == 0 {
        let before = shmem.packet_policy();
        println!(
            "packet sweep: fpga-fpga-remote put (PE 0 board 0 -> PE 1 board 0), profile {}, {} clock, medians of {reps}",
            shmem.profile().name,
            shmem.clock().name()
        );
        println!(
            "{:>6} {:>10} {:>16} {:>16} {:>9} {:>9} {:>9} {:>8}",
            "size",
            "off MB/s",
            "tuned MB/s",
            "best MB/s",
            "tuned+%",
            "vs best%",
            "model%",
            "skipped"
        );
        let (local, remote) = (Some(Place::Fpga(0)), Place::Fpga(0));
        let policy_of = |p: u64| match usize::try_from(p) {
            Ok(p) if p > 0 => PacketPolicy::Bytes(p),
            _ => PacketPolicy::Off,
        };
        let mut size: usize = 4 << 20;
        while size <= max {
            // (packet bytes, measured seconds, modeled seconds) under `policy`.
            let mut measure = |policy| -> Result<(usize, f64, Option<f64>), String> {
                shmem.set_packet_policy(policy);
                let packet = shmem
                    .route_packet_bytes(RmaOp::Put, local, remote, 1, size)
                    .map_err(err)?;
                let secs = time_per_op(shmem, reps, 1, || {
                    shmem.put_from(&dst, 0, &src, 0, size, 1)?;
                    shmem.quiet()
                })
                .map_err(err)?;
                let model = shmem
                    .modeled_route_seconds(RmaOp::Put, local, remote, 1, size)
                    .map_err(err)?;
                let mut r = record(
                    "fpga-fpga-remote",
                    "put",
                    size,
                    secs,
                    size as f64 / secs,
                    None,
                    model,
                );
                r.packet_bytes = Some(packet);
                out.push(r);
                Ok((packet, secs, model))
            };
            let tuned = measure(PacketPolicy::Auto)?;
            shmem.set_packet_policy(PacketPolicy::Off);
            let off_model = shmem
                .modeled_route_seconds(RmaOp::Put, local, remote, 1, size)
                .map_err(err)?;
            let mut skipped = 0;
            let (best, all) = model::choose_packet(size as u64, |p| {
                shmem.set_packet_policy(policy_of(p));
                let predicted = shmem
                    .modeled_route_seconds(RmaOp::Put, local, remote, 1, size)
                    .map_err(err)?;
                if p != 0
                    && off_model
                        .zip(predicted)
                        .is_some_and(|(off, m)| m > SWEEP_SKIP_FACTOR * off)
                {
                    skipped += 1;
                    return Ok(f64::INFINITY);
                }
                measure(policy_of(p)).map(|(_, secs, _)| secs)
            })?;
            let time_of = |p: u64| {
                all.iter()
                    .find(|&&(q, _)| q == p)
                    .map(|&(_, t)| t)
                    .ok_or("no measurement of a candidate")
            };
            let (off, best_secs) = (time_of(0)?, time_of(best)?);
            let best_bytes = if best == 0 { size as u64 } else { best };
            let bw = |s: f64| size as f64 / s / 1e6;
            let model_err = tuned.2.map_or(0.0, |m| deviation(tuned.1, m));
            println!(
                "{:>6} {:>10.1} {:>9.1} ({:>5}) {:>9.1} ({:>5}) {:>+9.1} {:>+9.1} {:>+9.1} {:>8}",
                crate::info::human_bytes(size as u64),
                bw(off),
                bw(tuned.1),
                crate::info::human_bytes(tuned.0 as u64),
                bw(best_secs),
                crate::info::human_bytes(best_bytes),
                (off / tuned.1 - 1.0) * 100.0,
                (best_secs / tuned.1 - 1.0) * 100.0,
                model_err,
                skipped
            );
            let Some(next) = size.checked_mul(2) else {
                break;
            };
            size = next;
        }
        shmem.set_packet_policy(before);
    }
    shmem.barrier_all().map_err(err)?;
    shmem.free(dst).map_err(err)?;
    shmem.free(src).map_err(err)?;
    Ok(out)
}
