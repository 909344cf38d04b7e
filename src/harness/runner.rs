//! The run loop: rounds of every benchmark interleaved across the run,
//! each round prepared, calibrated, warmed up and sampled on its own (the
//! members of an interleaved group sampled A B A B), a stability canary
//! between rounds, slow-phase rounds measured again, overhead subtracted,
//! summarised and checked.
//!
//! Why rounds: on a shared machine the speed changes in phases of seconds,
//! so the samples of one stretch of time say little about the next. Each
//! benchmark is measured in several independent rounds, and the rounds of
//! all benchmarks are shuffled across the run, so that a slow phase lands
//! briefly on many benchmarks rather than wholly on one, and the spread of
//! the rounds — the top level of variation a run can observe — gives the
//! interval ([`super::stats::round_interval`]).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::canary::{self, Snapshot, Stability};
use super::cpu::{CpuUse, Probe};
use super::stats::{Summary, is_bimodal, quantile, round_interval};
use super::timer::{EmptyLoop, calibrate};
use super::warnings::Warning;
use super::worker::{Pool, WorkerCmd};
use super::{
    Bench, Ctx, Measurement, OpStats, Overhead, PrepareError, Profile, Round, Timed, area_of,
};

/// Fewest samples a measurement is made of, even when the budget runs out,
/// shared out over its rounds; with [`MIN_ROUNDS_ONE_SAMPLE`] rounds or
/// more a round may hold a single sample (the interval comes from the
/// rounds, so a round's median may be one sample).
pub const MIN_SAMPLES: usize = 5;
/// Rounds from which a budget-limited round may stop at one sample.
pub const MIN_ROUNDS_ONE_SAMPLE: usize = 3;
/// Fewest samples kept from a benchmark interrupted by Ctrl-C.
pub const MIN_SAMPLES_INTERRUPTED: usize = 3;
/// CI half-width (relative to the median) above which a result is noisy.
pub const NOISE_THRESHOLD: f64 = 0.05;
/// The clock assumed for the below-one-cycle check: the host's nominal clock
/// is no bound (boost clocks run well above it, and VMs often hide it), so
/// a result is flagged only below one cycle of the fastest clock CPUs reach.
pub const MAX_PLAUSIBLE_GHZ: f64 = 6.0;

/// How a run samples, beyond what the profile says.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The effort level.
    pub profile: Profile,
    /// Overrides the profile's sample count (`--samples`), over all rounds.
    pub samples: Option<usize>,
    /// Overrides the profile's round count (`--rounds`).
    pub rounds: Option<usize>,
    /// How to start opcost again to measure each round in a process of its
    /// own (see [`super::worker`]); `None` measures every round in this
    /// process.
    pub workers: Option<WorkerCmd>,
    /// The stability canary ([`canary::check`]; tests give a fixed one, so
    /// that no round of theirs is judged by the machine's phase).
    pub canary: fn() -> f64,
    /// Seed of the order in which each pass measures the benchmarks (a new
    /// shuffle every pass, all drawn from this seed): recorded in the run,
    /// so an order can be repeated (`run --seed`).
    pub seed: u64,
}

impl RunOptions {
    /// Options with the profile's own counts.
    pub fn new(profile: Profile) -> RunOptions {
        RunOptions {
            profile,
            samples: None,
            rounds: None,
            workers: None,
            canary: canary::check,
            seed: fastrand::u64(..),
        }
    }

    /// Samples wanted per benchmark, over all its rounds.
    pub fn samples_wanted(&self) -> usize {
        self.samples.unwrap_or(self.profile.samples()).max(1)
    }

    /// Rounds per benchmark (never more than the samples wanted).
    pub fn rounds(&self) -> usize {
        self.rounds
            .unwrap_or(self.profile.rounds())
            .clamp(1, self.samples_wanted())
    }

    /// Samples wanted in round `r` (0-based): the total shared out exactly.
    pub fn round_samples(&self, r: usize) -> usize {
        let (n, k) = (self.samples_wanted(), self.rounds());
        n / k + usize::from(r < n % k)
    }

    /// The time a benchmark may take over all its rounds: its budget,
    /// stretched when `--samples` asks for more samples than the profile.
    pub fn budget_of(&self, b: &dyn Bench) -> Duration {
        let base = b.budget(self.profile);
        let scale = self.samples_wanted() as f64 / self.profile.samples() as f64;
        if scale > 1.0 {
            base.mul_f64(scale)
        } else {
            base
        }
    }
}

/// A benchmark that produced no measurement, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The benchmark id.
    pub id: String,
    /// Why: the missing feature, or the error.
    pub reason: String,
    /// True for an error, false for a skip (missing feature, no space...).
    pub failed: bool,
}

/// What a run produced.
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// Finished measurements, in run order.
    pub measurements: Vec<Measurement>,
    /// Benchmarks skipped or failed.
    pub skipped: Vec<Skipped>,
    /// True when the user stopped the run.
    pub interrupted: bool,
    /// How stable the machine was (absent when no canary was taken).
    pub stability: Option<Stability>,
}

