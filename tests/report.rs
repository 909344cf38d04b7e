//! The HTML report: structure, self-containment, and rendering in a real
//! browser (headless Chromium): every chart an SVG with visible content,
//! no script error, nothing fetched. Chromium is required: without it the
//! browser test fails and says how to install it.
//!
//! Set OPCOST_REPORT_KEEP=DIR to keep the report and a screenshot of it.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;

fn opcost(db: &Path) -> Command {
    let mut c = Command::cargo_bin("opcost").expect("the opcost binary");
    c.arg("--db").arg(db);
    c
}

/// Writes runs A and B as JSON and renders a report of both.
fn two_run_report(dir: &Path) -> (PathBuf, String) {
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    common::run_a().write_json(&a).unwrap();
    common::run_b().write_json(&b).unwrap();
    let out = dir.join("report.html");
    let assert = opcost(&dir.join("h.db"))
        .arg("report")
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    (out, stderr)
}

#[test]
fn report_has_a_chart_per_figure_and_needs_no_network() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stderr) = two_run_report(dir.path());
    let html = std::fs::read_to_string(&out).unwrap();
    let figures = html.matches("<figure class=\"chart\"").count();
    // ipc bars, memory sweep, syscall bars.
    assert_eq!(figures, 3, "{stderr}");
    assert!(stderr.contains("3 charts"), "{stderr}");
    assert_eq!(html.matches("<svg").count(), figures);
    assert_eq!(html.matches("data-kind=\"sweep\"").count(), 1);
    for fig in html.split("<figure class=\"chart\"").skip(1) {
        let svg = &fig[..fig.find("</svg>").expect("an svg in each figure")];
        assert!(svg.contains("<rect") || svg.contains("<polyline"), "{svg}");
        assert!(svg.contains("<text"), "charts have labels");
    }
    // Host blocks side by side, the differing host name highlighted.
    assert!(html.contains("box-a") && html.contains("box-b"));
    assert!(html.contains("<tr class=\"diff\"><th>hostname</th>"));
    // Findings, noisy marks, only-in-one-run benchmarks.
    assert!(html.contains("a finding of aaaa0001") && html.contains("a finding of bbbb0002"));
    assert!(html.contains("class=\"num noisy\""));
    assert!(html.contains("syscall.only_in_b"));
    // Self-contained: no script, no stylesheet or image fetched, no URL
    // other than the SVG namespace.
    assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("src="));
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http:") && !without_ns.contains("https:"));
}

#[test]
fn report_of_a_real_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    opcost(&db)
        .args(["run", "syscall.function_call", "--profile", "quick"])
        .assert()
        .success();
    let out = dir.path().join("r.html");
    opcost(&db)
        .args(["report", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("1 runs, 1 charts"));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("syscall.function_call"));
}

#[test]
fn report_refuses_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let out = dir.path().join("r.html");
    opcost(&db)
        .args(["report", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no runs yet"));
    opcost(&db)
        .args(["report", "-o"])
        .arg(dir.path().join("missing/r.html"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist"));
    let a = dir.path().join("a.json");
    common::run_a().write_json(&a).unwrap();
    opcost(&db)
        .arg("report")
        .arg(&a)
        .arg(&a)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("given twice"));
    assert!(!out.exists());
}

/// Headless Chromium, or a failure that says how to install it.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("OPCOST_CHROMIUM") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "OPCOST_CHROMIUM={} is not a file; point it at chromium or unset it",
            p.display()
        );
        return p;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "the HTML report test needs a browser, and no chromium was found on PATH: \
         install it (Debian: apt-get install -y chromium) or set OPCOST_CHROMIUM to its path"
    );
}

/// Runs headless Chromium on `url` with `extra` arguments; (stdout, stderr).
fn run_chromium(url: &str, extra: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .timeout(Duration::from_secs(90))
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Measures every chart in the page and lists errors and fetched resources.
const PROBE: &str = r#"<script>
(function () {
  var out = { figures: 0, charts: [], errors: window.__probeErrors || [],
              resources: performance.getEntriesByType('resource').map(function (r) { return r.name; }) };
  var figs = document.querySelectorAll('figure.chart');
  out.figures = figs.length;
  figs.forEach(function (f) {
    var s = f.querySelector('svg');
    if (!s) { out.charts.push(null); return; }
    var box = s.getBoundingClientRect(), bb = s.getBBox();
    out.charts.push({ w: box.width, h: box.height, bw: bb.width, bh: bb.height,
      shapes: s.querySelectorAll('rect,path,polyline,line,circle').length,
      texts: s.querySelectorAll('text').length });
  });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

const ERROR_TRAP: &str = "<script>window.__probeErrors = []; window.addEventListener('error', function (e) { window.__probeErrors.push(String(e.message)); });</script>";

#[test]
fn report_renders_its_charts_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = two_run_report(dir.path());
    let html = std::fs::read_to_string(&out).unwrap();
    let figures = html.matches("<figure class=\"chart\"").count();
    assert!(figures >= 3);
    // The probe goes into a copy; the report itself has no script.
    let probed = html
        .replacen("<head>", &format!("<head>\n{ERROR_TRAP}"), 1)
        .replacen("</body>", &format!("{PROBE}\n</body>"), 1);
    let probe_file = dir.path().join("probed.html");
    std::fs::write(&probe_file, probed).unwrap();
    let url = format!("file://{}", probe_file.display());
    let (dom, log) = run_chromium(&url, &["--dump-dom".to_string()]);

    let start = dom.find("<pre id=\"probe\">").expect("the probe ran") + "<pre id=\"probe\">".len();
    let end = start + dom[start..].find("</pre>").expect("probe output ends");
    let text = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let probe: serde_json::Value = serde_json::from_str(&text).expect("probe JSON");
    assert_eq!(probe["figures"], figures);
    let charts = probe["charts"].as_array().unwrap();
    assert_eq!(charts.len(), figures);
    for c in charts {
        assert!(c.is_object(), "a figure without an svg: {probe}");
        for k in ["w", "h", "bw", "bh"] {
            assert!(c[k].as_f64().unwrap() > 50.0, "chart {k} too small: {c}");
        }
        assert!(c["shapes"].as_u64().unwrap() >= 5, "{c}");
        assert!(c["texts"].as_u64().unwrap() >= 3, "{c}");
    }
    assert_eq!(probe["errors"], serde_json::json!([]), "script errors");
    assert_eq!(
        probe["resources"],
        serde_json::json!([]),
        "fetched resources"
    );
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("error") || l.contains("uncaught") || l.contains("failed")
        })
        .collect();
    assert!(console.is_empty(), "console errors: {console:#?}");

    if let Some(keep) = std::env::var_os("OPCOST_REPORT_KEEP") {
        let keep = PathBuf::from(keep);
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&out, keep.join("report.html")).unwrap();
        for f in ["a.json", "b.json"] {
            std::fs::copy(dir.path().join(f), keep.join(f)).unwrap();
        }
        let shot = keep.join("report.png");
        run_chromium(
            &format!("file://{}", out.display()),
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1100,2600".to_string(),
            ],
        );
        assert!(shot.exists());
    }
}
