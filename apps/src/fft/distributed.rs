//! The two passes of the distributed 2D FFT: row FFTs and a corner turn, twice.
//!
//! On the CPUs a pass is by default two phases: all the PE's row FFTs, then its turn
//! ([`CornerTurn::turn_slab`], non-blocking puts and one `quiet`). With slabs it is
//! one phase: a slab's row FFTs, then its turn while the slab is still in the cache,
//! then the next slab; one `quiet` ends the pass, and no barrier separates a PE's FFTs
//! from its turns. The first pass turns the PE's rows into object A, the second transforms A in place and turns
//! it into B. On the boards a pass moves the rows to the boards, runs the kernel,
//! brings them back into object B and turns them from there into A: no copy between
//! the objects and the program's own memory.
//!
//! With FastFit (`Device::Fastfit`) a pass is one co-scheduled loop over the PE's
//! rows (`shmemplus_cosched` with `Scope::Pe`): its CPU and its partitions of the
//! node's boards take chunks of rows from a pool in its own memory; a CPU chunk is
//! transformed in a copy and written into B, a board chunk goes to the board, through
//! the kernel and back into B; then B is turned into A, as with boards.
//!
//! A static split (`Device::Split`, the oracle's baseline) is the same pass with the
//! shares fixed: the PE's first rows on its CPU, the rest in equal parts on its boards,
//! staged at once and computed while the CPU does its part.
//!
//! Every time it reports is on the job clock ([`Shmem::now`]; virtual time under
//! `SHMEMPLUS_CLOCK=virtual`), and kernels run through [`Shmem::kernel_start`].
//!
//! This module owns the order of the steps and which object holds what. It must not
//! print, parse arguments or decide the boards' speed (the `fft2d` binary does).

use super::corner_turn::{Buffer, CornerTurn};
use super::kernel;
use super::serial::RowFft;
use super::Complex32;
use crate::phases::PhaseTimer;
use shmemplus::{Shmem, SymVec};

/// Name of the phases that run row FFTs and the corner turn of the same slabs
/// (`slab_rows`).
pub const PASS_1: &str = "row FFTs + turn";
/// The same for the second pass (the columns of the original).
pub const PASS_2: &str = "column FFTs + turn";
/// Name of the phase of the corner turns alone (the default, and with boards).
pub const TURNS: &str = "corner turns";
/// Name of the phase of the row FFTs without their turn (on the CPUs by default, on
/// the boards, in a static split and under FastFit).
pub const ROW_FFTS: &str = "row FFTs";
/// The same for the second pass (the columns of the original).
pub const COLUMN_FFTS: &str = "column FFTs";

/// This PE's rows on one board: `count` rows from its row `first`, in `obj`.
pub struct BoardRows {
    /// The board.
    pub board: u32,
    /// First row (of this PE's `R`).
    pub first: usize,
    /// Number of rows.
    pub count: usize,
    /// The board object that holds them.
    pub obj: SymVec<Complex32>,
}

/// Where the row FFTs run.
pub enum Device<'a> {
    /// On this PE's CPU.
    Cpu {
        /// `None`: a pass is two phases, the FFTs, then (after a barrier) the turn.
        /// `Some(rows)`: a pass is one phase, in slabs of `rows` rows (at least 1; R or
        /// more: all the PE's rows, then their turn, with no barrier in between).
        slab_rows: Option<usize>,
    },
    /// On the boards, this PE's rows split as given.
    Boards(&'a [BoardRows]),
    /// Shared at run time between this PE's CPU and its boards (FastFit): each
    /// board's object holds up to its `count` rows, the most a chunk may have.
    Fastfit {
        /// The boards and their objects.
        boards: &'a [BoardRows],
        /// Lines from an earlier run (`--trained`): the row pass starts from them
        /// instead of training.
        trained: Option<&'a shmemplus_cosched::Trained>,
        /// The CPU path's seconds per row as the run assumes it (the speed the
        /// boards' timing was set from), if known: FastFit's estimate of a CPU row
        /// before it measures one (`shmemplus_cosched::Options::cpu_item_estimate_s`).
        cpu_row_s: Option<f64>,
    },
    /// A static split of this PE's rows: its first `cpu_rows` rows on its CPU, the rest
    /// in equal parts on its boards (one chunk each, which must fit the board's
    /// object), both at once. The oracle's baseline.
    Split {
        /// The boards and their objects.
        boards: &'a [BoardRows],
        /// Rows (of this PE's `R`) on the CPU.
        cpu_rows: usize,
    },
}

