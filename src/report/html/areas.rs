//! One section per area: bar charts with CI whiskers for the plain
//! benchmarks, sweep curves on log axes for the benchmarks measured at
//! several points, and a collapsed table of every result.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{MAX_SERIES, SweepPoint, charts, esc, median_cell, swatch, sweep_point};
use crate::document::RunDoc;
use crate::harness::{BaseUnit, Measurement};
use crate::units::fmt_ratio;
use charts::{Bar, BarGroup, Point, Series};

/// A chart ready for the page.
struct Chart {
    /// What it draws (`bars`, `sweep`), its `data-kind`.
    kind: &'static str,
    /// The caption under it.
    caption: String,
    /// The `<svg>` element.
    svg: String,
}

/// The section of one area: its charts, then the table of its results.
/// Returns the number of charts.
pub(super) fn section(
    h: &mut String,
    docs: &[RunDoc],
    names: &[String],
    area: &str,
) -> anyhow::Result<usize> {
    let _ = writeln!(
        h,
        "<section class=\"area\" id=\"area-{0}\">\n<h2>{0}</h2>",
        esc(area)
    );
    let benches = Benchmarks::of(docs, area);
    let mut drawn = bar_charts(docs, names, area, &benches)?;
    drawn.extend(sweep_charts(docs, names, area, &benches)?);
    for c in &drawn {
        let _ = writeln!(
            h,
            "<figure class=\"chart\" data-kind=\"{}\">{}<figcaption>{}</figcaption></figure>",
            c.kind,
            c.svg,
            esc(&c.caption)
        );
    }
    table(h, docs, area);
    h.push_str("</section>\n");
    Ok(drawn.len())
}

/// The benchmarks of an area and which of them are drawn as curves.
struct Benchmarks<'a> {
    /// Every id with its first measurement, in first-appearance order.
    ids: Vec<(&'a str, &'a Measurement)>,
    /// The sweep point of each id drawn on a curve: one whose curve has at
    /// least two distinct x values.
    sweeps: BTreeMap<&'a str, SweepPoint>,
}

impl<'a> Benchmarks<'a> {
    fn of(docs: &'a [RunDoc], area: &'a str) -> Benchmarks<'a> {
        let mut ids: Vec<(&str, &Measurement)> = Vec::new();
        for d in docs {
            for m in d.area(area) {
                if !ids.iter().any(|(id, _)| *id == m.id) {
                    ids.push((&m.id, m));
                }
            }
        }
        let mut sweeps: BTreeMap<&str, SweepPoint> = ids
            .iter()
            .filter_map(|(id, m)| sweep_point(m).map(|p| (*id, p)))
            .collect();
        let mut curve_xs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for p in sweeps.values() {
            let xs = curve_xs.entry(p.curve.clone()).or_default();
            if !xs.contains(&p.x) {
                xs.push(p.x);
            }
        }
        sweeps.retain(|_, p| curve_xs.get(&p.curve).is_some_and(|x| x.len() >= 2));
        Benchmarks { ids, sweeps }
    }

    /// True when `id` is drawn on a sweep curve rather than as bars.
    fn is_sweep(&self, id: &str) -> bool {
        self.sweeps.contains_key(id)
    }
}

/// Bars per unit for the benchmarks that are not sweep points, split
/// into charts of at most [`charts::MAX_GROUPS`] benchmarks.
fn bar_charts(
    docs: &[RunDoc],
    names: &[String],
    area: &str,
    benches: &Benchmarks,
) -> anyhow::Result<Vec<Chart>> {
    let mut units: Vec<BaseUnit> = Vec::new();
    for (id, m) in &benches.ids {
        if !benches.is_sweep(id) && !units.contains(&m.unit) {
            units.push(m.unit);
        }
    }
    let mut out = Vec::new();
    for unit in units {
        let groups = bar_groups(docs, benches, unit);
        let chunks: Vec<&[BarGroup]> = groups.chunks(charts::MAX_GROUPS).collect();
        let better = if unit.higher_is_better() {
            "higher is better"
        } else {
            "lower is better"
        };
        for (i, chunk) in chunks.iter().enumerate() {
            let title = format!("{area}: {unit}{}", charts::part(i, chunks.len()));
            out.push(Chart {
                kind: "bars",
                caption: format!(
                    "{area}, {unit} ({better}): median per run with its 95% CI as whiskers"
                ),
                svg: charts::bars_svg(&title, unit, chunk, names)?,
            });
        }
    }
    Ok(out)
}

