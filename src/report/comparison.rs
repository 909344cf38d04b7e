//! The terminal table of a comparison: per area, A, B, the ratio B/A with
//! its 95% CI and the verdict; then the geometric means and the benchmarks
//! only one run has.

use std::fmt::Write;

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use super::format::NOISY_MARK;
use crate::analysis::compare::{Change, Comparison, GateFailures, Row};
use crate::units::fmt_ratio;
use crate::units::human;

/// Renders a comparison as text for the terminal.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    sides(&mut out, c);
    for note in notes(c) {
        let _ = writeln!(out, "{note}");
    }
    let mut areas: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !areas.contains(&r.area.as_str()) {
            areas.push(&r.area);
        }
    }
    for area in areas {
        let _ = writeln!(out, "\n{area}\n{}", area_table(c, area));
    }
    if c.rows.is_empty() {
        let _ = writeln!(out, "\nno benchmark is in both runs");
    }
    summary(&mut out, c);
    for (title, ids) in [("only in A", &c.only_a), ("only in B", &c.only_b)] {
        if !ids.is_empty() {
            let _ = writeln!(out, "\n{title}: {}", ids.join(", "));
        }
    }
    for i in &c.incomparable {
        let _ = writeln!(out, "\nnot comparable: {}: {}", i.id, i.reason);
    }
    let _ = writeln!(out, "\n{}", method_note(c));
    out
}

/// The runs of each side: one line, or a count and a line per run.
fn sides(out: &mut String, c: &Comparison) {
    for (side, runs) in [("A", &c.a_runs), ("B", &c.b_runs)] {
        match runs.as_slice() {
            [one] => {
                let _ = writeln!(out, "{side}: {} ({})", one.describe(), one.started);
            }
            many => {
                let _ = writeln!(out, "{side}: {} runs", many.len());
                for r in many {
                    let _ = writeln!(out, "   {} ({})", r.describe(), r.started);
                }
            }
        }
    }
}

/// A table without inner lines whose columns `right` are right-aligned.
fn table(header: Vec<&str>, right: &[usize]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header);
    for &i in right {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The rows of one area: A, B, the ratio B/A, its interval and the verdict.
fn area_table(c: &Comparison, area: &str) -> Table {
    let mut t = table(
        vec!["benchmark", "A", "B", "B/A", "95% CI", "verdict"],
        &[1, 2, 3, 4],
    );
    let noisy = |n: bool| if n { NOISY_MARK } else { " " };
    for r in c.rows.iter().filter(|r| r.area == area) {
        t.add_row(vec![
            Cell::new(&r.id),
            Cell::new(format!("{}{}", human(r.a, r.unit), noisy(r.noisy_a))),
            Cell::new(format!("{}{}", human(r.b, r.unit), noisy(r.noisy_b))),
            Cell::new(fmt_ratio(r.ratio)),
            Cell::new(format!(
                "{} – {}",
                fmt_ratio(r.ci_low),
                fmt_ratio(r.ci_high)
            )),
            Cell::new(verdict_text(r)),
        ]);
    }
    t
}

/// The geometric mean of each area's time ratios with its interval, and
/// how many rows could have seen a 5% change.
fn summary(out: &mut String, c: &Comparison) {
    if c.summaries.is_empty() {
        return;
    }
    let mut t = table(
        vec!["area", "n", "time B/A", "B is", "faster", "slower", "same"],
        &[1, 2, 4, 5, 6],
    );
    for s in &c.summaries {
        let g = s.geomean_time_ratio;
        t.add_row(vec![
            s.area.clone(),
            s.n.to_string(),
            format!(
                "{} ({} – {})",
                fmt_ratio(g),
                fmt_ratio(s.geomean_ci.0),
                fmt_ratio(s.geomean_ci.1)
            ),
            area_word(s),
            s.faster.to_string(),
            s.slower.to_string(),
            s.same.to_string(),
        ]);
    }
    let _ = writeln!(
        out,
        "\nsummary: geometric mean of time ratios B/A with its 95% interval (the area's rows as samples of its change)\n{t}"
    );
    if let Some(all) = c.summaries.last() {
        let _ = writeln!(
            out,
            "{} of {} rows could have seen a 5% change (their minimal detectable effect is at most 5%){}",
            all.could_see,
            all.n,
            blind_hint(c, all)
        );
    }
}

/// What to do when most rows of a comparison of separate runs could not
/// have seen a 5% change: measure A and B interleaved, or several runs a
/// side. Empty for `ab`'s paired comparisons and when most rows could.
fn blind_hint(c: &Comparison, all: &crate::analysis::compare::Summary) -> &'static str {
    let paired = c
        .rows
        .iter()
        .any(|r| r.method == crate::analysis::compare::CiMethod::PairedRounds);
    if paired || 2 * all.could_see >= all.n {
        ""
    } else {
        "; to see a smaller change, measure A and B interleaved (`opcost ab`, when a setting makes the difference: its rounds are compared in pairs) or give each side several runs"
    }
}

