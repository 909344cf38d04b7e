//! A run's plan: its [`RunRequest`] checked against the machine, the
//! benchmarks chosen, and the one description a run and its round workers
//! are both built from.
//!
//! Why: `opcost run` must refuse every mistake before it measures anything,
//! and a worker must build exactly the run's benchmarks, sampled the same
//! way. With the request whole before the plan ([`request`]), the checks
//! against the machine here, and the [`Hello`] as the single source of the
//! run's context and options, `run` reads request → plan → measure →
//! deliver, and no command knows a suite's id prefixes (each suite checks
//! its own inputs). Nothing here reads a flag: `ab` plans its two sides
//! from a request of its own.

pub mod request;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::document::{PeerInfo, RunDoc};
use crate::error::usage;
use crate::harness::scratch::{self, ScratchDir};
use crate::harness::worker::WorkerCmd;
use crate::harness::{
    Bench, Ctx, Finding, Given, Measurement, Profile, RunOptions, affinity, canary,
};
use crate::host::Host;
use crate::suites::{self, UserData, net};
pub use request::{AbRequest, DataPaths, FarEnd, RunRequest, Sampling, Setting};

/// What a run is made of, and what a worker needs to build the same
/// benchmarks and measure them the same way.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hello {
    /// The run's benchmarks, in its order.
    pub ids: Vec<String>,
    /// The run's profile.
    pub profile: Profile,
    /// `--samples`.
    pub samples: Option<usize>,
    /// `--rounds`.
    pub rounds: Option<usize>,
    /// `--target-precision`, relative (0 turns it off).
    #[serde(default)]
    pub target_precision: Option<f64>,
    /// `--cpu` (the affinity itself is inherited).
    pub cpu: Option<usize>,
    /// `--dir`: where file benchmarks write (none: the temp dir).
    pub dir: Option<PathBuf>,
    /// The run's temp dir; a worker makes its own inside it.
    pub tmp: PathBuf,
    /// `--input` files.
    pub inputs: Vec<PathBuf>,
    /// `--words` files.
    #[serde(default)]
    pub words: Vec<PathBuf>,
    /// The locales of the `--words` files, as the run resolved them.
    #[serde(default)]
    pub locales: Vec<String>,
    /// The machine, as the run detected it.
    pub host: Host,
}

impl Hello {
    /// The user's data of the run, checked again (by a worker).
    pub fn user_data(&self) -> anyhow::Result<UserData> {
        UserData::check(&self.inputs, &self.words, &self.locales).map_err(anyhow::Error::msg)
    }

    /// The run's benchmarks, built again from its ids in its order (a
    /// worker's, or the second side of `ab`).
    pub fn benches(&self, host: &Arc<Host>) -> anyhow::Result<Vec<Box<dyn Bench>>> {
        let mut all = suites::catalog(host, &self.user_data()?);
        let mut benches = Vec::with_capacity(self.ids.len());
        for id in &self.ids {
            let Some(k) = all.iter().position(|b| b.id() == id) else {
                anyhow::bail!("this build has no benchmark {id}");
            };
            benches.push(all.swap_remove(k));
        }
        Ok(benches)
    }

    /// The context of a process measuring the run, with its own temp dir.
    pub fn ctx(&self, host: Arc<Host>, tmp: &Path, stop: Arc<AtomicBool>) -> Ctx {
        Ctx {
            profile: self.profile,
            host,
            tmp: tmp.to_path_buf(),
            dir: self.dir.clone().unwrap_or_else(|| self.tmp.clone()),
            cpu: self.cpu,
            stop,
            given: Given::default(),
        }
    }

    /// The sampling options, with the order drawn from `seed`.
    pub fn opts(&self, seed: u64) -> RunOptions {
        RunOptions {
            profile: self.profile,
            samples: self.samples,
            rounds: self.rounds,
            canary: canary::check,
            kernel_canary: Some(canary::kernel_check),
            seed,
            target_precision: self.target_precision,
            history: Default::default(),
        }
    }
}

