//! What the system-call results say: each vDSO call next to its raw system
//! call, a system call next to a function call, whether libc caches the
//! PID, and where stdio buffering stops paying along the request-size sweep.
//!
//! Every word comes from intervals ([`crate::harness::claims`]): a ratio is
//! printed with its interval, and a verdict ("served by the vDSO", "no PID
//! cache by its timing", "no clear gain from 1KiB") holds only when the
//! whole interval is on its side of the line; otherwise the finding says
//! the timing cannot tell.

use super::io::{self, Dir, Method, Target};
use super::{AREA, calls};
use crate::harness::claims::{self, Est, Ratio};
use crate::harness::{Finding, Measurement};
use crate::suites::bench::{get, ratio_finding};
use crate::units::size_label;

/// A vDSO call whose system call costs at least this many times more is
/// served by the vDSO; at most this many, it probably falls back.
const VDSO_MIN_GAIN: f64 = 1.5;
/// Below this gain (its whole interval), buffering no longer pays for its copy.
const STDIO_GAIN_FLOOR: f64 = 1.1;
/// A libc getpid at least this fraction of the raw call's time makes a
/// system call each time; far below it, it answers from memory.
const PID_CACHE_RATIO: f64 = 0.5;

/// A system call in a function of its own within this many times the
/// inline one, either way (its whole interval), adds little for the call.
const IN_FUNCTION_LITTLE: f64 = 1.1;
/// At least this many times the inline one (its whole interval), the
/// return after the system call is slow: a call and a return alone cost a
/// few nanoseconds, under a tenth of the cheapest system call.
const IN_FUNCTION_SLOW: f64 = 1.15;

/// The estimate of `id`, when the run measured it and it is usable.
fn est<'a>(ms: &'a [Measurement], id: &str) -> Option<Est<'a>> {
    get(ms, id)
        .filter(|m| m.median.is_finite() && m.median > 0.0)
        .map(Est::of)
}

/// How many times `slow` costs `fast`, with its interval (whatever the units).
fn times(ms: &[Measurement], slow: &str, fast: &str) -> Option<Ratio> {
    Some(claims::speedup(&est(ms, fast)?, &est(ms, slow)?))
}

/// The suite's findings.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for op in calls::VDSO_OPS {
        if let Some(r) = times(ms, &op.raw_id(), &op.vdso_id()) {
            let verdict = match r.against(VDSO_MIN_GAIN) {
                Some(true) => "the vDSO answers without a system call",
                Some(false) => "barely cheaper: the vDSO probably falls back to a system call here",
                None => "the timing cannot tell whether the vDSO falls back to a system call",
            };
            out.push(ratio_finding(
                AREA,
                format!(
                    "raw syscall {} = {} its vDSO call: {verdict}",
                    op.label,
                    r.text()
                ),
                r.ratio,
            ));
        }
    }
    if let Some(r) = times(ms, calls::GETPID_RAW, calls::FUNCTION_CALL) {
        out.push(ratio_finding(
            AREA,
            format!("getpid syscall = {} a function call", r.text()),
            r.ratio,
        ));
    }
    if let Some(r) = times(ms, calls::GETPID_LIBC, calls::GETPID_RAW) {
        out.push(ratio_finding(AREA, pid_cache_text(ms, &r), r.ratio));
    }
    if let Some(r) = times(ms, calls::GETPID_RAW_FN, calls::GETPID_RAW) {
        out.push(ratio_finding(AREA, in_function_text(&r), r.ratio));
    }
    out.extend(stdio_finding(ms, Dir::Read));
    out.extend(stdio_finding(ms, Dir::Write));
    out
}

