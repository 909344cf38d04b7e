//! CSV output: one row per benchmark, numbers in base units (ns/op, B/s,
//! ops/s) at full precision, for spreadsheets and scripts. Findings and host
//! facts are not tabular and stay in the JSON document.

use crate::analysis::compare::Comparison;
use crate::document::RunDoc;

/// The columns of [`render_run`].
pub const RUN_COLUMNS: &[&str] = &[
    "run",
    "host",
    "id",
    "area",
    "unit",
    "median",
    "ci_low",
    "ci_high",
    "p5",
    "p95",
    "min",
    "max",
    "mean",
    "mad",
    "cv",
    "samples",
    "ops_per_sample",
    "noisy",
    "params",
    "warnings",
];

/// The columns of [`render_compare`].
pub const COMPARE_COLUMNS: &[&str] = &[
    "id", "area", "unit", "a", "b", "ratio", "ci_low", "ci_high", "verdict", "method", "noisy_a",
    "noisy_b", "mde",
];

/// Renders the measurements of a run as CSV.
pub fn render_run(doc: &RunDoc) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(RUN_COLUMNS)?;
    for m in &doc.results {
        let n = |x: f64| x.to_string();
        w.write_record([
            doc.run.id.clone(),
            doc.host.hostname.clone(),
            m.id.clone(),
            m.area.clone(),
            m.unit.label().to_string(),
            n(m.median),
            n(m.ci_low),
            n(m.ci_high),
            n(m.p5),
            n(m.p95),
            n(m.min),
            n(m.max),
            n(m.mean),
            n(m.mad),
            n(m.cv),
            m.samples.len().to_string(),
            m.ops_per_sample.to_string(),
            m.noisy.to_string(),
            serde_json::to_string(&m.params)?,
            m.warnings.join("; "),
        ])?;
    }
    finish(w)
}

/// Renders a comparison as CSV; benchmarks in one run only have the verdict
/// `only_a` or `only_b` and empty numbers.
pub fn render_compare(c: &Comparison) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(COMPARE_COLUMNS)?;
    for r in &c.rows {
        let n = |x: f64| x.to_string();
        w.write_record([
            r.id.clone(),
            r.area.clone(),
            r.unit.label().to_string(),
            n(r.a),
            n(r.b),
            n(r.ratio),
            n(r.ci_low),
            n(r.ci_high),
            r.verdict.label().to_string(),
            serde_json::to_value(r.method)?
                .as_str()
                .unwrap_or_default()
                .to_string(),
            r.noisy_a.to_string(),
            r.noisy_b.to_string(),
            n(r.mde),
        ])?;
    }
    for (ids, tag) in [(&c.only_a, "only_a"), (&c.only_b, "only_b")] {
        for id in ids {
            let area = crate::harness::area_of(id).to_string();
            let mut rec = vec![id.clone(), area];
            rec.extend(std::iter::repeat_n(String::new(), 6));
            rec.push(tag.to_string());
            rec.extend(std::iter::repeat_n(String::new(), 4));
            w.write_record(&rec)?;
        }
    }
    finish(w)
}

fn finish(w: ::csv::Writer<Vec<u8>>) -> anyhow::Result<String> {
    let bytes = w
        .into_inner()
        .map_err(|e| anyhow::anyhow!("writing CSV: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}
