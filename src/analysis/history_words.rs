//! A run's findings decided with the host's history, so that a word at its
//! edge holds from run to run.
//!
//! A finding's word sits at its edge when the value it is decided on is
//! near the line between two words ("faster" / "no clear difference"):
//! then each run draws its word from its own noise, and repeated runs
//! disagree. When the history holds earlier runs of the same host at the
//! same profile (and label), every result is also pooled over those runs
//! and this one ([`pool_runs`]), and the findings are made from both. Where
//! this run alone says what the pooled evidence says, the finding is this
//! run's, its figures the table's. Where they differ the word is at its
//! edge: this run's finding stays when the newest earlier run printed its
//! words (so a word does not flip back and forth), else the pooled finding
//! is printed and says so ("words over the last 4 runs"), which
//! consecutive runs share most of their evidence for. A first run on a new
//! machine has no history and keeps the rules of one run.

use crate::harness::claims::{Est, POOLED_RUN_SPAN_S, words};
use crate::harness::{Finding, Measurement, Round};
use crate::stats::{Z95, log_mean_var};

/// Earlier runs of the host a run's findings are pooled with, at most.
pub const EARLIER_RUNS: usize = 4;

/// `m` pooled with the same benchmark in `earlier` runs (same id and unit,
/// a positive median, newest first): the geometric mean of the runs'
/// medians, and an interval from both the runs' own intervals and their
/// spread (the mean of n runs: within-run half-widths in quadrature over
/// n, plus the between-run spread over √n); with how many runs went in.
///
/// An earlier run whose median is clearly not this run's (apart by more
/// than their two intervals in quadrature allow: the row changed, or the
/// machine is in another state) is left out: the history settles a word
/// at its edge, it does not outvote a change this run shows.
///
/// The rounds are those of every run pooled, on one clock: the `k`-th
/// earlier run's starts moved [`POOLED_RUN_SPAN_S`] × `k` back, so two
/// rows measured in the same rounds of any of the runs pair round by
/// round ([`crate::harness::claims::paired_log_half_width`]) over all of
/// them, and rounds of different runs never pair. Everything else
/// (samples, details) stays this run's.
pub fn pool_runs(m: &Measurement, earlier: &[&[Measurement]]) -> (Measurement, usize) {
    let usable = |x: &&Measurement| {
        x.id == m.id && x.unit == m.unit && x.median.is_finite() && x.median > 0.0
    };
    if !(m.median.is_finite() && m.median > 0.0) {
        return (m.clone(), 1);
    }
    let hw = Est::of(m).log_half_width();
    let consistent =
        |x: &Measurement| (x.median / m.median).ln().abs() <= Est::of(x).log_half_width().hypot(hw);
    let pooled: Vec<(usize, &Measurement)> = earlier
        .iter()
        .enumerate()
        .filter_map(|(k, ms)| ms.iter().find(usable).map(|x| (k + 1, x)))
        .filter(|(_, x)| consistent(x))
        .collect();
    if pooled.is_empty() {
        return (m.clone(), 1);
    }
    let mut runs: Vec<&Measurement> = vec![m];
    runs.extend(pooled.iter().map(|(_, x)| *x));
    let medians: Vec<f64> = runs.iter().map(|x| x.median).collect();
    let Some((mean, var)) = log_mean_var(&medians) else {
        return (m.clone(), 1);
    };
    let n = runs.len() as f64;
    let within = runs
        .iter()
        .map(|x| Est::of(x).log_half_width().powi(2))
        .sum::<f64>()
        .sqrt()
        / n;
    let between = Z95 * (var / n).sqrt();
    let hw = within.hypot(between);
    let mut p = m.clone();
    p.summary.median = mean.exp();
    p.summary.ci_low = (mean - hw).exp();
    p.summary.ci_high = (mean + hw).exp();
    for (k, x) in &pooled {
        let back = POOLED_RUN_SPAN_S * *k as f64;
        p.rounds.extend(x.rounds.iter().map(|r| Round {
            at_s: r.at_s - back,
            ..r.clone()
        }));
    }
    (p, runs.len())
}

/// An earlier run of the host: its results and the findings it printed.
#[derive(Clone, Copy, Debug)]
pub struct Earlier<'a> {
    /// Its results.
    pub results: &'a [Measurement],
    /// Its findings, as printed.
    pub findings: &'a [Finding],
}

