//! Trends: when a host's costs changed in its history, and what changed
//! in its description then.
//!
//! A series is one benchmark's results on one host at one profile, in the
//! order the runs started. Its change points are found by binary
//! segmentation on the logarithms of the medians, each split tested by a
//! permutation test, as in the change-point detection MongoDB runs on its
//! performance history (Daly et al., ICPE 2020) and its open-source
//! descendant Hunter / Apache Otava, with a rank statistic: the noise is
//! the series' own, and no run's interval is trusted. At the quick profile
//! a run's own interval is typically twice the series' run-to-run spread
//! and barely tracks how far the run strays, and the outlier runs of a
//! shared machine fall on the same runs across series: weights drawn from
//! the intervals let one stray run with a narrow interval cancel a whole
//! step, and a mean lets it move the segment (docs/statistics.md, "Trend's
//! method"; the figures in docs/notes/trend.md).
//!
//! - Statistic: for a split of a segment at `k`, the Mann–Whitney rank
//!   sum of the runs before it, standardised (`z`); the segment's
//!   statistic is the largest `|z|` over `k`, each side at least
//!   [`Method::min_segment`] runs. An outlier run moves a rank by at most
//!   the segment's length, whatever its size.
//! - Test: the same maximum over [`Method::permutations`] seeded shuffles of
//!   the segment's ranks; the split stands when `p ≤ α` ([`Method::alpha`]).
//!   Accepted splits are searched again on either side.
//! - A change, not a wobble: the Hodges–Lehmann shift (the median of all
//!   differences after − before) must lie, with its distribution-free 95%
//!   interval, wholly beyond ±[`Method::min_change`] (3%, as `compare` has
//!   a threshold): on a shared machine, some benchmarks move by a percent
//!   or two between runs for reasons no host fact records.
//! - A step, not a drift: the shift of the [`Method::window`] runs just
//!   before the split against those just after it must go the same way and
//!   be at least 70% of the shift of the segment's two sides. A slow drift
//!   makes the halves differ but not neighbouring runs.
//! - Two modes and a step: a series whose runs alternate between two
//!   levels far apart (`two_modes`: `syscall.function_call` at 0.87 or
//!   1.08 ns) is analysed as each run's distance from its own level, so a
//!   step that moves both is seen at the noise within the levels; a split
//!   of it stands only with both levels on both sides.
//! - Each change point's ratio (after / before, in the values' own unit) is
//!   the Hodges–Lehmann shift between the segments on either side, with
//!   its 95% interval.
//! - What a series can see: its noise is the robust spread of successive
//!   runs (`1.4826 · MAD / √2` of their differences: a step or an outlier
//!   run moves one or two differences, not the MAD), and its smallest
//!   detectable step ([`min_step`]) the step it would find about 9 times in 10,
//!   with a third of its runs after it, at its length and noise.
//! - What changed: the facts of the host description (those the fleet view
//!   compares, the run's settings among them, plus kernel, command line,
//!   libc and opcost's version and commit) whose most common value differs
//!   between the window before and the window after.
//! - Known splits: where a recorded fact of the host changed between two
//!   runs of a series (a kernel, a command line, an environment variable
//!   such as `GLIBC_TUNABLES`, a cgroup limit: [`fact_changes`]), the run
//!   after it is a candidate split, tested on its own before the scan
//!   ([`change_points_at`]): the standardised Mann–Whitney statistic at
//!   that run only, between the neighbouring candidates, accepted at
//!   `α/(2m)` for `m` candidates with the Hodges–Lehmann shift beyond
//!   ±[`Method::min_change`]. With no maximum over splits to pay for, a
//!   step there is found at a smaller size than the scan finds it. The
//!   scan then looks for steps nothing recorded at `α/2` (at `α` in a
//!   series without a candidate, which is analysed as before).
//!
//! Pure: no store, no suite. A history reaches it through one builder,
//! [`History`]: the store's rows (`opcost trend`, `opcost fleet`) and the
//! documents of a report alike.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::document::RunDoc;
use crate::host::Host;
use crate::stats::{MAD_TO_SIGMA, Z95, median, normal_quantile};
use crate::units::BaseUnit;

/// The least share of the shift of a segment's two sides that the runs
/// next to a split must show for it to be a step (true steps of the kept
/// histories show 0.73 to 2.7 of it).
const STEP_SHARE: f64 = 0.7;
/// How often each of the rules (rank test, 3% gate, step check) must pass
/// a step for it to count as one the series can see ([`min_step`]): with
/// three rules, the step is then found about 9 times in 10.
const POWER: f64 = 0.95;
/// Shuffles that set a length's critical value of the statistic
/// ([`critical`]).
const CRITICAL_SHUFFLES: usize = 999;

/// How change points are found.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Method {
    /// The level: a split the scan finds stands when its permutation
    /// test's p ≤ alpha (alpha/2 in a series with candidate splits, each
    /// of whose m is tested at alpha/(2m): [`change_points_at`]).
    pub alpha: f64,
    /// Shuffles per test.
    pub permutations: usize,
    /// Fewest runs on either side of a split.
    pub min_segment: usize,
    /// Runs on either side whose shift must show the step (the step check).
    pub window: usize,
    /// The smallest change reported (0.03 = 3%): a change point's 95%
    /// interval must lie wholly beyond it. Machines drift by a percent or
    /// two between runs for reasons no host fact records.
    pub min_change: f64,
    /// The seed of the shuffles (each series mixes in its own id).
    pub seed: u64,
}

impl Default for Method {
    fn default() -> Method {
        Method {
            alpha: 0.05,
            permutations: 499,
            min_segment: 3,
            window: 5,
            min_change: 0.03,
            seed: 0x74_7265_6e64,
        }
    }
}

impl Method {
    /// Fewest runs a series needs for a change point to be found in it.
    pub fn min_runs(&self) -> usize {
        2 * self.min_segment.max(1)
    }
}

/// One run's result in a series.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The median (base unit).
    pub median: f64,
    /// Its 95% interval.
    pub ci_low: f64,
    /// Its 95% interval.
    pub ci_high: f64,
}

/// A change point found in a series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Split {
    /// Index of the first point after it.
    pub index: usize,
    /// After / before (the Hodges–Lehmann shift of the segments either side).
    pub ratio: f64,
    /// 95% interval of the ratio.
    pub ci_low: f64,
    /// 95% interval of the ratio.
    pub ci_high: f64,
    /// The test's p-value: the permutation test's for a split the scan
    /// found, the rank-sum test's at the split for a known one.
    pub p: f64,
    /// True when the split is at a run where a recorded fact changed and
    /// was tested there alone ([`change_points_at`]).
    pub recorded: bool,
}

/// The log medians of a series.
fn logs(points: &[Point]) -> Vec<f64> {
    points
        .iter()
        .map(|p| p.median.max(f64::MIN_POSITIVE).ln())
        .collect()
}

/// The change points of a series, oldest first; `None` when it has fewer
/// points than [`Method::min_runs`]. No split is known beforehand: the
/// scan alone, at [`Method::alpha`].
pub fn change_points(points: &[Point], method: &Method, seed: u64) -> Option<Vec<Split>> {
    change_points_at(points, method, seed, &[])
}

