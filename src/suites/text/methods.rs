//! The ways of comparing strings caselessly that E10 weighs, from a byte
//! compare to ICU collation, and the check of each against a locale's
//! fixed list.
//!
//! Each method is its own type so the benchmarks are compiled once per
//! method (no dispatch inside the timed comparison); [`build`] turns a
//! [`Method`] into that type through a [`Visit`], and [`comparer`] into a
//! trait object for checks and tests. Methods that compare sort keys
//! ([`Keyed`]) are a separate kind: their keys are built once per string.

use std::cmp::Ordering;

use icu_casemap::{CaseMapper, CaseMapperBorrowed};
use icu_collator::options::{CollatorOptions, Strength as IcuStrength};
use icu_collator::{CollatorBorrowed, CollatorPreferences};
use icu_locale_core::Locale;
use writeable::Writeable;

use super::clocale::CLocale;
use super::words::{Corpus, Lang, Word};

/// An ICU collation strength.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strength {
    /// Base letters only: a = á = A.
    Primary,
    /// Base letters and accents: a = A < á.
    Secondary,
    /// Letters, accents and case: a < A < á.
    Tertiary,
}

impl Strength {
    /// Every strength, weakest first.
    pub const ALL: [Strength; 3] = [Strength::Primary, Strength::Secondary, Strength::Tertiary];

    fn name(self) -> &'static str {
        match self {
            Strength::Primary => "primary",
            Strength::Secondary => "secondary",
            Strength::Tertiary => "tertiary",
        }
    }

    fn icu(self) -> IcuStrength {
        match self {
            Strength::Primary => IcuStrength::Primary,
            Strength::Secondary => IcuStrength::Secondary,
            Strength::Tertiary => IcuStrength::Tertiary,
        }
    }
}

/// One way of comparing two strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `Ord` on the bytes: case-sensitive, code-point order.
    Bytes,
    /// ASCII letters lowered byte by byte (`to_ascii_lowercase`), other bytes as they are.
    AsciiCi,
    /// ASCII lowered while both strings are ASCII; from the first non-ASCII
    /// byte on, the rest of both is compared after full Unicode case folding.
    AsciiFast,
    /// `to_lowercase()` of both (two allocations per comparison), then bytes.
    LowerAlloc,
    /// Lowercase into two reused buffers, then bytes.
    LowerBuf,
    /// Unicode simple case folding per character (ICU4X `icu_casemap`), no allocation.
    SimpleFold,
    /// C `strcasecmp_l` under the locale.
    StrCaseCmp,
    /// C `strcoll_l` under the locale.
    StrColl,
    /// C `strxfrm_l` sort keys, compared with `memcmp`.
    StrXfrm,
    /// ASCII lowered while both strings are ASCII; at the first non-ASCII
    /// byte, `strcoll_l` of the whole strings under the locale (built once).
    AsciiStrColl,
    /// `strcoll_l` with a locale object made (`newlocale`) and freed for
    /// every comparison.
    StrCollPerCall,
    /// ICU4X tertiary collation with the collator built for every comparison.
    IcuPerCall,
    /// ICU4X collation of the locale at a strength.
    Icu(Strength),
    /// ICU4X sort keys at a strength, compared with `memcmp`.
    IcuKeys(Strength),
}

impl Method {
    /// Every method, in report order.
    pub fn all() -> Vec<Method> {
        let mut v = vec![
            Method::Bytes,
            Method::AsciiCi,
            Method::AsciiFast,
            Method::LowerAlloc,
            Method::LowerBuf,
            Method::SimpleFold,
            Method::StrCaseCmp,
            Method::StrColl,
            Method::StrXfrm,
            Method::AsciiStrColl,
            Method::StrCollPerCall,
            Method::IcuPerCall,
        ];
        v.extend(Strength::ALL.map(Method::Icu));
        v.extend(Strength::ALL.map(Method::IcuKeys));
        v
    }

