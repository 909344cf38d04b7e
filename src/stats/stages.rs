//! How many rounds a benchmark takes: Stein's two-stage rule.
//!
//! A benchmark is measured in a first stage of [`FIRST_STAGE`] rounds; from
//! them (and from the host's history of the same benchmark, when it has
//! one) its total number of rounds is decided once, between the first stage
//! and the planned count, and never changed after. Looking at the interval
//! after every round and stopping when it is narrow picks the intervals
//! that came out narrow by luck; deciding once from the first stage's
//! spread does not (Stein 1945: the number of rounds depends only on the
//! first stage's spread, which is independent of the rounds' mean, so
//! `mean ± t(first stage) · s₁ / √n` keeps its 95%).
//!
//! Three safeguards against a first stage that happened to be tight:
//! - the target is never tighter than half the run-to-run spread the host's
//!   history shows for the benchmark (a run cannot hold more than that, so
//!   rounds spent below it are wasted);
//! - the spread the decision uses is the larger of the first stage's and
//!   the history's rounds' (pooled over earlier runs, many more degrees of
//!   freedom than three rounds have);
//! - a benchmark that took fewer than the planned rounds states an interval
//!   no narrower than Stein's, nor than the target it stopped at: it stopped
//!   because the answer was known to the target, and says so.
//!
//! Pure functions of numbers, as the rest of this layer.

use serde::{Deserialize, Serialize};

use super::{log_mean_var, t975};

/// Rounds of the first stage, from which the total is decided: the fewest
/// that give a spread (two degrees of freedom) and the fewest every
/// benchmark takes.
pub const FIRST_STAGE: usize = 3;

/// Earlier runs' medians needed before their spread sets a target: with
/// fewer there is no run-to-run spread to read.
pub const MIN_HISTORY_RUNS: usize = 2;

/// Why a benchmark took the rounds it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The planned count: the rule was off (`--target-precision 0`), the
    /// plan had no more rounds than the first stage, or the first stage
    /// did not give a spread.
    Planned,
    /// Decided from the first stage's spread against the target.
    FirstStage,
    /// Decided with the host's history: its run-to-run spread set the
    /// target, or its rounds' spread was wider than the first stage's.
    History,
}

/// How many rounds a benchmark was planned, how many it took and why.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundsDecision {
    /// The rounds the profile (or `--rounds`) planned.
    pub planned: usize,
    /// The rounds decided after the first stage (the planned count when
    /// nothing was decided).
    pub taken: usize,
    /// Why.
    pub reason: Reason,
    /// The relative interval half-width the decision aimed at (0.02 = ±2%);
    /// absent when nothing was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// The standard deviation of the first stage's log round medians, which
    /// Stein's interval is made of; absent when nothing was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sd: Option<f64>,
}

impl RoundsDecision {
    /// The planned count, nothing decided.
    pub fn planned(planned: usize) -> RoundsDecision {
        RoundsDecision {
            planned,
            taken: planned,
            reason: Reason::Planned,
            target: None,
            first_sd: None,
        }
    }

    /// True when the benchmark took fewer rounds than planned.
    pub fn stopped_early(&self) -> bool {
        self.taken < self.planned
    }

    /// The least log half-width the interval of `used` rounds may state:
    /// for a benchmark that stopped early, Stein's `t(2) · s₁ / √n` and the
    /// run's own `target` (or the decision's, when tighter); 0 otherwise
    /// (its interval is the rounds' own). The floor is the run's target, not
    /// one the history raised: a row stops at a raised target because runs
    /// disagree by more, which the findings and `compare` read from the
    /// history themselves.
    pub fn least_half_width(&self, used: usize, target: f64) -> f64 {
        match (self.stopped_early(), self.first_sd, self.target) {
            (true, Some(sd), Some(aim)) if used > 0 => {
                let stein = t975((FIRST_STAGE - 1) as f64) * sd / (used as f64).sqrt();
                stein.max(target.min(aim).ln_1p())
            }
            _ => 0.0,
        }
    }
}

