//! What the crypto results say: AES against ChaCha20 on this CPU (the
//! reason TLS and SSH offer both), the CPU instructions the rows could
//! use, the order of the hashes, what a small record costs, and which of
//! AES-256-GCM and SHA-256 moves more bytes per second.
//!
//! All are properties of the CPU, so they are read at their fast ends
//! ([`crate::harness::claims::fast_end`]: the 95th percentile of the
//! rate with a distribution-free interval), which a round slowed by a
//! neighbour does not move. Which one is named first is decided by those
//! intervals ([`crate::harness::claims::compare`]); equal within noise
//! reads as a tie, not as whichever came out higher this run.

use super::ops::{Cipher, Hash};
use super::{AES_ID, SHA_ID, SIZES, cipher_id, hash_id};
use crate::harness::claims::{
    CLEAR_GAP, Est, Verdict, compare, fast_end, rank_apart, tiers_apart_text,
};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{get, ratio_finding};
use crate::units::{BaseUnit, ValueUnit, human};

/// The implementation recorded in a result's parameters.
fn implementation(m: &Measurement) -> String {
    m.param("implementation")
        .unwrap_or_else(|| "unknown".to_string())
}

/// A rate read at its fast end (the point estimate when too few samples).
fn est(m: &Measurement) -> Est<'_> {
    fast_end(m).unwrap_or_else(|| Est::of(m))
}

/// A measurement of `id` with a positive rate.
fn rate<'a>(ms: &'a [Measurement], id: &str) -> Option<&'a Measurement> {
    get(ms, id).filter(|m| m.median > 0.0)
}

/// Every crypto finding of a run.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    [
        aes_against_sha(ms),
        aes_against_chacha(ms),
        instructions(ms),
        hash_order(ms),
        small_records(ms),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Which of AES-256-GCM and SHA-256 moves more bytes per second at 16 KiB.
fn aes_against_sha(ms: &[Measurement]) -> Option<Finding> {
    {
        let aes = rate(ms, AES_ID)?;
        let sha = rate(ms, SHA_ID)?;
        let (a, s) = (est(aes), est(sha));
        let figures = format!(
            "fastest 5% of each: AES {}, SHA {}; {} AES path, {} SHA path",
            human(a.value, BaseUnit::BytesPerSec),
            human(s.value, BaseUnit::BytesPerSec),
            implementation(aes),
            implementation(sha)
        );
        let verdict = compare(&a, &s);
        let text = verdict.pick(
            |r| format!("AES-256-GCM moves {r} the bytes per second of SHA-256 ({figures})"),
            |r| format!("SHA-256 moves {r} the bytes per second of AES-256-GCM ({figures})"),
            |_| {
                format!("AES-256-GCM and SHA-256 move bytes within noise of each other ({figures})")
            },
        );
        let value = verdict.ratio().ratio;
        Some(ratio_finding("crypto", text, value))
    }
}

/// AES-256-GCM against ChaCha20-Poly1305 at 16 KiB: with AES instructions
/// AES-GCM wins, without them ChaCha20 does, and TLS and SSH choose by it.
fn aes_against_chacha(ms: &[Measurement]) -> Option<Finding> {
    let aes = rate(ms, AES_ID)?;
    let chacha = rate(ms, &cipher_id(Cipher::ChaCha20Poly1305, "16KiB"))?;
    let (a, c) = (est(aes), est(chacha));
    let figures = format!(
        "16 KiB messages, fastest 5%: AES-256-GCM {}, ChaCha20-Poly1305 {}; AES path {}",
        human(a.value, BaseUnit::BytesPerSec),
        human(c.value, BaseUnit::BytesPerSec),
        implementation(aes)
    );
    let verdict = compare(&a, &c);
    let text = verdict.pick(
        |r| format!("AES-256-GCM encrypts {r} as fast as ChaCha20-Poly1305: on this CPU TLS and SSH do better with AES-GCM ({figures})"),
        |r| format!("ChaCha20-Poly1305 encrypts {r} as fast as AES-256-GCM: on this CPU TLS and SSH do better with ChaCha20 ({figures})"),
        |_| format!("AES-256-GCM and ChaCha20-Poly1305 encrypt within noise of each other: either suits TLS and SSH here ({figures})"),
    );
    // The AES-GCM over ChaCha20 speed ratio, whichever is faster.
    let value = verdict.pick(|r| r.ratio, |r| 1.0 / r.ratio, |r| r.ratio);
    Some(ratio_finding("crypto", text, value))
}

