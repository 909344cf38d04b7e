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
use opcost::document::RunDoc;
use predicates::prelude::*;

fn opcost(db: &Path) -> Command {
    let mut c = Command::cargo_bin("opcost").expect("the opcost binary");
    c.arg("--db").arg(db);
    c
}

/// Writes each of `docs` as JSON to `dir/NAME` and renders a report of them
/// all to `dir/out`: the report's path and opcost's stderr.
fn render(dir: &Path, docs: &[(String, &RunDoc)], out: &str) -> (PathBuf, String) {
    let mut files = Vec::new();
    for (name, d) in docs {
        let p = dir.join(name);
        d.write_json(&p).unwrap();
        files.push(p);
    }
    let out = dir.join(out);
    let assert = opcost(&dir.join("h.db"))
        .arg("report")
        .args(&files)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    (out, stderr)
}

/// Writes runs A and B as JSON and renders a report of both.
fn two_run_report(dir: &Path) -> (PathBuf, String) {
    let docs = [
        ("a.json".to_string(), &common::run_a()),
        ("b.json".to_string(), &common::run_b()),
    ];
    render(dir, &docs, "report.html")
}

#[test]
fn report_has_a_chart_per_figure_and_needs_no_network() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stderr) = two_run_report(dir.path());
    let html = std::fs::read_to_string(&out).unwrap();
    let figures = html.matches("<figure class=\"chart\"").count();
    // ipc bars, memory sweep, syscall bars; a forest plot per compared area.
    assert_eq!(figures, 6, "{stderr}");
    assert!(stderr.contains("6 charts"), "{stderr}");
    assert_eq!(html.matches("<svg").count(), figures);
    assert_eq!(html.matches("data-kind=\"sweep\"").count(), 1);
    assert_eq!(html.matches("data-kind=\"forest\"").count(), 3);
    // getpid is 2x slower in B, the pipe 2x faster: the forest plot says so.
    assert!(html.contains("× slower"), "getpid verdict");
    assert!(html.contains("× faster"), "pipe verdict");
    for fig in html.split("<figure class=\"chart\"").skip(1) {
        let svg = &fig[..fig.find("</svg>").expect("an svg in each figure")];
        assert!(svg.contains("<rect") || svg.contains("<polyline"), "{svg}");
        assert!(svg.contains("<text"), "charts have labels");
    }
    // Host blocks side by side, collapsed, the differing host name first
    // in its group and highlighted.
    assert!(html.contains("box-a") && html.contains("box-b"));
    let general = &html[html.find("<h3>general</h3>").expect("a general group")..];
    let first_row = &general[general.find("</tr>").unwrap() + 6..];
    assert!(
        first_row.starts_with("<tr class=\"diff\"><th>hostname</th>"),
        "{}",
        &first_row[..200]
    );
    assert!(
        html.contains("<section id=\"hosts\">\n<details>\n"),
        "collapsed by default"
    );
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
    let (dir, db) = common::scratch("h.db");
    opcost(&db).args(common::QUICK_RUN).assert().success();
    let out = dir.path().join("r.html");
    opcost(&db)
        .args(["report", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("1 run, 1 chart)"));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("syscall.function_call"));
}

