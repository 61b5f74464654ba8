//! The palette of the CBIR images: 64 colours, four levels (0, 85, 170, 255) of each of
//! red, green and blue, and the quantisation of an RGB colour to it.
//!
//! This module owns the meaning of a palette index. It must not know image sizes or
//! files.

/// Colours in the palette.
pub const COLOURS: usize = 64;

/// The palette index of an RGB colour: the top two bits of each channel,
/// `index = r2 * 16 + g2 * 4 + b2`.
///
/// ```
/// use shmemplus_apps::cbir::palette::{colour, quantise};
/// assert_eq!(quantise([0, 0, 0]), 0);
/// assert_eq!(quantise([255, 255, 255]), 63);
/// assert_eq!(quantise([255, 0, 0]), 48);
/// assert_eq!(quantise(colour(37)), 37);
/// ```
pub fn quantise([r, g, b]: [u8; 3]) -> u8 {
    ((r >> 6) << 4) | ((g >> 6) << 2) | (b >> 6)
}

/// The RGB colour of palette index `index` (below [`COLOURS`]).
pub fn colour(index: u8) -> [u8; 3] {
    let level = |v: u8| (v & 3) * 85;
    [level(index >> 4), level(index >> 2), level(index)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_round_trips() {
        for i in 0..COLOURS as u8 {
            assert_eq!(quantise(colour(i)), i);
        }
    }

    #[test]
    fn nearby_colours_share_an_index() {
        assert_eq!(quantise([10, 130, 250]), quantise([60, 180, 200]));
        assert_ne!(quantise([63, 0, 0]), quantise([64, 0, 0]));
    }
}