/// The note a finding carries when its words are the pooled runs'.
fn pooled_note(n: usize) -> String {
    format!(" (words over the last {n} runs)")
}

/// A finding's claim: its words (numbers blanked) without the note that
/// the history decided them.
fn claim(f: &Finding) -> (String, String) {
    let w = words(&f.text);
    let w = w
        .strip_suffix(&words(&pooled_note(2)))
        .map(str::to_string)
        .unwrap_or(w);
    (f.area.clone(), w)
}

/// The length of the common start of two claims of one area.
fn common_start(a: &(String, String), b: &(String, String)) -> usize {
    if a.0 != b.0 {
        return 0;
    }
    a.1.chars()
        .zip(b.1.chars())
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many characters two texts share from their start.
fn same_start(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// Two claims shorter in common than this are about different things.
const SAME_SUBJECT: usize = 12;

/// The findings of `ms`, decided with `earlier` runs of the host (newest
/// first, at most [`EARLIER_RUNS`] used): `findings` made from this run
/// and from the pooled results. Where this run's words are the pooled
/// ones, this run's finding. Where they differ the word is at its edge:
/// this run's finding when the newest earlier run printed its words (two
/// of the three say so, and the word does not flip back and forth), else
/// the pooled finding, saying so. Without earlier runs, this run's
/// findings.
pub fn findings_with_history(
    ms: &[Measurement],
    earlier: &[Earlier],
    findings: impl Fn(&[Measurement]) -> Vec<Finding>,
) -> Vec<Finding> {
    let own = findings(ms);
    let earlier = &earlier[..earlier.len().min(EARLIER_RUNS)];
    let results: Vec<&[Measurement]> = earlier.iter().map(|e| e.results).collect();
    let (pooled_ms, runs): (Vec<Measurement>, Vec<usize>) =
        ms.iter().map(|m| pool_runs(m, &results)).unzip();
    let n = runs.into_iter().max().unwrap_or(1);
    if n < 2 {
        return own;
    }
    // The claims the newest earlier run printed, each as many times as
    // it printed it: two findings of one run can share their words (the
    // same sentence at two sizes, the sizes blanked), and each of this
    // run's findings kept as the last run's words uses one of them up.
    let mut last: Vec<(String, String)> = earlier
        .first()
        .map(|e| e.findings.iter().map(claim).collect())
        .unwrap_or_default();
    let mut use_last = |c: &(String, String)| match last.iter().position(|l| l == c) {
        Some(k) => {
            last.swap_remove(k);
            true
        }
        None => false,
    };
    let mut own: Vec<Option<Finding>> = own.into_iter().map(Some).collect();
    let pooled = findings(&pooled_ms);
    // This run's findings with the pooled words first (of several with
    // the same words, the one whose text, numbers and all, starts most
    // like the pooled one's: the same sentence at the same size), then,
    // for each pooled finding left, the one of this run's left about the
    // same thing (the longest common start of their words).
    let mut chosen: Vec<Option<Finding>> = vec![None; pooled.len()];
    for (i, p) in pooled.iter().enumerate() {
        let cp = claim(p);
        if let Some(o) = own
            .iter_mut()
            .filter(|o| o.as_ref().is_some_and(|o| claim(o) == cp))
            .max_by_key(|o| o.as_ref().map_or(0, |o| same_start(&o.text, &p.text)))
        {
            chosen[i] = o.take();
            use_last(&cp);
        }
    }
    for (i, p) in pooled.into_iter().enumerate() {
        if chosen[i].is_some() {
            continue;
        }
        let cp = claim(&p);
        let mine = own
            .iter_mut()
            .filter(|o| o.is_some())
            .max_by_key(|o| o.as_ref().map_or(0, |o| common_start(&claim(o), &cp)))
            .filter(|o| {
                o.as_ref()
                    .is_some_and(|o| common_start(&claim(o), &cp) >= SAME_SUBJECT)
            });
        chosen[i] = Some(match mine {
            Some(o) if o.as_ref().is_some_and(|o| use_last(&claim(o))) => {
                o.take().expect("a finding left")
            }
            _ => Finding {
                text: format!("{}{}", p.text, pooled_note(n)),
                ..p
            },
        });
    }
    chosen.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::claims::{Est, compare};

    /// A latency of `ns` with a ±`rel` interval.
    fn lat(id: &str, ns: f64, rel: f64) -> Measurement {
        Measurement::within(id, "ns/op", ns, rel)
    }

    /// Earlier runs of `results`, newest first, the newest having printed
    /// `printed` (the others' findings unknown).
    fn history<'a>(results: &'a [Vec<Measurement>], printed: &'a [Finding]) -> Vec<Earlier<'a>> {
        results
            .iter()
            .enumerate()
            .map(|(i, r)| Earlier {
                results: r,
                findings: if i == 0 { printed } else { &[] },
            })
            .collect()
    }

    /// "a against b: a is faster" or "... no clear difference", decided
    /// by intervals.
    fn words_of(ms: &[Measurement]) -> Vec<Finding> {
        let a = ms.iter().find(|m| m.id == "syscall.a").unwrap();
        let b = ms.iter().find(|m| m.id == "syscall.b").unwrap();
        let text = compare(&Est::of(a), &Est::of(b))
            .worded("faster", "slower")
            .map(|w| format!("a against b: a is {w}"))
            .unwrap_or_else(|| {
                format!(
                    "a against b: no clear difference ({:.1} vs {:.1})",
                    a.median, b.median
                )
            });
        vec![Finding {
            area: "syscall".into(),
            text,
            value: a.median / b.median,
            unit: crate::units::ValueUnit::Ratio,
        }]
    }

    #[test]
    fn words_blank_numbers_and_their_units_but_not_names() {
        assert_eq!(
            words("lz4 at 1.2 GB/s, p99 31 µs"),
            words("lz4 at 950 MB/s, p99 1.2 ms")
        );
        assert_eq!(
            words("lz4-1 2.50× (2.4–2.6)"),
            "lz4-1 #× (#–#)".replace("#×", "#")
        );
        assert_ne!(words("zstd-1 wins"), words("zstd-3 wins"));
    }

    #[test]
    fn a_first_run_keeps_its_own_words() {
        let ms = vec![lat("syscall.a", 100.0, 0.02), lat("syscall.b", 104.0, 0.02)];
        assert_eq!(findings_with_history(&ms, &[], words_of), words_of(&ms));
    }

    /// Earlier runs in which a and b cost the same within noise: a at
    /// 100 ns × the run's factor, b at 100 ns ÷ it, each ±6% (wide enough
    /// to hold the 105.5 ns this run reads, so they are pooled with it).
    fn tied_runs(factors: [f64; 4]) -> Vec<Vec<Measurement>> {
        factors
            .iter()
            .map(|d| {
                vec![
                    lat("syscall.a", 100.0 * d, 0.06),
                    lat("syscall.b", 100.0 / d, 0.06),
                ]
            })
            .collect()
    }

    /// This run: b 5.5% dearer than a, each ±3%.
    fn now_at_the_edge() -> Vec<Measurement> {
        vec![lat("syscall.a", 100.0, 0.03), lat("syscall.b", 105.5, 0.03)]
    }

    #[test]
    fn a_word_at_its_edge_is_decided_on_the_pooled_runs_and_says_so() {
        // Four earlier runs: a and b cost the same. This run alone sees a
        // 5.5% gap, just past the material 5%; pooled, it is a tie.
        let same = tied_runs([0.99, 1.01, 1.0, 1.005]);
        let earlier = history(&same, &[]);
        let now = now_at_the_edge();
        let alone = words_of(&now);
        assert!(
            alone[0].text.starts_with("a against b: a is "),
            "{}",
            alone[0].text
        );
        let f = findings_with_history(&now, &earlier, words_of);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].text.starts_with("a against b: no clear difference")
                && f[0].text.ends_with("(words over the last 5 runs)"),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn at_its_edge_the_word_the_last_run_printed_stays_when_this_run_says_it() {
        // As above, but the newest earlier run printed "a is faster" (its
        // own run saw the gap too): this run says so again, so the word
        // stays, this run's own.
        let same = tied_runs([1.0, 0.99, 1.01, 1.005]);
        let printed = words_of(&[lat("syscall.a", 100.0, 0.01), lat("syscall.b", 107.0, 0.01)]);
        assert!(
            printed[0].text.starts_with("a against b: a is "),
            "{}",
            printed[0].text
        );
        let earlier = history(&same, &printed);
        let now = now_at_the_edge();
        assert_eq!(
            findings_with_history(&now, &earlier, words_of),
            words_of(&now)
        );
        // The last run's word was the pooled one (with its note): the
        // pooled word again.
        let mut noted = findings_with_history(&now, &earlier[1..], words_of);
        assert!(
            noted[0].text.ends_with("(words over the last 4 runs)"),
            "{noted:?}"
        );
        let last = std::mem::take(&mut noted);
        let earlier = history(&same, &last);
        let f = findings_with_history(&now, &earlier, words_of);
        assert!(
            f[0].text.starts_with("a against b: no clear difference"),
            "{f:?}"
        );
    }

    /// `words_of` at two sizes, 64 KiB and 1 MiB: two sentences whose
    /// words are the same once the sizes are blanked.
    fn two_sizes(ms: &[Measurement]) -> Vec<Finding> {
        ["64KiB", "1MiB"]
            .iter()
            .map(|size| {
                let get = |x: &str| {
                    let mut m = ms
                        .iter()
                        .find(|m| m.id == format!("syscall.{x}/{size}"))
                        .unwrap()
                        .clone();
                    m.id = format!("syscall.{x}");
                    m
                };
                let f = words_of(&[get("a"), get("b")]).remove(0);
                let label = if *size == "64KiB" { "64 KiB" } else { "1 MiB" };
                Finding {
                    text: format!("throughput at {label}, in tiers: {}", f.text),
                    ..f
                }
            })
            .collect()
    }

    #[test]
    fn a_sentence_the_last_run_printed_once_keeps_only_one_finding_of_this_run() {
        // At 64 KiB a is 7% faster in every earlier run (clearly so,
        // pooled), at 1 MiB the two are the same. The last run printed
        // "faster" at 64 KiB and "no clear difference" at 1 MiB; this run
        // sees no difference at either. Its 1 MiB sentence uses up the
        // last run's "no clear difference": the 64 KiB one is at its edge
        // and the pooled runs decide it, not the words the last run
        // printed at the other size.
        let run = |gap: f64, rel: f64| {
            vec![
                lat("syscall.a/64KiB", 100.0, rel),
                lat("syscall.b/64KiB", 100.0 * gap, rel),
                lat("syscall.a/1MiB", 100.0, rel),
                lat("syscall.b/1MiB", 100.0, rel),
            ]
        };
        // Earlier runs ±6%, wide enough to hold this run's figures (so
        // they are pooled with it); the last one printed its words from
        // narrower intervals.
        let same: Vec<Vec<Measurement>> = (0..4).map(|_| run(1.07, 0.06)).collect();
        let printed = two_sizes(&run(1.07, 0.02));
        assert!(printed[0].text.contains(": a is "), "{printed:?}");
        assert!(
            printed[1].text.contains("no clear difference"),
            "{printed:?}"
        );
        let earlier = history(&same, &printed);
        let now = run(1.01, 0.02);
        assert!(two_sizes(&now)[0].text.contains("no clear difference"));
        let f = findings_with_history(&now, &earlier, two_sizes);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(
            f[0].text
                .starts_with("throughput at 64 KiB, in tiers: a against b: a is ")
                && f[0].text.ends_with("(words over the last 5 runs)"),
            "{f:?}"
        );
        assert_eq!(f[1], two_sizes(&now)[1], "{f:?}");
    }

    #[test]
    fn where_this_run_agrees_with_the_pooled_runs_its_own_figures_stay() {
        let earlier_runs: Vec<Vec<Measurement>> = (0..3)
            .map(|_| vec![lat("syscall.a", 50.0, 0.02), lat("syscall.b", 100.0, 0.02)])
            .collect();
        let earlier = history(&earlier_runs, &[]);
        let now = vec![lat("syscall.a", 60.0, 0.02), lat("syscall.b", 100.0, 0.02)];
        let f = findings_with_history(&now, &earlier, words_of);
        assert_eq!(f, words_of(&now));
    }

    /// Three rounds at `at_s` 0, 1 and 2, each with median `v`.
    fn rounds_at(v: f64) -> Vec<Round> {
        (0..3)
            .map(|k| {
                serde_json::from_value(serde_json::json!({
                    "median": v, "n": 5, "ops": 1, "at_s": f64::from(k)
                }))
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn pooling_is_the_geometric_mean_with_the_runs_spread_in_the_interval() {
        let mut m = lat("syscall.a", 100.0, 0.01);
        m.rounds = rounds_at(100.0);
        // An earlier run whose wide interval holds this run's median.
        let mut e1 = lat("syscall.a", 121.0, 0.2);
        e1.rounds = rounds_at(121.0);
        let other_unit = vec![Measurement::within("syscall.a", "B/s", 5.0, 0.01)];
        let (p, n) = pool_runs(&m, &[std::slice::from_ref(&e1), &other_unit]);
        assert_eq!(n, 2);
        assert!((p.median - 110.0).abs() < 1e-9, "{}", p.median);
        // The spread of 100 and 121 dominates this run's ±1%.
        assert!(
            p.ci_low < 95.0 && p.ci_high > 125.0,
            "{} {}",
            p.ci_low,
            p.ci_high
        );
        // The rounds of both runs, the earlier one's a run's span back.
        assert_eq!(p.rounds.len(), 6);
        assert_eq!(p.rounds[..3], m.rounds[..]);
        for (r, e) in p.rounds[3..].iter().zip(&e1.rounds) {
            assert_eq!(r.at_s, e.at_s - POOLED_RUN_SPAN_S);
            assert_eq!(r.median, e.median);
        }
        let (alone, n) = pool_runs(&m, &[]);
        assert_eq!((alone, n), (m, 1));
    }

    #[test]
    fn an_earlier_run_clearly_apart_is_not_pooled() {
        // This run reads 100 ±1%; an earlier run 150 ±2%: the row changed
        // (or the machine is in another state), and the history does not
        // outvote what this run shows. One at 101 ±2% is pooled.
        let m = lat("syscall.a", 100.0, 0.01);
        let apart = vec![lat("syscall.a", 150.0, 0.02)];
        let near = vec![lat("syscall.a", 101.0, 0.02)];
        assert_eq!(pool_runs(&m, &[&apart]), (m.clone(), 1));
        let (p, n) = pool_runs(&m, &[&apart, &near]);
        assert_eq!(n, 2);
        assert!((p.median - (100.0f64 * 101.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn a_clear_change_is_printed_in_the_first_run_that_shows_it() {
        // Four earlier runs: a clearly faster than b (50 against 100 ns,
        // ±2%), as the last one printed. Now a reads 200 ns ±2%: slower,
        // this run's own word, not the pooled runs' tie.
        let runs: Vec<Vec<Measurement>> = (0..4)
            .map(|_| vec![lat("syscall.a", 50.0, 0.02), lat("syscall.b", 100.0, 0.02)])
            .collect();
        let printed = words_of(&runs[0]);
        assert!(printed[0].text.contains("a is "), "{printed:?}");
        let earlier = history(&runs, &printed);
        let now = vec![lat("syscall.a", 200.0, 0.02), lat("syscall.b", 100.0, 0.02)];
        assert_eq!(
            findings_with_history(&now, &earlier, words_of),
            words_of(&now)
        );
    }

    #[test]
    fn two_rows_of_the_same_rounds_pair_over_every_pooled_run() {
        // a and b measured in the same rounds of two runs: every round's
        // a/b is 0.5 while both rows move 20% from run to run together.
        // Pooled, their ratio pairs over the six rounds: the floor's
        // width, not the rows' own.
        let row = |id: &str, v: f64| {
            let mut m = lat(id, v, 0.1);
            m.rounds = rounds_at(v);
            m
        };
        let (a, b) = (row("syscall.a", 50.0), row("syscall.b", 100.0));
        let (ea, eb) = (row("syscall.a", 60.0), row("syscall.b", 120.0));
        let (pa, _) = pool_runs(&a, &[std::slice::from_ref(&ea)]);
        let (pb, _) = pool_runs(&b, &[std::slice::from_ref(&eb)]);
        let r = crate::harness::claims::Ratio::of(&Est::of(&pa), &Est::of(&pb));
        assert!((r.ratio - 0.5).abs() < 1e-9, "{r:?}");
        let floor = crate::harness::claims::PAIRED_FLOOR;
        assert!((r.high / r.ratio).ln() <= floor + 1e-9, "{r:?}");
        // Unpaired, the two ±10% intervals and the runs' spread.
        let wide = Est::of(&pa)
            .log_half_width()
            .hypot(Est::of(&pb).log_half_width());
        assert!(wide > 3.0 * floor, "{wide}");
    }
}
