//! What the timer results say: how late each sleep wakes, idle and with
//! every CPU busy, and whether busy CPUs delay it.
//!
//! Two comparisons, each decided by intervals ([`crate::harness::claims`]):
//! the median overshoot (the result's median and its interval from the
//! rounds) and the p99. A p99 has no interval of its own in a result, so it
//! is given the distribution-free one of its order statistics
//! ([`claims::quantile_est`]) when the samples are single wake-ups, else a
//! wider, still safe bracket from the per-wake-up statistics (p90 to the
//! largest). A p99 resting on too few wake-ups to be bounded (a quick run
//! has 15) is said to be so rather than compared; a bounded one is called
//! later only when its whole interval is at least [`P99_MATERIAL`] times the
//! idle one, and not delayed only when its whole interval is below that.

use super::{AREA, Method, PERIODS, Period, id};
use crate::harness::claims::{self, Est};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::get;
use crate::units::{BaseUnit, human_ns};

/// A busy p99 this many times the idle one (its whole interval) is a
/// delay worth a word; a tail a few tens of per cent longer is noise on a
/// shared machine, and it is the size at which repeated runs disagree.
pub const P99_MATERIAL: f64 = 1.5;

/// A busy median this many times the idle one (its whole interval) is a
/// change worth a word: the median of a few wake-ups per round moves by
/// ten or twenty per cent between runs.
pub const MEDIAN_MATERIAL: f64 = 1.25;

/// The p99 overshoot with its 95% interval (see the module's note), or
/// `None` when the result has neither per-wake-up samples nor statistics.
pub fn p99_est(m: &Measurement) -> Option<Est<'_>> {
    if m.ops_per_sample <= 1 && !m.samples.is_empty() {
        return claims::quantile_est(&m.samples, 0.99, false);
    }
    let p = m.per_op.as_ref()?;
    if !(p.p99.is_finite() && p.p99 > 0.0) {
        return None;
    }
    // The order statistics that bracket the p99 lie between the p90 and
    // the largest whenever the count bounds them at all.
    let (j, k) = claims::quantile_ranks(p.count, 0.99);
    let low = match j {
        Some(j) if j as f64 >= 0.9 * p.count as f64 && p.p90 > 0.0 => p.p90.min(p.p99),
        _ => f64::MIN_POSITIVE,
    };
    let high = match k {
        Some(_) => p.max.max(p.p99),
        None => f64::INFINITY,
    };
    Some(Est {
        value: p.p99,
        low,
        high,
        higher_is_better: false,
        source: None,
    })
}

/// (p50, p99, count) of a result's overshoots: per wake-up where recorded,
/// else the median and p95 of its samples.
fn tail(m: &Measurement) -> (f64, f64, usize) {
    match &m.per_op {
        Some(p) => (p.p50, p.p99, p.count),
        None => (m.median, m.p95, m.n),
    }
}

/// "median 55 µs, p99 80 µs (40 wake-ups)", with "; bimodal: …" when the
/// wake-ups have two modes. The median is the result's own (the table's
/// figure, and the one the busy/idle words compare), the p99 that of every
/// wake-up.
fn describe(m: &Measurement) -> String {
    let (_, p99, n) = tail(m);
    let p50 = m.median;
    let modes = if m.ops_per_sample <= 1 {
        claims::sample_modes(m).map(|x| format!(", {}", x.text(human_ns)))
    } else {
        claims::bimodal_per_op(m).then(|| ", bimodal".to_string())
    };
    format!(
        "median {}, p99 {} ({n} wake-ups{})",
        human_ns(p50),
        human_ns(p99),
        modes.unwrap_or_default()
    )
}