/// The change points of a series given the runs where a recorded fact of
/// the host changed (`candidates`: the index of the first run after each
/// change), oldest first; `None` when it has fewer points than
/// [`Method::min_runs`].
///
/// Each candidate with [`Method::min_segment`] runs on either side is
/// tested on its own ([`known_splits`]) at `alpha / (2m)` for `m` such
/// candidates; the scan then searches the segments between the accepted
/// ones for steps nothing recorded, at `alpha / 2` (at `alpha` when there
/// is no candidate, so a series without one is analysed as before).
pub fn change_points_at(
    points: &[Point],
    method: &Method,
    seed: u64,
    candidates: &[usize],
) -> Option<Vec<Split>> {
    if points.len() < method.min_runs() {
        return None;
    }
    let raw = logs(points);
    // A series that sits at one of two levels from run to run is analysed
    // as its distance from each run's own level: a step then moves both.
    let modes = two_modes(&raw);
    let x = match &modes {
        Some(m) => m.residuals(&raw),
        None => raw,
    };
    let known = known_splits(&x, modes.as_ref(), method, candidates);
    let scan = Method {
        alpha: if testable(candidates, x.len(), method).is_empty() {
            method.alpha
        } else {
            method.alpha / 2.0
        },
        ..*method
    };
    let mut rng = fastrand::Rng::with_seed(method.seed ^ seed);
    let mut cuts: Vec<(usize, f64, bool)> = known.iter().map(|&(k, p)| (k, p, true)).collect();
    let mut todo: Vec<(usize, usize)> = std::iter::once(0)
        .chain(known.iter().map(|c| c.0))
        .zip(known.iter().map(|c| c.0).chain(std::iter::once(x.len())))
        .collect();
    while let Some((a, b)) = todo.pop() {
        let seg = &x[a..b];
        let mut r = ranks(seg);
        let Some((k, z)) = best_split(&r, scan.min_segment) else {
            continue;
        };
        let k = locate(seg, k, scan.min_segment, scan.window);
        if !is_step(seg, k, scan.window) {
            continue;
        }
        if modes
            .as_ref()
            .is_some_and(|m| !m.on_both_sides(a, a + k, b))
        {
            continue;
        }
        let (_, lo, hi) = hodges_lehmann(&seg[..k], &seg[k..]);
        let gate = (1.0 + scan.min_change).ln();
        if !(lo > gate || hi < -gate) {
            continue;
        }
        let p = permutation_p(&mut r, z, &scan, &mut rng);
        if p > scan.alpha {
            continue;
        }
        cuts.push((a + k, p, false));
        todo.push((a, a + k));
        todo.push((a + k, b));
    }
    cuts.sort_by_key(|c| c.0);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(cuts.iter().map(|c| c.0))
        .chain(std::iter::once(x.len()))
        .collect();
    Some(
        cuts.iter()
            .enumerate()
            .map(|(i, &(k, p, recorded))| {
                let (d, lo, hi) = hodges_lehmann(&x[bounds[i]..k], &x[k..bounds[i + 2]]);
                Split {
                    index: k,
                    ratio: d.exp(),
                    ci_low: lo.exp(),
                    ci_high: hi.exp(),
                    p,
                    recorded,
                }
            })
            .collect(),
    )
}

/// The candidates that can be tested: sorted, distinct, each with
/// [`Method::min_segment`] runs before and after it in a series of `n`.
fn testable(candidates: &[usize], n: usize, method: &Method) -> Vec<usize> {
    let min = method.min_segment.max(1);
    let mut c: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&k| k >= min && k + min <= n)
        .collect();
    c.sort_unstable();
    c.dedup();
    c
}

/// The known splits that stand: each testable candidate `k` (of `m`) is
/// tested on the segment from the nearest candidate before it to the
/// nearest after it (each at least [`Method::min_segment`] runs away; the
/// series' ends otherwise), by the standardised Mann–Whitney statistic at
/// `k` alone ([`crate::stats::ranksum::split_p`]: no maximum over splits is
/// taken, so no power is spent on the search), accepted at
/// `p ≤ alpha / (2m)` when the Hodges–Lehmann shift of the two sides lies
/// beyond ±[`Method::min_change`] (and, in a two-level series, both levels
/// occur on both sides). Returns `(k, p)` in order.
fn known_splits(
    x: &[f64],
    modes: Option<&Modes>,
    method: &Method,
    candidates: &[usize],
) -> Vec<(usize, f64)> {
    let cands = testable(candidates, x.len(), method);
    if cands.is_empty() {
        return Vec::new();
    }
    let min = method.min_segment.max(1);
    let level = method.alpha / (2.0 * cands.len() as f64);
    let gate = (1.0 + method.min_change).ln();
    cands
        .iter()
        .enumerate()
        .filter_map(|(i, &k)| {
            let a = cands[..i]
                .iter()
                .rev()
                .find(|&&c| k - c >= min)
                .copied()
                .unwrap_or(0);
            let b = cands[i + 1..]
                .iter()
                .find(|&&c| c - k >= min)
                .copied()
                .unwrap_or(x.len());
            if modes.is_some_and(|m| !m.on_both_sides(a, k, b)) {
                return None;
            }
            let seg = &x[a..b];
            if hl_shift(&seg[..k - a], &seg[k - a..]).abs() <= gate {
                return None;
            }
            let p = crate::stats::ranksum::split_p(&ranks(seg), k - a);
            (p <= level).then_some((k, p))
        })
        .collect()
}

/// The least share of a series' runs each of its two modes must hold
/// ([`two_modes`]).
const MODE_SHARE: f64 = 0.2;
/// How many times the robust spread within the modes the gap between
/// them must be ([`two_modes`]).
const MODE_GAP: f64 = 6.0;

/// A series that sits at one of two levels from run to run
/// (`syscall.function_call` at 0.87 or 1.08 ns): which runs are at the
/// upper level, and the two levels (logs).
#[derive(Clone, Debug, PartialEq)]
struct Modes {
    /// True for a run at the upper level.
    upper: Vec<bool>,
    /// The lower and the upper level (logs).
    levels: (f64, f64),
}

impl Modes {
    /// Each run's distance from its own level.
    fn residuals(&self, x: &[f64]) -> Vec<f64> {
        x.iter()
            .zip(&self.upper)
            .map(|(v, &u)| v - if u { self.levels.1 } else { self.levels.0 })
            .collect()
    }

    /// True when both levels occur among the runs `a..k` and among `k..b`:
    /// a step between runs of one level only could be a switch of level.
    fn on_both_sides(&self, a: usize, k: usize, b: usize) -> bool {
        let both = |s: &[bool]| s.iter().any(|&u| u) && s.iter().any(|&u| !u);
        both(&self.upper[a..k]) && both(&self.upper[k..b])
    }
}

