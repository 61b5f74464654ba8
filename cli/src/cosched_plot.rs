//! `shmemplus cosched-plot`: draws the timeline a co-scheduled run wrote
//! (`cbir --schedule fastfit --devices FILE`, a `shmemplus_cosched::Timeline`) in two
//! panels over one time axis, with a legend of every device beside them:
//! - **throughput**: one line per device (each PE's CPU dashed, each board solid), one
//!   point per chunk at its middle, at the chunk's iterations per second, on a
//!   logarithmic axis (boards and CPUs differ by orders of magnitude);
//! - **chunks**: one row per device, one bar per chunk from its start to its end, so
//!   that what each device waited for shows as gaps (a device that took nothing is an
//!   empty row).
//!
//! The legend gives each device its chunks and the share of the loop it was idle,
//! and says when a board failed or stopped taking chunks.
//!
//! This module owns that drawing only. The file format is `shmemplus_cosched`'s, the
//! font handling, the palette and the rows of bars are `crate::plot`'s.

use crate::plot::{
    draw_image, draw_title, name_rows, row_band, SvgText, COLORS_20, FAMILY, FONT_CANDIDATES,
};
use plotters::coord::Shift;
use plotters::prelude::*;
use shmemplus_cosched::{Device, DeviceReport, Timeline};
use std::path::Path;

const WIDTH: u32 = 1280;
/// The throughput panel's height, title included.
const TOP_HEIGHT: u32 = 540;
/// The chunk panel's pixels per device (it grows with them: a legend line each), at
/// least and at most (thousands of devices would make an image of hundreds of MB;
/// past that the rows get thinner and the legend counts the devices it leaves out).
const CHUNK_ROW: u32 = LEGEND_ROW + 1;
const CHUNK_MIN_HEIGHT: u32 = 360;
const CHUNK_MAX_HEIGHT: u32 = 7500;
/// The title's band at the top.
const TITLE_HEIGHT: u32 = 36;
/// The legend's column, right of the panels.
const LEGEND_WIDTH: u32 = 300;
/// One line of the legend, in pixels.
const LEGEND_ROW: u32 = 17;
/// Above this many devices the chunk panel's rows go without names (the legend and
/// the colours name them).
const MAX_ROW_NAMES: usize = 32;

/// One device as drawn: its legend entry, its line and its bars.
#[derive(Debug)]
struct Drawn {
    /// The device's name ("PE 0 CPU", "node 0 board 1 (PE 0)").
    name: String,
    /// The legend's note: chunks, idle share, failed or stopped.
    note: String,
    cpu: bool,
    color: RGBColor,
    /// (middle of a chunk in ms, iterations per second), chunks of positive length.
    points: Vec<(f64, f64)>,
    /// (start, end) of each chunk in ms.
    bars: Vec<(f64, f64)>,
}

/// Every device of `timeline`, in its order (those without chunks too: an empty row).
fn drawn(timeline: &Timeline) -> Vec<Drawn> {
    timeline
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| Drawn {
            name: d.device.to_string(),
            note: note(d),
            cpu: matches!(d.device, Device::Cpu { .. }),
            color: COLORS_20[i % COLORS_20.len()],
            points: d
                .spans
                .iter()
                .filter(|s| s.end_s > s.start_s)
                .map(|s| {
                    let mid_ms = (s.start_s + s.end_s) / 2.0 * 1e3;
                    (mid_ms, s.items as f64 / (s.end_s - s.start_s))
                })
                .collect(),
            bars: d
                .spans
                .iter()
                .filter(|s| s.end_s >= s.start_s && s.start_s.is_finite() && s.end_s.is_finite())
                .map(|s| (s.start_s * 1e3, s.end_s * 1e3))
                .collect(),
        })
        .collect()
}