/// What busy CPUs do to the median overshoot, from the two intervals.
fn median_words(idle: &Measurement, busy: &Measurement) -> String {
    match claims::compare_beyond(&Est::of(busy), &Est::of(idle), MEDIAN_MATERIAL)
        .worded("earlier", "later")
    {
        Some(d) => format!("busy CPUs make the median {d}"),
        None => format!(
            "busy CPUs do not clearly move the median by {MEDIAN_MATERIAL}× or more ({} the idle one)",
            claims::Ratio::of(&Est::of(busy), &Est::of(idle)).text()
        ),
    }
}

/// What busy CPUs do to the p99, from the two p99 intervals.
fn p99_words(idle: &Measurement, busy: &Measurement) -> String {
    let (Some(i), Some(b)) = (p99_est(idle), p99_est(busy)) else {
        return "the p99s cannot be compared (no per-wake-up times)".to_string();
    };
    if !(claims::bounded(&i) && claims::bounded(&b)) {
        return "too few wake-ups to bound a p99, so whether busy CPUs delay it is not told"
            .to_string();
    }
    // Busy over idle, in time: above 1 is later.
    let r = claims::speedup(&i, &b);
    if r.at_least(P99_MATERIAL) {
        format!("busy CPUs make the p99 {} later", r.text())
    } else if r.at_most(P99_MATERIAL) && r.low >= 1.0 / P99_MATERIAL {
        format!(
            "busy CPUs did not delay the p99 materially ({} the idle one)",
            r.text()
        )
    } else if r.at_most(1.0 / P99_MATERIAL) {
        format!("busy CPUs make the p99 {} earlier", r.text())
    } else {
        format!(
            "no clear effect of busy CPUs on the p99 ({} the idle one)",
            r.text()
        )
    }
}

/// One finding per sleep method and length measured.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in PERIODS {
        for m in Method::ALL {
            if let Some(f) = finding(ms, m, p) {
                out.push(f);
            }
        }
    }
    out
}

