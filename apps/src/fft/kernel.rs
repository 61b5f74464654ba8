//! The row-FFT board kernel: forward FFTs of the rows held in board memory, in place.
//!
//! This module owns the kernel's arguments and bitfile. The kernel runs the same planned
//! rustfft transform as the CPU path ([`RowFft`]); its modeled time is RATSS with one
//! element per complex point, [`ops_per_point`] operations per point (the classic
//! `5 N log2 N` operation count of a length-N FFT, per point) and a pipeline latency of
//! one row (a streaming FFT core emits its first output after taking a whole row in).

use super::serial::RowFft;
use super::Complex32;
use shmemplus::fpga_mock::{Bitfile, Kernel, KernelMemory, KernelTiming};

/// Name of the FFT bitfile.
pub const BITFILE: &str = "shmemplus-fft";
/// Name of the kernel: args `[offset_bytes, rows]`; transforms `rows` rows of `n`
/// complex `f32` at `offset_bytes` in place; `rows * n` elements.
pub const KERNEL: &str = "fft-rows";

/// Bytes of one complex point.
const POINT_BYTES: u64 = size_of::<Complex32>() as u64;
/// Rows are read, transformed and written back in pieces of about this many bytes.
const PIECE_BYTES: u64 = 1 << 20;

/// Operations per point of a length-`n` FFT: `5 log2 n` (at least 1).
pub fn ops_per_point(n: usize) -> f64 {
    (5.0 * (n.max(2) as f64).log2()).max(1.0)
}

/// Pipeline latency in cycles of a streaming FFT core of length `n`: one row, plus
/// one cycle per butterfly stage.
pub fn pipeline_latency_cycles(n: usize) -> f64 {
    n as f64 + (n.max(2) as f64).log2().ceil()
}

/// The FFT bitfile for rows of length `fft.len()`, timed by `timing` (elements are
/// points). The kernel shares the plan; each run has its own scratch space, so runs on
/// several boards proceed in parallel.
pub fn bitfile(fft: &RowFft, timing: KernelTiming) -> Bitfile {
    let plan = fft.plan();
    Bitfile {
        name: BITFILE.into(),
        kernels: vec![Kernel::new(
            KERNEL,
            timing,
            {
                let n = fft.len() as u64;
                move |args| args.get(1).map_or(0, |&rows| rows.saturating_mul(n))
            },
            move |mem, args| run(&mut RowFft::from_plan(plan.clone()), mem, args),
        )],
    }
}

/// The kernel's body; checks the range before touching anything.
fn run(fft: &mut RowFft, mem: &KernelMemory<'_>, args: &[u64]) -> Result<(), String> {
    let &[offset, rows] = args else {
        return Err(format!(
            "{KERNEL} takes 2 arguments [offset_bytes, rows], got {}",
            args.len()
        ));
    };
    let n = fft.len() as u64;
    let row_bytes = n * POINT_BYTES;
    match rows
        .checked_mul(row_bytes)
        .and_then(|b| offset.checked_add(b))
    {
        Some(end) if end <= mem.len() => {}
        _ => {
            return Err(format!(
                "{KERNEL}: {rows} rows of {n} points at offset {offset} pass the board end \
                 ({} bytes)",
                mem.len()
            ))
        }
    }
    let per_piece = (PIECE_BYTES / row_bytes).clamp(1, rows.max(1));
    let mut buf = vec![Complex32::default(); (per_piece * n) as usize];
    let mut row = 0;
    while row < rows {
        let k = per_piece.min(rows - row);
        let piece = &mut buf[..(k * n) as usize];
        let at = offset + row * row_bytes;
        mem.read(at, bytemuck::cast_slice_mut(piece))?;
        fft.rows(piece);
        mem.write(at, bytemuck::cast_slice(piece))?;
        row += k;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::BoardSpeed;
    use crate::fft::serial::input_row;
    use shmemplus::fpga_mock::{Board, BoardConfig, BoardError};

    #[test]
    fn the_kernel_transforms_rows_like_the_cpu() {
        let n = 64;
        let rows = 40; // 512-byte rows: all in one piece
        let board = Board::new(BoardConfig {
            memory_bytes: 1 << 20,
            ..BoardConfig::default()
        })
        .unwrap();
        let fft = RowFft::new(n);
        let timing = BoardSpeed {
            cpu_seconds_per_element: 1e-9,
            speedup: 4.0,
        }
        .timing(pipeline_latency_cycles(n), ops_per_point(n))
        .unwrap();
        board.configure(bitfile(&fft, timing)).unwrap();
        let mut data = vec![Complex32::default(); rows * n];
        for (r, row) in data.chunks_exact_mut(n).enumerate() {
            input_row(1, n, r, row);
        }
        board.write(4096, bytemuck::cast_slice(&data)).unwrap();
        let done = board
            .start(KERNEL, &[4096, rows as u64])
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(done.elements, (rows * n) as u64);
        let mut back = vec![Complex32::default(); rows * n];
        board
            .read(4096, bytemuck::cast_slice_mut(&mut back))
            .unwrap();
        let mut want = data.clone();
        RowFft::new(n).rows(&mut want);
        assert_eq!(back, want);
        for args in [vec![0], vec![1 << 20, 1], vec![0, u64::MAX]] {
            let e = board.start(KERNEL, &args).unwrap().wait().unwrap_err();
            assert!(matches!(e, BoardError::KernelFailed { .. }), "{e:?}");
        }
    }

    #[test]
    fn large_rows_go_in_pieces() {
        // 2^17 points = 1 MiB per row: one row per piece, three pieces.
        let n = 1 << 17;
        let board = Board::new(BoardConfig {
            memory_bytes: 4 << 20,
            ..BoardConfig::default()
        })
        .unwrap();
        let fft = RowFft::new(n);
        let timing = BoardSpeed {
            cpu_seconds_per_element: 1e-12,
            speedup: 1.0,
        }
        .timing(0.0, 1.0)
        .unwrap();
        board.configure(bitfile(&fft, timing)).unwrap();
        let mut data = vec![Complex32::default(); 3 * n];
        for (r, row) in data.chunks_exact_mut(n).enumerate() {
            input_row(2, n, r, row);
        }
        board.write(0, bytemuck::cast_slice(&data)).unwrap();
        board.start(KERNEL, &[0, 3]).unwrap().wait().unwrap();
        let mut back = vec![Complex32::default(); 3 * n];
        board.read(0, bytemuck::cast_slice_mut(&mut back)).unwrap();
        RowFft::new(n).rows(&mut data);
        assert_eq!(back, data);
    }
}
