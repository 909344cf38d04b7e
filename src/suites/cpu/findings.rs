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
use super::floats::{
    CONVERT_F2I, CONVERT_I2F, CONVERT_ROUNDTRIP, MIXED_BOTH, MIXED_FLOAT, MIXED_INT, cmp_branch_id,
};
use super::sync::{
    ATOMIC_UNCONTENDED, HANDOFF_FUTEX, HANDOFF_STD, MUTEX_FUTEX, MUTEX_STD, atomic_contended_id,
};
use super::unwind::{FRAMES, error_id, panic_id};
use super::{BRANCH_PREDICTABLE, BRANCH_UNPREDICTABLE, chain_id};
use crate::harness::claims::{
    CLEAR_GAP, Est, Ratio, Verdict, compare, compare_beyond, compare_text, fast_end, speedup,
};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{CLOCK_ID, fast_ns_per_op, get, ratio_finding, run_ghz};
use crate::units::{ValueUnit, fmt_ratio_number};

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
    out.extend(conversions(ms, ghz));
    out.extend(compare_branches(ms));
    out.extend(mixed_chains(ms));
    out.extend(unwind_against_errors(ms));
    out.extend(unwind_growth(ms));
    out
}

/// A result with a positive median, as its fast end with its interval.
fn fast<'a>(ms: &'a [Measurement], id: &str) -> Option<Est<'a>> {
    get(ms, id)
        .filter(|m| m.median.is_finite() && m.median > 0.0)
        .map(est)
}

/// "int → float → int round trip = 8.0 cycles latency; throughput per
/// cycle: i64 → f64 1.00, f64 → i64 1.00": figures only, in ns without a
/// clock; which parts appear depends on which results exist.
fn conversions(ms: &[Measurement], ghz: Option<f64>) -> Option<Finding> {
    let m = get(ms, CONVERT_ROUNDTRIP).filter(|m| m.median.is_finite() && m.median > 0.0)?;
    let ns = fast_ns_per_op(m);
    let per_cycle: Vec<String> = [(CONVERT_I2F, "i64 → f64"), (CONVERT_F2I, "f64 → i64")]
        .into_iter()
        .filter_map(|(id, what)| {
            let t = get(ms, id).filter(|m| m.median.is_finite() && m.median > 0.0)?;
            Some(match ghz {
                Some(g) => format!("{what} {:.2}", 1.0 / (fast_ns_per_op(t) * g)),
                None => format!("{what} {:.2}", 1.0 / fast_ns_per_op(t)),
            })
        })
        .collect();
    let per = if ghz.is_some() { "cycle" } else { "ns" };
    let thr = if per_cycle.is_empty() {
        String::new()
    } else {
        format!("; conversions per {per}: {}", per_cycle.join(", "))
    };
    Some(match ghz {
        Some(g) => cpu_finding(
            format!(
                "int → float → int round trip = {} cycles latency ({}){thr}",
                fmt_cycles(ns * g),
                crate::units::human_ns(ns)
            ),
            ns * g,
            ValueUnit::Cycles,
        ),
        None => cpu_finding(
            format!(
                "int → float → int round trip = {} latency{thr}",
                crate::units::human_ns(ns)
            ),
            ns,
            ValueUnit::Ns,
        ),
    })
}

/// "a float compare-and-branch and an integer one are within noise of
/// each other when predicted (0.31 vs 0.30 ns)", and the same on random
/// data: the fast ends compared by their intervals ([`compare`]).
fn compare_branches(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (random, when) in [(false, "when predicted"), (true, "on random data")] {
        let (Some(f), Some(i)) = (
            fast(ms, &cmp_branch_id(true, random)),
            fast(ms, &cmp_branch_id(false, random)),
        ) else {
            continue;
        };
        let says = compare_text(
            "a float compare-and-branch",
            &f,
            "an integer one",
            &i,
            "cheaper",
        );
        // The time of the float one over the integer one (> 1: slower).
        let r = 1.0 / speedup(&f, &i).ratio;
        out.push(ratio_finding(
            "cpu",
            format!(
                "{says} {when} ({} vs {})",
                crate::units::human_ns(f.value),
                crate::units::human_ns(i.value)
            ),
            r,
        ));
    }
    out
}

