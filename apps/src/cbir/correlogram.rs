//! The colour auto-correlogram: for each colour `c` and distance `d` in [`DISTANCES`],
//! the number of (pixel, neighbour) pairs where the pixel has colour `c` and its
//! neighbour at distance `d`, in one of the 8 directions (left, right, up, down and the
//! four diagonals: offsets `(±d, 0)`, `(0, ±d)`, `(±d, ±d)`), has colour `c` too.
//!
//! This module owns the features' definition and layout and the fast scan that computes
//! them. It is the one implementation used by the CPU path, the board kernel and the
//! serial check.
//!
//! The scan is O(pixels x |D| x 8) in the straightforward form; it uses the symmetry of
//! the pairs (a match at offset `+o` from `p` is a match at `-o` from `p + o`, with the
//! same colour at both ends) to compare only the 4 offsets `(d, 0)`, `(0, d)`, `(d, d)`,
//! `(-d, d)` and count each match twice. The counters live on the stack, split in
//! [`LANES`] interleaved tables so that runs of one colour do not chain their increments
//! through one memory word; nothing is allocated.

use super::palette::COLOURS;

/// The distances of the correlogram, in pixels (L-infinity).
pub const DISTANCES: [usize; 4] = [1, 3, 5, 7];
/// Length of a feature vector: one counter per (colour, distance).
pub const FEATURES: usize = COLOURS * DISTANCES.len();
/// A feature vector: entry `c * DISTANCES.len() + k` counts colour `c` at distance
/// `DISTANCES[k]`.
pub type Features = [u32; FEATURES];

/// Interleaved counter tables per distance.
const LANES: usize = 4;

/// Counters of one distance: `LANES` tables of one counter per byte value (values of 64
/// and above, which are not palette indices, are counted here and then ignored).
type Tables = [[u32; 256]; LANES];

/// The feature index of colour `c` at the `k`-th distance.
pub fn feature_index(c: usize, k: usize) -> usize {
    c * DISTANCES.len() + k
}

/// The correlogram of a `width` x `height` row-major image.
///
/// # Panics
/// If `pixels.len() != width * height` (a programmer's error: images are checked
/// where they are made).
///
/// ```
/// use shmemplus_apps::cbir::correlogram::{correlogram, feature_index};
/// // A 2 x 2 image of one colour: at distance 1 every pixel has 3 neighbours.
/// let f = correlogram(&[5, 5, 5, 5], 2, 2);
/// assert_eq!(f[feature_index(5, 0)], 12);
/// assert_eq!(f.iter().sum::<u32>(), 12);
/// ```
pub fn correlogram(pixels: &[u8], width: usize, height: usize) -> Features {
    assert_eq!(
        pixels.len(),
        width * height,
        "correlogram of a {width}x{height} image needs {} pixels",
        width * height
    );
    let mut features = [0u32; FEATURES];
    let mut tables: Tables = [[0; 256]; LANES];
    for (k, &d) in DISTANCES.iter().enumerate() {
        for lane in tables.iter_mut() {
            lane.fill(0);
        }
        let di = d as isize;
        for (dx, dy) in [(di, 0), (0, d), (di, d), (-di, d)] {
            count_offset(pixels, width, height, dx, dy, &mut tables);
        }
        for (c, chunk) in features.chunks_exact_mut(DISTANCES.len()).enumerate() {
            let matches: u32 = tables.iter().map(|t| t[c]).sum();
            // Each unordered pair was seen once; both of its pixels count it.
            chunk[k] = 2 * matches;
        }
    }
    features
}

