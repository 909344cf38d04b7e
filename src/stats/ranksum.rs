//! The Mann–Whitney rank-sum test at one given split of a series: the
//! two-sided p-value of the first `k` values' rank sum against the rest.
//!
//! Used where the split is known beforehand (a run where a recorded fact
//! of the host changed), so no maximum over splits is taken. The p-value
//! is exact (the distribution of the statistic without ties, counted as
//! the coefficients of a Gaussian binomial) while that is cheap, and from
//! the normal approximation with the tie correction and a continuity
//! correction beyond: then the smaller side has dozens of runs, where the
//! approximation is close.

/// The largest `s² · n · (n − s)` (`s` the smaller side, `n` both) for
/// which the exact distribution is counted: about 10⁷ additions.
const EXACT_WORK: usize = 10_000_000;

/// The two-sided p-value of the Mann–Whitney statistic for the split of
/// `ranks` (1 for the smallest; ties share their mean rank) before index
/// `k`; 1 when either side is empty.
pub fn split_p(ranks: &[f64], k: usize) -> f64 {
    let n = ranks.len();
    if k == 0 || k >= n {
        return 1.0;
    }
    let (n1, n2) = (k, n - k);
    let r1: f64 = ranks[..k].iter().sum();
    // Pairs (before, after) in which the value before is the larger.
    let u = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let s = n1.min(n2);
    let p = if s.saturating_mul(s).saturating_mul(n).saturating_mul(n - s) <= EXACT_WORK {
        let counts = u_counts(n, s);
        let total: f64 = counts.iter().sum();
        let lo = u.floor().max(0.0) as usize;
        let hi = (u.ceil() as usize).min(counts.len() - 1);
        let below: f64 = counts[..=lo].iter().sum();
        let above: f64 = counts[hi..].iter().sum();
        2.0 * below.min(above) / total
    } else {
        let (f1, f2, nf) = (n1 as f64, n2 as f64, n as f64);
        let var = f1 * f2 / 12.0 * ((nf + 1.0) - ties(ranks) / (nf * (nf - 1.0)));
        if var <= 0.0 {
            return 1.0;
        }
        let d = ((u - f1 * f2 / 2.0).abs() - 0.5).max(0.0);
        2.0 * (1.0 - super::normal_cdf(d / var.sqrt()))
    };
    p.min(1.0)
}

/// The coefficients of the Gaussian binomial `[n choose s]` in `q`: entry
/// `u` counts the orderings of `s` values among `n` (no ties) in which `u`
/// pairs of (one of the `s`, one of the rest) have the first larger.
fn u_counts(n: usize, s: usize) -> Vec<f64> {
    // row[j] = [i choose j] for the current i, each a polynomial in q,
    // from [i choose j] = [i-1 choose j-1] + q^j [i-1 choose j].
    let mut row: Vec<Vec<f64>> = vec![vec![1.0]];
    for i in 1..=n {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(s.min(i) + 1);
        for j in 0..=s.min(i) {
            let len = j * (i - j) + 1;
            let mut p = vec![0.0; len];
            if j > 0 {
                for (d, c) in p.iter_mut().zip(&row[j - 1]) {
                    *d += c;
                }
            }
            if let Some(prev) = row.get(j) {
                for (d, c) in p[j..].iter_mut().zip(prev) {
                    *d += c;
                }
            }
            next.push(p);
        }
        row = next;
    }
    row.swap_remove(s)
}

/// `Σ (t³ − t)` over the groups of tied ranks.
fn ties(ranks: &[f64]) -> f64 {
    let mut sorted = ranks.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        sum += t * t * t - t;
        i = j + 1;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counts_are_the_mann_whitney_distribution() {
        // 2 among 4: C(4,2) = 6 orderings, U = 0,1,2,2,3,4.
        assert_eq!(u_counts(4, 2), vec![1.0, 1.0, 2.0, 1.0, 1.0]);
        let c = u_counts(20, 7);
        assert_eq!(c.len(), 7 * 13 + 1);
        assert_eq!(c.iter().sum::<f64>(), 77_520.0);
        // Symmetric about the middle.
        assert!(c.iter().zip(c.iter().rev()).all(|(a, b)| a == b));
    }

    #[test]
    fn complete_separation_has_the_smallest_p() {
        // 3 below 3: one ordering of 20 each way.
        let r: Vec<f64> = (1..=6).map(f64::from).collect();
        assert!((split_p(&r, 3) - 2.0 / 20.0).abs() < 1e-12);
        let rev: Vec<f64> = r.iter().rev().copied().collect();
        assert!((split_p(&rev, 3) - 2.0 / 20.0).abs() < 1e-12);
        // Interleaved: nothing to see.
        let mixed = [1.0, 4.0, 5.0, 2.0, 3.0, 6.0];
        assert!(split_p(&mixed, 3) > 0.5);
        assert_eq!(split_p(&r, 0), 1.0);
    }

    #[test]
    fn exact_and_normal_agree_where_both_apply() {
        // 8 runs then 8, shuffled (seeded): where the exact p is moderate,
        // the normal approximation's is near it.
        let mut rng = fastrand::Rng::with_seed(1);
        let mut compared = 0;
        for _ in 0..200 {
            let mut r: Vec<f64> = (1..=16).map(f64::from).collect();
            rng.shuffle(&mut r);
            let exact = split_p(&r, 8);
            if !(0.05..0.5).contains(&exact) {
                continue;
            }
            let u = r[..8].iter().sum::<f64>() - 36.0;
            let z = ((u - 32.0).abs() - 0.5) / (64.0 * 17.0 / 12.0_f64).sqrt();
            let normal = 2.0 * (1.0 - crate::stats::normal_cdf(z));
            assert!((normal / exact - 1.0).abs() < 0.15, "{exact} {normal}");
            compared += 1;
        }
        assert!(compared >= 50, "{compared}");
    }

    #[test]
    fn a_long_series_uses_the_normal_approximation() {
        // 500 and 500, the first half lower: p far below any level.
        let r: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert!(split_p(&r, 500) < 1e-12);
        let alternating: Vec<f64> = (0..1000)
            .map(|i| (if i % 2 == 0 { i / 2 + 1 } else { 1000 - i / 2 }) as f64)
            .collect();
        assert!(split_p(&alternating, 500) > 0.5);
    }
}
