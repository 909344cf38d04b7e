//! End-to-end behaviour of the command line: selection, bad input, the JSON
//! document, and Ctrl-C. Timings are never asserted.

mod common;

use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

/// The binary, with its history in a throw-away directory of this test
/// process (never the real home, never another checkout's tests).
fn opcost() -> Command {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let home = HOME.get_or_init(|| tempfile::tempdir().expect("temp dir"));
    let mut c = Command::cargo_bin("opcost").expect("binary built");
    c.env("XDG_DATA_HOME", home.path());
    c
}

#[test]
fn list_shows_ids_units_and_summaries() {
    common::prints(
        opcost().arg("list"),
        &["syscall.function_call", "ns/op", "benchmarks"],
    );
}

#[test]
fn list_with_a_pattern_that_matches_nothing_is_a_usage_error() {
    common::fails_saying(
        opcost().args(["list", "no.such.thing"]),
        2,
        &["no benchmark matches"],
    );
}

#[test]
fn unknown_pattern_exits_2_and_suggests_the_nearest_ids() {
    common::fails_saying(
        opcost().args(["run", "sycall", "--profile", "quick"]),
        2,
        &["no benchmark matches 'sycall'", "did you mean: syscall"],
    );
}

#[test]
fn a_mistyped_flag_suggests_the_fix_with_the_plain_usage_line() {
    let (_, err) = common::exits_with(
        opcost().args(["run", "--profil", "quick", "syscall.getpid"]),
        2,
    );
    assert!(err.contains("'--profile'"), "the fix is suggested: {err}");
    assert!(
        err.contains("Usage: opcost run [OPTIONS] [PATTERNS]..."),
        "{err}"
    );
    assert!(!err.contains("--profile <PROFILE> <PATTERNS>"), "{err}");
}

#[test]
fn bad_flag_values_exit_2() {
    opcost()
        .args(["run", "--profile", "fastest"])
        .assert()
        .code(2);
    opcost().args(["run", "--samples", "0"]).assert().code(2);
    opcost().args(["run", "--samples", "many"]).assert().code(2);
    opcost().args(["run", "--cpu", "-1"]).assert().code(2);
    opcost().args(["--no-such-flag"]).assert().code(2);
}

#[test]
fn pinning_to_a_cpu_that_does_not_exist_exits_2() {
    common::fails_saying(
        opcost().args([
            "run",
            "syscall.function_call",
            "--cpu",
            "100000",
            "--profile",
            "quick",
        ]),
        2,
        &["--cpu 100000", "not available"],
    );
}

#[test]
fn a_matrix_with_a_pinned_cpu_is_refused_before_any_benchmark_runs() {
    // A history of its own: the refusal must leave it empty.
    let home = tempfile::tempdir().unwrap();
    let (out, err) = common::exits_with(
        Command::cargo_bin("opcost")
            .unwrap()
            .env("XDG_DATA_HOME", home.path())
            .args(common::QUICK_RUN)
            .args(["--matrix", "--cpu", "0"]),
        2,
    );
    assert!(
        err.contains("--matrix measures pairs of CPUs, and --cpu 0 pins the run to one"),
        "{err}"
    );
    // Refused before the plan: no benchmark announced, no row printed,
    // nothing saved.
    assert!(!err.contains("benchmarks, quick profile"), "{err}");
    assert!(out.is_empty());
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
}

#[test]
fn a_matrix_on_a_cpuset_of_one_is_refused_before_any_benchmark_runs() {
    let cpu = opcost::harness::affinity::allowed_cpus()[0].to_string();
    let home = tempfile::tempdir().unwrap();
    let out = StdCommand::new("taskset")
        .args(["-c", &cpu])
        .arg(env!("CARGO_BIN_EXE_opcost"))
        .args(common::QUICK_RUN)
        .arg("--matrix")
        .env("XDG_DATA_HOME", home.path())
        .output()
        .expect("taskset runs opcost");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--matrix measures pairs of CPUs, and this run may use one (CPU {cpu})"
        )),
        "{err}"
    );
    assert!(!err.contains("benchmarks, quick profile"), "{err}");
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
}

#[test]
fn topology_on_one_cpu_says_it_needs_two_and_names_the_cpu() {
    let cpu = opcost::harness::affinity::allowed_cpus()[0].to_string();
    common::fails_saying(
        opcost().args(["run", "topology", "--profile", "quick", "--cpu", &cpu]),
        2,
        &[&format!(
            "topology needs two usable CPUs, and this run may use one (CPU {cpu})"
        )],
    );
}

#[test]
fn unwritable_json_path_is_refused_before_running_and_leaves_nothing() {
    let (dir, missing) = common::scratch("no/such/dir/out.json");
    common::fails_saying(
        opcost().args(common::QUICK_RUN).arg("--json").arg(&missing),
        2,
        &["does not exist"],
    );
    assert!(!missing.exists());
    // A directory given as the file.
    common::fails_saying(
        opcost()
            .args(common::QUICK_RUN)
            .arg("--json")
            .arg(dir.path()),
        2,
        &["is a directory"],
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no partial or temp file left"
    );
}

#[test]
fn missing_dir_is_a_usage_error() {
    common::fails_saying(
        opcost()
            .args(common::QUICK_RUN)
            .args(["--dir", "/nonexistent/opcost-dir"]),
        2,
        &["no such directory"],
    );
}

