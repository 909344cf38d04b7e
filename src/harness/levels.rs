//! A result whose rounds fall into two levels: said as two figures, not
//! hidden in one wide interval.
//!
//! Why: a machine can hold two states across a run — where the worker
//! process was placed, which half of a shared core it got — and a
//! benchmark's rounds then read one of two values with little between. The
//! round interval spans both (an L1 hit read ±10% from rounds at 1.22 and
//! 1.34 ns); the reader is better served by the two levels, how many
//! rounds each held, how far apart they are, and whether they follow the
//! CPU the rounds ran on (only then does pinning read one).

use super::warnings::LevelCpus;

/// The smallest gap between two levels worth naming (a few per cent is
/// what rounds differ by anyway).
pub const LEVEL_GAP: f64 = 0.08;

/// How much wider than the spread inside either level the gap between
/// them must be.
pub const GAP_OVER_SPREAD: f64 = 4.0;

/// The spread a level of one round is taken to have (its samples' own
/// scatter, which one round's median does not show).
const ONE_ROUND_SPREAD: f64 = 0.005;

/// Two levels of a result's rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Levels {
    /// The lower level (the geometric mean of its rounds' medians).
    pub low: f64,
    /// Rounds at the lower level.
    pub n_low: usize,
    /// The upper level.
    pub high: f64,
    /// Rounds at the upper level.
    pub n_high: usize,
}

