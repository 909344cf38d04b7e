//! The user's own words (`text.user.*`): per set, which methods keep the
//! reference order and how much of it the others keep, and the fastest
//! right comparison and sort, with the faster wrong ones named.

use std::collections::BTreeMap;

use super::order::order_finding;
use super::{detail_str, first_wrong_pair, tier_words};
use crate::harness::claims::{CLEAR_GAP, Est, Verdict, Widths, compare_beyond, rank_apart};
use crate::harness::{Finding, Measurement};
use crate::units::{BaseUnit, ValueUnit, human};

/// The results of the user's words (`text.user.*`), per set
/// (`file-NAME/LOCALE`), each kind (`cmp`, `sort`) in method name order.
fn user_sets(ms: &[Measurement]) -> BTreeMap<String, BTreeMap<String, Vec<&Measurement>>> {
    let mut sets: BTreeMap<String, BTreeMap<String, Vec<&Measurement>>> = BTreeMap::new();
    for m in ms.iter().filter(|m| m.id.starts_with("text.user.")) {
        let (Some(lang), Some(kind)) = (detail_str(m, "lang"), m.id.split('.').nth(2)) else {
            continue;
        };
        sets.entry(lang.to_string())
            .or_default()
            .entry(kind.to_string())
            .or_default()
            .push(m);
    }
    for kinds in sets.values_mut() {
        for rows in kinds.values_mut() {
            rows.sort_by(|a, b| a.id.cmp(&b.id));
        }
    }
    sets
}

/// How one method ordered a set of the user's words.
#[derive(Clone)]
struct UserCheck {
    method: String,
    right: bool,
    /// The share of the reference's pairs it keeps.
    share: f64,
    /// The first pair it gets wrong.
    wrong: Option<(String, String)>,
}

/// The order check of a user's result.
fn user_check(m: &Measurement) -> Option<UserCheck> {
    let d = m.details.as_ref()?;
    let wrong = first_wrong_pair(m);
    Some(UserCheck {
        method: d.get("method")?.as_str()?.to_string(),
        right: d.get("order_correct")?.as_bool()?,
        share: d.get("order_agreement")?.as_f64()?,
        wrong,
    })
}

/// One set of the user's words (`file-NAME/LOCALE`) and its results.
struct UserSet<'a> {
    /// The words' file, as named in the set.
    label: &'a str,
    /// The locale the set was checked under.
    locale: &'a str,
    /// The results by kind (`cmp`, `sort`), each kind in method name order.
    kinds: &'a BTreeMap<String, Vec<&'a Measurement>>,
}

