//! Whether the stability canary predicts a run's benchmarks: for each area,
//! how much slower its rounds measured when the canary read slow, shown on
//! the run's own rounds before any of them is measured again, set aside or
//! corrected for a phase.
//!
//! Why: the canary (a dependent multiply chain) and a benchmark need not
//! feel the same thing. On AMD Zen 4 guests a slow phase of the host slows
//! everything at once, and a round corrected by the canary's slowdown holds.
//! On an Intel Xeon guest the canary read 1.16x slow in four rounds of five
//! while an L1 hit did not move at all: the correction then made two states
//! out of one (1.03 and 1.22 ns), the interval ±20%, and the run UNSTABLE on
//! a quiet machine. So the canary's word is taken only where the run shows
//! it holds: the pooled within-benchmark slope of an area's rounds' log
//! time on their log canary, with its 95% interval; an area whose interval
//! lies above zero follows the canary, any other keeps its rounds as
//! measured (they are the machine's states, sampled, and the round interval
//! says how far they spread).

use serde::{Deserialize, Serialize};

use super::Round;
use crate::stats::t975;

/// Slow rounds an area needs before its response to the canary is judged
/// (fewer cannot show one, and leave little to correct).
pub const MIN_SLOW_ROUNDS: usize = 3;

/// How much slower an area's slow rounds must measure, at the low end of
/// the slope's interval and the area's median slow canary, before the
/// canary's word is taken for it: a response that may be 1% is no phase to
/// correct (a Xeon guest's memory rounds read slopes of 0.2 [0.02, 0.43]
/// against a 1.16x canary in two runs of five, none in the others).
pub const MIN_EFFECT: f64 = 0.02;

/// How one area of a run responded to the canary's slow phases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The area (the first segment of its benchmarks' ids).
    pub area: String,
    /// The pooled slope of log time per operation on log canary within each
    /// benchmark (1 = as much slower as the canary, 0 = not at all).
    pub slope: f64,
    /// False when the area's rounds allow no fit (too few, or the canary
    /// never varied): the slope and its interval are then 0.
    #[serde(default)]
    pub fitted: bool,
    /// The slope's 95% interval, low end.
    pub low: f64,
    /// The slope's 95% interval, high end.
    pub high: f64,
    /// Rounds with a canary in the fit.
    pub rounds: usize,
    /// Of them, rounds the canary called slow.
    pub slow: usize,
    /// The median canary of those slow rounds (1 when there are none).
    #[serde(default = "one")]
    pub slow_canary: f64,
    /// True when the interval lies above zero with enough slow rounds: the
    /// area's slow rounds are measured again, set aside or corrected.
    pub predicts: bool,
}

fn one() -> f64 {
    1.0
}

/// One benchmark's rounds as the response sees them.
pub struct RoundsOf<'a> {
    /// Its area.
    pub area: &'a str,
    /// Its rounds, in any state (a corrected round's `phase_factor` is
    /// undone: the fit reads what was measured).
    pub rounds: &'a [Round],
    /// True for a rate (higher is better): its time is the inverse.
    pub higher_is_better: bool,
}

/// The log time per operation a round measured, before any correction for
/// the phase; `None` for a round without a positive finite median.
pub fn measured_log_time(r: &Round, higher_is_better: bool) -> Option<f64> {
    let f = r
        .phase_factor
        .filter(|f| f.is_finite() && *f > 0.0)
        .unwrap_or(1.0);
    // A corrected time was divided by f, a corrected rate multiplied.
    let measured = if higher_is_better {
        r.median / f
    } else {
        r.median * f
    };
    (measured.is_finite() && measured > 0.0).then(|| {
        if higher_is_better {
            -measured.ln()
        } else {
            measured.ln()
        }
    })
}

/// One area's points: its name, each benchmark's (log canary, log time)
/// points, and the log canaries of its slow rounds.
type AreaPoints = (String, Vec<Vec<(f64, f64)>>, Vec<f64>);

