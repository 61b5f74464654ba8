//! The target-tracking case study (SHMEM+ dissertation, ch. 5): a sensor measures the
//! positions of several targets, one Kalman filter per target smooths its track, and a
//! tracker collects the tracks.
//!
//! Kinds:
//! - `sensor` (CPU): each iteration, `M = bytes / 8` noisy position samples of target
//!   `k` for its `k`-th out-channel ([`measurements`]), scattered to the filters;
//! - `kalman` (CPU and board): a constant-velocity Kalman filter over its block
//!   ([`filter_block`]), its state carried across iterations (in the task on a CPU, in
//!   the kernel's state region on a board: bit-identical outputs either way);
//! - `tracker` (CPU): gathers the filtered blocks (its `k`-th in-channel carrying target
//!   `k`, so the gather lists the filters in the sensor's scatter order) and checks them
//!   bit for bit against its own run of the same functions ([`TrackCheck`]).
//!
//! Owns the measurement model, the filter, and the three kinds' code. It must not reach
//! other tasks but through the task context, nor memory but the kernel's regions, and
//! must not use a random-number crate: every sample is a pure function of (target,
//! sample index), so any task can regenerate it.

use super::{checked_args, f64s_from_le, f64s_to_le, output_sizes, read_region, region_len};
use crate::registry::{BoardArgs, BoardKernel, CpuTask, Registry, TaskOutcome};
use crate::task::TaskCtx;
use crate::{Result, ScfError};
use shmemplus::fpga_mock::{Kernel, KernelTiming};

/// Kind name of the sensor.
pub const SENSOR: &str = "sensor";
/// Kind name of the Kalman filter.
pub const KALMAN: &str = "kalman";
/// Kind name of the tracker.
pub const TRACKER: &str = "tracker";
/// Name of the Kalman filter's board kernel.
pub const KALMAN_KERNEL: &str = "scf-kalman";

/// The fixed seed of the measurement noise.
pub const SEED: u64 = 0x5EED_2011_AC7E_5CF0;
/// Standard deviation of the measurement noise (position units).
pub const MEASUREMENT_SIGMA: f64 = 5.0;
/// The filter's measurement noise variance `R` (matches [`MEASUREMENT_SIGMA`]).
pub const MEASUREMENT_VARIANCE: f64 = MEASUREMENT_SIGMA * MEASUREMENT_SIGMA;
/// The filter's process noise intensity `q` (white acceleration, per sample).
pub const PROCESS_NOISE: f64 = 1e-4;
/// The filter's initial velocity variance (nothing is known of the speed at first).
pub const INITIAL_VELOCITY_VARIANCE: f64 = 100.0;
/// Bytes of a [`KfState`] on a board (six `f64`).
pub const KF_STATE_BYTES: u64 = 48;

/// The Kalman kernel's timing, illustrative and not measured: a 200-cycle pipeline at
/// 150 MHz, about 30 floating-point operations per sample (predict and update of a
/// 2-state filter), all 30 in parallel, so one sample per cycle: a block of 32768
/// samples (256 KiB) models about 0.22 ms, against the example graph's 7.2 ms `cpu_s`
/// on a CPU.
pub const KALMAN_TIMING: KernelTiming = KernelTiming {
    pipeline_latency_cycles: 200.0,
    clock_hz: 150e6,
    ops_per_element: 30.0,
    ops_per_cycle: 30.0,
};

/// One step of the splitmix64 generator: a bijective mix of `x` (Steele, Lea and
/// Flood); successive states `x + k * 0x9E37_79B9_7F4A_7C15` give a good stream.
///
/// ```
/// use shmemplus_scf::apps::tracking::splitmix64;
/// assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
/// ```
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The true position of `target` at global sample `sample`: constant velocity, a
/// different start and speed per target.
pub fn truth(target: u64, sample: u64) -> f64 {
    let start = 1000.0 * (target % 16 + 1) as f64;
    let speed = 1.0 - 0.7 * (target % 4) as f64;
    start + speed * sample as f64
}

