//! The user's own words in the user's own locale (`--words FILE`,
//! `--locale NAME`): every compare and sort method on the entries of the
//! file, each checked against ICU's collation of that locale.
//!
//! Why a reference order instead of a fixed list: nobody has written down
//! the right order of a user's names, but ICU's collation for the locale is
//! CLDR's order, the one the built-in lists are written from. It is taken
//! at the primary strength (what a caseless sort claims): the share of
//! neighbouring pairs of that order (pairs it tells apart) that a method
//! keeps is its agreement, 100% being right. Only the file's name, size and
//! line count are recorded, never its content; the example pair a method
//! gets wrong is two of its entries, and it stays on this machine unless
//! the user shares the run.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use super::clocale::CLocale;
use super::collate::{
    CHEAP_BUDGET, Memo, PER_CALL_MAX_SORT, cmp_timed, memo_or, sort_timed, with_params,
};
use super::methods::{Compare, Loc, Method, Strength, comparer};
use super::words::Corpus;
use crate::harness::{Bench, PrepareError, Timed, Unit};
use crate::suites::bench::FnBench;
use crate::suites::user_file;

/// The largest words file opcost reads.
pub const MAX_WORDS: u64 = 64 << 20;
/// Lists up to this many entries sort cheaply.
const CHEAP_SORT: usize = 10_000;
/// The largest list whose methods are interleaved (each holds a copy).
const INTERLEAVE_MAX: u64 = 8 << 20;
/// The strength of the reference order: caseless.
const REFERENCE: Strength = Strength::Primary;

/// A `--words` file, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserWords {
    /// The path as given.
    pub path: PathBuf,
    /// Its name in ids (`file-` and the sanitised file name, unique in the run).
    pub label: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its lines.
    pub lines: usize,
    /// Its entries: the lines that are not empty.
    pub entries: usize,
}

/// A `--locale`, checked: the C library has it in UTF-8 and ICU4X can
/// collate for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserLocale {
    /// The name as given (the C library's).
    pub name: String,
    /// The C library's name and ICU's tag.
    pub loc: Loc,
}

/// The entries of a words file and its line count; an error naming the
/// line that is not UTF-8 or holds a NUL.
fn read_entries(flag: &str, path: &Path) -> Result<(Vec<String>, usize), String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("{flag} {shown}: cannot read it ({e})"))?;
    let mut entries = Vec::new();
    let mut lines = 0;
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let n = i + 1;
        let text = std::str::from_utf8(line).map_err(|e| {
            format!(
                "{flag} {shown}: line {n} is not valid UTF-8 (at byte {} of the line); nothing was measured",
                e.valid_up_to() + 1
            )
        })?;
        if text.contains('\0') {
            return Err(format!(
                "{flag} {shown}: line {n} holds a NUL byte; one entry a line, as text"
            ));
        }
        if !text.is_empty() {
            entries.push(text.to_string());
        }
        lines = n;
    }
    // A final newline ends the last line; it does not start another.
    if bytes.last() == Some(&b'\n') {
        lines -= 1;
    }
    Ok((entries, lines))
}

/// Checks every `--words` file (as `--input` files are checked, then
/// every line UTF-8, and at least two entries) and names it.
pub fn check_words(paths: &[PathBuf]) -> Result<Vec<UserWords>, String> {
    let mut out: Vec<UserWords> = Vec::new();
    for path in paths {
        let bytes = user_file::check("--words", path, MAX_WORDS, "64 MiB")?;
        let (entries, lines) = read_entries("--words", path)?;
        if entries.len() < 2 {
            return Err(format!(
                "--words {}: {} entr{} (one a line); a sort needs at least two",
                path.display(),
                entries.len(),
                if entries.len() == 1 { "y" } else { "ies" }
            ));
        }
        let label = user_file::label(path, |l| out.iter().any(|w| w.label == l));
        out.push(UserWords {
            path: path.clone(),
            label,
            bytes,
            lines,
            entries: entries.len(),
        });
    }
    Ok(out)
}

