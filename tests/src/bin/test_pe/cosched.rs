//! The `cosched` scenario: a FastFit co-scheduled loop over every PE's CPU and every
//! board, with stand-ins of known speed. A board chunk is a real mock kernel whose
//! RATSS timing is a pipeline of `BOARD_LATENCY` plus `BOARD_ITEM` per iteration (what
//! the FastFit model assumes); a CPU chunk is `Shmem::advance` of `CPU_ITEM` per
//! iteration (a sleep on the wall clock, modeled time on the virtual one). Checks that
//! every iteration ran exactly once (counts summed over the job), that on the virtual
//! clock each trained board's model is the pipeline it was given (to 5%: the host CPU
//! time of the driver between library calls counts too), and,
//! with `fail`, that a board failing mid-loop is retired with its chunk rerun on the
//! CPU path. With `Scope::Pe` each PE runs its own loop on its CPU and its own
//! partitions of its node's boards, and every iteration runs exactly once on each PE.
//! With `priced` a board chunk also puts `IN_BYTES` per iteration into the board and
//! gets `OUT_BYTES` back, and says so (`Options::board_bytes`): on a profile that
//! models the board's DMA, each board's second training sample is then modeled, not
//! run, and the model must still predict its chunks. With `priced-default` the
//! samples are left to the scheduler, whose small sample must be one the model prices
//! no dearer (beyond its iterations' share) than the default size; with
//! `priced-cold-cpu` a CPU faster than the transfers but slow in its first call must
//! keep every board from training. Without failures
//! or prices, a second loop starts with what the first one's boards learned
//! (`Options::trained`): it must run every iteration once again, and no board trains.

use shmemplus::config::ClockKind;
use shmemplus::fpga_mock::{Bitfile, Kernel, KernelTiming};
use shmemplus::{BoardRun, Place, ReduceOp, Shmem, SymVec};
use shmemplus_cosched::{run, BoardBytes, BoardPath, Device, Loop, Options, Scope, StopReason};
use shmemplus_tests::pe::e2s;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const BOARD_LATENCY_S: f64 = 2e-3;
const BOARD_ITEM_S: f64 = 5e-6;
/// The longest stall of the host that a timed sample may hold on the virtual clock
/// (the longest `clock_noise` saw on the 2-core VM was 337 us).
const HOST_STALL_S: f64 = 0.4e-3;
const CPU_ITEM: Duration = Duration::from_micros(10);
/// The kernel clock: 150 MHz.
const CLOCK_HZ: f64 = 150e6;
/// With `priced`: bytes into the board and back per iteration, and the largest chunk.
const IN_BYTES: u64 = 256;
const OUT_BYTES: u64 = 8;
const PRICED_MAX_CHUNK: u64 = 4096;
/// With `priced-default`: an image of 16 KiB per iteration (as CBIR's), the largest
/// chunk, and a CPU slower per image than the boards' modeled DMA (about 50 us), so
/// that they train.
const IMAGE_BYTES: u64 = 16384;
const IMAGES_MAX_CHUNK: u64 = 1024;
const CPU_IMAGE: Duration = Duration::from_micros(200);
/// With `priced-cold-cpu`: the CPU's time per image, below the modeled DMA's, and
/// what its first call costs beyond it.
const CPU_IMAGE_FAST: Duration = Duration::from_micros(10);
const CPU_FIRST_USE: Duration = Duration::from_millis(2);

/// The stand-in kernel: `args[0]` iterations, no computation, RATSS time
/// `BOARD_LATENCY_S + args[0] * BOARD_ITEM_S`.
fn bitfile() -> Bitfile {
    let timing = KernelTiming {
        pipeline_latency_cycles: BOARD_LATENCY_S * CLOCK_HZ,
        clock_hz: CLOCK_HZ,
        ops_per_element: 1.0,
        ops_per_cycle: 1.0 / (BOARD_ITEM_S * CLOCK_HZ),
    };
    Bitfile {
        name: "cosched-test".into(),
        kernels: vec![Kernel::new(
            "pipeline",
            timing,
            |args| args.first().copied().unwrap_or(0),
            |_, _| Ok(()),
        )],
    }
}

/// Counts of the iterations this PE ran.
struct Marks(Vec<AtomicU32>);

impl Marks {
    fn mark(&self, range: Range<u64>) {
        for i in range {
            self.0[i as usize].fetch_add(1, Ordering::Relaxed);
        }
    }
}

struct Boards<'a> {
    shmem: &'a Shmem,
    marks: &'a Marks,
    fail: Fail,
    starts: AtomicU32,
    finishes: AtomicU32,
    /// With `priced`: each board's objects for a chunk's inputs and results.
    staged: Vec<(SymVec<u8>, SymVec<u8>)>,
    /// Bytes into the board per iteration.
    in_bytes: u64,
    /// The inputs of the largest chunk, filled once: a chunk puts a prefix. A buffer
    /// made per chunk cost the virtual clock its page faults and fill at the profile's
    /// CPU speed, not in proportion to the chunk (novo-g, 16 KiB images: 20-24 ms
    /// more for 650-800 images than the DMA and the kernel, about 1 ms for 40), and the
    /// boards' production chunks ran 1.4-1.5x the line their small sample gave.
    inputs: Vec<u8>,
    /// Inputs put with `put_nbi`, no results got back (`Priced::Background`).
    background: bool,
}

