//! What the process results say: how each way to start a program grows
//! with the memory and the descriptors the parent holds, the ways ranked
//! into tiers, what the shell and the dynamic loader add, what a context
//! switch and a first page touch cost.
//!
//! Every word is decided by intervals ([`crate::harness::claims`]): a curve
//! "grows" or "stays flat" by the interval of its slope, one method is
//! cheaper than another by the interval of their ratio, and methods that
//! cannot be told apart are named as a tier, in declaration order.

use super::{
    AREA, FAULT_ANON, FAULT_ANON_THP, FD_SPAWNS, GIB, GROWTH, NOFILE_SPAWNS, PINGPONG_PROCESS,
    PINGPONG_THREAD, PIPE_ALONE, POSIX_SPAWN_DYNAMIC, RSS_POINTS, THREAD, fds, fds_id, growth_id,
    nofile, nofile_id, small_parent,
};
use super::{CLONE_VFORK_EXEC, FORK_EXEC, POPEN, POSIX_SPAWN, SYSTEM};
use crate::harness::claims::{
    CLEAR_GAP, Est, MATERIAL, Ratio, Trend, TrendKind, Verdict, Widths, compare, compare_text,
    speedup, tiers_apart_text, trend,
};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{get, ratio_finding};
use crate::units::{BaseUnit, ValueUnit, human_ns, size_label};

/// The smallest change over the growth curve, relative to its start, that
/// is worth "grows": a quarter more. A spawn that stays within it over the
/// curve (up to 256 MiB at the quick profile) is called flat.
const GROWTH_MATERIAL: f64 = 0.25;

/// The smallest change between the fewest and the most descriptors,
/// relative to the cost with the fewest, that is worth "grows".
const FDS_MATERIAL: f64 = 0.10;

/// The estimate of the measurement with id `id`, if the run has it, with
/// the area's typical interval ([`Widths`]): words about spawn costs are
/// decided on it, so one result's luck with three rounds cannot flip them.
fn est(ms: &[Measurement], id: &str) -> Option<Est<'static>> {
    get(ms, id).map(|m| Widths::of(ms).est(m))
}

/// A finding stated in `unit`.
fn finding(text: String, value: f64, unit: impl Into<ValueUnit>) -> Finding {
    Finding {
        area: AREA.to_string(),
        text,
        value,
        unit: unit.into(),
    }
}

/// Every process finding of a run.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    growth_findings(ms, &mut out);
    fds_findings(ms, &mut out);
    nofile_findings(ms, &mut out);
    out.extend(small_parent_finding(ms));
    rank_finding(ms, &mut out);
    thread_finding(ms, &mut out);
    loader_finding(ms, &mut out);
    switch_findings(ms, &mut out);
    fault_finding(ms, &mut out);
    out
}

/// "grows with", "stays flat with", "falls with", or "shows no clear trend with".
fn trend_verb(t: &Trend) -> &'static str {
    match t.kind {
        TrendKind::Grows => "grows with",
        TrendKind::Falls => "falls with",
        TrendKind::Flat => "stays flat with",
        TrendKind::Unclear => "shows no clear trend with",
    }
}

/// The estimate of `id` for words about rows whose rounds land in two
/// states (a spawn's child exec'd on the parent's CPU or the other one
/// reads 60 µs or 130 µs on a 2-vCPU guest): the wider of the row's own
/// interval and the area's typical one. The typical width keeps a lucky
/// narrow interval from deciding a word; the row's own keeps the spread it
/// really has, so a median that picked one of two states is not read as a
/// growth or an order. It comes detached: a ratio of two is not paired
/// round by round ([`claims::paired_log_half_width`]), since which state a
/// round's spawn landed in is the row's own, not the pair's.
fn spread_est(ms: &[Measurement], id: &str) -> Option<Est<'static>> {
    let m = get(ms, id)?;
    let (own, typical) = (Est::of(m), Widths::of(ms).est(m));
    Some(if own.log_half_width() > typical.log_half_width() {
        own.detached()
    } else {
        typical
    })
}

/// The growth curve of one method: (GiB touched, estimate) for the points
/// measured, each with its interval as [`spread_est`] gives it.
fn curve(ms: &[Measurement], name: &str) -> Vec<Point> {
    RSS_POINTS
        .iter()
        .filter_map(|&rss| spread_est(ms, &growth_id(name, rss)).map(|e| (rss as f64 / GIB, e)))
        .collect()
}

/// The trend of a growth curve, judged from its two ends (the least and
/// the most memory measured; a fork's cost rises faster than a straight
/// line, so a line through every point misfits and its widened interval
/// spanned every word from run to run), with those two points. Every
/// method is judged against its own start ([`GROWTH_MATERIAL`]): "stays
/// flat" only when the interval of its growth over the curve is within a
/// quarter either way, whatever fork+exec's slope beside it (a spawn that
/// doubles is not flat because fork grows forty-fold); it "grows" or
/// "falls" only when the whole interval is a quarter or more one way
/// ([`clear_kind`]).
fn growth_trend(ms: &[Measurement], name: &str) -> Option<(Trend, Point, Point)> {
    let (t, first, last) = ends_of(&curve(ms, name), GROWTH_MATERIAL)?;
    let kind = clear_kind(&t, GROWTH_MATERIAL);
    Some((Trend { kind, ..t }, first, last))
}