    /// The name used in ids: `ascii_ci`, `strcoll`, `icu.tertiary`, `icu_keys.primary`.
    pub fn name(self) -> String {
        match self {
            Method::Bytes => "bytes".into(),
            Method::AsciiCi => "ascii_ci".into(),
            Method::AsciiFast => "ascii_fast".into(),
            Method::LowerAlloc => "lower_alloc".into(),
            Method::LowerBuf => "lower_buf".into(),
            Method::SimpleFold => "simple_fold".into(),
            Method::StrCaseCmp => "strcasecmp".into(),
            Method::StrColl => "strcoll".into(),
            Method::StrXfrm => "strxfrm".into(),
            Method::AsciiStrColl => "ascii_strcoll".into(),
            Method::StrCollPerCall => "strcoll_per_call".into(),
            Method::IcuPerCall => "icu_per_call".into(),
            Method::Icu(s) => format!("icu.{}", s.name()),
            Method::IcuKeys(s) => format!("icu_keys.{}", s.name()),
        }
    }

    /// One line on what the method does, for summaries.
    pub fn describe(self) -> String {
        match self {
            Method::Bytes => "byte compare (Ord on &[u8])".into(),
            Method::AsciiCi => "ASCII case-insensitive compare".into(),
            Method::AsciiFast => {
                "ASCII fast path, full Unicode case folding from the first non-ASCII byte".into()
            }
            Method::LowerAlloc => "to_lowercase() of both, then compare (allocating)".into(),
            Method::LowerBuf => "lowercase into reused buffers, then compare".into(),
            Method::SimpleFold => "Unicode simple case folding per character (icu_casemap)".into(),
            Method::StrCaseCmp => "C strcasecmp_l".into(),
            Method::StrColl => "C strcoll_l".into(),
            Method::StrXfrm => "C strxfrm_l sort keys compared with memcmp".into(),
            Method::AsciiStrColl => {
                "ASCII fast path, C strcoll_l of both from the first non-ASCII byte".into()
            }
            Method::StrCollPerCall => "C newlocale, strcoll_l, freelocale per comparison".into(),
            Method::IcuPerCall => "ICU4X tertiary collator built per comparison".into(),
            Method::Icu(s) => format!("ICU4X collation, {} strength", s.name()),
            Method::IcuKeys(s) => format!("ICU4X sort keys, {} strength, memcmp", s.name()),
        }
    }

    /// True for methods that compare precomputed sort keys.
    pub fn keyed(self) -> bool {
        matches!(self, Method::StrXfrm | Method::IcuKeys(_))
    }

    /// True for methods that build their locale or collator anew for
    /// every comparison (too slow for the large sorts).
    pub fn per_call(self) -> bool {
        matches!(self, Method::StrCollPerCall | Method::IcuPerCall)
    }

    /// The locale the method follows under `loc`, when it follows one.
    pub fn locale(self, loc: &Loc) -> Option<String> {
        match self {
            Method::StrCaseCmp
            | Method::StrColl
            | Method::StrXfrm
            | Method::AsciiStrColl
            | Method::StrCollPerCall => Some(loc.posix.clone()),
            Method::Icu(_) | Method::IcuKeys(_) | Method::IcuPerCall => Some(loc.bcp47.clone()),
            _ => None,
        }
    }
}

/// The locale a method follows: the C library's name and ICU's tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// The name `newlocale` takes (`sv_SE.UTF-8`, `C`).
    pub posix: String,
    /// The BCP 47 tag ICU4X collates with (`sv`, `tr-TR`, `und`).
    pub bcp47: String,
}

impl From<Lang> for Loc {
    fn from(lang: Lang) -> Loc {
        Loc {
            posix: lang.posix_locale().into(),
            bcp47: lang.bcp47().into(),
        }
    }
}

/// A direct comparison of two words.
pub trait Compare {
    /// The order of `a` and `b`.
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering;
}