impl Boards<'_> {
    /// The bytes of `items` iterations at `per_item` each.
    fn bytes(items: u64, per_item: u64) -> Result<usize, String> {
        items
            .checked_mul(per_item)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| format!("{items} iterations of {per_item} bytes overflow"))
    }
}

/// Whether board chunks move data the model prices, and who picks the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Priced {
    /// No data moves; samples of 100 and 1000.
    No,
    /// `IN_BYTES` in and `OUT_BYTES` out per iteration; samples of 100 and 1000.
    GivenSamples,
    /// The same, with the scheduler's samples.
    DefaultSamples,
    /// As `DefaultSamples`, but the inputs are put with `put_nbi` (the kernel starts
    /// at their delivery) and nothing comes back per chunk, as CBIR stages its
    /// images (`BoardBytes::inputs_in_background`).
    Background,
    /// As `DefaultSamples`, with a CPU faster per image than the boards' modeled DMA
    /// (`CPU_IMAGE_FAST`) whose first call pays `CPU_FIRST_USE` more, as a loop's
    /// first piece pays first-use costs: no board trains.
    ColdCpu,
}

/// Which boards fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fail {
    /// None.
    Nothing,
    /// Board 1 of PE 0, on its second chunk (its first after training: with the
    /// default rho, boards take few chunks).
    One,
    /// Every board, on its first chunk (the loop then runs on the CPUs only).
    All,
    /// Board 0 of PE 0, on its second start: with one board per node on the
    /// virtual clock, its large training sample queued behind the small one
    /// (`BoardPath::keeps_chunks_apart`).
    Queued,
    /// Board 0 of PE 0, in its first `finish`: with one board per node on the
    /// virtual clock, its large sample is queued behind that chunk and must fail
    /// over with it.
    FirstFinish,
    /// No board: the CPU path panics in its first call (the job must end, not hang:
    /// a board may be waiting for the CPU's typical time).
    CpuPanics,
}

impl BoardPath for Boards<'_> {
    fn start(&self, board: u32, range: Range<u64>) -> Result<BoardRun, String> {
        let fails = match self.fail {
            Fail::Nothing | Fail::CpuPanics | Fail::FirstFinish => false,
            Fail::One => {
                board == 1
                    && self.shmem.my_pe() == 0
                    && self.starts.fetch_add(1, Ordering::Relaxed) == 1
            }
            Fail::Queued => {
                board == 0
                    && self.shmem.my_pe() == 0
                    && self.starts.fetch_add(1, Ordering::Relaxed) == 1
            }
            Fail::All => true,
        };
        if fails {
            return Err("the kernel reported an error (injected)".into());
        }
        let items = range.end - range.start;
        if let Some((inputs, _)) = self.staged.get(board as usize) {
            let data = self
                .inputs
                .get(..Self::bytes(items, self.in_bytes)?)
                .ok_or_else(|| format!("a chunk of {items} iterations exceeds the largest"))?;
            let me = self.shmem.my_pe();
            match self.background {
                true => self.shmem.put_nbi(inputs, 0, data, me),
                false => self.shmem.put(inputs, 0, data, me),
            }
            .map_err(e2s)?;
        }
        self.shmem
            .kernel_start(board, "pipeline", &[items])
            .map_err(e2s)
    }

    fn finish(&self, board: u32, range: Range<u64>) -> Result<(), String> {
        if self.fail == Fail::FirstFinish
            && board == 0
            && self.shmem.my_pe() == 0
            && self.finishes.fetch_add(1, Ordering::Relaxed) == 0
        {
            return Err("the results could not be read (injected)".into());
        }
        if let Some((_, results)) = self.staged.get(board as usize).filter(|_| !self.background) {
            let mut data = vec![0u8; Self::bytes(range.end - range.start, OUT_BYTES)?];
            self.shmem
                .get(results, 0, &mut data, self.shmem.my_pe())
                .map_err(e2s)?;
        }
        self.marks.mark(range);
        Ok(())
    }

    /// Unpriced, a chunk puts nothing into the board; priced, every chunk stages at
    /// the start of the same objects.
    fn keeps_chunks_apart(&self) -> bool {
        self.staged.is_empty()
    }
}

