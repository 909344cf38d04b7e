//! A trend ([`crate::analysis::trend`]) as text, Markdown and CSV (one line per
//! change point, by host, newest first) and as the HTML report's section.
//! It renders what the analysis found and finds nothing itself.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::format::cell;
use super::format::esc;
use crate::analysis::trend::{ChangePoint, HistoryTrend, Point, Series};
use crate::harness::BaseUnit;
use crate::units::human;

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
    let higher_is_better = s.unit != BaseUnit::NsPerOp;
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

/// What a series can see, in words: `can see a step of 6% or more`, or,
/// for a series so noisy that only a change of 2x or more shows,
/// `can see only a change of 344x or more` (a percentage of thousands
/// reads as a typo).
pub fn sees_text(s: &Series) -> String {
    match (s.analysed, s.min_step) {
        (false, _) => "too few runs to see a step".into(),
        (true, None) => "too noisy to see a step of any size".into(),
        (true, Some(m)) if m >= 1.0 => format!(
            "can see only a change of {} or more",
            crate::units::fmt_ratio(1.0 + m)
        ),
        (true, Some(m)) => format!("can see a step of {:.0}% or more", (m * 100.0).ceil()),
    }
}

/// True when the series can see a step of `size` (0.05: 5%).
fn sees(s: &Series, size: f64) -> bool {
    s.min_step.is_some_and(|m| m <= size)
}

/// The change points by (host, profile), each group newest first.
fn by_host(t: &HistoryTrend) -> BTreeMap<(&str, &str), Vec<(&Series, &ChangePoint)>> {
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
fn summary(t: &HistoryTrend) -> Vec<String> {
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
        "what the series can see (a step found about 9 times in 10 with a third of the runs after it, at each series' length and run-to-run noise): a step of 5% in {} of {analysed}, of 10% in {} of {analysed}",
        t.series.iter().filter(|s| sees(s, 0.05)).count(),
        t.series.iter().filter(|s| sees(s, 0.10)).count(),
    ));
    for s in t.series.iter().filter(|s| s.analysed && !sees(s, 0.10)) {
        out.push(format!(
            "cannot see a step of 10%: {} on {} ({}), {} runs, noise {:.1}%: {}",
            s.id,
            s.host,
            s.profile,
            s.runs,
            s.noise.unwrap_or(f64::NAN) * 100.0,
            sees_text(s)
        ));
    }
    out.push(format!(
        "method: each run where a recorded fact of the host changed tested on its own (Mann–Whitney rank sum at that run, p ≤ {}/(2m) for m such runs in a series, Hodges–Lehmann shift beyond ±{}%); then, for steps nothing recorded, binary segmentation of log medians, Mann–Whitney rank statistic, permutation test p ≤ {} ({}/2 where a series has such runs; {} shuffles), Hodges–Lehmann shift beyond ±{}% with its interval, a step over the {} runs either side",
        t.method.alpha,
        t.method.min_change * 100.0,
        t.method.alpha,
        t.method.alpha,
        t.method.permutations,
        t.method.min_change * 100.0,
        t.method.window
    ));
    out
}

/// The change points of one host and profile grouped by what they share:
/// the first run after them and what changed in the host description
/// then, newest first; each group's series by id.
type Shared<'a> = Vec<(&'a ChangePoint, Vec<(&'a Series, &'a ChangePoint)>)>;

/// Groups `points` (newest first, as [`by_host`] gives them) by their
/// first run and what changed then ([`Shared`]).
fn shared<'a>(points: &[(&'a Series, &'a ChangePoint)]) -> Shared<'a> {
    let mut out: Shared<'a> = Vec::new();
    for &(s, c) in points {
        match out
            .iter_mut()
            .find(|(first, _)| first.run == c.run && first.env_changes == c.env_changes)
        {
            Some((_, members)) => members.push((s, c)),
            None => out.push((c, vec![(s, c)])),
        }
    }
    out
}

/// How a change point was found, in a few words.
pub fn test_text(c: &ChangePoint) -> &'static str {
    if c.recorded {
        "tested at the recorded change"
    } else {
        "found by the scan"
    }
}

