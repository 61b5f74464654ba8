//! `shmemplus bench`: put/get latency and bandwidth, barrier and AM round-trip times,
//! measured the way the OSU micro-benchmarks do, next to plain memcpy of the same sizes
//! on the same buffers in the same run.
//!
//! This module owns the measurement method and the report (table and JSON). It starts
//! its job through [`crate::launcher`] (the PEs are this same binary running the hidden
//! `bench-pe` subcommand); it must not contain transport code.
//!
//! Method (per size, PE 0 measuring against PE 1, every figure a median over
//! repetitions after warm-up):
//! - put latency: one put followed by `quiet`, per iteration;
//! - get latency: one blocking get per iteration;
//! - bandwidth: a window of puts (or gets) on the same source and destination buffers
//!   followed by one `quiet`;
//! - memcpy: the same window of plain copies from the same source buffer into the
//!   measuring PE's own copy of the destination object (the put direction; both
//!   ratio columns divide by it).

use crate::launcher::{run_job, JobOutcome, JobSpec, OutputMode};
use serde::Serialize;
use shmemplus::{Place, RmaOp};
use std::ffi::OsString;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Options of `shmemplus bench` (shared by the launching side and the PEs).
#[derive(Debug, Clone, clap::Args)]
pub struct BenchOptions {
    /// Number of PEs of the benchmark job.
    #[arg(short = 'n', long = "np", default_value_t = 2)]
    pub n_pes: u32,
    /// Number of simulated nodes (default: one PE per node).
    #[arg(long)]
    pub nodes: Option<u32>,
    /// Conduit for put/get: shm (shared mapping) or am (active messages).
    #[arg(long, default_value = "shm")]
    pub conduit: String,
    /// What to measure: any of rma, barrier, am, contention, packet-sweep (comma
    /// separated). `contention`: every PE but 0 puts 8 MiB to PE 0 at once, against one
    /// alone. `packet-sweep`: remote FPGA -> FPGA puts of 4-32 MiB with the tuned
    /// (auto) packet and every candidate of the model's packet search. Default:
    /// rma,barrier,am; none when `--routes` names only route groups.
    #[arg(long, value_delimiter = ',')]
    pub ops: Vec<String>,
    /// Routes for `rma`: cpu-cpu, cpu-fpga-local, cpu-fpga-remote, fpga-fpga-local,
    /// fpga-fpga-remote; and the route groups `atomics` (atomic latencies on the CPU
    /// heap) and `collectives` (barrier, broadcast, fcollect, alltoall over the world
    /// team), which run whatever `--ops` says; `all` is every route and both groups.
    #[arg(long, default_value = "cpu-cpu", value_delimiter = ',')]
    pub routes: Vec<String>,
    /// Cluster profile to emulate (native, mu, novo-g or a TOML file); default: the
    /// SHMEMPLUS_PROFILE variable, else native.
    #[arg(long, value_name = "NAME|PATH")]
    pub profile: Option<String>,
    /// Draw bandwidth against size, one curve per route and op, to FILE.svg or FILE.png.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// Smallest transfer in bytes (powers of two from here).
    #[arg(long, default_value = "8", value_parser = parse_size_arg)]
    pub min_size: usize,
    /// Largest transfer in bytes.
    #[arg(long, default_value = "32M", value_parser = parse_size_arg)]
    pub max_size: usize,
    /// Offset the private source buffer by this many bytes from a page boundary (the
    /// destination is page-aligned), to measure misaligned copies.
    #[arg(long, default_value_t = 0)]
    pub misalign: usize,
    /// Repetitions per figure (the median is reported).
    #[arg(long, default_value_t = 15)]
    pub reps: usize,
    /// Few sizes and repetitions: a smoke run for CI.
    #[arg(long)]
    pub quick: bool,
    /// Write one JSON record per (route, op, bytes) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

fn parse_size_arg(s: &str) -> Result<usize, String> {
    shmemplus::config::parse_size(s)
}

/// One measured figure.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Record {
    /// Route name (`cpu-cpu`; later issues add the FPGA routes).
    pub route: String,
    /// `put`, `get`, `memcpy`, `barrier` or `am_roundtrip`.
    pub op: String,
    /// Transfer size in bytes.
    pub bytes: usize,
    /// Median latency of one operation, microseconds.
    pub latency_us: f64,
    /// Median bandwidth, 10^6 bytes per second (0 where it does not apply).
    pub bandwidth_mbps: f64,
    /// Bandwidth relative to memcpy of the same size: the median over repetitions of
    /// (memcpy time / operation time), each pair measured back to back.
    pub ratio_to_memcpy: Option<f64>,
    /// Conduit the job ran with.
    pub conduit: String,
    /// PEs in the job.
    pub n_pes: u32,
    /// The cluster profile the job emulated.
    pub profile: String,
    /// The modeled latency of the operation on an idle emulated network, where the
    /// profile models one (`None` for the native profile and for memcpy).
    pub modeled_us: Option<f64>,
    /// The packet size of a packetized transfer (packet sweeps only; the size itself
    /// means no packetization).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_bytes: Option<usize>,
}

