//! `opcost cmd`: whole programs timed as processes, net of a baseline.
//!
//! Each command runs alternately with its baseline (B C, C B, B C...), so
//! drift and a neighbour's burst fall on both alike; the net figure of a
//! run pair is its difference, and the result is the median of those
//! differences with the distribution-free CI of that median (the pairs are
//! the samples). Without `--runs`, a command runs for a few seconds, and
//! one with a baseline goes on (to a longer limit) while that CI still
//! spans zero. In `--shell` mode the start-up of `/bin/sh -c ''` is
//! measured first and subtracted from every run, as hyperfine does.
//!
//! The untimed commands around the runs (`--setup` once before a command's
//! runs, `--prepare` before every run, `--conclude` after every run,
//! `--cleanup` once after) are started as the commands are, in their own
//! process group, and must exit 0: a failing one stops the measurement
//! (whatever `-i` says), since the runs after it would time the wrong work.

pub mod child;
pub mod plan;
pub mod render;

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::claims::{Est, TrendKind, trend};
use crate::harness::warnings::Warning;
use crate::harness::{Finding, Measurement, Params, Unit, area_of};
use crate::stats::{Summary, median};

use crate::units::ValueUnit;
use child::{Exit, Launch, SpawnError, Usage};
use plan::{Hook, Spec};

/// How long each command is measured when `--runs` is not given.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(3);
/// How long a command with a baseline goes on past [`DEFAULT_BUDGET`]
/// while the CI of its net figure still spans zero (the work is small
/// next to the start-up's scatter, e.g. a JIT runtime), when `--runs` is
/// not given.
pub const UNRESOLVED_BUDGET: Duration = Duration::from_secs(12);
/// Fewest run pairs when `--runs` is not given.
pub const MIN_RUNS: u32 = 10;
/// Most run pairs when `--runs` is not given.
pub const MAX_AUTO_RUNS: u32 = 10_000;
/// Runs of the empty shell command measured in `--shell` mode.
pub const SHELL_RUNS: u32 = 50;

/// How every command is measured.
#[derive(Clone, Debug)]
pub struct Options {
    /// Unmeasured runs of the command (and of its baseline) first.
    pub warmup: u32,
    /// Exactly this many run pairs; otherwise at least [`MIN_RUNS`] and
    /// as many as fit in [`DEFAULT_BUDGET`].
    pub runs: Option<u32>,
    /// Accept non-zero exits and deaths by signal.
    pub ignore_failure: bool,
    /// Measure and subtract the start-up of `/bin/sh -c ''`.
    pub shell: Option<Launch>,
}

/// Why measuring stopped early.
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    /// The command or baseline could not be started (exit 2).
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// A run failed (exit 1).
    #[error("{0}")]
    Failed(String),
}

/// The runs of one command and its baseline.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// What was run.
    pub spec: Spec,
    /// The command's runs, shell start-up subtracted.
    pub runs: Vec<Usage>,
    /// The baseline's runs, paired with `runs` by index.
    pub base: Vec<Usage>,
    /// Shell start-up subtracted from every run (zeros outside `--shell`).
    pub shell: Startup,
}

/// The median cost of starting the shell, subtracted in `--shell` mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct Startup {
    /// Wall-clock, ns.
    pub wall: f64,
    /// User CPU, ns.
    pub user: f64,
    /// System CPU, ns.
    pub sys: f64,
}

/// Measures the empty shell command: the start-up every `--shell` run pays.
pub fn shell_startup(sh: &Launch) -> Result<Startup, CmdError> {
    let mut runs = Vec::new();
    for i in 0..SHELL_RUNS + 3 {
        let u = child::run_once(sh)?;
        if !u.exit.success() {
            return Err(CmdError::Failed(format!(
                "the empty shell command '/bin/sh -c \"\"' {}",
                u.exit.describe()
            )));
        }
        if i >= 3 {
            runs.push(u);
        }
        if child::stopped() {
            break;
        }
    }
    let med = |f: fn(&Usage) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
    Ok(Startup {
        wall: med(|u| u.wall),
        user: med(|u| u.user),
        sys: med(|u| u.sys),
    })
}

