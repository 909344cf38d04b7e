//! One round of one group of benchmarks, and the vocabulary the run loop
//! ([`super::runner`]) and the round workers ([`super::worker`]) share: the
//! options a run samples with, a benchmark's track across its rounds, the
//! progress events and what a run produced.
//!
//! Why a file of its own: a round is measured either in the run's own
//! process or in a worker, by the same [`run_round`]; both callers depend
//! on it, and it depends on neither.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::canary::{self, Snapshot, Stability};
use super::cpu::{CpuUse, Probe};
use super::timer::{EmptyLoop, calibrate, slow_down};
use super::{Bench, Ctx, Measurement, Overhead, Placement, PrepareError, Profile, Round, Timed};
use crate::stats::quantile;
use crate::stats::stages::{self, FIRST_STAGE, RoundsDecision, RowHistory};

/// Fewest samples a measurement is made of, even when the budget runs out,
/// shared out over its rounds; with [`MIN_ROUNDS_ONE_SAMPLE`] rounds or
/// more a round may hold a single sample (the interval comes from the
/// rounds, so a round's median may be one sample).
pub const MIN_SAMPLES: usize = 5;
/// Rounds from which a budget-limited round may stop at one sample.
pub const MIN_ROUNDS_ONE_SAMPLE: usize = 3;

/// How a run samples, beyond what the profile says.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The effort level.
    pub profile: Profile,
    /// Overrides the profile's sample count (`--samples`), over all rounds.
    pub samples: Option<usize>,
    /// Overrides the profile's round count (`--rounds`).
    pub rounds: Option<usize>,
    /// The stability canary ([`canary::check`]; tests give a fixed one, so
    /// that no round of theirs is judged by the machine's phase).
    pub canary: fn() -> f64,
    /// The kernel canary ([`canary::kernel_check`]), recorded once a unit
    /// in the run's own process; `None` in tests, whose runs record none.
    pub kernel_canary: Option<fn() -> f64>,
    /// Seed of the order in which each pass measures the benchmarks (a new
    /// shuffle every pass, all drawn from this seed): recorded in the run,
    /// so an order can be repeated (`run --seed`).
    pub seed: u64,
    /// Overrides the profile's target precision (`--target-precision`,
    /// relative half-width; 0 turns the two-stage rule off).
    pub target_precision: Option<f64>,
    /// What the host's earlier runs say about each benchmark (by id), for
    /// the two-stage rule ([`crate::stats::stages`]); empty without history.
    pub history: Arc<HashMap<String, RowHistory>>,
}

/// What the `results` of earlier runs of the host (newest run first) say
/// about each benchmark for the two-stage rule: each run's median and its
/// used rounds' medians.
pub fn row_histories<'a>(
    results: impl IntoIterator<Item = &'a Measurement>,
) -> HashMap<String, RowHistory> {
    let mut out: HashMap<String, RowHistory> = HashMap::new();
    for m in results {
        let h = out.entry(m.id.clone()).or_default();
        h.medians.push(m.median);
        h.rounds.push(m.used_round_medians());
    }
    out
}

impl RunOptions {
    /// Options with the profile's own counts.
    pub fn new(profile: Profile) -> RunOptions {
        RunOptions {
            profile,
            samples: None,
            rounds: None,
            canary: canary::check,
            kernel_canary: Some(canary::kernel_check),
            seed: fastrand::u64(..),
            target_precision: None,
            history: Arc::default(),
        }
    }

    /// Options for tests: `profile` with these counts, a canary that never
    /// moves (no round is judged by the machine's phase) and seed 1.
    #[cfg(test)]
    pub(crate) fn fixed(
        profile: Profile,
        samples: Option<usize>,
        rounds: Option<usize>,
    ) -> RunOptions {
        RunOptions {
            profile,
            samples,
            rounds,
            canary: || 20_000.0,
            kernel_canary: None,
            seed: 1,
            target_precision: None,
            history: Arc::default(),
        }
    }

