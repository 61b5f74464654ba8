//! Bandwidth plots: draws already-measured (bytes, MB/s) curves to an SVG or PNG file,
//! in the style of the bandwidth figures of the SHMEM+ papers (log2 transfer-size x axis,
//! linear bandwidth y axis from 0, one coloured line with markers per route, a legend).
//!
//! This module owns drawing only: it never measures anything. The numbers come from
//! the caller (for example from `crate::bench` results).
//!
//! Text in a PNG is rasterised from a TrueType font read at run time (Debian package
//! `fonts-dejavu-core`); without one, PNG output fails with an error saying so. SVG output
//! writes `<text>` elements; the bandwidth plot's SVG works without a font file (label
//! widths are then estimated), the other plots (`trace_plot`, `cosched_plot`) let
//! plotters lay out their labels, which it measures with the font ([`SvgText`]).
//! The font handling and the palettes are shared by every plot of the crate.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

/// One curve: a label (a route name like "cpu-cpu put") and (bytes, MB/s) points.
pub struct Curve {
    /// The legend's name of the curve.
    pub label: String,
    /// (transfer size in bytes, bandwidth in MB/s), in the order they are drawn.
    pub points: Vec<(u64, f64)>,
}

/// Image size in pixels (PNG) or user units (SVG).
const WIDTH: u32 = 1024;
const HEIGHT: u32 = 640;

/// The font family name every text style uses; the TTF found at run time is registered
/// under it, and SVG viewers understand it as a generic family.
pub(crate) const FAMILY: &str = "sans-serif";

/// Where a sans-serif TTF is looked for, first hit wins (Debian/Ubuntu, Fedora, Arch).
pub(crate) const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Twenty colours (the "tab20" palette: ten hues, each dark then light), for plots
/// of more lines than [`COLORS`] tells apart (a co-scheduling timeline's devices).
pub(crate) const COLORS_20: [RGBColor; 20] = [
    RGBColor(31, 119, 180),
    RGBColor(174, 199, 232),
    RGBColor(255, 127, 14),
    RGBColor(255, 187, 120),
    RGBColor(44, 160, 44),
    RGBColor(152, 223, 138),
    RGBColor(214, 39, 40),
    RGBColor(255, 152, 150),
    RGBColor(148, 103, 189),
    RGBColor(197, 176, 213),
    RGBColor(140, 86, 75),
    RGBColor(196, 156, 148),
    RGBColor(227, 119, 194),
    RGBColor(247, 182, 210),
    RGBColor(127, 127, 127),
    RGBColor(199, 199, 199),
    RGBColor(188, 189, 34),
    RGBColor(219, 219, 141),
    RGBColor(23, 190, 207),
    RGBColor(158, 218, 229),
];

/// Line colours (the "tab10" palette: `COLORS_20`'s dark ones), one per curve,
/// cycled.
pub(crate) const COLORS: [RGBColor; 10] = {
    let mut colors = [RGBColor(0, 0, 0); 10];
    let mut i = 0;
    while i < colors.len() {
        colors[i] = COLORS_20[2 * i];
        i += 1;
    }
    colors
};

/// The image format a plot's file name asks for.
pub(crate) enum Format {
    Svg,
    Png,
}

/// The format `path`'s extension asks for, or an error that says how to name it.
pub(crate) fn format_of(path: &Path) -> Result<Format, String> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") => Ok(Format::Svg),
        Some(e) if e.eq_ignore_ascii_case("png") => Ok(Format::Png),
        Some(e) => Err(format!(
            "cannot plot to {}: unsupported extension '.{e}'; name the file .svg or .png",
            path.display()
        )),
        None => Err(format!(
            "cannot plot to {}: the file name has no extension; name it .svg or .png",
            path.display()
        )),
    }
}