/// Runs a loop of `n` iterations (per PE with `Scope::Pe`) with the boards failing as
/// `fail` says; with `Fail::All` the CPUs are left out, so the final drain must run
/// the loop.
pub(crate) fn cosched(
    shmem: &Shmem,
    n: u64,
    fail: Fail,
    scope: Scope,
    priced: Priced,
) -> Result<(), String> {
    let given_samples = priced == Priced::No || priced == Priced::GivenSamples;
    let background = priced == Priced::Background;
    let cold_cpu = priced == Priced::ColdCpu;
    let priced = priced != Priced::No;
    let (in_bytes, max_chunk) = if given_samples {
        (IN_BYTES, PRICED_MAX_CHUNK)
    } else {
        (IMAGE_BYTES, IMAGES_MAX_CHUNK)
    };
    let me = shmem.my_pe();
    let len = usize::try_from(n).map_err(|e| e.to_string())?;
    let marks = Marks((0..len).map(|_| AtomicU32::new(0)).collect());
    let topo = shmem.topology();
    // The PEs that drive boards load the bitfile into their partitions.
    let leader = me % topo.pes_per_node == 0;
    let drives_boards = leader || scope == Scope::Pe;
    if drives_boards {
        for b in 0..shmem.fpgas() {
            shmem.fpga_configure(b, bitfile()).map_err(e2s)?;
        }
    }
    let cpu_item = match (given_samples, cold_cpu) {
        (true, _) => CPU_ITEM,
        (false, false) => CPU_IMAGE,
        (false, true) => CPU_IMAGE_FAST,
    };
    let first_call = std::sync::atomic::AtomicBool::new(cold_cpu);
    let cpu = |range: Range<u64>| {
        if fail == Fail::CpuPanics {
            panic!("the CPU path panics, as asked (cpu-panics)");
        }
        if first_call.swap(false, Ordering::Relaxed) {
            shmem.advance(CPU_FIRST_USE);
        }
        shmem.advance(cpu_item * (range.end - range.start) as u32);
        marks.mark(range);
        Ok(())
    };
    // Collective: every PE allocates its partition of every board.
    let mut staged = Vec::new();
    if priced {
        for b in 0..shmem.fpgas() {
            let inputs = Boards::bytes(max_chunk, in_bytes)?;
            let results = Boards::bytes(max_chunk, OUT_BYTES)?;
            staged.push((
                shmem.alloc::<u8>(inputs, Place::Fpga(b)).map_err(e2s)?,
                shmem.alloc::<u8>(results, Place::Fpga(b)).map_err(e2s)?,
            ));
        }
    }
    let inputs = if priced {
        vec![7u8; Boards::bytes(max_chunk, in_bytes)?]
    } else {
        Vec::new()
    };
    let boards = Boards {
        shmem,
        marks: &marks,
        fail,
        starts: AtomicU32::new(0),
        finishes: AtomicU32::new(0),
        staged,
        in_bytes,
        inputs,
        background,
    };
    let options = Options {
        // Unpriced: longer than the samples of 100 and 1000 iterations (2.5 and 7 ms),
        // so that on one driver thread the CPU's first chunk waits for them
        // (`cpu_starts_after_the_samples`); `priced-background` checks the other side.
        cpu_chunk_s: if priced { 2e-3 } else { 8e-3 },
        samples: given_samples.then_some((100, 1000)),
        cpus: fail != Fail::All,
        scope,
        max_board_chunk: priced.then_some(max_chunk),
        board_bytes: priced.then_some(BoardBytes {
            to_board: in_bytes,
            from_board: if background { 0 } else { OUT_BYTES },
            inputs_in_background: background,
        }),
        ..Options::default()
    };
    prepare_refuses_bad_input(shmem, &options)?;
    let report = run(shmem, n, &options, cpu, &boards).map_err(|e| e.to_string())?;

    // Every iteration exactly once, over the whole job (or on each PE).
    let local = ran_once(shmem, scope, &marks)?;
    let done: u64 = report.devices.iter().map(|d| d.items).sum();
    let rerun: u64 = local.iter().map(|&c| u64::from(c)).sum::<u64>() - done;

    // On the virtual clock the samples are the model's own times, so the fit must be
    // the kernel's timing. On the wall clock DONE comes after sleeps that a loaded
    // 2-core machine delays by milliseconds: the fit is printed, not checked. With
    // priced transfers the chunks also carry the modeled DMA: checked below.
    let exact = shmem.clock() == ClockKind::Virtual && !priced;
    let modeled = shmem.clock() == ClockKind::Virtual && priced;
    for d in &report.devices {
        println!(
            "PE {me}: {}: {} chunks, {} iterations, busy {:.3} s, idle {:.3} s{}",
            d.device,
            d.chunks,
            d.items,
            d.busy_s,
            d.idle_s,
            d.fit.as_ref().map_or(String::new(), |f| format!(
                ", model latency {:.3} ms item {:.3} us, chunk {} (predicted {:.2} ms, measured/model {})",
                f.model.latency_s * 1e3,
                f.model.item_s * 1e6,
                f.chunk,
                f.predicted_s * 1e3,
                f.measured_over_model.map_or("none".into(), |r| format!("{r:.3}"))
            ))
        );
        if let (Device::Board { .. }, Some(f), true) = (d.device, &d.fit, modeled) {
            // The second sample was the largest chunk, modeled, until the first
            // measured chunk of another size replaced it; the later chunks then
            // take what the line says, within the bend of the DMA's cost curve.
            if !f.second_sample_modeled {
                return Err(format!(
                    "{}: the second sample was not modeled: {f:?}",
                    d.device
                ));
            }
            // With the default samples (4000 iterations) a board may end with its
            // first production chunk, which makes the line final: nothing is left to
            // measure against it. The 40000-iteration loop always leaves some.
            match f.measured_over_model {
                Some(r) if (0.7..=1.3).contains(&r) => {}
                None if !given_samples => {}
                other => {
                    return Err(format!(
                        "{}: measured/model {other:?} after a modeled second sample",
                        d.device
                    ))
                }
            }
            println!("PE {me}: {}: second sample modeled", d.device);
            if !given_samples && !background {
                small_sample_is_cheap(shmem, &options, n, d.device, f.samples[0].items)?;
            }
        }
        if let (Device::Board { .. }, Some(f), true) = (d.device, &d.fit, exact) {
            // The kernel's time is modeled, but a sample's time also holds the
            // driver's CPU time, and with it any stall of the host that the virtual
            // clock counts (up to about 0.3 ms on the 2-core VM: `clock_noise`): one
            // in the small sample raises the latency by its length (CI: 2.105 ms
            // against 2), one in either sample moves the slope by its length over
            // the samples' difference in size.
            let spread = f.samples[1].items.abs_diff(f.samples[0].items).max(1) as f64;
            let item_off = (f.model.item_s - BOARD_ITEM_S).abs();
            if item_off > 0.05 * BOARD_ITEM_S + HOST_STALL_S / spread {
                return Err(format!(
                    "{}: the model's time per item is {:.3} us, the kernel's {} us",
                    d.device,
                    f.model.item_s * 1e6,
                    BOARD_ITEM_S * 1e6
                ));
            }
            if (f.model.latency_s - BOARD_LATENCY_S).abs() > 0.05 * BOARD_LATENCY_S + HOST_STALL_S {
                return Err(format!(
                    "{}: the model's latency is {:.3} ms, the kernel's {} ms",
                    d.device,
                    f.model.latency_s * 1e3,
                    BOARD_LATENCY_S * 1e3
                ));
            }
        }
        if let Some(why) = &d.failed {
            println!("PE {me}: {} retired: {why}", d.device);
        }
    }
    steps_in_order(&report, exact)?;
    let failed = report.devices.iter().filter(|d| d.failed.is_some()).count();
    let want_failed = match fail {
        Fail::Nothing | Fail::CpuPanics => 0,
        Fail::One => usize::from(me == 0 && shmem.fpgas() > 1),
        Fail::Queued | Fail::FirstFinish => usize::from(me == 0 && shmem.fpgas() > 0),
        Fail::All => usize::from(drives_boards) * shmem.fpgas() as usize,
    };
    let boards_driven = report
        .devices
        .iter()
        .filter(|d| matches!(d.device, Device::Board { .. }))
        .count();
    if boards_driven != usize::from(drives_boards) * shmem.fpgas() as usize {
        return Err(format!(
            "PE {me} drove {boards_driven} boards in scope {scope:?}"
        ));
    }
    if failed != want_failed {
        return Err(format!(
            "{failed} boards retired on PE {me}, expected {want_failed}"
        ));
    }
    if want_failed > 0 && rerun == 0 {
        return Err("the failed board's chunk was not rerun on the CPU path".into());
    }
    if background && drives_boards && shmem.fpgas() > 0 {
        every_board_samples_while_the_cpu_runs(&report)?;
    }
    if cold_cpu {
        no_board_trains(shmem, &report)?;
        boards_stop_on_the_estimate(shmem, n, &options)?;
    }
    if fail == Fail::Nothing && !priced {
        if exact && drives_boards && shmem.fpgas() > 0 {
            cpu_starts_after_the_samples(&report, (100, 1000))?;
        }
        if exact && drives_boards && shmem.fpgas() == 1 {
            large_sample_queued(&report, (100, 1000))?;
        }
        trained_again(shmem, n, &options, &report, drives_boards)?;
        if exact && shmem.fpgas() > 0 {
            // Collective: every PE runs the loop; those that drive boards check.
            an_estimate_lets_the_cpu_run_beside_the_samples(shmem, n, &options, drives_boards)?;
        }
    }
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: cosched ok");
    Ok(())
}

