//! `opcost ab PATTERN... --a-… --b-…`: the same benchmarks under two
//! settings, measured alternately, round by round.
//!
//! Why: a user testing a tunable (a CPU, an environment variable such as
//! `GLIBC_TUNABLES`, a wrapper such as `numactl` or `nice`) wants the ratio
//! of A and B without the machine's drift in it. Two separate runs taken
//! minutes apart mix the setting with whatever the host did meanwhile;
//! here each round of A is followed by a round of B (the order flipped
//! every other round), so a slow phase of the machine falls on both. Each
//! round is a child `opcost run --rounds 1` started under the setting (so
//! settings that only act at exec time, like an environment variable or a
//! wrapper, apply), and the rounds of each side are joined into one run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, bail};

use super::usage;
use crate::cli::AbArgs;
use crate::compare::compare_paired;
use crate::document::RunDoc;
use crate::harness::Measurement;
use crate::store::{Location, Store};
use crate::suites;

/// One side's setting.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Setting {
    /// `--cpu N` for the child.
    pub cpu: Option<usize>,
    /// Environment variables set for the child.
    pub env: Vec<(String, String)>,
    /// A command the child runs under (through /bin/sh).
    pub wrap: Option<String>,
}

impl Setting {
    /// The setting in words, for labels: `cpu=1 FOO=bar wrap='nice -n 5'`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpu {
            parts.push(format!("cpu={c}"));
        }
        parts.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
        if let Some(w) = &self.wrap {
            parts.push(format!("wrap='{w}'"));
        }
        if parts.is_empty() {
            "as is".to_string()
        } else {
            parts.join(" ")
        }
    }
}

/// Measures both settings alternately, saves the two runs (unless
/// `--no-save`) and prints their comparison.
pub fn execute(args: &AbArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    if args.format.is_dashboard() {
        return Err(super::usage(
            "--format bmf and github-benchmark describe one run, and ab prints a comparison: use --format json, or `opcost show RUN --format bmf` for either side",
        ));
    }
    let (a, b) = settings(args)?;
    let rounds = args
        .rounds
        .map_or(args.profile.rounds(), |r| r as usize)
        .max(2);
    // Each child is one round: the profile's samples shared out over the rounds.
    let samples = args.profile.samples().div_ceil(rounds).max(3);
    let exe = crate::os::self_exe().context("finding the opcost executable")?;
    let temp = std::env::temp_dir();
    let tmp = crate::harness::scratch::ScratchDir::new_in(&temp, "opcost-ab-")
        .with_context(|| format!("creating a temp dir in {}", temp.display()))?;
    let stop = Arc::new(AtomicBool::new(false));
    // The children see the same Ctrl-C and end their round themselves.
    crate::os::signals::on_ctrl_c(stop.clone(), Default::default());

    eprintln!(
        "opcost ab: {rounds} rounds each of A ({}) and B ({}), alternating",
        a.describe(),
        b.describe()
    );
    let child = Child {
        exe: &exe,
        args,
        samples,
        dir: tmp.path(),
        seed: fastrand::u64(..),
    };
    let sides = alternate(&child, [&a, &b], rounds, &stop)?;
    let interrupted = stop.load(Ordering::SeqCst);
    let [docs_a, docs_b] = sides;
    if docs_a.is_empty() || docs_b.is_empty() {
        bail!("stopped before both settings had a round; nothing to compare");
    }
    let mut run_a = join_rounds(docs_a, &a, "A");
    let mut run_b = join_rounds(docs_b, &b, "B");
    run_a.run.interrupted |= interrupted;
    run_b.run.interrupted |= interrupted;
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
    print!("{}", crate::report::render_comparison(&c, args.format)?);
    Ok(if !copied {
        1
    } else if interrupted {
        130
    } else {
        0
    })
}

/// The two settings from the flags; refused when they are the same.
fn settings(args: &AbArgs) -> anyhow::Result<(Setting, Setting)> {
    let a = Setting {
        cpu: args.a_cpu,
        env: args.a_env.clone(),
        wrap: args.a_wrap.clone(),
    };
    let b = Setting {
        cpu: args.b_cpu,
        env: args.b_env.clone(),
        wrap: args.b_wrap.clone(),
    };
    if a == b {
        return Err(usage(
            "settings A and B are the same; give at least one of --a-cpu/--b-cpu, --a-env/--b-env, --a-wrap/--b-wrap",
        ));
    }
    Ok((a, b))
}

/// How a round of either side is started.
struct Child<'a> {
    exe: &'a Path,
    args: &'a AbArgs,
    samples: usize,
    /// Where each round writes its JSON.
    dir: &'a Path,
    /// The order seed of round 0; round k uses `seed + k` on both sides.
    seed: u64,
}

