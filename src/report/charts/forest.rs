//! Forest plots: per benchmark, each compared run's time ratio against the
//! baseline with its 95% CI, on a log axis centred on 1.

use plotters::prelude::*;

use super::axis::Axis;
use super::marks::marker_at;
use super::{
    Canvas, Mesh, Plot, color, draw_err, draw_mesh, label_px, plot, row_centers, row_label, svg,
};

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
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    let span = half_span(rows);
    let ticks: Vec<f64> = RATIO_TICKS
        .iter()
        .map(|t| t.log10())
        .filter(|p| p.abs() <= span)
        .collect();
    // Room at the right for the ratio and verdict text.
    let x_hi = span + 2.0 * span * 0.28;
    svg(height, |root| {
        let mut chart = plot(
            root,
            title,
            (48, label_px(&labels)),
            Axis::new(-span, x_hi, ticks),
            Axis::new(0.0, n as f64, row_centers(n)),
        )?;
        draw_mesh(
            &mut chart,
            Mesh {
                x_desc: format!(
                    "time ratio against {baseline} (log scale): left of 1× faster, right slower"
                ),
                y_desc: None,
                y_mesh: false,
                x_fmt: &|p| ratio_tick(*p),
                y_fmt: &|p| row_label(&labels, n, *p),
            },
        )?;
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
                draw_ratio(root, &mut chart, span, c, (y, col))?;
            }
        }
        Ok(())
    })
}

/// How far the axis reaches either side of 1, in log10: the widest
/// interval, at least ±25% and at most 100×, with a margin.
fn half_span(rows: &[ForestRow]) -> f64 {
    rows.iter()
        .flat_map(|r| r.cells.iter().flatten())
        .flat_map(|c| [c.lo, c.hi, c.t])
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v.log10().abs())
        .fold(1.25f64.log10(), f64::max)
        .min(2.0)
        * 1.08
}

/// A tick of the ratio axis: `0.5×`, `1×`, `2×`.
fn ratio_tick(p: f64) -> String {
    let v = 10f64.powf(p);
    format!(
        "{}×",
        crate::units::sig3(v)
            .trim_end_matches('0')
            .trim_end_matches('.')
    )
}

/// Draws one ratio at height `y` in colour `col`: its interval, its marker
/// (hollow when the verdict is `same`) and its text at the right.
fn draw_ratio(
    root: &Canvas<'_>,
    chart: &mut Plot<'_, '_>,
    span: f64,
    c: &Ratio,
    (y, col): (f64, RGBColor),
) -> anyhow::Result<()> {
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
    marker_at(root, 0, xy, col, c.verdict == "same")?;
    chart
        .draw_series([EmptyElement::at((span * 1.1, y))
            + Text::new(
                format!("{} {}", crate::units::fmt_ratio(c.t), c.verdict),
                (0, -7),
                ("sans-serif", 12).into_font().color(&col),
            )])
        .map_err(draw_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forests_write_ratio_and_verdict() {
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
