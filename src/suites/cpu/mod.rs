//! CPU: cycles per operation (E5) and int vs float vs double (E9).
//!
//! Latency and throughput of add, mul, div and fma on i32, i64, f32 and f64
//! come from chains of one instruction (see [`chains`]); the effective
//! clock from a chain of dependent single-cycle adds (`cpu.clock`), which
//! turns every time into cycles when hardware counters are missing (as in
//! most virtual machines; [`counters`] says why, once); the cost of a
//! mispredicted branch from the same loop over predictable and random data.

pub mod chains;
pub mod counters;

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::json;

use super::undisturbed::Undisturbed;
use super::{FnBench, Suite, get, ratio_finding};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, Finding, Measurement, PrepareError, Timed, Unit};
use crate::host::Host;
use crate::units::fmt_ratio;
use chains::{BRANCH_DATA, Op, Ty};
use counters::Counters;

/// Budget of one chain benchmark relative to the profile's default: a
/// chain needs only the profile's samples, a few milliseconds.
pub const CHAIN_BUDGET: f64 = 0.5;

/// The id of the integer score: events per second of [`primes_by_trial_division`].
pub const INTEGER_ID: &str = "cpu.integer.primes";
/// The largest number tested for primality in one event (sysbench's default).
pub const PRIME_LIMIT: u64 = 10_000;

/// One event of `sysbench cpu`: counts the primes from 3 to below `limit`
/// by trial division while the divisor, as a double, stays at or below the
/// square root: sysbench's arithmetic step for step (64-bit integer
/// division, an integer-to-double conversion per comparison), so events per
/// second compare with `sysbench cpu --cpu-max-prime=LIMIT --threads=1`.
pub fn primes_by_trial_division(limit: u64) -> u64 {
    let mut n = 0;
    for c in 3..limit {
        let t = (c as f64).sqrt();
        let mut l = 2u64;
        while l as f64 <= t {
            if c % l == 0 {
                break;
            }
            l += 1;
        }
        if l as f64 > t {
            n += 1;
        }
    }
    n
}

/// The id of the effective-clock benchmark.
pub const CLOCK_ID: &str = "cpu.clock";

/// The CPU suite.
pub fn suite() -> Suite {
    Suite {
        name: "cpu",
        summary: "cycles per add/mul/div/fma on i32/i64/f32/f64, effective clock, branch misprediction",
        benches,
        findings,
    }
}

/// The clock in GHz estimated once per process from a short dependent add
/// chain (best of five 1 M-add runs): for cycle figures outside this suite.
pub fn clock_ghz_estimate() -> Option<f64> {
    static EST: OnceLock<Option<f64>> = OnceLock::new();
    *EST.get_or_init(|| {
        const N: u64 = 1_000_000;
        (0..5)
            .map(|_| {
                let start = Instant::now();
                black_box(chains::add_chain(black_box(N)));
                start.elapsed()
            })
            .min()
            .filter(|d| !d.is_zero())
            .map(|d| N as f64 / d.as_nanos() as f64)
    })
}

/// A chain kernel with optional hardware counters around each batch.
struct Chain {
    kernel: chains::Kernel,
    counters: Option<Counters>,
    warnings: Vec<String>,
    details: serde_json::Value,
}

impl Chain {
    fn new(kernel: chains::Kernel, warnings: Vec<String>) -> Chain {
        let (counters, status) = match counters::availability() {
            Ok(()) => match Counters::open() {
                Ok(c) => (Some(c), "available".to_string()),
                Err(why) => (None, format!("unavailable: {why}")),
            },
            Err(why) => (None, format!("unavailable: {why}")),
        };
        Chain {
            kernel,
            counters,
            warnings,
            details: json!({ "counters": status }),
        }
    }
}

impl Timed for Chain {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        if let Some(c) = &mut self.counters {
            c.start();
        }
        let start = Instant::now();
        black_box((self.kernel)(black_box(ops)));
        let took = start.elapsed();
        if let Some(c) = &mut self.counters {
            c.stop(ops);
        }
        Ok(took)
    }
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
    fn details(&self) -> Option<serde_json::Value> {
        let mut d = self.details.clone();
        if let (Some(per_op), Some(obj)) = (
            self.counters.as_ref().and_then(Counters::per_op),
            d.as_object_mut(),
        ) && let Some(p) = per_op.as_object()
        {
            obj.extend(p.clone());
        }
        Some(d)
    }
}

