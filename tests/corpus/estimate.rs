//! The run-time estimate against the corpus's recorded runs: each document
//! is planned again with this tree's benchmarks (its ids, built for the
//! machine it recorded, at its profile) and the time a first run announces
//! (no history) is held against the time the run took.

use std::collections::BTreeMap;

use opcost::document::RunDoc;
use opcost::harness::RunOptions;

use super::corpus_sets;

/// Runs shorter than this are left out: their announce is a second or two
/// ("about 1 s"), and a tenth of a second of start-up is a large share.
const SHORTEST_S: f64 = 1.0;

/// What a recorded run's plan says and what it took.
struct Replanned {
    /// The first-run estimate, seconds.
    estimate: f64,
    /// The seconds the run took.
    took: f64,
    /// Per area (the id's first part): (estimated, taken) seconds.
    areas: BTreeMap<String, (f64, f64)>,
}

/// Plans a recorded run again; `None` when this tree no longer has one of
/// its benchmarks.
fn replan(doc: &RunDoc) -> Option<Replanned> {
    let mut all = opcost::suites::catalog(&doc.host, &opcost::suites::UserData::default());
    let opts = RunOptions::new(doc.run.profile);
    let ids = doc
        .results
        .iter()
        .map(|m| m.id.as_str())
        .chain(doc.skipped.iter().map(|s| s.id.as_str()));
    let mut chosen = Vec::new();
    for id in ids {
        let k = all.iter().position(|b| b.id() == id)?;
        chosen.push(all.swap_remove(k));
    }
    let planned = opcost::plan::expected_each(&chosen, &opts);
    let mut areas: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for &(id, e) in &planned {
        let area = id.split('.').next().unwrap_or(id).to_string();
        let a = areas.entry(area).or_default();
        a.0 += e.as_secs_f64();
        a.1 += doc.run.wall_s.get(id).copied().unwrap_or(0.0);
    }
    // A run made before the two-stage rule took the planned rounds.
    let decided = doc.results.iter().any(|m| m.rounds_decision.is_some());
    let rounds = opts.rounds();
    let expected = |id: &str| match decided {
        true => opts.expected_rounds_mean(id),
        false => rounds as f64,
    };
    let total = opcost::plan::estimate(&planned, &[], (rounds, &expected)).total;
    Some(Replanned {
        estimate: total.as_secs_f64(),
        took: doc.run.duration_s,
        areas,
    })
}

/// The middle value of `v` (the upper one of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn a_first_runs_estimate_holds_the_recorded_runs() {
    let mut all = Vec::new();
    for (machine, sets) in &corpus_sets(&[]) {
        for (set, runs) in sets {
            let mut ratios = Vec::new();
            for r in runs {
                let p = replan(&r.doc)
                    .unwrap_or_else(|| panic!("{machine}/{}: a benchmark this tree lacks", r.file));
                if p.took < SHORTEST_S {
                    continue;
                }
                let ratio = p.took / p.estimate;
                println!(
                    "{machine}/{}: announced {:.1} s, took {:.1} s ({ratio:.2}x)",
                    r.file, p.estimate, p.took
                );
                if ratios.is_empty() {
                    for (area, (e, t)) in &p.areas {
                        println!("    {area}: {e:.1} s announced, {t:.1} s taken");
                    }
                }
                // One run of a set may be slowed by the machine (a
                // neighbour, a slow phase): the AMD guest's 24 syscall runs
                // took 2.9-3.9 s. Within -30% .. +50% every run.
                assert!(
                    (0.7..=1.5).contains(&ratio),
                    "{machine}/{}: took {ratio:.2}x the estimate",
                    r.file
                );
                ratios.push(ratio);
            }
            if ratios.is_empty() {
                continue;
            }
            // The target: a first run announced within 20% of what it takes
            // (the set's median run). Held at today's figure below that:
            // the quick latency runs take 0.79-0.84x their announce (the
            // latency set-up per byte is fitted to default rounds; quick's
            // traced set-up is half of it).
            let m = median(ratios.clone());
            println!("{machine}/{set}: median {m:.2}x over {} runs", ratios.len());
            assert!((0.75..=1.2).contains(&m), "{machine}/{set}: median {m:.2}x");
            all.extend(ratios);
        }
    }
    assert!(all.len() >= 40, "{} runs", all.len());
    let m = median(all.clone());
    println!("every run: median {m:.2}x over {}", all.len());
    assert!((0.85..=1.15).contains(&m), "median {m:.2}x");
}