/// A device's legend note: "3 chunks, idle 12%", and whether it failed or stopped.
fn note(d: &DeviceReport) -> String {
    let loop_s = d.busy_s + d.idle_s;
    let idle = if loop_s > 0.0 && d.idle_s.is_finite() {
        format!(", idle {:.0}%", 100.0 * d.idle_s / loop_s)
    } else {
        String::new()
    };
    let plural = if d.chunks == 1 { "" } else { "s" };
    let mut note = format!("{} chunk{plural}{idle}", d.chunks);
    if d.failed.is_some() {
        note.push_str(", failed");
    } else if d.stopped.is_some() {
        note.push_str(", stopped early");
    }
    note
}

/// Draws the timeline file `path` to `out` (`.png` or `.svg`).
pub fn plot_cosched(path: &Path, out: &Path) -> Result<(), String> {
    let text = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let timeline: Timeline = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not a co-scheduling timeline: {e}", path.display()))?;
    let devices = drawn(&timeline);
    if devices.iter().all(|d| d.bars.is_empty()) {
        return Err(format!("{} has no chunks to draw", path.display()));
    }
    let title = format!("{} ({} clock)", timeline.title, timeline.clock);
    draw_image!(
        out,
        (WIDTH, image_height(devices.len())),
        FONT_CANDIDATES,
        SvgText::Measured,
        |root| draw(root, &title, &timeline.clock, &devices, out)
    )
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    clock: &str,
    devices: &[Drawn],
    out: &Path,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let fail = |e: &dyn std::fmt::Display| format!("drawing {} failed: {e}", out.display());
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (title_area, body) = root.split_vertically(TITLE_HEIGHT);
    draw_title(&title_area, title, (FAMILY, 20), 8).map_err(|e| fail(&e))?;
    let (panels, legend) = body.split_horizontally(WIDTH - LEGEND_WIDTH);
    let (top, bottom) = panels.split_vertically(TOP_HEIGHT - TITLE_HEIGHT);
    let x_max = devices
        .iter()
        .flat_map(|d| d.bars.iter().map(|b| b.1))
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.02;
    throughput_panel(&top, clock, devices, x_max).map_err(|e| fail(&e))?;
    chunk_panel(&bottom, clock, devices, x_max).map_err(|e| fail(&e))?;
    draw_legend(&legend, devices).map_err(|e| fail(&e))?;
    root.present().map_err(|e| {
        format!(
            "writing {} failed: {e} (is the directory writable?)",
            out.display()
        )
    })
}

/// The top panel: iterations per second of each chunk, over time.
fn throughput_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    clock: &str,
    devices: &[Drawn],
    x_max: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let all = || devices.iter().flat_map(|d| d.points.iter());
    let y_min = all().map(|p| p.1).fold(f64::INFINITY, f64::min);
    // Chunks of zero length only: no rate to draw, an empty axis of the usual shape.
    let y_min = if y_min.is_finite() { y_min } else { 1.0 }.max(1e-3) / 2.0;
    let y_max = all().map(|p| p.1).fold(0.0f64, f64::max).max(y_min * 4.0) * 2.0;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..x_max, (y_min..y_max).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(format!("time (ms, {clock} clock)"))
        .y_desc("iterations per second (log)")
        .y_label_formatter(&|v| per_second(*v))
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 15))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    for d in devices.iter().filter(|d| !d.points.is_empty()) {
        let points = d.points.iter().copied();
        if d.cpu {
            chart.draw_series(DashedLineSeries::new(points, 7, 5, d.color.stroke_width(2)))?;
            chart.draw_series(
                d.points
                    .iter()
                    .map(|&p| TriangleMarker::new(p, 5, d.color.filled())),
            )?;
        } else {
            chart.draw_series(LineSeries::new(points, d.color.stroke_width(2)))?;
            chart.draw_series(
                d.points
                    .iter()
                    .map(|&p| Circle::new(p, 3, d.color.filled())),
            )?;
        }
    }
    Ok(())
}

