//! What each device of a co-scheduled loop did, as the applications report it: one
//! line per CPU and board of the job (PE 0's view after `shmemplus_cosched::gather`),
//! for the text report and the JSON one, and the timeline file that `--devices`
//! writes.
//!
//! This module owns the lines' contents, their order and table, and the timeline's
//! file. It must not run or gather a loop (the applications do, through
//! `shmemplus_cosched`).

use crate::phases::ms;
use anyhow::Context;
use serde::Serialize;
use shmemplus_cosched::{Device, DeviceReport, StepTotals, Timeline};
use std::path::Path;

/// Puts the devices in report order: CPUs by PE, then boards by node and board.
pub fn sort(devices: &mut [DeviceReport]) {
    devices.sort_by_key(|d| match d.device {
        Device::Cpu { pe } => (0, pe, 0),
        Device::Board { node, board, .. } => (1, node, board),
    });
}

/// Writes `devices` as a [`Timeline`] titled `title` to `path` (JSON, for `shmemplus
/// cosched-plot`), with the job's clock.
pub fn write_timeline(
    path: &Path,
    title: String,
    shmem: &shmemplus::Shmem,
    devices: Vec<DeviceReport>,
) -> anyhow::Result<()> {
    let timeline = Timeline {
        title,
        clock: shmem.clock().name().to_string(),
        devices,
    };
    std::fs::write(path, serde_json::to_vec_pretty(&timeline)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// What one device did under FastFit.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceLine {
    /// The device, e.g. `PE 0 CPU` or `node 0 board 1 (PE 0)`.
    pub device: String,
    /// Chunks it completed.
    pub chunks: u64,
    /// Iterations it ran (CBIR's images: the JSON field keeps that name).
    #[serde(rename = "images")]
    pub items: u64,
    /// Seconds in its chunks.
    pub busy_s: f64,
    /// Seconds of the loop outside its chunks.
    pub idle_s: f64,
    /// A board's FastFit chunk, from its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<u64>,
    /// The model's time for that chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_s: Option<f64>,
    /// The median over its chunks after training of measured / modeled time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_over_model: Option<f64>,
    /// Whether the board failed and was retired (its chunk ran on the CPU path).
    pub failed: bool,
    /// Why the board stopped taking before the pool was empty, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Where its chunks' time went, added up over them.
    pub steps: StepTotals,
}

impl DeviceLine {
    /// The line of one device of the gathered reports.
    pub fn of(d: &DeviceReport) -> DeviceLine {
        DeviceLine {
            device: d.device.to_string(),
            chunks: d.chunks,
            items: d.items,
            busy_s: d.busy_s,
            idle_s: d.idle_s,
            chunk: d.fit.as_ref().map(|f| f.chunk),
            predicted_s: d.fit.as_ref().map(|f| f.predicted_s),
            measured_over_model: d.fit.as_ref().and_then(|f| f.measured_over_model),
            failed: d.failed.is_some(),
            stopped: d.stopped.as_ref().map(ToString::to_string),
            steps: d.step_totals(),
        }
    }
}

/// The text table of `lines`, a header first; `unit` names the iterations (`images`,
/// `rows`).
///
/// ```
/// use shmemplus_apps::devices::{table, DeviceLine};
/// let cpu = DeviceLine {
///     device: "PE 0 CPU".into(), chunks: 3, items: 12, busy_s: 0.002, idle_s: 0.0005,
///     chunk: None, predicted_s: None, measured_over_model: None, failed: false,
///     stopped: None, steps: Default::default(),
/// };
/// let t = table(&[cpu], "rows");
/// assert!(t[0].contains("rows") && t[1].starts_with("PE 0 CPU"));
/// assert!(t[1].contains("2.000") && t[1].contains("0.500"));
/// ```
pub fn table(lines: &[DeviceLine], unit: &str) -> Vec<String> {
    let mut out = vec![format!(
        "{:<24}{:>8}{:>8}{:>11}{:>11}   FastFit chunk (its model time ms, measured/model)",
        "device", "chunks", unit, "busy ms", "idle ms"
    )];
    for d in lines {
        let mut l = format!(
            "{:<24}{:>8}{:>8}{:>11}{:>11}",
            d.device,
            d.chunks,
            d.items,
            ms(d.busy_s),
            ms(d.idle_s)
        );
        if let (Some(c), Some(p)) = (d.chunk, d.predicted_s) {
            let m = d
                .measured_over_model
                .map_or("-".into(), |r| format!("{r:.2}"));
            l += &format!("   {c} ({} ms, {m})", ms(p));
        }
        if d.failed {
            l += "   FAILED: retired, its chunk ran on the CPU path";
        }
        out.push(l);
        if let Some(why) = &d.stopped {
            out.push(format!("{:<24}{why}", ""));
        }
    }
    out
}

/// Where the chunks' time went, per chunk over every device of `lines`, as two lines
/// of the text report (boards, then CPUs; one is left out when no chunk of that kind
/// recorded its steps).
///
/// ```
/// use shmemplus_apps::devices::{steps_lines, DeviceLine};
/// use shmemplus_cosched::StepTotals;
/// let board = DeviceLine {
///     device: "node 0 board 0 (PE 0)".into(), chunks: 2, items: 40, busy_s: 30e-6,
///     idle_s: 0.0, chunk: None, predicted_s: None, measured_over_model: None,
///     failed: false, stopped: None,
///     steps: StepTotals {
///         chunks: 2, take_s: 2e-6, staging_s: 3e-6, kernel_s: 24e-6, waited_s: 4e-6,
///         fetch_s: 2e-6, run_s: 0.0,
///     },
/// };
/// let l = steps_lines(&[board]);
/// assert_eq!(l.len(), 1);
/// assert!(l[0].contains("2 board chunks") && l[0].contains("kernel 12.0 us"));
/// assert!(l[0].contains("waited for the driver 2.0 us"));
/// ```
pub fn steps_lines(lines: &[DeviceLine]) -> Vec<String> {
    let us = |s: f64| format!("{:.1} us", s * 1e6);
    let sum = |board: bool| {
        lines
            .iter()
            // A CPU's name ends so (`Device`'s `Display`: "PE 0 CPU").
            .filter(|l| l.device.ends_with(" CPU") != board)
            .fold(StepTotals::default(), |mut t, l| {
                t.chunks += l.steps.chunks;
                t.take_s += l.steps.take_s;
                t.staging_s += l.steps.staging_s;
                t.kernel_s += l.steps.kernel_s;
                t.waited_s += l.steps.waited_s;
                t.fetch_s += l.steps.fetch_s;
                t.run_s += l.steps.run_s;
                t
            })
    };
    let mut out = Vec::new();
    let boards = sum(true);
    if boards.chunks > 0 {
        let p = boards.per_chunk();
        out.push(format!(
            "{} board chunks, each (mean): take {}, staging {}, kernel {}, waited for the driver {}, fetch {}",
            boards.chunks,
            us(p.take_s),
            us(p.staging_s),
            us(p.kernel_s),
            us(p.waited_s),
            us(p.fetch_s)
        ));
    }
    let cpus = sum(false);
    if cpus.chunks > 0 {
        let p = cpus.per_chunk();
        out.push(format!(
            "{} CPU chunks, each (mean): take {}, run {}",
            cpus.chunks,
            us(p.take_s),
            us(p.run_s)
        ));
    }
    out
}
