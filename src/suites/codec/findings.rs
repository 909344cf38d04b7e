//! What the codec results say: the ratio of every codec level, the fastest
//! compressor at each ratio class, the most bytes saved per second spent,
//! the link speed below which compressing before sending pays off, and
//! whether small and large inputs rank the codecs alike.
//!
//! Findings are made for the largest size measured of each input (the
//! small-vs-large finding covers the others); ratios are read from the
//! results' details (`ratio`), speeds are the medians.

use std::collections::BTreeMap;

use crate::harness::claims::{
    CLEAR_GAP, Est, Verdict, Widths, compare, compare_beyond, join_names, rank_apart,
};
use crate::harness::{Finding, Measurement};
use crate::units::{BaseUnit, ValueUnit, fmt_ratio, human, sig3};

/// Lower bounds of the ratio classes (compressed size at most 1/x of the input).
const RATIO_CLASSES: [f64; 7] = [1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0];
/// Below this best ratio an input counts as incompressible.
const INCOMPRESSIBLE: f64 = 1.01;
/// Link speeds (bytes per second) at which the best codec is named: 100 Mbit/s and 1 Gbit/s.
const LINKS: [f64; 2] = [100e6 / 8.0, 1e9 / 8.0];

/// One codec level on one input: its ratio and speeds.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    codec: String,
    /// Input size over output size (exact: the codecs are deterministic).
    ratio: f64,
    /// Compress speed, uncompressed B/s.
    c: Est<'static>,
    /// Decompress speed, uncompressed B/s, when measured.
    d: Option<Est<'static>>,
}

impl Row {
    /// Bytes of output avoided per second of compressing.
    fn saved_per_s(&self) -> Est<'_> {
        self.c.scaled((1.0 - 1.0 / self.ratio).max(0.0))
    }

    /// Time to compress, send over `link` B/s and decompress one byte of
    /// input, a cost with its interval (the ends from the speeds' ends).
    fn send_time(&self, link: f64) -> Option<Est<'_>> {
        let d = self.d?;
        let t = |c: f64, d: f64| 1.0 / c + 1.0 / (self.ratio * link) + 1.0 / d;
        Some(Est::cost(
            t(self.c.value, d.value),
            t(self.c.high, d.high),
            t(self.c.low, d.low),
        ))
    }

    /// The link speed below which compress, send, decompress beats sending raw:
    /// 1/L > 1/c + 1/(rL) + 1/d, so L < (1 - 1/r) / (1/c + 1/d); a rate with
    /// its interval.
    fn break_even(&self) -> Option<Est<'_>> {
        let d = self.d?;
        if self.ratio <= 1.0 {
            return None;
        }
        let l = |c: f64, d: f64| (1.0 - 1.0 / self.ratio) / (1.0 / c + 1.0 / d);
        Some(Est::new(
            l(self.c.value, d.value),
            l(self.c.low, d.low),
            l(self.c.high, d.high),
            true,
        ))
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
    // Words are decided on the area's typical interval (see `Widths`).
    let widths = Widths::of(ms);
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
            c: widths.est(m),
            d: crate::suites::bench::get(ms, &d_id).map(|d| widths.est(d)),
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

fn finding(text: String, value: f64, unit: impl Into<ValueUnit>) -> Finding {
    Finding {
        area: "codec".to_string(),
        text,
        value,
        unit: unit.into(),
    }
}

