//! The statistics and timing loops of `shmemplus bench`: median, nearest-rank
//! percentile, the stopwatch on the job clock, the median time per call of a batch,
//! and the same timed on every PE at once with the slowest PE's time max-reduced.
//!
//! Owns how a figure is taken from repetitions and which clock it is read on (always
//! the job clock, `Shmem::now`: real time under `--clock wall`, the PE's virtual time
//! under `--clock virtual`); it must not print, make records or know which operation
//! it times.

use std::time::Duration;

/// A stopwatch on the job clock of one PE.
pub(super) struct Stopwatch<'a> {
    shmem: &'a shmemplus::Shmem,
    start: Duration,
}

impl<'a> Stopwatch<'a> {
    /// Starts now on `shmem`'s job clock.
    pub(super) fn start(shmem: &'a shmemplus::Shmem) -> Self {
        Stopwatch {
            shmem,
            start: shmem.now(),
        }
    }

    /// Seconds on the job clock since [`Stopwatch::start`].
    pub(super) fn secs(&self) -> f64 {
        self.shmem.now().saturating_sub(self.start).as_secs_f64()
    }
}

/// Runs `f` with the computation between library calls counted on the virtual clock
/// (the bench turns that off for its whole run, so its figures are communication
/// only; the memcpy reference is computation, so it counts here). No effect on the
/// wall clock.
pub(super) fn counting_cpu<T>(shmem: &shmemplus::Shmem, f: impl FnOnce() -> T) -> T {
    shmem.count_cpu_time(true);
    let out = f();
    shmem.count_cpu_time(false);
    out
}

/// The median of `xs` (which it sorts).
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => xs[n / 2],
        _ => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// The `q` quantile (0..=1) of `sorted` (ascending), nearest rank.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Times `reps` repetitions of `batch` calls of `op` on the job clock and returns the
/// median seconds per call. `op` returns an error to abort.
pub(super) fn time_per_op(
    shmem: &shmemplus::Shmem,
    reps: usize,
    batch: usize,
    mut op: impl FnMut() -> shmemplus::Result<()>,
) -> shmemplus::Result<f64> {
    // Warm-up: one batch, untimed.
    for _ in 0..batch {
        op()?;
    }
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Stopwatch::start(shmem);
        for _ in 0..batch {
            op()?;
        }
        samples.push(t.secs() / batch as f64);
    }
    Ok(median(&mut samples))
}

/// Median times of an operation every PE runs at once.
pub(super) struct Together {
    /// This PE's own time per call.
    pub(super) own: f64,
    /// Per repetition the slowest PE's time per call (max-reduced over the PEs).
    pub(super) slowest: f64,
}

/// Every PE calls this together: one untimed batch, then `reps` times a `barrier_all`
/// and a timed batch of `batch` calls of `op`; each repetition's time per call is
/// max-reduced over the PEs (with `reduce` on `times`, two one-element f64 objects).
pub(super) fn time_together(
    shmem: &shmemplus::Shmem,
    times: (&shmemplus::SymVec<f64>, &shmemplus::SymVec<f64>),
    reps: usize,
    batch: usize,
    mut op: impl FnMut() -> shmemplus::Result<()>,
) -> shmemplus::Result<Together> {
    let team = shmem.team_world();
    let (src, dst) = times;
    shmem.barrier_all()?;
    for _ in 0..batch {
        op()?;
    }
    let (mut own, mut slowest) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        shmem.barrier_all()?;
        let t = Stopwatch::start(shmem);
        for _ in 0..batch {
            op()?;
        }
        let secs = t.secs() / batch as f64;
        own.push(secs);
        shmem.local_write(src, 0, &[secs])?;
        shmem.reduce(&team, dst, src, 1, shmemplus::ReduceOp::Max)?;
        slowest.push(shmem.local_read_one(dst, 0)?);
    }
    Ok(Together {
        own: median(&mut own),
        slowest: median(&mut slowest),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.99), 99.0);
        assert_eq!(percentile(&xs, 0.5), 50.0);
        assert_eq!(percentile(&xs, 1.0), 100.0);
        assert_eq!(percentile(&xs, 0.0), 1.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
