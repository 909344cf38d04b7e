//! End-to-end behaviour of `opcost cmd`: net figures of programs of known
//! cost, the E13 Mandelbrot programs net of start-up, bad input, time
//! limits, and that no child outlives opcost. Timings are never asserted,
//! only their structure and orderings that physics guarantees by far.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// The fixtures' directory.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cmd")
}

/// The binary, with its history in `dir`.
fn opcost(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("opcost").expect("binary built");
    c.env("XDG_DATA_HOME", dir.join("xdg"))
        .arg("--db")
        .arg(dir.join("results.db"));
    c
}

/// Compiles a fixture with `cc -O2` into `dir`.
fn compile(dir: &Path, source: &str) -> PathBuf {
    let exe = dir.join(source.trim_end_matches(".c"));
    let st = StdCommand::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&exe)
        .arg(fixtures().join(source))
        .status()
        .expect("cc runs (scripts/install-test-deps.sh installs it)");
    assert!(st.success(), "cc failed on {source}");
    exe
}

/// Runs `opcost cmd ARGS --json FILE` and returns the document.
fn run_json(dir: &Path, args: &[&str]) -> Value {
    let json = dir.join("run.json");
    opcost(dir)
        .arg("cmd")
        .args(args)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    common::read_json(&json)
}

/// The result with this id.
fn result<'a>(doc: &'a Value, id: &str) -> &'a Value {
    common::find_result(doc, id).unwrap_or_else(|| panic!("no result {id} in {doc:#}"))
}

/// Pids of live (non-zombie) processes whose command line starts with
/// `marker` (opcost's own, which has it further on, does not count).
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .starts_with(marker)
        {
            found.push(name);
        }
    }
    found
}

/// Waits up to 3 s for every process with `marker` to be gone.
fn assert_none_left(marker: &str) {
    let start = Instant::now();
    while !processes_with(marker).is_empty() && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_with(marker),
        Vec::<String>::new(),
        "left behind: {marker}"
    );
}

#[test]
fn a_baseline_gives_a_net_figure_that_grows_with_n() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "loop.c");
    let cmd = format!("{} {{n}}", exe.display());
    let base = format!("{} 1", exe.display());
    let doc = run_json(
        dir.path(),
        &[
            "--runs", "7", "-P", "n", "10000000", "50000000", "--step", "40000000", &cmd, ":::",
            &base,
        ],
    );
    let small = result(&doc, "cmd.loop/n=10000000");
    let large = result(&doc, "cmd.loop/n=50000000");
    for r in [small, large] {
        assert_eq!(r["area"], "cmd");
        assert_eq!(r["unit"], "ns/op");
        assert_eq!(r["samples"].as_array().unwrap().len(), 7);
        assert!(r["ci_low"].as_f64().unwrap() <= r["median"].as_f64().unwrap());
        assert!(r["median"].as_f64().unwrap() <= r["ci_high"].as_f64().unwrap());
        assert!(r["details"]["baseline_wall_ns"].as_f64().unwrap() > 0.0);
        assert!(r["details"]["max_rss_bytes"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(small["params"]["n"], 10_000_000);
    let (s, l) = (
        small["median"].as_f64().unwrap(),
        large["median"].as_f64().unwrap(),
    );
    assert!(s > 0.0, "net of 10M iterations: {s}");
    assert!(l > 2.0 * s, "5x the iterations, net {l} vs {s}");
    result(&doc, "cmd.loop.user/n=50000000");
    result(&doc, "cmd.loop.sys/n=50000000");
    let slope = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["text"].as_str().unwrap().contains("per unit of n"))
        .expect("a slope finding");
    assert!(slope["value"].as_f64().unwrap() > 0.0);

    // The run is in the history: show and compare read it like any other.
    let id = doc["run"]["id"].as_str().unwrap();
    common::prints(
        opcost(dir.path()).args(["show", id]),
        &["cmd.loop/n=50000000"],
    );
    common::prints(opcost(dir.path()).args(["compare", id, id]), &["cmd"]);
}

#[test]
fn mandelbrot_net_of_start_up_in_c_and_interpreters() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "mandelbrot.c");
    let mut args: Vec<String> = vec!["--runs".into(), "5".into()];
    let mut pair = |name: &str, cmd: String, base: String| {
        args.extend(["--name".into(), name.into()]);
        args.extend([cmd, ":::".into(), base]);
    };
    let n = 120;
    pair(
        "mandelbrot.c",
        format!("{} {n}", exe.display()),
        format!("{} 1", exe.display()),
    );
    let fx = fixtures();
    pair(
        "mandelbrot.py",
        format!("python3 {}/mandelbrot.py {n}", fx.display()),
        format!("python3 {}/mandelbrot.py 1", fx.display()),
    );
    let mut others = Vec::new();
    for (prog, file) in [("node", "mandelbrot.js"), ("lua", "mandelbrot.lua")] {
        if which::which(prog).is_err() {
            eprintln!("skipping {file}: {prog} is not installed");
            continue;
        }
        pair(
            file,
            format!("{prog} {}/{file} {n}", fx.display()),
            format!("{prog} {}/{file} 1", fx.display()),
        );
        others.push(file);
    }
    let n_others = others.len();
    // Each --name stands before its command; clap keeps both lists in order.
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let doc = run_json(dir.path(), &args);
    let c = result(&doc, "cmd.mandelbrot.c")["median"].as_f64().unwrap();
    let py = result(&doc, "cmd.mandelbrot.py")["median"]
        .as_f64()
        .unwrap();
    assert!(py > 0.0, "python net {py}");
    assert!(py > c, "CPython is far slower than C: python {py} vs C {c}");
    for f in others {
        let r = result(&doc, &format!("cmd.{f}"));
        assert!(r["median"].as_f64().unwrap().is_finite());
    }
    let startup = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["text"].as_str().unwrap().contains("its baseline"))
        .count();
    assert_eq!(startup, 2 + n_others, "one start-up share per command");
}