/// A rate for the axis, short: 950, 12k, 1.5M.
fn per_second(v: f64) -> String {
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let digits = if scaled.abs() >= 10.0 || scaled.fract().abs() < 1e-9 {
        0
    } else {
        1
    };
    format!("{scaled:.digits$}{suffix}")
}

/// The bottom panel: one row per device (the legend's order, top down), one bar per
/// chunk.
fn chunk_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    clock: &str,
    devices: &[Drawn],
    x_max: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let named = devices.len() <= MAX_ROW_NAMES;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(if named { 170 } else { 40 })
        .build_cartesian_2d(0.0..x_max, 0.0..devices.len() as f64)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(format!("time (ms, {clock} clock)"))
        .y_labels(0)
        .disable_y_mesh()
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 15))
        .light_line_style(RGBColor(240, 240, 240));
    if !named {
        mesh.y_desc("devices, in the legend's order");
    }
    mesh.draw()?;
    // At least a pixel wide, so that a short chunk shows; a pixel short of its end,
    // so that chunks back to back show as two.
    let pixel = x_max / f64::from(WIDTH - LEGEND_WIDTH);
    for (i, d) in devices.iter().enumerate() {
        let (lo, hi) = row_band(i, devices.len());
        chart.draw_series(d.bars.iter().map(|&(start, end)| {
            let end = (end - pixel).max(start + pixel);
            Rectangle::new([(start, lo), (end, hi)], d.color.filled())
        }))?;
    }
    if named {
        name_rows(area, &chart, devices.iter().map(|d| d.name.as_str()), 12)?;
    }
    Ok(())
}

/// The image's height for `devices`: the throughput panel, and the chunk panel's rows.
fn image_height(devices: usize) -> u32 {
    let rows = u32::try_from(devices).unwrap_or(u32::MAX);
    let chunks = rows
        .saturating_mul(CHUNK_ROW)
        .saturating_add(60)
        .clamp(CHUNK_MIN_HEIGHT, CHUNK_MAX_HEIGHT);
    TOP_HEIGHT.saturating_add(chunks)
}

/// How the legend fits `devices` into `height` pixels: each device's name and note
/// on two lines if they fit, else on one; past what one line each allows, the first
/// ones and a last line counting the rest.
#[derive(Debug, PartialEq, Eq)]
struct LegendLayout {
    /// Lines per device (1 or 2).
    lines: u32,
    /// Devices named.
    shown: usize,
}

fn legend_layout(height: u32, devices: usize) -> LegendLayout {
    // A header line first.
    let lines = (height / LEGEND_ROW).saturating_sub(1) as usize;
    if devices.saturating_mul(2) <= lines {
        LegendLayout {
            lines: 2,
            shown: devices,
        }
    } else if devices <= lines {
        LegendLayout {
            lines: 1,
            shown: devices,
        }
    } else {
        LegendLayout {
            lines: 1,
            shown: lines.saturating_sub(1),
        }
    }
}

