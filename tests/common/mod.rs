//! Synthetic run documents for the store and report tests: known samples,
//! so ratios and verdicts are known, and no benchmark has to run.

#![allow(dead_code)]

use opcost::document::{RunDoc, RunInfo, SCHEMA};
use opcost::harness::{Finding, Measurement, Profile, Summary};
use opcost::host::Host;

/// A measurement of `id` in `unit` made of `samples`, with the harness's statistics.
pub fn measurement(id: &str, unit: &str, samples: Vec<f64>) -> Measurement {
    let s = Summary::of(&samples).expect("finite samples");
    let bytes_per_op = (unit == "B/s").then_some(4096.0);
    serde_json::from_value(serde_json::json!({
        "id": id,
        "area": opcost::harness::area_of(id),
        "unit": unit,
        "bytes_per_op": bytes_per_op,
        "params": {},
        "median": s.median, "min": s.min, "max": s.max, "mean": s.mean,
        "p5": s.p5, "p95": s.p95, "mad": s.mad,
        "ci_low": s.ci_low, "ci_high": s.ci_high, "cv": s.cv,
        "outliers": s.outliers,
        "ops_per_sample": 1000,
        "noisy": s.ci_rel() > 0.05,
        "warnings": [],
        "samples": samples,
    }))
    .expect("a measurement")
}

/// `n` samples around `centre` with a ±`spread` relative jitter (seeded).
pub fn samples(centre: f64, spread: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| centre * (1.0 + spread * (rng.f64() * 2.0 - 1.0)))
        .collect()
}

/// A host block named `name` (the rest as detected here).
pub fn host(name: &str) -> Host {
    // Detected once per test process: load and free memory change between
    // calls, and documents built twice must compare equal.
    static DETECTED: std::sync::OnceLock<Host> = std::sync::OnceLock::new();
    let mut v = serde_json::to_value(DETECTED.get_or_init(Host::detect)).expect("host as JSON");
    v["hostname"] = name.into();
    serde_json::from_value(v).expect("host from JSON")
}

/// A run document with the given id, host, start time and results.
pub fn doc(id: &str, hostname: &str, started: &str, results: Vec<Measurement>) -> RunDoc {
    RunDoc {
        schema: SCHEMA,
        opcost_version: "0.0.0-test".into(),
        run: RunInfo {
            id: id.into(),
            started: started.into(),
            duration_s: 1.25,
            profile: Profile::Quick,
            label: Some(format!("label of {id}")),
            cpu: None,
            interrupted: false,
            incomplete: false,
            order_seed: None,
            estimate_s: None,
            wall_s: Default::default(),
        },
        host: host(hostname),
        findings: vec![Finding {
            area: "syscall".into(),
            text: format!("a finding of {id}"),
            value: 12.5,
            unit: opcost::units::ValueUnit::Ratio,
        }],
        results,
        skipped: Vec::new(),
        warnings: vec!["clocksource is not tsc".into()],
        stability: None,
        peer: None,
        matrix: None,
    }
}

/// A memory-latency sweep (8 points, 1 KiB .. 128 MiB) scaled by `scale`.
pub fn sweep(prefix: &str, scale: f64, seed: u64) -> Vec<Measurement> {
    let mut out = Vec::new();
    for (i, kib) in [1u64, 16, 64, 512, 2048, 16384, 65536, 131072]
        .into_iter()
        .enumerate()
    {
        let ns = scale * (1.0 + (i as f64).powf(2.2));
        let label = opcost::units::size_label(kib * 1024);
        let mut m = measurement(
            &format!("{prefix}/{label}"),
            "ns/op",
            samples(ns, 0.02, 15, seed + i as u64),
        );
        m.params
            .insert("size".into(), serde_json::json!(kib * 1024));
        out.push(m);
    }
    out
}

/// Run A: a plain set of latencies and throughputs, plus a sweep.
pub fn run_a() -> RunDoc {
    plain_run(PLAIN[0])
}

