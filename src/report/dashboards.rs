//! A run in the formats continuous-benchmarking dashboards read: Bencher
//! Metric Format (BMF) and github-action-benchmark's `customSmallerIsBetter`
//! JSON, so a run on every change can feed the tools people already use.
//!
//! BMF: `{ "<benchmark>": { "<measure>": { "value", "lower_value",
//! "upper_value" } } }`, the bounds being the result's 95% interval. The
//! measure is Bencher's built-in `latency` (nanoseconds) for ns/op results,
//! its built-in `throughput` (operations per second) for ops/s results, and
//! `bytes-per-second` (created by Bencher on first use) for B/s results, so
//! every value keeps its own unit and direction.
//!
//! github-action-benchmark: an array of `{ "name", "unit", "value",
//! "range", "extra" }` where smaller is better, so every result is given as
//! its time per operation (`ns/op`: throughputs and rates converted, their
//! interval likewise), `range` is `±` the interval's larger half-width and
//! `extra` the result's original value and the run it came from.

use serde_json::{Map, Value, json};

use crate::document::RunDoc;
use crate::harness::BaseUnit;
use crate::units::human;

/// The BMF measure slug of a base unit.
pub fn bmf_measure(unit: BaseUnit) -> &'static str {
    match unit {
        BaseUnit::NsPerOp => "latency",
        BaseUnit::OpsPerSec => "throughput",
        BaseUnit::BytesPerSec => "bytes-per-second",
    }
}

/// The run as a Bencher Metric Format document.
pub fn bmf(doc: &RunDoc) -> Value {
    let mut out = Map::new();
    for m in &doc.results {
        let mut metric = Map::new();
        metric.insert("value".into(), json!(m.median));
        if m.ci_low.is_finite() && m.ci_high.is_finite() && m.ci_low <= m.ci_high {
            metric.insert("lower_value".into(), json!(m.ci_low));
            metric.insert("upper_value".into(), json!(m.ci_high));
        }
        let mut measures = Map::new();
        measures.insert(bmf_measure(m.unit).into(), Value::Object(metric));
        out.insert(m.id.clone(), Value::Object(measures));
    }
    Value::Object(out)
}

/// The run as github-action-benchmark `customSmallerIsBetter` entries.
pub fn github_benchmark(doc: &RunDoc) -> Value {
    let entries: Vec<Value> = doc
        .results
        .iter()
        .filter(|m| m.median.is_finite() && m.median > 0.0)
        .map(|m| {
            let t = m.to_ns_per_op(m.median);
            // A throughput's upper bound is the time's lower bound.
            let (a, b) = (m.to_ns_per_op(m.ci_low), m.to_ns_per_op(m.ci_high));
            let (lo, hi) = (a.min(b), a.max(b));
            let half = if lo.is_finite() && hi.is_finite() {
                (hi - t).max(t - lo).max(0.0)
            } else {
                0.0
            };
            json!({
                "name": m.id,
                "unit": "ns/op",
                "value": t,
                "range": format!("± {}", sig(half)),
                "extra": format!(
                    "{} (95% CI {} – {}); run {} on {}",
                    human(m.median, m.unit),
                    human(m.ci_low, m.unit),
                    human(m.ci_high, m.unit),
                    doc.run.id,
                    doc.host.hostname
                ),
            })
        })
        .collect();
    Value::Array(entries)
}

/// A number with four significant digits, as text.
fn sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".to_string();
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Measurement;

    fn doc() -> RunDoc {
        let mut d: RunDoc =
            serde_json::from_str(include_str!("../../tests/fixtures/dashboards-run.json"))
                .expect("fixture parses");
        d.results.truncate(3);
        d
    }

    fn by_id<'a>(d: &'a RunDoc, id: &str) -> &'a Measurement {
        d.results.iter().find(|m| m.id == id).expect("in fixture")
    }

    #[test]
    fn bmf_has_one_measure_per_benchmark_with_its_interval() {
        let d = doc();
        let v = bmf(&d);
        let obj = v.as_object().expect("an object");
        assert_eq!(obj.len(), d.results.len());
        for m in &d.results {
            let measures = obj[&m.id].as_object().expect("measures");
            assert_eq!(measures.len(), 1);
            let metric = &measures[bmf_measure(m.unit)];
            assert_eq!(metric["value"], json!(m.median));
            assert_eq!(metric["lower_value"], json!(m.ci_low));
            assert_eq!(metric["upper_value"], json!(m.ci_high));
        }
    }

    #[test]
    fn github_benchmark_entries_are_times_with_a_range() {
        let d = doc();
        let v = github_benchmark(&d);
        let arr = v.as_array().expect("an array");
        assert_eq!(arr.len(), d.results.len());
        for e in arr {
            let m = by_id(&d, e["name"].as_str().expect("name"));
            assert_eq!(e["unit"], "ns/op");
            let t = e["value"].as_f64().expect("value");
            assert!((t - m.to_ns_per_op(m.median)).abs() <= 1e-9 * t);
            let range = e["range"].as_str().expect("range");
            assert!(range.starts_with("± "), "{range}");
            let half: f64 = range[3..].trim().parse().expect("a number");
            assert!(half >= 0.0 && half < t, "{half} vs {t}");
            assert!(e["extra"].as_str().expect("extra").contains(&d.run.id));
        }
    }

    #[test]
    fn measures_follow_the_unit() {
        assert_eq!(bmf_measure(BaseUnit::NsPerOp), "latency");
        assert_eq!(bmf_measure(BaseUnit::OpsPerSec), "throughput");
        assert_eq!(bmf_measure(BaseUnit::BytesPerSec), "bytes-per-second");
        assert_eq!(sig(0.012345), "0.01235");
        assert_eq!(sig(1234.5), "1234");
    }
}