/// An area's verdict in words, decided by its geometric mean's interval:
/// "1.12× slower", "1.30× faster" or "no clear change".
pub fn area_word(s: &crate::analysis::compare::Summary) -> String {
    let g = s.geomean_time_ratio;
    match s.verdict {
        Change::Faster => format!("{} faster", fmt_ratio(1.0 / g)),
        Change::Slower => format!("{} slower", fmt_ratio(g)),
        Change::Same => "no clear change".to_string(),
    }
}

/// A row's verdict in words: faster or slower, or for the same the largest
/// change it could have missed ("no change > 3.2%").
pub fn verdict_text(r: &Row) -> String {
    match r.verdict {
        Change::Same if r.mde.is_finite() => format!("no change > {}", pct(r.mde)),
        v => v.label().to_string(),
    }
}

fn pct(x: f64) -> String {
    if x < 0.095 {
        format!("{:.1}%", x * 100.0)
    } else {
        format!("{:.0}%", x * 100.0)
    }
}

/// The result of `--fail-on`: "gate passed" or "gate FAILED" with the
/// offending rows and areas, one a line.
pub fn gate_report(c: &Comparison, f: &GateFailures) -> String {
    if f.passed() {
        return "gate passed: no row or area slower beyond its limit\n".to_string();
    }
    let mut out = format!(
        "gate FAILED: {} rows and {} areas slower beyond their limit\n",
        f.rows.len(),
        f.areas.len()
    );
    for &i in &f.areas {
        let s = &c.summaries[i];
        let _ = writeln!(
            out,
            "  area {}: time B/A {} (95% CI {} – {}; geometric mean of {} rows, {} called slower)",
            s.area,
            fmt_ratio(s.geomean_time_ratio),
            fmt_ratio(s.geomean_ci.0),
            fmt_ratio(s.geomean_ci.1),
            s.n,
            s.slower
        );
    }
    for &i in &f.rows {
        let r = &c.rows[i];
        let (lo, hi) = r.time_ci();
        let _ = writeln!(
            out,
            "  {}: time B/A {} (95% CI {} – {}), {} → {}",
            r.id,
            fmt_ratio(r.time_ratio()),
            fmt_ratio(lo),
            fmt_ratio(hi),
            human(r.a, r.unit),
            human(r.b, r.unit)
        );
    }
    out
}

/// The warnings about the sides themselves, shown above the tables of the
/// text and Markdown formats.
pub fn notes(c: &Comparison) -> impl Iterator<Item = String> {
    same_run_note(c)
        .into_iter()
        .chain(settings_note(c))
        .chain(phase_note(c))
        .chain(load_note(c))
        .chain(whole_note(c))
        .chain(kernel_note(c))
}