/// What a run did, as this PE saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The object that holds this PE's rows of the result.
    pub result: Buffer,
    /// Seconds this PE spent turning (inside the turn calls, `quiet` included), on the
    /// job clock.
    pub turn_s: f64,
    /// The kernels' modeled seconds, both passes (the slowest board of each).
    pub kernel_modeled_s: f64,
    /// Seconds on the job clock until the kernels' DONE, both passes (the slowest board
    /// of each).
    pub kernel_done_after_s: f64,
    /// With FastFit or a split: rows this PE's CPU transformed, both passes.
    pub cpu_rows: u64,
    /// With FastFit or a split: rows this PE's boards transformed, both passes.
    pub board_rows: u64,
    /// With FastFit, on PE 0: every PE's CPU and boards, both passes (a device's
    /// counts summed over them, the column pass's chunks after the row pass's on one
    /// time axis: seconds since the row pass's loop started).
    pub devices: Vec<shmemplus_cosched::DeviceReport>,
    /// With FastFit: when the row pass's loop started, on the job clock.
    pub loops_start: Option<std::time::Duration>,
    /// With FastFit: what this PE's boards knew at the column pass's end (for the
    /// next run), if they trained or started trained.
    pub trained: Option<shmemplus_cosched::Trained>,
}

/// The 2D FFT of the distributed matrix whose `R` rows on this PE are `rows` (`R * N`
/// elements; overwritten). Collective. Every phase is measured by `timer`.
pub fn fft2d_distributed(
    shmem: &Shmem,
    fft: &mut RowFft,
    ct: &mut CornerTurn,
    rows: &mut [Complex32],
    device: &Device<'_>,
    timer: &mut PhaseTimer,
) -> anyhow::Result<Outcome> {
    let (n, r) = (ct.n(), ct.rows_per_pe());
    anyhow::ensure!(
        rows.len() == r * n && fft.len() == n,
        "fft2d_distributed: {} elements and rows of {} for {r} rows of {n}",
        rows.len(),
        fft.len()
    );
    let mut out = Outcome {
        result: Buffer::B,
        turn_s: 0.0,
        kernel_modeled_s: 0.0,
        kernel_done_after_s: 0.0,
        cpu_rows: 0,
        board_rows: 0,
        devices: Vec::new(),
        loops_start: None,
        trained: None,
    };
    match *device {
        Device::Cpu { slab_rows } => {
            cpu_pass(
                shmem,
                fft,
                ct,
                rows,
                slab_rows,
                Buffer::A,
                PASS_1,
                timer,
                &mut out,
            )?;
            // SAFETY: in the second pass no PE reads or writes its A other than through
            // this slice: the puts of the first pass were completed by its quiet and
            // the barrier that closed its phase, and this pass puts into B only. The
            // slice is last used in the pass, before the end of the run.
            let a = unsafe { shmem.local_slice_mut(ct.object(Buffer::A))? };
            cpu_pass(
                shmem,
                fft,
                ct,
                a,
                slab_rows,
                Buffer::B,
                PASS_2,
                timer,
                &mut out,
            )?;
            out.result = Buffer::B;
        }
        Device::Boards(on_boards) => {
            to_boards(shmem, n, rows, on_boards, timer)?;
            board_pass(shmem, ct, on_boards, ROW_FFTS, timer, &mut out)?;
            {
                // SAFETY: no PE writes its A while this slice lives: the first pass's
                // turn into A was completed by its quiet and barrier, and the second
                // pass turns into A only after "to boards" has closed on every PE; the
                // slice ends with this block, inside "to boards".
                let a = unsafe { shmem.local_slice(ct.object(Buffer::A))? };
                to_boards(shmem, n, a, on_boards, timer)?;
            }
            board_pass(shmem, ct, on_boards, COLUMN_FFTS, timer, &mut out)?;
            out.result = Buffer::A;
        }
        Device::Split { boards, cpu_rows } => {
            let split = Split {
                on_boards: boards,
                cpu_rows,
            };
            split.rows(shmem, fft, ct, rows, ROW_FFTS, timer, &mut out)?;
            turn_b_into_a(shmem, ct, timer, &mut out)?;
            {
                // SAFETY: as for FastFit below: no PE writes its A while this slice
                // lives (the second pass turns into A only after the split phase has
                // closed on every PE); the slice ends with this block.
                let a = unsafe { shmem.local_slice(ct.object(Buffer::A))? };
                split.rows(shmem, fft, ct, a, COLUMN_FFTS, timer, &mut out)?;
            }
            turn_b_into_a(shmem, ct, timer, &mut out)?;
            out.result = Buffer::A;
        }
        Device::Fastfit {
            boards: on_boards,
            trained,
            cpu_row_s,
        } => {
            let pass = FastfitPass {
                on_boards,
                name: ROW_FFTS,
                trained: trained.cloned(),
                cpu_row_s,
            };
            let trained = fastfit_rows(shmem, fft, ct, rows, pass, timer, &mut out)?;
            turn_b_into_a(shmem, ct, timer, &mut out)?;
            {
                // SAFETY: no PE writes its A while this slice lives: the first pass's
                // turn into A was completed by its quiet and barrier, and the second
                // turns into A only after the co-scheduled phase has closed on every
                // PE; the slice ends with this block, before that turn.
                let a = unsafe { shmem.local_slice(ct.object(Buffer::A))? };
                // The same kernel on rows of the same length: the boards start
                // with the row pass's model.
                let pass = FastfitPass {
                    on_boards,
                    name: COLUMN_FFTS,
                    trained: trained.clone(),
                    cpu_row_s,
                };
                let refined = fastfit_rows(shmem, fft, ct, a, pass, timer, &mut out)?;
                out.trained = refined.or(trained);
            }
            turn_b_into_a(shmem, ct, timer, &mut out)?;
            out.result = Buffer::A;
        }
    }
    Ok(out)
}