    /// The half-width (relative, 0.02 = ±2%) the two-stage rule aims a
    /// benchmark's interval at ([`crate::stats::stages::decide`]): after a
    /// first stage of [`FIRST_STAGE`] rounds, each benchmark's rounds are
    /// decided once, between the first stage and the planned count, against
    /// this target raised to half the run-to-run spread the host's history
    /// shows. `None`: the planned rounds, no more and no fewer
    /// (`--target-precision 0`, or no more rounds planned than the first stage).
    pub fn target_precision(&self) -> Option<f64> {
        let t = self
            .target_precision
            .unwrap_or(self.profile.target_precision());
        (t > 0.0 && self.rounds() > FIRST_STAGE).then_some(t)
    }

    /// The rounds decision of a benchmark whose first stage gave round
    /// medians `first`: the planned count when the rule is off.
    pub fn decide(&self, id: &str, first: &[f64]) -> RoundsDecision {
        match self.target_precision() {
            Some(t) => stages::decide(first, self.rounds(), t, self.history.get(id)),
            None => RoundsDecision::planned(self.rounds()),
        }
    }

    /// The rounds benchmark `id` is expected to take before its first
    /// stage is measured, from the host's history alone
    /// ([`stages::expected_rounds`]): what the run's announced time counts.
    pub fn expected_rounds(&self, id: &str) -> usize {
        match self.target_precision() {
            Some(t) => stages::expected_rounds(self.rounds(), t, self.history.get(id)),
            None => self.rounds(),
        }
    }