/// The warning that the machine's system calls ran at another speed in A
/// and B, as the kernel canary saw it, when the whole run's line does not
/// already say it.
pub fn kernel_note(c: &Comparison) -> Option<String> {
    let k = c.kernel_changed()?;
    if c.whole_shift.is_some() {
        return None;
    }
    Some(format!(
        "the machine's system calls changed speed: the kernel canary ({} raw getppid calls between the rounds, one kernel on both sides) took {:.0}% {} in B than in A, so rows that enter the kernel may differ by that much with no change of theirs: measure again, or compare several runs per side",
        crate::harness::canary::KERNEL_CALLS,
        (k - 1.0).abs() * 100.0,
        if k > 1.0 { "longer" } else { "less time" },
    ))
}

/// What the kernel canary made of a whole run that moved, for
/// [`whole_note`]: "; the kernel canary (…) took 19% less time in B" or
/// "; the kernel canary (…) read the same (2.0% apart)".
fn kernel_clause(c: &Comparison) -> String {
    match c.kernel_shift {
        Some(k) if c.kernel_changed().is_some() => format!(
            "; the kernel canary (system calls between the rounds) took {:.0}% {} in B",
            (k - 1.0).abs() * 100.0,
            if k > 1.0 { "longer" } else { "less time" },
        ),
        Some(k) => format!(
            "; the kernel canary (system calls between the rounds) read the same ({:.1}% apart)",
            (k.ln().abs().exp() - 1.0) * 100.0
        ),
        None => String::new(),
    }
}

/// The warning that the whole run moved: every area of one host faster
/// (or slower) alike ([`Comparison::whole_shift`]), with what the stability
/// canary made of it.
pub fn whole_note(c: &Comparison) -> Option<String> {
    use crate::analysis::compare::WHOLE_MIN_ROWS;
    let shift = c.whole_shift?;
    let faster = shift < 1.0;
    let word = if faster { "faster" } else { "slower" };
    let factor = |t: f64| if faster { 1.0 / t } else { t };
    let areas: Vec<String> = c
        .summaries
        .iter()
        .filter(|s| s.area != "all" && s.n >= WHOLE_MIN_ROWS)
        .map(|s| format!("{} {}", s.area, fmt_ratio(factor(s.geomean_time_ratio))))
        .collect();
    let canary = match c.machine_shift {
        Some(_) if c.phase_changed().is_some() => {
            ", as the stability canary saw (above)".to_string()
        }
        Some(m) => format!(
            ", while the stability canary, arithmetic on one core, read the same speed ({:.1}% apart): the core's own speed held, and what moved is what a run shares beyond it (caches and memory shared with other guests, the kernel's paths, where the host placed the run)",
            ((m.ln().abs()).exp() - 1.0) * 100.0
        ),
        None => String::new(),
    };
    Some(format!(
        "the whole run moved: B ran {} {word} in every area alike ({}){canary}{}. A shared machine's state can move a whole run like this, which no run's rounds see, and so can a change that reaches every area; the rows below are as measured. To tell the two apart, give each side several runs (`A1,A2,A3`), or let the history hold 3 earlier runs of this host (a noise floor per row)",
        fmt_ratio(factor(shift)),
        areas.join(", "),
        kernel_clause(c)
    ))
}

/// What differs between the sides' run settings, in words: `B ran with
/// GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2 (A without it)`.
pub fn settings_note(c: &Comparison) -> Option<String> {
    if c.settings_changes.is_empty() {
        return None;
    }
    let parts: Vec<String> = c
        .settings_changes
        .iter()
        .map(|s| {
            let env = crate::host::settings::env_allowed(&s.name);
            match (s.before.as_str(), s.after.as_str()) {
                ("unset", b) if env => format!("B ran with {}={b} (A without it)", s.name),
                (a, "unset") if env => format!("A ran with {}={a} (B without it)", s.name),
                (a, b) if env => format!("{} was {a} in A and {b} in B", s.name),
                (a, b) => format!("{}: {a} in A, {b} in B", s.name),
            }
        })
        .collect();
    Some(format!(
        "the sides ran with different settings: {}; differences below may be theirs",
        parts.join("; ")
    ))
}

