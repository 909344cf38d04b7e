//! E10: what a caseless comparison costs, what sorting N strings with it
//! costs, and whether its order is right for the language.
//!
//! `text.cmp.METHOD/LANG` times one comparison of two words drawn at random
//! from the language's generated corpus; `text.sort.METHOD/LANG/n=N` times
//! one `sort_unstable_by` of N words (a fresh copy of the same shuffled
//! order each time), the same algorithm for every method, so only the
//! comparison differs. Key methods (`strxfrm`, `icu_keys.*`) compare
//! precomputed keys in the first; in the second, building the N keys is
//! part of the sort, and the share it takes is in the details. Every result
//! carries `order_correct` and the first wrong pair of the language's fixed
//! list; the first sort of each benchmark is checked to be in order under
//! its own comparison.

use std::cmp::Ordering;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::methods::{Compare, Keyed, Loc, Method, Strength, Visit, build, check_order, comparer};
use super::words::{Corpus, Lang, Word};
use crate::harness::round::expected_slow;
use crate::harness::{Bench, PrepareError, Profile, Timed, Unit};
use crate::suites::bench::FnBench;

/// Words the comparison benchmarks draw their pairs from.
const CMP_POOL: usize = 1000;
/// Pairs compared in turn (a power of two).
const CMP_PAIRS: usize = 4096;
/// The sort sizes, and the profile from which each runs.
const SORT_SIZES: [(usize, Profile); 3] = [
    (1_000, Profile::Quick),
    (100_000, Profile::Default),
    (1_000_000, Profile::Thorough),
];
/// The largest size: one sort takes seconds with the slow comparisons, so
/// it runs for a few languages and methods only.
const LARGEST: usize = 1_000_000;
/// The languages sorted at the largest size: the question and the baseline.
const LARGEST_LANGS: [Lang; 2] = [Lang::Sv, Lang::C];
/// The methods sorted at the largest size: a byte compare, ASCII folding,
/// lowercase, the C library's collation and keys, ICU's.
const LARGEST_METHODS: [Method; 7] = [
    Method::Bytes,
    Method::AsciiCi,
    Method::LowerAlloc,
    Method::StrColl,
    Method::StrXfrm,
    Method::Icu(Strength::Tertiary),
    Method::IcuKeys(Strength::Tertiary),
];
/// The largest sort of the methods that build their locale per comparison.
pub(super) const PER_CALL_MAX_SORT: usize = 1_000;
/// Budget scale of the cheap benchmarks (comparisons, small sorts), whose
/// samples converge fast: quick stays a few seconds for the whole suite.
pub(super) const CHEAP_BUDGET: f64 = 0.2;

/// The profile from which a benchmark of `lang` runs, `base` being the
/// one its kind and size ask for: quick compares Swedish (the question E10
/// answers) and ASCII (the baseline), and sorts Swedish only; the other
/// languages run from default.
fn lang_profile(lang: Lang, base: Profile, sort: bool) -> Profile {
    let quick = match lang {
        Lang::Sv => true,
        Lang::C => !sort,
        Lang::De | Lang::En => false,
    };
    if quick {
        base
    } else {
        base.max(Profile::Default)
    }
}

/// The E10 benchmarks: every method on every language, compared and sorted.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let mut v = Vec::new();
    for lang in Lang::ALL {
        for m in Method::all() {
            v.push(cmp_bench(m, lang));
        }
    }
    for (n, base) in SORT_SIZES {
        for lang in Lang::ALL {
            for m in Method::all() {
                if n == LARGEST && !(LARGEST_LANGS.contains(&lang) && LARGEST_METHODS.contains(&m))
                {
                    continue;
                }
                // A locale or collator built per comparison makes a large
                // sort take minutes; the small one shows the cost.
                if m.per_call() && n > PER_CALL_MAX_SORT {
                    continue;
                }
                v.push(sort_bench(m, lang, n, lang_profile(lang, base, true)));
            }
        }
    }
    v
}

/// `b` with the method, the set of words (`lang`) and the locale as params.
pub(super) fn with_params(b: FnBench, m: Method, lang: &str, loc: &Loc) -> FnBench {
    let b = b.param("method", m.name()).param("lang", lang);
    match m.locale(loc) {
        Some(l) => b.param("locale", l),
        None => b,
    }
}