    /// The rounds benchmark `id` is expected to take on average, as the
    /// run's announced time counts them: [`RunOptions::expected_rounds`]
    /// where the host's history has its rounds, else, when the two-stage
    /// rule is on, the first stage and [`SECOND_STAGE_SHARE`] of the rounds
    /// after it.
    pub fn expected_rounds_mean(&self, id: &str) -> f64 {
        let planned = self.rounds();
        let known = self.history.get(id).and_then(RowHistory::round_sd);
        match self.target_precision() {
            Some(_) if known.is_none() => {
                FIRST_STAGE as f64 + (planned - FIRST_STAGE) as f64 * SECOND_STAGE_SHARE
            }
            _ => self.expected_rounds(id) as f64,
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
        self.stretched(b.budget(self.profile))
    }

    /// The time a run should expect a benchmark to take
    /// ([`Bench::expected`]), stretched as [`RunOptions::budget_of`].
    pub fn expected_of(&self, b: &dyn Bench) -> Duration {
        self.stretched(b.expected(self.profile))
    }

    /// `base` stretched when `--samples` asks for more samples than the profile.
    fn stretched(&self, base: Duration) -> Duration {
        let scale = self.samples_wanted() as f64 / self.profile.samples() as f64;
        if scale > 1.0 {
            base.mul_f64(scale)
        } else {
            base
        }
    }
}

/// Calibration's cost before a round's first sample, in sample targets,
/// when an operation is shorter than the target: batches grown tenfold at
/// most to about 1.2 targets (together at most about one target), then the
/// batch that reached the target run again to confirm it.
const CALIBRATION_TARGETS: f64 = 3.0;

/// A counted sample's length, in sample targets, when an operation is
/// shorter than the target: calibration aims 20% past the target, and a
/// batch pays its loop and timer besides (1.2–1.3 targets in traced rounds
/// of the quick and default profiles).
const SAMPLE_TARGETS: f64 = 1.25;

/// The rounds a benchmark with no history on the host is expected to take,
/// as a share of the rounds the two-stage rule may add after its first
/// stage, weighted by the benchmarks' expected times: on two first runs of
/// the whole default profile on a quiet 2-vCPU AMD EPYC (Zen 4) KVM guest,
/// 0.80 and 0.79 (by count 0.76 and 0.75: about 1100 of 1493 rows took all
/// 5 rounds, 340 stopped at 3; a `syscall process cpu` subset alone, 0.68).
pub const SECOND_STAGE_SHARE: f64 = 0.79;

/// What a benchmark takes over all rounds at `profile` with `budget`, as a
/// round spends it: its preparation (`prep`), calibration, a warm-up while
/// a batch is shorter than the warm-up, then samples until the round has
/// its share of the profile's samples or has spent its share of the budget
/// (at least one sample); `batch` is the time of the smallest batch, one
/// operation, zero when it is far shorter than the sample target. An
/// operation shorter than the target is batched up to it: calibration
/// costs [`CALIBRATION_TARGETS`] and each sample [`SAMPLE_TARGETS`]
/// targets, so such a benchmark takes far less than its budget at every
/// profile. An operation past the target is calibrated once or twice (a
/// second batch to confirm the first when it ended within a third of the
/// round's share) and then sampled. The run-time estimate uses it
/// ([`Bench::expected`]) with a benchmark's nominal times.
pub fn expected_slow(
    profile: Profile,
    budget: Duration,
    prep: Duration,
    batch: Duration,
) -> Duration {
    expected_rounds(profile, budget, prep, batch, Fit::Batched)
}

/// [`expected_slow`] for a benchmark whose first batch counts
/// ([`Timed::first_batch_counts`]): a batch past a third of the round's
/// share and past the warm-up is calibrated once and kept as a sample.
pub fn expected_slow_counted(
    profile: Profile,
    budget: Duration,
    prep: Duration,
    batch: Duration,
) -> Duration {
    expected_rounds(profile, budget, prep, batch, Fit::FirstCounts)
}

/// [`expected_slow`] for a benchmark whose batches hold one operation
/// whatever its length ([`Timed::max_ops`] of 1: a spawn per sample): the
/// samples are `op` long, not grown to the sample target, and calibration
/// stops at the first batch and its confirmation.
pub fn expected_one_op(
    profile: Profile,
    budget: Duration,
    prep: Duration,
    op: Duration,
) -> Duration {
    expected_rounds(
        profile,
        budget,
        prep,
        op.max(Duration::from_nanos(1)),
        Fit::OneOp,
    )
}

/// How a benchmark's batches fit the sample target.
#[derive(Clone, Copy, PartialEq)]
enum Fit {
    /// Batched up to the target while shorter; the first batch thrown away.
    Batched,
    /// As `Batched`, and a long first batch kept as a sample.
    FirstCounts,
    /// One operation a batch, however short.
    OneOp,
}

fn expected_rounds(
    profile: Profile,
    budget: Duration,
    prep: Duration,
    batch: Duration,
    fit: Fit,
) -> Duration {
    let rounds = profile.rounds();
    let share = (budget / rounds as u32).as_secs_f64();
    let warmup = (profile.warmup() / rounds as u32)
        .max(Duration::from_millis(2))
        .as_secs_f64();
    let target = profile.sample_target().as_secs_f64();
    let (prep, batch) = (prep.as_secs_f64(), batch.as_secs_f64());
    let wanted = (profile.samples() / rounds).max(1) as f64;
    // Samples of `each` after `spent`: until the share is spent, at least
    // one, at most the round's.
    let samples = |spent: f64, each: f64| ((share - spent) / each).ceil().clamp(1.0, wanted);
    let round = if batch < target && fit != Fit::OneOp {
        let sample = target * SAMPLE_TARGETS;
        // The warm-up runs whole batches until it has lasted its time.
        let spent = prep + target * CALIBRATION_TARGETS + warmup + sample / 2.0;
        spent + sample * samples(spent, sample)
    } else {
        let calibrate = if batch < share / 3.0 {
            2.0 * batch
        } else {
            batch
        };
        let warm = if batch < warmup {
            warmup + batch / 2.0
        } else {
            0.0
        };
        let spent = prep + calibrate + warm;
        let n = if fit == Fit::FirstCounts && batch >= share / 3.0 && batch >= warmup {
            // The calibration batch is the first sample; more while the share lasts.
            if spent >= share {
                0.0
            } else {
                samples(spent, batch).min(wanted - 1.0)
            }
        } else {
            samples(spent, batch)
        };
        spent + batch * n
    };
    Duration::from_secs_f64(round * rounds as f64)
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
    /// share of its expected time now spent (all that is left when it
    /// drops out).
    Finished(&'a str, Duration),
    /// The result of the benchmark at position `.0` of the run, from the rounds done so far.
    Result(usize, &'a Measurement),
}

/// One benchmark across its rounds.
pub(super) struct Track {
    pub(super) id: String,
    pub(super) bench: Box<dyn Bench>,
    pub(super) budget: Duration,
    /// The time it is expected to take over the planned rounds
    /// ([`RunOptions::expected_of`]): the progress its rounds make.
    pub(super) expected: Duration,
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
    /// The rounds it takes, decided once after the first stage (none yet).
    pub(super) decision: Option<RoundsDecision>,
}

/// The tracks of `benches`, nothing measured yet.
pub(super) fn new_tracks(benches: Vec<Box<dyn Bench>>, opts: &RunOptions) -> Vec<Track> {
    benches
        .into_iter()
        .map(|bench| Track {
            id: bench.id().to_string(),
            budget: opts.budget_of(bench.as_ref()),
            expected: opts.expected_of(bench.as_ref()),
            bench,
            samples_ns: Vec::new(),
            op_times: Vec::new(),
            rounds: Vec::new(),
            warnings: Vec::new(),
            details: None,
            out: false,
            cut: false,
            decision: None,
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
    /// Time its preparation took, and its calibration and warm-up (for
    /// [`TRACE_ENV`]).
    setup: (Duration, Duration),
}

/// Set (to anything) in the environment, every round of every benchmark
/// is written to standard error as it ends: where its time went
/// (preparation, calibration and warm-up, samples, tear-down). A
/// developer's aid for the run-time estimate ([`Bench::expected`]).
pub const TRACE_ENV: &str = "OPCOST_TRACE_ROUNDS";

/// Whether [`TRACE_ENV`] is set (read once).
fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(TRACE_ENV).is_some())
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
}

/// The stability canary read just before and just after a round (by the
/// worker that measured it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Canaries {
    /// Taken just before the round, ns.
    pub(super) before: f64,
    /// Taken just after it, ns.
    pub(super) after: f64,
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
    let ids: Vec<String> = group
        .iter()
        .filter(|&&i| !tracks[i].out)
        .map(|&i| tracks[i].id.clone())
        .collect();
    (rc.progress)(Event::Started(&ids));
    let before = Snapshot::now();
    let load = canary::load1();
    let mut live = prepare_members(tracks, group, pass, rc);
    if rc.overhead.is_none()
        && live
            .iter()
            .any(|l| tracks[l.track].bench.overhead() == Overhead::EmptyLoop)
    {
        *rc.overhead = Some(measure_loop_overhead(rc.opts.profile));
    }
    let cpu_start = Placement::current_cpu();
    sample_members(tracks, &mut live, pass, rc);
    let cpu_end = Placement::current_cpu();
    let interference = before.until(&Snapshot::now());
    let placement = cpu_start.zip(cpu_end).map(|(start, end)| Placement {
        start,
        end,
        canary: None,
    });
    let rounds = rc.opts.rounds() as u32;
    for l in live {
        let t = &mut tracks[l.track];
        (rc.progress)(Event::Finished(&t.id, t.expected / rounds));
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
            placement,
        });
        file_round(t, l, pass);
    }
}

