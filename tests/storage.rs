//! End-to-end tests of the storage suite: the run document's structure and
//! location block, that nothing is left in `--dir` (also after Ctrl-C), and
//! bad `--dir` values. They never assert absolute speeds.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

/// The binary, with its history in a throw-away directory of this test
/// process (never the real home, never another checkout's tests).
fn opcost() -> Command {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let home = HOME.get_or_init(|| tempfile::tempdir().expect("temp dir"));
    let mut c = Command::cargo_bin("opcost").unwrap();
    c.env("XDG_DATA_HOME", home.path());
    c
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Runs `opcost run PATTERNS --profile quick --samples 3 --dir DIR --json`
/// and returns the document.
fn run_json(dir: &Path, patterns: &[&str]) -> Value {
    let (_out, json) = common::scratch("run.json");
    let mut cmd = opcost();
    cmd.arg("run")
        .args(patterns)
        .args(["--profile", "quick", "--samples", "3"]);
    cmd.arg("--dir").arg(dir).arg("--json").arg(&json);
    cmd.timeout(Duration::from_secs(300)).assert().success();
    common::read_json(&json)
}

#[test]
fn quick_run_parses_names_its_location_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), b"not ours").unwrap();
    let doc = run_json(dir.path(), &["storage"]);

    // Nothing opcost wrote is left; what was there is untouched.
    assert_eq!(entries(dir.path()), vec!["keep.txt".to_string()]);
    assert_eq!(
        std::fs::read(dir.path().join("keep.txt")).unwrap(),
        b"not ours"
    );

    let results = doc["results"].as_array().unwrap();
    let failed: Vec<&Value> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["failed"].as_bool() == Some(true))
        .collect();
    assert!(failed.is_empty(), "failures: {failed:?}");
    assert!(results.len() >= 15, "only {} results", results.len());
    let canon = std::fs::canonicalize(dir.path()).unwrap();
    for m in results {
        let id = m["id"].as_str().unwrap();
        assert!(id.starts_with("storage."), "{id}");
        let median = m["median"].as_f64().unwrap();
        assert!(median.is_finite() && median > 0.0, "{id}: {median}");
        let unit = m["unit"].as_str().unwrap();
        assert!(["B/s", "ns/op", "ops/s"].contains(&unit), "{id}: {unit}");

        // The location block: where, which file system, which device.
        let loc = &m["details"]["location"];
        let d = loc["dir"].as_str().unwrap();
        assert!(Path::new(d).starts_with(&canon), "{id}: {d} not in --dir");
        assert!(!loc["fs_type"].as_str().unwrap().is_empty(), "{id}");
        assert!(
            loc["device"].is_string() || !loc["scheduler_note"].as_str().unwrap().is_empty(),
            "{id}: neither a device nor why there is none: {loc}"
        );
        assert!(loc["scheduler"].is_string(), "{id}");

        // The CPU its samples cost: per operation, and as CPUs kept busy.
        let det = &m["details"];
        for k in [
            "cpu_user_ns_per_op",
            "cpu_sys_ns_per_op",
            "cpu_share",
            "cpu_share_low",
            "cpu_share_high",
            "cpu_sys_share",
        ] {
            let v = det[k].as_f64();
            assert!(
                v.is_some_and(|v| v.is_finite() && v >= 0.0),
                "{id}: {k} = {v:?}"
            );
        }
        assert!(
            det["cpu_share_low"].as_f64() <= det["cpu_share_high"].as_f64(),
            "{id}"
        );
        if unit == "B/s" {
            assert!(det["cpu_ns_per_mib"].as_f64().is_some(), "{id}");
        }
    }
    let unit_of = |id: &str| {
        results
            .iter()
            .find(|m| m["id"] == id)
            .map(|m| m["unit"].as_str().unwrap().to_string())
    };
    assert_eq!(unit_of("storage.seq.read.hot").as_deref(), Some("B/s"));
    assert_eq!(unit_of("storage.rand.read.qd1").as_deref(), Some("ns/op"));
    assert_eq!(unit_of("storage.meta.create").as_deref(), Some("ops/s"));
    // Per-operation timings where latency tails matter.
    for id in ["storage.rand.read.qd1", "storage.sync.fdatasync"] {
        if let Some(m) = results.iter().find(|m| m["id"] == id) {
            let p = &m["per_op"];
            assert!(
                p["p99"].as_f64().unwrap() >= p["p50"].as_f64().unwrap(),
                "{id}"
            );
        }
    }
    // A cache-hot reread cannot be slower than a quarter of a cold one
    // (it is usually many times faster; a wide margin for noisy machines).
    let med = |id: &str| {
        results
            .iter()
            .find(|m| m["id"] == id)
            .and_then(|m| m["median"].as_f64())
    };
    if let (Some(hot), Some(cold)) = (med("storage.seq.read.hot"), med("storage.seq.read.cold")) {
        assert!(hot > cold / 4.0, "hot {hot} vs cold {cold}");
    }

    let findings = doc["findings"].as_array().unwrap();
    let place = findings
        .iter()
        .find(|f| f["text"].as_str().unwrap().starts_with("measured in "))
        .expect("a finding naming the location");
    assert_eq!(place["area"], "storage");
    assert_eq!(place["unit"], "B");
    for f in findings.iter().filter(|f| f["area"] == "storage") {
        assert!(f["value"].as_f64().unwrap().is_finite(), "{f}");
    }
}

