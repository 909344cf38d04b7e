//! End-to-end checks of the codec suite: one quick run of the built binary
//! (with a file of the test's own as `--input`), shared by the tests below,
//! and the refusal of unreadable inputs. Timings are never asserted; only
//! structure, units, round trips, ratios and behaviour on bad input.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use assert_cmd::Command;
use serde_json::Value;

/// Every codec of the suite, as named in ids.
const CODECS: [&str; 7] = ["zstd", "lz4", "gzip", "brotli", "xz", "bzip2", "snappy"];

/// The user's file: repetitive text, so every codec shrinks it.
fn input_file(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("notes.txt");
    let text: String = (0..2000)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(&path, text).expect("writing the input");
    path
}

/// The JSON document of `opcost run codec --profile quick --input FILE`, made once.
fn doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let input = input_file(dir.path());
        common::run_doc([
            "run".as_ref(),
            "codec".as_ref(),
            "--profile".as_ref(),
            "quick".as_ref(),
            "--input".as_ref(),
            input.as_os_str(),
        ])
    })
}

fn results() -> &'static [Value] {
    doc()["results"].as_array().expect("results is an array")
}

#[test]
fn every_codec_round_trips_and_no_benchmark_fails() {
    common::assert_none_failed(doc());
    for codec in CODECS {
        for op in ["compress", "decompress"] {
            let n = results()
                .iter()
                .filter(|r| r["params"]["codec"] == codec && r["params"]["op"] == op)
                .count();
            assert!(n > 0, "no {codec} {op} result at quick");
        }
    }
}

#[test]
fn speeds_are_bytes_per_second_of_the_input() {
    for r in results() {
        let id = r["id"].as_str().expect("id");
        assert!(id.starts_with("codec."), "{id}");
        assert_eq!(r["area"], "codec", "{id}");
        assert_eq!(r["unit"], "B/s", "{id}");
        let input = r["params"]["input_bytes"].as_f64().expect("input_bytes");
        assert_eq!(r["bytes_per_op"].as_f64(), Some(input), "{id}");
        assert_eq!(r["details"]["input_bytes"].as_f64(), Some(input), "{id}");
        for key in ["median", "min", "max", "ci_low", "ci_high"] {
            let v = r[key].as_f64().expect("a number");
            assert!(v.is_finite() && v > 0.0, "{id}: {key} = {v}");
        }
        // Anything slower than 10 kB/s or faster than 1 TB/s is a unit error.
        let m = r["median"].as_f64().unwrap_or(0.0);
        assert!((1e4..1e12).contains(&m), "{id}: {m} B/s");
    }
}

#[test]
fn ratios_are_recorded_and_ordered_by_redundancy() {
    let ratio = |id: &str| {
        results()
            .iter()
            .find(|r| r["id"] == id)
            .and_then(|r| r["details"]["ratio"].as_f64())
            .unwrap_or_else(|| panic!("{id} has no ratio"))
    };
    for r in results() {
        let d = &r["details"];
        let (i, c) = (
            d["input_bytes"].as_f64().unwrap_or(0.0),
            d["compressed_bytes"].as_f64().unwrap_or(0.0),
        );
        assert!(c > 0.0, "{}", r["id"]);
        assert!(
            (d["ratio"].as_f64().unwrap_or(0.0) - i / c).abs() < 1e-9,
            "{}",
            r["id"]
        );
    }
    // JSON shrinks, random bytes do not (wide margins: physics, not tuning).
    assert!(ratio("codec.json.zstd-1.compress/40KiB") > 2.0);
    assert!(ratio("codec.random.zstd-1.compress/40KiB") < 1.01);
    assert!(
        ratio("codec.json.zstd-3.compress/40KiB") > ratio("codec.random.zstd-3.compress/40KiB")
    );
}

#[test]
fn the_users_file_is_measured_by_name_and_size_only() {
    let mine: Vec<&Value> = results()
        .iter()
        .filter(|r| r["params"]["input"] == "file-notes_txt")
        .collect();
    assert!(!mine.is_empty(), "no result for --input");
    let text = serde_json::to_string(doc()).expect("serialises");
    assert!(
        !text.contains("quick brown fox"),
        "the file's content leaked"
    );
    for r in mine {
        assert_eq!(r["details"]["file"], "notes.txt");
        assert!(
            r["details"]["ratio"].as_f64().unwrap_or(0.0) > 5.0,
            "{}",
            r["id"]
        );
    }
}

#[test]
fn findings_state_ratios_classes_and_links() {
    let findings = doc()["findings"].as_array().expect("findings");
    let texts: Vec<&str> = findings
        .iter()
        .filter(|f| f["area"] == "codec")
        .filter_map(|f| f["text"].as_str())
        .collect();
    let has = |s: &str| texts.iter().any(|t| t.contains(s));
    assert!(has("compressed size ratio"), "{texts:?}");
    assert!(has("fastest compressor per ratio class"), "{texts:?}");
    assert!(has("compressing before sending pays off"), "{texts:?}");
    assert!(has("random 1MiB: incompressible"), "{texts:?}");
    assert!(has("json: 40KiB and 1MiB inputs rank"), "{texts:?}");
    for f in findings {
        assert!(f["value"].as_f64().is_some_and(f64::is_finite), "{f}");
    }
}

/// Runs opcost in a fresh directory with a fresh XDG data home and checks
/// that it exits 2, says `expect`, and leaves no file behind.
fn refused(args: &[&str], expect: &str) {
    let (dir, home) = common::scratch("home");
    std::fs::create_dir(&home).expect("home");
    let out = Command::cargo_bin("opcost")
        .expect("binary built")
        .current_dir(dir.path())
        .env("XDG_DATA_HOME", &home)
        .env("TMPDIR", dir.path())
        .args(args)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(expect), "{args:?}: {stderr}");
    let left: Vec<_> = walk(dir.path());
    assert!(left.is_empty(), "{args:?} left files: {left:?}");
}

/// Every file and directory under `dir`, except the `home` directory the
/// test made itself (its contents are listed).
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("readable").flatten() {
        let p = e.path();
        if p.is_dir() && p.file_name().is_some_and(|n| n == "home") {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_missing_input_exits_2_naming_it_and_leaves_no_files() {
    refused(
        &[
            "run",
            "codec",
            "--input",
            "no-such-file.json",
            "--json",
            "out.json",
        ],
        "--input no-such-file.json",
    );
}

#[test]
fn an_unreadable_input_exits_2_before_measuring() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A directory is never readable as a file, whoever runs the test.
    let d = dir.path().to_string_lossy().into_owned();
    refused(&["run", "codec", "--input", &d], "not a regular file");
    if is_root() {
        return; // root reads a mode-000 file anyway
    }
    let f = dir.path().join("secret.bin");
    std::fs::write(&f, b"data").expect("write");
    std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o000))
        .expect("chmod");
    refused(
        &["run", "codec", "--input", &f.to_string_lossy()],
        "Permission denied",
    );
}

#[test]
fn an_empty_input_exits_2() {
    let (_dir, f) = common::scratch("empty.json");
    std::fs::write(&f, b"").expect("write");
    refused(&["run", "codec", "--input", &f.to_string_lossy()], "empty");
}

#[test]
fn an_input_with_no_codec_benchmark_selected_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = input_file(dir.path());
    let out = Command::cargo_bin("opcost")
        .expect("binary built")
        .args(["run", "syscall.getpid", "--no-save", "--input"])
        .arg(&f)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("codec.file"));
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
