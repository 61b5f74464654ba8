//! The `scf-pingpong` op of `shmemplus bench`: round-trip bandwidth of a ping-pong
//! between PE 0's CPU and PE 1 (its CPU, or its board 0), through both programming
//! models on the same route (the dissertation's figure 6-1).
//!
//! - SHMEM+: PE 0 puts the message into PE 1's object and raises a flag there; PE 1
//!   waits for it and puts the message back the same way (from its board with
//!   `put_from` when the pong is on the board).
//! - SCF: a three-task graph, `ping` (PE 0's CPU) -> `pong` (PE 1's CPU, or a board
//!   task on its board 0 whose kernel copies its input to its output, modeled at one
//!   cycle) -> `back` (PE 0's CPU). PE 0 runs `ping` then `back` every iteration, so
//!   each iteration is one round trip.
//!
//! Each figure is the median round trip over the repetitions after one warm-up, and
//! the bandwidth `2 * size / round trip`. The SCF tasks have a modeled compute time of
//! 0, so that under the virtual clock both models' figures are communication only. Owns the ping-pong and its table; it must not
//! touch SCF's channels (it goes through `shmemplus_scf::run` like any application).

use super::report::{Record, RecordFn};
use super::stats::median;
use super::BenchOptions;
use shmemplus::fpga_mock::KernelTiming;
use shmemplus::{Cmp, Place, Shmem};
use shmemplus_scf::{BoardKernel, CpuTask, Mapping, Registry, ScfError, TaskCtx, TaskGraph};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The round-trip times PE 0's two SCF tasks record, shared by both.
type Stamps = Arc<Mutex<Vec<(Duration, Option<Duration>)>>>;

/// Message sizes: 8 B to 4 MiB by powers of 4 (within --min-size..=--max-size).
fn sizes(opts: &BenchOptions) -> Vec<usize> {
    let mut v = Vec::new();
    let mut s = 8usize;
    while s <= (4 << 20).min(opts.max_size.max(8)) {
        if s >= opts.min_size {
            v.push(s);
        }
        s *= 4;
    }
    v
}

/// The SHMEM+ ping-pong: median round trip of `reps` after one warm-up.
fn shmem_pingpong(shmem: &Shmem, size: usize, board: bool, reps: usize) -> Result<f64, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let me = shmem.my_pe();
    let far = if board { Place::Fpga(0) } else { Place::Cpu };
    let ping_buf = shmem.alloc::<u8>(size, far).map_err(err)?; // written on PE 1
    let pong_buf = shmem.alloc::<u8>(size, Place::Cpu).map_err(err)?; // written on PE 0
    let flags = shmem.alloc::<u64>(1, Place::Cpu).map_err(err)?;
    let msg = vec![0x5au8; size];
    let mut rtts = Vec::with_capacity(reps);
    shmem.barrier_all().map_err(err)?;
    for i in 0..=reps as u64 {
        if me == 0 {
            let t0 = shmem.now();
            shmem.put(&ping_buf, 0, &msg, 1).map_err(err)?;
            shmem.fence().map_err(err)?;
            shmem.atomic_add(&flags, 0, 1u64, 1).map_err(err)?;
            shmem.wait_until(&flags, 0, Cmp::Ge, i + 1).map_err(err)?;
            if i > 0 {
                rtts.push(shmem.now().saturating_sub(t0).as_secs_f64());
            }
        } else if me == 1 {
            shmem.wait_until(&flags, 0, Cmp::Ge, i + 1).map_err(err)?;
            if board {
                shmem
                    .put_from(&pong_buf, 0, &ping_buf, 0, size, 0)
                    .map_err(err)?;
            } else {
                let mut back = vec![0u8; size];
                shmem.local_read(&ping_buf, 0, &mut back).map_err(err)?;
                shmem.put(&pong_buf, 0, &back, 0).map_err(err)?;
            }
            shmem.fence().map_err(err)?;
            shmem.atomic_add(&flags, 0, 1u64, 0).map_err(err)?;
        }
    }
    shmem.barrier_all().map_err(err)?;
    shmem.free(flags).map_err(err)?;
    shmem.free(pong_buf).map_err(err)?;
    shmem.free(ping_buf).map_err(err)?;
    Ok(median(&mut rtts))
}

struct Ping {
    stamps: Stamps,
}

impl CpuTask for Ping {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> shmemplus_scf::Result<()> {
        let n = ctx
            .message_bytes("pong")
            .ok_or_else(|| ScfError::Failed("the graph has no channel to pong".into()))?;
        let msg = vec![0x5au8; n];
        let now = ctx.shmem().now();
        if let Ok(mut s) = self.stamps.lock() {
            s.push((now, None));
        }
        ctx.send("pong", &msg)
    }
}

struct Pong;

impl CpuTask for Pong {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> shmemplus_scf::Result<()> {
        let m = ctx.recv("ping")?;
        ctx.send("back", &m)
    }
}

