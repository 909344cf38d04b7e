//! The phase rules of this source tree applied again to a run already made:
//! a kept document's rounds, as measured (any correction for a phase
//! undone), judged by [`super::response`] and summarised again, and its
//! stability graded with the counts that gives.
//!
//! Why: the rules that turn rounds into an estimate, an interval and a
//! verdict were tuned on one kind of machine at a time. Replayed on the
//! corpus of real runs from every machine kind (tests/fixtures/corpus/),
//! a change that helps one machine and hurts another fails a test, not a
//! later sitting on the other machine.

use super::canary::Stability;
use super::phase::{PHASE_SLOPE_RANGE, correct_rounds, phase_slope, set_aside_slow_rounds};
use super::response::{self, Response, RoundsOf};
use super::{Measurement, Round, area_of};
use crate::stats::{Summary, round_interval};

/// What the replay did to a run's rounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replayed {
    /// Each area's response to the canary.
    pub responses: Vec<Response>,
    /// Slow rounds of areas the canary does not predict, kept as measured.
    pub unpredicted: usize,
    /// Slow rounds left in the estimate in areas it predicts.
    pub left: usize,
    /// Slow rounds corrected in areas it predicts.
    pub corrected: usize,
    /// Measured-again rounds undone (their area does not follow the canary,
    /// so the round they replaced is back in the estimate).
    pub undone: usize,
}

/// A result's rounds and its rounds' samples, as measured.
type AsMeasured = (Vec<Round>, Vec<Vec<f64>>);

/// A round as measured: its phase correction undone.
fn as_measured(r: &Round, higher_is_better: bool) -> Round {
    let mut r = r.clone();
    if let Some(f) = r.phase_factor.take().filter(|f| f.is_finite() && *f > 0.0) {
        r.median = if higher_is_better {
            r.median / f
        } else {
            r.median * f
        };
    }
    r
}

/// The samples of a result's used rounds, round by round, as measured;
/// `None` when the rounds do not account for the samples.
fn samples_by_round(m: &Measurement) -> Option<Vec<Vec<f64>>> {
    let used: Vec<&Round> = m.rounds.iter().filter(|r| r.used).collect();
    if used.iter().map(|r| r.n).sum::<usize>() != m.samples.len() {
        return None;
    }
    let raw = super::claims::measured_samples(m);
    let mut at = 0;
    let mut out = Vec::with_capacity(m.rounds.len());
    for r in &m.rounds {
        if r.used {
            out.push(raw[at..at + r.n].to_vec());
            at += r.n;
        } else {
            // Left out: only its median is on record.
            out.push(vec![r.median; r.n.max(1)]);
        }
    }
    Some(out)
}