/// Progress events, for a progress bar and for saving results as they come.
#[derive(Debug)]
pub enum Event<'a> {
    /// A round of a benchmark (or interleaved group) starts; the ids it covers.
    Started(&'a [String]),
    /// A round of a benchmark finished (measured, skipped or failed): the
    /// share of its budget now spent (all that is left when it drops out).
    Finished(&'a str, Duration),
    /// The result of the benchmark at position `.0` of the run, from the rounds done so far.
    Result(usize, &'a Measurement),
}

/// One benchmark across its rounds.
pub(super) struct Track {
    pub(super) id: String,
    pub(super) bench: Box<dyn Bench>,
    pub(super) budget: Duration,
    /// Per-op ns of every sample of every used round.
    pub(super) samples_ns: Vec<Vec<f64>>,
    pub(super) op_times: Vec<f64>,
    pub(super) rounds: Vec<Round>,
    pub(super) warnings: Vec<String>,
    pub(super) details: Option<serde_json::Value>,
    /// Set when the benchmark was skipped or failed: no more rounds.
    pub(super) out: bool,
    /// The last round was cut short by a stop.
    pub(super) cut: bool,
}

/// The tracks of `benches`, nothing measured yet.
pub(super) fn new_tracks(benches: Vec<Box<dyn Bench>>, opts: &RunOptions) -> Vec<Track> {
    benches
        .into_iter()
        .map(|bench| Track {
            id: bench.id().to_string(),
            budget: opts.budget_of(bench.as_ref()),
            bench,
            samples_ns: Vec::new(),
            op_times: Vec::new(),
            rounds: Vec::new(),
            warnings: Vec::new(),
            details: None,
            out: false,
            cut: false,
        })
        .collect()
}

/// One benchmark being measured in one round.
struct Live {
    track: usize,
    timed: Box<dyn Timed>,
    ops: u64,
    budget: Duration,
    wanted: usize,
    /// Time spent on this benchmark alone in this round: set-up,
    /// calibration, warm-up and its own samples. Members of an interleaved
    /// group each get their own budget, not a share of one.
    spent: Duration,
    samples_ns: Vec<f64>,
    op_times: Vec<f64>,
    /// CPU time of the samples, when the benchmark accounts it.
    cpu: Option<CpuUse>,
    done: bool,
}

/// The order in which one pass measures `n` groups: a fresh shuffle drawn
/// from the run's seeded generator.
fn pass_order(rng: &mut fastrand::Rng, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    order
}

/// Runs `benches` in rounds (interleaving those with the same
/// [`Bench::interleave`] key) and returns their measurements in order.
pub fn run(
    benches: Vec<Box<dyn Bench>>,
    ctx: &Ctx,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Event<'_>),
) -> RunOutcome {
    let started = Instant::now();
    let rounds = opts.rounds();
    let mut tracks = new_tracks(benches, opts);
    // A run of one round has no variation between rounds to see.
    let mut pool = opts
        .workers
        .clone()
        .filter(|_| rounds >= 2)
        .map(|cmd| Pool::new(cmd, rounds));
    let groups = group_by_interleave(tracks.iter().map(|t| t.bench.interleave()));
    let planned: Duration = tracks.iter().map(|t| t.budget).sum();
    let mut out = RunOutcome::default();
    let mut overhead: Option<f64> = None;
    let mut checks: Vec<f64> = Vec::new();
    // (group, pass) of each unit run, with the canary taken just before it.
    let mut units: Vec<(usize, usize, f64)> = Vec::new();
    let run_start = Snapshot::now();
    // The canary a worker took after the last round it measured.
    let mut last_after: Option<f64> = None;

    let mut order_rng = fastrand::Rng::with_seed(opts.seed);
    'passes: for pass in 0..rounds {
        let order = pass_order(&mut order_rng, groups.len());
        for g in order {
            if ctx.stopping() {
                break 'passes;
            }
            if groups[g].iter().all(|&i| tracks[i].out) {
                continue;
            }
            // The canary is taken where the round runs: a run with workers
            // takes it in the worker (the run's own process, just woken
            // from waiting, reads slow after a worker's round).
            let here = pool.is_none().then(opts.canary);
            let at = started.elapsed().as_secs_f64();
            let mut rctx = RoundCtx {
                ctx,
                opts,
                overhead: &mut overhead,
                out: &mut out,
                progress,
                at,
                pool: pool.as_mut(),
            };
            let measured = round(&mut tracks, &groups[g], pass, &mut rctx);
            let c = here.or(measured.map(|m| m.0)).unwrap_or_else(opts.canary);
            last_after = measured.map(|m| m.1);
            checks.push(c);
            units.push((g, pass, c));
            for &i in &groups[g] {
                if let Some(m) = interim(&tracks[i], ctx, overhead) {
                    progress(Event::Result(i, &m));
                }
            }
        }
    }
    checks.push(last_after.unwrap_or_else(opts.canary));

    // Judge every round by the canaries on either side of it, against the
    // run's fast phase, then measure slow rounds again while the budget lasts.
    let (slow, remeasured, set_aside, corrected) = judge_and_remeasure(
        &mut tracks,
        &groups,
        &units,
        &mut checks,
        planned,
        &mut RoundCtx {
            ctx,
            opts,
            overhead: &mut overhead,
            out: &mut out,
            progress,
            at: 0.0,
            pool: pool.as_mut(),
        },
        started,
    );
    drop(pool); // every round is measured: the workers may go

    let interference = run_start.until(&Snapshot::now());
    // The canary over the run's time, from the rounds of its passes (rounds
    // measured again come last, chosen for a fast canary: not a trend).
    let timeline: Vec<(f64, f64)> = tracks
        .iter()
        .flat_map(|t| t.rounds.iter().take(rounds))
        .filter_map(|r| Some((r.at_s, r.canary?)))
        .collect();
    out.stability = Stability::of(
        &checks,
        &timeline,
        tracks.iter().map(|t| t.rounds.len()).sum(),
        slow,
        remeasured,
        set_aside,
        corrected,
        &interference,
    );
    out.interrupted |= ctx.stopping();
    // Skips in run order, whatever order the rounds ran in.
    let position = |id: &str| tracks.iter().position(|t| t.id == id);
    out.skipped.sort_by_key(|s| position(&s.id));
    let stopped = out.interrupted;
    for (i, t) in tracks.iter().enumerate() {
        if t.out {
            continue;
        }
        let n: usize = t.samples_ns.iter().map(Vec::len).sum();
        if n == 0 {
            continue; // interrupted before any sample
        }
        let complete = t.rounds.iter().filter(|r| r.used).count() >= rounds && !t.cut;
        if stopped && !complete && n < MIN_SAMPLES_INTERRUPTED {
            out.skipped.push(Skipped {
                id: t.id.clone(),
                reason: format!("interrupted after {n} samples"),
                failed: false,
            });
            continue;
        }
        let mut extra = Vec::new();
        if stopped && !complete {
            extra.push(Warning::Interrupted { samples: n });
        } else if n < opts.samples_wanted() {
            extra.push(Warning::FewSamples {
                got: n,
                wanted: opts.samples_wanted(),
            });
        }
        if let Some(m) = summarise(t, ctx, overhead, extra) {
            progress(Event::Result(i, &m));
            out.measurements.push(m);
        }
    }
    out
}

/// What a round needs besides the tracks.
pub(super) struct RoundCtx<'a> {
    pub(super) ctx: &'a Ctx,
    pub(super) opts: &'a RunOptions,
    pub(super) overhead: &'a mut Option<f64>,
    pub(super) out: &'a mut RunOutcome,
    pub(super) progress: &'a mut dyn FnMut(Event<'_>),
    /// Seconds since the run started.
    pub(super) at: f64,
    /// The processes that measure the rounds, when not this one.
    pub(super) pool: Option<&'a mut Pool>,
}