/// One FastFit pass: its boards, its phase's name, what its boards learned in an
/// earlier pass, if any, and the CPU's estimated seconds per row, if known.
struct FastfitPass<'a> {
    on_boards: &'a [BoardRows],
    name: &'a str,
    trained: Option<shmemplus_cosched::Trained>,
    cpu_row_s: Option<f64>,
}

/// The co-scheduled half of a FastFit pass: this PE's rows `src` transformed into B
/// by its CPU and its boards, chunk by chunk as FastFit hands them out, as phase
/// `pass.name`. Returns what its boards learned (for the next pass).
fn fastfit_rows(
    shmem: &Shmem,
    fft: &mut RowFft,
    ct: &CornerTurn,
    src: &[Complex32],
    pass: FastfitPass<'_>,
    timer: &mut PhaseTimer,
    out: &mut Outcome,
) -> anyhow::Result<Option<shmemplus_cosched::Trained>> {
    let FastfitPass {
        on_boards,
        name,
        trained,
        cpu_row_s,
    } = pass;
    let (n, r) = (ct.n(), ct.rows_per_pe());
    let dest = ct.object(Buffer::B);
    let cpu_path = std::sync::Mutex::new(CpuRows::new(fft));
    let cpu = |range: std::ops::Range<u64>| -> Result<(), String> {
        cpu_path
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .run(shmem, src, dest, &range)
    };
    let boards = FastfitBoards {
        shmem,
        src,
        dest,
        on_boards,
        n,
        apart: on_boards.iter().all(|b| b.count >= r),
    };
    let capacity = on_boards.iter().map(|b| b.count).min().unwrap_or(0);
    let options = shmemplus_cosched::Options {
        scope: shmemplus_cosched::Scope::Pe,
        boards: capacity > 0,
        max_board_chunk: Some(capacity.max(1) as u64),
        // A row goes to the board and comes back.
        board_bytes: Some(shmemplus_cosched::BoardBytes {
            to_board: (n * size_of::<Complex32>()) as u64,
            from_board: (n * size_of::<Complex32>()) as u64,
            inputs_in_background: false,
        }),
        // Training chunks of a sixteenth of a board's even share of the PE's rows
        // and, for a lone board, a quarter of it: FastFit's default (a 64th of the
        // loop per worker) is one and four rows here, whose times differ by less
        // than the noise of the kernel's 12 us latency, and the line through them
        // sized the boards' chunks wrongly. With several boards, the large sample
        // is a whole share: the node's boards other than the small sample's each
        // take one at once (the transfers leave the driver's thread free), so the
        // training round does most of the pass and the small sample's board takes
        // the rest. With a quarter share, which all but two boards waited out for
        // the model, the cold passes took 1.36x and 1.47x the best split's with 2
        // and 4 boards; with a whole share that all take, 1.31x and 1.34x (native,
        // 1024 x 1024, 30 jobs each alternating; at 2048 x 2048 1.11x and 1.22x ->
        // 1.08x and 1.14x, 11 jobs, 2026-12-08). A lone board's large sample is
        // queued behind its small one and the CPU runs beside them, so there it
        // stays a quarter.
        samples: Some({
            let per = r as u64 / on_boards.len().max(1) as u64;
            let small = (per / 16).max(1);
            let large = if on_boards.len() > 1 { per } else { per / 4 };
            (small, large.max(small + 1))
        }),
        // A chunk's staging is one put of its rows (about 1 us of the thread on
        // native): every board takes a sample.
        every_board_samples: true,
        trained,
        // With it, the CPU runs beside a lone board's large training sample (64 rows,
        // 42 us on native) instead of waiting for it, and is measured before the
        // board's first production chunk is sized.
        cpu_item_estimate_s: cpu_row_s,
        ..shmemplus_cosched::Options::default()
    };
    // Checked and planned before the timed pass, as the static split's parts are.
    let ready = shmemplus_cosched::Loop::prepare(shmem, r as u64, &options)?;
    let loop_start = shmem.now();
    let report = timer.run(name, || ready.run(cpu, &boards))?;
    // Every PE's devices on PE 0 (collective; outside the timed phase).
    let first = *out.loops_start.get_or_insert(loop_start);
    if let Some(devices) = shmemplus_cosched::gather(shmem, &report)? {
        let offset_s = loop_start.saturating_sub(first).as_secs_f64();
        merge_pass(&mut out.devices, devices, offset_s);
    }
    for d in &report.devices {
        match d.device {
            shmemplus_cosched::Device::Cpu { .. } => out.cpu_rows += d.items,
            shmemplus_cosched::Device::Board { .. } => out.board_rows += d.items,
        }
    }
    Ok(report.trained)
}