struct Back {
    stamps: Stamps,
}

impl CpuTask for Back {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> shmemplus_scf::Result<()> {
        ctx.recv("pong")?;
        let now = ctx.shmem().now();
        if let Ok(mut s) = self.stamps.lock() {
            if let Some(last) = s.last_mut() {
                last.1 = Some(now);
            }
        }
        Ok(())
    }
}

/// The board pong: copies its one input to its one output, modeled at one cycle.
fn echo_kernel() -> BoardKernel {
    let timing = KernelTiming {
        pipeline_latency_cycles: 1.0,
        clock_hz: 150e6,
        ops_per_element: 0.0,
        ops_per_cycle: 1.0,
    };
    shmemplus_scf::apps::map_kernel("bench-echo", timing, |_, _| Ok(()))
}

/// The SCF ping-pong: median round trip of `reps` after one warm-up.
fn scf_pingpong(shmem: &Shmem, size: usize, board: bool, reps: usize) -> Result<f64, String> {
    let graph = TaskGraph::from_toml_str(
        &format!(
            r#"
            name = "pingpong"
            iterations = {iters}
            [[task]]
            name = "ping"
            kind = "ping"
            cpu_s = 0.0
            cpu = {{ pe = 0 }}
            [[task]]
            name = "pong"
            kind = "pong"
            cpu_s = 0.0
            cpu = {{ pe = 1 }}
            fpga = {{ pe = 1, board = 0 }}
            [[task]]
            name = "back"
            kind = "back"
            cpu_s = 0.0
            cpu = {{ pe = 0 }}
            [[edge]]
            from = "ping"
            to = "pong"
            pattern = "send"
            bytes = {size}
            [[edge]]
            from = "pong"
            to = "back"
            pattern = "send"
            bytes = {size}
            "#,
            iters = reps + 1
        ),
        "pingpong",
    )
    .map_err(|e| e.to_string())?;
    let stamps: Stamps = Arc::new(Mutex::new(Vec::new()));
    let mut registry = Registry::new();
    let (s1, s2) = (stamps.clone(), stamps.clone());
    registry
        .cpu("ping", move |_| Ping { stamps: s1.clone() })
        .cpu("pong", |_| Pong)
        .fpga("pong", echo_kernel())
        .cpu("back", move |_| Back { stamps: s2.clone() });
    let on_fpga = if board { vec![1] } else { vec![] };
    let mapping = Mapping::with_fpga_tasks(&graph, &on_fpga);
    shmemplus_scf::run(shmem, &graph, &mapping, &registry).map_err(|e| e.to_string())?;
    let stamps = stamps.lock().map_err(|_| "stamps poisoned".to_string())?;
    let mut rtts: Vec<f64> = stamps
        .iter()
        .skip(1)
        .filter_map(|(a, b)| b.map(|b| b.saturating_sub(*a).as_secs_f64()))
        .collect();
    Ok(if rtts.is_empty() {
        0.0
    } else {
        median(&mut rtts)
    })
}

/// Both ping-pongs on both routes, every size; PE 0 prints the table.
pub(super) fn pingpong(
    shmem: &Shmem,
    opts: &BenchOptions,
    reps: usize,
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let me = shmem.my_pe();
    let mut routes = vec![("cpu-cpu-remote", false)];
    if shmem.fpgas() > 0 {
        routes.push(("cpu-fpga-remote", true));
    }
    let mut out = Vec::new();
    for (route, board) in routes {
        if me == 0 {
            println!(
                "ping-pong PE 0 CPU <-> PE 1 {} ({}), profile {}, {} clock, medians of {reps} round trips",
                if board { "board 0" } else { "CPU" },
                route,
                shmem.profile().name,
                shmem.clock().name()
            );
            println!(
                "{:>9} {:>14} {:>14} {:>12} {:>12} {:>9}",
                "size", "SHMEM+ us", "SCF us", "SHMEM+ MB/s", "SCF MB/s", "SCF/SHMEM+"
            );
        }
        for size in sizes(opts) {
            let a = shmem_pingpong(shmem, size, board, reps)?;
            let b = scf_pingpong(shmem, size, board, reps)?;
            let bw = |rtt: f64| {
                if rtt > 0.0 {
                    2.0 * size as f64 / rtt
                } else {
                    0.0
                }
            };
            if me == 0 {
                println!(
                    "{:>9} {:>14.2} {:>14.2} {:>12.1} {:>12.1} {:>9.2}",
                    size,
                    a * 1e6,
                    b * 1e6,
                    bw(a) / 1e6,
                    bw(b) / 1e6,
                    if b > 0.0 { a / b } else { 0.0 }
                );
                out.push(record(route, "pingpong-shmem", size, a, bw(a), None, None));
                out.push(record(route, "pingpong-scf", size, b, bw(b), None, None));
            }
        }
    }
    Ok(out)
}