fn cmp_bench(m: Method, lang: Lang) -> Box<dyn Bench> {
    let b = FnBench::new(
        format!("text.cmp.{}/{}", m.name(), lang.tag()),
        format!(
            "one comparison of two {} words: {}",
            lang.tag(),
            m.describe()
        ),
        Unit::Latency,
        {
            let memo = Memo::default();
            move |_ctx| prepare_cmp(m, lang, &memo)
        },
    )
    .subtract_loop()
    .min_profile(lang_profile(lang, Profile::Quick, false))
    .interleave(format!("text.cmp/{}", lang.tag()))
    .budget_scale(CHEAP_BUDGET);
    with_params(b, m, lang.tag(), &lang.into()).boxed()
}

fn sort_bench(m: Method, lang: Lang, n: usize, from: Profile) -> Box<dyn Bench> {
    let mut b = FnBench::new(
        format!("text.sort.{}/{}/n={n}", m.name(), lang.tag()),
        format!(
            "sort_unstable_by of {n} {} words: {}",
            lang.tag(),
            m.describe()
        ),
        Unit::Latency,
        {
            let memo = Memo::default();
            move |_ctx| prepare_sort(m, lang, n, &memo)
        },
    )
    .param("n", n)
    .min_profile(from)
    .expected_by(move |profile, budget| sort_expected(m, lang, n, profile, budget));
    if n <= 1_000 {
        b = b.budget_scale(CHEAP_BUDGET);
    }
    if n <= 100_000 {
        // Alternatives of one size are interleaved; the largest sorts are
        // not, so that only one of them holds its words and keys at a time.
        b = b.interleave(format!("text.sort/{}/{n}", lang.tag()));
    }
    with_params(b, m, lang.tag(), &lang.into()).boxed()
}

/// Typical time of one sort of 100 000 words, ms: (ASCII words under the
/// C locale, the other languages: the mean of three), the medians of a
/// default run on a quiet 2-vCPU AMD EPYC (Zen 4) KVM guest (2026-11-28;
/// the per-call methods from their 1 000-word sorts, scaled by n log n).
/// Only the run-time estimate uses them.
fn nominal_sort_ms(m: Method) -> (f64, f64) {
    match m {
        Method::Bytes => (7.8, 7.7),
        Method::AsciiCi => (16.2, 17.5),
        Method::AsciiFast => (17.1, 113.0),
        Method::LowerAlloc => (78.0, 148.0),
        Method::LowerBuf => (59.0, 104.0),
        Method::SimpleFold => (102.0, 112.0),
        Method::StrCaseCmp => (10.9, 11.0),
        Method::StrColl => (11.2, 113.0),
        Method::StrXfrm => (13.3, 41.0),
        Method::AsciiStrColl => (16.4, 70.0),
        Method::StrCollPerCall => (75.0, 1120.0),
        Method::IcuPerCall => (350.0, 850.0),
        Method::Icu(_) => (206.0, 240.0),
        Method::IcuKeys(_) => (33.0, 41.0),
    }
}

/// How long a run should expect a sort benchmark to take
/// ([`expected_slow`]): an operation is one sort of `n` words (the nominal
/// time scaled by n log n); a round's preparation makes the words (and
/// keys) and sorts them once to check the order.
fn sort_expected(m: Method, lang: Lang, n: usize, profile: Profile, budget: Duration) -> Duration {
    let (c, other) = nominal_sort_ms(m);
    let at_100k = if lang == Lang::C { c } else { other };
    let scale = |k: f64| k * k.ln() / (1e5 * 1e5f64.ln());
    let sort = Duration::from_secs_f64(at_100k * 1e-3 * scale(n as f64));
    let make = Duration::from_secs_f64(0.05 * n as f64 / 1e5);
    expected_slow(profile, budget, make + sort, sort)
}

/// A benchmark's facts, worked out in its first round and kept for the others.
pub(super) type Memo = Arc<Mutex<Option<Value>>>;

/// The facts in `memo`, or worked out by `work` and kept there.
pub(super) fn memo_or(
    memo: &Memo,
    work: impl FnOnce() -> Result<Value, PrepareError>,
) -> Result<Value, PrepareError> {
    let mut slot = memo.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = slot.as_ref() {
        return Ok(v.clone());
    }
    let v = work()?;
    *slot = Some(v.clone());
    Ok(v)
}

/// [`facts`] from `memo`, or worked out and kept there.
fn memo_facts(
    memo: &Memo,
    m: Method,
    lang: Lang,
    corpus: &Corpus,
    compare_with_icu: bool,
) -> Result<Value, PrepareError> {
    memo_or(memo, || facts(m, lang, corpus, compare_with_icu))
}