/// Runs an untimed command for the run of `line`; false when the user
/// pressed Ctrl-C during it, an error when it did not exit 0.
fn run_hook(h: &Hook, line: &str) -> Result<bool, CmdError> {
    let u = child::run_once(&h.run)?;
    match u.exit {
        Exit::Interrupted => Ok(false),
        Exit::Code(0) => Ok(true),
        Exit::TimedOut => Err(CmdError::Failed(format!(
            "{} '{}' (for '{line}') ran past the --timeout of {:.3} s; its process group was killed",
            h.flag,
            h.line,
            h.run.timeout.unwrap_or_default().as_secs_f64()
        ))),
        e => Err(CmdError::Failed(format!(
            "{} '{}' (for '{line}') {}; nothing was measured after it",
            h.flag,
            h.line,
            e.describe()
        ))),
    }
}

/// Runs one command and its baseline, interleaved, between its `--setup`
/// and `--cleanup`; stops early (keeping what is done) when the user
/// presses Ctrl-C. The clean-up runs even when a run failed.
pub fn measure(
    spec: &Spec,
    opts: &Options,
    shell: Startup,
    progress: &mut dyn FnMut(u32),
) -> Result<Outcome, CmdError> {
    let mut out = Outcome {
        spec: spec.clone(),
        runs: Vec::new(),
        base: Vec::new(),
        shell,
    };
    if let Some(h) = &spec.hooks.setup
        && !run_hook(h, &spec.command)?
    {
        return Ok(out);
    }
    let runs = measure_runs(spec, opts, shell, progress, &mut out);
    let cleanup = match &spec.hooks.cleanup {
        Some(h) if !child::stopped() => run_hook(h, &spec.command).map(drop),
        _ => Ok(()),
    };
    runs?;
    cleanup?;
    Ok(out)
}

/// The warm-up and measured runs of [`measure`], into `out`.
fn measure_runs(
    spec: &Spec,
    opts: &Options,
    shell: Startup,
    progress: &mut dyn FnMut(u32),
    out: &mut Outcome,
) -> Result<(), CmdError> {
    let once = |l: &Launch, line: &str, what: &str| -> Result<Option<Usage>, CmdError> {
        if let Some(h) = &spec.hooks.prepare
            && !run_hook(h, line)?
        {
            return Ok(None);
        }
        let mut u = child::run_once(l)?;
        match u.exit {
            Exit::Interrupted => return Ok(None),
            Exit::TimedOut => {
                return Err(CmdError::Failed(format!(
                    "{what} '{line}' ran past the --timeout of {:.3} s; its process group was killed",
                    l.timeout.unwrap_or_default().as_secs_f64()
                )));
            }
            Exit::Code(127) if opts.shell.is_some() => {
                return Err(CmdError::Failed(format!(
                    "{what} '{line}' exited with status 127: the shell could not find or run it"
                )));
            }
            e if !e.success() && !opts.ignore_failure => {
                return Err(CmdError::Failed(format!(
                    "{what} '{line}' {}; use -i to ignore failures",
                    e.describe()
                )));
            }
            _ => {}
        }
        u.wall = (u.wall - shell.wall).max(0.0);
        u.user = (u.user - shell.user).max(0.0);
        u.sys = (u.sys - shell.sys).max(0.0);
        if let Some(h) = &spec.hooks.conclude
            && !run_hook(h, line)?
        {
            return Ok(None);
        }
        Ok(Some(u))
    };
    let base = spec.base.as_ref().zip(spec.baseline.as_deref());
    for _ in 0..opts.warmup {
        if let Some((l, line)) = base
            && once(l, line, "the baseline")?.is_none()
        {
            return Ok(());
        }
        if once(&spec.run, &spec.command, "the command")?.is_none() {
            return Ok(());
        }
    }
    let start = Instant::now();
    let mut i: u32 = 0;
    loop {
        let enough = match opts.runs {
            Some(n) => i >= n,
            None => {
                let t = start.elapsed();
                i >= MAX_AUTO_RUNS
                    || (i >= MIN_RUNS
                        && t >= DEFAULT_BUDGET
                        && (t >= UNRESOLVED_BUDGET || out.net_resolved()))
            }
        };
        if enough || child::stopped() {
            break;
        }
        // Alternate the order so that neither side always runs second.
        let (c, b) = if let Some((l, line)) = base {
            if i.is_multiple_of(2) {
                let b = once(l, line, "the baseline")?;
                let c = once(&spec.run, &spec.command, "the command")?;
                (c, b)
            } else {
                let c = once(&spec.run, &spec.command, "the command")?;
                let b = once(l, line, "the baseline")?;
                (c, b)
            }
        } else {
            (once(&spec.run, &spec.command, "the command")?, None)
        };
        match (c, b, base.is_some()) {
            (Some(c), Some(b), true) => {
                out.runs.push(c);
                out.base.push(b);
            }
            (Some(c), None, false) => out.runs.push(c),
            _ => break, // interrupted: the unfinished pair is dropped
        }
        i += 1;
        progress(i);
    }
    Ok(())
}