/// Measures round `pass` of a group: in the pass's own process when the
/// run has workers (returning the canaries it took just before and just
/// after the round), else here.
fn round(
    tracks: &mut [Track],
    group: &[usize],
    pass: usize,
    rc: &mut RoundCtx<'_>,
) -> Option<(f64, f64)> {
    match rc.pool.take() {
        Some(pool) => {
            let canaries = pool.round(tracks, group, pass, rc);
            rc.pool = Some(pool);
            canaries
        }
        None => {
            run_round(tracks, group, pass, rc);
            None
        }
    }
}

/// Marks the rounds whose neighbouring canaries show a slow phase, then
/// measures such (group, pass) units again while the re-measuring budget
/// lasts, replacing a slow round only by one whose canary is fast, and sets
/// aside the slow rounds of benchmarks with enough fast ones, and corrects
/// the slow rounds left in the estimate for the phase. Returns (slow
/// rounds, rounds replaced, rounds set aside, rounds corrected).
fn judge_and_remeasure(
    tracks: &mut [Track],
    groups: &[Vec<usize>],
    units: &[(usize, usize, f64)],
    checks: &mut Vec<f64>,
    planned: Duration,
    rc: &mut RoundCtx<'_>,
    started: Instant,
) -> (usize, usize, usize, usize) {
    let Some(base) = canary::baseline(checks) else {
        return (0, 0, 0, 0);
    };
    // The canary of a unit is the slower of the check before it and the one after.
    let mut slow_units = Vec::new();
    for (k, &(g, pass, before)) in units.iter().enumerate() {
        let after = units.get(k + 1).map_or(checks[checks.len() - 1], |u| u.2);
        let rel = before.max(after) / base;
        let slow = rel > canary::SLOW_PHASE;
        for &i in &groups[g] {
            if let Some(r) = tracks[i].rounds.get_mut(pass) {
                r.canary = Some(rel);
                r.slow = slow;
            }
        }
        if slow {
            slow_units.push((g, pass));
        }
    }
    let slow_rounds: usize = slow_units
        .iter()
        .map(|(g, p)| {
            groups[*g]
                .iter()
                .filter(|&&i| tracks[i].rounds.get(*p).is_some_and(|r| r.slow))
                .count()
        })
        .sum();
    let allowance = planned.mul_f64(canary::REMEASURE_SHARE);
    let re_start = Instant::now();
    let mut replaced = 0;
    for (g, pass) in slow_units {
        if rc.ctx.stopping() || re_start.elapsed() >= allowance {
            break;
        }
        let c = rc
            .pool
            .as_mut()
            .and_then(|p| p.canary(pass, rc.ctx))
            .unwrap_or_else(rc.opts.canary);
        checks.push(c);
        if c / base > canary::SLOW_PHASE {
            continue; // still slow: keep the round, try the next one
        }
        let before: Vec<usize> = groups[g].iter().map(|&i| tracks[i].rounds.len()).collect();
        rc.at = started.elapsed().as_secs_f64();
        let after = round(tracks, &groups[g], pass, rc).map_or_else(rc.opts.canary, |m| m.1);
        checks.push(after);
        let fast = c.max(after) / base <= canary::SLOW_PHASE;
        for (&i, &n_before) in groups[g].iter().zip(&before) {
            let t = &mut tracks[i];
            if t.out || t.rounds.len() <= n_before {
                continue;
            }
            let new = t.rounds.len() - 1;
            t.rounds[new].canary = Some(c.max(after) / base);
            t.rounds[new].slow = !fast;
            // Both rounds stay on record; the slower one leaves the estimate.
            let left_out = if fast { pass } else { new };
            t.rounds[left_out].used = false;
            t.samples_ns[left_out].clear();
            replaced += usize::from(fast);
        }
    }
    // Slopes first, while every benchmark's slow rounds are still in.
    let slopes = phase_slopes(tracks);
    let set_aside = tracks
        .iter_mut()
        .map(|t| set_aside_slow_rounds(&mut t.rounds))
        .sum();
    let corrected = correct_slow_rounds(tracks, &slopes);
    (slow_rounds, replaced, set_aside, corrected)
}

/// How a benchmark's time per operation responds to the machine's phase:
/// the least-squares slope of its rounds' log time on their log canary,
/// when at least two fast and two slow rounds are in its estimate (1.0 =
/// it slows down exactly as much as the canary).
fn phase_slope(rounds: &[Round], higher_is_better: bool) -> Option<f64> {
    let pts: Vec<(f64, f64)> = rounds
        .iter()
        .filter(|r| r.used && r.median > 0.0 && r.median.is_finite())
        .filter_map(|r| {
            let y = if higher_is_better {
                -r.median.ln()
            } else {
                r.median.ln()
            };
            Some((r.canary.filter(|c| *c > 0.0)?.ln(), y))
        })
        .collect();
    let slow = rounds.iter().filter(|r| r.used && r.slow).count();
    if slow < 2 || pts.len() < slow + 2 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) = pts
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let sxx: f64 = pts.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = pts.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    (sxx > 1e-6).then(|| sxy / sxx)
}

/// The range a phase slope is held to: a benchmark may ignore the phase
/// (0) or feel it as much as the canary, never the opposite way; a slope
/// from a handful of rounds is noisy, so it never corrects a round by more
/// than the canary's own slowdown (rather too little than too much).
const PHASE_SLOPE_RANGE: (f64, f64) = (0.0, 1.0);