/// Every chunk's steps (`Span::steps`) recorded and in the order they happen: asked
/// for, started, and for a board staged, DONE, fetched (the driver came before or
/// after DONE). With `exact` (the virtual clock, nothing staged) a board chunk's
/// kernel step is the kernel's modeled time for its size, within the host stalls
/// the virtual clock counts.
fn steps_in_order(report: &shmemplus_cosched::Report, exact: bool) -> Result<(), String> {
    // Instants read one after another on one clock: equal at most within rounding.
    let before = |a: f64, b: f64| a <= b + 1e-9;
    for d in &report.devices {
        for (i, span) in d.spans.iter().enumerate() {
            let bad = |why: &str| Err(format!("{}: chunk {i} ({span:?}): {why}", d.device));
            let Some(steps) = span.steps else {
                return bad("no steps recorded");
            };
            if !(before(steps.asked_s, span.start_s) && before(span.start_s, span.end_s)) {
                return bad("asked for after it started, or ended before");
            }
            match (d.device, steps.board) {
                (Device::Cpu { .. }, None) => {}
                (Device::Board { .. }, Some(b)) => {
                    let ordered = before(span.start_s, b.staged_s)
                        && before(b.staged_s, b.done_s)
                        && before(b.done_s, b.fetched_s)
                        && before(b.served_s, b.fetched_s);
                    if !ordered {
                        return bad("its board steps are out of order");
                    }
                    let modeled = BOARD_LATENCY_S + span.items as f64 * BOARD_ITEM_S;
                    let kernel = b.done_s - b.staged_s;
                    if exact && (kernel - modeled).abs() > 0.05 * modeled + HOST_STALL_S {
                        return bad(&format!(
                            "its kernel step took {kernel:.6} s, the kernel {modeled:.6} s"
                        ));
                    }
                }
                _ => return bad("a CPU chunk with board steps, or a board chunk without"),
            }
        }
        let totals = d.step_totals();
        if totals.chunks != d.chunks {
            return Err(format!(
                "{}: steps of {} chunks added up, {} completed",
                d.device, totals.chunks, d.chunks
            ));
        }
    }
    Ok(())
}

