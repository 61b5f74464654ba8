//! A trained start's planned round: a loop over a PE's own iterations
//! ([`Scope::Pe`]) on the virtual clock's one driver thread, started from what an
//! earlier loop of the same kernel learned ([`Options::trained`]), is planned once
//! before its first chunk (when the loop is prepared: `prepared::Loop::prepare`,
//! which an application may call before the part of its program it times) and run
//! as a static split runs.
//!
//! The plan is the deadline plan the adaptive driver makes at its first take
//! (`plan::DeadlinePlan`, the CPU path weighed against its start-up cost as
//! `sizing::weighing_own_cpu` weighs it), but for every board of the PE at once:
//! one chunk per board, staged one after the other, and one chunk for the CPU path,
//! so that all end together. The driver then stages and starts every board, runs
//! the CPU's chunk in pieces (completing between pieces the boards whose DONE has
//! passed), and completes the other boards in the order of their DONE. That is the
//! static split's shape with FastFit's sizes: no take, sizer or plan runs between
//! two chunks.
//!
//! Why: on a short loop the adaptive driver's own work is what a pass costs beyond
//! its kernels. The 2D FFT's trained column pass on native with 4 boards (256 rows
//! of 0.5 us on a board) took 64-131 us where the static split's took 58; its
//! setup, the takes and plans between stagings and the loop's end cost 25-40 us of
//! the thread (docs/cosched.md).
//!
//! When the round does not apply, `plan` says `None` and the adaptive driver runs:
//! no trained lines, another scope or clock, a line that falls (says nothing of an
//! iteration's cost), a chunk larger than a board holds, a board that costs the
//! thread as much per iteration as the CPU path (the adaptive driver retires it), or
//! numbers the plan cannot use. A board that fails is retired and its chunk rerun on
//! the CPU path at once, as in the adaptive drivers; what the round leaves in the
//! pool (nothing, unless a rounding does) is run on the CPU path at its end. What
//! the round cannot do is correct itself: a board or CPU slower than its trained
//! line ends the loop late by the difference, where the adaptive driver would have
//! moved later chunks to the others.
//!
//! This module owns whether a loop takes the round, its chunks and running them. It
//! must not size chunks adaptively (`sizing`), fit lines (`fits` does, from what
//! this module measured) nor know what an iteration computes.

use crate::fastfit::{PipelineModel, Sample};
use crate::fits::{start_cost_kept, CpuLearned, DriverFit, NodeFits, PerItem};
use crate::options::{Options, Scope};
use crate::paths::{failover, BoardPath, CpuPath};
use crate::plan::{
    cpu_item_planned_s, staging_within, DeadlinePlan, NodeNow, PlannedRound, Round, RoundKey,
    DEFAULT_CPU_SPREAD,
};
use crate::pool::WorkPool;
use crate::report::{BoardFit, BoardSteps, Device, DeviceReport, Report, Span, Steps, Trained};
use crate::sizing::{piece_size, weighing_own_cpu};
use crate::{Error, Result};
use shmemplus::config::ClockKind;
use shmemplus::{BoardRun, Shmem};
use std::ops::Range;

/// What a round is planned for (see [`RoundKey`]) by a loop of `n` iterations with
/// `options` on a PE that drives `boards` boards.
fn key_of(n: u64, options: &Options, boards: u32) -> RoundKey {
    RoundKey {
        n,
        boards,
        cpus: options.cpus,
        max_chunk: options.max_board_chunk,
    }
}

/// Whether a loop with `options` on a PE that drives `boards` boards runs as a
/// planned round when it starts trained (see the module doc).
fn applies(shmem: &Shmem, options: &Options, boards: u32) -> bool {
    options.scope == Scope::Pe
        && options.boards
        && boards > 0
        && shmem.clock() == ClockKind::Virtual
}