/// A sort key maker: keys compare with `memcmp` in the order of the words.
pub trait Keyed {
    /// Writes the key of `w` into `out` (replacing what was there).
    fn key(&mut self, w: Word<'_>, out: &mut Vec<u8>);
}

/// Receives the type a [`Method`] is made of.
pub trait Visit {
    /// What the visit produces.
    type Out;
    /// A method that compares directly.
    fn direct<C: Compare + 'static>(self, c: C) -> Self::Out;
    /// A method that compares sort keys.
    fn keyed<K: Keyed + 'static>(self, k: K) -> Self::Out;
}

/// Builds `method` for `loc` and hands it to `v`; an error (the reason to
/// skip) when the C library lacks the locale or ICU4X has no data for it.
pub fn build<V: Visit>(method: Method, loc: &Loc, v: V) -> Result<V::Out, String> {
    let posix = loc.posix.as_str();
    Ok(match method {
        Method::Bytes => v.direct(Bytes),
        Method::AsciiCi => v.direct(AsciiCi),
        Method::AsciiFast => v.direct(AsciiFast::default()),
        Method::LowerAlloc => v.direct(LowerAlloc),
        Method::LowerBuf => v.direct(LowerBuf::default()),
        Method::SimpleFold => v.direct(SimpleFold(CaseMapper::new())),
        Method::StrCaseCmp => v.direct(StrCaseCmp(CLocale::new(posix)?)),
        Method::StrColl => v.direct(StrColl(CLocale::new(posix)?)),
        Method::StrXfrm => v.keyed(StrXfrm(CLocale::new(posix)?)),
        Method::AsciiStrColl => v.direct(AsciiStrColl(CLocale::new(posix)?)),
        Method::StrCollPerCall => {
            // Checked once here, so that a failure cannot hide in the loop.
            CLocale::new(posix)?;
            v.direct(StrCollPerCall(posix.to_string()))
        }
        Method::IcuPerCall => {
            let (prefs, opts) = collator_args(loc, Strength::Tertiary)?;
            CollatorBorrowed::try_new(prefs, opts).map_err(|e| no_data(loc, e))?;
            v.direct(IcuPerCall(prefs, opts))
        }
        Method::Icu(s) => v.direct(Icu(collator(loc, s)?)),
        Method::IcuKeys(s) => v.keyed(IcuKeys(collator(loc, s)?)),
    })
}

/// `method` for `loc` as a trait object (keys built per comparison): for
/// order checks and tests, not for timing.
pub fn comparer(method: Method, loc: &Loc) -> Result<Box<dyn Compare>, String> {
    struct Dyn;
    impl Visit for Dyn {
        type Out = Box<dyn Compare>;
        fn direct<C: Compare + 'static>(self, c: C) -> Self::Out {
            Box::new(c)
        }
        fn keyed<K: Keyed + 'static>(self, k: K) -> Self::Out {
            Box::new(ByKeys(k, Vec::new(), Vec::new()))
        }
    }
    build(method, loc, Dyn)
}

/// What ICU4X builds a collator for `loc` at `strength` from.
fn collator_args(
    loc: &Loc,
    strength: Strength,
) -> Result<(CollatorPreferences, CollatorOptions), String> {
    let tag = Locale::try_from_str(&loc.bcp47).map_err(|e| format!("locale {}: {e}", loc.bcp47))?;
    let mut opts = CollatorOptions::default();
    opts.strength = Some(strength.icu());
    Ok((CollatorPreferences::from(&tag), opts))
}

fn no_data(loc: &Loc, e: impl std::fmt::Display) -> String {
    format!("ICU4X has no collation data for {}: {e}", loc.bcp47)
}

/// An ICU4X collator for `loc` from the compiled data.
pub fn collator(loc: &Loc, strength: Strength) -> Result<CollatorBorrowed<'static>, String> {
    let (prefs, opts) = collator_args(loc, strength)?;
    CollatorBorrowed::try_new(prefs, opts).map_err(|e| no_data(loc, e))
}

struct Bytes;
impl Compare for Bytes {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        a.as_str().as_bytes().cmp(b.as_str().as_bytes())
    }
}

