//! The yardsticks replayed on the corpus of real runs committed under
//! tests/fixtures/corpus/<machine>/ (gzipped `opcost run … --json`
//! documents, a README per machine saying which command made each): a rule
//! change that helps one machine and hurts another fails here.
//!
//! A set is the runs of one command on one machine, the files
//! `<set>-<n>.json.gz` numbered from 1. Every document is first replayed
//! through this tree's phase rules (`opcost::harness::replay`: which areas
//! follow the stability canary, what is corrected, the intervals and the
//! stability grade), so the tests judge what this tree makes of the runs.
//! Here the rounds (the verdict, an L1 hit's interval, the intervals'
//! coverage); in the modules the findings' words, compare, trend and the
//! emulated machines.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use opcost::document::RunDoc;

/// One run of the corpus.
struct Run {
    /// The file's name without `.json.gz`.
    file: String,
    /// The document.
    doc: RunDoc,
}

/// The corpus's directory.
fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus")
}

/// Reads one gzipped run document, replayed through this tree's phase
/// rules.
fn read_run(path: &Path) -> RunDoc {
    let mut doc = read_recorded(path);
    let planned = doc.run.profile.rounds();
    opcost::harness::replay::replay(&mut doc.results, planned, doc.stability.as_mut());
    doc
}

/// Reads one gzipped run document as recorded.
fn read_recorded(path: &Path) -> RunDoc {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    RunDoc::from_json(&text).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()))
}

/// True for a machine directory of emulated runs (`qemu-…`: qemu's user
/// emulation of another architecture; `emulated-…`: a qemu-system guest
/// under software emulation with a server's shape): their timings are the
/// emulator's, their structure and topology are real.
fn is_emulated(machine: &str) -> bool {
    machine.starts_with("qemu-") || machine.starts_with("emulated-")
}

/// The machine directories of the corpus, sorted: those of emulated runs
/// when `emulated`, else those of real machines.
fn machine_dirs(emulated: bool) -> Vec<PathBuf> {
    let mut machines: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the corpus directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_dir())
        .filter(|p| is_emulated(&p.file_name().unwrap().to_string_lossy()) == emulated)
        .collect();
    machines.sort();
    machines
}

/// The real machines of the corpus, each with its sets of runs (in run
/// order), keyed by machine and then by set name. Only the sets whose names
/// start with one of `prefixes` are read (all with an empty list).
fn corpus_sets(prefixes: &[&str]) -> BTreeMap<String, BTreeMap<String, Vec<Run>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<(u32, Run)>>> = BTreeMap::new();
    for dir in machine_dirs(false) {
        let machine = dir.file_name().unwrap().to_string_lossy().into_owned();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(file) = name.strip_suffix(".json.gz") else {
                continue;
            };
            let Some((set, n)) = file.rsplit_once('-') else {
                continue;
            };
            let Ok(n) = n.parse::<u32>() else {
                continue;
            };
            if !prefixes.is_empty() && !prefixes.iter().any(|p| set.starts_with(p)) {
                continue;
            }
            let run = Run {
                file: file.to_string(),
                doc: read_run(&path),
            };
            out.entry(machine.clone())
                .or_default()
                .entry(set.to_string())
                .or_default()
                .push((n, run));
        }
    }
    out.into_iter()
        .map(|(machine, sets)| {
            let sets = sets
                .into_iter()
                .map(|(set, mut runs)| {
                    runs.sort_by_key(|r| r.0);
                    (set, runs.into_iter().map(|r| r.1).collect())
                })
                .collect();
            (machine, sets)
        })
        .collect()
}

mod compare;
mod emulated;
mod estimate;
mod trend;
mod words;

