//! The fixed lists of each language: which methods order them right, how
//! the others go wrong, and where the C library and ICU disagree. Counts,
//! not timings: stated as they are.

use std::collections::BTreeMap;

use super::{detail_str, first_wrong_pair};
use crate::harness::{Finding, Measurement};
use crate::units::ValueUnit;

/// The order check of each method of each language, from whichever
/// compare or sort result of it the run has: lang -> method -> wrong pair.
pub(super) fn order_checks(
    ms: &[Measurement],
) -> BTreeMap<String, BTreeMap<String, Option<(String, String)>>> {
    let mut by_lang: BTreeMap<String, BTreeMap<String, Option<(String, String)>>> = BTreeMap::new();
    // The user's words have findings of their own.
    for m in ms
        .iter()
        .filter(|m| m.area == "text" && !m.id.starts_with("text.user."))
    {
        let Some(d) = &m.details else { continue };
        let (Some(lang), Some(method), Some(ok)) = (
            d.get("lang").and_then(|v| v.as_str()),
            d.get("method").and_then(|v| v.as_str()),
            d.get("order_correct").and_then(|v| v.as_bool()),
        ) else {
            continue;
        };
        let pair = first_wrong_pair(m);
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

/// "HEAD: right with a, b; LABEL: x; y", its value the number right.
pub(super) fn order_finding(
    head: String,
    right: &[&str],
    label: &str,
    wrong: &[String],
) -> Finding {
    let or = |list: String, none: &str| {
        if list.is_empty() {
            none.to_string()
        } else {
            list
        }
    };
    Finding {
        area: "text".into(),
        text: format!(
            "{head}: right with {}; {label}: {}",
            or(right.join(", "), "no method"),
            or(wrong.join("; "), "none")
        ),
        value: right.len() as f64,
        unit: ValueUnit::Methods,
    }
}

/// Per language: which methods order its fixed list right, and how the
/// others go wrong; and where the C library and ICU disagree.
pub(super) fn order_findings(ms: &[Measurement]) -> Vec<Finding> {
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
        out.push(order_finding(
            format!("order check for {lang}"),
            &right,
            "wrong",
            &wrong_text,
        ));
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
            unit: ValueUnit::Pairs,
        });
    }
    out
}
