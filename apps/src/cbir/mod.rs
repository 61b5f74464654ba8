//! Content-based image retrieval (CBIR), as in SHMEM+: find the database images most
//! similar to a query image by their colour auto-correlograms.
//!
//! Modules, each with one job:
//! - [`palette`]: the 64-colour palette and the quantisation of RGB to it;
//! - [`generator`]: the deterministic synthetic database, with near-duplicates of the
//!   query planted at known positions (the ground truth);
//! - [`loader`]: a directory of real images (PNG, PPM/PGM/PBM/PNM) resampled to
//!   128 x 128 and quantised to the palette;
//! - [`correlogram`]: the features (colour auto-correlogram at distances 1, 3, 5, 7);
//! - [`search`]: similarity (sum of absolute differences), result records and top-k;
//! - [`plan`]: which images each node, CPU and board gets;
//! - [`kernel`]: the correlogram board kernel and its bitfile;
//! - [`gather`]: the three ways of gathering the boards' results on the root (docs/model.md
//!   §4) and the model's prediction for each.
//!
//! An image is [`SIDE`] x [`SIDE`] pixels, one byte each, every byte a palette index
//! below [`palette::COLOURS`].

pub mod correlogram;
pub mod gather;
pub mod generator;
pub mod kernel;
pub mod loader;
pub mod palette;
pub mod plan;
pub mod search;

/// Width and height of every image, in pixels.
pub const SIDE: usize = 128;
/// Pixels (and bytes) of one image.
pub const PIXELS: usize = SIDE * SIDE;

/// A [`SIDE`] x [`SIDE`] colour-indexed image, row-major, every pixel a palette index.
#[derive(Clone, PartialEq, Eq)]
pub struct IndexedImage {
    pixels: Box<[u8]>,
}

impl IndexedImage {
    /// An image from [`PIXELS`] palette indices, or why they are not one.
    ///
    /// ```
    /// use shmemplus_apps::cbir::{IndexedImage, PIXELS};
    /// assert!(IndexedImage::new(vec![3; PIXELS]).is_ok());
    /// assert!(IndexedImage::new(vec![3; 10]).is_err());
    /// assert!(IndexedImage::new(vec![200; PIXELS]).is_err());
    /// ```
    pub fn new(pixels: Vec<u8>) -> Result<IndexedImage, String> {
        if pixels.len() != PIXELS {
            return Err(format!(
                "an image has {PIXELS} pixels, got {}",
                pixels.len()
            ));
        }
        if let Some(bad) = pixels.iter().find(|&&p| usize::from(p) >= palette::COLOURS) {
            return Err(format!(
                "pixel value {bad} is not a palette index (0..{})",
                palette::COLOURS
            ));
        }
        Ok(IndexedImage {
            pixels: pixels.into_boxed_slice(),
        })
    }

    /// An image from pixels that are palette indices by construction (the generator's,
    /// the quantiser's); checked in debug builds only.
    pub(crate) fn from_indices(pixels: Vec<u8>) -> IndexedImage {
        debug_assert_eq!(pixels.len(), PIXELS);
        debug_assert!(pixels.iter().all(|&p| usize::from(p) < palette::COLOURS));
        IndexedImage {
            pixels: pixels.into_boxed_slice(),
        }
    }

    /// The pixels, row-major.
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }
}

impl std::fmt::Debug for IndexedImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexedImage({SIDE}x{SIDE})")
    }
}