#[test]
fn report_refuses_bad_requests() {
    let (dir, db) = common::scratch("h.db");
    let out = dir.path().join("r.html");
    common::fails_saying(
        opcost(&db).args(["report", "-o"]).arg(&out),
        2,
        &["no history there"],
    );
    drop(opcost::store::Store::open(&db).unwrap());
    common::fails_saying(
        opcost(&db).args(["report", "-o"]).arg(&out),
        2,
        &["no runs yet"],
    );
    common::fails_saying(
        opcost(&db)
            .args(["report", "-o"])
            .arg(dir.path().join("missing/r.html")),
        2,
        &["does not exist"],
    );
    let a = dir.path().join("a.json");
    common::run_a().write_json(&a).unwrap();
    common::fails_saying(
        opcost(&db)
            .arg("report")
            .arg(&a)
            .arg(&a)
            .arg("-o")
            .arg(&out),
        2,
        &["given twice"],
    );
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

/// Opens every `<details>`, measures every chart in the page, lists the
/// top-level sections in order, script errors and fetched resources.
const PROBE: &str = r#"<script>
(function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var out = { figures: 0, charts: [], errors: window.__probeErrors || [],
              sections: Array.prototype.map.call(document.querySelectorAll('body > section'),
                function (s) { return s.id || s.className; }),
              resources: performance.getEntriesByType('resource').map(function (r) { return r.name; }) };
  var figs = document.querySelectorAll('figure.chart');
  out.figures = figs.length;
  figs.forEach(function (f) {
    var s = f.querySelector('svg');
    if (!s) { out.charts.push(null); return; }
    var box = s.getBoundingClientRect(), bb = s.getBBox();
    out.charts.push({ w: box.width, h: box.height, bw: bb.width, bh: bb.height,
      shapes: s.querySelectorAll('rect,path,polyline,line,circle,polygon').length,
      texts: s.querySelectorAll('text').length });
  });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

const ERROR_TRAP: &str = "<script>window.__probeErrors = []; window.addEventListener('error', function (e) { window.__probeErrors.push(String(e.message)); });</script>";

/// Loads a copy of the report with the probe in headless Chromium and
/// checks what every report must satisfy there: each chart an SVG of real
/// size with shapes and text, no script error, nothing fetched, no console
/// error. Returns the probe's findings.
fn probe_in_browser(report: &Path, dir: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(report).unwrap();
    let figures = html.matches("<figure class=\"chart\"").count();
    // The probe goes into a copy; the report itself has no script.
    let probed = html
        .replacen("<head>", &format!("<head>\n{ERROR_TRAP}"), 1)
        .replacen("</body>", &format!("{PROBE}\n</body>"), 1);
    let probe_file = dir.join("probed.html");
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
    probe
}

/// A screenshot of the report at 1400 px wide (the top 2400 px), checked
/// to be a PNG of that width; kept in OPCOST_REPORT_KEEP when set.
fn screenshot(report: &Path, dir: &Path, name: &str) {
    let shot = dir.join(name);
    run_chromium(
        &format!("file://{}", report.display()),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2400".to_string(),
            "--hide-scrollbars".to_string(),
        ],
    );
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    assert_eq!(width, 1400);
    assert!(
        png.len() > 20_000,
        "the page has content ({} bytes)",
        png.len()
    );
    if let Some(keep) = std::env::var_os("OPCOST_REPORT_KEEP") {
        let keep = PathBuf::from(keep);
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&shot, keep.join(name)).unwrap();
        std::fs::copy(report, keep.join(name.replace(".png", ".html"))).unwrap();
    }
}

/// The ids of the report's sections, top down, as the browser probe saw them.
fn sections(probe: &serde_json::Value) -> Vec<&str> {
    probe["sections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.as_str())
        .collect()
}

/// The position of `needle` in `html`, or a failure naming it.
fn at(html: &str, needle: &str) -> usize {
    html.find(needle)
        .unwrap_or_else(|| panic!("{needle} is not in the report"))
}

#[test]
fn report_renders_its_charts_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = two_run_report(dir.path());
    let probe = probe_in_browser(&out, dir.path());
    assert!(probe["figures"].as_u64().unwrap() >= 6);
}

#[test]
fn a_core_to_core_matrix_is_a_heatmap_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = common::run_a();
    let cpus = vec![0usize, 1, 2, 3];
    let ns = (0..4)
        .map(|a: usize| {
            (0..4)
                .map(|b: usize| (a != b).then_some(if a / 2 == b / 2 { 40.0 } else { 160.0 }))
                .collect()
        })
        .collect();
    doc.matrix = Some(opcost::document::CoreMatrix {
        write: "cas".into(),
        cpus,
        sampling: "one CPU per core".into(),
        ns,
        per_pair_ms: 8.0,
        line: "the measuring CPU's node by first touch".into(),
        seconds: 0.2,
        interrupted: false,
    });
    let (out, stderr) = render(dir.path(), &[("m.json".to_string(), &doc)], "m.html");
    let html = std::fs::read_to_string(&out).unwrap();
    assert_eq!(html.matches("data-kind=\"heatmap\"").count(), 1, "{stderr}");
    assert!(html.contains("<a href=\"#matrix\">matrix</a>"));
    let findings = at(&html, "<section id=\"findings\">");
    assert!(at(&html, "<section id=\"matrix\">") < findings);
    let probe = probe_in_browser(&out, dir.path());
    assert!(sections(&probe).contains(&"matrix"), "{probe}");
}