/// A trend's word with a dead zone of `material` (the change over the
/// sweep relative to its start) decided on the slope's whole interval:
/// grows or falls when all of it is at least `material` one way, flat
/// when all of it is within `material`, no clear trend otherwise. popen's
/// cost fell 28% over the curve in one quick run, its interval reaching
/// to no change at all: by [`trend`]'s rule (the interval excludes zero,
/// the point estimate is material) that read "falls", and "no clear trend"
/// in the runs beside it.
fn clear_kind(t: &Trend, material: f64) -> TrendKind {
    let change = |s: f64| s * t.span / t.start;
    let (low, high) = (change(t.low), change(t.high));
    if low >= material {
        TrendKind::Grows
    } else if high <= -material {
        TrendKind::Falls
    } else if low.abs() < material && high.abs() < material {
        TrendKind::Flat
    } else {
        TrendKind::Unclear
    }
}

/// Per method of the growth curve: does it grow with the memory the parent
/// has touched, by how many times over the curve (with its interval) and
/// by how much per GiB, beside fork+exec's slope; plus fork+exec against
/// posix_spawn at the largest point, and popen against the clone way.
fn growth_findings(ms: &[Measurement], out: &mut Vec<Finding>) {
    let fork = growth_trend(ms, FORK_EXEC).map(|(f, _, _)| f);
    for g in &GROWTH {
        let Some((t, (x0, lo), (x1, hi))) = growth_trend(ms, g.name) else {
            continue;
        };
        let beside = match fork {
            Some(f) if g.name != FORK_EXEC => {
                format!(" against fork+exec's {}", human_ns(f.slope))
            }
            _ => String::new(),
        };
        out.push(finding(
            format!(
                "{} {} the memory the parent has touched: {} with {} touched, {} with {} ({}); {} per GiB{beside}",
                g.what,
                trend_verb(&t),
                human_ns(lo.value),
                size_label((x0 * GIB) as u64),
                human_ns(hi.value),
                size_label((x1 * GIB) as u64),
                Ratio::of(&hi, &lo),
                t.slope_text(1.0, human_ns),
            ),
            t.slope,
            ValueUnit::NsPerGiB,
        ));
    }
    if let Some((rss, f, p)) = top_pair(ms, FORK_EXEC, POSIX_SPAWN) {
        out.push(ratio_finding(
            AREA,
            format!(
                "with {} touched in the parent, {} ({} vs {})",
                size_label(rss),
                compare_text("posix_spawn", &p, "fork+exec", &f, "faster"),
                human_ns(p.value),
                human_ns(f.value)
            ),
            f.value / p.value,
        ));
    }
    popen_findings(ms, out);
}

/// The largest growth point (above 0) where both `a` and `b` were measured:
/// (bytes touched, estimate of a, estimate of b).
fn top_pair(ms: &[Measurement], a: &str, b: &str) -> Option<(u64, Est<'static>, Est<'static>)> {
    RSS_POINTS.iter().rev().find_map(|&rss| {
        let x = est(ms, &growth_id(a, rss))?;
        let y = est(ms, &growth_id(b, rss))?;
        (rss > 0).then_some((rss, x, y))
    })
}

/// popen from a big parent against doing its job without the shell
/// (clone+vfork+exec with a stdout pipe), whether popen pays for the
/// parent's memory, and what the shell adds per child.
fn popen_findings(ms: &[Measurement], out: &mut Vec<Finding>) {
    if let (Some((rss, p, c)), Some((pt, p0, p1))) = (
        top_pair(ms, POPEN, CLONE_VFORK_EXEC),
        growth_trend(ms, POPEN),
    ) {
        let fork = growth_trend(ms, FORK_EXEC).map(|(_, f0, f1)| Ratio::of(&f1.1, &f0.1));
        let memory = pays_as_fork(&pt, &Ratio::of(&p1.1, &p0.1), fork.as_ref());
        out.push(ratio_finding(
            AREA,
            format!(
                "popen from a parent with {} touched against the clone(CLONE_VM|CLONE_VFORK)+exec way with a pipe: {} ({} vs {}); {memory} ({} per GiB)",
                size_label(rss),
                compare_text("the clone way", &c, "popen", &p, "faster"),
                human_ns(c.value),
                human_ns(p.value),
                pt.slope_text(1.0, human_ns)
            ),
            p.value / c.value,
        ));
    }
    let clone0 = est(ms, &growth_id(CLONE_VFORK_EXEC, 0));
    let popen0 = est(ms, &growth_id(POPEN, 0));
    if let (Some(c), Some(p)) = (clone0, popen0) {
        let system = est(ms, &growth_id(SYSTEM, 0))
            .map(|s| format!("; system() {}", human_ns(s.value)))
            .unwrap_or_default();
        let what = compare(&p, &c).pick(
            |r| format!("popen through the shell is {r} faster per child than without it"),
            |r| {
                format!(
                    "the shell adds {} per child ({r})",
                    human_ns(p.value - c.value)
                )
            },
            |_| "the shell adds no cost per child that can be told from noise".to_string(),
        );
        out.push(finding(
            format!(
                "{what}: popen {} vs {} for clone(CLONE_VM|CLONE_VFORK)+exec with the same stdout pipe{system}",
                human_ns(p.value),
                human_ns(c.value)
            ),
            p.value - c.value,
            BaseUnit::NsPerOp,
        ));
    }
}

