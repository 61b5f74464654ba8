//! The bench job of `shmemplus bench`: the launching side (which starts the PEs through
//! [`crate::launcher`], sizing their symmetric heap for what they will measure) and the
//! PE side (every PE runs the hidden `bench-pe` subcommand, which runs the selected
//! measurements in a fixed order and hands the records to [`super::report`]).
//!
//! Owns the job's arguments, environment and the order of the measurements; it must
//! not measure anything itself nor contain transport code.

use super::collectives::COLLECTIVE_BLOCKS;
use super::ops::CONTENTION_BYTES;
use super::report::Record;
use super::route::RouteSelection;
use super::{atomics, collectives, ops, pingpong, report, rma, sweep, BenchOptions};
use crate::launcher::{run_job, JobOutcome, JobSpec, OutputMode};
use shmemplus::config::ClockKind;
use std::ffi::OsString;
use std::time::Duration;

/// Runs the benchmark job and prints the report; the launching side.
pub fn run(opts: &BenchOptions) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let mut args: Vec<OsString> = vec!["bench-pe".into()];
    args.extend(forward_args(opts).into_iter().map(OsString::from));
    let selection = RouteSelection::parse(&opts.routes)?;
    // Checked here, once, rather than failing in every PE.
    selection.ops(&opts.ops)?;
    let mut spec = JobSpec::new(opts.n_pes, exe);
    spec.args = args;
    spec.nodes = opts.nodes;
    let profile = opts.profile.clone().or_else(|| {
        std::env::var("SHMEMPLUS_PROFILE")
            .ok()
            .filter(|p| !p.is_empty())
    });
    if let Some(p) = &profile {
        crate::launcher::apply_profile(&mut spec, p, Some(opts.n_pes))
            .map_err(|e| e.to_string())?;
    }
    spec.output = OutputMode::Inherit;
    spec.handle_signals = true;
    spec.timeout = Some(Duration::from_secs(1800));
    // Heap: the destination object of max_size (and the contention targets, and the
    // collectives' source and destination), plus slack.
    let mut heap = opts
        .max_size
        .checked_next_power_of_two()
        .and_then(|p| p.max(1 << 20).checked_mul(2))
        .ok_or_else(|| format!("--max-size {} is too large for any heap", opts.max_size))?
        .max((opts.n_pes as usize + 1) * CONTENTION_BYTES);
    if selection.collectives {
        heap = heap.max(2 * opts.n_pes as usize * COLLECTIVE_BLOCKS[3] + (1 << 20));
    }
    spec.env
        .push(("SHMEM_SYMMETRIC_SIZE".into(), heap.to_string().into()));
    spec.env
        .push(("SHMEMPLUS_CONDUIT".into(), opts.conduit.clone().into()));
    if let Some(clock) = &opts.clock {
        let kind = ClockKind::parse(clock).map_err(|why| format!("bad --clock: {why}"))?;
        spec.env
            .push(("SHMEMPLUS_CLOCK".into(), kind.name().into()));
    }
    // The PEs' configuration, checked once here rather than failing in every PE.
    spec.pe_config().map_err(|e| e.to_string())?;
    let report = run_job(&spec).map_err(|e| e.to_string())?;
    match report.outcome {
        JobOutcome::Success => Ok(()),
        _ => Err(format!("benchmark job failed: {}", report.message())),
    }
}

fn forward_args(o: &BenchOptions) -> Vec<String> {
    let mut a = vec![
        format!("--np={}", o.n_pes),
        format!("--conduit={}", o.conduit),
        format!("--min-size={}", o.min_size),
        format!("--max-size={}", o.max_size),
        format!("--misalign={}", o.misalign),
        format!("--reps={}", o.reps),
        format!("--routes={}", o.routes.join(",")),
    ];
    if !o.ops.is_empty() {
        a.push(format!("--ops={}", o.ops.join(",")));
    }
    if let Some(p) = &o.plot {
        a.push(format!("--plot={}", p.display()));
    }
    if let Some(k) = o.nodes {
        a.push(format!("--nodes={k}"));
    }
    if o.quick {
        a.push("--quick".into());
    }
    if let Some(j) = &o.json {
        a.push(format!("--json={}", j.display()));
    }
    a
}

/// The PE side: every PE of the benchmark job runs this.
pub fn run_pe(opts: &BenchOptions) -> Result<(), String> {
    let err = |e: shmemplus::Error| e.to_string();
    let shmem = shmemplus::init().map_err(err)?;
    let me = shmem.my_pe();
    let n = shmem.n_pes();
    let reps = if opts.quick {
        opts.reps.min(5)
    } else {
        opts.reps
    }
    .max(1);
    let conduit = shmem.config().conduit.name().to_string();
    let clock = shmem.clock().name().to_string();
    // Under virtual time the figures are communication only: the computation between
    // calls (loop bookkeeping, printing, checks) does not advance the clock, except
    // where a measurement turns it back on (the memcpy reference).
    shmem.count_cpu_time(false);
    let mut records = Vec::new();
    let profile = shmem.profile().name.clone();
    let record = |route: &str,
                  op: &str,
                  bytes: usize,
                  secs: f64,
                  bw: f64,
                  ratio: Option<f64>,
                  model: Option<f64>| {
        Record {
            route: route.into(),
            op: op.into(),
            bytes,
            latency_us: secs * 1e6,
            bandwidth_mbps: bw / 1e6,
            ratio_to_memcpy: ratio,
            conduit: conduit.clone(),
            n_pes: n,
            profile: profile.clone(),
            modeled_us: model.map(|m| m * 1e6),
            packet_bytes: None,
            clock: clock.clone(),
        }
    };
    let selection = RouteSelection::parse(&opts.routes)?;
    let ops = selection.ops(&opts.ops)?;
    let has = |k: &str| ops.iter().any(|o| o == k);

    if has("rma") && n >= 2 && !selection.rma.is_empty() {
        records.extend(rma::measure_routes(
            &shmem,
            &selection.rma,
            opts,
            reps,
            &record,
        )?);
    }

    if has("barrier") {
        records.extend(ops::barrier(&shmem, opts, reps, &record)?);
    }

    if has("am") && n >= 2 {
        records.extend(ops::am_roundtrip(&shmem, opts, reps, &record)?);
    }

    if selection.atomics {
        records.extend(atomics::atomics(&shmem, opts, reps, &record)?);
    }

    if selection.collectives {
        records.extend(collectives::collectives(&shmem, opts, reps, &record)?);
    }

    if has("packet-sweep") && n >= 2 {
        records.extend(sweep::packet_sweep(&shmem, opts, reps, &record)?);
    }

    if has("scf-pingpong") && n >= 2 {
        records.extend(pingpong::pingpong(&shmem, opts, reps, &record)?);
    }

    if has("contention") && n >= 2 {
        records.extend(ops::contention(&shmem, reps, &record)?);
    }

    if me == 0 {
        report::write_outputs(opts, &records)?;
    }
    shmem.finalize().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_refuses_a_heap_too_large() {
        // The largest size the syntax allows: the launcher refuses the heap it would
        // need before starting anything.
        let o = BenchOptions {
            n_pes: 2,
            nodes: None,
            conduit: "shm".into(),
            ops: vec![],
            min_size: 8,
            max_size: usize::MAX,
            misalign: 0,
            reps: 3,
            quick: false,
            json: None,
            routes: vec!["cpu-cpu".into()],
            profile: None,
            plot: None,
            clock: None,
        };
        let e = run(&o).unwrap_err();
        assert!(e.contains("--max-size"), "{e}");
    }
}
