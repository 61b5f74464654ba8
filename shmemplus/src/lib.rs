//! shmemplus: a SHMEM+ style PGAS communication library for reconfigurable (CPU + FPGA)
//! clusters, simulated on one machine.
//!
//! An SPMD program runs as N processes (PEs) started by `shmemrun`. Each PE allocates
//! *symmetric objects* collectively and reads and writes any PE's copy with one-sided
//! `put`/`get`; `quiet`, `fence` and `barrier_all` order and complete them. The address
//! space holds each PE's CPU heap and its partition of its node's FPGA boards
//! ([`Place::Fpga`]). Beyond RMA the OpenSHMEM 1.5 core is here: atomics
//! ([`Shmem::atomic_fetch_add`] and friends), point-to-point synchronisation
//! ([`Shmem::wait_until`], [`Shmem::put_signal`]), teams ([`Team`]), collectives over
//! teams ([`Shmem::broadcast`], [`Shmem::reduce`], ...) and locks ([`Shmem::set_lock`]).
//!
//! ```
//! let shmem = shmemplus::init()?;            // a one-PE job without a launcher
//! let x = shmem.alloc::<i64>(16, shmemplus::Place::Cpu)?;
//! shmem.put(&x, 0, &[1, 2, 3], shmem.my_pe())?;
//! shmem.barrier_all()?;
//! assert_eq!(shmem.g(&x, 2, shmem.my_pe())?, 3);
//! # Ok::<(), shmemplus::Error>(())
//! ```
//!
//! Two conduits carry put/get between CPU heaps: `shm` (default; a same-host peer's
//! heap is mapped, a put is a copy) and `am` (`SHMEMPLUS_CONDUIT=am`; every transfer is
//! an active message served by the target's progress thread).

mod am;
mod atomic;
mod bootstrap;
mod clock;
pub mod config;
mod copy;
mod diag;
mod emulate;
pub mod error;
mod fatal;
mod fpga;
mod heap;
pub mod launch;
#[cfg(feature = "mpi")]
mod mpi_conduit;
mod reduce;
mod segment;
mod shmem;
mod statics;
mod sync;
mod team;
mod topology;
pub mod trace;
pub mod tune;
mod wake;

pub use atomic::{AtomicInt, Cmp, SignalOp};
pub use config::{Conduit, Config, PacketPolicy, TuneMode};
pub use diag::stderr_line;
pub use emulate::RmaOp;
pub use error::{Error, Result};
pub use fpga_mock;
pub use netsim;
pub use reduce::{Complex32, Complex64, ReduceOp, Reducible};
pub use shmem::{
    init, init_thread, init_with, AddressMap, BoardRun, Ctx, CtxOptions, InitOptions, MallocHints,
    Place, PlaceSpace, Shmem, SymVec, ThreadLevel, TuneSource,
};
/// The multilevel communication model: the `shmemplus-model` crate, a leaf over `netsim`.
pub use shmemplus_model as model;
pub use team::Team;
pub use topology::Topology;

/// The OpenSHMEM specification this library implements, as (major, minor)
/// (`SHMEM_MAJOR_VERSION`, `SHMEM_MINOR_VERSION`).
///
/// ```
/// assert_eq!(shmemplus::SPEC_VERSION, (1, 5));
/// ```
pub const SPEC_VERSION: (u32, u32) = (1, 5);

/// The vendor string (`SHMEM_VENDOR_STRING`, `shmem_info_get_name`): the library's
/// name and version; shorter than OpenSHMEM's `SHMEM_MAX_NAME_LEN` (256 bytes).
///
/// ```
/// assert!(shmemplus::VENDOR_NAME.starts_with("shmemplus "));
/// assert!(shmemplus::VENDOR_NAME.len() < 256);
/// ```
pub const VENDOR_NAME: &str = concat!("shmemplus ", env!("CARGO_PKG_VERSION"));

/// The README's code examples, compiled and run as doc tests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
