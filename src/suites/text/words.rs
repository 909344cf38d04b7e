//! The strings the compare and sort benchmarks work on: words and names
//! generated deterministically per language, each with its share of
//! non-ASCII letters, and the fixed lists whose correct order is written
//! down from the CLDR collation rules of each locale.
//!
//! Every word is stored with a NUL after it, so the C library's functions
//! can read it in place: a [`Word`] can only be made by a [`Corpus`], which
//! is what keeps that promise.

use std::ffi::c_char;

/// The languages (and so locales) the compare and sort benchmarks cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lang {
    /// Swedish: å ä ö, which sort after z.
    Sv,
    /// German: ä ö ü sort with a o u, ß as ss.
    De,
    /// English with French loan words: é è ï ç sort with their base letters.
    En,
    /// Pure ASCII under the C locale (ICU: the root collation).
    C,
}

impl Lang {
    /// Every language, in report order.
    pub const ALL: [Lang; 4] = [Lang::Sv, Lang::De, Lang::En, Lang::C];

    /// The short name used in ids: `sv`, `de`, `en`, `c`.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::Sv => "sv",
            Lang::De => "de",
            Lang::En => "en",
            Lang::C => "c",
        }
    }

    /// The glibc locale name.
    pub fn posix_locale(self) -> &'static str {
        match self {
            Lang::Sv => "sv_SE.UTF-8",
            Lang::De => "de_DE.UTF-8",
            Lang::En => "en_US.UTF-8",
            Lang::C => "C",
        }
    }

    /// The BCP 47 locale ICU4X collates with (`und` is the root collation).
    pub fn bcp47(self) -> &'static str {
        match self {
            Lang::Sv => "sv",
            Lang::De => "de",
            Lang::En => "en",
            Lang::C => "und",
        }
    }

    /// Syllables words are made of; their non-ASCII share sets the share of
    /// words with a non-ASCII letter (a third to a half, as in names and
    /// ordinary text of the language; none for `C`).
    fn syllables(self) -> &'static [&'static str] {
        match self {
            Lang::Sv => &[
                "an", "ber", "by", "da", "dal", "ek", "en", "er", "fors", "gren", "gård", "hag",
                "holm", "is", "ja", "kvist", "lin", "lund", "ma", "mark", "ni", "ny", "or", "ros",
                "sjö", "ström", "sä", "tor", "ull", "vik", "ås", "äng", "ö", "ör", "stå", "bär",
                "kö", "lä", "må", "hö", "sson", "el", "berg", "ing",
            ],
            Lang::De => &[
                "ach", "bach", "berg", "brü", "dorf", "ei", "feld", "gärt", "groß", "hau", "heim",
                "hö", "kö", "lein", "mann", "mü", "ner", "nig", "öl", "rich", "schä", "schm",
                "stadt", "stra", "ße", "ter", "über", "wald", "wei", "zu", "an", "er", "el", "ing",
                "sen", "fuß", "äu", "ost",
            ],
            Lang::En => &[
                "ab", "bel", "ca", "fé", "dé", "cré", "ri", "son", "ton", "ville", "man", "ley",
                "pré", "é", "ère", "ïs", "ça", "mo", "ne", "ry", "st", "ar", "ing", "wood", "ford",
                "ham", "lé", "ro", "che", "an", "el", "er", "in", "or", "ll", "ta",
            ],
            Lang::C => &[
                "ab", "bel", "ca", "fe", "de", "cre", "ri", "son", "ton", "ville", "man", "ley",
                "pre", "e", "ere", "is", "sa", "mo", "ne", "ry", "st", "ar", "ing", "wood", "ford",
                "ham", "le", "ro", "che", "an", "el", "er", "in", "or", "ll", "ta",
            ],
        }
    }

    /// The fixed list in its correct caseless order for this locale, as the
    /// CLDR rules give it. Neighbours differ at the primary level (base
    /// letters, digits or punctuation), so the order holds at every strength
    /// and for any caseless compare that is right for the language. Digits
    /// sort before letters; punctuation counts at the first level (CLDR's
    /// default, "non-ignorable"), before digits and letters: `O'Neill`
    /// sorts before `Olsson`. The C library's tables (ISO 14651) ignore
    /// punctuation at the first level and put `Olsson` first.
    pub fn check_list(self) -> &'static [&'static str] {
        match self {
            // Swedish: A … Z < Å < Ä < Ö, and case does not count.
            Lang::Sv => &[
                "10 april", "2 maj", "apa", "Bil", "O'Neill", "Olsson", "zebra", "åsna", "Älg",
                "öga",
            ],
            // German (DIN 5007-1, CLDR de): ä ö ü as a o u, ß as ss.
            Lang::De => &[
                "1. Mai", "2. Juni", "Abend", "ärgern", "Bach", "O'Hara", "Ofen", "öffnen",
                "Straße", "Strauch", "zahlen",
            ],
            // English: accents are secondary, so café < Cafeteria and crème < Cremona.
            Lang::En => &[
                "1st",
                "2nd",
                "café",
                "Cafeteria",
                "cliché",
                "Cliffs",
                "crème",
                "Cremona",
                "D'Arcy",
                "Dante",
                "naïve",
                "Naples",
                "résumé",
                "Rome",
            ],
            // ASCII: digits, then letters in alphabetical order whatever
            // their case; a hyphen and an apostrophe before any letter.
            Lang::C => &[
                "1984", "2001", "apple", "Banana", "cherry", "co-op", "coop", "Date", "eel", "Fig",
                "O'Brien", "Obama", "zebra",
            ],
        }
    }
}

