//! The run loop: rounds of every benchmark interleaved across the run (how
//! many decided once, after a first stage: [`crate::stats::stages`]),
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
//! interval ([`crate::stats::round_interval`]).

use std::time::{Duration, Instant};

use super::canary::{self, PhaseCounts, Snapshot, Stability};
use super::phase::{correct_slow_rounds, phase_slopes, set_aside_slow_rounds};
use super::response;
use super::round::{
    Canaries, Event, RoundCtx, RunOptions, RunOutcome, Skipped, Track, budget_left, new_tracks,
    run_round,
};
use super::warnings::Warning;
use super::worker::{Pool, WorkerCmd};
use super::{Bench, Ctx, Measurement, OpStats, Overhead, area_of};
use crate::stats::stages::{FIRST_STAGE, RoundsDecision};
use crate::stats::{Summary, is_bimodal, round_interval};

/// Fewest samples kept from a benchmark interrupted by Ctrl-C.
pub const MIN_SAMPLES_INTERRUPTED: usize = 3;
/// The clock assumed for the below-one-cycle check: the host's nominal clock
/// is no bound (boost clocks run well above it, and VMs often hide it), so
/// a result is flagged only below one cycle of the fastest clock CPUs reach.
pub const MAX_PLAUSIBLE_GHZ: f64 = 6.0;

/// The order in which one pass measures `n` groups: a fresh shuffle drawn
/// from the run's seeded generator.
fn pass_order(rng: &mut fastrand::Rng, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    order
}

/// The canary over a run: every check in the order taken, and each unit
/// run (group, pass) with the check taken just before it.
#[derive(Default)]
struct CanaryRecord {
    units: Vec<(usize, usize, f64)>,
    checks: Vec<f64>,
    /// The kernel canary's checks ([`canary::kernel_check`]), one a unit,
    /// taken in the run's own process; empty where the run's stability
    /// canary is fixed (tests: [`RunOptions::kernel_canary`]).
    kernel: Vec<f64>,
}

