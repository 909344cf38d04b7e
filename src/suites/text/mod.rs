//! Text: caseless compare and sort, and whether the order is right for the
//! language (E10); iterating the lines of a file, and the memory it takes
//! (E11).
//!
//! Why correctness sits beside speed: the fast ways of comparing caselessly
//! (lowercase, then compare bytes) put Swedish `ä` before `å`, and the right
//! ways (locale collation) cost many times more; a table of speeds alone
//! would recommend the wrong one. Every compare and sort result carries
//! `order_correct` for its language, checked against a fixed list written
//! from the CLDR rules, and the findings put the two side by side.

pub mod clocale;
pub mod collate;
pub mod lines;
pub mod methods;
pub mod words;

use std::collections::BTreeMap;

use super::{Suite, get, ratio_finding};
use crate::harness::{Bench, Finding, Measurement};
use crate::host::Host;
use crate::units::{fmt_ratio, human, human_bytes};

/// The text suite.
pub fn suite() -> Suite {
    Suite {
        name: "text",
        summary: "caseless compare and sort (bytes, ASCII, Unicode folding, C locale, ICU4X) with order correctness per language; line iteration speed and memory",
        benches,
        findings,
    }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let mut v = collate::benches();
    v.extend(lines::benches());
    v
}

fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = order_findings(ms);
    out.extend(speed_findings(ms));
    out.extend(lines_findings(ms));
    out
}

/// A detail of a measurement as text.
fn detail_str<'a>(m: &'a Measurement, key: &str) -> Option<&'a str> {
    m.details.as_ref()?.get(key)?.as_str()
}

/// The order check of each method of each language, from whichever
/// compare or sort result of it the run has: lang -> method -> wrong pair.
fn order_checks(
    ms: &[Measurement],
) -> BTreeMap<String, BTreeMap<String, Option<(String, String)>>> {
    let mut by_lang: BTreeMap<String, BTreeMap<String, Option<(String, String)>>> = BTreeMap::new();
    for m in ms.iter().filter(|m| m.area == "text") {
        let Some(d) = &m.details else { continue };
        let (Some(lang), Some(method), Some(ok)) = (
            d.get("lang").and_then(|v| v.as_str()),
            d.get("method").and_then(|v| v.as_str()),
            d.get("order_correct").and_then(|v| v.as_bool()),
        ) else {
            continue;
        };
        let pair = d
            .get("first_wrong_pair")
            .and_then(|p| p.as_array())
            .and_then(|p| {
                Some((
                    p.first()?.as_str()?.to_string(),
                    p.get(1)?.as_str()?.to_string(),
                ))
            });
        let wrong = if ok {
            None
        } else {
            Some(pair.unwrap_or_default())
        };
        by_lang
            .entry(lang.to_string())
            .or_default()
            .insert(method.to_string(), wrong);
    }
    by_lang
}

