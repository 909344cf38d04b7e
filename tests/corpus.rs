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

/// The machines of the corpus, each with its sets of runs (in run order),
/// keyed by machine and then by set name. Only the sets whose names start
/// with one of `prefixes` are read (all with an empty list).
fn corpus_sets(prefixes: &[&str]) -> BTreeMap<String, BTreeMap<String, Vec<Run>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<(u32, Run)>>> = BTreeMap::new();
    let mut machines: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the corpus directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    machines.sort();
    for dir in machines {
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

// The words of findings, ported from scripts/findings_words.py (which
// scripts/findings-stability.sh uses): a finding's area and text with every
// number blanked, and a number's scaled unit with it.

/// A character of the class `[A-Za-z_\d]`.
fn name_char(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c.is_ascii_digit()
}

/// The units a number may carry, tried in this order after one optional
/// space (the alternation of findings_words.py's `UNIT`).
fn unit_len(chars: &[char]) -> Option<usize> {
    let starts = |s: &str| {
        let s: Vec<char> = s.chars().collect();
        chars.starts_with(&s).then_some(s.len())
    };
    let prefixed = |prefixes: &str, rest: &str| {
        let with = chars
            .first()
            .filter(|c| prefixes.contains(**c))
            .and_then(|_| {
                let s: Vec<char> = rest.chars().collect();
                chars[1..].starts_with(&s).then_some(s.len() + 1)
            });
        with.or_else(|| starts(rest))
    };
    prefixed("kMGT", "B/s")
        .or_else(|| prefixed("kMG", "bit/s"))
        .or_else(|| prefixed("kMGT", "op/s"))
        .or_else(|| prefixed("nµm", "s"))
        .or_else(|| {
            chars
                .first()
                .filter(|c| "KMGT".contains(**c))
                .and_then(|_| starts_at(chars, 1, "iB"))
        })
        .or_else(|| prefixed("kMG", "Hz"))
        .or_else(|| starts("B"))
        .or_else(|| starts("×"))
        .or_else(|| starts("%"))
}

/// `Some(at + s's length)` when `chars[at..]` starts with `s`.
fn starts_at(chars: &[char], at: usize, s: &str) -> Option<usize> {
    let s: Vec<char> = s.chars().collect();
    chars
        .get(at..)
        .is_some_and(|c| c.starts_with(&s))
        .then_some(at + s.len())
}

/// The length of a number (`[-+]?\d+(?:[.,]\d+)*`) with its unit starting
/// at `i`, when one may start there (not after a name's letter or digit,
/// nor after a name and a hyphen).
fn number_at(chars: &[char], i: usize) -> Option<usize> {
    let prev = |k: usize| i.checked_sub(k).map(|j| chars[j]);
    if prev(1).is_some_and(name_char) || (prev(1) == Some('-') && prev(2).is_some_and(name_char)) {
        return None;
    }
    let mut j = i;
    if matches!(chars[j], '-' | '+') {
        j += 1;
    }
    let digits = |j: usize| chars[j..].iter().take_while(|c| c.is_ascii_digit()).count();
    let first = digits(j);
    if first == 0 {
        return None;
    }
    j += first;
    while j + 1 < chars.len() && matches!(chars[j], '.' | ',') && digits(j + 1) > 0 {
        j += 1 + digits(j + 1);
    }
    let spaced = chars
        .get(j)
        .filter(|c| c.is_whitespace())
        .and_then(|_| unit_len(&chars[j + 1..]).map(|n| n + 1));
    let unit = spaced.or_else(|| unit_len(&chars[j..])).unwrap_or(0);
    Some(j + unit - i)
}

/// The note a finding carries when the host's history settled its words.
const SETTLED: &str = " (words over the last # runs)";

/// A finding's words: its area and text, every number (and its unit)
/// blanked to `#`, without the note that the history settled them.
fn words(area: &str, text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut w = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        match number_at(&chars, i) {
            Some(n) => {
                w.push('#');
                i += n;
            }
            None => {
                w.push(chars[i]);
                i += 1;
            }
        }
    }
    if let Some(s) = w.strip_suffix(SETTLED) {
        w = s.to_string();
    }
    format!("{area}: {w}")
}

/// A sentence's tokens: names and words, blanks, punctuation
/// (`[A-Za-z_][\w+./-]*|#|[^\sA-Za-z_#]`).
fn tokens(w: &str) -> Vec<String> {
    let chars: Vec<char> = w.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() || c == '_' {
            let n = chars[i + 1..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '+' | '.' | '/' | '-'))
                .count();
            out.push(chars[i..=i + n].iter().collect());
            i += n + 1;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// The word that turns a claim into its opposite, if `w` has one.
fn opposite(w: &str) -> Option<&'static str> {
    Some(match w {
        "faster" => "slower",
        "slower" => "faster",
        "grows" => "falls",
        "falls" => "grows",
        "cheaper" => "dearer",
        "dearer" => "cheaper",
        "earlier" => "later",
        "later" => "earlier",
        _ => return None,
    })
}