/// The locale the environment collates with (`LC_ALL`, `LC_COLLATE`,
/// `LANG`, as the C library reads them), `C` when none is set.
pub fn environment_locale() -> String {
    ["LC_ALL", "LC_COLLATE", "LANG"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| "C".to_string())
}

/// The ICU tag of a C library locale name: `tr_TR.UTF-8` → `tr-TR`,
/// `sr_RS@latin` → `sr-Latn-RS`, `C` and `POSIX` → `und` (the root
/// collation). Other modifiers (`@euro`) do not change the collation.
fn bcp47_of(name: &str) -> String {
    let base = name.split(['.', '@']).next().unwrap_or(name);
    if base.is_empty() || base == "C" || base == "POSIX" {
        return "und".to_string();
    }
    let script = match name.split_once('@').map(|m| m.1) {
        Some("latin") => Some("Latn"),
        Some("cyrillic") => Some("Cyrl"),
        Some("devanagari") => Some("Deva"),
        _ => None,
    };
    match (script, base.split_once('_')) {
        (Some(sc), Some((lang, region))) => format!("{lang}-{sc}-{region}"),
        (Some(sc), None) => format!("{base}-{sc}"),
        (None, _) => base.replace('_', "-"),
    }
}

/// The locales the C library has, as `locale -a` lists them (or, without
/// that program, the directories of /usr/lib/locale).
fn available_locales() -> Vec<String> {
    if let Ok(out) = std::process::Command::new("locale").arg("-a").output()
        && out.status.success()
    {
        return String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
    }
    let mut v: Vec<String> = vec!["C".into(), "POSIX".into()];
    if let Ok(dir) = std::fs::read_dir("/usr/lib/locale") {
        v.extend(
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "locale-archive"),
        );
    }
    v
}

/// The language part of a locale name: `tr` of `tr_TR.UTF-8`.
fn language_of(name: &str) -> String {
    name.split(['_', '.', '@'])
        .next()
        .unwrap_or(name)
        .to_lowercase()
}

/// Up to five of `names` closest to `wanted`, case and the spelling of
/// UTF-8 aside; the names of the same language, when there are any, alone.
fn closest(wanted: &str, names: &[String]) -> Vec<String> {
    let lang = language_of(wanted);
    let same = || names.iter().filter(|n| language_of(n) == lang);
    let pool: Vec<&str> = if same().next().is_some() {
        same().map(String::as_str).collect()
    } else {
        names.iter().map(String::as_str).collect()
    };
    crate::pattern::closest(wanted, pool.into_iter(), |s| {
        s.to_lowercase().replace("utf-8", "utf8")
    })
}

/// The UTF-8 locales of `name`'s language and territory (`tr_TR.utf8` for
/// `tr_TR`), as the machine lists them.
fn utf8_twins(name: &str, names: &[String]) -> Vec<String> {
    let base = name.split(['.', '@']).next().unwrap_or(name);
    names
        .iter()
        .filter(|n| {
            let lower = n.to_lowercase();
            n.split(['.', '@']).next() == Some(base)
                && (lower.contains(".utf8") || lower.contains(".utf-8"))
        })
        .cloned()
        .collect()
}