/// A run checked and chosen, nothing measured yet.
pub struct RunPlan {
    /// What was asked for.
    pub request: RunRequest,
    /// The machine.
    pub host: Arc<Host>,
    /// The selected benchmarks, in run order.
    pub benches: Vec<Box<dyn Bench>>,
    /// The user's `--input` files and `--words` lists, checked.
    pub user: UserData,
    /// The peer of the net.peer.* benchmarks, when the run has one.
    pub peer: Option<PeerInfo>,
    /// The far end the benchmarks find in their context.
    pub given: Given,
    /// The order's seed (the request's, else drawn now).
    pub seed: u64,
}

impl RunPlan {
    /// Checks `request` against the machine (the directory, the user's
    /// files, the CPU), selects the benchmarks and reaches the far end. A
    /// mistake is a usage error.
    pub fn new(request: RunRequest) -> anyhow::Result<RunPlan> {
        let req = &request;
        if let Some(dir) = &req.dir {
            check_dir(dir)?;
        }
        let data = &req.data;
        let user = UserData::check(&data.inputs, &data.words, &data.locales).map_err(usage)?;
        if let Some(cpu) = req.cpu {
            affinity::pin_to(cpu).map_err(|e| usage(format!("--cpu {cpu}: {e:#}")))?;
        }
        let host = Arc::new(Host::detect());
        if req.matrix.is_some() {
            matrix_needs_two(&host).map_err(usage)?;
        }
        let mut benches = suites::select(suites::catalog(&host, &user), &req.patterns, &host)?;
        // Swap is enabled only when a pattern names the swap rows.
        benches = suites::memory::swap::for_patterns(benches, &req.patterns);
        // The whole machine at the quick profile stays under a minute.
        if req.patterns.is_empty() && req.profile == Profile::Quick {
            benches.retain(|b| !b.on_request());
        }
        user.check_selected(&benches).map_err(usage)?;
        let benches =
            net::for_far_end(benches, req.far.is_peer(), req.far.is_target()).map_err(usage)?;
        let (peer, given) = reach(&req.far)?;
        let benches =
            suites::for_profile(benches, req.profile).map_err(|e| usage(e.to_string()))?;
        Ok(RunPlan {
            seed: req.seed.unwrap_or_else(|| fastrand::u64(..)),
            request,
            host,
            benches,
            user,
            peer,
            given,
        })
    }

    /// The description of the run whose temp dir is `tmp`.
    pub fn hello(&self, tmp: &Path) -> Hello {
        let req = &self.request;
        Hello {
            ids: self.benches.iter().map(|b| b.id().to_string()).collect(),
            profile: req.profile,
            samples: req.sampling.samples,
            rounds: req.sampling.rounds,
            target_precision: req.sampling.target_precision,
            cpu: req.cpu,
            dir: req.dir.clone(),
            tmp: tmp.to_path_buf(),
            inputs: self.user.inputs.iter().map(|u| u.path.clone()).collect(),
            words: self.user.words.iter().map(|w| w.path.clone()).collect(),
            locales: self.user.locales.iter().map(|l| l.name.clone()).collect(),
            host: (*self.host).clone(),
        }
    }

    /// The context of this process's rounds: the `hello`'s, with the far end.
    pub fn ctx(&self, hello: &Hello, tmp: &Path, stop: Arc<AtomicBool>) -> Ctx {
        Ctx {
            given: self.given.clone(),
            ..hello.ctx(self.host.clone(), tmp, stop)
        }
    }

    /// The run's document, started at `started`, nothing measured yet.
    pub fn document(&self, started: chrono::DateTime<chrono::Utc>) -> RunDoc {
        let req = &self.request;
        let mut doc = RunDoc::start(
            (*self.host).clone(),
            req.profile,
            req.label.clone(),
            req.cpu,
            started,
        );
        doc.peer = self.peer.clone();
        doc.run.order_seed = Some(self.seed);
        doc
    }

