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
//! styles are in `report.css`, inlined.
//!
//! This module writes the page and its navigation; each section is written
//! by the submodule of its name, in the page's order.

mod areas;
mod comparison;
mod findings;
mod glance;
mod hosts;
mod matrix;
mod notes;
mod runs;

use std::fmt::Write;

use super::charts;
use super::format::{NOISY_MARK, esc};
use crate::analysis::Overview;
use crate::analysis::fleet::Fleet;
use crate::analysis::trend::HistoryTrend;
use crate::document::RunDoc;
use crate::harness::Measurement;
use crate::units::SWEEP_AXES;

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
    /// The id without its `/point` parts (`ipc.pipe.rtt`): the curves of
    /// one base share a chart.
    pub base: String,
    /// The id without the segment of the point itself, other segments
    /// kept (`ipc.pipe.rtt/cross` of `ipc.pipe.rtt/8B/cross`): one curve
    /// each, so the points of one placement (or any other qualifier) are
    /// never joined to those of another.
    pub curve: String,
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
    let (base, rest) = m.id.split_once('/')?;
    // The point is the first segment that reads as a quantity (`48KiB`,
    // `1000`), else the first; the others qualify the curve.
    let segments: Vec<&str> = rest.split('/').collect();
    let point = segments
        .iter()
        .position(|s| crate::units::parse_quantity(s).is_some())
        .unwrap_or(0);
    let curve = std::iter::once(base)
        .chain(
            segments
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != point)
                .map(|(_, s)| *s),
        )
        .collect::<Vec<_>>()
        .join("/");
    SWEEP_AXES.iter().find_map(|&(name, bytes)| {
        let x = m.params.get(name)?.as_f64()?;
        (x > 0.0).then(|| SweepPoint {
            base: base.to_string(),
            curve: curve.clone(),
            x_name: name.to_string(),
            x,
            bytes,
        })
    })
}

/// The style sheet of every report.
const CSS: &str = include_str!("../report.css");

/// The document up to the style sheet.
const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>opcost report</title>
<style>
"#;

/// The document from the end of the style sheet to the body.
const BODY: &str = "</style>\n</head>\n<body>\n";

/// Renders the report of `docs` (one or more runs, side by side). It reads
/// top-down: the price list and the scores; for two or more runs the
/// comparison with the first; the charts and tables of each area; the
/// findings; the host descriptions (collapsed); warnings and skips. The
/// fleet and trend sections render `overview`, which the analyses made.
pub fn render(docs: &[RunDoc], overview: &Overview) -> anyhow::Result<Report> {
    let mut h = String::new();
    let mut charts = 0;
    let names: Vec<String> = docs.iter().map(run_name).collect();
    let areas = areas_of(docs);
    let (fleet, trend) = (&overview.fleet, &overview.trend);
    header(&mut h, docs);
    nav(&mut h, docs, fleet.as_ref(), trend.as_ref(), &areas);
    glance::section(&mut h, docs);
    if let Some(f) = fleet {
        super::fleet::html_section(&mut h, f);
    }
    if let Some(t) = trend {
        charts += super::trend::html_section(&mut h, t);
    }
    if docs.len() > 1 {
        charts += comparison::section(&mut h, docs, &names)?;
    }
    for area in &areas {
        charts += areas::section(&mut h, docs, &names, area)?;
    }
    charts += matrix::section(&mut h, docs, &names);
    findings::section(&mut h, docs, &names, &areas);
    notes::section(&mut h, docs, &names);
    hosts::section(&mut h, docs);
    h.push_str("</body>\n</html>\n");
    Ok(Report { html: h, charts })
}