/// The terminal view: a heading per host and profile, then per first run
/// after a change (newest first) what changed in the host description
/// then, once, with the series that changed there listed under it; then
/// the summary.
pub fn render_text(t: &HistoryTrend) -> String {
    let mut out = String::new();
    for ((host, profile), points) in by_host(t) {
        let _ = writeln!(out, "{host} ({profile})");
        let id_w = points.iter().map(|(s, _)| s.id.len()).max().unwrap_or(0);
        for (first, members) in shared(&points) {
            let _ = writeln!(
                out,
                "  {}  (run {})  {}",
                first.started.get(..10).unwrap_or(&first.started),
                first.run,
                env_text(first)
            );
            for (s, c) in members {
                let _ = writeln!(
                    out,
                    "    {:id_w$}  {:<24} {:<12} {}",
                    s.id,
                    change_text(c),
                    verdict(s, c),
                    test_text(c)
                );
            }
        }
        out.push('\n');
    }
    for line in summary(t) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Markdown: per host and profile, per first run after a change what
/// changed then (once) and a table of the series that changed there;
/// then the summary.
pub fn render_md(t: &HistoryTrend) -> String {
    let mut out = String::new();
    for ((host, profile), points) in by_host(t) {
        let _ = writeln!(out, "### {} ({})\n", cell(host), cell(profile));
        for (first, members) in shared(&points) {
            let _ = writeln!(
                out,
                "**{}, run {}**: {}\n",
                cell(&first.started),
                first.run,
                cell(&env_text(first))
            );
            out.push_str("| benchmark | change [95% CI] | | test |\n");
            out.push_str("|---|---|---|---|\n");
            for (s, c) in members {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    cell(&s.id),
                    change_text(c),
                    verdict(s, c),
                    test_text(c)
                );
            }
            out.push('\n');
        }
    }
    for line in summary(t) {
        let _ = writeln!(out, "{}  ", cell(&line));
    }
    out
}

