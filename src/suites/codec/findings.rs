//! What the codec results say: the ratio of every codec level, the fastest
//! compressor at each ratio class, the most bytes saved per second spent,
//! the link speed below which compressing before sending pays off, and
//! whether small and large inputs rank the codecs alike.
//!
//! Findings are made for the largest size measured of each input (the
//! small-vs-large finding covers the others); ratios are read from the
//! results' details (`ratio`), speeds are the medians.

use std::collections::BTreeMap;

use crate::harness::{Finding, Measurement};
use crate::units::{fmt_ratio, human, sig3};

/// Lower bounds of the ratio classes (compressed size at most 1/x of the input).
const RATIO_CLASSES: [f64; 7] = [1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0];
/// Below this best ratio an input counts as incompressible.
const INCOMPRESSIBLE: f64 = 1.01;
/// Link speeds (bytes per second) at which the best codec is named: 100 Mbit/s and 1 Gbit/s.
const LINKS: [f64; 2] = [100e6 / 8.0, 1e9 / 8.0];
/// Smallest speed-up over sending raw that is worth naming at a link speed.
const MIN_GAIN: f64 = 1.05;

/// One codec level on one input: its ratio and speeds.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    codec: String,
    ratio: f64,
    /// Compress speed, uncompressed B/s.
    c: f64,
    /// Decompress speed, uncompressed B/s, when measured.
    d: Option<f64>,
}

impl Row {
    /// Bytes of output avoided per second of compressing.
    fn saved_per_s(&self) -> f64 {
        self.c * (1.0 - 1.0 / self.ratio)
    }

    /// Time to compress, send over `link` B/s and decompress one byte of input.
    fn send_time(&self, link: f64) -> Option<f64> {
        Some(1.0 / self.c + 1.0 / (self.ratio * link) + 1.0 / self.d?)
    }

    /// The link speed below which compress, send, decompress beats sending raw:
    /// 1/L > 1/c + 1/(rL) + 1/d, so L < (1 - 1/r) / (1/c + 1/d).
    fn break_even(&self) -> Option<f64> {
        Some((1.0 - 1.0 / self.ratio) / (1.0 / self.c + 1.0 / self.d?))
    }
}

/// The parts of `codec.<input>.<codec>.<op>/<size>`.
fn parse_id(id: &str) -> Option<(&str, &str, &str, &str)> {
    let (base, size) = id.split_once('/')?;
    let mut parts = base.split('.');
    let (area, input, codec, op) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (area == "codec" && parts.next().is_none()).then_some((input, codec, op, size))
}

/// Rows per input, then per size (with its byte count), from the measurements.
type Groups = BTreeMap<String, Vec<(u64, String, Vec<Row>)>>;

fn groups(ms: &[Measurement]) -> Groups {
    let mut out: Groups = BTreeMap::new();
    for m in ms {
        let Some((input, codec, "compress", size)) = parse_id(&m.id) else {
            continue;
        };
        let Some(ratio) = m
            .details
            .as_ref()
            .and_then(|d| d.get("ratio"))
            .and_then(|r| r.as_f64())
            .filter(|r| r.is_finite() && *r > 0.0)
        else {
            continue;
        };
        let bytes = m
            .params
            .get("input_bytes")
            .and_then(|b| b.as_u64())
            .unwrap_or(0);
        let d_id = format!("codec.{input}.{codec}.decompress/{size}");
        let row = Row {
            codec: codec.to_string(),
            ratio,
            c: m.median,
            d: super::super::median_of(ms, &d_id),
        };
        let sizes = out.entry(input.to_string()).or_default();
        match sizes.iter_mut().find(|(_, s, _)| s == size) {
            Some((_, _, rows)) => rows.push(row),
            None => sizes.push((bytes, size.to_string(), vec![row])),
        }
    }
    for sizes in out.values_mut() {
        sizes.sort_by_key(|(b, _, _)| *b);
    }
    out
}

/// Every codec finding of a run.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (input, sizes) in groups(ms) {
        if let Some((_, size, rows)) = sizes.last() {
            out.extend(input_findings(&format!("{input} {size}"), rows));
        }
        if let (Some(small), Some(large)) = (sizes.first(), sizes.last())
            && sizes.len() > 1
        {
            out.extend(small_vs_large(&input, small, large));
        }
    }
    out
}