/// A string of a [`Corpus`]: UTF-8 text followed in memory by a NUL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word<'a>(&'a str);

impl<'a> Word<'a> {
    /// The text, without the NUL.
    pub fn as_str(self) -> &'a str {
        self.0
    }

    /// The text as a C string (the NUL that follows it ends it).
    pub fn as_c_ptr(self) -> *const c_char {
        self.0.as_ptr().cast()
    }
}

/// Strings each stored in its own allocation with a trailing NUL, as a
/// program holding a `Vec<String>` would have them.
#[derive(Debug)]
pub struct Corpus {
    words: Vec<Box<str>>,
}

impl Corpus {
    /// A corpus of the given strings; an error if one holds a NUL.
    pub fn from_strs<S: AsRef<str>>(items: &[S]) -> anyhow::Result<Corpus> {
        let mut words = Vec::with_capacity(items.len());
        for s in items {
            let s = s.as_ref();
            anyhow::ensure!(!s.contains('\0'), "a word holds a NUL: {s:?}");
            let mut owned = String::with_capacity(s.len() + 1);
            owned.push_str(s);
            owned.push('\0');
            words.push(owned.into_boxed_str());
        }
        Ok(Corpus { words })
    }

    /// `n` words of `lang`, the same for the same arguments on every machine.
    pub fn generate(lang: Lang, n: usize) -> Corpus {
        let syl = lang.syllables();
        let mut rng = fastrand::Rng::with_seed(0x7e47 ^ n as u64 ^ (lang as u64) << 32);
        let mut words = Vec::with_capacity(n);
        let mut w = String::new();
        for _ in 0..n {
            w.clear();
            for _ in 0..rng.usize(2..=4) {
                w.push_str(syl[rng.usize(..syl.len())]);
            }
            // Names are capitalised, a few words shouted, the rest lowercase.
            let cased = match rng.u8(..100) {
                0..40 => capitalise(&w),
                40..45 => w.to_uppercase(),
                _ => w.clone(),
            };
            let mut owned = String::with_capacity(cased.len() + 1);
            owned.push_str(&cased);
            owned.push('\0');
            words.push(owned.into_boxed_str());
        }
        Corpus { words }
    }

    /// The words, in corpus order.
    pub fn words(&self) -> Vec<Word<'_>> {
        self.words.iter().map(|w| Word(&w[..w.len() - 1])).collect()
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True when there are no words.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Share of words holding a non-ASCII character.
    pub fn non_ascii_share(&self) -> f64 {
        if self.words.is_empty() {
            return 0.0;
        }
        let n = self.words.iter().filter(|w| !w.is_ascii()).count();
        n as f64 / self.words.len() as f64
    }

    /// Mean length in bytes, without the NUL.
    pub fn mean_len(&self) -> f64 {
        if self.words.is_empty() {
            return 0.0;
        }
        let total: usize = self.words.iter().map(|w| w.len() - 1).sum();
        total as f64 / self.words.len() as f64
    }
}

/// `s` with its first character in upper case.
fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_has_non_ascii_words() {
        let a = Corpus::generate(Lang::Sv, 500);
        let b = Corpus::generate(Lang::Sv, 500);
        assert_eq!(a.words(), b.words());
        assert_eq!(a.len(), 500);
        let share = a.non_ascii_share();
        assert!((0.2..0.8).contains(&share), "{share}");
        assert_eq!(Corpus::generate(Lang::C, 500).non_ascii_share(), 0.0);
        assert!(Corpus::generate(Lang::De, 500).non_ascii_share() > 0.2);
        assert!(Corpus::generate(Lang::En, 500).non_ascii_share() > 0.2);
        assert!(a.mean_len() > 4.0);
    }

    #[test]
    fn words_are_nul_terminated_for_c() {
        let c = Corpus::from_strs(&["åsna", "x"]).unwrap();
        for w in c.words() {
            // SAFETY: a Word is followed by a NUL in its corpus.
            let s = unsafe { std::ffi::CStr::from_ptr(w.as_c_ptr()) };
            assert_eq!(s.to_str().unwrap(), w.as_str());
        }
        assert!(Corpus::from_strs(&["a\0b"]).is_err());
    }

    #[test]
    fn check_lists_have_no_duplicates() {
        for l in Lang::ALL {
            let list = l.check_list();
            assert!(list.len() >= 5);
            let mut seen = std::collections::HashSet::new();
            assert!(list.iter().all(|w| seen.insert(w.to_lowercase())), "{l:?}");
        }
    }
}
