//! The ways to read a file's lines, per file shape: in tiers with `wc -l`
//! for scale, the memory each takes, and the cost of a cold cache.

use std::collections::BTreeMap;

use super::ends_text;
use crate::harness::claims::{
    CLEAR_GAP, Est, Widths, compare_beyond, join_names, rank_apart, speedup, with_typical_width,
};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{get, ratio_finding};
use crate::suites::text::lines::Method;
use crate::units::{BaseUnit, ValueUnit, human, human_bytes};

/// The place of a line-reading method in the report order (unknown last).
fn method_order(name: &str) -> usize {
    Method::ALL
        .iter()
        .position(|m| m.name() == name)
        .unwrap_or(Method::ALL.len())
}

/// The line-reading method of a `text.lines.*` result.
fn line_method(m: &Measurement) -> String {
    m.param("method").unwrap_or_default()
}

/// The warm `text.lines.*` results per file shape, in report order.
fn line_shapes(ms: &[Measurement]) -> BTreeMap<String, Vec<&Measurement>> {
    let mut shapes: BTreeMap<String, Vec<&Measurement>> = BTreeMap::new();
    for m in ms
        .iter()
        .filter(|m| m.id.starts_with("text.lines.") && !m.id.ends_with("/cold"))
    {
        if let Some(shape) = m.id.split('/').nth(1) {
            shapes.entry(shape.to_string()).or_default().push(m);
        }
    }
    for rows in shapes.values_mut() {
        rows.sort_by_key(|m| (method_order(&line_method(m)), m.id.clone()));
    }
    shapes
}

/// The warm results of one file shape: every way to read its lines, and
/// `wc -l` among them for scale.
struct LineShape<'a> {
    /// The shape's name (`crlf-40B`).
    name: &'a str,
    /// Every result of the shape, in report order.
    rows: &'a [&'a Measurement],
    /// Its results but `wc -l`'s: opcost's own ways to read the lines.
    ours: Vec<&'a Measurement>,
}