/// Checks every `--locale` against the C library (which must have it, in
/// UTF-8) and ICU4X (which must parse its tag and build a collator); the
/// error of an unknown name lists the closest names the machine has.
pub fn check_locales(names: &[String]) -> Result<Vec<UserLocale>, String> {
    let mut out: Vec<UserLocale> = Vec::new();
    for name in names {
        if name.is_empty() || name.contains(['/', ' ']) {
            return Err(format!("--locale {name:?}: not a locale name"));
        }
        let c = CLocale::new(name).map_err(|_| {
            let near = closest(name, &available_locales());
            if near.is_empty() {
                format!(
                    "--locale {name}: the C library has no such locale and none close to it; `locale -a` lists them (Debian: apt-get install locales-all)"
                )
            } else {
                format!(
                    "--locale {name}: the C library has no such locale; the closest it has: {} (`locale -a` lists them all)",
                    near.join(", ")
                )
            }
        })?;
        let set = c.codeset();
        let bcp47 = bcp47_of(name);
        if bcp47 != "und" && set != "UTF-8" {
            let twins = utf8_twins(name, &available_locales());
            let hint = if twins.is_empty() {
                "name one in UTF-8 (`locale -a` lists them)".to_string()
            } else {
                format!("try {}", twins.join(" or "))
            };
            return Err(format!(
                "--locale {name}: its character set is {set}, not UTF-8, and the words are UTF-8; {hint}"
            ));
        }
        let loc = Loc {
            posix: name.clone(),
            bcp47,
        };
        super::methods::collator(&loc, REFERENCE)
            .map_err(|e| format!("--locale {name}: ICU cannot collate for it: {e}"))?;
        if !out.iter().any(|u| u.name == *name) {
            out.push(UserLocale {
                name: name.clone(),
                loc,
            });
        }
    }
    Ok(out)
}

/// Refuses `--words` lists when the selection leaves out the benchmarks
/// that measure them.
pub fn check_selected(benches: &[Box<dyn Bench>], words: &[UserWords]) -> Result<(), String> {
    crate::suites::bench::require_selected(
        benches,
        !words.is_empty(),
        "text.user.",
        "--words lists are measured by the text suite, which the patterns leave out; \
         select it (`opcost run text.user --words FILE`)",
    )
}

/// The checked `--words` files and `--locale` names of a run (the
/// environment's locale when none is named); nothing without `--words`.
pub fn check_args(
    words: &[PathBuf],
    locales: &[String],
) -> Result<(Vec<UserWords>, Vec<UserLocale>), String> {
    if words.is_empty() {
        if !locales.is_empty() {
            return Err(
                "--locale sets the order of --words lists; give one with --words FILE".into(),
            );
        }
        return Ok((Vec::new(), Vec::new()));
    }
    let w = check_words(words)?;
    let l = if locales.is_empty() {
        let env = environment_locale();
        check_locales(std::slice::from_ref(&env))
            .map_err(|e| format!("{e} (the environment's locale; name one with --locale)"))?
    } else {
        check_locales(locales)?
    };
    Ok((w, l))
}

/// The `lang` of a user's set in ids and details: `file-names_txt/tr_TR.UTF-8`.
fn set_tag(w: &UserWords, l: &UserLocale) -> String {
    format!("{}/{}", w.label, l.name)
}

/// One words file under one locale, read once per process and shared by
/// its benchmarks.
struct Set {
    words: UserWords,
    locale: UserLocale,
    data: OnceLock<Result<Arc<SetData>, String>>,
}

/// What the benchmarks of a set need: the entries, and the neighbouring
/// pairs of the reference order that it tells apart.
struct SetData {
    entries: Vec<String>,
    pairs: Vec<(u32, u32)>,
}

impl Set {
    fn data(&self) -> Result<Arc<SetData>, PrepareError> {
        self.data
            .get_or_init(|| {
                let (entries, _) = read_entries("--words", &self.words.path)?;
                let corpus = Corpus::from_strs(&entries).map_err(|e| e.to_string())?;
                let mut reference = comparer(Method::Icu(REFERENCE), &self.locale.loc)?;
                let pairs = reference_pairs(&corpus, reference.as_mut());
                Ok(Arc::new(SetData { entries, pairs }))
            })
            .clone()
            .map_err(PrepareError::Skip)
    }