/// Run B: getpid 2x slower, the pipe 2x faster, function call and `same` unchanged.
pub fn run_b() -> RunDoc {
    plain_run(PLAIN[1])
}

/// What differs between runs A and B: id, host, start time, the side named
/// in the result only this run has, the first sample seed, getpid (ns), the
/// pipe (B/s) and the sweep's scale.
#[rustfmt::skip]
type Plain = (&'static str, &'static str, &'static str, &'static str, u64, f64, f64, f64);

/// Runs A and B, a row each.
#[rustfmt::skip]
const PLAIN: [Plain; 2] = [
    ("aaaa0001", "box-a", "2026-01-01T10:00:00Z", "a", 0, 80.0, 2.0e9, 1.0),
    ("bbbb0002", "box-b", "2026-01-02T10:00:00Z", "b", 10, 160.0, 4.0e9, 1.4),
];

/// Run A or B from its row of [`PLAIN`]; the function call's samples are
/// the same in every run.
fn plain_run(
    (id, hostname, started, side, seed, getpid_ns, pipe_bps, sweep_scale): Plain,
) -> RunDoc {
    let mut r = vec![
        measurement("syscall.function_call", "ns/op", samples(1.5, 0.03, 30, 1)),
        measurement(
            "syscall.getpid.raw",
            "ns/op",
            samples(getpid_ns, 0.03, 30, seed + 2),
        ),
        measurement("syscall.same", "ns/op", vec![50.0; 30]),
        measurement(
            "ipc.pipe.throughput",
            "B/s",
            samples(pipe_bps, 0.03, 30, seed + 3),
        ),
        measurement(
            &format!("syscall.only_in_{side}"),
            "ns/op",
            samples(10.0, 0.03, 30, seed + 4),
        ),
        measurement("syscall.noisy", "ns/op", samples(100.0, 0.6, 30, seed + 5)),
    ];
    r.extend(sweep("memory.latency.random", sweep_scale, seed + 10));
    doc(id, hostname, started, r)
}

/// `n` runs made from the shipped reference run (a real quick run of every
/// suite): run 0 is the reference itself, run 1 takes 0.8x the time in
/// syscall and 1.3x in ipc, run 2 0.5x in memory; each with its own id and
/// host name.
pub fn real_runs(n: usize) -> Vec<RunDoc> {
    let base: RunDoc = serde_json::from_str(opcost::analysis::score::reference_json())
        .expect("the reference is a run");
    let factors: [&[(&str, f64)]; 3] = [&[], &[("syscall", 0.8), ("ipc", 1.3)], &[("memory", 0.5)]];
    (0..n)
        .map(|i| {
            let mut d = base.clone();
            if i > 0 {
                d.run.id = format!("{:08x}", 0xc0de_0000u32 + i as u32);
                d.run.label = Some(format!("variant {i}"));
                d.host.hostname = format!("variant-{i}");
            }
            for m in &mut d.results {
                let Some(f) = factors[i % 3]
                    .iter()
                    .find(|(a, _)| *a == m.area)
                    .map(|x| x.1)
                else {
                    continue;
                };
                // A time factor: values that are times scale by it, rates by its inverse.
                let k = if m.higher_is_better() { 1.0 / f } else { f };
                let s = &mut m.summary;
                for v in [
                    &mut s.median,
                    &mut s.mean,
                    &mut s.min,
                    &mut s.max,
                    &mut s.p5,
                    &mut s.p95,
                    &mut s.ci_low,
                    &mut s.ci_high,
                ] {
                    *v *= k;
                }
            }
            d
        })
        .collect()
}