/// The round for a loop of `n` iterations with `options` on a PE that drives
/// `boards` boards (the one planned ahead with its lines, if it was planned for
/// such a loop), or `None` where the adaptive driver runs instead (see the module
/// doc).
pub(crate) fn plan(shmem: &Shmem, n: u64, options: &Options, boards: u32) -> Option<Round> {
    let trained = options.trained.as_ref()?;
    if !applies(shmem, options, boards) {
        return None;
    }
    let key = key_of(n, options, boards);
    match &trained.planned.0 {
        Some((planned_for, round)) if *planned_for == key => Some(round.clone()),
        _ => plan_from(trained, n, options.cpus, boards, options.max_board_chunk),
    }
}

/// [`plan`]'s arithmetic: the round of `n` iterations for `boards` boards alike and,
/// if `cpus`, the driver's CPU path, from `trained`; no chunk above `max_chunk`.
pub(crate) fn plan_from(
    trained: &Trained,
    n: u64,
    cpus: bool,
    boards: u32,
    max_chunk: Option<u64>,
) -> Option<Round> {
    let usable = |x: f64| x.is_finite() && x > 0.0;
    let [small, large] = trained.kernel;
    if large.seconds <= small.seconds || boards == 0 {
        return None;
    }
    let model = trained.model;
    // Read as a loop started from these lines reads them (`NodeFits::trained`).
    let measured_driver = DriverFit::line_through(trained.driver?)?;
    // Staging and fetching are part of a chunk's time (as the adaptive plan takes
    // them).
    let driver = PipelineModel {
        latency_s: measured_driver.latency_s.min(model.latency_s),
        item_s: measured_driver.item_s.min(model.item_s),
    };
    let staging = trained.staging.and_then(DriverFit::line_through);
    let cpu_item_s = Some(trained.cpu_item_s).filter(|&t| cpus && usable(t));
    let node = NodeNow {
        queued: boards - 1,
        busy: Vec::new(),
        cpu_start_s: if usable(trained.cpu_start_s) {
            trained.cpu_start_s
        } else {
            0.0
        },
        cpu_taken: 0,
    };
    let whole = DeadlinePlan {
        board: model,
        driver,
        staging: staging_within(staging, driver),
        left: n as f64,
        node: &node,
        // A trained start has measured no spread in this loop.
        own_cpu_item_s: cpu_item_s
            .map(|t| cpu_item_planned_s(t, model.item_s / f64::from(boards), DEFAULT_CPU_SPREAD)),
        others_rate: 0.0,
    };
    let (chosen, e) = weighing_own_cpu(&whole)?;
    let (chunks, own_cpu) = chosen.round_by(e);
    let cpu = if chosen.own_cpu_item_s.is_some() {
        // `as` saturates, and NaN gives 0.
        (own_cpu.floor() as u64).min(n)
    } else if cpus && chunks.iter().all(|&c| c <= 0.0) {
        n
    } else {
        0
    };
    let boards = shares(&chunks, n - cpu)?;
    let too_large = boards.iter().any(|&c| max_chunk.is_some_and(|max| c > max));
    // A board that costs the thread as much per iteration as the CPU path is not
    // worth its chunk (the adaptive driver retires it: `StopReason::Measured`).
    let dear =
        |c: u64| cpu_item_s.is_some_and(|t| c > 0 && measured_driver.seconds(c) / c as f64 >= t);
    if too_large || boards.iter().any(|&c| dear(c)) {
        return None;
    }
    Some(Round { boards, cpu })
}

/// `total` iterations in whole parts in proportion to `weights` (not negative, not
/// all 0), the rounding's remainder to the largest fractions (the earlier of equal
/// ones); `None` for weights that give no proportion.
fn shares(weights: &[f64], total: u64) -> Option<Vec<u64>> {
    let sum: f64 = weights.iter().map(|w| w.max(0.0)).sum();
    if total == 0 {
        return Some(vec![0; weights.len()]);
    }
    if !(sum.is_finite() && sum > 0.0) {
        return None;
    }
    let exact: Vec<f64> = weights
        .iter()
        .map(|w| w.max(0.0) * total as f64 / sum)
        .collect();
    // `as` saturates; each floor is at most `total`.
    let mut parts: Vec<u64> = exact
        .iter()
        .map(|x| (x.floor() as u64).min(total))
        .collect();
    let given: u64 = parts.iter().sum();
    let mut short = total.checked_sub(given)?;
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&i, &j| {
        let frac = |k: usize| exact[k] - exact[k].floor();
        frac(j).total_cmp(&frac(i)).then(i.cmp(&j))
    });
    for &i in order.iter().cycle() {
        if short == 0 {
            break;
        }
        parts[i] += 1;
        short -= 1;
    }
    Some(parts)
}