struct AsciiCi;
impl Compare for AsciiCi {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        ascii_ci(a.as_str().as_bytes(), b.as_str().as_bytes())
    }
}

/// ASCII-lowered byte order: `A` = `a`, other bytes compared as they are.
#[inline]
fn ascii_ci(a: &[u8], b: &[u8]) -> Ordering {
    a.iter()
        .map(u8::to_ascii_lowercase)
        .cmp(b.iter().map(u8::to_ascii_lowercase))
}

struct AsciiFast {
    cm: CaseMapperBorrowed<'static>,
    a: String,
    b: String,
}

impl Default for AsciiFast {
    fn default() -> Self {
        AsciiFast {
            cm: CaseMapper::new(),
            a: String::new(),
            b: String::new(),
        }
    }
}

impl Compare for AsciiFast {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        let (sa, sb) = (a.as_str(), b.as_str());
        let (x, y) = (sa.as_bytes(), sb.as_bytes());
        for (i, (&p, &q)) in x.iter().zip(y).enumerate() {
            if p >= 0x80 || q >= 0x80 {
                // Everything before i is ASCII in both, so i is a character
                // boundary in both: fold the rest fully (into reused
                // buffers) and compare that.
                self.a.clear();
                self.b.clear();
                // Writing into a String cannot fail.
                let _ = self.cm.fold(&sa[i..]).write_to(&mut self.a);
                let _ = self.cm.fold(&sb[i..]).write_to(&mut self.b);
                return self.a.as_bytes().cmp(self.b.as_bytes());
            }
            let (lp, lq) = (p.to_ascii_lowercase(), q.to_ascii_lowercase());
            if lp != lq {
                return lp.cmp(&lq);
            }
        }
        // One is a prefix of the other, case aside; no character folds to
        // nothing, so the longer one sorts last.
        x.len().cmp(&y.len())
    }
}

struct LowerAlloc;
impl Compare for LowerAlloc {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        a.as_str().to_lowercase().cmp(&b.as_str().to_lowercase())
    }
}

#[derive(Default)]
struct LowerBuf(String, String);
impl Compare for LowerBuf {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        self.0.clear();
        self.1.clear();
        lower_into(a.as_str(), &mut self.0);
        lower_into(b.as_str(), &mut self.1);
        self.0.cmp(&self.1)
    }
}

/// Appends the lowercase of `s` to `out`, ASCII a byte at a time.
#[inline]
fn lower_into(s: &str, out: &mut String) {
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
}

struct SimpleFold(CaseMapperBorrowed<'static>);
impl Compare for SimpleFold {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        let cm = self.0;
        a.as_str()
            .chars()
            .map(|c| cm.simple_fold(c))
            .cmp(b.as_str().chars().map(|c| cm.simple_fold(c)))
    }
}

struct StrCaseCmp(CLocale);
impl Compare for StrCaseCmp {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        self.0.strcasecmp(a, b)
    }
}

struct StrColl(CLocale);
impl Compare for StrColl {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        self.0.strcoll(a, b)
    }
}

struct StrXfrm(CLocale);
impl Keyed for StrXfrm {
    fn key(&mut self, w: Word<'_>, out: &mut Vec<u8>) {
        self.0.strxfrm(w, out);
    }
}

struct AsciiStrColl(CLocale);
impl Compare for AsciiStrColl {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        let (x, y) = (a.as_str().as_bytes(), b.as_str().as_bytes());
        for (&p, &q) in x.iter().zip(y) {
            if p >= 0x80 || q >= 0x80 {
                return self.0.strcoll(a, b);
            }
            let (lp, lq) = (p.to_ascii_lowercase(), q.to_ascii_lowercase());
            if lp != lq {
                return lp.cmp(&lq);
            }
        }
        x.len().cmp(&y.len())
    }
}