    /// How the run starts its round workers (none: every round here).
    pub fn worker_cmd(&self, hello: &Hello) -> anyhow::Result<Option<WorkerCmd>> {
        if !self.request.workers() {
            return Ok(None);
        }
        Ok(Some(WorkerCmd {
            exe: crate::os::self_exe().context("finding the opcost executable")?,
            hello: serde_json::to_string(hello)?,
            launch: Default::default(),
        }))
    }

    /// The time the run is planned to take: what each benchmark expects
    /// ([`crate::harness::Bench::expected`]), and each interleave group's
    /// shared set-up once ([`crate::harness::Bench::group_setup`]).
    pub fn budget(&self, opts: &RunOptions) -> Duration {
        expected_each(&self.benches, opts)
            .iter()
            .map(|(_, d)| *d)
            .sum()
    }

    /// The time the run will take, learned from `earlier` runs of this
    /// host at this profile (newest first) where they measured the same
    /// benchmarks, each benchmark's rounds as the two-stage rule is
    /// expected to decide them from `opts.history` (see [`estimate`]).
    pub fn estimate(&self, opts: &RunOptions, earlier: &[RunDoc]) -> Estimate {
        let planned = expected_each(&self.benches, opts);
        let rounds = |id: &str| opts.expected_rounds_mean(id);
        estimate(&planned, earlier, (opts.rounds(), &rounds))
    }
}

/// A run's time estimate, and how much of it the host's history gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The time the run should take.
    pub total: Duration,
    /// Benchmarks whose time came from an earlier run of the host.
    pub learned: usize,
    /// Benchmarks in the run.
    pub of: usize,
}

/// Each of `benches`' expected time at `opts`, the first selected member of
/// an interleave group carrying the group's shared set-up
/// ([`crate::harness::Bench::group_setup`]).
pub fn expected_each<'a>(
    benches: &'a [Box<dyn crate::harness::Bench>],
    opts: &RunOptions,
) -> Vec<(&'a str, Duration)> {
    let mut groups = std::collections::HashSet::new();
    benches
        .iter()
        .map(|b| {
            let shared = b.group_setup(opts.profile);
            let first = shared > Duration::ZERO
                && b.interleave().is_none_or(|k| groups.insert(k.to_string()));
            let extra = if first { shared } else { Duration::ZERO };
            (b.id(), opts.expected_of(b.as_ref()) + extra)
        })
        .collect()
}

/// Bounds of the factor by which budgets are scaled to what this host's
/// earlier runs took: a history of one odd run cannot make the estimate
/// absurd.
const LEARNED_FACTOR: (f64, f64) = (0.5, 4.0);

/// The run's time from each `planned` benchmark's expected time (its
/// budget, or what its operations need when they outlast it), where `earlier`
/// runs of the host (newest first) recorded what it took there
/// (`wall_s`) that time instead, and the budgets of the rest scaled by how
/// the learned times compared with their own budgets: a round's
/// preparation and calibration, which no budget knows, are then counted.
/// Both follow the rounds: `rounds` is the planned count and each
/// benchmark's expected count, a learned time is scaled from the rounds it
/// took then (the planned count in runs that did not record them) to those
/// expected now (on average: a first run cannot know them), and a budget
/// from the planned count.
pub fn estimate(
    planned: &[(&str, Duration)],
    earlier: &[RunDoc],
    (rounds, expected): (usize, &dyn Fn(&str) -> f64),
) -> Estimate {
    // The time it took and the rounds it took them in.
    let learned = |id: &str| {
        earlier
            .iter()
            .find_map(|d| {
                let s = d.run.wall_s.get(id).copied()?;
                let then = d
                    .results
                    .iter()
                    .find(|m| m.id == id)
                    .and_then(|m| m.rounds_decision)
                    .map_or(rounds, |r| r.taken);
                Some((s, then.max(1)))
            })
            .filter(|(s, _)| s.is_finite() && *s >= 0.0)
    };
    let share = |n: f64, of: usize| n / of.max(1) as f64;
    let (mut took, mut budgeted, mut n) = (0.0, 0.0, 0);
    for (id, budget) in planned {
        if let Some((s, then)) = learned(id) {
            took += s;
            budgeted += budget.as_secs_f64() * share(then as f64, rounds);
            n += 1;
        }
    }
    let factor = if budgeted > 0.0 {
        (took / budgeted).clamp(LEARNED_FACTOR.0, LEARNED_FACTOR.1)
    } else {
        1.0
    };
    let total: f64 = planned
        .iter()
        .map(|(id, budget)| {
            let now = expected(id);
            match learned(id) {
                Some((s, then)) => s * share(now, then),
                None => budget.as_secs_f64() * factor * share(now, rounds),
            }
        })
        .sum();
    Estimate {
        total: Duration::from_secs_f64(total),
        learned: n,
        of: planned.len(),
    }
}

