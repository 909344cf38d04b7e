//! Robust statistics of a set of samples, and the constants of the
//! statistics (`Z95`, `MAD_TO_SIGMA`), one home each.
//!
//! The bottom layer: pure functions of numbers, no benchmark, run or
//! report; the harness, the analyses and the reports all build on it.
//!
//! Timings on a shared machine have long right tails (an interrupt, a
//! migration, a neighbour's burst), so the centre is the median, the spread
//! is the MAD and the quantiles, and the uncertainty is a distribution-free
//! confidence interval of the median (order statistics of the binomial),
//! which assumes nothing about the shape of the distribution.

pub mod ranksum;
pub mod stages;

use serde::{Deserialize, Serialize};

/// CI half-width (relative to the median) above which a result is noisy.
pub const NOISE_THRESHOLD: f64 = 0.05;

/// The normal quantile of a two-sided 95% interval, Φ⁻¹(0.975).
pub const Z95: f64 = 1.959_963_985;
/// The normal quantile one-sided at 80%: the power the minimal detectable
/// effects are stated at.
pub const Z80: f64 = 0.841_621_234;

/// MAD × this estimates the standard deviation of normal data (1 / Φ⁻¹(0.75)).
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// Descriptive statistics of one set of samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    #[serde(default)]
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    #[serde(default)]
    pub stddev: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
    /// Lower bound of the 95% CI of the median.
    pub ci_low: f64,
    /// Upper bound of the 95% CI of the median.
    pub ci_high: f64,
    /// Coefficient of variation (stddev / mean; 0 when the mean is 0).
    pub cv: f64,
    /// Tukey outlier counts.
    pub outliers: Outliers,
}

/// Counts of samples outside Tukey's fences.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outliers {
    /// Below Q1 - 3 IQR.
    pub low_severe: usize,
    /// Between Q1 - 3 IQR and Q1 - 1.5 IQR.
    pub low_mild: usize,
    /// Between Q3 + 1.5 IQR and Q3 + 3 IQR.
    pub high_mild: usize,
    /// Above Q3 + 3 IQR.
    pub high_severe: usize,
}

impl Summary {
    /// Computes the statistics; `None` for an empty or non-finite input.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = quantile_sorted(&s, 0.5);
        let mean = s.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let mut dev: Vec<f64> = s.iter().map(|x| (x - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let (ci_low, ci_high) = median_ci_sorted(&s);
        Some(Summary {
            n,
            median,
            min: s[0],
            max: s[n - 1],
            mean,
            stddev,
            p5: quantile_sorted(&s, 0.05),
            p95: quantile_sorted(&s, 0.95),
            mad: quantile_sorted(&dev, 0.5),
            ci_low,
            ci_high,
            cv: if mean != 0.0 {
                stddev / mean.abs()
            } else {
                0.0
            },
            outliers: tukey_sorted(&s),
        })
    }

    /// The summary of samples that all equal `v` (also a non-finite `v`).
    pub fn constant(v: f64) -> Summary {
        Summary {
            n: 1,
            median: v,
            min: v,
            max: v,
            mean: v,
            stddev: 0.0,
            p5: v,
            p95: v,
            mad: 0.0,
            ci_low: v,
            ci_high: v,
            cv: 0.0,
            outliers: Outliers::default(),
        }
    }

    /// Half-width of the CI relative to the median (0.05 = ±5%).
    pub fn ci_rel(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            ((self.ci_high - self.ci_low) / 2.0 / self.median).abs()
        }
    }

    /// True when the interval is wider than the noise rule allows
    /// ([`NOISE_THRESHOLD`]).
    pub fn is_noisy(&self) -> bool {
        self.ci_rel() > NOISE_THRESHOLD
    }
}