/// A board chunk of the round in flight.
struct Flight {
    board: u32,
    run: BoardRun,
    range: Range<u64>,
    /// When the driver took it from the pool.
    asked_s: f64,
    start_s: f64,
    /// The driver's time in `BoardPath::start` (staging).
    staged_s: f64,
}

/// A board chunk of the round as it ended, in the driver's seconds: what the
/// report and the fits are made of once the round is over.
struct Fetched {
    board: u32,
    items: u64,
    asked_s: f64,
    start_s: f64,
    staged_s: f64,
    /// The kernel's DONE, if the board said when.
    done_s: Option<f64>,
    /// When the driver came to the board, when the kernel's wait returned (its
    /// fetch began) and when the fetch ended.
    came_s: f64,
    fetch_s: f64,
    end_s: f64,
}

impl Fetched {
    /// The chunk's time: from staging to DONE plus the fetch (as the adaptive
    /// driver counts it), and the wait from DONE until the driver came to it.
    fn span_and_service(&self) -> (Span, f64) {
        let (end_s, service_s) = match self.done_s {
            Some(done_s) if done_s < self.came_s => {
                (done_s + (self.end_s - self.came_s), self.came_s - done_s)
            }
            _ => (self.end_s, 0.0),
        };
        let span = Span {
            start_s: self.start_s,
            end_s,
            items: self.items,
            steps: Some(Steps {
                asked_s: self.asked_s,
                board: Some(BoardSteps {
                    staged_s: self.start_s + self.staged_s,
                    done_s: self.done_s.unwrap_or(self.fetch_s),
                    served_s: self.came_s,
                    fetched_s: self.end_s,
                }),
            }),
        };
        (span, service_s)
    }
}

/// What running the round needs beside the boards' path.
struct Driver<'a> {
    shmem: &'a Shmem,
    cpu: &'a CpuPath<'a>,
    start: std::time::Duration,
}

impl Driver<'_> {
    fn at_s(&self, t: std::time::Duration) -> f64 {
        t.saturating_sub(self.start).as_secs_f64()
    }

    fn now_s(&self) -> f64 {
        self.at_s(self.shmem.now())
    }

    fn cpu_call(&self, range: Range<u64>) -> Result<()> {
        (self.cpu)(range.clone()).map_err(|why| Error::Cpu {
            pe: self.shmem.my_pe(),
            first: range.start,
            end: range.end,
            why,
        })
    }
}

