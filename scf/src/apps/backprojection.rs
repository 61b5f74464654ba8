//! The backprojection case study (SHMEM+ dissertation, table 5-7): parallel-beam CT
//! reconstruction of a synthetic phantom, split by angle over worker tasks.
//!
//! Kinds:
//! - `projector` (CPU): each iteration, the projections of [`phantom`]`(iteration)` at
//!   `total` angles over [`DETECTOR_BINS`] bins ([`project`]); its `k`-th out-channel gets
//!   the `k`-th block of angles, as many as the channel holds ([`angles_per_block`]);
//! - `backproject` (CPU and board): backprojects its block into an `N x N` partial
//!   image ([`backproject_block`], `N` from its out-channel's size, [`image_side`]);
//! - `assembler` (CPU): gathers the partial images, sums them in input order
//!   ([`sum_partials`]) and checks the sum bit for bit against its own serial run of the
//!   same functions in the same order ([`AssemblyCheck`]).
//!
//! Messages carry a 16-byte [`BlockHeader`] (which angles, of how many, over how many
//! bins) before their `f32` data, so a worker needs no configuration of its own:
//! projector to worker `16 + 4 * angles * bins` bytes, worker to assembler
//! `16 + 4 * N * N`.
//!
//! Owns the phantom, the projection and backprojection functions and the three kinds'
//! code. It must not reach other tasks but through the task context, nor memory but
//! the kernel's regions. Angles use [`cos_sin`], plain arithmetic rather than the
//! platform's `sin`/`cos`, so every task computes the same bits wherever it runs.

use super::{checked_args, f32s_from_le, f32s_to_le, output_sizes, read_region, region_len};
use crate::registry::{BoardArgs, BoardKernel, CpuTask, Registry, TaskOutcome};
use crate::task::TaskCtx;
use crate::{Result, ScfError};
use shmemplus::fpga_mock::{Kernel, KernelTiming};

/// Kind name of the projector.
pub const PROJECTOR: &str = "projector";
/// Kind name of the backprojection worker.
pub const BACKPROJECT: &str = "backproject";
/// Kind name of the assembler.
pub const ASSEMBLER: &str = "assembler";
/// Name of the backprojection board kernel.
pub const BACKPROJECT_KERNEL: &str = "scf-backproject";

/// Detector bins of the projector's projections.
pub const DETECTOR_BINS: u32 = 64;
/// The detector spans `[-W, W]` in image units (the image is `[-1, 1]^2`, whose
/// corners are at `sqrt(2) < 1.5`).
pub const DETECTOR_HALF_WIDTH: f64 = 1.5;
/// Bytes of a [`BlockHeader`].
pub const HEADER_BYTES: u64 = 16;

/// The backprojection kernel's timing, illustrative and not measured: one element is
/// one (pixel, angle) update (about 4 operations: the detector coordinate, the
/// interpolation, the accumulation), 16 pixel pipelines at 150 MHz after a 100-cycle
/// latency. A 64 x 64 image over 32 angles models about 0.22 ms (against the graph's
/// 2 ms `cpu_s` on a CPU). The element count assumes the projector's
/// [`DETECTOR_BINS`], since a kernel's count sees its arguments, not its data.
pub const BACKPROJECT_TIMING: KernelTiming = KernelTiming {
    pipeline_latency_cycles: 100.0,
    clock_hz: 150e6,
    ops_per_element: 4.0,
    ops_per_cycle: 16.0,
};

/// What a message's data is: angles `first_angle .. first_angle + angles` of
/// `total_angles` (over `[0, pi)`), over `bins` detector bins. Sent before the data as
/// four little-endian `u32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    /// The first angle's index.
    pub first_angle: u32,
    /// Angles in the block.
    pub angles: u32,
    /// Angles of the whole scan.
    pub total_angles: u32,
    /// Detector bins per projection.
    pub bins: u32,
}

