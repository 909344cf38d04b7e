//! The machine's score per area and overall, against a reference run
//! shipped inside opcost (`reference/quick.json.xz`, recorded at the quick
//! profile on the machine its host block describes).
//!
//! Method. For every result of a run whose id the reference also has, with
//! the same kind of unit, the *speed-up* is reference time / run time (for
//! latencies `ref / run`, for throughputs and rates `run / ref`): 2.00 means
//! this machine does that operation in half the time. An area's score is the
//! geometric mean of its speed-ups (the one mean of ratios that does not
//! depend on which run is on top); the overall score is the geometric mean of
//! the area scores, so that an area with a hundred sweep points weighs no
//! more than one with ten. 1.00 is the reference machine; results the
//! reference lacks (other sizes, new suites) do not go in, and the score
//! says how many did.

use std::io::Read;
use std::sync::OnceLock;

use serde::Serialize;

use crate::document::RunDoc;
use crate::harness::Measurement;

/// The reference run document as recorded, xz-compressed (`xz -9e`): 67 KB
/// in the binary instead of 492 (gzip -9: 84).
const REFERENCE_XZ: &[u8] = include_bytes!("../../reference/quick.json.xz");

/// The reference run document's JSON, decompressed on first use.
pub fn reference_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let mut text = String::new();
        liblzma::read::XzDecoder::new(REFERENCE_XZ)
            .read_to_string(&mut text)
            .expect("the shipped reference is xz'd UTF-8");
        text
    })
}

/// One result of the reference: enough to compare, robust to layout changes.
#[derive(Clone, Debug, PartialEq)]
pub struct RefPoint {
    /// The benchmark id.
    pub id: String,
    /// True for throughputs and rates, false for times per operation.
    pub higher_is_better: bool,
    /// The reference's median, in the base unit.
    pub median: f64,
}

/// The reference run: who, where, and its medians.
#[derive(Clone, Debug)]
pub struct Reference {
    /// The reference run's id.
    pub id: String,
    /// When it was recorded.
    pub started: String,
    /// Its profile.
    pub profile: String,
    /// Host name.
    pub hostname: String,
    /// A one-line description of its machine.
    pub machine: String,
    /// Its medians.
    pub points: Vec<RefPoint>,
    /// The whole run document (host block included), as JSON.
    pub doc: serde_json::Value,
}

impl Reference {
    /// Reads a reference from a run document's JSON (any schema version
    /// whose results carry `id`, `unit` and `median`).
    pub fn from_json(text: &str) -> anyhow::Result<Reference> {
        let doc: serde_json::Value = serde_json::from_str(text)?;
        let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
        let results = doc["results"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("the reference has no results"))?;
        let points = results
            .iter()
            .filter_map(|r| {
                let unit = &r["unit"];
                let lower = unit.as_str() == Some("ns/op")
                    || unit["kind"].as_str().is_some_and(|k| k == "latency");
                Some(RefPoint {
                    id: r["id"].as_str()?.to_string(),
                    higher_is_better: !lower,
                    median: r["median"].as_f64().filter(|m| m.is_finite() && *m > 0.0)?,
                })
            })
            .collect();
        let host = &doc["host"];
        let machine = format!(
            "{}, {} logical CPUs, {} kernel {}",
            host["cpu"]["model"].as_str().unwrap_or("unknown CPU"),
            host["logical_cpus"].as_u64().unwrap_or(0),
            host["kernel"]["name"].as_str().unwrap_or("Linux"),
            host["kernel"]["release"].as_str().unwrap_or("?")
        );
        Ok(Reference {
            id: s(&doc["run"]["id"]),
            started: s(&doc["run"]["started"]),
            profile: s(&doc["run"]["profile"]),
            hostname: s(&host["hostname"]),
            machine,
            points,
            doc,
        })
    }

    /// The reference shipped in the binary.
    pub fn shipped() -> &'static Reference {
        static R: OnceLock<Reference> = OnceLock::new();
        R.get_or_init(|| {
            Reference::from_json(reference_json()).expect("the shipped reference run is valid")
        })
    }
}

/// The score of one area.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AreaScore {
    /// The area.
    pub area: String,
    /// Geometric mean of the speed-ups (1.00 = the reference, 2.00 = twice as fast).
    pub score: f64,
    /// The results that went in.
    pub ids: Vec<String>,
    /// Results of the area the reference lacks (not in the score).
    pub left_out: usize,
}

/// An area of the run the score leaves out entirely: the reference has
/// none of its results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unscored {
    /// The area.
    pub area: String,
    /// Its results in the run.
    pub results: usize,
}

/// The scores of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Score {
    /// Geometric mean of the area scores; `None` when no result matched.
    pub overall: Option<f64>,
    /// Per area, in the run's order.
    pub areas: Vec<AreaScore>,
    /// The run's areas with no result in the reference, in the run's order.
    pub unscored: Vec<Unscored>,
    /// The reference's run id.
    pub reference: String,
}

impl Score {
    /// Results that went into the score.
    pub fn used(&self) -> usize {
        self.areas.iter().map(|a| a.ids.len()).sum()
    }
}