/// With a CPU path faster than the boards' modeled transfers but slow in its first
/// call (`Priced::ColdCpu`): no board took an iteration, each saying why (on the wall
/// clock a board may also find the loop done before the CPU's typical time is known,
/// and say nothing).
fn no_board_trains(shmem: &Shmem, report: &shmemplus_cosched::Report) -> Result<(), String> {
    let me = report.pe;
    let reason_needed = shmem.clock() == ClockKind::Virtual;
    for d in &report.devices {
        if let Device::Board { .. } = d.device {
            let why = d.stopped.map(|s| s.to_string()).unwrap_or_default();
            let why = why.as_str();
            println!(
                "PE {me}: {}: {}",
                d.device,
                if why.is_empty() { "took nothing" } else { why }
            );
            let said = why.contains("never trained") || (!reason_needed && why.is_empty());
            if d.items > 0 || !said {
                return Err(format!(
                    "PE {me}: {} took {} iterations ({why:?}): it trained where the CPUs \
                     are faster than its modeled transfers",
                    d.device, d.items
                ));
            }
        }
    }
    println!("PE {me}: no board trained");
    Ok(())
}

/// The cold-CPU loop again, with the CPU's iteration estimated
/// (`Options::cpu_item_estimate_s`, its true 10 us): on the estimate alone, before
/// the loop, every board stops and takes nothing, saying it decided on the estimate
/// (on one driver thread its modeled transfers hold the thread longer than twice
/// that; on the wall clock the CPUs would end the loop at twice that before a
/// training sample's transfers). Collective.
fn boards_stop_on_the_estimate(shmem: &Shmem, n: u64, options: &Options) -> Result<(), String> {
    let options = Options {
        cpu_item_estimate_s: Some(CPU_IMAGE_FAST.as_secs_f64()),
        ..options.clone()
    };
    let report = loop_again(shmem, n, &options, Fail::Nothing)?;
    for d in report
        .devices
        .iter()
        .filter(|d| matches!(d.device, Device::Board { .. }))
    {
        match d.stopped {
            Some(
                why @ (StopReason::Predicted {
                    cpu_estimated: true,
                    ..
                }
                | StopReason::Outlasted {
                    cpu_estimated: true,
                    ..
                }),
            ) if d.chunks == 0 && d.items == 0 && d.spans.is_empty() => {
                println!("PE {}: on the estimate: {why} ({})", report.pe, d.device);
            }
            other => {
                return Err(format!(
                    "PE {}: {} took {} chunks with the CPU's iteration estimated below half its modeled transfers' ({other:?})",
                    report.pe, d.device, d.chunks
                ))
            }
        }
    }
    Ok(())
}

/// When this PE's CPU started its first chunk (seconds into the loop), if it took any.
fn cpu_first_start(report: &shmemplus_cosched::Report) -> Option<f64> {
    report
        .devices
        .iter()
        .filter(|d| matches!(d.device, Device::Cpu { .. }))
        .filter_map(|d| d.spans.first())
        .map(|s| s.start_s)
        .next()
}

/// When the boards' first production chunk started (seconds into the loop): any board
/// chunk but a board's first of a sample's size (its first two, when it is its node's
/// only board: it takes both samples in turn).
fn first_production_start(report: &shmemplus_cosched::Report, samples: (u64, u64)) -> Option<f64> {
    let boards = || {
        report
            .devices
            .iter()
            .filter(|d| matches!(d.device, Device::Board { .. }))
    };
    let sampled = if boards().count() == 1 { 2 } else { 1 };
    boards()
        .flat_map(|d| {
            d.spans
                .iter()
                .enumerate()
                .filter(|(i, s)| !(*i < sampled && (s.items == samples.0 || s.items == samples.1)))
        })
        .map(|(_, s)| s.start_s)
        .min_by(f64::total_cmp)
}