/// The legend: a line of each device's style and colour, its name and its note.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    devices: &[Drawn],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (_, height) = area.dim_in_pixel();
    let text = |size| (FAMILY, size).into_font().color(&BLACK);
    let row = LEGEND_ROW as i32;
    area.draw(&Text::new("CPUs dashed, boards solid", (8, 2), text(13)))?;
    let layout = legend_layout(height, devices.len());
    let per = row * layout.lines as i32;
    for (i, d) in devices.iter().take(layout.shown).enumerate() {
        let y = row + per * i as i32;
        let mid = y + row / 2;
        let style = d.color.stroke_width(3);
        if d.cpu {
            area.draw(&PathElement::new([(8, mid), (16, mid)], style))?;
            area.draw(&PathElement::new([(22, mid), (30, mid)], style))?;
        } else {
            area.draw(&PathElement::new([(8, mid), (30, mid)], style))?;
        }
        if layout.lines == 2 {
            area.draw(&Text::new(d.name.clone(), (38, y + 2), text(13)))?;
            area.draw(&Text::new(d.note.clone(), (38, y + row + 1), text(11)))?;
        } else {
            let line = format!("{}: {}", d.name, d.note);
            area.draw(&Text::new(line, (38, y + 3), text(11)))?;
        }
    }
    if layout.shown < devices.len() {
        let y = row + per * layout.shown as i32;
        area.draw(&Text::new(
            format!("... and {} more devices", devices.len() - layout.shown),
            (8, y + 2),
            text(13),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shmemplus_cosched::Span;

    fn device(device: Device, spans: &[(f64, f64, u64)]) -> DeviceReport {
        let spans: Vec<Span> = spans
            .iter()
            .map(|&(start_s, end_s, items)| Span {
                start_s,
                end_s,
                items,
                steps: None,
            })
            .collect();
        let busy_s = spans.iter().map(|s| s.end_s - s.start_s).sum();
        DeviceReport {
            device,
            chunks: spans.len() as u64,
            items: spans.iter().map(|s| s.items).sum(),
            busy_s,
            idle_s: 0.04 - busy_s,
            spans,
            fit: None,
            failed: None,
            stopped: None,
        }
    }

    fn board(pe: u32, board: u32) -> Device {
        Device::Board {
            pe,
            node: pe,
            board,
        }
    }

    #[test]
    fn every_device_is_drawn_with_its_chunks_rates_and_idle_share() {
        let mut stopped = device(board(0, 2), &[(0.0, 0.004, 40)]);
        stopped.stopped = Some(shmemplus_cosched::StopReason::Tail {
            left: 3,
            latency_s: 1e-5,
            cpus_s: 6e-6,
        });
        let t = Timeline {
            title: "t".into(),
            clock: "virtual".into(),
            devices: vec![
                device(Device::Cpu { pe: 0 }, &[(0.0, 0.01, 10), (0.01, 0.03, 10)]),
                device(Device::Cpu { pe: 1 }, &[]),
                device(board(0, 1), &[(0.0, 0.002, 400)]),
                stopped,
            ],
        };
        let d = drawn(&t);
        assert_eq!(d.len(), 4, "a device without chunks is an empty row");
        assert_eq!(d[0].name, "PE 0 CPU");
        assert!(d[0].cpu && !d[2].cpu);
        let close = |got: &[(f64, f64)], want: &[(f64, f64)]| {
            got.len() == want.len()
                && got
                    .iter()
                    .zip(want)
                    .all(|(g, w)| (g.0 - w.0).abs() < 1e-9 && (g.1 / w.1 - 1.0).abs() < 1e-9)
        };
        assert!(
            close(&d[0].points, &[(5.0, 1000.0), (20.0, 500.0)]),
            "{:?}",
            d[0].points
        );
        assert!(
            close(&d[0].bars, &[(0.0, 10.0), (10.0, 30.0)]),
            "{:?}",
            d[0].bars
        );
        // Busy 30 of the loop's 40 ms.
        assert_eq!(d[0].note, "2 chunks, idle 25%");
        assert_eq!(d[1].note, "0 chunks, idle 100%");
        assert!(d[1].points.is_empty() && d[1].bars.is_empty());
        assert_eq!(d[2].name, "node 0 board 1 (PE 0)");
        assert!(
            close(&d[2].points, &[(1.0, 200_000.0)]),
            "{:?}",
            d[2].points
        );
        assert_eq!(d[2].note, "1 chunk, idle 95%");
        assert_eq!(d[3].note, "1 chunk, idle 90%, stopped early");
        // Neighbours in the timeline never share a colour.
        assert!(d.windows(2).all(|w| w[0].color != w[1].color));
    }

    #[test]
    fn rates_on_the_axis_are_short() {
        assert_eq!(per_second(950.0), "950");
        assert_eq!(per_second(1000.0), "1k");
        assert_eq!(per_second(1500.0), "1.5k");
        assert_eq!(per_second(12_345.0), "12k");
        assert_eq!(per_second(3e6), "3M");
        assert_eq!(per_second(2.5e9), "2.5G");
        assert_eq!(per_second(0.5), "0.5");
    }

    #[test]
    fn the_legend_names_what_fits_and_counts_the_rest() {
        // 17 px a line: 52 lines in 900 px, 51 after the header.
        let two = |shown| LegendLayout { lines: 2, shown };
        let one = |shown| LegendLayout { lines: 1, shown };
        assert_eq!(legend_layout(900, 12), two(12));
        assert_eq!(legend_layout(900, 25), two(25));
        assert_eq!(legend_layout(900, 26), one(26));
        assert_eq!(legend_layout(900, 51), one(51));
        // The last line counts the rest.
        assert_eq!(legend_layout(900, 52), one(50));
        assert_eq!(legend_layout(900, 80), one(50));
        assert_eq!(legend_layout(10, 3), one(0));
        // The image grows with the devices so that the legend names them all, up to
        // a limit.
        for devices in [1, 12, 24, 80, 320] {
            let legend = image_height(devices) - TITLE_HEIGHT;
            assert_eq!(legend_layout(legend, devices).shown, devices, "{devices}");
        }
        assert_eq!(image_height(5000), TOP_HEIGHT + CHUNK_MAX_HEIGHT);
        let legend = image_height(5000) - TITLE_HEIGHT;
        assert!(legend_layout(legend, 5000).shown < 5000);
    }

    #[test]
    fn an_svg_names_every_device_and_draws_a_bar_per_chunk() {
        use crate::plot::tests::{font_present, svg_texts};
        let dir = std::env::temp_dir().join(format!("cosched-plot-svg-{}", std::process::id()));
        assert!(std::fs::create_dir_all(&dir).is_ok());
        let (json, svg) = (dir.join("t.json"), dir.join("t.svg"));
        let mut failed = device(board(1, 0), &[(0.002, 0.004, 5)]);
        failed.failed = Some("kernel error".into());
        let t = Timeline {
            title: "a loop".into(),
            clock: "wall".into(),
            devices: vec![
                device(Device::Cpu { pe: 0 }, &[(0.0, 0.01, 10), (0.01, 0.03, 10)]),
                device(Device::Cpu { pe: 1 }, &[]),
                device(board(0, 0), &[(0.0, 0.002, 400), (0.002, 0.005, 600)]),
                failed,
            ],
        };
        assert!(std::fs::write(&json, serde_json::to_vec(&t).unwrap_or_default()).is_ok());
        let drew = plot_cosched(&json, &svg);
        let text = std::fs::read_to_string(&svg).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        if !font_present() {
            let e = drew.unwrap_err();
            assert!(e.contains("fonts-dejavu-core"), "{e}");
            return;
        }
        assert_eq!(drew, Ok(()));
        let texts = svg_texts(&text);
        let count = |s: &str| texts.iter().filter(|t| t.as_str() == s).count();
        for name in [
            "PE 0 CPU",
            "PE 1 CPU",
            "node 0 board 0 (PE 0)",
            "node 1 board 0 (PE 1)",
        ] {
            // In the legend and as the chunk panel's row name.
            assert_eq!(count(name), 2, "{name} in {texts:?}");
        }
        assert_eq!(count("1 chunk, idle 95%, failed"), 1, "{texts:?}");
        assert_eq!(count("a loop (wall clock)"), 1, "{texts:?}");
        // One filled bar per chunk in its device's colour (the palette's first four).
        let bars = |c: RGBColor| {
            let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
            text.lines()
                .filter(|l| l.contains("<rect") && l.contains(&fill))
                .count()
        };
        assert_eq!(bars(COLORS_20[0]), 2);
        assert_eq!(bars(COLORS_20[1]), 0);
        assert_eq!(bars(COLORS_20[2]), 2);
        assert_eq!(bars(COLORS_20[3]), 1);
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