/// The two levels of a bimodal series (logs), or `None`: the widest gap
/// between its sorted values splits them into two groups, each holding at
/// least [`MODE_SHARE`] of the runs; the distance between the levels is
/// the median difference of neighbouring runs at different levels (a step
/// moves only the pairs it falls between); the gap must be at least
/// [`MODE_GAP`] times the run-to-run spread of each run's distance from
/// its own level (as [`noise`]), and both groups present in the first and
/// in the last third of the series: the levels alternate. A step alone
/// also makes two groups, but one before and one after it, so it is not
/// taken for two modes, nor are a few stray runs.
fn two_modes(x: &[f64]) -> Option<Modes> {
    let n = x.len();
    let least = ((MODE_SHARE * n as f64).ceil() as usize).max(3);
    if n < 2 * least {
        return None;
    }
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (cut, gap) = (least..=n - least)
        .map(|i| (i, sorted[i] - sorted[i - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let threshold = (sorted[cut - 1] + sorted[cut]) / 2.0;
    let upper: Vec<bool> = x.iter().map(|&v| v > threshold).collect();
    // The distance between the levels from neighbouring runs at different
    // levels, which a step between them moves only where it falls (levels
    // taken over the whole series would each carry a share of it).
    let gaps: Vec<f64> = (1..n)
        .filter(|&i| upper[i] != upper[i - 1])
        .map(|i| {
            if upper[i] {
                x[i] - x[i - 1]
            } else {
                x[i - 1] - x[i]
            }
        })
        .collect();
    let width = median(&gaps)?;
    let lower: Vec<f64> = x
        .iter()
        .zip(&upper)
        .map(|(v, &u)| if u { v - width } else { *v })
        .collect();
    let lo = median(&lower)?;
    let modes = Modes {
        upper,
        levels: (lo, lo + width),
    };
    let spread = diff_spread(&modes.residuals(x))?;
    let third = n / 3;
    let both = |s: &[bool]| s.iter().any(|&u| u) && s.iter().any(|&u| !u);
    (gap >= MODE_GAP * spread && both(&modes.upper[..third]) && both(&modes.upper[n - third..]))
        .then_some(modes)
}

/// The ranks of `x` (1 for the smallest; ties share their mean rank).
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &o in &order[i..=j] {
            r[o] = mean;
        }
        i = j + 1;
    }
    r
}

/// The split of a segment (given by its ranks) with the largest
/// standardised Mann–Whitney statistic `|z|`, each side at least
/// `min_segment` long: `(k, |z|)`, `k` the first point after it; `None`
/// when the segment is too short or all its values are equal.
fn best_split(ranks: &[f64], min_segment: usize) -> Option<(usize, f64)> {
    let n = ranks.len();
    let min = min_segment.max(1);
    if n < 2 * min {
        return None;
    }
    let nf = n as f64;
    let mut sum = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for k in 1..=n - min {
        sum += ranks[k - 1];
        if k < min {
            continue;
        }
        let (kf, rest) = (k as f64, (n - k) as f64);
        let u = sum - kf * (kf + 1.0) / 2.0;
        let z = ((u - kf * rest / 2.0) / (kf * rest * (nf + 1.0) / 12.0).sqrt()).abs();
        if z > 1e-12 && best.is_none_or(|(_, b)| z > b) {
            best = Some((k, z));
        }
    }
    best
}

/// Where the step near split `k` of a segment lies: of the splits within
/// `window` of it (each side at least `min_segment` long), the one whose
/// two sides lie closest to their own medians (least absolute deviation).
/// The largest standardised rank statistic finds that there is a step but
/// favours balanced sides, so on a clean step it can fall one run early
/// when the last run before the step is the highest of its side; the
/// deviations put it where the level changes, and one outlier run moves
/// them by no more than its own distance. Ties keep the split nearest `k`.
fn locate(x: &[f64], k: usize, min_segment: usize, window: usize) -> usize {
    let min = min_segment.max(1);
    let cost = |j: usize| deviation(&x[..j]) + deviation(&x[j..]);
    let (lo, hi) = (
        k.saturating_sub(window).max(min),
        (k + window).min(x.len() - min),
    );
    let mut best = (k, cost(k));
    for j in lo..=hi {
        let c = cost(j);
        if c < best.1 - 1e-12 || (c <= best.1 + 1e-12 && j.abs_diff(k) < best.0.abs_diff(k)) {
            best = (j, c);
        }
    }
    best.0
}

/// The sum of absolute deviations of `x` from its median.
fn deviation(x: &[f64]) -> f64 {
    crate::stats::median(x).map_or(0.0, |m| x.iter().map(|y| (y - m).abs()).sum())
}

/// The Hodges–Lehmann shift of `after` against `before` (the median of
/// all differences after − before) with its distribution-free 95%
/// interval (the order statistics of the differences that the
/// Mann–Whitney distribution sets, by its normal approximation; never
/// narrower than the differences' range allows).
fn hodges_lehmann(before: &[f64], after: &[f64]) -> (f64, f64, f64) {
    let mut d: Vec<f64> = after
        .iter()
        .flat_map(|y| before.iter().map(move |x| y - x))
        .collect();
    let m = d.len();
    if m == 0 {
        return (0.0, f64::NEG_INFINITY, f64::INFINITY);
    }
    let mut nth = |i: usize| *d.select_nth_unstable_by(i, f64::total_cmp).1;
    let shift = if m % 2 == 1 {
        nth(m / 2)
    } else {
        (nth(m / 2 - 1) + nth(m / 2)) / 2.0
    };
    let (n0, n1) = (before.len() as f64, after.len() as f64);
    let sd = (n0 * n1 * (n0 + n1 + 1.0) / 12.0).sqrt();
    let c = ((m as f64 / 2.0 - Z95 * sd).floor().max(1.0) as usize).min(m);
    (shift, nth(c - 1), nth(m - c))
}

/// True when a split at `k` of a segment is a step: the shift of the
/// `window` points either side of it goes the same way as the shift of
/// the segment's two sides, and is at least [`STEP_SHARE`] of it (across a drift,
/// neighbouring runs differ much less than the halves).
fn is_step(x: &[f64], k: usize, window: usize) -> bool {
    let lo = k.saturating_sub(window);
    let hi = (k + window).min(x.len());
    let near = hl_shift(&x[lo..k], &x[k..hi]);
    let whole = hl_shift(&x[..k], &x[k..]);
    near * whole > 0.0 && near.abs() >= STEP_SHARE * whole.abs()
}

/// The Hodges–Lehmann shift alone.
fn hl_shift(before: &[f64], after: &[f64]) -> f64 {
    hodges_lehmann(before, after).0
}

/// The share of shuffles of the segment's ranks whose best split is at
/// least `observed` (with the observed order counted), stopping once it is
/// above `alpha` (the value returned is then a lower bound).
fn permutation_p(
    ranks: &mut [f64],
    observed: f64,
    method: &Method,
    rng: &mut fastrand::Rng,
) -> f64 {
    let total = method.permutations + 1;
    let give_up = (method.alpha * total as f64).floor() as usize;
    let mut at_least = 1;
    for _ in 0..method.permutations {
        rng.shuffle(ranks);
        if best_split(ranks, method.min_segment).is_some_and(|(_, z)| z >= observed - 1e-9) {
            at_least += 1;
            if at_least > give_up {
                // Already above alpha: the rest cannot change the answer.
                return at_least as f64 / total as f64;
            }
        }
    }
    at_least as f64 / total as f64
}

/// The robust run-to-run noise of a series, in logs (≈ relative): the
/// spread of successive differences, `1.4826 · MAD / √2`. A step moves one
/// difference and an outlier run two, not the MAD; a bimodal series'
/// differences are taken of each run's distance from its own level
/// (`two_modes`). `None` below 3 runs.
pub fn noise(points: &[Point]) -> Option<f64> {
    let raw = logs(points);
    let x = match two_modes(&raw) {
        Some(m) => m.residuals(&raw),
        None => raw,
    };
    if x.len() < 3 {
        return None;
    }
    diff_spread(&x)
}

/// `1.4826 · MAD / √2` of the successive differences of `x`: its spread
/// from run to run, which a step or an outlier run barely moves.
fn diff_spread(x: &[f64]) -> Option<f64> {
    let diffs: Vec<f64> = x.windows(2).map(|d| d[1] - d[0]).collect();
    let m = median(&diffs)?;
    let dev: Vec<f64> = diffs.iter().map(|d| (d - m).abs()).collect();
    Some(MAD_TO_SIGMA * median(&dev)? / std::f64::consts::SQRT_2)
}

/// The value of the best split's `|z|` that a segment of `n` runs with no
/// change exceeds with probability `alpha` (seeded shuffles: the rank
/// statistic's distribution depends on `n` alone).
pub fn critical(n: usize, method: &Method) -> f64 {
    let mut r: Vec<f64> = (1..=n).map(|i| i as f64).collect();
    let mut rng = fastrand::Rng::with_seed(method.seed ^ n as u64);
    let mut z: Vec<f64> = (0..CRITICAL_SHUFFLES)
        .filter_map(|_| {
            rng.shuffle(&mut r);
            best_split(&r, method.min_segment).map(|(_, z)| z)
        })
        .collect();
    z.sort_by(f64::total_cmp);
    crate::stats::quantile_sorted(&z, 1.0 - method.alpha)
}

/// The smallest step (0.06: 6%) a series of `n` runs with log noise
/// `noise` finds about 9 times in 10 (each rule passing it 19 times in 20) when a third of its runs (at least
/// [`Method::min_segment`]) come after it; `crit` is [`critical`] of `n`.
/// It must pass each rule: the rank test (its `z` at the step must reach
/// `crit`; for normal noise the rank statistic is as efficient as a
/// t-test on `σ·√(π/3)`), the Hodges–Lehmann interval beyond
/// [`Method::min_change`] (the same variance), and the step check's
/// window. `None` when the series is too short or noisy for any step: when
/// even runs wholly apart on either side of the step could not reach
/// `crit`.
pub fn min_step(n: usize, noise: f64, crit: f64, method: &Method) -> Option<f64> {
    if n < method.min_runs() || !noise.is_finite() {
        return None;
    }
    let n1 = (n / 3).max(method.min_segment.max(1));
    let n0 = n - n1;
    let (f0, f1) = (n0 as f64, n1 as f64);
    // The largest z a split can have: every run after it above every run before.
    if crit >= (3.0 * f0 * f1 / (n as f64 + 1.0)).sqrt() {
        return None;
    }
    let zb = normal_quantile(POWER);
    // The shift's standard error for normal noise (efficiency 3/π).
    let se = |a: f64, b: f64| noise * (std::f64::consts::PI / 3.0 * (1.0 / a + 1.0 / b)).sqrt();
    let rank = (crit + zb) * se(f0, f1);
    let gate = (1.0 + method.min_change).ln() + (Z95 + zb) * se(f0, f1);
    let (w0, w1) = (n0.min(method.window) as f64, n1.min(method.window) as f64);
    let step = zb * se(w0, w1) / (1.0 - STEP_SHARE);
    Some(rank.max(gate).max(step).exp() - 1.0)
}

/// A run of the history as a trend sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The run id.
    pub id: String,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// The host name.
    pub host: String,
    /// The profile name.
    pub profile: String,
    /// Its host description's facts ([`env_facts`]).
    pub facts: Vec<(String, String)>,
}

