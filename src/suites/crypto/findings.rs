//! What the crypto results say: which of AES-256-GCM and SHA-256 moves
//! more bytes per second, by how much, and along which paths.
//!
//! Both are properties of the CPU, so they are read at their fast ends
//! ([`crate::harness::claims::fast_end`]: the 95th percentile of the
//! rate with a distribution-free interval), which a round slowed by a
//! neighbour does not move. Which one is named first is decided by those
//! intervals ([`crate::harness::claims::compare`]); equal within noise
//! reads as a tie, not as whichever came out higher this run.

use super::{AES_ID, SHA_ID};
use crate::harness::claims::{Est, Verdict, compare, fast_end};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{get, ratio_finding};
use crate::units::human;

/// The implementation recorded in a result's parameters.
fn implementation(m: &Measurement) -> String {
    m.param("implementation")
        .unwrap_or_else(|| "unknown".to_string())
}

/// Every crypto finding of a run.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let (Some(aes), Some(sha)) = (get(ms, AES_ID), get(ms, SHA_ID))
        && aes.median > 0.0
        && sha.median > 0.0
    {
        let est = |m: &Measurement| fast_end(m).unwrap_or_else(|| Est::of(m));
        let (a, s) = (est(aes), est(sha));
        let figures = format!(
            "fastest 5% of each: AES {}, SHA {}; {} AES path, {} SHA path",
            human(a.value, "B/s"),
            human(s.value, "B/s"),
            implementation(aes),
            implementation(sha)
        );
        let (text, value) = match compare(&a, &s) {
            Verdict::Better(r) => (
                format!(
                    "AES-256-GCM moves {} the bytes per second of SHA-256 ({figures})",
                    r.text()
                ),
                r.ratio,
            ),
            Verdict::Worse(r) => (
                format!(
                    "SHA-256 moves {} the bytes per second of AES-256-GCM ({figures})",
                    r.text()
                ),
                r.ratio,
            ),
            Verdict::Tie(r) => (
                format!(
                    "AES-256-GCM and SHA-256 move bytes within noise of each other ({figures})"
                ),
                r.ratio,
            ),
        };
        out.push(ratio_finding("crypto", text, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rate whose 15 samples spread ±`rel` around `v`.
    fn rate(id: &str, v: f64, rel: f64) -> Measurement {
        let mut m = Measurement::point(id, "B/s", v);
        m.samples = (0..15)
            .map(|i| v * (1.0 - rel + 2.0 * rel * f64::from(i) / 14.0))
            .collect();
        m.summary.ci_low = v * (1.0 - rel);
        m.summary.ci_high = v * (1.0 + rel);
        m
    }

    #[test]
    fn finding_names_the_faster_and_the_paths() {
        let mut a = Measurement::point(AES_ID, "B/s", 4e9);
        a.params
            .insert("implementation".into(), "cpu-instructions".into());
        let s = Measurement::point(SHA_ID, "B/s", 1e9);
        let f = findings(&[a.clone(), s.clone()]);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].text.starts_with("AES-256-GCM moves 4.00× (4.00–4.00)"),
            "{}",
            f[0].text
        );
        assert_eq!((f[0].value, f[0].unit.as_str()), (4.0, "x"));
        assert!(
            f[0].text.contains("cpu-instructions AES path"),
            "{}",
            f[0].text
        );
        assert!(f[0].text.contains("unknown SHA path"), "{}", f[0].text);
        // The other way round: SHA named first.
        let f = findings(&[rate(AES_ID, 1e9, 0.02), rate(SHA_ID, 3e9, 0.02)]);
        assert!(
            f[0].text.starts_with("SHA-256 moves 3.00× ("),
            "{}",
            f[0].text
        );
        assert!(findings(&[]).is_empty());
        assert!(findings(&[a]).is_empty(), "one result alone: no comparison");
    }

    #[test]
    fn equal_rates_within_noise_are_a_tie_whichever_is_higher() {
        for (av, sv) in [(1.02e9, 1e9), (1e9, 1.02e9)] {
            let f = findings(&[rate(AES_ID, av, 0.05), rate(SHA_ID, sv, 0.05)]);
            assert!(
                f[0].text
                    .starts_with("AES-256-GCM and SHA-256 move bytes within noise of each other"),
                "{}",
                f[0].text
            );
        }
    }
}