/// What every result of a method and language carries: the order check,
/// the locale, and the corpus; for `strcoll` when `compare_with_icu`, how
/// far glibc's order of the corpus differs from ICU's.
fn facts(
    m: Method,
    lang: Lang,
    corpus: &Corpus,
    compare_with_icu: bool,
) -> Result<Value, PrepareError> {
    let loc = Loc::from(lang);
    let mut c = comparer(m, &loc).map_err(PrepareError::Skip)?;
    let check = check_order(c.as_mut(), lang)?;
    let mut v = json!({
        "method": m.name(),
        "lang": lang.tag(),
        "order_correct": check.correct,
        "first_wrong_pair": check.first_wrong.map(|(a, b)| vec![a, b]),
        "check_list": lang.check_list(),
        "corpus": {
            "words": corpus.len(),
            "non_ascii_share": corpus.non_ascii_share(),
            "mean_bytes": corpus.mean_len(),
        },
    });
    if let Some(l) = m.locale(&loc) {
        v["locale"] = l.into();
    }
    if m == Method::StrColl && compare_with_icu {
        // Where the C library and ICU disagree on the generated words.
        if let Ok(mut icu) = comparer(Method::Icu(Strength::Tertiary), &loc) {
            let words = corpus.words();
            let (count, pairs, first) =
                super::methods::disagreement(&words, c.as_mut(), icu.as_mut());
            v["icu_disagreement"] = json!({
                "against": format!("icu.tertiary/{}", lang.bcp47()),
                "pairs": count,
                "of": pairs,
                "first": first.map(|(a, b)| vec![a, b]),
            });
        }
    }
    Ok(v)
}

fn prepare_cmp(m: Method, lang: Lang, memo: &Memo) -> Result<Box<dyn Timed>, PrepareError> {
    let corpus = Corpus::generate(lang, CMP_POOL);
    let details = memo_facts(memo, m, lang, &corpus, true)?;
    cmp_timed(m, &lang.into(), corpus, details)
}

/// One comparison of `m` under `loc` of two words of `corpus` (at least
/// two), drawn in a fixed pseudo-random order of distinct positions.
pub(super) fn cmp_timed(
    m: Method,
    loc: &Loc,
    corpus: Corpus,
    details: Value,
) -> Result<Box<dyn Timed>, PrepareError> {
    let pool = u32::try_from(corpus.len()).unwrap_or(u32::MAX);
    if pool < 2 {
        return Err(PrepareError::Skip(
            "a comparison needs at least two words".into(),
        ));
    }
    let mut rng = fastrand::Rng::with_seed(0xc0de);
    let pairs: Vec<(u32, u32)> = (0..CMP_PAIRS)
        .map(|_| {
            let i = rng.u32(..pool);
            let j = (i + rng.u32(1..pool)) % pool;
            (i, j)
        })
        .collect();
    struct V {
        corpus: Corpus,
        pairs: Vec<(u32, u32)>,
        details: Value,
    }
    impl Visit for V {
        type Out = Box<dyn Timed>;
        fn direct<C: Compare + 'static>(self, c: C) -> Self::Out {
            Box::new(CmpDirect {
                corpus: self.corpus,
                pairs: self.pairs,
                c,
                next: 0,
                details: self.details,
            })
        }
        fn keyed<K: Keyed + 'static>(self, mut k: K) -> Self::Out {
            let keys = self
                .corpus
                .words()
                .into_iter()
                .map(|w| {
                    let mut key = Vec::new();
                    k.key(w, &mut key);
                    key
                })
                .collect();
            Box::new(CmpKeyed {
                keys,
                pairs: self.pairs,
                next: 0,
                details: self.details,
            })
        }
    }
    build(
        m,
        loc,
        V {
            corpus,
            pairs,
            details,
        },
    )
    .map_err(PrepareError::Skip)
}

struct CmpDirect<C> {
    corpus: Corpus,
    pairs: Vec<(u32, u32)>,
    c: C,
    next: usize,
    details: Value,
}

impl<C: Compare> Timed for CmpDirect<C> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let words = self.corpus.words();
        let mask = self.pairs.len() - 1;
        let start = Instant::now();
        for k in 0..ops as usize {
            let (i, j) = self.pairs[(self.next + k) & mask];
            let (a, b) = (words[i as usize], words[j as usize]);
            black_box(self.c.cmp(black_box(a), black_box(b)));
        }
        let took = start.elapsed();
        self.next = (self.next + ops as usize) & mask;
        Ok(took)
    }
    fn details(&self) -> Option<Value> {
        Some(self.details.clone())
    }
}

struct CmpKeyed {
    keys: Vec<Vec<u8>>,
    pairs: Vec<(u32, u32)>,
    next: usize,
    details: Value,
}