/// The branch benchmark: one conditional jump per operation over a table.
struct Branches {
    data: Box<[u8; BRANCH_DATA]>,
    at: usize,
    warnings: Vec<String>,
}

impl Timed for Branches {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let (at, taken) = chains::branches(&self.data, self.at, ops);
        let took = start.elapsed();
        self.at = at;
        black_box(taken);
        Ok(took)
    }
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let mut out = vec![
        FnBench::new(
            CLOCK_ID,
            "effective clock: dependent single-cycle adds per second (= cycles per second)",
            Unit::Rate,
            |_ctx: &Ctx| {
                let mut warnings = Vec::new();
                if let Err(why) = counters::availability() {
                    warnings.push(Warning::NoCounters { why }.to_string());
                }
                let chain = Chain::new(chains::add_chain, warnings);
                Ok(Box::new(Undisturbed::new(chain)) as Box<dyn Timed>)
            },
        )
        .boxed(),
    ];
    for op in Op::ALL {
        for latency in [true, false] {
            for ty in Ty::ALL {
                out.push(chain_bench(op, ty, latency));
            }
        }
    }
    out.push(
        FnBench::new(
            INTEGER_ID,
            "integer score: primes up to 10000 by trial division, as sysbench cpu counts an event",
            Unit::Rate,
            |_ctx: &Ctx| {
                Ok(super::Looped::new(|| {
                    black_box(primes_by_trial_division(black_box(PRIME_LIMIT)));
                })
                .boxed())
            },
        )
        .param("max_prime", PRIME_LIMIT)
        .boxed(),
    );
    for (id, random) in [(BRANCH_PREDICTABLE, false), (BRANCH_UNPREDICTABLE, true)] {
        out.push(
            FnBench::new(
                id,
                if random {
                    "a conditional branch on random bits: half of them mispredicted"
                } else {
                    "the same conditional branch, always the same way: predicted"
                },
                Unit::Latency,
                move |_ctx: &Ctx| {
                    let mut data = Box::new([1u8; BRANCH_DATA]);
                    if random {
                        let mut rng = fastrand::Rng::with_seed(0xb7a9c4);
                        data.iter_mut().for_each(|b| *b = rng.bool() as u8);
                    }
                    let mut warnings = Vec::new();
                    if !chains::BRANCH_IS_ASM {
                        warnings.push(Warning::BranchMayBeCmov.to_string());
                    }
                    Ok(Box::new(Undisturbed::new(Branches {
                        data,
                        at: 0,
                        warnings,
                    })) as Box<dyn Timed>)
                },
            )
            .param("mispredicted", if random { 0.5 } else { 0.0 })
            .interleave("cpu.branch")
            .boxed(),
        );
    }
    out
}

/// The id of a chain benchmark: `cpu.OP.TYPE.latency` or `.throughput`.
fn chain_id(op: Op, ty: Ty, latency: bool) -> String {
    let kind = if latency { "latency" } else { "throughput" };
    format!("cpu.{}.{}.{kind}", op.name(), ty.name())
}

/// Id of the branch that always goes the same way.
const BRANCH_PREDICTABLE: &str = "cpu.branch.predictable";
/// Id of the branch on random bits.
const BRANCH_UNPREDICTABLE: &str = "cpu.branch.unpredictable";