struct StrCollPerCall(String);
impl Compare for StrCollPerCall {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        match CLocale::new(&self.0) {
            Ok(loc) => loc.strcoll(a, b),
            // The locale was made once in `build`; should the C library
            // refuse it later, bytes keep the comparison a total order.
            Err(_) => a.as_str().cmp(b.as_str()),
        }
    }
}

struct IcuPerCall(CollatorPreferences, CollatorOptions);
impl Compare for IcuPerCall {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        match CollatorBorrowed::try_new(self.0, self.1) {
            Ok(c) => c.compare(a.as_str(), b.as_str()),
            // Built once in `build`; as above.
            Err(_) => a.as_str().cmp(b.as_str()),
        }
    }
}

struct Icu(CollatorBorrowed<'static>);
impl Compare for Icu {
    #[inline]
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        self.0.compare(a.as_str(), b.as_str())
    }
}

struct IcuKeys(CollatorBorrowed<'static>);
impl Keyed for IcuKeys {
    fn key(&mut self, w: Word<'_>, out: &mut Vec<u8>) {
        out.clear();
        let Ok(()) = self.0.write_sort_key_to(w.as_str(), out);
    }
}

/// A keyed method used as a direct comparison: keys built each time.
struct ByKeys<K>(K, Vec<u8>, Vec<u8>);
impl<K: Keyed> Compare for ByKeys<K> {
    fn cmp(&mut self, a: Word<'_>, b: Word<'_>) -> Ordering {
        self.0.key(a, &mut self.1);
        self.0.key(b, &mut self.2);
        self.1.cmp(&self.2)
    }
}

/// Whether a method put a locale's fixed list in its correct order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderCheck {
    /// Every neighbour pair of the list compared as less.
    pub correct: bool,
    /// The first pair `(a, b)` that should sort `a` before `b` but did not.
    pub first_wrong: Option<(String, String)>,
}

/// Checks `c` against `lang`'s fixed list: each word must compare less
/// than the next (a tie is wrong too: the words differ in base letters).
pub fn check_order(c: &mut dyn Compare, lang: Lang) -> anyhow::Result<OrderCheck> {
    let corpus = Corpus::from_strs(lang.check_list())?;
    let words = corpus.words();
    let first_wrong = words
        .windows(2)
        .find(|p| c.cmp(p[0], p[1]) != Ordering::Less)
        .map(|p| (p[0].as_str().to_string(), p[1].as_str().to_string()));
    Ok(OrderCheck {
        correct: first_wrong.is_none(),
        first_wrong,
    })
}