/// The warning that a run is on both sides, so the comparison compares it
/// with itself.
pub fn same_run_note(c: &Comparison) -> Option<String> {
    let shared = c.shared_runs();
    if shared.is_empty() {
        return None;
    }
    let one = c.a_runs.len() == 1 && c.b_runs.len() == 1;
    Some(if one {
        format!(
            "A and B are one run ({}): every row compares the run with itself, so the ratios are 1 by construction and the intervals, made for two independent runs, mean nothing here; compare it with another run",
            shared[0]
        )
    } else {
        format!(
            "{} {} on both sides ({}): the sides are not independent, so their intervals are too narrow and the verdicts too bold; give each run to one side only",
            shared.len(),
            if shared.len() == 1 {
                "run is"
            } else {
                "runs are"
            },
            shared.join(", ")
        )
    })
}

/// The warning that the host itself changed speed between the sides, as
/// the runs' stability canaries saw it.
pub fn phase_note(c: &Comparison) -> Option<String> {
    let s = c.phase_changed()?;
    Some(format!(
        "machine speed changed: the stability canary took {:.0}% {} in B than in A, so the host ran in a different phase; differences of that size may be the machine's, not a change: measure again, or compare several runs per side",
        (s - 1.0).abs() * 100.0,
        if s > 1.0 { "longer" } else { "less time" },
    ))
}

/// The warning that one side ran while other programs used the CPUs.
pub fn load_note(c: &Comparison) -> Option<String> {
    let Some([a, b]) = c.load_changed() else {
        return shared_note(c);
    };
    let (busy, quiet) = if b > a { ("B", "A") } else { ("A", "B") };
    Some(format!(
        "{busy} ran on a busier machine: other programs used {:.0}% of the CPUs during {busy} and {:.0}% during {quiet}. Per-operation costs leave out the batches they interrupted, so most rows compare the operations themselves; rows that need whole CPUs (all-thread bandwidth, cross-CPU round trips, wake-ups, timers under load) also show the sharing",
        a.max(b) * 100.0,
        a.min(b) * 100.0,
    ))
}

/// The warning that both sides ran while other programs used the CPUs:
/// rows measured on several CPUs at once took what the others left them,
/// as the sharing fell in each run.
fn shared_note(c: &Comparison) -> Option<String> {
    let [a, b] = c.both_shared()?;
    let (several, called) = c.called_on_several_cpus();
    Some(format!(
        "both sides shared the machine: other programs used {:.0}% of the CPUs during A and {:.0}% during B. Rows measured on several CPUs at once (pairs across CPUs, bandwidth on several threads) got what the others left them, as the sharing fell in each run: {several} of the {called} rows called changed are such rows; compare them from runs on a quiet machine",
        a * 100.0,
        b * 100.0,
    ))
}