    /// What every result of `m` on this set carries: the agreement with
    /// the reference order, the file (never its content) and the locale.
    fn facts(&self, m: Method, data: &SetData, corpus: &Corpus) -> Result<Value, PrepareError> {
        let mut c = comparer(m, &self.locale.loc).map_err(PrepareError::Skip)?;
        let a = agreement(c.as_mut(), corpus, &data.pairs);
        let mut v = json!({
            "method": m.name(),
            "lang": set_tag(&self.words, &self.locale),
            "order_correct": a.kept == a.of,
            "order_agreement": if a.of == 0 { 1.0 } else { a.kept as f64 / a.of as f64 },
            "pairs_checked": a.of,
            "pairs_kept": a.kept,
            "first_wrong_pair": a.first_wrong.map(|(x, y)| vec![x, y]),
            "reference": format!("icu.primary/{}", self.locale.loc.bcp47),
            "words_file": {
                "name": self.words.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                "bytes": self.words.bytes,
                "lines": self.words.lines,
                "entries": self.words.entries,
            },
            "corpus": {
                "words": corpus.len(),
                "non_ascii_share": corpus.non_ascii_share(),
                "mean_bytes": corpus.mean_len(),
            },
        });
        if let Some(l) = m.locale(&self.locale.loc) {
            v["locale"] = l.into();
        }
        Ok(v)
    }
}

/// The neighbours of `corpus` in `reference`'s order that it tells apart
/// (entries it finds equal, such as `Anna` and `anna` at the primary
/// strength, may come in either order), as positions in the corpus.
fn reference_pairs(corpus: &Corpus, reference: &mut dyn Compare) -> Vec<(u32, u32)> {
    let words = corpus.words();
    let mut order: Vec<u32> = (0..words.len() as u32).collect();
    order.sort_by(|&a, &b| reference.cmp(words[a as usize], words[b as usize]));
    order
        .windows(2)
        .filter(|p| {
            reference.cmp(words[p[0] as usize], words[p[1] as usize]) == std::cmp::Ordering::Less
        })
        .map(|p| (p[0], p[1]))
        .collect()
}

/// How many of the reference's pairs a method keeps.
struct Agreement {
    kept: usize,
    of: usize,
    first_wrong: Option<(String, String)>,
}

/// The pairs of `pairs` (each `a` before `b` in the reference) that `c`
/// orders the same way (a tie is wrong: the reference tells them apart).
fn agreement(c: &mut dyn Compare, corpus: &Corpus, pairs: &[(u32, u32)]) -> Agreement {
    let words = corpus.words();
    let mut kept = 0;
    let mut first_wrong = None;
    for &(a, b) in pairs {
        let (x, y) = (words[a as usize], words[b as usize]);
        if c.cmp(x, y) == std::cmp::Ordering::Less {
            kept += 1;
        } else {
            first_wrong.get_or_insert_with(|| (x.as_str().to_string(), y.as_str().to_string()));
        }
    }
    Agreement {
        kept,
        of: pairs.len(),
        first_wrong,
    }
}

/// The benchmarks of the user's words: every method compared and sorted
/// on every file under every locale (with the environment's locale when
/// none is given).
pub fn benches(words: &[UserWords], locales: &[UserLocale]) -> Vec<Box<dyn Bench>> {
    let mut v = Vec::new();
    for w in words {
        for l in locales {
            let set = Arc::new(Set {
                words: w.clone(),
                locale: l.clone(),
                data: OnceLock::new(),
            });
            for m in Method::all() {
                v.push(bench(&set, m, false));
                if !(m.per_call() && w.entries > PER_CALL_MAX_SORT) {
                    v.push(bench(&set, m, true));
                }
            }
        }
    }
    v
}

