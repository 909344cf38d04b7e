//! Findings that walk the placement classes closest first: each class's
//! figure and, against the class before it, how many times it costs, in
//! words decided by the two intervals ("R (lo–hi) the same-core one", or
//! "not told apart from" it).
//!
//! A rung is a result whose details name its class (two-ended results
//! record it, see [`crate::harness::affinity::Cpus::details`]), so the
//! IPC rows under their old `cross` id take the place of their class.

use crate::harness::claims::{self, Est, Verdict};
use crate::harness::{Finding, Measurement};
use crate::host::PlaceClass;
use crate::units::{BaseUnit, human};

/// One placement class's result.
#[derive(Clone, Copy, Debug)]
pub struct Rung<'a> {
    /// The result.
    pub m: &'a Measurement,
    /// The class its two CPUs share at the closest.
    pub class: PlaceClass,
}

impl Rung<'_> {
    /// The CPU pair, "CPUs 0 and 8", when recorded.
    fn cpus(&self) -> Option<String> {
        let d = self.m.details.as_ref()?;
        Some(format!(
            "CPUs {} and {}",
            d.get("parent_cpu")?.as_u64()?,
            d.get("peer_cpu")?.as_u64()?
        ))
    }
}

/// The class a result records in its details.
pub fn class_of(m: &Measurement) -> Option<PlaceClass> {
    let name = m.details.as_ref()?.get("class")?.as_str()?;
    PlaceClass::parse(name).ok()
}

/// The results among `ids` that ran and name a class, one per class
/// (the first id of a class wins), closest class first.
pub fn rungs<'a>(ms: &'a [Measurement], ids: &[String]) -> Vec<Rung<'a>> {
    let mut out: Vec<Rung> = Vec::new();
    for id in ids {
        let Some(m) = ms.iter().find(|m| &m.id == id) else {
            continue;
        };
        if !(m.summary.median.is_finite() && m.summary.median > 0.0) {
            continue;
        }
        let Some(class) = class_of(m) else { continue };
        if class == PlaceClass::SameCpu || out.iter().any(|r| r.class == class) {
            continue;
        }
        out.push(Rung { m, class });
    }
    out.sort_by_key(|r| r.class);
    out
}

/// "a cache-line round trip (cas) by placement class, closest first:
/// same-core (CPUs 0 and 1) T1; same-l3 (CPUs 0 and 2) T2, R (lo–hi) the
/// same-core one; ..." (or "not told apart from" it).
/// The value is the farthest class's cost over the closest's (1 with one
/// class). None without a rung.
pub fn finding(area: &str, what: &str, rungs: &[Rung]) -> Option<Finding> {
    let first = rungs.first()?;
    let mut parts = Vec::new();
    let mut prev: Option<(&Rung, Est)> = None;
    for r in rungs {
        let est = Est::of(r.m);
        let mut part = format!(
            "{}{} {}",
            r.class,
            r.cpus().map(|c| format!(" ({c})")).unwrap_or_default(),
            human(r.m.summary.median, BaseUnit::NsPerOp)
        );
        if let Some((p, pe)) = prev {
            // `compare` says which is better; the costlier side's ratio.
            let step = match claims::compare(&pe, &est) {
                Verdict::Better(ratio) => format!("{ratio} the {} one", p.class),
                Verdict::Worse(ratio) => format!("{ratio} cheaper than the {} one", p.class),
                Verdict::Tie(_) => format!("not told apart from the {} one", p.class),
            };
            part.push_str(&format!(", {step}"));
        }
        parts.push(part);
        prev = Some((r, est));
    }
    let last = rungs.last()?;
    let value = last.m.summary.median / first.m.summary.median;
    let text = if rungs.len() == 1 {
        format!(
            "{what} between {}{} takes {}; the machine has no other placement class to set it against",
            first.class.describe(),
            first.cpus().map(|c| format!(" ({c})")).unwrap_or_default(),
            human(first.m.summary.median, BaseUnit::NsPerOp)
        )
    } else {
        format!(
            "{what} by placement class, closest first: {}",
            parts.join("; ")
        )
    };
    Some(crate::suites::bench::ratio_finding(area, text, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rung_m(id: &str, class: &str, ns: f64, rel: f64) -> Measurement {
        let mut m = Measurement::within(id, "ns/op", ns, rel);
        m.details = Some(serde_json::json!({"class": class, "parent_cpu": 0, "peer_cpu": 3}));
        m
    }

    #[test]
    fn rungs_go_closest_first_one_per_class() {
        let ms = vec![
            rung_m("x/cross-package", "cross-package", 300.0, 0.02),
            rung_m("x/cross", "same-l3", 60.0, 0.02),
            rung_m("x/same-core", "same-core", 20.0, 0.02),
            rung_m("x/same", "same-cpu", 5.0, 0.02),
        ];
        let ids: Vec<String> = ["x/same", "x/cross", "x/same-core", "x/cross-package"]
            .map(String::from)
            .to_vec();
        let r = rungs(&ms, &ids);
        let classes: Vec<_> = r.iter().map(|r| r.class).collect();
        assert_eq!(
            classes,
            [
                PlaceClass::SameCore,
                PlaceClass::SameL3,
                PlaceClass::CrossPackage
            ]
        );
        let f = finding("topology", "a round trip", &r).unwrap();
        assert!(
            f.text.contains("same-l3 (CPUs 0 and 3) 60.0 ns, 3.00×"),
            "{}",
            f.text
        );
        assert!(f.text.contains("the same-core one"), "{}", f.text);
        assert!((f.value - 15.0).abs() < 1e-9);
    }

    #[test]
    fn a_tie_is_named_and_one_class_says_so() {
        let ms = vec![
            rung_m("a", "same-l3", 60.0, 0.2),
            rung_m("b", "same-node", 62.0, 0.2),
        ];
        let r = rungs(&ms, &["a".into(), "b".into()]);
        let f = finding("topology", "a round trip", &r).unwrap();
        assert!(
            f.text.contains("not told apart from the same-l3 one"),
            "{}",
            f.text
        );
        let one = finding("topology", "a round trip", &r[..1]).unwrap();
        assert!(
            one.text.contains("no other placement class"),
            "{}",
            one.text
        );
        assert!(finding("topology", "x", &[]).is_none());
    }
}
