//! A directory of real images as a CBIR database: every `*.png`, `*.ppm`, `*.pgm`,
//! `*.pbm`, `*.pnm` file of one directory (not its subdirectories), in file-name order,
//! each decoded with the `image` crate, resampled to 128 x 128 (nearest neighbour) and
//! quantised to the 64-colour palette.
//!
//! This module owns reading images from disk and its errors ([`LoadError`]): a missing
//! or unreadable directory, a directory without images, and an image that cannot be
//! decoded are each reported with the path at fault. It must not decide which PE loads
//! which image.

use super::palette::quantise;
use super::{IndexedImage, PIXELS, SIDE};
use image::RgbImage;
use std::path::{Path, PathBuf};

/// File extensions the loader reads (case-insensitive).
pub const EXTENSIONS: [&str; 5] = ["png", "ppm", "pgm", "pbm", "pnm"];

/// Why images could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The directory could not be listed (missing, unreadable, ...).
    #[error("cannot read the image directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The path exists but is not a directory.
    #[error("{path} is not a directory (--dir wants a directory of images)")]
    NotADir {
        /// The path.
        path: PathBuf,
    },
    /// The directory holds no file with an image extension.
    #[error("no images (*.png, *.ppm, *.pgm, *.pbm, *.pnm) in {path}")]
    NoImages {
        /// The directory.
        path: PathBuf,
    },
    /// A file could not be read or decoded.
    #[error("cannot load the image {path}: {source}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        source: image::ImageError,
    },
}

/// The image files of one directory, in file-name order.
#[derive(Debug, Clone)]
pub struct ImageDir {
    dir: PathBuf,
    files: Vec<PathBuf>,
}

impl ImageDir {
    /// Lists the images of `dir` (nothing is decoded yet).
    pub fn open(dir: impl AsRef<Path>) -> Result<ImageDir, LoadError> {
        let dir = dir.as_ref().to_path_buf();
        let meta = std::fs::metadata(&dir).map_err(|source| LoadError::Dir {
            path: dir.clone(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(LoadError::NotADir { path: dir });
        }
        let entries = std::fs::read_dir(&dir).map_err(|source| LoadError::Dir {
            path: dir.clone(),
            source,
        })?;
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| LoadError::Dir {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            let is_image = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)));
            // Follows symlinks: a link to an image counts, a link to a directory not.
            if is_image && path.is_file() {
                files.push(path);
            }
        }
        if files.is_empty() {
            return Err(LoadError::NoImages { path: dir });
        }
        files.sort();
        Ok(ImageDir { dir, files })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there is no image (never, for an opened directory).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The file of image `i`.
    pub fn path(&self, i: usize) -> Option<&Path> {
        self.files.get(i).map(PathBuf::as_path)
    }

    /// Loads image `i` (`i < len()`).
    pub fn load(&self, i: usize) -> Result<IndexedImage, LoadError> {
        match self.files.get(i) {
            Some(path) => load_image(path),
            None => Err(LoadError::Decode {
                path: self.dir.join(format!("#{i}")),
                source: image::ImageError::IoError(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the directory has {} images", self.files.len()),
                )),
            }),
        }
    }
}

/// Loads one image file, resampled and quantised.
pub fn load_image(path: impl AsRef<Path>) -> Result<IndexedImage, LoadError> {
    let path = path.as_ref();
    let decode_err = |source| LoadError::Decode {
        path: path.to_path_buf(),
        source,
    };
    let decoded = image::ImageReader::open(path)
        .map_err(|e| decode_err(image::ImageError::IoError(e)))?
        .with_guessed_format()
        .map_err(|e| decode_err(image::ImageError::IoError(e)))?
        .decode()
        .map_err(decode_err)?;
    Ok(from_rgb(&decoded.to_rgb8()))
}

