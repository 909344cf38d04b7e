//! The terminal table of a run: grouped by area, human units, the CI of the
//! median as ±%, noisy results marked, warnings as numbered notes and the
//! findings under each group.

use std::fmt::Write;

use comfy_table::presets::{NOTHING, UTF8_BORDERS_ONLY};
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use super::format::{NOISY_MARK, ending, note_number, run_on_host};
use crate::analysis::score::{self, Reference, fmt_score};
use crate::document::RunDoc;
use crate::headline;
use crate::stats::NOISE_THRESHOLD;
use crate::units::human;

/// Renders a run document as text for the terminal.
pub fn render(doc: &RunDoc) -> String {
    let mut out = String::new();
    let label = doc
        .run
        .label
        .as_deref()
        .map(|l| format!(", label {l}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "opcost run {} ({} profile{label}){}",
        run_on_host(doc),
        doc.run.profile.name(),
        ending(
            &doc.run,
            " — incomplete (it did not end; these are the results it had)"
        )
    );
    if let Some(s) = &doc.stability {
        let _ = writeln!(out, "{}", s.line());
    }
    for w in &doc.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out.push_str(&render_glance(doc));
    for area in doc.areas() {
        let _ = writeln!(out);
        out.push_str(&render_area(doc, &area));
    }
    if let Some(m) = &doc.matrix {
        let _ = writeln!(out);
        out.push_str(&m.to_text(&doc.host.topology));
    }
    let skipped: Vec<_> = doc.skipped.iter().filter(|s| !s.failed).collect();
    let failed: Vec<_> = doc.skipped.iter().filter(|s| s.failed).collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "\nskipped:");
        out.push_str(&skip_lines(&skipped));
    }
    if !failed.is_empty() {
        let _ = writeln!(out, "\nfailed:");
        for s in failed {
            let _ = writeln!(out, "  {}: {}", s.id, s.reason);
        }
    }
    let noisy = doc.results.iter().filter(|m| m.noisy).count();
    let _ = writeln!(
        out,
        "\n{} results in {:.1} s; median ± half-width of its 95% CI{}; {NOISY_MARK} = noisy (CI wider than ±{:.0}%): {noisy}",
        doc.results.len(),
        doc.run.duration_s,
        rounds_note(doc),
        NOISE_THRESHOLD * 100.0
    );
    out
}

/// Rows skipped at least this many times for the same reason share a line.
const SKIPS_SHARING_A_LINE: usize = 3;

/// One line per skipped row ("id: reason"), except that rows skipped for
/// one reason ([`SKIPS_SHARING_A_LINE`] or more: another architecture's
/// instructions, a missing CPU feature) share one, in the order the
/// reasons first appear: "8 rows: reason: id, id, ...".
fn skip_lines(skipped: &[&crate::harness::Skipped]) -> String {
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for s in skipped {
        match reasons.iter_mut().find(|(r, _)| *r == s.reason) {
            Some((_, ids)) => ids.push(&s.id),
            None => reasons.push((&s.reason, vec![&s.id])),
        }
    }
    let mut out = String::new();
    for (reason, ids) in reasons {
        if ids.len() >= SKIPS_SHARING_A_LINE {
            let _ = writeln!(out, "  {} rows: {reason}: {}", ids.len(), ids.join(", "));
        } else {
            for id in ids {
                let _ = writeln!(out, "  {id}: {reason}");
            }
        }
    }
    out
}

/// How many rounds the intervals come from: "3 rounds", or "3-4 rounds"
/// when slow rounds were measured again (empty for single-round runs).
fn rounds_note(doc: &RunDoc) -> String {
    let used = |m: &crate::harness::Measurement| m.rounds.iter().filter(|r| r.used).count();
    let lo = doc.results.iter().map(used).min().unwrap_or(0);
    let hi = doc.results.iter().map(used).max().unwrap_or(0);
    let rounds = match (lo, hi) {
        (_, 0 | 1) => return String::new(),
        (lo, hi) if lo == hi => format!("{hi}"),
        (lo, hi) => format!("{lo}-{hi}"),
    };
    // the rows whose interval holds the spread between the host's runs
    let between = doc
        .results
        .iter()
        .filter(|m| m.between_runs.is_some_and(|t| t > 0.0))
        .count();
    match between {
        0 => format!(" (from the spread of its {rounds} rounds)"),
        n => format!(
            " (from the spread of its {rounds} rounds and, for {n}, of this host's earlier runs)"
        ),
    }
}