/// Adds one pass's devices to `all`: its spans shifted by `offset_s`, a device seen
/// in an earlier pass getting its counts added (its fit is the later pass's).
fn merge_pass(
    all: &mut Vec<shmemplus_cosched::DeviceReport>,
    pass: Vec<shmemplus_cosched::DeviceReport>,
    offset_s: f64,
) {
    for mut d in pass {
        for span in &mut d.spans {
            span.shift(offset_s);
        }
        match all.iter_mut().find(|a| a.device == d.device) {
            Some(a) => {
                a.chunks += d.chunks;
                a.items += d.items;
                a.busy_s += d.busy_s;
                a.idle_s += d.idle_s;
                a.spans.append(&mut d.spans);
                a.fit = d.fit.or(a.fit.take());
                a.failed = a.failed.take().or(d.failed);
                a.stopped = d.stopped.or(a.stopped.take());
            }
            None => all.push(d),
        }
    }
}

/// The CPU path of a shared pass: a chunk of rows transformed in a copy (the source
/// is read-only: in the second pass it is A) and written into B at the rows' place,
/// a row at a time. The copy holds one row (8 KiB at 1024 points), kept from row to
/// row and chunk to chunk: it stays in the cache and pays for its pages once, when
/// the path is made, before the pass's timer starts (made on the first row, the
/// first CPU row of a FastFit row pass took a median 9.1 us and over 20 us in 5 of
/// 16 PE-passes, 7.6 us and once over 20 made beforehand, where a row takes 2-3;
/// native, 4 boards per node, 4 single runs each, virtual clock). A copy
/// of the whole chunk was allocated afresh for each static split's pass and paid a
/// page fault per 4 KiB: a split with 51 of a PE's 256 rows on the CPU took 170-200
/// us a pass where its rows take 110, and all 256 rows on the CPU 1.4-1.7 ms for
/// two passes where they take 1.0 (native, 1024 x 1024, virtual clock); the
/// oracle's best split was then slower than it should be, the more so the more rows
/// it put on the CPU.
struct CpuRows<'f> {
    fft: &'f mut RowFft,
    work: Vec<Complex32>,
}

