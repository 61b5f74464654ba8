//! This PE's share of its node's FPGA boards: one `fpga_mock::Board` per board of the
//! node, each holding this PE's partition of that board (so the PEs of a node share
//! their node's boards), the active-message handlers through which other PEs reach
//! that memory, and the board geometry the routes need.
//!
//! Board memory is never mapped by another process: remote PEs reach it only through
//! `H_FPGA_PUT` / `H_FPGA_GET`, served here on this PE's progress thread by the board's
//! DMA engine. This module must not charge modeled time (`emulate` does, for the whole
//! route, at the initiator) and must not decide routes (`shmem` does).
//!
//! Kernels and the virtual clock: under virtual time the boards raise DONE as soon as
//! a kernel has computed (`BoardConfig::done_waits_for_model` off) and the handle
//! charges the modeled time on the PE's clock instead. Each board's kernel unit is
//! then a busy-until instant on that clock, kept here in process memory: a PE runs
//! kernels only on its own partitions, so no other process reserves them.

use crate::am::{AmEngine, Handler, Incoming, H_FPGA_GET, H_FPGA_PUT};
use crate::error::Error;
use fpga_mock::{Board, BoardConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The boards of this PE's node, as this PE's partitions.
pub struct Boards {
    boards: Vec<Board>,
    partition_bytes: u64,
    /// Serialises atomics on this PE's partitions (the progress thread serving other
    /// PEs and this PE's own user threads), as one board's atomic unit would.
    atomics: std::sync::Mutex<()>,
    /// Per board: the virtual instant (ns) until which its kernel unit is reserved.
    kernel_busy: Vec<AtomicU64>,
}

impl Boards {
    /// `count` boards of `board_memory` bytes each, split evenly among the
    /// `pes_per_node` PEs of the node (each partition page-aligned). With
    /// `virtual_time`, DONE does not wait for a kernel's modeled time (the caller
    /// charges it on its virtual clock).
    pub fn new(
        count: u32,
        board_memory: u64,
        pes_per_node: u32,
        dma_min_bytes: u64,
        dma_align: u64,
        virtual_time: bool,
    ) -> Result<Boards, Error> {
        if count as usize > crate::segment::MAX_BOARDS {
            return Err(Error::InvalidArgument(format!(
                "{count} boards per node; at most {} are supported",
                crate::segment::MAX_BOARDS
            )));
        }
        let unit = 4096u64.max(dma_align);
        let partition_bytes = board_memory / u64::from(pes_per_node.max(1)) / unit * unit;
        let boards = (0..count)
            .map(|b| {
                Board::new(BoardConfig {
                    memory_bytes: partition_bytes,
                    dma_min_bytes,
                    dma_align,
                    done_waits_for_model: !virtual_time,
                })
                .map_err(|source| Error::Board { board: b, source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Boards {
            kernel_busy: boards.iter().map(|_| AtomicU64::new(0)).collect(),
            boards,
            partition_bytes,
            atomics: std::sync::Mutex::new(()),
        })
    }

    /// Boards per node.
    pub fn count(&self) -> u32 {
        self.boards.len() as u32
    }

    /// Bytes of this PE's partition of each board (its FPGA symmetric heap size).
    pub fn partition_bytes(&self) -> u64 {
        self.partition_bytes
    }

    /// Board `b`, or a typed error saying which boards exist.
    pub fn board(&self, b: u32) -> Result<&Board, Error> {
        self.boards
            .get(b as usize)
            .ok_or(if self.boards.is_empty() {
                Error::NoBoards
            } else {
                Error::InvalidBoard {
                    board: b,
                    boards: self.count(),
                }
            })
    }

    /// The board a 64-bit message argument names, or why there is none (a value past
    /// `u32::MAX` is refused, never truncated to another board's number).
    pub(crate) fn board_of_arg(&self, b: u64) -> Result<&Board, String> {
        let b = u32::try_from(b).map_err(|_| format!("no board {b}"))?;
        self.board(b).map_err(|e| e.to_string())
    }

    /// Holds this PE's board atomic unit: read-modify-writes under it are atomic with
    /// respect to each other.
    pub fn atomic_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.atomics.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves board `b`'s kernel unit for `modeled_ns`, from `from_ns` or from the end
    /// of the runs reserved before, whichever is later (virtual clock instants); returns
    /// the run's DONE instant. An unknown board (the caller checks first) has no unit
    /// to wait for.
    pub(crate) fn reserve_kernel_unit(&self, b: u32, from_ns: u64, modeled_ns: u64) -> u64 {
        let previous = self.kernel_busy.get(b as usize).map_or(0, |busy| {
            // The closure always returns Some, so both arms hold the previous value.
            busy.fetch_update(Ordering::AcqRel, Ordering::Acquire, |until| {
                Some(from_ns.max(until).saturating_add(modeled_ns))
            })
            .unwrap_or_else(|until| until)
        });
        from_ns.max(previous).saturating_add(modeled_ns)
    }

    /// Bytes of board memory backed by RAM now, over all boards.
    pub fn resident_bytes(&self) -> u64 {
        self.boards.iter().map(Board::resident_bytes).sum()
    }

    /// Registers the DMA handlers that serve other PEs' transfers to these boards.
    pub fn register_handlers(self: &Arc<Self>, am: &AmEngine) {
        let boards = self.clone();
        let put: Handler = Arc::new(move |engine: &AmEngine, m: Incoming<'_>| {
            let (offset, board) = (m.header.args[0], m.header.args[1]);
            let done = boards
                .board_of_arg(board)
                .and_then(|b| b.write(offset, m.payload).map_err(|e| e.to_string()));
            if let Err(why) = done {
                engine.record_put_failure(m.src, format!("board {board}: {why}"));
            }
        });
        let boards = self.clone();
        let get: Handler = Arc::new(move |engine: &AmEngine, m: Incoming<'_>| {
            let (offset, len, board) = (m.header.args[0], m.header.args[1], m.header.args[2]);
            // Check the whole range first, so a bad request is refused before any data
            // is sent; then stream the board read out one reply record at a time. A
            // range inside board memory has a length that fits in usize (the memory is
            // mapped), and offset + at stays inside it.
            let target = boards.board_of_arg(board).and_then(|b| {
                b.span(offset, len).map_err(|e| e.to_string())?;
                let total = usize::try_from(len).map_err(|_| format!("length {len}"))?;
                Ok((b, total))
            });
            match target {
                Ok((b, total)) => engine.reply_with(m.src, m.header.token, total, |at, buf| {
                    b.read(offset + at as u64, buf)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }),
                Err(why) => {
                    engine.reply_error(m.src, m.header.token, &format!("board {board}: {why}"))
                }
            }
        });
        am.register_builtin(H_FPGA_PUT, put);
        am.register_builtin(H_FPGA_GET, get);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boards_kernel_unit_runs_one_reservation_after_another() {
        let boards = Boards::new(2, 1 << 20, 1, 32, 32, true).expect("boards");
        assert_eq!(boards.reserve_kernel_unit(0, 100, 50), 150);
        // Asked for at 120, board 0 is busy until 150.
        assert_eq!(boards.reserve_kernel_unit(0, 120, 50), 200);
        // Board 1 is free; a later start on board 0 is not held back.
        assert_eq!(boards.reserve_kernel_unit(1, 120, 50), 170);
        assert_eq!(boards.reserve_kernel_unit(0, 1000, 1), 1001);
        // DONE does not wait for the modeled time under virtual time.
        assert!(
            !boards
                .board(0)
                .expect("board 0")
                .config()
                .done_waits_for_model
        );
        let wall = Boards::new(1, 1 << 20, 1, 32, 32, false).expect("boards");
        assert!(
            wall.board(0)
                .expect("board 0")
                .config()
                .done_waits_for_model
        );
    }
}
