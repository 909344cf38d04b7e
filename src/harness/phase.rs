//! Correction for the machine's slow phases: how each benchmark responds
//! to a phase (its slope against the canary), setting aside the slow rounds
//! of benchmarks with enough fast ones, and bringing the slow rounds left
//! in an estimate to the fast phase.
//!
//! Why: on a shared machine a slow phase makes everything run ~25% slower
//! for a few seconds; a result must not move by which of its rounds such a
//! phase happened to hit (see docs/DESIGN.md, "Slow phases").

use super::Round;
use super::round::Track;

/// How a benchmark's time per operation responds to the machine's phase:
/// the least-squares slope of its rounds' log time on their log canary,
/// when at least two fast and two slow rounds are in its estimate (1.0 =
/// it slows down exactly as much as the canary).
fn phase_slope(rounds: &[Round], higher_is_better: bool) -> Option<f64> {
    let pts: Vec<(f64, f64)> = rounds
        .iter()
        .filter(|r| r.used && r.median > 0.0 && r.median.is_finite())
        .filter_map(|r| {
            let y = if higher_is_better {
                -r.median.ln()
            } else {
                r.median.ln()
            };
            Some((r.canary.filter(|c| *c > 0.0)?.ln(), y))
        })
        .collect();
    let slow = rounds.iter().filter(|r| r.used && r.slow).count();
    if slow < 2 || pts.len() < slow + 2 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) = pts
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let sxx: f64 = pts.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = pts.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    (sxx > 1e-6).then(|| sxy / sxx)
}

/// The range a phase slope is held to: a benchmark may ignore the phase
/// (0) or feel it as much as the canary, never the opposite way; a slope
/// from a handful of rounds is noisy, so it never corrects a round by more
/// than the canary's own slowdown (rather too little than too much).
const PHASE_SLOPE_RANGE: (f64, f64) = (0.0, 1.0);

/// Each benchmark's phase slope: its own where its rounds show it (see
/// [`phase_slope`]), else the median of the run's benchmarks that show
/// one (at least five), else 1.
pub(super) fn phase_slopes(tracks: &[Track]) -> Vec<f64> {
    let (lo, hi) = PHASE_SLOPE_RANGE;
    let own: Vec<Option<f64>> = tracks
        .iter()
        .map(|t| phase_slope(&t.rounds, t.bench.unit().higher_is_better()).map(|b| b.clamp(lo, hi)))
        .collect();
    let known: Vec<f64> = own.iter().flatten().copied().collect();
    let run_slope = if known.len() >= 5 {
        crate::stats::median(&known).unwrap_or(1.0)
    } else {
        1.0
    };
    own.into_iter().map(|b| b.unwrap_or(run_slope)).collect()
}

/// Brings the slow rounds still in the estimate (those of benchmarks with
/// too few fast rounds to set them aside) to the machine's fast phase:
/// each such round's times are divided by `canary ^ slope` (see
/// [`phase_slopes`]). A slow phase then no longer moves a result by which
/// of its rounds it happened to hit, and two runs that fell in different
/// phases agree (see docs/DESIGN.md). Returns how many rounds were
/// corrected.
pub(super) fn correct_slow_rounds(tracks: &mut [Track], slopes: &[f64]) -> usize {
    tracks
        .iter_mut()
        .zip(slopes)
        .filter(|(t, _)| !t.bench.paced())
        .map(|(t, &b)| {
            let up = t.bench.unit().higher_is_better();
            correct_rounds(&mut t.rounds, &mut t.samples_ns, b, up)
        })
        .sum()
}

/// Divides the times of the used slow rounds by `canary ^ slope` (a
/// round's samples are ns per operation; its median is in the unit's base,
/// a rate when `higher_is_better`). Returns how many rounds it corrected.
fn correct_rounds(
    rounds: &mut [Round],
    samples_ns: &mut [Vec<f64>],
    slope: f64,
    higher_is_better: bool,
) -> usize {
    let mut corrected = 0;
    for (r, samples) in rounds.iter_mut().zip(samples_ns.iter_mut()) {
        let Some(c) = r.canary.filter(|c| r.used && r.slow && *c > 0.0) else {
            continue;
        };
        let f = c.powf(slope);
        for ns in samples.iter_mut() {
            *ns /= f;
        }
        r.median = if higher_is_better {
            r.median * f
        } else {
            r.median / f
        };
        r.phase_factor = Some(f);
        corrected += 1;
    }
    corrected
}

/// Fast rounds a benchmark needs before its slow rounds leave the estimate.
pub const MIN_FAST_ROUNDS: usize = 3;