/// The caveat of a comparison of one run a side without a noise floor:
/// what moves between runs for longer than a run lasts is in none of its
/// intervals.
pub fn floor_note(c: &Comparison) -> Option<String> {
    use crate::analysis::compare::{CiMethod, FLOOR_MIN_RUNS, condition, condition_class, family};
    let by_rounds = c
        .rows
        .iter()
        .any(|r| matches!(r.method, CiMethod::Rounds | CiMethod::RoundsAsMeasured));
    let single = c.a_runs.len() == 1 && c.b_runs.len() == 1;
    (by_rounds && single && c.floor_runs == 0).then(|| {
        let widened: Vec<&str> = c
            .rows
            .iter()
            .filter(|r| r.family_spread.is_some())
            .map(|r| r.id.as_str())
            .collect();
        let families = {
            let mut f: Vec<&str> = widened.iter().map(|id| family(id)).collect();
            f.sort_unstable();
            f.dedup();
            f.len()
        };
        let mut seen = match widened.len() {
            0 => "no family of benchmarks scattered in this pair by more than its rounds explain".to_string(),
            n => format!(
                "where a family of benchmarks scattered in this pair by more than its rounds explain, that scatter was added to its rows' intervals ({n} rows in {families} famil{})",
                if families == 1 { "y" } else { "ies" }
            ),
        };
        let by_condition: Vec<&str> = c
            .rows
            .iter()
            .filter(|r| r.condition_spread.is_some())
            .filter_map(|r| condition(&r.id))
            .collect();
        if !by_condition.is_empty() {
            let mut classes: Vec<String> = by_condition.iter().map(|c| condition_class(c)).collect();
            classes.sort();
            classes.dedup();
            let named: Vec<String> = classes
                .iter()
                .map(|k| if k.is_empty() { "by size".to_string() } else { format!("`{k}`") })
                .collect();
            seen.push_str(&format!(
                "; where whole conditions shared by several families moved apart by more than their rounds explain (one size of every transport at once), that spread was added to the rows of their class ({} rows; {})",
                by_condition.len(),
                named.join(", ")
            ));
        }
        format!(
            "no noise floor from the history (one run a side, and fewer than {FLOOR_MIN_RUNS} earlier runs of {} in the history or --no-history): what moves between runs for longer than a run lasts, such as the state of a file system or a process's memory layout, is in no run's rounds; {seen}, so a few rows may be called changed that did not change (up to 5% of rows in A/A pairs); several runs a side (`A1,A2,A3` or `host:NAME@N`) or {FLOOR_MIN_RUNS} earlier runs in the history take it in",
            c.a.host
        )
    })
}