/// The price list and the score, shown before the areas (empty when the
/// run has none of the headline figures and nothing to score).
pub fn render_glance(doc: &RunDoc) -> String {
    let mut out = String::new();
    let lines = headline::lines(doc);
    if !lines.is_empty() {
        let _ = writeln!(out, "\nat a glance");
        let mut t = Table::new();
        t.load_style(NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled);
        for l in &lines {
            t.add_row(vec![
                Cell::new(l.entry.label),
                Cell::new(format!(
                    "{}{}",
                    human(l.m.median, l.m.unit),
                    if l.m.noisy { NOISY_MARK } else { "" }
                ))
                .set_alignment(CellAlignment::Right),
                Cell::new(l.gloss()),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    let reference = Reference::shipped();
    let sc = score::score(doc, reference);
    if let Some(overall) = sc.overall {
        let _ = writeln!(
            out,
            "\nscore {} against the reference run {} ({}): 1.00 = that machine, 2.00 = twice as fast",
            fmt_score(overall),
            reference.id,
            reference.machine
        );
        let parts: Vec<String> = sc
            .areas
            .iter()
            .map(|a| {
                format!(
                    "{} {} ({})",
                    a.area,
                    fmt_score(a.score),
                    crate::units::count(a.ids.len(), "result")
                )
            })
            .collect();
        let _ = writeln!(out, "  {}", score_coverage(&sc, &parts));
    }
    out
}

/// The second line of the score: the areas it covers with their scores,
/// what it is a mean of, the results of those areas the reference lacks,
/// and the areas it does not score at all.
fn score_coverage(sc: &score::Score, parts: &[String]) -> String {
    let mut line = format!(
        "covers {}; geometric mean of reference time / this time over the {} both runs have",
        parts.join(", "),
        crate::units::count(sc.used(), "result")
    );
    let left: usize = sc.areas.iter().map(|a| a.left_out).sum();
    if left > 0 {
        let _ = write!(
            line,
            ", {} of these areas left out (the reference lacks them)",
            crate::units::count(left, "other result")
        );
    }
    if !sc.unscored.is_empty() {
        let names: Vec<String> = sc
            .unscored
            .iter()
            .map(|u| format!("{} ({})", u.area, crate::units::count(u.results, "result")))
            .collect();
        let _ = write!(
            line,
            "; not scored: {} (the reference has none of their results)",
            names.join(", ")
        );
    }
    line
}

/// "cpu 38% (sys 31%)" for a throughput whose CPU time was accounted:
/// the CPUs its samples kept busy, and of that the kernel's part, as a
/// share of one CPU.
fn cpu_note(m: &crate::harness::Measurement) -> Option<String> {
    if m.unit != crate::harness::BaseUnit::BytesPerSec {
        return None;
    }
    let d = m.details.as_ref()?;
    let share = d.get("cpu_share")?.as_f64()?;
    let sys = d.get("cpu_sys_share")?.as_f64()?;
    Some(format!(
        "cpu {:.0}% (sys {:.0}%) ",
        share * 100.0,
        sys * 100.0
    ))
}

/// Renders one area: its table, numbered warnings, then its findings.
pub fn render_area(doc: &RunDoc, area: &str) -> String {
    let mut table = Table::new();
    table
        .load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec!["benchmark", "median", "±CI", "p5 … p95", "note"]);
    for i in 1..=3 {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut notes: Vec<String> = Vec::new();
    for m in doc.area(area) {
        let mut note = String::new();
        if m.noisy {
            note.push_str(NOISY_MARK);
        }
        if let Some(c) = cpu_note(m) {
            note.push_str(&c);
        }
        // The noise warning is the mark's.
        for w in m.other_warnings().cloned().chain(m.wide_ci_note()) {
            let n = note_number(&mut notes, &w);
            let _ = write!(note, "[{n}]");
        }
        let (lo, hi) = if m.higher_is_better() {
            (m.p95, m.p5)
        } else {
            (m.p5, m.p95)
        };
        table.add_row(vec![
            Cell::new(&m.id),
            Cell::new(human(m.median, m.unit)),
            Cell::new(m.ci_text()),
            Cell::new(format!(
                "{} … {}",
                human(lo.min(hi), m.unit),
                human(lo.max(hi), m.unit)
            )),
            Cell::new(note),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(out, "{area}");
    if doc.area(area).next().is_some() {
        let _ = writeln!(out, "{table}");
    }
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(out, "  [{}] {n}", i + 1);
    }
    for f in doc.findings.iter().filter(|f| f.area == area) {
        let _ = writeln!(out, "  » {}", f.text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_glance_value_is_its_rows_and_a_finding_at_the_same_size_says_the_same() {
        // A kept whole-machine document (the shipped reference run, quick),
        // its findings made by this tree's rules: one figure per thing.
        let mut doc: RunDoc = serde_json::from_str(crate::analysis::score::reference_json())
            .expect("the reference parses");
        doc.findings = crate::suites::findings(&doc.results);
        let lines = headline::lines(&doc);
        assert!(lines.len() >= 10, "{} glance lines", lines.len());
        let mut same_size = 0;
        let glance = render_glance(&doc);
        for l in &lines {
            let value = human(l.m.median, l.m.unit);
            assert!(
                glance.contains(&value),
                "{}: {value} not in\n{glance}",
                l.m.id
            );
            let table = render_area(&doc, &l.m.area);
            let row = table
                .lines()
                .find(|r| r.split_whitespace().nth(1) == Some(l.m.id.as_str()))
                .unwrap_or_else(|| panic!("no row for {}", l.m.id));
            assert!(
                row.contains(&value),
                "{}: {value} against its row {row}",
                l.m.id
            );
            // A finding that gives a per-load time at the working set a
            // memory line of the glance names gives the same figure.
            if let Some(size) = l.m.id.strip_prefix("memory.latency.random/") {
                let at = format!(
                    "at {} 4 KiB pages take ",
                    crate::units::approx_size(
                        l.m.params.get("size").and_then(|s| s.as_u64()).unwrap_or(0),
                    )
                );
                for f in doc.findings.iter().filter(|f| f.text.starts_with(&at)) {
                    same_size += 1;
                    assert!(
                        f.text[at.len()..].starts_with(&format!("{value} per load")),
                        "{size}: the glance's {value} against the finding {}",
                        f.text
                    );
                }
            }
        }
        assert!(same_size > 0, "no finding at a glance line's working set");
        // The cache levels' latencies are another quantity, and say so.
        for f in doc
            .findings
            .iter()
            .filter(|f| f.text.starts_with('L') && f.text.contains(" @ "))
        {
            assert!(f.text.contains("(the plateau's fast end)"), "{}", f.text);
        }
    }

    #[test]
    fn the_last_line_counts_the_rows_whose_interval_holds_the_spread_between_runs() {
        let mut doc: RunDoc = serde_json::from_str(crate::analysis::score::reference_json())
            .expect("the reference parses");
        let round = crate::harness::Round {
            median: 1.0,
            used: true,
            ..Default::default()
        };
        for m in &mut doc.results {
            m.rounds = vec![round.clone(); 3];
        }
        assert!(doc.results.iter().all(|m| m.between_runs.is_none()));
        assert_eq!(rounds_note(&doc), " (from the spread of its 3 rounds)");
        doc.results[0].between_runs = Some(0.04);
        doc.results[1].between_runs = Some(0.0);
        assert_eq!(
            rounds_note(&doc),
            " (from the spread of its 3 rounds and, for 1, of this host's earlier runs)"
        );
    }

    #[test]
    fn rows_skipped_for_one_reason_share_a_line() {
        let sk = |id: &str, reason: &str| crate::harness::Skipped {
            id: id.into(),
            reason: reason.into(),
            failed: false,
        };
        let arm = "aarch64 instructions; this is x86_64";
        let rows = [
            sk("m.neon", arm),
            sk("a.one", "needs root"),
            sk("m.sve", arm),
            sk("m.dc_zva", arm),
            sk("b.two", "needs root"),
        ];
        let refs: Vec<_> = rows.iter().collect();
        assert_eq!(
            skip_lines(&refs),
            format!(
                "  3 rows: {arm}: m.neon, m.sve, m.dc_zva\n  a.one: needs root\n  b.two: needs root\n"
            )
        );
    }
    use crate::harness::Measurement;

    #[test]
    fn throughput_rows_with_cpu_details_show_the_share_and_its_kernel_part() {
        let mut m = Measurement::point("storage.seq.read.cold", "B/s", 1e8);
        assert_eq!(cpu_note(&m), None);
        m.details = Some(serde_json::json!({"cpu_share": 0.38, "cpu_sys_share": 0.31}));
        assert_eq!(cpu_note(&m).as_deref(), Some("cpu 38% (sys 31%) "));
        let mut lat = Measurement::point("storage.sync.fsync", "ns/op", 1e6);
        lat.details = m.details.clone();
        assert_eq!(cpu_note(&lat), None);
    }

    #[test]
    fn the_score_names_the_areas_it_covers_and_those_it_leaves_out() {
        let mut doc: RunDoc = serde_json::from_str(score::reference_json()).unwrap();
        doc.results.retain(|m| m.id.starts_with("syscall."));
        let scored = doc.results.len();
        doc.results
            .push(Measurement::point("syscall.not_in_reference", "ns/op", 5.0));
        doc.results
            .push(Measurement::point("timer.not_in_reference", "ns/op", 5.0));
        let text = render_glance(&doc);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("covers"))
            .unwrap_or_else(|| panic!("no coverage line: {text}"));
        assert!(
            line.starts_with(&format!("  covers syscall 1.00 ({scored} results);")),
            "{line}"
        );
        assert!(
            line.contains(", 1 other result of these areas left out (the reference lacks them)"),
            "{line}"
        );
        assert!(
            line.ends_with(
                "; not scored: timer (1 result) (the reference has none of their results)"
            ),
            "{line}"
        );
    }
}