/// Resamples an RGB image to 128 x 128 (nearest neighbour) and quantises it.
///
/// ```
/// use shmemplus_apps::cbir::loader::from_rgb;
/// let red = image::RgbImage::from_pixel(3, 5, image::Rgb([250, 10, 10]));
/// assert!(from_rgb(&red).pixels().iter().all(|&p| p == 48));
/// ```
pub fn from_rgb(rgb: &RgbImage) -> IndexedImage {
    let (w, h) = (rgb.width() as usize, rgb.height() as usize);
    let mut px = vec![0u8; PIXELS];
    if w > 0 && h > 0 {
        for (y, row) in px.chunks_exact_mut(SIDE).enumerate() {
            let sy = (y * h / SIDE) as u32;
            for (x, p) in row.iter_mut().enumerate() {
                let sx = (x * w / SIDE) as u32;
                *p = quantise(rgb.get_pixel(sx, sy).0);
            }
        }
    }
    IndexedImage::from_indices(px)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbir::palette::colour;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "shmemplus-apps-loader-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn missing_directory() {
        let e = ImageDir::open("/nonexistent/shmemplus-images").unwrap_err();
        assert!(matches!(e, LoadError::Dir { .. }), "{e:?}");
        assert!(
            e.to_string().contains("/nonexistent/shmemplus-images"),
            "{e}"
        );
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let dir = scratch("file");
        let f = dir.join("x.png");
        std::fs::write(&f, b"").unwrap();
        let e = ImageDir::open(&f).unwrap_err();
        assert!(matches!(e, LoadError::NotADir { .. }), "{e:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_directory_without_images() {
        let dir = scratch("empty");
        std::fs::write(dir.join("notes.txt"), b"no images here").unwrap();
        std::fs::create_dir(dir.join("sub.png")).unwrap();
        let e = ImageDir::open(&dir).unwrap_err();
        assert!(matches!(e, LoadError::NoImages { .. }), "{e:?}");
        assert!(e.to_string().contains("no images"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn corrupt_and_truncated_images_name_the_file() {
        let dir = scratch("corrupt");
        let good = image::RgbImage::from_pixel(16, 16, image::Rgb(colour(21)));
        good.save(dir.join("a.png")).unwrap();
        // A PNG signature followed by garbage, and a PNG cut in half.
        std::fs::write(dir.join("b.png"), b"\x89PNG\r\n\x1a\ngarbage garbage").unwrap();
        let mut bytes = std::fs::read(dir.join("a.png")).unwrap();
        bytes.truncate(bytes.len() / 2);
        std::fs::write(dir.join("c.png"), &bytes).unwrap();
        std::fs::write(dir.join("d.ppm"), b"P6\n4 4\n255\nshort").unwrap();
        let images = ImageDir::open(&dir).unwrap();
        assert_eq!(images.len(), 4);
        assert!(images.load(0).unwrap().pixels().iter().all(|&p| p == 21));
        for i in 1..4 {
            let e = images.load(i).unwrap_err();
            let name = images.path(i).unwrap().display().to_string();
            assert!(matches!(e, LoadError::Decode { .. }), "{e:?}");
            assert!(e.to_string().contains(&name), "{e}");
        }
        assert!(images.load(9).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn png_and_ppm_load_resampled_in_name_order() {
        let dir = scratch("good");
        // 256 x 64: left half blue, right half green; as PPM and as PNG.
        let img = image::RgbImage::from_fn(256, 64, |x, _| {
            image::Rgb(if x < 128 { [0, 0, 255] } else { [0, 255, 0] })
        });
        img.save(dir.join("2.ppm")).unwrap();
        img.save(dir.join("1.PNG")).unwrap();
        let images = ImageDir::open(&dir).unwrap();
        assert_eq!(images.len(), 2);
        assert!(images.path(0).unwrap().ends_with("1.PNG"));
        for i in 0..2 {
            let px = images.load(i).unwrap();
            let row = &px.pixels()[..SIDE];
            assert!(row[..64].iter().all(|&p| p == 3), "{i}");
            assert!(row[64..].iter().all(|&p| p == 12), "{i}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
