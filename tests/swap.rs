//! The swap rows leave no swap enabled: after a finished run, a Ctrl-C (one
//! or two) while a row measures, and a round worker killed outright. Each
//! test skips, saying why, where a temporary swap area cannot be enabled
//! (not root, no swap in the kernel, a container refusing swapon).

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// One swap test at a time: two runs' areas at the same priority would
/// make each other skip.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Why this machine cannot enable a temporary swap area, if it cannot.
fn cannot_swap() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: swapon needs CAP_SYS_ADMIN".into());
    }
    if !Path::new("/proc/swaps").exists() {
        return Some("no /proc/swaps: a kernel without swap".into());
    }
    // A container refuses swapon: try the rows once.
    let out = Command::new(env!("CARGO_BIN_EXE_opcost"))
        .args(["run", "memory.swap.file.out", "--profile", "quick"])
        .args(["--no-save", "--rounds", "1", "--json", "-"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = doc["skipped"].as_array().cloned().unwrap_or_default();
    skipped
        .first()
        .map(|s| format!("the row skipped: {}", s["reason"]))
}

/// The enabled swap areas whose header carries opcost's label.
fn opcost_swaps() -> Vec<(String, u32)> {
    let text = std::fs::read_to_string("/proc/swaps").unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let path = l.split_whitespace().next()?.to_string();
            let mut page = vec![0u8; 4096];
            std::fs::File::open(&path)
                .ok()?
                .read_exact(&mut page)
                .ok()?;
            let label = &page[1052..1068];
            let end = label.iter().position(|&b| b == 0).unwrap_or(16);
            let pid = std::str::from_utf8(&label[..end])
                .ok()?
                .strip_prefix("opcost:")?
                .parse()
                .ok()?;
            Some((path, pid))
        })
        .collect()
}

/// The zram devices present.
fn zram_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("zram"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Starts a run of `ids` in `dir` and waits until one of its swap areas is
/// enabled (the row is past its set-up); returns the run and the area.
/// The caller waits for the run.
#[allow(clippy::zombie_processes)]
fn start_measuring(dir: &Path, ids: &[&str]) -> (Child, (String, u32)) {
    let args = [ids, &["--profile", "default"]].concat();
    let mut child = common::spawn_run(&args, dir, Stdio::piped());
    let start = Instant::now();
    loop {
        if let Some(a) = opcost_swaps().into_iter().next() {
            // Into the measurement proper.
            std::thread::sleep(Duration::from_millis(300));
            return (child, a);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "no opcost swap area was ever enabled; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for the run and asserts that nothing of the swap is left.
fn assert_nothing_left(child: Child, dir: &Path, zram_before: &[String], what: &str) {
    assert_no_swap_left(child, zram_before, what);
    let files: Vec<_> = walk(dir)
        .into_iter()
        .filter(|p| p.ends_with("swapfile"))
        .collect();
    assert!(files.is_empty(), "{what}: swap files left: {files:?}");
}

/// Waits for the run and asserts that no swap area of opcost's is enabled
/// and no zram device is left.
fn assert_no_swap_left(child: Child, zram_before: &[String], what: &str) {
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        opcost_swaps().is_empty(),
        "{what}: left {:?}; stderr: {err}",
        opcost_swaps()
    );
    assert_eq!(
        zram_devices(),
        zram_before,
        "{what}: a zram device was left"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

macro_rules! needs_swap {
    () => {{
        let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(why) = cannot_swap() {
            eprintln!("skipped: {why}");
            return;
        }
        guard
    }};
}

#[test]
fn ctrl_c_while_a_swap_row_measures_leaves_no_swap_enabled() {
    let _g = needs_swap!();
    for (ids, signals) in [
        (&["memory.swap.file.in"][..], 1),
        (&["memory.swap.zram.in"][..], 1),
        (&["memory.swap.file.out"][..], 2),
        (&["memory.swap.zram.out"][..], 2),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let zram_before = zram_devices();
        let (child, _area) = start_measuring(dir.path(), ids);
        for _ in 0..signals {
            kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_nothing_left(
            child,
            dir.path(),
            &zram_before,
            &format!("{ids:?}, {signals} SIGINT"),
        );
    }
}

#[test]
fn a_worker_killed_outright_has_its_swap_removed_by_the_run() {
    let _g = needs_swap!();
    for id in ["memory.swap.file.in", "memory.swap.zram.out"] {
        let dir = tempfile::tempdir().unwrap();
        let zram_before = zram_devices();
        let (child, (_path, owner)) = start_measuring(dir.path(), &[id]);
        assert_ne!(owner, child.id(), "the area belongs to a round worker");
        kill(Pid::from_raw(owner as i32), Signal::SIGKILL).unwrap();
        assert_no_swap_left(child, &zram_before, id);
    }
}

#[test]
fn a_finished_run_leaves_no_swap_and_names_the_devices() {
    let _g = needs_swap!();
    let zram_before = zram_devices();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_opcost"))
        .args(["run", "memory.swap", "--profile", "quick", "--no-save"])
        .args(["--rounds", "2", "--json", "-", "--dir"])
        .arg(dir.path())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(opcost_swaps().is_empty(), "left {:?}", opcost_swaps());
    assert_eq!(zram_devices(), zram_before);
    for m in doc["results"].as_array().unwrap() {
        let d = &m["details"];
        let dev = d["device"].as_str().unwrap();
        if m["id"].as_str().unwrap().contains(".zram.") {
            assert!(
                dev.starts_with("zram") && dev.contains("compressor"),
                "{dev}"
            );
        } else {
            assert!(dev.starts_with("swap file on "), "{dev}");
        }
        assert!(d["device_pages"].as_u64().unwrap() > 0, "{m}");
    }
    // Without a pattern naming them, the rows are not run at all.
    let out = Command::new(env!("CARGO_BIN_EXE_opcost"))
        .args(["list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("memory.swap.zram.in"));
}
