//! A tiny deterministic random generator (SplitMix64) and a stateless hash.
//!
//! This module owns reproducibility: the applications' data depend only on the seed and
//! on an element's index, never on the number of PEs or on a crate's version, so every
//! PE can generate its own share and the serial check can regenerate everything.

/// One SplitMix64 step of `x`: a good 64-bit mix, also usable as a stateless hash.
///
/// ```
/// use shmemplus_apps::rng::mix;
/// assert_ne!(mix(1), mix(2));
/// assert_eq!(mix(7), mix(7));
/// ```
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix {
    state: u64,
}

impl SplitMix {
    /// A generator for stream `stream` of seed `seed` (streams of one seed are
    /// independent).
    pub fn new(seed: u64, stream: u64) -> SplitMix {
        SplitMix {
            state: mix(seed ^ mix(stream.wrapping_add(0x5851_F42D_4C95_7F2D))),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }

    /// A number in `0..n` (`n > 0`; the tiny modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Puts `items` in a random order (Fisher-Yates: every order equally likely, up to
    /// `below`'s bias), the same order for the same generator state.
    ///
    /// ```
    /// use shmemplus_apps::rng::SplitMix;
    /// let mut v = [1, 2, 3, 4, 5];
    /// SplitMix::new(7, 0).shuffle(&mut v);
    /// let mut sorted = v;
    /// sorted.sort();
    /// assert_eq!(sorted, [1, 2, 3, 4, 5]);
    /// ```
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            // `i + 1` fits: `i < items.len() <= usize::MAX`.
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// A number in `[-1, 1)`.
    pub fn unit(&mut self) -> f32 {
        // 24 random bits: exactly representable in f32.
        ((self.next_u64() >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| SplitMix::new(1, 2).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = SplitMix::new(1, 2);
        let mut y = SplitMix::new(1, 3);
        assert_ne!(x.next_u64(), y.next_u64());
        for _ in 0..1000 {
            let u = x.unit();
            assert!((-1.0..1.0).contains(&u));
            assert!(x.below(10) < 10);
        }
    }

    #[test]
    fn a_shuffle_is_a_reproducible_permutation_that_reaches_every_order() {
        let order = |stream: u64| {
            let mut v: Vec<u32> = (0..6).collect();
            SplitMix::new(1, stream).shuffle(&mut v);
            v
        };
        assert_eq!(order(3), order(3));
        let mut sorted = order(3);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..6).collect::<Vec<_>>());
        // Over many streams every item lands in every position, and the orders differ.
        let orders: Vec<Vec<u32>> = (0..600).map(order).collect();
        for item in 0..6 {
            for at in 0..6 {
                assert!(orders.iter().any(|o| o[at] == item), "{item} never at {at}");
            }
        }
        let distinct: std::collections::HashSet<_> = orders.iter().collect();
        assert!(distinct.len() > 300, "{}", distinct.len());
        // Nothing to do for none or one item.
        SplitMix::new(1, 0).shuffle::<u8>(&mut []);
        let mut one = [9];
        SplitMix::new(1, 0).shuffle(&mut one);
        assert_eq!(one, [9]);
    }
}