fn finding(text: String, value: f64, unit: &str) -> Finding {
    Finding {
        area: "codec".to_string(),
        text,
        value,
        unit: unit.to_string(),
    }
}

fn speed(v: f64) -> String {
    human(v, "B/s")
}

/// A link speed in bits per second: 940 Mbit/s, 3.2 Gbit/s.
fn bits(bytes_per_s: f64) -> String {
    let b = bytes_per_s * 8.0;
    let (v, u) = if b >= 1e9 {
        (b / 1e9, "Gbit/s")
    } else if b >= 1e6 {
        (b / 1e6, "Mbit/s")
    } else {
        (b / 1e3, "kbit/s")
    };
    format!("{} {u}", sig3(v))
}

/// The findings of one input at one size.
fn input_findings(name: &str, rows: &[Row]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut by_ratio: Vec<&Row> = rows.iter().collect();
    by_ratio.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    let Some(best) = by_ratio.first() else {
        return out;
    };
    let list: Vec<String> = by_ratio
        .iter()
        .map(|r| format!("{} {}", r.codec, fmt_ratio(r.ratio)))
        .collect();
    out.push(finding(
        format!("{name}: compressed size ratio {}", list.join(", ")),
        best.ratio,
        "x",
    ));
    if best.ratio < INCOMPRESSIBLE {
        let fastest = rows.iter().max_by(|a, b| a.c.total_cmp(&b.c));
        if let Some(f) = fastest {
            out.push(finding(
                format!(
                    "{name}: incompressible (no codec saves 1%); compressing it only costs time, {} even with {}",
                    speed(f.c),
                    f.codec
                ),
                f.c,
                "B/s",
            ));
        }
        return out;
    }

    // The fastest compressor of each ratio class, each codec named once
    // (at the highest class it is the fastest for).
    let mut classes: Vec<(f64, &Row)> = Vec::new();
    for t in RATIO_CLASSES {
        let fastest = rows
            .iter()
            .filter(|r| r.ratio >= t)
            .max_by(|a, b| a.c.total_cmp(&b.c));
        if let Some(r) = fastest {
            match classes.last_mut() {
                Some(last) if last.1.codec == r.codec => *last = (t, r),
                _ => classes.push((t, r)),
            }
        }
    }
    if let Some(&(_, top)) = classes.last() {
        let text: Vec<String> = classes
            .iter()
            .map(|(t, r)| {
                format!(
                    "≥{}: {} ({}, {} compress, {} decompress)",
                    fmt_ratio(*t),
                    r.codec,
                    fmt_ratio(r.ratio),
                    speed(r.c),
                    r.d.map(speed).unwrap_or_else(|| "?".into())
                )
            })
            .collect();
        out.push(finding(
            format!(
                "{name}: fastest compressor per ratio class: {}",
                text.join("; ")
            ),
            top.c,
            "B/s",
        ));
    }

    if let Some(r) = rows
        .iter()
        .max_by(|a, b| a.saved_per_s().total_cmp(&b.saved_per_s()))
    {
        out.push(finding(
            format!(
                "{name}: most bytes saved per second of compressing: {} ({}, {} compress, so {} of output avoided per second spent)",
                r.codec,
                fmt_ratio(r.ratio),
                speed(r.c),
                speed(r.saved_per_s())
            ),
            r.saved_per_s(),
            "B/s",
        ));
    }

    let even = rows
        .iter()
        .filter_map(|r| Some((r, r.break_even()?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((r, l)) = even {
        let mut at = Vec::new();
        for link in LINKS {
            let best = rows
                .iter()
                .filter_map(|r| Some((r, r.send_time(link)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((b, t)) = best {
                let gain = 1.0 / link / t;
                if gain >= MIN_GAIN {
                    at.push(format!(
                        "at {} {} is best, {} faster than sending raw",
                        bits(link),
                        b.codec,
                        fmt_ratio(gain)
                    ));
                }
            }
        }
        out.push(finding(
            format!(
                "{name}: compressing before sending pays off on links slower than {} ({}; compress, send and decompress in turn){}{}",
                bits(l),
                r.codec,
                if at.is_empty() { "" } else { "; " },
                at.join(", ")
            ),
            l,
            "B/s",
        ));
    }
    out
}

/// Whether the smallest and the largest size of an input rank the codecs alike.
fn small_vs_large(
    input: &str,
    (_, s_size, small): &(u64, String, Vec<Row>),
    (_, l_size, large): &(u64, String, Vec<Row>),
) -> Option<Finding> {
    let both: Vec<(&Row, &Row)> = small
        .iter()
        .filter_map(|s| Some((s, large.iter().find(|l| l.codec == s.codec)?)))
        .collect();
    if both.len() < 3 {
        return None;
    }
    let rho_c = spearman(
        &both.iter().map(|(s, _)| s.c).collect::<Vec<_>>(),
        &both.iter().map(|(_, l)| l.c).collect::<Vec<_>>(),
    )?;
    let best = |f: &dyn Fn(&Row) -> f64, pick_small: bool| {
        both.iter()
            .map(|(s, l)| if pick_small { *s } else { *l })
            .max_by(|a, b| f(a).total_cmp(&f(b)))
            .map(|r| r.codec.clone())
    };
    let ratio = |r: &Row| r.ratio;
    let fast = |r: &Row| r.c;
    let mut diffs = Vec::new();
    let (br_s, br_l) = (best(&ratio, true)?, best(&ratio, false)?);
    // Which codec "wins" on incompressible data is noise, not a ranking.
    let compressible = both
        .iter()
        .any(|(s, l)| s.ratio >= INCOMPRESSIBLE && l.ratio >= INCOMPRESSIBLE);
    if br_s != br_l && compressible {
        diffs.push(format!(
            "the best ratio is {br_s}'s at {s_size} but {br_l}'s at {l_size}"
        ));
    }
    let (fc_s, fc_l) = (best(&fast, true)?, best(&fast, false)?);
    if fc_s != fc_l {
        diffs.push(format!(
            "the fastest compressor is {fc_s} at {s_size} but {fc_l} at {l_size}"
        ));
    }
    // The codec whose compress speed changes most between the sizes, relative to the others.
    let mut change: Vec<(&str, f64)> = both
        .iter()
        .map(|(s, l)| (s.codec.as_str(), l.c / s.c))
        .collect();
    change.sort_by(|a, b| a.1.total_cmp(&b.1));
    if let (Some(lo), Some(hi)) = (change.first(), change.last())
        && hi.1 / lo.1 > 2.0
    {
        diffs.push(format!(
            "from {s_size} to {l_size} {} compresses {} as fast while {} does {}",
            hi.0,
            fmt_ratio(hi.1),
            lo.0,
            fmt_ratio(lo.1)
        ));
    }
    let verdict = if diffs.is_empty() {
        format!("{input}: {s_size} and {l_size} inputs rank the codecs alike")
    } else {
        format!(
            "{input}: {s_size} and {l_size} inputs rank the codecs differently: {}",
            diffs.join("; ")
        )
    };
    Some(finding(
        format!(
            "{verdict} (rank correlation of compress speeds {})",
            sig3(rho_c)
        ),
        rho_c,
        "ρ",
    ))
}

/// Spearman's rank correlation of two equally long series (ties averaged).
fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            let avg = (i + j) as f64 / 2.0;
            for &k in &idx[i..=j] {
                r[k] = avg;
            }
            i = j + 1;
        }
        r
    }
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = a.len() as f64;
    let mean = (n - 1.0) / 2.0;
    let cov: f64 = ra
        .iter()
        .zip(&rb)
        .map(|(x, y)| (x - mean) * (y - mean))
        .sum();
    let va: f64 = ra.iter().map(|x| (x - mean).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mean).powi(2)).sum();
    let r = cov / (va * vb).sqrt();
    r.is_finite().then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compress result with its ratio, and the decompress result beside it.
    fn pair(
        input: &str,
        codec: &str,
        size: &str,
        bytes: u64,
        ratio: f64,
        c: f64,
        d: f64,
    ) -> Vec<Measurement> {
        let mut cm =
            Measurement::point(&format!("codec.{input}.{codec}.compress/{size}"), "B/s", c);
        cm.params.insert("input_bytes".into(), bytes.into());
        cm.details = Some(serde_json::json!({ "ratio": ratio }));
        let mut dm = Measurement::point(
            &format!("codec.{input}.{codec}.decompress/{size}"),
            "B/s",
            d,
        );
        dm.params.insert("input_bytes".into(), bytes.into());
        vec![cm, dm]
    }

    fn run() -> Vec<Measurement> {
        let mut ms = Vec::new();
        for (size, bytes, k) in [("40KiB", 40 << 10, 0.5), ("16MiB", 16 << 20, 1.0)] {
            ms.extend(pair("json", "lz4-1", size, bytes, 2.5, 600e6 * k, 3e9));
            ms.extend(pair("json", "zstd-1", size, bytes, 4.0, 400e6 * k, 1.2e9));
            ms.extend(pair("json", "zstd-19", size, bytes, 8.0, 4e6 * k, 1.2e9));
            // xz-9 pays a large set-up per call: far slower on small inputs.
            ms.extend(pair(
                "json",
                "xz-9",
                size,
                bytes,
                if bytes > 1 << 20 { 9.0 } else { 7.0 },
                3e6 * k * k * k * k,
                100e6,
            ));
            ms.extend(pair("random", "lz4-1", size, bytes, 0.996, 3e9, 8e9));
            ms.extend(pair("random", "zstd-1", size, bytes, 0.9999, 2e9, 8e9));
        }
        ms
    }

    fn texts(f: &[Finding]) -> Vec<&str> {
        f.iter().map(|f| f.text.as_str()).collect()
    }

    #[test]
    fn ratio_classes_name_the_fastest_codec_once_each() {
        let f = findings(&run());
        let class = f
            .iter()
            .find(|f| {
                f.text
                    .starts_with("json 16MiB: fastest compressor per ratio class")
            })
            .expect("a class finding");
        assert!(class.text.contains("≥2.00×: lz4-1"), "{}", class.text);
        assert!(class.text.contains("≥4.00×: zstd-1"), "{}", class.text);
        assert!(
            class.text.contains("≥8.00×: xz-9") || class.text.contains("≥8.00×: zstd-19"),
            "{}",
            class.text
        );
        assert_eq!(class.text.matches("lz4-1").count(), 1);
        assert_eq!(class.unit, "B/s");
        let ratio = f
            .iter()
            .find(|f| f.text.starts_with("json 16MiB: compressed size ratio"))
            .unwrap();
        assert_eq!(ratio.value, 9.0);
        assert!(ratio.text.find("xz-9").unwrap() < ratio.text.find("lz4-1").unwrap());
    }

    #[test]
    fn link_break_even_follows_the_formula() {
        let f = findings(&run());
        let link = f
            .iter()
            .find(|f| f.text.contains("compressing before sending pays off"))
            .expect("a link finding");
        // lz4-1: (1 - 1/2.5) / (1/600e6 + 1/3e9) = 300 MB/s, the best of the four.
        assert!((link.value - 300e6).abs() < 1e3, "{}", link.value);
        assert!(
            link.text.contains("lz4-1") && link.text.contains("2.40 Gbit/s"),
            "{}",
            link.text
        );
        assert!(link.text.contains("at 100 Mbit/s"), "{}", link.text);
    }

    #[test]
    fn incompressible_input_is_said_so_and_gets_no_link_finding() {
        let f = findings(&run());
        let t = texts(&f);
        assert!(
            t.iter()
                .any(|t| t.starts_with("random 16MiB: incompressible")),
            "{t:?}"
        );
        assert!(
            !t.iter()
                .any(|t| t.starts_with("random 16MiB: compressing before"))
        );
    }

    #[test]
    fn small_and_large_inputs_ranked_differently_are_named() {
        let f = findings(&run());
        let sl = f
            .iter()
            .find(|f| f.text.starts_with("json: 40KiB and 16MiB inputs rank"))
            .expect("a small-vs-large finding");
        assert!(sl.text.contains("differently"), "{}", sl.text);
        assert!(
            sl.text
                .contains("the best ratio is zstd-19's at 40KiB but xz-9's at 16MiB"),
            "{}",
            sl.text
        );
        assert!(sl.value <= 1.0 && sl.value >= -1.0);
        assert_eq!(sl.unit, "ρ");
    }

    #[test]
    fn spearman_of_same_and_reversed_orders() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman(&[1.0], &[1.0]), None);
    }

    #[test]
    fn foreign_and_malformed_ids_are_ignored() {
        let ms = vec![
            Measurement::point("syscall.getpid.raw", "ns/op", 50.0),
            Measurement::point("codec.json.zstd-1.compress", "B/s", 5e8),
        ];
        assert!(findings(&ms).is_empty());
    }
}