/// Runs the benchmark job and prints the report; the launching side.
pub fn run(opts: &BenchOptions) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let mut args: Vec<OsString> = vec!["bench-pe".into()];
    args.extend(forward_args(opts).into_iter().map(OsString::from));
    let selection = RouteSelection::parse(&opts.routes)?;
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

/// The median of `xs` (which it sorts).
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => xs[n / 2],
        _ => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// The `q` quantile (0..=1) of `sorted` (ascending), nearest rank.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Times `reps` repetitions of `batch` calls of `op` and returns the median seconds per
/// call. `op` returns an error to abort.
fn time_per_op(
    reps: usize,
    batch: usize,
    mut op: impl FnMut() -> shmemplus::Result<()>,
) -> shmemplus::Result<f64> {
    // Warm-up: one batch, untimed.
    for _ in 0..batch {
        op()?;
    }
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..batch {
            op()?;
        }
        samples.push(t.elapsed().as_secs_f64() / batch as f64);
    }
    Ok(median(&mut samples))
}

/// A page-aligned private buffer (so put and memcpy see the same alignment the user
/// asked for with `--misalign`).
struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(bytes: usize) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(bytes.max(1), 4096).expect("valid layout");
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    fn slice(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.layout.size());
        // SAFETY: in bounds (asserted), initialised (alloc_zeroed), exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn sizes(o: &BenchOptions) -> Vec<usize> {
    let mut v = Vec::new();
    let mut s = o.min_size.max(1);
    while s <= o.max_size {
        v.push(s);
        // Past usize::MAX there is no next size: the list ends (never wraps to 0).
        match s.checked_mul(if o.quick { 8 } else { 2 }) {
            Some(next) => s = next,
            None => break,
        }
    }
    v
}