/// Runs `round` over iterations `0..n` of this PE (see the module doc), a loop with
/// `options`: `trained` is what it was planned from, `cpu` and `path` the
/// application's paths. Returns the PE's report, its boards' lines refined by the
/// round's chunks.
///
/// The round's own work is kept out of its way: between the first staging and the
/// last fetch the driver only starts, runs the CPU's chunk, waits, fetches and reads
/// the clock; the refined lines and the boards' spans are made after the last fetch.
/// (Each fetch streams a chunk's results through the caches, and the bookkeeping's
/// code and data came back from memory after each, 2-3 us a board in the 2D FFT's
/// column pass.) What needs no board's times (the fits seeded from `trained`, the
/// devices' reports) is made between the CPU's chunk and the first wait for a DONE,
/// where the driver would otherwise wait: made after the last fetch it kept the
/// column pass's end 0.5-2.7 us later (medians of 150 jobs, docs/cosched.md).
pub(crate) fn run<B: BoardPath>(
    shmem: &Shmem,
    n: u64,
    options: &Options,
    round: &Round,
    trained: &Trained,
    cpu: &CpuPath<'_>,
    path: &B,
) -> Result<Report> {
    let me = shmem.my_pe();
    let driver = Driver {
        shmem,
        cpu,
        start: shmem.now(),
    };
    // Every planned chunk is taken from the PE's pool, which alone says what is
    // left (its takers: one per board, the CPU and the drain).
    let pool = WorkPool::per_pe(n, round.boards.len() as u64 + 2)?;
    let mut flights = Vec::with_capacity(round.boards.len());
    let mut fetched = Vec::with_capacity(round.boards.len());
    let mut failed: Vec<(u32, String)> = Vec::new();
    for (board, &planned) in round.boards.iter().enumerate() {
        let asked_s = driver.now_s();
        let Some(chunk) = (planned > 0).then(|| pool.take_local(planned)).flatten() else {
            continue;
        };
        let board = board as u32;
        let start_s = driver.now_s();
        match path.start(board, chunk.range.clone()) {
            Ok(run) => flights.push(Flight {
                board,
                run,
                range: chunk.range,
                asked_s,
                start_s,
                staged_s: driver.now_s() - start_s,
            }),
            Err(why) => failed.push((board, failover(shmem, cpu, board, chunk.range, why)?)),
        }
    }
    let mut cpu_report = DeviceReport::new(Device::Cpu { pe: me });
    let mut own = PerItem::starting_at(trained.cpu_item_s);
    let asked_s = driver.now_s();
    if let Some(chunk) = (round.cpu > 0)
        .then(|| pool.take_local(round.cpu))
        .flatten()
    {
        let piece = piece_size(chunk.range.end - chunk.range.start, flights.is_empty());
        let start_s = driver.now_s();
        let mut from = start_s;
        let mut at = chunk.range.start;
        while at < chunk.range.end {
            let end = at.saturating_add(piece).min(chunk.range.end);
            driver.cpu_call(at..end)?;
            own.add(end - at, driver.now_s() - from);
            at = end;
            let now = shmem.now();
            let mut i = 0;
            while i < flights.len() {
                if flights[i].run.done_at().is_some_and(|t| t <= now) {
                    let f = flights.swap_remove(i);
                    complete(&driver, path, f, &mut fetched, &mut failed)?;
                } else {
                    i += 1;
                }
            }
            from = driver.now_s();
        }
        cpu_report.record(Span {
            start_s,
            end_s: driver.now_s(),
            items: chunk.range.end - chunk.range.start,
            steps: Some(Steps {
                asked_s,
                board: None,
            }),
        });
    }
    // The bookkeeping that needs no board's times, while the kernels run (see the
    // doc above).
    let mut fits = NodeFits::trained(trained);
    let node = shmem.node();
    let mut boards: Vec<(DeviceReport, f64)> = (0..round.boards.len() as u32)
        .map(|board| {
            (
                DeviceReport::new(Device::Board {
                    pe: me,
                    node,
                    board,
                }),
                0.0,
            )
        })
        .collect();
    flights.sort_by_key(|f| f.run.done_at());
    for f in flights {
        complete(&driver, path, f, &mut fetched, &mut failed)?;
    }
    // What the round left (a failed board's chunk ran at once): nothing, unless a
    // rounding left some; on the CPU path.
    loop {
        let asked_s = driver.now_s();
        let Some(chunk) = pool.take_local(n) else {
            break;
        };
        let start_s = driver.now_s();
        let items = chunk.range.end - chunk.range.start;
        driver.cpu_call(chunk.range)?;
        cpu_report.record(Span {
            start_s,
            end_s: driver.now_s(),
            items,
            steps: Some(Steps {
                asked_s,
                board: None,
            }),
        });
    }
    let elapsed_s = driver.now_s();

    // The round is over: the rest of its report and its lines.
    for (board, why) in failed {
        boards[board as usize].0.failed = Some(why);
    }
    for f in &fetched {
        let (span, service_s) = f.span_and_service();
        fits.kernel.add(Sample {
            items: f.items,
            seconds: span.end_s - span.start_s,
        });
        fits.driver.add(Sample {
            items: f.items,
            seconds: f.staged_s + (f.end_s - f.fetch_s),
        });
        fits.staging.add(Sample {
            items: f.items,
            seconds: f.staged_s,
        });
        let (report, service) = &mut boards[f.board as usize];
        report.record(span);
        *service = service_s;
    }
    let cpu_rate = if cpu_report.busy_s > 0.0 {
        cpu_report.items as f64 / cpu_report.busy_s
    } else {
        trained.cpu_rate
    };
    let learned = fits
        .learned(CpuLearned {
            rate: cpu_rate,
            item_s: own.per_item(),
            start_s: own.start_s().map_or(trained.cpu_start_s, |s| {
                start_cost_kept(s, trained.cpu_start_s)
            }),
        })
        .map(|mut learned| {
            // Lines this round left as they were plan this round again (`plan_from`
            // reads nothing else): it is handed on, planned. Changed lines are
            // planned by the next loop that starts from them.
            if learned == *trained {
                let key = key_of(n, options, round.boards.len() as u32);
                learned.planned = PlannedRound(Some((key, round.clone())));
            }
            learned
        });
    let mut devices = Vec::with_capacity(boards.len() + 1);
    if round.cpu > 0 || cpu_report.chunks > 0 || round.boards.is_empty() {
        devices.push(cpu_report);
    }
    for ((mut report, service_s), &planned) in boards.into_iter().zip(&round.boards) {
        report.fit = board_fit(trained, &fits, &report, planned, service_s);
        devices.push(report);
    }
    for d in &mut devices {
        d.idle_s = (elapsed_s - d.busy_s).max(0.0);
    }
    Ok(Report {
        pe: me,
        elapsed_s,
        devices,
        planned_round: true,
        trained: learned,
    })
}

