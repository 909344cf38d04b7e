//! The HTML report: one self-contained file that works offline (inline CSS,
//! charts as inline SVG drawn by plotters, no script, no fetch).
//!
//! Contents: the runs with their colours; the host blocks side by side
//! (differences highlighted); per area, bar charts of the benchmarks with
//! CI whiskers (one bar per run), sweep benchmarks (`id/point` with a
//! numeric sweep parameter, see [`SWEEP_AXES`]) as curves on log axes, a
//! table of every result and the derived findings; noisy results are pale
//! bars, hollow points and `~`.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::charts::{self, Bar, BarGroup, Point, Series};
use super::table::NOISY_MARK;
use crate::document::RunDoc;
use crate::harness::Measurement;
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

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
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

/// Renders the report of `docs` (one or more runs, side by side).
pub fn render(docs: &[RunDoc]) -> anyhow::Result<Report> {
    let mut h = String::new();
    let mut charts = 0;
    let names: Vec<String> = docs.iter().map(run_name).collect();
    h.push_str(HEAD);
    let _ = writeln!(
        h,
        "<h1>opcost report</h1>\n<p class=\"meta\">{} run{}; generated {} by opcost {}. Medians with 95% confidence intervals; base units ns/op, B/s, ops/s shown in human units; {NOISY_MARK} and pale bars = noisy (CI wider than ±5%).</p>",
        docs.len(),
        if docs.len() == 1 { "" } else { "s" },
        esc(&chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        esc(env!("CARGO_PKG_VERSION"))
    );
    runs_section(&mut h, docs);
    hosts_section(&mut h, docs);

    let mut areas: Vec<String> = Vec::new();
    for d in docs {
        for a in d.areas() {
            if !areas.contains(&a) {
                areas.push(a);
            }
        }
    }
    if areas.len() > 1 {
        h.push_str("<nav><b>areas:</b> ");
        for a in &areas {
            let _ = write!(h, "<a href=\"#area-{0}\">{0}</a> ", esc(a));
        }
        h.push_str("</nav>\n");
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
        findings(&mut h, docs, &names, area);
        h.push_str("</section>\n");
    }
    notes_section(&mut h, docs, &names);
    h.push_str("</body>\n</html>\n");
    Ok(Report { html: h, charts })
}

const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>opcost report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1000px; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.8em; }
.meta { color: #555; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.diff td { background: #fff6d6; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 2px; vertical-align: -0.1em; margin-right: 0.3em; }
.noisy { color: #b35c00; }
figure.chart { margin: 1em 0; }
figure.chart svg { width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.85em; }
nav a { margin-right: 0.6em; }
ul.findings li { margin: 0.2em 0; }
details summary { cursor: pointer; color: #333; }
code { font-size: 0.95em; }
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
    h.push_str("<section id=\"runs\">\n<h2>runs</h2>\n<table>\n<tr><th>run</th><th>host</th><th>started (UTC)</th><th>profile</th><th>label</th><th>results</th><th>opcost</th><th>note</th></tr>\n");
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
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    h.push_str("<section id=\"hosts\">\n<h2>hosts</h2>\n<table class=\"hosts\">\n<tr><th></th>");
    for (i, d) in docs.iter().enumerate() {
        let _ = write!(h, "<th>{}<code>{}</code></th>", swatch(i), esc(&d.run.id));
    }
    h.push_str("</tr>\n");
    for k in keys {
        let vals: Vec<&str> = blocks
            .iter()
            .map(|b| {
                b.iter()
                    .find(|(x, _)| x == k)
                    .map_or("", |(_, v)| v.as_str())
            })
            .collect();
        let differs = vals.iter().any(|v| *v != vals[0]);
        let _ = write!(
            h,
            "<tr{}><th>{}</th>",
            if differs { " class=\"diff\"" } else { "" },
            esc(k)
        );
        for v in vals {
            let _ = write!(h, "<td>{}</td>", esc(v));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    if docs.len() > 1 {
        h.push_str("<p class=\"meta\">Highlighted rows differ between the runs.</p>\n");
    }
    h.push_str("</section>\n");
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
    let mut units: Vec<&str> = Vec::new();
    for (id, m) in &ids {
        if !is_sweep(id) && !units.contains(&m.unit.label()) {
            units.push(m.unit.label());
        }
    }
    for unit in units {
        let groups: Vec<BarGroup> = ids
            .iter()
            .filter(|(id, m)| m.unit.label() == unit && !is_sweep(id))
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
            let better = if unit == "ns/op" {
                "lower is better"
            } else {
                "higher is better"
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
            for base in &group {
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
                    let color = if docs.len() > 1 { ri } else { series.len() };
                    series.push(Series {
                        name,
                        color,
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
                    "{}: {unit} against {x_name}, log axes; hollow points are noisy",
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

fn findings(h: &mut String, docs: &[RunDoc], names: &[String], area: &str) {
    if !docs
        .iter()
        .any(|d| d.findings.iter().any(|f| f.area == area))
    {
        return;
    }
    h.push_str("<h3>findings</h3>\n<ul class=\"findings\">\n");
    for (i, d) in docs.iter().enumerate() {
        for f in d.findings.iter().filter(|f| f.area == area) {
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
