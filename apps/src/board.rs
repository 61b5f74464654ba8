//! The timing of the applications' board kernels: a RATSS node model (docs/model.md
//! §6, `t = PL / F + N * ops_per_element / (F * R)`) whose throughput is a chosen multiple
//! of the CPU path's.
//!
//! This module owns the translation of "the board is S times faster than one CPU core"
//! into RATSS parameters: the pipeline latency `PL`, the clock `F` and the operations per
//! element are fixed by the kernel; the operations per cycle `R` are derived so that one
//! element takes `cpu_seconds_per_element / S` on the board. It must not run kernels or
//! measure anything itself (the binaries measure the CPU path and pass it in).

use shmemplus::fpga_mock::KernelTiming;

/// Clock of the mock kernels: 150 MHz, a typical clock of the SHMEM+ era's
/// Stratix-III designs.
pub const KERNEL_CLOCK_HZ: f64 = 150e6;

/// What a board kernel's timing is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoardSpeed {
    /// Measured (or given) seconds the CPU path spends per element.
    pub cpu_seconds_per_element: f64,
    /// How many times faster than one CPU core the board processes elements.
    pub speedup: f64,
}

impl BoardSpeed {
    /// The RATSS timing of a kernel with pipeline latency `pipeline_latency_cycles` and
    /// `ops_per_element` operations per element at [`KERNEL_CLOCK_HZ`], with `R` chosen
    /// so that one element takes `cpu_seconds_per_element / speedup`.
    ///
    /// ```
    /// use shmemplus_apps::board::BoardSpeed;
    /// let speed = BoardSpeed { cpu_seconds_per_element: 20e-9, speedup: 10.0 };
    /// let t = speed.timing(100.0, 32.0).unwrap();
    /// // 1e6 elements: 100 cycles of latency + 1e6 * 2 ns.
    /// assert!((t.seconds(1_000_000) - (100.0 / 150e6 + 2e-3)).abs() < 1e-12);
    /// ```
    pub fn timing(
        &self,
        pipeline_latency_cycles: f64,
        ops_per_element: f64,
    ) -> Result<KernelTiming, String> {
        let (cpu, s) = (self.cpu_seconds_per_element, self.speedup);
        if !(cpu.is_finite() && cpu > 0.0) {
            return Err(format!(
                "the CPU time per element must be finite and > 0, got {cpu} s"
            ));
        }
        if !(s.is_finite() && s > 0.0) {
            return Err(format!("the board speedup must be finite and > 0, got {s}"));
        }
        let board_seconds_per_element = cpu / s;
        let timing = KernelTiming {
            pipeline_latency_cycles,
            clock_hz: KERNEL_CLOCK_HZ,
            ops_per_element,
            ops_per_cycle: ops_per_element / (KERNEL_CLOCK_HZ * board_seconds_per_element),
        };
        timing.validate()?;
        Ok(timing)
    }
}

/// Measures `work` (which processes `elements` elements) `reps` times and returns the
/// fastest run's seconds per element: the CPU path's speed on an unloaded core, as far
/// as a shared machine allows.
pub fn seconds_per_element(elements: u64, reps: u32, mut work: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let t = std::time::Instant::now();
        work();
        best = best.min(t.elapsed().as_secs_f64());
    }
    // A clock that did not move still gives a positive time.
    best.max(1e-9) / elements.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speedup_scales_the_modeled_time() {
        let slow = BoardSpeed {
            cpu_seconds_per_element: 1e-6,
            speedup: 1.0,
        }
        .timing(0.0, 5.0)
        .unwrap();
        let fast = BoardSpeed {
            cpu_seconds_per_element: 1e-6,
            speedup: 40.0,
        }
        .timing(0.0, 5.0)
        .unwrap();
        assert!((slow.seconds(1000) - 1e-3).abs() < 1e-12);
        assert!((fast.seconds(1000) - 1e-3 / 40.0).abs() < 1e-12);
        // The RATSS form of the library's model agrees.
        let t = shmemplus::model::kernel_time(
            fast.pipeline_latency_cycles,
            fast.clock_hz,
            1000,
            fast.ops_per_element,
            fast.ops_per_cycle,
        )
        .unwrap();
        assert!((t - fast.seconds(1000)).abs() < 1e-15);
    }

    #[test]
    fn bad_speeds_are_refused() {
        for (cpu, s) in [
            (0.0, 1.0),
            (1e-9, 0.0),
            (f64::NAN, 1.0),
            (1e-9, f64::INFINITY),
        ] {
            let speed = BoardSpeed {
                cpu_seconds_per_element: cpu,
                speedup: s,
            };
            assert!(speed.timing(1.0, 1.0).is_err(), "{speed:?}");
        }
    }

    #[test]
    fn measuring_gives_a_positive_time() {
        let mut x = 0u64;
        let t = seconds_per_element(100, 2, || {
            for i in 0..100 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
        });
        assert!(t > 0.0 && t.is_finite());
    }
}
