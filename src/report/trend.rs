//! A trend ([`crate::trend`]) as text, Markdown and CSV: one line per
//! change point, by host, newest first.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::markdown::cell;
use crate::harness::BaseUnit;
use crate::trend::{ChangePoint, Series, Trend};

/// A ratio as a signed percentage: `+8.1%`.
fn pct(r: f64) -> String {
    format!("{:+.1}%", (r - 1.0) * 100.0)
}

/// The ratio with its interval: `+8.1% [+6.0, +10.3]`.
pub fn change_text(c: &ChangePoint) -> String {
    format!(
        "{} [{:+.1}, {:+.1}]",
        pct(c.ratio),
        (c.ci_low - 1.0) * 100.0,
        (c.ci_high - 1.0) * 100.0
    )
}

/// `slower` or `faster` when the whole interval says so, else `within noise`.
pub fn verdict(s: &Series, c: &ChangePoint) -> &'static str {
    let higher_is_better = s.unit != BaseUnit::NsPerOp.label();
    if c.ci_low > 1.0 {
        if higher_is_better { "faster" } else { "slower" }
    } else if c.ci_high < 1.0 {
        if higher_is_better { "slower" } else { "faster" }
    } else {
        "within noise"
    }
}

/// What changed in the host description, in words.
pub fn env_text(c: &ChangePoint) -> String {
    if c.env_changes.is_empty() {
        "no change in the recorded host description".into()
    } else {
        c.env_changes
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The change points by (host, profile), each group newest first.
fn by_host(t: &Trend) -> BTreeMap<(&str, &str), Vec<(&Series, &ChangePoint)>> {
    let mut out: BTreeMap<(&str, &str), Vec<(&Series, &ChangePoint)>> = BTreeMap::new();
    for s in &t.series {
        for c in &s.change_points {
            out.entry((s.host.as_str(), s.profile.as_str()))
                .or_default()
                .push((s, c));
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| {
            b.1.started
                .cmp(&a.1.started)
                .then_with(|| a.0.id.cmp(&b.0.id))
        });
    }
    out
}

/// The closing lines: what was analysed and how.
fn summary(t: &Trend) -> Vec<String> {
    let analysed = t.series.iter().filter(|s| s.analysed).count();
    let short = t.series.len() - analysed;
    let points: usize = t.series.iter().map(|s| s.change_points.len()).sum();
    let with: usize = t
        .series
        .iter()
        .filter(|s| !s.change_points.is_empty())
        .count();
    let mut hosts: Vec<&str> = t.series.iter().map(|s| s.host.as_str()).collect();
    hosts.sort();
    hosts.dedup();
    let mut out = vec![format!(
        "{points} change point{} in {with} of {analysed} series ({} host{})",
        if points == 1 { "" } else { "s" },
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" }
    )];
    if short > 0 {
        out.push(format!(
            "{short} series with fewer than {} runs: too few for a change point to be found",
            t.method.min_runs()
        ));
    }
    out.push(format!(
        "method: binary segmentation of log medians weighted by each run's interval, permutation test p ≤ {} ({} shuffles), a step over the {} runs either side",
        t.method.alpha, t.method.permutations, t.method.window
    ));
    out
}

/// The terminal view: a heading per host and profile, one line per change
/// point, newest first, then the summary.
pub fn render_text(t: &Trend) -> String {
    let mut out = String::new();
    for ((host, profile), points) in by_host(t) {
        let _ = writeln!(out, "{host} ({profile})");
        let id_w = points.iter().map(|(s, _)| s.id.len()).max().unwrap_or(0);
        for (s, c) in points {
            let _ = writeln!(
                out,
                "  {:id_w$}  {}  (run {})  {:<24} {:<7} {}",
                s.id,
                c.started.get(..10).unwrap_or(&c.started),
                c.run,
                change_text(c),
                verdict(s, c),
                env_text(c)
            );
        }
        out.push('\n');
    }
    for line in summary(t) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Markdown: a table per host and profile, then the summary.
pub fn render_md(t: &Trend) -> String {
    let mut out = String::new();
    for ((host, profile), points) in by_host(t) {
        let _ = writeln!(out, "### {} ({})\n", cell(host), cell(profile));
        out.push_str(
            "| benchmark | first run after | started | change [95% CI] | | what changed |\n",
        );
        out.push_str("|---|---|---|---|---|---|\n");
        for (s, c) in points {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                cell(&s.id),
                c.run,
                cell(&c.started),
                change_text(c),
                verdict(s, c),
                cell(&env_text(c))
            );
        }
        out.push('\n');
    }
    for line in summary(t) {
        let _ = writeln!(out, "{}  ", cell(&line));
    }
    out
}

/// CSV: one row per change point (ratios as numbers, in the unit's terms).
pub fn render_csv(t: &Trend) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "host",
        "profile",
        "benchmark",
        "unit",
        "runs",
        "run",
        "started",
        "ratio",
        "ci_low",
        "ci_high",
        "p",
        "env_changes",
    ])?;
    for ((_, _), points) in by_host(t) {
        for (s, c) in points {
            w.write_record([
                s.host.clone(),
                s.profile.clone(),
                s.id.clone(),
                s.unit.clone(),
                s.runs.to_string(),
                c.run.clone(),
                c.started.clone(),
                c.ratio.to_string(),
                c.ci_low.to_string(),
                c.ci_high.to_string(),
                c.p.to_string(),
                env_text(c),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}
