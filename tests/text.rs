//! End-to-end tests of the text suite: the quick run's document, the order
//! checks (Swedish right for ICU, wrong for naive lowercase, glibc's
//! punctuation rule named),
//! sorts checked in order, line counts equal across methods, and nothing
//! left in `--dir`, also after Ctrl-C. They never assert absolute speeds.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn result<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no result {id}; skipped: {}", doc["skipped"]))
}

#[test]
fn quick_run_checks_order_sorts_and_line_counts() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("run.json");
    Command::cargo_bin("opcost")
        .unwrap()
        .args(["run", "text", "--profile", "quick", "--no-save", "--dir"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .timeout(Duration::from_secs(300))
        .assert()
        .success();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));

    let failed: Vec<&Value> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["failed"] == true)
        .collect();
    assert!(failed.is_empty(), "failures: {failed:?}");
    let results = doc["results"].as_array().unwrap();
    assert!(results.len() >= 50, "only {} results", results.len());
    for m in results {
        let id = m["id"].as_str().unwrap();
        assert!(id.starts_with("text."), "{id}");
        let median = m["median"].as_f64().unwrap();
        assert!(median.is_finite() && median > 0.0, "{id}: {median}");
        let want = if id.starts_with("text.lines.") {
            "B/s"
        } else {
            "ns/op"
        };
        assert_eq!(m["unit"], want, "{id}");
    }

    // Order: Swedish is right for ICU and glibc's sv_SE, wrong for lowercase.
    let correct = |id: &str| {
        result(&doc, id)["details"]["order_correct"]
            .as_bool()
            .unwrap()
    };
    for s in ["primary", "secondary", "tertiary"] {
        assert!(correct(&format!("text.cmp.icu.{s}/sv")), "icu.{s}");
        assert!(
            correct(&format!("text.sort.icu_keys.{s}/sv/n=1000")),
            "icu_keys.{s}"
        );
    }
    // glibc gets the Swedish letters right and ignores the apostrophe at
    // the first level, where CLDR does not.
    for id in ["text.cmp.strcoll/sv", "text.sort.strxfrm/sv/n=1000"] {
        assert_eq!(
            result(&doc, id)["details"]["first_wrong_pair"],
            serde_json::json!(["O'Neill", "Olsson"]),
            "{id}"
        );
    }
    assert!(correct("text.cmp.ascii_strcoll/sv"));
    assert!(correct("text.cmp.icu_per_call/sv"));
    for m in ["lower_alloc", "lower_buf", "simple_fold", "ascii_ci"] {
        let d = &result(&doc, &format!("text.cmp.{m}/sv"))["details"];
        assert_eq!(d["order_correct"], false, "{m}");
        assert_eq!(d["first_wrong_pair"].as_array().unwrap().len(), 2, "{m}");
    }
    assert_eq!(
        result(&doc, "text.cmp.lower_alloc/sv")["details"]["first_wrong_pair"],
        serde_json::json!(["åsna", "Älg"])
    );
    // Every sort was checked in order under its own comparison.
    for m in results
        .iter()
        .filter(|m| m["id"].as_str().unwrap().starts_with("text.sort."))
    {
        assert_eq!(m["details"]["sorted_checked"], true, "{}", m["id"]);
    }

    // Lines: every method found the same lines in the same file shape.
    let mut lines: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for m in results
        .iter()
        .filter(|m| m["id"].as_str().unwrap().starts_with("text.lines."))
    {
        let shape = m["id"]
            .as_str()
            .unwrap()
            .split('/')
            .nth(1)
            .unwrap()
            .to_string();
        lines
            .entry(shape)
            .or_default()
            .push(m["details"]["lines"].as_u64().unwrap());
        assert!(m["details"]["lines_per_s"].as_f64().unwrap() > 0.0);
    }
    let crlf = &lines["crlf-40B"];
    assert!(crlf.len() >= 9, "{crlf:?}");
    assert!(crlf.iter().all(|&n| n == crlf[0] && n > 1000), "{crlf:?}");
    // Reading the whole file holds at least the file; 64 KiB blocks far less.
    let peak = |id: &str| {
        result(&doc, id)["details"]["peak_extra_bytes"]
            .as_f64()
            .unwrap()
    };
    let file = result(&doc, "text.lines.whole_split/crlf-40B")["details"]["file_bytes"]
        .as_f64()
        .unwrap();
    assert!(peak("text.lines.whole_split/crlf-40B") >= file);
    assert!(peak("text.lines.memchr_block/crlf-40B") < file / 4.0);

    let findings: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["area"] == "text")
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert!(
        findings.iter().any(|f| f.starts_with("order check for sv")),
        "{findings:?}"
    );
    assert!(findings.iter().any(|f| f.contains("wc -l")), "{findings:?}");
}

#[test]
fn ctrl_c_during_line_benchmarks_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_opcost"))
        .args([
            "run",
            "text.lines",
            "--profile",
            "default",
            "--no-save",
            "--dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while entries(dir.path()).is_empty() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !entries(dir.path()).is_empty(),
        "the run never created its file"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}