/// On one driver thread the CPU's first chunk, whose time is not known yet, starts
/// no earlier than the boards' first production chunk (any board chunk but a board's
/// first of a sample's size): while the boards train with samples due within a CPU
/// chunk's time (`Options::cpu_chunk_s`, set above the samples' times), the CPU waits
/// for their DONE.
fn cpu_starts_after_the_samples(
    report: &shmemplus_cosched::Report,
    samples: (u64, u64),
) -> Result<(), String> {
    let cpu_first = cpu_first_start(report);
    match (cpu_first, first_production_start(report, samples)) {
        (Some(cpu), Some(board)) if cpu < board => Err(format!(
            "the CPU's first chunk started at {:.3} ms, before the boards' first production chunk at {:.3} ms",
            cpu * 1e3,
            board * 1e3
        )),
        (cpu, board) => {
            println!(
                "PE {}: the CPU's first chunk at {} ms, the boards' first production chunk at {} ms",
                report.pe,
                cpu.map_or("-".into(), |t| format!("{:.3}", t * 1e3)),
                board.map_or("-".into(), |t| format!("{:.3}", t * 1e3)),
            );
            Ok(())
        }
    }
}

/// On one driver thread a lone board (a path that keeps chunks apart) took its large
/// sample before its small one's DONE, and that kernel started at that DONE: no idle
/// board between them.
fn large_sample_queued(
    report: &shmemplus_cosched::Report,
    samples: (u64, u64),
) -> Result<(), String> {
    let board = report
        .devices
        .iter()
        .find(|d| matches!(d.device, Device::Board { .. }))
        .ok_or("no board in the report")?;
    let steps = |i: usize| {
        board
            .spans
            .get(i)
            .filter(|s| s.items == [samples.0, samples.1][i])
            .and_then(|s| s.steps.map(|st| (st.asked_s, st.board)))
    };
    let (Some((_, Some(small))), Some((large_asked, Some(large)))) = (steps(0), steps(1)) else {
        return Err(format!(
            "{}: its first chunks are not the samples: {:?}",
            board.device, board.spans
        ));
    };
    if large_asked > small.done_s || (large.staged_s - small.done_s).abs() > 1e-9 {
        return Err(format!(
            "{}: the large sample was asked for at {:.6} s and its kernel started at {:.6} s,              the small one's DONE at {:.6} s",
            board.device, large_asked, large.staged_s, small.done_s
        ));
    }
    println!(
        "PE {}: the large sample queued behind the small one, its kernel at the small one's DONE ({:.3} ms)",
        report.pe,
        small.done_s * 1e3
    );
    Ok(())
}

/// With the inputs staged in the background (`Priced::Background`, virtual clock):
/// every board of the node began with a sample of one size, taken before any board's
/// production chunk (none waited for another's model), and the CPU's first chunk
/// started before the first production chunk (a sample's DMA lasts milliseconds,
/// longer than `Options::cpu_chunk_s`, so the CPU does not wait for it and the
/// production chunks are sized knowing its speed).
fn every_board_samples_while_the_cpu_runs(
    report: &shmemplus_cosched::Report,
) -> Result<(), String> {
    let boards: Vec<_> = report
        .devices
        .iter()
        .filter(|d| matches!(d.device, Device::Board { .. }))
        .collect();
    let firsts: Vec<_> = boards.iter().filter_map(|d| d.spans.first()).collect();
    let production = boards
        .iter()
        .flat_map(|d| d.spans.iter().skip(1))
        .map(|s| s.start_s)
        .min_by(f64::total_cmp)
        .ok_or("no board took a production chunk")?;
    let sample = firsts.first().map(|s| s.items);
    if firsts.len() != boards.len()
        || firsts
            .iter()
            .any(|s| Some(s.items) != sample || s.start_s > production)
    {
        return Err(format!(
            "the boards did not all begin with a sample of one size before the first \
             production chunk at {:.3} ms: {firsts:?}",
            production * 1e3
        ));
    }
    let cpu = cpu_first_start(report).ok_or("the CPU took no chunk")?;
    if cpu >= production {
        return Err(format!(
            "the CPU's first chunk started at {:.3} ms, after the first production chunk \
             at {:.3} ms",
            cpu * 1e3,
            production * 1e3
        ));
    }
    println!(
        "PE {}: {} boards sampled {} iterations each; the CPU's first chunk at {:.3} ms, \
         the first production chunk at {:.3} ms",
        report.pe,
        boards.len(),
        sample.unwrap_or(0),
        cpu * 1e3,
        production * 1e3
    );
    Ok(())
}

/// The counts of the iterations this PE ran, after checking that every iteration
/// ran exactly once over the job (`Scope::Job`, collective) or on this PE.
fn ran_once(shmem: &Shmem, scope: Scope, marks: &Marks) -> Result<Vec<u32>, String> {
    let me = shmem.my_pe();
    let len = marks.0.len();
    let local: Vec<u32> = marks.0.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let total = match scope {
        Scope::Pe => local.clone(),
        Scope::Job => {
            let mine = shmem.alloc::<u32>(len, Place::Cpu).map_err(e2s)?;
            let sum = shmem.alloc::<u32>(len, Place::Cpu).map_err(e2s)?;
            shmem.put(&mine, 0, &local, me).map_err(e2s)?;
            shmem.barrier_all().map_err(e2s)?;
            shmem
                .reduce(&shmem.team_world(), &sum, &mine, len, ReduceOp::Sum)
                .map_err(e2s)?;
            let mut total = vec![0u32; len];
            shmem.get(&sum, 0, &mut total, me).map_err(e2s)?;
            total
        }
    };
    if let Some(i) = total.iter().position(|&c| c != 1) {
        return Err(format!("iteration {i} ran {} times", total[i]));
    }
    Ok(local)
}