/// True when sentence `w2` says the opposite of `w1`: the same sentence
/// with two names swapped, or with an odd number of words turned into
/// their opposites (both at once is the same claim said the other way).
fn contradicts(w1: &str, w2: &str) -> bool {
    let (t1, t2) = (tokens(w1), tokens(w2));
    if t1.len() != t2.len() || t1.first() != t2.first() {
        return false;
    }
    let diff: Vec<usize> = (0..t1.len()).filter(|&i| t1[i] != t2[i]).collect();
    let (opposed, rest): (Vec<usize>, Vec<usize>) = diff
        .iter()
        .partition(|&&i| opposite(&t1[i]) == Some(t2[i].as_str()));
    let swapped = rest.len() == 2 && t1[rest[0]] == t2[rest[1]] && t1[rest[1]] == t2[rest[0]];
    (swapped && opposed.is_empty()) || (rest.is_empty() && opposed.len() % 2 == 1)
}

/// Pairs of sentences from different runs that contradict (two sentences
/// one run prints side by side are two claims, not a claim and its opposite).
fn contradictions(runs: &[BTreeSet<String>]) -> Vec<(String, String)> {
    let union: Vec<&String> = runs
        .iter()
        .flatten()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut out = Vec::new();
    for (i, a) in union.iter().enumerate() {
        for b in &union[i + 1..] {
            let together = runs.iter().any(|r| r.contains(*a) && r.contains(*b));
            if !together && contradicts(a, b) {
                out.push(((*a).clone(), (*b).clone()));
            }
        }
    }
    out
}

/// How a set's findings, recomputed with this tree's rules, hold up.
struct Stability {
    /// Distinct findings (by words) in every run.
    same: usize,
    /// Distinct findings in any run.
    all: usize,
    /// Contradicting pairs.
    opposed: Vec<(String, String)>,
    /// The findings not in every run, with the runs (from 1) they were in.
    flips: Vec<(String, Vec<usize>)>,
}

impl Stability {
    /// The share of findings with the same words in every run.
    fn share(&self) -> f64 {
        if self.all == 0 {
            1.0
        } else {
            self.same as f64 / self.all as f64
        }
    }
}

/// The words of each run's findings as this tree's rules make them from
/// its results (as examples/refind.rs and scripts/findings-stability.sh -f).
fn stability(runs: &[Run]) -> Stability {
    let worded: Vec<BTreeSet<String>> = runs
        .iter()
        .map(|r| {
            opcost::suites::findings(&r.doc.results)
                .iter()
                .filter(|f| f.value.is_finite())
                .map(|f| words(&f.area, &f.text))
                .collect()
        })
        .collect();
    let all: BTreeSet<&String> = worded.iter().flatten().collect();
    let flips: Vec<(String, Vec<usize>)> = all
        .iter()
        .filter(|w| !worded.iter().all(|r| r.contains(**w)))
        .map(|w| {
            let seen = (0..worded.len()).filter(|&i| worded[i].contains(*w));
            ((*w).clone(), seen.map(|i| i + 1).collect())
        })
        .collect();
    Stability {
        same: all.len() - flips.len(),
        all: all.len(),
        opposed: contradictions(&worded),
        flips,
    }
}

/// The smallest share of findings with the same words in a set's runs.
const SAME_WORDS: f64 = 0.92;

/// The sets of quick whole-suite runs whose words are held to
/// [`SAME_WORDS`]: the corpus's sets of three runs of a machine's suites.
const WORDED_SETS: [&str; 2] = [
    "syscall-ipc-process-codec-text-timer-quick",
    "memory-storage-net-cpu-crypto-quick",
];

