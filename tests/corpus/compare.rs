//! compare on the corpus: the false calls between runs of one binary, and
//! what a row's stated minimal detectable effect (MDE) is worth.

use super::*;
use opcost::analysis::compare::{Change, DEFAULT_THRESHOLD, SEE_REFERENCE, compare};

/// The sets compared pair by pair (run i with run i + 1): back-to-back
/// runs of one binary and one command, so that every change `compare`
/// calls between them is a false one.
const AA_SETS: [&str; 6] = [
    "default-aa",
    "syscall-ipc-process-default",
    "syscall-ipc-process-codec-text-timer-quick",
    "memory-storage-net-cpu-crypto-quick",
    "latency-quick",
    "syscall-quick",
];

/// A copy of `doc` with every result `k` times slower, as
/// scripts/compare-power.sh makes it: times multiplied and rates divided
/// (median, quantiles, spread, interval, samples and each round's median),
/// per-operation times multiplied whatever the unit.
pub(super) fn slower(doc: &RunDoc, k: f64) -> RunDoc {
    let mut d = doc.clone();
    d.run.id.push_str("-slower");
    for m in &mut d.results {
        slower_row(m, k);
    }
    d
}

/// `m` made `k` times slower, as [`slower`] makes every result.
pub(super) fn slower_row(m: &mut opcost::harness::Measurement, k: f64) {
    {
        let f = if m.higher_is_better() { 1.0 / k } else { k };
        let s = &mut m.summary;
        for v in [
            &mut s.median,
            &mut s.min,
            &mut s.max,
            &mut s.mean,
            &mut s.stddev,
            &mut s.p5,
            &mut s.p95,
            &mut s.mad,
            &mut s.ci_low,
            &mut s.ci_high,
        ] {
            *v *= f;
        }
        m.samples.iter_mut().for_each(|x| *x *= f);
        m.rounds.iter_mut().for_each(|r| r.median *= f);
        if let Some(p) = &mut m.per_op {
            for v in [&mut p.p50, &mut p.p90, &mut p.p99, &mut p.max] {
                *v *= k;
            }
            for v in [&mut p.p99_low, &mut p.p99_high].into_iter().flatten() {
                *v *= k;
            }
        }
    }
}

/// What `compare` (one run a side, no history, the default threshold)
/// makes of a set's consecutive pairs as they are (A/A) and with B made
/// [`SEE_REFERENCE`] slower.
#[derive(Debug, Default)]
struct Calls {
    /// Pairs compared.
    pairs: usize,
    /// Rows of the A/A comparisons.
    rows: usize,
    /// Of those, rows called faster or slower.
    called: usize,
    /// The largest share of rows called in one pair.
    worst: f64,
    /// Rows of the comparisons with B slower whose MDE is at most
    /// [`SEE_REFERENCE`]: rows that say they can see it.
    can_see: usize,
    /// Of those, rows called slower.
    caught: usize,
    /// Rows called slower among all rows of those comparisons.
    slower_rows: usize,
    /// A/A pairs in which compare said the whole run moved, with the shift.
    whole: Vec<f64>,
    /// A/A pairs in which compare said both sides shared the machine: of
    /// the rows it called, those measured on several CPUs, and all.
    shared: Vec<(usize, usize)>,
}

/// [`Calls`] of a set's runs.
fn calls(runs: &[Run]) -> Calls {
    let mut c = Calls::default();
    for pair in runs.windows(2) {
        let (a, b) = (&pair[0].doc, &pair[1].doc);
        let aa = compare(a, b, &[], DEFAULT_THRESHOLD);
        let called = aa.rows.iter().filter(|r| r.verdict != Change::Same).count();
        c.pairs += 1;
        c.rows += aa.rows.len();
        c.called += called;
        c.worst = c.worst.max(called as f64 / aa.rows.len().max(1) as f64);
        c.whole.extend(aa.whole_shift);
        if aa.both_shared().is_some() {
            c.shared.push(aa.called_on_several_cpus());
        }
        let shifted = compare(a, &slower(b, 1.0 + SEE_REFERENCE), &[], DEFAULT_THRESHOLD);
        for r in &shifted.rows {
            let slower = r.verdict == Change::Slower;
            c.slower_rows += usize::from(slower);
            if r.mde <= SEE_REFERENCE + 1e-9 {
                c.can_see += 1;
                c.caught += usize::from(slower);
            }
        }
    }
    c
}

