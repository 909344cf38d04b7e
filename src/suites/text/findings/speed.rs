//! What correct collation costs per language: against ASCII folding, built
//! per call, the fastest method with the right order, and what sort keys
//! save.

use std::collections::BTreeMap;

use super::order::order_checks;
use super::tier_words;
use super::user::is_keyed;
use crate::harness::claims::{CLEAR_GAP, Est, Widths, compare, rank_apart};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{get, ratio_finding};
use crate::units::{BaseUnit, ValueUnit, human};

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
    fn cmp(&self, method: &str) -> Option<Est<'_>> {
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
pub(super) fn speed_findings(ms: &[Measurement]) -> Vec<Finding> {
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
