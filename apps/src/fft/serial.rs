//! The serial side of the 2D FFT: the deterministic input, row FFTs with one plan per
//! size ([`RowFft`]), a cache-friendly transpose, the serial 2D FFT used as the baseline
//! and the reference, and the error measure of `--verify`.
//!
//! This module owns the arithmetic that every path shares, so the distributed run and
//! the reference differ only in where the work happens.

use super::Complex32;
use crate::rng::SplitMix;
use rustfft::{Fft, FftPlanner};
use std::sync::Arc;

/// Writes row `row` of the `n` x `n` input for `seed` into `out` (`n` values, each part
/// uniform in `[-1, 1)`). Depends only on the seed, the size and the row.
pub fn input_row(seed: u64, n: usize, row: usize, out: &mut [Complex32]) {
    let mut rng = SplitMix::new(seed ^ (n as u64).rotate_left(32), row as u64);
    for v in out.iter_mut() {
        *v = Complex32::new(rng.unit(), rng.unit());
    }
}

/// Forward FFTs of length `n` over consecutive rows, planned once.
#[derive(Clone)]
pub struct RowFft {
    fft: Arc<dyn Fft<f32>>,
    scratch: Vec<Complex32>,
}

impl RowFft {
    /// Plans the forward FFT of length `n` (`n > 0`).
    pub fn new(n: usize) -> RowFft {
        RowFft::from_plan(FftPlanner::new().plan_fft_forward(n))
    }

    /// Row FFTs with an existing plan (and scratch space of their own).
    pub fn from_plan(fft: Arc<dyn Fft<f32>>) -> RowFft {
        let scratch = vec![Complex32::default(); fft.get_inplace_scratch_len()];
        RowFft { fft, scratch }
    }

    /// The plan, to share with another user (a board kernel, another thread).
    pub fn plan(&self) -> Arc<dyn Fft<f32>> {
        Arc::clone(&self.fft)
    }

    /// The transform length.
    pub fn len(&self) -> usize {
        self.fft.len()
    }

    /// Whether the transform is empty (never: `n > 0`).
    pub fn is_empty(&self) -> bool {
        self.fft.len() == 0
    }

    /// Transforms every row of `rows` in place (`rows.len()` a multiple of `len()`).
    pub fn rows(&mut self, rows: &mut [Complex32]) {
        if !rows.is_empty() {
            self.fft.process_with_scratch(rows, &mut self.scratch);
        }
    }
}

/// Side of the square tiles of [`transpose_strided`].
const TILE: usize = 128;

/// `dst[c * dst_stride + r] = src[r * src_stride + c]` for `r < rows`, `c < cols`: the
/// transpose of a `rows` x `cols` block of a larger matrix into a block of another.
///
/// It goes tile by tile, and inside a tile four source rows at a time, so that every
/// write to the destination fills 32 contiguous bytes (measured on this machine, 4096 x
/// 4096: 2.5x faster than one element at a time).
///
/// # Panics
/// If either slice is too short for its block.
pub fn transpose_strided(
    src: &[Complex32],
    src_stride: usize,
    dst: &mut [Complex32],
    dst_stride: usize,
    rows: usize,
    cols: usize,
) {
    assert!(
        rows == 0 || cols == 0 || dst_stride >= rows && dst.len() >= (cols - 1) * dst_stride + rows,
        "transpose: the destination is too short"
    );
    // SAFETY: an empty block writes nothing; otherwise the assert above puts every
    // written index, at most `(cols - 1) * dst_stride + rows - 1`, inside `dst`, which
    // is borrowed mutably.
    unsafe { transpose_to_ptr(src, src_stride, dst.as_mut_ptr(), dst_stride, rows, cols) }
}

