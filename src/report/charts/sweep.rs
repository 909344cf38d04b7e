//! Sweep charts: one curve per benchmark and run against the swept size
//! or count, on log axes, each curve labelled at its end.

use plotters::prelude::*;

use super::axis::{Axis, Scale, tick_label};
use super::marks::{DASHES, marker_at};
use super::{Canvas, Mesh, Plot, WIDTH, color, draw_err, draw_mesh, plot, svg};
use crate::units::{BaseUnit, human_bytes};

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

/// Curves of a sweep: x (the swept size or count) on a log axis, the value
/// on a log axis when it spans more than a factor of 10. Noisy points are
/// hollow. `x_is_bytes` formats the x ticks as KiB/MiB.
pub fn sweep_svg(
    title: &str,
    unit: BaseUnit,
    x_name: &str,
    x_is_bytes: bool,
    series: &[Series],
) -> anyhow::Result<String> {
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
    let room = label_room(series);
    svg(460, |root| {
        let mut chart = plot(
            root,
            title,
            (44, 90),
            Axis::new(xs.lo, xs.hi + (xs.hi - xs.lo) * room, xs.ticks()),
            Axis::new(ys.lo, ys.hi, ys.ticks()),
        )?;
        draw_mesh(
            &mut chart,
            Mesh {
                x_desc: format!("{x_name} (log scale)"),
                y_desc: Some(if ys.log {
                    format!("{unit} (log scale)")
                } else {
                    unit.to_string()
                }),
                y_mesh: true,
                x_fmt: &|p| x_tick(xs.value(*p), x_is_bytes),
                y_fmt: &|p| tick_label(ys.value(*p), unit),
            },
        )?;
        // Each line (solid or dashed) with its markers, then the labels at
        // the line ends.
        let mut ends: Vec<(i32, i32, usize)> = Vec::new();
        for (si, s) in series.iter().enumerate() {
            if let Some((x, y)) = draw_curve(root, &mut chart, (&xs, &ys), s)? {
                ends.push((x, y, si));
            }
        }
        label_ends(root, series, ends)
    })
}

/// The room the end labels need at the right of the plot, as a fraction
/// of the x axis: the longest label decides.
fn label_room(series: &[Series]) -> f64 {
    let longest = series
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    let plot_px = f64::from(WIDTH) - 130.0;
    let share = ((longest as f64 * 6.6 + 20.0) / plot_px).clamp(0.05, 0.6);
    share / (1.0 - share)
}

/// An x tick: a size (`4KiB`, `1.50 KiB`) or a count.
fn x_tick(v: f64, bytes: bool) -> String {
    if bytes && v >= 1.0 && v.fract() == 0.0 {
        crate::units::size_label(v as u64)
    } else if bytes {
        human_bytes(v)
    } else {
        crate::units::sig3(v)
    }
}

/// Draws a curve's line and markers; returns its last point in backend
/// pixels, if it has one.
fn draw_curve(
    root: &Canvas<'_>,
    chart: &mut Plot<'_, '_>,
    (xs, ys): (&Scale, &Scale),
    s: &Series,
) -> anyhow::Result<Option<(i32, i32)>> {
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
        marker_at(root, s.marker, chart.backend_coord(xy), c, p.noisy)?;
    }
    Ok(pts.last().map(|last| chart.backend_coord(last)))
}

/// Labels at the right of each line's last point (`ends`: x, y, series),
/// pushed apart so that none overlaps the one above it.
fn label_ends(
    root: &Canvas<'_>,
    series: &[Series],
    mut ends: Vec<(i32, i32, usize)>,
) -> anyhow::Result<()> {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_produce_labelled_curves() {
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
        let svg = sweep_svg("t", BaseUnit::NsPerOp, "size", true, &series).unwrap();
        assert!(svg.contains("<polyline") || svg.contains("<path"));
        assert!(svg.contains("KiB"));
        assert!(
            svg.contains(">s</text>") || svg.contains(">\ns\n</text>"),
            "the line is labelled at its end: {svg}"
        );
    }
}