impl BlockHeader {
    /// The header as sent.
    pub fn to_le_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        for (chunk, v) in
            b.chunks_exact_mut(4)
                .zip([self.first_angle, self.angles, self.total_angles, self.bins])
        {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// Splits a message into its header (checked: a block inside the scan, at least
    /// one bin) and its data.
    pub fn split(message: &[u8]) -> std::result::Result<(BlockHeader, &[u8]), String> {
        let (head, data) = message
            .split_first_chunk::<16>()
            .ok_or_else(|| format!("a message of {} bytes has no 16-byte header", message.len()))?;
        let w: Vec<u32> = head
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let h = BlockHeader {
            first_angle: w[0],
            angles: w[1],
            total_angles: w[2],
            bins: w[3],
        };
        let inside = h
            .first_angle
            .checked_add(h.angles)
            .is_some_and(|end| end <= h.total_angles);
        if h.angles == 0 || h.bins == 0 || !inside {
            return Err(format!(
                "bad block header {h:?} (angles and bins >= 1, the block inside the scan)"
            ));
        }
        Ok((h, data))
    }
}

/// One disc of a phantom (image units; the image is `[-1, 1]^2`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Disc {
    /// Centre x.
    pub x: f64,
    /// Centre y.
    pub y: f64,
    /// Radius.
    pub r: f64,
    /// Density (added to the discs below it).
    pub density: f64,
}

/// `(cos t, sin t)` for `t` in `[-pi, pi]`, by their Taylor series in plain `f64`
/// arithmetic (error below `1e-14` there): the same bits on every machine and in every
/// build, which the platform's functions do not promise.
///
/// ```
/// use shmemplus_scf::apps::backprojection::cos_sin;
/// let (c, s) = cos_sin(std::f64::consts::FRAC_PI_3);
/// assert!((c - 0.5).abs() < 1e-14 && (s - 0.75f64.sqrt()).abs() < 1e-14);
/// ```
pub fn cos_sin(t: f64) -> (f64, f64) {
    let (mut c, mut s) = (0.0, 0.0);
    let mut term = 1.0; // t^k / k!
    for k in 0..32u32 {
        match k % 4 {
            0 => c += term,
            1 => s += term,
            2 => c -= term,
            _ => s -= term,
        }
        term *= t / f64::from(k + 1);
    }
    (c, s)
}

/// `(cos, sin)` of angle `a` of `total` over `[0, pi)`.
fn angle(a: u32, total: u32) -> (f64, f64) {
    cos_sin(std::f64::consts::PI * f64::from(a) / f64::from(total.max(1)))
}

/// The centre of bin `d` of `bins`, in image units.
fn bin_centre(d: u32, bins: u32) -> f64 {
    -DETECTOR_HALF_WIDTH + (f64::from(d) + 0.5) * 2.0 * DETECTOR_HALF_WIDTH / f64::from(bins)
}

/// The phantom of `iteration`: a body disc, a dense spot and a small disc circling
/// inside (so each iteration's data differs).
pub fn phantom(iteration: u64) -> Vec<Disc> {
    let (c, s) = cos_sin(std::f64::consts::PI * ((iteration % 16) as f64 / 8.0 - 1.0));
    vec![
        Disc {
            x: 0.0,
            y: 0.0,
            r: 0.75,
            density: 1.0,
        },
        Disc {
            x: -0.3,
            y: 0.25,
            r: 0.1,
            density: 1.5,
        },
        Disc {
            x: 0.4 * c,
            y: 0.4 * s,
            r: 0.15,
            density: 0.5,
        },
    ]
}

/// The projections of `discs` (line integrals, exact for discs) at angles
/// `h.first_angle ..` of `h.total_angles`, `h.bins` bins each, angle-major.
pub fn project(discs: &[Disc], h: &BlockHeader) -> Vec<f32> {
    let mut out = Vec::with_capacity(h.angles as usize * h.bins as usize);
    for a in h.first_angle..h.first_angle.saturating_add(h.angles) {
        let (c, s) = angle(a, h.total_angles);
        for d in 0..h.bins {
            let t = bin_centre(d, h.bins);
            let sum: f64 = discs
                .iter()
                .map(|q| {
                    let off = t - (q.x * c + q.y * s);
                    let chord = q.r * q.r - off * off;
                    if chord > 0.0 {
                        2.0 * q.density * chord.sqrt()
                    } else {
                        0.0
                    }
                })
                .sum();
            out.push(sum as f32);
        }
    }
    out
}

