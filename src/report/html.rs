//! The HTML report: one self-contained file that works offline (inline CSS,
//! charts as inline SVG drawn by plotters, no script, no fetch).
//!
//! It reads top-down: the runs; "at a glance" (the headline price list,
//! one column per run, and the score of each run against the shipped
//! reference, with the results that went in); for two or more runs the
//! comparison of every run with the first (geometric mean of time ratios
//! per area, a forest plot per area of each benchmark's ratio with its 95%
//! CI and verdict); per area, bar charts with CI whiskers and sweep curves
//! (`id/point` with a numeric sweep parameter, see [`SWEEP_AXES`]) on log axes, each curve told apart by
//! colour, line pattern and marker and labelled at its end, and a table of
//! every result; the findings; the host descriptions, collapsed, grouped,
//! rows that differ first and highlighted, caches as a small table. Noisy
//! results are pale bars, hollow markers and `~`. Dark-mode and print
//! styles are inline.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::charts::{self, Bar, BarGroup, ForestRow, Point, Ratio, Series};
use super::format::{NOISY_MARK, esc};
use crate::compare::{Comparison, DEFAULT_THRESHOLD, compare};
use crate::document::RunDoc;
use crate::harness::{BaseUnit, Measurement};
use crate::headline;
use crate::score::{self, Reference, fmt_score};
use crate::units::{SWEEP_AXES, fmt_ratio, human, human_bytes};

/// Most curves drawn in one sweep chart before it is split by benchmark.
pub const MAX_SERIES: usize = 8;

/// A rendered report.
#[derive(Clone, Debug)]
pub struct Report {
    /// The HTML document.
    pub html: String,
    /// The number of charts in it (each an `<svg>` in a `figure.chart`).
    pub charts: usize,
}

/// Where a measurement sits on a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    /// The id without its `/param` part.
    pub base: String,
    /// The name of the swept quantity (`size`, `rss`, a parameter name).
    pub x_name: String,
    /// Its value (bytes for sizes).
    pub x: f64,
    /// True when `x` is a byte count.
    pub bytes: bool,
}

/// The sweep point of a measurement: a benchmark whose id has a `/point`
/// part and that records one of the [`SWEEP_AXES`] parameters as a
/// number. `None` for a benchmark that is not a sweep point.
pub fn sweep_point(m: &Measurement) -> Option<SweepPoint> {
    let (base, _) = m.id.split_once('/')?;
    SWEEP_AXES.iter().find_map(|&(name, bytes)| {
        let x = m.params.get(name)?.as_f64()?;
        (x > 0.0).then(|| SweepPoint {
            base: base.to_string(),
            x_name: name.to_string(),
            x,
            bytes,
        })
    })
}