/// Leaves a benchmark's remaining slow rounds out of its estimate when at
/// least [`MIN_FAST_ROUNDS`] fast ones are in it: the result then describes
/// the machine's fast phase, as the canary's baseline does, in every run
/// that saw enough of it, so two runs agree whatever share of each fell in
/// a slow phase. The rounds stay on record (`used: false`). Returns how
/// many were set aside.
pub(super) fn set_aside_slow_rounds(rounds: &mut [Round]) -> usize {
    let fast = rounds.iter().filter(|r| r.used && !r.slow).count();
    if fast < MIN_FAST_ROUNDS {
        return 0;
    }
    let mut n = 0;
    for r in rounds.iter_mut().filter(|r| r.used && r.slow) {
        r.used = false;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::canary;

    fn round(slow: bool) -> Round {
        Round {
            median: 1.0,
            n: 5,
            ops: 1,
            at_s: 0.0,
            canary: Some(if slow { 1.3 } else { 1.0 }),
            slow,
            used: true,
            steal_ms: None,
            nivcsw: None,
            migrations: None,
            load: None,
            phase_factor: None,
            process: None,
            cpu: None,
        }
    }

    #[test]
    fn slow_rounds_left_in_are_brought_to_the_fast_phase_by_the_benchmarks_own_slope() {
        // A two-level model: a benchmark of 100 ns in the fast phase feels
        // a slow phase (canary 1.3) with slope 0.5, i.e. 1.3^0.5 = 1.14x.
        let truth = 100.0;
        let mk = |canary: f64| {
            let mut r = round(canary > canary::SLOW_PHASE);
            r.canary = Some(canary);
            r.median = truth * canary.powf(0.5);
            r
        };
        let mut rounds: Vec<Round> = [1.0, 1.3, 1.02, 1.28, 1.32].map(mk).to_vec();
        let b = phase_slope(&rounds, false).unwrap();
        assert!((b - 0.5).abs() < 0.05, "{b}");
        // too few fast rounds to set the slow ones aside: they are corrected
        assert_eq!(set_aside_slow_rounds(&mut rounds), 0);
        let mut samples: Vec<Vec<f64>> = rounds.iter().map(|r| vec![r.median; 3]).collect();
        assert_eq!(correct_rounds(&mut rounds, &mut samples, b, false), 3);
        for (r, s) in rounds.iter().zip(&samples) {
            assert!(r.median < truth * 1.025, "{r:?}");
            assert!((s[0] - r.median).abs() < 1e-9);
            assert_eq!(r.phase_factor.is_some(), r.slow);
        }
        // a rate moves the other way: 10 Mops/s slowed to 10/1.14
        let mut rate: Vec<Round> = [1.0, 1.3, 1.0, 1.3].map(mk).to_vec();
        for r in &mut rate {
            r.median = 1e9 / r.median;
        }
        let b = phase_slope(&rate, true).unwrap();
        assert!((b - 0.5).abs() < 0.05, "{b}");
        let mut samples = vec![vec![]; rate.len()];
        correct_rounds(&mut rate, &mut samples, b, true);
        assert!(
            rate.iter().all(|r| (r.median / 1e7 - 1.0).abs() < 0.01),
            "{rate:?}"
        );
        // without two rounds of each phase there is no slope of its own
        let one_slow: Vec<Round> = [1.0, 1.3, 1.0].map(mk).to_vec();
        assert_eq!(phase_slope(&one_slow, false), None);
        // rounds already out of the estimate are left as they were
        let mut out = vec![mk(1.3)];
        out[0].used = false;
        assert_eq!(correct_rounds(&mut out, &mut [vec![]], 1.0, false), 0);
    }

    #[test]
    fn slow_rounds_are_set_aside_only_beside_enough_fast_ones() {
        // 3 fast + 2 slow: the slow ones leave the estimate, on record
        let mut r: Vec<Round> = [false, true, false, true, false].map(round).to_vec();
        assert_eq!(set_aside_slow_rounds(&mut r), 2);
        assert_eq!(r.len(), 5);
        assert!(r.iter().all(|r| r.used != r.slow));
        // 2 fast + 1 slow (quick): too few fast rounds, all stay
        let mut r: Vec<Round> = [false, true, false].map(round).to_vec();
        assert_eq!(set_aside_slow_rounds(&mut r), 0);
        assert!(r.iter().all(|r| r.used));
        // a round already replaced counts for nothing
        let mut r: Vec<Round> = [false, false, false].map(round).to_vec();
        r[0].used = false;
        r.push(round(true));
        assert_eq!(set_aside_slow_rounds(&mut r), 0);
    }
}