/// The runs of a fleet of `n` identical hosts (`node-000`...), a few
/// percent apart, except host `outlier` whose clocksource is hpet instead
/// of tsc, which makes its vDSO clock reads system calls (about 60x dearer).
pub fn fleet_runs(n: usize, outlier: usize) -> Vec<RunDoc> {
    (0..n)
        .map(|i| {
            let seed = 1000 + 10 * i as u64;
            let clock = if i == outlier { 1200.0 } else { 20.0 };
            let r = vec![
                measurement(
                    "syscall.function_call",
                    "ns/op",
                    samples(1.5, 0.03, 15, seed),
                ),
                measurement(
                    "syscall.getppid.raw",
                    "ns/op",
                    samples(95.0 + (i % 7) as f64, 0.03, 15, seed + 1),
                ),
                measurement(
                    "syscall.clock_gettime.monotonic.vdso",
                    "ns/op",
                    samples(clock, 0.03, 15, seed + 2),
                ),
            ];
            let name = format!("node-{i:03}");
            let started = format!("2026-03-01T{:02}:{:02}:00Z", i / 60 % 24, i % 60);
            let mut d = doc(&format!("f1ee{i:04x}"), &name, &started, r);
            d.run.label = Some("fleet-test".into());
            d.host.clocksource = Some(if i == outlier { "hpet" } else { "tsc" }.into());
            d.host.cpu.model = Some("Test CPU 9000".into());
            d.host.kernel.release = Some("6.1.0-test".into());
            d
        })
        .collect()
}

/// `n` daily runs of host `vm` with two benchmarks, `syscall.a.raw` and
/// `syscall.b.raw` (2% noise, seeded): from run `shift_from` on, `a` takes
/// 1.08x the time and the kernel release is another; `b` never changes.
pub fn trend_runs(n: usize, shift_from: usize) -> Vec<RunDoc> {
    (0..n)
        .map(|i| {
            let after = i >= shift_from;
            let a = if after { 108.0 } else { 100.0 };
            let seed = 5000 + 10 * i as u64;
            let r = vec![
                measurement("syscall.a.raw", "ns/op", samples(a, 0.02, 30, seed)),
                measurement("syscall.b.raw", "ns/op", samples(50.0, 0.02, 30, seed + 1)),
            ];
            let started = format!("2026-03-{:02}T10:00:00Z", i + 1);
            let mut d = doc(&format!("7e0d{i:04x}"), "vm", &started, r);
            d.host.kernel.release = Some(if after { "6.19.2" } else { "6.18.44" }.into());
            d
        })
        .collect()
}

/// The JSON document of one `opcost ARGS --no-save --json FILE` run of the
/// built binary (which must succeed).
pub fn run_doc<I, S>(args: I) -> serde_json::Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.json");
    assert_cmd::Command::cargo_bin("opcost")
        .expect("binary built")
        .args(args)
        .args(["--no-save", "--json"])
        .arg(&path)
        .assert()
        .success();
    let text = std::fs::read_to_string(&path).expect("the JSON document was written");
    serde_json::from_str(&text).expect("the document parses")
}

/// A fresh temporary directory and the path `name` in it (both gone when the directory is dropped).
pub fn scratch(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    (dir, path)
}

/// Runs `cmd` and asserts that it exits with `code` and that its stderr holds each of `needles`.
#[track_caller]
pub fn fails_saying(cmd: &mut assert_cmd::Command, code: i32, needles: &[&str]) {
    let mut a = cmd.assert().code(code);
    for n in needles {
        a = a.stderr(predicates::str::contains(*n));
    }
}

/// Runs `cmd`, asserts that it exits with `code`, and returns its standard
/// output and error as text.
#[track_caller]
pub fn exits_with(cmd: &mut assert_cmd::Command, code: i32) -> (String, String) {
    let out = cmd.assert().code(code).get_output().clone();
    let text = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8 output");
    (text(out.stdout), text(out.stderr))
}

/// Asserts that one of `lines` contains every one of `parts` (all the
/// lines are the message otherwise).
#[track_caller]
pub fn assert_one_says(lines: &[&str], parts: &[&str]) {
    assert!(
        lines.iter().any(|l| parts.iter().all(|p| l.contains(p))),
        "no line says all of {parts:?}: {lines:?}"
    );
}