#[test]
fn json_document_has_the_documented_layout() {
    let (_dir, path) = common::scratch("run.json");
    common::prints(
        opcost()
            .args(common::QUICK_RUN)
            .args(["--samples", "7", "--label", "t1", "--json"])
            .arg(&path),
        &["syscall.function_call"],
    );
    let doc: Value = common::read_json(&path);
    assert_eq!(doc["schema"], 1);
    assert!(doc["opcost_version"].is_string());
    assert_eq!(doc["run"]["profile"], "quick");
    assert_eq!(doc["run"]["label"], "t1");
    assert_eq!(doc["run"]["id"].as_str().unwrap().len(), 8);
    assert!(doc["host"].is_object());
    assert!(doc["findings"].is_array());
    let r = &doc["results"][0];
    assert_eq!(r["id"], "syscall.function_call");
    assert_eq!(r["area"], "syscall");
    assert_eq!(r["unit"], "ns/op");
    for k in [
        "median", "min", "max", "mean", "p5", "p95", "mad", "ci_low", "ci_high", "cv", "overhead",
    ] {
        let v = r[k].as_f64().unwrap_or_else(|| panic!("{k} missing"));
        assert!(v.is_finite() && v >= 0.0, "{k} = {v}");
    }
    assert!(r["min"].as_f64() <= r["median"].as_f64() && r["median"].as_f64() <= r["max"].as_f64());
    assert!(
        r["ci_low"].as_f64() <= r["median"].as_f64()
            && r["median"].as_f64() <= r["ci_high"].as_f64()
    );
    assert!(r["ops_per_sample"].as_u64().unwrap() >= 1);
    assert!(r["noisy"].is_boolean());
    assert!(r["warnings"].is_array());
    assert!(r["outliers"]["high_mild"].is_u64());
    assert_eq!(r["samples"].as_array().unwrap().len(), 7);
}

/// The quickest run with `samples` samples, its document written to `json`,
/// started without assert_cmd (to be signalled, or its output discarded).
fn quick_run_to(samples: &str, json: &std::path::Path) -> StdCommand {
    let mut c = StdCommand::new(assert_cmd::cargo::cargo_bin("opcost"));
    c.args(common::QUICK_RUN)
        .args(["--samples", samples, "--json"])
        .arg(json);
    c
}

#[test]
fn ctrl_c_stops_cleanly_and_still_writes_what_finished() {
    let (dir, path) = common::scratch("run.json");
    // --samples far beyond the budget: the run would take many minutes.
    let child = quick_run_to("100000", &path)
        .env("XDG_DATA_HOME", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Under emulation the first sample takes longer to come.
    let emulated = std::env::var_os("OPCOST_EMULATED").is_some_and(|v| v == "1");
    std::thread::sleep(Duration::from_millis(if emulated { 8000 } else { 1500 }));
    let out = common::interrupt(child, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("interrupted"), "{stdout}");
    let doc: Value = common::read_json(&path);
    assert_eq!(doc["run"]["interrupted"], true);
    let r = &doc["results"][0];
    assert_eq!(r["id"], "syscall.function_call");
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("interrupted"))
    );
}

#[test]
fn json_dash_is_standard_output_and_the_table_goes_to_stderr() {
    let out = opcost()
        .args(common::QUICK_RUN)
        .args(["--samples", "5", "--no-save", "--json", "-"])
        .assert()
        .success();
    let o = out.get_output();
    let doc: Value = serde_json::from_slice(&o.stdout).expect("stdout is the JSON alone");
    assert_eq!(doc["results"][0]["id"], "syscall.function_call");
    assert!(String::from_utf8_lossy(&o.stderr).contains("syscall.function_call"));
    assert!(!std::path::Path::new("-").exists());
}

#[test]
fn json_to_dev_full_fails_with_exit_1_and_leaves_the_device() {
    common::fails_saying(
        opcost().args(common::QUICK_RUN).args([
            "--samples",
            "5",
            "--no-save",
            "--json",
            "/dev/full",
        ]),
        1,
        &["/dev/full"],
    );
    use std::os::unix::fs::FileTypeExt;
    let ft = std::fs::symlink_metadata("/dev/full").unwrap().file_type();
    assert!(ft.is_char_device(), "/dev/full is still a device");
}

#[test]
fn export_and_report_write_to_dash_devices_and_through_symlinks() {
    let (dir, db) = common::scratch("h.db");
    let json = dir.path().join("run.json");
    let st = quick_run_to("5", &json)
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let with_db = || {
        let mut c = opcost();
        c.arg("--db").arg(&db);
        c
    };
    // `-o -`: standard output, nothing named `-` created.
    let out = with_db().args(["export", "-o", "-"]).assert().success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["results"][0]["id"], "syscall.function_call");
    let out = with_db().args(["report", "-o", "-"]).assert().success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).starts_with("<!DOCTYPE html>"));
    // /dev/full: reported, exit 1; /dev/null: fine.
    common::fails_saying(
        with_db().args(["export", "-o", "/dev/full"]),
        1,
        &["No space left"],
    );
    with_db()
        .args(["report", "-o", "/dev/full"])
        .assert()
        .code(1);
    with_db()
        .args(["export", "-o", "/dev/null"])
        .assert()
        .success();
    // A symlink: its target replaced, the link kept.
    let target = dir.path().join("target.md");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    with_db()
        .args(["export", "--format", "md", "-o"])
        .arg(&link)
        .assert()
        .success();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .contains("syscall.function_call")
    );
    // A directory is a usage error.
    common::fails_saying(
        with_db().args(["export", "-o"]).arg(dir.path()),
        2,
        &["directory"],
    );
}