#[test]
fn a_missing_command_exits_2_naming_it_and_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    opcost(dir.path())
        .args(["cmd", "true", "opcost-no-such-program --flag"])
        .arg("--json")
        .arg(dir.path().join("out.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "command not found: opcost-no-such-program",
        ));
    common::fails_saying(
        opcost(dir.path()).args(["cmd", "--baseline", "opcost-no-such-baseline", "true"]),
        2,
        &["opcost-no-such-baseline"],
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_unreadable_input_exits_2_and_leaves_no_files() {
    let (dir, sub) = common::scratch("sub");
    std::fs::create_dir(&sub).unwrap();
    for input in [dir.path().join("missing.txt"), sub.clone()] {
        common::fails_saying(
            opcost(dir.path())
                .args(["cmd", "cat", "--input"])
                .arg(&input),
            2,
            &["--input"],
        );
    }
    common::fails_saying(
        opcost(dir.path()).args(["cmd", "true", "-P", "n", "5", "1"]),
        2,
        &["MIN 5 is larger"],
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["sub"]);
}

#[test]
fn input_is_fed_to_every_run() {
    let (dir, input) = common::scratch("in.txt");
    std::fs::write(&input, "hello\n").unwrap();
    // grep exits 1 when the pattern is absent: every run would fail.
    let doc = run_json(
        dir.path(),
        &[
            "--runs",
            "3",
            "--no-save",
            "--input",
            input.to_str().unwrap(),
            "grep -q hello",
        ],
    );
    assert_eq!(
        result(&doc, "cmd.grep_-q_hello")["samples"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn a_failing_command_is_an_error_unless_ignored() {
    let dir = tempfile::tempdir().unwrap();
    opcost(dir.path())
        .args(["cmd", "--runs", "3", "--no-save", "false"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("exited with status 1").and(predicate::str::contains("-i")),
        );
    let doc = run_json(dir.path(), &["--runs", "3", "--no-save", "-i", "false"]);
    let w = result(&doc, "cmd.false")["warnings"].to_string();
    assert!(w.contains("failed"), "{w}");
}

#[test]
fn a_time_limit_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    opcost(dir.path())
        .args([
            "cmd",
            "--no-save",
            "--timeout",
            "300ms",
            "sh -c 'sleep 41.25 & sleep 41.25'",
        ])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("--timeout").and(predicate::str::contains("process group")),
        );
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_none_left("sleep 41.25");
}

#[test]
fn nothing_a_command_leaves_behind_survives_it() {
    let dir = tempfile::tempdir().unwrap();
    common::prints(
        opcost(dir.path()).args([
            "cmd",
            "--no-save",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--shell",
            "sleep 42.25 & exit 0",
        ]),
        &["shell start-up subtracted"],
    );
    assert_none_left("sleep 42.25");
}

#[test]
fn ctrl_c_kills_the_running_command_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("opcost"))
        .arg("--db")
        .arg(dir.path().join("results.db"))
        .args(["cmd", "--runs", "3", "sleep 43.25"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while processes_with("sleep 43.25").is_empty() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    common::interrupt(child, "");
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_none_left("sleep 43.25");
}

#[test]
fn prepare_restores_the_state_every_run_needs_in_the_working_directory() {
    // `tar -x` fails when its output is already there (-k): only a
    // --prepare that removes it before every run lets each run succeed.
    let (dir, work) = common::scratch("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(work.join("src/a.txt"), "a\n").unwrap();
    let st = StdCommand::new("tar")
        .current_dir(&work)
        .args(["-cf", "../src.tar", "src"])
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::remove_dir_all(work.join("src")).unwrap();
    let cwd = work.to_str().unwrap();
    common::fails_saying(
        opcost(dir.path()).args([
            "cmd",
            "--no-save",
            "--runs",
            "3",
            "--cwd",
            cwd,
            "tar -xkf ../src.tar",
        ]),
        1,
        &["exited with status"],
    );
    std::fs::remove_dir_all(work.join("src")).unwrap();
    let doc = run_json(
        dir.path(),
        &[
            "--no-save",
            "--runs",
            "4",
            "--cwd",
            cwd,
            "--setup",
            "touch setup-ran",
            "--prepare",
            "rm -rf src",
            "--conclude",
            "test -f src/a.txt",
            "--cleanup",
            "rm -rf src",
            "tar -xkf ../src.tar",
        ],
    );
    let r = result(&doc, "cmd.tar_-xkf_.._src.tar");
    assert_eq!(r["samples"].as_array().unwrap().len(), 4);
    assert_eq!(r["details"]["cwd"], cwd);
    assert_eq!(r["details"]["hooks"]["prepare"], "rm -rf src");
    assert!(work.join("setup-ran").exists());
    assert!(!work.join("src").exists(), "--cleanup ran last");
}

#[test]
fn a_failing_prepare_exits_1_naming_it_and_leaves_no_child() {
    let dir = tempfile::tempdir().unwrap();
    opcost(dir.path())
        .args([
            "cmd",
            "--no-save",
            "--runs",
            "3",
            "-i",
            "--prepare",
            "sh -c 'sleep 44.25 & exit 3'",
            "true",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--prepare 'sh -c 'sleep 44.25 & exit 3'' (for 'true') exited with status 3",
        ));
    assert_none_left("sleep 44.25");
}

#[test]
fn bad_hooks_and_working_directories_exit_2_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--prepare", "opcost-no-such-prepare"],
            "--prepare: command not found: opcost-no-such-prepare",
        ),
        (&["--cleanup", ""], "--cleanup: an empty command"),
        (&["--cwd", "/nonexistent/opcost-dir"], "no such directory"),
        (&["--conclude", "echo 'open"], "--conclude: cannot split"),
    ];
    for (args, message) in cases {
        opcost(dir.path())
            .args(["cmd", "--no-save", "--runs", "2"])
            .args(args)
            .arg("true")
            .assert()
            .code(2)
            .stderr(predicate::str::contains(message));
    }
}

#[test]
fn the_help_example_keeps_its_scan_variable() {
    let dir = tempfile::tempdir().unwrap();
    opcost(dir.path())
        .args(["cmd", "--help"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("'./loop {size}' ::: './loop 1'")
                .and(predicate::str::contains("--prepare")),
        );
}