impl Timed for CmpKeyed {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let mask = self.pairs.len() - 1;
        let start = Instant::now();
        for k in 0..ops as usize {
            let (i, j) = self.pairs[(self.next + k) & mask];
            let (a, b) = (&self.keys[i as usize], &self.keys[j as usize]);
            black_box(black_box(a).as_slice().cmp(black_box(b).as_slice()));
        }
        let took = start.elapsed();
        self.next = (self.next + ops as usize) & mask;
        Ok(took)
    }
    fn details(&self) -> Option<Value> {
        let mut d = self.details.clone();
        let n = self.keys.len().max(1);
        d["mean_key_bytes"] =
            (self.keys.iter().map(Vec::len).sum::<usize>() as f64 / n as f64).into();
        Some(d)
    }
}

fn prepare_sort(
    m: Method,
    lang: Lang,
    n: usize,
    memo: &Memo,
) -> Result<Box<dyn Timed>, PrepareError> {
    let corpus = Corpus::generate(lang, n);
    let details = memo_facts(memo, m, lang, &corpus, false)?;
    sort_timed(m, &lang.into(), corpus, details)
}

/// One `sort_unstable_by` of every word of `corpus` with `m` under `loc`.
pub(super) fn sort_timed(
    m: Method,
    loc: &Loc,
    corpus: Corpus,
    details: Value,
) -> Result<Box<dyn Timed>, PrepareError> {
    struct V {
        corpus: Corpus,
        details: Value,
    }
    impl Visit for V {
        type Out = Box<dyn Timed>;
        fn direct<C: Compare + 'static>(self, c: C) -> Self::Out {
            Box::new(SortDirect {
                corpus: self.corpus,
                c,
                checked: false,
                details: self.details,
            })
        }
        fn keyed<K: Keyed + 'static>(self, k: K) -> Self::Out {
            Box::new(SortKeyed {
                corpus: self.corpus,
                k,
                checked: false,
                key_time: Duration::ZERO,
                sort_time: Duration::ZERO,
                key_bytes: 0,
                details: self.details,
            })
        }
    }
    build(m, loc, V { corpus, details }).map_err(PrepareError::Skip)
}

/// The first pair of `sorted` out of order under `cmp`, as an error.
fn verify_sorted<T>(
    sorted: &[T],
    mut cmp: impl FnMut(&T, &T) -> Ordering,
    show: impl Fn(&T) -> String,
) -> anyhow::Result<()> {
    match sorted
        .windows(2)
        .find(|p| cmp(&p[0], &p[1]) == Ordering::Greater)
    {
        Some(p) => anyhow::bail!(
            "the sort left {} before {}, which its own comparison orders the other way",
            show(&p[0]),
            show(&p[1])
        ),
        None => Ok(()),
    }
}

struct SortDirect<C> {
    corpus: Corpus,
    c: C,
    checked: bool,
    details: Value,
}

impl<C: Compare> Timed for SortDirect<C> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let base = self.corpus.words();
        let mut total = Duration::ZERO;
        for _ in 0..ops {
            let mut v: Vec<Word<'_>> = base.clone();
            let c = &mut self.c;
            let start = Instant::now();
            // A comparison that is not a total order on these words (one
            // that mixes two orders) may make the sort panic: an error of
            // this benchmark, not the end of the run.
            let sorted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                v.sort_unstable_by(|a, b| c.cmp(*a, *b))
            }));
            total += start.elapsed();
            if sorted.is_err() {
                anyhow::bail!(
                    "the sort found that this comparison is not a total order on these words"
                );
            }
            if !self.checked {
                verify_sorted(&v, |a, b| c.cmp(*a, *b), |w| format!("{:?}", w.as_str()))?;
                self.checked = true;
            }
            black_box(&v);
        }
        Ok(total)
    }
    fn details(&self) -> Option<Value> {
        let mut d = self.details.clone();
        d["sorted_checked"] = self.checked.into();
        Some(d)
    }
}

struct SortKeyed<K> {
    corpus: Corpus,
    k: K,
    checked: bool,
    key_time: Duration,
    sort_time: Duration,
    key_bytes: usize,
    details: Value,
}