impl Outcome {
    /// Runs that exited non-zero or died (counted when `-i` let them pass).
    fn failures(&self) -> usize {
        self.runs
            .iter()
            .chain(&self.base)
            .filter(|u| !u.exit.success())
            .count()
    }

    /// True when the 95% CI of the net wall-clock excludes zero, or there
    /// is no baseline (nothing to resolve).
    fn net_resolved(&self) -> bool {
        self.base.is_empty()
            || Summary::of(&self.net(|u| u.wall)).is_some_and(|s| s.ci_low > 0.0 || s.ci_high < 0.0)
    }

    /// Per-pair values of one figure: command minus baseline, or the command alone.
    pub fn net(&self, f: fn(&Usage) -> f64) -> Vec<f64> {
        if self.base.is_empty() {
            self.runs.iter().map(f).collect()
        } else {
            self.runs
                .iter()
                .zip(&self.base)
                .map(|(c, b)| f(c) - f(b))
                .collect()
        }
    }

    /// Median of one figure over the command's runs.
    pub fn gross(&self, f: fn(&Usage) -> f64) -> Option<f64> {
        median(&self.runs.iter().map(f).collect::<Vec<_>>())
    }

    /// Median of one figure over the baseline's runs.
    pub fn baseline(&self, f: fn(&Usage) -> f64) -> Option<f64> {
        median(&self.base.iter().map(f).collect::<Vec<_>>())
    }

    /// The results: net wall-clock (`ID`), net user and system CPU
    /// (`ID.user`, `ID.sys`, same parameters); none when no run finished.
    pub fn measurements(&self) -> Vec<Measurement> {
        let s = &self.spec;
        let details = json!({
            "command": s.command,
            "baseline": s.baseline,
            "runs": self.runs.len(),
            "shell_startup_ns": (self.shell.wall > 0.0).then_some(self.shell.wall),
            "gross_wall_ns": self.gross(|u| u.wall),
            "baseline_wall_ns": self.baseline(|u| u.wall),
            "max_rss_bytes": self.gross(|u| u.max_rss),
            "baseline_max_rss_bytes": self.baseline(|u| u.max_rss),
            "failed_runs": self.failures(),
            "cwd": s.run.cwd.as_ref().map(|d| d.display().to_string()),
            "hooks": s.hooks.details(),
        });
        let with_suffix = |suffix: &str| match s.id.split_once('/') {
            Some((head, tail)) => format!("{head}{suffix}/{tail}"),
            None => format!("{}{suffix}", s.id),
        };
        let mut out = Vec::new();
        for (i, (id, f)) in [
            (s.id.clone(), (|u: &Usage| u.wall) as fn(&Usage) -> f64),
            (with_suffix(".user"), |u: &Usage| u.user),
            (with_suffix(".sys"), |u: &Usage| u.sys),
        ]
        .into_iter()
        .enumerate()
        {
            let samples = self.net(f);
            let mut warns = Vec::new();
            if self.failures() > 0 {
                warns.push(Warning::FailedRuns {
                    failed: self.failures(),
                    runs: self.runs.len() + self.base.len(),
                });
            }
            if let Some(sum) = Summary::of(&samples)
                && !self.base.is_empty()
                && sum.ci_low <= 0.0
                && i == 0
            {
                warns.push(Warning::NetUnresolved {
                    ci_low: sum.ci_low,
                    ci_high: sum.ci_high,
                });
            }
            if let Some(m) = measurement(&id, s.params(), samples, warns, Some(details.clone())) {
                out.push(m);
            }
        }
        out
    }
}