/// Backprojects `sino` (`h.angles x h.bins`, angle-major) into `image` (`n x n`,
/// row-major, row `j` at `y = -1 + (j + 0.5) 2 / n`): for each angle in order, each
/// pixel adds the linearly interpolated projection at its detector coordinate times
/// `pi / total_angles`. Overwrites `image`. The one function of both the CPU and the
/// board kernel, so both give the same bits.
pub fn backproject_block(
    h: &BlockHeader,
    sino: &[f32],
    n: usize,
    image: &mut [f32],
) -> std::result::Result<(), String> {
    let inside = h
        .first_angle
        .checked_add(h.angles)
        .is_some_and(|end| end <= h.total_angles);
    if h.bins == 0 || !inside {
        return Err(format!("backproject: bad block {h:?}"));
    }
    let bins = h.bins as usize;
    let want = (h.angles as usize)
        .checked_mul(bins)
        .ok_or("backproject: block too large")?;
    if sino.len() != want {
        return Err(format!(
            "backproject: {} projection values for {} angles x {bins} bins",
            sino.len(),
            h.angles
        ));
    }
    if n.checked_mul(n) != Some(image.len()) {
        return Err(format!(
            "backproject: an image of {} pixels is not {n} x {n}",
            image.len()
        ));
    }
    image.fill(0.0);
    let dtheta = (std::f64::consts::PI / f64::from(h.total_angles)) as f32;
    let scale = (f64::from(h.bins) / (2.0 * DETECTOR_HALF_WIDTH)) as f32;
    let half = DETECTOR_HALF_WIDTH as f32;
    let last = (bins - 1) as f32;
    let pix = |i: usize| -1.0 + (i as f32 + 0.5) * 2.0 / n as f32;
    for (a, row) in sino.chunks_exact(bins).enumerate() {
        let (c, s) = angle(h.first_angle + a as u32, h.total_angles);
        let (c, s) = (c as f32, s as f32);
        for (j, line) in image.chunks_exact_mut(n).enumerate() {
            let y = pix(j);
            for (i, px) in line.iter_mut().enumerate() {
                let u = ((pix(i) * c + y * s) + half) * scale - 0.5;
                if (0.0..=last).contains(&u) {
                    let k = u as usize; // u >= 0: truncation is floor
                    let f = u - k as f32;
                    let next = row[(k + 1).min(bins - 1)];
                    *px += (row[k] * (1.0 - f) + next * f) * dtheta;
                }
            }
        }
    }
    Ok(())
}

/// Sums partial images pixel by pixel in the given order (the first, plus the second,
/// ...).
pub fn sum_partials(partials: &[Vec<f32>]) -> Vec<f32> {
    let mut sum = partials.first().cloned().unwrap_or_default();
    for p in partials.iter().skip(1) {
        for (s, v) in sum.iter_mut().zip(p) {
            *s += v;
        }
    }
    sum
}

/// Angles in a projector-to-worker message of `bytes`: `(bytes - 16) / (4 *`
/// [`DETECTOR_BINS`]`)`, which must divide exactly and be at least 1.
///
/// ```
/// use shmemplus_scf::apps::backprojection::angles_per_block;
/// assert_eq!(angles_per_block(16 + 32 * 64 * 4), Ok(32));
/// assert!(angles_per_block(8192).is_err());
/// ```
pub fn angles_per_block(bytes: u64) -> std::result::Result<u32, String> {
    let per_angle = 4 * u64::from(DETECTOR_BINS);
    match bytes.checked_sub(HEADER_BYTES) {
        Some(data) if data > 0 && data % per_angle == 0 => u32::try_from(data / per_angle)
            .map_err(|_| format!("{bytes} bytes hold too many angles")),
        _ => Err(format!(
            "a projector-to-worker message is {HEADER_BYTES} + {per_angle} x angles bytes (a header, then angles x {DETECTOR_BINS} f32 bins), not {bytes}"
        )),
    }
}