/// What the host's earlier runs say about one benchmark.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowHistory {
    /// Each earlier run's median.
    pub medians: Vec<f64>,
    /// Each earlier run's used round medians.
    pub rounds: Vec<Vec<f64>>,
}

impl RowHistory {
    /// Half the spread of the earlier runs' medians, relative (0.06: runs
    /// lie within ±6% of their middle); `None` with fewer than
    /// [`MIN_HISTORY_RUNS`] usable medians.
    pub fn half_spread(&self) -> Option<f64> {
        let logs: Vec<f64> = self
            .medians
            .iter()
            .filter(|v| v.is_finite() && **v > 0.0)
            .map(|v| v.ln())
            .collect();
        if logs.len() < MIN_HISTORY_RUNS {
            return None;
        }
        let lo = logs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(((hi - lo) / 2.0).exp_m1())
    }

    /// The variance of a benchmark's run median from one run to the next
    /// beyond what each run's rounds explain (log scale, τ²): the variance
    /// of the earlier runs' log medians and this run's (`median`), less the
    /// mean over those runs of their rounds' variance over their count
    /// (this run's `rounds` among them), at least 0. States of the machine
    /// that last a whole run (the page cache, where the run's processes
    /// sit) are in it and in no run's rounds. `None` with fewer than
    /// [`MIN_HISTORY_RUNS`] earlier medians.
    pub fn between_runs_var(&self, median: f64, rounds: &[f64]) -> Option<f64> {
        let runs: Vec<(f64, &[f64])> = self
            .medians
            .iter()
            .zip(&self.rounds)
            .filter(|(m, _)| m.is_finite() && **m > 0.0)
            .map(|(m, r)| (*m, r.as_slice()))
            .collect();
        if runs.len() < MIN_HISTORY_RUNS || !(median.is_finite() && median > 0.0) {
            return None;
        }
        let all: Vec<(f64, &[f64])> = runs.into_iter().chain([(median, rounds)]).collect();
        let medians: Vec<f64> = all.iter().map(|(m, _)| *m).collect();
        let (_, between) = log_mean_var(&medians)?;
        let within: Vec<f64> = all
            .iter()
            .filter_map(|(_, r)| log_mean_var(r).map(|(_, v)| v / r.len() as f64))
            .collect();
        let within = within.iter().sum::<f64>() / within.len().max(1) as f64;
        Some((between - within).max(0.0))
    }

    /// The standard deviation of the log round medians within a run,
    /// pooled over the earlier runs that have two rounds or more; `None`
    /// when none has.
    pub fn round_sd(&self) -> Option<f64> {
        let (mut ss, mut df) = (0.0, 0.0);
        for r in &self.rounds {
            if let Some((_, var)) = log_mean_var(r) {
                let k = (r.len() - 1) as f64;
                ss += var * k;
                df += k;
            }
        }
        (df > 0.0).then(|| (ss / df).sqrt())
    }
}

/// The standard deviation of the logs of `first` (the first stage's round
/// medians); `None` with fewer than two usable values.
pub fn first_stage_sd(first: &[f64]) -> Option<f64> {
    log_mean_var(first).map(|(_, var)| var.sqrt())
}

