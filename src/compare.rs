//! Comparing two runs, benchmark by benchmark, with an honest uncertainty.
//!
//! Method. For a benchmark present in both runs A and B with the same unit:
//!
//! - The point estimate is the ratio of medians, `median(B) / median(A)`, in
//!   the documents' base units (so for ns/op a ratio of 2 is twice as slow,
//!   for B/s and ops/s twice as fast).
//! - Its 95% confidence interval is a percentile bootstrap: the samples of A
//!   and of B are resampled independently with replacement
//!   ([`BOOTSTRAP_RESAMPLES`] times), the ratio of the two resampled medians
//!   is taken each time, and the 2.5th and 97.5th percentiles of those ratios
//!   are the bounds. The median is what every report shows, timings are not
//!   normally distributed, and the bootstrap assumes nothing about their
//!   shape. The random generator is seeded from the benchmark id, so the same
//!   two runs always give the same interval.
//! - When either side has fewer than [`MIN_BOOTSTRAP_SAMPLES`] samples (a
//!   document written without them), the interval is built from the stored
//!   CIs of the two medians instead: `[B.ci_low / A.ci_high, B.ci_high /
//!   A.ci_low]`, which is wider than a joint 95% interval (conservative).
//! - The verdict is about B relative to A, in time: ratios of throughputs and
//!   rates are inverted to time ratios first. B is *slower* when the whole
//!   interval lies above 1 and the time ratio exceeds `1 + threshold`;
//!   *faster* when the whole interval lies below 1 and the time ratio is below
//!   `1 / (1 + threshold)`; otherwise the two are the *same within noise*.
//!   The threshold (default [`DEFAULT_THRESHOLD`], the same 5% that marks a
//!   result noisy) keeps run-to-run drift that the samples of one run cannot
//!   see from being called a difference.
//! - The summary of an area is the geometric mean of its time ratios
//!   (B time / A time): the one mean of ratios that does not depend on which
//!   run is called A.

use serde::Serialize;

use crate::document::RunDoc;
use crate::harness::Measurement;
use crate::suites;

/// Resamples drawn for each bootstrap interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Fewest samples per side for the bootstrap; below it the stored CIs are used.
pub const MIN_BOOTSTRAP_SAMPLES: usize = 3;
/// Relative difference below which two results are the same (5%).
pub const DEFAULT_THRESHOLD: f64 = 0.05;

/// B relative to A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// B takes less time (or moves more) than A, beyond noise and threshold.
    Faster,
    /// B takes more time (or moves less) than A, beyond noise and threshold.
    Slower,
    /// No difference beyond noise and threshold.
    Same,
}

impl Verdict {
    /// The word shown in tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "same",
        }
    }
}

/// How a ratio's interval was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Percentile bootstrap on the samples.
    Bootstrap,
    /// Quotients of the stored CIs of the medians (samples missing).
    MedianCis,
}

/// One benchmark present in both runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The benchmark id.
    pub id: String,
    /// Its area.
    pub area: String,
    /// The base unit of `a` and `b`.
    pub unit: String,
    /// Median in run A.
    pub a: f64,
    /// Median in run B.
    pub b: f64,
    /// `b / a`.
    pub ratio: f64,
    /// Lower bound of the 95% CI of the ratio.
    pub ci_low: f64,
    /// Upper bound of the 95% CI of the ratio.
    pub ci_high: f64,
    /// B relative to A.
    pub verdict: Verdict,
    /// How the interval was obtained.
    pub method: CiMethod,
    /// True when A's result was marked noisy.
    pub noisy_a: bool,
    /// True when B's result was marked noisy.
    pub noisy_b: bool,
}

impl Row {
    /// The ratio of times, B over A (the ratio inverted for throughputs and rates).
    pub fn time_ratio(&self) -> f64 {
        if self.unit == "ns/op" {
            self.ratio
        } else {
            1.0 / self.ratio
        }
    }
}

/// The summary of one area (or of everything).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The area, or `all`.
    pub area: String,
    /// Benchmarks compared.
    pub n: usize,
    /// Geometric mean of the time ratios B/A (below 1: B faster).
    pub geomean_time_ratio: f64,
    /// Benchmarks where B is faster.
    pub faster: usize,
    /// Benchmarks where B is slower.
    pub slower: usize,
    /// Benchmarks that are the same within noise.
    pub same: usize,
}