fn bench(set: &Arc<Set>, m: Method, sort: bool) -> Box<dyn Bench> {
    let tag = set_tag(&set.words, &set.locale);
    let kind = if sort { "sort" } else { "cmp" };
    let summary = if sort {
        format!(
            "sort_unstable_by of the {} entries of {} under {}: {}",
            set.words.entries,
            set.words.label,
            set.locale.name,
            m.describe()
        )
    } else {
        format!(
            "one comparison of two entries of {} under {}: {}",
            set.words.label,
            set.locale.name,
            m.describe()
        )
    };
    let mut b = FnBench::new(
        format!("text.user.{kind}.{}/{tag}", m.name()),
        summary,
        Unit::Latency,
        {
            let set = set.clone();
            let memo = Memo::default();
            move |_ctx| prepare(&set, m, sort, &memo)
        },
    );
    // Interleaved alternatives each hold a copy of the list at once.
    if set.words.bytes <= INTERLEAVE_MAX {
        b = b.interleave(format!("text.user.{kind}/{tag}"));
    }
    let mut b = if sort {
        b.param("n", set.words.entries)
    } else {
        b.subtract_loop()
    };
    if !sort || set.words.entries <= CHEAP_SORT {
        b = b.budget_scale(CHEAP_BUDGET);
    }
    with_params(b, m, &tag, &set.locale.loc).boxed()
}