/// Builds a result from per-run samples (ns per run, one run per sample):
/// the one place a `cmd` result is made.
fn measurement(
    id: &str,
    params: Params,
    samples: Vec<f64>,
    mut warnings: Vec<Warning>,
    details: Option<serde_json::Value>,
) -> Option<Measurement> {
    let s = Summary::of(&samples)?;
    let noisy = s.is_noisy();
    warnings.extend(Warning::noise_of(&s));
    Some(Measurement {
        id: id.to_string(),
        area: area_of(id).to_string(),
        unit: Unit::Latency.base(),
        bytes_per_op: None,
        params,
        summary: s,
        ops_per_sample: 1,
        overhead: None,
        noisy,
        warnings: warnings.iter().map(ToString::to_string).collect(),
        per_op: None,
        details,
        rounds: Vec::new(),
        rounds_decision: None,
        between_runs: None,
        samples,
    })
}

/// Findings: for each scanned command, the slope of its net time against
/// the parameter with its interval (weighted by each point's CI), the word
/// ("grows", "stays flat", "shows no clear trend") decided by that
/// interval, and how straight the line is (R²); for
/// each command with a baseline, the share of its time the baseline takes.
pub fn findings(outcomes: &[Outcome]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut templates: Vec<&str> = Vec::new();
    for o in outcomes {
        if o.spec.point.is_some() && !templates.contains(&o.spec.template.as_str()) {
            templates.push(&o.spec.template);
        }
    }
    for t in templates {
        // Each point's net time with the CI of its median: the slope's
        // interval, and so the word, comes from them.
        let pts: Vec<(f64, Est)> = outcomes
            .iter()
            .filter(|o| o.spec.template == t)
            .filter_map(|o| {
                let (_, v) = o.spec.point.as_ref()?;
                let s = Summary::of(&o.net(|u| u.wall))?;
                Some((*v as f64, Est::cost(s.median, s.ci_low, s.ci_high)))
            })
            .collect();
        let medians: Vec<(f64, f64)> = pts.iter().map(|(x, e)| (*x, e.value)).collect();
        let (Some(tr), Some((_, r2))) = (trend(&pts, SCAN_MATERIAL), fit(&medians)) else {
            continue;
        };
        let name = &outcomes
            .iter()
            .find(|o| o.spec.template == t)
            .and_then(|o| o.spec.point.clone())
            .map(|p| p.0)
            .unwrap_or_default();
        let (lo, hi) = (pts[0].0, pts[pts.len() - 1].0);
        let verb = match tr.kind {
            TrendKind::Grows => "grows",
            TrendKind::Falls => "falls",
            TrendKind::Flat => "stays flat",
            TrendKind::Unclear => "shows no clear trend",
        };
        out.push(Finding {
            area: "cmd".into(),
            text: format!(
                "'{t}': the net time {verb} with {name}: {} per unit of {name} (weighted least squares over {name} = {lo}…{hi}, {} points, R² {r2:.4})",
                tr.slope_text(1.0, crate::units::human_ns),
                pts.len()
            ),
            value: tr.slope,
            unit: ValueUnit::Ns,
        });
    }
    for o in outcomes.iter().filter(|o| o.spec.point.is_none()) {
        let (Some(b), Some(g), Some(net)) = (
            o.baseline(|u| u.wall),
            o.gross(|u| u.wall),
            Summary::of(&o.net(|u| u.wall)),
        ) else {
            continue;
        };
        if g > 0.0 {
            out.push(Finding {
                area: "cmd".into(),
                text: format!(
                    "'{}': its baseline '{}' is {:.0}% of its run time; {}",
                    o.spec.command,
                    o.spec.baseline.as_deref().unwrap_or(""),
                    b / g * 100.0,
                    work_text(o, &net)
                ),
                value: b / g,
                unit: ValueUnit::Ratio,
            });
        }
    }
    out
}