/// Whether a plot's text needs a font's metrics in an SVG too.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SvgText {
    /// Laid out by plotters (a chart's caption, axis and row labels): measured with
    /// the font, so an SVG needs one as a PNG does.
    Measured,
    /// Placed and sized by the plot itself: an SVG draws without a font file (widths
    /// are estimated), and uses one if it is there.
    Estimated,
}

/// Before writing `path`: registers a TrueType font from `candidates`, or says what
/// to install. A PNG rasterises its text with the font; an SVG holds its text as
/// text but plotters measures what it lays out with the font (`SvgText::Measured`;
/// without one registered such an SVG failed with "Font loading error:
/// FontUnavailable" even where the font was installed).
pub(crate) fn font_for(path: &Path, candidates: &[&str], svg: SvgText) -> Result<(), String> {
    let registered = register_font_once(candidates);
    let needed = match format_of(path)? {
        Format::Png => "text in a PNG needs a TrueType font",
        Format::Svg if svg == SvgText::Measured => {
            "this plot lays out its text with a TrueType font"
        }
        // Not finding one is not an error (see `SvgText::Estimated`).
        Format::Svg => return Ok(()),
    };
    registered.map_err(|why| {
        format!(
            "cannot write {}: {needed} and {why}. \
             Install the Debian package fonts-dejavu-core (apt-get install fonts-dejavu-core){}",
            path.display(),
            if svg == SvgText::Estimated {
                " or plot to an .svg file instead"
            } else {
                ""
            }
        )
    })
}

/// Draws into the image file `$path` of `$size` with `$draw`, an expression that uses
/// `$root`, the drawing area of the backend the extension asks for (PNG or SVG),
/// after [`font_for`] found the font in `$fonts` that `$svg` (an [`SvgText`]) says
/// the plot needs. One expression serves both backends, whose types differ.
macro_rules! draw_image {
    ($path:expr, $size:expr, $fonts:expr, $svg:expr, |$root:ident| $draw:expr) => {{
        $crate::plot::font_for($path, $fonts, $svg)?;
        match $crate::plot::format_of($path)? {
            $crate::plot::Format::Png => {
                let $root = BitMapBackend::new($path, $size).into_drawing_area();
                $draw
            }
            $crate::plot::Format::Svg => {
                let $root = SVGBackend::new($path, $size).into_drawing_area();
                $draw
            }
        }
    }};
}
pub(crate) use draw_image;

/// Writes `title` in `font` centred across `area`, its top `top` pixels down: plain
/// text, placed without the font's metrics (an SVG needs no font file for it).
pub(crate) fn draw_title<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    font: (&str, u32),
    top: i32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = TextStyle::from(font.into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    let middle = i32::try_from(area.dim_in_pixel().0 / 2).unwrap_or(i32::MAX);
    area.draw(&Text::new(title, (middle, top), style))
}

/// A chart of rows of bars (a timeline): x in the caller's unit, y from 0 to the
/// number of rows, row 0 at the top.
pub(crate) type RowChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The y extent of row `row` of `rows` on a [`RowChart`] (row 0 at the top), with a
/// gap to its neighbours.
pub(crate) fn row_band(row: usize, rows: usize) -> (f64, f64) {
    let top = rows.saturating_sub(row) as f64;
    (top - 0.85, top - 0.15)
}

/// Writes each row's name, right-aligned, left of `chart`'s plotting area, on `area`
/// (the drawing area the chart was built on).
pub(crate) fn name_rows<'n, DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &RowChart<'_, DB>,
    names: impl ExactSizeIterator<Item = &'n str>,
    size: u32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = TextStyle::from((FAMILY, size).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Right, VPos::Center));
    let rows = names.len();
    // The chart's pixels are the backend's; `area` may start anywhere on it.
    let (base_x, base_y) = area.get_base_pixel();
    for (row, name) in names.enumerate() {
        let (lo, hi) = row_band(row, rows);
        let (x, y) = chart.backend_coord(&(0.0, (lo + hi) / 2.0));
        area.draw(&Text::new(
            name,
            (x - base_x - 8, y - base_y),
            style.clone(),
        ))?;
    }
    Ok(())
}