/// Neighbours in `c`'s order of `words` that `other` puts the other way
/// round: how many of them, out of how many, and the first.
pub fn disagreement(
    words: &[Word<'_>],
    c: &mut dyn Compare,
    other: &mut dyn Compare,
) -> (usize, usize, Option<(String, String)>) {
    let mut sorted = words.to_vec();
    sorted.sort_unstable_by(|a, b| c.cmp(*a, *b));
    let mut count = 0;
    let mut first = None;
    for p in sorted.windows(2) {
        if c.cmp(p[0], p[1]) == Ordering::Less && other.cmp(p[0], p[1]) == Ordering::Greater {
            count += 1;
            first.get_or_insert_with(|| (p[0].as_str().to_string(), p[1].as_str().to_string()));
        }
    }
    (count, sorted.len().saturating_sub(1), first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(m: Method, lang: Lang) -> OrderCheck {
        let mut c = comparer(m, &lang.into()).unwrap();
        check_order(c.as_mut(), lang).unwrap()
    }

    fn have_locale(lang: Lang) -> bool {
        CLocale::new(lang.posix_locale()).is_ok()
    }

    #[test]
    fn naive_lowercase_gets_swedish_wrong_and_icu_gets_it_right() {
        for m in [Method::LowerAlloc, Method::LowerBuf, Method::SimpleFold] {
            let r = check(m, Lang::Sv);
            assert!(!r.correct, "{m:?}");
            // ä is U+00E4 and å U+00E5: lowercase puts Älg before åsna.
            assert_eq!(
                r.first_wrong,
                Some(("åsna".to_string(), "Älg".to_string())),
                "{m:?}"
            );
        }
        for s in Strength::ALL {
            assert!(check(Method::Icu(s), Lang::Sv).correct);
            assert!(check(Method::IcuKeys(s), Lang::Sv).correct);
        }
        assert!(
            !check(Method::Bytes, Lang::C).correct,
            "byte order is not caseless"
        );
        assert!(check(Method::AsciiCi, Lang::C).correct);
        assert!(check(Method::AsciiFast, Lang::C).correct);
    }

    #[test]
    fn icu_orders_every_list_right_at_every_strength() {
        for lang in Lang::ALL {
            for s in Strength::ALL {
                assert!(check(Method::Icu(s), lang).correct, "{lang:?} {s:?}");
                assert!(check(Method::IcuKeys(s), lang).correct, "{lang:?} {s:?}");
            }
            assert!(check(Method::IcuPerCall, lang).correct, "{lang:?}");
        }
    }

    #[test]
    fn glibc_swedish_gets_the_letters_right_and_ignores_punctuation() {
        if !have_locale(Lang::Sv) {
            eprintln!("sv_SE.UTF-8 missing: scripts/install-test-deps.sh installs it");
            return;
        }
        // ISO 14651 ignores the apostrophe at the first level: ONeill > Olsson.
        let punct = Some(("O'Neill".to_string(), "Olsson".to_string()));
        for m in [Method::StrColl, Method::StrXfrm, Method::StrCollPerCall] {
            assert_eq!(check(m, Lang::Sv).first_wrong, punct, "{m:?}");
        }
        for (lang, pair) in [
            (Lang::De, ("O'Hara", "Ofen")),
            (Lang::En, ("D'Arcy", "Dante")),
        ] {
            if have_locale(lang) {
                let want = Some((pair.0.to_string(), pair.1.to_string()));
                assert_eq!(check(Method::StrColl, lang).first_wrong, want, "{lang:?}");
            }
        }
        // The ASCII fast path compares the apostrophe as a byte, and the
        // Swedish letters through strcoll: right on the list.
        assert!(check(Method::AsciiStrColl, Lang::Sv).correct);
        assert!(!check(Method::StrCaseCmp, Lang::Sv).correct);
    }

    #[test]
    fn the_c_locale_collates_bytes() {
        assert!(!check(Method::StrColl, Lang::C).correct);
        assert!(check(Method::StrCaseCmp, Lang::C).correct);
    }

    #[test]
    fn every_method_sorts_a_corpus_into_an_order_it_agrees_with() {
        for lang in Lang::ALL {
            let corpus = Corpus::generate(lang, 400);
            for m in Method::all() {
                let Ok(mut c) = comparer(m, &lang.into()) else {
                    continue; // a locale this machine lacks
                };
                let mut w = corpus.words();
                w.sort_unstable_by(|a, b| c.cmp(*a, *b));
                for p in w.windows(2) {
                    assert_ne!(
                        c.cmp(p[0], p[1]),
                        Ordering::Greater,
                        "{} {lang:?}: {:?} {:?}",
                        m.name(),
                        p[0],
                        p[1]
                    );
                }
            }
        }
    }

    #[test]
    fn ascii_fast_agrees_with_full_folding() {
        let cm = CaseMapper::new();
        let corpus =
            Corpus::from_strs(&["Straße", "STRASSE", "strasse", "Öl", "öl", "oz", "Ol"]).unwrap();
        let w = corpus.words();
        let mut c = AsciiFast::default();
        for a in &w {
            for b in &w {
                let want = cm
                    .fold_string(a.as_str())
                    .as_bytes()
                    .cmp(cm.fold_string(b.as_str()).as_bytes());
                assert_eq!(c.cmp(*a, *b), want, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn names_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for m in Method::all() {
            assert!(seen.insert(m.name()));
            assert!(!m.describe().is_empty());
        }
    }
}
