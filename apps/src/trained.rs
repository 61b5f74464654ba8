//! The applications' `--trained FILE`: FastFit's lines kept from one job to the next
//! (a [`Trained`] as the JSON its `Serialize` writes).
//!
//! This module owns reading and writing that file and the report's entry about it. It
//! must not decide when a loop uses the lines (the applications do) nor judge them
//! (`Trained::from_json` does).

use anyhow::{Context, Result};
use serde::Serialize;
use shmemplus_cosched::Trained;
use std::path::Path;

/// What a run did with its `--trained` file (the JSON report's `trained` field).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainedFile {
    /// The file.
    pub path: String,
    /// The boards started from the file's lines (it existed).
    pub started_trained: bool,
    /// This run's lines were written to it (its boards trained or refined them).
    pub written: bool,
}

impl TrainedFile {
    /// The text report's line.
    pub fn line(&self) -> String {
        format!(
            "trained lines ({}): {}; {}",
            self.path,
            if self.started_trained {
                "the boards started from them"
            } else {
                "none yet, the boards trained"
            },
            if self.written {
                "this run's written back"
            } else {
                "nothing written (no board finished training)"
            }
        )
    }
}

/// The lines in `path`, or `None` if it does not exist. A file that cannot be read
/// or holds no usable lines is an error naming it.
///
/// ```
/// use shmemplus_apps::trained;
/// let path = std::env::temp_dir().join(format!("trained-doc-{}.json", std::process::id()));
/// assert!(trained::read(&path)?.is_none());
/// std::fs::write(&path, "not json")?;
/// assert!(trained::read(&path).is_err());
/// std::fs::remove_file(&path)?;
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn read(path: &Path) -> Result<Option<Trained>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--trained: reading {}", path.display()))?;
    let lines =
        Trained::from_json(&text).with_context(|| format!("--trained {}", path.display()))?;
    Ok(Some(lines))
}

/// Writes `lines` (if the run has any) to `path`, and says what the run did with the
/// file (`started_trained`: its boards started from it).
pub fn write(path: &Path, started_trained: bool, lines: Option<&Trained>) -> Result<TrainedFile> {
    if let Some(lines) = lines {
        std::fs::write(path, serde_json::to_string_pretty(lines)?)
            .with_context(|| format!("--trained: writing {}", path.display()))?;
    }
    Ok(TrainedFile {
        path: path.display().to_string(),
        started_trained,
        written: lines.is_some(),
    })
}