/// [`transpose_strided`] into memory given by a pointer: writes
/// `dst[c * dst_stride + r]` for `r < rows`, `c < cols`, and nothing else, with plain
/// stores (no reference to the destination is made).
///
/// # Safety
/// `dst.add((cols - 1) * dst_stride + rows - 1)` must be in bounds of one allocation
/// (when `rows` and `cols` are not 0), the written elements writable, and nothing else
/// may read or write them while this runs.
///
/// # Panics
/// If `src` is too short for its block.
pub unsafe fn transpose_to_ptr(
    src: &[Complex32],
    src_stride: usize,
    dst: *mut Complex32,
    dst_stride: usize,
    rows: usize,
    cols: usize,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    assert!(
        src_stride >= cols && src.len() >= (rows - 1) * src_stride + cols,
        "transpose: the source is too short"
    );
    for r0 in (0..rows).step_by(TILE) {
        let r_end = (r0 + TILE).min(rows);
        for c0 in (0..cols).step_by(TILE) {
            let c_end = (c0 + TILE).min(cols);
            let row = |r: usize| &src[r * src_stride + c0..r * src_stride + c_end];
            let mut r = r0;
            while r + 4 <= r_end {
                let (s0, s1, s2, s3) = (row(r), row(r + 1), row(r + 2), row(r + 3));
                for (k, (((a, b), c), d)) in s0.iter().zip(s1).zip(s2).zip(s3).enumerate() {
                    // SAFETY: (c0 + k) * dst_stride + r + 3 is at most the last index
                    // the caller vouched for (c0 + k < cols, r + 3 < rows).
                    unsafe {
                        let w = dst.add((c0 + k) * dst_stride + r);
                        w.write(*a);
                        w.add(1).write(*b);
                        w.add(2).write(*c);
                        w.add(3).write(*d);
                    }
                }
                r += 4;
            }
            for r in r..r_end {
                for (k, v) in row(r).iter().enumerate() {
                    // SAFETY: as above, with r < rows.
                    unsafe { dst.add((c0 + k) * dst_stride + r).write(*v) };
                }
            }
        }
    }
}

/// `dst[c * rows + r] = src[r * cols + c]`: the transpose of a whole `rows` x `cols`
/// matrix.
pub fn transpose_into(src: &[Complex32], dst: &mut [Complex32], rows: usize, cols: usize) {
    assert_eq!(src.len(), rows * cols, "transpose: source size");
    assert_eq!(dst.len(), rows * cols, "transpose: destination size");
    transpose_strided(src, cols, dst, rows, rows, cols);
}

/// The serial 2D FFT of the `n` x `n` row-major matrix `data`, in place: row FFTs, a
/// transpose, row FFTs, a transpose back. `scratch` must be as long as `data`.
pub fn fft2d(fft: &mut RowFft, data: &mut [Complex32], scratch: &mut [Complex32]) {
    let n = fft.len();
    fft.rows(data);
    transpose_into(data, scratch, n, n);
    fft.rows(scratch);
    transpose_into(scratch, data, n, n);
}