/// Quantile `q` (0..=1) of sorted data, linear interpolation between order
/// statistics (the "type 7" definition used by R and NumPy by default).
pub fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    assert!(!s.is_empty(), "quantile of no data");
    let q = q.clamp(0.0, 1.0);
    let h = (s.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// Quantile `q` of unsorted data (sorts a copy); `None` when empty.
pub fn quantile(data: &[f64], q: f64) -> Option<f64> {
    if data.is_empty() {
        return None;
    }
    let mut s = data.to_vec();
    s.sort_by(f64::total_cmp);
    Some(quantile_sorted(&s, q))
}

/// The standard normal distribution function Φ(z) (Abramowitz and Stegun
/// 7.1.26 through erf: within 1.5e-7, ample for ranks and powers).
pub fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + y)
    } else {
        0.5 * (1.0 - y)
    }
}

/// The standard normal quantile Φ⁻¹(p) for 0 < p < 1, by bisection of
/// [`normal_cdf`] (to 1e-9; infinite at 0 and 1).
pub fn normal_quantile(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    while hi - lo > 1e-9 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Median of unsorted data; `None` when empty.
pub fn median(data: &[f64]) -> Option<f64> {
    quantile(data, 0.5)
}

/// Distribution-free 95% confidence interval of the median from sorted data.
///
/// The number of samples below the true median is Binomial(n, 1/2); the
/// interval is [x(j), x(k)] with the widest j such that P(B < j) <= 2.5%,
/// k = n + 1 - j (1-based ranks). Exact for n <= 1000, normal approximation
/// beyond. With fewer than 6 samples no interval reaches 95%, and the range
/// of the data is returned.
pub fn median_ci_sorted(s: &[f64]) -> (f64, f64) {
    let n = s.len();
    if n < 6 {
        return (s[0], s[n - 1]);
    }
    let j = if n <= 1000 {
        // Largest j (1-based) with P(B <= j - 1) <= 0.025.
        let mut cdf = 0.0;
        let mut pmf = 0.5f64.powi(n as i32);
        let mut j = 0usize;
        for i in 0..n {
            if cdf + pmf > 0.025 {
                break;
            }
            cdf += pmf;
            j = i + 1;
            pmf *= (n - i) as f64 / (i + 1) as f64;
        }
        j.max(1)
    } else {
        let nf = n as f64;
        ((nf / 2.0 - Z95 * nf.sqrt() / 2.0).floor() as usize).max(1)
    };
    let k = n + 1 - j;
    (s[j - 1], s[k - 1])
}

/// Two-sided 95% quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The 97.5th percentile of Student's t with `df` degrees of freedom (a
/// fractional `df`, as Welch's test gives, interpolates in 1/df; beyond 30
/// the Cornish-Fisher expansion around the normal quantile).
pub fn t975(df: f64) -> f64 {
    t_quantile(&T975, Z95, df)
}

/// A quantile of Student's t from its table for 1..=30 degrees of freedom
/// (interpolated in 1/df) and, beyond 30, the Cornish-Fisher expansion
/// around the normal quantile `z`.
fn t_quantile(table: &[f64; 30], z: f64, df: f64) -> f64 {
    let df = df.max(1.0);
    if df <= 30.0 {
        let lo = df.floor() as usize;
        let hi = df.ceil() as usize;
        if lo == hi {
            return table[lo - 1];
        }
        let w = (1.0 / lo as f64 - 1.0 / df) / (1.0 / lo as f64 - 1.0 / hi as f64);
        return table[lo - 1] + w * (table[hi - 1] - table[lo - 1]);
    }
    cornish_fisher(z, df)
}

/// Student's t quantile with `df` degrees of freedom from the normal
/// quantile `z` at the same probability: the Cornish-Fisher expansion to
/// its fourth term (within 0.1% of the exact quantile from 10 degrees of
/// freedom on, up to the 99.9th percentile).
fn cornish_fisher(z: f64, df: f64) -> f64 {
    z + (z.powi(3) + z) / (4.0 * df)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * df * df)
        + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / (384.0 * df.powi(3))
}

