//! Trends: when a host's costs changed in its history, and what changed
//! in its description then.
//!
//! A series is one benchmark's results on one host at one profile, in the
//! order the runs started. Its change points are found by binary
//! segmentation on the logarithms of the medians, each split tested by a
//! permutation test, as in the change-point detection MongoDB runs on its
//! performance history (Daly et al., ICPE 2020) and its open-source
//! descendant Hunter / Apache Otava; the statistic differs, so that each
//! run's interval counts:
//!
//! - Noise model (random effects, as in a meta-analysis): run `i`'s log
//!   median has variance `s_i² + τ²`, where `s_i` is its own interval's
//!   half-width in logs over 1.96 (what the run saw inside itself) and `τ²`
//!   the extra variation between runs, estimated robustly from successive
//!   differences (`1.4826 · MAD / √2`, minus the typical `s_i²`), so a step
//!   does not inflate it, and never under half that run-to-run variance
//!   (an interval sees only what varies inside its run: a run with an
//!   interval far narrower than the series' spread must not outweigh the
//!   others). A run with a wide interval weighs less.
//! - Statistic: for a split of a segment at `k`, the squared difference of
//!   the two sides' weighted means over its variance (`χ²₁` for a fixed
//!   `k`); the segment's statistic is its largest over `k`, each side at
//!   least [`Method::min_segment`] runs.
//! - Test: the same maximum over [`Method::permutations`] seeded shuffles of
//!   the segment's runs; the split stands when `p ≤ α`
//!   ([`Method::alpha`], calibrated on A/A histories: see docs/DESIGN.md).
//!   Accepted splits are searched again on either side.
//! - A change, not a wobble: the split's ratio must lie, with its 95%
//!   interval, wholly beyond ±[`Method::min_change`] (3%, as `compare`
//!   has a threshold): on a shared machine, some benchmarks move by a
//!   percent or two between runs for reasons no host fact records.
//! - A step, not a drift: a split stands only when the [`Method::window`]
//!   runs just before it and just after it also differ at 95%. A slow
//!   drift makes the whole segment's halves differ but not neighbouring
//!   runs, so it gives no cluster of points.
//! - Each change point's ratio (after / before, in the values' own unit) is
//!   that of the weighted means of the segments on either side, with the
//!   95% interval of their difference.
//! - What changed: the facts of the host description (those the fleet view
//!   compares, plus kernel, command line, libc and opcost's version and
//!   commit) whose most common value differs between the window before and
//!   the window after.
//!
//! Pure: no store, no suite; the command feeds it rows.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::harness::stats::median;
use crate::host::Host;
use crate::units::BaseUnit;

/// MAD × 1.4826 estimates the standard deviation of normal data.
const MAD_TO_SIGMA: f64 = 1.4826;
/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_985;
/// Smallest standard deviation of a log median (1e-6 relative): keeps the
/// weights of identical values finite.
const MIN_SD: f64 = 1e-6;
/// The least share of the series' run-to-run variance counted as
/// between-run variance in every run: an interval only sees what varies
/// within its run, and a run whose interval is much narrower than the
/// series' spread must not outweigh all the others.
const TAU_FLOOR: f64 = 0.5;
/// The least share of the difference between a segment's sides that the
/// runs next to a split must show for it to be a step.
const STEP_SHARE: f64 = 0.5;

/// How change points are found.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Method {
    /// The permutation test's level: a split stands when p ≤ alpha.
    pub alpha: f64,
    /// Shuffles per test.
    pub permutations: usize,
    /// Fewest runs on either side of a split.
    pub min_segment: usize,
    /// Runs on either side that must also differ at 95% (the step check).
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
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// Index of the first point after it.
    pub index: usize,
    /// After / before (weighted geometric means of the segments).
    pub ratio: f64,
    /// 95% interval of the ratio.
    pub ci_low: f64,
    /// 95% interval of the ratio.
    pub ci_high: f64,
    /// The permutation test's p-value.
    pub p: f64,
}

