//! The oracles' rounds (`cbir` and `fft2d` under `--schedule oracle`): the order in
//! which a round runs the configurations, and the medians of their runs.
//!
//! An oracle times every static split, the split for an assumed speed ratio and
//! FastFit in one job. Run once each in a fixed order, whatever runs last gains from
//! the job's drift (measured in the 2D FFT on native: the assumed split, set to the
//! very split the sweep had just run, took 0.86x its time there; in CBIR about
//! 0.99x). So each configuration runs `--oracle-rounds` times, every round in an
//! order of its own, and the oracle reports medians.
//!
//! This module owns that order and the medians. It must not run anything: the
//! binaries run the configurations, collectively, so every PE must compute the same
//! order; it is a function of the seed and the round alone.

use crate::rng::SplitMix;

/// The rounds an oracle runs when `--oracle-rounds` is not given.
pub const DEFAULT_ROUNDS: usize = 5;

/// The most rounds `--oracle-rounds` accepts.
pub const MAX_ROUNDS: usize = 1000;

/// The random stream of round 0's order (round `k` uses this plus `k`), apart from
/// the streams the applications' data use (image ids and row indices, below 2^32).
const ORDER_STREAM: u64 = 0x6F72_6465_7200_0000;

/// One configuration an oracle times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trial {
    /// The static split with `step` tenths (0 to 10) of the work on the CPUs.
    Split(u32),
    /// The static split for the speed ratio `--split-assume` gives (default
    /// `--board-speedup`).
    Assumed,
    /// FastFit (`fft2d` follows it with a run started from what it learned).
    Fastfit,
}

/// Every configuration an oracle times: the eleven splits (0% to 100% of the work
/// on the CPUs), the assumed split and FastFit.
///
/// ```
/// use shmemplus_apps::oracle::{trials, Trial};
/// let t = trials();
/// assert_eq!(t.len(), 13);
/// assert_eq!((t[0], t[10], t[12]), (Trial::Split(0), Trial::Split(10), Trial::Fastfit));
/// ```
pub fn trials() -> Vec<Trial> {
    (0..=10)
        .map(Trial::Split)
        .chain([Trial::Assumed, Trial::Fastfit])
        .collect()
}

/// `configs` in the order round `round` of a job of seed `seed` runs them: a random
/// permutation, a new one each round, the same for the same seed and round (on
/// every PE).
///
/// ```
/// use shmemplus_apps::oracle::round_order;
/// let configs = ["0%", "50%", "100%", "fastfit"];
/// let order = round_order(&configs, 1, 0);
/// assert_eq!(order, round_order(&configs, 1, 0));
/// let mut sorted = order.clone();
/// sorted.sort();
/// assert_eq!(sorted, ["0%", "100%", "50%", "fastfit"]);
/// ```
pub fn round_order<T: Clone>(configs: &[T], seed: u64, round: usize) -> Vec<T> {
    let mut order = configs.to_vec();
    SplitMix::new(seed, ORDER_STREAM.wrapping_add(round as u64)).shuffle(&mut order);
    order
}

/// The median of `v`: of an even number of values the upper of the two middle ones;
/// NaN for none.
///
/// ```
/// use shmemplus_apps::oracle::upper_median;
/// assert_eq!(upper_median(vec![3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(upper_median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
/// ```
pub fn upper_median(v: Vec<f64>) -> f64 {
    median_by(v, |&x| x).unwrap_or(f64::NAN)
}

/// The run of median `time` among `runs` (of an even number the upper of the two
/// middle ones, as [`upper_median`]), to report in full; `None` for no run.
///
/// ```
/// use shmemplus_apps::oracle::median_by;
/// let runs = vec![("a", 3.0), ("b", 1.0), ("c", 2.0)];
/// assert_eq!(median_by(runs, |r| r.1), Some(("c", 2.0)));
/// assert_eq!(median_by(Vec::<(&str, f64)>::new(), |r| r.1), None);
/// ```
pub fn median_by<T>(mut runs: Vec<T>, time: impl Fn(&T) -> f64) -> Option<T> {
    runs.sort_by(|a, b| time(a).total_cmp(&time(b)));
    let middle = runs.len() / 2;
    runs.into_iter().nth(middle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_runs_every_configuration_once_in_an_order_of_its_own() {
        let configs: Vec<u32> = (0..13).collect();
        let rounds: Vec<Vec<u32>> = (0..5).map(|k| round_order(&configs, 1, k)).collect();
        for order in &rounds {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, configs);
        }
        // A new order each round, the same for the same seed and round (every PE).
        assert!(rounds.windows(2).all(|w| w[0] != w[1]), "{rounds:?}");
        assert_eq!(round_order(&configs, 1, 3), rounds[3]);
        assert_ne!(round_order(&configs, 2, 3), rounds[3]);
        // The last configuration (FastFit's place in the fixed order) is not always
        // last: over twenty rounds it takes many places.
        let at: std::collections::HashSet<usize> = (0..20)
            .filter_map(|k| round_order(&configs, 1, k).iter().position(|&c| c == 12))
            .collect();
        assert!(at.len() >= 6, "{at:?}");
    }

    #[test]
    fn the_oracle_tries_every_split_the_assumed_split_and_fastfit_once_a_round() {
        let t = trials();
        assert_eq!(t.len(), 13);
        for step in 0..=10 {
            assert_eq!(t.iter().filter(|&&x| x == Trial::Split(step)).count(), 1);
        }
        assert_eq!(t.iter().filter(|&&x| x == Trial::Assumed).count(), 1);
        assert_eq!(t.iter().filter(|&&x| x == Trial::Fastfit).count(), 1);
    }

    #[test]
    fn the_median_run_is_the_middle_one_by_time() {
        let runs = vec![(0, 5.0), (1, 1.0), (2, 4.0), (3, 2.0)];
        // Of four, the upper middle: 4.0, as the median of the times.
        assert_eq!(median_by(runs.clone(), |r| r.1), Some((2, 4.0)));
        assert_eq!(upper_median(runs.iter().map(|r| r.1).collect()), 4.0);
        assert_eq!(median_by(vec![(7, 1.0)], |r| r.1), Some((7, 1.0)));
        assert!(upper_median(Vec::new()).is_nan());
    }
}