/// A unit-variance noise value for (target, sample): the sum of 12 uniforms on [0, 1)
/// less 6 (Irwin–Hall, close to a standard normal), from splitmix64 only, so any task
/// regenerates it bit for bit.
pub fn noise(target: u64, sample: u64) -> f64 {
    let mut s = splitmix64(SEED ^ splitmix64(target).rotate_left(17) ^ sample);
    let mut sum = 0.0;
    for _ in 0..12 {
        s = splitmix64(s);
        sum += (s >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    }
    sum - 6.0
}

/// The sensor's block for `target` in `iteration`: `m` measurements, of global samples
/// `iteration * m ..`. Fails only if the sample index overflows.
pub fn measurements(
    target: u64,
    iteration: u64,
    m: usize,
) -> std::result::Result<Vec<f64>, String> {
    let first = iteration
        .checked_mul(m as u64)
        .filter(|f| f.checked_add(m as u64).is_some())
        .ok_or_else(|| format!("sample index of iteration {iteration} x {m} overflows"))?;
    Ok((first..first + m as u64)
        .map(|n| truth(target, n) + MEASUREMENT_SIGMA * noise(target, n))
        .collect())
}

/// Samples per block for a channel of `bytes`: `bytes / 8`, which must divide exactly.
///
/// ```
/// use shmemplus_scf::apps::tracking::samples_per_block;
/// assert_eq!(samples_per_block(8192), Ok(1024));
/// assert!(samples_per_block(8190).is_err());
/// ```
pub fn samples_per_block(bytes: u64) -> std::result::Result<usize, String> {
    if bytes == 0 || bytes % 8 != 0 {
        return Err(format!(
            "a tracking channel carries f64 samples: {bytes} bytes is not a positive multiple of 8"
        ));
    }
    region_len(bytes / 8)
}

/// A constant-velocity Kalman filter's state: position, velocity and their covariance.
/// All zeros (the `Default`, and a board's zeroed state region) means "no measurement
/// yet": the first sample initialises it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KfState {
    /// Estimated position.
    pub x: f64,
    /// Estimated velocity (position units per sample).
    pub v: f64,
    /// Covariance of (x, v), row-major.
    pub p: [[f64; 2]; 2],
}

impl KfState {
    /// Whether a measurement was taken in (the position variance is then positive).
    pub fn initialised(&self) -> bool {
        self.p[0][0] > 0.0
    }

    /// The state as on a board: `[x, v, p00, p01, p10, p11]`, little-endian `f64`.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        f64s_to_le(&[
            self.x,
            self.v,
            self.p[0][0],
            self.p[0][1],
            self.p[1][0],
            self.p[1][1],
        ])
    }

    /// Reads [`KfState::to_le_bytes`] back; `None` unless `bytes` is 48 long.
    pub fn from_le_bytes(bytes: &[u8]) -> Option<KfState> {
        if bytes.len() as u64 != KF_STATE_BYTES {
            return None;
        }
        let w = f64s_from_le(bytes);
        Some(KfState {
            x: w[0],
            v: w[1],
            p: [[w[2], w[3]], [w[4], w[5]]],
        })
    }
}

/// Filters `samples` (one per unit of time) from `state`, writing the filtered position
/// after each to `out` (which must be as long) and leaving the state after the last.
/// The one filter of both the CPU and the board kernel, so both give the same bits.
///
/// Model: `x' = x + v`, `v' = v` with white-acceleration process noise
/// `q [[1/3, 1/2], [1/2, 1]]` ([`PROCESS_NOISE`]), measurement `z = x + noise` of
/// variance [`MEASUREMENT_VARIANCE`].
///
/// ```
/// use shmemplus_scf::apps::tracking::{filter_block, KfState};
/// let mut s = KfState::default();
/// let mut out = [0.0; 3];
/// filter_block(&mut s, &[10.0, 11.0, 12.0], &mut out);
/// assert_eq!(out[0], 10.0); // the first sample initialises the filter
/// assert!(s.v > 0.0);
/// ```
pub fn filter_block(state: &mut KfState, samples: &[f64], out: &mut [f64]) {
    const Q00: f64 = PROCESS_NOISE / 3.0;
    const Q01: f64 = PROCESS_NOISE / 2.0;
    const Q11: f64 = PROCESS_NOISE;
    let KfState { x, v, p } = state;
    for (z, o) in samples.iter().zip(out.iter_mut()) {
        if p[0][0] > 0.0 {
            // Predict.
            *x += *v;
            let p00 = p[0][0] + p[1][0] + p[0][1] + p[1][1] + Q00;
            let p01 = p[0][1] + p[1][1] + Q01;
            let p10 = p[1][0] + p[1][1] + Q01;
            let p11 = p[1][1] + Q11;
            // Update with the measurement z.
            let s = p00 + MEASUREMENT_VARIANCE;
            let k0 = p00 / s;
            let k1 = p10 / s;
            let y = z - *x;
            *x += k0 * y;
            *v += k1 * y;
            *p = [
                [(1.0 - k0) * p00, (1.0 - k0) * p01],
                [p10 - k1 * p00, p11 - k1 * p01],
            ];
        } else {
            *x = *z;
            *v = 0.0;
            *p = [
                [MEASUREMENT_VARIANCE, 0.0],
                [0.0, INITIAL_VELOCITY_VARIANCE],
            ];
        }
        *o = *x;
    }
}