/// Asserts that a run given `dir` as --dir is a usage error saying each of `needles`.
fn dir_is_refused(dir: &Path, needles: &[&str]) {
    common::fails_saying(
        opcost()
            .args(["run", "storage.meta.stat", "--profile", "quick"])
            .args(["--no-save", "--dir"])
            .arg(dir),
        2,
        needles,
    );
}

#[test]
fn a_missing_dir_is_a_usage_error() {
    let (_parent, missing) = common::scratch("nope");
    dir_is_refused(&missing, &["no such directory", "create it"]);
    assert!(!missing.exists());
}

#[test]
fn a_file_as_dir_is_a_usage_error() {
    let f = tempfile::NamedTempFile::new().unwrap();
    dir_is_refused(f.path(), &["not a directory"]);
}

#[test]
fn a_memory_file_system_is_said_to_be_one() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return; // no tmpfs to try here
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let doc = run_json(
        dir.path(),
        &["storage.seq.read.direct", "storage.meta.stat"],
    );
    assert!(entries(dir.path()).is_empty());
    for m in doc["results"].as_array().unwrap() {
        let loc = &m["details"]["location"];
        assert_eq!(loc["fs_type"], "tmpfs");
        assert!(loc["device"].is_null());
        let w: Vec<&str> = m["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert!(w.iter().any(|w| w.contains("memory figures")), "{w:?}");
    }
    // O_DIRECT may be refused by an older tmpfs: then it is a skip that says so.
    for s in doc["skipped"].as_array().unwrap() {
        assert_eq!(s["failed"], false, "{s}");
        assert!(s["reason"].as_str().unwrap().contains("O_DIRECT"), "{s}");
    }
}

/// Starts a run in `dir`, waits until it has created its scratch directory,
/// sends SIGINT `signals` times, and returns the exit code.
fn interrupt(dir: &Path, signals: usize) -> Option<i32> {
    interrupt_run(
        dir,
        &["storage.seq", "--profile", "default"],
        signals,
        Duration::ZERO,
    )
}

/// [`interrupt`] for the run `args`, `delay` after its scratch directory appears.
fn interrupt_run(dir: &Path, args: &[&str], signals: usize, delay: Duration) -> Option<i32> {
    let mut child = common::spawn_run(args, dir, Stdio::null());
    let start = Instant::now();
    while entries(dir).is_empty() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !entries(dir).is_empty(),
        "the run never created its directory"
    );
    std::thread::sleep(delay);
    let pid = Pid::from_raw(child.id() as i32);
    for _ in 0..signals {
        kill(pid, Signal::SIGINT).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    status.code()
}