/// A second loop of the same kernel started with what the first one's boards learned
/// (`Options::trained`): every iteration once again, and no board trains (its first
/// chunk is larger than the large training sample, 1000).
fn trained_again(
    shmem: &Shmem,
    n: u64,
    options: &Options,
    first: &shmemplus_cosched::Report,
    drives_boards: bool,
) -> Result<(), String> {
    let me = shmem.my_pe();
    if drives_boards && shmem.fpgas() > 0 && first.trained.is_none() {
        return Err(format!(
            "PE {me}: its boards learned nothing in the first loop"
        ));
    }
    let options = Options {
        trained: first.trained.clone(),
        ..options.clone()
    };
    let report = loop_again(shmem, n, &options, Fail::Nothing)?;
    // A planned round's steps too (its driver is another).
    steps_in_order(&report, shmem.clock() == ClockKind::Virtual)?;
    for d in &report.devices {
        if let (Device::Board { .. }, Some(span)) = (d.device, d.spans.first()) {
            if span.items <= 1000 {
                return Err(format!(
                    "{}: trained, its first chunk was {} iterations",
                    d.device, span.items
                ));
            }
            println!("PE {me}: {}: trained, first chunk {}", d.device, span.items);
        }
    }
    // Per PE on the virtual clock a trained loop runs as a planned round: one chunk
    // per board. Again with every board failing on its chunk: each is retired, its
    // chunk rerun on the CPU path, every iteration once (`loop_again` checks).
    let round = options.scope == Scope::Pe && shmem.clock() == ClockKind::Virtual;
    if round && drives_boards && shmem.fpgas() > 0 {
        let boards_chunks: Vec<u64> = report
            .devices
            .iter()
            .filter(|d| matches!(d.device, Device::Board { .. }))
            .map(|d| d.chunks)
            .collect();
        if !report.planned_round || boards_chunks.iter().any(|&c| c != 1) {
            return Err(format!(
                "PE {me}: trained per PE on the virtual clock, planned round {}, its \
                 boards' chunks {boards_chunks:?} (a round: one each)",
                report.planned_round
            ));
        }
        let failing = loop_again(shmem, n, &options, Fail::All)?;
        if !failing.planned_round {
            return Err(format!("PE {me}: the failing loop ran no planned round"));
        }
        let retired = failing
            .devices
            .iter()
            .filter(|d| d.failed.is_some())
            .count();
        if retired != shmem.fpgas() as usize {
            return Err(format!(
                "PE {me}: {retired} boards of {} retired from a failing round",
                shmem.fpgas()
            ));
        }
        println!("PE {me}: a trained round with failing boards ran every iteration once");
    }
    Ok(())
}

/// One more loop of `n` iterations with `options` (unpriced, the boards failing as
/// `fail` says): every iteration once again; its report.
fn loop_again(
    shmem: &Shmem,
    n: u64,
    options: &Options,
    fail: Fail,
) -> Result<shmemplus_cosched::Report, String> {
    let len = usize::try_from(n).map_err(|e| e.to_string())?;
    let marks = Marks((0..len).map(|_| AtomicU32::new(0)).collect());
    let boards = Boards {
        shmem,
        marks: &marks,
        fail,
        starts: AtomicU32::new(0),
        finishes: AtomicU32::new(0),
        staged: Vec::new(),
        in_bytes: 0,
        inputs: Vec::new(),
        background: false,
    };
    let cpu = |range: Range<u64>| {
        shmem.advance(CPU_ITEM * (range.end - range.start) as u32);
        marks.mark(range);
        Ok(())
    };
    // Prepared, then run after a barrier: preparing takes nothing and makes no
    // collective call (a job-wide loop makes its pool when it runs), and the loop
    // runs on the driver it was prepared for.
    let ready = Loop::prepare(shmem, n, options).map_err(|e| e.to_string())?;
    let prepared_round = ready.planned_round();
    shmem.barrier_all().map_err(e2s)?;
    let report = ready.run(cpu, &boards).map_err(|e| e.to_string())?;
    ran_once(shmem, options.scope, &marks)?;
    if report.planned_round != prepared_round {
        return Err(format!(
            "PE {}: prepared for a planned round: {prepared_round}, ran one: {}",
            shmem.my_pe(),
            report.planned_round
        ));
    }
    Ok(report)
}