/// Completes a board's chunk of the round (its DONE has passed, or is waited for
/// now): waits for the kernel, fetches the results and keeps the times in
/// `fetched`; a board that fails is retired into `failed`, its chunk rerun on the
/// CPU path at once.
fn complete<B: BoardPath>(
    driver: &Driver<'_>,
    path: &B,
    f: Flight,
    fetched: &mut Vec<Fetched>,
    failed: &mut Vec<(u32, String)>,
) -> Result<()> {
    let done_s = f.run.done_at().map(|t| driver.at_s(t));
    let came_s = driver.now_s();
    let mut fetch_s = came_s;
    let finished = f.run.wait().map_err(|e| e.to_string()).and_then(|_| {
        fetch_s = driver.now_s();
        path.finish(f.board, f.range.clone())
    });
    match finished {
        Ok(()) => fetched.push(Fetched {
            board: f.board,
            items: f.range.end - f.range.start,
            asked_s: f.asked_s,
            start_s: f.start_s,
            staged_s: f.staged_s,
            done_s,
            came_s,
            fetch_s,
            end_s: driver.now_s(),
        }),
        Err(why) => {
            let why = failover(driver.shmem, driver.cpu, f.board, f.range, why)?;
            failed.push((f.board, why));
        }
    }
    Ok(())
}

