//! The application's two ways to run a chunk: the CPU path (a closure over a range
//! of iterations) and the [`BoardPath`] (stage and start a board's kernel, then fetch
//! its results), and failing a board's chunk over to the CPU path.
//!
//! This module owns those interfaces and the failover rule. It must not drive
//! boards nor decide which device takes a chunk (the drivers, `run` and `round`, do).

use crate::{Error, Result};
use shmemplus::{BoardRun, Shmem};
use std::ops::Range;

/// How the application runs a chunk on a board: the two halves of a board chunk, so
/// that one thread can keep several boards busy.
pub trait BoardPath: Sync {
    /// Stages iterations `range` for board `board` of this PE's node (their inputs
    /// into its memory) and starts its kernel.
    fn start(&self, board: u32, range: Range<u64>) -> std::result::Result<BoardRun, String>;
    /// After the kernel's DONE: takes the chunk's results where the application wants
    /// them.
    fn finish(&self, board: u32, range: Range<u64>) -> std::result::Result<(), String>;
    /// Whether `start` may be called for a chunk of a board while another chunk of
    /// that board is in flight (started, not yet through `finish`): the path stages
    /// each chunk at a place of the board's memory of its own, so a chunk's inputs
    /// never overwrite the results of one not yet fetched. Default: no.
    ///
    /// With it, the virtual clock's one-thread driver starts a board that trains
    /// alone on its node right behind its small sample with its large one: the
    /// board's kernels run one after the other, and the large sample's staging and
    /// the driver's work around the small one's DONE no longer keep the board idle
    /// between them.
    fn keeps_chunks_apart(&self) -> bool {
        false
    }
}

/// The [`BoardPath`] of a loop that runs on CPUs only (with `Options::boards` false,
/// or a job without boards): never called.
pub struct NoBoards;

impl BoardPath for NoBoards {
    fn start(&self, board: u32, _: Range<u64>) -> std::result::Result<BoardRun, String> {
        Err(format!("no board path was given (board {board})"))
    }
    fn finish(&self, board: u32, _: Range<u64>) -> std::result::Result<(), String> {
        Err(format!("no board path was given (board {board})"))
    }
}

/// The CPU path: computes a chunk on this PE.
pub(crate) type CpuPath<'a> = dyn Fn(Range<u64>) -> std::result::Result<(), String> + Sync + 'a;

/// Board `board` failed on `range`: reruns it on the CPU path `cpu` and says why the
/// board is retired (an error naming the board if the CPU path fails too).
pub(crate) fn failover(
    shmem: &Shmem,
    cpu: &CpuPath<'_>,
    board: u32,
    range: Range<u64>,
    board_error: String,
) -> Result<String> {
    cpu(range.clone()).map_err(|cpu_error| Error::Board {
        pe: shmem.my_pe(),
        board,
        first: range.start,
        end: range.end,
        board_error: board_error.clone(),
        cpu_error,
    })?;
    Ok(format!(
        "failed on iterations {}..{} ({board_error}); they ran on the CPU path and the board was retired",
        range.start, range.end
    ))
}