/// Records on the round each member of `group` just measured the CPU its
/// canary check ran on.
pub(super) fn note_canary_cpu(tracks: &mut [Track], group: &[usize], cpu: Option<u32>) {
    for &i in group {
        if let Some(p) = tracks[i]
            .rounds
            .last_mut()
            .and_then(|r| r.placement.as_mut())
        {
            p.canary = cpu;
        }
    }
}

/// Prepares, calibrates and warms up each member of `group` still in the
/// run; a member that cannot drops out with its reason.
fn prepare_members(
    tracks: &mut [Track],
    group: &[usize],
    pass: usize,
    rc: &mut RoundCtx<'_>,
) -> Vec<Live> {
    let (ctx, opts) = (rc.ctx, rc.opts);
    let profile = opts.profile;
    let rounds = opts.rounds();
    let wanted = opts.round_samples(pass.min(rounds - 1));
    let warmup = (profile.warmup() / rounds as u32).max(Duration::from_millis(2));
    let mut live: Vec<Live> = Vec::new();
    for &i in group {
        let t = &mut tracks[i];
        if t.out || ctx.stopping() {
            continue;
        }
        let budget = t.budget / rounds as u32;
        let started = Instant::now();
        let prepared = catch_unwind(AssertUnwindSafe(|| t.bench.prepare(ctx)));
        let prep = started.elapsed();
        let failure = match prepared {
            Ok(Ok(mut timed)) => {
                let cal = catch_unwind(AssertUnwindSafe(|| {
                    calibrate(timed.as_mut(), profile.sample_target(), budget / 3).and_then(
                        |(ops, took)| {
                            // A calibration batch as long as the warm-up was the
                            // warm-up (a whole file tree, a 1 GiB pass): no need
                            // for another.
                            if took < warmup {
                                warm_up(timed.as_mut(), ops, warmup)?;
                            }
                            Ok((ops, took))
                        },
                    )
                }));
                match cal {
                    Ok(Ok((ops, took))) => {
                        timed.take_op_times(); // discard calibration and warm-up timings
                        // Past a third of the share the batch was not confirmed
                        // (one batch), and past the warm-up none followed it.
                        // (A benchmark whose samples carry CPU counts or lose
                        // the empty loop's cost is never counted so.)
                        let counted = timed.first_batch_counts()
                            && !t.bench.cpu_cost()
                            && t.bench.overhead() != Overhead::EmptyLoop
                            && took >= budget / 3
                            && took >= warmup;
                        let mut samples_ns = Vec::with_capacity(wanted);
                        if counted {
                            let per_op = slow_down(took).as_nanos() as f64 / ops as f64;
                            samples_ns.push(per_op.max(1e-3));
                        }
                        let spent = started.elapsed();
                        let n = samples_ns.len();
                        let done = n > 0
                            && (n >= wanted
                                || (n >= min_round(rounds, wanted)
                                    && opts.samples.is_none()
                                    && spent >= budget));
                        live.push(Live {
                            track: i,
                            timed,
                            ops,
                            budget,
                            wanted,
                            spent,
                            setup: (prep, spent - prep),
                            samples_ns,
                            op_times: Vec::new(),
                            cpu: t.bench.cpu_cost().then(CpuUse::default),
                            done,
                        });
                        continue;
                    }
                    Ok(Err(e)) => (format!("{e:#}"), true),
                    Err(p) => (panic_text(p), true),
                }
            }
            Ok(Err(PrepareError::Skip(r))) => (r, false),
            Ok(Err(PrepareError::Fail(err))) => (format!("{err:#}"), true),
            Err(p) => (panic_text(p), true),
        };
        let (reason, failed) = failure;
        drop_out(t, rc.out, reason, failed);
        (rc.progress)(Event::Finished(&t.id, budget_left(t, rounds, pass)));
    }
    live
}