/// Renders the report of `docs` (one or more runs, side by side). It reads
/// top-down: the price list and the scores; for two or more runs the
/// comparison with the first; the charts and tables of each area; the
/// findings; the host descriptions (collapsed); warnings and skips.
pub fn render(docs: &[RunDoc]) -> anyhow::Result<Report> {
    let mut h = String::new();
    let mut charts = 0;
    let names: Vec<String> = docs.iter().map(run_name).collect();
    h.push_str(HEAD);
    let _ = writeln!(
        h,
        "<header>\n<h1>opcost report</h1>\n<p class=\"meta\">{} run{}; generated {} by opcost {}. Medians with 95% confidence intervals; base units ns/op, B/s, ops/s shown in human units; {NOISY_MARK} and pale bars = noisy (CI wider than ±5%).</p>",
        docs.len(),
        if docs.len() == 1 { "" } else { "s" },
        esc(&chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        esc(env!("CARGO_PKG_VERSION"))
    );
    runs_section(&mut h, docs);
    h.push_str("</header>\n");

    let mut areas: Vec<String> = Vec::new();
    for d in docs {
        for a in d.areas() {
            if !areas.contains(&a) {
                areas.push(a);
            }
        }
    }
    // Runs of several hosts: the fleet view of their latest runs.
    let fleet = several_hosts(docs)
        .then(|| crate::fleet::build(docs, &[], crate::fleet::Rule::default()))
        .filter(|f| !f.columns.is_empty());
    // Enough runs of one host: when its costs changed.
    let trend = super::trend::of_docs(docs);
    h.push_str("<nav><a href=\"#glance\">at a glance</a>");
    if fleet.is_some() {
        h.push_str("<a href=\"#fleet\">fleet</a>");
    }
    if trend.is_some() {
        h.push_str("<a href=\"#trend\">trend</a>");
    }
    if docs.len() > 1 {
        h.push_str("<a href=\"#comparison\">comparison</a>");
    }
    for a in &areas {
        let _ = write!(h, "<a href=\"#area-{0}\">{0}</a>", esc(a));
    }
    h.push_str("<a href=\"#findings\">findings</a><a href=\"#hosts\">hosts</a></nav>\n");

    glance_section(&mut h, docs);
    if let Some(f) = &fleet {
        super::fleet::html_section(&mut h, f);
    }
    if let Some(t) = &trend {
        charts += super::trend::html_section(&mut h, t);
    }
    if docs.len() > 1 {
        charts += comparison_section(&mut h, docs, &names)?;
    }
    for area in &areas {
        let _ = writeln!(
            h,
            "<section class=\"area\" id=\"area-{0}\">\n<h2>{0}</h2>",
            esc(area)
        );
        for (kind, title, svg) in area_charts(docs, &names, area)? {
            charts += 1;
            let _ = writeln!(
                h,
                "<figure class=\"chart\" data-kind=\"{kind}\">{svg}<figcaption>{}</figcaption></figure>",
                esc(&title)
            );
        }
        area_table(&mut h, docs, area);
        h.push_str("</section>\n");
    }
    findings_section(&mut h, docs, &names, &areas);
    notes_section(&mut h, docs, &names);
    hosts_section(&mut h, docs);
    h.push_str("</body>\n</html>\n");
    Ok(Report { html: h, charts })
}

/// True when the runs come from more than one host.
fn several_hosts(docs: &[RunDoc]) -> bool {
    docs.iter()
        .any(|d| d.host.hostname != docs[0].host.hostname)
}

const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>opcost report</title>
<style>
:root { --fg: #222; --muted: #555; --bg: #fff; --line: #ddd; --head: #f4f4f4; --diff: #fff3c4; --card: #fff; --link: #1a5fb4; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e4e4e4; --muted: #aaa; --bg: #17181a; --line: #3a3c40; --head: #24262a; --diff: #4a3f12; --card: #f4f4f4; --link: #8ab4f8; }
}
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1000px; padding: 0 1em; color: var(--fg); background: var(--bg); }
a { color: var(--link); }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid var(--line); padding-bottom: 0.2em; margin-top: 1.8em; }
.meta { color: var(--muted); }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid var(--line); padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
table.hosts { width: 100%; }
table.hosts td { overflow-wrap: anywhere; }
table.hosts th, table.caches th { white-space: nowrap; }
table.scores th, table.geomeans th { white-space: nowrap; }
th { background: var(--head); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.score { font-weight: 600; }
tr.overall td, tr.overall th { font-weight: 700; }
tr.diff td, tr.diff th { background: var(--diff); }
td.gloss { color: var(--muted); }
td.flagged { font-weight: 700; }
.id { display: block; color: var(--muted); font-size: 0.8em; font-weight: normal; }
.faster { color: #1b7f3b; } .slower { color: #c0392b; }
@media (prefers-color-scheme: dark) { .faster { color: #6fd08c; } .slower { color: #ff8a80; } }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 2px; vertical-align: -0.1em; margin-right: 0.3em; }
.noisy { color: #b35c00; }
figure.chart { margin: 1em 0; }
figure.chart svg { width: 100%; height: auto; border: 1px solid var(--line); background: var(--card); border-radius: 4px; }
figcaption { color: var(--muted); font-size: 0.85em; }
nav { position: sticky; top: 0; background: var(--bg); padding: 0.4em 0; border-bottom: 1px solid var(--line); z-index: 1; }
nav a { margin-right: 0.8em; }
ul.findings li { margin: 0.2em 0; }
details { margin: 0.6em 0; }
details summary { cursor: pointer; }
section#hosts > details > summary { font-size: 1.1em; }
h3 { margin-bottom: 0.3em; }
code { font-size: 0.95em; }
@media print {
  :root { --fg: #000; --muted: #333; --bg: #fff; --line: #999; --head: #eee; --diff: #eee; --card: #fff; }
  nav { display: none; }
  body { max-width: none; margin: 0; font-size: 10pt; }
  details > summary { list-style: none; }
  details::details-content { content-visibility: visible; display: contents; }
  figure, table, tr { break-inside: avoid; }
  h2 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
}
</style>
</head>
<body>
"#;

/// `id (label)` or `id on host`.
fn run_name(d: &RunDoc) -> String {
    match &d.run.label {
        Some(l) => format!("{} ({l})", d.run.id),
        None => format!("{} on {}", d.run.id, d.host.hostname),
    }
}

fn swatch(i: usize) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>",
        charts::css_color(i)
    )
}

fn runs_section(h: &mut String, docs: &[RunDoc]) {
    h.push_str("<section id=\"runs\">\n<table class=\"runs\">\n<tr><th>run</th><th>host</th><th>started (UTC)</th><th>profile</th><th>label</th><th>results</th><th>opcost</th><th>note</th></tr>\n");
    for (i, d) in docs.iter().enumerate() {
        let mut note = Vec::new();
        if d.run.interrupted {
            note.push("interrupted".to_string());
        }
        if !d.skipped.is_empty() {
            note.push(format!("{} skipped/failed", d.skipped.len()));
        }
        let _ = writeln!(
            h,
            "<tr><td>{}<code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            swatch(i),
            esc(&d.run.id),
            esc(&d.host.hostname),
            esc(&d.run.started),
            d.run.profile.name(),
            esc(d.run.label.as_deref().unwrap_or("")),
            d.results.len(),
            esc(&d.opcost_version),
            esc(&note.join("; "))
        );
    }
    h.push_str("</table>\n</section>\n");
}

/// Flattens a JSON value into `key: text` rows (nested keys dotted).
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value as V;
    match v {
        V::Object(map) => {
            for (k, x) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        V::Array(items) if items.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let parts: Vec<String> = items.iter().map(|x| scalar(prefix, x)).collect();
            let text = if parts.is_empty() {
                "—".to_string()
            } else {
                parts.join(", ")
            };
            out.push((prefix.to_string(), text));
        }
        V::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|x| match x {
                    V::Object(m) => m
                        .iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| format!("{k} {}", scalar(k, v)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    other => other.to_string(),
                })
                .collect();
            out.push((prefix.to_string(), parts.join("; ")));
        }
        other => out.push((prefix.to_string(), scalar(prefix, other))),
    }
}

/// A scalar as text; byte counts (`*_bytes`) in binary units.
fn scalar(key: &str, v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "—".to_string(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if key.ends_with("bytes") => {
            n.as_f64().map(human_bytes).unwrap_or_else(|| n.to_string())
        }
        other => other.to_string(),
    }
}

/// The charts of an area: (kind, caption, svg).
fn area_charts(
    docs: &[RunDoc],
    names: &[String],
    area: &str,
) -> anyhow::Result<Vec<(&'static str, String, String)>> {
    // Every benchmark id of the area, in first-appearance order.
    let mut ids: Vec<(&str, &Measurement)> = Vec::new();
    for d in docs {
        for m in d.area(area) {
            if !ids.iter().any(|(id, _)| *id == m.id) {
                ids.push((&m.id, m));
            }
        }
    }
    // Sweeps: bases with at least two distinct x values.
    let points: BTreeMap<&str, SweepPoint> = ids
        .iter()
        .filter_map(|(id, m)| sweep_point(m).map(|p| (*id, p)))
        .collect();
    let mut base_xs: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for p in points.values() {
        let xs = base_xs.entry(&p.base).or_default();
        if !xs.contains(&p.x) {
            xs.push(p.x);
        }
    }
    let is_sweep = |id: &str| {
        points
            .get(id)
            .is_some_and(|p| base_xs.get(p.base.as_str()).is_some_and(|x| x.len() >= 2))
    };
    let mut out = Vec::new();

    // Bars: per unit, the benchmarks that are not sweep points.
    let mut units: Vec<BaseUnit> = Vec::new();
    for (id, m) in &ids {
        if !is_sweep(id) && !units.contains(&m.unit) {
            units.push(m.unit);
        }
    }
    for base in units {
        let unit = base.label();
        let groups: Vec<BarGroup> = ids
            .iter()
            .filter(|(id, m)| m.unit == base && !is_sweep(id))
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
            .collect();
        let chunks: Vec<&[BarGroup]> = groups.chunks(charts::MAX_GROUPS).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let part = if chunks.len() > 1 {
                format!(" ({}/{})", i + 1, chunks.len())
            } else {
                String::new()
            };
            let better = if base.higher_is_better() {
                "higher is better"
            } else {
                "lower is better"
            };
            let title = format!("{area}: {unit}{part}");
            let svg = charts::bars_svg(&title, unit, chunk, names)?;
            out.push((
                "bars",
                format!("{area}, {unit} ({better}): median per run with its 95% CI as whiskers"),
                svg,
            ));
        }
    }

    // Sweeps: one chart per (unit, swept quantity), split by benchmark when crowded.
    let mut families: Vec<(String, String, bool, Vec<String>)> = Vec::new();
    for (id, m) in &ids {
        if !is_sweep(id) {
            continue;
        }
        let Some(p) = points.get(id) else { continue };
        match families
            .iter_mut()
            .find(|f| f.0 == m.unit.label() && f.1 == p.x_name)
        {
            Some(f) => {
                if !f.3.contains(&p.base) {
                    f.3.push(p.base.clone());
                }
            }
            None => families.push((
                m.unit.label().to_string(),
                p.x_name.clone(),
                p.bytes,
                vec![p.base.clone()],
            )),
        }
    }
    for (unit, x_name, bytes, bases) in families {
        let groups: Vec<Vec<String>> = if bases.len() * docs.len() > MAX_SERIES {
            bases.iter().map(|b| vec![b.clone()]).collect()
        } else {
            vec![bases.clone()]
        };
        for group in groups {
            let mut series = Vec::new();
            for (bi, base) in group.iter().enumerate() {
                for (ri, d) in docs.iter().enumerate() {
                    let mut pts: Vec<Point> = d
                        .area(area)
                        .filter(|m| m.unit.label() == unit)
                        .filter_map(|m| {
                            let p = sweep_point(m)?;
                            (p.base == *base && p.x_name == x_name).then_some(Point {
                                x: p.x,
                                y: m.median,
                                noisy: m.noisy,
                            })
                        })
                        .collect();
                    if pts.is_empty() {
                        continue;
                    }
                    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                    let name = match (group.len() > 1, docs.len() > 1) {
                        (true, true) => format!("{base} · {}", d.run.id),
                        (true, false) => base.clone(),
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
                        points: pts,
                    });
                }
            }
            if series.is_empty() {
                continue;
            }
            let title = if group.len() == 1 {
                format!("{} vs {x_name}", group[0])
            } else {
                format!("{area}: {unit} vs {x_name}")
            };
            let svg = charts::sweep_svg(&title, &unit, &x_name, bytes, &series)?;
            out.push((
                "sweep",
                format!(
                    "{}: {unit} against {x_name}, log axes; each line labelled at its end, hollow markers are noisy",
                    group.join(", ")
                ),
                svg,
            ));
        }
    }
    Ok(out)
}