/// Whether popen pays for the parent's memory as fork does, from the
/// intervals of their growth over the curve (`popen` and `fork`, each its
/// cost at the most memory over its cost at the least, as the growth
/// findings print them): "pays clearly less … than fork+exec" when all of
/// popen's interval is below all of fork+exec's by more than [`MATERIAL`];
/// otherwise, by popen's own `trend`, "pays … as fork does" when it grows,
/// "does not pay" when it stays flat, "not clear" else. popen's own trend
/// alone read "does not pay" in the quick run whose interval came out
/// within its dead zone (0.83–0.98×) and "not clear" in the two where it
/// straddled it (0.69–1.30×), while fork+exec grew 12–100× in all three:
/// the clause answers the comparison it names. (The slopes' intervals
/// compare worse: fork's, from two ends 40× apart, reached near zero.)
fn pays_as_fork(trend: &Trend, popen: &Ratio, fork: Option<&Ratio>) -> &'static str {
    if fork.is_some_and(|f| popen.high * MATERIAL < f.low) {
        return "popen here pays clearly less for the parent's memory than fork+exec";
    }
    match trend.kind {
        TrendKind::Grows => "popen here pays for the parent's memory as fork does",
        TrendKind::Flat => "popen here does not pay for the parent's memory",
        TrendKind::Falls | TrendKind::Unclear => {
            "whether popen here pays for the parent's memory is not clear"
        }
    }
}

