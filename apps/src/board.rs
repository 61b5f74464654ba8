//! The timing of the applications' board kernels: a RATSS node model (docs/model.md
//! §6, `t = PL / F + N * ops_per_element / (F * R)`) whose throughput is a chosen multiple
//! of the CPU path's.
//!
//! This module owns the translation of "the board is S times faster than one CPU core"
//! into RATSS parameters: the pipeline latency `PL`, the clock `F` and the operations per
//! element are fixed by the kernel; the operations per cycle `R` are derived so that one
//! element takes `cpu_seconds_per_element / S` on the board, and how the CPU path is
//! timed ([`seconds_per_element`], on the job clock: under virtual time the modeled
//! core, this host's CPU time divided by the profile's `cpu_speed`). It must not run
//! kernels (the binaries do, and pass the CPU path's speed in).

use shmemplus::config::ClockKind;
use shmemplus::fpga_mock::KernelTiming;
use shmemplus::Shmem;

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

/// Measures `work` (which processes `elements` elements) `reps` times on the job clock
/// and returns the fastest run's seconds per element: on the wall clock the CPU path's
/// real speed on an unloaded core, as far as a shared machine allows; on the virtual
/// clock the modeled core's (this thread's CPU time divided by the profile's
/// `cpu_speed`), so that a board "S times faster than a CPU core" is S times faster
/// than the core being modeled.
pub fn seconds_per_element(shmem: &Shmem, elements: u64, reps: u32, mut work: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let t = shmem.now();
        work();
        best = best.min(shmem.now().saturating_sub(t).as_secs_f64());
    }
    // A clock that did not move still gives a positive time.
    best.max(1e-9) / elements.max(1) as f64
}

/// What [`seconds_per_element`] measured, for a report: this host's core in real time,
/// or the modeled core.
pub fn cpu_basis(shmem: &Shmem) -> String {
    match shmem.clock() {
        ClockKind::Wall => "this host's core, wall clock".into(),
        ClockKind::Virtual => format!(
            "the modeled core: host CPU time / cpu_speed {}",
            shmem.profile().cpu_speed
        ),
    }
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
    fn measuring_on_the_job_clock_gives_a_positive_time() {
        // The only test of this crate's unit tests that starts a (one-PE) job.
        let shmem = shmemplus::init().expect("a one-PE job");
        let mut x = 0u64;
        let t = seconds_per_element(&shmem, 100, 2, || {
            for i in 0..100_000 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
        });
        assert!(t > 0.0 && t.is_finite());
        assert!(cpu_basis(&shmem).contains("core"));
    }
}
