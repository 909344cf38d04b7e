//! A run as the user asked for it, in the run's own terms: what `opcost
//! run` and each side of `opcost ab` measure, built from the command line
//! in one place (`commands::request`) and refused there, with the usage
//! exit code, when two of its flags cannot go together.
//!
//! Why: a conflict found after the benchmarks ran throws the run away; a
//! request is whole and consistent before anything is measured, and the
//! plan below it ([`super::RunPlan`]) reads no flag.

use std::path::PathBuf;

use crate::error::usage;
use crate::harness::Profile;
use crate::harness::worker::Launch;
use crate::suites::topology::matrix;

/// A run asked for, its flags consistent with each other.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// Id prefixes or globs; none selects everything.
    pub patterns: Vec<String>,
    /// The effort level.
    pub profile: Profile,
    /// Samples, rounds and the precision aimed at, where given.
    pub sampling: Sampling,
    /// The seed of the order (none: drawn when the run is planned).
    pub seed: Option<u64>,
    /// The CPU the run is pinned to.
    pub cpu: Option<usize>,
    /// Where file benchmarks write (none: the run's temp dir).
    pub dir: Option<PathBuf>,
    /// The user's own data: `--input` files, `--words` lists and their locales.
    pub data: DataPaths,
    /// The far end of the net benchmarks that need one.
    pub far: FarEnd,
    /// Every round in this process rather than in round workers.
    pub one_process: bool,
    /// The CPU x CPU matrix measured after the benchmarks, and its CPUs.
    pub matrix: Option<matrix::Sampling>,
    /// A label saved with the run.
    pub label: Option<String>,
    /// Whether the run is kept in the history.
    pub save: bool,
    /// Whether earlier runs of the host settle the findings' words.
    pub history: bool,
}

/// How many samples and rounds a benchmark takes, where the user said.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sampling {
    /// Samples per round.
    pub samples: Option<usize>,
    /// Rounds per benchmark.
    pub rounds: Option<usize>,
    /// The interval half-width aimed at, relative (0 turns extra rounds off).
    pub target_precision: Option<f64>,
}

/// The user's files, as given (checked when the run is planned).
#[derive(Clone, Debug, Default)]
pub struct DataPaths {
    /// `--input` files for the codec suite.
    pub inputs: Vec<PathBuf>,
    /// `--words` lists for the text suite.
    pub words: Vec<PathBuf>,
    /// The locales of the word lists.
    pub locales: Vec<String>,
}

/// The far end of the net benchmarks that measure one.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum FarEnd {
    /// None: the net.peer.* and net.target.* rows are not run.
    #[default]
    None,
    /// A remote `opcost serve` (net.peer.*).
    Peer {
        /// Its HOST:PORT.
        addr: String,
        /// The token it printed when it started.
        token: String,
    },
    /// A device that runs none of opcost, sent ICMP echo (net.target.*).
    Target {
        /// Its name or address.
        host: String,
        /// The most echo requests sent per second.
        max_pps: u32,
    },
}

impl FarEnd {
    /// The far end given by `--peer`/`--token` and `--target`/`--max-pps`;
    /// a usage error for a peer without its token or both at once.
    pub fn of_flags(
        peer: Option<&str>,
        token: Option<&str>,
        target: Option<&str>,
        max_pps: Option<u32>,
    ) -> anyhow::Result<FarEnd> {
        match (peer, target) {
            (Some(_), Some(_)) => Err(usage(
                "--peer and --target measure different far ends: give one of them",
            )),
            (Some(addr), None) => {
                let token = token.ok_or_else(|| {
                    usage("--peer needs --token TOKEN: the token opcost serve printed when it started")
                })?;
                Ok(FarEnd::Peer {
                    addr: addr.to_string(),
                    token: token.to_string(),
                })
            }
            (None, Some(host)) => Ok(FarEnd::Target {
                host: host.to_string(),
                max_pps: max_pps.unwrap_or(crate::suites::net::icmp::DEFAULT_MAX_PPS),
            }),
            (None, None) => Ok(FarEnd::None),
        }
    }

    /// True when the run measures a peer.
    pub fn is_peer(&self) -> bool {
        matches!(self, FarEnd::Peer { .. })
    }

    /// True when the run measures a target device.
    pub fn is_target(&self) -> bool {
        matches!(self, FarEnd::Target { .. })
    }
}

impl RunRequest {
    /// Everything at `profile`, nothing else asked for: a bare `opcost` at
    /// the quick profile, and the base of the other requests.
    pub fn everything(profile: Profile) -> RunRequest {
        RunRequest {
            patterns: Vec::new(),
            profile,
            sampling: Sampling::default(),
            seed: None,
            cpu: None,
            dir: None,
            data: DataPaths::default(),
            far: FarEnd::None,
            one_process: false,
            matrix: None,
            label: None,
            save: true,
            history: true,
        }
    }

    /// Refuses flags that cannot go together, before anything runs.
    pub fn check(self) -> anyhow::Result<RunRequest> {
        if let (Some(_), Some(cpu)) = (self.matrix, self.cpu) {
            return Err(usage(format!(
                "--matrix measures pairs of CPUs, and --cpu {cpu} pins the run to one: drop one of them"
            )));
        }
        Ok(self)
    }