/// Each area's response to the canary, in the order the areas first
/// appear. A benchmark counts with at least two rounds that have a canary;
/// its points are centred on its own means, so only how its rounds moved
/// with the canary enters the slope, not how it differs from the others.
pub fn responses(benches: &[RoundsOf<'_>]) -> Vec<Response> {
    // Per area: each benchmark's (log canary, log time) points, and the
    // log canaries of the slow rounds.
    let mut areas: Vec<AreaPoints> = Vec::new();
    for b in benches {
        let pts: Vec<(f64, f64, bool)> = b
            .rounds
            .iter()
            .filter_map(|r| {
                let c = r.canary.filter(|c| c.is_finite() && *c > 0.0)?;
                Some((c.ln(), measured_log_time(r, b.higher_is_better)?, r.slow))
            })
            .collect();
        if pts.len() < 2 {
            continue;
        }
        let k = match areas.iter().position(|(a, _, _)| a == b.area) {
            Some(k) => k,
            None => {
                areas.push((b.area.to_string(), Vec::new(), Vec::new()));
                areas.len() - 1
            }
        };
        areas[k].1.push(pts.iter().map(|p| (p.0, p.1)).collect());
        areas[k].2.extend(pts.iter().filter(|p| p.2).map(|p| p.0));
    }
    areas
        .into_iter()
        .map(|(area, groups, slow)| {
            let rounds = groups.iter().map(Vec::len).sum();
            let fit = pooled_slope(&groups);
            let (slope, low, high) = fit.map_or((0.0, 0.0, 0.0), |(b, lo, hi, _)| (b, lo, hi));
            let slow_canary = crate::stats::median(&slow).map_or(1.0, f64::exp);
            let effect = slow_canary.powf(low) - 1.0;
            Response {
                area,
                slope,
                fitted: fit.is_some(),
                low,
                high,
                rounds,
                slow: slow.len(),
                slow_canary,
                predicts: fit.is_some()
                    && slow.len() >= MIN_SLOW_ROUNDS
                    && low > 0.0
                    && effect >= MIN_EFFECT,
            }
        })
        .collect()
}

/// The response of `area` among `responses`.
pub fn of_area<'a>(responses: &'a [Response], area: &str) -> Option<&'a Response> {
    responses.iter().find(|r| r.area == area)
}

/// True when the canary predicts `area` (see [`Response::predicts`]).
pub fn predicts(responses: &[Response], area: &str) -> bool {
    of_area(responses, area).is_some_and(|r| r.predicts)
}

/// The areas whose slow rounds the canary did not predict, in words: each
/// with its slope and interval ("memory (slope 0.02 [-0.03, 0.07])").
pub fn unpredicted_words(responses: &[Response]) -> Option<String> {
    let not: Vec<String> = responses
        .iter()
        .filter(|r| !r.predicts && r.slow > 0)
        .map(|r| {
            if r.fitted {
                format!(
                    "{} (slope {:.2} [{:.2}, {:.2}])",
                    r.area, r.slope, r.low, r.high
                )
            } else {
                format!("{} (too few rounds to tell)", r.area)
            }
        })
        .collect();
    (!not.is_empty()).then(|| not.join(", "))
}

/// A difference between the rounds measured on two CPUs is named only when
/// its whole interval lies beyond this (a few per cent is what rounds
/// differ by anyway, and "two states" says more).
pub const PLACEMENT_GAP: f64 = 0.03;

/// A state tied to where rounds ran: an area's rounds measured on one CPU
/// against those on another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlacementEffect {
    /// The area.
    pub area: String,
    /// The CPU whose rounds measured faster.
    pub fast_cpu: u32,
    /// The CPU whose rounds measured slower.
    pub slow_cpu: u32,
    /// How much slower, as a ratio (1.08 = 8% slower).
    pub ratio: f64,
    /// The ratio's interval (at [`PLACEMENT_ALPHA`] shared by the areas
    /// tested), low end.
    pub low: f64,
    /// The ratio's interval, high end.
    pub high: f64,
    /// Rounds compared (on either CPU).
    pub rounds: usize,
}