/// Asserts that a run given `signals` SIGINTs exits 130 and leaves its directory empty.
fn assert_ctrl_c_leaves_nothing(signals: usize) {
    let dir = tempfile::tempdir().unwrap();
    let code = interrupt(dir.path(), signals);
    assert_eq!(code, Some(130));
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn ctrl_c_leaves_nothing_behind() {
    assert_ctrl_c_leaves_nothing(1);
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_still_cleans_up() {
    assert_ctrl_c_leaves_nothing(2);
}

#[test]
fn the_write_back_flood_is_stopped_and_removed_after_ctrl_c_at_any_point() {
    // Interrupts at random points of the flood's life (set-up, writing,
    // sampling, between rounds; in a worker or in the run's own process):
    // the run exits as interrupted, or finished, and leaves nothing.
    for k in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let delay = Duration::from_millis(fastrand::u64(0..1500));
        let mut args = vec!["storage.stall.fsync.flood", "--profile", "quick"];
        if k % 2 == 1 {
            args.push("--one-process");
        }
        let signals = 1 + k / 2;
        let code = interrupt_run(dir.path(), &args, signals, delay);
        assert!(
            matches!(code, Some(130) | Some(0)),
            "{args:?} after {delay:?}: exit {code:?}"
        );
        assert!(
            entries(dir.path()).is_empty(),
            "{args:?} after {delay:?}, {signals} SIGINT: left {:?}",
            entries(dir.path())
        );
    }
}

#[test]
fn stall_rows_give_tails_idle_and_under_the_flood_with_the_dirty_limits() {
    let dir = tempfile::tempdir().unwrap();
    let doc = run_json(dir.path(), &["storage.stall.fsync", "storage.stall.stat"]);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    let results = doc["results"].as_array().unwrap();
    for id in [
        "storage.stall.fsync.idle",
        "storage.stall.fsync.flood",
        "storage.stall.stat.idle",
        "storage.stall.stat.flood",
    ] {
        let Some(m) = results.iter().find(|m| m["id"] == id) else {
            let why = doc["skipped"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == id);
            let why = why.unwrap_or_else(|| panic!("{id}: neither measured nor skipped"));
            assert_eq!(why["failed"], false, "{why}");
            continue;
        };
        assert_eq!(m["unit"], "ns/op", "{id}");
        let p = &m["per_op"];
        let (p50, p99, max) = (
            p["p50"].as_f64().unwrap(),
            p["p99"].as_f64().unwrap(),
            p["max"].as_f64().unwrap(),
        );
        assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{id}: {p}");
        let d = &m["details"];
        assert!(!d["op_ns"].as_array().unwrap().is_empty(), "{id}");
        let wb = &d["location"]["writeback"];
        assert!(
            wb["dirty_ratio"].is_u64() && wb["dirty_expire_centisecs"].is_u64(),
            "{id}: {wb}"
        );
        assert!(d["writeback"]["dirty_bytes"].is_u64(), "{id}");
        if id.ends_with(".flood") {
            assert!(
                d["flood_written_bytes"].as_u64().unwrap() > 0,
                "{id}: the writer never wrote"
            );
            assert!(d["flood_file_bytes"].as_u64().unwrap() > 0, "{id}");
        }
    }
    let findings = doc["findings"].as_array().unwrap();
    assert!(
        common::any_starts_with(findings, "a 4 KiB write + fsync waits up to"),
        "{findings:#?}"
    );
}

/// Sets `/proc/sys/vm/dirty_bytes` for the guard's life, restoring the old
/// value (and with it the ratio, when the old value was 0) on drop.
struct DirtyBytes {
    old_bytes: String,
    old_ratio: String,
}

impl DirtyBytes {
    const BYTES: &'static str = "/proc/sys/vm/dirty_bytes";
    const RATIO: &'static str = "/proc/sys/vm/dirty_ratio";

    fn set(bytes: u64) -> std::io::Result<DirtyBytes> {
        let g = DirtyBytes {
            old_bytes: std::fs::read_to_string(Self::BYTES)?.trim().to_string(),
            old_ratio: std::fs::read_to_string(Self::RATIO)?.trim().to_string(),
        };
        std::fs::write(Self::BYTES, bytes.to_string())?;
        Ok(g)
    }
}

impl Drop for DirtyBytes {
    fn drop(&mut self) {
        if self.old_bytes != "0" {
            let _ = std::fs::write(Self::BYTES, &self.old_bytes);
        } else {
            // Writing the ratio switches the kernel back from the byte limit.
            let _ = std::fs::write(Self::RATIO, &self.old_ratio);
        }
    }
}

#[test]
fn a_tiny_dirty_limit_is_recorded_with_the_stall_it_brings() {
    // vm.dirty_bytes belongs to the whole kernel: no namespace holds a copy
    // of its own, so changing it touches every program on the machine. The
    // test does so only when asked (as root, OPCOST_TEST_GLOBAL_SYSCTL=1).
    if std::env::var("OPCOST_TEST_GLOBAL_SYSCTL").as_deref() != Ok("1") {
        eprintln!(
            "skipped: vm.dirty_bytes is global to the kernel (not per namespace); \
             set OPCOST_TEST_GLOBAL_SYSCTL=1 as root to let this test change it for a few seconds"
        );
        return;
    }
    let tiny: u64 = 4 << 20;
    let guard = match DirtyBytes::set(tiny) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("skipped: cannot set vm.dirty_bytes: {e}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let doc = run_json(dir.path(), &["storage.stall.fsync"]);
    drop(guard);
    let results = doc["results"].as_array().unwrap();
    let flood = results
        .iter()
        .find(|m| m["id"] == "storage.stall.fsync.flood")
        .expect("the flood row");
    // The limits recorded are the ones in force while it ran.
    assert_eq!(
        flood["details"]["location"]["writeback"]["dirty_bytes"].as_u64(),
        Some(tiny)
    );
    let finding = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|f| {
            f["text"]
                .as_str()
                .filter(|t| t.starts_with("a 4 KiB write + fsync"))
        })
        .expect("the stall finding");
    assert!(finding.contains("dirty limit 4.00 MiB"), "{finding}");
    eprintln!("{finding}");
}