fn area_table(h: &mut String, docs: &[RunDoc], area: &str) {
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
                Some(m) => {
                    let _ = write!(
                        h,
                        "<td class=\"num{}\">{} ±{:.1}%{}</td>",
                        if m.noisy { " noisy" } else { "" },
                        esc(&human(m.median, m.unit.label())),
                        m.ci_rel() * 100.0,
                        if m.noisy { NOISY_MARK } else { "" }
                    );
                }
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

/// The price list (one column per run) and the scores against the
/// shipped reference, with the results that went into them.
fn glance_section(h: &mut String, docs: &[RunDoc]) {
    h.push_str("<section id=\"glance\">\n<h2>at a glance</h2>\n");
    let per_run: Vec<Vec<headline::Line>> = docs.iter().map(headline::lines).collect();
    let shown: Vec<&headline::Entry> = headline::ENTRIES
        .iter()
        .filter(|e| per_run.iter().flatten().any(|l| std::ptr::eq(l.entry, *e)))
        .collect();
    if shown.is_empty() {
        h.push_str(
            "<p class=\"meta\">None of the headline figures was measured in these runs.</p>\n",
        );
    } else {
        h.push_str("<table class=\"headline\">\n<tr><th>what</th>");
        for (i, d) in docs.iter().enumerate() {
            let _ = write!(h, "<th>{}<code>{}</code></th>", swatch(i), esc(&d.run.id));
        }
        h.push_str("<th>in plain words</th></tr>\n");
        for e in shown {
            let mut ids: Vec<&str> = Vec::new();
            let mut cells = String::new();
            for lines in &per_run {
                match lines.iter().find(|l| std::ptr::eq(l.entry, e)) {
                    Some(l) => {
                        if !ids.contains(&l.m.id.as_str()) {
                            ids.push(&l.m.id);
                        }
                        let _ = write!(
                            cells,
                            "<td class=\"num{}\">{}{}</td>",
                            if l.m.noisy { " noisy" } else { "" },
                            esc(&human(l.m.median, l.m.unit.label())),
                            if l.m.noisy { NOISY_MARK } else { "" }
                        );
                    }
                    None => cells.push_str("<td class=\"num\">—</td>"),
                }
            }
            let _ = writeln!(
                h,
                "<tr><th>{}<span class=\"id\">{}</span></th>{cells}<td class=\"gloss\">{}</td></tr>",
                esc(e.label),
                esc(&ids.join(", ")),
                esc(e.gloss)
            );
        }
        h.push_str("</table>\n");
    }

    let reference = Reference::shipped();
    let scores: Vec<score::Score> = docs.iter().map(|d| score::score(d, reference)).collect();
    if scores.iter().all(|s| s.overall.is_none()) {
        h.push_str("<p class=\"meta\">No result of these runs is in the reference run, so there is no score.</p>\n</section>\n");
        return;
    }
    let mut areas: Vec<&str> = Vec::new();
    for s in &scores {
        for a in &s.areas {
            if !areas.contains(&a.area.as_str()) {
                areas.push(&a.area);
            }
        }
    }
    h.push_str("<h3>score</h3>\n<table class=\"scores\">\n<tr><th>area</th>");
    for (i, d) in docs.iter().enumerate() {
        let _ = write!(h, "<th>{}<code>{}</code></th>", swatch(i), esc(&d.run.id));
    }
    h.push_str("</tr>\n<tr class=\"overall\"><th>overall</th>");
    for s in &scores {
        let _ = write!(
            h,
            "<td class=\"num score\">{}</td>",
            s.overall.map_or("—".to_string(), fmt_score)
        );
    }
    h.push_str("</tr>\n");
    for area in &areas {
        let _ = write!(h, "<tr><th>{}</th>", esc(area));
        for s in &scores {
            match s.areas.iter().find(|a| a.area == *area) {
                Some(a) => {
                    let _ = write!(
                        h,
                        "<td class=\"num\">{} <span class=\"meta\">({} results)</span></td>",
                        fmt_score(a.score),
                        a.ids.len()
                    );
                }
                None => h.push_str("<td class=\"num\">—</td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    let _ = writeln!(
        h,
        "<p class=\"meta\">1.00 = the reference run <code>{}</code> ({}, {} profile, {}); 2.00 = twice as fast. An area's score is the geometric mean of reference time ÷ this run's time over the results both runs have; the overall score is the geometric mean of the area scores. Results the reference lacks are left out.</p>",
        esc(&reference.id),
        esc(&reference.machine),
        esc(&reference.profile),
        esc(&reference.started)
    );
    h.push_str("<details><summary>results in the score</summary>\n<ul>\n");
    for (i, (d, s)) in docs.iter().zip(&scores).enumerate() {
        for a in &s.areas {
            let _ = writeln!(
                h,
                "<li>{}<code>{}</code> {}: {} in{}: <code>{}</code></li>",
                swatch(i),
                esc(&d.run.id),
                esc(&a.area),
                a.ids.len(),
                if a.left_out > 0 {
                    format!(" ({} left out, not in the reference)", a.left_out)
                } else {
                    String::new()
                },
                esc(&a.ids.join(" "))
            );
        }
    }
    h.push_str("</ul>\n</details>\n</section>\n");
}

/// Every later run against the first: the geometric mean of time ratios
/// per area, then per area a forest plot of each benchmark's ratio with its
/// 95% CI and verdict. Returns the number of charts.
fn comparison_section(h: &mut String, docs: &[RunDoc], names: &[String]) -> anyhow::Result<usize> {
    let base = &docs[0];
    let comps: Vec<Comparison> = docs[1..]
        .iter()
        .map(|d| compare(base, d, &[], DEFAULT_THRESHOLD))
        .collect();
    let _ = writeln!(
        h,
        "<section id=\"comparison\">\n<h2>comparison with {}<code>{}</code></h2>\n<p class=\"meta\">Per benchmark, the ratio of medians with its 95% confidence interval, as time (below 1: less time than {}, i.e. faster); a verdict needs the whole interval on one side of 1 and a difference over {:.0}%. Per area, the geometric mean of the time ratios.</p>",
        swatch(0),
        esc(&base.run.id),
        esc(&names[0]),
        DEFAULT_THRESHOLD * 100.0
    );
    // The geometric means per area.
    let mut areas: Vec<&str> = Vec::new();
    for c in &comps {
        for s in &c.summaries {
            if !areas.contains(&s.area.as_str()) {
                areas.push(&s.area);
            }
        }
    }
    h.push_str("<table class=\"geomeans\">\n<tr><th>area</th>");
    for (k, _) in comps.iter().enumerate() {
        let _ = write!(
            h,
            "<th>{}<code>{}</code> time ÷ {}</th>",
            swatch(k + 1),
            esc(&docs[k + 1].run.id),
            esc(&base.run.id)
        );
    }
    h.push_str("</tr>\n");
    for area in &areas {
        let _ = write!(
            h,
            "<tr{}><th>{}</th>",
            if *area == "all" {
                " class=\"overall\""
            } else {
                ""
            },
            esc(area)
        );
        for c in &comps {
            match c.summaries.iter().find(|s| s.area == *area) {
                Some(s) => {
                    let g = s.geomean_time_ratio;
                    let class = match s.verdict {
                        crate::compare::Verdict::Faster => "faster",
                        crate::compare::Verdict::Slower => "slower",
                        crate::compare::Verdict::Same => "",
                    };
                    let _ = write!(
                        h,
                        "<td class=\"num {class}\">{} <span class=\"meta\">({} benchmarks: {} faster, {} slower, {} same)</span></td>",
                        esc(&fmt_ratio(g)),
                        s.n,
                        s.faster,
                        s.slower,
                        s.same
                    );
                }
                None => h.push_str("<td class=\"num\">—</td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    for (k, c) in comps.iter().enumerate() {
        let _ = writeln!(
            h,
            "<p class=\"meta\">{}<code>{}</code>: {}</p>",
            swatch(k + 1),
            esc(&docs[k + 1].run.id),
            esc(&super::comparison::method_note(c))
        );
    }

    // Forest plots, per area, in the baseline's order.
    let colors: Vec<usize> = (1..docs.len()).collect();
    let mut charts = 0;
    for area in areas.iter().filter(|a| **a != "all") {
        let mut ids: Vec<&str> = Vec::new();
        for c in &comps {
            for r in c.rows.iter().filter(|r| r.area == *area) {
                if !ids.contains(&r.id.as_str()) {
                    ids.push(&r.id);
                }
            }
        }
        let rows: Vec<ForestRow> = ids
            .iter()
            .map(|id| ForestRow {
                label: id.to_string(),
                cells: comps
                    .iter()
                    .map(|c| c.rows.iter().find(|r| r.id == *id).map(time_ratio))
                    .collect(),
            })
            .collect();
        let chunks: Vec<&[ForestRow]> = rows.chunks(charts::MAX_GROUPS).collect();
        let _ = writeln!(
            h,
            "<details class=\"forest\"{}><summary>{}: {} benchmarks compared</summary>",
            if rows.len() <= charts::MAX_GROUPS {
                " open"
            } else {
                ""
            },
            esc(area),
            rows.len()
        );
        for (i, chunk) in chunks.iter().enumerate() {
            let part = if chunks.len() > 1 {
                format!(" ({}/{})", i + 1, chunks.len())
            } else {
                String::new()
            };
            let svg = charts::forest_svg(
                &format!("{area}: time ratio{part}"),
                &base.run.id,
                chunk,
                &colors,
            )?;
            charts += 1;
            let _ = writeln!(
                h,
                "<figure class=\"chart\" data-kind=\"forest\">{svg}<figcaption>{}</figcaption></figure>",
                esc(&format!(
                    "{area}{part}: each run's time ÷ {}'s, with its 95% CI; hollow = the same within noise",
                    base.run.id
                ))
            );
        }
        h.push_str("</details>\n");
    }
    let only: Vec<String> = comps
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.only_a.is_empty() || !c.only_b.is_empty())
        .map(|(k, c)| {
            format!(
                "{}: {} only in {}, {} only in {}",
                esc(&docs[k + 1].run.id),
                c.only_a.len(),
                esc(&base.run.id),
                c.only_b.len(),
                esc(&docs[k + 1].run.id)
            )
        })
        .collect();
    if !only.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"meta\">Not compared (in one run only): {}.</p>",
            only.join("; ")
        );
    }
    h.push_str("</section>\n");
    Ok(charts)
}

/// A comparison row as a time ratio (below 1: faster) with its interval.
fn time_ratio(r: &crate::compare::Row) -> Ratio {
    let t = r.time_ratio();
    // Throughputs and rates are inverted into times, their interval with them.
    let (lo, hi) = if t == r.ratio {
        (r.ci_low, r.ci_high)
    } else {
        (1.0 / r.ci_high, 1.0 / r.ci_low)
    };
    Ratio {
        t,
        lo,
        hi,
        verdict: r.verdict.label(),
    }
}

/// The findings of every area, after the charts.
fn findings_section(h: &mut String, docs: &[RunDoc], names: &[String], areas: &[String]) {
    h.push_str("<section id=\"findings\">\n<h2>findings</h2>\n");
    let mut any = false;
    for area in areas {
        if !docs
            .iter()
            .any(|d| d.findings.iter().any(|f| &f.area == area))
        {
            continue;
        }
        any = true;
        let _ = writeln!(h, "<h3>{}</h3>\n<ul class=\"findings\">", esc(area));
        for (i, d) in docs.iter().enumerate() {
            for f in d.findings.iter().filter(|f| &f.area == area) {
                let who = if docs.len() > 1 {
                    format!("{}{}: ", swatch(i), esc(&names[i]))
                } else {
                    String::new()
                };
                let _ = writeln!(h, "<li>{who}{}</li>", esc(&f.text));
            }
        }
        h.push_str("</ul>\n");
    }
    if !any {
        h.push_str(
            "<p class=\"meta\">No finding: the runs lack the results the findings need.</p>\n",
        );
    }
    h.push_str("</section>\n");
}

/// The group a flattened host key belongs to, by its first segment.
fn host_group(key: &str) -> &'static str {
    let first = key.split('.').next().unwrap_or(key);
    match first {
        "cpu" | "logical_cpus" => "CPU",
        "freq" | "governor" => "frequency",
        "caches" => "caches",
        "mem_total_bytes" | "mem_available_bytes" | "memory" | "thp" => "memory",
        "kernel" | "clocksource" | "clocksources_available" => "kernel and clock",
        "vulnerabilities" => "CPU vulnerabilities and mitigations",
        "virt" => "virtualization",
        "software" => "software",
        _ => "general",
    }
}

/// The order of the host groups.
const HOST_GROUPS: [&str; 9] = [
    "general",
    "CPU",
    "frequency",
    "caches",
    "memory",
    "kernel and clock",
    "CPU vulnerabilities and mitigations",
    "virtualization",
    "software",
];

/// The host descriptions, collapsed: grouped, rows that differ between the
/// runs first and highlighted, the caches as a small table.
fn hosts_section(h: &mut String, docs: &[RunDoc]) {
    let blocks: Vec<Vec<(String, String)>> = docs
        .iter()
        .map(|d| {
            let mut rows = Vec::new();
            if let Ok(v) = serde_json::to_value(&d.host) {
                flatten("", &v, &mut rows);
            }
            rows
        })
        .collect();
    let mut keys: Vec<&str> = Vec::new();
    for b in &blocks {
        for (k, _) in b {
            if !keys.contains(&k.as_str()) && host_group(k) != "caches" {
                keys.push(k);
            }
        }
    }
    let value = |i: usize, k: &str| -> String {
        blocks[i]
            .iter()
            .find(|(x, _)| x == k)
            .map_or(String::new(), |(_, v)| v.clone())
    };
    let differs = |k: &str| (1..docs.len()).any(|i| value(i, k) != value(0, k));
    let n_diff = keys.iter().filter(|k| differs(k)).count();
    let header = |h: &mut String| {
        h.push_str("<tr><th></th>");
        for (i, d) in docs.iter().enumerate() {
            let _ = write!(h, "<th>{}<code>{}</code></th>", swatch(i), esc(&d.run.id));
        }
        h.push_str("</tr>\n");
    };
    let _ = writeln!(
        h,
        "<section id=\"hosts\">\n<details>\n<summary><b>host description</b>{}</summary>",
        if docs.len() > 1 {
            format!(
                " — {n_diff} rows differ between the runs (shown first in each group, highlighted)"
            )
        } else {
            String::new()
        }
    );
    for group in HOST_GROUPS {
        if group == "caches" {
            caches_table(h, docs);
            continue;
        }
        let mut rows: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| host_group(k) == group)
            .collect();
        if rows.is_empty() {
            continue;
        }
        rows.sort_by_key(|k| !differs(k));
        let _ = writeln!(h, "<h3>{group}</h3>\n<table class=\"hosts\">");
        header(h);
        for k in rows {
            let _ = write!(
                h,
                "<tr{}><th>{}</th>",
                if differs(k) { " class=\"diff\"" } else { "" },
                esc(k)
            );
            for i in 0..docs.len() {
                let _ = write!(h, "<td>{}</td>", esc(&value(i, k)));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    h.push_str("</details>\n</section>\n");
}

/// The caches of each run: one row per level and kind, size, line, ways
/// and sharing in the cells.
fn caches_table(h: &mut String, docs: &[RunDoc]) {
    let mut levels: Vec<(u8, String)> = Vec::new();
    for d in docs {
        for c in &d.host.caches {
            let key = (c.level, c.kind.clone());
            if !levels.contains(&key) {
                levels.push(key);
            }
        }
    }
    if levels.is_empty() {
        return;
    }
    levels.sort();
    h.push_str("<h3>caches</h3>\n<table class=\"caches\">\n<tr><th>cache</th>");
    for (i, d) in docs.iter().enumerate() {
        let _ = write!(h, "<th>{}<code>{}</code></th>", swatch(i), esc(&d.run.id));
    }
    h.push_str("</tr>\n");
    for (level, kind) in levels {
        let cells: Vec<String> = docs
            .iter()
            .map(|d| {
                d.host
                    .caches
                    .iter()
                    .find(|c| c.level == level && c.kind == kind)
                    .map_or("—".to_string(), |c| {
                        let mut parts = vec![human_bytes(c.size_bytes as f64)];
                        if let Some(l) = c.line_bytes {
                            parts.push(format!("{l} B lines"));
                        }
                        if let Some(w) = c.ways {
                            parts.push(format!("{w}-way"));
                        }
                        if let Some(s) = &c.shared_cpus {
                            parts.push(format!("shared by CPUs {s}"));
                        }
                        if let Some(n) = c.instances {
                            parts.push(format!("×{n}"));
                        }
                        parts.join(", ")
                    })
            })
            .collect();
        let differs = cells.iter().any(|c| *c != cells[0]);
        let _ = write!(
            h,
            "<tr{}><th>L{level} {}</th>",
            if differs { " class=\"diff\"" } else { "" },
            esc(&kind.to_lowercase())
        );
        for c in cells {
            let _ = write!(h, "<td>{}</td>", esc(&c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

fn notes_section(h: &mut String, docs: &[RunDoc], names: &[String]) {
    let any = docs
        .iter()
        .any(|d| !d.warnings.is_empty() || !d.skipped.is_empty());
    if !any {
        return;
    }
    h.push_str("<section id=\"notes\">\n<h2>warnings, skipped and failed</h2>\n<ul>\n");
    for (i, d) in docs.iter().enumerate() {
        for w in &d.warnings {
            let _ = writeln!(
                h,
                "<li>{}{}: warning: {}</li>",
                swatch(i),
                esc(&names[i]),
                esc(w)
            );
        }
        for s in &d.skipped {
            let _ = writeln!(
                h,
                "<li>{}{}: <code>{}</code> {}: {}</li>",
                swatch(i),
                esc(&names[i]),
                esc(&s.id),
                if s.failed { "failed" } else { "skipped" },
                esc(&s.reason)
            );
        }
    }
    h.push_str("</ul>\n</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_points_come_from_typed_params_not_from_ids() {
        let mut m = Measurement::point("memory.latency.random/48KiB", "ns/op", 2.0);
        assert_eq!(sweep_point(&m), None, "the id alone says nothing");
        m.params.insert("size".into(), (48u64 << 10).into());
        let p = sweep_point(&m).unwrap();
        assert_eq!(p.base, "memory.latency.random");
        assert_eq!((p.x_name.as_str(), p.x, p.bytes), ("size", 49152.0, true));
        let mut plain = Measurement::point("syscall.getpid.raw", "ns/op", 50.0);
        plain.params.insert("size".into(), 8.into());
        assert_eq!(sweep_point(&plain), None, "no /point, no sweep");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn flatten_nests_and_formats_bytes() {
        let v = serde_json::json!({"a": {"b": 1}, "mem_bytes": 2048, "list": [1, 2],
            "caches": [{"level": 1, "size_bytes": 49152}]});
        let mut rows = Vec::new();
        flatten("", &v, &mut rows);
        assert!(rows.contains(&("a.b".into(), "1".into())));
        assert!(rows.contains(&("mem_bytes".into(), "2.00 KiB".into())));
        assert!(rows.contains(&("list".into(), "1, 2".into())));
        assert!(rows.contains(&("caches".into(), "level 1, size_bytes 48.0 KiB".into())));
    }
}