/// Calls per timed batch for a transfer of `bytes`: enough to last well above the
/// clock's resolution, few enough to keep the run short.
fn batch_for(bytes: usize, quick: bool) -> usize {
    let target = if quick { 256 << 10 } else { 4 << 20 };
    (target / bytes.max(1)).clamp(1, if quick { 200 } else { 2000 })
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
        }
    };
    let selection = RouteSelection::parse(&opts.routes)?;
    let ops = selection.ops(&opts.ops);
    let has = |k: &str| ops.iter().any(|o| o == k);

    if has("rma") && n >= 2 && !selection.rma.is_empty() {
        let routes = selection.rma.clone();
        let max = opts.max_size;
        let needs_boards = routes.iter().any(|r| r.needs_boards());
        if needs_boards && shmem.fpgas() == 0 {
            return Err(err(shmemplus::Error::NoBoards));
        }
        let objs = Objects {
            cpu: shmem.alloc::<u8>(max, Place::Cpu).map_err(err)?,
            fpga: if needs_boards {
                let second = shmem.fpgas().min(2) - 1;
                vec![
                    shmem.alloc::<u8>(max, Place::Fpga(0)).map_err(err)?,
                    shmem.alloc::<u8>(max, Place::Fpga(second)).map_err(err)?,
                ]
            } else {
                Vec::new()
            },
        };
        let mut bufs = (
            AlignedBuf::new(max + opts.misalign + 4096),
            AlignedBuf::new(max + opts.misalign + 4096),
        );
        if me == 0 {
            for &route in &routes {
                records.extend(measure_route(
                    &shmem, route, &objs, opts, reps, &mut bufs, &record,
                )?);
            }
        }
        shmem.barrier_all().map_err(err)?;
        for o in objs.fpga {
            shmem.free(o).map_err(err)?;
        }
        shmem.free(objs.cpu).map_err(err)?;
    }

    if has("barrier") {
        let batch = if opts.quick { 200 } else { 2000 };
        shmem.barrier_all().map_err(err)?;
        let secs = time_per_op(reps, batch, || shmem.barrier_all()).map_err(err)?;
        if me == 0 {
            println!("barrier_all, {n} PEs: median {:.3} us", secs * 1e6);
            records.push(record("barrier", "barrier", 0, secs, 0.0, None, None));
        }
    }

    if has("am") && n >= 2 {
        shmem.barrier_all().map_err(err)?;
        if me == 0 {
            let payload = [7u8; 8];
            let batch = if opts.quick { 200 } else { 2000 };
            let secs = time_per_op(reps, batch, || {
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
                let t = Instant::now();
                black_box(shmem.am_echo(1, &payload).map_err(err)?);
                single.push(t.elapsed().as_secs_f64());
            }
            single.sort_by(f64::total_cmp);
            let p99 = percentile(&single, 0.99);
            let max = single.last().copied().unwrap_or(f64::NAN);
            println!(
                "AM round trip, 8 bytes, PE 0 -> PE 1: median {:.3} us; {trips} single trips: p50 {:.3} us, p99 {:.3} us, max {:.3} us",
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
    }

    if selection.atomics {
        records.extend(atomics(&shmem, opts, reps, &record)?);
    }

    if selection.collectives {
        records.extend(collectives(&shmem, opts, reps, &record)?);
    }

    if has("packet-sweep") && n >= 2 {
        records.extend(packet_sweep(&shmem, opts, reps, &record)?);
    }

    if has("contention") && n >= 2 {
        records.extend(contention(&shmem, reps, &record)?);
    }

    if me == 0 {
        if let Some(path) = &opts.plot {
            plot(path, &records)?;
            println!("drew {}", path.display());
        }
        if let Some(path) = &opts.json {
            let text = serde_json::to_string_pretty(&records).map_err(|e| e.to_string())?;
            std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
            println!("wrote {} records to {}", records.len(), path.display());
        }
    }
    shmem.finalize().map_err(err)
}

/// Measured against modeled, in percent.
fn deviation(measured: f64, modeled: f64) -> f64 {
    if modeled > 0.0 {
        (measured / modeled - 1.0) * 100.0
    } else {
        0.0
    }
}

/// Makes a record: (route, op, bytes, seconds, bytes per second, ratio to memcpy,
/// modeled seconds).
type RecordFn<'a> = dyn Fn(&str, &str, usize, f64, f64, Option<f64>, Option<f64>) -> Record + 'a;

/// Bytes each sender puts in the contention measurement.
const CONTENTION_BYTES: usize = 8 << 20;

/// A packet candidate of the sweep is measured unless the model predicts it this many
/// times slower than no packetization (tiny packets of a large transfer on a slow DMA
/// hop would take seconds per put and can only lose).
const SWEEP_SKIP_FACTOR: f64 = 2.0;

/// Remote FPGA -> FPGA puts (PE 0's board 0 to PE 1's board 0) of 4, 8, 16 and 32 MiB
/// (up to `--max-size`): with the tuned packet (`auto`), and with every candidate of
/// the model's packet search (`model::candidate_packets`: no packetization and every
/// power of two from `model::MIN_PACKET`, less those the model predicts more than
/// [`SWEEP_SKIP_FACTOR`] times slower than no packetization); the best candidate is
/// the model's choice (`model::choose_packet`) over the measured medians. Measured
/// put + quiet against the model.
fn packet_sweep(
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
            "packet sweep: fpga-fpga-remote put (PE 0 board 0 -> PE 1 board 0), profile {}, medians of {reps}",
            shmem.profile().name
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
                let secs = time_per_op(reps, 1, || {
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

/// Every PE but 0 puts 8 MiB into its own region of PE 0's object at once; against
/// PE 1 doing it alone. On an emulated network PE 0's receive side serialises the
/// senders, so the ratio should approach the number of senders.
fn contention(
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
                let t = Instant::now();
                shmem
                    .put(&target, me * CONTENTION_BYTES, &src, 0)
                    .map_err(err)?;
                shmem.quiet().map_err(err)?;
                shmem
                    .p(&times, me, t.elapsed().as_secs_f64(), 0)
                    .map_err(err)?;
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
            "contention: {senders} senders x 8 MiB to PE 0 at once: {:.3} ms; one alone: {:.3} ms; ratio {:.2} (a serialised receive side gives {senders})",
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

/// Per-PE block sizes of the collectives (`--quick`: the 8 B and 64 KiB ones).
const COLLECTIVE_BLOCKS: [usize; 4] = [8, 1 << 10, 64 << 10, 1 << 20];

/// The collectives' block sizes for a run.
fn collective_blocks(quick: bool) -> Vec<usize> {
    if quick {
        vec![COLLECTIVE_BLOCKS[0], COLLECTIVE_BLOCKS[2]]
    } else {
        COLLECTIVE_BLOCKS.to_vec()
    }
}

/// Calls of a collective per timed repetition: a few for small blocks, so the figure is
/// less the skew of leaving the barrier before it; one for large ones.
fn collective_batch(bytes: usize) -> usize {
    if bytes <= 1 << 10 {
        10
    } else {
        1
    }
}

/// The machine the job runs on, for report headers: PEs, cores, and a warning when the
/// PEs outnumber the cores.
fn machine_context(n_pes: u32, cores: usize) -> String {
    let mut s = format!("{n_pes} PEs on {cores} cores (available_parallelism)");
    if n_pes as usize > cores {
        s += &format!(
            "; {n_pes} PEs > {cores} cores: the PEs take turns on the cores, so any figure \
             where a PE waits for another measures the OS scheduler more than the library"
        );
    }
    s
}

/// Cores this process may run on.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |c| c.get())
}

/// Median times of an operation every PE runs at once.
struct Together {
    /// This PE's own time per call.
    own: f64,
    /// Per repetition the slowest PE's time per call (max-reduced over the PEs).
    slowest: f64,
}

/// Every PE calls this together: one untimed batch, then `reps` times a `barrier_all`
/// and a timed batch of `batch` calls of `op`; each repetition's time per call is
/// max-reduced over the PEs (with `reduce` on `times`, two one-element f64 objects).
fn time_together(
    shmem: &shmemplus::Shmem,
    times: (&shmemplus::SymVec<f64>, &shmemplus::SymVec<f64>),
    reps: usize,
    batch: usize,
    mut op: impl FnMut() -> shmemplus::Result<()>,
) -> shmemplus::Result<Together> {
    let team = shmem.team_world();
    let (src, dst) = times;
    shmem.barrier_all()?;
    for _ in 0..batch {
        op()?;
    }
    let (mut own, mut slowest) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        shmem.barrier_all()?;
        let t = Instant::now();
        for _ in 0..batch {
            op()?;
        }
        let secs = t.elapsed().as_secs_f64() / batch as f64;
        own.push(secs);
        shmem.local_write(src, 0, &[secs])?;
        shmem.reduce(&team, dst, src, 1, shmemplus::ReduceOp::Max)?;
        slowest.push(shmem.local_read_one(dst, 0)?);
    }
    Ok(Together {
        own: median(&mut own),
        slowest: median(&mut slowest),
    })
}

/// Atomic latencies on a u64 in the CPU heap: PE 0 alone to PE 1 (to itself in a
/// one-PE job) for fetch_add, compare_swap, add + quiet and fetch; every PE at once
/// on PE 0's counter (PE 0's time); and every PE at once on its right neighbour's
/// counter (the slowest PE's time, the OSHMEM comparison's pattern). Checks the
/// counters afterwards.
fn atomics(
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
            "shmemplus bench: atomics on a u64 in the CPU heap, conduit {}, profile {}; \
             medians of {reps} reps of {batch} ops\nmachine: {}",
            shmem.config().conduit.name(),
            shmem.profile().name,
            machine_context(n, cores())
        );
        let fetch_add = time_per_op(reps, batch, || {
            black_box(shmem.atomic_fetch_add(&word, 0, 1u64, target)?);
            Ok(())
        })
        .map_err(err)?;
        // Every compare_swap succeeds: it expects the value the previous one left.
        let mut cur = shmem.atomic_fetch(&word, 0, target).map_err(err)?;
        let cswap = time_per_op(reps, batch, || {
            let old = shmem.atomic_compare_swap(&word, 0, cur, cur.wrapping_add(1), target)?;
            cur = if old == cur { cur.wrapping_add(1) } else { old };
            Ok(())
        })
        .map_err(err)?;
        let add = time_per_op(reps, batch, || {
            shmem.atomic_add(&word, 0, 1u64, target)?;
            shmem.quiet()
        })
        .map_err(err)?;
        let fetch = time_per_op(reps, batch, || {
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

/// A collective `shmemplus bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Collective {
    Broadcast,
    Fcollect,
    Alltoall,
}

impl Collective {
    const ALL: [Collective; 3] = [
        Collective::Broadcast,
        Collective::Fcollect,
        Collective::Alltoall,
    ];

    fn name(self) -> &'static str {
        match self {
            Collective::Broadcast => "broadcast",
            Collective::Fcollect => "fcollect",
            Collective::Alltoall => "alltoall",
        }
    }

    /// Bytes counted for the bandwidth of one call with blocks of `block` bytes: what
    /// lands in each PE's destination (the OSHMEM comparison's definition).
    fn delivered(self, block: usize, n_pes: usize) -> usize {
        match self {
            Collective::Broadcast => block,
            Collective::Fcollect | Collective::Alltoall => n_pes * block,
        }
    }
}

/// Byte `k` of block `j` of PE `pe`'s collective source.
fn pattern(pe: usize, j: usize, k: usize) -> u8 {
    (pe.wrapping_mul(37) ^ j.wrapping_mul(11)).wrapping_add(k) as u8
}

/// Barrier, broadcast (root 0), fcollect and alltoall over the world team, with
/// per-PE blocks of `u8` in the CPU heap. Each repetition: `barrier_all`, every PE
/// times its calls, the slowest PE's time counts (max-reduced). Checks every
/// destination after the timed calls.
fn collectives(
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
            "shmemplus bench: collectives over team_world, conduit {}, profile {}; \
             per repetition: barrier_all, every PE times its calls ({} per rep for blocks <= 1 KiB, \
             else 1), the slowest PE's time counts (max-reduced over PEs); medians of {reps} reps; \
             MB/s = bytes delivered to each PE / time (broadcast: block; fcollect, alltoall: n_pes * block)\n\
             machine: {}",
            shmem.config().conduit.name(),
            shmem.profile().name,
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

/// What `--routes` selects: RMA routes, and the route groups `atomics` and
/// `collectives` (which do not move data between places, so they run whatever
/// `--ops` says). `all` selects every route and both groups.
///
/// `--ops` defaults to rma,barrier,am, unless the routes are only groups: then to none,
/// so that `--routes atomics,collectives` measures just those.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteSelection {
    /// RMA routes, in the order given, each once.
    pub rma: Vec<Route>,
    /// The `atomics` group.
    pub atomics: bool,
    /// The `collectives` group.
    pub collectives: bool,
}

impl RouteSelection {
    /// Parses the `--routes` names.
    pub fn parse(names: &[String]) -> Result<RouteSelection, String> {
        let mut s = RouteSelection::default();
        let add = |s: &mut RouteSelection, r: Route| {
            if !s.rma.contains(&r) {
                s.rma.push(r);
            }
        };
        for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            match name {
                "all" => {
                    Route::ALL.into_iter().for_each(|r| add(&mut s, r));
                    s.atomics = true;
                    s.collectives = true;
                }
                "atomics" => s.atomics = true,
                "collectives" => s.collectives = true,
                _ => add(
                    &mut s,
                    Route::parse(name)
                        .map_err(|e| format!("{e}; route groups are atomics, collectives, all"))?,
                ),
            }
        }
        Ok(s)
    }

    /// The `--ops` to run: `given`, or when none were given the default for this
    /// selection.
    pub fn ops(&self, given: &[String]) -> Vec<String> {
        let given: Vec<String> = given
            .iter()
            .map(|o| o.trim().to_string())
            .filter(|o| !o.is_empty())
            .collect();
        if !given.is_empty() {
            given
        } else if self.rma.is_empty() && (self.atomics || self.collectives) {
            Vec::new()
        } else {
            ["rma", "barrier", "am"].map(String::from).to_vec()
        }
    }
}

fn plot(path: &std::path::Path, records: &[Record]) -> Result<(), String> {
    let mut curves = Vec::new();
    for route in Route::ALL {
        for op in ["put", "get"] {
            let points: Vec<(u64, f64)> = records
                .iter()
                .filter(|r| r.route == route.name() && r.op == op)
                .map(|r| (r.bytes as u64, r.bandwidth_mbps))
                .collect();
            if !points.is_empty() {
                curves.push(crate::plot::Curve {
                    label: format!("{} {op}", route.name()),
                    points,
                });
            }
        }
    }
    for coll in Collective::ALL {
        let points: Vec<(u64, f64)> = records
            .iter()
            .filter(|r| r.route == "collectives" && r.op == coll.name())
            .map(|r| (r.bytes as u64, r.bandwidth_mbps))
            .collect();
        if !points.is_empty() {
            curves.push(crate::plot::Curve {
                label: coll.name().to_string(),
                points,
            });
        }
    }
    let profile = records.first().map_or("native", |r| r.profile.as_str());
    crate::plot::plot_bandwidth(
        path,
        &format!("shmemplus bandwidth, profile {profile}"),
        &curves,
    )
}

fn print_header(route: Route, shmem: &shmemplus::Shmem, o: &BenchOptions, model: bool) {
    let (put_local, _, remote, pe) = route.shape(shmem.my_pe());
    let from = put_local.map_or("host buffer".to_string(), |p| p.to_string());
    println!(
        "shmemplus bench: route {} (PE 0 {from} -> PE {pe} {remote}), {} PEs, conduit {}, profile {}, source misaligned by {} B; medians",
        route.name(),
        shmem.n_pes(),
        shmem.config().conduit.name(),
        shmem.profile().name,
        o.misalign
    );
    let mut head = format!(
        "{:>10} {:>11} {:>11} {:>11} {:>11} {:>11} {:>7} {:>7}",
        "bytes", "put+q us", "get us", "put MB/s", "get MB/s", "memcpy MB/s", "put/mc", "get/mc"
    );
    if model {
        head += &format!(
            " {:>11} {:>7} {:>11} {:>7}",
            "put model", "put %", "get model", "get %"
        );
    }
    println!("{head}");
}

fn progress_bar(len: usize) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(len as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} sizes {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.99), 99.0);
        assert_eq!(percentile(&xs, 0.5), 50.0);
        assert_eq!(percentile(&xs, 1.0), 100.0);
        assert_eq!(percentile(&xs, 0.0), 1.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn sizes_cover_the_range() {
        let mut o = BenchOptions {
            n_pes: 2,
            nodes: None,
            conduit: "shm".into(),
            ops: vec![],
            min_size: 8,
            max_size: 32 << 20,
            misalign: 0,
            reps: 3,
            quick: false,
            json: None,
            routes: vec!["cpu-cpu".into()],
            profile: None,
            plot: None,
        };
        let s = sizes(&o);
        assert_eq!((s[0], *s.last().unwrap(), s.len()), (8, 32 << 20, 23));
        o.quick = true;
        assert!(sizes(&o).len() < 10);
        // The largest size the syntax allows: the list ends at the last power of two
        // (no wrap to 0 and no endless loop), and the launcher refuses the heap it
        // would need before starting anything.
        o.quick = false;
        o.max_size = usize::MAX;
        let s = sizes(&o);
        assert_eq!((s.len(), *s.last().unwrap()), (61, 1 << 63));
        let e = run(&o).unwrap_err();
        assert!(e.contains("--max-size"), "{e}");
    }

    fn names(s: &str) -> Vec<String> {
        s.split(',').map(String::from).collect()
    }

    #[test]
    fn route_groups_parse_next_to_routes() {
        let s = RouteSelection::parse(&names("atomics,collectives")).unwrap();
        assert_eq!((s.rma.len(), s.atomics, s.collectives), (0, true, true));
        let s = RouteSelection::parse(&names("cpu-cpu,collectives,cpu-cpu")).unwrap();
        assert_eq!(s.rma, [Route::CpuCpu]);
        assert_eq!((s.atomics, s.collectives), (false, true));
        let s = RouteSelection::parse(&names("cpu-cpu")).unwrap();
        assert_eq!((s.rma.len(), s.atomics, s.collectives), (1, false, false));
        let s = RouteSelection::parse(&names("all")).unwrap();
        assert_eq!(s.rma, Route::ALL);
        assert!(s.atomics && s.collectives);
        let e = RouteSelection::parse(&names("atomics,nope")).unwrap_err();
        assert!(
            e.contains("'nope'") && e.contains("atomics, collectives"),
            "{e}"
        );
    }

    #[test]
    fn default_ops_follow_the_routes() {
        let groups = RouteSelection::parse(&names("atomics,collectives")).unwrap();
        assert!(groups.ops(&[]).is_empty());
        assert_eq!(groups.ops(&names("barrier")), ["barrier"]);
        let rma = RouteSelection::parse(&names("cpu-cpu,atomics")).unwrap();
        assert_eq!(rma.ops(&[]), ["rma", "barrier", "am"]);
        assert_eq!(rma.ops(&names("am")), ["am"]);
    }

    #[test]
    fn collective_sizes_and_bandwidth_bytes() {
        assert_eq!(collective_blocks(false), [8, 1024, 65536, 1 << 20]);
        assert_eq!(collective_blocks(true), [8, 65536]);
        assert_eq!(Collective::Broadcast.delivered(1024, 4), 1024);
        assert_eq!(Collective::Fcollect.delivered(1024, 4), 4096);
        assert_eq!(Collective::Alltoall.delivered(1024, 4), 4096);
    }

    #[test]
    fn machine_context_warns_when_oversubscribed() {
        assert!(!machine_context(2, 2).contains("scheduler"));
        let s = machine_context(8, 2);
        assert!(
            s.starts_with("8 PEs on 2 cores") && s.contains("scheduler"),
            "{s}"
        );
    }
}

/// A route `shmemplus bench` measures: where a put goes from and to, and a get back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Host buffer of PE 0 <-> CPU heap of PE 1.
    CpuCpu,
    /// Host buffer of PE 0 <-> board 0 of PE 0's node (an explicit local transfer).
    CpuFpgaLocal,
    /// Host buffer of PE 0 <-> board 0 of PE 1's node.
    CpuFpgaRemote,
    /// Board 0 <-> board 1 of PE 0's node (the same board when the node has one).
    FpgaFpgaLocal,
    /// Board 0 of PE 0's node <-> board 0 of PE 1's node.
    FpgaFpgaRemote,
}

impl Route {
    /// Every route, in report order.
    pub const ALL: [Route; 5] = [
        Route::CpuCpu,
        Route::CpuFpgaLocal,
        Route::CpuFpgaRemote,
        Route::FpgaFpgaLocal,
        Route::FpgaFpgaRemote,
    ];

    /// The route's name in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Route::CpuCpu => "cpu-cpu",
            Route::CpuFpgaLocal => "cpu-fpga-local",
            Route::CpuFpgaRemote => "cpu-fpga-remote",
            Route::FpgaFpgaLocal => "fpga-fpga-local",
            Route::FpgaFpgaRemote => "fpga-fpga-remote",
        }
    }

    /// Parses a route name.
    pub fn parse(name: &str) -> Result<Route, String> {
        Route::ALL
            .into_iter()
            .find(|r| r.name() == name)
            .ok_or_else(|| {
                let all: Vec<&str> = Route::ALL.iter().map(|r| r.name()).collect();
                format!("unknown route '{name}'; routes are {}", all.join(", "))
            })
    }

    fn needs_boards(self) -> bool {
        self != Route::CpuCpu
    }

    /// What a put and a get do on this route: (put: local source place, get: local
    /// destination place, remote place, PE on the far side, board-to-board).
    fn shape(self, me: u32) -> (Option<Place>, Option<Place>, Place, u32) {
        let (f0, f1) = (Place::Fpga(0), Place::Fpga(1));
        match self {
            Route::CpuCpu => (None, None, Place::Cpu, 1),
            Route::CpuFpgaLocal => (None, None, f0, me),
            Route::CpuFpgaRemote => (None, None, f0, 1),
            Route::FpgaFpgaLocal => (Some(f0), Some(f1), f1, me),
            Route::FpgaFpgaRemote => (Some(f0), Some(f1), f0, 1),
        }
    }
}