/// The most rows `compare` may call changed between two runs of one
/// binary, in percent.
const AA_CALLED: f64 = 5.0;

/// The least share of the rows that state an MDE of 5% or less that must
/// catch a 5% slowdown, in percent.
const CAUGHT: f64 = 80.0;

/// Where a machine's set misses [`AA_CALLED`] today: the share of rows it
/// calls (percent, one more row would exceed it), held as a ceiling so
/// that it does not get worse.
/// - The AMD guest's default pair made while other programs used 43% and
///   36% of the CPUs: 30 of 566 rows (5.3%; 32 before the conditions'
///   spread), 20 of them measured on several CPUs at once (cross-CPU IPC,
///   bandwidth on both threads), which got what the others left them;
///   compare says so (asserted below). The same guest's quiet pair calls
///   4.1%.
/// - The AMD guest of 2026-11-29, whose second default run was 1.18×
///   faster in every area alike (syscall 1.23×, ipc 1.20×, memory 1.15×,
///   process 1.20×) while both runs read the same stability canary: 123 of
///   566 rows (21.7%). One run a side cannot tell that state from a change
///   that reaches every area; compare names it ("the whole run moved",
///   asserted below), and several runs a side or a history take it in.
const AA_CEILINGS: [(&str, &str, f64); 2] = [
    ("amd-kvm-2026-11-28", "default-aa", 5.4),
    ("amd-kvm-2026-11-29-placement", "default-aa", 21.8),
];

/// Where a set's A/A pair is over [`AA_CALLED`] because the whole run
/// moved, compare must say so: the sets whose pairs say it.
const WHOLE_RUN_MOVED: [(&str, &str); 1] = [("amd-kvm-2026-11-29-placement", "default-aa")];

/// Where a set's A/A pair is over [`AA_CALLED`] because both sides shared
/// the machine with other programs, compare must say so: the sets.
const BOTH_SHARED: [(&str, &str); 1] = [("amd-kvm-2026-11-28", "default-aa")];

/// Below this many rows that state they can see 5%, a set's catch rate is
/// too coarse to read against [`CAUGHT`] (one row is 4 to 25 points):
/// there it fails only where a binomial test rejects a power of
/// [`CAUGHT`] at the 5% level.
const CAUGHT_MIN_ROWS: usize = 30;

/// P(X ≤ k) for X binomial of `n` trials at `p`.
fn binomial_cdf(k: usize, n: usize, p: f64) -> f64 {
    let mut term = (1.0 - p).powi(n as i32);
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            term *= (n - i + 1) as f64 / i as f64 * p / (1.0 - p);
        }
        sum += term;
    }
    sum
}

/// Where a machine's set misses [`CAUGHT`] today: the share it catches
/// (percent, one row fewer would fall below it), held as a floor. None
/// since the MDE is stated at 80% power (the AMD latency runs caught 79.8%
/// and the Xeon syscall runs 75.9% when it was the interval's half-width).
const CAUGHT_FLOORS: [(&str, &str, f64); 0] = [];

/// The bound a machine's set is held to: its own where the table has one.
fn bound(table: &[(&str, &str, f64)], machine: &str, set: &str, target: f64) -> f64 {
    table
        .iter()
        .find(|(m, s, _)| *m == machine && *s == set)
        .map_or(target, |t| t.2)
}

