//! `fpga-mock`: mock FPGA boards for shmemplus.
//!
//! A [`Board`] has sparse, lazily backed memory (a 2 GiB board costs only the pages
//! touched), a DMA engine that moves aligned spans ([`Board::write`], [`Board::read`],
//! [`Board::span`]; the span is what a caller charges DMA time for, with the cluster
//! profile's cost, which the board does not hold), a configuration step that loads a
//! [`Bitfile`] (a named set of [`Kernel`]s), and GO/DONE control: [`Board::start`] runs a kernel on a worker thread and its [`KernelRun`]
//! reports DONE once the result is computed *and* the modeled kernel time (RATSS,
//! [`KernelTiming::seconds`]) has elapsed (or, with
//! [`BoardConfig::done_waits_for_model`] off, once it is computed: for a caller that
//! keeps time on a virtual clock of its own).
//!
//! Modules:
//! - [`board`]: the board: configuration, DMA spans and exact-byte transfers, bitfile
//!   loading and kernel launch.
//! - [`kernel`]: kernels, bitfiles, the kernel timing model, the memory view a kernel
//!   sees, and the GO/DONE handle.
//! - [`kernels`]: the shipped standard bitfile.
//! - [`error`][]: [`BoardError`].
//! - `memory` (private): the mapping itself and the only raw copies into it.
//!
//! This crate must stay ignorant of PEs, networks, routes and the `shmemplus` crate:
//! the library decides which board a transfer reaches and which timelines stand for
//! which DMA channel, and drives the board through this API.
//!
//! ```
//! use fpga_mock::{kernels, Board, BoardConfig};
//!
//! let board = Board::new(BoardConfig { memory_bytes: 1 << 20, ..BoardConfig::default() })?;
//! let words: Vec<u8> = [1u32, 2, 3].iter().flat_map(|w| w.to_le_bytes()).collect();
//! board.write(100, &words)?;
//! board.configure(kernels::standard_bitfile())?;
//! let done = board.start(kernels::ADD_ONE, &[100, 3])?.wait()?;
//! assert!(done.elapsed_s >= done.modeled_s);
//! let mut out = [0u8; 12];
//! board.read(100, &mut out)?;
//! assert_eq!(out[..4], 2u32.to_le_bytes());
//! assert_eq!(out[8..], 4u32.to_le_bytes());
//! # Ok::<(), fpga_mock::BoardError>(())
//! ```

pub mod board;
pub mod error;
pub mod kernel;
pub mod kernels;
mod memory;

pub use board::{Board, BoardConfig, DmaSpan};
pub use error::BoardError;
pub use kernel::{
    Bitfile, ElementsFn, Kernel, KernelBody, KernelDone, KernelMemory, KernelRun, KernelStatus,
    KernelTiming,
};