/// What the work of a command beyond its baseline is, as the 95% CI of
/// the median paired difference allows: a cost only when the interval
/// lies above zero. An interval that holds zero allows anything from
/// nothing to its upper end, and says why (how much the baseline itself
/// varies between runs); one below zero means the baseline costs more than
/// the command's own start-up. A negative net time is never given as the
/// work.
fn work_text(o: &Outcome, net: &Summary) -> String {
    use crate::units::human_ns;
    let ci = format!(
        "95% CI of the median paired difference {} … {}",
        human_ns(net.ci_low),
        human_ns(net.ci_high)
    );
    let spread = |runs: &[Usage]| {
        let walls: Vec<f64> = runs.iter().map(|u| u.wall).collect();
        let q = |p| crate::stats::quantile(&walls, p).unwrap_or(0.0);
        q(0.75) - q(0.25)
    };
    if net.ci_low > 0.0 {
        format!("the work itself is {} ({ci})", human_ns(net.median))
    } else if net.ci_high < 0.0 {
        format!(
            "the command took less time than its baseline ({ci}): the baseline costs more than this command's own start-up, so the work cannot be told from it; choose a baseline that does only what the command does before its work"
        )
    } else {
        format!(
            "the work itself is within the baseline's noise: between 0 and {} ({ci}, which holds zero), as the baseline alone varies by {} between its runs and the command by {} (interquartile ranges); more --runs or more work narrow it",
            human_ns(net.ci_high),
            human_ns(spread(&o.base)),
            human_ns(spread(&o.runs))
        )
    }
}

/// The smallest change of a scan's net time over its range, relative to its
/// start, worth "grows" or "falls"; a scan whose slope's interval keeps the
/// change within it "stays flat".
const SCAN_MATERIAL: f64 = 0.10;

/// Slope and R² of the least-squares line through the points; `None` for
/// fewer than 2 distinct x values.
pub fn fit(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy == 0.0 {
        1.0
    } else {
        sxy * sxy / (sxx * syy)
    };
    Some((slope, r2))
}