/// Per language: which methods order its fixed list right, and how the
/// others go wrong; and where the C library and ICU disagree.
fn order_findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (lang, methods) in order_checks(ms) {
        let right: Vec<&str> = methods
            .iter()
            .filter(|(_, w)| w.is_none())
            .map(|(m, _)| m.as_str())
            .collect();
        // Group the wrong ones by the pair they get wrong.
        let mut wrong: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
        for (m, w) in &methods {
            if let Some(pair) = w {
                wrong.entry(pair.clone()).or_default().push(m);
            }
        }
        let wrong_text: Vec<String> = wrong
            .iter()
            .map(|((a, b), ms)| format!("{} fail '{a}' < '{b}'", ms.join(", ")))
            .collect();
        out.push(Finding {
            area: "text".into(),
            text: format!(
                "order check for {lang}: right with {}; wrong: {}",
                if right.is_empty() {
                    "no method".to_string()
                } else {
                    right.join(", ")
                },
                if wrong_text.is_empty() {
                    "none".to_string()
                } else {
                    wrong_text.join("; ")
                }
            ),
            value: right.len() as f64,
            unit: "methods".into(),
        });
    }
    for m in ms.iter().filter(|m| m.id.starts_with("text.cmp.strcoll/")) {
        let Some(d) = m.details.as_ref().and_then(|d| d.get("icu_disagreement")) else {
            continue;
        };
        let (Some(n), Some(of)) = (
            d.get("pairs").and_then(|v| v.as_u64()),
            d.get("of").and_then(|v| v.as_u64()),
        ) else {
            continue;
        };
        let locale = detail_str(m, "locale").unwrap_or("?");
        let against = d.get("against").and_then(|v| v.as_str()).unwrap_or("ICU");
        let example = d
            .get("first")
            .and_then(|p| p.as_array())
            .and_then(|p| {
                Some(format!(
                    ", e.g. glibc puts '{}' before '{}'",
                    p.first()?.as_str()?,
                    p.get(1)?.as_str()?
                ))
            })
            .unwrap_or_default();
        out.push(Finding {
            area: "text".into(),
            text: if n == 0 {
                format!("glibc strcoll under {locale} and {against} agree on all {of} neighbouring pairs of the generated words")
            } else {
                format!("glibc strcoll under {locale} and {against} disagree on {n} of {of} neighbouring pairs of the generated words{example}")
            },
            value: n as f64,
            unit: "pairs".into(),
        });
    }
    out
}

