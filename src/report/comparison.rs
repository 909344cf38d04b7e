//! The terminal table of a comparison: per area, A, B, the ratio B/A with
//! its 95% CI and the verdict; then the geometric means and the benchmarks
//! only one run has.

use std::fmt::Write;

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use super::table::NOISY_MARK;
use crate::compare::Comparison;
use crate::units::fmt_ratio;
use crate::units::human;

/// Renders a comparison as text for the terminal.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {} ({})", c.a.describe(), c.a.started);
    let _ = writeln!(out, "B: {} ({})", c.b.describe(), c.b.started);
    let mut areas: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !areas.contains(&r.area.as_str()) {
            areas.push(&r.area);
        }
    }
    for area in areas {
        let mut t = Table::new();
        t.load_style(UTF8_BORDERS_ONLY)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(vec!["benchmark", "A", "B", "B/A", "95% CI", "verdict"]);
        for i in 1..=4 {
            if let Some(col) = t.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        let noisy = |n: bool| if n { NOISY_MARK } else { " " };
        for r in c.rows.iter().filter(|r| r.area == area) {
            t.add_row(vec![
                Cell::new(&r.id),
                Cell::new(format!("{}{}", human(r.a, &r.unit), noisy(r.noisy_a))),
                Cell::new(format!("{}{}", human(r.b, &r.unit), noisy(r.noisy_b))),
                Cell::new(fmt_ratio(r.ratio)),
                Cell::new(format!(
                    "{} – {}",
                    fmt_ratio(r.ci_low),
                    fmt_ratio(r.ci_high)
                )),
                Cell::new(r.verdict.label()),
            ]);
        }
        let _ = writeln!(out, "\n{area}\n{t}");
    }
    if c.rows.is_empty() {
        let _ = writeln!(out, "\nno benchmark is in both runs");
    }
    if !c.summaries.is_empty() {
        let mut t = Table::new();
        t.load_style(UTF8_BORDERS_ONLY)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(vec![
                "area", "n", "time B/A", "B is", "faster", "slower", "same",
            ]);
        for i in [1, 2, 4, 5, 6] {
            if let Some(col) = t.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        for s in &c.summaries {
            let g = s.geomean_time_ratio;
            let word = if (g - 1.0).abs() < 0.005 {
                "about the same".to_string()
            } else if g < 1.0 {
                format!("{} faster", fmt_ratio(1.0 / g))
            } else {
                format!("{} slower", fmt_ratio(g))
            };
            t.add_row(vec![
                s.area.clone(),
                s.n.to_string(),
                fmt_ratio(g),
                word,
                s.faster.to_string(),
                s.slower.to_string(),
                s.same.to_string(),
            ]);
        }
        let _ = writeln!(out, "\nsummary: geometric mean of time ratios B/A\n{t}");
    }
    for (title, ids) in [("only in A", &c.only_a), ("only in B", &c.only_b)] {
        if !ids.is_empty() {
            let _ = writeln!(out, "\n{title}: {}", ids.join(", "));
        }
    }
    for i in &c.incomparable {
        let _ = writeln!(out, "\nnot comparable: {}: {}", i.id, i.reason);
    }
    let _ = writeln!(
        out,
        "\nB/A = median of B / median of A; 95% CI by bootstrap on the samples; faster/slower when the CI excludes 1 and the difference exceeds {:.0}%; {NOISY_MARK} = noisy",
        c.threshold * 100.0
    );
    out
}