/// One result: a benchmark's point in a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// Index of the run.
    pub run: usize,
    /// Index of the benchmark.
    pub bench: usize,
    /// The result.
    pub point: Point,
}

/// The trend of a history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryTrend {
    /// Every series, by host, profile and benchmark.
    pub series: Vec<Series>,
    /// How change points were found.
    pub method: Method,
}

/// One benchmark on one host at one profile, run after run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    /// The benchmark id.
    pub id: String,
    /// The host name.
    pub host: String,
    /// The profile.
    pub profile: String,
    /// The base unit.
    pub unit: BaseUnit,
    /// The number of runs.
    pub runs: usize,
    /// False when the series has fewer runs than the method needs
    /// ([`Method::min_runs`]): no change point could be found in it.
    pub analysed: bool,
    /// The run-to-run noise, relative (0.02: 2%; [`noise`]); `None` when
    /// not analysed.
    pub noise: Option<f64>,
    /// The smallest step it can see (0.06: a step of 6% or more;
    /// [`min_step`]); `None` when not analysed or too noisy for any.
    pub min_step: Option<f64>,
    /// The change points, newest first.
    pub change_points: Vec<ChangePoint>,
    /// The runs' ids, start times and results, oldest first.
    #[serde(skip)]
    pub points: Vec<(String, String, Point)>,
}

/// A change point of a series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangePoint {
    /// The first run after it.
    pub run: String,
    /// That run's start time.
    pub started: String,
    /// The split: its position in the series (0: the first run), the
    /// ratio after / before in the unit's own terms (for ns/op above 1 is
    /// slower) with its interval, the test's p-value, and whether a
    /// recorded fact of the host changed there.
    #[serde(flatten)]
    pub split: Split,
    /// What changed in the host description then.
    pub env_changes: Vec<EnvChange>,
}

impl std::ops::Deref for ChangePoint {
    type Target = Split;

    /// The split this change point extends with its run and what changed.
    fn deref(&self) -> &Split {
        &self.split
    }
}