impl UserSet<'_> {
    /// Which methods keep the reference order of the set, and how much of
    /// it the others keep (the order check from whichever kind has the
    /// method).
    fn order(&self) -> Finding {
        let mut checks: BTreeMap<String, UserCheck> = BTreeMap::new();
        let mut about = String::new();
        for m in self.kinds.values().flatten() {
            if let Some(c) = user_check(m) {
                checks.entry(c.method.clone()).or_insert(c);
            }
            if about.is_empty()
                && let Some(d) = &m.details
            {
                about = format!(
                    "{} entries, against {} over {} neighbouring pairs",
                    d["words_file"]["entries"],
                    d["reference"].as_str().unwrap_or("ICU"),
                    d["pairs_checked"]
                );
            }
        }
        let right: Vec<&str> = checks
            .values()
            .filter(|c| c.right)
            .map(|c| c.method.as_str())
            .collect();
        let mut wrong: Vec<&UserCheck> = checks.values().filter(|c| !c.right).collect();
        wrong.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.method.cmp(&b.method)));
        let wrong_text: Vec<String> = wrong
            .iter()
            .map(|c| {
                let example = c
                    .wrong
                    .as_ref()
                    .map(|(a, b)| format!(", e.g. not '{a}' < '{b}'"))
                    .unwrap_or_default();
                format!("{} {:.1}%{example}", c.method, c.share * 100.0)
            })
            .collect();
        order_finding(
            format!(
                "order of your words {} under {} ({about})",
                self.label, self.locale
            ),
            &right,
            "kept in part",
            &wrong_text,
        )
    }

    /// The fastest right `kind` (`sort`, `cmp`: `what` in words) of the
    /// set, as a tier, with the wrong methods clearly faster named, and for
    /// comparisons the fastest with sort keys built beforehand apart.
    fn speed_finding(&self, kind: &str, what: &str, widths: &Widths) -> Option<Finding> {
        let rows = self.kinds.get(kind)?;
        let named: Vec<(UserCheck, Est)> = rows
            .iter()
            .filter_map(|m| Some((user_check(m)?, widths.est(m))))
            .collect();
        // Comparisons of keys built beforehand are named apart, as
        // for the built-in words; a sort builds its keys, so all compete.
        let keyed_rows: Vec<&(UserCheck, Est)> = named
            .iter()
            .filter(|r| kind == "cmp" && r.0.right && is_keyed(&r.0.method))
            .collect();
        let keys = keys_text(&keyed_rows);
        let named: Vec<(UserCheck, Est)> = named
            .into_iter()
            .filter(|r| kind == "sort" || !is_keyed(&r.0.method))
            .collect();
        let ok: Vec<&(UserCheck, Est)> = named.iter().filter(|r| r.0.right).collect();
        let items: Vec<Est> = ok.iter().map(|r| r.1).collect();
        let t = rank_apart(&items, CLEAR_GAP);
        let (Some(top), Some(&lead)) = (t.tiers.first(), t.leaders.first()) else {
            return None;
        };
        let names: Vec<&str> = top.iter().map(|&i| ok[i].0.method.as_str()).collect();
        let faster = faster_but_wrong(&named, &items[lead]);
        Some(Finding {
            area: "text".into(),
            text: format!(
                "fastest right {what} for your words {} under {}: {}, {} per {}{faster}{keys}",
                self.label,
                self.locale,
                tier_words(&names),
                human(items[lead].value, ValueUnit::Ns),
                if kind == "sort" { "sort" } else { "comparison" }
            ),
            value: items[lead].value,
            unit: BaseUnit::NsPerOp.into(),
        })
    }
}

/// Whether a compare method compares sort keys built beforehand.
pub(super) fn is_keyed(method: &str) -> bool {
    method.starts_with("icu_keys") || method == "strxfrm"
}

/// "; with sort keys built beforehand: a, 5 ns per comparison" for the
/// fastest tier of `keyed` (empty when there is none).
fn keys_text(keyed: &[&(UserCheck, Est)]) -> String {
    let items: Vec<Est> = keyed.iter().map(|r| r.1).collect();
    let t = rank_apart(&items, CLEAR_GAP);
    match (t.tiers.first(), t.leaders.first()) {
        (Some(top), Some(&lead)) => {
            let names: Vec<&str> = top.iter().map(|&i| keyed[i].0.method.as_str()).collect();
            format!(
                "; with sort keys built beforehand: {}, {} per comparison",
                tier_words(&names),
                human(items[lead].value, ValueUnit::Ns)
            )
        }
        _ => String::new(),
    }
}

/// "; faster but wrong: x (keeps 97.0%)" for the wrong methods of `named`
/// clearly faster than `fastest`, the fastest right one (empty when none is).
fn faster_but_wrong(named: &[(UserCheck, Est)], fastest: &Est) -> String {
    let faster: Vec<String> = named
        .iter()
        .filter(|r| {
            !r.0.right && matches!(compare_beyond(&r.1, fastest, CLEAR_GAP), Verdict::Better(_))
        })
        .map(|r| format!("{} (keeps {:.1}%)", r.0.method, r.0.share * 100.0))
        .collect();
    if faster.is_empty() {
        String::new()
    } else {
        format!("; faster but wrong: {}", faster.join(", "))
    }
}

/// Per set of the user's words: which methods keep the reference order
/// (and how much of it the others keep), and the fastest right comparison
/// and sort, with the faster wrong ones named when there are any.
pub(super) fn user_findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let widths = Widths::of(ms);
    for (set, kinds) in user_sets(ms) {
        let (label, locale) = set.split_once('/').unwrap_or((set.as_str(), "?"));
        let set = UserSet {
            label,
            locale,
            kinds: &kinds,
        };
        out.push(set.order());
        for (kind, what) in [("sort", "sort of the list"), ("cmp", "comparison")] {
            out.extend(set.speed_finding(kind, what, &widths));
        }
    }
    out
}
