//! End-to-end behaviour of the process suite: the quick run is complete and
//! sane, the growth curve is measured or skipped with a reason, and no child
//! or grandchild of opcost is left alive — after a normal run and after
//! Ctrl-C. Timings are never asserted, only orderings physics guarantees.
//!
//! The test process makes itself a child subreaper, so a process opcost
//! started and failed to reap would be re-parented here instead of to init,
//! where the scan below finds it.

mod common;

use std::collections::HashMap;
use std::process::{Command as StdCommand, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

/// The growth-curve methods and points, as ids use them.
const GROWTH_METHODS: [&str; 3] = ["fork_exec", "vfork_exec", "posix_spawn"];
const GROWTH_POINTS: [&str; 5] = ["0B", "16MiB", "64MiB", "256MiB", "1GiB"];
/// The ways a big program starts a helper, on the same curve; quick
/// measures only the ends.
const HELPER_METHODS: [&str; 4] = ["clone_vfork_exec", "popen", "system", "command"];
const QUICK_HELPER_POINTS: [&str; 2] = ["0B", "256MiB"];
/// The spawns measured against open descriptors, and the points.
const FD_METHODS: [&str; 3] = ["posix_spawn", "fork_exec", "command"];
const FD_POINTS: [&str; 4] = ["10", "1000", "10000", "100000"];
/// The descriptor points a quick run holds.
const QUICK_FD_POINTS: [&str; 3] = ["10", "1000", "10000"];

/// The ways of closing of the descriptor-limit sweep, and its points.
const NOFILE_ROWS: [&str; 4] = ["fork_exec", "close_loop", "close_range", "closefrom"];
const NOFILE_POINTS: [&str; 3] = ["1024", "65536", "1048576"];

/// Serialises the tests: each checks that nothing it started is left, so
/// none may run opcost while another looks.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let g = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    // SAFETY: prctl with integer arguments.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    // qemu-user 7.2 refuses the option (EINVAL): the checks then see
    // the processes still in this process's tree, not the orphans re-parented
    // to init; the rest of each test holds.
    let emulated = std::env::var_os("OPCOST_EMULATED").is_some_and(|v| v == "1");
    if r != 0 && emulated {
        eprintln!(
            "not a child subreaper under emulation ({}): orphans are not checked",
            std::io::Error::last_os_error()
        );
    } else {
        assert_eq!(r, 0, "cannot become a child subreaper");
    }
    g
}

/// The binary, with its history in a throw-away directory (never the real home).
fn opcost() -> Command {
    let mut c = Command::cargo_bin("opcost").expect("binary built");
    c.env("XDG_DATA_HOME", history_dir());
    c
}

fn history_dir() -> std::path::PathBuf {
    std::env::temp_dir().join("opcost-process-tests")
}

/// Processes (pid, command name, state) whose parent chain leads to this process.
fn descendants() -> Vec<(i32, String, char)> {
    let me = std::process::id() as i32;
    let mut parent: HashMap<i32, i32> = HashMap::new();
    let mut info: HashMap<i32, (String, char)> = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue; // exited meanwhile
        };
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let mut rest = stat[close + 1..].split_whitespace();
        let state = rest.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid: i32 = rest.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        parent.insert(pid, ppid);
        info.insert(pid, (comm, state));
    }
    let mut out = Vec::new();
    for &pid in parent.keys() {
        let mut p = pid;
        for _ in 0..64 {
            match parent.get(&p) {
                Some(&pp) if pp == me => {
                    let (comm, state) = info[&pid].clone();
                    out.push((pid, comm, state));
                    break;
                }
                Some(&pp) if pp > 1 => p = pp,
                _ => break,
            }
        }
    }
    out
}

/// Fails if anything started during the test is still alive (or a zombie).
fn assert_no_descendants() {
    // A child killed a moment ago may still be on its way out: look twice.
    let mut left = descendants();
    if !left.is_empty() {
        std::thread::sleep(Duration::from_millis(200));
        left = descendants();
    }
    // Reap whatever was re-parented to us, so that one failure does not leak into other tests.
    for &(pid, _, _) in &left {
        // SAFETY: plain system calls on a pid that is our descendant.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
        }
    }
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

fn run_json(args: &[&str]) -> Value {
    let (_dir, path) = common::scratch("run.json");
    opcost()
        .args(args)
        .arg("--no-save")
        .arg("--json")
        .arg(&path)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("valid JSON")
}

