//! The synthetic CBIR database: deterministic 128 x 128 colour-indexed images with a
//! known ground truth.
//!
//! Every image is a function of the seed and its index only, so each PE generates its
//! own share and the serial check regenerates any image. The query is an image of its
//! own (not in the database); near-duplicates of it (the query with a few dozen pixels
//! recoloured) are planted at known positions, one in each of `planted` equal stretches
//! of the database. All other images are independent random compositions of
//! rectangles and speckles, far from the query in correlogram distance.
//!
//! This module owns the images' content and the ground truth. It must not compute
//! features or know how images are distributed.

use super::palette::COLOURS;
use super::{IndexedImage, PIXELS, SIDE};
use crate::rng::{mix, SplitMix};

/// Stream number of the query's generator (image streams are the image indices).
const QUERY_STREAM: u64 = u64::MAX;

/// A synthetic database of `n_images` images for `seed`.
#[derive(Debug, Clone)]
pub struct Synthetic {
    seed: u64,
    n_images: u32,
    planted: Vec<u32>,
}

impl Synthetic {
    /// The database, with `planted` near-duplicates of the query (at most one per
    /// image).
    ///
    /// ```
    /// use shmemplus_apps::cbir::generator::Synthetic;
    /// let db = Synthetic::new(1, 1000, 5);
    /// assert_eq!(db.planted().len(), 5);
    /// assert!(db.planted().iter().all(|&i| i < 1000));
    /// assert_eq!(Synthetic::new(1, 3, 5).planted().len(), 3);
    /// ```
    pub fn new(seed: u64, n_images: u32, planted: u32) -> Synthetic {
        let p = planted.min(n_images);
        let planted = (0..p)
            .map(|i| {
                // Stretch i is [i * n / p, (i + 1) * n / p): one position in each.
                let lo = u64::from(i) * u64::from(n_images) / u64::from(p);
                let hi = u64::from(i + 1) * u64::from(n_images) / u64::from(p);
                (lo + mix(seed ^ mix(u64::from(i))) % (hi - lo).max(1)) as u32
            })
            .collect();
        Synthetic {
            seed,
            n_images,
            planted,
        }
    }

    /// Number of images in the database.
    pub fn len(&self) -> u32 {
        self.n_images
    }

    /// Whether the database has no image.
    pub fn is_empty(&self) -> bool {
        self.n_images == 0
    }

    /// Indices of the planted near-duplicates, increasing.
    pub fn planted(&self) -> &[u32] {
        &self.planted
    }

    /// The query image.
    pub fn query(&self) -> IndexedImage {
        let mut px = vec![0u8; PIXELS];
        compose(&mut SplitMix::new(self.seed, QUERY_STREAM), &mut px);
        image(px)
    }

    /// Image `id` of the database (`id < len()`).
    pub fn image(&self, id: u32) -> IndexedImage {
        let mut px = vec![0u8; PIXELS];
        self.fill(id, &mut px);
        image(px)
    }

    /// Writes image `id`'s pixels into `out` ([`PIXELS`] bytes), without allocating.
    ///
    /// # Panics
    /// If `out` is not [`PIXELS`] long.
    pub fn fill(&self, id: u32, out: &mut [u8]) {
        assert_eq!(out.len(), PIXELS, "an image needs {PIXELS} bytes");
        let mut rng = SplitMix::new(self.seed, u64::from(id));
        if self.planted.binary_search(&id).is_ok() {
            compose(&mut SplitMix::new(self.seed, QUERY_STREAM), out);
            // A near-duplicate: 20 to 79 pixels recoloured.
            for _ in 0..20 + rng.below(60) {
                out[rng.below(PIXELS as u64) as usize] = rng.below(COLOURS as u64) as u8;
            }
        } else {
            compose(&mut rng, out);
        }
    }
}

/// Generated pixels are palette indices by construction.
fn image(px: Vec<u8>) -> IndexedImage {
    IndexedImage::from_indices(px)
}

/// A random composition: a background, 8 to 19 rectangles, 200 speckles.
fn compose(rng: &mut SplitMix, out: &mut [u8]) {
    let colour = |rng: &mut SplitMix| rng.below(COLOURS as u64) as u8;
    out.fill(colour(rng));
    for _ in 0..8 + rng.below(12) {
        let c = colour(rng);
        let w = 4 + rng.below(60) as usize;
        let h = 4 + rng.below(60) as usize;
        let x0 = rng.below((SIDE - w + 1) as u64) as usize;
        let y0 = rng.below((SIDE - h + 1) as u64) as usize;
        for row in out.chunks_exact_mut(SIDE).skip(y0).take(h) {
            row[x0..x0 + w].fill(c);
        }
    }
    for _ in 0..200 {
        out[rng.below(PIXELS as u64) as usize] = colour(rng);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbir::correlogram::correlogram;
    use crate::cbir::search::sad;

    #[test]
    fn deterministic_and_seed_dependent() {
        let a = Synthetic::new(7, 100, 3);
        let b = Synthetic::new(7, 100, 3);
        let c = Synthetic::new(8, 100, 3);
        assert_eq!(a.image(42), b.image(42));
        assert_ne!(a.image(42), c.image(42));
        assert_ne!(a.image(42), a.image(43));
        assert_eq!(a.query(), b.query());
        assert_eq!(a.planted(), b.planted());
    }

    #[test]
    fn planted_images_are_the_nearest() {
        let db = Synthetic::new(11, 300, 4);
        let q = correlogram(db.query().pixels(), SIDE, SIDE);
        let d = |id| sad(&q, &correlogram(db.image(id).pixels(), SIDE, SIDE));
        let worst_planted = db.planted().iter().map(|&i| d(i)).max().unwrap();
        let best_other = (0..300)
            .filter(|i| !db.planted().contains(i))
            .map(d)
            .min()
            .unwrap();
        assert!(
            worst_planted * 4 < best_other,
            "planted up to {worst_planted}, others from {best_other}"
        );
    }

    #[test]
    fn planted_positions_are_distinct_and_spread() {
        for n in [1, 2, 5, 10, 22000] {
            let db = Synthetic::new(3, n, 5);
            let p = db.planted();
            assert!(p.windows(2).all(|w| w[0] < w[1]), "{p:?}");
            assert!(p.iter().all(|&i| i < n));
        }
    }
}