/// The CPU instructions open to the AES and SHA rows (their details'
/// `cpu_instructions`, from the CPU flags), with the AES-GCM rate that
/// shows whether they were used.
fn instructions(ms: &[Measurement]) -> Option<Finding> {
    let flags = |id: &str| {
        get(ms, id)
            .and_then(|m| m.details.as_ref())
            .and_then(|d| d["cpu_instructions"].as_str().map(str::to_string))
    };
    let aes = get(ms, AES_ID).map(|_| flags(AES_ID).unwrap_or_default());
    let sha = get(ms, SHA_ID).map(|_| flags(SHA_ID).unwrap_or_default());
    let mut named: Vec<String> = [&aes, &sha]
        .into_iter()
        .flatten()
        .flat_map(|f| f.split_whitespace().map(str::to_string))
        .collect();
    named.sort_unstable();
    named.dedup();
    let or_none = |s: String| if s.is_empty() { "none".to_string() } else { s };
    let mut parts = Vec::new();
    if let Some(a) = aes {
        parts.push(format!("AES rows {}", or_none(a)));
    }
    if let Some(s) = sha {
        parts.push(format!("SHA-256/SHA-1 rows {}", or_none(s)));
    }
    if parts.is_empty() {
        return None;
    }
    let paths: Vec<String> = [AES_ID, SHA_ID]
        .iter()
        .filter_map(|id| get(ms, id))
        .map(|m| format!("{} {}", m.id, implementation(m)))
        .collect();
    Some(Finding {
        area: "crypto".into(),
        text: format!(
            "CPU crypto instructions open to the libraries (from the CPU flags): {}; paths: {}",
            parts.join("; "),
            paths.join(", ")
        ),
        value: named.len() as f64,
        unit: ValueUnit::Flags,
    })
}

/// The hashes at 16 KiB in tiers apart by a clear [`CLEAR_GAP`], fastest
/// first: hashes a few per cent apart (MD5 and SHA-512 here) share a tier,
/// so noise cannot turn their order round from one run to the next.
fn hash_order(ms: &[Measurement]) -> Option<Finding> {
    let present: Vec<(Hash, &Measurement)> = Hash::ALL
        .iter()
        .filter_map(|&h| rate(ms, &hash_id(h, "16KiB")).map(|m| (h, m)))
        .collect();
    if present.len() < 2 {
        return None;
    }
    let names: Vec<&str> = present.iter().map(|(h, _)| h.title()).collect();
    let items: Vec<Est> = present.iter().map(|(_, m)| est(m)).collect();
    let tiers = rank_apart(&items, CLEAR_GAP);
    let top = items[tiers.leaders[0]].value;
    let bottom = items[*tiers.leaders.last().expect("one tier at least")].value;
    Some(ratio_finding(
        "crypto",
        format!(
            "hashes at 16 KiB, fastest 5% of each, in tiers apart by a clear {CLEAR_GAP}× or more: {}",
            tiers_apart_text(&names, &items, "fastest", CLEAR_GAP)
        ),
        top / bottom,
    ))
}

