//! Charts for the HTML report, drawn by plotters into inline SVG: bars with
//! CI whiskers (one bar per run) and sweep curves on log axes.
//!
//! Values are plotted in transformed coordinates (log10 of the value on a
//! log axis) with tick positions chosen here, so one drawing path serves
//! linear and log axes and the ticks read in human units (ns, µs, GB/s,
//! KiB) instead of raw exponents.

use std::ops::Range;

use anyhow::anyhow;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

use crate::units::{human, human_bytes};

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

/// One bar: a run's median of a benchmark with its 95% CI.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    /// The median (base unit).
    pub median: f64,
    /// Lower bound of the CI.
    pub lo: f64,
    /// Upper bound of the CI.
    pub hi: f64,
    /// Marked noisy.
    pub noisy: bool,
}

/// One benchmark: a bar per run (`None` where the run lacks it).
#[derive(Clone, Debug, PartialEq)]
pub struct BarGroup {
    /// The benchmark id shown on the axis.
    pub label: String,
    /// Index `i` is run `i`.
    pub bars: Vec<Option<Bar>>,
}

/// One point of a sweep curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// The sweep parameter (a size in bytes, a count...).
    pub x: f64,
    /// The median (base unit).
    pub y: f64,
    /// Marked noisy.
    pub noisy: bool,
}

/// One curve of a sweep chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The label written at the line's end.
    pub name: String,
    /// Index into [`color`].
    pub color: usize,
    /// Index of the marker shape (circle, triangle, square, cross, ...).
    pub marker: usize,
    /// Index of the line pattern (solid, dashed, dotted, long dashes).
    pub dash: usize,
    /// Points sorted by `x`.
    pub points: Vec<Point>,
}

/// The marker shapes, by [`Series::marker`] index.
pub const MARKERS: [&str; 4] = ["circle", "triangle", "square", "cross"];

/// The line patterns (dash, gap in pixels; 0 = solid), by [`Series::dash`] index.
const DASHES: [(u32, u32); 4] = [(0, 0), (8, 5), (2, 4), (14, 4)];

/// Draws one marker of shape `shape` at `xy` (backend pixels).
fn marker_at<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    shape: usize,
    xy: (i32, i32),
    c: RGBColor,
    hollow: bool,
) -> anyhow::Result<()> {
    let style = if hollow {
        c.stroke_width(1)
    } else {
        c.filled()
    };
    let (x, y) = xy;
    match shape % MARKERS.len() {
        0 => area.draw(&Circle::new(xy, 4, style)),
        1 => area.draw(&TriangleMarker::new(xy, 5, style)),
        2 => area.draw(&Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], style)),
        _ => area.draw(&Cross::new(xy, 4, c.stroke_width(2))),
    }
    .map_err(draw_err)
}

/// An axis: linear from 0, or logarithmic (base 10 over whole decades, or
/// base 2 over whole powers of two for byte sizes).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Scale {
    log: bool,
    /// 10, or 2 for byte sizes (ticks at 1 KiB, 16 KiB... instead of 9.77 KiB).
    base: f64,
    lo: f64,
    hi: f64,
}

impl Scale {
    /// A scale covering the positive finite `values`: log10 over whole
    /// decades when they span more than `log_above` (max / min) or when
    /// `force_log`, else linear from 0.
    fn fit(values: impl Iterator<Item = f64>, log_above: f64, force_log: bool) -> Scale {
        let Some((min, max)) = positive_range(values) else {
            return Scale::linear(1.0);
        };
        if force_log || max / min > log_above {
            Scale::log_over(10.0, min, max)
        } else {
            Scale::linear(nice_ceil(max * 1.05))
        }
    }

    /// A log2 scale over whole powers of two (for byte sizes).
    fn fit_pow2(values: impl Iterator<Item = f64>) -> Scale {
        match positive_range(values) {
            Some((min, max)) => Scale::log_over(2.0, min, max),
            None => Scale::linear(1.0),
        }
    }

    fn linear(hi: f64) -> Scale {
        Scale {
            log: false,
            base: 10.0,
            lo: 0.0,
            hi,
        }
    }

    fn log_over(base: f64, min: f64, max: f64) -> Scale {
        let lo = min.log(base).floor();
        let mut hi = max.log(base).ceil();
        if hi <= lo {
            hi = lo + 1.0;
        }
        Scale {
            log: true,
            base,
            lo,
            hi,
        }
    }

