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

use super::usage;
use crate::analysis::compare::compare_paired;
use crate::cli::AbArgs;
use crate::document::RunDoc;
use crate::harness::round::Event;
use crate::harness::runner::{self, Side};
use crate::harness::worker::WorkerCmd;
use crate::plan::{self, RunPlan, Setting};
use crate::store::{Location, Store};

/// Measures both settings side by side, benchmark by benchmark, saves the
/// two runs (unless `--no-save`) and prints their comparison (gated by
/// `--fail-on`).
pub fn execute(args: &AbArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    let req = super::request::ab(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    crate::os::signals::on_ctrl_c(stop.clone(), Default::default());
    let plan = RunPlan::new(req.run.clone())?;
    let tmp = plan::scratch_dir(req.run.dir.as_deref())?;
    let exe = crate::os::self_exe_for_others().context("finding the opcost executable")?;
    let mut sides = Vec::new();
    let mut hellos = Vec::new();
    for (setting, side) in [(&req.a, "A"), (&req.b, "B")] {
        check_setting(setting, &exe, side)?;
        let mut hello = plan.hello(tmp.path());
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
    let ctx = plan.ctx(&hellos[0], tmp.path(), stop.clone());
    let opts = hellos[0].opts(plan.seed);
    let total = plan.budget(&opts) * 2;
    eprintln!(
        "opcost ab: {} benchmarks, {} rounds each of A ({}) and B ({}), each round of A next to its round of B, about {:.0} s",
        plan.benches.len(),
        opts.rounds(),
        req.a.describe(),
        req.b.describe(),
        total.as_secs_f64().ceil()
    );
    let started = chrono::Utc::now();
    let clock = Instant::now();
    let bar = super::progress_bar(total);
    let outcomes = runner::run_paired(sides, &ctx, &opts, &mut |_, ev| match ev {
        Event::Started(ids) => bar.set_message(ids.join(" ")),
        Event::Finished(_, budget) => bar.inc(budget.as_millis() as u64),
        Event::Result(..) => {}
    });
    bar.finish_and_clear();
    plan::sweep_swap();
    drop(tmp);
    let duration = clock.elapsed().as_secs_f64();
    let mut docs = outcomes
        .into_iter()
        .zip([(&req.a, "A"), (&req.b, "B")])
        .map(|(outcome, (setting, side))| {
            let mut doc = plan.document(started);
            doc.run.label = Some(format!("ab {side}: {}", setting.describe()));
            doc.run.cpu = setting.cpu;
            doc.host.settings = doc.host.settings.for_side(
                &setting.launch.env,
                setting.launch.wrap.as_deref(),
                setting.cpu,
            );
            doc.run.duration_s = duration;
            doc.fill(outcome, crate::suites::findings);
            doc
        });
    let (Some(mut run_a), Some(mut run_b)) = (docs.next(), docs.next()) else {
        unreachable!("two sides, two outcomes")
    };
    let interrupted = stop.load(Ordering::SeqCst) || run_a.run.interrupted || run_b.run.interrupted;
    if run_a.results.is_empty() || run_b.results.is_empty() {
        bail!("{}", nothing_measured(&run_a, &run_b, interrupted));
    }
    let copied = !req.save || save(db, &mut run_a, &mut run_b)?;
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

/// Saves the two runs in the history, and in the shared one when there is
/// one; false when the copy to the shared history failed.
fn save(db: Option<&Location>, run_a: &mut RunDoc, run_b: &mut RunDoc) -> anyhow::Result<bool> {
    let targets = super::shared::targets(db)?;
    let mut store = Store::open(&targets.local)?;
    store.save_new(run_a)?;
    store.save_new(run_b)?;
    eprintln!(
        "saved A as run {} and B as run {} in {}",
        run_a.run.id,
        run_b.run.id,
        store.path().display()
    );
    Ok(match &targets.shared {
        Some(url) => super::shared::copy_to_shared(url, None, &[run_a, run_b], &targets.local),
        None => true,
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