/// Per language: what correct collation costs against ASCII folding, the
/// fastest method with the right order, and what sort keys save.
fn speed_findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let checks = order_checks(ms);
    for (lang, methods) in &checks {
        let cmp = |method: &str| get(ms, &format!("text.cmp.{method}/{lang}")).map(|m| m.median);
        if let (Some(icu), Some(ascii)) = (cmp("icu.tertiary"), cmp("ascii_ci")) {
            let r = icu / ascii;
            let lower = match methods.get("lower_alloc") {
                Some(Some((a, b))) => {
                    format!("; lowercase-then-compare gets '{a}' < '{b}' wrong for {lang}")
                }
                _ => String::new(),
            };
            out.push(ratio_finding(
                "text",
                format!(
                    "ICU {lang} collation (tertiary) is {} slower per comparison than ASCII case folding ({} vs {}){lower}",
                    fmt_ratio(r),
                    human(icu, "ns"),
                    human(ascii, "ns")
                ),
                r,
            ));
        }
        let fastest = |keyed: bool| {
            methods
                .iter()
                .filter(|(m, w)| {
                    w.is_none() && (m.starts_with("icu_keys") || m.as_str() == "strxfrm") == keyed
                })
                .filter_map(|(m, _)| Some((m.as_str(), cmp(m)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
        };
        if let Some((m, ns)) = fastest(false) {
            let keys = fastest(true)
                .map(|(k, kns)| {
                    format!(
                        "; with sort keys built beforehand, {k} compares in {}",
                        human(kns, "ns")
                    )
                })
                .unwrap_or_default();
            out.push(Finding {
                area: "text".into(),
                text: format!(
                    "fastest comparison with the right order for {lang}: {m}, {} per comparison{keys}",
                    human(ns, "ns")
                ),
                value: ns,
                unit: "ns/op".into(),
            });
        }
        // Sorting with keys against comparing, at the largest size measured.
        let sort = |method: &str, n: u64| get(ms, &format!("text.sort.{method}/{lang}/n={n}"));
        for n in [1_000_000u64, 100_000, 1_000] {
            let (Some(keys), Some(direct)) =
                (sort("icu_keys.tertiary", n), sort("icu.tertiary", n))
            else {
                continue;
            };
            let r = direct.median / keys.median;
            let share = keys
                .details
                .as_ref()
                .and_then(|d| d.get("key_build_share")?.as_f64())
                .map(|s| format!(", building the keys is {:.0}% of that", s * 100.0))
                .unwrap_or_default();
            out.push(ratio_finding(
                "text",
                format!(
                    "sorting {n} {lang} words with ICU tertiary: {} comparing strings, {} with sort keys{share} ({} faster with keys)",
                    human(direct.median, "ns"),
                    human(keys.median, "ns"),
                    fmt_ratio(r)
                ),
                r,
            ));
            break;
        }
    }
    out
}

/// Per file shape: fastest against slowest way, `wc -l` for scale, the
/// memory of reading the whole file, and the cost of a cold cache.
fn lines_findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut shapes: BTreeMap<String, Vec<&Measurement>> = BTreeMap::new();
    for m in ms
        .iter()
        .filter(|m| m.id.starts_with("text.lines.") && !m.id.ends_with("/cold"))
    {
        if let Some(shape) = m.id.split('/').nth(1) {
            shapes.entry(shape.to_string()).or_default().push(m);
        }
    }
    let method = |m: &Measurement| m.param("method").unwrap_or_default();
    for (shape, rows) in &shapes {
        let ours: Vec<&&Measurement> = rows.iter().filter(|m| method(m) != "wc_l").collect();
        let best = ours.iter().max_by(|a, b| a.median.total_cmp(&b.median));
        let worst = ours.iter().min_by(|a, b| a.median.total_cmp(&b.median));
        if let (Some(best), Some(worst)) = (best, worst)
            && ours.len() > 1
        {
            let lines_s = |m: &Measurement| {
                m.details
                    .as_ref()
                    .and_then(|d| d.get("lines_per_s")?.as_f64())
                    .map(|l| format!(", {} lines/s", human_count(l)))
                    .unwrap_or_default()
            };
            let r = best.median / worst.median;
            out.push(ratio_finding(
                "text",
                format!(
                    "lines of a {shape} file: {} reads {}{} and {} {}{}: {} apart",
                    method(best),
                    human(best.median, "B/s"),
                    lines_s(best),
                    method(worst),
                    human(worst.median, "B/s"),
                    lines_s(worst),
                    fmt_ratio(r)
                ),
                r,
            ));
            if let Some(wc) = rows.iter().find(|m| method(m) == "wc_l") {
                let r = best.median / wc.median;
                out.push(ratio_finding(
                    "text",
                    format!(
                        "wc -l counts the lines of the {shape} file at {} (its process start included); {} is {} that",
                        human(wc.median, "B/s"),
                        method(best),
                        fmt_ratio(r)
                    ),
                    r,
                ));
            }
        }
        // Peak extra memory of every method on this shape, largest first.
        let mut peaks: Vec<(String, f64, f64)> = ours
            .iter()
            .filter_map(|m| {
                let d = m.details.as_ref()?;
                Some((
                    method(m),
                    d.get("peak_extra_bytes")?.as_f64()?,
                    d.get("file_bytes")?.as_f64()?,
                ))
            })
            .collect();
        peaks.sort_by(|a, b| b.1.total_cmp(&a.1));
        if let Some((top, top_bytes, file)) = peaks.first().cloned()
            && peaks.len() > 1
        {
            let list: Vec<String> = peaks
                .iter()
                .map(|(m, b, _)| format!("{m} {}", human_bytes(*b)))
                .collect();
            out.push(Finding {
                area: "text".into(),
                text: format!(
                    "peak extra memory reading the {} {shape} file: {} ({top} holds {:.1}× the file; mmap counts the mapped page cache)",
                    human_bytes(file),
                    list.join(", "),
                    top_bytes / file
                ),
                value: top_bytes,
                unit: "B".into(),
            });
        }
        for m in ours {
            let cold = get(ms, &format!("{}/cold", m.id));
            if let Some(cold) = cold {
                let r = m.median / cold.median;
                out.push(ratio_finding(
                    "text",
                    format!(
                        "{} over the {shape} file: {} from the page cache, {} after dropping it",
                        method(m),
                        human(m.median, "B/s"),
                        human(cold.median, "B/s")
                    ),
                    r,
                ));
            }
        }
    }
    out
}

/// A count per second as `16.8 M`, `912 k`.
fn human_count(v: f64) -> String {
    human(v, "ops/s")
        .trim_end_matches("op/s")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(
        id: &str,
        unit: &str,
        median: f64,
        params: serde_json::Value,
        details: serde_json::Value,
    ) -> Measurement {
        let mut m = Measurement::point(id, unit, median);
        m.params = serde_json::from_value(params).unwrap();
        m.details = Some(details);
        m
    }

    fn cmp(method: &str, lang: &str, ns: f64, wrong: Option<[&str; 2]>) -> Measurement {
        m(
            &format!("text.cmp.{method}/{lang}"),
            "ns/op",
            ns,
            json!({"method": method, "lang": lang}),
            json!({"method": method, "lang": lang, "order_correct": wrong.is_none(), "first_wrong_pair": wrong}),
        )
    }

    #[test]
    fn order_and_speed_findings_name_the_wrong_pair_and_the_ratio() {
        let ms = vec![
            cmp("ascii_ci", "sv", 10.0, Some(["zebra", "åsna"])),
            cmp("lower_alloc", "sv", 50.0, Some(["åsna", "Älg"])),
            cmp("lower_buf", "sv", 30.0, Some(["åsna", "Älg"])),
            cmp("icu.tertiary", "sv", 140.0, None),
            cmp("strcoll", "sv", 200.0, None),
            cmp("icu_keys.primary", "sv", 8.0, None),
        ];
        let f = findings(&ms);
        let find = |s: &str| {
            f.iter()
                .find(|f| f.text.contains(s))
                .unwrap_or_else(|| panic!("no '{s}' in {f:#?}"))
        };
        let order = find("order check for sv");
        assert!(
            order
                .text
                .contains("lower_alloc, lower_buf fail 'åsna' < 'Älg'"),
            "{}",
            order.text
        );
        assert_eq!(order.value, 3.0);
        let ratio = find("ICU sv collation");
        assert_eq!(ratio.value, 14.0);
        assert!(
            ratio.text.contains("'åsna' < 'Älg' wrong"),
            "{}",
            ratio.text
        );
        let fastest = find("fastest comparison with the right order for sv");
        assert!(fastest.text.contains("icu.tertiary"), "{}", fastest.text);
        assert!(
            fastest.text.contains("icu_keys.primary"),
            "{}",
            fastest.text
        );
    }

    #[test]
    fn lines_findings_compare_methods_wc_memory_and_cold() {
        let row = |method: &str, bps: f64, peak: f64, cold: bool| {
            m(
                &format!(
                    "text.lines.{method}/crlf-40B{}",
                    if cold { "/cold" } else { "" }
                ),
                "B/s",
                bps,
                json!({"method": method}),
                json!({"peak_extra_bytes": peak, "file_bytes": 4e6, "lines_per_s": bps / 40.0}),
            )
        };
        let ms = vec![
            row("lines", 2e8, 1e5, false),
            row("memchr_block", 2e9, 7e4, false),
            row("whole_split", 1e9, 1.2e7, false),
            row("wc_l", 1e9, 0.0, false),
            row("memchr_block", 5e8, 7e4, true),
        ];
        let f = findings(&ms);
        let find = |s: &str| {
            f.iter()
                .find(|f| f.text.contains(s))
                .unwrap_or_else(|| panic!("no '{s}' in {f:#?}"))
        };
        assert_eq!(find("lines of a crlf-40B file").value, 10.0);
        assert_eq!(find("wc -l counts").value, 2.0);
        let mem = find("peak extra memory");
        assert!(
            mem.text.contains("whole_split holds 3.0× the file"),
            "{}",
            mem.text
        );
        assert!(mem.text.contains("memchr_block 68.4 KiB"), "{}", mem.text);
        assert_eq!(mem.value, 1.2e7);
        assert_eq!(find("after dropping it").value, 4.0);
    }

    #[test]
    fn no_results_no_findings() {
        assert!(findings(&[]).is_empty());
    }
}