/// Samples the prepared members round-robin, in a shuffled order each
/// turn, until each has its share of the round's samples (or its budget
/// is spent, or the run stops).
fn sample_members(tracks: &mut [Track], live: &mut [Live], pass: usize, rc: &mut RoundCtx<'_>) {
    let (ctx, opts) = (rc.ctx, rc.opts);
    let rounds = opts.rounds();
    let overhead = *rc.overhead;
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
            let result =
                catch_unwind(AssertUnwindSafe(|| l.timed.run(l.ops))).map(|r| r.map(slow_down));
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
                // This round is counted by the caller; the rounds it will not run, here.
                let left = budget_left(t, rounds, pass).saturating_sub(t.expected / rounds as u32);
                (rc.progress)(Event::Finished(&t.id, left));
                continue;
            }
            let n = l.samples_ns.len();
            // An explicit --samples is honoured; the profile's count yields to the budget.
            let out_of_budget = opts.samples.is_none() && l.spent >= l.budget;
            if n >= l.wanted || (n >= min_round(rounds, l.wanted) && out_of_budget) {
                l.done = true;
            }
        }
    }
}

/// Fewest samples a budget-limited round of `wanted` stops at, in a
/// measurement of `rounds` rounds.
fn min_round(rounds: usize, wanted: usize) -> usize {
    if rounds >= MIN_ROUNDS_ONE_SAMPLE {
        1
    } else {
        MIN_SAMPLES.div_ceil(rounds).min(wanted).max(1)
    }
}