fn speed(v: f64) -> String {
    human(v, BaseUnit::BytesPerSec)
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

/// The best tier of `rows` by `key` (rows without a value left out): the
/// members, in the rows' order, and the tier's best member. The tier ends
/// at the first clear gap of [`CLEAR_GAP`] ([`rank_apart`]): codecs a few
/// per cent apart are one tier, whatever order noise puts them in.
fn top_tier<'a>(
    rows: &[&'a Row],
    key: impl Fn(&Row) -> Option<Est>,
) -> Option<(Vec<&'a Row>, &'a Row)> {
    let valued: Vec<(&Row, Est)> = rows.iter().filter_map(|r| Some((*r, key(r)?))).collect();
    let items: Vec<Est> = valued.iter().map(|v| v.1).collect();
    let t = rank_apart(&items, CLEAR_GAP);
    let tier = t.tiers.first()?;
    let members = tier.iter().map(|&i| valued[i].0).collect();
    Some((members, valued[t.leaders[0]].0))
}

/// "lz4-1" or "lz4-1 and snappy, with no clear gap between them".
fn tier_names(members: &[&Row]) -> String {
    let names: Vec<&str> = members.iter().map(|r| r.codec.as_str()).collect();
    if names.len() > 1 {
        format!("{}, with no clear gap between them", join_names(&names))
    } else {
        join_names(&names)
    }
}

/// "lz4-1 3.26×, 1.27 GB/s compress, 3.00 GB/s decompress" per member.
fn tier_details(members: &[&Row]) -> String {
    members
        .iter()
        .map(|r| {
            format!(
                "{}{}, {} compress, {} decompress",
                if members.len() > 1 {
                    format!("{} ", r.codec)
                } else {
                    String::new()
                },
                fmt_ratio(r.ratio),
                speed(r.c.value),
                r.d.map(|d| speed(d.value)).unwrap_or_else(|| "?".into())
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The findings of one input at one size.
fn input_findings(name: &str, rows: &[Row]) -> Vec<Finding> {
    let mut by_ratio: Vec<&Row> = rows.iter().collect();
    by_ratio.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    let Some(best) = by_ratio.first() else {
        return Vec::new();
    };
    let list: Vec<String> = by_ratio
        .iter()
        .map(|r| format!("{} {}", r.codec, fmt_ratio(r.ratio)))
        .collect();
    let mut out = vec![finding(
        format!("{name}: compressed size ratio {}", list.join(", ")),
        best.ratio,
        ValueUnit::Ratio,
    )];
    if best.ratio < INCOMPRESSIBLE {
        // Which codec is fastest on incompressible data is not the point
        // (and mostly noise): the figure is what the fastest spends.
        let top = rows.iter().map(|r| r.c.value).fold(0.0, f64::max);
        out.push(finding(
            format!(
                "{name}: incompressible (no codec saves 1%); compressing it only costs time, at most {} here",
                speed(top)
            ),
            top,
            BaseUnit::BytesPerSec,
        ));
        return out;
    }
    out.extend(ratio_class_finding(name, rows));
    let compressible: Vec<&Row> = rows.iter().filter(|r| r.ratio > 1.0).collect();
    out.extend(saved_finding(name, &compressible));
    out.extend(link_finding(name, &compressible, rows));
    out
}

/// The fastest compressors of each ratio class (the tier that cannot be
/// told apart), each tier named once, at the highest class it leads.
fn ratio_class_finding(name: &str, rows: &[Row]) -> Option<Finding> {
    let mut classes: Vec<(f64, Vec<&Row>, &Row)> = Vec::new();
    for t in RATIO_CLASSES {
        let cands: Vec<&Row> = rows.iter().filter(|r| r.ratio >= t).collect();
        if let Some((members, lead)) = top_tier(&cands, |r| Some(r.c)) {
            match classes.last_mut() {
                Some(last) if last.1 == members => *last = (t, members, lead),
                _ => classes.push((t, members, lead)),
            }
        }
    }
    let (_, _, top) = classes.last()?;
    let text: Vec<String> = classes
        .iter()
        .map(|(t, members, _)| {
            format!(
                "≥{}: {} ({})",
                fmt_ratio(*t),
                tier_names(members),
                tier_details(members)
            )
        })
        .collect();
    Some(finding(
        format!(
            "{name}: fastest compressor per ratio class: {}",
            text.join("; ")
        ),
        top.c.value,
        BaseUnit::BytesPerSec,
    ))
}

/// The codecs that avoid the most bytes of output per second spent
/// compressing, among the `compressible` ones.
fn saved_finding(name: &str, compressible: &[&Row]) -> Option<Finding> {
    let (members, lead) = top_tier(compressible, |r| Some(r.saved_per_s()))?;
    let each: Vec<String> = members
        .iter()
        .map(|r| {
            format!(
                "{} {}, {} compress, so {} of output avoided per second spent",
                r.codec,
                fmt_ratio(r.ratio),
                speed(r.c.value),
                speed(r.saved_per_s().value)
            )
        })
        .collect();
    Some(finding(
        format!(
            "{name}: most bytes saved per second of compressing: {} ({})",
            tier_names(&members),
            each.join("; ")
        ),
        lead.saved_per_s().value,
        BaseUnit::BytesPerSec,
    ))
}

/// The link speed below which compressing before sending pays off (the
/// best break-even of the `compressible` codecs), then one finding per
/// link of [`LINKS`] with the best of all `rows` there: one claim each, so
/// a word that moves at one link leaves the others' sentences alone.
fn link_finding(name: &str, compressible: &[&Row], rows: &[Row]) -> Vec<Finding> {
    let Some((members, lead)) = top_tier(compressible, Row::break_even) else {
        return Vec::new();
    };
    let l = lead.break_even().map_or(0.0, |e| e.value);
    let all: Vec<&Row> = rows.iter().collect();
    let mut out = vec![finding(
        format!(
            "{name}: compressing before sending pays off on links slower than {} ({}; compress, send and decompress in turn)",
            bits(l),
            tier_names(&members),
        ),
        l,
        BaseUnit::BytesPerSec,
    )];
    for link in LINKS {
        if let Some((text, value)) = at_link(&all, link) {
            out.push(finding(format!("{name}: {text}"), value, ValueUnit::Ratio));
        }
    }
    out
}

/// At `link` B/s: the codecs of `all` that compress, send and decompress
/// fastest, against sending raw; with the time of sending raw over the
/// best's (above 1: compressing gains).
fn at_link(all: &[&Row], link: f64) -> Option<(String, f64)> {
    let (best, blead) = top_tier(all, |r| r.send_time(link))?;
    let t = blead.send_time(link)?;
    let raw = Est::cost(1.0 / link, 1.0 / link, 1.0 / link);
    let names: Vec<&str> = best.iter().map(|r| r.codec.as_str()).collect();
    let verb = if names.len() > 1 { "are" } else { "is" };
    let text = match compare(&t, &raw) {
        Verdict::Better(r) => format!(
            "at {} {} {verb} best, {} faster than sending raw",
            bits(link),
            join_names(&names),
            r.text()
        ),
        Verdict::Worse(_) => format!("at {} sending raw is faster", bits(link)),
        Verdict::Tie(_) => format!(
            "at {} compressing gains nothing over sending raw that can be told from noise",
            bits(link)
        ),
    };
    Some((text, raw.value / t.value))
}

/// Whether the smallest and the largest size of an input rank the codecs
/// alike: per pair of codecs, their compress speeds compared at each size
/// (by intervals) and their ratios (exact). "differently" when some pair is
/// clearly ordered one way at one size and the other way at the other;
/// "alike" when no pair is, and every pair ordered at one size is ordered
/// the same at the other; otherwise the pairs that cannot be told apart at
/// one of the sizes are named.
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
        &both.iter().map(|(s, _)| s.c.value).collect::<Vec<_>>(),
        &both.iter().map(|(_, l)| l.c.value).collect::<Vec<_>>(),
    )?;
    let dir = |v: Verdict| match v {
        Verdict::Better(_) => Some(true),
        Verdict::Worse(_) => Some(false),
        Verdict::Tie(_) => None,
    };
    let exact = |r: f64| Est::new(r, r, r, true);
    let mut flips = Vec::new();
    for (i, (si, li)) in both.iter().enumerate() {
        for (sj, lj) in &both[i + 1..] {
            let (a, b) = (&si.codec, &sj.codec);
            let at_s = dir(compare_beyond(&si.c, &sj.c, CLEAR_GAP));
            let at_l = dir(compare_beyond(&li.c, &lj.c, CLEAR_GAP));
            match (at_s, at_l) {
                (Some(x), Some(y)) if x != y => {
                    let (f, g) = if x { (a, b) } else { (b, a) };
                    flips.push(format!(
                        "{f} compresses faster than {g} at {s_size} but slower at {l_size}"
                    ));
                }
                _ => {}
            }
            let rs = dir(compare(&exact(si.ratio), &exact(sj.ratio)));
            let rl = dir(compare(&exact(li.ratio), &exact(lj.ratio)));
            if let (Some(x), Some(y)) = (rs, rl)
                && x != y
            {
                let (f, g) = if x { (a, b) } else { (b, a) };
                flips.push(format!(
                    "{f}'s output is smaller than {g}'s at {s_size} but larger at {l_size}"
                ));
            }
        }
    }
    let verdict = if !flips.is_empty() {
        format!(
            "{input}: {s_size} and {l_size} inputs rank the codecs differently: {}",
            flips.join("; ")
        )
    } else {
        format!(
            "{input}: {s_size} and {l_size} inputs rank the codecs alike (no pair clearly {CLEAR_GAP}× apart in opposite orders)"
        )
    };
    Some(finding(
        format!(
            "{verdict} (rank correlation of compress speeds {})",
            sig3(rho_c)
        ),
        rho_c,
        ValueUnit::Rho,
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
    use crate::harness::{find_saying, find_starting};

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
        class.assert_says("≥2.00×: lz4-1");
        class.assert_says("≥4.00×: zstd-1");
        assert!(
            class.text.contains("≥8.00×: xz-9") || class.text.contains("≥8.00×: zstd-19"),
            "{}",
            class.text
        );
        assert_eq!(class.text.matches("lz4-1").count(), 1);
        assert_eq!(class.unit, BaseUnit::BytesPerSec);
        let ratio = find_starting(&f, "json 16MiB: compressed size ratio");
        assert_eq!(ratio.value, 9.0);
        assert!(ratio.text.find("xz-9").unwrap() < ratio.text.find("lz4-1").unwrap());
    }

    #[test]
    fn link_break_even_follows_the_formula() {
        let f = findings(&run());
        let link = find_saying(&f, "compressing before sending pays off");
        // lz4-1: (1 - 1/2.5) / (1/600e6 + 1/3e9) = 300 MB/s, the best of the four.
        assert!((link.value - 300e6).abs() < 1e3, "{}", link.value);
        assert!(
            link.text.contains("lz4-1") && link.text.contains("2.40 Gbit/s"),
            "{}",
            link.text
        );
        // One claim per finding: each link has its own.
        assert!(!link.text.contains("at 100 Mbit/s"), "{}", link.text);
        let slow = find_starting(&f, "json 16MiB: at 100 Mbit/s ");
        slow.assert_says("best,");
        slow.assert_says("faster than sending raw");
        assert!(slow.value > 1.0, "{}", slow.value);
        assert_eq!(slow.unit, ValueUnit::Ratio);
        find_starting(&f, "json 16MiB: at 1.00 Gbit/s ");
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
        let sl = find_starting(&f, "json: 40KiB and 16MiB inputs rank");
        sl.assert_says("differently");
        sl.assert_says("zstd-19's output is smaller than xz-9's at 40KiB but larger at 16MiB");
        assert!(sl.value <= 1.0 && sl.value >= -1.0);
        assert_eq!(sl.unit, ValueUnit::Rho);
    }

    /// Three codecs at two sizes with ±2% intervals: `speeds` per size.
    fn three(speeds: [[f64; 3]; 2]) -> Vec<Measurement> {
        let mut ms = Vec::new();
        for ((size, bytes), sp) in [("40KiB", 40u64 << 10), ("1MiB", 1 << 20)]
            .into_iter()
            .zip(speeds)
        {
            for (codec, c) in ["lz4-1", "snappy", "zstd-1"].into_iter().zip(sp) {
                let mut p = pair("json", codec, size, bytes, 3.0, c, 2e9);
                for m in &mut p {
                    m.summary.ci_low = m.median * 0.98;
                    m.summary.ci_high = m.median * 1.02;
                }
                ms.extend(p);
            }
        }
        ms
    }

    fn small_vs_large_text(ms: &[Measurement]) -> String {
        findings(ms)
            .into_iter()
            .find(|f| f.unit == ValueUnit::Rho)
            .expect("a small-vs-large finding")
            .text
    }

    #[test]
    fn rank_agreement_is_decided_by_intervals() {
        // Same clear order at both sizes: alike.
        let t = small_vs_large_text(&three([[1.2e9, 0.8e9, 0.4e9], [0.9e9, 0.6e9, 0.3e9]]));
        assert!(
            t.starts_with("json: 40KiB and 1MiB inputs rank the codecs alike ("),
            "{t}"
        );
        // lz4-1 and snappy tie at both sizes, points swapped: still alike.
        let t = small_vs_large_text(&three([[1.2e9, 1.19e9, 0.4e9], [0.90e9, 0.91e9, 0.3e9]]));
        assert!(t.contains("rank the codecs alike"), "{t}");
        // lz4-1 clearly faster at 40KiB, clearly slower at 1MiB: differently.
        let t = small_vs_large_text(&three([[1.2e9, 0.8e9, 0.4e9], [0.6e9, 0.9e9, 0.3e9]]));
        assert!(
            t.contains(
                "differently: lz4-1 compresses faster than snappy at 40KiB but slower at 1MiB"
            ),
            "{t}"
        );
        // Ordered at one size, close at the other: no clear swap, alike.
        let t = small_vs_large_text(&three([[1.2e9, 0.8e9, 0.4e9], [0.9e9, 0.89e9, 0.3e9]]));
        assert!(t.contains("rank the codecs alike"), "{t}");
        // A swap smaller than the clear gap is not a swap.
        let t = small_vs_large_text(&three([[1.0e9, 0.9e9, 0.4e9], [0.9e9, 1.0e9, 0.3e9]]));
        assert!(t.contains("rank the codecs alike"), "{t}");
    }

    #[test]
    fn codecs_within_noise_share_the_top() {
        let ms = three([[1.2e9, 1.19e9, 0.4e9], [0.90e9, 0.91e9, 0.3e9]]);
        let f = findings(&ms);
        let saved = find_starting(&f, "json 1MiB: most bytes saved per second");
        saved.assert_says(": lz4-1 and snappy, with no clear gap between them (");
        let class = f
            .iter()
            .find(|f| {
                f.text
                    .starts_with("json 1MiB: fastest compressor per ratio class")
            })
            .unwrap();
        class.assert_says("lz4-1 and snappy, with no clear gap");
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