/// A benchmark that cannot be compared although both runs have it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Incomparable {
    /// The benchmark id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// Two runs side by side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Run A: id, host, label.
    pub a: RunRef,
    /// Run B: id, host, label.
    pub b: RunRef,
    /// The threshold used for verdicts (0.05 = 5%).
    pub threshold: f64,
    /// Benchmarks in both runs, in A's order.
    pub rows: Vec<Row>,
    /// Per area, in A's order, then `all` when there are several areas.
    pub summaries: Vec<Summary>,
    /// Benchmark ids only in A.
    pub only_a: Vec<String>,
    /// Benchmark ids only in B.
    pub only_b: Vec<String>,
    /// In both but not comparable (different units, a zero median...).
    pub incomparable: Vec<Incomparable>,
}

/// Which run a side of a comparison is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRef {
    /// The run id.
    pub id: String,
    /// The host name.
    pub host: String,
    /// The user's label.
    pub label: Option<String>,
    /// Start time.
    pub started: String,
}

impl RunRef {
    /// Identifies the run of a document.
    pub fn of(doc: &RunDoc) -> RunRef {
        RunRef {
            id: doc.run.id.clone(),
            host: doc.host.hostname.clone(),
            label: doc.run.label.clone(),
            started: doc.run.started.clone(),
        }
    }

    /// `id on host (label)`.
    pub fn describe(&self) -> String {
        match &self.label {
            Some(l) => format!("{} on {} ({l})", self.id, self.host),
            None => format!("{} on {}", self.id, self.host),
        }
    }
}

/// Compares run B with run A over the benchmarks matching `patterns` (all
/// when empty). `threshold` is the smallest relative difference called one.
pub fn compare(a: &RunDoc, b: &RunDoc, patterns: &[String], threshold: f64) -> Comparison {
    let selected =
        |id: &str| patterns.is_empty() || patterns.iter().any(|p| suites::matches(p, id));
    let mut rows = Vec::new();
    let mut only_a = Vec::new();
    let mut incomparable = Vec::new();
    for ma in a.results.iter().filter(|m| selected(&m.id)) {
        let Some(mb) = b.results.iter().find(|m| m.id == ma.id) else {
            only_a.push(ma.id.clone());
            continue;
        };
        match compare_one(ma, mb, threshold) {
            Ok(row) => rows.push(row),
            Err(reason) => incomparable.push(Incomparable {
                id: ma.id.clone(),
                reason,
            }),
        }
    }
    let only_b = b
        .results
        .iter()
        .filter(|m| selected(&m.id) && !a.results.iter().any(|x| x.id == m.id))
        .map(|m| m.id.clone())
        .collect();
    let mut areas: Vec<String> = Vec::new();
    for r in &rows {
        if !areas.contains(&r.area) {
            areas.push(r.area.clone());
        }
    }
    let mut summaries: Vec<Summary> = areas
        .iter()
        .map(|area| summarise(area, rows.iter().filter(|r| &r.area == area)))
        .collect();
    if areas.len() > 1 {
        summaries.push(summarise("all", rows.iter()));
    }
    Comparison {
        a: RunRef::of(a),
        b: RunRef::of(b),
        threshold,
        rows,
        summaries,
        only_a,
        only_b,
        incomparable,
    }
}

/// Compares one benchmark; the error says why it cannot be compared.
pub fn compare_one(a: &Measurement, b: &Measurement, threshold: f64) -> Result<Row, String> {
    if a.unit != b.unit {
        return Err(format!("unit {} in A, {} in B", a.unit, b.unit));
    }
    if !(a.median > 0.0 && b.median > 0.0 && a.median.is_finite() && b.median.is_finite()) {
        return Err("a median is zero, negative or not finite".to_string());
    }
    let ratio = b.median / a.median;
    let usable = |s: &[f64]| s.len() >= MIN_BOOTSTRAP_SAMPLES && s.iter().all(|x| x.is_finite());
    let (ci_low, ci_high, method) = if usable(&a.samples) && usable(&b.samples) {
        let (lo, hi) = bootstrap_ratio_ci(&a.samples, &b.samples, seed_of(&a.id));
        (lo, hi, CiMethod::Bootstrap)
    } else if a.ci_low > 0.0 && a.ci_high > 0.0 {
        (
            b.ci_low / a.ci_high,
            b.ci_high / a.ci_low,
            CiMethod::MedianCis,
        )
    } else {
        (ratio, ratio, CiMethod::MedianCis)
    };
    // The interval always contains the point estimate.
    let (ci_low, ci_high) = (ci_low.min(ratio), ci_high.max(ratio));
    let higher_is_better = a.unit != "ns/op";
    let (t, t_lo, t_hi) = if higher_is_better {
        (1.0 / ratio, 1.0 / ci_high, 1.0 / ci_low)
    } else {
        (ratio, ci_low, ci_high)
    };
    Ok(Row {
        id: a.id.clone(),
        area: a.area.clone(),
        unit: a.unit.clone(),
        a: a.median,
        b: b.median,
        ratio,
        ci_low,
        ci_high,
        verdict: verdict(t, t_lo, t_hi, threshold),
        method,
        noisy_a: a.noisy,
        noisy_b: b.noisy,
    })
}