fn finding(ms: &[Measurement], m: Method, p: Period) -> Option<Finding> {
    let idle = get(ms, &id(m, p, false));
    let busy = get(ms, &id(m, p, true));
    let head = format!("a {} {} wakes late by", p.label, m.call());
    let (text, value) = match (idle, busy) {
        (Some(i), Some(b)) => (
            format!(
                "{head}: idle {}; every CPU busy {}; {}; {}",
                describe(i),
                describe(b),
                median_words(i, b),
                p99_words(i, b)
            ),
            tail(b).1,
        ),
        (Some(i), None) => (format!("{head}: idle {}", describe(i)), tail(i).1),
        (None, Some(b)) => (format!("{head}: every CPU busy {}", describe(b)), tail(b).1),
        (None, None) => return None,
    };
    let slack = [idle, busy]
        .into_iter()
        .flatten()
        .filter_map(|r| r.details.as_ref()?.get("timer_slack_ns")?.as_f64())
        .next();
    let text = match slack {
        Some(ns) if m != Method::Timerfd && ns > 0.0 => format!(
            "{text}; the kernel may defer this wake-up by the thread's timer slack, {} here (a timerfd is not deferred)",
            human_ns(ns)
        ),
        _ => text,
    };
    Some(Finding {
        area: AREA.to_string(),
        text,
        value,
        unit: BaseUnit::NsPerOp.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::OpStats;
    use crate::harness::find_saying;

    /// A result of `n` single wake-ups: `tail` of them `late` times the rest.
    fn wakeups(id: &str, n: usize, base: f64, every: usize, late: f64) -> Measurement {
        let samples: Vec<f64> = (0..n)
            .map(|i| {
                let v = base * (1.0 + 0.2 * ((i * 7919) % 100) as f64 / 100.0);
                if every > 0 && i % every == 0 {
                    v * late
                } else {
                    v
                }
            })
            .collect();
        let mut m = Measurement::point(id, "ns/op", base);
        m.summary = crate::stats::Summary::of(&samples).unwrap();
        m.summary.ci_low = m.median * 0.97;
        m.summary.ci_high = m.median * 1.03;
        m.per_op = crate::harness::runner::op_stats(&samples);
        m.samples = samples;
        m
    }

    #[test]
    fn a_clear_tail_is_later_and_an_equal_one_is_not_delayed() {
        let ms = vec![
            wakeups("timer.nanosleep/1ms/idle", 2000, 55_000.0, 0, 1.0),
            wakeups("timer.nanosleep/1ms/loaded", 2000, 56_000.0, 20, 40.0),
            wakeups("timer.timerfd/1ms/idle", 2000, 52_000.0, 0, 1.0),
            wakeups("timer.timerfd/1ms/loaded", 2000, 52_500.0, 0, 1.0),
        ];
        let f = findings(&ms);
        assert_eq!(f.len(), 2);
        let n = find_saying(&f, "nanosleep");
        n.assert_says("every CPU busy median");
        n.assert_says("busy CPUs make the p99 ");
        n.assert_says("busy CPUs do not clearly move the median by 1.25× or more");
        assert_eq!(n.unit, BaseUnit::NsPerOp);
        let t = find_saying(&f, "timerfd");
        t.assert_says("busy CPUs did not delay the p99 materially");
    }

    #[test]
    fn fifteen_wake_ups_never_decide_the_p99() {
        // A quick run: 15 wake-ups, one of them 40 times late or none.
        for late in [1.0, 40.0] {
            let ms = vec![
                wakeups("timer.timerfd/1ms/idle", 15, 52_000.0, 0, 1.0),
                wakeups("timer.timerfd/1ms/loaded", 15, 52_000.0, 14, late),
            ];
            let t = &findings(&ms)[0].text;
            assert!(t.contains("too few wake-ups to bound a p99"), "{t}");
            assert!(!t.contains("later") || t.contains("median"), "{t}");
        }
    }

    #[test]
    fn batched_wake_ups_bound_the_p99_from_their_statistics() {
        let mk = |id: &str, count: usize, p90: f64, p99: f64, max: f64| {
            let mut m = Measurement::point(id, "ns/op", 55_000.0);
            m.ops_per_sample = 8;
            m.per_op = Some(OpStats {
                count,
                p50: 55_000.0,
                p90,
                p99,
                max,
                bimodal: false,
                p99_low: None,
                p99_high: None,
            });
            m
        };
        let idle = mk(
            "timer.nanosleep/1ms/idle",
            800,
            60_000.0,
            70_000.0,
            80_000.0,
        );
        let busy = mk(
            "timer.nanosleep/1ms/loaded",
            800,
            2_000_000.0,
            3_000_000.0,
            3_500_000.0,
        );
        let e = p99_est(&busy).unwrap();
        assert_eq!(
            (e.low, e.value, e.high),
            (2_000_000.0, 3_000_000.0, 3_500_000.0)
        );
        let t = &findings(&[idle.clone(), busy])[0].text;
        assert!(t.contains("busy CPUs make the p99 "), "{t}");
        // 40 wake-ups cannot bound it.
        let few = mk(
            "timer.nanosleep/1ms/loaded",
            40,
            60_000.0,
            70_000.0,
            80_000.0,
        );
        assert!(!claims::bounded(&p99_est(&few).unwrap()));
    }

    #[test]
    fn one_side_alone_and_nothing() {
        let ms = vec![wakeups("timer.timerfd/1ms/idle", 15, 52_000.0, 0, 1.0)];
        let f = findings(&ms);
        f[0].assert_says("wakes late by: idle median");
        assert!(findings(&[]).is_empty());
    }

    #[test]
    fn two_level_wake_ups_are_named_bimodal() {
        let mut ms = vec![
            wakeups("timer.nanosleep/1ms/idle", 100, 55_000.0, 0, 1.0),
            wakeups("timer.nanosleep/1ms/loaded", 100, 55_000.0, 3, 40.0),
        ];
        ms[1].per_op.as_mut().unwrap().bimodal = true;
        let t = &findings(&ms)[0].text;
        assert!(t.contains("wake-ups, bimodal: "), "{t}");
    }
}