/// Draws bandwidth (MB/s, 10^6 bytes/s, linear y axis from 0) against transfer size (log2 x axis labelled
/// 32, 1K, 32K, 1M, 32M ... in bytes with K/M suffixes), one coloured line with point markers per curve, a legend,
/// axis titles and the given title — like the bandwidth figures of the SHMEM+ papers. The format follows the
/// file extension: `.svg` or `.png` (anything else: an error naming the extension). Errors are `String`s that say what to do.
pub fn plot_bandwidth(path: &Path, title: &str, curves: &[Curve]) -> Result<(), String> {
    render(path, title, curves, FAMILY, FONT_CANDIDATES)
}

/// `plot_bandwidth` with the font family and the font file candidates as parameters,
/// so tests can exercise the no-font paths on a machine that has the font.
fn render(
    path: &Path,
    title: &str,
    curves: &[Curve],
    family: &str,
    font_candidates: &[&str],
) -> Result<(), String> {
    format_of(path)?;
    validate(curves)?;
    draw_image!(
        path,
        (WIDTH, HEIGHT),
        font_candidates,
        SvgText::Estimated,
        |root| draw(root, title, curves, family, path)
    )
}

fn validate(curves: &[Curve]) -> Result<(), String> {
    if curves.is_empty() {
        return Err("nothing to plot: pass at least one curve with measured points".into());
    }
    for c in curves {
        if c.points.is_empty() {
            return Err(format!(
                "curve '{}' has no points: measure it first or leave it out",
                c.label
            ));
        }
        for &(bytes, mbs) in &c.points {
            if bytes == 0 {
                return Err(format!(
                    "curve '{}' has a point at 0 bytes: transfer sizes must be positive \
                     (the x axis is log2); drop that point",
                    c.label
                ));
            }
            if !mbs.is_finite() || mbs < 0.0 {
                return Err(format!(
                    "curve '{}' has bandwidth {mbs} MB/s at {bytes} bytes: bandwidth must be \
                     a finite number >= 0",
                    c.label
                ));
            }
        }
    }
    Ok(())
}

/// Finds a TTF among `candidates` and registers it as `FAMILY` (once per process: plotters
/// keeps fonts in a global table and needs `'static` bytes, so the file is leaked once).
/// The result of the first call is kept; `Err` says what was looked for.
pub(crate) fn register_font_once(candidates: &[&str]) -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    // Tests pass candidates that do not exist to see the failure; don't let them
    // poison (or be hidden by) the process-wide registration.
    if candidates != FONT_CANDIDATES {
        return find_font(candidates).map(|_| ());
    }
    REGISTERED
        .get_or_init(|| {
            let (path, bytes) = find_font(candidates)?;
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            register_font(FAMILY, FontStyle::Normal, bytes).map_err(|_| {
                format!("{path} could not be read as a TrueType font (is the file damaged?)")
            })
        })
        .clone()
}

fn find_font<'a>(candidates: &[&'a str]) -> Result<(&'a str, Vec<u8>), String> {
    for &p in candidates {
        if let Ok(bytes) = std::fs::read(p) {
            return Ok((p, bytes));
        }
    }
    Err(format!(
        "none was found (looked for {})",
        candidates.join(", ")
    ))
}

/// Tick label for an exponent of two: 32, 1K, 32K, 1M, 32M, 1G ...
fn size_label(exp: f64) -> String {
    let e = exp.round() as u32;
    match e {
        0..=9 => format!("{}", 1u64 << e),
        10..=19 => format!("{}K", 1u64 << (e - 10)),
        20..=29 => format!("{}M", 1u64 << (e - 20)),
        _ => format!("{}G", 1u64 << (e - 30)),
    }
}