/// The pooled within-group least-squares slope of y on x over `groups`
/// (each group's points centred on its own means) with its 95% interval:
/// `(slope, low, high, points)`; `None` without variation in x or enough
/// points.
fn pooled_slope(groups: &[Vec<(f64, f64)>]) -> Option<(f64, f64, f64, usize)> {
    let (mut sxx, mut sxy, mut syy, mut n, mut k) = (0.0, 0.0, 0.0, 0usize, 0usize);
    for g in groups.iter().filter(|g| g.len() >= 2) {
        let m = g.len() as f64;
        let mx = g.iter().map(|p| p.0).sum::<f64>() / m;
        let my = g.iter().map(|p| p.1).sum::<f64>() / m;
        for &(x, y) in g {
            sxx += (x - mx) * (x - mx);
            sxy += (x - mx) * (y - my);
            syy += (y - my) * (y - my);
        }
        n += g.len();
        k += 1;
    }
    let df = n as f64 - k as f64 - 1.0;
    if sxx <= 1e-12 || df < 1.0 {
        return None;
    }
    let b = sxy / sxx;
    let se = ((syy - b * sxy).max(0.0) / df / sxx).sqrt();
    let hw = t975(df) * se;
    Some((b, b - hw, b + hw, n))
}

/// The level shared by the areas a run tests for a state tied to
/// placement (Bonferroni: the clearest area is the one named, so with
/// eleven areas each tested at 5% a run would name one by chance in two
/// of five).
pub const PLACEMENT_ALPHA: f64 = 0.05;

/// Degrees of freedom an area's fit needs before it is tested (fewer rounds
/// on either CPU show no state; the critical value is meant for 10 or more).
const PLACEMENT_MIN_DF: f64 = 10.0;

/// One round in the placement fit: its benchmark, its worker process (0:
/// the run's own), 1 on the second CPU and 0 on the first, its log time.
type Placed = (usize, u32, f64, f64);

/// An area's rounds that stayed on one CPU: each with that CPU.
type AreaRounds<'a> = (&'a str, Vec<(u32, Placed)>);

/// The least-squares slope of log time on the CPU with benchmark and worker
/// effects taken out (two-way fixed effects, by alternating projections):
/// `(slope, standard error, degrees of freedom)`.
///
/// Why the worker: round k of every benchmark runs in worker k, one pass
/// of the run after another, so a worker is also a stretch of time. A
/// pass that ran slower as a whole (a slow minute of the host, the
/// process's own start) while its worker sat on one CPU is not a state of
/// that CPU: only rounds of one worker on both CPUs compare them.
fn within_slope(points: &[Placed]) -> Option<(f64, f64, f64)> {
    let bench: Vec<usize> = points.iter().map(|p| p.0).collect();
    let worker: Vec<usize> = points.iter().map(|p| p.1 as usize).collect();
    let benches = 1 + bench.iter().max()?;
    let workers = 1 + worker.iter().max()?;
    let mut x: Vec<f64> = points.iter().map(|p| p.2).collect();
    let mut y: Vec<f64> = points.iter().map(|p| p.3).collect();
    let (mut nb, mut nw) = (0, 0);
    for _ in 0..100 {
        let before = x.clone();
        for v in [&mut x, &mut y] {
            nb = demean(v, &bench, benches);
            nw = demean(v, &worker, workers);
        }
        let moved = x.iter().zip(&before).map(|(a, b)| (a - b).abs());
        if moved.fold(0.0, f64::max) < 1e-12 {
            break;
        }
    }
    let sxx: f64 = x.iter().map(|v| v * v).sum();
    let df = points.len() as f64 - (nb + nw) as f64;
    if sxx <= 1e-9 || df < PLACEMENT_MIN_DF {
        return None;
    }
    let b = x.iter().zip(&y).map(|(x, y)| x * y).sum::<f64>() / sxx;
    let rss: f64 = x.iter().zip(&y).map(|(x, y)| (y - b * x).powi(2)).sum();
    Some((b, (rss / df / sxx).sqrt(), df))
}

/// Subtracts from each value the mean of its group (`keys[i]`, below
/// `groups`); returns how many groups hold a value. Kept out of line: its
/// four calls inlined cost the binary more than the calls cost a run.
#[inline(never)]
fn demean(v: &mut [f64], keys: &[usize], groups: usize) -> usize {
    let mut sum = vec![0.0; groups];
    let mut n = vec![0usize; groups];
    for (&k, &v) in keys.iter().zip(v.iter()) {
        sum[k] += v;
        n[k] += 1;
    }
    for (&k, v) in keys.iter().zip(v.iter_mut()) {
        *v -= sum[k] / n[k] as f64;
    }
    n.iter().filter(|&&c| c > 0).count()
}

