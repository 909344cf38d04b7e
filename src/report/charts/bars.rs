//! Bar charts: one group per benchmark, one horizontal bar per run with
//! its 95% CI as whiskers.

use plotters::prelude::*;

use super::axis::{Axis, Scale, tick_label};
use super::{Mesh, Plot, color, draw_err, draw_mesh, label_px, plot, row_centers, row_label, svg};
use crate::units::{BaseUnit, human};

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

/// Horizontal bars, one group per benchmark and one bar per run, with the
/// 95% CI as whiskers; noisy bars are pale and their value ends in `~`.
/// `run_names[i]` names run `i`. Returns the SVG element.
pub fn bars_svg(
    title: &str,
    unit: BaseUnit,
    groups: &[BarGroup],
    run_names: &[String],
) -> anyhow::Result<String> {
    let runs = run_names.len().max(1);
    let n = groups.len().max(1);
    let bar_px = if runs == 1 { 18 } else { 13 };
    let group_px = (runs * bar_px + 10) as u32;
    let height = 70 + n as u32 * group_px + 50;
    let labels: Vec<&str> = groups.iter().map(|g| g.label.as_str()).collect();
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
    svg(height, |root| {
        let mut chart = plot(
            root,
            title,
            (44, label_px(&labels)),
            Axis::new(scale.lo, x_hi, scale.ticks()),
            Axis::new(0.0, n as f64, row_centers(n)),
        )?;
        draw_mesh(
            &mut chart,
            Mesh {
                x_desc: if scale.log {
                    format!("{unit} (log scale)")
                } else {
                    unit.to_string()
                },
                y_desc: None,
                y_mesh: false,
                x_fmt: &|p| tick_label(scale.value(*p), unit),
                y_fmt: &|p| row_label(&labels, n, *p),
            },
        )?;
        let slot = 0.8 / runs as f64;
        for (gi, g) in groups.iter().enumerate() {
            let top = (n - 1 - gi) as f64 + 0.9;
            for (ri, bar) in g.bars.iter().enumerate() {
                let Some(b) = bar else { continue };
                let y1 = top - ri as f64 * slot;
                draw_bar(&mut chart, &scale, unit, b, ri, (y1 - slot * 0.85, y1))?;
            }
        }
        Ok(())
    })
}

/// Draws run `ri`'s bar between `y0` and `y1`: the bar (pale when noisy),
/// its whiskers and its value at the right.
fn draw_bar(
    chart: &mut Plot<'_, '_>,
    scale: &Scale,
    unit: BaseUnit,
    b: &Bar,
    ri: usize,
    (y0, y1): (f64, f64),
) -> anyhow::Result<()> {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_produce_svg() {
        let groups = vec![BarGroup {
            label: "a.b".into(),
            bars: vec![Some(Bar {
                median: 2.0,
                lo: 1.9,
                hi: 2.1,
                noisy: false,
            })],
        }];
        let svg = bars_svg("t", BaseUnit::NsPerOp, &groups, &["r".into()]).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<rect"));
        assert!(svg.contains("a.b"), "the benchmark names its row: {svg}");
    }
}
