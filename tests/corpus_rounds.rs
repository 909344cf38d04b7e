//! The corpus of real runs (tests/fixtures/corpus/<machine>/, made by
//! scripts/corpus-sets.sh) replayed through this tree's phase rules
//! (opcost::harness::replay): the verdict, the width of an L1 hit's interval
//! and the intervals' coverage across runs must hold on every machine kind
//! the corpus holds, not only the one a rule was tuned on.

use std::io::Read;
use std::path::{Path, PathBuf};

use opcost::document::RunDoc;
use opcost::harness::canary::{BUSY_SHARE, DRIFT, Grade, STEAL_SHARE};
use opcost::harness::replay::replay;

/// The corpus's machines: each a folder of gzipped run documents.
fn machines() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus");
    let mut m: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the corpus folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    m.sort();
    assert!(
        m.len() >= 2,
        "the corpus holds runs of at least two machines: {m:?}"
    );
    m
}

/// One kept document, replayed with this tree's rules.
fn replayed(path: &Path) -> RunDoc {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut doc = RunDoc::from_json(&text).unwrap();
    let planned = doc.run.profile.rounds();
    replay(&mut doc.results, planned, doc.stability.as_mut());
    doc
}

/// The documents of `machine` whose file name starts with `prefix`, in
/// name order (1, 2, … 9, 10, … by number).
fn set(machine: &Path, prefix: &str) -> Vec<(String, RunDoc)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(machine)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(".json.gz")
        })
        .collect();
    let number = |p: &PathBuf| -> u32 {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let stem = name.trim_end_matches(".json.gz");
        stem.rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    files.sort_by_key(number);
    files
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                replayed(p),
            )
        })
        .collect()
}

fn name(machine: &Path) -> String {
    machine.file_name().unwrap().to_string_lossy().to_string()
}

/// Every first run of a machine: the quick sets of latency, the two halves
/// of a whole run, and syscall.
fn first_runs(machine: &Path) -> Vec<(String, RunDoc)> {
    [
        "latency-quick-",
        "syscall-ipc-",
        "memory-storage-",
        "syscall-quick-",
    ]
    .iter()
    .flat_map(|p| set(machine, p))
    .collect()
}

#[test]
fn a_quiet_machine_is_rarely_called_unstable() {
    for machine in machines() {
        let runs = first_runs(&machine);
        assert!(runs.len() >= 11, "{}: {} runs", name(&machine), runs.len());
        let mut quiet = 0;
        let mut unstable = Vec::new();
        for (file, doc) in &runs {
            let s = doc.stability.as_ref().expect("a stability record");
            let is_quiet = s.steal_share.unwrap_or(0.0) < 0.01
                && s.others_share.unwrap_or(0.0) < BUSY_SHARE
                && s.drift.is_none_or(|d| d.abs() <= DRIFT);
            if !is_quiet {
                continue;
            }
            quiet += 1;
            if s.grade() == Grade::Unstable {
                unstable.push(format!("{file}: {}", s.line()));
            }
            // what a verdict names is what the run saw
            if s.steal_share.unwrap_or(0.0) <= STEAL_SHARE {
                assert!(!s.line().contains("stole"), "{file}: {}", s.line());
            }
        }
        // on a quiet machine, at most one run in eleven
        assert!(
            unstable.len() * 11 <= quiet,
            "{}: {} of {quiet} quiet runs graded unstable:\n{}",
            name(&machine),
            unstable.len(),
            unstable.join("\n")
        );
    }
}

/// The L1 hits of a latency run: random-order latency at 8 KiB or less.
fn l1_hits(doc: &RunDoc) -> Vec<&opcost::harness::Measurement> {
    doc.results
        .iter()
        .filter(|m| m.id.starts_with("memory.latency.random/"))
        .filter(|m| {
            m.params
                .get("size")
                .and_then(|v| v.as_f64())
                .is_some_and(|s| s <= 8192.0)
        })
        .collect()
}

