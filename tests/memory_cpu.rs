//! End-to-end tests of the memory and CPU suites: run the built binary at
//! the quick profile once, then check the document's structure, units and
//! the orderings physics guarantees (with wide margins), never absolute times.

mod common;

use std::sync::OnceLock;

use assert_cmd::Command;
use serde_json::Value;

/// The JSON document of one `opcost run memory cpu --profile quick --json`.
fn quick_run() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| common::run_doc(["run", "memory", "cpu", "--profile", "quick"]))
}

/// The results of the quick run whose id starts with `prefix`.
fn results_starting(prefix: &str) -> Vec<&'static Value> {
    results()
        .iter()
        .filter(|r| r["id"].as_str().is_some_and(|id| id.starts_with(prefix)))
        .collect()
}

fn results() -> &'static Vec<Value> {
    quick_run()["results"].as_array().expect("results array")
}

fn result(id: &str) -> Option<&'static Value> {
    results().iter().find(|r| r["id"] == id)
}

fn num(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} of {}", v["id"]))
}

#[test]
fn the_quick_run_parses_and_covers_both_suites() {
    let doc = quick_run();
    assert!(doc["schema"].as_u64().is_some());
    let areas: Vec<&str> = results()
        .iter()
        .filter_map(|r| r["area"].as_str())
        .collect();
    assert!(areas.contains(&"memory"), "no memory results");
    assert!(areas.contains(&"cpu"), "no cpu results");
    for r in results() {
        let median = num(r, "median");
        assert!(median.is_finite() && median > 0.0, "{}: {median}", r["id"]);
        assert!(num(r, "p5") <= num(r, "p95"), "{}", r["id"]);
        let unit = r["unit"].as_str().unwrap_or("");
        assert!(
            ["ns/op", "B/s", "ops/s"].contains(&unit),
            "{}: {unit}",
            r["id"]
        );
    }
}