fn chain_bench(op: Op, ty: Ty, latency: bool) -> Box<dyn Bench> {
    let kind = if latency { "latency" } else { "throughput" };
    let what = match (op, ty) {
        (Op::Fma, Ty::I32 | Ty::I64) => "multiply-add (imul + add)".to_string(),
        (Op::Fma, _) => "fused multiply-add".to_string(),
        _ => op.name().to_string(),
    };
    let summary = if latency {
        format!("{} {what}: time per op of one dependent chain", ty.name())
    } else {
        format!(
            "{} {what}: ops per second over {} independent chains",
            ty.name(),
            chains::LANES
        )
    };
    FnBench::new(
        chain_id(op, ty, latency),
        summary,
        if latency { Unit::Latency } else { Unit::Rate },
        move |_ctx: &Ctx| {
            if let Some(why) = chains::unavailable(op, ty) {
                return Err(PrepareError::Skip(why));
            }
            let mut warnings = Vec::new();
            if !chains::OPAQUE_IS_FREE {
                warnings.push(Warning::ChainThroughMemory.to_string());
            }
            let chain = Chain::new(chains::kernel(op, ty, latency), warnings);
            Ok(Box::new(Undisturbed::new(chain)) as Box<dyn Timed>)
        },
    )
    .param("op", op.name())
    .param("type", ty.name())
    .param("chains", if latency { 1 } else { chains::LANES })
    .interleave(format!("cpu.{}.{kind}", op.name()))
    .budget_scale(CHAIN_BUDGET)
    .boxed()
}

/// The time per operation of `m` undisturbed: its 5th percentile of time
/// (the 95th of a rate). On a shared machine interference only ever adds
/// time, so for properties of the hardware (cycles per instruction, cache
/// latency) the fast end of the samples is the estimate, not the median.
pub fn fast_ns_per_op(m: &Measurement) -> f64 {
    if m.higher_is_better() {
        m.to_ns_per_op(m.p95)
    } else {
        m.p5
    }
}

/// The clock of a run in GHz: `cpu.clock` if measured (its fast end, see
/// [`fast_ns_per_op`]), else the estimate recorded by a memory latency benchmark.
pub fn run_ghz(ms: &[Measurement]) -> Option<f64> {
    if let Some(m) = get(ms, CLOCK_ID) {
        return Some(1.0 / fast_ns_per_op(m)).filter(|g| g.is_finite() && *g > 0.0);
    }
    ms.iter()
        .filter_map(|m| m.details.as_ref()?.get("ghz_estimate")?.as_f64())
        .find(|g| g.is_finite() && *g > 0.0)
}

/// Cycles per operation of `m`: counted where counters ran, else time x clock.
fn cycles(m: &Measurement, ghz: Option<f64>) -> Option<f64> {
    let counted = m
        .details
        .as_ref()
        .and_then(|d| d.get("cycles_per_op")?.as_f64());
    counted.or_else(|| Some(fast_ns_per_op(m) * ghz?))
}

fn fmt_cycles(c: f64) -> String {
    if c >= 9.95 {
        format!("{c:.0}")
    } else {
        format!("{c:.1}")
    }
}

fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let ghz = run_ghz(ms);
    if let (Some(m), Some(g)) = (get(ms, CLOCK_ID), ghz) {
        let counters = m
            .details
            .as_ref()
            .and_then(|d| d.get("counters")?.as_str().map(str::to_string))
            .unwrap_or_default();
        out.push(Finding {
            area: "cpu".into(),
            text: format!(
                "effective clock {g:.2} GHz (dependent single-cycle adds; cycle figures use each result's fastest 5%: interference only adds time){}",
                if counters.starts_with("unavailable") {
                    "; no hardware counters, so cycles are time x this clock"
                } else {
                    ""
                }
            ),
            value: g * 1e9,
            unit: "Hz".into(),
        });
    }
    for ty in Ty::ALL {
        let lat = |op: Op| get(ms, &chain_id(op, ty, true)).and_then(|m| cycles(m, ghz));
        let thr = |op: Op| {
            get(ms, &chain_id(op, ty, false))
                .and_then(|m| cycles(m, ghz))
                .map(|c| 1.0 / c)
        };
        let Some(div) = lat(Op::Div) else { continue };
        let others: Vec<String> = [Op::Add, Op::Mul, Op::Fma]
            .into_iter()
            .filter_map(|op| Some(format!("{} {}", op.name(), fmt_cycles(lat(op)?))))
            .collect();
        let per_cycle: Vec<String> = Op::ALL
            .into_iter()
            .filter_map(|op| Some(format!("{} {:.2}", op.name(), thr(op)?)))
            .collect();
        out.push(Finding {
            area: "cpu".into(),
            text: format!(
                "{} div = {} cycles latency; {}{}",
                ty.name(),
                fmt_cycles(div),
                if others.is_empty() {
                    String::new()
                } else {
                    format!("{} cycles", others.join(", "))
                },
                if per_cycle.is_empty() {
                    String::new()
                } else {
                    format!("; throughput per cycle: {}", per_cycle.join(", "))
                }
            ),
            value: div,
            unit: "cycles".into(),
        });
    }
    out.extend(float_vs_int(ms));
    if let (Some(p), Some(u)) = (get(ms, BRANCH_PREDICTABLE), get(ms, BRANCH_UNPREDICTABLE)) {
        // Half of the random branches mispredict: the difference per branch is half a penalty.
        let (u_ns, p_ns) = (fast_ns_per_op(u), fast_ns_per_op(p));
        let ns = (u_ns - p_ns) * 2.0;
        let text = match ghz {
            Some(g) => format!(
                "branch misprediction ≈ {} cycles ({:.1} ns): {:.2} ns per random branch vs {:.2} ns predicted",
                fmt_cycles(ns * g),
                ns,
                u_ns,
                p_ns
            ),
            None => format!(
                "branch misprediction ≈ {ns:.1} ns: {u_ns:.2} ns per random branch vs {p_ns:.2} ns predicted"
            ),
        };
        out.push(Finding {
            area: "cpu".into(),
            text,
            value: ghz.map_or(ns, |g| ns * g),
            unit: if ghz.is_some() { "cycles" } else { "ns" }.into(),
        });
    }
    out
}

