//! System calls next to function calls and vDSO calls (E1), and whether
//! stdio buffering is worth it (E2).
//!
//! E1 puts a system call on the scale of a plain function call, and gives
//! the honest vDSO ratio: each operation the vDSO serves is also forced
//! through the raw system-call instruction, and the two are interleaved.
//! E2 compares 4-byte reads and writes through every layer (raw, libc,
//! stdio, Rust buffers) and sweeps the request size to find where
//! buffering stops paying.

mod calls;
mod io;
mod raw;

use super::{Suite, get, ratio_finding};
use crate::harness::{Bench, Finding, Measurement};
use crate::host::Host;
use crate::units::{fmt_ratio, size_label};

use io::{Dir, Method, Target};

/// The area name of the suite.
const AREA: &str = "syscall";
/// A vDSO call less than this many times cheaper than its system call is
/// probably not served by the vDSO at all.
const VDSO_MIN_GAIN: f64 = 1.5;
/// Below this gain, buffering no longer pays for its copy.
const STDIO_GAIN_FLOOR: f64 = 1.1;

/// The system-call suite.
pub fn suite() -> Suite {
    Suite {
        name: AREA,
        summary: "function call vs system call vs vDSO; stdio buffering",
        benches,
        findings,
    }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let mut v = calls::benches();
    v.extend(io::benches());
    v
}

/// The time per operation of `id`, when the run measured it and it is usable.
fn ns(ms: &[Measurement], id: &str) -> Option<f64> {
    get(ms, id)
        .map(Measurement::ns_per_op)
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// `slow / fast`, when both were measured.
fn ratio(ms: &[Measurement], slow: &str, fast: &str) -> Option<f64> {
    Some(ns(ms, slow)? / ns(ms, fast)?)
}

fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for op in calls::VDSO_OPS {
        if let Some(r) = ratio(ms, &op.raw_id(), &op.vdso_id()) {
            let mut text = format!("raw syscall {} = {} its vDSO call", op.label, fmt_ratio(r));
            if r < VDSO_MIN_GAIN {
                text.push_str(
                    " (barely cheaper: the vDSO probably falls back to a system call here)",
                );
            }
            out.push(ratio_finding(AREA, text, r));
        }
    }
    if let Some(r) = ratio(ms, calls::GETPID_RAW, calls::FUNCTION_CALL) {
        out.push(ratio_finding(
            AREA,
            format!("getpid syscall = {} a function call", fmt_ratio(r)),
            r,
        ));
    }
    if let Some(r) = ratio(ms, calls::GETPID_LIBC, calls::GETPID_RAW) {
        out.push(ratio_finding(AREA, pid_cache_text(ms, r), r));
    }
    out.extend(stdio_finding(ms, Dir::Read));
    out.extend(stdio_finding(ms, Dir::Write));
    out
}

/// A libc getpid at least this fraction of the raw call's time makes a
/// system call each time; far below it, it answers from memory.
const PID_CACHE_RATIO: f64 = 0.5;

/// "libc getpid = R× raw", with the verdict of the PID cache check the
/// benchmark made at set-up and whether the timing agrees with it.
fn pid_cache_text(ms: &[Measurement], r: f64) -> String {
    let head = format!("libc getpid = {} raw", fmt_ratio(r));
    let cached =
        get(ms, calls::GETPID_LIBC).and_then(|m| m.details.as_ref()?.get("pid_cache")?.as_bool());
    let timing_says_syscall = r >= PID_CACHE_RATIO;
    let verdict = match (cached, timing_says_syscall) {
        (Some(false), true) => {
            "no PID cache on this libc (checked: a child made by a raw clone saw its own pid through libc getpid, and each call costs a system call)"
        }
        (Some(true), false) => {
            "this libc caches the PID (checked: a child made by a raw clone saw its parent's pid through libc getpid, and a call costs far less than a system call)"
        }
        (Some(false), false) => {
            "the check found no PID cache, yet a call costs far less than a system call: something else answers getpid here"
        }
        (Some(true), true) => "the check found a PID cache, yet a call costs a system call",
        (None, true) => {
            "each call costs a system call: no PID cache by its timing (the clone check could not run)"
        }
        (None, false) => {
            "a call costs far less than a system call: a PID cache by its timing (the clone check could not run)"
        }
    };
    format!("{head}: {verdict}")
}

/// "stdio batching: N× faster at 4 B, gain below 1.1× from X" for one
/// direction, from the file sweep (unbuffered libc call vs stdio).
fn stdio_finding(ms: &[Measurement], dir: Dir) -> Option<Finding> {
    let gains: Vec<(usize, f64)> = io::SWEEP_SIZES
        .iter()
        .filter_map(|&size| {
            let plain = io::id(dir, Method::Libc, Target::File, size);
            let buffered = io::id(dir, Method::Stdio, Target::File, size);
            Some((size, ratio(ms, &plain, &buffered)?))
        })
        .collect();
    // The headline is the 4 B point (E2's question), else the smallest measured.
    let &(first_size, first_gain) = gains
        .iter()
        .find(|(size, _)| *size == io::SMALL)
        .or(gains.first())?;
    let (call, vs) = match dir {
        Dir::Read => ("fread", "read"),
        Dir::Write => ("fwrite", "write"),
    };
    let size = size_label(first_size as u64);
    let mut text = format!(
        "stdio batching ({call} vs {vs}, file): {} faster at {size}",
        fmt_ratio(first_gain)
    );
    match crossover(&gains) {
        Some(from) if from == first_size => {
            text = format!(
                "stdio batching ({call} vs {vs}, file): no gain even at {size} ({})",
                fmt_ratio(first_gain)
            )
        }
        Some(from) => text.push_str(&format!(
            ", gain below {STDIO_GAIN_FLOOR}× from {}",
            size_label(from as u64)
        )),
        None if gains.len() > 1 => {
            let &(last_size, last_gain) = gains.last()?;
            text.push_str(&format!(
                ", still {} at {}",
                fmt_ratio(last_gain),
                size_label(last_size as u64)
            ));
        }
        None => {}
    }
    Some(ratio_finding(AREA, text, first_gain))
}