/// Adds, for every pixel `p` with `p + (dx, dy)` inside the image and of the same
/// colour, one to that colour's counter.
fn count_offset(
    pixels: &[u8],
    width: usize,
    height: usize,
    dx: isize,
    dy: usize,
    tables: &mut Tables,
) {
    let adx = dx.unsigned_abs();
    if dy >= height || adx >= width {
        return;
    }
    for y in 0..height - dy {
        let row = &pixels[y * width..(y + 1) * width];
        let below = &pixels[(y + dy) * width..(y + dy + 1) * width];
        // Pair row[x] with below[x + dx].
        let (a, b) = if dx >= 0 {
            (&row[..width - adx], &below[adx..])
        } else {
            (&row[adx..], &below[..width - adx])
        };
        let mut ca = a.chunks_exact(LANES);
        let mut cb = b.chunks_exact(LANES);
        for (pa, pb) in (&mut ca).zip(&mut cb) {
            for lane in 0..LANES {
                let (p, q) = (pa[lane], pb[lane]);
                tables[lane][usize::from(p)] += u32::from(p == q);
            }
        }
        for (&p, &q) in ca.remainder().iter().zip(cb.remainder()) {
            tables[0][usize::from(p)] += u32::from(p == q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix;

    /// The definition, literally: every pixel, every distance, all 8 directions.
    fn naive(pixels: &[u8], w: usize, h: usize) -> Features {
        let mut f = [0u32; FEATURES];
        for y in 0..h as isize {
            for x in 0..w as isize {
                let c = pixels[(y as usize) * w + x as usize];
                for (k, &d) in DISTANCES.iter().enumerate() {
                    let d = d as isize;
                    for (ox, oy) in [
                        (d, 0),
                        (-d, 0),
                        (0, d),
                        (0, -d),
                        (d, d),
                        (d, -d),
                        (-d, d),
                        (-d, -d),
                    ] {
                        let (nx, ny) = (x + ox, y + oy);
                        if nx >= 0
                            && ny >= 0
                            && nx < w as isize
                            && ny < h as isize
                            && pixels[ny as usize * w + nx as usize] == c
                        {
                            f[feature_index(c as usize, k)] += 1;
                        }
                    }
                }
            }
        }
        f
    }

    #[test]
    fn uniform_4x4_by_hand() {
        // One colour everywhere. Distance 1: 12 horizontal + 12 vertical + 9 + 9
        // diagonal unordered pairs, each counted from both ends: 84. Distance 3: 4
        // horizontal + 4 vertical + 1 + 1 diagonal pairs: 20. Distances 5 and 7 do not
        // fit in 4 x 4.
        let f = correlogram(&[9; 16], 4, 4);
        assert_eq!(f[feature_index(9, 0)], 84);
        assert_eq!(f[feature_index(9, 1)], 20);
        assert_eq!(f[feature_index(9, 2)], 0);
        assert_eq!(f[feature_index(9, 3)], 0);
        assert_eq!(f.iter().sum::<u32>(), 104);
    }

    #[test]
    fn checkerboard_4x4_by_hand() {
        // Colour (x + y) % 2. Horizontal and vertical neighbours at odd distances always
        // differ; diagonal neighbours always match.
        // Distance 1, direction (1, 1): 9 pairs starting at (x, y) in 0..3 x 0..3, of
        // which 5 have x + y even (colour 0) and 4 odd (colour 1). Direction (-1, 1): 9
        // pairs starting at x in 1..4, y in 0..3: 4 even, 5 odd. So colour 0 has
        // 2 * (5 + 4) = 18, and colour 1 has 2 * (4 + 5) = 18.
        // Distance 3: only (0,0)-(3,3) (colour 0) and (3,0)-(0,3) (colour 1): 2 each.
        let px: Vec<u8> = (0..16).map(|i| ((i % 4 + i / 4) % 2) as u8).collect();
        let f = correlogram(&px, 4, 4);
        assert_eq!(f[feature_index(0, 0)], 18);
        assert_eq!(f[feature_index(1, 0)], 18);
        assert_eq!(f[feature_index(0, 1)], 2);
        assert_eq!(f[feature_index(1, 1)], 2);
        assert_eq!(f.iter().sum::<u32>(), 40);
    }

    #[test]
    fn mixed_4x4_by_hand() {
        // 0 0 1 1
        // 0 0 1 1
        // 2 2 2 2
        // 3 2 2 2
        // Colour 0 (the 2 x 2 block top left), distance 1: 4 unordered pairs inside the
        // block (2 horizontal, 2 vertical) + 2 diagonal = 6 -> 12. Colour 1: same, 12.
        // Colour 2 (row 2 and row 3 from x = 1), distance 1: horizontal 3 + 2 = 5,
        // vertical (x=1..3 between rows 2 and 3) 3, diagonal (1,1): (0,2)-(1,3),
        // (1,2)-(2,3), (2,2)-(3,3) = 3, anti-diagonal (-1,1): (2,2)-(1,3), (3,2)-(2,3) =
        // 2; total 13 -> 26. Colour 3 is alone: 0.
        // Distance 3: colour 2 has (0,2)-(3,2) only -> 2; colours 0 and 1 none; colour 3
        // none.
        #[rustfmt::skip]
        let px = [
            0, 0, 1, 1,
            0, 0, 1, 1,
            2, 2, 2, 2,
            3, 2, 2, 2,
        ];
        let f = correlogram(&px, 4, 4);
        assert_eq!(f[feature_index(0, 0)], 12);
        assert_eq!(f[feature_index(1, 0)], 12);
        assert_eq!(f[feature_index(2, 0)], 26);
        assert_eq!(f[feature_index(3, 0)], 0);
        assert_eq!(f[feature_index(2, 1)], 2);
        assert_eq!(f.iter().sum::<u32>(), 52);
        assert_eq!(f, naive(&px, 4, 4));
    }

    #[test]
    fn fast_scan_equals_the_definition() {
        let mut rng = SplitMix::new(42, 0);
        for (w, h, colours) in [(1, 1, 2), (3, 7, 2), (9, 9, 3), (17, 11, 4), (128, 128, 64)] {
            let px: Vec<u8> = (0..w * h).map(|_| rng.below(colours) as u8).collect();
            assert_eq!(correlogram(&px, w, h), naive(&px, w, h), "{w}x{h}");
        }
    }

    #[test]
    #[should_panic(expected = "needs 16 pixels")]
    fn wrong_size_is_a_programmer_error() {
        correlogram(&[0; 15], 4, 4);
    }
}