fn median(doc: &Value, id: &str) -> Option<f64> {
    common::find_result(doc, id).and_then(|r| r["median"].as_f64())
}

/// Asserts that the result `dear` (id, what it is) has a larger median than
/// `cheap` when both ran.
fn costs_more_when_both_ran(doc: &Value, dear: (&str, &str), cheap: (&str, &str)) {
    if let (Some(d), Some(c)) = (median(doc, dear.0), median(doc, cheap.0)) {
        assert!(d > c, "{} {d} <= {} {c}", dear.1, cheap.1);
    }
}

fn skip_reason(doc: &Value, id: &str) -> Option<String> {
    doc["skipped"]
        .as_array()?
        .iter()
        .find(|s| s["id"] == id)
        .map(|s| s["reason"].as_str().unwrap_or("").to_string())
}

#[test]
fn quick_run_is_complete_sane_and_leaves_no_child() {
    let _g = serial();
    let doc = run_json(&["run", "process", "--profile", "quick"]);
    let results = doc["results"].as_array().unwrap();
    assert!(results.len() >= 10, "only {} results", results.len());
    for r in results {
        let id = r["id"].as_str().unwrap();
        assert!(id.starts_with("process."), "{id}");
        assert_eq!(r["unit"], "ns/op", "{id}");
        let (lo, med, hi) = (
            r["min"].as_f64().unwrap(),
            r["median"].as_f64().unwrap(),
            r["max"].as_f64().unwrap(),
        );
        assert!(med.is_finite() && med > 0.0, "{id}: median {med}");
        assert!(lo <= med && med <= hi, "{id}: {lo} {med} {hi}");
        assert!(r["samples"].as_array().unwrap().len() >= 3, "{id}");
    }
    // Nothing failed (skips are fine, each with a reason).
    for s in doc["skipped"].as_array().unwrap() {
        assert_eq!(s["failed"], false, "{s}");
        assert!(!s["reason"].as_str().unwrap().is_empty(), "{s}");
    }

    // The growth curve: every quick point measured, or skipped with a
    // reason; the 1 GiB point waits for the default profile.
    for m in GROWTH_METHODS {
        for p in GROWTH_POINTS {
            let id = format!("process.{m}/rss={p}");
            let measured = median(&doc, &id).is_some();
            let skipped = skip_reason(&doc, &id).is_some_and(|r| !r.is_empty());
            if p == "1GiB" {
                assert!(!measured && !skipped, "{id} ran at quick");
            } else {
                assert!(measured || skipped, "{id} neither measured nor skipped");
            }
        }
    }
    for m in HELPER_METHODS {
        for p in GROWTH_POINTS {
            let id = format!("process.{m}/rss={p}");
            let measured = median(&doc, &id).is_some();
            let skipped = skip_reason(&doc, &id).is_some_and(|r| !r.is_empty());
            if QUICK_HELPER_POINTS.contains(&p) {
                assert!(measured || skipped, "{id} neither measured nor skipped");
            } else {
                assert!(!measured && !skipped, "{id} ran at quick");
            }
        }
    }

    // Spawns against open descriptors: measured, or skipped naming the limit.
    for m in FD_METHODS {
        for p in FD_POINTS {
            let id = format!("process.fds.{m}/fds={p}");
            if !QUICK_FD_POINTS.contains(&p) {
                assert!(median(&doc, &id).is_none(), "{id} ran at quick");
                continue;
            }
            if let Some(reason) = skip_reason(&doc, &id) {
                assert!(reason.contains("RLIMIT_NOFILE"), "{id}: {reason}");
                continue;
            }
            let r = results
                .iter()
                .find(|r| r["id"] == id.as_str())
                .unwrap_or_else(|| panic!("{id} neither measured nor skipped"));
            assert_eq!(r["params"]["fds"], p.parse::<u64>().unwrap(), "{id}");
            let open = r["details"]["fds_open"].as_u64().unwrap();
            assert!(open >= p.parse::<u64>().unwrap(), "{id}: {open} open");
            // fork+exec forks from the small helper holding the descriptors,
            // not from opcost with whatever earlier benchmarks left mapped.
            if m == "fork_exec" {
                let parent = r["details"]["parent"].as_str().unwrap_or_default();
                assert!(parent.contains("small helper"), "{id}: {parent}");
            }
        }
    }

    let r = results
        .iter()
        .find(|r| r["id"] == "process.fork_exec/rss=16MiB");
    if let Some(r) = r {
        assert_eq!(r["params"]["rss"], "16MiB");
    }

    // fork+exit forks from the small helper; both parents' sizes are given.
    let fork = results
        .iter()
        .find(|r| r["id"] == "process.fork_exit")
        .expect("fork_exit measured");
    for key in [
        "helper_rss_bytes",
        "helper_vm_bytes",
        "opcost_rss_bytes",
        "opcost_vm_bytes",
    ] {
        assert!(
            fork["details"][key].as_u64().unwrap_or(0) > 0,
            "{key}: {fork}"
        );
    }
    assert!(median(&doc, "process.fork_exit.from_opcost").is_some());

    // Orderings physics guarantees, with wide margins.
    assert!(median(&doc, "process.thread").is_some(), "no thread row");
    costs_more_when_both_ran(
        &doc,
        ("process.fork_exec/rss=256MiB", "fork with 256 MiB touched"),
        ("process.fork_exec/rss=0B", "untouched"),
    );
    costs_more_when_both_ran(
        &doc,
        ("process.page_fault.anon_thp", "a huge-page fault"),
        ("process.page_fault.anon", "a base-page fault"),
    );

    // Findings carry a value and a unit.
    let findings = common::findings_of(&doc, "process");
    assert!(!findings.is_empty());
    for f in &findings {
        assert!(f["value"].as_f64().unwrap().is_finite(), "{f}");
        assert!(!f["unit"].as_str().unwrap().is_empty(), "{f}");
    }
    let has = |needle: &str| {
        findings
            .iter()
            .any(|f| f["text"].as_str().unwrap().contains(needle))
    };
    if median(&doc, "process.popen/rss=0B").is_some()
        && median(&doc, "process.clone_vfork_exec/rss=0B").is_some()
    {
        assert!(has("the shell adds"), "no shell finding");
    }
    if median(&doc, "process.popen/rss=256MiB").is_some()
        && median(&doc, "process.clone_vfork_exec/rss=256MiB").is_some()
    {
        assert!(
            has("popen from a parent with 256MiB"),
            "no popen per GiB finding"
        );
    }
    if median(&doc, "process.fds.posix_spawn/fds=1000").is_some() {
        assert!(
            findings
                .iter()
                .any(|f| f["unit"] == "ns/1000fd"
                    && f["text"].as_str().unwrap().contains("posix_spawn")),
            "no descriptor finding"
        );
    }
    if median(&doc, "process.fork_exec/rss=256MiB").is_some() {
        assert!(
            findings
                .iter()
                .any(|f| f["unit"] == "ns/GiB" && f["text"].as_str().unwrap().contains("fork")),
            "no fork slope finding"
        );
    }

    assert_no_descendants();
}

