//! End-to-end tests of the text suite: the quick run's document, the order
//! checks (Swedish right for ICU, wrong for naive lowercase, glibc's
//! punctuation rule named),
//! sorts checked in order, line counts equal across methods, and nothing
//! left in `--dir`, also after Ctrl-C. They never assert absolute speeds.

mod common;

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
    common::find_result(doc, id)
        .unwrap_or_else(|| panic!("no result {id}; skipped: {}", doc["skipped"]))
}

/// The document of `run` (an `opcost run ... --no-save` command), which must
/// succeed within 5 minutes, written with `--json` to `json`.
fn run_json(run: &mut Command, json: &Path) -> Value {
    run.arg("--json")
        .arg(json)
        .timeout(Duration::from_secs(300))
        .assert()
        .success();
    common::read_json(json)
}

#[test]
fn quick_run_checks_order_sorts_and_line_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (_out, json) = common::scratch("run.json");
    let mut run = Command::cargo_bin("opcost").unwrap();
    run.args(["run", "text", "--profile", "quick", "--no-save", "--dir"])
        .arg(dir.path());
    let doc = run_json(&mut run, &json);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));

    common::assert_none_failed(&doc);
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

/// The fixture of `name` in tests/fixtures/text.
fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/text")
        .join(name)
}

/// Fails loudly when the C library lacks `name`: the user-words tests
/// need it, and scripts/install-test-deps.sh installs it.
fn require_locale(name: &str) {
    let out = StdCommand::new("locale").arg("-a").output().unwrap();
    let want = name.replace("UTF-8", "utf8");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l == want),
        "the locale {name} is missing: run scripts/install-test-deps.sh (locales-all)"
    );
}

#[test]
fn user_words_in_swedish_and_turkish_are_checked_against_icu_for_the_locale() {
    require_locale("tr_TR.UTF-8");
    require_locale("sv_SE.UTF-8");
    let (_out, json) = common::scratch("run.json");
    let mut run = Command::cargo_bin("opcost").unwrap();
    run.args(["run", "text.user", "--profile", "quick", "--no-save"])
        .arg("--words")
        .arg(fixture("names-sv.txt"))
        .arg("--words")
        .arg(fixture("names-tr.txt"))
        .args(["--locale", "sv_SE.UTF-8", "--locale", "tr_TR.UTF-8"]);
    let doc = run_json(&mut run, &json);
    common::assert_none_failed(&doc);
    let results = doc["results"].as_array().unwrap();
    for m in results {
        let id = m["id"].as_str().unwrap();
        assert!(id.starts_with("text.user."), "{id}");
        assert_eq!(m["unit"], "ns/op", "{id}");
        assert!(m["median"].as_f64().unwrap() > 0.0, "{id}");
        let d = &m["details"];
        let share = d["order_agreement"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{id}");
        assert_eq!(d["order_correct"], share == 1.0, "{id}");
        assert!(d["pairs_checked"].as_u64().unwrap() >= 10, "{id}");
        assert_eq!(d["words_file"]["lines"], 20, "{id}");
        assert!(d["words_file"]["bytes"].as_u64().unwrap() > 100, "{id}");
        if id.starts_with("text.user.sort.") {
            assert_eq!(d["sorted_checked"], true, "{id}");
        }
    }
    // Every method on both files under both locales, compared and sorted.
    for set in [
        "file-names-sv_txt/sv_SE.UTF-8",
        "file-names-sv_txt/tr_TR.UTF-8",
        "file-names-tr_txt/sv_SE.UTF-8",
        "file-names-tr_txt/tr_TR.UTF-8",
    ] {
        for kind in ["cmp", "sort"] {
            let d = &result(&doc, &format!("text.user.{kind}.icu.primary/{set}"))["details"];
            assert_eq!(d["order_correct"], true, "{set}");
        }
    }
    let d = |id: &str| result(&doc, id)["details"].clone();
    // Turkish: I is the capital of dotless ı, a letter of its own before i;
    // lowercasing makes Irmak irmak, collation under tr_TR keeps it.
    let tr = "file-names-tr_txt/tr_TR.UTF-8";
    assert_eq!(
        d(&format!("text.user.cmp.icu.primary/{tr}"))["reference"],
        "icu.primary/tr-TR"
    );
    for m in ["lower_alloc", "ascii_ci", "simple_fold"] {
        let x = d(&format!("text.user.sort.{m}/{tr}"));
        assert_eq!(x["order_correct"], false, "{m}");
        assert_eq!(x["first_wrong_pair"].as_array().unwrap().len(), 2, "{m}");
    }
    // The ASCII fast path compares Irmak and ilk, both ASCII, as bytes.
    assert_eq!(
        d(&format!("text.user.cmp.ascii_strcoll/{tr}"))["first_wrong_pair"],
        serde_json::json!(["Irmak", "ilk"])
    );
    for m in [
        "strcoll",
        "icu.tertiary",
        "icu_keys.primary",
        "icu_per_call",
    ] {
        assert_eq!(
            d(&format!("text.user.sort.{m}/{tr}"))["order_correct"],
            true,
            "{m}"
        );
    }
    // Swedish names: lowercasing puts Å before Ä; sv_SE collation does not.
    let sv = "file-names-sv_txt/sv_SE.UTF-8";
    assert_eq!(
        d(&format!("text.user.cmp.lower_alloc/{sv}"))["order_correct"],
        false
    );
    assert_eq!(
        d(&format!("text.user.cmp.icu.tertiary/{sv}"))["order_correct"],
        true
    );

    let findings = common::strings_of(&doc, "findings", "text");
    for set in [
        "file-names-tr_txt under tr_TR.UTF-8",
        "file-names-sv_txt under sv_SE.UTF-8",
    ] {
        assert!(
            findings
                .iter()
                .any(|f| f.starts_with(&format!("order of your words {set}"))),
            "{findings:?}"
        );
        assert!(
            findings.iter().any(|f| f.starts_with(&format!(
                "fastest right sort of the list for your words {set}"
            ))),
            "{findings:?}"
        );
    }
}

#[test]
fn bad_words_files_and_unknown_locales_are_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::cargo_bin("opcost")
            .unwrap()
            .args(["run", "text.user", "--profile", "quick", "--no-save"])
            .args(args)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, b"Anna\nBo\nCe\xe7ilia\nDan\n").unwrap();
    let (code, err) = run(&["--words", bad.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("line 3") && err.contains("not valid UTF-8"),
        "{err}"
    );
    assert!(
        !err.contains("benchmarks, quick profile"),
        "measured: {err}"
    );

    let (code, err) = run(&["--words", dir.path().join("none.txt").to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("none.txt"), "{err}");

    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let (code, err) = run(&["--words", empty.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("empty"), "{err}");

    let ok = fixture("names-sv.txt");
    let ok = ok.to_str().unwrap();
    let (code, err) = run(&["--words", ok, "--locale", "tr_XX.UTF-8"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("tr_XX.UTF-8") && err.contains("closest"),
        "{err}"
    );
    let (code, err) = run(&["--locale", "sv_SE.UTF-8"]);
    assert_eq!(code, Some(2), "--locale without --words: {err}");
    let out = Command::cargo_bin("opcost")
        .unwrap()
        .args([
            "run",
            "text.cmp",
            "--no-save",
            "--words",
            ok,
            "--locale",
            "C",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("text.user"));
}
