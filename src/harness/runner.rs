//! The run loop: prepare, calibrate, warm up, sample (interleaved where
//! alternatives are compared), subtract overhead, summarise, warn.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::stats::{Summary, is_bimodal, quantile};
use super::timer::{EmptyLoop, calibrate};
use super::warnings::Warning;
use super::{Bench, Ctx, Measurement, OpStats, Overhead, PrepareError, Profile, Timed, area_of};

/// Fewest samples a measurement is made of, even when the budget runs out.
pub const MIN_SAMPLES: usize = 5;
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
    /// Overrides the profile's sample count (`--samples`).
    pub samples: Option<usize>,
}

impl RunOptions {
    /// Samples wanted per benchmark.
    pub fn samples_wanted(&self) -> usize {
        self.samples.unwrap_or(self.profile.samples()).max(1)
    }

    /// The time a benchmark may take: its budget, stretched when `--samples`
    /// asks for more samples than the profile.
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
}

/// Progress events, for a progress bar.
#[derive(Debug)]
pub enum Event<'a> {
    /// A benchmark (or interleaved group) starts; the ids it covers.
    Started(&'a [String]),
    /// A benchmark finished (measured, skipped or failed); its budget.
    Finished(&'a str, Duration),
}

/// One benchmark being measured.
struct Live {
    id: String,
    bench: Box<dyn Bench>,
    timed: Box<dyn Timed>,
    ops: u64,
    budget: Duration,
    /// Time spent on this benchmark alone: set-up, calibration, warm-up and
    /// its own samples. Members of an interleaved group each get their own
    /// budget, not a share of one.
    spent: Duration,
    samples_ns: Vec<f64>,
    op_times: Vec<f64>,
    done: bool,
}

/// Runs `benches` in order (interleaving those with the same
/// [`Bench::interleave`] key) and returns their measurements.
pub fn run(
    benches: Vec<Box<dyn Bench>>,
    ctx: &Ctx,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Event<'_>),
) -> RunOutcome {
    let mut out = RunOutcome::default();
    let mut overhead: Option<f64> = None;
    for group in group_by_interleave(benches) {
        if ctx.stopping() {
            out.interrupted = true;
            break;
        }
        let ids: Vec<String> = group.iter().map(|b| b.id().to_string()).collect();
        progress(Event::Started(&ids));
        run_group(group, ctx, opts, &mut overhead, &mut out, progress);
    }
    out.interrupted |= ctx.stopping();
    out
}

/// Splits benches into groups: those sharing an interleave key go together
/// (at the position of the first), the rest alone.
fn group_by_interleave(benches: Vec<Box<dyn Bench>>) -> Vec<Vec<Box<dyn Bench>>> {
    type Group = (Option<String>, Vec<Box<dyn Bench>>);
    let mut groups: Vec<Group> = Vec::new();
    for b in benches {
        let key = b.interleave().map(str::to_string);
        match key
            .as_ref()
            .and_then(|k| groups.iter_mut().find(|(gk, _)| gk.as_ref() == Some(k)))
        {
            Some((_, g)) => g.push(b),
            None => groups.push((key, vec![b])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

fn run_group(
    group: Vec<Box<dyn Bench>>,
    ctx: &Ctx,
    opts: &RunOptions,
    overhead: &mut Option<f64>,
    out: &mut RunOutcome,
    progress: &mut dyn FnMut(Event<'_>),
) {
    let profile = opts.profile;
    let wanted = opts.samples_wanted();
    let mut live: Vec<Live> = Vec::new();

    // Prepare, calibrate and warm up each member.
    for bench in group {
        let id = bench.id().to_string();
        let budget = opts.budget_of(bench.as_ref());
        if ctx.stopping() {
            break;
        }
        let started = Instant::now();
        let mut timed = match bench.prepare(ctx) {
            Ok(t) => t,
            Err(e) => {
                let failed = matches!(e, PrepareError::Fail(_));
                let reason = match e {
                    PrepareError::Skip(r) => r,
                    PrepareError::Fail(err) => format!("{err:#}"),
                };
                out.skipped.push(Skipped {
                    id: id.clone(),
                    reason,
                    failed,
                });
                progress(Event::Finished(&id, budget));
                continue;
            }
        };
        let cal = calibrate(timed.as_mut(), profile.sample_target(), budget / 3)
            .and_then(|(ops, _)| warm_up(timed.as_mut(), ops, profile.warmup()).map(|_| ops));
        match cal {
            Ok(ops) => {
                timed.take_op_times(); // discard calibration and warm-up timings
                live.push(Live {
                    id,
                    bench,
                    timed,
                    ops,
                    budget,
                    spent: started.elapsed(),
                    samples_ns: Vec::with_capacity(wanted),
                    op_times: Vec::new(),
                    done: false,
                })
            }
            Err(e) => {
                out.skipped.push(Skipped {
                    id: id.clone(),
                    reason: format!("{e:#}"),
                    failed: true,
                });
                progress(Event::Finished(&id, budget));
            }
        }
    }

    if overhead.is_none()
        && live
            .iter()
            .any(|l| l.bench.overhead() == Overhead::EmptyLoop)
    {
        *overhead = Some(measure_loop_overhead(profile));
    }

    // Sample, round-robin in a shuffled order per round.
    let mut order: Vec<usize> = (0..live.len()).collect();
    while live.iter().any(|l| !l.done) {
        if ctx.stopping() {
            break;
        }
        fastrand::shuffle(&mut order);
        for &i in &order {
            let l = &mut live[i];
            if l.done || ctx.stopping() {
                continue;
            }
            let sample_start = Instant::now();
            let result = l.timed.run(l.ops);
            l.spent += sample_start.elapsed();
            match result {
                Ok(took) => {
                    let mut per_op = took.as_nanos() as f64 / l.ops as f64;
                    if l.bench.overhead() == Overhead::EmptyLoop {
                        per_op -= overhead.unwrap_or(0.0);
                    }
                    l.samples_ns.push(per_op.max(1e-3));
                    l.op_times.extend(l.timed.take_op_times());
                }
                Err(e) => {
                    out.skipped.push(Skipped {
                        id: l.id.clone(),
                        reason: format!("{e:#}"),
                        failed: true,
                    });
                    l.samples_ns.clear();
                    l.done = true;
                    progress(Event::Finished(&l.id, l.budget));
                    continue;
                }
            }
            let n = l.samples_ns.len();
            // An explicit --samples is honoured; the profile's count yields to the budget.
            let out_of_budget = opts.samples.is_none() && l.spent >= l.budget;
            if n >= wanted || (n >= MIN_SAMPLES && out_of_budget) {
                l.done = true;
            }
        }
    }

    // Summarise in the group's original order.
    let stopped = ctx.stopping();
    for l in live {
        let n = l.samples_ns.len();
        if n == 0 {
            continue; // failed above, or interrupted before any sample
        }
        if !l.done && n < MIN_SAMPLES_INTERRUPTED {
            out.skipped.push(Skipped {
                id: l.id.clone(),
                reason: format!("interrupted after {n} samples"),
                failed: false,
            });
            continue;
        }
        let mut extra = Vec::new();
        if stopped && !l.done {
            extra.push(Warning::Interrupted { samples: n });
        } else if n < wanted {
            extra.push(Warning::FewSamples { got: n, wanted });
        }
        let m = summarise(&l, ctx, *overhead, extra);
        progress(Event::Finished(&l.id, l.budget));
        if let Some(m) = m {
            out.measurements.push(m);
        }
    }
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

/// Builds the measurement of a finished benchmark, with its sanity warnings.
fn summarise(
    l: &Live,
    ctx: &Ctx,
    overhead: Option<f64>,
    mut warns: Vec<Warning>,
) -> Option<Measurement> {
    let unit = l.bench.unit();
    let values: Vec<f64> = l
        .samples_ns
        .iter()
        .map(|&ns| unit.from_ns_per_op(ns))
        .collect();
    let s = Summary::of(&values)?;
    let median_ns = super::stats::median(&l.samples_ns)?;

    let ghz = ctx.host.cpu_ghz().unwrap_or(0.0).max(MAX_PLAUSIBLE_GHZ);
    // Only a latency cannot beat a cycle: rates and throughputs may count
    // many operations or bytes per cycle (independent adds, a memcpy).
    if unit == super::Unit::Latency && median_ns < 1.0 / ghz {
        warns.push(Warning::BelowOneCycle { ns: median_ns, ghz });
    }
    let noisy = s.ci_rel() > NOISE_THRESHOLD;
    if noisy {
        warns.push(Warning::Noisy {
            ci_rel: s.ci_rel(),
            threshold: NOISE_THRESHOLD,
        });
    }
    let per_op = op_stats(&l.op_times);
    if let Some(p) = per_op.as_ref().filter(|p| p.bimodal) {
        warns.push(Warning::Bimodal {
            p50: p.p50,
            p99: p.p99,
        });
    }
    let mut warnings: Vec<String> = l.timed.warnings();
    warnings.extend(warns.iter().map(ToString::to_string));

    Some(Measurement {
        id: l.id.clone(),
        area: area_of(&l.id).to_string(),
        unit: unit.label().to_string(),
        bytes_per_op: match unit {
            super::Unit::Throughput { bytes_per_op } => Some(bytes_per_op),
            _ => None,
        },
        params: l.bench.params(),
        median: s.median,
        min: s.min,
        max: s.max,
        mean: s.mean,
        p5: s.p5,
        p95: s.p95,
        mad: s.mad,
        ci_low: s.ci_low,
        ci_high: s.ci_high,
        cv: s.cv,
        outliers: s.outliers,
        ops_per_sample: l.ops,
        overhead: (l.bench.overhead() == Overhead::EmptyLoop).then(|| overhead.unwrap_or(0.0)),
        noisy,
        warnings,
        per_op,
        details: l.timed.details(),
        samples: values,
    })
}

/// Statistics of per-op timings; `None` when the benchmark recorded none.
pub fn op_stats(times: &[f64]) -> Option<OpStats> {
    if times.is_empty() {
        return None;
    }
    let mut s = times.to_vec();
    s.sort_by(f64::total_cmp);
    let q = |p| super::stats::quantile_sorted(&s, p);
    Some(OpStats {
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
        let g = group_by_interleave(vec![
            fake("a", 1, Some("k")),
            fake("b", 1, None),
            fake("c", 1, Some("k")),
            fake("d", 1, Some("j")),
        ]);
        let ids: Vec<Vec<&str>> = g
            .iter()
            .map(|g| g.iter().map(|b| b.id()).collect())
            .collect();
        assert_eq!(ids, vec![vec!["a", "c"], vec!["b"], vec!["d"]]);
    }

    #[test]
    fn run_produces_measurements_in_base_units() {
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: Some(8),
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
        };
        let benches: Vec<Box<dyn Bench>> =
            vec![fake("fast", 1000, Some("k")), Box::new(SlowPrepare)];
        let out = run(benches, &ctx(), &opts, &mut |_| {});
        let fast = out.measurements.iter().find(|m| m.id == "fast").unwrap();
        assert_eq!(fast.samples.len(), Profile::Quick.samples());
        let slow = out.measurements.iter().find(|m| m.id == "slow").unwrap();
        assert!(slow.samples.len() >= MIN_SAMPLES);
    }

    #[test]
    fn skips_and_failures_are_reported_not_fatal() {
        let opts = RunOptions {
            profile: Profile::Quick,
            samples: Some(5),
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
    fn op_stats_of_nothing_is_none() {
        assert!(op_stats(&[]).is_none());
        let s = op_stats(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.count, s.p50, s.max), (3, 2.0, 3.0));
    }
}