/// One bar group per benchmark of `unit` that is not a sweep point, a bar
/// per run.
fn bar_groups(docs: &[RunDoc], benches: &Benchmarks, unit: BaseUnit) -> Vec<BarGroup> {
    benches
        .ids
        .iter()
        .filter(|(id, m)| m.unit == unit && !benches.is_sweep(id))
        .map(|(id, _)| BarGroup {
            label: id.to_string(),
            bars: docs
                .iter()
                .map(|d| {
                    d.results.iter().find(|m| m.id == *id).map(|m| Bar {
                        median: m.median,
                        lo: m.ci_low,
                        hi: m.ci_high,
                        noisy: m.noisy,
                    })
                })
                .collect(),
        })
        .collect()
}

/// Sweeps of one unit against one swept quantity: the curves drawn
/// together, each with its base.
struct Family {
    unit: BaseUnit,
    x_name: String,
    bytes: bool,
    /// (base, curve), in first-appearance order.
    curves: Vec<(String, String)>,
}

/// The sweep families of an area, in first-appearance order.
fn families(benches: &Benchmarks) -> Vec<Family> {
    let mut families: Vec<Family> = Vec::new();
    for (id, m) in &benches.ids {
        let Some(p) = benches.sweeps.get(id) else {
            continue;
        };
        let unit = m.unit;
        let curve = (p.base.clone(), p.curve.clone());
        match families
            .iter_mut()
            .find(|f| f.unit == unit && f.x_name == p.x_name)
        {
            Some(f) => {
                if !f.curves.contains(&curve) {
                    f.curves.push(curve);
                }
            }
            None => families.push(Family {
                unit,
                x_name: p.x_name.clone(),
                bytes: p.bytes,
                curves: vec![curve],
            }),
        }
    }
    families
}

/// One chart per sweep family, split by base (a benchmark, its curves
/// together) when it would have more than [`MAX_SERIES`] series, and a
/// base's curves apart when they alone would.
fn sweep_charts(
    docs: &[RunDoc],
    names: &[String],
    area: &str,
    benches: &Benchmarks,
) -> anyhow::Result<Vec<Chart>> {
    let mut out = Vec::new();
    for family in families(benches) {
        let Family {
            unit,
            x_name,
            bytes,
            curves,
        } = &family;
        for (base, group) in chart_groups(curves, docs.len()) {
            let series = sweep_series(docs, names, area, &family, &group);
            if series.is_empty() {
                continue;
            }
            let title = match (group.as_slice(), base) {
                ([one], _) => format!("{one} vs {x_name}"),
                (_, Some(base)) => format!("{base} vs {x_name}"),
                (_, None) => format!("{area}: {unit} vs {x_name}"),
            };
            out.push(Chart {
                kind: "sweep",
                caption: format!(
                    "{}: {unit} against {x_name}, log axes; each line labelled at its end, hollow markers are noisy",
                    group.join(", ")
                ),
                svg: charts::sweep_svg(&title, *unit, x_name, *bytes, &series)?,
            });
        }
    }
    Ok(out)
}

/// The curves of a family split into charts of at most [`MAX_SERIES`]
/// series (`runs` series a curve): all in one, else one chart per base,
/// else one per curve; each group with its base when it has only one.
fn chart_groups(curves: &[(String, String)], runs: usize) -> Vec<(Option<String>, Vec<String>)> {
    let keys = |cs: &[&(String, String)]| cs.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>();
    let all: Vec<&(String, String)> = curves.iter().collect();
    let one_base = |cs: &[&(String, String)]| {
        let first = &cs.first()?.0;
        cs.iter().all(|(b, _)| b == first).then(|| first.clone())
    };
    if all.len() * runs <= MAX_SERIES {
        return vec![(one_base(&all), keys(&all))];
    }
    let mut bases: Vec<&str> = Vec::new();
    for (b, _) in curves {
        if !bases.contains(&b.as_str()) {
            bases.push(b);
        }
    }
    let mut out = Vec::new();
    for base in bases {
        let of_base: Vec<&(String, String)> = curves.iter().filter(|(b, _)| b == base).collect();
        if of_base.len() * runs <= MAX_SERIES {
            out.push((Some(base.to_string()), keys(&of_base)));
        } else {
            out.extend(
                of_base
                    .iter()
                    .map(|(b, c)| (Some(b.clone()), vec![c.clone()])),
            );
        }
    }
    out
}

