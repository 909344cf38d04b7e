//! `opcost ab PATTERN... --a-… --b-…`: the same benchmarks under two
//! settings, measured side by side, benchmark by benchmark.
//!
//! Why: a user testing a tunable (a CPU, an environment variable such as
//! `GLIBC_TUNABLES`, a wrapper such as `numactl` or `nice`, another build
//! of a library) wants the ratio of A and B without the machine's drift in
//! it. Two separate runs taken minutes apart mix the setting with whatever
//! the host did meanwhile, and so did rounds of the whole pattern taken in
//! turn (a benchmark's round of A and its round of B lay a whole round of
//! the pattern apart, longer than a shared machine's phases). Here one run
//! loop drives two sets of round workers, one per side, each started under
//! its setting (so settings that only act at exec time, like an environment
//! variable or a wrapper, apply), and measures round k of a benchmark on A
//! and on B back to back (which first, drawn from the run's seed): the two
//! rounds of a pair lie milliseconds apart, and the comparison is made from
//! the pairs ([`compare_paired`]).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};

use super::plan::{self, RunPlan};
use super::usage;
use crate::cli::{AbArgs, RunArgs};
use crate::compare::compare_paired;
use crate::document::RunDoc;
use crate::harness::round::Event;
use crate::harness::runner::{self, Side};
use crate::harness::worker::{Launch, WorkerCmd};
use crate::store::{Location, Store};

/// One side's setting.
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

