//! What the CPU results say: the effective clock, cycles per operation of
//! every type, float against int, and the branch misprediction penalty.
//!
//! Cycle figures are each result's fast end ([`super::fast_ns_per_op`])
//! times the measured clock, or the hardware's count where counters ran:
//! they are figures, not words. Every word that orders two results
//! ("float is slower", "within noise", whether a random branch costs more
//! than a predicted one) comes from [`crate::harness::claims`], decided by
//! the intervals of the same fast ends ([`fast_end`]: a distribution-free
//! interval of the 5th percentile), so a round slowed by a neighbour
//! neither moves the figure nor flips the word.

use super::chains::{Op, Ty};
use super::dispatch::{
    CALL_DIRECT, CALL_INDIRECT, DISPATCH_IF, DISPATCH_MATCH, MapSize, PANIC_CAUGHT, hashmap_id,
};
use super::sync::{
    ATOMIC_UNCONTENDED, HANDOFF_FUTEX, HANDOFF_STD, MUTEX_FUTEX, MUTEX_STD, atomic_contended_id,
};
use super::{BRANCH_PREDICTABLE, BRANCH_UNPREDICTABLE, chain_id};
use crate::harness::claims::{Est, Verdict, compare, compare_text, fast_end, speedup};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{CLOCK_ID, fast_ns_per_op, get, ratio_finding, run_ghz};
use crate::units::ValueUnit;

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

fn cpu_finding(text: String, value: f64, unit: impl Into<ValueUnit>) -> Finding {
    Finding {
        area: "cpu".into(),
        text,
        value,
        unit: unit.into(),
    }
}

/// Every CPU finding of a run.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let ghz = run_ghz(ms);
    if let (Some(m), Some(g)) = (get(ms, CLOCK_ID), ghz) {
        out.push(clock(m, g));
    }
    for ty in Ty::ALL {
        out.extend(type_cycles(ms, ty, ghz));
    }
    out.extend(float_vs_int(ms));
    out.extend(branch(ms, ghz));
    out.extend(primitive_cycles(ms, ghz));
    out.extend(primitive_words(ms));
    out
}

/// The rows of the lock, atomic and dispatch benchmarks with the words
/// their findings use, in report order.
fn primitive_rows() -> Vec<(String, &'static str)> {
    use crate::harness::affinity::Placement;
    let mut rows = vec![
        (
            MUTEX_STD.to_string(),
            "std mutex lock + unlock, uncontended",
        ),
        (
            MUTEX_FUTEX.to_string(),
            "futex mutex lock + unlock, uncontended",
        ),
        (ATOMIC_UNCONTENDED.to_string(), "atomic add, uncontended"),
        (
            atomic_contended_id(Placement::Same),
            "atomic add, two threads on one CPU",
        ),
        (
            atomic_contended_id(Placement::Cross),
            "atomic add, two threads on two CPUs",
        ),
        (HANDOFF_STD.to_string(), "std mutex handed between two CPUs"),
        (
            HANDOFF_FUTEX.to_string(),
            "futex mutex handed between two CPUs",
        ),
        (CALL_DIRECT.to_string(), "direct call"),
        (CALL_INDIRECT.to_string(), "indirect call"),
        (
            DISPATCH_MATCH.to_string(),
            "match (jump table) on 8 random cases",
        ),
        (DISPATCH_IF.to_string(), "if chain on 8 random cases"),
    ];
    for (size, what) in MapSize::ALL.into_iter().zip([
        "HashMap get, small table",
        "HashMap get, L2-sized table",
        "HashMap get, DRAM-sized table",
    ]) {
        rows.push((hashmap_id(size), what));
    }
    rows.push((PANIC_CAUGHT.to_string(), "panic caught by catch_unwind"));
    rows
}

