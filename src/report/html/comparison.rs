//! For two or more runs, every later run against the first: the geometric
//! mean of time ratios per area, then per area a forest plot of each
//! benchmark's ratio with its 95% CI and verdict.

use std::fmt::Write;

use super::{charts, esc, swatch};
use crate::analysis::compare::{Change, Comparison, DEFAULT_THRESHOLD, Row, compare};
use crate::document::RunDoc;
use crate::units::fmt_ratio;
use charts::{ForestRow, Ratio};

/// The comparison section; returns the number of charts.
pub(super) fn section(h: &mut String, docs: &[RunDoc], names: &[String]) -> anyhow::Result<usize> {
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
    let mut areas: Vec<&str> = Vec::new();
    for c in &comps {
        for s in &c.summaries {
            if !areas.contains(&s.area.as_str()) {
                areas.push(&s.area);
            }
        }
    }
    geomean_table(h, docs, &comps, &areas);
    for (k, c) in comps.iter().enumerate() {
        let _ = writeln!(
            h,
            "<p class=\"meta\">{}<code>{}</code>: {}</p>",
            swatch(k + 1),
            esc(&docs[k + 1].run.id),
            esc(&crate::report::comparison::method_note(c))
        );
    }
    // Forest plots, per area, in the baseline's order.
    let mut charts = 0;
    for area in areas.iter().filter(|a| **a != "all") {
        charts += forest_plots(h, docs, &comps, area)?;
    }
    not_compared(h, docs, &comps);
    h.push_str("</section>\n");
    Ok(charts)
}

/// The geometric mean of the time ratios per area, one column per later run.
fn geomean_table(h: &mut String, docs: &[RunDoc], comps: &[Comparison], areas: &[&str]) {
    h.push_str("<table class=\"geomeans\">\n<tr><th>area</th>");
    for (k, _) in comps.iter().enumerate() {
        let _ = write!(
            h,
            "<th>{}<code>{}</code> time ÷ {}</th>",
            swatch(k + 1),
            esc(&docs[k + 1].run.id),
            esc(&docs[0].run.id)
        );
    }
    h.push_str("</tr>\n");
    for area in areas {
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
        for c in comps {
            match c.summaries.iter().find(|s| s.area == *area) {
                Some(s) => {
                    let class = match s.verdict {
                        Change::Faster => "faster",
                        Change::Slower => "slower",
                        Change::Same => "",
                    };
                    let _ = write!(
                        h,
                        "<td class=\"num {class}\">{} <span class=\"meta\">({} benchmarks: {} faster, {} slower, {} same)</span></td>",
                        esc(&fmt_ratio(s.geomean_time_ratio)),
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
}

/// The forest plots of one area, collapsed when it needs more than one;
/// returns how many were drawn.
fn forest_plots(
    h: &mut String,
    docs: &[RunDoc],
    comps: &[Comparison],
    area: &str,
) -> anyhow::Result<usize> {
    let base = &docs[0].run.id;
    let colors: Vec<usize> = (1..docs.len()).collect();
    let mut ids: Vec<&str> = Vec::new();
    for c in comps {
        for r in c.rows.iter().filter(|r| r.area == area) {
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
        let part = charts::part(i, chunks.len());
        let svg = charts::forest_svg(&format!("{area}: time ratio{part}"), base, chunk, &colors)?;
        let _ = writeln!(
            h,
            "<figure class=\"chart\" data-kind=\"forest\">{svg}<figcaption>{}</figcaption></figure>",
            esc(&format!(
                "{area}{part}: each run's time ÷ {base}'s, with its 95% CI; hollow = the same within noise"
            ))
        );
    }
    h.push_str("</details>\n");
    Ok(chunks.len())
}

/// How many benchmarks each later run and the first do not share.
fn not_compared(h: &mut String, docs: &[RunDoc], comps: &[Comparison]) {
    let only: Vec<String> = comps
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.only_a.is_empty() || !c.only_b.is_empty())
        .map(|(k, c)| {
            format!(
                "{}: {} only in {}, {} only in {}",
                esc(&docs[k + 1].run.id),
                c.only_a.len(),
                esc(&docs[0].run.id),
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
}

/// A comparison row as a time ratio (below 1: faster) with its interval.
fn time_ratio(r: &Row) -> Ratio {
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