/// Fails with the first error of a measurement, mapped to the exit codes:
/// a command that cannot start is the user's mistake.
pub fn into_anyhow(e: CmdError) -> anyhow::Error {
    match e {
        CmdError::Spawn(SpawnError::Other(e)) => e,
        CmdError::Spawn(e) => crate::error::usage(e.to_string()),
        CmdError::Failed(m) => anyhow::anyhow!(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_fits_exactly() {
        let (slope, r2) = fit(&[(1.0, 12.0), (2.0, 14.0), (4.0, 18.0)]).unwrap();
        assert!((slope - 2.0).abs() < 1e-12);
        assert!((r2 - 1.0).abs() < 1e-12);
        assert!(fit(&[(1.0, 1.0)]).is_none());
        assert!(fit(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }

    /// The one command spec that the words `words` plan.
    fn spec_of(words: &str) -> plan::Spec {
        plan::expand(&plan::Request {
            words: vec![words.into()],
            ..Default::default()
        })
        .unwrap()
        .remove(0)
    }

    /// `spec` measured with `warmup` unmeasured and `runs` measured run
    /// pairs, no shell start-up to subtract.
    fn measure_runs(
        spec: &Spec,
        warmup: u32,
        runs: u32,
        ignore_failure: bool,
    ) -> Result<Outcome, CmdError> {
        let opts = Options {
            warmup,
            runs: Some(runs),
            ignore_failure,
            shell: None,
        };
        measure(spec, &opts, Startup::default(), &mut |_| {})
    }

    /// A scan over n = 1, 4, 7 whose runs take `wall(n, i)` ns (no baseline).
    fn scan(wall: impl Fn(i64, usize) -> f64) -> Vec<Outcome> {
        let specs = plan::expand(&plan::Request {
            words: vec!["sleep {n}".into()],
            scan: Some(plan::Scan::parse(&["n".into(), "1".into(), "7".into()], 3).unwrap()),
            ..Default::default()
        })
        .unwrap();
        specs
            .into_iter()
            .map(|spec| {
                let n = spec.point.as_ref().unwrap().1;
                let runs = (0..20)
                    .map(|i| Usage {
                        wall: wall(n, i),
                        user: 0.0,
                        sys: 0.0,
                        max_rss: 0.0,
                        exit: child::Exit::Code(0),
                    })
                    .collect();
                Outcome {
                    spec,
                    runs,
                    base: Vec::new(),
                    shell: Startup::default(),
                }
            })
            .collect()
    }

    #[test]
    fn a_scan_grows_or_stays_flat_by_the_interval_of_its_slope() {
        // 1 ms per unit of n, each run off by up to ±1%.
        let jitter = |i: usize| 1.0 + 0.02 * ((i * 7 % 20) as f64 / 20.0 - 0.5);
        let f = findings(&scan(|n, i| (1e6 + 1e6 * n as f64) * jitter(i)));
        assert_eq!(f.len(), 1);
        f[0].assert_starts_with("'sleep {n}': the net time grows with n: ");
        f[0].assert_says("per unit of n");
        assert!((f[0].value - 1e6).abs() < 5e4, "{}", f[0].value);
        // The same cost at every n: flat, whatever the noise.
        let f = findings(&scan(|_, i| 5e6 * jitter(i)));
        f[0].assert_says("the net time stays flat with n");
        // Runs scattered by ±50%: no clear trend.
        let wild = |i: usize| 1.0 + ((i * 7 % 20) as f64 / 20.0 - 0.5);
        let f = findings(&scan(|n, i| (5e6 + 1e5 * n as f64) * wild(i)));
        f[0].assert_says("shows no clear trend with n");
    }

    /// A command and its baseline whose runs take `cmd(i)` and `base(i)` ns.
    fn paired(cmd: impl Fn(usize) -> f64, base: impl Fn(usize) -> f64) -> Outcome {
        let usage = |wall: f64| Usage {
            wall,
            user: 0.0,
            sys: 0.0,
            max_rss: 0.0,
            exit: child::Exit::Code(0),
        };
        Outcome {
            spec: spec_of("python3 -c 'sum(range(10**6))' ::: python3 -c ''"),
            runs: (0..20).map(|i| usage(cmd(i))).collect(),
            base: (0..20).map(|i| usage(base(i))).collect(),
            shell: Startup::default(),
        }
    }

    #[test]
    fn a_baseline_that_varies_more_than_the_work_gives_no_negative_work() {
        // A shim's start-up (pyenv's `python3`): 230 ms give or take 30 ms
        // from run to run, spread evenly and independently for the command
        // and its baseline; the work is 2 ms.
        let startup = |k: usize, step: f64| 230e6 + 60e6 * (k as f64 * step).fract() - 30e6;
        let o = paired(|i| startup(i, 0.618) + 2e6, |i| startup(i, 0.732));
        let net = Summary::of(&o.net(|u| u.wall)).unwrap();
        assert!(
            net.median < 0.0,
            "the case: a negative median net {}",
            net.median
        );
        assert!(net.ci_low < 0.0 && net.ci_high > 0.0);
        let startup = |k: usize| startup(k, 0.732);
        let f = findings(std::slice::from_ref(&o));
        f[0].assert_says("the work itself is within the baseline's noise: between 0 and ");
        f[0].assert_says("as the baseline alone varies by ");
        assert!(!f[0].text.contains("is -"), "{}", f[0].text);
        // A command faster than its baseline: the baseline is named as the problem.
        let o = paired(|i| startup(i) - 50e6, startup);
        let f = findings(std::slice::from_ref(&o));
        f[0].assert_says("the command took less time than its baseline");
        assert!(!f[0].text.contains("the work itself is"), "{}", f[0].text);
        let warned = o.measurements()[0].warnings.join(" ");
        assert!(warned.contains("lies below zero"), "{warned}");
        // Work well above the noise is a cost, with its interval.
        let o = paired(|i| startup(i) + 100e6, startup);
        let f = findings(std::slice::from_ref(&o));
        f[0].assert_says("the work itself is 100 ms (95% CI of the median paired difference");
    }

    #[test]
    fn paired_runs_give_net_samples() {
        let spec = spec_of("true ::: true");
        let o = measure_runs(&spec, 1, 6, false).unwrap();
        assert_eq!((o.runs.len(), o.base.len()), (6, 6));
        let ms = o.measurements();
        let ids: Vec<&str> = ms.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["cmd.true", "cmd.true.user", "cmd.true.sys"]);
        assert_eq!(ms[0].samples.len(), 6);
        assert!(ms[0].samples.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn prepare_runs_before_every_run_and_the_hooks_around_them() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let mut r = plan::Request {
            words: vec!["true ::: true".into()],
            shell: true,
            cwd: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        r.hooks = plan::HookLines {
            setup: Some("echo setup >> log".into()),
            prepare: Some("echo prepare >> log".into()),
            conclude: Some("echo conclude >> log".into()),
            cleanup: Some("echo cleanup >> log".into()),
        };
        let spec = plan::expand(&r).unwrap().remove(0);
        let o = measure_runs(&spec, 1, 2, false).unwrap();
        assert_eq!(o.runs.len(), 2);
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // One warm-up pair and two measured pairs: six runs.
        assert_eq!(lines.first(), Some(&"setup"));
        assert_eq!(lines.last(), Some(&"cleanup"));
        assert_eq!(lines.iter().filter(|l| **l == "prepare").count(), 6);
        assert_eq!(lines.iter().filter(|l| **l == "conclude").count(), 6);
        assert_eq!(lines.len(), 14);
        assert_eq!(
            o.measurements()[0].details.as_ref().unwrap()["hooks"]["prepare"],
            "echo prepare >> log"
        );
    }

    #[test]
    fn a_failing_prepare_stops_the_measurement_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = plan::Request {
            words: vec!["true".into()],
            cwd: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        r.hooks.prepare = Some("false".into());
        r.hooks.cleanup = Some("touch cleaned".into());
        let spec = plan::expand(&r).unwrap().remove(0);
        let e = measure_runs(&spec, 0, 3, true).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("--prepare 'false' (for 'true') exited with status 1"),
            "{e}"
        );
        assert!(dir.path().join("cleaned").exists());
    }

    #[test]
    fn a_failing_command_is_an_error_unless_ignored() {
        let spec = spec_of("false");
        let e = measure_runs(&spec, 0, 3, false).unwrap_err();
        assert!(e.to_string().contains("status 1"), "{e}");
        let o = measure_runs(&spec, 0, 3, true).unwrap();
        assert_eq!(o.failures(), 3);
        assert!(
            o.measurements()[0]
                .warnings
                .iter()
                .any(|w| w.contains("3 of 3"))
        );
    }
}
