//! The SHMEM+ applications on shmemplus: content-based image retrieval ([`cbir`]) and a
//! distributed two-dimensional FFT ([`fft`]), with the pieces the two binaries `cbir`
//! and `fft2d` share.
//!
//! Modules:
//! - [`cbir`]: images (synthetic generator, palette, loader), the colour
//!   auto-correlogram, similarity and top-k, the distribution of images over CPUs and
//!   boards, the correlogram board kernel, and the three gather approaches of docs/model.md
//!   §4 with their predictions.
//! - [`fft`]: the serial 2D FFT reference, the row-FFT board kernel and the corner turn
//!   (distributed transpose).
//! - [`board`]: the RATSS timing of a board kernel from a speed relative to the CPU path
//!   (docs/model.md §6).
//! - [`devices`]: the per-device lines of a co-scheduled (FastFit) run's report.
//! - [`phases`]: wall-clock phase timing with barriers between phases, and the report's
//!   formatting helpers.
//! - [`oracle`]: the order and the medians of the oracles' rounds (`--schedule
//!   oracle`).
//! - [`rng`]: the small deterministic generator both applications draw their data from.
//! - [`trained`]: the `--trained FILE` both applications keep FastFit's lines in.
//!
//! This crate owns the applications' algorithms and their use of the library. It must
//! not reach into the library's internals: everything goes through `shmemplus`'s public
//! API (symmetric objects, put/get, barriers, boards, the model).

pub mod board;
pub mod cbir;
pub mod devices;
pub mod fft;
pub mod oracle;
pub mod phases;
pub mod rng;
pub mod trained;
