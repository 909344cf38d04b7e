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
//!
//! One file per family: the fixed lists' order ([`order`]), what collation
//! costs ([`speed`]), the user's words ([`user`]) and the ways to read
//! lines ([`lines`]); the words they share are here.

use crate::harness::claims::{CLEAR_GAP, Est, Tiers, join_names, speedup, tiers_apart_text};
use crate::harness::{Finding, Measurement};
use crate::units::{fmt_ratio, fmt_ratio_number};

mod lines;
mod order;
mod speed;
mod user;

use lines::lines_findings;
use order::order_findings;
use speed::speed_findings;
use user::user_findings;

/// Every text finding of a run.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = order_findings(ms);
    out.extend(speed_findings(ms));
    out.extend(user_findings(ms));
    out.extend(lines_findings(ms));
    out
}

/// A detail of a measurement as text.
fn detail_str<'a>(m: &'a Measurement, key: &str) -> Option<&'a str> {
    m.details.as_ref()?.get(key)?.as_str()
}

/// The first pair of words an order check found in the wrong order (its
/// `first_wrong_pair` detail), if any.
fn first_wrong_pair(m: &Measurement) -> Option<(String, String)> {
    let p = m.details.as_ref()?.get("first_wrong_pair")?.as_array()?;
    Some((
        p.first()?.as_str()?.to_string(),
        p.get(1)?.as_str()?.to_string(),
    ))
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