/// The two levels of `medians` (a result's used rounds), when there are at
/// least three rounds and the widest gap between neighbours is at least
/// [`LEVEL_GAP`] and [`GAP_OVER_SPREAD`] times the spread inside either
/// side.
pub fn two_levels(medians: &[f64]) -> Option<Levels> {
    if medians.len() < 3 || medians.iter().any(|m| !(m.is_finite() && *m > 0.0)) {
        return None;
    }
    let mut logs: Vec<f64> = medians.iter().map(|m| m.ln()).collect();
    logs.sort_by(f64::total_cmp);
    let (split, gap) = (1..logs.len())
        .map(|i| (i, logs[i] - logs[i - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (lo, hi) = logs.split_at(split);
    let spread = |s: &[f64]| (s[s.len() - 1] - s[0]).max(ONE_ROUND_SPREAD.ln_1p());
    if gap < LEVEL_GAP.ln_1p() || gap < GAP_OVER_SPREAD * spread(lo).max(spread(hi)) {
        return None;
    }
    let mean = |s: &[f64]| (s.iter().sum::<f64>() / s.len() as f64).exp();
    Some(Levels {
        low: mean(lo),
        n_low: lo.len(),
        high: mean(hi),
        n_high: hi.len(),
    })
}

/// The two-levels warning of a result whose interval is wider than the
/// noise threshold and whose used rounds fall into two levels.
pub fn warning(m: &super::Measurement) -> Option<super::warnings::Warning> {
    if !m.noisy {
        return None;
    }
    let l = two_levels(&m.used_round_medians())?;
    Some(super::warnings::Warning::TwoLevels {
        low: crate::units::human(l.low, m.unit),
        n_low: l.n_low,
        high: crate::units::human(l.high, m.unit),
        n_high: l.n_high,
        apart: l.high / l.low - 1.0,
        cpus: level_cpus(&m.rounds, &l),
    })
}

/// Whether the levels `l` of `rounds` (their used ones) follow the CPU
/// each ran on. With three rounds on two CPUs, one level to a CPU comes by
/// chance one time in four; without it, pinning reads no single level:
/// in four quick runs of one sitting on the AMD guest, 33 of 397 rows at
/// two levels were so.
pub fn level_cpus(rounds: &[super::Round], l: &Levels) -> LevelCpus {
    // The levels' gap is at least four times either's spread: their
    // geometric midpoint lies in it.
    let mid = (l.low * l.high).sqrt();
    let placed: Option<Vec<(bool, u32)>> = rounds
        .iter()
        .filter(|r| r.used)
        .map(|r| {
            Some((
                r.median > mid,
                r.placement.filter(|p| p.start == p.end)?.start,
            ))
        })
        .collect();
    let Some(placed) = placed else {
        return LevelCpus::Unknown;
    };
    let cpu_of = |upper: bool| {
        let mut cpus = placed.iter().filter(|p| p.0 == upper).map(|p| p.1);
        let first = cpus.next()?;
        cpus.all(|c| c == first).then_some(first)
    };
    match (cpu_of(false), cpu_of(true)) {
        (Some(low), Some(high)) if low != high => LevelCpus::Tied { low, high },
        _ => LevelCpus::Apart,
    }
}

/// Puts the two-levels warning on a result, in place of any it had.
pub fn note(m: &mut super::Measurement) {
    m.warnings.retain(|w| !w.starts_with("two levels:"));
    if let Some(w) = warning(m) {
        m.warnings.push(w.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bimodal_row_is_two_levels_with_both_figures() {
        let l = two_levels(&[1.337, 1.224, 1.222]).expect("two levels");
        assert_eq!((l.n_low, l.n_high), (2, 1));
        assert!(
            (l.low - 1.223).abs() < 0.001 && (l.high - 1.337).abs() < 1e-9,
            "{l:?}"
        );
        let l = two_levels(&[1.03, 1.20, 1.04, 1.21, 1.05]).expect("two levels");
        assert_eq!((l.n_low, l.n_high), (3, 2));
        // one level with its scatter, or a gap no wider than the scatter
        assert_eq!(two_levels(&[1.00, 1.02, 1.01]), None);
        assert_eq!(two_levels(&[1.00, 1.06, 1.15]), None);
        assert_eq!(two_levels(&[1.00, 1.09, 1.18, 1.27]), None);
        // two rounds cannot show two levels
        assert_eq!(two_levels(&[1.0, 2.0]), None);
        assert_eq!(two_levels(&[1.0, 0.0, 2.0]), None);
    }

    /// Used rounds at `medians`, each on the CPU given (`None`: migrated).
    fn placed(rounds: &[(f64, Option<u32>)]) -> Vec<super::super::Round> {
        rounds
            .iter()
            .map(|&(median, cpu)| super::super::Round {
                median,
                n: 5,
                used: true,
                placement: Some(super::super::Placement {
                    start: cpu.unwrap_or(0),
                    end: cpu.unwrap_or(1),
                    canary: None,
                }),
                ..super::super::Round::default()
            })
            .collect()
    }

    #[test]
    fn pinning_is_advised_only_when_the_levels_follow_the_cpus() {
        let l = two_levels(&[1.22, 1.34, 1.23]).unwrap();
        let tied = placed(&[(1.22, Some(0)), (1.34, Some(1)), (1.23, Some(0))]);
        assert_eq!(level_cpus(&tied, &l), LevelCpus::Tied { low: 0, high: 1 });
        // the upper level's round on the lower level's CPU
        let apart = placed(&[(1.22, Some(0)), (1.34, Some(0)), (1.23, Some(1))]);
        assert_eq!(level_cpus(&apart, &l), LevelCpus::Apart);
        // a round that migrated says nothing
        let moved = placed(&[(1.22, Some(0)), (1.34, None), (1.23, Some(0))]);
        assert_eq!(level_cpus(&moved, &l), LevelCpus::Unknown);
        let words = |cpus| {
            super::super::warnings::Warning::TwoLevels {
                low: "1.22 ns".into(),
                n_low: 2,
                high: "1.34 ns".into(),
                n_high: 1,
                apart: 0.1,
                cpus,
            }
            .to_string()
        };
        let w = words(LevelCpus::Tied { low: 0, high: 1 });
        assert!(
            w.contains("1.22 ns (2 of 3) on CPU 0 or 1.34 ns (1 of 3) on CPU 1"),
            "{w}"
        );
        assert!(w.ends_with("pin with --cpu to read one"), "{w}");
        for cpus in [LevelCpus::Apart, LevelCpus::Unknown] {
            let w = words(cpus);
            assert!(
                w.starts_with("two levels: its rounds read 1.22 ns (2 of 3) or 1.34 ns"),
                "{w}"
            );
            assert!(!w.contains("--cpu"), "{w}");
        }
        assert!(words(LevelCpus::Apart).contains("not the CPU they ran on"));
    }
}