#[test]
fn an_l1_hit_holds_a_narrow_interval_in_the_latency_runs() {
    for machine in machines() {
        let runs = set(&machine, "latency-quick-");
        assert_eq!(runs.len(), 5, "{}", name(&machine));
        let mut widths = Vec::new();
        for (file, doc) in &runs {
            let rows = l1_hits(doc);
            assert!(!rows.is_empty(), "{file}: no L1 rows");
            // the typical L1 row's interval
            let mut rel: Vec<f64> = rows.iter().map(|m| m.ci_rel()).collect();
            rel.sort_by(f64::total_cmp);
            widths.push(rel[rel.len() / 2]);
        }
        eprintln!(
            "{}: the median L1 row's interval per run: {}",
            name(&machine),
            widths
                .iter()
                .map(|w| format!("±{:.1}%", w * 100.0))
                .collect::<Vec<_>>()
                .join(" ")
        );
        // within ±5% in at least four runs of five (the Xeon guest's fourth
        // run measured its L1 rounds 1.20-1.39 ns as they were: no phase
        // correction, only a noisier run)
        let narrow = widths.iter().filter(|w| **w <= 0.05).count();
        assert!(narrow >= 4, "{}: {widths:?}", name(&machine));
        // and every L1 row of every run either holds ±5% or says which two
        // levels its rounds read, with both figures
        let mut unsaid = Vec::new();
        let mut total = 0;
        for (file, doc) in &runs {
            for m in l1_hits(doc) {
                total += 1;
                let levels = m.warnings.iter().any(|w| w.starts_with("two levels:"));
                if m.ci_rel() > 0.05 && !levels {
                    unsaid.push(format!(
                        "{file} {} ±{:.1}% {:?}",
                        m.id,
                        m.ci_rel() * 100.0,
                        m.used_round_medians()
                    ));
                }
            }
        }
        eprintln!(
            "{}: {} L1 rows wider than ±5% without two levels",
            name(&machine),
            unsaid.len()
        );
        for u in &unsaid {
            eprintln!("  {u}");
        }
        // today at most 28% (one round of three slowed 4-12% by
        // interference: one level with a stray round, not two levels)
        assert!(
            unsaid.len() * 10 <= total * 3,
            "{}: {} of {total} L1 rows wide without two levels",
            name(&machine),
            unsaid.len()
        );
    }
}

/// The share of (row, other run) pairs whose other run's median lies inside
/// this run's interval, over every ordered pair of runs in `runs`.
fn coverage(runs: &[(String, RunDoc)]) -> (usize, usize) {
    let (mut inside, mut all) = (0, 0);
    for (i, (_, a)) in runs.iter().enumerate() {
        for (j, (_, b)) in runs.iter().enumerate() {
            if i == j {
                continue;
            }
            for m in &a.results {
                let Some(o) = b.results.iter().find(|o| o.id == m.id) else {
                    continue;
                };
                if !(m.ci_low > 0.0 && m.ci_high.is_finite()) {
                    continue;
                }
                all += 1;
                inside += usize::from(o.median >= m.ci_low && o.median <= m.ci_high);
            }
        }
    }
    (inside, all)
}

#[test]
fn intervals_hold_another_runs_median_on_every_machine() {
    for machine in machines() {
        let runs = set(&machine, "syscall-quick-");
        assert!(runs.len() >= 5, "{}", name(&machine));
        let (inside, all) = coverage(&runs);
        let share = inside as f64 / all as f64;
        eprintln!(
            "{}: {inside} of {all} ({:.1}%) of another run's syscall medians inside the interval",
            name(&machine),
            share * 100.0
        );
        // Today's floor on every machine (the AMD guest's set reads 85%, the
        // Xeon guest's 77%: its rows shift between runs by more than their
        // rounds spread within one; see docs/statistics.md).
        assert!(
            share >= 0.75,
            "{}: coverage {:.1}%",
            name(&machine),
            share * 100.0
        );
    }
}