impl LineShape<'_> {
    /// The ways to read the lines in tiers (the ends named), and `wc -l`
    /// against the fastest tier.
    fn ranking(&self, widths: &Widths) -> Vec<Finding> {
        let (shape, ours) = (self.name, &self.ours);
        if ours.len() <= 1 {
            return Vec::new();
        }
        let names: Vec<String> = ours.iter().map(|m| line_method(m)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        // The set's typical width, not the area's: the line readers of one
        // file are measured side by side, while the area's width mixes in
        // the collation rows, whose rounds spread more (on three quick runs
        // the area's width joined 1.8 GB/s with 0.8 GB/s in two of three).
        let own: Vec<Est> = ours.iter().map(|m| Est::of(m)).collect();
        let items = with_typical_width(&own);
        let t = rank_apart(&items, CLEAR_GAP);
        let (Some(top), Some(&lead)) = (t.tiers.first(), t.leaders.first()) else {
            return Vec::new();
        };
        // The slowest way of all (a tier's leader is its fastest member).
        let last = (0..items.len())
            .min_by(|&a, &b| speedup(&items[a], &items[b]).ratio.total_cmp(&1.0))
            .unwrap_or(lead);
        let lines_s = |m: &Measurement| {
            m.details
                .as_ref()
                .and_then(|d| d.get("lines_per_s")?.as_f64())
                .map(|l| format!(", {} lines/s", human_count(l)))
                .unwrap_or_default()
        };
        let mut out = vec![ratio_finding(
            "text",
            format!(
                "lines of a {shape} file, {} (the fastest {}{}, the slowest {})",
                ends_text(&names, &items, &t),
                human(items[lead].value, BaseUnit::BytesPerSec),
                lines_s(ours[lead]),
                human(items[last].value, BaseUnit::BytesPerSec)
            ),
            speedup(&items[lead], &items[last]).ratio,
        )];
        if let Some(wc) = self.rows.iter().find(|m| line_method(m) == "wc_l") {
            let top_names: Vec<&str> = top.iter().map(|&i| names[i]).collect();
            out.push(self.wc_finding(&widths.est(wc), &top_names, &items[lead]));
        }
        out
    }

    /// `wc -l`'s speed on the shape (`wc`) against the fastest tier of
    /// ours (`top_names`, led by `lead`).
    fn wc_finding(&self, wc: &Est, top_names: &[&str], lead: &Est) -> Finding {
        let group = join_names(top_names);
        let verb = if top_names.len() > 1 { "are" } else { "is" };
        let verdict = compare_beyond(lead, wc, CLEAR_GAP).pick(
            |r| format!("the fastest here, {group}, {verb} {r} faster"),
            |r| format!("it is {r} faster than the fastest here, {group}"),
            // One word for a tie, narrow or wide: the interval printed
            // says which (a word decided by its width flips with the
            // rounds' luck).
            |r| {
                format!(
                    "the fastest here, {group}, and wc -l are not clearly {CLEAR_GAP}× apart ({r})"
                )
            },
        );
        ratio_finding(
            "text",
            format!(
                "wc -l counts the lines of the {} file at {} (its process start included); {verdict}",
                self.name,
                human(wc.value, BaseUnit::BytesPerSec)
            ),
            lead.value / wc.value,
        )
    }

    /// Peak extra memory of every way on this shape, in report order; the
    /// largest named with every way within 5% of it.
    fn peak_memory(&self) -> Option<Finding> {
        let peaks: Vec<(String, f64, f64)> = self
            .ours
            .iter()
            .filter_map(|m| {
                let d = m.details.as_ref()?;
                Some((
                    line_method(m),
                    d.get("peak_extra_bytes")?.as_f64()?,
                    d.get("file_bytes")?.as_f64()?,
                ))
            })
            .collect();
        let top_bytes = peaks.iter().map(|p| p.1).fold(0.0, f64::max);
        let file = peaks
            .first()
            .map(|p| p.2)
            .filter(|&f| peaks.len() > 1 && f > 0.0)?;
        let list: Vec<String> = peaks
            .iter()
            .map(|(m, b, _)| format!("{m} {}", human_bytes(*b)))
            .collect();
        let largest: Vec<&str> = peaks
            .iter()
            .filter(|p| p.1 * crate::harness::claims::MATERIAL >= top_bytes)
            .map(|p| p.0.as_str())
            .collect();
        Some(Finding {
            area: "text".into(),
            text: format!(
                "peak extra memory reading the {} {} file: {} (the most: {}, {:.1}× the file; mmap counts the mapped page cache)",
                human_bytes(file),
                self.name,
                list.join(", "),
                join_names(&largest),
                top_bytes / file
            ),
            value: top_bytes,
            unit: ValueUnit::Bytes,
        })
    }

    /// Each way from the page cache against after dropping it, where the
    /// run (`ms`) has its cold result.
    fn cold(&self, ms: &[Measurement]) -> Vec<Finding> {
        let mut out = Vec::new();
        for m in &self.ours {
            let cold = get(ms, &format!("{}/cold", m.id));
            if let Some(cold) = cold {
                let r = m.median / cold.median;
                out.push(ratio_finding(
                    "text",
                    format!(
                        "{} over the {} file: {} from the page cache, {} after dropping it",
                        line_method(m),
                        self.name,
                        human(m.median, BaseUnit::BytesPerSec),
                        human(cold.median, BaseUnit::BytesPerSec)
                    ),
                    r,
                ));
            }
        }
        out
    }
}

/// Per file shape: the ways to read its lines in tiers, `wc -l` for scale,
/// the memory of every way, and the cost of a cold cache.
pub(super) fn lines_findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let widths = Widths::of(ms);
    for (name, rows) in &line_shapes(ms) {
        let shape = LineShape {
            name,
            rows,
            ours: rows
                .iter()
                .copied()
                .filter(|m| line_method(m) != "wc_l")
                .collect(),
        };
        out.extend(shape.ranking(&widths));
        out.extend(shape.peak_memory());
        out.extend(shape.cold(ms));
    }
    out
}

/// A count per second as `16.8 M`, `912 k`.
fn human_count(v: f64) -> String {
    human(v, BaseUnit::OpsPerSec)
        .trim_end_matches("op/s")
        .trim()
        .to_string()
}