/// The smallest request size from which the gain stays below the floor at
/// every larger measured size (so one noisy point does not move it).
fn crossover(gains: &[(usize, f64)]) -> Option<usize> {
    let mut from = None;
    for &(size, gain) in gains.iter().rev() {
        if gain >= STDIO_GAIN_FLOOR {
            break;
        }
        from = Some(size);
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str, unit: &str, bytes: Option<f64>, ns: f64) -> Measurement {
        let median = match bytes {
            Some(b) => b * 1e9 / ns,
            None => ns,
        };
        Measurement {
            bytes_per_op: bytes,
            ..Measurement::point(id, unit, median)
        }
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

    #[test]
    fn e1_ratios_are_slow_over_fast() {
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
        assert_eq!(
            f[0].text,
            "raw syscall clock_gettime(MONOTONIC) = 15.0× its vDSO call"
        );
        assert!((f[0].value - 15.0).abs() < 1e-9);
        assert_eq!(f[1].text, "getpid syscall = 50.0× a function call");
        assert!((f[2].value - 1.05).abs() < 1e-9);
        assert!(
            f[2].text.contains("no PID cache by its timing"),
            "{}",
            f[2].text
        );
        assert!(f.iter().all(|f| f.unit == "x" && f.area == AREA));
    }

    #[test]
    fn the_pid_cache_verdict_follows_the_check_and_the_timing() {
        let with = |cached: bool, libc_ns: f64| {
            let mut l = lat(calls::GETPID_LIBC, libc_ns);
            l.details = Some(serde_json::json!({"pid_cache": cached}));
            vec![lat(calls::GETPID_RAW, 100.0), l]
        };
        let f = findings(&with(false, 104.0));
        let t = &f
            .iter()
            .find(|f| f.text.starts_with("libc getpid"))
            .unwrap()
            .text;
        assert!(t.contains("no PID cache on this libc (checked"), "{t}");
        let f = findings(&with(true, 3.0));
        let t = &f
            .iter()
            .find(|f| f.text.starts_with("libc getpid"))
            .unwrap()
            .text;
        assert!(t.contains("caches the PID (checked"), "{t}");
        let f = findings(&with(false, 3.0));
        let t = &f
            .iter()
            .find(|f| f.text.starts_with("libc getpid"))
            .unwrap()
            .text;
        assert!(t.contains("something else answers"), "{t}");
    }

    #[test]
    fn the_pid_cache_check_runs_here() {
        let _g = crate::os::child::test_lock();
        // glibc >= 2.25 and musl have no PID cache; the check must say so
        // on the machines the tests run on.
        assert!(!calls::libc_pid_cache().unwrap());
    }

    #[test]
    fn a_vdso_that_falls_back_is_called_out() {
        let op = calls::VDSO_OPS[3];
        let ms = vec![lat(&op.vdso_id(), 290.0), lat(&op.raw_id(), 300.0)];
        let f = findings(&ms);
        assert_eq!(f.len(), 1);
        assert!(f[0].text.contains("falls back"), "{}", f[0].text);
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
        assert!(f.text.contains("30.0× faster at 4B"), "{}", f.text);
        assert!(f.text.ends_with("gain below 1.1× from 1KiB"), "{}", f.text);
        assert!((f.value - 30.0).abs() < 1e-9);
        // Without the 4 B point, the smallest measured size is the headline.
        let without_4b: Vec<Measurement> =
            ms.into_iter().filter(|m| !m.id.ends_with("/4B")).collect();
        let f = stdio_finding(&without_4b, Dir::Read).unwrap();
        assert!(f.text.contains("37.5× faster at 1B"), "{}", f.text);
        assert_eq!(f.unit, "x");
    }

    #[test]
    fn stdio_crossover_ignores_a_dip_followed_by_a_gain() {
        assert_eq!(
            crossover(&[(4, 30.0), (16, 1.05), (64, 2.0), (256, 1.0)]),
            Some(256)
        );
        assert_eq!(crossover(&[(4, 30.0), (16, 2.0)]), None);
        assert_eq!(crossover(&[(4, 0.9), (16, 0.8)]), Some(4));
    }

    #[test]
    fn stdio_finding_without_a_crossover_says_where_the_gain_still_is() {
        let plain = [300.0; 9];
        let stdio = [10.0; 9];
        let ms = sweep(Dir::Write, &plain, &stdio);
        let f = stdio_finding(&ms, Dir::Write).unwrap();
        assert!(f.text.contains("still 30.0× at 64KiB"), "{}", f.text);
        assert!(f.text.contains("fwrite"), "{}", f.text);
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

    #[test]
    fn every_vdso_op_has_a_pair_in_the_suite() {
        let ids: Vec<String> = benches(&Host::default())
            .iter()
            .map(|b| b.id().to_string())
            .collect();
        for op in calls::VDSO_OPS {
            assert!(ids.contains(&op.vdso_id()), "{}", op.vdso_id());
            assert!(ids.contains(&op.raw_id()), "{}", op.raw_id());
        }
        for id in [calls::FUNCTION_CALL, calls::GETPID_RAW, calls::GETPID_LIBC] {
            assert!(ids.iter().any(|i| i == id), "{id}");
        }
    }
}
