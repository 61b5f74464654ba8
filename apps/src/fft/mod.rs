//! The distributed two-dimensional FFT of an N x N complex `f32` image: rows
//! distributed over the PEs in equal blocks; row FFTs (on the CPU or on the boards);
//! a corner turn (distributed transpose); the same row FFTs again (the columns of the
//! original); a second corner turn back to the row layout.
//!
//! Modules:
//! - [`serial`]: the input generator, the row FFT with a plan made once per size, the
//!   serial 2D FFT reference and the error measure;
//! - [`kernel`]: the row-FFT board kernel and its bitfile;
//! - [`corner_turn`]: the distributed transpose (the one place the exchange happens);
//! - [`distributed`]: the two passes, on the CPUs or the boards, and which symmetric
//!   object holds what when.

pub mod corner_turn;
pub mod distributed;
pub mod kernel;
pub mod serial;

/// The element type: a complex number of two `f32`.
pub type Complex32 = rustfft::num_complex::Complex<f32>;