/// Files a member's round in its track: its samples, timings, warnings
/// and details (the round itself is already pushed).
fn file_round(t: &mut Track, l: Live, pass: usize) {
    let (trace, teardown) = (tracing(), Instant::now());
    let (setup, spent, n, ops) = (l.setup, l.spent, l.samples_ns.len(), l.ops);
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
    if trace {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        eprintln!(
            "round {pass} {}: prepare {:.1} ms, calibrate and warm up {:.1} ms, {n} samples of {ops} ops {:.1} ms, tear down {:.1} ms",
            t.id,
            ms(setup.0),
            ms(setup.1),
            ms(spent.saturating_sub(setup.0 + setup.1)),
            ms(teardown.elapsed())
        );
    }
}

/// The expected time of round `pass` of a benchmark and of the rounds
/// after it: the progress it makes when it drops out.
pub(super) fn budget_left(t: &Track, rounds: usize, pass: usize) -> Duration {
    (t.expected / rounds as u32) * rounds.saturating_sub(pass) as u32
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    const MS: Duration = Duration::from_millis(1);

    /// An operation of a simulated `ns` that counts its batches, and whose
    /// first batch counts when `counts` says so.
    struct Counted {
        ns: u64,
        counts: bool,
        batches: Arc<AtomicU32>,
    }
    impl Timed for Counted {
        fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
            self.batches.fetch_add(1, Ordering::Relaxed);
            Ok(Duration::from_nanos(ops * self.ns))
        }
        fn first_batch_counts(&self) -> bool {
            self.counts
        }
    }
    struct CountedBench(u64, bool, Arc<AtomicU32>);
    impl Bench for CountedBench {
        fn id(&self) -> &str {
            "t.counted"
        }
        fn summary(&self) -> &str {
            "counted"
        }
        fn unit(&self) -> crate::harness::Unit {
            crate::harness::Unit::Latency
        }
        fn budget(&self, _profile: Profile) -> Duration {
            // None: calibration never has time to confirm a batch, and a
            // round stops at its first sample (simulated time never passes).
            Duration::ZERO
        }
        fn prepare(&self, _ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
            Ok(Box::new(Counted {
                ns: self.0,
                counts: self.1,
                batches: self.2.clone(),
            }))
        }
    }

    /// One default round of an operation of `ns`: (batches run, samples kept).
    fn one_round(ns: u64, counts: bool) -> (u32, usize) {
        let batches = Arc::new(AtomicU32::new(0));
        let opts = RunOptions::fixed(Profile::Default, None, None);
        let bench: Box<dyn Bench> = Box::new(CountedBench(ns, counts, batches.clone()));
        let mut tracks = new_tracks(vec![bench], &opts);
        let ctx = crate::harness::test_ctx();
        let (mut out, mut overhead) = (RunOutcome::default(), None);
        let mut progress = |_: Event<'_>| {};
        let mut rc = RoundCtx {
            ctx: &ctx,
            opts: &opts,
            overhead: &mut overhead,
            out: &mut out,
            progress: &mut progress,
            at: 0.0,
        };
        run_round(&mut tracks, &[0], 0, &mut rc);
        (batches.load(Ordering::Relaxed), tracks[0].rounds[0].n)
    }

    #[test]
    fn a_first_batch_that_counts_is_the_rounds_sample() {
        // A one-second batch past the (empty) share: kept when the
        // benchmark says its first batch counts, else thrown away and
        // followed by the sample.
        assert_eq!(one_round(1_000_000_000, true), (1, 1));
        assert_eq!(one_round(1_000_000_000, false), (2, 1));
    }

    #[test]
    fn a_counted_first_batch_saves_one_operation_a_round() {
        let p = Profile::Default;
        let budget = p.default_budget();
        let op = 2000 * MS;
        // Past the share: one operation a round instead of two.
        assert_eq!(expected_slow_counted(p, budget, MS, op), 5 * (MS + op));
        assert_eq!(expected_slow(p, budget, MS, op), 5 * (MS + 2 * op));
        // A short batch is confirmed and thrown away either way.
        let short = Duration::from_micros(100);
        assert_eq!(
            expected_slow_counted(p, budget, MS, short),
            expected_slow(p, budget, MS, short)
        );
    }

    /// The seconds two durations differ by.
    fn off(a: Duration, b: Duration) -> f64 {
        (a.as_secs_f64() - b.as_secs_f64()).abs()
    }

    #[test]
    fn fast_operations_take_their_samples_not_their_budget() {
        // Default: calibration 3 x 5 ms, the warm-up's 10 ms a round and
        // half a batch past it, then 8 samples of 1.25 x 5 ms; five rounds.
        let p = Profile::Default;
        let e = expected_slow(p, p.default_budget(), Duration::ZERO, Duration::ZERO);
        let round = 15.0 + 10.0 + 3.125 + 8.0 * 6.25;
        assert!(
            off(e, 5 * Duration::from_secs_f64(round * 1e-3)) < 1e-6,
            "{e:?}"
        );
        for p in [Profile::Quick, Profile::Default, Profile::Thorough] {
            let budget = p.default_budget();
            let e = expected_slow(p, budget, Duration::ZERO, Duration::ZERO);
            assert!(e < budget, "{p:?}: {e:?}");
            // An operation of a tenth of the target is batched alike.
            let tenth = p.sample_target() / 10;
            assert_eq!(expected_slow(p, budget, Duration::ZERO, tenth), e);
        }
    }

    #[test]
    fn one_operation_samples_take_their_operations_not_the_target() {
        // Default, a 150 µs spawn a sample: calibration runs it twice, the
        // warm-up its 10 ms and half an operation, then 8 samples; five rounds.
        let p = Profile::Default;
        let op = Duration::from_micros(150);
        let e = expected_one_op(p, p.default_budget(), Duration::ZERO, op);
        let round = 2.0 * 0.15 + 10.0 + 0.075 + 8.0 * 0.15;
        assert!(
            off(e, 5 * Duration::from_secs_f64(round * 1e-3)) < 1e-6,
            "{e:?}"
        );
        // Far less than the same operation batched up to the target; alike
        // once an operation is past the target.
        assert!(e < expected_slow(p, p.default_budget(), Duration::ZERO, op) / 3);
        let long = p.sample_target() * 2;
        assert_eq!(
            expected_one_op(p, p.default_budget(), Duration::ZERO, long),
            expected_slow(p, p.default_budget(), Duration::ZERO, long)
        );
    }

    #[test]
    fn a_first_run_expects_part_of_the_second_stage() {
        let mut o = RunOptions::fixed(Profile::Default, None, None);
        let mean = o.expected_rounds_mean("t.x");
        assert!(
            (mean - (3.0 + 2.0 * SECOND_STAGE_SHARE)).abs() < 1e-12,
            "{mean}"
        );
        // Rounds that agreed on this host: the history's count.
        let tight = RowHistory {
            medians: vec![100.0, 100.5],
            rounds: vec![vec![99.9, 100.0, 100.1]; 2],
        };
        o.history = Arc::new([("t.x".to_string(), tight)].into());
        assert_eq!(o.expected_rounds_mean("t.x"), 3.0);
        // The rule off, or nothing to decide (quick): the planned count.
        let mut off = RunOptions::fixed(Profile::Default, None, None);
        off.target_precision = Some(0.0);
        assert_eq!(off.expected_rounds_mean("t.x"), 5.0);
        let quick = RunOptions::fixed(Profile::Quick, None, None);
        assert_eq!(quick.expected_rounds_mean("t.x"), 3.0);
    }

    #[test]
    fn a_preparation_takes_samples_from_the_share_but_leaves_one() {
        // Quick: 120 ms over 3 rounds is 40 ms a round. 30 ms of set-up,
        // calibration and warm-up (6.96 ms) leave room for 3 samples of
        // 1.25 ms, not the round's 5.
        let p = Profile::Quick;
        let (budget, setup) = (p.default_budget(), 30 * MS);
        let before = 30.0 + 3.0 + 10.0 / 3.0 + 0.625;
        let e = expected_slow(p, budget, setup, Duration::ZERO);
        assert!(off(e, 3 * Duration::from_secs_f64((before + 3.0 * 1.25) * 1e-3)) < 1e-6);
        // Past the share: one sample.
        let e = expected_slow(p, budget, 100 * MS, Duration::ZERO);
        let round = before + 70.0 + 1.25;
        assert!(
            off(e, 3 * Duration::from_secs_f64(round * 1e-3)) < 1e-6,
            "{e:?}"
        );
    }

    #[test]
    fn a_slow_preparation_outlasts_the_budget_even_with_fast_operations() {
        let p = Profile::Default;
        let budget = p.default_budget();
        let e = expected_slow(p, budget, 500 * MS, Duration::ZERO);
        // Five rounds of at least the preparation each.
        assert!(e >= 5 * 500 * MS, "{e:?}");
        assert!(e < 5 * 700 * MS, "{e:?}");
    }

    #[test]
    fn an_operation_longer_than_the_share_is_run_twice_a_round() {
        // Default: 800 ms over 5 rounds is 160 ms a round; a 1 s operation
        // is calibrated once (no confirming batch past a third of the share)
        // and sampled once.
        let p = Profile::Default;
        let e = expected_slow(p, p.default_budget(), 200 * MS, 1000 * MS);
        assert_eq!(e, 5 * (200 * MS + 2 * 1000 * MS));
    }

    #[test]
    fn samples_fill_the_share_but_no_more_than_the_round_wants() {
        let p = Profile::Default;
        // 20 ms batches in a 10 s budget (2 s a round): calibrated twice,
        // then 8 samples a round, not the 100 the share would hold; the
        // round ends there, far inside its share.
        let e = expected_slow(p, Duration::from_secs(10), Duration::ZERO, 20 * MS);
        assert_eq!(e, 5 * 10 * 20 * MS);
        // 60 ms batches in a 1 s budget (200 ms a round): calibrated twice
        // (60 < 200/3 ms), then samples until the share is spent: two
        // (120 + 60 ms is not yet 200).
        let e = expected_slow(p, Duration::from_secs(1), Duration::ZERO, 60 * MS);
        assert_eq!(e, 5 * 4 * 60 * MS);
    }
}