/// Splits the results into series (host, profile, benchmark; runs in the
/// order given, which should be their start order) and finds each one's
/// change points.
pub fn analyse(
    runs: &[Run],
    benches: &[(String, BaseUnit)],
    values: &[Value],
    method: &Method,
) -> HistoryTrend {
    let mut by_key: BTreeMap<(&str, &str, usize), Vec<&Value>> = BTreeMap::new();
    for v in values {
        let r = &runs[v.run];
        by_key
            .entry((r.host.as_str(), r.profile.as_str(), v.bench))
            .or_default()
            .push(v);
    }
    let mut criticals: BTreeMap<usize, f64> = BTreeMap::new();
    let series = by_key
        .into_iter()
        .map(|((host, profile, bench), mut vs)| {
            vs.sort_by_key(|v| v.run);
            let (id, unit) = &benches[bench];
            let points: Vec<Point> = vs.iter().map(|v| v.point.clone()).collect();
            let seed = fnv1a(&[host, profile, id]);
            let facts: Vec<&[(String, String)]> =
                vs.iter().map(|v| runs[v.run].facts.as_slice()).collect();
            let splits = change_points_at(&points, method, seed, &fact_changes(&facts));
            let noise = splits.as_ref().and_then(|_| noise(&points));
            let n = points.len();
            let min_step = noise.and_then(|sd| {
                let crit = *criticals.entry(n).or_insert_with(|| critical(n, method));
                min_step(n, sd, crit, method)
            });
            let mut change_points: Vec<ChangePoint> = splits
                .iter()
                .flatten()
                .map(|s| {
                    let k = s.index;
                    let before = &facts[k.saturating_sub(method.window)..k];
                    let after = &facts[k..(k + method.window).min(facts.len())];
                    let first = &runs[vs[k].run];
                    ChangePoint {
                        run: first.id.clone(),
                        started: first.started.clone(),
                        split: s.clone(),
                        env_changes: env_changes(before, after),
                    }
                })
                .collect();
            change_points.reverse();
            Series {
                id: id.clone(),
                host: host.to_string(),
                profile: profile.to_string(),
                unit: *unit,
                runs: vs.len(),
                analysed: splits.is_some(),
                noise,
                min_step,
                change_points,
                points: vs
                    .iter()
                    .map(|v| {
                        let r = &runs[v.run];
                        (r.id.clone(), r.started.clone(), v.point.clone())
                    })
                    .collect(),
            }
        })
        .collect();
    HistoryTrend {
        series,
        method: *method,
    }
}

/// The runs of a series (each given by its facts, in order) whose facts
/// differ from the run before: the candidate splits of
/// [`change_points_at`]. A fact unknown in one of the two (`?`, or missing,
/// as in a document older than it) is not a change.
pub fn fact_changes(facts: &[&[(String, String)]]) -> Vec<usize> {
    (1..facts.len())
        .filter(|&i| {
            let before: BTreeMap<&str, &str> = facts[i - 1]
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            facts[i].iter().any(|(k, v)| {
                before
                    .get(k.as_str())
                    .is_some_and(|b| *b != v && *b != "?" && v != "?")
            })
        })
        .collect()
}

/// FNV-1a of some strings: a seed that does not change between builds.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|p| p.bytes().chain([0])) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A fact of the host description that differs across a change point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnvChange {
    /// The fact (`kernel`, `microcode`, `vulnerability spectre_v2`...).
    pub fact: String,
    /// Its value before.
    pub before: String,
    /// Its value after.
    pub after: String,
}

impl std::fmt::Display for EnvChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The environment, variable by variable: `environment:
        // GLIBC_TUNABLES unset → glibc.cpu.hwcaps=-AVX2`.
        if self.fact == "environment"
            && let Some(c) = crate::host::settings::env_text_changes(&self.before, &self.after)
        {
            return write!(f, "environment: {c}");
        }
        write!(f, "{} {} → {}", self.fact, self.before, self.after)
    }
}

/// The facts of a run's host description a trend reports changes of:
/// the fleet view's ([`crate::analysis::fleet::facts`]) and what changes with an
/// upgrade (kernel, command line, libc, opcost's version and commit).
pub fn env_facts(h: &Host) -> Vec<(String, String)> {
    let s = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let mut out = vec![
        ("kernel".to_string(), s(&h.kernel.release)),
        ("cmdline".to_string(), s(&h.kernel.cmdline)),
    ];
    out.extend(h.cost_facts());
    out.extend([
        ("libc".to_string(), s(&h.software.libc)),
        ("opcost".to_string(), h.software.opcost_version.clone()),
        ("opcost commit".to_string(), s(&h.software.git_commit)),
    ]);
    out
}

/// The facts whose most common value differs between `before` and `after`
/// (each a list of runs' facts), in the order of the first run's facts.
pub fn env_changes(
    before: &[&[(String, String)]],
    after: &[&[(String, String)]],
) -> Vec<EnvChange> {
    fn modes<'a>(runs: &[&'a [(String, String)]]) -> BTreeMap<&'a str, &'a str> {
        let mut counts: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
        for r in runs {
            for (k, v) in r.iter() {
                *counts.entry(k).or_default().entry(v).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .filter_map(|(k, vs)| {
                let v = vs
                    .into_iter()
                    .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))?
                    .0;
                Some((k, v))
            })
            .collect()
    }
    let (b, a) = (modes(before), modes(after));
    let order = before
        .iter()
        .chain(after)
        .flat_map(|r| r.iter().map(|(k, _)| k.as_str()));
    let mut seen = std::collections::BTreeSet::new();
    order
        .filter(|k| seen.insert(*k))
        .filter_map(|k| {
            let (vb, va) = (
                b.get(k).copied().unwrap_or("?"),
                a.get(k).copied().unwrap_or("?"),
            );
            (vb != va).then(|| EnvChange {
                fact: k.to_string(),
                before: vb.to_string(),
                after: va.to_string(),
            })
        })
        .collect()
}

/// The runs and results a trend is found in, gathered run by run: the one
/// place where a history (the store's rows, the documents of a report)
/// becomes the input of [`analyse`].
#[derive(Clone, Debug, Default)]
pub struct History {
    /// The runs, in the order they started.
    pub runs: Vec<Run>,
    /// The benchmarks: id and unit.
    pub benches: Vec<(String, BaseUnit)>,
    /// Every result, by run and benchmark index.
    pub values: Vec<Value>,
}

impl History {
    /// Adds a run of `hostname`, described by `host` (its facts are what
    /// can have changed); returns its index.
    pub fn add_run(
        &mut self,
        id: String,
        started: String,
        hostname: String,
        profile: String,
        host: &Host,
    ) -> usize {
        self.runs.push(Run {
            facts: env_facts(host),
            id,
            started,
            host: hostname,
            profile,
        });
        self.runs.len() - 1
    }

    /// The index of benchmark `id` in `unit`, added when new.
    pub fn bench(&mut self, id: &str, unit: BaseUnit) -> usize {
        match self.benches.iter().position(|(b, u)| b == id && *u == unit) {
            Some(b) => b,
            None => {
                self.benches.push((id.to_string(), unit));
                self.benches.len() - 1
            }
        }
    }

    /// Adds the result of benchmark `bench` in run `run` (indices of
    /// [`History::benches`] and [`History::runs`]).
    pub fn add_value(&mut self, run: usize, bench: usize, point: Point) {
        self.values.push(Value { run, bench, point });
    }

    /// The runs of `docs`, oldest first, with every result.
    pub fn of_docs(docs: &[RunDoc]) -> History {
        let mut order: Vec<&RunDoc> = docs.iter().collect();
        order.sort_by(|a, b| a.run.started.cmp(&b.run.started));
        let mut h = History::default();
        for d in order {
            let run = h.add_run(
                d.run.id.clone(),
                d.run.started.clone(),
                d.host.hostname.clone(),
                d.run.profile.name().to_string(),
                &d.host,
            );
            for m in &d.results {
                let bench = h.bench(&m.id, m.unit);
                let point = Point {
                    median: m.median,
                    ci_low: m.ci_low,
                    ci_high: m.ci_high,
                };
                h.add_value(run, bench, point);
            }
        }
        h
    }