/// A point of a sweep: its x and the estimate there.
type Point = (f64, Est<'static>);

/// The measured points of a sweep of one row over `points` (ids from `id`).
fn measured(ms: &[Measurement], points: &[u64], id: impl Fn(u64) -> String) -> Vec<Point> {
    points
        .iter()
        .filter_map(|&n| est(ms, &id(n)).map(|e| (n as f64, e)))
        .collect()
}

/// The trend through every one of `pts`, judged against `material`, with
/// the first and last of them.
fn line_of(pts: &[Point], material: f64) -> Option<(Trend, Point, Point)> {
    let (&first, &last) = (pts.first()?, pts.last()?);
    Some((trend(pts, material)?, first, last))
}

/// The trend from the first to the last of `pts`, with those two points:
/// a sweep judged from its two ends rather than through every point
/// ([`line_of`]), for rows that do not rise in a straight line (a spawn
/// pays little for 1000 descriptors and much for 10 000), where a line
/// through every point misfits and the misfit widens its interval past
/// any word.
fn ends_of(pts: &[Point], material: f64) -> Option<(Trend, Point, Point)> {
    line_of(&[*pts.first()?, *pts.last()?], material)
}

/// Per spawn method: does it grow with the descriptors the parent holds,
/// and by how much per 1000 of them, judged from the sweep's ends.
fn fds_findings(ms: &[Measurement], out: &mut Vec<Finding>) {
    for (_, name, what) in FD_SPAWNS {
        let pts = measured(ms, &fds::FD_POINTS, |n| fds_id(name, n));
        let Some((t, (n0, lo), (n1, hi))) = ends_of(&pts, FDS_MATERIAL) else {
            continue;
        };
        out.push(finding(
            format!(
                "{what} {} the descriptors the parent holds open: {} with {n0:.0} open, {} with {n1:.0}; {} per 1000 descriptors",
                trend_verb(&t),
                human_ns(lo.value),
                human_ns(hi.value),
                t.slope_text(1000.0, human_ns)
            ),
            t.slope * 1000.0,
            ValueUnit::NsPer1000Fd,
        ));
    }
}

/// The smallest change of a spawn over the descriptor-limit sweep,
/// relative to its cost at the lowest limit, that is worth "grows".
const NOFILE_MATERIAL: f64 = 0.10;

/// The descriptor-limit sweep: per way of closing, does it grow with the
/// limit and by how much per descriptor of limit; and at the largest limit
/// measured, the close loop beside close_range (and closefrom, and no
/// closing at all).
fn nofile_findings(ms: &[Measurement], out: &mut Vec<Finding>) {
    for (how, name, _) in NOFILE_SPAWNS {
        if how == nofile::Close::None {
            continue;
        }
        let pts = measured(ms, &nofile::NOFILE_POINTS, |n| nofile_id(name, n));
        let Some((t, (n0, lo), (n1, hi))) = line_of(&pts, NOFILE_MATERIAL) else {
            continue;
        };
        out.push(finding(
            format!(
                "fork + {} + exec {} the soft RLIMIT_NOFILE: {} at {n0:.0}, {} at {n1:.0}; {} per descriptor of limit",
                how.name(),
                trend_verb(&t),
                human_ns(lo.value),
                human_ns(hi.value),
                t.slope_text(1.0, human_ns)
            ),
            t.slope,
            ValueUnit::NsPerFd,
        ));
    }
    let top = nofile::NOFILE_POINTS.iter().rev().find_map(|&n| {
        let l = spread_est(ms, &nofile_id("close_loop", n))?;
        let r = spread_est(ms, &nofile_id("close_range", n))?;
        Some((n, l, r))
    });
    let Some((n, l, r)) = top else {
        return;
    };
    let others: String = [("fork_exec", "without closing"), ("closefrom", "closefrom")]
        .iter()
        .filter_map(|(name, what)| {
            est(ms, &nofile_id(name, n)).map(|e| format!("; {what}: {}", human_ns(e.value)))
        })
        .collect();
    out.push(finding(
        format!(
            "closing up to the limit costs {} per spawn at a soft RLIMIT_NOFILE of {n}; close_range: {}{others}",
            human_ns(l.value),
            human_ns(r.value),
        ),
        l.value,
        BaseUnit::NsPerOp,
    ));
    // The comparison in a finding of its own: its word comes and goes
    // with the runs where the two are near, and the figures above stay.
    out.push(ratio_finding(
        AREA,
        format!(
            "closing up to the limit at a soft RLIMIT_NOFILE of {n}: {}",
            compare_text("close_range", &r, "the close loop", &l, "faster"),
        ),
        l.value / r.value,
    ));
}

/// fork+exit from the small parent beside fork+exit from opcost, with
/// what each parent weighed.
fn small_parent_finding(ms: &[Measurement]) -> Option<Finding> {
    let small = get(ms, "process.fork_exit")?;
    let big = get(ms, "process.fork_exit.from_opcost")?;
    let detail = |key: &str| small_parent::weight(small, key);
    let w = Widths::of(ms);
    let (s, b) = (w.est(small), w.est(big));
    let verdict = compare(&s, &b).pick(
        |r| format!("from opcost it is {r} slower: a program pays for what it has mapped"),
        |r| format!("from the small parent it is {r} slower, against what each has mapped"),
        |_| "the two are within noise of each other".to_string(),
    );
    Some(ratio_finding(
        AREA,
        format!(
            "fork+exit costs {} from a small parent (RSS {}, mapped {}) and {} from opcost itself (RSS {}, mapped {}); {verdict}",
            human_ns(s.value),
            detail("helper_rss_bytes"),
            detail("helper_vm_bytes"),
            human_ns(b.value),
            detail("opcost_rss_bytes"),
            detail("opcost_vm_bytes"),
        ),
        b.value / s.value,
    ))
}

/// Every way to start the static program with nothing touched, in tiers.
fn rank_finding(ms: &[Measurement], out: &mut Vec<Finding>) {
    let rows: Vec<(&str, Est)> = GROWTH
        .iter()
        .filter_map(|g| Some((g.what, spread_est(ms, &growth_id(g.name, 0))?)))
        .collect();
    if rows.len() < 2 {
        return;
    }
    let names: Vec<&str> = rows.iter().map(|r| r.0).collect();
    let items: Vec<Est> = rows.iter().map(|r| r.1).collect();
    let best = items.iter().map(|e| e.value).fold(f64::INFINITY, f64::min);
    out.push(finding(
        format!(
            "ways to start the static program from a parent with nothing touched, {}",
            tiers_apart_text(&names, &items, "cheapest", CLEAR_GAP)
        ),
        best,
        BaseUnit::NsPerOp,
    ));
}

/// A process start against a thread start.
fn thread_finding(ms: &[Measurement], out: &mut Vec<Finding>) {
    let (Some(sp), Some(th)) = (est(ms, &growth_id(POSIX_SPAWN, 0)), est(ms, THREAD)) else {
        return;
    };
    out.push(ratio_finding(
        AREA,
        format!(
            "starting a process against a thread: {} ({} vs {})",
            compare_text(
                "a thread spawn+join",
                &th,
                "posix_spawn of a static program, exit, wait",
                &sp,
                "cheaper"
            ),
            human_ns(th.value),
            human_ns(sp.value)
        ),
        sp.value / th.value,
    ));
}

/// What the dynamic loader adds: /bin/true against the static program.
fn loader_finding(ms: &[Measurement], out: &mut Vec<Finding>) {
    let (Some(sp), Some(m)) = (
        est(ms, &growth_id(POSIX_SPAWN, 0)),
        get(ms, POSIX_SPAWN_DYNAMIC),
    ) else {
        return;
    };
    let dynamic = m
        .details
        .as_ref()
        .and_then(|d| d.get("dynamic"))
        .and_then(serde_json::Value::as_bool);
    if dynamic == Some(false) {
        return;
    }
    let dy = Widths::of(ms).est(m);
    let what = compare(&dy, &sp).pick(
        |r| format!("come out {r} faster than the static program"),
        |r| format!("add {} per exec ({r})", human_ns(dy.value - sp.value)),
        |_| "add no cost per exec that can be told from noise".to_string(),
    );
    out.push(finding(
        format!(
            "the dynamic loader and libc start-up of /bin/true {what} ({} vs {} for a static program)",
            human_ns(dy.value),
            human_ns(sp.value)
        ),
        dy.value - sp.value,
        BaseUnit::NsPerOp,
    ));
}

/// A context switch: half a ping-pong round trip, net of the pipe cost.
fn switch_findings(ms: &[Measurement], out: &mut Vec<Finding>) {
    let Some(alone) = est(ms, PIPE_ALONE) else {
        return;
    };
    for (id, what) in [
        (PINGPONG_PROCESS, "processes"),
        (PINGPONG_THREAD, "threads"),
    ] {
        let Some(rt) = est(ms, id) else { continue };
        let pipes = alone.scaled(2.0);
        let sw = (rt.value - pipes.value) / 2.0;
        let cost = match compare(&rt, &pipes) {
            Verdict::Worse(_) => format!("costs {}", human_ns(sw)),
            _ => "costs too little to tell from the pipe's own cost".to_string(),
        };
        out.push(finding(
            format!(
                "a context switch between two {what} on one CPU {cost} (half a pipe round trip, {}, net of the pipe cost, {} per write+read)",
                human_ns(rt.value),
                human_ns(alone.value)
            ),
            sw,
            BaseUnit::NsPerOp,
        ));
    }
}

/// First touch of anonymous memory per byte, base pages against huge pages.
fn fault_finding(ms: &[Measurement], out: &mut Vec<Finding>) {
    let per_byte = |id: &str| {
        let m = get(ms, id)?;
        let bytes = m.details.as_ref()?.get("touch_bytes")?.as_f64()?;
        (bytes > 0.0).then(|| (Widths::of(ms).est(m).scaled(1.0 / bytes), m.median, bytes))
    };
    let (Some((base, base_ns, base_b)), Some((huge, huge_ns, huge_b))) =
        (per_byte(FAULT_ANON), per_byte(FAULT_ANON_THP))
    else {
        return;
    };
    let what = match compare(&huge, &base).worded("less", "more") {
        Some(d) => format!("costs {d} per byte with huge pages"),
        None => "costs the same per byte with huge pages, within noise".to_string(),
    };
    out.push(ratio_finding(
        AREA,
        format!(
            "first touch of anonymous memory {what} ({} per {} fault vs {} per {} fault)",
            human_ns(huge_ns),
            size_label(huge_b as u64),
            human_ns(base_ns),
            size_label(base_b as u64)
        ),
        speedup(&huge, &base).ratio,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::find_starting;
    use crate::units::BaseUnit;

    /// A latency with a ±2% interval.
    fn m(id: &str, median: f64) -> Measurement {
        spread(id, median, median * 0.98, median * 1.02)
    }

    /// A time `median` whose interval runs from `low` to `high`.
    fn spread(id: &str, median: f64, low: f64, high: f64) -> Measurement {
        let mut m = Measurement::point(id, "ns/op", median);
        m.summary.ci_low = low;
        m.summary.ci_high = high;
        m
    }

    #[test]
    fn a_fork_curve_that_rises_faster_than_a_line_grows_and_a_noisy_vfork_beside_it_is_not_flat() {
        // Noisy and convex, as on a guest: 0.2 ms with nothing touched, 9 ms
        // at the top, the middle points off any straight line.
        let mut ms = Vec::new();
        let fork = [(0, 0.2e6, 0.1e6, 0.8e6), (16, 0.7e6, 0.5e6, 1.0e6)];
        for (mib, v, lo, hi) in fork {
            ms.push(spread(&growth_id(FORK_EXEC, mib << 20), v, lo, hi));
        }
        let top = *RSS_POINTS.last().expect("points");
        ms.push(spread(&growth_id(FORK_EXEC, top), 9e6, 5e6, 15e6));
        for rss in [0, top] {
            ms.push(spread(&growth_id("vfork_exec", rss), 0.15e6, 0.08e6, 0.3e6));
        }
        let f = findings(&ms);
        find_starting(&f, "fork+exec grows with the memory");
        // Its ends are equal, but their intervals allow a change of more
        // than a quarter: not flat, whatever fork+exec does beside it.
        find_starting(&f, "vfork+exec shows no clear trend with the memory");
    }

    #[test]
    fn growth_findings_state_fork_slope_and_flat_spawn() {
        let mut ms = Vec::new();
        for rss in RSS_POINTS {
            let gib = rss as f64 / GIB;
            ms.push(m(&growth_id(FORK_EXEC, rss), 100_000.0 + 20e6 * gib));
            ms.push(m(&growth_id(POSIX_SPAWN, rss), 80_000.0 + 1_000.0 * gib));
            ms.push(m(&growth_id("vfork_exec", rss), 70_000.0 + 5e6 * gib));
        }
        let f = findings(&ms);
        let fork = find_starting(&f, "fork+exec grows with the memory");
        assert!((fork.value - 20e6).abs() < 1e3, "{}", fork.value);
        assert_eq!(fork.unit, ValueUnit::NsPerGiB);
        assert!(
            fork.text.contains("with 0B touched,") && fork.text.contains("with 1GiB (201× ("),
            "{}",
            fork.text
        );
        find_starting(&f, "posix_spawn stays flat with the memory").assert_says("(1.01× (");
        find_starting(&f, "vfork+exec grows with the memory")
            .assert_says("against fork+exec's 20.0 ms");
        let ratio = find_starting(&f, "with 1GiB");
        assert!(
            ratio.text.contains("posix_spawn is ") && ratio.text.contains("faster than fork+exec"),
            "{}",
            ratio.text
        );
        assert_eq!(ratio.unit, ValueUnit::Ratio);
        assert!(ratio.value > 100.0);
    }

    #[test]
    fn the_close_loop_grows_with_the_limit_and_close_range_stays_flat() {
        let mut ms = Vec::new();
        for n in nofile::NOFILE_POINTS {
            ms.push(m(&nofile_id("close_loop", n), 200_000.0 + 150.0 * n as f64));
            ms.push(m(&nofile_id("close_range", n), 200_000.0));
            ms.push(m(&nofile_id("fork_exec", n), 195_000.0));
        }
        let f = findings(&ms);
        let grows = find_starting(&f, "fork + loop + exec grows with the soft RLIMIT_NOFILE");
        assert!((grows.value - 150.0).abs() < 1.0, "{}", grows.value);
        assert_eq!(grows.unit, ValueUnit::NsPerFd);
        find_starting(
            &f,
            "fork + close_range + exec stays flat with the soft RLIMIT_NOFILE",
        );
        let top = find_starting(&f, "closing up to the limit costs");
        top.assert_says("at a soft RLIMIT_NOFILE of 1048576; close_range: ");
        top.assert_says("without closing");
        assert!(!top.text.contains("closefrom:"), "{}", top.text);
        assert!(!top.text.contains("faster"), "{}", top.text);
        let which = find_starting(
            &f,
            "closing up to the limit at a soft RLIMIT_NOFILE of 1048576: close_range is",
        );
        which.assert_says("faster than the close loop");
        assert_eq!(which.unit, ValueUnit::Ratio);
        assert!(which.value > 100.0, "{}", which.value);
    }

    #[test]
    fn a_noisy_curve_has_no_clear_trend_and_equal_ends_tie() {
        let mut ms = Vec::new();
        for (rss, v) in [(0, 100_000.0), (256 << 20, 115_000.0)] {
            ms.push(spread(&growth_id(POSIX_SPAWN, rss), v, v * 0.7, v * 1.4));
            ms.push(m(&growth_id(FORK_EXEC, rss), v * 1.01));
        }
        let f = findings(&ms);
        find_starting(&f, "posix_spawn shows no clear trend with the memory");
        let r = find_starting(
            &f,
            "with 256MiB touched in the parent, posix_spawn and fork+exec are within noise",
        );
        assert_eq!(r.unit, ValueUnit::Ratio);
    }

    /// The quick profile's growth curve (0 B and 256 MiB touched) of
    /// posix_spawn growing `growth` times, each end ±`rel`, beside a
    /// fork+exec growing 35 times.
    fn spawn_growing(growth: f64, rel: f64) -> Vec<Measurement> {
        let mut ms = Vec::new();
        for (rss, k, fork) in [(0, 1.0, 1.0), (256 << 20, growth, 35.0)] {
            let v = 70_600.0 * k;
            ms.push(spread(
                &growth_id(POSIX_SPAWN, rss),
                v,
                v * (1.0 - rel),
                v * (1.0 + rel),
            ));
            ms.push(m(&growth_id(FORK_EXEC, rss), 90_000.0 * fork));
        }
        ms
    }

    #[test]
    fn a_spawn_is_flat_at_1_0x_and_grows_at_1_3x_and_2_2x_beside_a_steep_fork() {
        for (growth, verb) in [
            (1.0, "stays flat with"),
            (1.3, "grows with"),
            (2.2, "grows with"),
        ] {
            let f = findings(&spawn_growing(growth, 0.02));
            let s = find_starting(&f, &format!("posix_spawn {verb} the memory"));
            // The growth as measured: both ends, how many times, the slope
            // beside fork+exec's.
            s.assert_says(&format!(
                "70.6 µs with 0B touched, {} with 256MiB ({} (",
                human_ns(70_600.0 * growth),
                crate::units::fmt_ratio(growth)
            ));
            s.assert_says("per GiB against fork+exec's 12.2 ms");
            find_starting(&f, "fork+exec grows with the memory");
        }
        // A growth whose interval reaches past a quarter either way is not
        // flat, nor does 1.3x with such an interval grow.
        for growth in [1.0, 1.3] {
            let f = findings(&spawn_growing(growth, 0.3));
            find_starting(&f, "posix_spawn shows no clear trend with the memory");
        }
    }

    #[test]
    fn a_row_in_two_states_is_not_ranked_by_the_state_its_median_picked() {
        // vfork+exec's median landed in its fast state at 0 B (its own
        // interval spans both states) and its slow one at 256 MiB: no
        // growth is read from it, and it is not ranked apart from fork+exec.
        let mut ms = vec![
            spread(&growth_id("vfork_exec", 0), 63_400.0, 19_900.0, 202_000.0),
            spread(
                &growth_id("vfork_exec", 256 << 20),
                130_000.0,
                110_000.0,
                154_000.0,
            ),
            m(&growth_id(FORK_EXEC, 0), 91_000.0),
            m(&growth_id(FORK_EXEC, 256 << 20), 3.2e6),
        ];
        for i in 0..6 {
            ms.push(m(&format!("process.other{i}"), 1000.0));
        }
        let f = findings(&ms);
        find_starting(&f, "vfork+exec shows no clear trend with the memory");
        find_starting(&f, "ways to start the static program")
            .assert_says("no clear 1.25× gap between fork+exec and vfork+exec");
    }

    #[test]
    fn popen_findings_compare_with_the_clone_way_and_price_the_shell() {
        let mut ms = Vec::new();
        for rss in RSS_POINTS {
            let gib = rss as f64 / GIB;
            ms.push(m(&growth_id(FORK_EXEC, rss), 500_000.0 + 80e6 * gib));
            ms.push(m(&growth_id(CLONE_VFORK_EXEC, rss), 150_000.0));
            ms.push(m(&growth_id(POPEN, rss), 900_000.0 + 1_000.0 * gib));
            ms.push(m(&growth_id(SYSTEM, rss), 850_000.0));
        }
        let f = findings(&ms);
        let p = find_starting(&f, "popen from a parent with 1GiB");
        assert_eq!(p.unit, ValueUnit::Ratio);
        assert!(
            (p.value - 901_000.0 / 150_000.0).abs() < 1e-9,
            "{}",
            p.value
        );
        p.assert_says("the clone way is ");
        p.assert_says("popen here pays clearly less for the parent's memory than fork+exec");
        let sh = find_starting(&f, "the shell adds");
        assert_eq!((sh.value, sh.unit), (750_000.0, BaseUnit::NsPerOp.into()));
        sh.assert_says("system()");
        find_starting(&f, "popen stays flat with the memory");
        // The shell's cost within noise is named as such.
        let tie = vec![
            m(&growth_id(CLONE_VFORK_EXEC, 0), 150_000.0),
            m(&growth_id(POPEN, 0), 151_000.0),
        ];
        find_starting(
            &findings(&tie),
            "the shell adds no cost per child that can be told from noise",
        );
    }

    #[test]
    fn popen_pays_clearly_less_than_fork_only_when_the_growths_intervals_part() {
        let r = |ratio: f64, low: f64, high: f64| Ratio { ratio, low, high };
        let t = |kind: TrendKind| Trend {
            slope: 0.0,
            low: -1.0,
            high: 1.0,
            start: 1.0,
            span: 1.0,
            kind,
        };
        let fork = r(35.0, 12.0, 104.0);
        // popen's growth 0.69–1.30× against fork's 12–104×: clearly less,
        // whether popen's own trend is flat or unclear.
        for kind in [TrendKind::Flat, TrendKind::Unclear] {
            assert_eq!(
                pays_as_fork(&t(kind), &r(0.95, 0.69, 1.30), Some(&fork)),
                "popen here pays clearly less for the parent's memory than fork+exec"
            );
        }
        // At the edge: popen's upper end 5% below fork's lower end is not
        // clearly less; just past it is.
        let edge = 12.0 / MATERIAL;
        assert_eq!(
            pays_as_fork(&t(TrendKind::Unclear), &r(5.0, 1.0, edge), Some(&fork)),
            "whether popen here pays for the parent's memory is not clear"
        );
        assert_eq!(
            pays_as_fork(&t(TrendKind::Grows), &r(5.0, 2.0, edge * 0.99), Some(&fork)),
            "popen here pays clearly less for the parent's memory than fork+exec"
        );
        // Overlapping fork's: popen's own trend says it.
        assert_eq!(
            pays_as_fork(&t(TrendKind::Grows), &r(20.0, 10.0, 40.0), Some(&fork)),
            "popen here pays for the parent's memory as fork does"
        );
        // Without fork's curve: popen's own trend.
        assert_eq!(
            pays_as_fork(&t(TrendKind::Flat), &r(0.95, 0.83, 0.98), None),
            "popen here does not pay for the parent's memory"
        );
    }

    #[test]
    fn spawn_methods_are_ranked_into_tiers() {
        let ms = vec![
            m(&growth_id(FORK_EXEC, 0), 300_000.0),
            m(&growth_id("vfork_exec", 0), 100_000.0),
            m(&growth_id(POSIX_SPAWN, 0), 101_000.0),
            m(&growth_id(POPEN, 0), 900_000.0),
        ];
        let f = findings(&ms);
        let r = find_starting(&f, "ways to start the static program");
        r.assert_says("cheapest: vfork+exec and posix_spawn; then fork+exec (");
        r.assert_says("; then popen (");
        assert_eq!(r.value, 100_000.0);
    }

    #[test]
    fn descriptor_findings_say_which_spawns_grow() {
        let ms = vec![
            m(&fds_id(POSIX_SPAWN, 10), 200_000.0),
            m(&fds_id(POSIX_SPAWN, 1_000), 290_000.0),
            m(&fds_id(FORK_EXEC, 10), 500_000.0),
            m(&fds_id(FORK_EXEC, 1_000), 501_000.0),
        ];
        let f = findings(&ms);
        let ps = find_starting(&f, "posix_spawn grows with the descriptors");
        assert_eq!(ps.unit, ValueUnit::NsPer1000Fd);
        assert!((ps.value - 90_909.09).abs() < 1.0, "{}", ps.value);
        find_starting(&f, "fork+exec stays flat with the descriptors");
        assert!(
            !f.iter().any(|f| f.text.contains("Command")),
            "not measured"
        );
    }

    #[test]
    fn a_spawn_flat_to_1000_descriptors_and_steep_to_10000_grows() {
        // This machine's curve at the quick profile: a line through all
        // three points misfits, and with one degree of freedom left its
        // interval spans everything; the ends tell.
        let mut ms = Vec::new();
        for (n, v, w) in [
            (10, 184_000.0, 0.8),
            (1_000, 194_000.0, 0.6),
            (10_000, 889_000.0, 0.18),
        ] {
            ms.push(spread(
                &fds_id(POSIX_SPAWN, n),
                v,
                v / (1.0 + w),
                v * (1.0 + w),
            ));
        }
        let f = findings(&ms);
        let g = find_starting(&f, "posix_spawn grows with the descriptors");
        g.assert_says("184 µs with 10 open, 889 µs with 10000");
        assert!((g.value - 70_570.57).abs() < 1.0, "{}", g.value);
    }

    #[test]
    fn switch_thread_loader_and_fault_findings() {
        let mut anon = m(FAULT_ANON, 1_000.0);
        anon.details = Some(serde_json::json!({"touch_bytes": 4096}));
        let mut thp = m(FAULT_ANON_THP, 50_000.0);
        thp.details = Some(serde_json::json!({"touch_bytes": 2 << 20}));
        let ms = vec![
            m(PINGPONG_PROCESS, 5_000.0),
            m(PINGPONG_THREAD, 2_010.0),
            m(PIPE_ALONE, 1_000.0),
            m(&growth_id(POSIX_SPAWN, 0), 200_000.0),
            m(POSIX_SPAWN_DYNAMIC, 600_000.0),
            m(THREAD, 20_000.0),
            anon,
            thp,
        ];
        let f = findings(&ms);
        let p = find_starting(
            &f,
            "a context switch between two processes on one CPU costs 1.5",
        );
        assert_eq!((p.value, p.unit), (1_500.0, BaseUnit::NsPerOp.into()));
        // A round trip within noise of two pipe costs: no switch cost stated.
        find_starting(
            &f,
            "a context switch between two threads on one CPU costs too little to tell",
        );
        let r = find_starting(
            &f,
            "starting a process against a thread: a thread spawn+join is 10",
        );
        assert_eq!(r.value, 10.0);
        let d = find_starting(
            &f,
            "the dynamic loader and libc start-up of /bin/true add 400",
        );
        assert_eq!(d.value, 400_000.0);
        let h = find_starting(&f, "first touch of anonymous memory costs");
        h.assert_says("less per byte with huge pages");
    }

    #[test]
    fn missing_measurements_give_no_findings() {
        assert!(findings(&[]).is_empty());
    }
}
