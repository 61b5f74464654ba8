//! `shmemplus cosched-plot`: draws the timeline a co-scheduled run wrote
//! (`cbir --schedule fastfit --devices FILE`, a `shmemplus_cosched::Timeline`) as
//! throughput per device over time: one line per device (each PE's CPU, each board),
//! one point per chunk at its middle, at the chunk's iterations per second, on a
//! logarithmic axis (boards and CPUs differ by orders of magnitude).
//!
//! This module owns that drawing only. The file format is `shmemplus_cosched`'s, the
//! font handling and palette are `crate::plot`'s.

use crate::plot::{draw_image, COLORS, FAMILY, FONT_CANDIDATES};
use plotters::coord::Shift;
use plotters::prelude::*;
use shmemplus_cosched::Timeline;
use std::path::Path;

const WIDTH: u32 = 1024;
const HEIGHT: u32 = 640;

/// One device's line: its name and (middle of a chunk in ms, iterations per second).
struct Line {
    label: String,
    points: Vec<(f64, f64)>,
}

/// The lines of `timeline`, devices in its order; a device without chunks has none.
fn lines(timeline: &Timeline) -> Vec<Line> {
    timeline
        .devices
        .iter()
        .filter(|d| !d.spans.is_empty())
        .map(|d| Line {
            label: d.device.to_string(),
            points: d
                .spans
                .iter()
                .filter(|s| s.end_s > s.start_s)
                .map(|s| {
                    let mid_ms = (s.start_s + s.end_s) / 2.0 * 1e3;
                    (mid_ms, s.items as f64 / (s.end_s - s.start_s))
                })
                .collect(),
        })
        .filter(|l| !l.points.is_empty())
        .collect()
}

/// Draws the timeline file `path` to `out` (`.png` or `.svg`).
pub fn plot_cosched(path: &Path, out: &Path) -> Result<(), String> {
    let text = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let timeline: Timeline = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not a co-scheduling timeline: {e}", path.display()))?;
    let lines = lines(&timeline);
    if lines.is_empty() {
        return Err(format!("{} has no chunks to draw", path.display()));
    }
    let title = format!("{} ({} clock)", timeline.title, timeline.clock);
    draw_image!(out, (WIDTH, HEIGHT), FONT_CANDIDATES, |root| draw(
        root,
        &title,
        &timeline.clock,
        &lines,
        out
    ))
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    clock: &str,
    lines: &[Line],
    out: &Path,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let fail = |e: &dyn std::fmt::Display| format!("drawing {} failed: {e}", out.display());
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let all = || lines.iter().flat_map(|l| l.points.iter());
    let x_max = all().map(|p| p.0).fold(0.0f64, f64::max).max(1e-3) * 1.05;
    let y_min = all().map(|p| p.1).fold(f64::INFINITY, f64::min).max(1e-3) / 2.0;
    let y_max = all().map(|p| p.1).fold(0.0f64, f64::max).max(y_min * 4.0) * 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FAMILY, 20))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..x_max, (y_min..y_max).log_scale())
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc(format!("time (ms, {clock} clock)"))
        .y_desc("iterations per second (log)")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(|e| fail(&e))?;
    for (i, line) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?
            .label(line.label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        chart
            .draw_series(
                line.points
                    .iter()
                    .map(|&p| Circle::new(p, 3, color.filled())),
            )
            .map_err(|e| fail(&e))?;
    }
    chart
        .configure_series_labels()
        .label_font((FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| fail(&e))?;
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
    use shmemplus_cosched::{Device, DeviceReport, Span};

    fn device(device: Device, spans: &[(f64, f64, u64)]) -> DeviceReport {
        let spans: Vec<Span> = spans
            .iter()
            .map(|&(start_s, end_s, items)| Span {
                start_s,
                end_s,
                items,
            })
            .collect();
        DeviceReport {
            device,
            chunks: spans.len() as u64,
            items: spans.iter().map(|s| s.items).sum(),
            busy_s: 0.0,
            idle_s: 0.0,
            spans,
            fit: None,
            failed: None,
            stopped: None,
        }
    }

    #[test]
    fn one_line_per_device_with_chunks_at_their_throughput() {
        let t = Timeline {
            title: "t".into(),
            clock: "virtual".into(),
            devices: vec![
                device(Device::Cpu { pe: 0 }, &[(0.0, 0.01, 10), (0.01, 0.03, 10)]),
                device(Device::Cpu { pe: 1 }, &[]),
                device(
                    Device::Board {
                        pe: 0,
                        node: 0,
                        board: 1,
                    },
                    &[(0.0, 0.002, 400)],
                ),
            ],
        };
        let l = lines(&t);
        assert_eq!(l.len(), 2, "a device without chunks has no line");
        assert_eq!(l[0].label, "PE 0 CPU");
        let close = |got: &[(f64, f64)], want: &[(f64, f64)]| {
            got.len() == want.len()
                && got
                    .iter()
                    .zip(want)
                    .all(|(g, w)| (g.0 - w.0).abs() < 1e-9 && (g.1 / w.1 - 1.0).abs() < 1e-9)
        };
        assert!(
            close(&l[0].points, &[(5.0, 1000.0), (20.0, 500.0)]),
            "{:?}",
            l[0].points
        );
        assert_eq!(l[1].label, "node 0 board 1 (PE 0)");
        assert!(
            close(&l[1].points, &[(1.0, 200_000.0)]),
            "{:?}",
            l[1].points
        );
    }

    #[test]
    fn draws_a_png_and_refuses_what_it_cannot_draw() {
        let dir = std::env::temp_dir().join(format!("cosched-plot-test-{}", std::process::id()));
        assert!(std::fs::create_dir_all(&dir).is_ok());
        let (json, png) = (dir.join("t.json"), dir.join("t.png"));
        let mut t = Timeline {
            title: "t".into(),
            clock: "wall".into(),
            devices: vec![device(Device::Cpu { pe: 0 }, &[])],
        };
        let write = |t: &Timeline| std::fs::write(&json, serde_json::to_vec(t).unwrap_or_default());
        assert!(write(&t).is_ok());
        let err = plot_cosched(&json, &png).unwrap_err();
        assert!(err.contains("no chunks"), "{err}");
        t.devices = vec![device(
            Device::Cpu { pe: 0 },
            &[(0.0, 0.01, 10), (0.01, 0.02, 30)],
        )];
        assert!(write(&t).is_ok());
        let err = plot_cosched(&json, &dir.join("t.gif")).unwrap_err();
        assert!(err.contains(".png"), "{err}");
        assert!(std::fs::write(&json, b"{}").is_ok());
        let err = plot_cosched(&json, &png).unwrap_err();
        assert!(err.contains("not a co-scheduling timeline"), "{err}");
        assert!(write(&t).is_ok());
        assert_eq!(plot_cosched(&json, &png), Ok(()));
        let bytes = std::fs::read(&png).unwrap_or_default();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