    /// The change points of every series ([`analyse`]).
    pub fn analyse(&self, method: &Method) -> HistoryTrend {
        analyse(&self.runs, &self.benches, &self.values, method)
    }
}

/// The trend of the runs a report shows, when some host has enough of
/// them for a change point to be found ([`Method::min_runs`]); `None`
/// otherwise.
pub fn of_docs(docs: &[RunDoc]) -> Option<HistoryTrend> {
    let method = Method::default();
    let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
    for d in docs {
        *per_host.entry(d.host.hostname.as_str()).or_default() += 1;
    }
    if per_host.values().all(|&n| n < method.min_runs()) {
        return None;
    }
    Some(History::of_docs(docs).analyse(&method))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A series of `n` log-normal points around `level(i)` with relative
    /// noise `sd`, each with an interval of ± `sd` (seeded).
    fn series(n: usize, sd: f64, seed: u64, level: impl Fn(usize) -> f64) -> Vec<Point> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n)
            .map(|i| {
                // Sum of uniforms: near normal, unit variance.
                let z: f64 = (0..12).map(|_| rng.f64()).sum::<f64>() - 6.0;
                let m = level(i) * (sd * z).exp();
                Point {
                    median: m,
                    ci_low: m * (-sd).exp(),
                    ci_high: m * sd.exp(),
                }
            })
            .collect()
    }

    fn found(points: &[Point], seed: u64) -> Vec<usize> {
        change_points(points, &Method::default(), seed)
            .expect("enough points")
            .iter()
            .map(|s| s.index)
            .collect()
    }

    #[test]
    fn a_step_of_three_times_the_noise_is_found_at_its_run() {
        let mut hits = 0;
        for seed in 0..20 {
            let sd = 0.02;
            let pts = series(40, sd, seed, |i| {
                if i < 25 {
                    100.0
                } else {
                    100.0 * (3.0 * sd).exp()
                }
            });
            let cps = change_points(&pts, &Method::default(), seed).unwrap();
            if cps.len() == 1 && cps[0].index.abs_diff(25) <= 1 {
                hits += 1;
                let r = &cps[0];
                assert!(
                    r.ci_low > 1.0 && r.ci_low < r.ratio && r.ratio < r.ci_high,
                    "{r:?}"
                );
            }
        }
        assert!(hits >= 18, "{hits} of 20");
    }

    #[test]
    fn a_clean_step_is_placed_at_its_run_even_after_the_highest_run_of_its_side() {
        // 15 runs at 100 (the last the highest of them), then 8 at 108: the
        // balanced rank statistic alone peaks one run early.
        let pts: Vec<Point> = (0..23)
            .map(|i| {
                let m = if i < 15 { 100.0 } else { 108.0 } + i as f64 * 0.01;
                Point {
                    median: m,
                    ci_low: m * 0.99,
                    ci_high: m * 1.01,
                }
            })
            .collect();
        let cps = change_points(&pts, &Method::default(), 1).unwrap();
        assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), vec![15]);
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut hits = 0;
        for seed in 0..20 {
            let pts = series(60, 0.02, 100 + seed, |i| match i {
                0..20 => 100.0,
                20..40 => 110.0,
                _ => 104.0,
            });
            let cps = found(&pts, seed);
            if cps.len() == 2 && cps[0].abs_diff(20) <= 1 && cps[1].abs_diff(40) <= 1 {
                hits += 1;
            }
        }
        assert!(hits >= 18, "{hits} of 20");
    }

    #[test]
    fn a_drift_gives_no_cluster_of_points() {
        let mut with_points = 0;
        for seed in 0..40 {
            // 15% over 60 runs (0.25% a run, an eighth of the noise) under 2% noise.
            let pts = series(60, 0.02, 200 + seed, |i| 100.0 * (1.0 + 0.0025 * i as f64));
            let cps = found(&pts, seed);
            with_points += usize::from(!cps.is_empty());
            let window = Method::default().window;
            assert!(
                cps.windows(2).all(|p| p[1] - p[0] > 2 * window),
                "seed {seed}: a cluster {cps:?}"
            );
        }
        assert!(
            with_points <= 4,
            "{with_points} of 40 drifts have a change point"
        );
    }

    #[test]
    fn constant_noise_gives_no_point() {
        let mut with_points = 0;
        for seed in 0..100 {
            let pts = series(30, 0.03, 300 + seed, |_| 100.0);
            with_points += usize::from(!found(&pts, seed).is_empty());
        }
        assert!(with_points <= 5, "{with_points} of 100 noise series");
        // Identical values: no variance at all, and no point.
        let flat = vec![
            Point {
                median: 5.0,
                ci_low: 5.0,
                ci_high: 5.0
            };
            12
        ];
        assert!(found(&flat, 1).is_empty());
    }

    /// `pts` with the runs in `at` moved by `factor`, their intervals
    /// made narrow (as the stray runs of a shared machine often have).
    fn stray(mut pts: Vec<Point>, at: &[usize], factor: f64) -> Vec<Point> {
        for &i in at {
            let m = pts[i].median * factor;
            pts[i] = Point {
                median: m,
                ci_low: m * 0.999,
                ci_high: m * 1.001,
            };
        }
        pts
    }

    #[test]
    fn outlier_runs_neither_cancel_a_step_nor_make_one() {
        let (mut hits, mut false_points) = (0, 0);
        for seed in 0..20 {
            let step = |i: usize| if i < 24 { 100.0 } else { 108.0 };
            // A run after the step falls back below it and one before
            // strays up, each by 12-15% with a narrow interval.
            let pts = stray(series(36, 0.015, 400 + seed, step), &[30], 0.86);
            let pts = stray(pts, &[3], 1.15);
            let cps = found(&pts, seed);
            hits += usize::from(cps.len() == 1 && cps[0].abs_diff(24) <= 1);
            let flat = stray(series(24, 0.015, 500 + seed, |_| 100.0), &[2, 3, 16], 1.15);
            let flat = stray(flat, &[20, 21, 22], 1.12);
            false_points += usize::from(!found(&flat, seed).is_empty());
        }
        assert!(hits >= 18, "{hits} of 20 steps found");
        assert!(false_points <= 1, "{false_points} of 20 flat series");
    }

    #[test]
    fn a_bimodal_series_without_a_step_has_no_point() {
        let mut with_points = 0;
        for seed in 0..40 {
            let mut rng = fastrand::Rng::with_seed(600 + seed);
            let modes: Vec<f64> = (0..24)
                .map(|_| if rng.bool() { 0.87 } else { 1.08 })
                .collect();
            let pts = series(24, 0.01, 700 + seed, |i| modes[i]);
            with_points += usize::from(!found(&pts, seed).is_empty());
        }
        assert!(with_points <= 2, "{with_points} of 40 bimodal series");
    }

    /// A series at 0.87 or 1.08 (each run drawn at random, seeded), with
    /// relative noise 1% around its level and the levels times `step`
    /// from run `at` on.
    fn bimodal(n: usize, seed: u64, at: usize, step: f64) -> Vec<Point> {
        let mut rng = fastrand::Rng::with_seed(600 + seed);
        let modes: Vec<f64> = (0..n)
            .map(|_| if rng.bool() { 0.87 } else { 1.08 })
            .collect();
        series(n, 0.01, 700 + seed, |i| {
            modes[i] * if i >= at { step } else { 1.0 }
        })
    }

    #[test]
    fn a_step_in_a_bimodal_series_is_found_in_both_modes() {
        let mut hits = 0;
        for seed in 0..20 {
            let pts = bimodal(24, seed, 16, 1.08);
            let cps = change_points(&pts, &Method::default(), seed).unwrap();
            if cps.len() == 1 && cps[0].index.abs_diff(16) <= 1 {
                hits += 1;
                assert!((1.06..1.10).contains(&cps[0].ratio), "{:?}", cps[0]);
            }
        }
        assert!(hits >= 18, "{hits} of 20");
        // Its noise is the spread around each run's level, not the gap.
        let sd = noise(&bimodal(24, 1, 24, 1.0)).unwrap();
        assert!(sd < 0.02, "{sd}");
    }

    #[test]
    fn two_modes_need_alternating_levels() {
        // Alternating levels: two modes.
        let x: Vec<f64> = (0..24)
            .map(|i| if i % 3 == 0 { 1.08f64 } else { 0.87 }.ln() + 0.001 * (i % 5) as f64)
            .collect();
        let m = two_modes(&x).expect("two modes");
        assert_eq!(m.upper.iter().filter(|&&u| u).count(), 8);
        assert!((m.levels.1 - m.levels.0 - (1.08f64 / 0.87).ln()).abs() < 0.01);
        // A split of a bimodal series needs both levels on both sides.
        assert!(m.on_both_sides(0, 12, 24));
        assert!(!m.on_both_sides(1, 3, 24) && !m.on_both_sides(0, 4, 6));
        // A step alone makes two groups, one before and one after it: no
        // modes, and the step is found as a step.
        let step: Vec<f64> = (0..24)
            .map(|i| if i < 16 { 1.0f64 } else { 1.3 }.ln() + 0.001 * (i % 5) as f64)
            .collect();
        assert!(two_modes(&step).is_none());
        let pts: Vec<Point> = step
            .iter()
            .map(|v| Point {
                median: v.exp(),
                ci_low: v.exp(),
                ci_high: v.exp(),
            })
            .collect();
        assert_eq!(found(&pts, 1), vec![16]);
        // Unimodal noise with a few stray runs: no modes.
        let pts = stray(series(24, 0.02, 5, |_| 100.0), &[1, 2, 20], 0.82);
        assert!(two_modes(&logs(&pts)).is_none());
    }

    #[test]
    fn a_switch_from_two_levels_to_one_makes_no_step() {
        // The upper level in the first two thirds of the runs and never
        // after: not two alternating modes, and no step of the level
        // either (the runs' ranks mix).
        let mut with_points = 0;
        for seed in 0..20 {
            let mut rng = fastrand::Rng::with_seed(900 + seed);
            let modes: Vec<f64> = (0..24)
                .map(|i| if i < 16 && rng.bool() { 1.08 } else { 0.87 })
                .collect();
            let pts = series(24, 0.01, 950 + seed, |i| modes[i]);
            with_points += usize::from(!found(&pts, seed).is_empty());
        }
        assert!(with_points <= 2, "{with_points} of 20");
    }

    #[test]
    fn the_noise_is_the_series_own_despite_a_step_and_stray_runs() {
        let pts = series(60, 0.02, 11, |i| if i < 40 { 100.0 } else { 110.0 });
        let pts = stray(pts, &[5, 30], 1.3);
        let sd = noise(&pts).unwrap();
        assert!((0.014..0.026).contains(&sd), "{sd}");
        assert!(noise(&pts[..2]).is_none());
    }

    #[test]
    fn the_smallest_visible_step_shrinks_with_length_and_grows_with_noise() {
        let m = Method::default();
        let at = |n: usize, sd: f64| min_step(n, sd, critical(n, &m), &m).unwrap();
        assert!(
            at(48, 0.01) < at(24, 0.01),
            "{} {}",
            at(48, 0.01),
            at(24, 0.01)
        );
        // Longer still, the step check's window of 5 runs a side is the
        // limit (at 2% noise already from 24 runs on).
        assert!(at(240, 0.01) <= at(48, 0.01));
        assert!(at(240, 0.02) <= at(24, 0.02));
        assert!(at(24, 0.04) > at(24, 0.02));
        // Without noise only the 3% gate is left.
        assert!((at(24, 0.0) - 0.03).abs() < 1e-9);
        // Too short, or so noisy no split of 6 runs can reach the level.
        assert_eq!(min_step(5, 0.02, 3.0, &m), None);
        assert_eq!(min_step(6, 0.02, critical(6, &m), &m), None);
    }

    #[test]
    fn a_step_as_large_as_the_series_says_it_can_see_is_found() {
        let m = Method::default();
        let sd = 0.02;
        let step = min_step(24, sd, critical(24, &m), &m).unwrap();
        let mut hits = 0;
        for seed in 0..40 {
            let pts = series(24, sd, 800 + seed, |i| {
                if i < 16 { 100.0 } else { 100.0 * (1.0 + step) }
            });
            let cps = found(&pts, seed);
            hits += usize::from(cps.iter().any(|k| k.abs_diff(16) <= 1));
        }
        assert!(hits >= 34, "{hits} of 40 steps of {step}");
    }

    #[test]
    fn too_short_a_series_is_said() {
        let pts = series(5, 0.02, 1, |_| 1.0);
        assert!(change_points(&pts, &Method::default(), 1).is_none());
        assert_eq!(Method::default().min_runs(), 6);
    }

    #[test]
    fn the_same_seed_gives_the_same_answer() {
        let pts = series(30, 0.02, 9, |i| if i < 15 { 100.0 } else { 104.0 });
        let a = change_points(&pts, &Method::default(), 3).unwrap();
        let b = change_points(&pts, &Method::default(), 3).unwrap();
        assert_eq!(a, b);
    }

    /// Of 40 seeded series of 24 runs at 2% noise with a step of `size`
    /// from run 16, how many have a change point within a run of it, with
    /// `candidates` given.
    fn hits_at(size: f64, candidates: &[usize]) -> usize {
        (0..40)
            .filter(|&seed| {
                let pts = series(24, 0.02, 1000 + seed, |i| {
                    if i < 16 { 100.0 } else { 100.0 * (1.0 + size) }
                });
                change_points_at(&pts, &Method::default(), seed, candidates)
                    .unwrap()
                    .iter()
                    .any(|s| s.index.abs_diff(16) <= 1)
            })
            .count()
    }

    #[test]
    fn a_step_at_a_recorded_change_is_found_at_a_smaller_size_than_by_the_scan() {
        // The smallest step (in 1% steps) found in 36 of 40 series.
        let smallest = |candidates: &[usize]| {
            (1..=20)
                .map(|p| p as f64 / 100.0)
                .find(|&size| hits_at(size, candidates) >= 36)
                .unwrap()
        };
        let (known, scan) = (smallest(&[16]), smallest(&[]));
        assert!(known < scan, "known split {known}, scan {scan}");
        // Found at the run itself, as a recorded change.
        let pts = series(24, 0.02, 7, |i| if i < 16 { 100.0 } else { 106.0 });
        let cps = change_points_at(&pts, &Method::default(), 7, &[16]).unwrap();
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert!(cps[0].recorded && cps[0].index == 16, "{cps:?}");
        assert!((1.03..1.09).contains(&cps[0].ratio), "{cps:?}");
    }

    #[test]
    fn no_candidate_leaves_the_scan_as_it_was() {
        for seed in 0..30 {
            let pts = series(
                30,
                0.02,
                1100 + seed,
                |i| if i < 20 { 100.0 } else { 107.0 },
            );
            let scan = change_points(&pts, &Method::default(), seed).unwrap();
            assert!(scan.iter().all(|s| !s.recorded));
            // Candidates too near an end to be tested change nothing.
            for untestable in [&[][..], &[0], &[1, 2], &[28, 29, 30]] {
                assert_eq!(
                    change_points_at(&pts, &Method::default(), seed, untestable).unwrap(),
                    scan,
                    "seed {seed}, candidates {untestable:?}"
                );
            }
        }
    }

    #[test]
    fn a_candidate_without_a_step_is_seldom_a_point() {
        let mut with_points = 0;
        for seed in 0..100 {
            let pts = series(24, 0.03, 1200 + seed, |_| 100.0);
            let cps = change_points_at(&pts, &Method::default(), seed, &[8, 16]).unwrap();
            with_points += usize::from(!cps.is_empty());
        }
        assert!(with_points <= 5, "{with_points} of 100 noise series");
    }

    #[test]
    fn each_candidate_is_tested_between_its_neighbours() {
        // A step at run 16 only; candidates at 8 and 16: the run-8
        // candidate is tested on runs 0-15 and is not a point.
        let pts = series(24, 0.01, 5, |i| if i < 16 { 100.0 } else { 110.0 });
        let cps = change_points_at(&pts, &Method::default(), 5, &[8, 16]).unwrap();
        let at: Vec<(usize, bool)> = cps.iter().map(|c| (c.index, c.recorded)).collect();
        assert_eq!(at, vec![(16, true)]);
    }

    #[test]
    fn a_fact_change_makes_a_candidate_and_an_unknown_does_not() {
        let f = |v: &str| vec![("environment".to_string(), v.to_string())];
        let (a, b, q) = (f("none"), f("GLIBC_TUNABLES=x"), f("?"));
        let runs: Vec<&[(String, String)]> = vec![&a, &a, &b, &b, &q, &b, &a, &[]];
        assert_eq!(fact_changes(&runs), vec![2, 6]);
        assert!(fact_changes(&[]).is_empty());
    }

    #[test]
    fn analyse_tests_the_run_where_the_environment_changed() {
        let plain = Host {
            settings: crate::host::Settings::read_at(
                std::path::Path::new("/nonexistent"),
                std::iter::empty::<(&str, &str)>(),
            ),
            ..Default::default()
        };
        let tuned = Host {
            settings: plain.settings.for_side(
                &[("GLIBC_TUNABLES".into(), "glibc.cpu.hwcaps=-AVX2".into())],
                None,
                None,
            ),
            ..plain.clone()
        };
        let runs: Vec<Run> = (0..16)
            .map(|i| Run {
                id: format!("{i:08x}"),
                started: format!("2026-03-{:02}T10:00:00Z", i + 1),
                host: "h".into(),
                profile: "quick".into(),
                facts: env_facts(if i < 8 { &plain } else { &tuned }),
            })
            .collect();
        let copy = series(16, 0.02, 3, |i| if i < 8 { 100.0 } else { 160.0 });
        let getpid = series(16, 0.02, 4, |_| 50.0);
        let values: Vec<Value> = copy
            .into_iter()
            .enumerate()
            .map(|(run, point)| Value {
                run,
                bench: 0,
                point,
            })
            .chain(getpid.into_iter().enumerate().map(|(run, point)| Value {
                run,
                bench: 1,
                point,
            }))
            .collect();
        let benches = vec![
            ("copy".to_string(), BaseUnit::NsPerOp),
            ("getpid".to_string(), BaseUnit::NsPerOp),
        ];
        let t = analyse(&runs, &benches, &values, &Method::default());
        let cp = &t.series[0].change_points;
        assert_eq!(cp.len(), 1, "{cp:?}");
        assert!(cp[0].recorded && cp[0].index == 8 && cp[0].run == "00000008");
        assert_eq!(
            cp[0].env_changes,
            vec![EnvChange {
                fact: "environment".into(),
                before: "none".into(),
                after: "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2".into(),
            }]
        );
        assert_eq!(
            cp[0].env_changes[0].to_string(),
            "environment: GLIBC_TUNABLES unset → glibc.cpu.hwcaps=-AVX2"
        );
        assert!(t.series[1].change_points.is_empty());
    }

    #[test]
    fn the_env_diff_names_the_one_mitigation_that_changed() {
        let mut h = Host::with_vulnerabilities(&[
            ("spectre_v2", "Mitigation: Retpolines"),
            ("mds", "Not affected"),
        ]);
        h.kernel.release = Some("6.1.0".into());
        let mut h2 = h.clone();
        h2.vulnerabilities
            .insert("spectre_v2".into(), "Vulnerable".into());
        let (a, b) = (env_facts(&h), env_facts(&h2));
        let changes = env_changes(&[&a, &a], &[&b, &b]);
        assert_eq!(
            changes,
            vec![EnvChange {
                fact: "vulnerability spectre_v2".into(),
                before: "Mitigation: Retpolines".into(),
                after: "Vulnerable".into(),
            }]
        );
        assert!(env_changes(&[&a], &[&a]).is_empty());
        // The most common value on each side: one stray run does not count.
        assert!(env_changes(&[&a, &a, &b], &[&a, &a]).is_empty());
    }

    #[test]
    fn a_change_point_is_written_with_its_split_in_place() {
        let c = ChangePoint {
            run: "00000008".into(),
            started: "2026-03-17T10:00:00Z".into(),
            split: Split {
                index: 8,
                ratio: 1.5,
                ci_low: 1.25,
                ci_high: 1.75,
                p: 0.5,
                recorded: true,
            },
            env_changes: Vec::new(),
        };
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            concat!(
                r#"{"run":"00000008","started":"2026-03-17T10:00:00Z","index":8,"ratio":1.5,"#,
                r#""ci_low":1.25,"ci_high":1.75,"p":0.5,"recorded":true,"env_changes":[]}"#
            )
        );
        assert_eq!(c.index, c.split.index);
    }
}