#[test]
fn a_one_kib_working_set_is_faster_than_the_largest_one() {
    let mut curve: Vec<(u64, f64)> = results()
        .iter()
        .filter(|r| {
            r["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("memory.latency.random/"))
        })
        .map(|r| {
            (
                r["params"]["size"].as_u64().expect("size"),
                num(r, "median"),
            )
        })
        .collect();
    curve.sort_by_key(|p| p.0);
    let first = curve.first().expect("latency curve");
    let last = curve.last().expect("latency curve");
    assert_eq!(first.0, 1024);
    assert!(
        last.0 >= 16 << 20,
        "the quick curve stops at {} bytes",
        last.0
    );
    // L1 against a working set far beyond L2: at least twice as fast anywhere.
    assert!(
        first.1 * 2.0 < last.1,
        "1 KiB {} ns vs {} ns",
        first.1,
        last.1
    );
}

#[test]
fn bandwidths_are_positive_below_a_sane_ceiling_and_say_their_accounting() {
    let bw: Vec<&Value> = results_starting("memory.bandwidth.");
    assert!(bw.len() >= 10, "only {} bandwidth results", bw.len());
    for r in bw {
        assert_eq!(r["unit"], "B/s");
        let median = num(r, "median");
        // 1 MB/s .. 10 TB/s: anything outside is a unit or accounting bug.
        assert!(median > 1e6 && median < 1e13, "{}: {median}", r["id"]);
        let accounting = r["params"]["accounting"].as_str().unwrap_or("");
        assert!(
            ["read", "written", "copied", "stream"].contains(&accounting),
            "{}: {accounting}",
            r["id"]
        );
        assert!(num(r, "bytes_per_op") > 0.0);
    }
    // STREAM triad counts three arrays per pass, copy one.
    if let (Some(triad), Some(copy)) = (
        result("memory.bandwidth.stream_triad/threads=1"),
        result("memory.bandwidth.copy/threads=1"),
    ) {
        assert_eq!(num(triad, "bytes_per_op"), 3.0 * num(copy, "bytes_per_op"));
    }
}

#[test]
fn a_division_chain_is_slower_than_an_add_chain() {
    if common::emulation_exception(
        "under qemu-user an instruction's latency is the emulator's, not the CPU's: an add chain and a division chain both cost about 35 ns a link",
    ) {
        return;
    }
    let add = result("cpu.add.i64.latency").expect("add latency");
    let div = result("cpu.div.f64.latency").expect("div latency");
    // One cycle against several; compare the fast ends, immune to interference.
    assert!(num(add, "p5") * 1.5 < num(div, "p5"), "add {add} div {div}");
    let clock = result("cpu.clock").expect("clock");
    assert_eq!(clock["unit"], "ops/s");
}

#[test]
fn findings_state_cache_levels_the_clock_and_the_branch_penalty() {
    let findings = quick_run()["findings"].as_array().expect("findings");
    let has = |area: &str, unit: &str| {
        findings
            .iter()
            .any(|f| f["area"] == area && f["unit"] == unit && f["value"].as_f64().is_some())
    };
    assert!(has("memory", "B"), "no cache level found: {findings:?}");
    // The L1d is named with its size, or said not found with the reason
    // (a debug build's loop overhead can hide its plateau): never silent.
    assert!(
        findings.iter().any(|f| f["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("L1d ~") || t.starts_with("L1d not found: "))),
        "no word on the L1d: {findings:?}"
    );
    assert!(has("cpu", "Hz"), "no clock: {findings:?}");
    assert!(
        findings.iter().any(|f| f["text"]
            .as_str()
            .is_some_and(|t| t.contains("misprediction"))),
        "no branch finding"
    );
    if result("memory.bandwidth.copy/threads=all").is_some() {
        assert!(
            findings.iter().any(|f| f["text"]
                .as_str()
                .is_some_and(|t| t.contains("copy bandwidth"))),
            "no single vs all-CPU finding"
        );
    }
}

#[test]
fn a_working_set_too_large_for_the_quick_profile_is_refused_as_usage() {
    let out = Command::cargo_bin("opcost")
        .expect("binary")
        .args([
            "run",
            "memory.latency.random/1GiB",
            "--profile",
            "quick",
            "--no-save",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--profile") || err.contains("no benchmark"),
        "{err}"
    );
}

#[test]
fn all_cpu_bandwidth_is_skipped_with_a_reason_when_pinned() {
    let doc = common::run_doc([
        "run",
        "memory.bandwidth.read/threads=all",
        "--profile",
        "quick",
        "--cpu",
        "0",
    ]);
    let skipped = doc["skipped"].as_array().expect("skipped");
    // Fixed slices and dynamic hand-out (the pattern is a prefix of both).
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    for s in skipped {
        assert_eq!(s["failed"], false);
        assert!(
            s["reason"]
                .as_str()
                .is_some_and(|r| r.contains("--cpu") || r.contains("one CPU")),
            "{skipped:?}"
        );
    }
}

/// The vector methods of the write and copy rows: plain and non-temporal,
/// SSE2 non-temporal only (reads have no non-temporal variant).
const STORE_VECTOR_METHODS: [&str; 9] = [
    "sse2_nt",
    "avx2",
    "avx2_nt",
    "avx512",
    "avx512_nt",
    "neon",
    "neon_nt",
    "sve",
    "sve_nt",
];

#[test]
fn every_bandwidth_method_is_measured_or_skipped_with_its_reason() {
    let doc = quick_run();
    let skipped = doc["skipped"].as_array().expect("skipped array");
    let mut measured = 0;
    for op in ["read", "write", "copy"] {
        let methods: Vec<&str> = match op {
            "read" => vec!["sse2", "avx2", "avx512", "neon", "sve"],
            _ => {
                let rep = if op == "copy" {
                    "rep_movsb"
                } else {
                    "rep_stosb"
                };
                let zva: &[&str] = if op == "write" { &["dc_zva"] } else { &[] };
                let glibc = ["glibc_above_threshold", "glibc_below_threshold", rep];
                [&glibc[..], &STORE_VECTOR_METHODS, zva, &["mops"]].concat()
            }
        };
        for m in &methods {
            let id = format!("memory.bandwidth.{op}.{m}/threads=1");
            match result(&id) {
                Some(r) => {
                    measured += 1;
                    assert!(
                        num(r, "median") > 0.0 && num(r, "median").is_finite(),
                        "{id}"
                    );
                    assert_eq!(r["params"]["method"], *m, "{id}");
                    assert_eq!(r["details"]["method"], *m, "{id}");
                    // quick: 128 MiB arrays, or one block past glibc's threshold
                    let array = r["details"]["array_bytes"].as_u64().unwrap();
                    let block = r["details"]["block_bytes"].as_u64().unwrap();
                    assert!(
                        array >= 128 << 20 && array % block == 0,
                        "{id}: arrays of whole blocks and at least 128 MiB at quick"
                    );
                }
                None => {
                    let s = skipped
                        .iter()
                        .find(|s| s["id"] == id.as_str())
                        .unwrap_or_else(|| panic!("{id} neither measured nor skipped"));
                    assert_eq!(s["failed"], false, "{s}");
                    assert!(!s["reason"].as_str().unwrap_or("").is_empty(), "{s}");
                    // The other architecture's methods name this one.
                    let arm = ["neon", "neon_nt", "sve", "sve_nt", "dc_zva", "mops"].contains(m);
                    if arm != cfg!(target_arch = "aarch64") {
                        assert!(
                            s["reason"]
                                .as_str()
                                .unwrap()
                                .ends_with(&format!("this is {}", std::env::consts::ARCH)),
                            "{s}"
                        );
                    }
                }
            }
        }
    }
    // The libc methods run on every machine.
    assert!(measured >= 4, "only {measured} methods measured");
    let f: Vec<&str> = quick_run()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["text"].as_str())
        .filter(|t| t.starts_with("the machine's"))
        .collect();
    assert!(f.iter().any(|t| t.contains("copy bandwidth")), "{f:?}");
}

#[test]
fn dynamic_all_cpu_bandwidth_sits_beside_the_fixed_slices() {
    for k in ["read", "write", "copy"] {
        let id = format!("memory.bandwidth.{k}/threads=all_dynamic");
        match result(&id) {
            Some(r) => {
                assert!(num(r, "median") > 0.0, "{id}");
                assert_eq!(r["details"]["hand_out"], "dynamic", "{id}");
                assert!(r["details"]["threads"].as_u64().unwrap() >= 2, "{id}");
            }
            None => {
                let s = quick_run()["skipped"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["id"] == id.as_str())
                    .unwrap_or_else(|| panic!("{id} neither measured nor skipped"));
                assert!(s["reason"].as_str().unwrap().contains("CPU"), "{s}");
            }
        }
    }
}

/// A result of the quick run, or its skip with a reason; neither is a failure.
fn measured_or_skipped(id: &str) -> Option<&'static Value> {
    if let Some(r) = result(id) {
        return Some(r);
    }
    let skipped = quick_run()["skipped"].as_array().expect("skipped array");
    let s = skipped
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("{id} neither measured nor skipped"));
    assert_eq!(s["failed"], false, "{s}");
    assert!(s["reason"].as_str().is_some_and(|r| !r.is_empty()), "{s}");
    None
}

#[test]
fn lock_atomic_and_dispatch_rows_are_measured_with_their_placement_and_cycles() {
    for id in [
        "cpu.mutex.std.uncontended",
        "cpu.mutex.futex.uncontended",
        "cpu.atomic.add.uncontended",
        "cpu.atomic.add.contended/same",
        "cpu.call.direct",
        "cpu.call.indirect",
        "cpu.dispatch.match",
        "cpu.dispatch.if_chain",
        "cpu.hashmap.get/small",
        "cpu.hashmap.get/l2",
        "cpu.panic.caught",
    ] {
        let r = result(id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(r["unit"], "ns/op", "{id}");
        assert!(r["details"]["ghz_estimate"].as_f64().is_some(), "{id}: {r}");
    }
    // The DRAM-sized table is left out of quick, never renamed.
    assert!(result("cpu.hashmap.get/dram").is_none());
    for id in [
        "cpu.atomic.add.contended/cross",
        "cpu.mutex.std.handoff",
        "cpu.mutex.futex.handoff",
    ] {
        if let Some(r) = measured_or_skipped(id) {
            // Named as the topology model names the pair.
            assert_eq!(r["details"]["placement"], r["details"]["class"], "{r}");
            assert_ne!(r["details"]["placement"], "same-cpu", "{r}");
            assert_ne!(r["details"]["parent_cpu"], r["details"]["peer_cpu"]);
        }
    }
    // A caught panic unwinds the stack: far dearer than a call, whatever the machine.
    let call = num(result("cpu.call.direct").expect("call"), "p5");
    let panic = num(result("cpu.panic.caught").expect("panic"), "p5");
    assert!(panic > 10.0 * call, "panic {panic} ns, call {call} ns");
    let findings = quick_run()["findings"].as_array().expect("findings");
    assert!(
        findings.iter().any(|f| f["unit"] == "cycles"
            && f["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("atomic add, uncontended = "))),
        "no cycles for the atomic add: {findings:?}"
    );
}

#[test]
fn the_aliasing_sweep_records_its_geometry_and_states_the_page_stride_finding() {
    let points: Vec<&Value> = results_starting("memory.alias.stride/");
    assert!(points.len() >= 11, "only {} stride points", points.len());
    for r in &points {
        assert_eq!(r["unit"], "ns/op");
        assert_eq!(r["params"]["lines"], 32);
        assert!(r["params"]["stride"].as_u64().is_some_and(|s| s >= 64));
    }
    let has = |id: &str| points.iter().any(|r| r["id"] == id);
    assert!(has("memory.alias.stride/64B") && has("memory.alias.stride/64KiB"));
    // Where sysfs gives the L1d geometry, its way and its control are in the
    // sweep and the finding names the set load, decided either way.
    let Some(l1) = points
        .iter()
        .find(|r| r["id"] == "memory.alias.stride/4KiB")
        .and_then(|r| r["details"]["caches"].as_array())
        .and_then(|c| c.iter().find(|c| c["level"] == 1).cloned())
    else {
        return;
    };
    if l1["way_bytes"] != 4096 {
        return;
    }
    assert!(has("memory.alias.stride/4160B"));
    let findings = quick_run()["findings"].as_array().expect("findings");
    let f = findings
        .iter()
        .find(|f| {
            f["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("stride 4 KiB: 32 lines map to one L1d set"))
        })
        .unwrap_or_else(|| panic!("no page-stride finding: {findings:?}"));
    assert_eq!(f["unit"], "x");
    assert!(f["text"].as_str().unwrap().contains("4160 B stride"));
}
