//! The registry of benchmarks and their selection by pattern.
//!
//! A suite is a list of benchmarks (which may depend on the machine: sweep
//! points follow its cache sizes and memory) and a function that derives
//! findings from whatever of its measurements a run produced. Suites never
//! print; they only describe work and read results.

pub mod bench;
pub mod codec;
pub mod cpu;
pub mod crypto;
pub mod ipc;
pub mod memory;
pub mod net;
pub mod process;
pub mod storage;
pub mod syscall;
pub mod text;
pub mod timer;
pub mod undisturbed;
pub mod user_file;

pub use bench::{Budget, FnBench, Looped, PrepareFn, get, median_of, ratio_finding};

use crate::harness::{Bench, Finding, Measurement, Profile};
use crate::host::Host;

/// A group of benchmarks of one area, with the findings derived from them.
pub struct Suite {
    /// The area name, the first segment of every id in it.
    pub name: &'static str,
    /// One line describing the suite.
    pub summary: &'static str,
    /// The suite's benchmarks on this machine.
    pub benches: fn(&Host) -> Vec<Box<dyn Bench>>,
    /// Findings from the measurements of a run (any subset may be present).
    pub findings: fn(&[Measurement]) -> Vec<Finding>,
}

/// Every registered suite, in run order.
pub fn suites() -> Vec<Suite> {
    vec![
        syscall::suite(),
        ipc::suite(),
        memory::suite(),
        cpu::suite(),
        crypto::suite(),
        process::suite(),
        timer::suite(),
        storage::suite(),
        net::suite(),
        codec::suite(),
        text::suite(),
    ]
}

/// Every benchmark of every suite, in run order.
pub fn all_benches(host: &Host) -> Vec<Box<dyn Bench>> {
    suites().iter().flat_map(|s| (s.benches)(host)).collect()
}

/// All findings the suites derive from `ms`.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    suites().iter().flat_map(|s| (s.findings)(ms)).collect()
}

/// Keeps the benchmarks that run at `profile` (see [`Bench::runs_at`]);
/// an error when the selection was not empty but none of it runs there.
pub fn for_profile(
    benches: Vec<Box<dyn Bench>>,
    profile: Profile,
) -> Result<Vec<Box<dyn Bench>>, ProfileTooShort> {
    let selected = benches.len();
    let kept: Vec<Box<dyn Bench>> = benches.into_iter().filter(|b| b.runs_at(profile)).collect();
    if kept.is_empty() && selected > 0 {
        return Err(ProfileTooShort {
            profile: profile.name(),
        });
    }
    Ok(kept)
}

/// Every selected benchmark needs a longer profile than the one asked for.
#[derive(Debug, thiserror::Error)]
#[error(
    "the selected benchmarks are too costly for the {profile} profile; use --profile default or --profile thorough"
)]
pub struct ProfileTooShort {
    /// The profile asked for.
    pub profile: &'static str,
}

/// A pattern that selected nothing, with the closest ids.
#[derive(Debug, thiserror::Error)]
#[error("no benchmark matches '{pattern}'{}", nearest_text(.nearest))]
pub struct NoMatch {
    /// The pattern as given.
    pub pattern: String,
    /// The closest ids, best first.
    pub nearest: Vec<String>,
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

/// Keeps the benchmarks any pattern selects, in registry order; every
/// pattern must select something. No patterns selects everything.
pub fn select(
    benches: Vec<Box<dyn Bench>>,
    patterns: &[String],
) -> Result<Vec<Box<dyn Bench>>, NoMatch> {
    if patterns.is_empty() {
        return Ok(benches);
    }
    for p in patterns {
        if !benches.iter().any(|b| matches(p, b.id())) {
            return Err(NoMatch {
                pattern: p.clone(),
                nearest: nearest(p, benches.iter().map(|b| b.id())),
            });
        }
    }
    Ok(benches
        .into_iter()
        .filter(|b| patterns.iter().any(|p| matches(p, b.id())))
        .collect())
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
    use crate::harness::{PrepareError, Unit};

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

    #[test]
    fn registry_ids_are_unique_and_well_formed() {
        let host = Host::detect();
        let benches = all_benches(&host);
        assert!(!benches.is_empty());
        let mut seen = std::collections::HashSet::new();
        let names: Vec<&str> = suites().iter().map(|s| s.name).collect();
        for b in &benches {
            assert!(seen.insert(b.id().to_string()), "duplicate id {}", b.id());
            assert!(!b.id().contains(' '), "{}", b.id());
            assert!(
                names.contains(&crate::harness::area_of(b.id())),
                "{} is in no suite's area",
                b.id()
            );
            assert!(!b.summary().is_empty(), "{} has no summary", b.id());
        }
    }

    #[test]
    fn profile_gating_keeps_what_runs_and_refuses_an_empty_result() {
        let mk = |id: &str, p: Profile| {
            FnBench::new(id, "x", Unit::Latency, |_| {
                Err(PrepareError::Skip("test".into()))
            })
            .min_profile(p)
            .boxed()
        };
        let kept = for_profile(
            vec![mk("a", Profile::Quick), mk("b", Profile::Thorough)],
            Profile::Default,
        )
        .unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].id(), "a");
        let err = for_profile(vec![mk("b", Profile::Thorough)], Profile::Quick)
            .err()
            .unwrap();
        assert!(err.to_string().contains("--profile"), "{err}");
        assert!(for_profile(Vec::new(), Profile::Quick).unwrap().is_empty());
    }
}
