//! criterion benches for shmemplus: `cargo bench -p shmemplus-benches`.
//!
//! They run as a one-PE job (no launcher), so they measure the library's own overhead
//! on each path: argument checks, the shared-mapping copy, the AM round trip through
//! the rings and the progress thread, and collective allocation. Multi-PE figures come
//! from `shmemplus bench`, which launches a real job.
//!
//! The crate also builds `rma_bw` (`src/bin/rma_bw.rs`), the shmemplus twin of
//! `bench-oshmem/osh_rma.c`: OSU-style put/get between two PEs, run by
//! `bench-oshmem/rma.sh` in turn with the OSHMEM program; the co-scheduler's
//! benchmarks `cosched_overhead` and `fastfit_vs_oracle`; and `clock_noise`, the
//! host's stalls that the job clock counts as computation. This library holds what
//! those programs share (the median of their runs); it must not time anything.

/// The median of `values`: for an even count the upper of the two middle ones (a
/// value that was measured); NaN for none.
///
/// ```
/// use shmemplus_benches::median;
/// assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
/// assert!(median(Vec::new()).is_nan());
/// ```
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
