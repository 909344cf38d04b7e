//! What the text results say: which methods order each language right,
//! what the right order costs, the fastest right methods as a tier, what
//! sort keys save, the ways to read lines ranked into tiers, and the memory
//! each way takes.
//!
//! Every comparison of timings is decided by intervals
//! ([`crate::harness::claims`]): methods that cannot be told apart are
//! named together, in a fixed order, never ordered by their point
//! estimates. The order checks and the memory figures are counts, not
//! timings, and are stated as they are.

use std::collections::BTreeMap;

use super::lines::Method;
use crate::harness::claims::{
    CLEAR_GAP, Est, Tiers, Verdict, Widths, compare, compare_beyond, join_names, pooled,
    rank_apart, speedup, tiers_apart_text,
};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{get, ratio_finding};
use crate::units::{BaseUnit, ValueUnit, fmt_ratio, fmt_ratio_number, human, human_bytes};

/// Every text finding of a run.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = order_findings(ms);
    out.extend(speed_findings(ms));
    out.extend(user_findings(ms));
    out.extend(lines_findings(ms));
    out
}

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
    let wrong = d
        .get("first_wrong_pair")
        .and_then(|p| p.as_array())
        .and_then(|p| {
            Some((
                p.first()?.as_str()?.to_string(),
                p.get(1)?.as_str()?.to_string(),
            ))
        });
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
fn is_keyed(method: &str) -> bool {
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
fn user_findings(ms: &[Measurement]) -> Vec<Finding> {
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

/// "HEAD: right with a, b; LABEL: x; y", its value the number right.
fn order_finding(head: String, right: &[&str], label: &str, wrong: &[String]) -> Finding {
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

/// What one language's compare and sort results are read with: the run,
/// the area's typical intervals and the order check of each method.
struct LangSpeeds<'a> {
    /// The run's results.
    ms: &'a [Measurement],
    /// The typical interval of each area ([`Widths`]).
    widths: &'a Widths,
    /// The language (`sv`, `tr`, ...).
    lang: &'a str,
    /// Per method, the pair it gets wrong (none when it orders right).
    methods: &'a BTreeMap<String, Option<(String, String)>>,
}

impl LangSpeeds<'_> {
    /// The compare result of `method` for the language, with its area's
    /// typical interval.
    fn cmp(&self, method: &str) -> Option<Est> {
        get(self.ms, &format!("text.cmp.{method}/{}", self.lang)).map(|m| self.widths.est(m))
    }

    /// What correct collation (ICU tertiary) costs against ASCII case
    /// folding, with the pair lowercasing gets wrong.
    fn icu_vs_ascii(&self) -> Option<Finding> {
        let lang = self.lang;
        let (icu, ascii) = (self.cmp("icu.tertiary")?, self.cmp("ascii_ci")?);
        let lower = match self.methods.get("lower_alloc") {
            Some(Some((a, b))) => {
                format!("; lowercase-then-compare gets '{a}' < '{b}' wrong for {lang}")
            }
            _ => String::new(),
        };
        let what = match compare(&icu, &ascii).worded("faster", "slower") {
            Some(d) => format!(
                "ICU {lang} collation (tertiary) is {d} per comparison than ASCII case folding"
            ),
            None => format!(
                "ICU {lang} collation (tertiary) and ASCII case folding cost the same per comparison, within noise"
            ),
        };
        Some(ratio_finding(
            "text",
            format!(
                "{what} ({} vs {}){lower}",
                human(icu.value, ValueUnit::Ns),
                human(ascii.value, ValueUnit::Ns)
            ),
            icu.value / ascii.value,
        ))
    }

    /// What building the locale or collator for every comparison costs,
    /// and what the ASCII fast path in front of strcoll_l saves: a finding
    /// each, so a word at its edge in one leaves the others alone.
    fn per_call(&self) -> Vec<Finding> {
        let mut parts = Vec::new();
        for (slow, fast, what) in [
            (
                "strcoll_per_call",
                "strcoll",
                "strcoll_l with a locale made per comparison",
            ),
            (
                "icu_per_call",
                "icu.tertiary",
                "ICU with a collator built per comparison",
            ),
            (
                "ascii_strcoll",
                "strcoll",
                "the ASCII fast path in front of strcoll_l",
            ),
        ] {
            let (Some(a), Some(b)) = (self.cmp(slow), self.cmp(fast)) else {
                continue;
            };
            let verdict = compare(&a, &b)
                .worded("faster", "slower")
                .unwrap_or_else(|| "no different, within noise,".to_string());
            parts.push((
                format!(
                    "{what} is {verdict} than {fast} ({} vs {})",
                    human(a.value, ValueUnit::Ns),
                    human(b.value, ValueUnit::Ns)
                ),
                a.value / b.value,
            ));
        }
        parts
            .into_iter()
            .map(|(text, ratio)| {
                ratio_finding(
                    "text",
                    format!("per comparison for {}: {text}", self.lang),
                    ratio,
                )
            })
            .collect()
    }

    /// The fastest methods with the right order, comparing sort keys built
    /// beforehand (`keyed`) or not, as the tier that cannot be told apart
    /// (members in name order): its words and the leader's time.
    fn fastest(&self, keyed: bool) -> Option<(String, f64)> {
        let rows: Vec<(&str, Est)> = self
            .methods
            .iter()
            .filter(|(m, w)| w.is_none() && is_keyed(m) == keyed)
            .filter_map(|(m, _)| Some((m.as_str(), self.cmp(m)?)))
            .collect();
        let items: Vec<Est> = rows.iter().map(|r| r.1).collect();
        let t = rank_apart(&items, CLEAR_GAP);
        let tier = t.tiers.first()?;
        let names: Vec<&str> = tier.iter().map(|&i| rows[i].0).collect();
        Some((tier_words(&names), rows[t.leaders[0]].1.value))
    }

    /// The fastest comparison with the right order, and with sort keys
    /// built beforehand.
    fn fastest_right(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        if let Some((m, ns)) = self.fastest(false) {
            out.push(Finding {
                area: "text".into(),
                text: format!(
                    "fastest comparison with the right order for {}: {m}, {} per comparison",
                    self.lang,
                    human(ns, ValueUnit::Ns)
                ),
                value: ns,
                unit: BaseUnit::NsPerOp.into(),
            });
        }
        // The sort-key tier is a claim of its own.
        if let Some((k, kns)) = self.fastest(true) {
            out.push(Finding {
                area: "text".into(),
                text: format!(
                    "fastest comparison with the right order for {} with sort keys built beforehand: {k}, {} per comparison",
                    self.lang,
                    human(kns, ValueUnit::Ns)
                ),
                value: kns,
                unit: BaseUnit::NsPerOp.into(),
            });
        }
        out
    }

    /// Sorting with ICU sort keys against comparing strings, at the
    /// largest size measured both ways.
    fn sort_keys(&self) -> Option<Finding> {
        let lang = self.lang;
        let sort = |method: &str, n: u64| get(self.ms, &format!("text.sort.{method}/{lang}/n={n}"));
        let (n, keys, direct) = [1_000_000u64, 100_000, 1_000]
            .into_iter()
            .find_map(|n| Some((n, sort("icu_keys.tertiary", n)?, sort("icu.tertiary", n)?)))?;
        let (k, d) = (self.widths.est(keys), self.widths.est(direct));
        let share = keys
            .details
            .as_ref()
            .and_then(|d| d.get("key_build_share")?.as_f64())
            .map(|s| format!(", building the keys is {:.0}% of that", s * 100.0))
            .unwrap_or_default();
        let verdict = compare(&k, &d)
            .worded("faster with keys", "slower with keys")
            .unwrap_or_else(|| "keys make no difference that can be told from noise".to_string());
        Some(ratio_finding(
            "text",
            format!(
                "sorting {n} {lang} words with ICU tertiary: {} comparing strings, {} with sort keys{share} ({verdict})",
                human(d.value, ValueUnit::Ns),
                human(k.value, ValueUnit::Ns)
            ),
            d.value / k.value,
        ))
    }
}

/// Per language: what correct collation costs against ASCII folding, what
/// building per call costs, the fastest method with the right order, and
/// what sort keys save.
fn speed_findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let widths = Widths::of(ms);
    for (lang, methods) in &order_checks(ms) {
        let l = LangSpeeds {
            ms,
            widths: &widths,
            lang,
            methods,
        };
        out.extend(l.icu_vs_ascii());
        out.extend(l.per_call());
        out.extend(l.fastest_right());
        out.extend(l.sort_keys());
    }
    out
}