/// Ratios closer to 1 than this are called the same speed.
const SAME_SPEED: f64 = 0.05;

/// The seeds' "float is N× slower on this board": per operation both types
/// have (add, mul, div), the time of an f64 operation over an i64 one, in a
/// dependent chain (latency) and independent (throughput), fast ends as above.
fn float_vs_int(ms: &[Measurement]) -> Vec<Finding> {
    let ns = |op: Op, ty: Ty, latency: bool| {
        get(ms, &chain_id(op, ty, latency))
            .map(fast_ns_per_op)
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let mut out = Vec::new();
    for op in [Op::Add, Op::Mul, Op::Div] {
        let (Some(f), Some(i)) = (ns(op, Ty::F64, true), ns(op, Ty::I64, true)) else {
            continue;
        };
        let r = f / i;
        let verdict = if (r - 1.0).abs() < SAME_SPEED {
            format!("float and int cost the same ({})", fmt_ratio(r))
        } else if r > 1.0 {
            format!("float is {} slower than int", fmt_ratio(r))
        } else {
            format!("float is {} faster than int", fmt_ratio(1.0 / r))
        };
        let thr = match (ns(op, Ty::F64, false), ns(op, Ty::I64, false)) {
            (Some(ft), Some(it)) => format!(
                "; independent operations: f64 {} the time of i64",
                fmt_ratio(ft / it)
            ),
            _ => String::new(),
        };
        out.push(ratio_finding(
            "cpu",
            format!(
                "{name}: {verdict} here (f64 {name} {:.2} ns vs i64 {name} {:.2} ns in a dependent chain){thr}",
                f,
                i,
                name = op.name()
            ),
            r,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_division_counts_the_primes() {
        // Primes from 3 to below 10 (3, 5, 7) and below 10000 (1229 primes, less 2).
        assert_eq!(primes_by_trial_division(10), 3);
        assert_eq!(primes_by_trial_division(8), 3);
        assert_eq!(primes_by_trial_division(10_000), 1228);
    }

    fn m(id: &str, unit: &str, median: f64) -> Measurement {
        Measurement {
            details: Some(json!({"counters": "unavailable: test"})),
            ..Measurement::point(id, unit, median)
        }
    }

    #[test]
    fn float_vs_int_gives_a_verdict_per_operation() {
        let ms = vec![
            m("cpu.mul.f64.latency", "ns/op", 2.0),
            m("cpu.mul.i64.latency", "ns/op", 1.0),
            m("cpu.mul.f64.throughput", "ops/s", 1e9),
            m("cpu.mul.i64.throughput", "ops/s", 2e9),
            m("cpu.div.f64.latency", "ns/op", 4.0),
            m("cpu.div.i64.latency", "ns/op", 10.0),
            m("cpu.add.f64.latency", "ns/op", 1.0),
        ];
        let f = float_vs_int(&ms);
        assert_eq!(f.len(), 2, "add lacks i64: no verdict");
        let mul = f.iter().find(|f| f.text.starts_with("mul")).unwrap();
        assert_eq!((mul.value, mul.unit.as_str()), (2.0, "x"));
        assert!(mul.text.contains("float is 2.00× slower"), "{}", mul.text);
        assert!(mul.text.contains("independent operations"), "{}", mul.text);
        let div = f.iter().find(|f| f.text.starts_with("div")).unwrap();
        assert!(div.text.contains("float is 2.50× faster"), "{}", div.text);
        let same = float_vs_int(&[
            m("cpu.add.f64.latency", "ns/op", 1.01),
            m("cpu.add.i64.latency", "ns/op", 1.0),
        ]);
        assert!(
            same[0].text.contains("cost the same (1.01×)"),
            "{}",
            same[0].text
        );
        assert!(findings(&ms).iter().any(|x| x == mul));
    }

    #[test]
    fn findings_turn_times_into_cycles_with_the_measured_clock() {
        let ms = vec![
            m(CLOCK_ID, "ops/s", 2.0e9),
            m("cpu.div.f64.latency", "ns/op", 7.0),
            m("cpu.add.f64.latency", "ns/op", 1.5),
            m("cpu.div.f64.throughput", "ops/s", 0.4e9),
            m("cpu.branch.predictable", "ns/op", 0.5),
            m("cpu.branch.unpredictable", "ns/op", 4.5),
        ];
        let f = findings(&ms);
        let clock = f.iter().find(|f| f.unit == "Hz").unwrap();
        assert_eq!(clock.value, 2.0e9);
        assert!(clock.text.contains("2.00 GHz") && clock.text.contains("no hardware counters"));
        let div = f.iter().find(|f| f.text.starts_with("f64 div")).unwrap();
        assert_eq!(div.value, 14.0);
        assert!(div.text.contains("add 3.0"), "{}", div.text);
        assert!(div.text.contains("div 0.20"), "{}", div.text);
        let br = f.iter().find(|f| f.text.contains("misprediction")).unwrap();
        assert_eq!(br.value, 16.0);
        assert_eq!(br.unit, "cycles");
    }

    #[test]
    fn without_a_clock_findings_stay_in_nanoseconds_or_are_left_out() {
        let ms = vec![
            m("cpu.div.f64.latency", "ns/op", 7.0),
            m("cpu.branch.predictable", "ns/op", 0.5),
            m("cpu.branch.unpredictable", "ns/op", 4.5),
        ];
        let f = findings(&ms);
        assert!(f.iter().all(|f| !f.text.starts_with("f64 div")));
        let br = f.iter().find(|f| f.text.contains("misprediction")).unwrap();
        assert_eq!((br.value, br.unit.as_str()), (8.0, "ns"));
        assert!(findings(&[]).is_empty());
    }

    #[test]
    fn cycle_counts_round_to_a_sensible_precision() {
        assert_eq!(fmt_cycles(3.04), "3.0");
        assert_eq!(fmt_cycles(9.96), "10");
        assert_eq!(fmt_cycles(13.4), "13");
    }

    #[test]
    fn clock_estimate_is_plausible() {
        let g = clock_ghz_estimate().unwrap();
        assert!(g > 0.05 && g < 20.0, "{g}");
    }

    #[test]
    fn ids_are_unique_and_cover_every_op_and_type() {
        let b = benches(&Host::default());
        let ids: std::collections::HashSet<&str> = b.iter().map(|b| b.id()).collect();
        assert_eq!(ids.len(), b.len());
        for op in Op::ALL {
            for ty in Ty::ALL {
                assert!(ids.contains(format!("cpu.{}.{}.latency", op.name(), ty.name()).as_str()));
                assert!(
                    ids.contains(format!("cpu.{}.{}.throughput", op.name(), ty.name()).as_str())
                );
            }
        }
        assert!(ids.contains(CLOCK_ID));
        assert!(ids.contains("cpu.branch.unpredictable"));
    }
}