/// Each benchmark's phase slope: its own where its rounds show it (see
/// [`phase_slope`]), else the median of the run's benchmarks that show
/// one (at least five), else 1.
fn phase_slopes(tracks: &[Track]) -> Vec<f64> {
    let (lo, hi) = PHASE_SLOPE_RANGE;
    let own: Vec<Option<f64>> = tracks
        .iter()
        .map(|t| phase_slope(&t.rounds, t.bench.unit().higher_is_better()).map(|b| b.clamp(lo, hi)))
        .collect();
    let known: Vec<f64> = own.iter().flatten().copied().collect();
    let run_slope = if known.len() >= 5 {
        super::stats::median(&known).unwrap_or(1.0)
    } else {
        1.0
    };
    own.into_iter().map(|b| b.unwrap_or(run_slope)).collect()
}

/// Brings the slow rounds still in the estimate (those of benchmarks with
/// too few fast rounds to set them aside) to the machine's fast phase:
/// each such round's times are divided by `canary ^ slope` (see
/// [`phase_slopes`]). A slow phase then no longer moves a result by which
/// of its rounds it happened to hit, and two runs that fell in different
/// phases agree (see docs/DESIGN.md). Returns how many rounds were
/// corrected.
fn correct_slow_rounds(tracks: &mut [Track], slopes: &[f64]) -> usize {
    tracks
        .iter_mut()
        .zip(slopes)
        .map(|(t, &b)| {
            let up = t.bench.unit().higher_is_better();
            correct_rounds(&mut t.rounds, &mut t.samples_ns, b, up)
        })
        .sum()
}

/// Divides the times of the used slow rounds by `canary ^ slope` (a
/// round's samples are ns per operation; its median is in the unit's base,
/// a rate when `higher_is_better`). Returns how many rounds it corrected.
fn correct_rounds(
    rounds: &mut [Round],
    samples_ns: &mut [Vec<f64>],
    slope: f64,
    higher_is_better: bool,
) -> usize {
    let mut corrected = 0;
    for (r, samples) in rounds.iter_mut().zip(samples_ns.iter_mut()) {
        let Some(c) = r.canary.filter(|c| r.used && r.slow && *c > 0.0) else {
            continue;
        };
        let f = c.powf(slope);
        for ns in samples.iter_mut() {
            *ns /= f;
        }
        r.median = if higher_is_better {
            r.median * f
        } else {
            r.median / f
        };
        r.phase_factor = Some(f);
        corrected += 1;
    }
    corrected
}

/// Fast rounds a benchmark needs before its slow rounds leave the estimate.
pub const MIN_FAST_ROUNDS: usize = 3;

/// Leaves a benchmark's remaining slow rounds out of its estimate when at
/// least [`MIN_FAST_ROUNDS`] fast ones are in it: the result then describes
/// the machine's fast phase, as the canary's baseline does, in every run
/// that saw enough of it, so two runs agree whatever share of each fell in
/// a slow phase. The rounds stay on record (`used: false`). Returns how
/// many were set aside.
fn set_aside_slow_rounds(rounds: &mut [Round]) -> usize {
    let fast = rounds.iter().filter(|r| r.used && !r.slow).count();
    if fast < MIN_FAST_ROUNDS {
        return 0;
    }
    let mut n = 0;
    for r in rounds.iter_mut().filter(|r| r.used && r.slow) {
        r.used = false;
        n += 1;
    }
    n
}

/// Splits benches into groups of indices: those sharing an interleave key
/// go together (at the position of the first), the rest alone.
fn group_by_interleave<'a>(keys: impl Iterator<Item = Option<&'a str>>) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
    for (i, key) in keys.enumerate() {
        match key.and_then(|k| groups.iter_mut().find(|(gk, _)| *gk == Some(k))) {
            Some((_, g)) => g.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// The text of a caught panic.
fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string());
    format!("the benchmark panicked: {msg}")
}

/// Takes a benchmark out of the run, recording why.
pub(super) fn drop_out(t: &mut Track, out: &mut RunOutcome, reason: String, failed: bool) {
    t.out = true;
    out.skipped.push(Skipped {
        id: t.id.clone(),
        reason,
        failed,
    });
}