impl<'f> CpuRows<'f> {
    fn new(fft: &'f mut RowFft) -> CpuRows<'f> {
        let work = vec![Complex32::default(); fft.len()];
        CpuRows { fft, work }
    }

    /// Rows `range` of `src` transformed into `dest`.
    fn run(
        &mut self,
        shmem: &Shmem,
        src: &[Complex32],
        dest: &SymVec<Complex32>,
        range: &std::ops::Range<u64>,
    ) -> Result<(), String> {
        let n = self.fft.len();
        let rows = row_range(src, n, range)?;
        let first = row_offset(n, range)?;
        for (k, row) in rows.chunks_exact(n).enumerate() {
            self.work.clear();
            self.work.extend_from_slice(row);
            self.fft.rows(&mut self.work);
            // No overflow: `k * n` is inside `rows`, so `first + k * n` is below the
            // end `row_range` checked; `local_write` checks it against B.
            shmem
                .local_write(dest, first + k * n, &self.work)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// A static split of a pass ([`Device::Split`]).
struct Split<'a> {
    on_boards: &'a [BoardRows],
    cpu_rows: usize,
}

impl Split<'_> {
    /// This PE's rows `src` transformed into B, as phase `name`: the boards' parts
    /// staged at once (non-blocking puts, one quiet) and their kernels started, then
    /// the CPU's rows, then the boards' results fetched into B.
    #[allow(clippy::too_many_arguments)]
    fn rows(
        &self,
        shmem: &Shmem,
        fft: &mut RowFft,
        ct: &CornerTurn,
        src: &[Complex32],
        name: &str,
        timer: &mut PhaseTimer,
        out: &mut Outcome,
    ) -> anyhow::Result<()> {
        let (n, r, me) = (ct.n(), ct.rows_per_pe(), shmem.my_pe());
        let dest = ct.object(Buffer::B);
        anyhow::ensure!(
            self.cpu_rows <= r,
            "a split of {} CPU rows of this PE's {r}",
            self.cpu_rows
        );
        anyhow::ensure!(
            self.cpu_rows == r || !self.on_boards.is_empty(),
            "a split with rows on the boards needs boards"
        );
        // The boards' parts: rows cpu_rows.. in equal parts, in order.
        let per = (r - self.cpu_rows).div_ceil(self.on_boards.len().max(1));
        let mut parts = Vec::new();
        let mut first = self.cpu_rows;
        for b in self.on_boards {
            let range = first as u64..(first + per).min(r) as u64;
            let rows = (range.end - range.start) as usize;
            if rows == 0 {
                break;
            }
            anyhow::ensure!(
                rows <= b.count,
                "board {}'s object holds {} rows, not {rows}",
                b.board,
                b.count
            );
            parts.push((b, range));
            first += rows;
        }
        let mut cpu = CpuRows::new(fft);
        let (m, d) = timer.run(name, || -> anyhow::Result<(f64, f64)> {
            for (b, range) in &parts {
                shmem.put_nbi(
                    &b.obj,
                    0,
                    row_range(src, n, range).map_err(anyhow::Error::msg)?,
                    me,
                )?;
            }
            shmem.quiet()?;
            let mut runs = Vec::new();
            for (b, range) in &parts {
                let args = [b.obj.heap_offset() as u64, range.end - range.start];
                runs.push(shmem.kernel_start(b.board, kernel::KERNEL, &args)?);
            }
            if self.cpu_rows > 0 {
                cpu.run(shmem, src, dest, &(0..self.cpu_rows as u64))
                    .map_err(anyhow::Error::msg)?;
            }
            let (m, d) = wait_all(runs)?;
            for (b, range) in &parts {
                let rows = (range.end - range.start) as usize;
                shmem.get_nbi(
                    dest,
                    row_offset(n, range).map_err(anyhow::Error::msg)?,
                    &b.obj,
                    0,
                    rows * n,
                    me,
                )?;
            }
            shmem.quiet()?;
            Ok((m, d))
        })?;
        out.kernel_modeled_s += m;
        out.kernel_done_after_s += d;
        out.cpu_rows += self.cpu_rows as u64;
        out.board_rows += (r - self.cpu_rows) as u64;
        Ok(())
    }
}

/// Element offset of the first row of `range` in rows of `n` (checked).
fn row_offset(n: usize, range: &std::ops::Range<u64>) -> Result<usize, String> {
    usize::try_from(range.start)
        .ok()
        .and_then(|first| first.checked_mul(n))
        .ok_or_else(|| format!("rows {range:?} of {n} points are out of range"))
}

/// The rows `range` of `src` (rows of `n`), checked against its length.
fn row_range<'s>(
    src: &'s [Complex32],
    n: usize,
    range: &std::ops::Range<u64>,
) -> Result<&'s [Complex32], String> {
    let at = row_offset(n, range)?;
    let len = usize::try_from(range.end - range.start)
        .ok()
        .and_then(|rows| rows.checked_mul(n))
        .ok_or_else(|| format!("rows {range:?} of {n} points are out of range"))?;
    at.checked_add(len)
        .and_then(|end| src.get(at..end))
        .ok_or_else(|| {
            format!(
                "rows {range:?} are past this PE's {} rows",
                src.len() / n.max(1)
            )
        })
}