/// What a 64 B message costs against a 16 KiB one in AES-256-GCM: the
/// per-message work (key schedule, tag, call) that a small TLS record or
/// SSH packet pays.
fn small_records(ms: &[Measurement]) -> Option<Finding> {
    let (small_len, small) = SIZES[0];
    let s = rate(ms, &cipher_id(Cipher::Aes256Gcm, small))?;
    let l = rate(ms, AES_ID)?;
    let (se, le) = (est(s), est(l));
    let text = match compare(&le, &se) {
        Verdict::Better(r) => format!(
            "AES-256-GCM moves {} as many bytes per second at 16 KiB as at {small_len} B: small records pay a per-message cost (fastest 5%: {} at {small_len} B, {} at 16 KiB)",
            r.text(),
            human(se.value, BaseUnit::BytesPerSec),
            human(le.value, BaseUnit::BytesPerSec)
        ),
        _ => format!(
            "AES-256-GCM moves bytes no faster at 16 KiB than at {small_len} B (within noise or slower): no per-message cost shows (fastest 5%: {} at {small_len} B, {} at 16 KiB)",
            human(se.value, BaseUnit::BytesPerSec),
            human(le.value, BaseUnit::BytesPerSec)
        ),
    };
    Some(ratio_finding("crypto", text, le.value / se.value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{find_saying, find_starting};

    /// A rate whose 15 samples spread ±`rel` around `v`.
    fn rate(id: &str, v: f64, rel: f64) -> Measurement {
        Measurement::spread(id, "B/s", v, rel)
    }

    #[test]
    fn finding_names_the_faster_and_the_paths() {
        let mut a = Measurement::point(AES_ID, "B/s", 4e9);
        a.params
            .insert("implementation".into(), "cpu-instructions".into());
        let s = Measurement::point(SHA_ID, "B/s", 1e9);
        let f = findings(&[a.clone(), s.clone()]);
        assert_eq!(f.len(), 2, "AES against SHA, and the instructions");
        f[0].assert_starts_with("AES-256-GCM moves 4.00× (4.00–4.00)");
        assert_eq!((f[0].value, f[0].unit), (4.0, ValueUnit::Ratio));
        f[0].assert_says("cpu-instructions AES path");
        f[0].assert_says("unknown SHA path");
        // The other way round: SHA named first.
        let f = findings(&[rate(AES_ID, 1e9, 0.02), rate(SHA_ID, 3e9, 0.02)]);
        f[0].assert_starts_with("SHA-256 moves 3.00× (");
        assert!(findings(&[]).is_empty());
        let alone = findings(&[a]);
        assert!(
            alone.iter().all(|f| !f.text.contains("SHA-256 mov")),
            "one result alone: no comparison"
        );
    }

    fn with_flags(mut m: Measurement, flags: &str) -> Measurement {
        m.details = Some(serde_json::json!({ "impl": "ring", "cpu_instructions": flags }));
        m
    }

    #[test]
    fn aes_against_chacha_names_the_faster_or_a_tie() {
        let chacha = cipher_id(Cipher::ChaCha20Poly1305, "16KiB");
        let f = findings(&[rate(AES_ID, 7e9, 0.02), rate(&chacha, 2.3e9, 0.02)]);
        let t = &find_saying(&f, "ChaCha20");
        t.assert_starts_with("AES-256-GCM encrypts 3.0");
        t.assert_says("do better with AES-GCM");
        let f = findings(&[rate(AES_ID, 0.5e9, 0.02), rate(&chacha, 1.5e9, 0.02)]);
        let t = &find_saying(&f, "ChaCha20");
        t.assert_starts_with("ChaCha20-Poly1305 encrypts 3.0");
        assert!(
            (f[0].value - 1.0 / 3.0).abs() < 0.05,
            "AES over ChaCha: {}",
            f[0].value
        );
        let f = findings(&[rate(AES_ID, 1.01e9, 0.05), rate(&chacha, 1e9, 0.05)]);
        let t = &find_saying(&f, "ChaCha20");
        t.assert_says("within noise");
    }

    #[test]
    fn instructions_come_from_the_rows_details() {
        let a = with_flags(rate(AES_ID, 7e9, 0.02), "aes pclmulqdq vaes");
        let s = with_flags(rate(SHA_ID, 1.5e9, 0.02), "");
        let f = findings(&[a, s]);
        let t = &find_starting(&f, "CPU crypto instructions");
        t.assert_says("AES rows aes pclmulqdq vaes");
        t.assert_says("SHA-256/SHA-1 rows none");
        let n = f
            .iter()
            .find(|f| f.unit == ValueUnit::Flags)
            .expect("the count");
        assert_eq!(n.value, 3.0, "aes, pclmulqdq and vaes");
    }

    #[test]
    fn hashes_are_ranked_in_tiers_and_small_records_compared() {
        let f = findings(&[
            rate(&hash_id(Hash::Blake3, "16KiB"), 4e9, 0.02),
            rate(&hash_id(Hash::Sha256, "16KiB"), 1.6e9, 0.02),
            rate(&hash_id(Hash::Sha1, "16KiB"), 1.62e9, 0.02),
            rate(&hash_id(Hash::Md5, "16KiB"), 0.55e9, 0.02),
        ]);
        let h = find_starting(&f, "hashes");
        h.assert_says("fastest: BLAKE3; then SHA-256 and SHA-1 (2.47× slower); then MD5");
        assert!((h.value - 4e9 / 0.55e9).abs() < 0.5, "{}", h.value);
        // MD5 and SHA-512 a few per cent apart, each way round, with tight
        // intervals: one tier in the same words, never one order and then
        // the other.
        let words: Vec<String> = [(0.55e9, 0.58e9), (0.58e9, 0.55e9)]
            .iter()
            .map(|&(md5, sha512)| {
                let f = findings(&[
                    rate(&hash_id(Hash::Blake3, "16KiB"), 4e9, 0.005),
                    rate(&hash_id(Hash::Md5, "16KiB"), md5, 0.005),
                    rate(&hash_id(Hash::Sha512, "16KiB"), sha512, 0.005),
                ]);
                let t = find_starting(&f, "hashes").text.clone();
                t.split(" slower").next().unwrap_or_default().to_string()
            })
            .collect();
        assert!(words[0].contains("then SHA-512 and MD5 ("), "{}", words[0]);
        assert_eq!(
            words[0].split('(').next(),
            words[1].split('(').next(),
            "{words:?}"
        );
        let small = cipher_id(Cipher::Aes256Gcm, "64B");
        let f = findings(&[rate(&small, 0.7e9, 0.02), rate(AES_ID, 7e9, 0.02)]);
        let t = &find_saying(&f, "64 B");
        t.assert_starts_with("AES-256-GCM moves 10");
        t.assert_says("per-message cost");
        let f = findings(&[rate(&small, 7e9, 0.05), rate(AES_ID, 7e9, 0.05)]);
        let t = &find_saying(&f, "64 B");
        t.assert_says("no per-message cost shows");
    }

    #[test]
    fn equal_rates_within_noise_are_a_tie_whichever_is_higher() {
        for (av, sv) in [(1.02e9, 1e9), (1e9, 1.02e9)] {
            let f = findings(&[rate(AES_ID, av, 0.05), rate(SHA_ID, sv, 0.05)]);
            f[0].assert_starts_with(
                "AES-256-GCM and SHA-256 move bytes within noise of each other",
            );
        }
    }
}
