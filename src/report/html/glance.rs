//! "At a glance": the headline price list, one column per run, and the
//! score of each run against the shipped reference, with the results that
//! went into it.

use std::fmt::Write;

use super::{esc, median_cell, open_runs_table, swatch};
use crate::analysis::score::{self, Reference, Score, fmt_score};
use crate::document::RunDoc;
use crate::headline;

/// The price list and the scores.
pub(super) fn section(h: &mut String, docs: &[RunDoc]) {
    h.push_str("<section id=\"glance\">\n<h2>at a glance</h2>\n");
    price_list(h, docs);
    scores(h, docs);
}

/// The headline figures the runs measured: one row per entry, one column
/// per run, the ids that gave them and the entry in plain words.
fn price_list(h: &mut String, docs: &[RunDoc]) {
    let per_run: Vec<Vec<headline::Line>> = docs.iter().map(headline::lines).collect();
    let shown: Vec<&headline::Entry> = headline::ENTRIES
        .iter()
        .filter(|e| per_run.iter().flatten().any(|l| std::ptr::eq(l.entry, *e)))
        .collect();
    if shown.is_empty() {
        h.push_str(
            "<p class=\"meta\">None of the headline figures was measured in these runs.</p>\n",
        );
        return;
    }
    open_runs_table(h, "headline", "what", docs);
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
                    cells.push_str(&median_cell(l.m, false));
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

/// Each run's score against the shipped reference: the table, what 1.00
/// means, and the results that went in; closes the section.
fn scores(h: &mut String, docs: &[RunDoc]) {
    let reference = Reference::shipped();
    let scores: Vec<Score> = docs.iter().map(|d| score::score(d, reference)).collect();
    if scores.iter().all(|s| s.overall.is_none()) {
        h.push_str("<p class=\"meta\">No result of these runs is in the reference run, so there is no score.</p>\n</section>\n");
        return;
    }
    score_table(h, docs, &scores);
    let _ = writeln!(
        h,
        "<p class=\"meta\">1.00 = the reference run <code>{}</code> ({}, {} profile, {}); 2.00 = twice as fast. An area's score is the geometric mean of reference time ÷ this run's time over the results both runs have; the overall score is the geometric mean of the area scores. Results the reference lacks are left out.</p>",
        esc(&reference.id),
        esc(&reference.machine),
        esc(&reference.profile),
        esc(&reference.started)
    );
    score_results(h, docs, &scores);
    h.push_str("</section>\n");
}

/// The overall score and each area's, one column per run.
fn score_table(h: &mut String, docs: &[RunDoc], scores: &[Score]) {
    let mut areas: Vec<&str> = Vec::new();
    for s in scores {
        for a in &s.areas {
            if !areas.contains(&a.area.as_str()) {
                areas.push(&a.area);
            }
        }
    }
    h.push_str("<h3>score</h3>\n");
    open_runs_table(h, "scores", "area", docs);
    h.push_str("</tr>\n<tr class=\"overall\"><th>overall</th>");
    for s in scores {
        let _ = write!(
            h,
            "<td class=\"num score\">{}</td>",
            s.overall.map_or("—".to_string(), fmt_score)
        );
    }
    h.push_str("</tr>\n");
    for area in &areas {
        let _ = write!(h, "<tr><th>{}</th>", esc(area));
        for s in scores {
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
}

/// The results in each run's area scores, collapsed.
fn score_results(h: &mut String, docs: &[RunDoc], scores: &[Score]) {
    h.push_str("<details><summary>results in the score</summary>\n<ul>\n");
    for (i, (d, s)) in docs.iter().zip(scores).enumerate() {
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
    h.push_str("</ul>\n</details>\n");
}