/// "std mutex lock + unlock, uncontended = 21 cycles (8.6 ns)": the fast
/// end of every lock, atomic and dispatch row in cycles at the run's clock
/// (in ns when the run has no clock). Figures only.
fn primitive_cycles(ms: &[Measurement], ghz: Option<f64>) -> Vec<Finding> {
    primitive_rows()
        .into_iter()
        .filter_map(|(id, what)| {
            let m = get(ms, &id).filter(|m| m.median.is_finite() && m.median > 0.0)?;
            let ns = fast_ns_per_op(m);
            let time = crate::units::human_ns(ns);
            Some(match ghz {
                Some(g) => cpu_finding(
                    format!("{what} = {} cycles ({time})", fmt_cycles(ns * g)),
                    ns * g,
                    ValueUnit::Cycles,
                ),
                None => cpu_finding(format!("{what} = {time}"), ns, ValueUnit::Ns),
            })
        })
        .collect()
}

/// The words between the rows that answer one question each: what
/// contention costs an atomic, an indirect call over a direct one, a jump
/// table over an if chain, a caught panic in calls. Decided by the fast
/// ends' intervals ([`compare`]).
fn primitive_words(ms: &[Measurement]) -> Vec<Finding> {
    use crate::harness::affinity::Placement;
    let e = |id: &str| get(ms, id).filter(|m| m.median > 0.0).map(est);
    let mut out = Vec::new();
    if let Some(alone) = e(ATOMIC_UNCONTENDED) {
        for (p, place) in [
            (Placement::Same, "on one CPU"),
            (Placement::Cross, "on two CPUs"),
        ] {
            let Some(c) = e(&atomic_contended_id(p)) else {
                continue;
            };
            let r = 1.0 / speedup(&c, &alone).ratio;
            let says = compare(&c, &alone).pick(
                |r| format!("is {r} cheaper than an uncontended one"),
                |r| format!("costs {r} an uncontended one"),
                |_| "costs what an uncontended one does (within noise)".to_string(),
            );
            let text = format!("an atomic add contended by two threads {place} {says}");
            out.push(ratio_finding("cpu", text, r));
        }
    }
    for (a, a_name, b, b_name) in [
        (
            CALL_INDIRECT,
            "an indirect call",
            CALL_DIRECT,
            "a direct call",
        ),
        (
            DISPATCH_MATCH,
            "a match (jump table)",
            DISPATCH_IF,
            "an if chain",
        ),
        (MUTEX_FUTEX, "the futex mutex", MUTEX_STD, "std's mutex"),
    ] {
        let (Some(ea), Some(eb)) = (e(a), e(b)) else {
            continue;
        };
        let r = 1.0 / speedup(&ea, &eb).ratio;
        let suffix = if a == DISPATCH_MATCH {
            " on 8 unpredictable cases"
        } else {
            ""
        };
        out.push(ratio_finding(
            "cpu",
            format!(
                "{}{suffix}",
                compare_text(a_name, &ea, b_name, &eb, "cheaper")
            ),
            r,
        ));
    }
    if let (Some(p), Some(c)) = (e(PANIC_CAUGHT), e(CALL_DIRECT)) {
        let r = speedup(&c, &p);
        out.push(ratio_finding(
            "cpu",
            format!(
                "a panic caught by catch_unwind costs {} direct calls",
                r.text()
            ),
            r.ratio,
        ));
    }
    out
}

/// The effective clock, and whether cycles are counted or derived from it.
fn clock(m: &Measurement, g: f64) -> Finding {
    let counters = m
        .details
        .as_ref()
        .and_then(|d| d.get("counters")?.as_str().map(str::to_string))
        .unwrap_or_default();
    cpu_finding(
        format!(
            "effective clock {g:.2} GHz (dependent single-cycle adds; cycle figures use each result's fastest 5%: interference only adds time){}",
            if counters.starts_with("unavailable") {
                "; no hardware counters, so cycles are time x this clock"
            } else {
                ""
            }
        ),
        g * 1e9,
        ValueUnit::Hz,
    )
}

