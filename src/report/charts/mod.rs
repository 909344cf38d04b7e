//! Charts for the HTML report, drawn by plotters into inline SVG: bars with
//! CI whiskers (one bar per run), sweep curves on log axes and forest plots
//! of time ratios, one file per kind.
//!
//! Values are plotted in transformed coordinates (log10 of the value on a
//! log axis) with tick positions chosen here (in `axis.rs`), so one drawing
//! path serves linear and log axes and the ticks read in human units (ns,
//! µs, GB/s, KiB) instead of raw exponents. This module holds what every
//! kind shares: the palette, the SVG canvas, the plotting area and its mesh.

mod axis;
mod bars;
mod forest;
mod marks;
mod sweep;

pub use bars::{Bar, BarGroup, bars_svg};
pub use forest::{ForestRow, Ratio, forest_svg};
pub use marks::MARKERS;
pub use sweep::{Point, Series, sweep_svg};

use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::prelude::*;

use axis::Axis;

/// Width of every chart, in SVG pixels.
pub const WIDTH: u32 = 960;
/// Most bars groups (benchmarks) drawn in one bar chart.
pub const MAX_GROUPS: usize = 40;

/// The part a chart is of a split series, ` (2/3)`, or nothing when it is
/// the only one.
pub fn part(i: usize, of: usize) -> String {
    if of > 1 {
        format!(" ({}/{of})", i + 1)
    } else {
        String::new()
    }
}

/// The colour of run (or series) `i`: a ten-colour palette readable on white.
pub fn color(i: usize) -> RGBColor {
    const P: [(u8, u8, u8); 10] = [
        (0x4e, 0x79, 0xa7),
        (0xf2, 0x8e, 0x2b),
        (0xe1, 0x57, 0x59),
        (0x59, 0xa1, 0x4f),
        (0xb0, 0x7a, 0xa1),
        (0x76, 0xb7, 0xb2),
        (0x9c, 0x75, 0x5f),
        (0xed, 0xc9, 0x48),
        (0xff, 0x9d, 0xa7),
        (0x79, 0x70, 0x6e),
    ];
    let (r, g, b) = P[i % P.len()];
    RGBColor(r, g, b)
}

/// The colour of run `i` as CSS.
pub fn css_color(i: usize) -> String {
    let RGBColor(r, g, b) = color(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// A plotters error as an `anyhow` error.
fn draw_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// The whole drawing of a chart, in backend pixels.
type Canvas<'b> = DrawingArea<SVGBackend<'b>, Shift>;

/// The plotting area of a chart, both axes in plotting coordinates.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>;

/// An SVG element `WIDTH` × `height` on white, drawn by `draw`.
fn svg(
    height: u32,
    draw: impl FnOnce(&Canvas<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// The plotting area under a caption, with room for the tick labels below
/// (`x_label_px`) and on the left (`y_label_px`).
fn plot<'a, 'b>(
    root: &'a Canvas<'b>,
    title: &str,
    (x_label_px, y_label_px): (u32, u32),
    x: Axis,
    y: Axis,
) -> anyhow::Result<Plot<'a, 'b>> {
    ChartBuilder::on(root)
        .caption(title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(x_label_px)
        .y_label_area_size(y_label_px)
        .build_cartesian_2d(x, y)
        .map_err(draw_err)
}

/// The grid, the axes' descriptions and their tick labels.
struct Mesh<'f> {
    /// The x axis's description.
    x_desc: String,
    /// The y axis's description, if it has one.
    y_desc: Option<String>,
    /// Whether the grid has horizontal lines (not between rows of labels).
    y_mesh: bool,
    /// The label of an x tick (plotting coordinate).
    x_fmt: &'f dyn Fn(&f64) -> String,
    /// The label of a y tick (plotting coordinate).
    y_fmt: &'f dyn Fn(&f64) -> String,
}

/// Draws the mesh: light grid lines at the ticks only, 13px labels.
fn draw_mesh(chart: &mut Plot<'_, '_>, m: Mesh<'_>) -> anyhow::Result<()> {
    let mut mesh = chart.configure_mesh();
    if !m.y_mesh {
        mesh.disable_y_mesh();
    }
    mesh.x_desc(m.x_desc);
    if let Some(d) = m.y_desc {
        mesh.y_desc(d);
    }
    mesh.x_label_formatter(m.x_fmt)
        .y_label_formatter(m.y_fmt)
        .label_style(("sans-serif", 13))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()
        .map_err(draw_err)
}

/// Room for the row labels of a chart with one row per label (bars,
/// forest plots), in pixels.
fn label_px(labels: &[&str]) -> u32 {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(8);
    ((longest as f64 * 7.2) as u32 + 16).clamp(80, 420)
}

/// The centres of `n` rows, as y ticks.
fn row_centers(n: usize) -> Vec<f64> {
    (0..n).map(|i| i as f64 + 0.5).collect()
}

/// The label of the row at plotting coordinate `p` of `n` rows, the first
/// at the top.
fn row_label(labels: &[&str], n: usize, p: f64) -> String {
    let i = n as isize - 1 - p.floor() as isize;
    usize::try_from(i)
        .ok()
        .and_then(|i| labels.get(i))
        .map(|l| l.to_string())
        .unwrap_or_default()
}
