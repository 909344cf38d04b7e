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
pub mod topology;
pub mod undisturbed;
pub mod user_file;

pub use bench::Suite;

pub use crate::pattern::{NoMatch, matches};

use std::path::PathBuf;

use crate::harness::{Bench, Finding, Measurement, Profile};
use crate::host::Host;
use crate::pattern::nearest;

/// Every registered suite, in run order.
pub fn suites() -> Vec<Suite> {
    vec![
        syscall::suite(),
        ipc::suite(),
        topology::suite(),
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

/// The user's own data a run measures: `--input` files (codec) and
/// `--words` lists in `--locale` orders (text), checked.
#[derive(Debug, Default)]
pub struct UserData {
    /// `--input` files.
    pub inputs: Vec<codec::UserInput>,
    /// `--words` files.
    pub words: Vec<text::user::UserWords>,
    /// The locales the word lists are ordered in.
    pub locales: Vec<text::user::UserLocale>,
}

impl UserData {
    /// Checks the files and names as given; a message on the first mistake.
    pub fn check(
        inputs: &[PathBuf],
        words: &[PathBuf],
        locales: &[String],
    ) -> Result<UserData, String> {
        let inputs = codec::check_inputs(inputs)?;
        let (words, locales) = text::user::check_args(words, locales)?;
        Ok(UserData {
            inputs,
            words,
            locales,
        })
    }

    /// Refuses data that the selected benchmarks would not measure.
    pub fn check_selected(&self, benches: &[Box<dyn Bench>]) -> Result<(), String> {
        codec::check_selected(benches, &self.inputs)?;
        text::user::check_selected(benches, &self.words)
    }
}

/// Every benchmark this build has on `host`, with those of the user's
/// data: the catalog a run selects from and a worker rebuilds.
pub fn catalog(host: &Host, user: &UserData) -> Vec<Box<dyn Bench>> {
    let mut all = all_benches(host);
    all.extend(codec::input_benches(&user.inputs));
    all.extend(text::user::benches(&user.words, &user.locales));
    all
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

/// Keeps the benchmarks any pattern selects, in registry order; every
/// pattern must select something. No patterns selects everything. A
/// pattern that names a placement class `host` lacks says so, with the
/// classes it has.
pub fn select(
    benches: Vec<Box<dyn Bench>>,
    patterns: &[String],
    host: &Host,
) -> Result<Vec<Box<dyn Bench>>, NoMatch> {
    if patterns.is_empty() {
        return Ok(benches);
    }
    for p in patterns {
        if !benches.iter().any(|b| matches(p, b.id())) {
            return Err(NoMatch {
                pattern: p.clone(),
                why: missing_class(p, host).or_else(|| unavailable(p, host)),
                nearest: nearest(p, benches.iter().map(|b| b.id())),
            });
        }
    }
    Ok(benches
        .into_iter()
        .filter(|b| patterns.iter().any(|p| matches(p, b.id())))
        .collect())
}

/// Why a suite that `pattern` names has no benchmark on `host`, when the
/// suite says (topology on a run that may use one CPU).
fn unavailable(pattern: &str, host: &Host) -> Option<String> {
    let names = |area: &str| matches(pattern, area) || crate::harness::area_of(pattern) == area;
    if names(topology::AREA) {
        topology::unavailable(host)
    } else {
        None
    }
}

/// The error of a pattern whose last `/` part names a placement class
/// `host` does not have (`ipc.pipe.rtt/8B/cross-package` on one socket).
fn missing_class(pattern: &str, host: &Host) -> Option<String> {
    let last = pattern.rsplit('/').next()?.trim_matches(['*', '?']);
    let class = crate::host::PlaceClass::parse(last).ok()?;
    match host.topology.pair(class) {
        Err(e) => Some(e.to_string()),
        // A class the `cross` placement stands for has no id of its own.
        Ok(_)
            if !crate::harness::affinity::Placement::of_host(host)
                .contains(&crate::harness::affinity::Placement::Class(class)) =>
        {
            Some(format!(
                "on this machine the `cross` rows are the {class} pair (ids ending `/cross`)"
            ))
        }
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{PrepareError, Unit};
    use crate::suites::bench::FnBench;

    #[test]
    fn a_pattern_naming_a_class_the_machine_lacks_says_which_it_has() {
        let dir = crate::host::fixtures::two_vcpu_guest().write();
        let host = Host::detect_at(dir.path());
        let pick = |p: &str| {
            select(all_benches(&host), &[p.to_string()], &host)
                .err()
                .map(|e| e.to_string())
        };
        let e = pick("ipc.pipe.rtt/8B/cross-package").unwrap();
        assert!(e.contains("does not exist on this machine"), "{e}");
        assert!(e.contains("it has same-cpu, same-l3"), "{e}");
        let e = pick("ipc.pipe.rtt/8B/same-l3").unwrap();
        assert!(e.contains("the `cross` rows are the same-l3 pair"), "{e}");
        assert_eq!(pick("topology.c2c.cas/same-l3"), None);
        let e = pick("ipc.pipe.rtt/8B/nowhere").unwrap();
        assert!(!e.contains("class"), "{e}");
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
    fn topology_on_one_usable_cpu_says_it_needs_two_and_names_the_cpu() {
        let mut tree = crate::host::fixtures::two_vcpu_guest();
        tree.allowed("1");
        let dir = tree.write();
        let host = Host::detect_at(dir.path());
        for pattern in ["topology", "topology.c2c"] {
            let e = select(all_benches(&host), &[pattern.to_string()], &host)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains("topology needs two usable CPUs, and this run may use one (CPU 1)"),
                "{e}"
            );
        }
        // With both CPUs the suite is there, and a typo is only a typo.
        let dir = crate::host::fixtures::two_vcpu_guest().write();
        let host = Host::detect_at(dir.path());
        assert!(select(all_benches(&host), &["topology".to_string()], &host).is_ok());
        let e = select(all_benches(&host), &["topolgy".to_string()], &host)
            .err()
            .unwrap();
        assert_eq!(e.why, None);
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
