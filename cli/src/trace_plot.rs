//! `shmemplus trace-plot`: draws a trace file (`shmemrun --trace`) as a timeline PNG or
//! SVG: one row per track (each PE, each NIC side and board channel of each node), one
//! bar per complete event, a time axis in the trace's clock (virtual or wall).
//!
//! This module owns that drawing only. The file format is the library's
//! (`shmemplus::trace`), the font handling and palette are `crate::plot`'s.

use crate::plot::{draw_image, name_rows, row_band, SvgText, COLORS, FAMILY, FONT_CANDIDATES};
use plotters::coord::Shift;
use plotters::prelude::*;
use shmemplus::trace::TraceFile;
use std::collections::BTreeMap;
use std::path::Path;

const WIDTH: u32 = 1280;
/// Pixels per track row, and around the rows (title, axis).
const ROW: u32 = 26;
const FRAME: u32 = 140;

/// A bar: start and duration in microseconds, colour index.
type Bar = (f64, f64, usize);

/// One row: its label and its bars.
struct Row {
    label: String,
    bars: Vec<Bar>,
}

/// The rows of `trace` by (process, thread) id, labelled with their metadata names.
fn rows(trace: &TraceFile) -> Vec<Row> {
    let (mut process, mut thread) = (BTreeMap::new(), BTreeMap::new());
    let mut rows: BTreeMap<(u64, u64), Vec<Bar>> = BTreeMap::new();
    for e in &trace.trace_events {
        let name = || {
            e.args
                .get("name")
                .and_then(|n| n.as_str())
                .unwrap_or("")
                .to_string()
        };
        match (e.ph.as_str(), e.name.as_str()) {
            ("M", "process_name") => drop(process.insert(e.pid, name())),
            ("M", "thread_name") => drop(thread.insert((e.pid, e.tid), name())),
            ("X", _) => {
                // Calls coloured by name, hops by the PE that charged them.
                let key = match e.args.get("by").and_then(|b| b.as_u64()) {
                    Some(by) => by as usize,
                    None => e.name.bytes().map(usize::from).sum::<usize>(),
                };
                let bars = rows.entry((e.pid, e.tid)).or_default();
                bars.push((e.ts, e.dur.max(0.0), key % COLORS.len()));
            }
            _ => {}
        }
    }
    rows.into_iter()
        .map(|((pid, tid), bars)| {
            let t = thread
                .get(&(pid, tid))
                .cloned()
                .unwrap_or_else(|| tid.to_string());
            let label = match process.get(&pid) {
                Some(p) if p != "PEs" => format!("{p} {t}"),
                _ => t,
            };
            Row { label, bars }
        })
        .collect()
}

/// Draws the trace `trace_path` to `out` (`.png` or `.svg`).
pub fn plot_trace(trace_path: &Path, out: &Path) -> Result<(), String> {
    let trace = TraceFile::load(trace_path)?;
    let rows = rows(&trace);
    if rows.is_empty() {
        return Err(format!("{} has no events to draw", trace_path.display()));
    }
    let clock = match trace.other_data.clock.as_str() {
        "" => "trace".to_string(),
        c => format!("{c} clock"),
    };
    let title = format!(
        "{} ({}, profile {})",
        trace_path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        clock,
        trace.other_data.profile
    );
    let height = FRAME + ROW * rows.len() as u32;
    draw_image!(
        out,
        (WIDTH, height),
        FONT_CANDIDATES,
        SvgText::Measured,
        |root| draw(root, &title, &clock, &rows, out)
    )
}

/// The time unit for a trace spanning `end_us` microseconds: (name, microseconds each).
fn unit(end_us: f64) -> (&'static str, f64) {
    match end_us {
        e if e >= 10e6 => ("s", 1e6),
        e if e >= 10e3 => ("ms", 1e3),
        _ => ("us", 1.0),
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    clock: &str,
    rows: &[Row],
    out: &Path,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let fail = |e: &dyn std::fmt::Display| format!("drawing {} failed: {e}", out.display());
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let end = rows
        .iter()
        .flat_map(|r| r.bars.iter().map(|b| b.0 + b.1))
        .fold(0.0f64, f64::max);
    let (unit_name, per) = unit(end);
    let x_max = (end / per).max(1e-3) * 1.02;
    let n = rows.len() as f64;
    let label_w = rows.iter().map(|r| r.label.len()).max().unwrap_or(4) as u32 * 8 + 16;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FAMILY, 22))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(label_w)
        .build_cartesian_2d(0.0..x_max, 0.0..n)
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc(format!("time ({unit_name}, {clock})"))
        .y_labels(0)
        .disable_y_mesh()
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(|e| fail(&e))?;
    // At least a pixel wide, so short events stay visible.
    let min_w = x_max / f64::from(WIDTH);
    for (i, row) in rows.iter().enumerate() {
        let (lo, hi) = row_band(i, rows.len());
        chart
            .draw_series(row.bars.iter().map(|&(ts, dur, c)| {
                let x0 = ts / per;
                Rectangle::new(
                    [(x0, lo), ((x0 + dur / per).max(x0 + min_w), hi)],
                    COLORS[c].filled(),
                )
            }))
            .map_err(|e| fail(&e))?;
    }
    name_rows(&root, &chart, rows.iter().map(|r| r.label.as_str()), 14).map_err(|e| fail(&e))?;
    root.present().map_err(|e| {
        format!(
            "writing {} failed: {e} (is the directory writable?)",
            out.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_span() {
        assert_eq!(unit(500.0), ("us", 1.0));
        assert_eq!(unit(50_000.0), ("ms", 1e3));
        assert_eq!(unit(3e7), ("s", 1e6));
    }

    #[test]
    fn draws_a_png_with_one_row_per_track_and_refuses_what_it_cannot_draw() {
        use shmemplus::trace::{Event, Track};
        let dir = std::env::temp_dir().join(format!("trace-plot-test-{}", std::process::id()));
        assert!(std::fs::create_dir_all(&dir).is_ok());
        let (trace, png) = (dir.join("t.json"), dir.join("t.png"));
        // No events: nothing to draw.
        assert!(TraceFile::default().save(&trace).is_ok());
        let err = plot_trace(&trace, &png).unwrap_err();
        assert!(err.contains("no events"), "{err}");
        let mut file = TraceFile::default();
        file.other_data.clock = "virtual".into();
        for track in [Track::Pe(0), Track::NicSend { node: 1 }] {
            file.trace_events.extend(track.metadata());
            file.trace_events.push(Event {
                name: "put".into(),
                cat: "call".into(),
                ph: "X".into(),
                ts: 5.0,
                dur: 20.0,
                pid: track.pid(),
                tid: track.tid(),
                args: Default::default(),
            });
        }
        assert!(file.save(&trace).is_ok());
        let labels: Vec<String> = rows(&file).into_iter().map(|r| r.label).collect();
        assert_eq!(labels, ["PE 0", "node 1 NIC send"]);
        let err = plot_trace(&trace, &dir.join("t.gif")).unwrap_err();
        assert!(err.contains(".png"), "{err}");
        assert_eq!(plot_trace(&trace, &png), Ok(()));
        let bytes = std::fs::read(&png).unwrap_or_default();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        // An SVG too: its labels are laid out with the font (this failed with
        // "FontUnavailable" while only a PNG registered it).
        let svg = dir.join("t.svg");
        assert_eq!(plot_trace(&trace, &svg), Ok(()));
        let texts =
            crate::plot::tests::svg_texts(&std::fs::read_to_string(&svg).unwrap_or_default());
        assert!(texts.iter().any(|t| t == "node 1 NIC send"), "{texts:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