/// Runs `rounds` rounds of each setting, A and B alternating (the order
/// flipped every other round), until done or stopped; returns each side's
/// round documents.
fn alternate(
    child: &Child<'_>,
    settings: [&Setting; 2],
    rounds: usize,
    stop: &AtomicBool,
) -> anyhow::Result<[Vec<RunDoc>; 2]> {
    let mut sides: [Vec<RunDoc>; 2] = [Vec::new(), Vec::new()];
    'rounds: for r in 0..rounds {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            if stop.load(Ordering::SeqCst) {
                break 'rounds;
            }
            let json = child.dir.join(format!("r{r}-{side}.json"));
            // Both sides of a round measure their benchmarks in one order,
            // so each benchmark's A and B lie one child apart in time.
            let seed = child.seed.wrapping_add(r as u64);
            let code = run_child(child, settings[side], seed, &json)?;
            if !json.exists() {
                break 'rounds; // stopped before anything was written
            }
            sides[side].push(RunDoc::read_json(&json)?);
            if code == 130 {
                break 'rounds;
            }
        }
    }
    Ok(sides)
}

/// Runs one round of one side as a child and returns its exit code; a
/// child that refuses its arguments (a pattern that matches nothing, a CPU
/// that does not exist, a wrapper that is not found) is a usage error.
fn run_child(child: &Child<'_>, setting: &Setting, seed: u64, json: &Path) -> anyhow::Result<i32> {
    let (exe, args, samples) = (child.exe, child.args, child.samples);
    let mut run_args: Vec<String> = vec!["run".into()];
    run_args.extend(args.patterns.iter().cloned());
    run_args.extend(
        [
            "--profile",
            args.profile.name(),
            "--rounds",
            "1",
            "--no-save",
            "--format",
            "json",
        ]
        .map(String::from),
    );
    run_args.push("--samples".into());
    run_args.push(samples.to_string());
    run_args.push("--json".into());
    run_args.push(json.display().to_string());
    run_args.push("--seed".into());
    run_args.push(seed.to_string());
    if let Some(c) = setting.cpu {
        run_args.push("--cpu".into());
        run_args.push(c.to_string());
    }
    if let Some(d) = &args.dir {
        run_args.push("--dir".into());
        run_args.push(d.display().to_string());
    }
    let mut cmd = match &setting.wrap {
        // The wrapper is a shell command line; opcost and its arguments follow it.
        Some(w) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c")
                .arg(format!("{w} \"$@\""))
                .arg("opcost-ab")
                .arg(exe);
            c
        }
        None => Command::new(exe),
    };
    // ab killed outright stops its round's child too, which cleans up.
    crate::os::child::dies_with_parent(&mut cmd, libc::SIGINT);
    cmd.args(&run_args)
        .envs(setting.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let out = cmd
        .output()
        .with_context(|| format!("starting {}", exe.display()))?;
    let code = out.status.code().unwrap_or(1);
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| l.starts_with("error:") || !l.trim().is_empty())
        .unwrap_or("")
        .to_string();
    match code {
        0 | 130 => Ok(code),
        2 => Err(usage(format!(
            "setting {}: {}",
            setting.describe(),
            last.trim_start_matches("error: ")
        ))),
        126 | 127 if setting.wrap.is_some() => Err(usage(format!(
            "the wrapper of setting {} could not be run: {last}",
            setting.describe()
        ))),
        _ => bail!(
            "the round under setting {} failed (exit {code}): {last}",
            setting.describe()
        ),
    }
}

/// One run of a side: the rounds of its children joined per benchmark.
fn join_rounds(docs: Vec<RunDoc>, setting: &Setting, side: &str) -> RunDoc {
    let mut docs = docs.into_iter();
    let Some(mut run) = docs.next() else {
        unreachable!("join_rounds is called with at least one document")
    };
    let rest: Vec<RunDoc> = docs.collect();
    let mut results = Vec::new();
    for m in &run.results {
        let parts: Vec<Measurement> = std::iter::once(m.clone())
            .chain(
                rest.iter()
                    .filter_map(|d| d.results.iter().find(|x| x.id == m.id).cloned()),
            )
            .collect();
        results.push(Measurement::merge_rounds(&parts).unwrap_or_else(|| m.clone()));
    }
    run.run.duration_s += rest.iter().map(|d| d.run.duration_s).sum::<f64>();
    run.run.interrupted |= rest.iter().any(|d| d.run.interrupted);
    run.run.label = Some(format!("ab {side}: {}", setting.describe()));
    run.run.cpu = setting.cpu;
    // The least stable round speaks for the side.
    run.stability = std::iter::once(run.stability.take())
        .chain(rest.iter().map(|d| d.stability.clone()))
        .flatten()
        .max_by(|x, y| (x.grade().cmp(&y.grade())).then(x.spread.total_cmp(&y.spread)));
    run.findings = suites::findings(&results);
    run.findings.retain(|f| f.value.is_finite());
    run.results = results;
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_describe_themselves() {
        let s = Setting {
            cpu: Some(1),
            env: vec![("FOO".into(), "bar".into())],
            wrap: Some("nice -n 5".into()),
        };
        assert_eq!(s.describe(), "cpu=1 FOO=bar wrap='nice -n 5'");
        assert_eq!(Setting::default().describe(), "as is");
    }
}