/// One round of one group: prepare, calibrate and warm up each member, then
/// sample them round-robin in a shuffled order until each has its share.
pub(super) fn run_round(tracks: &mut [Track], group: &[usize], pass: usize, rc: &mut RoundCtx<'_>) {
    let (ctx, opts) = (rc.ctx, rc.opts);
    let profile = opts.profile;
    let rounds = opts.rounds();
    let wanted = opts.round_samples(pass.min(rounds - 1));
    let min_round = if rounds >= MIN_ROUNDS_ONE_SAMPLE {
        1
    } else {
        MIN_SAMPLES.div_ceil(rounds).min(wanted).max(1)
    };
    let warmup = (profile.warmup() / rounds as u32).max(Duration::from_millis(2));
    let ids: Vec<String> = group
        .iter()
        .filter(|&&i| !tracks[i].out)
        .map(|&i| tracks[i].id.clone())
        .collect();
    (rc.progress)(Event::Started(&ids));
    let before = Snapshot::now();
    let load = canary::load1();
    let mut live: Vec<Live> = Vec::new();
    // The budget of this round and the ones after it, for the progress of
    // a benchmark that drops out.
    let left = |t: &Track| budget_left(t, rounds, pass);

    for &i in group {
        let t = &mut tracks[i];
        if t.out || ctx.stopping() {
            continue;
        }
        let budget = t.budget / rounds as u32;
        let started = Instant::now();
        let prepared = catch_unwind(AssertUnwindSafe(|| t.bench.prepare(ctx)));
        let mut timed = match prepared {
            Ok(Ok(timed)) => timed,
            Ok(Err(e)) => {
                let failed = matches!(e, PrepareError::Fail(_));
                let reason = match e {
                    PrepareError::Skip(r) => r,
                    PrepareError::Fail(err) => format!("{err:#}"),
                };
                drop_out(t, rc.out, reason, failed);
                (rc.progress)(Event::Finished(&t.id, left(t)));
                continue;
            }
            Err(p) => {
                drop_out(t, rc.out, panic_text(p), true);
                (rc.progress)(Event::Finished(&t.id, left(t)));
                continue;
            }
        };
        let cal = catch_unwind(AssertUnwindSafe(|| {
            calibrate(timed.as_mut(), profile.sample_target(), budget / 3).and_then(
                |(ops, took)| {
                    // A calibration batch as long as the warm-up was the warm-up
                    // (a whole file tree, a 1 GiB pass): no need for another.
                    if took < warmup {
                        warm_up(timed.as_mut(), ops, warmup)?;
                    }
                    Ok(ops)
                },
            )
        }));
        match cal {
            Ok(Ok(ops)) => {
                timed.take_op_times(); // discard calibration and warm-up timings
                live.push(Live {
                    track: i,
                    timed,
                    ops,
                    budget,
                    wanted,
                    spent: started.elapsed(),
                    samples_ns: Vec::with_capacity(wanted),
                    op_times: Vec::new(),
                    cpu: t.bench.cpu_cost().then(CpuUse::default),
                    done: false,
                })
            }
            Ok(Err(e)) => {
                drop_out(t, rc.out, format!("{e:#}"), true);
                (rc.progress)(Event::Finished(&t.id, left(t)));
            }
            Err(p) => {
                drop_out(t, rc.out, panic_text(p), true);
                (rc.progress)(Event::Finished(&t.id, left(t)));
            }
        }
    }

    if rc.overhead.is_none()
        && live
            .iter()
            .any(|l| tracks[l.track].bench.overhead() == Overhead::EmptyLoop)
    {
        *rc.overhead = Some(measure_loop_overhead(profile));
    }
    let overhead = *rc.overhead;

    // Sample, round-robin in a shuffled order per turn.
    let mut order: Vec<usize> = (0..live.len()).collect();
    while live.iter().any(|l| !l.done) {
        if ctx.stopping() {
            break;
        }
        fastrand::shuffle(&mut order);
        for &k in &order {
            let l = &mut live[k];
            if l.done || ctx.stopping() {
                continue;
            }
            let t = &mut tracks[l.track];
            // The CPU counters are read outside the call: its own timed
            // region never holds them.
            let probe = l.cpu.is_some().then(|| Probe::start(&l.timed.peer_pids()));
            let sample_start = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| l.timed.run(l.ops)));
            let wall = sample_start.elapsed();
            l.spent += wall;
            let err = match result {
                Ok(Ok(took)) => {
                    if let (Some(p), Some(c)) = (probe, l.cpu.as_mut()) {
                        c.add(&p.finish(l.ops, wall.as_nanos() as f64));
                    }
                    let mut per_op = took.as_nanos() as f64 / l.ops as f64;
                    if t.bench.overhead() == Overhead::EmptyLoop {
                        per_op -= overhead.unwrap_or(0.0);
                    }
                    l.samples_ns.push(per_op.max(1e-3));
                    l.op_times.extend(l.timed.take_op_times());
                    None
                }
                Ok(Err(e)) => Some(format!("{e:#}")),
                Err(p) => Some(panic_text(p)),
            };
            if let Some(reason) = err {
                drop_out(t, rc.out, reason, true);
                l.done = true;
                // This round is counted below; the rounds it will not run, here.
                (rc.progress)(Event::Finished(&t.id, left(t).saturating_sub(l.budget)));
                continue;
            }
            let n = l.samples_ns.len();
            // An explicit --samples is honoured; the profile's count yields to the budget.
            let out_of_budget = opts.samples.is_none() && l.spent >= l.budget;
            if n >= l.wanted || (n >= min_round && out_of_budget) {
                l.done = true;
            }
        }
    }

    let interference = before.until(&Snapshot::now());
    for l in live {
        let t = &mut tracks[l.track];
        (rc.progress)(Event::Finished(&t.id, l.budget));
        if t.out || l.samples_ns.is_empty() {
            continue;
        }
        let values: Vec<f64> = l
            .samples_ns
            .iter()
            .map(|&ns| t.bench.unit().from_ns_per_op(ns))
            .collect();
        t.rounds.push(Round {
            median: quantile(&values, 0.5).unwrap_or(f64::NAN),
            n: values.len(),
            ops: l.ops,
            at_s: rc.at,
            canary: None,
            slow: false,
            used: true,
            steal_ms: interference.steal_ms,
            nivcsw: interference.nivcsw,
            migrations: interference.migrations,
            load,
            phase_factor: None,
            process: None,
            cpu: l.cpu,
        });
        t.cut = !l.done;
        t.samples_ns.push(l.samples_ns);
        t.op_times.extend(l.op_times);
        let dropped = catch_unwind(AssertUnwindSafe(|| {
            (l.timed.warnings(), l.timed.details(), drop(l.timed))
        }));
        if let Ok((w, d, ())) = dropped {
            for w in w {
                if !t.warnings.contains(&w) {
                    t.warnings.push(w);
                }
            }
            t.details = d.or(t.details.take());
        }
    }
}

/// The budget of round `pass` of a benchmark and of the rounds after it:
/// the progress it makes when it drops out.
pub(super) fn budget_left(t: &Track, rounds: usize, pass: usize) -> Duration {
    (t.budget / rounds as u32) * rounds.saturating_sub(pass) as u32
}

/// Runs untimed batches for `warmup`.
fn warm_up(t: &mut dyn Timed, ops: u64, warmup: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    while start.elapsed() < warmup {
        t.run(ops)?;
    }
    Ok(())
}

/// Per-op cost of the empty counted loop, ns (median of a calibrated set).
pub fn measure_loop_overhead(profile: Profile) -> f64 {
    let mut e = EmptyLoop;
    let Ok((ops, _)) = calibrate(&mut e, profile.sample_target(), Duration::from_millis(200))
    else {
        return 0.0;
    };
    let samples: Vec<f64> = (0..15)
        .filter_map(|_| e.run(ops).ok())
        .map(|d| d.as_nanos() as f64 / ops as f64)
        .collect();
    quantile(&samples, 0.5).unwrap_or(0.0)
}

/// The result so far of a benchmark still being measured (no warnings about
/// its sample count: it is not finished).
fn interim(t: &Track, ctx: &Ctx, overhead: Option<f64>) -> Option<Measurement> {
    if t.out {
        return None;
    }
    summarise(t, ctx, overhead, Vec::new())
}