/// The speed-up of `m` over the reference point `r` (>1: faster than the reference).
pub fn speedup(m: &Measurement, r: &RefPoint) -> Option<f64> {
    if m.higher_is_better() != r.higher_is_better || !(m.median.is_finite() && m.median > 0.0) {
        return None;
    }
    let s = if r.higher_is_better {
        m.median / r.median
    } else {
        r.median / m.median
    };
    s.is_finite().then_some(s)
}

/// The geometric mean of positive values (`None` when there are none).
pub fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
        sum += v.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

/// Scores `doc` against `reference`.
pub fn score(doc: &RunDoc, reference: &Reference) -> Score {
    let (mut areas, mut unscored) = (Vec::new(), Vec::new());
    for area in doc.areas() {
        let mut ids = Vec::new();
        let mut ups = Vec::new();
        let mut left_out = 0;
        for m in doc.area(&area) {
            match reference
                .points
                .iter()
                .find(|r| r.id == m.id)
                .and_then(|r| speedup(m, r))
            {
                Some(s) => {
                    ids.push(m.id.clone());
                    ups.push(s);
                }
                None => left_out += 1,
            }
        }
        match geomean(ups) {
            Some(score) => areas.push(AreaScore {
                area,
                score,
                ids,
                left_out,
            }),
            None if left_out > 0 => unscored.push(Unscored {
                area,
                results: left_out,
            }),
            None => {}
        }
    }
    Score {
        overall: geomean(areas.iter().map(|a| a.score)),
        areas,
        unscored,
        reference: reference.id.clone(),
    }
}

/// A score as shown: `1.00`, `2.37`, `0.418`.
pub fn fmt_score(s: f64) -> String {
    crate::units::fmt_decimals_by_size(s, &[(10.0, 1), (1.0, 2)], 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(points: &[(&str, bool, f64)]) -> Reference {
        Reference {
            id: "ref".into(),
            started: String::new(),
            profile: "quick".into(),
            hostname: "refhost".into(),
            machine: String::new(),
            points: points
                .iter()
                .map(|(id, hib, median)| RefPoint {
                    id: id.to_string(),
                    higher_is_better: *hib,
                    median: *median,
                })
                .collect(),
            doc: serde_json::Value::Null,
        }
    }

    fn run(results: Vec<Measurement>) -> RunDoc {
        let mut d: RunDoc =
            serde_json::from_str(reference_json()).expect("reference parses as a run");
        d.results = results;
        d.findings.clear();
        d
    }

    #[test]
    fn known_ratios_give_known_scores() {
        let r = reference(&[
            ("syscall.a", false, 100.0),
            ("syscall.b", false, 10.0),
            ("memory.c", true, 1e9),
            ("memory.d", false, 5.0),
        ]);
        let d = run(vec![
            // Twice as fast and eight times as fast: geomean 4.
            Measurement::point("syscall.a", "ns/op", 50.0),
            Measurement::point("syscall.b", "ns/op", 1.25),
            // A quarter of the bandwidth: 0.25; the same latency: 1.
            Measurement::point("memory.c", "B/s", 0.25e9),
            Measurement::point("memory.d", "ns/op", 5.0),
            // Not in the reference: left out.
            Measurement::point("memory.e", "ns/op", 1.0),
            // An area the reference has nothing of: named, not scored.
            Measurement::point("timer.x", "ns/op", 1.0),
            Measurement::point("timer.y", "ns/op", 1.0),
        ]);
        let s = score(&d, &r);
        assert_eq!(s.areas.len(), 2);
        assert!((s.areas[0].score - 4.0).abs() < 1e-12, "{s:?}");
        assert_eq!(s.areas[0].ids, ["syscall.a", "syscall.b"]);
        assert!((s.areas[1].score - 0.5).abs() < 1e-12, "{s:?}");
        assert_eq!(s.areas[1].left_out, 1);
        // Overall: geomean of 4 and 0.5 = sqrt(2).
        assert!((s.overall.unwrap() - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(s.used(), 4);
        assert_eq!(
            s.unscored,
            [Unscored {
                area: "timer".into(),
                results: 2
            }]
        );
    }

    #[test]
    fn a_unit_mismatch_or_no_overlap_scores_nothing() {
        let r = reference(&[("syscall.a", true, 100.0)]);
        let s = score(
            &run(vec![Measurement::point("syscall.a", "ns/op", 50.0)]),
            &r,
        );
        assert_eq!(s.overall, None);
        assert!(s.areas.is_empty());
    }

    #[test]
    fn the_reference_scores_one_against_itself() {
        let r = Reference::shipped();
        assert!(r.points.len() >= 50, "{}", r.points.len());
        assert!(!r.hostname.is_empty() && r.profile == "quick");
        let d: RunDoc = serde_json::from_str(reference_json()).unwrap();
        let s = score(&d, r);
        assert!((s.overall.unwrap() - 1.0).abs() < 1e-9);
        assert!(s.areas.iter().all(|a| (a.score - 1.0).abs() < 1e-9));
        assert!(r.doc["host"]["caches"].is_array(), "the host block is kept");
    }

    #[test]
    fn scores_print_with_sensible_digits() {
        assert_eq!(fmt_score(1.0), "1.00");
        assert_eq!(fmt_score(0.4183), "0.418");
        assert_eq!(fmt_score(12.34), "12.3");
    }
}