/// The clearest state tied to placement in a run. Per area, the rounds
/// that stayed on one CPU (start = end) on the area's two most used CPUs
/// give how much slower one CPU's rounds measured than the other's, within
/// each benchmark and each worker ([`within_slope`]), with its interval at
/// [`PLACEMENT_ALPHA`] shared by the areas tested. Named only when that
/// interval lies wholly beyond [`PLACEMENT_GAP`]; the largest such ratio of
/// the run is returned.
pub fn placement_effect(benches: &[RoundsOf<'_>]) -> Option<PlacementEffect> {
    use std::collections::BTreeMap;
    // Per area: its rounds that stayed on one CPU, each with that CPU.
    let mut by_area: Vec<AreaRounds<'_>> = Vec::new();
    for (i, b) in benches.iter().enumerate() {
        let pts = b.rounds.iter().filter_map(|r| {
            let p = r.placement.filter(|p| p.start == p.end)?;
            let y = measured_log_time(r, b.higher_is_better)?;
            Some((p.start, (i, r.process.unwrap_or(0), 0.0, y)))
        });
        match by_area.iter_mut().find(|(a, _)| *a == b.area) {
            Some((_, v)) => v.extend(pts),
            None => by_area.push((b.area, pts.collect())),
        }
    }
    let mut fits = Vec::new();
    for (area, pts) in by_area {
        let mut count: BTreeMap<u32, usize> = BTreeMap::new();
        for (cpu, _) in &pts {
            *count.entry(*cpu).or_default() += 1;
        }
        let mut cpus: Vec<(u32, usize)> = count.into_iter().collect();
        cpus.sort_by_key(|c| std::cmp::Reverse(c.1));
        let [(ca, na), (cb, nb), ..] = cpus.as_slice() else {
            continue;
        };
        if *na < 3 || *nb < 3 {
            continue;
        }
        // x = 1 on CPU cb, 0 on CPU ca: the slope is log(time on cb / on ca).
        let placed: Vec<Placed> = pts
            .iter()
            .filter(|(c, _)| c == ca || c == cb)
            .map(|&(c, (b, w, _, y))| (b, w, f64::from(u8::from(c == *cb)), y))
            .collect();
        if let Some((d, se, df)) = within_slope(&placed) {
            fits.push((area, *ca, *cb, d, se, df, placed.len()));
        }
    }
    let alpha = PLACEMENT_ALPHA / fits.len().max(1) as f64;
    let gap = (1.0 + PLACEMENT_GAP).ln();
    let mut best: Option<PlacementEffect> = None;
    for (area, ca, cb, d, se, df, rounds) in fits {
        let hw = crate::stats::t_two_sided(alpha, df) * se;
        // Oriented so the ratio is above 1: the slower CPU's over the faster's.
        let (fast_cpu, slow_cpu, d) = if d > 0.0 { (ca, cb, d) } else { (cb, ca, -d) };
        if d - hw <= gap {
            continue;
        }
        let e = PlacementEffect {
            area: area.to_string(),
            fast_cpu,
            slow_cpu,
            ratio: d.exp(),
            low: (d - hw).exp(),
            high: (d + hw).exp(),
            rounds,
        };
        if best.as_ref().is_none_or(|b| e.ratio > b.ratio) {
            best = Some(e);
        }
    }
    best
}

impl PlacementEffect {
    /// The effect in words a user can act on.
    pub fn words(&self) -> String {
        format!(
            "two states tied to process placement: {} rounds on CPU {} measured {:.0}% [{:.0}, {:.0}] slower than on CPU {} (of {} rounds): pin with --cpu for the lower spread",
            self.area,
            self.slow_cpu,
            (self.ratio - 1.0) * 100.0,
            (self.low - 1.0) * 100.0,
            (self.high - 1.0) * 100.0,
            self.fast_cpu,
            self.rounds
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round measured at `t` ns with canary `c` (slow above 1.10).
    fn r(t: f64, c: f64) -> Round {
        Round {
            median: t,
            n: 5,
            used: true,
            canary: Some(c),
            slow: c > super::super::canary::SLOW_PHASE,
            ..Round::default()
        }
    }

    /// Twelve benchmarks of `area`, five rounds each, the canary 1.0 or
    /// 1.25 by round, each round's time `base · canary^slope` with a
    /// deterministic ±1% wobble.
    fn bench_rounds(slope: f64) -> Vec<Vec<Round>> {
        (0..12)
            .map(|b| {
                let base = 10.0 * (b + 1) as f64;
                (0..5)
                    .map(|i| {
                        let c = if (i + b) % 2 == 0 { 1.25 } else { 1.0 };
                        let wobble = 1.0 + 0.01 * (((i * 7 + b * 3) % 5) as f64 - 2.0) / 2.0;
                        r(base * f64::powf(c, slope) * wobble, c)
                    })
                    .collect()
            })
            .collect()
    }

    fn fit(area: &str, rounds: &[Vec<Round>]) -> Response {
        let views: Vec<RoundsOf<'_>> = rounds
            .iter()
            .map(|rs| RoundsOf {
                area,
                rounds: rs,
                higher_is_better: false,
            })
            .collect();
        responses(&views).remove(0)
    }

    #[test]
    fn a_canary_that_predicts_is_followed() {
        let resp = fit("memory", &bench_rounds(1.0));
        assert!(resp.predicts, "{resp:?}");
        assert!((resp.slope - 1.0).abs() < 0.1, "{resp:?}");
        assert!(resp.low > 0.5 && resp.high < 1.5, "{resp:?}");
        assert_eq!(resp.rounds, 60);
        let half = fit("memory", &bench_rounds(0.5));
        assert!(half.predicts && (half.slope - 0.5).abs() < 0.1, "{half:?}");
    }

    #[test]
    fn a_canary_that_does_not_predict_or_anti_predicts_is_not_followed() {
        let flat = fit("memory", &bench_rounds(0.0));
        assert!(!flat.predicts, "{flat:?}");
        assert!(flat.low < 0.0 && flat.high > 0.0, "{flat:?}");
        // slow in exactly the rounds where the benchmark is fast
        let anti = fit("memory", &bench_rounds(-0.7));
        assert!(!anti.predicts && anti.high < 0.0, "{anti:?}");
        // a response that is real but too small to matter: 1.25^0.08 < 1.02
        let faint = fit("memory", &bench_rounds(0.08));
        assert!(faint.low > 0.0 && !faint.predicts, "{faint:?}");
        assert!((faint.slow_canary - 1.25).abs() < 1e-9, "{faint:?}");
        let words = unpredicted_words(&[flat, anti]).unwrap();
        assert!(words.starts_with("memory (slope "), "{words}");
    }

    #[test]
    fn a_corrected_round_is_read_as_measured() {
        // measured 130 ns in a 1.3x canary round, stored corrected to 100
        let mut corrected = r(100.0, 1.3);
        corrected.phase_factor = Some(1.3);
        let t = measured_log_time(&corrected, false).unwrap();
        assert!((t - 130f64.ln()).abs() < 1e-9);
        // a rate: 100 stored, measured 100/1.3
        let rate = measured_log_time(&corrected, true).unwrap();
        assert!((rate + (100.0f64 / 1.3).ln()).abs() < 1e-9);
        assert_eq!(measured_log_time(&r(0.0, 1.0), false), None);
    }

    /// Rounds of `benches` benchmarks, `per` rounds each (round k in worker
    /// k) alternating CPU 0 and CPU 1, those on CPU 1 `ratio` times slower
    /// (±0.5% wobble).
    fn placed(benches: usize, per: usize, ratio: f64) -> Vec<Vec<Round>> {
        placed_by(benches, per, |b, i| {
            let cpu = ((i + b) % 2) as u32;
            (cpu, if cpu == 1 { ratio } else { 1.0 })
        })
    }

    /// Rounds of `benches` benchmarks, `per` rounds each (round k in worker
    /// k), round `i` of benchmark `b` on the CPU `at(b, i)` gives and slower
    /// by its factor (±0.5% wobble).
    fn placed_by(
        benches: usize,
        per: usize,
        at: impl Fn(usize, usize) -> (u32, f64),
    ) -> Vec<Vec<Round>> {
        (0..benches)
            .map(|b| {
                (0..per)
                    .map(|i| {
                        let (cpu, slower) = at(b, i);
                        let wobble = 1.0 + 0.005 * ((i * 5 + b) % 3) as f64;
                        let mut r = r((10.0 + b as f64) * slower * wobble, 1.0);
                        r.placement = Some(super::super::Placement {
                            start: cpu,
                            end: cpu,
                            canary: Some(cpu),
                        });
                        r.process = Some(i as u32 + 1);
                        r
                    })
                    .collect()
            })
            .collect()
    }

    fn views<'a>(area: &'a str, rounds: &'a [Vec<Round>]) -> Vec<RoundsOf<'a>> {
        rounds
            .iter()
            .map(|rs| RoundsOf {
                area,
                rounds: rs,
                higher_is_better: false,
            })
            .collect()
    }

    #[test]
    fn a_state_tied_to_a_cpu_is_named_and_none_is_invented() {
        let two = placed(10, 3, 1.15);
        let e = placement_effect(&views("memory", &two)).expect("a placement effect");
        assert_eq!((e.fast_cpu, e.slow_cpu), (0, 1));
        assert!((e.ratio - 1.15).abs() < 0.02 && e.low > 1.0, "{e:?}");
        let w = e.words();
        assert!(
            w.starts_with(
                "two states tied to process placement: memory rounds on CPU 1 measured 15%"
            ),
            "{w}"
        );
        assert!(w.ends_with("pin with --cpu for the lower spread"), "{w}");
        // one state: nothing to name
        let one = placed(10, 3, 1.0);
        assert_eq!(placement_effect(&views("memory", &one)), None);
        // pinned: every round on one CPU
        let mut pinned = placed(10, 3, 1.15);
        for r in pinned.iter_mut().flatten() {
            r.placement = Some(super::super::Placement {
                start: 0,
                end: 0,
                canary: Some(0),
            });
        }
        assert_eq!(placement_effect(&views("memory", &pinned)), None);
        // a round that migrated says nothing of one CPU
        let mut moved = placed(10, 3, 1.15);
        for r in moved.iter_mut().flatten() {
            if let Some(p) = r.placement.as_mut() {
                p.end = 1 - p.start;
            }
        }
        assert_eq!(placement_effect(&views("memory", &moved)), None);
        // a real difference, but not clearly past the gap: no "two states"
        let faint = placed(10, 3, 1.02);
        assert_eq!(placement_effect(&views("memory", &faint)), None);
    }

    #[test]
    fn a_slow_pass_is_not_a_state_of_the_cpu_its_worker_sat_on() {
        // Worker 3's pass ran 15% slower as a whole, on CPU 1 throughout;
        // workers 1 and 2 measured alike on both CPUs.
        let rounds = placed_by(20, 3, |b, i| {
            if i == 2 {
                (1, 1.15)
            } else {
                (((i + b) % 2) as u32, 1.0)
            }
        });
        assert_eq!(placement_effect(&views("syscall", &rounds)), None);
        // the same rounds without their workers read as a state of CPU 1
        let mut anonymous = rounds.clone();
        for r in anonymous.iter_mut().flatten() {
            r.process = None;
        }
        let e = placement_effect(&views("syscall", &anonymous)).expect("confounded");
        assert_eq!(e.slow_cpu, 1);
    }

    #[test]
    fn too_few_slow_rounds_or_points_predict_nothing() {
        // two benchmarks, the canary slow in one round of each
        let rounds = vec![
            vec![r(10.0, 1.0), r(13.0, 1.3), r(10.0, 1.0)],
            vec![r(20.0, 1.0), r(26.0, 1.3), r(20.0, 1.0)],
        ];
        let resp = fit("syscall", &rounds);
        assert_eq!(resp.slow, 2);
        assert!(!resp.predicts, "{resp:?}");
        // a benchmark with one round has no within-benchmark variation
        let one = [vec![r(10.0, 1.3)]];
        let views = [RoundsOf {
            area: "x",
            rounds: &one[0],
            higher_is_better: false,
        }];
        assert!(responses(&views).is_empty());
    }
}