/// The head of the document, the title and what the figures are, and the
/// table of the runs.
fn header(h: &mut String, docs: &[RunDoc]) {
    h.push_str(HEAD);
    h.push_str(CSS);
    h.push_str(BODY);
    let _ = writeln!(
        h,
        "<header>\n<h1>opcost report</h1>\n<p class=\"meta\">{} run{}; generated {} by opcost {}. Medians with 95% confidence intervals; base units ns/op, B/s, ops/s shown in human units; {NOISY_MARK} and pale bars = noisy (CI wider than ±5%).</p>",
        docs.len(),
        if docs.len() == 1 { "" } else { "s" },
        esc(&chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        esc(env!("CARGO_PKG_VERSION"))
    );
    runs::section(h, docs);
    h.push_str("</header>\n");
}

/// The links to the sections, in the page's order.
fn nav(
    h: &mut String,
    docs: &[RunDoc],
    fleet: Option<&Fleet>,
    trend: Option<&HistoryTrend>,
    areas: &[String],
) {
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
    for a in areas {
        let _ = write!(h, "<a href=\"#area-{0}\">{0}</a>", esc(a));
    }
    if docs.iter().any(|d| d.matrix.is_some()) {
        h.push_str("<a href=\"#matrix\">matrix</a>");
    }
    h.push_str("<a href=\"#findings\">findings</a><a href=\"#hosts\">hosts</a></nav>\n");
}

/// The areas of the runs, in first-appearance order.
fn areas_of(docs: &[RunDoc]) -> Vec<String> {
    let mut areas: Vec<String> = Vec::new();
    for d in docs {
        for a in d.areas() {
            if !areas.contains(&a) {
                areas.push(a);
            }
        }
    }
    areas
}

/// `id (label)` or `id on host`.
fn run_name(d: &RunDoc) -> String {
    match &d.run.label {
        Some(l) => format!("{} ({l})", d.run.id),
        None => format!("{} on {}", d.run.id, d.host.hostname),
    }
}

/// The colour square of run `i`.
fn swatch(i: usize) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>",
        charts::css_color(i)
    )
}

/// Opens a table with a column per run (`<table class="CLASS">`): its
/// header row, `corner` over the first column and each run's swatch and id
/// over its own, left open for the caller to end.
fn open_runs_table(h: &mut String, class: &str, corner: &str, docs: &[RunDoc]) {
    let _ = write!(h, "<table class=\"{class}\">\n<tr><th>{corner}</th>");
    for (i, d) in docs.iter().enumerate() {
        let _ = write!(h, "<th>{}<code>{}</code></th>", swatch(i), esc(&d.run.id));
    }
}

/// A table cell of a median in human units, marked when noisy.
fn median_cell(m: &Measurement, interval: bool) -> String {
    let ci = if interval {
        format!(" {}", m.ci_text())
    } else {
        String::new()
    };
    let title = m
        .wide_ci_note()
        .filter(|_| interval)
        .map(|n| format!(" title=\"{}\"", esc(&n)))
        .unwrap_or_default();
    format!(
        "<td class=\"num{}\"{title}>{}{ci}{}</td>",
        if m.noisy { " noisy" } else { "" },
        esc(&crate::units::human(m.median, m.unit)),
        if m.noisy { NOISY_MARK } else { "" }
    )
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
        assert_eq!(p.curve, "memory.latency.random");
        assert_eq!((p.x_name.as_str(), p.x, p.bytes), ("size", 49152.0, true));
        let mut plain = Measurement::point("syscall.getpid.raw", "ns/op", 50.0);
        plain.params.insert("size".into(), 8.into());
        assert_eq!(sweep_point(&plain), None, "no /point, no sweep");
    }

    #[test]
    fn qualifiers_after_the_point_make_curves_of_their_own() {
        for (id, curve) in [
            ("ipc.pipe.rtt/8B/cross", "ipc.pipe.rtt/cross"),
            ("ipc.pipe.rtt/8B/same", "ipc.pipe.rtt/same"),
            ("ipc.pipe.rtt/8B/smt-sibling", "ipc.pipe.rtt/smt-sibling"),
            ("ipc.x.tput/numa1/64KiB", "ipc.x.tput/numa1"),
        ] {
            let mut m = Measurement::point(id, "ns/op", 2.0);
            m.params.insert("size".into(), 8.into());
            let p = sweep_point(&m).unwrap();
            assert_eq!(
                (p.base.as_str(), p.curve.as_str()),
                (id.split('/').next().unwrap(), curve)
            );
        }
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