/// Builds the measurement of a benchmark from its used rounds, with its
/// sanity warnings.
fn summarise(
    t: &Track,
    ctx: &Ctx,
    overhead: Option<f64>,
    mut warns: Vec<Warning>,
) -> Option<Measurement> {
    let unit = t.bench.unit();
    // The samples of the rounds in the estimate (a round set aside keeps
    // its samples on record, for the count, but not in the median).
    let samples_ns: Vec<f64> = t
        .samples_ns
        .iter()
        .zip(&t.rounds)
        .filter(|(_, r)| r.used)
        .flat_map(|(s, _)| s.iter().copied())
        .collect();
    let values: Vec<f64> = samples_ns
        .iter()
        .map(|&ns| unit.from_ns_per_op(ns))
        .collect();
    let mut summary = Summary::of(&values)?;
    let median_ns = super::stats::median(&samples_ns)?;
    let used: Vec<f64> = t
        .rounds
        .iter()
        .filter(|r| r.used)
        .map(|r| r.median)
        .collect();
    if let Some((lo, hi)) = round_interval(&used, summary.median) {
        summary.ci_low = lo;
        summary.ci_high = hi;
    }

    let ghz = ctx.host.cpu_ghz().unwrap_or(0.0).max(MAX_PLAUSIBLE_GHZ);
    // Only a latency cannot beat a cycle: rates and throughputs may count
    // many operations or bytes per cycle (independent adds, a memcpy).
    if unit == super::Unit::Latency && median_ns < 1.0 / ghz {
        warns.push(Warning::BelowOneCycle { ns: median_ns, ghz });
    }
    let noisy = summary.ci_rel() > NOISE_THRESHOLD;
    if noisy {
        warns.push(Warning::Noisy {
            ci_rel: summary.ci_rel(),
            threshold: NOISE_THRESHOLD,
        });
    }
    let per_op = op_stats(&t.op_times);
    if let Some(p) = per_op.as_ref().filter(|p| p.bimodal) {
        warns.push(Warning::Bimodal {
            p50: p.p50,
            p99: p.p99,
        });
    }
    let mut warnings = t.warnings.clone();
    warnings.extend(warns.iter().map(ToString::to_string));

    Some(Measurement {
        id: t.id.clone(),
        area: area_of(&t.id).to_string(),
        unit: unit.base(),
        bytes_per_op: match unit {
            super::Unit::Throughput { bytes_per_op } => Some(bytes_per_op),
            _ => None,
        },
        params: t.bench.params(),
        summary,
        ops_per_sample: t.rounds.first().map_or(1, |r| r.ops),
        overhead: (t.bench.overhead() == Overhead::EmptyLoop).then(|| overhead.unwrap_or(0.0)),
        noisy,
        warnings,
        per_op,
        details: super::cpu::merge_into(
            t.details.clone(),
            super::cpu::details_of(&t.rounds, unit_bytes(unit)),
        ),
        rounds: t.rounds.clone(),
        samples: values,
    })
}

/// Bytes per operation of a throughput.
fn unit_bytes(unit: super::Unit) -> Option<f64> {
    match unit {
        super::Unit::Throughput { bytes_per_op } => Some(bytes_per_op),
        _ => None,
    }
}