/// The two-sided critical value of Student's t at level `alpha` (2.23 at
/// 0.05 and 10 degrees of freedom): [`t975`] at 0.05, otherwise the
/// Cornish-Fisher expansion, meant for 10 degrees of freedom or more (a
/// Bonferroni level shared by several tests).
pub fn t_two_sided(alpha: f64, df: f64) -> f64 {
    if (alpha - 0.05).abs() < 1e-12 {
        return t975(df);
    }
    cornish_fisher(normal_quantile(1.0 - alpha / 2.0), df.max(1.0))
}

/// One-sided 80% quantiles of Student's t for 1..=30 degrees of freedom.
const T80: [f64; 30] = [
    1.3764, 1.0607, 0.9785, 0.9410, 0.9195, 0.9057, 0.8960, 0.8889, 0.8834, 0.8791, 0.8755, 0.8726,
    0.8702, 0.8681, 0.8662, 0.8647, 0.8633, 0.8620, 0.8610, 0.8600, 0.8591, 0.8583, 0.8575, 0.8569,
    0.8562, 0.8557, 0.8551, 0.8546, 0.8542, 0.8538,
];

/// The 80th percentile of Student's t with `df` degrees of freedom
/// (interpolated in 1/df like [`t975`]; beyond 30 the Cornish-Fisher
/// expansion around [`Z80`]).
pub fn t80(df: f64) -> f64 {
    t_quantile(&T80, Z80, df)
}

/// The mean of `values` and the half-width of its 95% interval (Student's
/// t on n − 1 degrees of freedom); `None` with fewer than two.
pub fn mean_half_width(values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, t975(n - 1.0) * (var / n).sqrt()))
}

/// Mean and sample variance of the logarithms of positive values; `None`
/// with fewer than two or any value that is not positive and finite.
pub fn log_mean_var(values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 2 || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, var))
}

/// The 95% interval of a run's estimate `point` from the medians of its
/// independent rounds: `point · exp(±t · s / √R)`, `s` the standard
/// deviation of the rounds' log medians and `t` Student's with `R - 1`
/// degrees of freedom. Rounds are the top level of variation a run can see
/// (each has its own set-up, calibration and time slot), so this is the
/// interval that has to hold from one run to the next (Kalibera & Jones).
/// `None` with fewer than two rounds.
pub fn round_interval(round_medians: &[f64], point: f64) -> Option<(f64, f64)> {
    let (_, var) = log_mean_var(round_medians)?;
    let r = round_medians.len() as f64;
    let hw = t975(r - 1.0) * (var / r).sqrt();
    Some((point * (-hw).exp(), point * hw.exp()))
}

/// The interval `(lo, hi)` around `point` with `extra` (a half-width on
/// the log scale) added in quadrature to each side's own: a second,
/// independent source of variation (the spread between runs) on top of
/// the one the interval came from. An end at 0 or infinity stays.
pub fn widen_interval(point: f64, (lo, hi): (f64, f64), extra: f64) -> (f64, f64) {
    if !(point > 0.0 && point.is_finite()) {
        return (lo, hi);
    }
    let side = |end: f64| (end / point).ln().abs().hypot(extra);
    let lo = if lo > 0.0 {
        point * (-side(lo)).exp()
    } else {
        lo
    };
    let hi = if hi.is_finite() {
        point * side(hi).exp()
    } else {
        hi
    };
    (lo, hi)
}

/// Tukey's fences on sorted data: mild beyond 1.5 IQR, severe beyond 3 IQR.
pub fn tukey_sorted(s: &[f64]) -> Outliers {
    let q1 = quantile_sorted(s, 0.25);
    let q3 = quantile_sorted(s, 0.75);
    let iqr = q3 - q1;
    let mut o = Outliers::default();
    for &x in s {
        if x < q1 - 3.0 * iqr {
            o.low_severe += 1;
        } else if x < q1 - 1.5 * iqr {
            o.low_mild += 1;
        } else if x > q3 + 3.0 * iqr {
            o.high_severe += 1;
        } else if x > q3 + 1.5 * iqr {
            o.high_mild += 1;
        }
    }
    o
}