/// Whether the integer and the float units work in parallel: the 8 `i64`
/// and 8 `f64` add chains in one loop against the slower of the two alone
/// (fast ends, [`compare`]): within noise of it, "side by side"; clearly
/// slower and within noise of the two added up, "one after the other";
/// in between, "partly overlap". The value is the ratio to the slower.
fn mixed_chains(ms: &[Measurement]) -> Option<Finding> {
    let (i, f, both) = (
        fast(ms, MIXED_INT)?,
        fast(ms, MIXED_FLOAT)?,
        fast(ms, MIXED_BOTH)?,
    );
    let slower = if i.value >= f.value { i } else { f };
    let sum = Est::cost(i.value + f.value, i.low + f.low, i.high + f.high);
    // Time of both together over the slower alone, with its interval.
    let r = speedup(&slower, &both);
    let s = speedup(&sum, &both);
    let says = match (compare(&both, &slower), compare(&both, &sum)) {
        (Verdict::Tie(_), _) | (Verdict::Better(_), _) => {
            "the integer and the float units work in parallel"
        }
        (Verdict::Worse(_), Verdict::Tie(_) | Verdict::Worse(_)) => "they take turns: no overlap",
        (Verdict::Worse(_), Verdict::Better(_)) => "they partly overlap",
    };
    Some(ratio_finding(
        "cpu",
        format!(
            "8 integer and 8 float add chains run side by side at {r} the slower one alone and {s} both alone added up: {says}"
        ),
        r.ratio,
    ))
}

/// "a panic caught 10 frames up costs as much as 152× (148–157) an error
/// returned through the same frames": per depth, the fast ends compared
/// by their intervals ([`compare`]); a tie says so.
fn unwind_against_errors(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for frames in FRAMES {
        let (Some(p), Some(e)) = (fast(ms, &panic_id(frames)), fast(ms, &error_id(frames))) else {
            continue;
        };
        let up = if frames == 1 {
            "1 frame".to_string()
        } else {
            format!("{frames} frames")
        };
        let figures = format!(
            "{} vs {}",
            crate::units::human_ns(p.value),
            crate::units::human_ns(e.value)
        );
        // The time of the panic over the error return (> 1: panic dearer).
        let r = speedup(&e, &p);
        let text = compare(&p, &e).pick(
            |r| format!("a panic caught {up} up is {r} cheaper than an error returned through them ({figures})"),
            |r| {
                format!(
                    "a panic caught {up} up costs as much as {} ({}–{}) error returns through them ({figures})",
                    fmt_ratio_number(r.ratio),
                    fmt_ratio_number(r.low),
                    fmt_ratio_number(r.high)
                )
            },
            |_| format!("a panic caught {up} up costs what an error returned through them does, within noise ({figures})"),
        );
        out.push(ratio_finding("cpu", text, r.ratio));
    }
    out
}