/// The run's temp dir, after removing what runs killed outright left in
/// the temp dir and in `--dir`.
pub fn scratch_dir(dir: Option<&Path>) -> anyhow::Result<ScratchDir> {
    sweep_swap();
    let temp = std::env::temp_dir();
    let dirs = std::iter::once((temp.as_path(), true)).chain(dir.map(|d| (d, false)));
    for (parent, is_temp) in dirs {
        if !is_temp {
            // A worker killed by an abort leaves its directories here.
            scratch::watch_parent(parent);
        }
        let swept = scratch::sweep_stale(parent, "opcost-", is_temp);
        match swept.as_slice() {
            [] => {}
            [one] => eprintln!(
                "opcost: removed {}, left by a run that was killed",
                one.display()
            ),
            more => eprintln!(
                "opcost: removed {} opcost-* directories in {}, left by runs that were killed",
                more.len(),
                parent.display()
            ),
        }
    }
    ScratchDir::new_in(&temp, "opcost-")
        .with_context(|| format!("creating a temp dir in {}", temp.display()))
}

/// Disables and removes the temporary swap areas of opcost processes that
/// were killed (a round worker killed outright), saying so: before any
/// directory that may hold a swap file is removed.
pub fn sweep_swap() {
    for path in crate::os::swap::sweep_stale() {
        eprintln!(
            "opcost: disabled and removed the temporary swap {path}, left by a process that was killed"
        );
    }
}

/// Reaches the far end: connects to the peer and says how fast it
/// answered, or resolves the target and says at what rate it may be sent
/// requests; what the run records of it, and what its benchmarks find in
/// their context.
fn reach(far: &FarEnd) -> anyhow::Result<(Option<PeerInfo>, Given)> {
    match far {
        FarEnd::None => Ok((None, Given::default())),
        FarEnd::Peer { addr, token } => {
            let p = net::connect_peer(addr, token)?;
            eprintln!(
                "opcost: peer {} answered in {:.2} ms",
                p.addr,
                p.rtt.as_secs_f64() * 1e3
            );
            let info = PeerInfo {
                addr: p.addr.to_string(),
                host: p.host.clone(),
            };
            Ok((Some(info), Given::default().with(p)))
        }
        FarEnd::Target { host, max_pps } => {
            let t = net::resolve_target(host, *max_pps).map_err(|e| usage(format!("{e:#}")))?;
            eprintln!(
                "opcost: ICMP echo to {} ({}), at most {} requests/s",
                t.name, t.addr, t.max_pps
            );
            Ok((None, Given::default().with(t)))
        }
    }
}

/// The findings of `ms`, their words settled with `earlier` runs of the
/// host (newest first; none: this run alone).
pub fn findings(ms: &[Measurement], earlier: &[RunDoc]) -> Vec<Finding> {
    use crate::analysis::history_words::{Earlier, findings_with_history};
    let earlier: Vec<Earlier> = earlier
        .iter()
        .map(|d| Earlier {
            results: &d.results,
            findings: &d.findings,
        })
        .collect();
    findings_with_history(ms, &earlier, suites::findings)
}