/// How the comparison was made, in words: the footer of every format.
pub fn method_note(c: &Comparison) -> String {
    use crate::analysis::compare::CiMethod;
    let count = |m: CiMethod| c.rows.iter().filter(|r| r.method == m).count();
    let mut parts: Vec<String> = notes(c).collect();
    parts.push(
        "B/A = median of B / median of A (a side of several runs: the geometric mean of their medians)".to_string(),
    );
    let how: Vec<String> = [
        (
            CiMethod::Rounds,
            "from the spread of the rounds (Welch's t on log round medians: the run-to-run variation a run can see)",
        ),
        (
            CiMethod::RoundsAsMeasured,
            "the same on the rounds as measured (both sides ran in a like mix of the machine's phases, so the phase correction is undone; B and A are then the geometric means of the measured round medians)",
        ),
        (
            CiMethod::PairedRounds,
            "from the differences of paired rounds (round k of A ran next to round k of B: Student's t on the differences of their log medians, so what the machine did between the rounds falls on both)",
        ),
        (
            CiMethod::Bootstrap,
            "by bootstrap on the samples (documents without rounds)",
        ),
        (CiMethod::MedianCis, "from the stored CIs of the medians"),
    ]
    .into_iter()
    .filter(|&(m, _)| count(m) > 0)
    .map(|(m, what)| format!("{} {what}", count(m)))
    .collect();
    if !how.is_empty() {
        parts.push(format!("95% CIs: {}", how.join("; ")));
    }
    let floors = c.rows.iter().filter(|r| r.noise_floor.is_some()).count();
    parts.push(format!(
        "faster/slower when the CI excludes 1 and the difference exceeds {}%{}",
        format!("{:.1}", c.threshold * 100.0).trim_end_matches(".0"),
        if floors > 0 {
            format!(
                " or, for {floors} benchmarks, the noise floor from {} earlier runs of {} in the history (the 95% range of their run-to-run spread), when larger",
                c.floor_runs, c.a.host
            )
        } else {
            String::new()
        }
    ));
    let area_floors = c
        .summaries
        .iter()
        .filter(|s| s.noise_floor.is_some())
        .count();
    if area_floors > 0 {
        parts.push(format!(
            "an area's \"B is\" likewise beyond its own noise floor, for {area_floors} of {}: the 95% range of the area's level (its rows' mean log time) between those runs",
            c.summaries.len()
        ));
    }
    parts.push(
        "\"no change > X%\": the row's minimal detectable effect, the smallest change its interval and threshold could have called, so a change larger than X% would have been seen".to_string(),
    );
    parts.extend(floor_note(c));
    parts.push(format!("{NOISY_MARK} = noisy"));
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::RunDoc;
    use crate::harness::{Measurement, Round};

    fn doc(spread: f64) -> RunDoc {
        let mut m = Measurement::point("t.x", "ns/op", 100.0);
        m.rounds = [1.0, 1.0 + spread, 1.0 - spread]
            .iter()
            .map(|k| Round {
                median: 100.0 * k,
                n: 8,
                used: true,
                ..Default::default()
            })
            .collect();
        let mut d = RunDoc::started_now(
            crate::host::Host::default(),
            crate::harness::Profile::Default,
        );
        d.results = vec![m];
        d
    }

    #[test]
    fn a_blind_comparison_of_separate_runs_says_how_to_see_more() {
        let hint = |c: &Comparison| blind_hint(c, c.summaries.last().unwrap());
        let wide = crate::analysis::compare::compare(&doc(0.2), &doc(0.2), &[], 0.05);
        assert!(hint(&wide).contains("opcost ab"), "{}", hint(&wide));
        let tight = crate::analysis::compare::compare(&doc(0.001), &doc(0.001), &[], 0.05);
        assert_eq!(hint(&tight), "");
        // ab's pairs are already the remedy.
        let paired = crate::analysis::compare::compare_paired(&doc(0.2), &doc(0.2), 0.02);
        assert_eq!(hint(&paired), "");
    }

    #[test]
    fn a_setting_that_differs_is_named_beside_the_verdicts() {
        use crate::host::Settings;
        let nowhere = std::path::Path::new("/nonexistent");
        let mut a = doc(0.01);
        a.host.settings = Settings::read_at(nowhere, [("LANG", "C.UTF-8")]);
        let mut b = doc(0.01);
        b.host.settings = Settings::read_at(
            nowhere,
            [
                ("LANG", "C.UTF-8"),
                ("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2,-ERMS"),
            ],
        );
        let c = crate::analysis::compare::compare(&a, &b, &[], 0.05);
        let note = settings_note(&c).unwrap();
        assert!(
            note.contains("B ran with GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-ERMS (A without it)"),
            "{note}"
        );
        assert!(render(&c).contains(&note));
        assert!(method_note(&c).contains("B ran with GLIBC_TUNABLES"));
        assert!(super::super::markdown::render_compare(&c).contains("B ran with GLIBC_TUNABLES"));
        // The other way round, and a setting that is not a variable.
        b.host.settings.nice = Some(10);
        let back = crate::analysis::compare::compare(&b, &a, &[], 0.05);
        let note = settings_note(&back).unwrap();
        assert!(note.contains("A ran with GLIBC_TUNABLES="), "{note}");
        assert!(
            note.contains("scheduling: ?, nice 10 in A, ?, nice ? in B"),
            "{note}"
        );
        // A document older than the settings (none recorded) compares
        // with no word on them.
        let mut v = serde_json::to_value(doc(0.01)).unwrap();
        assert!(
            v["host"]
                .as_object_mut()
                .unwrap()
                .remove("settings")
                .is_some()
        );
        let old = RunDoc::from_json(&v.to_string()).unwrap();
        assert!(!old.host.settings.recorded());
        let c = crate::analysis::compare::compare(&old, &b, &[], 0.05);
        assert_eq!(c.rows.len(), 1);
        assert!(settings_note(&c).is_none());
    }
}