/// Decides, once, how many rounds a benchmark takes: the fewest `n` with
/// `t(2) · s / √n ≤ target`, between [`FIRST_STAGE`] and `planned`, where
/// `s` is the first stage's spread (`first`, its round medians) or the
/// history's when wider, and `target` (relative half-width) is raised to
/// half the history's run-to-run spread when that is wider. Never more than
/// `planned`; the planned count when the first stage gives no spread.
pub fn decide(
    first: &[f64],
    planned: usize,
    target: f64,
    history: Option<&RowHistory>,
) -> RoundsDecision {
    let Some(s1) = first_stage_sd(first).filter(|_| planned > FIRST_STAGE && target > 0.0) else {
        return RoundsDecision::planned(planned);
    };
    let floor = history.and_then(RowHistory::half_spread);
    let s_hist = history.and_then(RowHistory::round_sd);
    let aim = target.max(floor.unwrap_or(0.0));
    let s = s1.max(s_hist.unwrap_or(0.0));
    let by_history = aim > target || s > s1;
    RoundsDecision {
        planned,
        taken: rounds_for(s, aim, planned),
        reason: if by_history {
            Reason::History
        } else {
            Reason::FirstStage
        },
        target: Some(aim),
        first_sd: Some(s1),
    }
}

/// The fewest rounds `n` with `t(2) · s / √n ≤ aim` (log spread `s`,
/// relative target `aim`), between [`FIRST_STAGE`] and `planned`.
fn rounds_for(s: f64, aim: f64, planned: usize) -> usize {
    let need = (t975((FIRST_STAGE - 1) as f64) * s / aim.ln_1p()).powi(2);
    // `need` may be huge or NaN for a zero target: clamp before converting.
    if need.is_finite() {
        (need.ceil() as usize).clamp(FIRST_STAGE, planned.max(FIRST_STAGE))
    } else {
        planned
    }
}