/// "a" or "a and b, within noise of each other".
fn tier_words(names: &[&str]) -> String {
    if names.len() > 1 {
        format!("{}, with no clear gap between them", join_names(names))
    } else {
        join_names(names)
    }
}

/// The fastest tier of a ranked set and how far behind the others fall:
/// "fastest: a and b, with no clear gap between them; the other 4 are
/// 2.0–5.0× slower". Only the top tier is named. With many methods the
/// tiers behind it chain into one another (neighbours 1.1–1.3× apart), so
/// whether the slowest splits off as a tier of its own, or where the
/// second tier ends, changes from run to run (three quick runs read
/// "slowest: lines (4.4× slower)" and "then lines, read_line, … (2.0×
/// slower)" of one file); the span of the others is a figure, not a word.
fn ends_text(names: &[&str], items: &[Est], t: &Tiers) -> String {
    if t.tiers.len() <= 1 {
        return tiers_apart_text(names, items, "fastest", CLEAR_GAP);
    }
    let top: Vec<&str> = t.tiers[0].iter().map(|&i| names[i]).collect();
    let lead = &items[t.leaders[0]];
    let behind: Vec<f64> = t.tiers[1..]
        .iter()
        .flatten()
        .map(|&i| speedup(lead, &items[i]).ratio)
        .collect();
    let (lo, hi) = behind.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &r| {
        (lo.min(r), hi.max(r))
    });
    let span = if behind.len() == 1 {
        format!("the other is {} slower", fmt_ratio(hi))
    } else {
        format!(
            "the other {} are {}–{} slower",
            behind.len(),
            fmt_ratio_number(lo),
            fmt_ratio(hi)
        )
    };
    format!("fastest: {}; {span}", tier_words(&top))
}

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
        let items = pooled(&own);
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
fn lines_findings(ms: &[Measurement]) -> Vec<Finding> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{find_saying, find_starting};
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
            cmp(
                "strcoll_per_call",
                "sv",
                2000.0,
                Some(["O'Neill", "Olsson"]),
            ),
            cmp("ascii_strcoll", "sv", 100.0, Some(["x", "y"])),
        ];
        let f = findings(&ms);
        let find = |s: &str| find_saying(&f, s);
        let order = find("order check for sv");
        order.assert_says("lower_alloc, lower_buf fail 'åsna' < 'Älg'");
        assert_eq!(order.value, 3.0);
        let ratio = find("ICU sv collation");
        assert_eq!(ratio.value, 14.0);
        ratio.assert_says("'åsna' < 'Älg' wrong");
        let per_call = find("per comparison for sv: strcoll_l");
        per_call.assert_says("strcoll_l with a locale made per comparison is 10.0× (10.0–10.0) slower than strcoll (2.00 µs vs 200 ns)");
        assert_eq!(per_call.value, 10.0);
        let fast_path = find("per comparison for sv: the ASCII fast path");
        fast_path.assert_says(
            "the ASCII fast path in front of strcoll_l is 2.00× (2.00–2.00) faster than strcoll",
        );
        assert_eq!(fast_path.value, 0.5);
        find("fastest comparison with the right order for sv: ").assert_says("icu.tertiary");
        find("fastest comparison with the right order for sv with sort keys built beforehand: ")
            .assert_says("icu_keys.primary");
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
        let find = |s: &str| find_saying(&f, s);
        let l = find("lines of a crlf-40B file");
        assert_eq!(l.value, 10.0);
        l.assert_says("fastest: memchr_block; the other 2 are 2.00–10.0× slower");
        assert!(
            find("wc -l counts")
                .text
                .contains("the fastest here, memchr_block, is 2.00×")
        );
        assert_eq!(find("wc -l counts").value, 2.0);
        let mem = find("peak extra memory");
        mem.assert_says("(the most: whole_split, 3.0× the file");
        mem.assert_says("memchr_block 68.4 KiB");
        assert_eq!(mem.value, 1.2e7);
        assert_eq!(find("after dropping it").value, 4.0);
    }

    #[test]
    fn line_readers_are_ranked_on_their_own_set_width_not_the_areas() {
        // Three quick rounds: the line readers of one file within ±10%,
        // the collation rows ±80%. On the area's width the 2.2× gap between
        // the memchr pair and getline was no clear gap; on the set's, it is.
        let row = |id: &str, unit: &str, v: f64, rel: f64, params: serde_json::Value| {
            let mut x = m(id, unit, v, params, json!({"lines_per_s": v / 40.0}));
            x.summary.ci_low = v * (1.0 - rel);
            x.summary.ci_high = v * (1.0 + rel);
            x
        };
        let mut ms = Vec::new();
        for (method, bps) in [
            ("memchr_block", 1.7e9),
            ("memchr_mmap", 1.8e9),
            ("getline", 0.82e9),
            ("read_until", 0.68e9),
            ("fgets", 0.45e9),
        ] {
            ms.push(row(
                &format!("text.lines.{method}/crlf-40B"),
                "B/s",
                bps,
                0.1,
                json!({"method": method}),
            ));
        }
        for (i, method) in ["a", "b", "c", "d", "e", "f", "g", "h"].iter().enumerate() {
            ms.push(row(
                &format!("text.cmp.{method}/sv"),
                "ns/op",
                100.0 + i as f64,
                0.8,
                json!({"method": method, "lang": "sv"}),
            ));
        }
        let f = findings(&ms);
        find_saying(&f, "lines of a crlf-40B file")
            .assert_says("fastest: memchr_block and memchr_mmap, with no clear gap between them; the other 3 are");
    }

    #[test]
    fn one_wide_tier_names_its_slowest_and_wc_l_is_not_called_within() {
        // Intervals so wide that no gap is clear: one tier from 209 MB/s to
        // 3.03 GB/s. "The slowest" is the slowest way, not the tier's
        // leader, and wc -l at 1.77 GB/s is not "within 1.25×" of 3 GB/s.
        let row = |method: &str, bps: f64| {
            let mut x = m(
                &format!("text.lines.{method}/crlf-40B"),
                "B/s",
                bps,
                json!({"method": method}),
                json!({"file_bytes": 4e6}),
            );
            x.summary.ci_low = bps / 20.0;
            x.summary.ci_high = bps * 20.0;
            x
        };
        let ms = vec![
            row("lines", 2.09e8),
            row("memchr_block", 3.03e9),
            row("whole_split", 1e9),
            row("wc_l", 1.77e9),
        ];
        let f = findings(&ms);
        let l = find_starting(&f, "lines of a crlf-40B file");
        l.assert_says("no clear 1.25× gap between lines, memchr_block and whole_split");
        l.assert_says("(the fastest 3.03 GB/s, the slowest 209 MB/s)");
        let wc = find_starting(&f, "wc -l counts");
        wc.assert_says("and wc -l are not clearly 1.25× apart (1.71× (");
        assert!(!wc.text.contains("within"), "{}", wc.text);
    }

    /// A compare result with a ±3% interval.
    fn cmp_ci(method: &str, lang: &str, ns: f64) -> Measurement {
        let mut x = cmp(method, lang, ns, None);
        x.summary.ci_low = ns * 0.97;
        x.summary.ci_high = ns * 1.03;
        x
    }

    #[test]
    fn methods_within_noise_are_named_as_a_tier_in_name_order() {
        let f = |p: f64, s: f64, t: f64| {
            let ms = vec![
                cmp_ci("icu.tertiary", "sv", t),
                cmp_ci("icu.primary", "sv", p),
                cmp_ci("icu.secondary", "sv", s),
                cmp_ci("icu_keys.primary", "sv", 6.0),
                cmp_ci("icu_keys.secondary", "sv", 6.1),
                cmp_ci("strcoll", "sv", 400.0),
            ];
            let texts: Vec<String> = findings(&ms)
                .into_iter()
                .filter(|f| {
                    f.text
                        .starts_with("fastest comparison with the right order for sv")
                })
                .map(|f| f.text)
                .collect();
            assert_eq!(texts.len(), 2, "without and with sort keys: {texts:?}");
            texts.join(" | ")
        };
        let strip = |s: String| {
            s.chars()
                .filter(|c| !c.is_ascii_digit() && *c != '.')
                .collect::<String>()
        };
        let a = f(129.0, 131.0, 132.0);
        assert!(
            a.contains(
                "for sv: icu.primary, icu.secondary and icu.tertiary, with no clear gap between them, "
            ),
            "{a}"
        );
        assert!(
            a.contains(
                "with sort keys built beforehand: icu_keys.primary and icu_keys.secondary, with no clear gap between them, "
            ),
            "{a}"
        );
        // Other point estimates within the same noise: the same words.
        assert_eq!(strip(f(133.0, 130.0, 128.0)), strip(a));
        // A clearly faster method stands alone.
        let b = f(80.0, 131.0, 132.0);
        assert!(b.contains("for sv: icu.primary, "), "{b}");
    }

    #[test]
    fn line_methods_within_noise_share_a_tier_and_equal_peaks_share_the_most() {
        let row = |method: &str, bps: f64, peak: f64| {
            let mut x = m(
                &format!("text.lines.{method}/lf-80B"),
                "B/s",
                bps,
                json!({"method": method}),
                json!({"peak_extra_bytes": peak, "file_bytes": 4e6}),
            );
            x.summary.ci_low = bps * 0.97;
            x.summary.ci_high = bps * 1.03;
            x
        };
        let ms = vec![
            row("memchr_mmap", 2.7e9, 4e6),
            row("lines", 5e8, 0.0),
            row("memchr_block", 2.6e9, 6.4e4),
            row("whole_split", 1e9, 4.1e6),
        ];
        let f = findings(&ms);
        let l = find_starting(&f, "lines of a lf-80B");
        l.assert_says(
                "fastest: memchr_block and memchr_mmap, with no clear gap between them; the other 2 are 2.70–5.40× slower"
            );
        let mem = find_starting(&f, "peak extra memory");
        mem.assert_says(": lines 0 B, memchr_block 62.5 KiB, memchr_mmap");
        mem.assert_says("(the most: memchr_mmap and whole_split, 1.0× the file");
    }

    fn user(
        kind: &str,
        method: &str,
        ns: f64,
        share: f64,
        wrong: Option<[&str; 2]>,
    ) -> Measurement {
        let lang = "file-names_txt/tr_TR.UTF-8";
        let mut x = m(
            &format!("text.user.{kind}.{method}/{lang}"),
            "ns/op",
            ns,
            json!({"method": method, "lang": lang}),
            json!({"method": method, "lang": lang, "order_correct": share == 1.0,
                   "order_agreement": share, "first_wrong_pair": wrong,
                   "pairs_checked": 40, "reference": "icu.primary/tr-TR",
                   "words_file": {"entries": 41}}),
        );
        x.summary.ci_low = ns * 0.97;
        x.summary.ci_high = ns * 1.03;
        x
    }

    #[test]
    fn user_words_name_the_fastest_right_method_and_the_faster_wrong_ones() {
        let ms = vec![
            user("sort", "icu_keys.primary", 2e5, 1.0, None),
            user("sort", "icu.primary", 2.05e5, 1.0, None),
            user("sort", "lower_alloc", 5e4, 0.9, Some(["ılık", "ilk"])),
            user("sort", "strcoll", 9e5, 1.0, None),
            user("cmp", "icu.primary", 100.0, 1.0, None),
            user("cmp", "lower_alloc", 300.0, 0.9, Some(["ılık", "ilk"])),
        ];
        let f = findings(&ms);
        let find = |s: &str| find_saying(&f, s);
        let order = find("order of your words file-names_txt under tr_TR.UTF-8");
        order.assert_says("41 entries, against icu.primary/tr-TR over 40 neighbouring pairs");
        order.assert_says("right with icu.primary, icu_keys.primary, strcoll; kept in part: lower_alloc 90.0%, e.g. not 'ılık' < 'ilk'");
        assert_eq!(order.value, 3.0);
        let sort = find("fastest right sort of the list for your words file-names_txt");
        sort.assert_says(": icu.primary and icu_keys.primary, with no clear gap between them, ");
        sort.assert_says("faster but wrong: lower_alloc (keeps 90.0%)");
        let cmp = find("fastest right comparison for your words");
        cmp.assert_says(": icu.primary, ");
        assert!(!cmp.text.contains("faster but wrong"), "{}", cmp.text);
        // The built-in findings leave the user's results alone.
        assert!(
            !f.iter().any(|f| f.text.starts_with("order check for")),
            "{f:#?}"
        );
    }

    #[test]
    fn no_results_no_findings() {
        assert!(findings(&[]).is_empty());
    }
}
