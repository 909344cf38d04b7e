//! Markdown output: a run as one table per area with its findings, and a
//! comparison of two runs. Meant for pasting into an issue or a README.

use std::fmt::Write;

use super::format::{NOISY_MARK, cell, ending};
use crate::analysis::compare::Comparison;
use crate::document::RunDoc;
use crate::units::fmt_ratio;
use crate::units::human;

/// Renders a run as Markdown.
pub fn render_run(doc: &RunDoc) -> String {
    let mut out = String::new();
    run_header(&mut out, doc);
    for area in doc.areas() {
        run_area(&mut out, doc, &area);
    }
    if !doc.skipped.is_empty() {
        out.push_str("## skipped and failed\n\n");
        for s in &doc.skipped {
            let what = if s.failed { "failed" } else { "skipped" };
            let _ = writeln!(out, "- `{}` {what}: {}", cell(&s.id), cell(&s.reason));
        }
        out.push('\n');
    }
    out
}

/// The run's title, what it was, its stability line and its warnings.
fn run_header(out: &mut String, doc: &RunDoc) {
    let _ = writeln!(
        out,
        "# opcost run {} on {}\n",
        cell(&doc.run.id),
        cell(&doc.host.hostname)
    );
    let label = doc
        .run
        .label
        .as_deref()
        .map(|l| format!(", label `{}`", cell(l)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{} profile, started {}, {:.1} s, opcost {}{label}{}\n",
        doc.run.profile.name(),
        doc.run.started,
        doc.run.duration_s,
        cell(&doc.opcost_version),
        ending(&doc.run, " — incomplete")
    );
    if let Some(s) = &doc.stability {
        let _ = writeln!(out, "> {}\n", cell(&s.line()));
    }
    for w in &doc.warnings {
        let _ = writeln!(out, "> warning: {}\n", cell(w));
    }
}

/// One area of a run: the table of its results, then its findings.
fn run_area(out: &mut String, doc: &RunDoc, area: &str) {
    let _ = writeln!(out, "## {}\n", cell(area));
    if doc.area(area).next().is_some() {
        out.push_str("| benchmark | median | ±CI | p5 … p95 | samples | note |\n");
        out.push_str("|---|--:|--:|--:|--:|---|\n");
        for m in doc.area(area) {
            let (lo, hi) = (m.p5.min(m.p95), m.p5.max(m.p95));
            let mut note: Vec<String> = Vec::new();
            if m.noisy {
                note.push(format!("{NOISY_MARK} noisy"));
            }
            note.extend(m.other_warnings().cloned());
            note.extend(m.wide_ci_note());
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} … {} | {} | {} |",
                cell(&m.id),
                human(m.median, m.unit),
                m.ci_text(),
                human(lo, m.unit),
                human(hi, m.unit),
                m.samples.len(),
                cell(&note.join("; "))
            );
        }
        out.push('\n');
    }
    for f in doc.findings.iter().filter(|f| f.area == area) {
        let _ = writeln!(out, "- {}", cell(&f.text));
    }
    if doc.findings.iter().any(|f| f.area == area) {
        out.push('\n');
    }
}

/// Renders a comparison as Markdown.
pub fn render_compare(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# opcost compare\n");
    let _ = writeln!(out, "- A: {} ({})", cell(&c.a.describe()), c.a.started);
    let _ = writeln!(out, "- B: {} ({})\n", cell(&c.b.describe()), c.b.started);
    for note in super::comparison::notes(c) {
        let _ = writeln!(out, "{}\n", cell(&note));
    }
    compare_rows(&mut out, c);
    compare_summary(&mut out, c);
    let list = |out: &mut String, title: &str, ids: &[String]| {
        if !ids.is_empty() {
            let _ = writeln!(out, "## {title}\n");
            for id in ids {
                let _ = writeln!(out, "- `{}`", cell(id));
            }
            out.push('\n');
        }
    };
    list(&mut out, "only in A", &c.only_a);
    list(&mut out, "only in B", &c.only_b);
    if !c.incomparable.is_empty() {
        let _ = writeln!(out, "## not comparable\n");
        for i in &c.incomparable {
            let _ = writeln!(out, "- `{}`: {}", cell(&i.id), cell(&i.reason));
        }
        out.push('\n');
    }
    out
}

/// The compared rows, one table per area.
fn compare_rows(out: &mut String, c: &Comparison) {
    let mut area = "";
    for r in &c.rows {
        if r.area != area {
            if !area.is_empty() {
                out.push('\n');
            }
            area = &r.area;
            let _ = writeln!(out, "## {}\n", cell(area));
            out.push_str("| benchmark | A | B | B/A | 95% CI | verdict |\n");
            out.push_str("|---|--:|--:|--:|--:|---|\n");
        }
        let noisy = |n: bool| if n { NOISY_MARK } else { "" };
        let _ = writeln!(
            out,
            "| `{}` | {}{} | {}{} | {} | {} – {} | {} |",
            cell(&r.id),
            human(r.a, r.unit),
            noisy(r.noisy_a),
            human(r.b, r.unit),
            noisy(r.noisy_b),
            fmt_ratio(r.ratio),
            fmt_ratio(r.ci_low),
            fmt_ratio(r.ci_high),
            super::comparison::verdict_text(r)
        );
    }
    if !c.rows.is_empty() {
        out.push('\n');
    }
}

/// The geometric mean of each area's time ratios and its verdict.
fn compare_summary(out: &mut String, c: &Comparison) {
    if !c.summaries.is_empty() {
        let _ = writeln!(
            out,
            "## summary\n\nGeometric mean of the time ratios B/A (below 1: B is faster); verdicts beyond ±{:.0}% and outside the 95% CI.\n",
            c.threshold * 100.0
        );
        out.push_str("| area | benchmarks | time B/A | 95% CI | B is | faster | slower | same |\n");
        out.push_str("|---|--:|--:|--:|---|--:|--:|--:|\n");
        for s in &c.summaries {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} – {} | {} | {} | {} | {} |",
                cell(&s.area),
                s.n,
                fmt_ratio(s.geomean_time_ratio),
                fmt_ratio(s.geomean_ci.0),
                fmt_ratio(s.geomean_ci.1),
                super::comparison::area_word(s),
                s.faster,
                s.slower,
                s.same
            );
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_pipes_and_newlines() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