/// A filter task's work on one message: `input` (samples) filtered from `state` into
/// the output message (filtered positions, as many bytes as the input).
pub fn kalman_message(state: &mut KfState, input: &[u8]) -> std::result::Result<Vec<u8>, String> {
    samples_per_block(input.len() as u64)?;
    let samples = f64s_from_le(input);
    let mut out = vec![0.0; samples.len()];
    filter_block(state, &samples, &mut out);
    Ok(f64s_to_le(&out))
}

/// Adds `sensor`, `kalman` (CPU and board) and `tracker` to `r`.
pub fn register(r: &mut Registry) {
    r.cpu(SENSOR, |_| Sensor);
    r.cpu(KALMAN, |_| KalmanTask {
        state: KfState::default(),
    });
    r.fpga(
        KALMAN,
        BoardKernel {
            kernel: kalman_kernel(),
            state_bytes: KF_STATE_BYTES,
        },
    );
    r.cpu(TRACKER, |_| Tracker {
        check: TrackCheck::default(),
    });
}

fn failed(e: String) -> ScfError {
    ScfError::Failed(e)
}

/// The sensor: target `k`'s block to its `k`-th out-channel.
struct Sensor;

impl CpuTask for Sensor {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let outs = output_sizes(ctx)?;
        let mut parts = Vec::with_capacity(outs.len());
        for (k, &(to, bytes)) in outs.iter().enumerate() {
            let m = samples_per_block(bytes as u64)
                .map_err(|e| failed(format!("sensor, channel to {to:?}: {e}")))?;
            parts.push(f64s_to_le(
                &measurements(k as u64, ctx.iteration(), m).map_err(failed)?,
            ));
        }
        let names: Vec<&str> = outs.iter().map(|o| o.0).collect();
        let views: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        ctx.scatter(&names, &views)
    }
}

/// The Kalman filter on a CPU: its state lives in the task.
struct KalmanTask {
    state: KfState,
}

impl CpuTask for KalmanTask {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let (inputs, outputs) = (ctx.inputs(), ctx.outputs());
        let (&[from], &[to]) = (inputs.as_slice(), outputs.as_slice()) else {
            return Err(failed(format!(
                "a kalman task has one input and one output, this one {} and {}",
                inputs.len(),
                outputs.len()
            )));
        };
        let block = ctx.recv(from)?;
        let out = kalman_message(&mut self.state, &block).map_err(failed)?;
        ctx.send(to, &out)
    }
}

/// The Kalman filter's board kernel: one input and one output of the same size, the
/// [`KfState`] in the state region. Every argument is checked before anything is
/// written.
fn kalman_kernel() -> Kernel {
    Kernel::new(
        KALMAN_KERNEL,
        KALMAN_TIMING,
        |words| {
            BoardArgs::from_words(words)
                .ok()
                .and_then(|a| a.inputs.first().map(|i| i.1 / 8))
                .unwrap_or(0)
        },
        |mem, words| {
            let args = checked_args("kalman", mem, words, Some(1), Some(1))?;
            let (input, output) = (args.inputs[0], args.outputs[0]);
            if args.state.1 != KF_STATE_BYTES {
                return Err(format!(
                    "kalman kernel: state region of {} bytes, it needs {KF_STATE_BYTES}",
                    args.state.1
                ));
            }
            if input.1 != output.1 {
                return Err(format!(
                    "kalman kernel: input of {} bytes but output of {}: a block of filtered positions is as long as its samples",
                    input.1, output.1
                ));
            }
            samples_per_block(input.1)?;
            let mut state = KfState::from_le_bytes(&read_region(mem, args.state)?)
                .ok_or("kalman kernel: unreadable state")?;
            let out = kalman_message(&mut state, &read_region(mem, input)?)?;
            mem.write(output.0, &out)?;
            mem.write(args.state.0, &state.to_le_bytes())
        },
    )
}