    /// The plotting coordinate of a value.
    fn pos(&self, v: f64) -> f64 {
        if self.log {
            if v > 0.0 {
                v.log(self.base).clamp(self.lo, self.hi)
            } else {
                self.lo
            }
        } else {
            v.clamp(self.lo, self.hi)
        }
    }

    /// The value at a plotting coordinate.
    fn value(&self, p: f64) -> f64 {
        if self.log { self.base.powf(p) } else { p }
    }

    /// Tick positions (plotting coordinates).
    fn ticks(&self) -> Vec<f64> {
        if self.log && self.base == 2.0 {
            // Every k-th power of two, at most ~10 ticks, aligned to multiples of k.
            let span = (self.hi - self.lo).round() as i64;
            let k = ((span + 9) / 10).max(1);
            let first = (self.lo as i64).div_euclid(k) * k;
            (0..)
                .map(|i| (first + i * k) as f64)
                .take_while(|p| *p <= self.hi)
                .filter(|p| *p >= self.lo)
                .collect()
        } else if self.log {
            let decades = (self.hi - self.lo).round() as i64;
            let mut t = Vec::new();
            for d in 0..=decades {
                let base = self.lo + d as f64;
                t.push(base);
                if decades <= 2 && d < decades {
                    t.push(base + 2f64.log10());
                    t.push(base + 5f64.log10());
                }
            }
            t
        } else {
            let step = nice_step(self.hi / 5.0);
            (0..=((self.hi / step).round() as i64))
                .map(|i| i as f64 * step)
                .filter(|v| *v <= self.hi * 1.0001)
                .collect()
        }
    }
}

/// The smallest and largest positive finite values, if any.
fn positive_range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut min, mut max) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        min = min.min(v);
        max = max.max(v);
    }
    (min.is_finite() && max > 0.0).then_some((min, max))
}

/// A linear axis in plotting coordinates with ticks chosen here (plotters'
/// own key points would fall on round exponents, not on round values).
#[derive(Clone, Debug)]
struct Axis {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl Axis {
    fn new(lo: f64, hi: f64, ticks: Vec<f64>) -> Axis {
        Axis {
            range: lo..hi,
            ticks,
        }
    }
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let f = if span > 0.0 {
            (v - self.range.start) / span
        } else {
            0.0
        };
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The smallest 1, 2 or 5 × 10^k at or above `x`.
fn nice_ceil(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let e = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * e)
        .find(|v| *v >= x * 0.9999)
        .unwrap_or(10.0 * e)
}

/// A tick step of 1, 2 or 5 × 10^k near `x`.
fn nice_step(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let e = 10f64.powf(x.log10().floor());
    let m = x / e;
    let f = if m < 1.5 {
        1.0
    } else if m < 3.5 {
        2.0
    } else if m < 7.5 {
        5.0
    } else {
        10.0
    };
    f * e
}

/// A tick label in human units; zero is plain `0`.
fn tick_label(v: f64, unit: &str) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        human(v, unit)
    }
}