/// The verdict from a time ratio B/A and its interval.
pub fn verdict(t: f64, lo: f64, hi: f64, threshold: f64) -> Verdict {
    let limit = 1.0 + threshold.max(0.0);
    if lo > 1.0 && t > limit {
        Verdict::Slower
    } else if hi < 1.0 && t < 1.0 / limit {
        Verdict::Faster
    } else {
        Verdict::Same
    }
}

/// 95% percentile-bootstrap interval of `median(b) / median(a)`.
pub fn bootstrap_ratio_ci(a: &[f64], b: &[f64], seed: u64) -> (f64, f64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for x in ra.iter_mut() {
            *x = a[rng.usize(..a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.usize(..b.len())];
        }
        let r = median_in_place(&mut rb) / median_in_place(&mut ra);
        if r.is_finite() {
            ratios.push(r);
        }
    }
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    ratios.sort_by(f64::total_cmp);
    let q = |p: f64| crate::harness::stats::quantile_sorted(&ratios, p);
    (q(0.025), q(0.975))
}

/// The median of `v`, reordering it (linear time).
fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    let mid = n / 2;
    let (left, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *m;
    if n % 2 == 1 {
        upper
    } else {
        let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// A stable seed from a benchmark id (FNV-1a).
fn seed_of(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn summarise<'a>(area: &str, rows: impl Iterator<Item = &'a Row>) -> Summary {
    let mut s = Summary {
        area: area.to_string(),
        n: 0,
        geomean_time_ratio: f64::NAN,
        faster: 0,
        slower: 0,
        same: 0,
    };
    let mut log_sum = 0.0;
    for r in rows {
        s.n += 1;
        log_sum += r.time_ratio().ln();
        match r.verdict {
            Verdict::Faster => s.faster += 1,
            Verdict::Slower => s.slower += 1,
            Verdict::Same => s.same += 1,
        }
    }
    if s.n > 0 {
        s.geomean_time_ratio = (log_sum / s.n as f64).exp();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_in_place_handles_odd_and_even() {
        assert_eq!(median_in_place(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_in_place(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median_in_place(&mut [5.0]), 5.0);
    }

    #[test]
    fn bootstrap_of_identical_samples_is_a_point() {
        let a = [10.0; 20];
        assert_eq!(bootstrap_ratio_ci(&a, &a, 1), (1.0, 1.0));
    }

    #[test]
    fn bootstrap_interval_brackets_a_known_ratio() {
        let mut rng = fastrand::Rng::with_seed(3);
        let a: Vec<f64> = (0..40).map(|_| 100.0 + rng.f64() * 10.0).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 2.0).collect();
        let (lo, hi) = bootstrap_ratio_ci(&a, &b, 9);
        assert!(lo <= 2.0 + 1e-9 && hi >= 2.0 - 1e-9, "{lo}..{hi}");
        assert!(lo > 1.8 && hi < 2.2, "{lo}..{hi}");
    }

    #[test]
    fn verdicts_respect_threshold_and_interval() {
        assert_eq!(verdict(2.0, 1.9, 2.1, 0.05), Verdict::Slower);
        assert_eq!(verdict(0.5, 0.45, 0.55, 0.05), Verdict::Faster);
        // Interval includes 1: same.
        assert_eq!(verdict(1.5, 0.9, 2.0, 0.05), Verdict::Same);
        // Beyond noise but below the threshold: same.
        assert_eq!(verdict(1.02, 1.01, 1.03, 0.05), Verdict::Same);
        assert_eq!(verdict(1.02, 1.01, 1.03, 0.0), Verdict::Slower);
    }

    #[test]
    fn seeds_are_stable() {
        assert_eq!(seed_of("a"), seed_of("a"));
        assert_ne!(seed_of("a"), seed_of("b"));
    }
}