/// The side `N` of the image in a worker-to-assembler message of `bytes`:
/// `16 + 4 N^2` bytes, `N >= 1`.
///
/// ```
/// use shmemplus_scf::apps::backprojection::image_side;
/// assert_eq!(image_side(16 + 64 * 64 * 4), Ok(64));
/// assert!(image_side(16 + 63 * 64 * 4).is_err());
/// ```
pub fn image_side(bytes: u64) -> std::result::Result<usize, String> {
    let bad = || {
        format!(
            "a partial-image message is {HEADER_BYTES} + 4 x N x N bytes (a header, then an N x N f32 image), not {bytes}"
        )
    };
    let data = bytes
        .checked_sub(HEADER_BYTES)
        .filter(|d| d % 4 == 0)
        .ok_or_else(bad)?;
    let pixels = data / 4;
    let n = pixels.isqrt();
    if n == 0 || n * n != pixels {
        return Err(bad());
    }
    region_len(n)
}

/// A worker's work on one message: the projector's block in, its partial image (with
/// the same header) out, `out_bytes` long.
pub fn backproject_message(input: &[u8], out_bytes: u64) -> std::result::Result<Vec<u8>, String> {
    let n = image_side(out_bytes)?;
    let (h, data) = BlockHeader::split(input)?;
    if data.len() % 4 != 0 {
        return Err(format!(
            "backproject: {} data bytes are not whole f32",
            data.len()
        ));
    }
    let mut image = vec![0.0f32; n * n];
    backproject_block(&h, &f32s_from_le(data), n, &mut image)?;
    let mut out = h.to_le_bytes().to_vec();
    out.extend(f32s_to_le(&image));
    Ok(out)
}

/// Adds `projector`, `backproject` (CPU and board) and `assembler` to `r`.
pub fn register(r: &mut Registry) {
    r.cpu(PROJECTOR, |_| Projector);
    r.cpu(BACKPROJECT, |_| Backproject);
    r.fpga(
        BACKPROJECT,
        BoardKernel {
            kernel: backproject_kernel(),
            state_bytes: 0,
        },
    );
    r.cpu(ASSEMBLER, |_| Assembler {
        check: AssemblyCheck::default(),
    });
}

fn failed(e: String) -> ScfError {
    ScfError::Failed(e)
}

/// The projector's blocks for out-channels of `sizes` bytes: headers in channel order,
/// consecutive blocks of angles.
fn plan_blocks(sizes: &[u64]) -> std::result::Result<Vec<BlockHeader>, String> {
    let angles = sizes
        .iter()
        .map(|&b| angles_per_block(b))
        .collect::<std::result::Result<Vec<u32>, String>>()?;
    let total = angles
        .iter()
        .try_fold(0u32, |t, &a| t.checked_add(a))
        .ok_or("projector: too many angles in all")?;
    let mut first = 0;
    Ok(angles
        .iter()
        .map(|&a| {
            let h = BlockHeader {
                first_angle: first,
                angles: a,
                total_angles: total,
                bins: DETECTOR_BINS,
            };
            first += a;
            h
        })
        .collect())
}

/// The projector: the `k`-th block of angles to its `k`-th out-channel.
struct Projector;

impl CpuTask for Projector {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let outs = output_sizes(ctx)?;
        let sizes: Vec<u64> = outs.iter().map(|o| o.1 as u64).collect();
        let heads = plan_blocks(&sizes).map_err(failed)?;
        let discs = phantom(ctx.iteration());
        let parts: Vec<Vec<u8>> = heads
            .iter()
            .map(|h| {
                let mut m = h.to_le_bytes().to_vec();
                m.extend(f32s_to_le(&project(&discs, h)));
                m
            })
            .collect();
        let names: Vec<&str> = outs.iter().map(|o| o.0).collect();
        let views: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        ctx.scatter(&names, &views)
    }
}

/// The backprojection worker on a CPU.
struct Backproject;

impl CpuTask for Backproject {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let inputs = ctx.inputs();
        let outs = output_sizes(ctx)?;
        let (&[from], &[(to, bytes)]) = (inputs.as_slice(), outs.as_slice()) else {
            return Err(failed(format!(
                "a backproject task has one input and one output, this one {} and {}",
                inputs.len(),
                outs.len()
            )));
        };
        let block = ctx.recv(from)?;
        let out = backproject_message(&block, bytes as u64).map_err(failed)?;
        ctx.send(to, &out)
    }
}

