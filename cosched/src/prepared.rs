//! A co-scheduled loop made ready before it runs ([`Loop`]): its options checked
//! against the job and everything its driver starts from worked out (a trained
//! loop's planned round; otherwise the boards' training sizes, their modeled
//! transfers and a trained start's lines), so that an application can do that work
//! outside the part of its program it times, as it makes a static split's plan
//! before the split runs.
//!
//! This module owns [`run()`], that split of it into its two halves and the choice
//! between the drivers. It must not drive a device nor take an iteration
//! (`run` and `round` do, in [`Loop::run`]).

use crate::options::Options;
use crate::paths::BoardPath;
use crate::plan::Round;
use crate::report::{Report, Trained};
use crate::run::{check, prepare_adaptive, run_adaptive, Adaptive};
use crate::Result;
use shmemplus::Shmem;
use std::ops::Range;

/// A loop of `n` iterations with its options, ready to run: [`Loop::prepare`] does
/// all of [`run()`](crate::run()) that comes before the first iteration, and
/// [`Loop::run`] the rest. `run(shmem, n, options, cpu, boards)` is
/// `Loop::prepare(shmem, n, options)?.run(cpu, boards)`.
///
/// Preparing takes no iteration, touches no board and makes no collective call (a
/// loop of [`Scope::Job`](crate::Scope::Job) makes its shared pool when it runs), so
/// a PE may prepare a loop, then wait at a barrier, start a timer, and run it.
///
/// ```no_run
/// use shmemplus_cosched::{Loop, NoBoards, Options};
/// let shmem = shmemplus::init()?;
/// let options = Options { boards: false, ..Options::default() };
/// // The checks and the planning, before the part of the program that is timed.
/// let ready = Loop::prepare(&shmem, 1_000_000, &options)?;
/// shmem.barrier_all()?;
/// let start = shmem.now();
/// let report = ready.run(|range| { for _i in range { /* CPU work */ } Ok(()) }, &NoBoards)?;
/// println!("{:?} for {} devices", shmem.now() - start, report.devices.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Loop<'a> {
    shmem: &'a Shmem,
    n: u64,
    options: &'a Options,
    ready: Ready<'a>,
}

/// Which driver a prepared loop runs on, with what it starts from.
enum Ready<'a> {
    /// A trained loop of a PE on the virtual clock: one planned round (`round`),
    /// from the lines it was planned from.
    Round(Round, &'a Trained),
    /// The adaptive drivers (`run`).
    Adaptive(Box<Adaptive>),
}

impl<'a> Loop<'a> {
    /// Checks `options` for a loop of `n` iterations on this PE's job and works out
    /// what its driver starts from. Every PE of a [`Scope::Job`](crate::Scope::Job)
    /// loop prepares it with the same `n` and options.
    ///
    /// Errors: `n == 0`, options out of range, no device, a loop too long for its
    /// pool's counter to stay exact.
    pub fn prepare(shmem: &'a Shmem, n: u64, options: &'a Options) -> Result<Loop<'a>> {
        let checked = check(shmem, n, options)?;
        // A PE's own loop started trained on the one driver thread runs as one
        // planned round, without the adaptive driver's work between its chunks.
        let round = options.trained.as_ref().and_then(|trained| {
            crate::round::plan(shmem, n, options, checked.per_node).map(|r| (r, trained))
        });
        let ready = match round {
            Some((round, trained)) => Ready::Round(round, trained),
            None => Ready::Adaptive(Box::new(prepare_adaptive(shmem, n, options, checked)?)),
        };
        Ok(Loop {
            shmem,
            n,
            options,
            ready,
        })
    }

    /// Whether this loop will run as one planned round (see
    /// [`Report::planned_round`]).
    pub fn planned_round(&self) -> bool {
        matches!(self.ready, Ready::Round(..))
    }

    /// Runs the loop: every iteration once, on this PE's CPU (`cpu(range)`) or a
    /// board (through `boards`), as [`run()`](crate::run()) describes; collective as
    /// it is. Returns this PE's [`Report`].
    ///
    /// Errors: a chunk that fails on the CPU path (naming the PE) or on a board and
    /// then on the CPU path (naming the board), and the library's errors.
    pub fn run<C, B>(self, cpu: C, boards: &B) -> Result<Report>
    where
        C: Fn(Range<u64>) -> std::result::Result<(), String> + Sync,
        B: BoardPath,
    {
        let Loop {
            shmem,
            n,
            options,
            ready,
        } = self;
        match ready {
            Ready::Round(round, trained) => {
                crate::round::run(shmem, n, options, &round, trained, &cpu, boards)
            }
            Ready::Adaptive(setup) => run_adaptive(shmem, n, options, *setup, &cpu, boards),
        }
    }
}

/// Runs iterations `0..n` of a loop on every PE's CPU (`cpu(range)`) and every board
/// of the job (through `boards` on the first PE of each node), chunk by chunk from one
/// [`WorkPool`](crate::WorkPool), as the [`run`](mod@crate::run) module's doc
/// describes. Collective: every PE calls it with the same `n` and options. Returns
/// this PE's [`Report`] once every PE has finished. Each iteration runs exactly
/// once, on whichever device took it.
///
/// `cpu` may be called from several threads at once (it also reruns a failed board's
/// chunk); `boards` is called from one thread per board on the wall clock.
///
/// Errors: `n == 0`, options out of range, no device, and a chunk that fails on the
/// CPU path (naming the PE) or on a board and then on the CPU path (naming the board).
///
/// It is [`Loop::prepare`] followed by [`Loop::run`]: an application that times the
/// loop alone may prepare it before its timer starts.
pub fn run<C, B>(shmem: &Shmem, n: u64, options: &Options, cpu: C, boards: &B) -> Result<Report>
where
    C: Fn(Range<u64>) -> std::result::Result<(), String> + Sync,
    B: BoardPath,
{
    Loop::prepare(shmem, n, options)?.run(cpu, boards)
}