/// "f64 div = 14 cycles latency; add 3.0, mul 4.0, fma 4.0 cycles;
/// throughput per cycle: add 2.00, …": figures only, which parts appear
/// depends on which results exist, never on their values.
fn type_cycles(ms: &[Measurement], ty: Ty, ghz: Option<f64>) -> Option<Finding> {
    let lat = |op: Op| get(ms, &chain_id(op, ty, true)).and_then(|m| cycles(m, ghz));
    let thr = |op: Op| {
        get(ms, &chain_id(op, ty, false))
            .and_then(|m| cycles(m, ghz))
            .map(|c| 1.0 / c)
    };
    let div = lat(Op::Div)?;
    let others: Vec<String> = [Op::Add, Op::Mul, Op::Fma]
        .into_iter()
        .filter_map(|op| Some(format!("{} {}", op.name(), fmt_cycles(lat(op)?))))
        .collect();
    let per_cycle: Vec<String> = Op::ALL
        .into_iter()
        .filter_map(|op| Some(format!("{} {:.2}", op.name(), thr(op)?)))
        .collect();
    Some(cpu_finding(
        format!(
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
        div,
        ValueUnit::Cycles,
    ))
}

/// The fast end of a result with its interval (the median's when it has
/// no samples).
fn est(m: &Measurement) -> Est {
    fast_end(m).unwrap_or_else(|| Est::of(m))
}

/// "float is 1.9× (1.8–2.0) slower than int" / "float and int are within
/// noise of each other", from the two fast ends' intervals.
fn float_word(f: &Est, i: &Est) -> String {
    match compare(f, i).worded("faster", "slower") {
        Some(d) => format!("float is {d} than int"),
        None => "float and int are within noise of each other".to_string(),
    }
}

/// The seeds' "float is N× slower on this board": per operation both types
/// have (add, mul, div), f64 against i64 in a dependent chain (latency)
/// and independent (throughput). The verdicts compare the fast ends with
/// their intervals; the times printed are those fast ends, as the cycles.
fn float_vs_int(ms: &[Measurement]) -> Vec<Finding> {
    let res = |op: Op, ty: Ty, latency: bool| {
        get(ms, &chain_id(op, ty, latency)).filter(|m| m.median.is_finite() && m.median > 0.0)
    };
    let mut out = Vec::new();
    for op in [Op::Add, Op::Mul, Op::Div] {
        let (Some(f), Some(i)) = (res(op, Ty::F64, true), res(op, Ty::I64, true)) else {
            continue;
        };
        let (fe, ie) = (est(f), est(i));
        let verdict = float_word(&fe, &ie);
        let thr = match (res(op, Ty::F64, false), res(op, Ty::I64, false)) {
            (Some(ft), Some(it)) => format!(
                "; independent operations: {}",
                float_word(&est(ft), &est(it))
            ),
            _ => String::new(),
        };
        // The time of a float operation over an int one (> 1: float slower).
        let r = 1.0 / speedup(&fe, &ie).ratio;
        out.push(ratio_finding(
            "cpu",
            format!(
                "{name}: {verdict} in a dependent chain (fastest 5%: f64 {name} {:.2} ns, i64 {name} {:.2} ns){thr}",
                fe.value,
                ie.value,
                name = op.name()
            ),
            r,
        ));
    }
    out
}

/// The misprediction penalty: half of the random branches mispredict, so
/// the difference per branch (fast ends, [`est`]) is half a penalty. Whether there
/// is a penalty at all is decided by the fast ends' intervals.
fn branch(ms: &[Measurement], ghz: Option<f64>) -> Option<Finding> {
    let (p, u) = (get(ms, BRANCH_PREDICTABLE)?, get(ms, BRANCH_UNPREDICTABLE)?);
    let (pe, ue) = (est(p), est(u));
    let (u_ns, p_ns) = (ue.value, pe.value);
    let ns = (u_ns - p_ns) * 2.0;
    let figures = format!("{u_ns:.2} ns per random branch vs {p_ns:.2} ns predicted");
    let text = match compare(&pe, &ue) {
        Verdict::Better(_) => match ghz {
            Some(g) => format!(
                "branch misprediction ≈ {} cycles ({ns:.1} ns): {figures}",
                fmt_cycles(ns * g)
            ),
            None => format!("branch misprediction ≈ {ns:.1} ns: {figures}"),
        },
        Verdict::Worse(_) | Verdict::Tie(_) => {
            format!(
                "branch misprediction: no measurable penalty, random branches are not clearly slower than predicted ones ({figures})"
            )
        }
    };
    Some(cpu_finding(
        text,
        ghz.map_or(ns, |g| ns * g),
        if ghz.is_some() {
            ValueUnit::Cycles
        } else {
            ValueUnit::Ns
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{find_saying, find_starting};
    use serde_json::json;

    fn m(id: &str, unit: &str, median: f64) -> Measurement {
        Measurement {
            details: Some(json!({"counters": "unavailable: test"})),
            ..Measurement::point(id, unit, median)
        }
    }

    /// A result whose 15 samples spread ±`rel` around `median`, so its
    /// fast end has an interval as wide.
    fn wide(id: &str, unit: &str, median: f64, rel: f64) -> Measurement {
        Measurement {
            details: Some(json!({"counters": "unavailable: test"})),
            ..Measurement::spread(id, unit, median, rel)
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
        let mul = find_starting(&f, "mul");
        assert_eq!((mul.value, mul.unit), (2.0, ValueUnit::Ratio));
        mul.assert_says("float is 2.00× (");
        assert!(mul.text.contains("slower than int in a dependent chain"));
        mul.assert_says("independent operations: float is 2.00× (2.00–2.00) slower");
        let div = find_starting(&f, "div");
        div.assert_says("float is 2.50× (");
        div.assert_says("faster than int");
        assert!(findings(&ms).iter().any(|x| x == mul));
    }

    #[test]
    fn float_and_int_within_noise_are_a_tie_whichever_median_is_lower() {
        for (fv, iv) in [(1.02, 1.0), (1.0, 1.02)] {
            let same = float_vs_int(&[
                wide("cpu.add.f64.latency", "ns/op", fv, 0.04),
                wide("cpu.add.i64.latency", "ns/op", iv, 0.04),
            ]);
            same[0].assert_starts_with("add: float and int are within noise of each other");
        }
        // 2× apart but each ±80%: the data cannot order them.
        let unclear = float_vs_int(&[
            wide("cpu.add.f64.latency", "ns/op", 2.0, 0.8),
            wide("cpu.add.i64.latency", "ns/op", 1.0, 0.8),
        ]);
        unclear[0].assert_says("within noise");
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
        let clock = f.iter().find(|f| f.unit == ValueUnit::Hz).unwrap();
        assert_eq!(clock.value, 2.0e9);
        assert!(clock.text.contains("2.00 GHz") && clock.text.contains("no hardware counters"));
        let div = find_starting(&f, "f64 div");
        assert_eq!(div.value, 14.0);
        div.assert_says("add 3.0");
        div.assert_says("div 0.20");
        let br = find_saying(&f, "misprediction");
        assert_eq!(br.value, 16.0);
        assert_eq!(br.unit, ValueUnit::Cycles);
        br.assert_starts_with("branch misprediction ≈ 16 cycles");
    }

    #[test]
    fn a_random_branch_within_noise_of_a_predicted_one_has_no_penalty() {
        let ms = vec![
            wide("cpu.branch.predictable", "ns/op", 0.50, 0.05),
            wide("cpu.branch.unpredictable", "ns/op", 0.51, 0.05),
        ];
        let br = branch(&ms, Some(3.0)).unwrap();
        br.assert_says("no measurable penalty");
        assert_eq!(br.unit, ValueUnit::Cycles);
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
        let br = find_saying(&f, "misprediction");
        assert_eq!((br.value, br.unit), (8.0, ValueUnit::Ns));
        assert!(findings(&[]).is_empty());
    }

    #[test]
    fn cycle_counts_round_to_a_sensible_precision() {
        assert_eq!(fmt_cycles(3.04), "3.0");
        assert_eq!(fmt_cycles(9.96), "10");
        assert_eq!(fmt_cycles(13.4), "13");
    }
}