/// The backprojection board kernel: one input, one output; checks everything (the
/// header too) before writing its output.
fn backproject_kernel() -> Kernel {
    Kernel::new(
        BACKPROJECT_KERNEL,
        BACKPROJECT_TIMING,
        |words| {
            let Ok(a) = BoardArgs::from_words(words) else {
                return 0;
            };
            let (Some(i), Some(o)) = (a.inputs.first(), a.outputs.first()) else {
                return 0;
            };
            let angles = i.1.saturating_sub(HEADER_BYTES) / 4 / u64::from(DETECTOR_BINS);
            let pixels = o.1.saturating_sub(HEADER_BYTES) / 4;
            angles.saturating_mul(pixels)
        },
        |mem, words| {
            let args = checked_args("backproject", mem, words, Some(1), Some(1))?;
            let output = args.outputs[0];
            let out = backproject_message(&read_region(mem, args.inputs[0])?, output.1)?;
            mem.write(output.0, &out)
        },
    )
}

/// The assembler's check: each iteration, the partial images received against its own
/// (regenerated projections, same backprojection, same summation order).
#[derive(Debug, Clone, Default)]
pub struct AssemblyCheck {
    iterations: u64,
    mismatches: u64,
    /// Workers, image side, angles in all (of the last iteration).
    shape: (usize, usize, u32),
    /// The last sum's largest pixel: value and (column, row).
    peak: (f32, usize, usize),
}

impl AssemblyCheck {
    /// A check before any iteration.
    pub fn new() -> AssemblyCheck {
        AssemblyCheck::default()
    }

    /// Checks one iteration's partial-image messages (in input order): their headers
    /// must cover the scan's angles exactly once; `Ok(true)` if their sum is bit for bit
    /// the reference's. Errors for malformed messages.
    pub fn check(
        &mut self,
        iteration: u64,
        messages: &[Vec<u8>],
    ) -> std::result::Result<bool, String> {
        let mut heads = Vec::with_capacity(messages.len());
        let mut images = Vec::with_capacity(messages.len());
        let mut side = None;
        for m in messages {
            let n = image_side(m.len() as u64)?;
            if side.is_some_and(|s| s != n) {
                return Err(format!(
                    "assembler: partial images of {n} and {side:?} pixels a side"
                ));
            }
            side = Some(n);
            let (h, data) = BlockHeader::split(m)?;
            heads.push(h);
            images.push(f32s_from_le(data));
        }
        let n = side.ok_or("assembler: no partial image")?;
        let total = heads[0].total_angles;
        let mut covered: Vec<(u32, u32)> =
            heads.iter().map(|h| (h.first_angle, h.angles)).collect();
        covered.sort_unstable();
        let mut next = 0u32;
        for (h, (first, angles)) in heads.iter().zip(covered) {
            if h.total_angles != total || h.bins != heads[0].bins || first != next {
                return Err(format!(
                    "assembler: the blocks {heads:?} do not cover {total} angles once each"
                ));
            }
            next = first + angles; // inside the scan: checked by split
        }
        if next != total {
            return Err(format!(
                "assembler: the blocks {heads:?} miss angles of {total}"
            ));
        }
        let discs = phantom(iteration);
        let mut reference = Vec::with_capacity(heads.len());
        for h in &heads {
            let mut image = vec![0.0f32; n * n];
            backproject_block(h, &project(&discs, h), n, &mut image)?;
            reference.push(image);
        }
        let want = sum_partials(&reference);
        let got = sum_partials(&images);
        let same = f32s_to_le(&want) == f32s_to_le(&got);
        if !same {
            self.mismatches += 1;
        }
        let (peak_at, peak) =
            got.iter()
                .enumerate()
                .fold((0, f32::NEG_INFINITY), |best, (i, &v)| {
                    if v > best.1 {
                        (i, v)
                    } else {
                        best
                    }
                });
        self.peak = (peak, peak_at % n, peak_at / n);
        self.shape = (messages.len(), n, total);
        self.iterations += 1;
        Ok(same)
    }

