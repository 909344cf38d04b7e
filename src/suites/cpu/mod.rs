//! CPU: cycles per operation (E5) and int vs float vs double (E9).
//!
//! Latency and throughput of add, mul, div and fma on i32, i64, f32 and f64
//! come from chains of one instruction (see [`chains`]); the effective
//! clock from a chain of dependent single-cycle adds (`cpu.clock`), which
//! turns every time into cycles when hardware counters are missing (as in
//! most virtual machines; [`counters`] says why, once); the cost of a
//! mispredicted branch from the same loop over predictable and random data.
//! The rows programmers quote from tables: locks and atomics, alone and
//! contended ([`sync`]), and direct and indirect calls, jump tables, hash
//! lookups and a caught panic ([`dispatch`]), each in cycles at that clock.
//! Beyond add and multiply ([`floats`]): int↔float conversions, a compare
//! and branch on floats beside one on integers, integer and float chains
//! side by side; and a panic caught 1, 10 and 100 frames up against an
//! error returned through them ([`unwind`]).

pub mod chains;
pub mod counters;
pub mod dispatch;
mod findings;
pub mod floats;
pub mod sync;
pub mod unwind;

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::json;

use super::bench::{FnBench, Suite};
use super::undisturbed::Undisturbed;
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::host::Host;
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

use super::bench::CLOCK_ID;

/// The CPU suite.
pub fn suite() -> Suite {
    Suite {
        name: "cpu",
        summary: "cycles per add/mul/div/fma on i32/i64/f32/f64, int↔float conversions, mixed int+float chains, effective clock, branch misprediction, locks, atomics, calls, dispatch, hash lookups, panics against error returns",
        benches,
        findings: findings::findings,
    }
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

/// A branch benchmark: `walk` takes one conditional jump per operation over
/// a table of [`BRANCH_DATA`] entries, each batch resuming where the last
/// one stopped.
struct Branches<T, W> {
    data: Box<[T; BRANCH_DATA]>,
    walk: W,
    at: usize,
    warnings: Vec<String>,
}

/// The branch benchmark over `data` walked by `walk` (a function item, so
/// the timed section calls it directly), with a caveat where the walk is not
/// assembly (`is_asm` false) and the compiler may have made the jump a
/// conditional move.
fn branch_walk<T: 'static, W>(data: Box<[T; BRANCH_DATA]>, walk: W, is_asm: bool) -> Box<dyn Timed>
where
    W: Fn(&[T; BRANCH_DATA], usize, u64) -> (usize, u64) + 'static,
{
    let mut warnings = Vec::new();
    if !is_asm {
        warnings.push(Warning::BranchMayBeCmov.to_string());
    }
    Box::new(Undisturbed::new(Branches {
        data,
        walk,
        at: 0,
        warnings,
    }))
}

impl<T, W: Fn(&[T; BRANCH_DATA], usize, u64) -> (usize, u64)> Timed for Branches<T, W> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let (at, taken) = (self.walk)(&self.data, self.at, ops);
        let took = start.elapsed();
        self.at = at;
        black_box(taken);
        Ok(took)
    }
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}

fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
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
                Ok(super::bench::Looped::new(|| {
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
                    Ok(branch_walk(data, chains::branches, chains::BRANCH_IS_ASM))
                },
            )
            .param("mispredicted", if random { 0.5 } else { 0.0 })
            .interleave("cpu.branch")
            .boxed(),
        );
    }
    out.extend(sync::benches(host));
    out.extend(dispatch::benches(host));
    out.extend(floats::benches());
    out.extend(unwind::benches());
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
