//! End-to-end checks of the system-call suite: one quick run of the built
//! binary, shared by every test below. Timings are never asserted; only
//! structure, units, sanity and the orderings physics guarantees (with wide
//! margins).

mod common;

use std::sync::OnceLock;

use assert_cmd::Command;

use serde_json::Value;

/// A system call costs at least this many function calls on any CPU (the
/// real figure is 30-300); a margin wide enough for a noisy machine.
const SYSCALL_OVER_CALL_MIN: f64 = 3.0;
/// A vDSO clock read served without a system call is at least this much
/// cheaper than the system call (the real figure is 5-50).
const VDSO_GAIN_MIN: f64 = 2.0;

/// The JSON document of `opcost run syscall --profile quick`, made once.
fn doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| common::run_doc(["run", "syscall", "--profile", "quick"]))
}

fn results() -> &'static [Value] {
    doc()["results"].as_array().expect("results is an array")
}

fn result(id: &str) -> &'static Value {
    results()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("{id} missing from the run"))
}

fn median(id: &str) -> f64 {
    result(id)["median"].as_f64().expect("median is a number")
}

fn finite_positive(v: &Value) -> bool {
    v.as_f64().is_some_and(|x| x.is_finite() && x > 0.0)
}

#[test]
fn every_benchmark_ran_and_every_value_is_positive_and_finite() {
    assert_eq!(doc()["schema"], 1);
    common::assert_none_failed(doc());
    assert!(results().len() >= 60, "only {} results", results().len());
    for r in results() {
        let id = r["id"].as_str().expect("id");
        assert!(id.starts_with("syscall."), "{id}");
        assert_eq!(r["area"], "syscall", "{id}");
        for key in [
            "median", "min", "max", "mean", "p5", "p95", "ci_low", "ci_high",
        ] {
            assert!(finite_positive(&r[key]), "{id}: {key} = {}", r[key]);
        }
        let samples = r["samples"].as_array().expect("samples");
        assert!(samples.len() >= 3, "{id}");
        assert!(samples.iter().all(finite_positive), "{id}: {samples:?}");
        assert!(r["min"].as_f64() <= r["median"].as_f64(), "{id}");
        assert!(r["median"].as_f64() <= r["max"].as_f64(), "{id}");
    }
}

#[test]
fn latencies_are_ns_per_op_and_the_file_sweep_is_bytes_per_second() {
    let mut sweep_points = 0;
    for r in results() {
        let id = r["id"].as_str().expect("id");
        if id.contains(".file/") {
            sweep_points += 1;
            common::assert_bytes_per_second(r, id);
        } else {
            assert_eq!(r["unit"], "ns/op", "{id}");
        }
    }
    // 9 sizes x (read, fread, write, fwrite) + raw and Rust buffers at 4 B.
    assert_eq!(sweep_points, 9 * 4 + 4);
    assert_eq!(
        result("syscall.io.fread.file/64KiB")["bytes_per_op"],
        65536.0
    );
}

#[test]
fn a_function_call_is_much_cheaper_than_a_raw_getpid() {
    let call = median("syscall.function_call");
    let getpid = median("syscall.getpid.raw");
    assert!(
        call * SYSCALL_OVER_CALL_MIN < getpid,
        "function call {call} ns vs getpid {getpid} ns"
    );
}

#[test]
fn vdso_clock_gettime_is_cheaper_than_its_raw_syscall_twin() {
    if common::emulation_exception(
        "under qemu-user a system call is a call into the emulator, not a trap to the kernel: the vDSO's gain does not hold",
    ) {
        return;
    }
    let vdso = result("syscall.clock_gettime.monotonic.vdso");
    let warnings = vdso["warnings"].to_string();
    if warnings.contains("clocksource") || warnings.contains("vDSO has no") {
        // The vDSO falls back to the system call here: no ordering to check.
        eprintln!("vDSO clock falls back on this machine: {warnings}");
        return;
    }
    let vdso = median("syscall.clock_gettime.monotonic.vdso");
    let raw = median("syscall.clock_gettime.monotonic.raw");
    assert!(vdso * VDSO_GAIN_MIN < raw, "vDSO {vdso} ns vs raw {raw} ns");
}

#[test]
fn findings_state_each_ratio_with_a_finite_value() {
    let findings = doc()["findings"].as_array().expect("findings");
    let texts: Vec<&str> = findings.iter().filter_map(|f| f["text"].as_str()).collect();
    for f in findings.iter().filter(|f| f["area"] == "syscall") {
        assert!(finite_positive(&f["value"]), "{f}");
        assert_eq!(f["unit"], "x", "{f}");
    }
    for start in [
        "raw syscall clock_gettime(MONOTONIC) = ",
        "raw syscall clock_gettime(REALTIME) = ",
        "raw syscall gettimeofday = ",
        "getpid syscall = ",
        "libc getpid = ",
        "getpid syscall in a function of its own = ",
        "stdio batching (fread vs read, file): ",
        "stdio batching (fwrite vs write, file): ",
    ] {
        assert!(
            texts.iter().any(|t| t.starts_with(start)),
            "no finding starting with {start:?} in {texts:#?}"
        );
    }
    // The PID cache is checked, not assumed: the libc result records the
    // check and the finding states its verdict.
    let libc = result("syscall.getpid.libc");
    assert!(
        libc["details"]["pid_cache"].is_boolean(),
        "no PID cache check recorded: {}",
        libc["details"]
    );
    let pid = texts
        .iter()
        .find(|t| t.starts_with("libc getpid = "))
        .expect("libc getpid finding");
    assert!(pid.contains("PID cache"), "{pid}");
    let stdio = texts
        .iter()
        .find(|t| t.starts_with("stdio batching (fread"))
        .expect("fread finding");
    assert!(stdio.contains(" at 4B"), "{stdio}");
}

#[test]
fn the_table_shows_the_suite_and_its_findings() {
    // The table is printed from the same document: spot-check one run's text
    // through `--samples 3` on a narrow selection, which stays fast.
    let out = Command::cargo_bin("opcost")
        .expect("binary built")
        .args([
            "run",
            "syscall.getpid",
            "syscall.function_call",
            "--samples",
            "3",
            "--no-save",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("syscall.getpid.raw"), "{text}");
    assert!(text.contains("getpid syscall = "), "{text}");
}