fn draw_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// Horizontal bars, one group per benchmark and one bar per run, with the
/// 95% CI as whiskers; noisy bars are pale and their value ends in `~`.
/// `run_names[i]` names run `i`. Returns the SVG element.
pub fn bars_svg(
    title: &str,
    unit: &str,
    groups: &[BarGroup],
    run_names: &[String],
) -> anyhow::Result<String> {
    let runs = run_names.len().max(1);
    let n = groups.len().max(1);
    let bar_px = if runs == 1 { 18 } else { 13 };
    let group_px = (runs * bar_px + 10) as u32;
    let height = 70 + n as u32 * group_px + 50;
    let longest = groups
        .iter()
        .map(|g| g.label.chars().count())
        .max()
        .unwrap_or(8);
    let label_px = ((longest as f64 * 7.2) as u32 + 16).clamp(80, 420);
    let scale = Scale::fit(
        groups
            .iter()
            .flat_map(|g| g.bars.iter().flatten().flat_map(|b| [b.median, b.lo, b.hi])),
        50.0,
        false,
    );
    // Room on the right for the value labels.
    let x_hi = if scale.log {
        scale.hi + (scale.hi - scale.lo) * 0.22
    } else {
        scale.hi * 1.22
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let centers: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(label_px)
            .build_cartesian_2d(
                Axis::new(scale.lo, x_hi, scale.ticks()),
                Axis::new(0.0, n as f64, centers),
            )
            .map_err(draw_err)?;
        let x_fmt = |p: &f64| tick_label(scale.value(*p), unit);
        let y_fmt = |p: &f64| {
            let i = n as isize - 1 - p.floor() as isize;
            usize::try_from(i)
                .ok()
                .and_then(|i| groups.get(i))
                .map(|g| g.label.clone())
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(if scale.log {
                format!("{unit} (log scale)")
            } else {
                unit.to_string()
            })
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 13))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(draw_err)?;
        let slot = 0.8 / runs as f64;
        for (gi, g) in groups.iter().enumerate() {
            let top = (n - 1 - gi) as f64 + 0.9;
            for (ri, bar) in g.bars.iter().enumerate() {
                let Some(b) = bar else { continue };
                let y1 = top - ri as f64 * slot;
                let y0 = y1 - slot * 0.85;
                let yc = (y0 + y1) / 2.0;
                let c = color(ri);
                let fill = if b.noisy {
                    c.mix(0.3).filled()
                } else {
                    c.filled()
                };
                chart
                    .draw_series([
                        Rectangle::new([(scale.lo, y0), (scale.pos(b.median), y1)], fill),
                        Rectangle::new(
                            [(scale.lo, y0), (scale.pos(b.median), y1)],
                            c.stroke_width(1),
                        ),
                    ])
                    .map_err(draw_err)?;
                chart
                    .draw_series([ErrorBar::new_horizontal(
                        yc,
                        scale.pos(b.lo),
                        scale.pos(b.median),
                        scale.pos(b.hi),
                        BLACK.stroke_width(1),
                        6,
                    )])
                    .map_err(draw_err)?;
                let text = format!(
                    "{}{}",
                    human(b.median, unit),
                    if b.noisy { " ~" } else { "" }
                );
                chart
                    .draw_series([EmptyElement::at((scale.pos(b.hi.max(b.median)), yc))
                        + Text::new(text, (6, -7), ("sans-serif", 12).into_font())])
                    .map_err(draw_err)?;
            }
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Curves of a sweep: x (the swept size or count) on a log axis, the value
/// on a log axis when it spans more than a factor of 10. Noisy points are
/// hollow. `x_is_bytes` formats the x ticks as KiB/MiB.
pub fn sweep_svg(
    title: &str,
    unit: &str,
    x_name: &str,
    x_is_bytes: bool,
    series: &[Series],
) -> anyhow::Result<String> {
    let height = 460;
    let x_values = series.iter().flat_map(|s| s.points.iter().map(|p| p.x));
    let xs = if x_is_bytes {
        Scale::fit_pow2(x_values)
    } else {
        Scale::fit(x_values, 1.0, true)
    };
    let ys = Scale::fit(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.y)),
        10.0,
        false,
    );
    // The longest end label decides how much room the plot leaves at its right.
    let longest = series
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    let plot_px = f64::from(WIDTH) - 130.0;
    let label_room = ((longest as f64 * 6.6 + 20.0) / plot_px).clamp(0.05, 0.6)
        / (1.0 - ((longest as f64 * 6.6 + 20.0) / plot_px).clamp(0.05, 0.6));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(90)
            .build_cartesian_2d(
                Axis::new(xs.lo, xs.hi + (xs.hi - xs.lo) * label_room, xs.ticks()),
                Axis::new(ys.lo, ys.hi, ys.ticks()),
            )
            .map_err(draw_err)?;
        let x_fmt = |p: &f64| {
            let v = xs.value(*p);
            if x_is_bytes && v >= 1.0 && v.fract() == 0.0 {
                crate::units::size_label(v as u64)
            } else if x_is_bytes {
                human_bytes(v)
            } else {
                crate::units::sig3(v)
            }
        };
        let y_fmt = |p: &f64| tick_label(ys.value(*p), unit);
        chart
            .configure_mesh()
            .x_desc(format!("{x_name} (log scale)"))
            .y_desc(if ys.log {
                format!("{unit} (log scale)")
            } else {
                unit.to_string()
            })
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 13))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(draw_err)?;
        // Lines (solid or dashed), then markers, then labels at the line ends.
        let mut ends: Vec<(i32, i32, usize)> = Vec::new();
        for (si, s) in series.iter().enumerate() {
            let c = color(s.color);
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|p| (xs.pos(p.x), ys.pos(p.y)))
                .collect();
            let (dash, gap) = DASHES[s.dash % DASHES.len()];
            if dash == 0 {
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(draw_err)?;
            } else {
                chart
                    .draw_series(DashedLineSeries::new(
                        pts.clone(),
                        dash,
                        gap,
                        c.stroke_width(2),
                    ))
                    .map_err(draw_err)?;
            }
            for (p, xy) in s.points.iter().zip(&pts) {
                marker_at(&root, s.marker, chart.backend_coord(xy), c, p.noisy)?;
            }
            if let Some(last) = pts.last() {
                let (x, y) = chart.backend_coord(last);
                ends.push((x, y, si));
            }
        }
        // Labels at the right of each line's last point, pushed apart so
        // that none overlaps the one above it.
        ends.sort_by_key(|e| e.1);
        let mut prev = i32::MIN;
        for (x, y, si) in ends {
            let y = y.max(prev.saturating_add(14));
            prev = y;
            let s = &series[si];
            root.draw(&Text::new(
                s.name.clone(),
                (x + 9, y - 7),
                ("sans-serif", 12).into_font().color(&color(s.color)),
            ))
            .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// One run's time ratio against the baseline, for a forest plot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    /// Time ratio (run time / baseline time: below 1 is faster).
    pub t: f64,
    /// Lower bound of its 95% CI.
    pub lo: f64,
    /// Upper bound of its 95% CI.
    pub hi: f64,
    /// The verdict's word (`faster`, `slower`, `same`).
    pub verdict: &'static str,
}