#[test]
fn compare_calls_few_changes_between_runs_of_one_binary_and_catches_what_it_can_see() {
    let corpus = corpus_sets(&AA_SETS);
    assert!(corpus.len() >= 2, "the corpus holds at least two machines");
    let mut failures = Vec::new();
    for (machine, sets) in &corpus {
        for (set, runs) in sets {
            let c = calls(runs);
            let (aa, caught) = (pct(c.called, c.rows), pct(c.caught, c.can_see));
            println!(
                "{machine}/{set}: A/A {} pairs, {} of {} rows called ({aa:.1}%, at most {:.1}% in one pair); B {:.0}% slower: {} of {} rows can see it ({:.0}%), {} of them caught ({caught:.1}%), {} of all rows called slower ({:.1}%)",
                c.pairs,
                c.called,
                c.rows,
                100.0 * c.worst,
                100.0 * SEE_REFERENCE,
                c.can_see,
                c.rows,
                pct(c.can_see, c.rows),
                c.caught,
                c.slower_rows,
                pct(c.slower_rows, c.rows),
            );
            assert!(
                c.pairs >= 1 && c.rows > 0,
                "{machine}/{set}: nothing compared"
            );
            let ceiling = bound(&AA_CEILINGS, machine, set, AA_CALLED);
            if aa > ceiling + 1e-9 {
                failures.push(format!(
                    "{machine}/{set}: A/A calls {aa:.1}% of rows (at most {ceiling:.1}%)"
                ));
            }
            let moved = WHOLE_RUN_MOVED.contains(&(machine.as_str(), set.as_str()));
            if !c.whole.is_empty() {
                println!(
                    "  the whole run moved in {} pair(s): {:?}",
                    c.whole.len(),
                    c.whole
                );
            }
            if moved && c.whole.is_empty() {
                failures.push(format!(
                    "{machine}/{set}: the whole run moved and compare did not say so"
                ));
            }
            for (several, called) in &c.shared {
                println!(
                    "  both sides shared the machine: {several} of the {called} rows called were measured on several CPUs"
                );
            }
            let shared = BOTH_SHARED.contains(&(machine.as_str(), set.as_str()));
            if shared && c.shared.is_empty() {
                failures.push(format!(
                    "{machine}/{set}: both sides shared the machine and compare did not say so"
                ));
            }
            let floor = bound(&CAUGHT_FLOORS, machine, set, CAUGHT);
            let rejected = c.can_see >= CAUGHT_MIN_ROWS
                || binomial_cdf(c.caught, c.can_see, floor / 100.0) < 0.05;
            if c.can_see > 0 && caught < floor - 1e-9 && rejected {
                failures.push(format!(
                    "{machine}/{set}: rows that can see 5% catch it in {caught:.1}% (at least {floor:.1}%)"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_binomial_cdf_is_the_textbook_one() {
    assert!((binomial_cdf(3, 4, 0.8) - (1.0 - 0.8f64.powi(4))).abs() < 1e-12);
    assert!((binomial_cdf(4, 4, 0.8) - 1.0).abs() < 1e-12);
    assert!((binomial_cdf(0, 3, 0.5) - 0.125).abs() < 1e-12);
    // 5 of 7 at 80% is no evidence against it; 10 of 28 is
    assert!(binomial_cdf(5, 7, 0.8) > 0.05);
    assert!(binomial_cdf(10, 28, 0.8) < 0.05);
}

#[test]
fn a_slower_copy_is_slower_in_every_figure() {
    let corpus = corpus_sets(&["latency-quick"]);
    let run = corpus.values().flat_map(|s| s.values()).flatten().next();
    let run = run.expect("a latency run in the corpus");
    let s = slower(&run.doc, 1.1);
    for (a, b) in run.doc.results.iter().zip(&s.results) {
        let k = if a.higher_is_better() { 1.0 / 1.1 } else { 1.1 };
        assert!((b.median / a.median - k).abs() < 1e-9, "{}", a.id);
        assert!((b.ci_high / a.ci_high - k).abs() < 1e-9, "{}", a.id);
        for (x, y) in a.rounds.iter().zip(&b.rounds) {
            assert!((y.median / x.median - k).abs() < 1e-9, "{}", a.id);
        }
    }
    let c = compare(&run.doc, &s, &[], DEFAULT_THRESHOLD);
    assert!(!c.rows.is_empty());
    for r in &c.rows {
        assert!(
            (r.time_ratio() - 1.1).abs() < 1e-6,
            "{}: {}",
            r.id,
            r.time_ratio()
        );
    }
}

/// The sets long enough to compare a pair with earlier runs of the host
/// as its history: [`FLOOR_MIN_RUNS`] runs before the pair.
const HISTORY_SETS: [&str; 3] = ["syscall-quick", "latency-quick", "whole-quick"];

/// Where a set's areas are called between runs of one binary even with
/// the host's history, held as a ceiling (percent of the area summaries,
/// `all` among them): the AMD guest of 2026-11-29, whose runs moved as a
/// whole by more than their history had shown (the syscall area's level
/// stepped between runs 9 and 10 and drifted after).
const AREA_AA_CEILINGS: [(&str, &str, f64); 1] =
    [("amd-kvm-2026-11-29-placement", "syscall-quick", 30.0)];

/// The most area summaries `compare` may call changed between two runs of
/// one binary with the host's history, in percent.
const AREA_AA_CALLED: f64 = 10.0;

#[test]
fn an_area_called_changed_between_runs_of_one_binary_moved_more_than_the_hosts_runs_do() {
    use opcost::analysis::compare::{FLOOR_MIN_RUNS, compare_sides};
    let corpus = corpus_sets(&HISTORY_SETS);
    let mut failures = Vec::new();
    for (machine, sets) in &corpus {
        for (set, runs) in sets {
            let docs: Vec<RunDoc> = runs.iter().map(|r| r.doc.clone()).collect();
            let (mut areas, mut aa_called, mut alone, mut floored) = (0, 0, 0, 0);
            let (mut caught, mut caught_alone) = (0, 0);
            let (mut rows, mut rows_called) = (0, 0);
            for j in FLOOR_MIN_RUNS..docs.len().saturating_sub(1) {
                let (a, b) = (&docs[j..=j], &docs[j + 1..=j + 1]);
                let history = &docs[j.saturating_sub(20)..j];
                let with = compare_sides(a, b, &[], DEFAULT_THRESHOLD, history);
                let without = compare_sides(a, b, &[], DEFAULT_THRESHOLD, &[]);
                let slow = [slower(&docs[j + 1], 1.0 + SEE_REFERENCE)];
                let seen = compare_sides(a, &slow, &[], DEFAULT_THRESHOLD, history);
                let seen_alone = compare_sides(a, &slow, &[], DEFAULT_THRESHOLD, &[]);
                let called = |c: &opcost::analysis::compare::Comparison| {
                    c.summaries
                        .iter()
                        .filter(|s| s.verdict != Change::Same)
                        .count()
                };
                let slower_areas = |c: &opcost::analysis::compare::Comparison| {
                    c.summaries
                        .iter()
                        .filter(|s| s.verdict == Change::Slower)
                        .count()
                };
                areas += with.summaries.len();
                rows += with.rows.len();
                rows_called += with
                    .rows
                    .iter()
                    .filter(|r| r.verdict != Change::Same)
                    .count();
                floored += with
                    .summaries
                    .iter()
                    .filter(|s| s.noise_floor.is_some())
                    .count();
                alone += called(&without);
                let n = called(&with);
                caught += slower_areas(&seen);
                caught_alone += slower_areas(&seen_alone);
                if n > called(&without) {
                    failures.push(format!(
                        "{machine}/{set}: runs {} and {}: the history's floors called {n} areas, {} without them",
                        j + 1,
                        j + 2,
                        called(&without)
                    ));
                }
                aa_called += n;
            }
            if areas == 0 {
                continue;
            }
            let aa = pct(aa_called, areas);
            println!(
                "{machine}/{set}: area summaries of A/A pairs with the history: {} of {areas} called ({aa:.1}%), {} without it ({:.1}%), {floored} with a floor; B {:.0}% slower: {caught} of {areas} called slower ({:.1}%), {caught_alone} without the history; rows called in the A/A pairs with the history: {rows_called} of {rows} ({:.1}%)",
                aa_called,
                alone,
                pct(alone, areas),
                100.0 * SEE_REFERENCE,
                pct(caught, areas),
                pct(rows_called, rows),
            );
            let ceiling = bound(&AREA_AA_CEILINGS, machine, set, AREA_AA_CALLED);
            if aa > ceiling + 1e-9 {
                failures.push(format!(
                    "{machine}/{set}: A/A calls {aa:.1}% of the areas with the history (at most {ceiling:.1}%)"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Where two runs a side with the history call more than [`AA_CALLED`]
/// of the rows, held as a ceiling (percent): the AMD guest of 2026-11-29,
/// whose syscall runs stepped and drifted (44 of 330 rows). The floor
/// stays that of one run a side (`√2 · sd`): shrunk by `√(1/nA + 1/nB)`
/// as for independent runs, it called 62 there (and 0.6–2.1% elsewhere,
/// 0.0–1.8% with it kept).
const SIDES_AA_CEILINGS: [(&str, &str, f64); 1] =
    [("amd-kvm-2026-11-29-placement", "syscall-quick", 13.4)];

#[test]
fn several_runs_a_side_with_the_history_call_few_changes() {
    use opcost::analysis::compare::{Comparison, FLOOR_MIN_RUNS, compare_sides};
    let corpus = corpus_sets(&HISTORY_SETS);
    let mut failures = Vec::new();
    for (machine, sets) in &corpus {
        for (set, runs) in sets {
            let docs: Vec<RunDoc> = runs.iter().map(|r| r.doc.clone()).collect();
            // two runs a side after the history's first FLOOR_MIN_RUNS
            let (mut rows, mut called, mut can_see, mut caught) = (0, 0, 0, 0);
            let (mut areas, mut areas_called) = (0, 0);
            let mut j = FLOOR_MIN_RUNS;
            while j + 4 <= docs.len() {
                let (a, b) = (&docs[j..j + 2], &docs[j + 2..j + 4]);
                let history = &docs[j.saturating_sub(20)..j];
                let aa = compare_sides(a, b, &[], DEFAULT_THRESHOLD, history);
                let slow: Vec<RunDoc> = b.iter().map(|d| slower(d, 1.0 + SEE_REFERENCE)).collect();
                let seen = compare_sides(a, &slow, &[], DEFAULT_THRESHOLD, history);
                let changed =
                    |c: &Comparison| c.rows.iter().filter(|r| r.verdict != Change::Same).count();
                rows += aa.rows.len();
                called += changed(&aa);
                areas += aa.summaries.len();
                areas_called += aa
                    .summaries
                    .iter()
                    .filter(|s| s.verdict != Change::Same)
                    .count();
                for r in seen.rows.iter().filter(|r| r.mde <= SEE_REFERENCE + 1e-9) {
                    can_see += 1;
                    caught += usize::from(r.verdict == Change::Slower);
                }
                j += 4;
            }
            if rows == 0 {
                continue;
            }
            let aa = pct(called, rows);
            println!(
                "{machine}/{set}: two runs a side with the history: A/A {called} of {rows} rows called ({aa:.1}%), {areas_called} of {areas} areas; B {:.0}% slower: {can_see} rows can see it ({:.0}%), {caught} caught ({:.1}%)",
                100.0 * SEE_REFERENCE,
                pct(can_see, rows),
                pct(caught, can_see),
            );
            let ceiling = bound(&SIDES_AA_CEILINGS, machine, set, AA_CALLED);
            if aa > ceiling + 1e-9 {
                failures.push(format!(
                    "{machine}/{set}: two runs a side call {aa:.1}% of rows (at most {ceiling:.1}%)"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