#[test]
fn one_run_reads_top_down_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let docs = common::real_runs(1);
    let (out, _) = render(dir.path(), &[("a.json".to_string(), &docs[0])], "one.html");
    let html = std::fs::read_to_string(&out).unwrap();
    // Headline and score, then the areas, the findings, the hosts; no comparison.
    let glance = at(&html, "<section id=\"glance\">");
    assert!(at(&html, "<h3>score</h3>") > glance);
    assert!(!html.contains("<section id=\"comparison\">"));
    let area = at(&html, "<section class=\"area\"");
    let findings = at(&html, "<section id=\"findings\">");
    let hosts = at(&html, "<section id=\"hosts\">");
    assert!(glance < area && area < findings && findings < hosts);
    // The price list: the function call first, with its unit and gloss.
    let list = &html[glance..area];
    assert!(list.contains("function call<span class=\"id\">syscall.function_call</span>"));
    let row = &list[at(list, "function call<span")..];
    let row = &row[..at(row, "</tr>")];
    assert!(
        row.contains(" ns</td>") || row.contains(" ns~</td>"),
        "{row}"
    );
    assert!(row.contains("the smallest unit of work"), "{row}");
    // The shipped reference against itself: 1.00 everywhere.
    assert!(
        list.contains("<tr class=\"overall\"><th>overall</th><td class=\"num score\">1.00</td>")
    );
    let probe = probe_in_browser(&out, dir.path());
    let sections = sections(&probe);
    // The runs' legend is in the header; the first section is the glance.
    assert_eq!(sections.first(), Some(&"glance"), "{sections:?}");
    assert_eq!(sections.last(), Some(&"hosts"), "{sections:?}");
    let findings_at = sections.iter().position(|s| *s == "findings").unwrap();
    assert!(
        sections[1..findings_at]
            .iter()
            .all(|s| s.starts_with("area-")),
        "{sections:?}"
    );
    assert!(findings_at > 1, "{sections:?}");
    screenshot(&out, dir.path(), "report-1-run.png");
}

#[test]
fn three_runs_read_top_down_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let runs = common::real_runs(3);
    let docs: Vec<(String, &RunDoc)> = runs
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("r{i}.json"), d))
        .collect();
    let (out, _) = render(dir.path(), &docs, "three.html");
    let html = std::fs::read_to_string(&out).unwrap();
    let glance = at(&html, "<section id=\"glance\">");
    let comparison = at(&html, "<section id=\"comparison\">");
    let area = at(&html, "<section class=\"area\"");
    let findings = at(&html, "<section id=\"findings\">");
    let hosts = at(&html, "<section id=\"hosts\">");
    assert!(glance < comparison && comparison < area && area < findings && findings < hosts);
    // Each later run scored and compared: syscall is 0.8x the time in run 2
    // (score 1.25) and the geometric mean per area is shown.
    let cmp = &html[comparison..area];
    assert!(cmp.contains("data-kind=\"forest\""));
    assert!(
        cmp.contains("<th>syscall</th><td class=\"num faster\">0.80×"),
        "{}",
        &cmp[..cmp.len().min(3000)]
    );
    assert!(html[glance..comparison].contains("1.25 <span class=\"meta\">"));
    // Hosts: the differing hostname first in its group and highlighted.
    assert!(html[hosts..].contains("<tr class=\"diff\"><th>hostname</th>"));
    assert!(html[hosts..].contains("<h3>caches</h3>"));
    // Sweep series told apart by more than colour, and labelled at the end.
    assert!(
        html.contains("stroke-dasharray")
            || html.matches("<polyline").count() > html.matches("data-kind=\"sweep\"").count() * 3
    );
    let probe = probe_in_browser(&out, dir.path());
    let sections = sections(&probe);
    let pos = |id: &str| {
        sections
            .iter()
            .position(|s| *s == id)
            .unwrap_or_else(|| panic!("{id} in {sections:?}"))
    };
    assert!(
        pos("glance") < pos("comparison")
            && pos("comparison") < pos("findings")
            && pos("findings") < pos("hosts")
    );
    screenshot(&out, dir.path(), "report-3-runs.png");
}

#[test]
fn runs_of_one_host_over_time_get_a_trend_section_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let runs = common::trend_runs(24, 16);
    let docs: Vec<(String, &RunDoc)> = runs
        .iter()
        .map(|d| (format!("{}.json", d.run.id), d))
        .collect();
    let (out, _) = render(dir.path(), &docs, "report.html");
    let html = std::fs::read_to_string(&out).unwrap();
    // One chart: the series that stepped, its mark and what changed.
    assert_eq!(html.matches("data-kind=\"trend\"").count(), 1);
    assert_eq!(html.matches("class=\"change\"").count(), 1);
    assert!(html.contains("kernel 6.18.44 → 6.19.2"));
    assert!(html.contains(&format!("from run {}", runs[16].run.id)));
    assert!(at(&html, "<section id=\"trend\">") < at(&html, "id=\"findings\""));
    let probe = probe_in_browser(&out, dir.path());
    let sections = sections(&probe);
    assert!(sections.contains(&"trend"), "{sections:?}");
    screenshot(&out, dir.path(), "trend.png");
}
