//! The `cosched` scenario: a FastFit co-scheduled loop over every PE's CPU and every
//! board, with stand-in bodies of known speed: a "board" chunk sleeps
//! `BOARD_LATENCY + items * BOARD_ITEM` (a pipeline, as the model assumes), a CPU chunk
//! sleeps `CPU_ITEM` per item. Checks that every iteration ran exactly once (counts
//! summed over the job), that each trained board's model found the pipeline it was
//! given, and, with `fail`, that a board failing mid-loop is retired with its chunk
//! rerun on the CPU path.

use shmemplus::{Place, ReduceOp, Shmem};
use shmemplus_cosched::{run, Device, Options};
use shmemplus_tests::pe::e2s;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const BOARD_LATENCY: Duration = Duration::from_millis(2);
const BOARD_ITEM: Duration = Duration::from_micros(5);
const CPU_ITEM: Duration = Duration::from_micros(10);

/// Runs a loop of `n` iterations; with `fail`, board 1 of node 0 fails on its third
/// chunk.
pub(crate) fn cosched(shmem: &Shmem, n: u64, fail: bool) -> Result<(), String> {
    let me = shmem.my_pe();
    let len = usize::try_from(n).map_err(|e| e.to_string())?;
    let counts: Vec<AtomicU32> = (0..len).map(|_| AtomicU32::new(0)).collect();
    let mark = |range: std::ops::Range<u64>| {
        for i in range {
            counts[i as usize].fetch_add(1, Ordering::Relaxed);
        }
    };
    let board_calls = AtomicU32::new(0);
    // Sleeping stand-ins keep the machine idle, so their times are what they say
    // (spinning CPU bodies on a 2-core machine delay the boards' wake-ups by
    // milliseconds and make two-sample fits meaningless).
    let cpu = |range: std::ops::Range<u64>| {
        std::thread::sleep(CPU_ITEM * (range.end - range.start) as u32);
        mark(range);
        Ok(())
    };
    let board = |b: u32, range: std::ops::Range<u64>| {
        if fail && b == 1 && shmem.node() == 0 && board_calls.fetch_add(1, Ordering::Relaxed) == 2 {
            return Err("the kernel reported an error (injected)".to_string());
        }
        std::thread::sleep(BOARD_LATENCY + BOARD_ITEM * (range.end - range.start) as u32);
        mark(range);
        Ok(())
    };
    let options = Options {
        samples: Some((100, 1000)),
        ..Options::default()
    };
    let report = run(shmem, n, &options, cpu, board).map_err(|e| e.to_string())?;

    // Every iteration exactly once, over the whole job.
    let mine = shmem.alloc::<u32>(len, Place::Cpu).map_err(e2s)?;
    let sum = shmem.alloc::<u32>(len, Place::Cpu).map_err(e2s)?;
    let local: Vec<u32> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    shmem.put(&mine, 0, &local, me).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    shmem
        .reduce(&shmem.team_world(), &sum, &mine, len, ReduceOp::Sum)
        .map_err(e2s)?;
    let mut total = vec![0u32; len];
    shmem.get(&sum, 0, &mut total, me).map_err(e2s)?;
    if let Some(i) = total.iter().position(|&c| c != 1) {
        return Err(format!("iteration {i} ran {} times", total[i]));
    }
    let done: u64 = report.devices.iter().map(|d| d.items).sum();
    let rerun: u64 = local.iter().map(|&c| u64::from(c)).sum::<u64>() - done;

    for d in &report.devices {
        println!(
            "PE {me}: {}: {} chunks, {} iterations, busy {:.3} s, idle {:.3} s{}",
            d.device,
            d.chunks,
            d.items,
            d.busy_s,
            d.idle_s,
            d.fit.as_ref().map_or(String::new(), |f| format!(
                ", model latency {:.2} ms item {:.2} us, chunk {} (predicted {:.2} ms, measured {})",
                f.model.latency_s * 1e3,
                f.model.item_s * 1e6,
                f.chunk,
                f.predicted_s * 1e3,
                f.measured_s.map_or("none".into(), |s| format!("{:.2} ms", s * 1e3))
            ))
        );
        if let (Device::Board { .. }, Some(f)) = (d.device, &d.fit) {
            // The pipeline the stand-in board was given: 5 us per item, 2 ms latency.
            // Sleeps only ever overshoot, so the latency may come out high; the slope
            // of two samples 900 items apart is robust to that.
            let item_us = f.model.item_s * 1e6;
            if !(2.5..=10.0).contains(&item_us) {
                return Err(format!(
                    "{}: the model's time per item is {item_us:.2} us, the board's 5 us",
                    d.device
                ));
            }
        }
        if let Some(why) = &d.failed {
            println!("PE {me}: {} retired: {why}", d.device);
        }
    }
    let failed = report.devices.iter().filter(|d| d.failed.is_some()).count();
    let want_failed = usize::from(fail && me == 0 && shmem.fpgas() > 1);
    if failed != want_failed {
        return Err(format!(
            "{failed} boards retired on PE {me}, expected {want_failed}"
        ));
    }
    if want_failed == 1 && rerun == 0 {
        return Err("the failed board's chunk was not rerun on the CPU path".into());
    }
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: cosched ok");
    Ok(())
}