#[test]
fn starting_a_process_costs_more_than_a_thread() {
    let _g = serial();
    // Pinned to one CPU, so that neither is dominated by cross-CPU wake-ups
    // (which on a VM can make a thread spawn+join nearly as slow as a spawn).
    let doc = run_json(&[
        "run",
        "process.thread",
        "process.fork_exec/rss=0B",
        "process.posix_spawn/rss=0B",
        "--profile",
        "quick",
        "--cpu",
        "0",
    ]);
    let thread = median(&doc, "process.thread").expect("the thread row always runs");
    let exec_supported = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
    for id in ["process.posix_spawn/rss=0B", "process.fork_exec/rss=0B"] {
        match median(&doc, id) {
            Some(spawn) => assert!(spawn > thread, "{id} {spawn} ns <= thread {thread} ns"),
            None => assert!(!exec_supported, "{id} missing"),
        }
    }
    assert_no_descendants();
}

#[test]
fn ctrl_c_during_the_suite_leaves_no_child() {
    let _g = serial();
    // One run interrupted while a ping-pong peer process is alive, one
    // while children are being spawned; --samples keeps each running.
    for patterns in [
        vec!["process.switch"],
        vec!["process.fork_exec/rss=0B", "process.posix_spawn/rss=0B"],
    ] {
        let child = StdCommand::new(assert_cmd::cargo::cargo_bin("opcost"))
            .arg("run")
            .args(&patterns)
            .args(["--profile", "quick", "--samples", "100000", "--no-save"])
            .env("XDG_DATA_HOME", history_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        common::interrupt(child, &format!("{patterns:?}: "));
        assert_no_descendants();
    }
}

#[test]
fn pinned_run_uses_the_given_cpu_for_both_ends() {
    let _g = serial();
    let doc = run_json(&["run", "process.switch", "--profile", "quick", "--cpu", "0"]);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{results:?}");
    for r in results {
        assert_eq!(r["details"]["cpu"], 0, "{}", r["id"]);
        assert_eq!(r["details"]["placement"], "same-cpu");
    }
    assert_no_descendants();
}

#[test]
fn list_shows_every_growth_point() {
    let _g = serial();
    let out = opcost().args(["list", "process"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let sweeps: [(&str, &[&str], &str, &[&str]); 4] = [
        ("process.", &GROWTH_METHODS, "rss", &GROWTH_POINTS),
        ("process.", &HELPER_METHODS, "rss", &GROWTH_POINTS),
        ("process.fds.", &FD_METHODS, "fds", &FD_POINTS),
        ("process.nofile.", &NOFILE_ROWS, "nofile", &NOFILE_POINTS),
    ];
    for (prefix, names, param, points) in sweeps {
        for m in names {
            for p in points {
                let id = format!("{prefix}{m}/{param}={p}");
                assert!(text.contains(&id), "{id} not listed");
            }
        }
    }
    assert!(text.contains("process.switch.pingpong_process"));
    assert!(text.contains("process.page_fault.file"));
}

#[test]
fn the_descriptor_limit_sweep_measures_or_names_the_limit_and_leaves_no_child() {
    let _g = serial();
    let doc = run_json(&["run", "process.nofile", "--profile", "quick"]);
    let results = doc["results"].as_array().unwrap();
    for how in NOFILE_ROWS {
        for p in NOFILE_POINTS {
            let id = format!("process.nofile.{how}/nofile={p}");
            if p == "1048576" {
                assert!(median(&doc, &id).is_none(), "{id} ran at quick");
                assert!(skip_reason(&doc, &id).is_none(), "{id} prepared at quick");
                continue;
            }
            if let Some(reason) = skip_reason(&doc, &id) {
                // The hard limit, the kernel's maximum, or a libc or kernel
                // without the call: each named.
                assert!(
                    reason.contains("RLIMIT_NOFILE") || reason.contains("added it"),
                    "{id}: {reason}"
                );
                continue;
            }
            let r = results
                .iter()
                .find(|r| r["id"] == id.as_str())
                .unwrap_or_else(|| panic!("{id} neither measured nor skipped"));
            assert_eq!(r["unit"], "ns/op", "{id}");
            assert_eq!(r["params"]["nofile"], p.parse::<u64>().unwrap(), "{id}");
            assert_eq!(
                r["details"]["nofile_soft"],
                p.parse::<u64>().unwrap(),
                "{id}"
            );
            let close = r["details"]["close"].as_str().unwrap();
            assert_eq!(r["params"]["close"], close, "{id}");
            assert!(r["median"].as_f64().unwrap() > 0.0, "{id}");
        }
    }
    // At 1024 every row runs anywhere (the usual soft limit is the point);
    // closing a thousand descriptors one by one cannot be free, so the
    // finding compares the loop with close_range there or higher.
    if median(&doc, "process.nofile.close_loop/nofile=1024").is_some() {
        let found = doc["findings"].as_array().unwrap().iter().any(|f| {
            f["text"]
                .as_str()
                .unwrap()
                .starts_with("closing up to the limit costs")
        });
        assert!(found, "{}", doc["findings"]);
    }
    assert_no_descendants();
}

#[test]
fn the_scan_finds_an_orphaned_grandchild() {
    if common::emulation_exception(
        "qemu-user 7.2 refuses PR_SET_CHILD_SUBREAPER (EINVAL): the orphan goes to init, out of this process's tree",
    ) {
        return;
    }
    let _g = serial();
    // sh starts sleep in the background and exits: sleep is re-parented to us.
    let status = StdCommand::new("sh")
        .args(["-c", "sleep 30 >/dev/null 2>&1 &"])
        .status()
        .unwrap();
    assert!(status.success());
    // The background child may not have exec'd sleep yet: give it time.
    let mut found = descendants();
    for _ in 0..100 {
        if found.iter().any(|(_, comm, _)| comm == "sleep") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        found = descendants();
    }
    assert!(
        found.iter().any(|(_, comm, _)| comm == "sleep"),
        "orphan not found among {found:?}"
    );
    for &(pid, _, _) in &found {
        // SAFETY: our re-parented descendant.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    assert!(descendants().is_empty());
}