/// "libc getpid = R× raw", with the verdict of the PID cache check the
/// benchmark made at set-up and whether the timing agrees with it.
fn pid_cache_text(ms: &[Measurement], r: &Ratio) -> String {
    let head = format!("libc getpid = {} raw", r.text());
    let cached =
        get(ms, calls::GETPID_LIBC).and_then(|m| m.details.as_ref()?.get("pid_cache")?.as_bool());
    let timing_says_syscall = r.against(PID_CACHE_RATIO);
    let verdict = match (cached, timing_says_syscall) {
        (Some(false), Some(true)) => {
            "no PID cache on this libc (checked: a child made by a raw clone saw its own pid through libc getpid, and each call costs a system call)"
        }
        (Some(true), Some(false)) => {
            "this libc caches the PID (checked: a child made by a raw clone saw its parent's pid through libc getpid, and a call costs far less than a system call)"
        }
        (Some(false), Some(false)) => {
            "the check found no PID cache, yet a call costs far less than a system call: something else answers getpid here"
        }
        (Some(true), Some(true)) => "the check found a PID cache, yet a call costs a system call",
        (Some(false), None) => {
            "no PID cache on this libc (checked: a child made by a raw clone saw its own pid through libc getpid; the timing cannot tell)"
        }
        (Some(true), None) => {
            "this libc caches the PID (checked: a child made by a raw clone saw its parent's pid through libc getpid; the timing cannot tell)"
        }
        (None, Some(true)) => {
            "each call costs a system call: no PID cache by its timing (the clone check could not run)"
        }
        (None, Some(false)) => {
            "a call costs far less than a system call: a PID cache by its timing (the clone check could not run)"
        }
        (None, None) => {
            "neither the timing nor the clone check can tell whether libc has a PID cache"
        }
    };
    format!("{head}: {verdict}")
}

/// "getpid syscall in a function of its own = R× inline", and what the
/// function's call and return around the system call cost.
fn in_function_text(r: &Ratio) -> String {
    let verdict = match r.direction() {
        Some(true) if r.at_least(IN_FUNCTION_SLOW) => {
            "returning from a function right after a system call is slow here (as under a kernel's return-stack mitigation), and every C library wrapper pays it"
        }
        Some(true) if r.at_most(IN_FUNCTION_SLOW) => {
            "a function's call and return add a few per cent to a system call here"
        }
        Some(true) => {
            "a function's call and return make a system call dearer here; the timing cannot tell whether by a few per cent or by a slow return"
        }
        Some(false) => "cheaper in a function: the inline loop pays for something else here",
        None if r.within(IN_FUNCTION_LITTLE) => {
            "a function's call and return add little to a system call here"
        }
        None => "the timing cannot tell what a function's call and return add to a system call",
    };
    format!(
        "getpid syscall in a function of its own = {} inline: {verdict}",
        r.text()
    )
}

/// "stdio batching (fread vs read, file): 30× (28–32) faster at 4B; no
/// clear gain of 1.1× from 1KiB" for one direction, from the file sweep
/// (unbuffered libc call vs stdio).
fn stdio_finding(ms: &[Measurement], dir: Dir) -> Option<Finding> {
    let gains: Vec<(usize, Ratio)> = io::SWEEP_SIZES
        .iter()
        .filter_map(|&size| {
            let plain = io::id(dir, Method::Libc, Target::File, size);
            let buffered = io::id(dir, Method::Stdio, Target::File, size);
            Some((size, times(ms, &plain, &buffered)?))
        })
        .collect();
    // The headline is the 4 B point (E2's question), else the smallest measured.
    let &(first_size, first) = gains
        .iter()
        .find(|(size, _)| *size == io::SMALL)
        .or(gains.first())?;
    let (call, vs) = match dir {
        Dir::Read => ("fread", "read"),
        Dir::Write => ("fwrite", "write"),
    };
    let size = size_label(first_size as u64);
    let head = format!("stdio batching ({call} vs {vs}, file)");
    let text = match crossover(&gains) {
        Some(from) if from <= first_size => format!(
            "{head}: no clear gain of {STDIO_GAIN_FLOOR}× even at {size} ({})",
            first.text()
        ),
        Some(from) => format!(
            "{head}: {} faster at {size}; no clear gain of {STDIO_GAIN_FLOOR}× from {}",
            first.text(),
            size_label(from as u64)
        ),
        None => {
            let &(last_size, last) = gains.last()?;
            format!(
                "{head}: {} faster at {size}; a clear gain at every size, {} at {}",
                first.text(),
                last.text(),
                size_label(last_size as u64)
            )
        }
    };
    Some(ratio_finding(AREA, text, first.ratio))
}