/// Statistics of per-op timings; `None` when the benchmark recorded none.
pub fn op_stats(times: &[f64]) -> Option<OpStats> {
    if times.is_empty() {
        return None;
    }
    let mut s = times.to_vec();
    s.sort_by(f64::total_cmp);
    let q = |p| super::stats::quantile_sorted(&s, p);
    let p99 = super::claims::quantile_est(&s, 0.99, false);
    let bound = |v: f64| (v.is_finite() && v > f64::MIN_POSITIVE).then_some(v);
    Some(OpStats {
        p99_low: p99.and_then(|e| bound(e.low)),
        p99_high: p99.and_then(|e| bound(e.high)),
        count: s.len(),
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        max: s[s.len() - 1],
        bimodal: is_bimodal(&s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Params, Unit};
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    struct FakeBench {
        id: String,
        ns: u64,
        key: Option<&'static str>,
        fail: bool,
        skip: bool,
    }
    struct FakeTimed {
        ns: u64,
    }
    impl Timed for FakeTimed {
        fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
            Ok(Duration::from_nanos(ops * self.ns))
        }
        fn take_op_times(&mut self) -> Vec<f64> {
            vec![self.ns as f64]
        }
    }
    impl Bench for FakeBench {
        fn id(&self) -> &str {
            &self.id
        }
        fn summary(&self) -> &str {
            "fake"
        }
        fn unit(&self) -> Unit {
            Unit::Throughput {
                bytes_per_op: 100.0,
            }
        }
        fn params(&self) -> Params {
            Params::from([("size".into(), 100.into())])
        }
        fn interleave(&self) -> Option<&str> {
            self.key
        }
        fn prepare(&self, _ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
            if self.skip {
                return Err(PrepareError::Skip("no such thing here".into()));
            }
            if self.fail {
                return Err(PrepareError::Fail(anyhow::anyhow!("broken")));
            }
            Ok(Box::new(FakeTimed { ns: self.ns }))
        }
    }

    fn fake(id: &str, ns: u64, key: Option<&'static str>) -> Box<dyn Bench> {
        Box::new(FakeBench {
            id: id.into(),
            ns,
            key,
            fail: false,
            skip: false,
        })
    }

    /// A canary that never moves: no round is judged by the machine's phase.
    fn steady() -> f64 {
        20_000.0
    }

    fn ctx() -> Ctx {
        let tmp = std::env::temp_dir();
        Ctx {
            profile: Profile::Quick,
            host: Arc::new(crate::host::Host::detect()),
            tmp: tmp.clone(),
            dir: tmp,
            cpu: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    #[test]
    fn groups_keep_first_position_and_collect_members() {
        let benches = [
            fake("a", 1, Some("k")),
            fake("b", 1, None),
            fake("c", 1, Some("k")),
            fake("d", 1, Some("j")),
        ];
        let g = group_by_interleave(benches.iter().map(|b| b.interleave()));
        let ids: Vec<Vec<&str>> = g
            .iter()
            .map(|g| g.iter().map(|&i| benches[i].id()).collect())
            .collect();
        assert_eq!(ids, vec![vec!["a", "c"], vec!["b"], vec!["d"]]);
    }

    #[test]
    fn run_produces_measurements_in_base_units() {
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: Some(8),
            rounds: None,
            workers: None,
            canary: steady,
            seed: 1,
        };
        let out = run(
            vec![fake("t.a", 1000, Some("k")), fake("t.b", 2000, Some("k"))],
            &ctx(),
            &opts,
            &mut |_| {},
        );
        assert_eq!(out.measurements.len(), 2);
        let a = &out.measurements[0];
        assert_eq!(a.id, "t.a");
        assert_eq!(a.area, "t");
        assert_eq!(a.unit, "B/s");
        assert_eq!(a.samples.len(), 8);
        // 100 bytes per 1000 ns = 1e8 B/s exactly (fake time is exact).
        assert!((a.median - 1e8).abs() < 1.0, "{}", a.median);
        assert!((a.ns_per_op() - 1000.0).abs() < 1e-6);
        assert!(!a.noisy);
        assert_eq!(a.per_op.as_ref().unwrap().p50, 1000.0);
        assert_eq!(a.param("size").as_deref(), Some("100"));
        assert!((out.measurements[1].median - 5e7).abs() < 1.0);
    }

    #[test]
    fn interleaved_members_each_get_their_own_budget() {
        // A member with a slow set-up must not use up the budget of the
        // member prepared before it.
        struct SlowPrepare;
        impl Bench for SlowPrepare {
            fn id(&self) -> &str {
                "slow"
            }
            fn summary(&self) -> &str {
                "slow set-up"
            }
            fn unit(&self) -> Unit {
                Unit::Latency
            }
            fn interleave(&self) -> Option<&str> {
                Some("k")
            }
            fn prepare(&self, _ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
                std::thread::sleep(Profile::Quick.default_budget() + Duration::from_millis(50));
                Ok(Box::new(FakeTimed { ns: 1000 }))
            }
        }
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: None,
            rounds: None,
            workers: None,
            canary: steady,
            seed: 1,
        };
        let benches: Vec<Box<dyn Bench>> =
            vec![fake("fast", 1000, Some("k")), Box::new(SlowPrepare)];
        let out = run(benches, &ctx(), &opts, &mut |_| {});
        let fast = out.measurements.iter().find(|m| m.id == "fast").unwrap();
        assert_eq!(fast.samples.len(), Profile::Quick.samples());
        let slow = out.measurements.iter().find(|m| m.id == "slow").unwrap();
        // Out of budget in every round: at least one sample in each.
        assert!(slow.samples.len() >= opts.rounds());
    }

    #[test]
    fn the_order_of_every_pass_is_reproducible_from_the_seed() {
        let order = |seed: u64| {
            let opts = RunOptions {
                profile: Profile::Quick,
                samples: Some(3),
                rounds: Some(3),
                workers: None,
                canary: steady,
                seed,
            };
            let benches: Vec<Box<dyn Bench>> = ["a", "b", "c", "d", "e", "f"]
                .iter()
                .map(|id| fake(id, 100, None))
                .collect();
            let mut started: Vec<String> = Vec::new();
            run(benches, &ctx(), &opts, &mut |e| {
                if let Event::Started(ids) = e {
                    started.extend(ids.iter().cloned());
                }
            });
            started
        };
        let first = order(42);
        assert_eq!(first.len(), 18, "{first:?}");
        assert_eq!(order(42), first);
        // Each pass is a fresh shuffle, and another seed another order.
        assert_ne!(first[..6], first[6..12]);
        assert_ne!(order(43), first);
    }

    #[test]
    fn skips_and_failures_are_reported_not_fatal() {
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: Some(5),
            rounds: None,
            workers: None,
            canary: steady,
            seed: 1,
        };
        let benches: Vec<Box<dyn Bench>> = vec![
            Box::new(FakeBench {
                id: "s".into(),
                ns: 1,
                key: None,
                fail: false,
                skip: true,
            }),
            Box::new(FakeBench {
                id: "f".into(),
                ns: 1,
                key: None,
                fail: true,
                skip: false,
            }),
            fake("ok", 100, None),
        ];
        let out = run(benches, &ctx(), &opts, &mut |_| {});
        assert_eq!(out.measurements.len(), 1);
        assert_eq!(out.skipped.len(), 2);
        assert!(!out.skipped[0].failed && out.skipped[0].reason.contains("no such thing"));
        assert!(out.skipped[1].failed && out.skipped[1].reason.contains("broken"));
    }

    #[test]
    fn stop_flag_interrupts_before_anything_runs() {
        let c = ctx();
        c.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: None,
            rounds: None,
            workers: None,
            canary: steady,
            seed: 1,
        };
        let out = run(vec![fake("a", 10, None)], &c, &opts, &mut |_| {});
        assert!(out.interrupted);
        assert!(out.measurements.is_empty());
    }

    #[test]
    fn below_one_cycle_is_flagged_for_latencies_only() {
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: Some(5),
            rounds: None,
            workers: None,
            canary: steady,
            seed: 1,
        };
        // 100 bytes per 0.01 ns: far below a cycle per op, fine for a throughput.
        struct Tiny;
        impl Timed for Tiny {
            fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
                Ok(Duration::from_nanos(ops / 100 + 1))
            }
        }
        let mk = |unit: Unit| {
            crate::suites::FnBench::new("t.x", "x", unit, |_| Ok(Box::new(Tiny) as Box<dyn Timed>))
                .boxed()
        };
        let warned = |unit: Unit| {
            let out = run(vec![mk(unit)], &ctx(), &opts, &mut |_| {});
            out.measurements[0]
                .warnings
                .iter()
                .any(|w| w.contains("below one CPU cycle"))
        };
        assert!(warned(Unit::Latency));
        assert!(!warned(Unit::Rate));
        assert!(!warned(Unit::Throughput {
            bytes_per_op: 100.0
        }));
    }

    #[test]
    fn a_panicking_benchmark_is_recorded_as_failed_and_the_rest_goes_on() {
        struct Boom;
        impl Timed for Boom {
            fn run(&mut self, _ops: u64) -> anyhow::Result<Duration> {
                panic!("index out of bounds in the test");
            }
        }
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: Some(6),
            rounds: Some(2),
            workers: None,
            canary: steady,
            seed: 1,
        };
        let boom = crate::suites::FnBench::new("t.boom", "x", Unit::Latency, |_| {
            Ok(Box::new(Boom) as Box<dyn Timed>)
        })
        .boxed();
        let out = run(
            vec![boom, fake("t.ok", 100, None)],
            &ctx(),
            &opts,
            &mut |_| {},
        );
        assert_eq!(out.measurements.len(), 1);
        assert_eq!(out.measurements[0].id, "t.ok");
        let s = &out.skipped[0];
        assert!(s.failed && s.reason.contains("panicked") && s.reason.contains("out of bounds"));
    }

    #[test]
    fn rounds_share_out_the_samples_and_each_is_recorded() {
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: Some(10),
            rounds: Some(3),
            workers: None,
            canary: steady,
            seed: 1,
        };
        assert_eq!(
            (0..3).map(|r| opts.round_samples(r)).collect::<Vec<_>>(),
            vec![4, 3, 3]
        );
        let mut interim = 0;
        let out = run(
            vec![fake("t.a", 1000, Some("k")), fake("t.b", 3000, Some("k"))],
            &ctx(),
            &opts,
            &mut |e| {
                if let Event::Result(..) = e {
                    interim += 1;
                }
            },
        );
        // A result after each round of each benchmark, and the final ones.
        assert!(interim >= 3 * 2 + 2, "{interim}");
        let a = &out.measurements[0];
        // Three rounds count; a slow one measured again stays on record, unused.
        assert_eq!(a.rounds.iter().filter(|r| r.used).count(), 3);
        assert_eq!(a.samples.len(), 10);
        assert!(a.rounds.iter().all(|r| r.canary.is_some()));
        // Exact fake times: every round agrees, so the interval is a point.
        assert!((a.ci_high / a.ci_low - 1.0).abs() < 1e-9);
        let st = out.stability.expect("the canary ran");
        assert!(st.checks >= 4 && st.canary_ns > 0.0); // one per group round, one at the end
        // More rounds than samples: one sample per round.
        let few = RunOptions {
            profile: Profile::Quick,
            samples: Some(3),
            rounds: Some(10),
            workers: None,
            canary: steady,
            seed: 1,
        };
        assert_eq!(few.rounds(), 3);
    }

    #[test]
    fn op_stats_of_nothing_is_none() {
        assert!(op_stats(&[]).is_none());
        let s = op_stats(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.count, s.p50, s.max), (3, 2.0, 3.0));
    }

    fn round(slow: bool) -> Round {
        Round {
            median: 1.0,
            n: 5,
            ops: 1,
            at_s: 0.0,
            canary: Some(if slow { 1.3 } else { 1.0 }),
            slow,
            used: true,
            steal_ms: None,
            nivcsw: None,
            migrations: None,
            load: None,
            phase_factor: None,
            process: None,
            cpu: None,
        }
    }

    #[test]
    fn slow_rounds_left_in_are_brought_to_the_fast_phase_by_the_benchmarks_own_slope() {
        // A two-level model: a benchmark of 100 ns in the fast phase feels
        // a slow phase (canary 1.3) with slope 0.5, i.e. 1.3^0.5 = 1.14x.
        let truth = 100.0;
        let mk = |canary: f64| {
            let mut r = round(canary > canary::SLOW_PHASE);
            r.canary = Some(canary);
            r.median = truth * canary.powf(0.5);
            r
        };
        let mut rounds: Vec<Round> = [1.0, 1.3, 1.02, 1.28, 1.32].map(mk).to_vec();
        let b = phase_slope(&rounds, false).unwrap();
        assert!((b - 0.5).abs() < 0.05, "{b}");
        // too few fast rounds to set the slow ones aside: they are corrected
        assert_eq!(set_aside_slow_rounds(&mut rounds), 0);
        let mut samples: Vec<Vec<f64>> = rounds.iter().map(|r| vec![r.median; 3]).collect();
        assert_eq!(correct_rounds(&mut rounds, &mut samples, b, false), 3);
        for (r, s) in rounds.iter().zip(&samples) {
            assert!(r.median < truth * 1.025, "{r:?}");
            assert!((s[0] - r.median).abs() < 1e-9);
            assert_eq!(r.phase_factor.is_some(), r.slow);
        }
        // a rate moves the other way: 10 Mops/s slowed to 10/1.14
        let mut rate: Vec<Round> = [1.0, 1.3, 1.0, 1.3].map(mk).to_vec();
        for r in &mut rate {
            r.median = 1e9 / r.median;
        }
        let b = phase_slope(&rate, true).unwrap();
        assert!((b - 0.5).abs() < 0.05, "{b}");
        let mut samples = vec![vec![]; rate.len()];
        correct_rounds(&mut rate, &mut samples, b, true);
        assert!(
            rate.iter().all(|r| (r.median / 1e7 - 1.0).abs() < 0.01),
            "{rate:?}"
        );
        // without two rounds of each phase there is no slope of its own
        let one_slow: Vec<Round> = [1.0, 1.3, 1.0].map(mk).to_vec();
        assert_eq!(phase_slope(&one_slow, false), None);
        // rounds already out of the estimate are left as they were
        let mut out = vec![mk(1.3)];
        out[0].used = false;
        assert_eq!(correct_rounds(&mut out, &mut [vec![]], 1.0, false), 0);
    }

    #[test]
    fn slow_rounds_are_set_aside_only_beside_enough_fast_ones() {
        // 3 fast + 2 slow: the slow ones leave the estimate, on record
        let mut r: Vec<Round> = [false, true, false, true, false].map(round).to_vec();
        assert_eq!(set_aside_slow_rounds(&mut r), 2);
        assert_eq!(r.len(), 5);
        assert!(r.iter().all(|r| r.used != r.slow));
        // 2 fast + 1 slow (quick): too few fast rounds, all stay
        let mut r: Vec<Round> = [false, true, false].map(round).to_vec();
        assert_eq!(set_aside_slow_rounds(&mut r), 0);
        assert!(r.iter().all(|r| r.used));
        // a round already replaced counts for nothing
        let mut r: Vec<Round> = [false, false, false].map(round).to_vec();
        r[0].used = false;
        r.push(round(true));
        assert_eq!(set_aside_slow_rounds(&mut r), 0);
    }
}