/// What `Loop::prepare` refuses, before any iteration runs (not collective: each PE
/// asks alone): a loop of no iterations, training samples of one size, a CPU chunk
/// time that is not a number, a largest board chunk of 0.
fn prepare_refuses_bad_input(shmem: &Shmem, options: &Options) -> Result<(), String> {
    let refused = |n: u64, options: &Options, what: &str| match Loop::prepare(shmem, n, options) {
        Err(e) => Ok(e),
        Ok(_) => Err(format!("PE {}: Loop::prepare took {what}", shmem.my_pe())),
    };
    let e = refused(0, options, "a loop of 0 iterations")?;
    if !matches!(e, shmemplus_cosched::Error::EmptyLoop) {
        return Err(format!("a loop of 0 iterations: {e}"));
    }
    let bad = [
        (
            Options {
                samples: Some((8, 8)),
                ..options.clone()
            },
            "samples of one size",
            "two different sizes",
        ),
        (
            Options {
                cpu_chunk_s: f64::NAN,
                ..options.clone()
            },
            "a CPU chunk time of NaN",
            "cpu_chunk_s",
        ),
        (
            Options {
                max_board_chunk: Some(0),
                ..options.clone()
            },
            "a largest board chunk of 0",
            "max_board_chunk",
        ),
    ];
    for (options, what, said) in &bad {
        let e = refused(100, options, what)?;
        if !e.to_string().contains(said) {
            return Err(format!("{what}: the error says {e:?}, not {said:?}"));
        }
    }
    Ok(())
}

/// The loop of `cpu_starts_after_the_samples` again, with the CPU's iteration
/// estimated (`Options::cpu_item_estimate_s`, its true 10 us): the samples (2.5 and
/// 7 ms) are due far later than `CPU_FIRST_PIECE_MARGIN` estimates, so on one driver
/// thread the CPU's first chunk runs beside them, before the boards' first
/// production chunk; every iteration once again (collective: `drives_boards` says
/// whether this PE checks).
fn an_estimate_lets_the_cpu_run_beside_the_samples(
    shmem: &Shmem,
    n: u64,
    options: &Options,
    drives_boards: bool,
) -> Result<(), String> {
    let options = Options {
        cpu_item_estimate_s: Some(CPU_ITEM.as_secs_f64()),
        ..options.clone()
    };
    let report = loop_again(shmem, n, &options, Fail::Nothing)?;
    if !drives_boards {
        return Ok(());
    }
    let samples = options.samples.ok_or("the loop's samples are given")?;
    match (cpu_first_start(&report), first_production_start(&report, samples)) {
        (Some(cpu), Some(board)) if cpu < board => {
            println!(
                "PE {}: with an estimate, the CPU's first chunk at {:.3} ms, before the boards' first production chunk at {:.3} ms",
                report.pe,
                cpu * 1e3,
                board * 1e3
            );
            Ok(())
        }
        (cpu, board) => Err(format!(
            "PE {}: with an estimate of its iteration the CPU's first chunk started at {cpu:?} s, not before the boards' first production chunk at {board:?} s",
            report.pe
        )),
    }
}

/// With the scheduler's samples and priced transfers: the small sample `small` that
/// board `device` trained on costs, beyond its iterations' share of the largest
/// chunk's modeled transfers, no more than the default size would have (`n / (64 *
/// workers)`), and is no smaller.
fn small_sample_is_cheap(
    shmem: &Shmem,
    options: &Options,
    n: u64,
    device: Device,
    small: u64,
) -> Result<(), String> {
    let Device::Board { board, .. } = device else {
        return Ok(());
    };
    let me = shmem.my_pe();
    let topo = shmem.topology();
    let workers = u64::from(shmem.n_pes()) + u64::from(topo.nodes) * u64::from(shmem.fpgas());
    let default = (n / (64 * workers)).max(1);
    let largest = options.max_board_chunk.unwrap_or(u64::MAX).min(n);
    let priced = |items: u64| -> Result<f64, String> {
        let in_bytes = options.board_bytes.map_or(0, |b| b.to_board);
        let modeled = |op, per_item: u64| -> Result<f64, String> {
            shmem
                .modeled_route_seconds(
                    op,
                    None,
                    Place::Fpga(board),
                    me,
                    Boards::bytes(items, per_item)?,
                )
                .map_err(e2s)?
                .ok_or_else(|| "the profile prices no board transfer".to_string())
        };
        Ok(modeled(shmemplus::RmaOp::Put, in_bytes)? + modeled(shmemplus::RmaOp::Get, OUT_BYTES)?)
    };
    let per_item = priced(largest)? / largest as f64;
    let overhead =
        |items: u64| -> Result<f64, String> { Ok(priced(items)? - items as f64 * per_item) };
    let (mine, theirs) = (overhead(small)?, overhead(default)?);
    if small < default || mine > theirs {
        return Err(format!(
            "{device}: small sample {small} (overhead {:.3} ms), default {default} ({:.3} ms)",
            mine * 1e3,
            theirs * 1e3
        ));
    }
    println!(
        "PE {me}: {device}: small sample {small}, overhead {:.3} ms (default {default}: {:.3} ms)",
        mine * 1e3,
        theirs * 1e3
    );
    Ok(())
}