    /// `Some(true)` if at least one iteration was checked and every sum matched, with a
    /// one-line summary.
    pub fn outcome(&self) -> TaskOutcome {
        let (workers, n, angles) = self.shape;
        let matched = if self.iterations == 0 {
            "nothing checked".to_string()
        } else if self.mismatches == 0 {
            "every image matched the serial reconstruction".to_string()
        } else {
            format!(
                "{} images differed from the serial reconstruction",
                self.mismatches
            )
        };
        TaskOutcome {
            verified: Some(self.iterations > 0 && self.mismatches == 0),
            summary: format!(
                "{workers} partial images of {n}x{n} from {angles} angles, {} iterations: {matched}; last peak {:.3} at ({}, {})",
                self.iterations, self.peak.0, self.peak.1, self.peak.2
            ),
        }
    }
}

/// The assembler: gathers the partial images and checks their sum.
struct Assembler {
    check: AssemblyCheck,
}

impl CpuTask for Assembler {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let from = ctx.inputs();
        let parts = ctx.gather(&from)?;
        self.check.check(ctx.iteration(), &parts).map_err(failed)?;
        Ok(())
    }

    fn finish(&mut self) -> TaskOutcome {
        self.check.outcome()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{board, read, run, MEMORY};
    use super::*;

    const N: usize = 32;

    fn message(discs: &[Disc], h: &BlockHeader) -> Vec<u8> {
        let mut m = h.to_le_bytes().to_vec();
        m.extend(f32s_to_le(&project(discs, h)));
        m
    }

    fn out_bytes(n: usize) -> u64 {
        HEADER_BYTES + 4 * (n * n) as u64
    }

    #[test]
    fn cos_sin_is_accurate() {
        for k in 0..=64 {
            let t = std::f64::consts::PI * (f64::from(k) / 32.0 - 1.0);
            let (c, s) = cos_sin(t);
            assert!(
                (c - t.cos()).abs() < 1e-13 && (s - t.sin()).abs() < 1e-13,
                "{t}"
            );
        }
    }

    #[test]
    fn a_centred_disc_peaks_in_the_centre() {
        let disc = [Disc {
            x: 0.0,
            y: 0.0,
            r: 0.5,
            density: 1.0,
        }];
        let h = BlockHeader {
            first_angle: 0,
            angles: 48,
            total_angles: 48,
            bins: DETECTOR_BINS,
        };
        let n = 64;
        let mut image = vec![0.0; n * n];
        backproject_block(&h, &project(&disc, &h), n, &mut image).unwrap();
        let at = |i: usize, j: usize| image[j * n + i];
        let peak = image.iter().copied().fold(f32::MIN, f32::max);
        let centre = at(31, 31).max(at(32, 32)).max(at(31, 32)).max(at(32, 31));
        assert_eq!(centre, peak);
        assert!(at(32, 32) > 2.0 * at(2, 32) && at(32, 32) > 2.0 * at(32, 61));
        // Symmetric about the centre (up to rounding).
        assert!((at(10, 32) - at(53, 32)).abs() < 1e-3 * peak);
    }

    #[test]
    fn kernel_matches_the_cpu_worker() {
        let b = board();
        let discs = phantom(3);
        let h = BlockHeader {
            first_angle: 8,
            angles: 8,
            total_angles: 24,
            bins: DETECTOR_BINS,
        };
        let input = message(&discs, &h);
        b.write(0, &input).unwrap();
        let out = (65536, out_bytes(N));
        let args = BoardArgs {
            iteration: 3,
            state: (0, 0),
            inputs: vec![(0, input.len() as u64)],
            outputs: vec![out],
        };
        let done = run(&b, BACKPROJECT_KERNEL, &args.to_words()).unwrap();
        assert_eq!(done.elements, (8 * N * N) as u64);
        let want = backproject_message(&input, out.1).unwrap();
        assert_eq!(read(&b, out.0, want.len()), want);
        assert!(f32s_from_le(&want[16..]).iter().any(|&v| v > 0.0));
    }

    #[test]
    fn kernel_refuses_bad_args_and_writes_nothing() {
        let b = board();
        let h = BlockHeader {
            first_angle: 0,
            angles: 2,
            total_angles: 4,
            bins: DETECTOR_BINS,
        };
        let input = message(&phantom(0), &h);
        let len = input.len() as u64;
        b.write(0, &input).unwrap();
        let mut lying = input.clone();
        lying[4] = 3; // three angles claimed, two sent
        b.write(8192, &lying).unwrap();
        b.write(65536, &[0xAB; 8192]).unwrap();
        let good = BoardArgs {
            iteration: 0,
            state: (0, 0),
            inputs: vec![(0, len)],
            outputs: vec![(65536, out_bytes(N))],
        };
        let cases = [
            (
                BoardArgs {
                    outputs: vec![(65536, out_bytes(N) + 4)],
                    ..good.clone()
                },
                "N x N",
            ),
            (
                BoardArgs {
                    inputs: vec![(8192, len)],
                    ..good.clone()
                },
                "projection values",
            ),
            (
                BoardArgs {
                    inputs: vec![(0, 8)],
                    ..good.clone()
                },
                "header",
            ),
            (
                BoardArgs {
                    inputs: vec![(MEMORY - 8, len)],
                    ..good.clone()
                },
                "board end",
            ),
            (
                BoardArgs {
                    inputs: vec![],
                    ..good.clone()
                },
                "0 inputs",
            ),
        ];
        for (args, why) in cases {
            let e = run(&b, BACKPROJECT_KERNEL, &args.to_words()).unwrap_err();
            assert!(e.to_string().contains(why), "{args:?}: {e}");
        }
        assert_eq!(read(&b, 65536, 8192), vec![0xAB; 8192]);
        run(&b, BACKPROJECT_KERNEL, &good.to_words()).unwrap();
    }

    #[test]
    fn sizes_are_checked() {
        assert_eq!(angles_per_block(16 + 256), Ok(1));
        assert!(angles_per_block(16).is_err());
        assert!(angles_per_block(3).is_err());
        assert!(image_side(16).is_err());
        assert!(image_side(15).is_err());
        assert_eq!(image_side(20), Ok(1));
        let heads = plan_blocks(&[16 + 256 * 2, 16 + 256 * 3]).unwrap();
        assert_eq!(
            heads
                .iter()
                .map(|h| (h.first_angle, h.angles, h.total_angles))
                .collect::<Vec<_>>(),
            [(0, 2, 5), (2, 3, 5)]
        );
        assert!(plan_blocks(&[16 + 256, 100]).is_err());
    }

    /// The assembler accepts the workers' images (CPU and board mixed) and rejects a
    /// changed pixel or a missing block.
    #[test]
    fn assembly_check() {
        let b = board();
        let sizes = [16 + 256 * 4, 16 + 256 * 4, 16 + 256 * 4];
        let heads = plan_blocks(&sizes).unwrap();
        let mut check = AssemblyCheck::new();
        for it in 0..3u64 {
            let discs = phantom(it);
            let mut parts: Vec<Vec<u8>> = heads
                .iter()
                .map(|h| backproject_message(&message(&discs, h), out_bytes(N)).unwrap())
                .collect();
            // Worker 1 on the board.
            let input = message(&discs, &heads[1]);
            b.write(0, &input).unwrap();
            let args = BoardArgs {
                iteration: it,
                state: (0, 0),
                inputs: vec![(0, input.len() as u64)],
                outputs: vec![(65536, out_bytes(N))],
            };
            run(&b, BACKPROJECT_KERNEL, &args.to_words()).unwrap();
            parts[1] = read(&b, 65536, out_bytes(N) as usize);
            if it == 2 {
                parts[2][16 + 4 * 100] ^= 1;
            }
            assert_eq!(check.check(it, &parts).unwrap(), it != 2);
        }
        let o = check.outcome();
        assert_eq!(o.verified, Some(false));
        assert!(
            o.summary.starts_with(
                "3 partial images of 32x32 from 12 angles, 3 iterations: 1 images differed"
            ),
            "{}",
            o.summary
        );

        let discs = phantom(0);
        let parts: Vec<Vec<u8>> = heads[..2]
            .iter()
            .map(|h| backproject_message(&message(&discs, h), out_bytes(N)).unwrap())
            .collect();
        let e = AssemblyCheck::new().check(0, &parts).unwrap_err();
        assert!(e.contains("miss angles"), "{e}");
        assert_eq!(AssemblyCheck::new().outcome().verified, Some(false));
    }
}