/// The tracker's check: its own filters, run on regenerated measurements, against the
/// blocks received. Iterations must come in order from 0 (the filters carry state).
#[derive(Debug, Clone, Default)]
pub struct TrackCheck {
    states: Vec<KfState>,
    iterations: u64,
    samples: usize,
    mismatches: u64,
    /// Over the last iteration: sum of squared errors (filtered, raw) and sample count.
    last_errors: (f64, f64, usize),
}

impl TrackCheck {
    /// A check before any iteration.
    pub fn new() -> TrackCheck {
        TrackCheck::default()
    }

    /// Checks one iteration's blocks (block `k` is target `k`'s filtered positions);
    /// `Ok(true)` if every block matched bit for bit. Errors for malformed blocks, a
    /// changing number of targets or an iteration out of order.
    pub fn check(
        &mut self,
        iteration: u64,
        blocks: &[Vec<u8>],
    ) -> std::result::Result<bool, String> {
        if iteration != self.iterations {
            return Err(format!(
                "tracker: iteration {iteration} after {} checked ones (they must come in order)",
                self.iterations
            ));
        }
        if self.states.is_empty() {
            self.states = vec![KfState::default(); blocks.len()];
        } else if self.states.len() != blocks.len() {
            return Err(format!(
                "tracker: {} blocks in iteration {iteration}, {} before",
                blocks.len(),
                self.states.len()
            ));
        }
        let mut all = true;
        let mut errors = (0.0, 0.0, 0usize);
        for (k, (block, state)) in blocks.iter().zip(&mut self.states).enumerate() {
            let m = samples_per_block(block.len() as u64)?;
            let z = measurements(k as u64, iteration, m)?;
            let mut want = vec![0.0; m];
            filter_block(state, &z, &mut want);
            let got = f64s_from_le(block);
            if f64s_to_le(&want) != *block {
                all = false;
                self.mismatches += 1;
            }
            let first = iteration * m as u64; // measurements() checked it
            for (j, (g, zj)) in got.iter().zip(&z).enumerate() {
                let t = truth(k as u64, first + j as u64);
                errors.0 += (g - t) * (g - t);
                errors.1 += (zj - t) * (zj - t);
            }
            errors.2 += m;
            self.samples = m;
        }
        self.last_errors = errors;
        self.iterations += 1;
        Ok(all)
    }

    /// `Some(true)` if at least one iteration was checked and every block matched, with
    /// a one-line summary (the last iteration's RMS position error, filtered and raw).
    pub fn outcome(&self) -> TaskOutcome {
        let (filtered, raw, n) = self.last_errors;
        let rms = |s: f64| if n == 0 { 0.0 } else { (s / n as f64).sqrt() };
        let matched = if self.iterations == 0 {
            "nothing checked".to_string()
        } else if self.mismatches == 0 {
            "every block matched".to_string()
        } else {
            format!("{} blocks differed from the reference", self.mismatches)
        };
        TaskOutcome {
            verified: Some(self.iterations > 0 && self.mismatches == 0),
            summary: format!(
                "{} targets, {} iterations of {} samples: {matched}; final position error {:.3} RMS (raw measurements {:.3})",
                self.states.len(),
                self.iterations,
                self.samples,
                rms(filtered),
                rms(raw)
            ),
        }
    }
}

/// The tracker: gathers every filter's block and checks it.
struct Tracker {
    check: TrackCheck,
}

impl CpuTask for Tracker {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let from = ctx.inputs();
        let blocks = ctx.gather(&from)?;
        self.check.check(ctx.iteration(), &blocks).map_err(failed)?;
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

    fn rms(a: &[f64], b: &[f64]) -> f64 {
        let s: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
        (s / a.len() as f64).sqrt()
    }

    #[test]
    fn the_filter_filters() {
        let m = 512;
        let mut state = KfState::default();
        let (mut filtered, mut raw) = (0.0, 0.0);
        for it in 0..40u64 {
            let z = measurements(1, it, m).unwrap();
            let mut out = vec![0.0; m];
            filter_block(&mut state, &z, &mut out);
            if it > 0 {
                let t: Vec<f64> = (0..m as u64).map(|j| truth(1, it * m as u64 + j)).collect();
                filtered += rms(&out, &t);
                raw += rms(&z, &t);
            }
        }
        // The raw error is the noise's (sigma 5); the filter must do far better.
        assert!(
            (raw / 39.0 - MEASUREMENT_SIGMA).abs() < 0.5,
            "raw {}",
            raw / 39.0
        );
        assert!(filtered < 0.3 * raw, "filtered {filtered} vs raw {raw}");
        assert!((state.v - (1.0 - 0.7)).abs() < 0.05, "velocity {}", state.v);
    }