#[test]
fn findings_keep_their_words_across_each_set_of_runs() {
    let corpus = corpus_sets(&WORDED_SETS);
    assert!(
        !corpus.is_empty(),
        "no corpus under {}",
        corpus_dir().display()
    );
    let mut failures = Vec::new();
    for (machine, sets) in &corpus {
        for (set, runs) in sets {
            assert!(runs.len() >= 2, "{machine}/{set}: fewer than two runs");
            let s = stability(runs);
            let files: Vec<&str> = runs.iter().map(|r| r.file.as_str()).collect();
            println!(
                "{machine}/{set} ({}): {} of {} the same ({:.1}%), {} contradictions",
                files.join(", "),
                s.same,
                s.all,
                100.0 * s.share(),
                s.opposed.len()
            );
            for (w, seen) in &s.flips {
                println!("  {seen:?} {w}");
            }
            for (a, b) in &s.opposed {
                println!("  contradiction: {a}\n    vs {b}");
            }
            if s.share() < SAME_WORDS || !s.opposed.is_empty() {
                failures.push(format!(
                    "{machine}/{set}: {:.1}% the same, {} contradictions",
                    100.0 * s.share(),
                    s.opposed.len()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn words_blank_numbers_with_their_units() {
    let w = |t: &str| words("ipc", t);
    assert_eq!(w("pipe 1.2 GB/s"), w("pipe 950 MB/s"));
    assert_eq!(w("zstd3 at 31 µs"), w("zstd3 at 1.2 ms"));
    assert_eq!(w("zstd3 at 31 µs"), "ipc: zstd3 at #");
    assert_ne!(w("zstd-1 wins"), w("zstd-19 wins"));
    assert_eq!(w("zstd-19 wins"), "ipc: zstd-19 wins");
    assert_eq!(
        w("a is 2× faster than b (words over the last 4 runs)"),
        w("a is 3× faster than b")
    );
    assert_eq!(w("a −3% and -3%"), w("a −4% and -5%"));
    assert_eq!(w("a −3% and -3%"), "ipc: a −# and #");
    assert_eq!(w("1,024 descriptors at 256MiB"), "ipc: # descriptors at #");
    assert_eq!(w("x -1.5 ms, y +2"), "ipc: x #, y #");
    assert_eq!(w("p99 of 3 Mop/s and 2 Gbit/s"), "ipc: p99 of # and #");
    // A unit is not a word's end: "5 seconds" keeps "econds", as the
    // script's pattern does.
    assert_eq!(w("5 seconds"), "ipc: #econds");
}

#[test]
fn contradictions_are_swaps_and_opposite_words_not_flips() {
    let w = |t: &str| words("ipc", t);
    assert!(contradicts(
        &w("pipe is 1.3× faster than unix_stream"),
        &w("unix_stream is 1.2× faster than pipe")
    ));
    assert!(contradicts(
        &w("fastest: a; then b (3.1× slower)"),
        &w("fastest: b; then a (2.9× slower)")
    ));
    assert!(contradicts(
        &w("float is 1.9× slower than int"),
        &w("float is 1.1× faster than int")
    ));
    assert!(!contradicts(
        &w("a is 2× faster than b"),
        &w("b is 2× slower than a")
    ));
    assert!(!contradicts(
        &w("fork+exec grows with the memory"),
        &w("fork+exec stays flat with the memory")
    ));
    assert!(!contradicts(
        &w("fastest: a and b; then c (2× slower)"),
        &w("fastest: a; then b and c (2× slower)")
    ));
    assert!(!contradicts(
        "ipc: a is # faster than b",
        "net: b is # faster than a"
    ));
    let runs = [
        BTreeSet::from([w("a is 2× faster than b"), w("x grows")]),
        BTreeSet::from([w("b is 2× faster than a"), w("x stays flat")]),
    ];
    assert_eq!(contradictions(&runs).len(), 1);
    let above = w("glibc memcpy above its threshold: # (not clearly apart)");
    let below = w("glibc memcpy below its threshold: # (not clearly apart)");
    let runs = [
        BTreeSet::from([above.clone(), below.clone()]),
        BTreeSet::from([above]),
        BTreeSet::from([below]),
    ];
    assert!(contradictions(&runs).is_empty());
    assert!(!contradicts(&w("# less payload"), &w("# more payload")));
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
        // correction, a noisier run)
        assert!(
            widths.iter().filter(|w| **w <= 0.05).count() >= 4,
            "{machine}: {shown:?}"
        );
        // a row wider than ±5% says which two levels its rounds read, or
        // is one level with a stray round: today at most 28% of them
        assert!(
            unsaid.len() * 10 <= total * 3,
            "{machine}: {} of {total} L1 rows wide without two levels",
            unsaid.len()
        );
    }
}

/// Over every ordered pair of runs: the (row, other run) pairs whose other
/// run's median lies inside this run's interval, and all such pairs.
fn coverage(runs: &[Run]) -> (usize, usize) {
    let (mut inside, mut all) = (0, 0);
    for (i, a) in runs.iter().enumerate() {
        for (j, b) in runs.iter().enumerate() {
            if i == j {
                continue;
            }
            for m in &a.doc.results {
                let Some(o) = b.doc.results.iter().find(|o| o.id == m.id) else {
                    continue;
                };
                if m.ci_low > 0.0 && m.ci_high.is_finite() {
                    all += 1;
                    inside += usize::from(o.median >= m.ci_low && o.median <= m.ci_high);
                }
            }
        }
    }
    (inside, all)
}

#[test]
fn intervals_hold_another_runs_median_on_every_machine() {
    for (machine, sets) in &corpus_sets(&["syscall-quick"]) {
        let runs = &sets["syscall-quick"];
        assert!(runs.len() >= 5, "{machine}");
        let (inside, all) = coverage(runs);
        let share = inside as f64 / all as f64;
        println!(
            "{machine}: {inside} of {all} ({:.1}%) of another run's syscall medians inside the interval",
            share * 100.0
        );
        // Today's floor on every machine (the AMD guest's 24 runs read 85%,
        // the Xeon guest's 5 runs 76%: its rows shift between runs by more
        // than their rounds spread within one; docs/statistics.md).
        assert!(share >= 0.75, "{machine}: coverage {:.1}%", share * 100.0);
    }
}
