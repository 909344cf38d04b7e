//! End-to-end tests of the IPC suite: the built binary measures, the JSON
//! document is complete and sane, nothing is left behind (processes,
//! /dev/shm entries, System V queues and segments), also after Ctrl-C, and
//! a single allowed CPU turns cross-CPU benchmarks into skips that say why.
//!
//! Never asserts absolute times: only structure, units, signs, and
//! orderings that physics guarantees with a wide margin.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

/// The tests that run benchmarks take turns: they look for leftovers by
/// comparing /dev/shm before and after, and would measure each other.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every IPC benchmark id of this build.
fn ipc_ids() -> Vec<String> {
    let host = opcost::host::Host::detect();
    opcost::suites::suites()
        .into_iter()
        .filter(|s| s.name == "ipc")
        .flat_map(|s| (s.benches)(&host))
        .map(|b| b.id().to_string())
        .collect()
}

/// A marker put in the environment of the opcost under test: every process
/// it forks inherits it, so leftovers can be found by it.
fn marker(test: &str) -> String {
    format!("{test}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

/// Processes still alive whose environment carries `mark`.
fn marked_processes(mark: &str) -> Vec<String> {
    let needle = format!("OPCOST_IPC_TEST_MARK={mark}");
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
            found.push(name);
        }
    }
    found
}

/// The parent pid of process `pid`, from /proc.
fn parent_of(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses: state, then the parent pid.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1).map(str::to_string)
}

/// Waits (a little) for processes carrying `mark` to disappear; returns those left.
fn leftovers(mark: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let left = marked_processes(mark);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a run of a test may leave behind, noted before it starts: its
/// marker, the /dev/shm entries and the System V objects.
struct Before {
    mark: String,
    shm: BTreeSet<String>,
    sysv: BTreeSet<String>,
}

impl Before {
    /// Notes them for the test `test`.
    fn run_of(test: &str) -> Before {
        Before {
            mark: marker(test),
            shm: shm_entries(),
            sysv: sysv_objects(),
        }
    }

    /// Asserts that no process carrying the marker, no /dev/shm entry and no
    /// System V object outlives the run.
    #[track_caller]
    fn assert_nothing_left(&self) {
        assert_eq!(
            leftovers(&self.mark),
            Vec::<String>::new(),
            "processes left behind"
        );
        assert_eq!(shm_entries(), self.shm, "/dev/shm entries left behind");
        assert_eq!(sysv_objects(), self.sysv, "System V objects left behind");
    }
}

/// The opcost entries in /dev/shm.
fn shm_entries() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("opcost-"))
                .collect()
        })
        .unwrap_or_default()
}

/// This user's System V message queues and shared-memory segments, by id
/// (from /proc/sysvipc; empty where the kernel has no System V IPC).
fn sysv_objects() -> BTreeSet<String> {
    let uid = nix::unistd::getuid().as_raw().to_string();
    let mut out = BTreeSet::new();
    for (kind, uid_col) in [("msg", 7), ("shm", 7)] {
        let text = std::fs::read_to_string(format!("/proc/sysvipc/{kind}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.get(uid_col) == Some(&uid.as_str()) {
                out.insert(format!("{kind} {}", f.get(1).unwrap_or(&"?")));
            }
        }
    }
    out
}

fn opcost(mark: &str) -> Command {
    let mut c = Command::cargo_bin("opcost").expect("the opcost binary");
    c.env("OPCOST_IPC_TEST_MARK", mark).env(
        "XDG_DATA_HOME",
        std::env::temp_dir().join("opcost-ipc-test-data"),
    );
    c
}