/// The x axis: values are log2(bytes), drawn linearly; ticks (with grid lines) at the
/// `bold` exponents labelled 32, 1K, 32K ..., light grid lines at every power of two.
struct Log2Bytes {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ranged for Log2Bytes {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let frac = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f64::from(limit.1 - limit.0) * frac).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Log2Bytes {
    fn format_ext(&self, exp: &f64) -> String {
        size_label(*exp)
    }
}

/// Width in pixels of `text` in `style`: measured with the font when one is registered,
/// estimated from the character count otherwise (SVG without a font file).
fn text_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
    size: f64,
) -> i32 {
    match area.estimate_text_size(text, style) {
        Ok((w, _)) => w as i32,
        Err(_) => (text.chars().count() as f64 * size * 0.6).ceil() as i32,
    }
}

/// Draws a marker (one shape per curve, cycled) centred at pixel `at` of `area`.
fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    shape: usize,
    at: (i32, i32),
    color: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let fill = color.filled();
    let (x, y) = at;
    match shape % 4 {
        0 => area.draw(&Circle::new(at, 4, fill)),
        1 => area.draw(&TriangleMarker::new(at, 5, fill)),
        2 => area.draw(&Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], fill)),
        _ => area.draw(&Cross::new(at, 4, color.stroke_width(2))),
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    curves: &[Curve],
    family: &str,
    path: &Path,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let fail = |e: &dyn std::fmt::Display| format!("drawing {} failed: {e}", path.display());
    root.fill(&WHITE).map_err(|e| fail(&e))?;

    draw_title(&root, title, (family, 26), 12).map_err(|e| fail(&e))?;

    // x: log2(bytes), padded a little so end markers are not cut by the axes.
    let (min_b, max_b) = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .fold((u64::MAX, 0), |(lo, hi), b| (lo.min(b), hi.max(b)));
    let lo = (min_b as f64).log2().floor();
    let hi = ((max_b as f64).log2().ceil()).max(lo + 1.0);
    let span = hi - lo;
    let step = if span >= 40.0 {
        10
    } else if span >= 10.0 {
        5
    } else {
        1
    };
    let (lo_i, hi_i) = (lo as i64, hi as i64);
    let x_range = Log2Bytes {
        lo: lo - 0.3,
        hi: hi + 0.3,
        bold: (lo_i..=hi_i)
            .filter(|e| e % step == 0)
            .map(|e| e as f64)
            .collect(),
        light: (lo_i..=hi_i).map(|e| e as f64).collect(),
    };

    // y: linear from 0, 10% headroom above the highest point.
    let max_bw = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let y_max = if max_bw > 0.0 { max_bw * 1.1 } else { 1.0 };
    let y_decimals = if y_max >= 20.0 {
        0
    } else if y_max >= 2.0 {
        1
    } else if y_max >= 0.2 {
        2
    } else {
        3
    };

    let mut chart = ChartBuilder::on(&root)
        .margin(20)
        .margin_top(56)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x_range, 0.0..y_max)
        .map_err(|e| fail(&e))?;

    let y_fmt = |v: &f64| format!("{v:.y_decimals$}");
    chart
        .configure_mesh()
        .x_desc("Transfer size (bytes)")
        .y_desc("Bandwidth (MB/s)")
        .y_label_formatter(&y_fmt)
        .label_style((family, 16))
        .axis_desc_style((family, 19))
        .bold_line_style(RGBColor(200, 200, 200))
        .light_line_style(RGBColor(236, 236, 236))
        .y_max_light_lines(1)
        .draw()
        .map_err(|e| fail(&e))?;

    for (i, c) in curves.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut pts: Vec<(f64, f64)> = c
            .points
            .iter()
            .map(|&(b, mbs)| ((b as f64).log2(), mbs))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(|e| fail(&e))?;
        // Markers in pixel coordinates of `root` (the x range is padded, so none is cut).
        for p in &pts {
            draw_marker(&root, i, chart.backend_coord(p), color).map_err(|e| fail(&e))?;
        }
    }

    // Legend, upper left inside the plot (bandwidth curves rise to the right), drawn by
    // hand in pixel coordinates so it needs no font metrics beyond `text_width`.
    let plot = chart.plotting_area().strip_coord_spec();
    let legend_size = 16.0;
    let legend_style = TextStyle::from((family, legend_size).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let row_h = 24;
    let sample_w = 36;
    let pad = 10;
    let text_w = curves
        .iter()
        .map(|c| text_width(&plot, &c.label, &legend_style, legend_size))
        .max()
        .unwrap_or(0);
    let (x0, y0) = (14, 14);
    let box_w = pad + sample_w + 8 + text_w + pad;
    let box_h = pad + row_h * curves.len() as i32 + pad - 4;
    plot.draw(&Rectangle::new(
        [(x0, y0), (x0 + box_w, y0 + box_h)],
        WHITE.mix(0.9).filled(),
    ))
    .map_err(|e| fail(&e))?;
    plot.draw(&Rectangle::new(
        [(x0, y0), (x0 + box_w, y0 + box_h)],
        RGBColor(120, 120, 120),
    ))
    .map_err(|e| fail(&e))?;
    for (i, c) in curves.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let y = y0 + pad + row_h * i as i32 + row_h / 2 - 2;
        let (lx0, lx1) = (x0 + pad, x0 + pad + sample_w);
        plot.draw(&PathElement::new(
            vec![(lx0, y), (lx1, y)],
            color.stroke_width(2),
        ))
        .map_err(|e| fail(&e))?;
        draw_marker(&plot, i, ((lx0 + lx1) / 2, y), color).map_err(|e| fail(&e))?;
        plot.draw(&Text::new(
            c.label.as_str(),
            (lx1 + 8, y),
            legend_style.clone(),
        ))
        .map_err(|e| fail(&e))?;
    }

    root.present().map_err(|e| {
        format!(
            "writing the plot to {} failed: {e} (does the directory exist and is it writable?)",
            path.display()
        )
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh temp directory, removed on drop.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new() -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let p = std::env::temp_dir().join(format!(
                "shmemplus-plot-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn curves() -> Vec<Curve> {
        let sizes = (3..=25).map(|e| 1u64 << e);
        let put = sizes
            .clone()
            .map(|b| (b, 9000.0 * b as f64 / (b as f64 + 4096.0)))
            .collect();
        let get = sizes
            .map(|b| (b, 5200.0 * b as f64 / (b as f64 + 16384.0)))
            .collect();
        vec![
            Curve {
                label: "cpu-cpu put".into(),
                points: put,
            },
            Curve {
                label: "cpu-fpga get".into(),
                points: get,
            },
        ]
    }

    pub(crate) fn font_present() -> bool {
        FONT_CANDIDATES.iter().any(|p| Path::new(p).exists())
    }

    /// The contents of the SVG's `<text>` elements (plotters puts them on their own line).
    pub(crate) fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..t.find("</text>")?];
                Some(body.trim().to_string())
            })
            .collect()
    }

    fn check_svg(svg: &str) {
        assert!(svg.len() > 5000, "SVG too small: {} bytes", svg.len());
        assert!(svg.starts_with("<svg"), "not an SVG: {}", &svg[..40]);
        let texts = svg_texts(svg);
        for want in [
            "cpu-cpu put",
            "cpu-fpga get",
            "Put and get bandwidth",
            "Transfer size (bytes)",
            "Bandwidth (MB/s)",
        ] {
            assert!(
                texts.iter().any(|t| t == want),
                "no text {want:?} in {texts:?}"
            );
        }
        // x tick labels: exactly the powers of two 2^5, 2^10, ... in range (8 B .. 32 MiB).
        let x_ticks: Vec<&str> = texts
            .iter()
            .map(String::as_str)
            .filter(|t| t.ends_with('K') || t.ends_with('M') || *t == "32")
            .collect();
        assert_eq!(x_ticks, ["32", "1K", "32K", "1M", "32M"], "{texts:?}");
        // y starts at 0.
        assert!(texts.iter().any(|t| t == "0"), "{texts:?}");
        // One line (polyline) per curve.
        assert!(svg.matches("<polyline").count() >= 2);
    }

    #[test]
    fn svg_has_labels_title_and_axis_ticks() {
        let dir = TempDir::new();
        let path = dir.0.join("bw.svg");
        plot_bandwidth(&path, "Put and get bandwidth", &curves()).unwrap();
        check_svg(&std::fs::read_to_string(&path).unwrap());
    }

    #[test]
    fn svg_needs_no_font_file() {
        let dir = TempDir::new();
        let path = dir.0.join("bw.svg");
        // A family nothing registers, and no font file: widths are estimated.
        render(
            &path,
            "Put and get bandwidth",
            &curves(),
            "shmemplus-no-such-family",
            &["/nonexistent/font.ttf"],
        )
        .unwrap();
        check_svg(&std::fs::read_to_string(&path).unwrap());
    }

    #[test]
    fn png_has_signature_and_size_or_says_which_font_to_install() {
        let dir = TempDir::new();
        let path = dir.0.join("bw.png");
        let r = plot_bandwidth(&path, "Put and get bandwidth", &curves());
        if !font_present() {
            let e = r.unwrap_err();
            assert!(e.contains("fonts-dejavu-core"), "{e}");
            return;
        }
        r.unwrap();
        let png = std::fs::read(&path).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((w, h), (WIDTH, HEIGHT));
        // Text, lines and grid compress to far more than a blank image would.
        assert!(png.len() > 20_000, "PNG suspiciously small: {}", png.len());
    }

    #[test]
    fn png_without_font_says_what_to_install() {
        let dir = TempDir::new();
        let path = dir.0.join("bw.png");
        let e = render(&path, "t", &curves(), FAMILY, &["/nonexistent/font.ttf"]).unwrap_err();
        assert!(e.contains("fonts-dejavu-core"), "{e}");
        assert!(e.contains(".svg"), "{e}");
        assert!(e.contains("/nonexistent/font.ttf"), "{e}");
        assert!(!path.exists());
    }

    #[test]
    fn unknown_or_missing_extension_errors() {
        let dir = TempDir::new();
        let e = plot_bandwidth(&dir.0.join("bw.jpg"), "t", &curves()).unwrap_err();
        assert!(e.contains(".jpg"), "{e}");
        assert!(e.contains(".svg") && e.contains(".png"), "{e}");
        let e = plot_bandwidth(&dir.0.join("bw"), "t", &curves()).unwrap_err();
        assert!(e.contains("no extension"), "{e}");
        assert!(!dir.0.join("bw.jpg").exists());
    }

    #[test]
    fn empty_curves_and_bad_points_error() {
        let dir = TempDir::new();
        let path = dir.0.join("bw.svg");
        let e = plot_bandwidth(&path, "t", &[]).unwrap_err();
        assert!(e.contains("at least one curve"), "{e}");
        let empty = Curve {
            label: "gpu-gpu put".into(),
            points: vec![],
        };
        let e = plot_bandwidth(&path, "t", &[empty]).unwrap_err();
        assert!(e.contains("'gpu-gpu put' has no points"), "{e}");
        let zero = Curve {
            label: "z".into(),
            points: vec![(0, 1.0), (8, 2.0)],
        };
        let e = plot_bandwidth(&path, "t", &[zero]).unwrap_err();
        assert!(e.contains("0 bytes"), "{e}");
        let nan = Curve {
            label: "n".into(),
            points: vec![(8, f64::NAN)],
        };
        assert!(plot_bandwidth(&path, "t", &[nan]).is_err());
        assert!(!path.exists());
    }

    #[test]
    fn size_labels() {
        let got: Vec<_> = [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
            .iter()
            .map(|&e| size_label(e))
            .collect();
        assert_eq!(got, ["1", "32", "1K", "32K", "1M", "32M", "1G"]);
    }
}
