//! The applications' `--trained FILE`: FastFit's lines kept from one job to the next
//! (a [`Trained`] as the JSON its `Serialize` writes), with the [`Setting`] they were
//! learned in: a run of another setting refuses them rather than use them.
//!
//! This module owns reading and writing that file and the report's entry about it. It
//! must not decide when a loop uses the lines (the applications do) nor judge them
//! (`Trained::from_json` does).

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use shmemplus_cosched::Trained;
use std::path::Path;

/// What the lines were learned on. A file's lines are used only by a run of the same
/// setting: a board's line depends on the kernel, the profile's costs, the clock, how
/// many boards share a node and its driver, and how many iterations a loop has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    /// The application (`cbir`, `fft2d`).
    pub app: String,
    /// Its work, in its words (`2000 images, boards 20x a CPU core`).
    pub work: String,
    /// The cluster profile's name.
    pub profile: String,
    /// The job clock (`wall`, `virtual`).
    pub clock: String,
    /// PEs in the job.
    pub pes: u32,
    /// PEs per node.
    pub pes_per_node: u32,
    /// Boards per node.
    pub boards_per_node: u32,
}

impl Setting {
    /// The setting of `app` doing `work` in this job (its profile, clock, PEs and
    /// boards come from `shmem`).
    pub fn of_job(shmem: &shmemplus::Shmem, app: &str, work: String) -> Setting {
        let topo = shmem.topology();
        Setting {
            app: app.into(),
            work,
            profile: shmem.profile().name.clone(),
            clock: shmem.clock().name().into(),
            pes: topo.n_pes,
            pes_per_node: topo.pes_per_node,
            boards_per_node: shmem.fpgas(),
        }
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} on {}, profile {}, {} clock, {} PEs ({} per node), {} board(s) per node",
            self.app,
            self.work,
            self.profile,
            self.clock,
            self.pes,
            self.pes_per_node,
            self.boards_per_node
        )
    }
}

/// The file: the setting and the lines.
#[derive(Serialize)]
struct Stored<'a> {
    setting: &'a Setting,
    lines: &'a Trained,
}

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

/// The lines in `path` for a run of `setting`, or `None` if the file does not exist.
/// A file that cannot be read, holds no usable lines, or was written by a run of
/// another setting is an error naming it.
///
/// ```
/// use shmemplus_apps::trained::{self, Setting};
/// let path = std::env::temp_dir().join(format!("trained-doc-{}.json", std::process::id()));
/// let setting = Setting {
///     app: "cbir".into(),
///     work: "2000 images, boards 20x a CPU core".into(),
///     profile: "native".into(),
///     clock: "virtual".into(),
///     pes: 4,
///     pes_per_node: 1,
///     boards_per_node: 1,
/// };
/// assert!(trained::read(&path, &setting)?.is_none());
/// std::fs::write(&path, "not json")?;
/// assert!(trained::read(&path, &setting).is_err());
/// std::fs::remove_file(&path)?;
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn read(path: &Path, setting: &Setting) -> Result<Option<Trained>> {
    if !path.exists() {
        return Ok(None);
    }
    let name = path.display();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--trained: reading {name}"))?;
    let mut stored: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--trained {name}: not a file of trained lines"))?;
    let theirs: Setting = serde_json::from_value(stored["setting"].take())
        .with_context(|| format!("--trained {name}: no usable setting"))?;
    if &theirs != setting {
        bail!(
            "--trained {name}: its lines were learned by {theirs}; this run is {setting}: \
             give another file, or delete this one to train again"
        );
    }
    let lines = Trained::from_json(&stored["lines"].take().to_string())
        .with_context(|| format!("--trained {name}"))?;
    Ok(Some(lines))
}

/// Writes `lines` (if the run has any) with their `setting` to `path`, and says what
/// the run did with the file (`started_trained`: its boards started from it).
pub fn write(
    path: &Path,
    setting: &Setting,
    started_trained: bool,
    lines: Option<&Trained>,
) -> Result<TrainedFile> {
    if let Some(lines) = lines {
        let stored = Stored { setting, lines };
        std::fs::write(path, serde_json::to_string_pretty(&stored)?)
            .with_context(|| format!("--trained: writing {}", path.display()))?;
    }
    Ok(TrainedFile {
        path: path.display().to_string(),
        started_trained,
        written: lines.is_some(),
    })
}