/// A board's fit in the round's report: the line it was planned from, the planned
/// chunk and the model's time for it, and how its chunk's time compared.
fn board_fit(
    trained: &Trained,
    fits: &NodeFits,
    report: &DeviceReport,
    planned: u64,
    service_s: f64,
) -> Option<BoardFit> {
    let samples = fits
        .kernel
        .fit
        .map_or(trained.kernel, |(samples, _)| samples);
    let predicted_s = trained.model.seconds(planned);
    let measured_over_model = report
        .spans
        .first()
        .filter(|_| planned > 0 && predicted_s > 0.0)
        .map(|s| (s.end_s - s.start_s) / trained.model.seconds(s.items));
    Some(BoardFit {
        samples,
        model: trained.model,
        chunk: planned,
        predicted_s,
        measured_over_model,
        service_s,
        second_sample_modeled: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines like the 2D FFT's trained ones on native: a board's 64 rows in 40 us
    /// (7 us of latency, 0.51 us a row), the driver's thread 1.5 us a chunk, a CPU
    /// row of 1.84 us after a first one 3 us dearer.
    fn fft_like(cpu_item_s: f64) -> Trained {
        let kernel = [
            Sample {
                items: 16,
                seconds: 7e-6 + 16.0 * 0.51e-6,
            },
            Sample {
                items: 76,
                seconds: 7e-6 + 76.0 * 0.51e-6,
            },
        ];
        Trained {
            kernel,
            model: PipelineModel::fit(kernel[0], kernel[1]).unwrap(),
            driver: Some([
                Sample {
                    items: 16,
                    seconds: 1.5e-6,
                },
                Sample {
                    items: 76,
                    seconds: 1.6e-6,
                },
            ]),
            // Lines written before staging was measured: the driver's stands for it.
            staging: None,
            cpu_rate: 1.0 / cpu_item_s,
            cpu_item_s,
            cpu_start_s: 3e-6,
            planned: PlannedRound::default(),
        }
    }

    #[test]
    fn a_round_hands_out_every_iteration_once_and_ends_the_devices_together() {
        for boards in [1u32, 2, 4] {
            let trained = fft_like(1.84e-6);
            let round = plan_from(&trained, 256, true, boards, Some(256)).unwrap();
            assert_eq!(round.boards.len(), boards as usize);
            assert_eq!(
                round.boards.iter().sum::<u64>() + round.cpu,
                256,
                "{round:?}"
            );
            // The boards are staged one after the other (1.5 us each), so each
            // later one has less: they end within a row's time of each other.
            let driver =
                PipelineModel::fit(trained.driver.unwrap()[0], trained.driver.unwrap()[1]).unwrap();
            let mut start = 0.0;
            let ends: Vec<f64> = round
                .boards
                .iter()
                .map(|&c| {
                    let end = start + trained.model.seconds(c);
                    start += driver.seconds(c);
                    end
                })
                .collect();
            let (lo, hi) = ends
                .iter()
                .fold((f64::MAX, 0.0f64), |(lo, hi), &e| (lo.min(e), hi.max(e)));
            assert!(hi - lo <= 2.0 * 0.51e-6, "{boards} boards: {ends:?}");
            assert!(round.boards.windows(2).all(|w| w[0] >= w[1]), "{round:?}");
            // One board: its CPU saves it far more than its start-up cost, and takes
            // rows; the CPU's rows end by the boards' end.
            if boards == 1 {
                assert!(round.cpu > 0, "{round:?}");
            }
            let cpu_end = 3e-6 + round.cpu as f64 * 1.84e-6 + start;
            assert!(round.cpu == 0 || cpu_end <= hi + 1.84e-6, "{cpu_end} {hi}");
        }
    }

    #[test]
    fn a_cpu_that_saves_less_than_its_start_up_cost_is_left_out_and_without_cpus_the_boards_take_all(
    ) {
        // A CPU 100x slower than a board: its rows would save the four boards less
        // than twice its start-up cost.
        let mut trained = fft_like(51e-6);
        trained.cpu_start_s = 20e-6;
        let round = plan_from(&trained, 256, true, 4, None).unwrap();
        assert_eq!(round.cpu, 0);
        assert_eq!(round.boards.iter().sum::<u64>(), 256);
        let round = plan_from(&fft_like(1.84e-6), 256, false, 2, None).unwrap();
        assert_eq!(round.cpu, 0);
        assert_eq!(round.boards.iter().sum::<u64>(), 256);
    }

    #[test]
    fn a_round_staggers_its_boards_by_their_staging_where_it_was_measured() {
        // The driver's cost 16 us for 76 rows, of which staging is a quarter: the
        // four boards' chunks shrink by a quarter as much as by the whole cost.
        let mut trained = fft_like(1.84e-6);
        let driver = trained.driver.unwrap();
        let whole = plan_from(&trained, 256, false, 4, None).unwrap();
        let quarter = |s: Sample| Sample {
            seconds: s.seconds / 4.0,
            ..s
        };
        let mut dear = trained.clone();
        dear.driver = Some(driver.map(|s| Sample {
            seconds: s.seconds * 10.0,
            ..s
        }));
        let dear_whole = plan_from(&dear, 256, false, 4, None).unwrap();
        dear.staging = Some(driver.map(|s| {
            quarter(Sample {
                seconds: s.seconds * 10.0,
                ..s
            })
        }));
        let dear_staged = plan_from(&dear, 256, false, 4, None).unwrap();
        let spread = |r: &Round| r.boards[0] - r.boards[3];
        assert!(
            spread(&dear_whole) > spread(&whole),
            "{dear_whole:?} {whole:?}"
        );
        assert!(
            spread(&dear_staged) < spread(&dear_whole),
            "{dear_staged:?} {dear_whole:?}"
        );
        // A staging line dearer than the driver's is held to it.
        trained.staging = Some(driver.map(|s| Sample {
            seconds: s.seconds * 10.0,
            ..s
        }));
        assert_eq!(plan_from(&trained, 256, false, 4, None).unwrap(), whole);
    }

    #[test]
    fn no_round_where_the_adaptive_driver_must_decide() {
        let trained = fft_like(1.84e-6);
        // A chunk larger than a board holds.
        assert_eq!(plan_from(&trained, 256, true, 1, Some(100)), None);
        // No driver line, or a kernel line that falls.
        let no_driver = Trained {
            driver: None,
            ..trained.clone()
        };
        assert_eq!(plan_from(&no_driver, 256, true, 2, None), None);
        let mut falls = trained.clone();
        falls.kernel[1].seconds = falls.kernel[0].seconds;
        assert_eq!(plan_from(&falls, 256, true, 2, None), None);
        // A board whose chunk costs the thread as much per iteration as the CPU path.
        let mut dear = trained.clone();
        dear.driver = Some([
            Sample {
                items: 16,
                seconds: 16.0 * 2e-6,
            },
            Sample {
                items: 76,
                seconds: 76.0 * 2e-6,
            },
        ]);
        assert_eq!(plan_from(&dear, 256, true, 2, None), None);
        // No boards.
        assert_eq!(plan_from(&trained, 256, true, 0, None), None);
    }

    #[test]
    fn shares_are_whole_proportional_and_sum_to_the_total() {
        assert_eq!(shares(&[1.0, 1.0, 1.0], 10), Some(vec![4, 3, 3]));
        assert_eq!(
            shares(&[76.4, 68.2, 60.1, 51.3], 256),
            Some(vec![77, 68, 60, 51])
        );
        assert_eq!(shares(&[2.0, 0.0, -1.0], 5), Some(vec![5, 0, 0]));
        assert_eq!(shares(&[0.0, 0.0], 0), Some(vec![0, 0]));
        assert_eq!(shares(&[0.0, 0.0], 3), None);
        assert_eq!(shares(&[f64::NAN], 3), None);
        for total in [1u64, 7, 255, 1 << 40] {
            let parts = shares(&[0.3, 0.3, 0.4], total).unwrap();
            assert_eq!(parts.iter().sum::<u64>(), total);
        }
    }
    #[test]
    fn a_chunk_fetched_late_counts_its_done_and_the_wait_as_service() {
        let fetched = |done_s| Fetched {
            board: 0,
            items: 64,
            asked_s: 9.0,
            start_s: 10.0,
            staged_s: 1.0,
            done_s,
            came_s: 50.0,
            fetch_s: 51.0,
            end_s: 53.0,
        };
        // DONE at 40, the driver came at 50 and took 3 to fetch: the chunk ends at
        // 43, and it waited 10 for the driver.
        let (span, service_s) = fetched(Some(40.0)).span_and_service();
        assert_eq!((span.start_s, span.end_s, span.items), (10.0, 43.0, 64));
        assert_eq!(service_s, 10.0);
        // Its steps: taken in 1, staged in 1, the kernel's 29 to DONE, 10 waiting
        // for the driver, 3 fetching.
        let mut report = DeviceReport::new(Device::Board {
            pe: 0,
            node: 0,
            board: 0,
        });
        report.record(span);
        let t = report.step_totals();
        assert_eq!(t.chunks, 1);
        assert_eq!(
            (t.take_s, t.staging_s, t.kernel_s, t.waited_s, t.fetch_s),
            (1.0, 1.0, 29.0, 10.0, 3.0)
        );
        // DONE when the driver came, after it or unknown: the chunk ends with its
        // fetch, and nothing waited.
        for done_s in [Some(50.0), Some(52.0), None] {
            let (span, service_s) = fetched(done_s).span_and_service();
            assert_eq!((span.end_s, service_s), (53.0, 0.0), "{done_s:?}");
        }
    }
}