/// The series of one chart: one per curve of `group` and run.
fn sweep_series(
    docs: &[RunDoc],
    names: &[String],
    area: &str,
    family: &Family,
    group: &[String],
) -> Vec<Series> {
    let mut series = Vec::new();
    for (bi, key) in group.iter().enumerate() {
        for (ri, d) in docs.iter().enumerate() {
            let points = curve(d, area, family, key);
            if points.is_empty() {
                continue;
            }
            let name = match (group.len() > 1, docs.len() > 1) {
                (true, true) => format!("{key} · {}", d.run.id),
                (true, false) => key.clone(),
                (false, _) => names[ri].clone(),
            };
            // Three cues per series, so that none depends on colour
            // alone: several runs differ in colour and line pattern
            // (and marker when the chart has one benchmark), several
            // benchmarks in marker shape.
            let (color, dash, marker) = if docs.len() > 1 {
                (ri, ri, if group.len() > 1 { bi } else { ri })
            } else {
                (series.len(), series.len(), series.len())
            };
            series.push(Series {
                name,
                color,
                marker,
                dash,
                points,
            });
        }
    }
    series
}

/// The points of the curve `key` in one run, sorted by x.
fn curve(d: &RunDoc, area: &str, family: &Family, key: &str) -> Vec<Point> {
    let mut points: Vec<Point> = d
        .area(area)
        .filter(|m| m.unit == family.unit)
        .filter_map(|m| {
            let p = sweep_point(m)?;
            (p.curve == key && p.x_name == family.x_name).then_some(Point {
                x: p.x,
                y: m.median,
                noisy: m.noisy,
            })
        })
        .collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    points
}

/// Every result of the area, collapsed: one column per run and, for the
/// later runs, their ratio to the first.
fn table(h: &mut String, docs: &[RunDoc], area: &str) {
    let mut ids: Vec<&str> = Vec::new();
    for d in docs {
        for m in d.area(area) {
            if !ids.contains(&m.id.as_str()) {
                ids.push(&m.id);
            }
        }
    }
    if ids.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<details><summary>table of the {} results</summary>\n<table>\n<tr><th>benchmark</th>",
        ids.len()
    );
    for (i, d) in docs.iter().enumerate() {
        let _ = write!(h, "<th>{}<code>{}</code></th>", swatch(i), esc(&d.run.id));
        if i > 0 {
            let _ = write!(h, "<th>÷ {}</th>", esc(&docs[0].run.id));
        }
    }
    h.push_str("</tr>\n");
    for id in ids {
        let _ = write!(h, "<tr><td><code>{}</code></td>", esc(id));
        let first = docs[0].results.iter().find(|m| m.id == id);
        for (i, d) in docs.iter().enumerate() {
            let m = d.results.iter().find(|m| m.id == id);
            match m {
                Some(m) => h.push_str(&median_cell(m, true)),
                None => h.push_str("<td class=\"num\">—</td>"),
            }
            if i > 0 {
                let ratio = match (m, first) {
                    (Some(m), Some(f)) if f.median > 0.0 => fmt_ratio(m.median / f.median),
                    _ => "—".to_string(),
                };
                let _ = write!(h, "<td class=\"num\">{}</td>", esc(&ratio));
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n</details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run with an IPC round-trip sweep on one CPU and across two.
    fn ipc_run() -> RunDoc {
        let mut d: RunDoc = serde_json::from_str(crate::analysis::score::reference_json())
            .expect("the reference is a run");
        d.results.clear();
        for (placement, ns) in [("same", 4_000.0), ("cross", 20_000.0)] {
            for size in [8u64, 4096, 65536] {
                let id = format!(
                    "ipc.pipe.rtt/{}/{placement}",
                    crate::units::size_label(size)
                );
                let mut m = Measurement::point(&id, "ns/op", ns + size as f64);
                m.params.insert("size".into(), size.into());
                d.results.push(m);
            }
        }
        d
    }

    #[test]
    fn each_placement_is_its_own_curve_on_one_chart() {
        let docs = [ipc_run()];
        let names = vec!["run".to_string()];
        let benches = Benchmarks::of(&docs, "ipc");
        let families = families(&benches);
        assert_eq!(families.len(), 1);
        let groups = chart_groups(&families[0].curves, 1);
        assert_eq!(groups.len(), 1, "one chart: {groups:?}");
        let (base, group) = &groups[0];
        assert_eq!(base.as_deref(), Some("ipc.pipe.rtt"));
        let series = sweep_series(&docs, &names, "ipc", &families[0], group);
        let drawn: Vec<(&str, usize)> = series
            .iter()
            .map(|s| (s.name.as_str(), s.points.len()))
            .collect();
        assert_eq!(drawn, [("ipc.pipe.rtt/same", 3), ("ipc.pipe.rtt/cross", 3)]);
        // Each curve is one placement: it rises with size, no zigzag.
        for s in &series {
            assert!(s.points.windows(2).all(|w| w[0].y < w[1].y), "{}", s.name);
        }
        let charts = sweep_charts(&docs, &names, "ipc", &benches).unwrap();
        assert_eq!(charts.len(), 1);
        assert!(charts[0].svg.contains("ipc.pipe.rtt vs size"));
    }
}