/// Applies this tree's phase rules to `results`, measured with `planned`
/// rounds each (the profile's count: rounds past it were measured again),
/// names a state tied to placement by this tree's rule, and grades
/// `stability` again with what they give. Results whose rounds
/// do not account for their samples are left as they are.
pub fn replay(
    results: &mut [Measurement],
    planned: usize,
    stability: Option<&mut Stability>,
) -> Replayed {
    let measured: Vec<Option<AsMeasured>> = results
        .iter()
        .map(|m| {
            let samples = samples_by_round(m)?;
            let hib = m.higher_is_better();
            let rounds: Vec<Round> = m.rounds.iter().map(|r| as_measured(r, hib)).collect();
            Some((rounds, samples))
        })
        .collect();
    let views: Vec<RoundsOf<'_>> = results
        .iter()
        .zip(&measured)
        .filter_map(|(m, x)| {
            Some(RoundsOf {
                area: area_of(&m.id),
                rounds: &x.as_ref()?.0,
                higher_is_better: m.higher_is_better(),
            })
        })
        .collect();
    let responses = response::responses(&views);
    let placement = response::placement_effect(&views);
    let mut out = Replayed::default();
    for (m, x) in results.iter_mut().zip(measured) {
        let Some((mut rounds, mut samples)) = x else {
            continue;
        };
        let hib = m.higher_is_better();
        let area = area_of(&m.id).to_string();
        if response::predicts(&responses, &area) {
            // As the run did: its set-aside and measured-again rounds stand;
            // slow rounds left in are corrected by the benchmark's own
            // slope, or its area's.
            set_aside_slow_rounds(&mut rounds);
            let (lo, hi) = PHASE_SLOPE_RANGE;
            let slope = phase_slope(&rounds, hib)
                .or_else(|| response::of_area(&responses, &area).map(|r| r.slope))
                .unwrap_or(1.0)
                .clamp(lo, hi);
            // The samples are values in the base unit: a time per
            // operation, or a rate whose correction is the inverse.
            let mut ns: Vec<Vec<f64>> = samples
                .iter()
                .map(|s| s.iter().map(|v| if hib { 1.0 / v } else { *v }).collect())
                .collect();
            out.corrected += correct_rounds(&mut rounds, &mut ns, slope, hib);
            out.left += rounds.iter().filter(|r| r.slow && r.used).count();
            samples = ns
                .into_iter()
                .map(|s| {
                    s.into_iter()
                        .map(|v| if hib { 1.0 / v } else { v })
                        .collect()
                })
                .collect();
        } else {
            out.unpredicted += rounds.iter().filter(|r| r.slow).count();
            // Every round measured in the plan is in; a round measured
            // again in place of a slow one is not.
            for (k, r) in rounds.iter_mut().enumerate() {
                if k >= planned && r.used {
                    out.undone += 1;
                }
                r.used = k < planned;
            }
        }
        let values: Vec<f64> = rounds
            .iter()
            .zip(&samples)
            .filter(|(r, _)| r.used)
            .flat_map(|(_, s)| s.iter().copied())
            .collect();
        let Some(mut summary) = Summary::of(&values) else {
            continue;
        };
        let used: Vec<f64> = rounds.iter().filter(|r| r.used).map(|r| r.median).collect();
        if let Some((lo, hi)) = round_interval(&used, summary.median) {
            summary.ci_low = lo;
            summary.ci_high = hi;
        }
        m.noisy = summary.is_noisy();
        m.warnings.retain(|w| !w.starts_with("noisy:"));
        m.warnings
            .extend(super::warnings::Warning::noise_of(&summary).map(|w| w.to_string()));
        m.summary = summary;
        // the spread between the host's runs the run read from its history
        m.apply_between_runs();
        m.samples = values;
        m.rounds = rounds;
        super::levels::note(m);
    }
    if let Some(s) = stability {
        s.phases.remeasured = s.phases.remeasured.saturating_sub(out.undone);
        // What is neither measured again, kept as measured nor left in was
        // set aside.
        s.phases.set_aside = s
            .phases
            .slow
            .saturating_sub(s.phases.remeasured + out.unpredicted + out.left);
        s.phases.corrected = out.corrected;
        s.phases.unpredicted = out.unpredicted;
        s.phases.responses = responses.clone();
        s.phases.placement = placement;
        s.regrade();
    }
    out.responses = responses;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::canary::{Grade, PhaseCounts};

    /// Twelve results of area `t`, three rounds each at 5 samples, the
    /// canary 1.25 in two rounds of three (slow) and 1.0 in the other; each
    /// round measured at `base · canary^follow`, the slow rounds stored
    /// corrected by the full canary as a run before the rule did.
    fn run_of(follow: f64) -> Vec<Measurement> {
        (0..12)
            .map(|b| {
                let base = 100.0 + b as f64;
                let mut m = Measurement::point(&format!("t.b{b}"), "ns/op", base);
                let (mut rounds, mut samples) = (Vec::new(), Vec::new());
                for i in 0..3 {
                    let c: f64 = if (i + b) % 3 == 0 { 1.0 } else { 1.25 };
                    let measured = base * c.powf(follow) * (1.0 + 0.002 * i as f64);
                    let slow = c > 1.1;
                    let stored = if slow { measured / c } else { measured };
                    samples.extend([stored; 5]);
                    rounds.push(Round {
                        median: stored,
                        n: 5,
                        used: true,
                        canary: Some(c),
                        slow,
                        phase_factor: slow.then_some(c),
                        ..Round::default()
                    });
                }
                m.rounds = rounds;
                m.samples = samples;
                m
            })
            .collect()
    }

    fn stability(results: &[Measurement]) -> Stability {
        let slow = results
            .iter()
            .map(|m| m.rounds.iter().filter(|r| r.slow).count())
            .sum();
        let checks: Vec<f64> = (0..30)
            .map(|i| if i % 3 == 0 { 1000.0 } else { 1250.0 })
            .collect();
        let counts = PhaseCounts {
            rounds: 36,
            slow,
            corrected: slow,
            ..PhaseCounts::default()
        };
        Stability::of(&checks, &[], counts, &Default::default()).unwrap()
    }

    #[test]
    fn a_canary_that_predicts_corrects_and_one_that_does_not_keeps_rounds_as_measured() {
        // the benchmarks slow down with the canary: the correction stands
        let mut follows = run_of(1.0);
        let mut s = stability(&follows);
        assert_eq!(
            s.grade(),
            Grade::Unstable,
            "two slow rounds in three left in"
        );
        let r = replay(&mut follows, 3, Some(&mut s));
        assert!(r.responses[0].predicts, "{:?}", r.responses);
        assert_eq!((r.unpredicted, r.corrected), (0, 24));
        for m in &follows {
            let b = m.id.trim_start_matches("t.b").parse::<f64>().unwrap();
            assert!((m.median / (100.0 + b) - 1.0).abs() < 0.01, "{m:?}");
        }
        // they do not: the slow rounds are read as measured, the results
        // hold the measured time, and the run is no longer unstable
        let mut ignores = run_of(0.0);
        let mut s = stability(&ignores);
        let r = replay(&mut ignores, 3, Some(&mut s));
        assert!(!r.responses[0].predicts, "{:?}", r.responses);
        assert_eq!((r.unpredicted, r.corrected), (24, 0));
        assert!(
            ignores
                .iter()
                .all(|m| m.rounds.iter().all(|r| r.phase_factor.is_none()))
        );
        for m in &ignores {
            let b = m.id.trim_start_matches("t.b").parse::<f64>().unwrap();
            assert!((m.median / (100.0 + b) - 1.0).abs() < 0.01, "{m:?}");
            assert!(m.ci_rel() < 0.02, "as measured the rounds agree: {m:?}");
        }
        assert_eq!(s.phases.unpredicted, 24);
        assert_ne!(s.grade(), Grade::Unstable, "{}", s.line());
        assert!(s.line().contains("kept as measured"), "{}", s.line());
        // and one that anti-predicts (slow canary, faster rounds) likewise
        let mut anti = run_of(-0.5);
        let r = replay(&mut anti, 3, None);
        assert!(!r.responses[0].predicts && r.responses[0].high < 0.0);
        assert_eq!(r.corrected, 0);
    }
}