/// The symmetric objects the routes move data between.
struct Objects {
    cpu: shmemplus::SymVec<u8>,
    /// Objects on board 0 and board 1 (board 0 twice on one-board nodes).
    fpga: Vec<shmemplus::SymVec<u8>>,
}

impl Objects {
    fn of(&self, place: Place) -> &shmemplus::SymVec<u8> {
        match place {
            Place::Cpu => &self.cpu,
            Place::Fpga(b) => &self.fpga[(b as usize).min(self.fpga.len() - 1)],
        }
    }
}

/// Measures one route at every size (PE 0 only) and prints its table.
#[allow(clippy::too_many_arguments)]
fn measure_route(
    shmem: &shmemplus::Shmem,
    route: Route,
    objs: &Objects,
    opts: &BenchOptions,
    reps: usize,
    (src_buf, get_buf): &mut (AlignedBuf, AlignedBuf),
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let me = shmem.my_pe();
    let (put_local, get_local, remote, pe) = route.shape(me);
    let remote_obj = objs.of(remote);
    let model = |op, local: Option<Place>, bytes| {
        shmem
            .modeled_route_seconds(op, local, remote, pe, bytes)
            .ok()
            .flatten()
    };
    // One put and one get of `bytes` on this route.
    let put = |src: &[u8]| -> shmemplus::Result<()> {
        match put_local {
            None => shmem.put(remote_obj, 0, src, pe),
            Some(l) => shmem.put_from(remote_obj, 0, objs.of(l), 0, src.len(), pe),
        }
    };
    let get = |dst: &mut [u8]| -> shmemplus::Result<()> {
        match get_local {
            None => shmem.get(remote_obj, 0, dst, pe),
            Some(l) => shmem.get_into(objs.of(l), 0, remote_obj, 0, dst.len(), pe),
        }
    };
    let has_model = model(RmaOp::Put, put_local, 8).is_some();
    print_header(route, shmem, opts, has_model);
    let sizes = sizes(opts);
    let bar = progress_bar(sizes.len());
    let mut out = Vec::new();
    // SAFETY: nothing else touches PE 0's copy of the CPU object during the run (the
    // other PEs wait in a barrier, and no route writes PE 0's CPU copy).
    let local = unsafe { shmem.local_slice_mut(&objs.cpu) }.map_err(err)?;
    for &bytes in &sizes {
        let src = src_buf.slice(opts.misalign, bytes);
        src.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        let src: &[u8] = src;
        let dst = get_buf.slice(opts.misalign, bytes);
        let batch = batch_for(bytes, opts.quick);
        let window = batch.clamp(1, 64);
        let put_lat = time_per_op(reps, batch, || {
            put(src)?;
            shmem.quiet()
        })
        .map_err(err)?;
        let get_lat = time_per_op(reps, batch, || get(dst)).map_err(err)?;
        // Bandwidth: put, get and memcpy windows interleaved within each repetition,
        // so that the ratios compare figures taken moments apart on a noisy machine.
        // Each window runs twice, untimed then timed, so every operation is measured
        // in its own steady state, not in the state the previous one left behind.
        let twice = |f: &mut dyn FnMut() -> shmemplus::Result<()>| -> shmemplus::Result<f64> {
            f()?;
            let t = Instant::now();
            f()?;
            Ok(t.elapsed().as_secs_f64())
        };
        let (mut put_s, mut get_s, mut mc_s) = (Vec::new(), Vec::new(), Vec::new());
        let (mut put_r, mut get_r) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            let put_t = twice(&mut || {
                for _ in 0..window {
                    put(src)?;
                }
                shmem.quiet()
            })
            .map_err(err)?;
            let get_t = twice(&mut || {
                for _ in 0..window {
                    get(dst)?;
                }
                Ok(())
            })
            .map_err(err)?;
            let mc_t = twice(&mut || {
                for _ in 0..window {
                    local[..bytes].copy_from_slice(black_box(src));
                    black_box(&mut local[..bytes]);
                }
                Ok(())
            })
            .map_err(err)?;
            put_s.push(put_t);
            get_s.push(get_t);
            mc_s.push(mc_t);
            put_r.push(mc_t / put_t);
            get_r.push(mc_t / get_t);
        }
        let bw = |secs: f64| (window * bytes) as f64 / secs;
        let (put_bw, get_bw, mem_bw) = (
            bw(median(&mut put_s)),
            bw(median(&mut get_s)),
            bw(median(&mut mc_s)),
        );
        let (put_ratio, get_ratio) = (median(&mut put_r), median(&mut get_r));
        let (put_model, get_model) = (
            model(RmaOp::Put, put_local, bytes),
            model(RmaOp::Get, get_local, bytes),
        );
        let name = route.name();
        out.push(record(
            name,
            "put",
            bytes,
            put_lat,
            put_bw,
            Some(put_ratio),
            put_model,
        ));
        out.push(record(
            name,
            "get",
            bytes,
            get_lat,
            get_bw,
            Some(get_ratio),
            get_model,
        ));
        out.push(record(
            name,
            "memcpy",
            bytes,
            (window * bytes) as f64 / mem_bw / window as f64,
            mem_bw,
            Some(1.0),
            None,
        ));
        let mut line = format!(
            "{:>10} {:>11.3} {:>11.3} {:>11.0} {:>11.0} {:>11.0} {:>7.2} {:>7.2}",
            crate::info::human_bytes(bytes as u64),
            put_lat * 1e6,
            get_lat * 1e6,
            put_bw / 1e6,
            get_bw / 1e6,
            mem_bw / 1e6,
            put_ratio,
            get_ratio
        );
        if let (Some(pm), Some(gm)) = (put_model, get_model) {
            line += &format!(
                " {:>11.3} {:>+7.1} {:>11.3} {:>+7.1}",
                pm * 1e6,
                deviation(put_lat, pm),
                gm * 1e6,
                deviation(get_lat, gm)
            );
        }
        bar.suspend(|| println!("{line}"));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(out)
}