/// Runs `cmd` and asserts that it succeeds and that its stdout holds each of `needles`.
#[track_caller]
pub fn prints(cmd: &mut assert_cmd::Command, needles: &[&str]) {
    let mut a = cmd.assert().success();
    for n in needles {
        a = a.stdout(predicates::str::contains(*n));
    }
}

/// Starts `opcost run ARGS --no-save --dir DIR` in the background, its
/// standard output discarded and its standard error as `stderr` says.
pub fn spawn_run(
    args: &[&str],
    dir: &std::path::Path,
    stderr: std::process::Stdio,
) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_opcost"))
        .arg("run")
        .args(args)
        .args(["--no-save", "--dir"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// The first words of the quickest real run: one cheap benchmark at the quick profile.
pub const QUICK_RUN: [&str; 4] = ["run", "syscall.function_call", "--profile", "quick"];

/// The JSON document in the file at `path`.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `out`, once asserted to be a success (its stderr in the message otherwise).
#[track_caller]
pub fn succeeded(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Sends SIGINT to `child`, waits for it and asserts that it exited 130 (the
/// message: `context` then its stderr); returns its output.
#[track_caller]
pub fn interrupt(child: std::process::Child, context: &str) -> std::process::Output {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{context}stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Asserts that no benchmark of the run document `doc` is among the skipped as failed.
#[track_caller]
pub fn assert_none_failed(doc: &serde_json::Value) {
    let failed: Vec<&serde_json::Value> = doc["skipped"]
        .as_array()
        .expect("skipped is an array")
        .iter()
        .filter(|s| s["failed"] == true)
        .collect();
    assert!(failed.is_empty(), "failed benchmarks: {failed:?}");
}

/// The findings of area `area` in the run document `doc`.
pub fn findings_of<'a>(doc: &'a serde_json::Value, area: &str) -> Vec<&'a serde_json::Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["area"] == area)
        .collect()
}

/// Whether the text of one of `findings` starts with `prefix`.
pub fn any_starts_with<'a>(
    findings: impl IntoIterator<Item = &'a serde_json::Value>,
    prefix: &str,
) -> bool {
    findings
        .into_iter()
        .any(|f| f["text"].as_str().unwrap().starts_with(prefix))
}

/// Asserts that the result `r` (named `id`) is a throughput in B/s that moves its `size` parameter per operation.
#[track_caller]
pub fn assert_bytes_per_second(r: &serde_json::Value, id: &str) {
    assert_eq!(r["unit"], "B/s", "{id}");
    assert_eq!(
        r["bytes_per_op"].as_f64(),
        r["params"]["size"].as_f64(),
        "{id}"
    );
}

/// The string `field` of every entry of the list `list` (`results`, `skipped`, `findings`) of the run document `doc`.
pub fn strings_of<'a>(doc: &'a serde_json::Value, list: &str, field: &str) -> Vec<&'a str> {
    doc[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[field].as_str().unwrap())
        .collect()
}

/// The whole number `field` of every entry of the list `list` of `doc` (`caches` of a host, `cpus` of a topology).
pub fn numbers_of(doc: &serde_json::Value, list: &str, field: &str) -> Vec<u64> {
    doc[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[field].as_u64().unwrap())
        .collect()
}

/// The result of id `id` in the run document `doc`, if it has one.
pub fn find_result<'a>(doc: &'a serde_json::Value, id: &str) -> Option<&'a serde_json::Value> {
    doc["results"].as_array()?.iter().find(|r| r["id"] == id)
}

/// True, after saying why on standard error, when the test runs under
/// user-mode emulation (`OPCOST_EMULATED=1`, set by scripts/aarch64-test.sh)
/// and checks something emulation cannot give (`reason`); the test then
/// returns early. Each call is one entry of the emulation-only exceptions
/// listed in that script.
pub fn emulation_exception(reason: &str) -> bool {
    let emulated = std::env::var_os("OPCOST_EMULATED").is_some_and(|v| v == "1");
    if emulated {
        eprintln!("emulation-only exception: {reason}");
    }
    emulated
}
