//! The CBIR board kernel: for each image in board memory, its correlogram and its
//! distance to the query's features, written as result records.
//!
//! This module owns the kernel's arguments, its memory layout and its bitfile. The
//! kernel computes exactly what the CPU path computes (the same
//! [`correlogram`](super::correlogram::correlogram) and [`sad`]); only its modeled time
//! differs: RATSS with one element per pixel and [`OPS_PER_PIXEL`] operations per
//! element (see [`crate::board`]).

use super::correlogram::{correlogram, Features, DISTANCES, FEATURES};
use super::search::{record, sad};
use super::{PIXELS, SIDE};
use shmemplus::fpga_mock::{Bitfile, Kernel, KernelMemory, KernelTiming};

/// Name of the CBIR bitfile.
pub const BITFILE: &str = "shmemplus-cbir";
/// Name of the kernel: args `[images_offset, count, query_offset, results_offset,
/// first_id]` (byte offsets in board memory); reads `count` images of [`PIXELS`] bytes
/// at `images_offset` and the query's [`FEATURES`] `u32` at `query_offset`, writes
/// `count` `u64` records (`distance << 32 | first_id + i`) at `results_offset`.
pub const KERNEL: &str = "correlogram-sad";
/// Operations per pixel: one comparison with each of 8 neighbours at each distance.
pub const OPS_PER_PIXEL: f64 = (8 * DISTANCES.len()) as f64;
/// Pipeline latency in cycles: a window of 7 rows of 128 pixels must fill before the
/// first comparison at distance 7, plus the adder tree.
pub const PIPELINE_LATENCY_CYCLES: f64 = (7 * SIDE + 64) as f64;

/// The CBIR bitfile, its kernel timed by `timing` (elements are pixels).
pub fn bitfile(timing: KernelTiming) -> Bitfile {
    Bitfile {
        name: BITFILE.into(),
        kernels: vec![Kernel::new(
            KERNEL,
            timing,
            |args| {
                args.get(1)
                    .map_or(0, |&count| count.saturating_mul(PIXELS as u64))
            },
            run,
        )],
    }
}

/// The kernel's body; checks every range before it reads or writes anything.
fn run(mem: &KernelMemory<'_>, args: &[u64]) -> Result<(), String> {
    let &[images, count, query, results, first_id] = args else {
        return Err(format!(
            "{KERNEL} takes 5 arguments [images_offset, count, query_offset, \
             results_offset, first_id], got {}",
            args.len()
        ));
    };
    let fits = |what: &str, offset: u64, bytes: Option<u64>| match bytes
        .and_then(|b| offset.checked_add(b))
    {
        Some(end) if end <= mem.len() => Ok(()),
        _ => Err(format!(
            "{KERNEL}: the {what} at offset {offset} pass the board end ({} bytes)",
            mem.len()
        )),
    };
    fits("images", images, count.checked_mul(PIXELS as u64))?;
    fits("query features", query, Some(4 * FEATURES as u64))?;
    fits("results", results, count.checked_mul(8))?;
    if first_id.saturating_add(count) > u64::from(u32::MAX) {
        return Err(format!(
            "{KERNEL}: image ids {first_id}.. do not fit in 32 bits"
        ));
    }
    let mut q: Features = [0; FEATURES];
    mem.read(query, bytemuck::bytes_of_mut(&mut q))?;
    let mut pixels = vec![0u8; PIXELS];
    let mut out = Vec::with_capacity(count as usize);
    for i in 0..count {
        mem.read(images + i * PIXELS as u64, &mut pixels)?;
        let f = correlogram(&pixels, SIDE, SIDE);
        out.push(record(sad(&f, &q), (first_id + i) as u32));
    }
    mem.write(results, bytemuck::cast_slice(&out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::BoardSpeed;
    use crate::cbir::generator::Synthetic;
    use shmemplus::fpga_mock::{Board, BoardConfig, BoardError};

    #[test]
    fn the_kernel_computes_what_the_cpu_computes() {
        let board = Board::new(BoardConfig {
            memory_bytes: 1 << 20,
            ..BoardConfig::default()
        })
        .unwrap();
        let timing = BoardSpeed {
            cpu_seconds_per_element: 1e-9,
            speedup: 10.0,
        }
        .timing(PIPELINE_LATENCY_CYCLES, OPS_PER_PIXEL)
        .unwrap();
        board.configure(bitfile(timing)).unwrap();
        let db = Synthetic::new(5, 10, 2);
        let q = correlogram(db.query().pixels(), SIDE, SIDE);
        for i in 0..3u32 {
            board
                .write(u64::from(i) * PIXELS as u64, db.image(i).pixels())
                .unwrap();
        }
        let (qoff, roff) = (3 * PIXELS as u64, 3 * PIXELS as u64 + 4096);
        board.write(qoff, bytemuck::bytes_of(&q)).unwrap();
        let done = board
            .start(KERNEL, &[0, 3, qoff, roff, 40])
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(done.elements, 3 * PIXELS as u64);
        assert!((done.modeled_s - timing.seconds(3 * PIXELS as u64)).abs() < 1e-15);
        let mut out = [0u64; 3];
        board
            .read(roff, bytemuck::cast_slice_mut(&mut out))
            .unwrap();
        for i in 0..3u32 {
            let f = correlogram(db.image(i).pixels(), SIDE, SIDE);
            assert_eq!(out[i as usize], record(sad(&f, &q), 40 + i));
        }
        // Bad arguments fail the run and change nothing.
        for args in [
            vec![0, 3],
            vec![0, 1000, qoff, roff, 0],
            vec![0, 1, 1 << 20, roff, 0],
        ] {
            let e = board.start(KERNEL, &args).unwrap().wait().unwrap_err();
            assert!(matches!(e, BoardError::KernelFailed { .. }), "{e:?}");
        }
    }
}