/// One benchmark of a forest plot: a ratio per compared run.
#[derive(Clone, Debug, PartialEq)]
pub struct ForestRow {
    /// The benchmark id.
    pub label: String,
    /// `cells[k]` belongs to the run of colour `colors[k]`.
    pub cells: Vec<Option<Ratio>>,
}

/// Nice ratios for the ticks of a forest plot.
const RATIO_TICKS: [f64; 15] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.8, 1.0, 1.25, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0,
];

/// A forest plot: per benchmark, each compared run's time ratio against
/// the baseline with its 95% CI, on a log axis centred on 1 (left of the
/// line: faster). Markers are filled for a verdict and hollow for `same`;
/// the ratio and the verdict are written at the right. `colors[k]` is the
/// colour index of cell `k`.
pub fn forest_svg(
    title: &str,
    baseline: &str,
    rows: &[ForestRow],
    colors: &[usize],
) -> anyhow::Result<String> {
    let runs = colors.len().max(1);
    let n = rows.len().max(1);
    let row_px = (runs * 15 + 8) as u32;
    let height = 70 + n as u32 * row_px + 56;
    let longest = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(8);
    let label_px = ((longest as f64 * 7.2) as u32 + 16).clamp(80, 420);
    let span = rows
        .iter()
        .flat_map(|r| r.cells.iter().flatten())
        .flat_map(|c| [c.lo, c.hi, c.t])
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v.log10().abs())
        .fold(1.25f64.log10(), f64::max)
        .min(2.0)
        * 1.08;
    let ticks: Vec<f64> = RATIO_TICKS
        .iter()
        .map(|t| t.log10())
        .filter(|p| p.abs() <= span)
        .collect();
    // Room at the right for the ratio and verdict text.
    let x_hi = span + 2.0 * span * 0.28;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let centers: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(label_px)
            .build_cartesian_2d(
                Axis::new(-span, x_hi, ticks),
                Axis::new(0.0, n as f64, centers),
            )
            .map_err(draw_err)?;
        let x_fmt = |p: &f64| {
            let v = 10f64.powf(*p);
            format!(
                "{}×",
                crate::units::sig3(v)
                    .trim_end_matches('0')
                    .trim_end_matches('.')
            )
        };
        let y_fmt = |p: &f64| {
            let i = n as isize - 1 - p.floor() as isize;
            usize::try_from(i)
                .ok()
                .and_then(|i| rows.get(i))
                .map(|r| r.label.clone())
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(format!(
                "time ratio against {baseline} (log scale): left of 1× faster, right slower"
            ))
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 13))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series([PathElement::new(
                vec![(0.0, 0.0), (0.0, n as f64)],
                BLACK.mix(0.6).stroke_width(1),
            )])
            .map_err(draw_err)?;
        let slot = 0.8 / runs as f64;
        for (ri, r) in rows.iter().enumerate() {
            let top = (n - 1 - ri) as f64 + 0.9;
            for (k, cell) in r.cells.iter().enumerate() {
                let Some(c) = cell else { continue };
                let y = top - (k as f64 + 0.5) * slot;
                let col = color(colors.get(k).copied().unwrap_or(k));
                let clamp = |v: f64| v.log10().clamp(-span, span);
                chart
                    .draw_series([ErrorBar::new_horizontal(
                        y,
                        clamp(c.lo),
                        clamp(c.t),
                        clamp(c.hi),
                        col.stroke_width(2),
                        7,
                    )])
                    .map_err(draw_err)?;
                let xy = chart.backend_coord(&(clamp(c.t), y));
                marker_at(&root, 0, xy, col, c.verdict == "same")?;
                chart
                    .draw_series([EmptyElement::at((span * 1.1, y))
                        + Text::new(
                            format!("{} {}", crate::units::fmt_ratio(c.t), c.verdict),
                            (0, -7),
                            ("sans-serif", 12).into_font().color(&col),
                        )])
                    .map_err(draw_err)?;
            }
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_pick_log_for_wide_ranges() {
        let s = Scale::fit([1.0, 2.0, 3.0].into_iter(), 50.0, false);
        assert!(!s.log);
        assert!(s.hi >= 3.0);
        let s = Scale::fit([1.0, 1e4].into_iter(), 50.0, false);
        assert!(s.log);
        assert_eq!((s.lo, s.hi), (0.0, 4.0));
        assert_eq!(s.ticks().len(), 5);
    }

    #[test]
    fn byte_scales_tick_on_powers_of_two() {
        let s = Scale::fit_pow2([1024.0, 128.0 * 1024.0 * 1024.0].into_iter());
        assert_eq!((s.lo, s.hi), (10.0, 27.0));
        let t = s.ticks();
        assert!(t.len() <= 10 && t.len() >= 5, "{t:?}");
        assert!(t.iter().all(|p| p.fract() == 0.0 && *p as i64 % 2 == 0));
        assert_eq!(s.value(20.0), 1048576.0);
    }

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_ceil(3.2), 5.0);
        assert_eq!(nice_ceil(0.9), 1.0);
        assert_eq!(nice_step(1.3), 1.0);
        assert_eq!(nice_step(27.0), 20.0);
    }

    #[test]
    fn bars_and_sweeps_produce_svg() {
        let groups = vec![BarGroup {
            label: "a.b".into(),
            bars: vec![Some(Bar {
                median: 2.0,
                lo: 1.9,
                hi: 2.1,
                noisy: false,
            })],
        }];
        let svg = bars_svg("t", "ns/op", &groups, &["r".into()]).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<rect"));
        let series = vec![Series {
            name: "s".into(),
            color: 0,
            marker: 1,
            dash: 1,
            points: vec![
                Point {
                    x: 1024.0,
                    y: 1.0,
                    noisy: false,
                },
                Point {
                    x: 1048576.0,
                    y: 80.0,
                    noisy: true,
                },
            ],
        }];
        let svg = sweep_svg("t", "ns/op", "size", true, &series).unwrap();
        assert!(svg.contains("<polyline") || svg.contains("<path"));
        assert!(svg.contains("KiB"));
        assert!(
            svg.contains(">s</text>") || svg.contains(">\ns\n</text>"),
            "the line is labelled at its end: {svg}"
        );
        let rows = vec![ForestRow {
            label: "a.b".into(),
            cells: vec![Some(Ratio {
                t: 0.5,
                lo: 0.45,
                hi: 0.55,
                verdict: "faster",
            })],
        }];
        let svg = forest_svg("t", "run A", &rows, &[1]).unwrap();
        assert!(svg.contains("0.50× faster") && svg.contains("a.b"), "{svg}");
    }
}