/// The rounds a benchmark is expected to take, from the host's history
/// alone (a run's time is announced before any first stage): the rule with
/// the history's round spread for the first stage's. The planned count
/// without a history that has rounds, or with the rule off.
pub fn expected_rounds(planned: usize, target: f64, history: Option<&RowHistory>) -> usize {
    let Some(s) = history.and_then(RowHistory::round_sd) else {
        return planned;
    };
    if planned <= FIRST_STAGE || target <= 0.0 {
        return planned;
    }
    let aim = target.max(history.and_then(RowHistory::half_spread).unwrap_or(0.0));
    rounds_for(s, aim, planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_between_runs_is_what_their_rounds_do_not_explain() {
        let h = |medians: &[f64], rounds: &[&[f64]]| RowHistory {
            medians: medians.to_vec(),
            rounds: rounds.iter().map(|r| r.to_vec()).collect(),
        };
        // one earlier run: no spread between runs to read
        assert_eq!(
            h(&[100.0], &[&[100.0; 3]]).between_runs_var(100.0, &[100.0; 3]),
            None
        );
        // runs at 90, 100 and 110 whose rounds agreed: all of it is between runs
        let v = h(&[90.0, 110.0], &[&[90.0; 3], &[110.0; 3]])
            .between_runs_var(100.0, &[100.0; 3])
            .unwrap();
        assert!((v.sqrt() - 0.1).abs() < 0.01, "{}", v.sqrt());
        // the same medians from rounds spread as widely: none of it is
        let wide: &[f64] = &[80.0, 100.0, 125.0];
        let v = h(&[90.0, 110.0], &[wide, wide])
            .between_runs_var(100.0, wide)
            .unwrap();
        assert_eq!(v, 0.0);
        // a median that is not a time is not read
        assert_eq!(
            h(&[90.0, 110.0], &[&[], &[]]).between_runs_var(f64::NAN, &[]),
            None
        );
    }

    /// A normal deviate (Box–Muller) from `rng`.
    fn normal(rng: &mut fastrand::Rng) -> f64 {
        let u = rng.f64().max(1e-300);
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * rng.f64()).cos()
    }

    /// One simulated run: its own centre (`truth` shifted by the run's
    /// run-to-run shift, `tau`), its rounds spread by `sigma` (log scale),
    /// the rounds decided by the rule (or the planned count when `target`
    /// is 0) and the interval the run states. Returns (centre, low, high,
    /// rounds taken).
    fn run(
        rng: &mut fastrand::Rng,
        (sigma, tau): (f64, f64),
        planned: usize,
        target: f64,
        history: Option<&RowHistory>,
    ) -> (f64, f64, f64, usize) {
        let centre = 100.0 * (tau * normal(rng)).exp();
        let rounds: Vec<f64> = (0..planned)
            .map(|_| centre * (sigma * normal(rng)).exp())
            .collect();
        let d = decide(&rounds[..FIRST_STAGE], planned, target, history);
        let used = &rounds[..d.taken];
        let (mean, _) = log_mean_var(used).unwrap();
        let point = mean.exp();
        let (_, hi) = super::super::round_interval(used, point).unwrap();
        let hw = (hi / point)
            .ln()
            .max(d.least_half_width(used.len(), target));
        (centre, point * (-hw).exp(), point * hw.exp(), d.taken)
    }

    /// The host's history of a benchmark: `k` earlier runs at the planned count.
    fn history(rng: &mut fastrand::Rng, spread: (f64, f64), k: usize) -> RowHistory {
        let mut h = RowHistory::default();
        for _ in 0..k {
            let centre = 100.0 * (spread.1 * normal(rng)).exp();
            let r: Vec<f64> = (0..5)
                .map(|_| centre * (spread.0 * normal(rng)).exp())
                .collect();
            h.medians.push(crate::stats::median(&r).unwrap());
            h.rounds.push(r);
        }
        h
    }

    /// Coverage of the run's own centre and the mean rounds taken, over
    /// `n` simulated runs.
    fn coverage(spread: (f64, f64), target: f64, hist: usize, n: usize) -> (f64, f64) {
        let mut rng = fastrand::Rng::with_seed(54);
        let (mut hit, mut rounds) = (0, 0);
        for _ in 0..n {
            let h = (hist > 0).then(|| history(&mut rng, spread, hist));
            let (centre, lo, hi, taken) = run(&mut rng, spread, 5, target, h.as_ref());
            assert!((FIRST_STAGE..=5).contains(&taken), "{taken} rounds");
            hit += usize::from(lo <= centre && centre <= hi);
            rounds += taken;
        }
        (hit as f64 / n as f64, rounds as f64 / n as f64)
    }

    /// The interval's claim is about the run: the value its rounds scatter
    /// around (the truth plus this run's shift). Another run's median also
    /// carries that run's shift and its own rounds' error, which no interval
    /// of one run's rounds can hold 95% of the time; so coverage is checked
    /// against the run's centre, with and without run-to-run shifts.
    #[test]
    fn two_stage_intervals_hold_the_run_centre_at_spreads_of_1_to_5_percent() {
        for sigma in [0.01, 0.02, 0.03, 0.05] {
            for (tau, hist) in [(0.0, 0), (0.03, 0), (0.03, 3), (0.10, 3)] {
                let (cov, rounds) = coverage((sigma, tau), 0.02, hist, 4000);
                assert!(
                    cov >= 0.93,
                    "spread {sigma}, shift {tau}, history {hist}: {cov} in {rounds} rounds"
                );
            }
        }
        // The rule off: the planned rounds, the plain interval.
        let (cov, rounds) = coverage((0.02, 0.0), 0.0, 0, 4000);
        assert!(cov >= 0.93 && rounds == 5.0, "{cov} {rounds}");
    }

    #[test]
    fn tight_rows_take_the_first_stage_and_wide_ones_the_planned_count() {
        let (_, tight) = coverage((0.002, 0.0), 0.02, 0, 500);
        assert_eq!(tight, 3.0);
        let (_, wide) = coverage((0.10, 0.0), 0.02, 0, 500);
        assert!(wide > 4.9, "{wide}");
        // A wide run-to-run spread raises the target: fewer rounds.
        let (_, with_history) = coverage((0.01, 0.10), 0.02, 3, 500);
        let (_, without) = coverage((0.01, 0.10), 0.02, 0, 500);
        assert!(with_history < without, "{with_history} vs {without}");
    }

    #[test]
    fn never_more_rounds_than_planned_nor_fewer_than_the_first_stage() {
        let first = [100.0, 150.0, 70.0];
        for planned in 1..12 {
            let d = decide(&first, planned, 0.001, None);
            assert_eq!(d.taken, planned, "a wide first stage takes the plan");
            let d = decide(&[100.0, 100.0, 100.0], planned, 0.02, None);
            assert_eq!(
                d.taken,
                planned.min(FIRST_STAGE),
                "a tight one the first stage"
            );
        }
        // Off, or nothing to decide: the plan, said so.
        assert_eq!(decide(&first, 5, 0.0, None).reason, Reason::Planned);
        assert_eq!(decide(&first, 3, 0.02, None).reason, Reason::Planned);
        assert_eq!(decide(&[100.0], 5, 0.02, None).taken, 5);
    }

    #[test]
    fn the_history_is_preferred_to_a_first_stage_that_came_out_tight() {
        let tight = [100.0, 100.1, 99.9];
        let alone = decide(&tight, 5, 0.02, None);
        assert_eq!((alone.taken, alone.reason), (3, Reason::FirstStage));
        // Earlier runs whose rounds spread by ±5%: this tight stage was luck.
        let h = RowHistory {
            medians: vec![100.0, 101.0],
            rounds: vec![vec![95.0, 100.0, 105.0, 98.0, 103.0]; 2],
        };
        let d = decide(&tight, 5, 0.02, Some(&h));
        assert_eq!((d.taken, d.reason), (5, Reason::History));
        // Runs 12% apart: ±6% is all a run can hold, and 3 rounds reach it.
        let apart = RowHistory {
            medians: vec![94.0, 106.0],
            rounds: vec![vec![99.0, 100.0, 101.0]; 2],
        };
        let d = decide(&[99.0, 101.0, 100.0], 5, 0.02, Some(&apart));
        assert_eq!((d.taken, d.reason), (3, Reason::History));
        assert!((d.target.unwrap() - 0.06).abs() < 0.002, "{:?}", d.target);
    }

    #[test]
    fn a_row_that_stopped_early_states_at_least_its_target() {
        let d = decide(&[100.0, 100.01, 99.99], 5, 0.02, None);
        assert!(d.stopped_early());
        let hw = d.least_half_width(3, 0.02);
        assert!((hw - 0.02f64.ln_1p()).abs() < 1e-12, "{hw}");
        assert_eq!(RoundsDecision::planned(5).least_half_width(5, 0.02), 0.0);
    }

    #[test]
    fn the_expected_rounds_follow_the_history() {
        let tight = RowHistory {
            medians: vec![100.0, 100.5],
            rounds: vec![vec![99.9, 100.0, 100.1]; 2],
        };
        assert_eq!(expected_rounds(5, 0.02, Some(&tight)), 3);
        let wide = RowHistory {
            medians: vec![100.0, 100.5],
            rounds: vec![vec![90.0, 100.0, 110.0]; 2],
        };
        assert_eq!(expected_rounds(5, 0.02, Some(&wide)), 5);
        assert_eq!(expected_rounds(5, 0.02, None), 5);
        assert_eq!(expected_rounds(5, 0.0, Some(&tight)), 5);
        assert_eq!(expected_rounds(3, 0.02, Some(&tight)), 3);
    }

    #[test]
    fn history_spreads_read_runs_and_pool_rounds() {
        let h = RowHistory {
            medians: vec![90.0, 110.0, 100.0],
            rounds: vec![vec![1.0, 1.0], vec![1.0]],
        };
        let half = h.half_spread().unwrap();
        assert!((half - ((110.0f64 / 90.0).ln() / 2.0).exp_m1()).abs() < 1e-12);
        assert_eq!(h.round_sd(), Some(0.0));
        assert_eq!(RowHistory::default().half_spread(), None);
        assert_eq!(RowHistory::default().round_sd(), None);
    }
}