/// The change points of a series, oldest first; `None` when it has fewer
/// points than [`Method::min_runs`].
pub fn change_points(points: &[Point], method: &Method, seed: u64) -> Option<Vec<Split>> {
    if points.len() < method.min_runs() {
        return None;
    }
    let x: Vec<f64> = points
        .iter()
        .map(|p| p.median.max(f64::MIN_POSITIVE).ln())
        .collect();
    let w = weights(points, &x);
    let mut rng = fastrand::Rng::with_seed(method.seed ^ seed);
    let mut cuts: Vec<(usize, f64)> = Vec::new();
    let mut todo = vec![(0, x.len())];
    while let Some((a, b)) = todo.pop() {
        let Some((k, t)) = best_split(&x[a..b], &w[a..b], method.min_segment) else {
            continue;
        };
        let k = a + k;
        if !is_step(&x, &w, a, k, b, method.window) {
            continue;
        }
        if !beyond(&x, &w, (a, k, b), method.min_change) {
            continue;
        }
        let p = permutation_p(&x[a..b], &w[a..b], t, method, &mut rng);
        if p > method.alpha {
            continue;
        }
        cuts.push((k, p));
        todo.push((a, k));
        todo.push((k, b));
    }
    cuts.sort_by_key(|c| c.0);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(cuts.iter().map(|c| c.0))
        .chain(std::iter::once(x.len()))
        .collect();
    Some(
        cuts.iter()
            .enumerate()
            .map(|(i, &(k, p))| {
                let (m0, w0) = mean(&x[bounds[i]..k], &w[bounds[i]..k]);
                let (m1, w1) = mean(&x[k..bounds[i + 2]], &w[k..bounds[i + 2]]);
                let d = m1 - m0;
                let se = (1.0 / w0 + 1.0 / w1).sqrt();
                Split {
                    index: k,
                    ratio: d.exp(),
                    ci_low: (d - Z95 * se).exp(),
                    ci_high: (d + Z95 * se).exp(),
                    p,
                }
            })
            .collect(),
    )
}

/// Each point's weight, 1 / (own variance + between-run variance).
fn weights(points: &[Point], x: &[f64]) -> Vec<f64> {
    let own: Vec<f64> = points
        .iter()
        .map(|p| {
            let ok = p.ci_low > 0.0 && p.ci_high >= p.ci_low && p.ci_high.is_finite();
            if ok {
                (p.ci_high.ln() - p.ci_low.ln()) / (2.0 * Z95)
            } else {
                0.0
            }
        })
        .collect();
    let diffs: Vec<f64> = x.windows(2).map(|d| d[1] - d[0]).collect();
    let total_var = median(&diffs)
        .and_then(|m| {
            let dev: Vec<f64> = diffs.iter().map(|d| (d - m).abs()).collect();
            median(&dev)
        })
        .map_or(0.0, |mad| (MAD_TO_SIGMA * mad).powi(2) / 2.0);
    let own_var: Vec<f64> = own.iter().map(|s| s * s).collect();
    let tau2 = (total_var - median(&own_var).unwrap_or(0.0)).max(TAU_FLOOR * total_var);
    own_var
        .iter()
        .map(|v| 1.0 / (v + tau2).max(MIN_SD * MIN_SD))
        .collect()
}

/// Weighted mean and total weight.
fn mean(x: &[f64], w: &[f64]) -> (f64, f64) {
    let sw: f64 = w.iter().sum();
    let swx: f64 = x.iter().zip(w).map(|(x, w)| x * w).sum();
    (swx / sw, sw)
}

/// The split's statistic: squared difference of weighted means over its variance.
fn statistic(m0: f64, w0: f64, m1: f64, w1: f64) -> f64 {
    (m1 - m0).powi(2) / (1.0 / w0 + 1.0 / w1)
}

/// Calls `each(k, t)` for every split of a segment with at least
/// `min_segment` points a side: `k` the index of the first point after it,
/// `t` its statistic.
fn each_split(x: &[f64], w: &[f64], min_segment: usize, mut each: impl FnMut(usize, f64)) {
    let n = x.len();
    let min = min_segment.max(1);
    if n < 2 * min {
        return;
    }
    let total_w: f64 = w.iter().sum();
    let total_wx: f64 = x.iter().zip(w).map(|(x, w)| x * w).sum();
    let (mut sw, mut swx) = (0.0, 0.0);
    for k in 1..=n - min {
        sw += w[k - 1];
        swx += w[k - 1] * x[k - 1];
        if k >= min {
            let (rw, rwx) = (total_w - sw, total_wx - swx);
            each(k, statistic(swx / sw, sw, rwx / rw, rw));
        }
    }
}

/// The best split of a segment and its statistic.
fn best_split(x: &[f64], w: &[f64], min_segment: usize) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    each_split(x, w, min_segment, |k, t| {
        if best.is_none_or(|(_, b)| t > b) {
            best = Some((k, t));
        }
    });
    best
}

/// True when a split at `k` of the segment `[a, b)` is a step: the
/// `window` points either side of it differ at 95%, and by at least half
/// as much as the segment's two sides do (across a drift, neighbouring
/// runs differ much less than the halves).
fn is_step(x: &[f64], w: &[f64], a: usize, k: usize, b: usize, window: usize) -> bool {
    let lo = k.saturating_sub(window).max(a);
    let hi = (k + window).min(b);
    let (m0, w0) = mean(&x[lo..k], &w[lo..k]);
    let (m1, w1) = mean(&x[k..hi], &w[k..hi]);
    let (g0, _) = mean(&x[a..k], &w[a..k]);
    let (g1, _) = mean(&x[k..b], &w[k..b]);
    statistic(m0, w0, m1, w1) > Z95 * Z95 && (m1 - m0).abs() >= STEP_SHARE * (g1 - g0).abs()
}