/// CSV: one row per change point (ratios as numbers, in the unit's terms).
pub fn render_csv(t: &HistoryTrend) -> anyhow::Result<String> {
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
        "min_step",
        "recorded",
    ])?;
    for ((_, _), points) in by_host(t) {
        for (s, c) in points {
            w.write_record([
                s.host.clone(),
                s.profile.clone(),
                s.id.clone(),
                s.unit.to_string(),
                s.runs.to_string(),
                c.run.clone(),
                c.started.clone(),
                c.ratio.to_string(),
                c.ci_low.to_string(),
                c.ci_high.to_string(),
                c.p.to_string(),
                env_text(c),
                s.min_step.map_or(String::new(), |m| m.to_string()),
                c.recorded.to_string(),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// Series drawn at most in the report's trend section.
const MAX_CHARTS: usize = 40;

/// The report's trend section: each series with a change point drawn
/// with its intervals, the change points marked and what changed written
/// at the mark. Returns the number of charts.
pub fn html_section(h: &mut String, t: &HistoryTrend) -> usize {
    let _ = writeln!(h, "<section id=\"trend\">\n<h2>trend</h2>");
    let _ = writeln!(h, "<p class=\"meta\">{}</p>", esc(&summary(t).join(". ")));
    let mut n = 0;
    for s in t
        .series
        .iter()
        .filter(|s| !s.change_points.is_empty())
        .take(MAX_CHARTS)
    {
        let caption = format!(
            "{} on {} ({}), {} runs, {}: {}",
            s.id,
            s.host,
            s.profile,
            s.runs,
            sees_text(s),
            s.change_points
                .iter()
                .map(|c| format!("{} from run {}", change_text(c), c.run))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let _ = writeln!(
            h,
            "<figure class=\"chart\" data-kind=\"trend\">{}<figcaption>{}</figcaption></figure>",
            series_svg(s),
            esc(&caption)
        );
        n += 1;
    }
    h.push_str("</section>\n");
    n
}

/// The trend chart's size and margins, in SVG pixels.
const W: f64 = 800.0;
const H: f64 = 240.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 30.0;

/// Where a series' runs go on a trend chart: one slot per run, the
/// medians' range with room for most of the whiskers.
struct Frame {
    /// The value at the bottom and at the top.
    y0: f64,
    y1: f64,
    /// The padding added either side of the medians' range.
    pad: f64,
    /// The number of slots (at least 2).
    n: usize,
}

impl Frame {
    /// The frame of a series.
    fn of(s: &Series) -> Frame {
        let meds: Vec<f64> = s.points.iter().map(|p| p.2.median).collect();
        let lo = meds.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = meds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let pad = ((hi - lo) * 0.5).max(hi.abs() * 0.02);
        Frame {
            y0: lo - pad,
            y1: hi + pad,
            pad,
            n: s.points.len().max(2),
        }
    }

    /// The x of slot `i` (fractions fall between runs).
    fn x(&self, i: f64) -> f64 {
        LEFT + (W - LEFT - RIGHT) * (i + 0.5) / self.n as f64
    }

    /// The y of value `v`, clamped to the frame.
    fn y(&self, v: f64) -> f64 {
        let v = v.clamp(self.y0, self.y1);
        TOP + (H - TOP - BOTTOM) * (1.0 - (v - self.y0) / (self.y1 - self.y0))
    }
}

/// One series as SVG: each run's median with its interval, in start order,
/// a dashed line before each change point's first run with the change and
/// what changed written at it.
fn series_svg(s: &Series) -> String {
    let f = Frame::of(s);
    let mut g = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\">",
        esc(&s.id)
    );
    let _ = write!(
        g,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        W - LEFT - RIGHT,
        H - TOP - BOTTOM
    );
    for v in [f.y0 + f.pad, f.y1 - f.pad] {
        let _ = write!(
            g,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">{}</text>",
            LEFT - 4.0,
            f.y(v) + 4.0,
            esc(&human(v, s.unit))
        );
    }
    draw_runs(&mut g, s, &f);
    draw_changes(&mut g, s, &f);
    let _ = write!(
        g,
        "<text x=\"{LEFT}\" y=\"{}\" font-size=\"11\" fill=\"#555\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">{}</text></svg>",
        H - 8.0,
        esc(day(s.points.first())),
        W - RIGHT,
        H - 8.0,
        esc(day(s.points.last()))
    );
    g
}

/// The day a run started (`YYYY-MM-DD`), empty without a run.
fn day(p: Option<&(String, String, Point)>) -> &str {
    p.map_or("", |p| p.1.get(..10).unwrap_or(&p.1))
}

/// Each run: its interval as a whisker and its median as a dot whose
/// title names the run.
fn draw_runs(g: &mut String, s: &Series, f: &Frame) {
    for (i, (id, started, p)) in s.points.iter().enumerate() {
        let xi = f.x(i as f64);
        if p.ci_low.is_finite() && p.ci_high.is_finite() {
            let _ = write!(
                g,
                "<line class=\"whisker\" x1=\"{xi:.1}\" x2=\"{xi:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#7a9cc6\"/>",
                f.y(p.ci_low),
                f.y(p.ci_high)
            );
        }
        let _ = write!(
            g,
            "<circle class=\"run\" cx=\"{xi:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#1a5fb4\"><title>{} {}: {}</title></circle>",
            f.y(p.median),
            esc(id),
            esc(started),
            esc(&human(p.median, s.unit))
        );
    }
}

/// Each change point: a dashed line before its first run, the change and
/// what changed in the host written at its top.
fn draw_changes(g: &mut String, s: &Series, f: &Frame) {
    for c in &s.change_points {
        let xc = f.x(c.index as f64 - 0.5);
        let _ = write!(
            g,
            "<line class=\"change\" x1=\"{xc:.1}\" x2=\"{xc:.1}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/>",
            H - BOTTOM
        );
        let anchor = if c.index as f64 > f.n as f64 / 2.0 {
            "end"
        } else {
            "start"
        };
        let dx = if anchor == "end" { -4.0 } else { 4.0 };
        let _ = write!(
            g,
            "<text class=\"change-label\" x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"{anchor}\" fill=\"#c0392b\">{}: {}</text>",
            xc + dx,
            TOP + 12.0,
            esc(&change_text(c)),
            esc(&env_text(c))
        );
    }
}

#[cfg(test)]
mod sees_tests {
    use super::*;

    #[test]
    fn what_a_series_can_see_reads_as_a_step_or_a_ratio() {
        let mut s = Series {
            id: "a.b".into(),
            host: "h".into(),
            profile: "quick".into(),
            unit: crate::units::BaseUnit::NsPerOp,
            runs: 12,
            analysed: true,
            noise: Some(0.02),
            min_step: Some(0.058),
            change_points: Vec::new(),
            points: Vec::new(),
        };
        assert_eq!(sees_text(&s), "can see a step of 6% or more");
        s.min_step = Some(343.17);
        assert_eq!(sees_text(&s), "can see only a change of 344× or more");
        s.min_step = None;
        assert_eq!(sees_text(&s), "too noisy to see a step of any size");
    }
}