/// Refuses a matrix on a run that may use fewer than two CPUs (a cpuset
/// of one), saying which, before any benchmark runs.
fn matrix_needs_two(host: &Host) -> Result<(), String> {
    match host.topology.cpus.as_slice() {
        [_, _, ..] => Ok(()),
        [one] => Err(format!(
            "--matrix measures pairs of CPUs, and this run may use one (CPU {})",
            one.cpu
        )),
        [] => Err(
            "--matrix measures pairs of CPUs, and this machine's CPUs are unknown to the run"
                .into(),
        ),
    }
}

/// Refuses a `--dir` that is missing, not a directory or not writable.
fn check_dir(dir: &Path) -> anyhow::Result<()> {
    if !dir.exists() {
        return Err(usage(format!(
            "--dir {}: no such directory; create it first",
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(usage(format!("--dir {}: not a directory", dir.display())));
    }
    tempfile::tempfile_in(dir).map(drop).map_err(|e| {
        usage(format!(
            "--dir {}: not writable ({e}); choose a directory you can write to",
            dir.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five rounds planned and expected for every benchmark.
    const PLANNED: (usize, &dyn Fn(&str) -> f64) = (5, &|_| 5.0);

    /// An earlier run that recorded `wall` seconds per benchmark.
    fn earlier(wall: &[(&str, f64)]) -> RunDoc {
        let mut d = RunDoc::start(
            crate::host::Host::default(),
            Profile::Quick,
            None,
            None,
            chrono::Utc::now(),
        );
        d.run.wall_s = wall.iter().map(|(id, s)| (id.to_string(), *s)).collect();
        d
    }

    #[test]
    fn a_matrix_on_one_usable_cpu_is_refused_naming_it() {
        let mut tree = crate::host::fixtures::two_vcpu_guest();
        tree.allowed("1");
        let dir = tree.write();
        let e = matrix_needs_two(&Host::detect_at(dir.path())).unwrap_err();
        assert!(e.contains("this run may use one (CPU 1)"), "{e}");
        let dir = crate::host::fixtures::two_vcpu_guest().write();
        assert!(matrix_needs_two(&Host::detect_at(dir.path())).is_ok());
    }

    #[test]
    fn a_groups_shared_set_up_is_counted_once_whichever_members_are_selected() {
        use crate::harness::{Bench, PrepareError, Unit};
        use crate::suites::bench::FnBench;
        let member = |id: &str, key: &str| -> Box<dyn Bench> {
            FnBench::new(id, "x", Unit::Latency, |_| {
                Err(PrepareError::Skip("never prepared".into()))
            })
            .interleave(key)
            .group_setup_time(Duration::from_millis(10))
            .boxed()
        };
        let opts = RunOptions::fixed(Profile::Quick, None, None);
        let alone = |b: &dyn Bench| opts.expected_of(b);
        let shared = Duration::from_millis(10) * Profile::Quick.rounds() as u32;
        let all = [member("g.a", "g"), member("g.b", "g"), member("h.a", "h")];
        let each = expected_each(&all, &opts);
        assert_eq!(each[0], ("g.a", alone(all[0].as_ref()) + shared));
        assert_eq!(each[1], ("g.b", alone(all[1].as_ref())));
        assert_eq!(each[2], ("h.a", alone(all[2].as_ref()) + shared));
        // One member alone still spends the set-up.
        let one = [member("g.b", "g")];
        assert_eq!(
            expected_each(&one, &opts)[0].1,
            alone(one[0].as_ref()) + shared
        );
    }

    #[test]
    fn without_history_the_estimate_is_the_budgets() {
        let planned = [("a", Duration::from_secs(2)), ("b", Duration::from_secs(3))];
        let e = estimate(&planned, &[], PLANNED);
        assert_eq!(e.total, Duration::from_secs(5));
        assert_eq!((e.learned, e.of), (0, 2));
    }

    #[test]
    fn times_learned_on_this_host_replace_budgets_and_scale_the_rest() {
        // "a" took 3x its budget last time (its preparation, which the
        // budget leaves out): the newest run that measured it gives its
        // time, and "c", never measured here, is scaled alike.
        let planned = [
            ("a", Duration::from_secs(2)),
            ("b", Duration::from_secs(1)),
            ("c", Duration::from_secs(4)),
        ];
        let runs = [earlier(&[("a", 6.0)]), earlier(&[("a", 60.0), ("b", 3.0)])];
        let e = estimate(&planned, &runs, PLANNED);
        // a 6 (newest), b 3, c 4 x (9 / 3) = 12.
        assert!((e.total.as_secs_f64() - 21.0).abs() < 1e-9, "{e:?}");
        assert_eq!((e.learned, e.of), (2, 3));
    }

    #[test]
    fn the_estimate_follows_the_rounds_each_benchmark_will_take() {
        let planned = [("a", Duration::from_secs(5)), ("b", Duration::from_secs(5))];
        // "a" is expected to take 3 of its 5 rounds, "b" all five.
        let three_for_a = |id: &str| if id == "a" { 3.0 } else { 5.0 };
        let e = estimate(&planned, &[], (5, &three_for_a));
        assert!((e.total.as_secs_f64() - 8.0).abs() < 1e-9, "{e:?}");
        // An earlier run took 10 s for "a" in 5 rounds (it recorded none):
        // 3 rounds now take 6 s; "b", unlearned, is scaled like "a" was.
        let e = estimate(&planned, &[earlier(&[("a", 10.0)])], (5, &three_for_a));
        assert!((e.total.as_secs_f64() - 16.0).abs() < 1e-9, "{e:?}");
        // A run that recorded taking 3 rounds: its time is for 3 rounds.
        let mut run = earlier(&[("a", 6.0)]);
        let mut m = Measurement::point("a", "ns/op", 1.0);
        m.rounds_decision = Some(crate::harness::RoundsDecision {
            taken: 3,
            ..crate::harness::RoundsDecision::planned(5)
        });
        run.results.push(m);
        let e = estimate(&planned, &[run], PLANNED);
        // a: 6 s × 5/3 = 10; b: 5 × (6 / (5 × 3/5)) = 10.
        assert!((e.total.as_secs_f64() - 20.0).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn histories_gather_each_benchmarks_earlier_runs() {
        let mut a = earlier(&[]);
        let mut m = Measurement::point("x", "ns/op", 10.0);
        m.rounds = [9.0, 10.0, 11.0]
            .iter()
            .map(|&median| crate::harness::Round {
                median,
                used: true,
                ..Default::default()
            })
            .collect();
        a.results.push(m);
        let mut b = earlier(&[]);
        b.results.push(Measurement::point("x", "ns/op", 12.0));
        let h = crate::harness::row_histories([&a, &b].into_iter().flat_map(|d| &d.results));
        let x = &h["x"];
        assert_eq!(x.medians, vec![10.0, 12.0]);
        assert_eq!(x.rounds[0], vec![9.0, 10.0, 11.0]);
        assert!(x.round_sd().unwrap() > 0.05);
        assert!((x.half_spread().unwrap() - ((1.2f64).ln() / 2.0).exp_m1()).abs() < 1e-12);
    }

    #[test]
    fn one_odd_earlier_run_cannot_make_the_estimate_absurd() {
        let planned = [
            ("a", Duration::from_secs(1)),
            ("b", Duration::from_secs(10)),
        ];
        let e = estimate(&planned, &[earlier(&[("a", 1000.0)])], PLANNED);
        // a as measured; b at most 4x its budget.
        assert!((e.total.as_secs_f64() - 1040.0).abs() < 1e-9, "{e:?}");
        let e = estimate(&planned, &[earlier(&[("a", f64::NAN)])], PLANNED);
        assert_eq!(e.total, Duration::from_secs(11));
    }
}