/// Runs `benches` in rounds (interleaving those with the same
/// [`Bench::interleave`] key) and returns their measurements in order.
pub fn run(
    benches: Vec<Box<dyn Bench>>,
    ctx: &Ctx,
    opts: &RunOptions,
    workers: Option<WorkerCmd>,
    progress: &mut dyn FnMut(Event<'_>),
) -> RunOutcome {
    let side = Side { benches, workers };
    let mut outs = run_sides(vec![side], ctx, opts, &mut |_, e| progress(e));
    outs.pop().expect("one side, one outcome")
}

/// One side of a paired run (`ab`): the benchmarks (the same ids on every
/// side) and how its round workers start (its setting).
pub struct Side {
    /// The benchmarks, in the run's order.
    pub benches: Vec<Box<dyn Bench>>,
    /// Its round workers (none: its rounds are measured here).
    pub workers: Option<WorkerCmd>,
}

/// Runs the same benchmarks on every side, round `k` of a group measured
/// on each side back to back (the sides' order drawn from the seed for each
/// pair), so the rounds of a pair lie milliseconds apart instead of a whole
/// round of the pattern; returns each side's outcome. A slow phase falls on
/// both rounds of a pair: slow rounds are marked, but neither measured
/// again nor set aside (either would take a round from one side only, and
/// unpair it). The progress callback is told the side.
pub fn run_paired(
    sides: Vec<Side>,
    ctx: &Ctx,
    opts: &RunOptions,
    progress: &mut dyn FnMut(usize, Event<'_>),
) -> Vec<RunOutcome> {
    run_sides(sides, ctx, opts, progress)
}

/// The state of one side of a run.
struct SideState {
    tracks: Vec<Track>,
    pool: Option<Pool>,
    out: RunOutcome,
    overhead: Option<f64>,
    record: CanaryRecord,
    /// The canary a worker took after the last round it measured.
    last_after: Option<f64>,
}

/// The run loop of [`run`] (one side) and [`run_paired`] (several).
fn run_sides(
    sides: Vec<Side>,
    ctx: &Ctx,
    opts: &RunOptions,
    progress: &mut dyn FnMut(usize, Event<'_>),
) -> Vec<RunOutcome> {
    let started = Instant::now();
    let rounds = opts.rounds();
    let paired = sides.len() > 1;
    let mut st: Vec<SideState> = sides
        .into_iter()
        .map(|s| SideState {
            tracks: new_tracks(s.benches, opts),
            // A run of one round has no variation between rounds to see.
            pool: s
                .workers
                .filter(|_| rounds >= 2)
                .map(|cmd| Pool::new(cmd, rounds)),
            out: RunOutcome::default(),
            overhead: None,
            record: CanaryRecord::default(),
            last_after: None,
        })
        .collect();
    let groups = group_by_interleave(st[0].tracks.iter().map(|t| t.bench.interleave()));
    let run_start = Snapshot::now();

    let mut order_rng = fastrand::Rng::with_seed(opts.seed);
    'passes: for pass in 0..rounds {
        if pass == FIRST_STAGE {
            decide_rounds(&mut st, &groups, opts, progress);
        }
        let waiting = |t: &Track| !t.out && pass < taken(t, rounds);
        let order = pass_order(&mut order_rng, groups.len());
        for g in order {
            if ctx.stopping() {
                break 'passes;
            }
            let waits = |side: &SideState| groups[g].iter().any(|&i| waiting(&side.tracks[i]));
            if !st.iter().any(waits) {
                continue;
            }
            // The sides of a pair in an order of the seed's (a single side
            // draws nothing, so a run's order stays what its seed gave).
            let mut side_order: Vec<usize> = (0..st.len()).collect();
            if paired {
                order_rng.shuffle(&mut side_order);
            }
            for s in side_order {
                if ctx.stopping() {
                    break 'passes;
                }
                let side = &mut st[s];
                if waits(side) {
                    measure_unit(side, &groups[g], g, pass, ctx, opts, started, &mut |e| {
                        progress(s, e)
                    });
                }
            }
        }
    }

    // The time the rounds decided were given: the share of it that slow
    // rounds may be measured again in follows the rounds the run took.
    let planned: Duration = st
        .iter()
        .flat_map(|s| &s.tracks)
        .map(|t| (t.budget / rounds as u32) * taken(t, rounds) as u32)
        .sum();
    let mut outs = Vec::with_capacity(st.len());
    for (s, side) in st.into_iter().enumerate() {
        let SideState {
            mut tracks,
            mut pool,
            mut out,
            mut overhead,
            mut record,
            last_after,
        } = side;
        let progress = &mut |e: Event<'_>| progress(s, e);
        record.checks.push(last_after.unwrap_or_else(opts.canary));
        // Judge every round by the canaries on either side of it, against
        // the run's fast phase, then measure slow rounds again while the
        // budget lasts (not in a paired run: that would unpair them).
        let counts = judge_and_remeasure(
            &mut tracks,
            &groups,
            &mut record,
            (planned, !paired),
            &mut RoundCtx {
                ctx,
                opts,
                overhead: &mut overhead,
                out: &mut out,
                progress,
                at: 0.0,
            },
            pool.as_mut(),
            started,
        );
        drop(pool); // every round is measured: the workers may go

        out.stability = stability(&tracks, rounds, &record, counts, &run_start);
        out.interrupted |= ctx.stopping();
        finish(&tracks, ctx, opts, overhead, &mut out, progress);
        outs.push(out);
    }
    outs
}

/// Measures round `pass` of group `g` (`group`) on one side, records the
/// canary taken with it and reports the members' results so far.
#[allow(clippy::too_many_arguments)]
fn measure_unit(
    side: &mut SideState,
    group: &[usize],
    g: usize,
    pass: usize,
    ctx: &Ctx,
    opts: &RunOptions,
    started: Instant,
    progress: &mut dyn FnMut(Event<'_>),
) {
    // The canary is taken where the round runs: a run with workers takes
    // it in the worker (the run's own process, just woken from waiting,
    // reads slow after a worker's round).
    let here = side.pool.is_none().then(opts.canary);
    let here_cpu = here.and(super::Placement::current_cpu());
    let mut rctx = RoundCtx {
        ctx,
        opts,
        overhead: &mut side.overhead,
        out: &mut side.out,
        progress,
        at: started.elapsed().as_secs_f64(),
    };
    let before: Vec<usize> = group.iter().map(|&i| side.tracks[i].rounds.len()).collect();
    let measured = round(&mut side.tracks, group, pass, &mut rctx, side.pool.as_mut());
    if here.is_some() {
        // Only the members that measured a round in this one.
        let grew: Vec<usize> = group
            .iter()
            .zip(&before)
            .filter(|&(&i, &n)| side.tracks[i].rounds.len() > n)
            .map(|(&i, _)| i)
            .collect();
        super::round::note_canary_cpu(&mut side.tracks, &grew, here_cpu);
    }
    let c = here
        .or(measured.map(|m| m.before))
        .unwrap_or_else(opts.canary);
    side.last_after = measured.map(|m| m.after);
    side.record.checks.push(c);
    side.record.units.push((g, pass, c));
    if let Some(kernel) = opts.kernel_canary {
        side.record.kernel.push(kernel());
    }
    for &i in group {
        if let Some(m) = interim(&side.tracks[i], ctx, opts, side.overhead) {
            progress(Event::Result(i, &m));
        }
    }
}

/// The run's stability: its canary checks, the canary over the run's time
/// from the rounds of its passes (rounds measured again come last, chosen
/// for a fast canary: not a trend), the phase counts and the interference
/// since `run_start`.
fn stability(
    tracks: &[Track],
    rounds: usize,
    record: &CanaryRecord,
    mut counts: PhaseCounts,
    run_start: &Snapshot,
) -> Option<Stability> {
    let interference = run_start.until(&Snapshot::now());
    let views: Vec<response::RoundsOf<'_>> = tracks
        .iter()
        .map(|t| response::RoundsOf {
            area: area_of(&t.id),
            rounds: &t.rounds,
            higher_is_better: t.bench.unit().higher_is_better(),
        })
        .collect();
    counts.placement = response::placement_effect(&views);
    let timeline: Vec<(f64, f64)> = tracks
        .iter()
        .flat_map(|t| t.rounds.iter().take(rounds))
        .filter_map(|r| Some((r.at_s, r.canary?)))
        .collect();
    let mut s = Stability::of(&record.checks, &timeline, counts, &interference)?;
    s.kernel_canary_ns = canary::baseline(&record.kernel);
    Some(s)
}

/// The rounds a benchmark takes: those decided after the first stage, else
/// the planned count.
fn taken(t: &Track, rounds: usize) -> usize {
    t.decision.map_or(rounds, |d| d.taken)
}

/// After the first stage: decides, once, the rounds of every group (on
/// every side alike, so the rounds of a pair stay paired) by the two-stage
/// rule ([`RunOptions::decide`]). A group takes the most rounds any member
/// needs, with that member's reason. The rounds it will not run that the
/// announced time counted ([`RunOptions::expected_rounds`]) are reported
/// finished, so the progress bar moves on by them.
fn decide_rounds(
    st: &mut [SideState],
    groups: &[Vec<usize>],
    opts: &RunOptions,
    progress: &mut dyn FnMut(usize, Event<'_>),
) {
    let rounds = opts.rounds();
    for g in groups {
        let decision = st
            .iter()
            .flat_map(|side| g.iter().map(move |&i| &side.tracks[i]))
            .filter(|t| !t.out)
            .map(|t| {
                let first: Vec<f64> = t
                    .rounds
                    .iter()
                    .filter(|r| r.used)
                    .take(FIRST_STAGE)
                    .map(|r| r.median)
                    .collect();
                opts.decide(&t.id, &first)
            })
            .max_by_key(|d| d.taken)
            .unwrap_or_else(|| RoundsDecision::planned(rounds));
        for (s, side) in st.iter_mut().enumerate() {
            for &i in g {
                let t = &mut side.tracks[i];
                t.decision = Some(decision);
                let counted = opts.expected_rounds(&t.id);
                if !t.out && decision.taken < counted {
                    let left = budget_left(t, rounds, decision.taken)
                        .saturating_sub(budget_left(t, rounds, counted));
                    progress(s, Event::Finished(&t.id, left));
                }
            }
        }
    }
}

/// Files each benchmark's measurement from its rounds, in run order, with
/// the skips (a benchmark stopped before enough samples is one).
fn finish(
    tracks: &[Track],
    ctx: &Ctx,
    opts: &RunOptions,
    overhead: Option<f64>,
    out: &mut RunOutcome,
    progress: &mut dyn FnMut(Event<'_>),
) {
    let rounds = opts.rounds();
    // Skips in run order, whatever order the rounds ran in.
    let position = |id: &str| tracks.iter().position(|t| t.id == id);
    out.skipped.sort_by_key(|s| position(&s.id));
    let stopped = out.interrupted;
    let mut done: Vec<(usize, Measurement)> = Vec::new();
    for (i, t) in tracks.iter().enumerate() {
        if t.out {
            continue;
        }
        let n: usize = t.samples_ns.iter().map(Vec::len).sum();
        if n == 0 {
            continue; // interrupted before any sample
        }
        let complete = t.rounds.iter().filter(|r| r.used).count() >= taken(t, rounds) && !t.cut;
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
        } else {
            // The samples of the rounds it was decided to take.
            let wanted: usize = (0..taken(t, rounds)).map(|r| opts.round_samples(r)).sum();
            if n < wanted {
                extra.push(Warning::FewSamples { got: n, wanted });
            }
        }
        if let Some(m) = summarise(t, ctx, opts, overhead, extra) {
            done.push((i, m));
        }
    }
    for (i, m) in done {
        progress(Event::Result(i, &m));
        out.measurements.push(m);
    }
}

/// Measures round `pass` of a group: in the pass's own process when the
/// run has workers (returning the canaries it took just before and just
/// after the round), else here.
fn round(
    tracks: &mut [Track],
    group: &[usize],
    pass: usize,
    rc: &mut RoundCtx<'_>,
    pool: Option<&mut Pool>,
) -> Option<Canaries> {
    match pool {
        Some(pool) => pool.round(tracks, group, pass, rc),
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
/// the slow rounds left in the estimate for the phase (only marks them
/// when `remeasure` is false). Returns the counts of each.
fn judge_and_remeasure(
    tracks: &mut [Track],
    groups: &[Vec<usize>],
    record: &mut CanaryRecord,
    (planned, remeasure): (Duration, bool),
    rc: &mut RoundCtx<'_>,
    mut pool: Option<&mut Pool>,
    started: Instant,
) -> PhaseCounts {
    let Some(base) = canary::baseline(&record.checks) else {
        return PhaseCounts {
            rounds: tracks.iter().map(|t| t.rounds.len()).sum(),
            ..PhaseCounts::default()
        };
    };
    let CanaryRecord { units, checks, .. } = record;
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
    // Where the run's own rounds do not measure slower when the canary
    // reads slow, its slow rounds are the machine's states: kept as measured.
    let responses = canary_responses(tracks);
    let follows: Vec<bool> = tracks
        .iter()
        .map(|t| response::predicts(&responses, area_of(&t.id)))
        .collect();
    let unpredicted: usize = tracks
        .iter()
        .zip(&follows)
        .filter(|(_, f)| !**f)
        .map(|(t, _)| t.rounds.iter().filter(|r| r.slow).count())
        .sum();
    let slow_units: Vec<(usize, usize)> = slow_units
        .into_iter()
        .filter(|(g, _)| groups[*g].iter().any(|&i| follows[i]))
        .collect();
    if !remeasure {
        // Paired: each slow round is marked, and stays in, as its pair's does.
        return PhaseCounts {
            rounds: tracks.iter().map(|t| t.rounds.len()).sum(),
            slow: slow_rounds,
            unpredicted,
            responses,
            ..PhaseCounts::default()
        };
    }
    let allowance = planned.mul_f64(canary::REMEASURE_SHARE);
    let re_start = Instant::now();
    let mut replaced = 0;
    for (g, pass) in slow_units {
        if rc.ctx.stopping() || re_start.elapsed() >= allowance {
            break;
        }
        let c = pool
            .as_deref_mut()
            .and_then(|p| p.canary(pass, rc.ctx))
            .unwrap_or_else(rc.opts.canary);
        checks.push(c);
        if c / base > canary::SLOW_PHASE {
            continue; // still slow: keep the round, try the next one
        }
        let before: Vec<usize> = groups[g].iter().map(|&i| tracks[i].rounds.len()).collect();
        rc.at = started.elapsed().as_secs_f64();
        let after = round(tracks, &groups[g], pass, rc, pool.as_deref_mut())
            .map_or_else(rc.opts.canary, |m| m.after);
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
    let slopes = phase_slopes(tracks, &responses);
    let set_aside = tracks
        .iter_mut()
        .zip(&follows)
        .filter(|(_, f)| **f)
        .map(|(t, _)| set_aside_slow_rounds(&mut t.rounds))
        .sum();
    let corrected = correct_slow_rounds(tracks, &slopes, &follows);
    PhaseCounts {
        rounds: tracks.iter().map(|t| t.rounds.len()).sum(),
        slow: slow_rounds,
        remeasured: replaced,
        set_aside,
        corrected,
        unpredicted,
        responses,
        placement: None,
    }
}

/// Each area's response to the canary, from the rounds of its benchmarks
/// that are not paced (a paced benchmark waits on a clock, not the CPU).
fn canary_responses(tracks: &[Track]) -> Vec<response::Response> {
    let views: Vec<response::RoundsOf<'_>> = tracks
        .iter()
        .filter(|t| !t.bench.paced())
        .map(|t| response::RoundsOf {
            area: area_of(&t.id),
            rounds: &t.rounds,
            higher_is_better: t.bench.unit().higher_is_better(),
        })
        .collect();
    response::responses(&views)
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

/// The result so far of a benchmark still being measured (no warnings about
/// its sample count: it is not finished).
fn interim(t: &Track, ctx: &Ctx, opts: &RunOptions, overhead: Option<f64>) -> Option<Measurement> {
    if t.out {
        return None;
    }
    summarise(t, ctx, opts, overhead, Vec::new())
}

/// Builds the measurement of a benchmark from its used rounds, with its
/// sanity warnings and its rounds decision. The interval of a benchmark
/// that stopped before its planned rounds is widened to the least its
/// decision allows ([`RoundsDecision::least_half_width`]).
fn summarise(
    t: &Track,
    ctx: &Ctx,
    opts: &RunOptions,
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
    let median_ns = crate::stats::median(&samples_ns)?;
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
    let decision = t
        .decision
        .unwrap_or_else(|| RoundsDecision::planned(opts.rounds()));
    let least = decision.least_half_width(used.len(), opts.target_precision().unwrap_or(0.0));
    if least > 0.0 {
        summary.ci_low = summary.ci_low.min(summary.median * (-least).exp());
        summary.ci_high = summary.ci_high.max(summary.median * least.exp());
    }

    let ghz = ctx.host.cpu_ghz().unwrap_or(0.0).max(MAX_PLAUSIBLE_GHZ);
    // Only a latency cannot beat a cycle: rates and throughputs may count
    // many operations or bytes per cycle (independent adds, a memcpy).
    if unit == super::Unit::Latency && median_ns < 1.0 / ghz {
        warns.push(Warning::BelowOneCycle { ns: median_ns, ghz });
    }
    let noisy = summary.is_noisy();
    warns.extend(Warning::noise_of(&summary));
    let per_op = op_stats(&t.op_times);
    if let Some(p) = per_op.as_ref().filter(|p| p.bimodal) {
        warns.push(Warning::Bimodal {
            p50: p.p50,
            p99: p.p99,
        });
    }
    let mut warnings = t.warnings.clone();
    warnings.extend(warns.iter().map(ToString::to_string));

    let mut m = Measurement {
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
        rounds_decision: Some(decision),
        between_runs: None,
        samples: values,
    };
    // What the host's earlier runs say varies from run to run.
    if let Some(h) = opts.history.get(&t.id) {
        m.add_between_runs(h);
    }
    super::levels::note(&mut m);
    Some(m)
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
    let q = |p| crate::stats::quantile_sorted(&s, p);
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
    use crate::harness::{PrepareError, Profile, Timed, test_ctx};
    use crate::suites::bench::FnBench;

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

    #[test]
    fn the_kernel_canary_is_recorded_only_where_the_run_takes_it() {
        let benches = || vec![fake("t.a", 1000, None), fake("t.b", 2000, None)];
        let mut opts = RunOptions::fixed(Profile::Quick, Some(6), Some(3));
        let out = run(benches(), &test_ctx(), &opts, None, &mut |_| {});
        assert_eq!(out.stability.unwrap().kernel_canary_ns, None);
        opts.kernel_canary = Some(|| 6400.0);
        let out = run(benches(), &test_ctx(), &opts, None, &mut |_| {});
        assert_eq!(out.stability.unwrap().kernel_canary_ns, Some(6400.0));
        // the real one: 64 system calls take some time, and not a second
        let k = super::canary::kernel_check();
        assert!(k.is_finite() && k > 0.0 && k < 1e9, "{k}");
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
        let opts = RunOptions::fixed(Profile::Quick, Some(8), None);
        let out = run(
            vec![fake("t.a", 1000, Some("k")), fake("t.b", 2000, Some("k"))],
            &test_ctx(),
            &opts,
            None,
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
    fn a_round_records_the_cpus_it_ran_on_pinned_and_unpinned() {
        let opts = RunOptions::fixed(Profile::Quick, Some(4), None);
        let cpus = |out: &RunOutcome| -> Vec<super::super::Placement> {
            out.measurements
                .iter()
                .flat_map(|m| m.rounds.iter())
                .filter_map(|r| r.placement)
                .collect()
        };
        let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let free = run(
            vec![fake("t.a", 1000, None)],
            &test_ctx(),
            &opts,
            None,
            &mut |_| {},
        );
        let seen = cpus(&free);
        assert_eq!(seen.len(), free.measurements[0].rounds.len(), "{seen:?}");
        // on a CPU of this machine (ids may exceed the count where CPUs are
        // offline, never by much); the canary's CPU recorded beside
        assert!(
            seen.iter().all(|p| p.start < 4 * ncpu.max(1) + 64),
            "{seen:?}"
        );
        assert!(seen.iter().all(|p| p.canary.is_some()), "{seen:?}");
        // pinned to the CPU this thread is on: every round starts and ends there
        let Some(here) = super::super::Placement::current_cpu() else {
            return; // the kernel does not say
        };
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes
        // inside it; sched_{get,set}affinity act on this thread only.
        let old = unsafe {
            let mut old: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old);
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(here as usize, &mut one);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
            old
        };
        let pinned = run(
            vec![fake("t.a", 1000, None)],
            &test_ctx(),
            &opts,
            None,
            &mut |_| {},
        );
        // SAFETY: restores the set read above, on this thread.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &old);
        }
        let seen = cpus(&pinned);
        assert!(!seen.is_empty());
        for p in seen {
            assert_eq!((p.start, p.end, p.canary), (here, here, Some(here)));
        }
    }

    #[test]
    fn rounds_are_decided_once_after_the_first_stage_and_recorded() {
        use crate::stats::stages::Reason;
        // Each round of "wide" reads 1000 or 1300 ns in turn: far wider
        // than ±2%, so it takes every planned round; "tight" (exact fake
        // times) stops after the first stage.
        let jitter = |key| {
            let rounds = std::sync::atomic::AtomicU64::new(0);
            let b = FnBench::new("t.wide", "jitter", Unit::Latency, move |_| {
                let k = rounds.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(Box::new(FakeTimed {
                    ns: 1000 + 300 * (k % 2),
                }))
            });
            match key {
                Some(k) => b.interleave(k).boxed(),
                None => b.boxed(),
            }
        };
        let opts = |target| RunOptions {
            target_precision: target,
            ..RunOptions::fixed(Profile::Default, Some(10), Some(5))
        };
        let rounds_of = |target, key| {
            let benches: Vec<Box<dyn Bench>> = vec![fake("t.tight", 1000, key), jitter(key)];
            let out = run(benches, &test_ctx(), &opts(target), None, &mut |_| {});
            let n = |id: &str| {
                let m = out
                    .measurements
                    .iter()
                    .find(|m| m.id == id)
                    .unwrap()
                    .clone();
                let few = m.warnings.iter().any(|w| w.contains("samples"));
                (m.rounds.len(), few, m)
            };
            (n("t.tight"), n("t.wide"))
        };
        // The profile's own target (none given).
        let ((tight, tight_few, m), (wide, _, w)) = rounds_of(None, None);
        assert_eq!(tight, 3, "the first stage is enough");
        assert!(
            !tight_few,
            "a benchmark that stopped early is not short of samples"
        );
        let d = m.rounds_decision.unwrap();
        assert_eq!((d.planned, d.taken, d.reason), (5, 3, Reason::FirstStage));
        // It states no less than the target it stopped at.
        assert!(m.ci_high / m.median >= 1.0199, "{} {}", m.ci_high, m.median);
        assert_eq!(wide, 5, "never more than the planned rounds");
        let d = w.rounds_decision.unwrap();
        assert_eq!((d.planned, d.taken, d.reason), (5, 5, Reason::FirstStage));
        // Interleaved: the group takes what its widest member needs.
        let ((tight, ..), (wide, ..)) = rounds_of(None, Some("k"));
        assert_eq!((tight, wide), (5, 5));
        // Off: the planned rounds, no more and no fewer, said so.
        let ((tight, _, m), (wide, ..)) = rounds_of(Some(0.0), None);
        assert_eq!((tight, wide), (5, 5));
        assert_eq!(m.rounds_decision.unwrap().reason, Reason::Planned);
        assert!(
            (m.ci_high / m.ci_low - 1.0).abs() < 1e-9,
            "its own interval"
        );
    }

    #[test]
    fn rounds_not_run_move_the_progress_only_where_the_estimate_counted_them() {
        use crate::stats::stages::RowHistory;
        let finished = |history: bool| {
            let mut opts = RunOptions::fixed(Profile::Default, Some(10), Some(5));
            if history {
                // Earlier runs whose rounds agreed: the estimate counted 3.
                let h = RowHistory {
                    medians: vec![1e8, 1e8],
                    rounds: vec![vec![1e8; 5]; 2],
                };
                opts.history = std::sync::Arc::new([("t.tight".to_string(), h)].into());
            }
            assert_eq!(opts.expected_rounds("t.tight"), if history { 3 } else { 5 });
            let mut total = Duration::ZERO;
            let benches = vec![fake("t.tight", 1000, None)];
            let out = run(benches, &test_ctx(), &opts, None, &mut |e| {
                if let Event::Finished(_, d) = e {
                    total += d;
                }
            });
            assert_eq!(out.measurements[0].rounds_decision.unwrap().taken, 3);
            total
        };
        // Without history the announced time counted all 5 rounds: the 2
        // not run are reported finished; with it, they were never counted.
        let (counted, uncounted) = (finished(false), finished(true));
        assert!(counted > uncounted, "{counted:?} vs {uncounted:?}");
    }

    #[test]
    fn a_history_whose_runs_disagree_widens_the_interval_and_says_so() {
        use crate::stats::stages::RowHistory;
        let measure = |history: Option<RowHistory>| {
            let mut opts = RunOptions::fixed(Profile::Quick, Some(5), Some(3));
            if let Some(h) = history {
                opts.history = std::sync::Arc::new([("t.row".to_string(), h)].into());
            }
            let out = run(
                vec![fake("t.row", 1000, None)],
                &test_ctx(),
                &opts,
                None,
                &mut |_| {},
            );
            out.measurements.into_iter().next().unwrap()
        };
        let alone = measure(None);
        assert_eq!(alone.between_runs, None);
        // Two earlier runs 20% apart, each with rounds that agreed: the
        // spread is between runs, and it is in the interval.
        let m = measure(Some(RowHistory {
            medians: vec![alone.median * 0.9, alone.median * 1.1],
            rounds: vec![vec![alone.median * 0.9; 3], vec![alone.median * 1.1; 3]],
        }));
        let tau = m.between_runs.expect("two earlier runs are enough");
        assert!((0.08..0.12).contains(&tau), "{tau}");
        assert!(m.ci_rel() >= 1.9 * tau, "{} vs {tau}", m.ci_rel());
        // said as a spread between runs, which more rounds do not narrow
        let noise: Vec<&String> = m
            .warnings
            .iter()
            .filter(|w| super::super::warnings::is_noise(w))
            .collect();
        assert!(m.noisy && noise.len() == 1, "{:?}", m.warnings);
        assert!(
            noise[0].contains("most of it the spread between this host's runs"),
            "{}",
            noise[0]
        );
        // Earlier runs that agreed: recorded, nothing added.
        let same = measure(Some(RowHistory {
            medians: vec![alone.median; 2],
            rounds: vec![vec![alone.median; 3]; 2],
        }));
        assert!(same.between_runs.unwrap() < 0.01, "{:?}", same.between_runs);
        assert!(same.ci_rel() < 0.05, "{}", same.ci_rel());
    }

    #[test]
    fn interleaved_members_each_get_their_own_budget() {
        // A member with a slow set-up must not use up the budget of the
        // member prepared before it.
        let slow_prepare = FnBench::new("slow", "slow set-up", Unit::Latency, |_| {
            std::thread::sleep(Profile::Quick.default_budget() + Duration::from_millis(50));
            Ok(Box::new(FakeTimed { ns: 1000 }))
        })
        .interleave("k");
        let opts = RunOptions::fixed(Profile::Quick, None, None);
        let benches: Vec<Box<dyn Bench>> =
            vec![fake("fast", 1000, Some("k")), slow_prepare.boxed()];
        let out = run(benches, &test_ctx(), &opts, None, &mut |_| {});
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
                seed,
                ..RunOptions::fixed(Profile::Quick, Some(3), Some(3))
            };
            let benches: Vec<Box<dyn Bench>> = ["a", "b", "c", "d", "e", "f"]
                .iter()
                .map(|id| fake(id, 100, None))
                .collect();
            let mut started: Vec<String> = Vec::new();
            run(benches, &test_ctx(), &opts, None, &mut |e| {
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
        let opts = RunOptions::fixed(Profile::Quick, Some(5), None);
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
        let out = run(benches, &test_ctx(), &opts, None, &mut |_| {});
        assert_eq!(out.measurements.len(), 1);
        assert_eq!(out.skipped.len(), 2);
        assert!(!out.skipped[0].failed && out.skipped[0].reason.contains("no such thing"));
        assert!(out.skipped[1].failed && out.skipped[1].reason.contains("broken"));
    }

    #[test]
    fn stop_flag_interrupts_before_anything_runs() {
        let c = test_ctx();
        c.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let opts = RunOptions::fixed(Profile::Quick, None, None);
        let out = run(vec![fake("a", 10, None)], &c, &opts, None, &mut |_| {});
        assert!(out.interrupted);
        assert!(out.measurements.is_empty());
    }

    #[test]
    fn below_one_cycle_is_flagged_for_latencies_only() {
        let opts = RunOptions::fixed(Profile::Quick, Some(5), None);
        // 100 bytes per 0.01 ns: far below a cycle per op, fine for a throughput.
        struct Tiny;
        impl Timed for Tiny {
            fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
                Ok(Duration::from_nanos(ops / 100 + 1))
            }
        }
        let mk = |unit: Unit| {
            FnBench::new("t.x", "x", unit, |_| Ok(Box::new(Tiny) as Box<dyn Timed>)).boxed()
        };
        let warned = |unit: Unit| {
            let out = run(vec![mk(unit)], &test_ctx(), &opts, None, &mut |_| {});
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
        let opts = RunOptions::fixed(Profile::Quick, Some(6), Some(2));
        let boom = FnBench::new("t.boom", "x", Unit::Latency, |_| {
            Ok(Box::new(Boom) as Box<dyn Timed>)
        })
        .boxed();
        let out = run(
            vec![boom, fake("t.ok", 100, None)],
            &test_ctx(),
            &opts,
            None,
            &mut |_| {},
        );
        assert_eq!(out.measurements.len(), 1);
        assert_eq!(out.measurements[0].id, "t.ok");
        let s = &out.skipped[0];
        assert!(s.failed && s.reason.contains("panicked") && s.reason.contains("out of bounds"));
    }

    #[test]
    fn rounds_share_out_the_samples_and_each_is_recorded() {
        let opts = RunOptions::fixed(Profile::Quick, Some(10), Some(3));
        assert_eq!(
            (0..3).map(|r| opts.round_samples(r)).collect::<Vec<_>>(),
            vec![4, 3, 3]
        );
        let mut interim = 0;
        let out = run(
            vec![fake("t.a", 1000, Some("k")), fake("t.b", 3000, Some("k"))],
            &test_ctx(),
            &opts,
            None,
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
        let few = RunOptions::fixed(Profile::Quick, Some(3), Some(10));
        assert_eq!(few.rounds(), 3);
    }

    #[test]
    fn op_stats_of_nothing_is_none() {
        assert!(op_stats(&[]).is_none());
        let s = op_stats(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.count, s.p50, s.max), (3, 2.0, 3.0));
    }
}