/// A share in percent, 100% of nothing.
fn pct(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        100.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

// The rounds: the verdict, an L1 hit's interval and the intervals'
// coverage across runs, on every machine.

/// Every first run of each machine: its quick latency runs, the two halves
/// of a whole run and its syscall runs (not the pinned ones).
const FIRST_RUNS: [&str; 4] = [
    "latency-quick",
    "syscall-ipc-process-codec-text-timer-quick",
    "memory-storage-net-cpu-crypto-quick",
    "syscall-quick",
];

#[test]
fn a_quiet_machine_is_rarely_called_unstable() {
    use opcost::harness::canary::{BUSY_SHARE, DRIFT, Grade, STEAL_SHARE};
    let corpus = corpus_sets(&FIRST_RUNS);
    assert!(corpus.len() >= 2, "the corpus holds at least two machines");
    for (machine, sets) in &corpus {
        let runs: Vec<&Run> = sets.values().flatten().collect();
        assert!(runs.len() >= 11, "{machine}: {} runs", runs.len());
        let (mut quiet, mut unstable) = (0, Vec::new());
        for r in runs {
            let s = r.doc.stability.as_ref().expect("a stability record");
            let is_quiet = s.steal_share.unwrap_or(0.0) < 0.01
                && s.others_share.unwrap_or(0.0) < BUSY_SHARE
                && s.drift.is_none_or(|d| d.abs() <= DRIFT);
            if s.steal_share.unwrap_or(0.0) <= STEAL_SHARE {
                assert!(!s.line().contains("stole"), "{}: {}", r.file, s.line());
            }
            if is_quiet {
                quiet += 1;
                if s.grade() == Grade::Unstable {
                    unstable.push(format!("{}: {}", r.file, s.line()));
                }
            }
        }
        println!(
            "{machine}: {} of {quiet} quiet runs graded unstable",
            unstable.len()
        );
        // on a quiet machine, at most one run in eleven
        assert!(
            unstable.len() * 11 <= quiet,
            "{machine}: {} of {quiet} quiet runs graded unstable:\n{}",
            unstable.len(),
            unstable.join("\n")
        );
    }
}

/// Most of a machine's first runs that may name a state tied to process
/// placement: rounds read a few per cent apart on two CPUs in any run, and
/// a pass that ran slow while its worker sat on one CPU looks like one.
/// The rule before workers were taken out named one in 9 and 11 of the 35
/// first runs of the two AMD days that record where rounds ran (26%, 31%;
/// 3-12% apart, the slower CPU changing from run to run).
const PLACEMENT_NAMED_MAX: (usize, usize) = (1, 5);

#[test]
fn a_state_tied_to_placement_is_named_only_when_clearly_past_the_gap() {
    use opcost::harness::response::PLACEMENT_GAP;
    let corpus = corpus_sets(&FIRST_RUNS);
    for (machine, sets) in &corpus {
        let runs: Vec<&Run> = sets.values().flatten().collect();
        // Runs whose rounds say where they ran (older binaries did not).
        let placed = runs
            .iter()
            .filter(|r| {
                r.doc
                    .results
                    .iter()
                    .any(|m| m.rounds.iter().any(|x| x.placement.is_some()))
            })
            .count();
        let named: Vec<String> = runs
            .iter()
            .filter_map(|r| {
                let p = r.doc.stability.as_ref()?.phases.placement.as_ref()?;
                assert!(p.low > 1.0 + PLACEMENT_GAP, "{}: {p:?}", r.file);
                Some(format!("{} ({} {:.2}x)", r.file, p.area, p.ratio))
            })
            .collect();
        println!(
            "{machine}: a state tied to placement named in {} of {placed} first runs that record placement: {}",
            named.len(),
            named.join(", ")
        );
        let (most, of) = PLACEMENT_NAMED_MAX;
        assert!(
            named.len() * of <= placed * most,
            "{machine}: named in {} of {placed}",
            named.len()
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

/// Machines whose L1 rounds spread too far for three of them to hold
/// ±5%: the runs of five whose median L1 row is within ±5%, and the most L1
/// rows of 65 wider than that without two levels, held at today's figures.
/// The AMD guest of 2026-11-29 read its L1 hits anywhere from 1.08 to
/// 1.27 ns from round to round, one level and not tied to a CPU: a pooled
/// round spread of 4.7%, which three rounds turn into ±11.8% (t with two
/// degrees of freedom) however they are summarised; the quiet AMD set's
/// 1.9% gives ±4.7%.
const L1_BOUNDS: [(&str, usize, usize); 1] = [("amd-kvm-2026-11-29-placement", 1, 36)];

#[test]
fn an_l1_hit_holds_a_narrow_interval_in_the_latency_runs() {
    for (machine, sets) in &corpus_sets(&["latency-quick"]) {
        let runs = &sets["latency-quick"];
        assert_eq!(runs.len(), 5, "{machine}");
        let mut widths = Vec::new();
        let (mut unsaid, mut total) = (Vec::new(), 0);
        for r in runs {
            let rows = l1_hits(&r.doc);
            assert!(!rows.is_empty(), "{}: no L1 rows", r.file);
            let mut rel: Vec<f64> = rows.iter().map(|m| m.ci_rel()).collect();
            rel.sort_by(f64::total_cmp);
            widths.push(rel[rel.len() / 2]);
            for m in rows {
                total += 1;
                let levels = m.warnings.iter().any(|w| w.starts_with("two levels:"));
                if m.ci_rel() > 0.05 && !levels {
                    unsaid.push(format!("{} {} ±{:.1}%", r.file, m.id, m.ci_rel() * 100.0));
                }
            }
        }
        let shown: Vec<String> = widths
            .iter()
            .map(|w| format!("±{:.1}%", w * 100.0))
            .collect();
        println!(
            "{machine}: the median L1 row's interval per run {}; {} of {total} L1 rows wider than ±5% without two levels",
            shown.join(" "),
            unsaid.len()
        );
        for u in &unsaid {
            println!("  {u}");
        }
        // within ±5% in at least four runs of five (the Xeon guest's fourth
        // run measured its L1 rounds 1.20-1.39 ns as they were: no phase
        // correction, a noisier run); a row wider than ±5% says which two
        // levels its rounds read, or is one level with a stray round: today
        // at most 28% of them. A machine whose rounds spread too far for
        // that is held at its own figures (L1_BOUNDS).
        let (runs_within, unsaid_most) = L1_BOUNDS
            .iter()
            .find(|(m, ..)| m == machine)
            .map_or((4, total * 3 / 10), |&(_, r, u)| (r, u));
        assert!(
            widths.iter().filter(|w| **w <= 0.05).count() >= runs_within,
            "{machine}: {shown:?}"
        );
        assert!(
            unsaid.len() <= unsaid_most,
            "{machine}: {} of {total} L1 rows wide without two levels",
            unsaid.len()
        );
    }
}

/// The rows of `a` whose interval holds `b`'s median of the same row, and
/// the rows of `a` with an interval that `b` has.
fn held(a: &RunDoc, b: &RunDoc) -> (usize, usize) {
    let (mut inside, mut all) = (0, 0);
    for m in &a.results {
        let Some(o) = b.results.iter().find(|o| o.id == m.id) else {
            continue;
        };
        if m.ci_low > 0.0 && m.ci_high.is_finite() {
            all += 1;
            inside += usize::from(o.median >= m.ci_low && o.median <= m.ci_high);
        }
    }
    (inside, all)
}

/// Over every ordered pair of runs whose first is run `from` or later (from
/// 0: every pair): the (row, other run) pairs whose other run's median lies
/// inside this run's interval, and all such pairs.
fn coverage_from(runs: &[Run], from: usize) -> (usize, usize) {
    let (mut inside, mut all) = (0, 0);
    for (i, a) in runs.iter().enumerate().skip(from) {
        for (j, b) in runs.iter().enumerate() {
            if i != j {
                let (k_in, k_all) = held(&a.doc, &b.doc);
                inside += k_in;
                all += k_all;
            }
        }
    }
    (inside, all)
}

/// The runs as a host that keeps its history makes them: each run's
/// intervals widened by the run-to-run spread its earlier runs in the set
/// (up to 8, as `opcost run` reads) and itself show, as the run does
/// (`Measurement::add_between_runs`); with fewer than two earlier runs
/// there is no spread to read and a run stands as it was.
fn with_history(runs: &[Run]) -> Vec<Run> {
    (0..runs.len())
        .map(|k| {
            let earlier = &runs[k.saturating_sub(8)..k];
            let history =
                opcost::harness::row_histories(earlier.iter().flat_map(|r| &r.doc.results));
            let mut doc = runs[k].doc.clone();
            for m in &mut doc.results {
                if let Some(h) = history.get(&m.id) {
                    m.add_between_runs(h);
                }
            }
            Run {
                file: runs[k].file.clone(),
                doc,
            }
        })
        .collect()
}

/// The share of results marked noisy in the runs.
fn noisy_share(runs: &[Run]) -> f64 {
    let rows = runs.iter().flat_map(|r| &r.doc.results);
    let noisy = rows.clone().filter(|m| m.noisy).count();
    pct(noisy, rows.count())
}

#[test]
fn intervals_hold_another_runs_median_on_every_machine() {
    let sets = corpus_sets(&[
        "syscall-quick",
        "latency-quick",
        "syscall-ipc-process-codec",
        "memory-storage",
    ]);
    for (machine, sets) in &sets {
        for (set, runs) in sets {
            assert!(runs.len() >= 3, "{machine}/{set}");
            let (inside, all) = coverage_from(runs, 0);
            let kept = with_history(runs);
            // the runs that had a history to read (from the third on)
            let (k_inside, k_all) = coverage_from(&kept, 0);
            let (h_inside, h_all) = coverage_from(&kept, 2);
            println!(
                "{machine}/{set}: another run's median inside the interval: {inside} of {all} ({:.1}%) from each run's rounds; \
                 with the history {k_inside} of {k_all} ({:.1}%), {:.1}% in the runs that had one; noisy {:.1}% → {:.1}%",
                pct(inside, all),
                pct(k_inside, k_all),
                pct(h_inside, h_all),
                noisy_share(runs),
                noisy_share(&kept),
            );
            // From each run's rounds alone today's floor on every machine
            // (the AMD guest's 24 syscall runs read 85%, the Xeon guest's 5
            // runs 76%: its rows shift between runs by more than their
            // rounds spread within one, docs/statistics.md); a run that has
            // read its history holds another run's median 85% of the time.
            assert!(
                pct(inside, all) >= 75.0,
                "{machine}/{set}: {inside} of {all}"
            );
            assert!(
                pct(h_inside, h_all) >= 85.0,
                "{machine}/{set}: with history {h_inside} of {h_all}"
            );
        }
    }
}