/// Measures both settings side by side, benchmark by benchmark, saves the
/// two runs (unless `--no-save`) and prints their comparison (gated by
/// `--fail-on`).
pub fn execute(args: &AbArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    if args.format.is_dashboard() {
        return Err(super::usage(
            "--format bmf and github-benchmark describe one run, and ab prints a comparison: use --format json, or `opcost show RUN --format bmf` for either side",
        ));
    }
    let (a, b) = settings(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    crate::os::signals::on_ctrl_c(stop.clone(), Default::default());
    let run_args = RunArgs {
        patterns: args.patterns.clone(),
        profile: args.profile,
        rounds: Some(
            args.rounds
                .map_or(args.profile.rounds() as u32, |r| r)
                .max(2),
        ),
        // A fixed number of rounds a side: extra rounds for one side only
        // would have no pair.
        target_precision: Some(0.0),
        dir: args.dir.clone(),
        no_save: true,
        ..RunArgs::whole_machine()
    };
    let plan = RunPlan::from_args(&run_args)?;
    let tmp = plan::scratch_dir(args.dir.as_deref())?;
    let exe = crate::os::self_exe_for_others().context("finding the opcost executable")?;
    let mut sides = Vec::new();
    let mut hellos = Vec::new();
    for (setting, side) in [(&a, "A"), (&b, "B")] {
        check_setting(setting, &exe, side)?;
        let mut hello = plan.hello(&run_args, tmp.path());
        hello.cpu = setting.cpu;
        let workers = WorkerCmd {
            exe: exe.clone(),
            hello: serde_json::to_string(&hello)?,
            launch: setting.launch.clone(),
        };
        let benches = hello.benches(&plan.host)?;
        sides.push(Side {
            benches,
            workers: Some(workers),
        });
        hellos.push(hello);
    }
    let ctx = hellos[0].ctx(plan.host.clone(), tmp.path(), stop.clone());
    let opts = hellos[0].opts(plan.seed);
    let total = plan.budget(&opts) * 2;
    eprintln!(
        "opcost ab: {} benchmarks, {} rounds each of A ({}) and B ({}), each round of A next to its round of B, about {:.0} s",
        plan.benches.len(),
        opts.rounds(),
        a.describe(),
        b.describe(),
        total.as_secs_f64().ceil()
    );
    let started = chrono::Utc::now();
    let clock = Instant::now();
    let bar = super::run::progress_bar(total);
    let outcomes = runner::run_paired(sides, &ctx, &opts, &mut |_, ev| match ev {
        Event::Started(ids) => bar.set_message(ids.join(" ")),
        Event::Finished(_, budget) => bar.inc(budget.as_millis() as u64),
        Event::Result(..) => {}
    });
    bar.finish_and_clear();
    plan::sweep_swap();
    drop(tmp);
    let duration = clock.elapsed().as_secs_f64();
    let mut docs =
        outcomes
            .into_iter()
            .zip([(&a, "A"), (&b, "B")])
            .map(|(outcome, (setting, side))| {
                let label = Some(format!("ab {side}: {}", setting.describe()));
                let mut doc = RunDoc::start(
                    (*plan.host).clone(),
                    args.profile,
                    label,
                    setting.cpu,
                    started,
                );
                doc.host.settings = doc.host.settings.for_side(
                    &setting.launch.env,
                    setting.launch.wrap.as_deref(),
                    setting.cpu,
                );
                doc.run.order_seed = Some(opts.seed);
                doc.run.duration_s = duration;
                super::run::fill(&mut doc, outcome, &[]);
                doc
            });
    let (Some(mut run_a), Some(mut run_b)) = (docs.next(), docs.next()) else {
        unreachable!("two sides, two outcomes")
    };
    let interrupted = stop.load(Ordering::SeqCst) || run_a.run.interrupted || run_b.run.interrupted;
    if run_a.results.is_empty() || run_b.results.is_empty() {
        bail!("{}", nothing_measured(&run_a, &run_b, interrupted));
    }
    let mut copied = true;
    if !args.no_save {
        let targets = super::shared::targets(db)?;
        let mut store = Store::open(&targets.local)?;
        store.save_new(&mut run_a)?;
        store.save_new(&mut run_b)?;
        eprintln!(
            "saved A as run {} and B as run {} in {}",
            run_a.run.id,
            run_b.run.id,
            store.path().display()
        );
        if let Some(url) = &targets.shared {
            copied = super::shared::copy_to_shared(url, None, &[&run_a, &run_b], &targets.local);
        }
    }
    let c = compare_paired(&run_a, &run_b, args.threshold);
    super::quiet_broken_pipe();
    let passed = super::compare::print_gated(&c, &args.fail_on, args.format)?;
    Ok(if !copied || !passed {
        1
    } else if interrupted {
        130
    } else {
        0
    })
}

/// Why a side has no result: stopped, or every benchmark skipped (the
/// first reason given).
fn nothing_measured(a: &RunDoc, b: &RunDoc, interrupted: bool) -> String {
    if interrupted {
        return "stopped before both settings had a round; nothing to compare".to_string();
    }
    let why = [a, b]
        .iter()
        .zip(["A", "B"])
        .find_map(|(d, side)| {
            let s = d.skipped.first()?;
            (d.results.is_empty()).then(|| format!("setting {side}: {}: {}", s.id, s.reason))
        })
        .unwrap_or_default();
    format!("no benchmark was measured under both settings; {why}")
}

/// Starts opcost under the side's setting once (`--version`), so a wrapper
/// that cannot run opcost is named with its own message before any round.
fn check_setting(setting: &Setting, exe: &Path, side: &str) -> anyhow::Result<()> {
    if let Some(cpu) = setting.cpu {
        let allowed = crate::harness::affinity::allowed_cpus();
        if !allowed.contains(&cpu) {
            return Err(usage(format!(
                "--{}-cpu {cpu}: CPU {cpu} is not available to this process (allowed: {})",
                side.to_lowercase(),
                crate::harness::affinity::cpu_list(&allowed)
            )));
        }
    }
    let Some(wrap) = &setting.launch.wrap else {
        return Ok(());
    };
    let out = setting
        .launch
        .command(exe)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("starting the wrapper of setting {}", setting.describe()))?;
    let said = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && said.starts_with("opcost ") {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let how = match out.status.code() {
        Some(code) => format!("exit {code}"),
        None => "killed by a signal".to_string(),
    };
    Err(usage(format!(
        "the wrapper of setting {} ('{wrap}') did not run opcost ({how}): {}",
        setting.describe(),
        if last.is_empty() {
            "it printed nothing"
        } else {
            last.trim()
        }
    )))
}

/// The two settings from the flags; refused when they are the same.
fn settings(args: &AbArgs) -> anyhow::Result<(Setting, Setting)> {
    let a = Setting {
        cpu: args.a_cpu,
        launch: Launch {
            env: args.a_env.clone(),
            wrap: args.a_wrap.clone(),
        },
    };
    let b = Setting {
        cpu: args.b_cpu,
        launch: Launch {
            env: args.b_env.clone(),
            wrap: args.b_wrap.clone(),
        },
    };
    if a == b {
        return Err(usage(
            "settings A and B are the same; give at least one of --a-cpu/--b-cpu, --a-env/--b-env, --a-wrap/--b-wrap",
        ));
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

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