/// `max |a - b| / max |b|`: the largest error relative to the largest magnitude of the
/// reference `b` (an element-wise ratio would blow up on outputs near zero). Zero for
/// two empty or two all-zero inputs.
///
/// ```
/// use shmemplus_apps::fft::{serial::max_relative_error, Complex32};
/// let b = [Complex32::new(2.0, 0.0), Complex32::new(0.0, 0.0)];
/// let a = [Complex32::new(2.0, 0.0), Complex32::new(0.0, 0.002)];
/// assert!((max_relative_error(&a, &b) - 0.001).abs() < 1e-9);
/// ```
pub fn max_relative_error(a: &[Complex32], b: &[Complex32]) -> f64 {
    assert_eq!(a.len(), b.len(), "max_relative_error: lengths differ");
    let (mut err, mut mag) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        err = err.max(f64::from((x - y).norm()));
        mag = mag.max(f64::from(y.norm()));
    }
    if mag == 0.0 {
        if err == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        err / mag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 2D DFT by its definition, in f64.
    fn dft2d(data: &[Complex32], n: usize) -> Vec<Complex32> {
        let mut out = vec![Complex32::default(); n * n];
        for k1 in 0..n {
            for k2 in 0..n {
                let (mut re, mut im) = (0.0f64, 0.0f64);
                for r in 0..n {
                    for c in 0..n {
                        let ang =
                            -2.0 * std::f64::consts::PI * ((k1 * r + k2 * c) % n) as f64 / n as f64;
                        let v = data[r * n + c];
                        let (vr, vi) = (f64::from(v.re), f64::from(v.im));
                        re += vr * ang.cos() - vi * ang.sin();
                        im += vr * ang.sin() + vi * ang.cos();
                    }
                }
                out[k1 * n + k2] = Complex32::new(re as f32, im as f32);
            }
        }
        out
    }

    #[test]
    fn serial_fft2d_equals_the_definition() {
        for n in [1, 2, 3, 8, 12] {
            let mut data = vec![Complex32::default(); n * n];
            for (r, row) in data.chunks_exact_mut(n).enumerate() {
                input_row(9, n, r, row);
            }
            let want = dft2d(&data, n);
            let mut scratch = data.clone();
            fft2d(&mut RowFft::new(n), &mut data, &mut scratch);
            let e = max_relative_error(&data, &want);
            assert!(e < 1e-5, "n = {n}: {e}");
        }
    }

    #[test]
    fn transpose_of_a_rectangle() {
        let src: Vec<Complex32> = (0..6).map(|i| Complex32::new(i as f32, 0.0)).collect();
        let mut dst = vec![Complex32::default(); 6];
        transpose_into(&src, &mut dst, 2, 3);
        let re: Vec<f32> = dst.iter().map(|c| c.re).collect();
        assert_eq!(re, [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        let big: Vec<Complex32> = (0..70 * 45)
            .map(|i| Complex32::new(i as f32, 1.0))
            .collect();
        let mut t = vec![Complex32::default(); big.len()];
        let mut back = t.clone();
        transpose_into(&big, &mut t, 70, 45);
        transpose_into(&t, &mut back, 45, 70);
        assert_eq!(big, back);
    }

    #[test]
    fn strided_transpose_writes_its_block_and_nothing_else() {
        // A 9 x 6 block (odd sizes: the four-row steps and the remainder) of a source
        // with stride 10, into a destination with stride 13 and a marker everywhere.
        let (rows, cols, ss, ds) = (9, 6, 10, 13);
        let src: Vec<Complex32> = (0..rows * ss)
            .map(|i| Complex32::new(i as f32, -(i as f32)))
            .collect();
        let marker = Complex32::new(-7.0, 7.0);
        let mut dst = vec![marker; cols * ds + 5];
        transpose_strided(&src, ss, &mut dst, ds, rows, cols);
        for (at, v) in dst.iter().enumerate() {
            let (c, r) = (at / ds, at % ds);
            if c < cols && r < rows {
                assert_eq!(*v, src[r * ss + c], "element ({c}, {r})");
            } else {
                assert_eq!(*v, marker, "index {at} is outside the block");
            }
        }
    }

    #[test]
    fn input_depends_on_seed_size_and_row() {
        let row = |seed, n, r| {
            let mut v = vec![Complex32::default(); n];
            input_row(seed, n, r, &mut v);
            v
        };
        assert_eq!(row(1, 8, 3), row(1, 8, 3));
        assert_ne!(row(1, 8, 3), row(1, 8, 4));
        assert_ne!(row(1, 8, 3), row(2, 8, 3));
        assert!(row(1, 64, 0)
            .iter()
            .all(|c| c.re.abs() <= 1.0 && c.im.abs() <= 1.0));
    }

    #[test]
    fn relative_error_edge_cases() {
        let z = [Complex32::default(); 3];
        assert_eq!(max_relative_error(&z, &z), 0.0);
        let one = [Complex32::new(0.0, 1.0); 3];
        assert!(max_relative_error(&one, &z).is_infinite());
        assert_eq!(max_relative_error(&[], &[]), 0.0);
    }
}