impl<K: Keyed> Timed for SortKeyed<K> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let base = self.corpus.words();
        let mut total = Duration::ZERO;
        for _ in 0..ops {
            let start = Instant::now();
            let mut v: Vec<(Vec<u8>, Word<'_>)> = Vec::with_capacity(base.len());
            for &w in &base {
                let mut key = Vec::new();
                self.k.key(w, &mut key);
                v.push((key, w));
            }
            let keyed = Instant::now();
            v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let done = Instant::now();
            self.key_time += keyed - start;
            self.sort_time += done - keyed;
            total += done - start;
            if !self.checked {
                verify_sorted(&v, |a, b| a.0.cmp(&b.0), |p| format!("{:?}", p.1.as_str()))?;
                self.key_bytes = v.iter().map(|p| p.0.len()).sum();
                self.checked = true;
            }
            black_box(&v);
        }
        Ok(total)
    }
    fn details(&self) -> Option<Value> {
        let mut d = self.details.clone();
        let all = (self.key_time + self.sort_time).as_secs_f64();
        if all > 0.0 {
            d["key_build_share"] = (self.key_time.as_secs_f64() / all).into();
        }
        d["mean_key_bytes"] = (self.key_bytes as f64 / self.corpus.len().max(1) as f64).into();
        d["sorted_checked"] = self.checked.into();
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_run_expects_the_slow_large_sorts_to_outlast_their_budget() {
        let b = benches();
        let of = |id: &str| {
            let b = b.iter().find(|b| b.id() == id).expect(id);
            (b.budget(Profile::Default), b.expected(Profile::Default))
        };
        // ICU collation of 100 000 German words: ~0.24 s a sort, sorted to
        // check the order, calibrated and sampled in each of five rounds.
        let (budget, expected) = of("text.sort.icu.tertiary/de/n=100000");
        assert!(expected > budget * 3, "{expected:?} against {budget:?}");
        assert!(expected < budget * 20, "{expected:?} against {budget:?}");
        // A byte compare of the same: about its budget.
        let (budget, expected) = of("text.sort.bytes/de/n=100000");
        assert!(
            expected < budget.mul_f64(1.2),
            "{expected:?} against {budget:?}"
        );
        // Quick's sorts of 1 000 words: a second or two in all (the
        // per-call methods, ~15 ms a sort, outlast their 8 ms share).
        let quick: Duration = b
            .iter()
            .filter(|b| b.runs_at(Profile::Quick))
            .map(|b| b.expected(Profile::Quick))
            .sum();
        assert!(quick < Duration::from_secs(2), "{quick:?}");
    }

    #[test]
    fn ids_cover_every_method_language_and_size() {
        let b = benches();
        let per_lang = Method::all().len();
        let per_call = Method::all().iter().filter(|m| m.per_call()).count();
        let largest = LARGEST_LANGS.len() * LARGEST_METHODS.len();
        let large_sorts = SORT_SIZES
            .iter()
            .filter(|s| s.0 > PER_CALL_MAX_SORT && s.0 != LARGEST)
            .count();
        assert_eq!(
            b.len(),
            per_lang * Lang::ALL.len() * SORT_SIZES.len() + largest
                - per_call * Lang::ALL.len() * large_sorts
        );
        assert!(
            b.iter()
                .any(|b| b.id() == "text.sort.icu_keys.tertiary/sv/n=1000000")
        );
        assert!(b.iter().any(|b| b.id() == "text.cmp.icu.tertiary/sv"));
        assert!(b.iter().any(|b| b.id() == "text.sort.strxfrm/de/n=100000"));
        // Quick keeps its sorts small and few.
        let quick: Vec<_> = b
            .iter()
            .filter(|b| b.id().starts_with("text.sort") && b.runs_at(Profile::Quick))
            .collect();
        assert!(quick.iter().all(|b| b.id().ends_with("/n=1000")));
        assert_eq!(quick.len(), per_lang);
        assert!(quick.iter().all(|b| b.id().contains("/sv/")));
    }

    #[test]
    fn sorts_run_and_are_checked_in_order() {
        for m in [
            Method::AsciiFast,
            Method::Icu(Strength::Primary),
            Method::IcuKeys(Strength::Tertiary),
        ] {
            let mut t = prepare_sort(m, Lang::Sv, 300, &Memo::default()).unwrap();
            assert!(t.run(2).unwrap() > Duration::ZERO);
            let d = t.details().unwrap();
            assert_eq!(d["sorted_checked"], true, "{m:?}");
            assert_eq!(d["lang"], "sv");
        }
        let memo = Memo::default();
        let mut t = prepare_cmp(Method::LowerAlloc, Lang::Sv, &memo).unwrap();
        t.run(100).unwrap();
        let d = t.details().unwrap();
        assert_eq!(d["order_correct"], false);
        assert_eq!(d["first_wrong_pair"], json!(["åsna", "Älg"]));
        // A second round reuses the facts.
        assert_eq!(memo.lock().unwrap().as_ref(), Some(&d));
    }

    #[test]
    fn an_unsorted_result_is_an_error() {
        let e = verify_sorted(&[2, 1], |a: &i32, b| a.cmp(b), |x| x.to_string()).unwrap_err();
        assert!(e.to_string().contains("2 before 1"), "{e}");
    }
}