/// The smallest request size from which no larger measured size has a
/// clear gain of [`STDIO_GAIN_FLOOR`] (its whole interval at or above it),
/// so one noisy point does not move it; `None` when the largest has one.
fn crossover(gains: &[(usize, Ratio)]) -> Option<usize> {
    let mut from = None;
    for &(size, gain) in gains.iter().rev() {
        if gain.at_least(STDIO_GAIN_FLOOR) {
            break;
        }
        from = Some(size);
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::syscall::io;
    use crate::units::ValueUnit;

    /// A result of `ns` per operation with a ±3% interval.
    fn m(id: &str, unit: &str, bytes: Option<f64>, ns: f64) -> Measurement {
        let median = match bytes {
            Some(b) => b * 1e9 / ns,
            None => ns,
        };
        let mut x = Measurement {
            bytes_per_op: bytes,
            ..Measurement::point(id, unit, median)
        };
        x.summary.ci_low = median * 0.97;
        x.summary.ci_high = median * 1.03;
        x
    }

    fn lat(id: &str, ns: f64) -> Measurement {
        m(id, "ns/op", None, ns)
    }

    fn sweep(dir: Dir, plain_ns: &[f64], stdio_ns: &[f64]) -> Vec<Measurement> {
        let mut v = Vec::new();
        for ((&size, &p), &s) in io::SWEEP_SIZES.iter().zip(plain_ns).zip(stdio_ns) {
            let b = Some(size as f64);
            v.push(m(
                &io::id(dir, Method::Libc, Target::File, size),
                "B/s",
                b,
                p,
            ));
            v.push(m(
                &io::id(dir, Method::Stdio, Target::File, size),
                "B/s",
                b,
                s,
            ));
        }
        v
    }

    fn ratio(r: f64, rel: f64) -> Ratio {
        Ratio {
            ratio: r,
            low: r * (1.0 - rel),
            high: r * (1.0 + rel),
        }
    }

    #[test]
    fn e1_ratios_are_slow_over_fast_with_intervals() {
        let op = calls::VDSO_OPS[0];
        let ms = vec![
            lat(calls::FUNCTION_CALL, 2.0),
            lat(calls::GETPID_RAW, 100.0),
            lat(calls::GETPID_LIBC, 105.0),
            lat(&op.vdso_id(), 20.0),
            lat(&op.raw_id(), 300.0),
        ];
        let f = findings(&ms);
        let texts: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(f.len(), 3, "{texts:?}");
        f[0].assert_starts_with("raw syscall clock_gettime(MONOTONIC) = 15.0× (");
        assert!(
            f[0].text
                .ends_with(": the vDSO answers without a system call")
        );
        assert!((f[0].value - 15.0).abs() < 1e-9);
        f[1].assert_starts_with("getpid syscall = 50.0× (");
        assert!((f[2].value - 1.05).abs() < 1e-9);
        f[2].assert_says("no PID cache by its timing");
        assert!(
            f.iter()
                .all(|f| f.unit == ValueUnit::Ratio && f.area == AREA)
        );
    }

    #[test]
    fn the_pid_cache_verdict_follows_the_check_and_the_timing() {
        let with = |cached: bool, libc_ns: f64, rel: f64| {
            let mut l = lat(calls::GETPID_LIBC, libc_ns);
            l.details = Some(serde_json::json!({"pid_cache": cached}));
            l.summary.ci_low = libc_ns * (1.0 - rel);
            l.summary.ci_high = libc_ns * (1.0 + rel);
            vec![lat(calls::GETPID_RAW, 100.0), l]
        };
        let text = |ms: &[Measurement]| {
            findings(ms)
                .into_iter()
                .find(|f| f.text.starts_with("libc getpid"))
                .unwrap()
                .text
        };
        let t = text(&with(false, 104.0, 0.03));
        assert!(t.contains("no PID cache on this libc (checked"), "{t}");
        assert!(t.contains("each call costs a system call"), "{t}");
        let t = text(&with(true, 3.0, 0.03));
        assert!(t.contains("caches the PID (checked"), "{t}");
        let t = text(&with(false, 3.0, 0.03));
        assert!(t.contains("something else answers"), "{t}");
        // A ratio whose interval straddles the line: the timing cannot tell.
        let t = text(&with(false, 50.0, 0.9));
        assert!(t.contains("the timing cannot tell"), "{t}");
    }

    #[test]
    fn a_system_call_in_a_function_says_what_the_return_costs_only_when_clear() {
        let text = |fn_ns: f64, rel: f64| {
            let mut f = lat(calls::GETPID_RAW_FN, fn_ns);
            f.summary.ci_low = fn_ns * (1.0 - rel);
            f.summary.ci_high = fn_ns * (1.0 + rel);
            findings(&[lat(calls::GETPID_RAW, 120.0), f])
                .into_iter()
                .find(|f| f.text.starts_with("getpid syscall in a function"))
                .unwrap()
        };
        // 118 ns inline, 166 ns in a function: the return is slow here.
        let f = text(166.0, 0.02);
        f.assert_starts_with("getpid syscall in a function of its own = 1.38× (");
        f.assert_says("returning from a function right after a system call is slow here");
        // A couple of nanoseconds more: nothing to say about the return.
        text(122.0, 0.02).assert_says("add little to a system call here");
        // Clearly more, but not past the line of a slow return.
        text(130.0, 0.02).assert_says("add a few per cent");
        // Clearly more, the interval from a few per cent to past the line.
        text(150.0, 0.12).assert_says("cannot tell whether by a few per cent or by a slow return");
        // Clearly more by its point, but the interval reaches 1: no claim.
        text(166.0, 0.5).assert_says("the timing cannot tell");
        text(100.0, 0.02).assert_says("cheaper in a function");
    }

    #[test]
    fn a_vdso_that_falls_back_is_called_out_and_an_unclear_one_is_not_judged() {
        let op = calls::VDSO_OPS[3];
        let ms = vec![lat(&op.vdso_id(), 290.0), lat(&op.raw_id(), 300.0)];
        let f = findings(&ms);
        assert_eq!(f.len(), 1);
        f[0].assert_says("falls back");
        let mut ms = vec![lat(&op.vdso_id(), 200.0), lat(&op.raw_id(), 300.0)];
        ms[0].summary.ci_low = 100.0;
        ms[0].summary.ci_high = 400.0;
        let f = findings(&ms);
        f[0].assert_says("cannot tell");
    }

    #[test]
    fn stdio_finding_names_the_gain_at_4b_and_the_crossover() {
        // sizes:   1B     4B     16B    64B    256B   1KiB   4KiB   16KiB  64KiB
        let plain = [
            300.0, 300.0, 300.0, 310.0, 330.0, 400.0, 700.0, 2000.0, 8000.0,
        ];
        let stdio = [8.0, 10.0, 15.0, 30.0, 100.0, 380.0, 720.0, 2100.0, 8100.0];
        let ms = sweep(Dir::Read, &plain, &stdio);
        let f = stdio_finding(&ms, Dir::Read).unwrap();
        f.assert_says(": 30.0× (");
        f.assert_says(") faster at 4B");
        assert!(
            f.text.ends_with("no clear gain of 1.1× from 1KiB"),
            "{}",
            f.text
        );
        assert!((f.value - 30.0).abs() < 1e-9);
        // Without the 4 B point, the smallest measured size is the headline.
        let without_4b: Vec<Measurement> =
            ms.into_iter().filter(|m| !m.id.ends_with("/4B")).collect();
        let f = stdio_finding(&without_4b, Dir::Read).unwrap();
        assert!(
            f.text.contains("37.5× (") && f.text.contains("faster at 1B"),
            "{}",
            f.text
        );
        assert_eq!(f.unit, ValueUnit::Ratio);
    }

    #[test]
    fn stdio_crossover_needs_a_clear_gain_and_ignores_a_dip() {
        let clear = ratio(2.0, 0.05);
        let none = ratio(1.02, 0.05);
        // A 1.15× gain whose interval reaches below 1.1 is not a clear gain.
        let unsure = ratio(1.15, 0.1);
        assert_eq!(
            crossover(&[(4, ratio(30.0, 0.05)), (16, none), (64, clear), (256, none)]),
            Some(256)
        );
        assert_eq!(crossover(&[(4, ratio(30.0, 0.05)), (16, clear)]), None);
        assert_eq!(crossover(&[(4, none), (16, unsure)]), Some(4));
    }

    #[test]
    fn stdio_finding_without_a_crossover_says_where_the_gain_still_is() {
        let plain = [300.0; 9];
        let stdio = [10.0; 9];
        let ms = sweep(Dir::Write, &plain, &stdio);
        let f = stdio_finding(&ms, Dir::Write).unwrap();
        f.assert_says("a clear gain at every size, 30.0× (");
        assert!(f.text.ends_with(" at 64KiB"), "{}", f.text);
        f.assert_says("fwrite");
        // Equal everywhere: no gain even at 4 B.
        let ms = sweep(Dir::Write, &[300.0; 9], &[295.0; 9]);
        let f = stdio_finding(&ms, Dir::Write).unwrap();
        f.assert_says("no clear gain of 1.1× even at 4B");
    }

    #[test]
    fn no_measurements_no_findings() {
        assert!(findings(&[]).is_empty());
        // A zero or missing value gives no ratio rather than an infinity.
        let ms = vec![
            lat(calls::FUNCTION_CALL, 0.0),
            lat(calls::GETPID_RAW, 100.0),
        ];
        assert!(findings(&ms).is_empty());
    }
}