fn prepare(set: &Set, m: Method, sort: bool, memo: &Memo) -> Result<Box<dyn Timed>, PrepareError> {
    let data = set.data()?;
    let corpus = Corpus::from_strs(&data.entries).map_err(|e| PrepareError::Skip(e.to_string()))?;
    let details = memo_or(memo, || set.facts(m, &data, &corpus))?;
    let loc = &set.locale.loc;
    if sort {
        sort_timed(m, loc, corpus, details)
    } else {
        cmp_timed(m, loc, corpus, details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::text::words::Lang;
    use std::time::Duration;

    fn file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn a_words_file_is_counted_and_named_and_bad_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ok = file(dir.path(), "names.txt", "Åsa\r\nbo\n\nÖrjan\n".as_bytes());
        let got = check_words(std::slice::from_ref(&ok)).unwrap();
        assert_eq!(got[0].label, "file-names_txt");
        assert_eq!((got[0].lines, got[0].entries, got[0].bytes), (4, 3, 17));
        let (entries, _) = read_entries("--words", &ok).unwrap();
        assert_eq!(entries, ["Åsa", "bo", "Örjan"]);

        let bad = file(dir.path(), "bad.txt", b"ok\nfine\nbad \xff here\n");
        let e = check_words(&[bad]).unwrap_err();
        assert!(e.contains("bad.txt") && e.contains("line 3"), "{e}");
        assert!(e.contains("not valid UTF-8"), "{e}");
        let e = check_words(&[dir.path().join("missing.txt")]).unwrap_err();
        assert!(e.contains("--words") && e.contains("missing.txt"), "{e}");
        let e = check_words(&[file(dir.path(), "empty.txt", b"")]).unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let e = check_words(&[file(dir.path(), "one.txt", b"one\n\n")]).unwrap_err();
        assert!(e.contains("1 entry"), "{e}");
        let e = check_words(&[file(dir.path(), "nul.txt", b"a\nb\0c\n")]).unwrap_err();
        assert!(e.contains("line 2") && e.contains("NUL"), "{e}");
    }

    #[test]
    fn an_unknown_locale_names_the_closest_ones() {
        let e = check_locales(&["sv_SX.UTF-8".into()]).unwrap_err();
        assert!(e.contains("--locale sv_SX.UTF-8"), "{e}");
        if CLocale::new("sv_SE.UTF-8").is_ok() {
            assert!(e.contains("sv_SE"), "{e}");
        }
        assert!(check_locales(&["a/b".into()]).is_err());
        let names: Vec<String> = ["tr_CY.utf8", "tr_TR.utf8", "ar_AE.utf8", "tt_RU"]
            .map(String::from)
            .to_vec();
        assert_eq!(closest("tr_XX.UTF-8", &names), ["tr_CY.utf8", "tr_TR.utf8"]);
        assert_eq!(closest("tt_XX", &names), ["tt_RU"]);
        assert_eq!(utf8_twins("tr_TR", &names), ["tr_TR.utf8"]);
        let c = check_locales(&["C".into(), "C".into()]).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].loc.bcp47, "und");
        assert_eq!(bcp47_of("tr_TR.UTF-8"), "tr-TR");
        assert_eq!(bcp47_of("sr_RS@latin"), "sr-Latn-RS");
        assert_eq!(bcp47_of("de_DE@euro"), "de-DE");
        assert_eq!(bcp47_of("C.UTF-8"), "und");
    }

    #[test]
    fn a_locale_in_another_character_set_is_refused() {
        if CLocale::new("tr_TR").is_err() {
            eprintln!("tr_TR missing: scripts/install-test-deps.sh installs locales-all");
            return;
        }
        let e = check_locales(&["tr_TR".into()]).unwrap_err();
        assert!(
            e.contains("ISO-8859-9") && e.contains("try tr_TR.utf8"),
            "{e}"
        );
    }

    fn turkish() -> Option<UserLocale> {
        match check_locales(&["tr_TR.UTF-8".into()]) {
            Ok(mut l) => l.pop(),
            Err(e) => {
                eprintln!("{e}: scripts/install-test-deps.sh installs locales-all");
                None
            }
        }
    }

    #[test]
    fn turkish_dotless_i_is_kept_by_collation_and_lost_by_lowercasing() {
        let Some(tr) = turkish() else { return };
        let dir = tempfile::tempdir().unwrap();
        // Turkish: ı (dotless) is its own letter before i; I is the capital
        // of ı, İ of i. Lowercasing makes Irmak irmak, after ilik.
        let p = file(
            dir.path(),
            "tr.txt",
            "ılık\nIrmak\nilk\nİstanbul\nıhlamur\nIğdır\nincir\n".as_bytes(),
        );
        let w = check_words(&[p]).unwrap();
        let bs = benches(&w, std::slice::from_ref(&tr));
        let ctx = crate::harness::test_ctx();
        let details = |id: &str| {
            let b = bs
                .iter()
                .find(|b| b.id() == id)
                .unwrap_or_else(|| panic!("no {id}"));
            let mut t = b.prepare(&ctx).map_err(|e| e.to_string()).unwrap();
            assert!(t.run(3).unwrap() > Duration::ZERO, "{id}");
            t.details().unwrap()
        };
        let tag = "file-tr_txt/tr_TR.UTF-8";
        for m in [
            "icu.primary",
            "icu.tertiary",
            "icu_keys.secondary",
            "icu_per_call",
        ] {
            for kind in ["cmp", "sort"] {
                let d = details(&format!("text.user.{kind}.{m}/{tag}"));
                assert_eq!(d["order_correct"], true, "{m} {d}");
                assert_eq!(d["order_agreement"], 1.0, "{m}");
            }
        }
        let d = details(&format!("text.user.sort.lower_alloc/{tag}"));
        assert_eq!(d["order_correct"], false, "{d}");
        let share = d["order_agreement"].as_f64().unwrap();
        assert!(share < 1.0 && share > 0.0, "{d}");
        assert_eq!(d["first_wrong_pair"].as_array().unwrap().len(), 2);
        assert_eq!(d["reference"], "icu.primary/tr-TR");
        assert_eq!(d["words_file"]["entries"], 7);
        assert_eq!(d["sorted_checked"], true);
        assert_eq!(d["lang"], tag);
    }

    #[test]
    fn ties_of_the_reference_are_not_counted() {
        let corpus = Corpus::from_strs(&["anna", "Anna", "bo", "ANNA"]).unwrap();
        let root = Loc::from(Lang::C);
        let mut icu = comparer(Method::Icu(Strength::Primary), &root).unwrap();
        let pairs = reference_pairs(&corpus, icu.as_mut());
        // anna = Anna = ANNA < bo: one pair told apart.
        assert_eq!(pairs.len(), 1);
        let mut bytes = comparer(Method::Bytes, &root).unwrap();
        let a = agreement(bytes.as_mut(), &corpus, &pairs);
        assert_eq!((a.kept, a.of), (1, 1));
    }
}
