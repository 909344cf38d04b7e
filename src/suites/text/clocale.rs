//! A C library locale object (`newlocale`) and the `_l` string functions
//! that take it, so that a benchmark collates under `sv_SE.UTF-8` without
//! changing the locale of the process or of its thread.

use std::cmp::Ordering;
use std::ffi::{CString, c_char, c_int};

use super::words::Word;

// POSIX.1-2008 functions that take an explicit locale; glibc exports them,
// the libc crate does not declare them.
unsafe extern "C" {
    fn strcoll_l(a: *const c_char, b: *const c_char, loc: libc::locale_t) -> c_int;
    fn strxfrm_l(
        dst: *mut c_char,
        src: *const c_char,
        n: libc::size_t,
        loc: libc::locale_t,
    ) -> libc::size_t;
    fn strcasecmp_l(a: *const c_char, b: *const c_char, loc: libc::locale_t) -> c_int;
}

/// A locale object of the C library, freed on drop.
pub struct CLocale {
    loc: libc::locale_t,
    name: String,
}

// SAFETY: a locale_t is an immutable object once created; the _l functions
// only read it, from any thread.
unsafe impl Send for CLocale {}

impl CLocale {
    /// The locale `name` for collation and character classes; an error that
    /// says how to install it when the C library does not have it.
    pub fn new(name: &str) -> Result<CLocale, String> {
        let c = CString::new(name).map_err(|_| format!("bad locale name {name:?}"))?;
        let mask = libc::LC_COLLATE_MASK | libc::LC_CTYPE_MASK;
        // SAFETY: c is a valid C string; a null base asks for a new object.
        let loc = unsafe { libc::newlocale(mask, c.as_ptr(), std::ptr::null_mut()) };
        if loc.is_null() {
            let err = std::io::Error::last_os_error();
            return Err(format!(
                "the C library has no locale {name} ({err}); install it (Debian: apt-get install locales-all) and check with `locale -a`"
            ));
        }
        Ok(CLocale {
            loc,
            name: name.to_string(),
        })
    }

    /// The locale's name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The locale's character set (`UTF-8`, `ISO-8859-9`), as `nl_langinfo_l` names it.
    pub fn codeset(&self) -> String {
        // SAFETY: the locale object is alive; the result is a NUL-terminated
        // string owned by it, copied at once.
        let p = unsafe { libc::nl_langinfo_l(libc::CODESET, self.loc) };
        if p.is_null() {
            return String::new();
        }
        // SAFETY: as above.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }

    /// `strcoll_l`: the locale's collation order.
    pub fn strcoll(&self, a: Word<'_>, b: Word<'_>) -> Ordering {
        // SAFETY: words are NUL-terminated; the locale object is alive.
        unsafe { strcoll_l(a.as_c_ptr(), b.as_c_ptr(), self.loc) }.cmp(&0)
    }

    /// `strcasecmp_l`: byte compare after the locale's per-byte `tolower`.
    pub fn strcasecmp(&self, a: Word<'_>, b: Word<'_>) -> Ordering {
        // SAFETY: as above.
        unsafe { strcasecmp_l(a.as_c_ptr(), b.as_c_ptr(), self.loc) }.cmp(&0)
    }

    /// `strxfrm_l`: the sort key of `w` (compare keys with `memcmp`), into `out`.
    pub fn strxfrm(&self, w: Word<'_>, out: &mut Vec<u8>) {
        out.clear();
        // SAFETY: a null destination with size 0 only asks for the length.
        let need = unsafe { strxfrm_l(std::ptr::null_mut(), w.as_c_ptr(), 0, self.loc) };
        out.resize(need + 1, 0);
        // SAFETY: out holds need + 1 bytes, room for the key and its NUL.
        let wrote = unsafe { strxfrm_l(out.as_mut_ptr().cast(), w.as_c_ptr(), need + 1, self.loc) };
        out.truncate(wrote.min(need));
    }
}

impl Drop for CLocale {
    fn drop(&mut self) {
        // SAFETY: created by newlocale, freed once.
        unsafe { libc::freelocale(self.loc) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::text::words::Corpus;

    #[test]
    fn the_c_locale_always_exists_and_compares_bytes() {
        let c = CLocale::new("C").unwrap();
        let corpus = Corpus::from_strs(&["B", "a", "b"]).unwrap();
        let w = corpus.words();
        assert_eq!(c.strcoll(w[0], w[1]), Ordering::Less, "C: 'B' < 'a'");
        assert_eq!(c.strcasecmp(w[0], w[2]), Ordering::Equal);
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        c.strxfrm(w[1], &mut ka);
        c.strxfrm(w[2], &mut kb);
        assert_eq!(ka.cmp(&kb), c.strcoll(w[1], w[2]));
        assert_eq!(c.codeset(), "ANSI_X3.4-1968");
    }

    #[test]
    fn a_missing_locale_says_how_to_install_it() {
        let e = CLocale::new("xx_NOWHERE.UTF-8").err().unwrap();
        assert!(e.contains("locales-all"), "{e}");
    }
}