    #[test]
    fn measurements_are_deterministic_and_distinct_per_target() {
        let a = measurements(0, 3, 16).unwrap();
        assert_eq!(a, measurements(0, 3, 16).unwrap());
        assert_ne!(a, measurements(2, 3, 16).unwrap());
        assert!(measurements(0, u64::MAX, 2).is_err());
    }

    /// Runs the kernel for iterations 0..n with the state region kept on the board, and
    /// compares each output with the CPU path.
    #[test]
    fn kernel_matches_the_cpu_filter_across_iterations() {
        let b = board();
        let m = 300usize;
        let bytes = 8 * m as u64;
        let (state, input, output) = ((0, KF_STATE_BYTES), (4096, bytes), (16384, bytes));
        let mut cpu = KfState::default();
        for it in 0..4u64 {
            let z = f64s_to_le(&measurements(2, it, m).unwrap());
            b.write(input.0, &z).unwrap();
            let args = BoardArgs {
                iteration: it,
                state,
                inputs: vec![input],
                outputs: vec![output],
            };
            let done = run(&b, KALMAN_KERNEL, &args.to_words()).unwrap();
            assert_eq!(done.elements, m as u64);
            let want = kalman_message(&mut cpu, &z).unwrap();
            assert_eq!(read(&b, output.0, 8 * m), want, "iteration {it}");
            assert_eq!(read(&b, 0, 48), cpu.to_le_bytes());
        }
    }

    #[test]
    fn kernel_refuses_bad_args_and_writes_nothing() {
        let b = board();
        b.write(0, &[0xAB; 8192]).unwrap();
        let good = BoardArgs {
            iteration: 0,
            state: (0, KF_STATE_BYTES),
            inputs: vec![(1024, 64)],
            outputs: vec![(2048, 64)],
        };
        let cases = [
            (
                BoardArgs {
                    state: (0, 40),
                    ..good.clone()
                },
                "state region",
            ),
            (
                BoardArgs {
                    outputs: vec![(2048, 56)],
                    ..good.clone()
                },
                "as long as its samples",
            ),
            (
                BoardArgs {
                    inputs: vec![(1024, 60)],
                    outputs: vec![(2048, 60)],
                    ..good.clone()
                },
                "multiple of 8",
            ),
            (
                BoardArgs {
                    outputs: vec![(2048, 64), (4096, 64)],
                    ..good.clone()
                },
                "2 outputs",
            ),
            (
                BoardArgs {
                    outputs: vec![(MEMORY - 8, 64)],
                    ..good.clone()
                },
                "board end",
            ),
        ];
        for (args, why) in cases {
            let e = run(&b, KALMAN_KERNEL, &args.to_words()).unwrap_err();
            assert!(e.to_string().contains(why), "{args:?}: {e}");
        }
        assert_eq!(read(&b, 0, 8192), vec![0xAB; 8192]);
        // The good arguments work (so the cases above failed for their own reason).
        b.write(0, &[0; 48]).unwrap();
        run(&b, KALMAN_KERNEL, &good.to_words()).unwrap();
    }

    #[test]
    fn tracker_check_accepts_the_filters_and_rejects_one_flipped_bit() {
        let m = 128;
        let mut filters = [KfState::default(); 3];
        let mut check = TrackCheck::new();
        for it in 0..5u64 {
            let mut blocks: Vec<Vec<u8>> = (0..3)
                .map(|k| {
                    let z = f64s_to_le(&measurements(k, it, m).unwrap());
                    kalman_message(&mut filters[k as usize], &z).unwrap()
                })
                .collect();
            if it == 3 {
                blocks[1][77] ^= 1;
            }
            assert_eq!(check.check(it, &blocks).unwrap(), it != 3);
        }
        let o = check.outcome();
        assert_eq!(o.verified, Some(false));
        assert!(o.summary.contains("1 blocks differed"), "{}", o.summary);
        assert!(check.check(9, &[]).is_err());

        let mut fresh = TrackCheck::new();
        assert_eq!(fresh.outcome().verified, Some(false));
        let mut f = KfState::default();
        let z = f64s_to_le(&measurements(0, 0, m).unwrap());
        let block = kalman_message(&mut f, &z).unwrap();
        assert!(fresh.check(0, &[block]).unwrap());
        let o = fresh.outcome();
        assert_eq!(o.verified, Some(true));
        assert!(
            o.summary
                .starts_with("1 targets, 1 iterations of 128 samples: every block matched"),
            "{}",
            o.summary
        );
    }
}