fn read_doc(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the JSON document");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn quick_run_measures_or_explains_every_mechanism_and_leaves_nothing_behind() {
    let _turn = serial();
    let before = Before::run_of("quick");
    let mark = &before.mark;
    let (_dir, json) = common::scratch("ipc.json");
    opcost(mark)
        .args(["run", "ipc", "--profile", "quick", "--no-save", "--json"])
        .arg(&json)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let doc = read_doc(&json);

    // Every benchmark is measured or skipped with a reason; none failed.
    let results = doc["results"].as_array().unwrap();
    let skipped = doc["skipped"].as_array().unwrap();
    let failed: Vec<&Value> = skipped.iter().filter(|s| s["failed"] == true).collect();
    assert!(failed.is_empty(), "failures: {failed:#?}");
    let by_id: HashMap<&str, &Value> = results
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r))
        .collect();
    for id in ipc_ids() {
        if by_id.contains_key(id.as_str()) {
            continue;
        }
        let s = skipped
            .iter()
            .find(|s| s["id"] == id.as_str())
            .unwrap_or_else(|| panic!("{id} is neither measured nor skipped"));
        let reason = s["reason"].as_str().unwrap();
        assert!(reason.len() > 10, "{id}: no real reason: {reason:?}");
    }

    // Units, signs, placement, per-round-trip statistics.
    for r in results {
        let id = r["id"].as_str().unwrap();
        let median = r["median"].as_f64().unwrap();
        assert!(median.is_finite() && median > 0.0, "{id}: {median}");
        let placement = r["params"]["placement"].as_str().unwrap();
        assert!(id.ends_with("/same") || id.ends_with("/cross"), "{id}");
        assert_eq!(r["details"]["placement"], placement, "{id}");
        // The pair's class, from the topology model the document carries:
        // one name for the relation, the placement's.
        let class = r["details"]["class"].as_str().unwrap();
        assert_eq!(placement, class, "{id}");
        let classes: Vec<&str> = doc["host"]["topology"]["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["class"].as_str().unwrap())
            .collect();
        assert!(classes.contains(&class), "{id}: {class} not in {classes:?}");
        assert_eq!(class == "same-cpu", id.ends_with("/same"), "{id}: {class}");
        if id.contains(".tput/") {
            common::assert_bytes_per_second(r, id);
        } else {
            assert!(id.contains(".rtt/"), "{id}");
            assert_eq!(r["unit"], "ns/op", "{id}");
            let p = &r["per_op"];
            let (p50, p99) = (p["p50"].as_f64().unwrap(), p["p99"].as_f64().unwrap());
            assert!(p50 > 0.0 && p99 >= p50, "{id}: p50 {p50} p99 {p99}");
            assert!(p["count"].as_u64().unwrap() >= r["samples"].as_array().unwrap().len() as u64);
        }
    }

    // Physics with a wide margin: 64 KiB writes move far more bytes/s than 64 B writes.
    let median = |id: &str| by_id.get(id).map(|r| r["median"].as_f64().unwrap());
    let small = median("ipc.pipe.tput/64B/same").expect("pipe at 64 B");
    let big = median("ipc.pipe.tput/64KiB/same").expect("pipe at 64 KiB");
    assert!(big > 4.0 * small, "64 KiB {big} B/s vs 64 B {small} B/s");

    // The splice rows say they are a sink, and no ranking puts them in a tier.
    for r in results {
        let id = r["id"].as_str().unwrap();
        let sink = r["params"]["sink_only"] == true;
        assert_eq!(sink, id.starts_with("ipc.splice.tput/"), "{id}");
    }

    // The mechanisms added for large messages and notifications are there,
    // measured or skipped with their reason (checked above).
    for id in [
        "ipc.vm_readv.tput/1MiB/same",
        "ipc.vm_writev.rtt/4KiB/same",
        "ipc.sysv_msg.rtt/8B/same",
        "ipc.sysv_shm.tput/64KiB/same",
        "ipc.memfd_pass.tput/1MiB/same",
        "ipc.sigqueue.rtt/same",
    ] {
        assert!(ipc_ids().iter().any(|i| i == id), "{id}");
    }

    // Findings are there, finite, and of this area.
    let findings = common::findings_of(&doc, "ipc");
    assert!(
        common::any_starts_with(findings.iter().copied(), "throughput at 64KiB"),
        "{findings:#?}"
    );
    assert!(
        findings
            .iter()
            .all(|f| f["value"].as_f64().unwrap().is_finite())
    );
    for f in &findings {
        let t = f["text"].as_str().unwrap();
        if t.starts_with("throughput at") {
            let ranked = t.split("; splice to /dev/null").next().unwrap();
            assert!(!ranked.contains("splice"), "{t}");
        }
    }
    if by_id.contains_key("ipc.sigqueue.rtt/same") && by_id.contains_key("ipc.futex.rtt/same") {
        assert!(
            common::any_starts_with(
                findings.iter().copied(),
                "notification round trip (same-cpu)"
            ),
            "{findings:#?}"
        );
    }

    // Nothing outlives the run.
    before.assert_nothing_left();
}

#[test]
fn one_allowed_cpu_skips_cross_cpu_and_says_why() {
    let _turn = serial();
    let mark = marker("onecpu");
    let (_dir, json) = common::scratch("ipc.json");
    opcost(&mark)
        .args([
            "run",
            "ipc.pipe.rtt/8B",
            "ipc.eventfd",
            "--profile",
            "quick",
        ])
        .args(["--no-save", "--cpu", "0", "--json"])
        .arg(&json)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let doc = read_doc(&json);
    let ids = common::strings_of(&doc, "results", "id");
    assert_eq!(ids, ["ipc.pipe.rtt/8B/same", "ipc.eventfd.rtt/same"]);
    let skipped = doc["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{skipped:#?}");
    for s in skipped {
        assert!(s["id"].as_str().unwrap().ends_with("/cross"));
        assert_eq!(s["failed"], false);
        let reason = s["reason"].as_str().unwrap();
        assert!(
            reason.contains("two CPUs") && reason.contains("--cpu"),
            "{reason}"
        );
    }
    assert_eq!(leftovers(&mark), Vec::<String>::new());
}

#[test]
fn ctrl_c_stops_the_run_and_leaves_nothing_behind() {
    let _turn = serial();
    let before = Before::run_of("ctrlc");
    let mark = &before.mark;
    let bin = assert_cmd::cargo::cargo_bin("opcost");
    let mut child = std::process::Command::new(bin)
        .args(["run", "ipc", "--profile", "default", "--no-save"])
        .env("OPCOST_IPC_TEST_MARK", mark)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until a peer is forked (a loaded machine takes a while to get
    // there; between groups no peer lives, so poll), then press Ctrl-C. A
    // peer is forked by the round's worker, so it is a grandchild of the run.
    let run = child.id().to_string();
    let peers = || {
        let marked = marked_processes(mark);
        marked
            .iter()
            .filter(|p| {
                let parent = parent_of(p);
                parent
                    .as_deref()
                    .is_some_and(|pp| pp != run && marked.iter().any(|m| m == pp))
            })
            .count()
    };
    let until = Instant::now() + Duration::from_secs(60);
    while peers() == 0 {
        assert!(Instant::now() < until, "no peer process was running");
        assert!(
            child.try_wait().unwrap().is_none(),
            "opcost ended before forking a peer"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("opcost did not stop within 30 s of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    before.assert_nothing_left();
}

#[test]
fn a_mistyped_ipc_pattern_is_a_usage_error_with_suggestions() {
    common::fails_saying(
        opcost(&marker("typo")).args(["run", "icp.pipe", "--no-save"]),
        2,
        &["ipc.pipe"],
    );
}
