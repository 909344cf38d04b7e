//! Benchmark ids selected by pattern: a prefix (`syscall.io`) or a glob
//! (`*getpid*`), and the closest ids to a pattern that selected nothing.
//! Here, not in the registry, so that the history's readers (`compare`,
//! `fleet`, `trend`) select ids without knowing the suites.

/// A pattern that selected nothing, with the closest ids.
#[derive(Debug, thiserror::Error)]
#[error("no benchmark matches '{pattern}'{}{}", why_text(.why), nearest_text(.nearest))]
pub struct NoMatch {
    /// The pattern as given.
    pub pattern: String,
    /// Why, when it is known (a placement class this machine lacks).
    pub why: Option<String>,
    /// The closest ids, best first.
    pub nearest: Vec<String>,
}

fn why_text(why: &Option<String>) -> String {
    why.as_ref().map(|w| format!(": {w}")).unwrap_or_default()
}

fn nearest_text(nearest: &[String]) -> String {
    if nearest.is_empty() {
        "; `opcost list` shows every id".to_string()
    } else {
        format!(
            "; did you mean: {}? (`opcost list` shows every id)",
            nearest.join(", ")
        )
    }
}

/// True when `pattern` selects `id`: a glob (`*`, `?`) matching the whole
/// id, or a plain prefix (`syscall`, `syscall.io`).
pub fn matches(pattern: &str, id: &str) -> bool {
    if pattern.contains(['*', '?']) {
        glob_match(pattern.as_bytes(), id.as_bytes())
    } else {
        id.starts_with(pattern)
    }
}

/// Wildcard match: `*` any run of characters, `?` one character.
fn glob_match(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Up to five ids (or id prefixes) closest to `pattern` by edit distance.
pub fn nearest<'a>(pattern: &str, ids: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut cands: Vec<String> = Vec::new();
    for id in ids {
        // Offer every dotted prefix too, so `sycall` suggests `syscall`.
        let mut acc = String::new();
        for (i, part) in id.split('.').enumerate() {
            if i > 0 {
                acc.push('.');
            }
            acc.push_str(part);
            if !cands.contains(&acc) {
                cands.push(acc.clone());
            }
        }
    }
    let bare = pattern.trim_matches(['*', '?']);
    closest(bare, cands.iter().map(String::as_str), str::to_string)
}

/// Up to five of `cands` closest to `wanted` by edit distance (within
/// half its length, at least 3), each compared as `key` spells it.
pub fn closest<'a>(
    wanted: &str,
    cands: impl Iterator<Item = &'a str>,
    key: impl Fn(&str) -> String,
) -> Vec<String> {
    let w = key(wanted);
    let mut scored: Vec<(usize, &str)> = cands
        .map(|c| (strsim::levenshtein(&w, &key(c)), c))
        .collect();
    scored.sort();
    let limit = (w.len() / 2).max(3);
    scored
        .into_iter()
        .filter(|(d, _)| *d <= limit)
        .take(5)
        .map(|(_, c)| c.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_and_glob_patterns() {
        assert!(matches("syscall", "syscall.getpid.raw"));
        assert!(matches("syscall.io", "syscall.io.read/4B"));
        assert!(!matches("ipc", "syscall.getpid.raw"));
        assert!(matches("syscall.io.*", "syscall.io.read/4B"));
        assert!(matches("*getpid*", "syscall.getpid.raw"));
        assert!(matches("syscall.?etpid.*", "syscall.getpid.raw"));
        assert!(!matches("syscall.io.*", "syscall.getpid.raw"));
        assert!(!matches("*.raw", "syscall.getpid.libc"));
    }

    #[test]
    fn nearest_suggests_close_prefixes() {
        let ids = [
            "syscall.getpid.raw",
            "syscall.getpid.libc",
            "ipc.pipe.throughput/64KiB",
        ];
        let n = nearest("sycall", ids.iter().copied());
        assert_eq!(n.first().map(String::as_str), Some("syscall"));
        assert!(nearest("zzzzzzzzzzzzzzzzzz", ids.iter().copied()).is_empty());
    }
}