/// True when the 95% interval of the change at `k` (segment `[a, b)`)
/// lies wholly beyond `±min_change`.
fn beyond(x: &[f64], w: &[f64], (a, k, b): (usize, usize, usize), min_change: f64) -> bool {
    let (m0, w0) = mean(&x[a..k], &w[a..k]);
    let (m1, w1) = mean(&x[k..b], &w[k..b]);
    let se = (1.0 / w0 + 1.0 / w1).sqrt();
    (m1 - m0).abs() - Z95 * se > (1.0 + min_change).ln()
}

/// The share of shuffles whose best split is at least `observed` (with the
/// observed order counted), stopping once it is above `alpha` (the value
/// returned is then a lower bound).
fn permutation_p(
    x: &[f64],
    w: &[f64],
    observed: f64,
    method: &Method,
    rng: &mut fastrand::Rng,
) -> f64 {
    let mut pairs: Vec<(f64, f64)> = x.iter().copied().zip(w.iter().copied()).collect();
    let mut xs = vec![0.0; x.len()];
    let mut ws = vec![0.0; x.len()];
    let total = method.permutations + 1;
    let give_up = (method.alpha * total as f64).floor() as usize;
    let mut at_least = 1;
    for _ in 0..method.permutations {
        rng.shuffle(&mut pairs);
        for (i, (px, pw)) in pairs.iter().enumerate() {
            xs[i] = *px;
            ws[i] = *pw;
        }
        if best_split(&xs, &ws, method.min_segment).is_some_and(|(_, t)| t >= observed) {
            at_least += 1;
            if at_least > give_up {
                // Already above alpha: the rest cannot change the answer.
                return at_least as f64 / total as f64;
            }
        }
    }
    at_least as f64 / total as f64
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
pub struct Trend {
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
    /// Its position in the series (0: the first run).
    pub index: usize,
    /// After / before, in the unit's own terms (for ns/op above 1 is slower).
    pub ratio: f64,
    /// 95% interval of the ratio.
    pub ci_low: f64,
    /// 95% interval of the ratio.
    pub ci_high: f64,
    /// The permutation test's p-value.
    pub p: f64,
    /// What changed in the host description then.
    pub env_changes: Vec<EnvChange>,
}

/// Splits the results into series (host, profile, benchmark; runs in the
/// order given, which should be their start order) and finds each one's
/// change points.
pub fn analyse(
    runs: &[Run],
    benches: &[(String, BaseUnit)],
    values: &[Value],
    method: &Method,
) -> Trend {
    let mut by_key: BTreeMap<(&str, &str, usize), Vec<&Value>> = BTreeMap::new();
    for v in values {
        let r = &runs[v.run];
        by_key
            .entry((r.host.as_str(), r.profile.as_str(), v.bench))
            .or_default()
            .push(v);
    }
    let series = by_key
        .into_iter()
        .map(|((host, profile, bench), mut vs)| {
            vs.sort_by_key(|v| v.run);
            let (id, unit) = &benches[bench];
            let points: Vec<Point> = vs.iter().map(|v| v.point.clone()).collect();
            let seed = fnv1a(&[host, profile, id]);
            let splits = change_points(&points, method, seed);
            let facts: Vec<&[(String, String)]> =
                vs.iter().map(|v| runs[v.run].facts.as_slice()).collect();
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
                        index: k,
                        ratio: s.ratio,
                        ci_low: s.ci_low,
                        ci_high: s.ci_high,
                        p: s.p,
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
    Trend {
        series,
        method: *method,
    }
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
        write!(f, "{} {} → {}", self.fact, self.before, self.after)
    }
}

/// The facts of a run's host description a trend reports changes of:
/// the fleet view's ([`crate::fleet::facts`]) and what changes with an
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

    #[test]
    fn wide_intervals_weigh_less() {
        // The same medians; one series' runs after the step have intervals
        // ten times wider and the step is then not a change.
        let sd = 0.01;
        let pts = series(20, sd, 7, |i| if i < 10 { 100.0 } else { 106.0 });
        let cps = found(&pts, 1);
        assert!(cps.len() == 1 && cps[0].abs_diff(10) <= 1, "{cps:?}");
        let wide: Vec<Point> = pts
            .iter()
            .map(|p| Point {
                median: p.median,
                ci_low: p.median * 0.7,
                ci_high: p.median * 1.4,
            })
            .collect();
        assert!(found(&wide, 1).is_empty());
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
}