/// True when the data has two well-separated modes, each holding at least
/// 10% of the values, the upper at least twice the lower with an empty gap
/// between them (as cross-CPU vs same-CPU wake-ups produce).
///
/// Method: sort, look at the largest ratio between neighbours in log space
/// among splits that leave >= 10% on each side; bimodal when that jump is
/// >= 2x and larger than the spread inside each side.
pub fn is_bimodal(data: &[f64]) -> bool {
    let mut s: Vec<f64> = data.iter().copied().filter(|x| *x > 0.0).collect();
    if s.len() < 20 {
        return false;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let lo_min = n / 10;
    let mut best = (1.0f64, 0usize);
    for i in lo_min.max(1)..=(n - lo_min.max(1)) {
        if i == 0 || i >= n {
            continue;
        }
        let r = s[i] / s[i - 1];
        if r > best.0 {
            best = (r, i);
        }
    }
    let (ratio, split) = best;
    if ratio < 2.0 {
        return false;
    }
    // Each cluster must be tight compared with the gap: its p10..p90 span
    // smaller than the jump between clusters.
    let lower = &s[..split];
    let upper = &s[split..];
    let spread = |c: &[f64]| quantile_sorted(c, 0.9) / quantile_sorted(c, 0.1);
    spread(lower) < ratio * 4.0 && spread(upper) < ratio * 4.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let d: Vec<f64> = (1..=10).map(f64::from).collect();
        // numpy.percentile([1..10], 5) = 1.45, 95 -> 9.55, 25 -> 3.25
        assert!(close(quantile(&d, 0.05).unwrap(), 1.45));
        assert!(close(quantile(&d, 0.95).unwrap(), 9.55));
        assert!(close(quantile(&d, 0.25).unwrap(), 3.25));
        assert!(close(quantile(&d, 0.0).unwrap(), 1.0));
        assert!(close(quantile(&d, 1.0).unwrap(), 10.0));
    }

    #[test]
    fn summary_of_known_samples() {
        let d = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Summary::of(&d).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.median, 4.5));
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        // sample stddev: sqrt(32/7)
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt()));
        // |x - 4.5| = 2.5 .5 .5 .5 .5 .5 2.5 4.5 -> median 0.5
        assert!(close(s.mad, 0.5));
        assert!(close(s.cv, s.stddev / 5.0));
    }

    #[test]
    fn summary_rejects_empty_and_non_finite() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        assert!(Summary::of(&[1.0, f64::INFINITY]).is_none());
    }

    #[test]
    fn median_ci_matches_binomial_tables() {
        // For n = 10 the 95% CI of the median is [x(2), x(9)] (coverage 97.9%).
        let d: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median_ci_sorted(&d), (2.0, 9.0));
        // n = 20: [x(6), x(15)].
        let d: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_ci_sorted(&d), (6.0, 15.0));
        // n = 100: [x(40), x(61)].
        let d: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median_ci_sorted(&d), (40.0, 61.0));
        // Too few samples: the range.
        assert_eq!(median_ci_sorted(&[1.0, 2.0, 3.0]), (1.0, 3.0));
    }

    #[test]
    fn median_ci_large_n_uses_normal_approximation_and_contains_median() {
        let d: Vec<f64> = (1..=5000).map(f64::from).collect();
        let (lo, hi) = median_ci_sorted(&d);
        assert!(lo < 2500.5 && hi > 2500.5);
        // half-width ~ 1.96 * sqrt(n) / 2 ~ 69 ranks
        assert!((hi - lo) > 120.0 && (hi - lo) < 160.0, "{lo}..{hi}");
    }

    #[test]
    fn ci_of_identical_samples_is_a_point() {
        let s = Summary::of(&[7.0; 30]).unwrap();
        assert_eq!((s.ci_low, s.median, s.ci_high), (7.0, 7.0, 7.0));
        assert_eq!(s.ci_rel(), 0.0);
        assert_eq!(s.outliers, Outliers::default());
    }

    #[test]
    fn t80_is_continuous_at_30_and_tends_to_the_normal() {
        assert!((t80(30.0) - t80(30.000_001)).abs() < 1e-3);
        assert!((t80(1e6) - Z80).abs() < 1e-5);
        assert!((t80(2.5) - 1.0607).abs() < 0.05 && t80(2.5) < 1.0607);
    }

    #[test]
    fn t_quantiles_match_tables() {
        assert!(close(t975(1.0), 12.706));
        assert!(close(t975(4.0), 2.776));
        assert!((t975(60.0) - 2.000).abs() < 0.002, "{}", t975(60.0));
        assert!((t975(120.0) - 1.980).abs() < 0.002);
        // Fractional df lies between its neighbours.
        let t = t975(4.5);
        assert!(t < 2.776 && t > 2.571, "{t}");
        // Other levels (exact quantiles from a statistics table).
        assert_eq!(t_two_sided(0.05, 4.0), t975(4.0));
        for (alpha, df, exact) in [
            (0.01, 10.0, 3.1693),
            (0.005, 10.0, 3.5814),
            (0.01, 130.0, 2.6142),
        ] {
            let t = t_two_sided(alpha, df);
            assert!((t / exact - 1.0).abs() < 1e-3, "{alpha} {df}: {t}");
        }
    }

    #[test]
    fn normal_quantiles_match_tables_and_invert_the_cdf() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((normal_quantile(0.9) - 1.281_552).abs() < 1e-5);
        assert!(normal_quantile(0.5).abs() < 1e-6);
        assert!((normal_cdf(normal_quantile(0.01)) - 0.01).abs() < 1e-7);
        assert_eq!(normal_quantile(1.0), f64::INFINITY);
    }

    #[test]
    fn a_second_source_widens_each_side_in_quadrature() {
        let (lo, hi) = widen_interval(
            100.0,
            (100.0 * (-0.03f64).exp(), 100.0 * 0.04f64.exp()),
            0.04,
        );
        assert!(close((100.0 / lo).ln(), 0.05) && close((hi / 100.0).ln(), 0.04f64.hypot(0.04)));
        // no width of its own: the second source alone; open ends stay open
        assert_eq!(
            widen_interval(100.0, (0.0, f64::INFINITY), 0.1),
            (0.0, f64::INFINITY)
        );
        let (lo, _) = widen_interval(100.0, (100.0, 100.0), 0.1);
        assert!(close(lo, 100.0 * (-0.1f64).exp()));
    }

    #[test]
    fn a_means_half_width_is_students_and_needs_two_values() {
        assert!(mean_half_width(&[1.0]).is_none());
        let (m, hw) = mean_half_width(&[1.0, 2.0, 3.0]).unwrap();
        assert!(close(m, 2.0) && (hw - t975(2.0) * (1.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_half_width(&[0.5, 0.5]), Some((0.5, 0.0)));
    }

    #[test]
    fn round_interval_widens_with_round_spread_and_needs_two_rounds() {
        assert!(round_interval(&[100.0], 100.0).is_none());
        let (lo, hi) = round_interval(&[100.0, 100.0, 100.0], 100.0).unwrap();
        assert!(close(lo, 100.0) && close(hi, 100.0));
        let tight = round_interval(&[99.0, 100.0, 101.0], 100.0).unwrap();
        let wide = round_interval(&[90.0, 100.0, 110.0], 100.0).unwrap();
        assert!(tight.0 < 100.0 && tight.1 > 100.0);
        assert!(wide.1 - wide.0 > 5.0 * (tight.1 - tight.0));
    }

    /// A two-level model: each run has its rounds, and a slow phase of the
    /// machine makes some rounds 25% slower. The interval from rounds must
    /// hold another run's estimate about as often as it says; the interval
    /// from the samples of one run (the old method) must not.
    #[test]
    fn round_interval_covers_other_runs_in_a_two_level_model_with_slow_phases() {
        let mut rng = fastrand::Rng::with_seed(11);
        let rounds = 5;
        let per_round = 8;
        let run = |rng: &mut fastrand::Rng| {
            let mut medians = Vec::new();
            let mut all = Vec::new();
            for _ in 0..rounds {
                // Round level: a slow phase 20% of the time, ±3% otherwise.
                let slow = if rng.f64() < 0.2 { 1.25 } else { 1.0 };
                let level = 100.0 * slow * (1.0 + 0.03 * (rng.f64() * 2.0 - 1.0));
                let s: Vec<f64> = (0..per_round)
                    .map(|_| level * (1.0 + 0.01 * (rng.f64() * 2.0 - 1.0)))
                    .collect();
                medians.push(median(&s).unwrap());
                all.extend(s);
            }
            let point = median(&all).unwrap();
            let by_rounds = round_interval(&medians, point).unwrap();
            let by_samples = Summary::of(&all).unwrap();
            (point, by_rounds, (by_samples.ci_low, by_samples.ci_high))
        };
        let runs: Vec<_> = (0..200).map(|_| run(&mut rng)).collect();
        let (mut hit_rounds, mut hit_samples, mut total) = (0, 0, 0);
        for (i, a) in runs.iter().enumerate() {
            let b = &runs[(i + 1) % runs.len()];
            total += 1;
            hit_rounds += usize::from(a.1.0 <= b.0 && b.0 <= a.1.1);
            hit_samples += usize::from(a.2.0 <= b.0 && b.0 <= a.2.1);
        }
        let rounds_rate = hit_rounds as f64 / total as f64;
        let samples_rate = hit_samples as f64 / total as f64;
        assert!(rounds_rate >= 0.8, "round intervals hold {rounds_rate}");
        assert!(
            samples_rate < rounds_rate,
            "{samples_rate} vs {rounds_rate}"
        );
    }

    #[test]
    fn tukey_counts_mild_and_severe() {
        // q1 = 3.25, q3 = 7.75 (type 7 on 1..=10 plus outliers changes them), so build explicitly.
        let mut d: Vec<f64> = (1..=20).map(f64::from).collect(); // q1 5.75, q3 15.25, iqr 9.5
        d.push(35.0); // > q3 + 1.5 iqr (29.5)... recomputed below
        d.push(100.0); // far beyond 3 iqr
        d.push(-60.0); // far below
        d.sort_by(f64::total_cmp);
        let q1 = quantile_sorted(&d, 0.25);
        let q3 = quantile_sorted(&d, 0.75);
        let iqr = q3 - q1;
        assert!(35.0 > q3 + 1.5 * iqr && 35.0 < q3 + 3.0 * iqr, "{q1} {q3}");
        let o = tukey_sorted(&d);
        assert_eq!(o.high_mild, 1);
        assert_eq!(o.high_severe, 1);
        assert_eq!(o.low_severe, 1);
        assert_eq!(o.low_mild, 0);
    }

    #[test]
    fn bimodal_detects_two_clusters_and_not_one() {
        let mut rng = fastrand::Rng::with_seed(7);
        let one: Vec<f64> = (0..200).map(|_| 1000.0 + rng.f64() * 200.0).collect();
        assert!(!is_bimodal(&one));
        let mut two = one.clone();
        two.extend((0..100).map(|_| 30_000.0 + rng.f64() * 5000.0));
        assert!(is_bimodal(&two));
        // A long tail of a few stragglers is not a second mode.
        let mut tail = one.clone();
        tail.extend([20_000.0, 40_000.0, 90_000.0]);
        assert!(!is_bimodal(&tail));
    }
}