/// How a chunk of rows runs on one of this PE's boards under FastFit: into the
/// board's object, through the kernel, and back into B at the rows' place.
struct FastfitBoards<'a> {
    shmem: &'a Shmem,
    src: &'a [Complex32],
    dest: &'a SymVec<Complex32>,
    on_boards: &'a [BoardRows],
    n: usize,
    /// Whether every board's object holds all of this PE's rows: then a chunk is
    /// staged at its rows' place (`BoardPath::keeps_chunks_apart`), else at the
    /// object's start.
    apart: bool,
}

impl FastfitBoards<'_> {
    /// Where a chunk of rows `range` lies in a board's object (elements).
    fn staged_at(&self, range: &std::ops::Range<u64>) -> Result<usize, String> {
        if self.apart {
            row_offset(self.n, range)
        } else {
            Ok(0)
        }
    }

    fn slot(&self, board: u32) -> Result<&BoardRows, String> {
        self.on_boards
            .iter()
            .find(|b| b.board == board)
            .ok_or_else(|| format!("no object on board {board}"))
    }
}

impl shmemplus_cosched::BoardPath for FastfitBoards<'_> {
    fn start(
        &self,
        board: u32,
        range: std::ops::Range<u64>,
    ) -> Result<shmemplus::BoardRun, String> {
        let slot = self.slot(board)?;
        let rows = row_range(self.src, self.n, &range)?;
        // The put checks that the rows fit in the object.
        let at = self.staged_at(&range)?;
        let e = |e: shmemplus::Error| e.to_string();
        self.shmem
            .put(&slot.obj, at, rows, self.shmem.my_pe())
            .map_err(e)?;
        let at_bytes = at
            .checked_mul(size_of::<Complex32>())
            .and_then(|b| b.checked_add(slot.obj.heap_offset()))
            .ok_or_else(|| format!("rows {range:?} lie past the board's memory"))?;
        let args = [at_bytes as u64, range.end - range.start];
        self.shmem
            .kernel_start(board, kernel::KERNEL, &args)
            .map_err(e)
    }

    fn finish(&self, board: u32, range: std::ops::Range<u64>) -> Result<(), String> {
        let slot = self.slot(board)?;
        let count = row_range(self.src, self.n, &range)?.len();
        let e = |e: shmemplus::Error| e.to_string();
        self.shmem
            .get_nbi(
                self.dest,
                row_offset(self.n, &range)?,
                &slot.obj,
                self.staged_at(&range)?,
                count,
                self.shmem.my_pe(),
            )
            .map_err(e)?;
        self.shmem.quiet().map_err(e)
    }

    fn keeps_chunks_apart(&self) -> bool {
        self.apart
    }
}

/// One CPU pass: `src` (this PE's `R` rows) transformed in place and turned into
/// `dest`, in slabs of `slab_rows` in one phase, or (`None`) as two phases.
#[allow(clippy::too_many_arguments)]
fn cpu_pass(
    shmem: &Shmem,
    fft: &mut RowFft,
    ct: &mut CornerTurn,
    src: &mut [Complex32],
    slab_rows: Option<usize>,
    dest: Buffer,
    name: &str,
    timer: &mut PhaseTimer,
    out: &mut Outcome,
) -> anyhow::Result<()> {
    let (n, r) = (ct.n(), ct.rows_per_pe());
    let Some(slab_rows) = slab_rows else {
        let fft_name = if dest == Buffer::A {
            ROW_FFTS
        } else {
            COLUMN_FFTS
        };
        timer.run(fft_name, || -> anyhow::Result<()> {
            fft.rows(src);
            Ok(())
        })?;
        return timer.run(TURNS, || -> anyhow::Result<()> {
            let t = shmem.now();
            ct.turn_slab(shmem, src, 0, dest)?;
            shmem.quiet()?;
            out.turn_s += shmem.now().saturating_sub(t).as_secs_f64();
            Ok(())
        });
    };
    let slab = slab_rows.clamp(1, r);
    timer.run(name, || -> anyhow::Result<()> {
        for (k, rows) in src.chunks_mut(slab * n).enumerate() {
            fft.rows(rows);
            let t = shmem.now();
            ct.turn_slab(shmem, rows, k * slab, dest)?;
            out.turn_s += shmem.now().saturating_sub(t).as_secs_f64();
        }
        let t = shmem.now();
        shmem.quiet()?;
        out.turn_s += shmem.now().saturating_sub(t).as_secs_f64();
        Ok(())
    })
}