    /// Whether each round runs in a round worker of its own: not when asked
    /// for one process, nor with a far end (its connection belongs to this
    /// process).
    pub fn workers(&self) -> bool {
        !self.one_process && self.far == FarEnd::None
    }
}

/// One side's setting in `opcost ab`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Setting {
    /// `--cpu N` for the side's round workers.
    pub cpu: Option<usize>,
    /// The environment and wrapper its round workers start under.
    pub launch: Launch,
}

impl Setting {
    /// The setting in words, for labels: `cpu=1 FOO=bar wrap='nice -n 5'`
    /// (the value of a secret-looking variable left out).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpu {
            parts.push(format!("cpu={c}"));
        }
        parts.extend(self.launch.env.iter().map(|(k, v)| {
            if crate::host::settings::looks_secret(k, v) {
                format!("{k}=…")
            } else {
                format!("{k}={v}")
            }
        }));
        if let Some(w) = &self.launch.wrap {
            parts.push(format!(
                "wrap='{}'",
                crate::host::settings::redact_command(w)
            ));
        }
        if parts.is_empty() {
            "as is".to_string()
        } else {
            parts.join(" ")
        }
    }
}

/// Two settings measured side by side, benchmark by benchmark.
#[derive(Clone, Debug)]
pub struct AbRequest {
    /// What both sides measure: a fixed number of rounds, never extra
    /// rounds for one side only (they would have no pair), nothing saved
    /// by the run itself.
    pub run: RunRequest,
    /// Setting A, the reference.
    pub a: Setting,
    /// Setting B, compared with A.
    pub b: Setting,
    /// Whether the two runs are kept in the history.
    pub save: bool,
}

impl AbRequest {
    /// The request of `patterns` under settings `a` and `b`, `rounds` a
    /// side (default: the profile's, at least 2); refused when the two
    /// settings are the same.
    pub fn new(
        patterns: Vec<String>,
        profile: Profile,
        rounds: Option<u32>,
        (a, b): (Setting, Setting),
        dir: Option<PathBuf>,
        save: bool,
    ) -> anyhow::Result<AbRequest> {
        if a == b {
            return Err(usage(
                "settings A and B are the same; give at least one of --a-cpu/--b-cpu, --a-env/--b-env, --a-wrap/--b-wrap",
            ));
        }
        let rounds = rounds.map_or(profile.rounds(), |r| r as usize).max(2);
        let run = RunRequest {
            patterns,
            sampling: Sampling {
                rounds: Some(rounds),
                target_precision: Some(0.0),
                samples: None,
            },
            dir,
            save: false,
            history: false,
            ..RunRequest::everything(profile)
        };
        Ok(AbRequest { run, a, b, save })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_and_a_pinned_cpu_are_refused_together() {
        let req = RunRequest {
            matrix: Some(matrix::Sampling::Cores),
            cpu: Some(1),
            ..RunRequest::everything(Profile::Quick)
        };
        let e = req.check().unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("--cpu 1 pins the run to one"), "{e}");
        let alone = RunRequest {
            matrix: Some(matrix::Sampling::Cores),
            ..RunRequest::everything(Profile::Quick)
        };
        assert!(alone.check().is_ok());
    }

    #[test]
    fn a_peer_needs_its_token_and_excludes_a_target() {
        let e = FarEnd::of_flags(Some("h:1"), None, None, None).unwrap_err();
        assert!(e.to_string().contains("--peer needs --token"), "{e}");
        let e = FarEnd::of_flags(Some("h:1"), Some("t"), Some("r"), None).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let t = FarEnd::of_flags(None, None, Some("router"), None).unwrap();
        assert_eq!(
            t,
            FarEnd::Target {
                host: "router".into(),
                max_pps: crate::suites::net::icmp::DEFAULT_MAX_PPS
            }
        );
        let req = RunRequest {
            far: t,
            ..RunRequest::everything(Profile::Quick)
        };
        assert!(!req.workers(), "the target belongs to this process");
    }

    #[test]
    fn ab_sides_must_differ_and_take_two_rounds_at_least() {
        let same = (Setting::default(), Setting::default());
        let e = AbRequest::new(vec!["x".into()], Profile::Quick, None, same, None, true);
        assert!(e.unwrap_err().to_string().contains("the same"));
        let b = Setting {
            cpu: Some(1),
            ..Setting::default()
        };
        let r = AbRequest::new(
            vec!["x".into()],
            Profile::Quick,
            Some(1),
            (Setting::default(), b),
            None,
            true,
        )
        .unwrap();
        assert_eq!(r.run.sampling.rounds, Some(2));
        assert_eq!(r.run.sampling.target_precision, Some(0.0));
        assert!(!r.run.save && r.save);
    }

    #[test]
    fn settings_describe_themselves() {
        let s = Setting {
            cpu: Some(1),
            launch: Launch {
                env: vec![("FOO".into(), "bar".into())],
                wrap: Some("nice -n 5".into()),
            },
        };
        assert_eq!(s.describe(), "cpu=1 FOO=bar wrap='nice -n 5'");
        assert_eq!(Setting::default().describe(), "as is");
    }
}