/// "per frame, a caught panic grows by 411 ns; an error return by 3.0
/// ns": from the fewest frames to the most, the difference per frame
/// (fast ends; a figure), said to grow only when the deepest is clearly
/// dearer than the shallowest ([`compare`]), else "within noise".
fn unwind_growth(ms: &[Measurement]) -> Option<Finding> {
    let (lo, hi) = (FRAMES[0], FRAMES[FRAMES.len() - 1]);
    let per_frame = |id: fn(u32) -> String| -> Option<(f64, Verdict)> {
        let (a, b) = (fast(ms, &id(lo))?, fast(ms, &id(hi))?);
        Some(((b.value - a.value) / f64::from(hi - lo), compare(&b, &a)))
    };
    let part = |name: &str, (ns, v): (f64, Verdict)| match v {
        Verdict::Worse(_) => format!("{name} grows by {} per frame", crate::units::human_ns(ns)),
        Verdict::Tie(_) | Verdict::Better(_) => {
            format!("{name} costs the same at {lo} and {hi} frames, within noise")
        }
    };
    let p = per_frame(panic_id)?;
    let mut text = format!("from {lo} to {hi} frames, {}", part("a caught panic", p));
    if let Some(e) = per_frame(error_id) {
        text.push_str(&format!("; {}", part("an error return", e)));
    }
    Some(cpu_finding(text, p.0, ValueUnit::Ns))
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
            // A clear gap, not MATERIAL: two threads on one CPU cost an
            // atomic 0.88-1.23x an uncontended one from run to run, each
            // time with a tight interval (one word, then its opposite).
            let says = compare_beyond(&c, &alone, CLEAR_GAP).pick(
                |r| format!("is {r} cheaper than an uncontended one"),
                |r| format!("is {r} dearer than an uncontended one"),
                |s| {
                    let cost = Ratio {
                        ratio: 1.0 / s.ratio,
                        low: 1.0 / s.high,
                        high: 1.0 / s.low,
                    };
                    format!("costs {cost} an uncontended one: no clear {CLEAR_GAP}× either way")
                },
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
fn est(m: &Measurement) -> Est<'_> {
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
    fn conversions_are_figures_in_cycles_or_ns() {
        let ms = vec![
            m(CLOCK_ID, "ops/s", 2.0e9),
            m(CONVERT_ROUNDTRIP, "ns/op", 4.0),
            m(CONVERT_I2F, "ops/s", 2.0e9),
            m(CONVERT_F2I, "ops/s", 1.0e9),
        ];
        let f = find_starting(&findings(&ms), "int → float → int").clone();
        assert_eq!((f.value, f.unit), (8.0, ValueUnit::Cycles));
        f.assert_says(
            "= 8.0 cycles latency (4.00 ns); conversions per cycle: i64 → f64 1.00, f64 → i64 0.50",
        );
        let ns = conversions(&ms[1..2], None).unwrap();
        assert_eq!((ns.value, ns.unit), (4.0, ValueUnit::Ns));
        assert!(!ns.text.contains("per"));
    }

    #[test]
    fn float_and_int_compare_and_branch_tie_either_way_and_differ_when_clear() {
        for (fv, iv) in [(0.51, 0.50), (0.50, 0.51)] {
            let f = compare_branches(&[
                wide(&cmp_branch_id(true, false), "ns/op", fv, 0.04),
                wide(&cmp_branch_id(false, false), "ns/op", iv, 0.04),
            ]);
            assert_eq!(f.len(), 1);
            f[0].assert_starts_with(
                "a float compare-and-branch and an integer one are within noise of each other when predicted",
            );
        }
        let f = compare_branches(&[
            wide(&cmp_branch_id(true, true), "ns/op", 6.0, 0.02),
            wide(&cmp_branch_id(false, true), "ns/op", 4.0, 0.02),
        ]);
        f[0].assert_starts_with("an integer one is 1.50× (");
        f[0].assert_says("cheaper than a float compare-and-branch on random data");
        assert!((f[0].value - 1.5).abs() < 1e-9);
    }

    #[test]
    fn mixed_chains_say_parallel_turns_or_partial_overlap() {
        let run = |i: f64, f: f64, both: f64, rel: f64| {
            mixed_chains(&[
                wide(MIXED_INT, "ns/op", i, rel),
                wide(MIXED_FLOAT, "ns/op", f, rel),
                wide(MIXED_BOTH, "ns/op", both, rel),
            ])
            .unwrap()
        };
        // Both together within noise of the slower, above or below it.
        for (f, both) in [(2.0, 2.04), (2.04, 2.0)] {
            let x = run(1.0, f, both, 0.04);
            x.assert_starts_with("8 integer and 8 float add chains run side by side at ");
            x.assert_says("the slower one alone");
            x.assert_says(": the integer and the float units work in parallel");
        }
        let turns = run(1.0, 2.0, 3.0, 0.02);
        turns.assert_says("at 1.50× (");
        turns.assert_says("they take turns: no overlap");
        assert!((turns.value - 1.5).abs() < 1e-9);
        run(1.0, 2.0, 2.5, 0.02).assert_says("they partly overlap");
        assert!(mixed_chains(&[wide(MIXED_INT, "ns/op", 1.0, 0.02)]).is_none());
    }

    #[test]
    fn contention_is_dearer_only_past_a_clear_gap_and_never_turns_cheaper() {
        use crate::harness::affinity::Placement;
        let words = |same: f64, cross: f64| {
            primitive_words(&[
                wide(ATOMIC_UNCONTENDED, "ns/op", 10.0, 0.01),
                wide(&atomic_contended_id(Placement::Same), "ns/op", same, 0.01),
                wide(&atomic_contended_id(Placement::Cross), "ns/op", cross, 0.01),
            ])
        };
        // One CPU at 0.88x and at 1.19x with tight intervals (two runs of
        // this guest): the same words, never "cheaper" and then "dearer".
        for same in [8.8, 11.9] {
            let f = words(same, 45.0);
            let one = find_saying(&f, "on one CPU");
            one.assert_says("an uncontended one: no clear 1.25× either way");
            let two = find_saying(&f, "on two CPUs");
            two.assert_starts_with("an atomic add contended by two threads on two CPUs is 4.50× (");
            two.assert_says("dearer than an uncontended one");
        }
        let f = words(4.0, 45.0);
        find_saying(&f, "on one CPU").assert_says("is 2.50× (");
        find_saying(&f, "on one CPU").assert_says("cheaper than an uncontended one");
    }

    #[test]
    fn a_deep_panic_costs_many_error_returns_and_a_tie_stays_a_tie() {
        let ms = vec![
            wide(&panic_id(10), "ns/op", 2000.0, 0.03),
            wide(&error_id(10), "ns/op", 10.0, 0.03),
        ];
        let f = unwind_against_errors(&ms);
        assert_eq!(f.len(), 1);
        f[0].assert_starts_with("a panic caught 10 frames up costs as much as 200 (");
        f[0].assert_says("error returns through them (1.95 µs vs 9.73 ns)");
        assert!((f[0].value - 200.0).abs() < 1e-6);
        for (p, e) in [(10.2, 10.0), (10.0, 10.2)] {
            let t = unwind_against_errors(&[
                wide(&panic_id(1), "ns/op", p, 0.05),
                wide(&error_id(1), "ns/op", e, 0.05),
            ]);
            t[0].assert_starts_with(
                "a panic caught 1 frame up costs what an error returned through them does, within noise",
            );
        }
    }

    #[test]
    fn unwinding_grows_per_frame_and_a_flat_sweep_says_so() {
        let mut ms = Vec::new();
        for n in FRAMES {
            ms.push(wide(
                &panic_id(n),
                "ns/op",
                500.0 + 100.0 * f64::from(n),
                0.02,
            ));
            ms.push(wide(&error_id(n), "ns/op", 5.0, 0.02));
        }
        let g = unwind_growth(&ms).unwrap();
        // The fast ends (5th percentiles) of a ±2% spread: 98% of 100 ns.
        g.assert_starts_with("from 1 to 100 frames, a caught panic grows by 98.2 ns per frame");
        g.assert_says("; an error return costs the same at 1 and 100 frames, within noise");
        assert!((g.value - 98.2).abs() < 0.1);
        assert!(unwind_growth(&ms[..2]).is_none());
    }

    #[test]
    fn cycle_counts_round_to_a_sensible_precision() {
        assert_eq!(fmt_cycles(3.04), "3.0");
        assert_eq!(fmt_cycles(9.96), "10");
        assert_eq!(fmt_cycles(13.4), "13");
    }
}