/// `src` (this PE's `R` rows of `n`) to the boards, as phase "to boards".
fn to_boards(
    shmem: &Shmem,
    n: usize,
    src: &[Complex32],
    on_boards: &[BoardRows],
    timer: &mut PhaseTimer,
) -> anyhow::Result<()> {
    let me = shmem.my_pe();
    // Non-blocking transfers, completed by one quiet: the boards' DMA engines work at
    // once instead of one after another.
    timer.run("to boards", || -> anyhow::Result<()> {
        for b in on_boards.iter().filter(|b| b.count > 0) {
            shmem.put_nbi(&b.obj, 0, &src[b.first * n..][..b.count * n], me)?;
        }
        Ok(shmem.quiet()?)
    })
}

/// Waits for every kernel run's DONE; the slowest modeled time and the slowest
/// time until DONE, in seconds.
fn wait_all(runs: Vec<shmemplus::BoardRun>) -> anyhow::Result<(f64, f64)> {
    let (mut modeled, mut done_after) = (0.0f64, 0.0f64);
    for run in runs {
        let done = run.wait()?;
        modeled = modeled.max(done.modeled_s);
        done_after = done_after.max(done.elapsed_s);
    }
    Ok((modeled, done_after))
}

/// The rest of a board pass: the kernels, the rows back into object B, and turned
/// from there into A.
fn board_pass(
    shmem: &Shmem,
    ct: &mut CornerTurn,
    on_boards: &[BoardRows],
    name: &str,
    timer: &mut PhaseTimer,
    out: &mut Outcome,
) -> anyhow::Result<()> {
    let (n, me) = (ct.n(), shmem.my_pe());
    let (m, d) = timer.run(name, || -> anyhow::Result<(f64, f64)> {
        let mut runs = Vec::new();
        for b in on_boards.iter().filter(|b| b.count > 0) {
            let args = [b.obj.heap_offset() as u64, b.count as u64];
            runs.push(shmem.kernel_start(b.board, kernel::KERNEL, &args)?);
        }
        wait_all(runs)
    })?;
    out.kernel_modeled_s += m;
    out.kernel_done_after_s += d;
    // Into B (free in both passes), all boards at once; the turn reads it there.
    timer.run("from boards", || -> anyhow::Result<()> {
        for b in on_boards.iter().filter(|b| b.count > 0) {
            shmem.get_nbi(
                ct.object(Buffer::B),
                b.first * n,
                &b.obj,
                0,
                b.count * n,
                me,
            )?;
        }
        Ok(shmem.quiet()?)
    })?;
    turn_b_into_a(shmem, ct, timer, out)
}

/// The turn that ends a board or FastFit pass, B into A, as phase [`TURNS`]. B must
/// hold this PE's transformed rows, written before the phase (a closed phase).
fn turn_b_into_a(
    shmem: &Shmem,
    ct: &mut CornerTurn,
    timer: &mut PhaseTimer,
    out: &mut Outcome,
) -> anyhow::Result<()> {
    timer.run(TURNS, || -> anyhow::Result<()> {
        let t = shmem.now();
        // SAFETY: nobody writes B in this phase (the turn puts into A; the pass's
        // writes into B completed before its phase closed, with a barrier) and no PE
        // reads another's B.
        let rows = unsafe { shmem.local_slice(ct.object(Buffer::B))? };
        ct.turn_slab(shmem, rows, 0, Buffer::A)?;
        shmem.quiet()?;
        out.turn_s += shmem.now().saturating_sub(t).as_secs_f64();
        Ok(())
    })
}
