//! Similarity, result records and top-k.
//!
//! This module owns what a result is: the similarity of two feature vectors is the sum
//! of absolute differences ([`sad`]; smaller is more similar), and a result is packed in
//! one `u64` record `distance << 32 | image id` ([`record`]), so that sorting records
//! sorts by distance and then by id, the same way on every PE and in the serial check.

use super::correlogram::Features;
use serde::Serialize;

/// The sum of absolute differences of two feature vectors (saturating at `u32::MAX`,
/// which no pair of 128 x 128 images reaches).
///
/// ```
/// use shmemplus_apps::cbir::{correlogram::FEATURES, search::sad};
/// let (mut a, mut b) = ([0u32; FEATURES], [0u32; FEATURES]);
/// a[0] = 10;
/// b[0] = 4;
/// b[5] = 3;
/// assert_eq!(sad(&a, &b), 9);
/// assert_eq!(sad(&a, &a), 0);
/// ```
pub fn sad(a: &Features, b: &Features) -> u32 {
    let sum: u64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| u64::from(x.abs_diff(y)))
        .sum();
    u32::try_from(sum).unwrap_or(u32::MAX)
}

/// The record of image `id` at `distance` from the query.
///
/// ```
/// use shmemplus_apps::cbir::search::{record, unpack};
/// assert_eq!(unpack(record(7, 42)), (7, 42));
/// assert!(record(1, 1000) < record(2, 0));
/// assert!(record(1, 3) < record(1, 4));
/// ```
pub fn record(distance: u32, id: u32) -> u64 {
    (u64::from(distance) << 32) | u64::from(id)
}

/// `(distance, id)` of a record.
pub fn unpack(record: u64) -> (u32, u32) {
    ((record >> 32) as u32, record as u32)
}

/// One result of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Hit {
    /// The image's index in the database.
    pub id: u32,
    /// Its distance to the query.
    pub distance: u32,
}

/// Sorts `records` and returns the first `k` as hits (fewer if there are fewer).
///
/// ```
/// use shmemplus_apps::cbir::search::{record, top_k};
/// let mut r = vec![record(5, 0), record(1, 3), record(5, 2), record(0, 9)];
/// let hits = top_k(&mut r, 3);
/// assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [9, 3, 0]);
/// ```
pub fn top_k(records: &mut [u64], k: usize) -> Vec<Hit> {
    records.sort_unstable();
    records
        .iter()
        .take(k)
        .map(|&r| {
            let (distance, id) = unpack(r);
            Hit { id, distance }
        })
        .collect()
}

/// Keeps the `k` smallest records seen so far (for a streaming serial search that
/// never holds every record).
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
    best: std::collections::BinaryHeap<u64>,
}

impl TopK {
    /// An empty selection of at most `k` records.
    pub fn new(k: usize) -> TopK {
        TopK {
            k,
            // k comes from the user: do not reserve for an absurd one.
            best: std::collections::BinaryHeap::with_capacity(k.min(1 << 16) + 1),
        }
    }

    /// Offers one record.
    pub fn push(&mut self, record: u64) {
        if self.best.len() < self.k {
            self.best.push(record);
        } else if self.best.peek().is_some_and(|&worst| record < worst) {
            self.best.pop();
            self.best.push(record);
        }
    }

    /// The selection as hits, best first.
    pub fn into_hits(self) -> Vec<Hit> {
        let mut v = self.best.into_vec();
        top_k(&mut v, usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_top_k_equals_sorting() {
        let mut rng = crate::rng::SplitMix::new(3, 3);
        let mut all: Vec<u64> = (0..500)
            .map(|id| record(rng.below(50) as u32, id))
            .collect();
        for k in [0, 1, 7, 500, 600, usize::MAX] {
            let mut t = TopK::new(k);
            for &r in &all {
                t.push(r);
            }
            assert_eq!(t.into_hits(), top_k(&mut all.clone(), k), "k = {k}");
        }
        all.clear();
        assert!(top_k(&mut all, 3).is_empty());
    }
}
