//! End-to-end tests of `opcost env`: the binary describes this machine as
//! JSON and as sectioned text, and agrees with what procfs and sysfs say.

mod common;

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn opcost() -> Command {
    Command::cargo_bin("opcost").expect("the opcost binary is built")
}

fn env_json() -> Value {
    let out = opcost().args(["env", "--json"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("env --json prints JSON")
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn non_empty_str<'a>(v: &'a Value, what: &str) -> &'a str {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {v}"));
    assert!(!s.trim().is_empty(), "{what} is empty");
    s
}

#[test]
fn env_json_has_the_machine_facts() {
    let h = env_json();
    non_empty_str(&h["hostname"], "hostname");
    non_empty_str(&h["cpu"]["model"], "cpu.model");
    non_empty_str(&h["cpu"]["arch"], "cpu.arch");
    assert!(h["logical_cpus"].as_u64().unwrap() > 0);
    assert!(h["mem_total_bytes"].as_u64().unwrap() > 0);
    assert!(h["mem_available_bytes"].as_u64().unwrap() <= h["mem_total_bytes"].as_u64().unwrap());
    assert!(h["vulnerabilities"].is_object());
    assert!(h["caches"].is_array());
    assert!(h["virt"].is_object());
    assert_eq!(
        non_empty_str(&h["software"]["opcost_version"], "opcost_version"),
        env!("CARGO_PKG_VERSION")
    );
    let release = non_empty_str(&h["kernel"]["release"], "kernel.release");
    if let Some(r) = read("/proc/sys/kernel/osrelease") {
        assert_eq!(release, r);
    }
}

#[test]
fn env_json_agrees_with_sysfs() {
    let h = env_json();
    let cs = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    match read(cs) {
        Some(c) => assert_eq!(h["clocksource"].as_str(), Some(c.as_str())),
        None => assert!(h["clocksource"].is_null()),
    }
    let dir = Path::new("/sys/devices/system/cpu/vulnerabilities");
    let vulns = h["vulnerabilities"].as_object().unwrap();
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut n = 0;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = read(&e.path().to_string_lossy()).unwrap_or_default();
            if text.is_empty() {
                continue;
            }
            n += 1;
            assert_eq!(vulns[&name].as_str(), Some(text.as_str()), "{name}");
        }
        assert_eq!(vulns.len(), n, "one entry per file");
    }
    if let Some(size) = read("/sys/devices/system/cpu/cpu0/cache/index0/size") {
        let kib: u64 = size.trim_end_matches('K').parse().unwrap();
        let sizes = common::numbers_of(&h, "caches", "size_bytes");
        assert!(sizes.contains(&(kib * 1024)), "{sizes:?} lacks {kib} KiB");
    }
}

#[test]
fn env_json_is_a_host_the_library_reads_back() {
    let out = opcost().args(["env", "--json"]).output().unwrap();
    let host: opcost::host::Host = serde_json::from_slice(&out.stdout).unwrap();
    assert!(host.logical_cpus > 0);
    assert!(host.cpu_ghz().is_none_or(|g| g > 0.0 && g.is_finite()));
}

#[test]
fn env_text_has_every_section() {
    let out = opcost().arg("env").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // The sections the library describes (their titles are pinned by its
    // own tests), each a title line of the command's output.
    let mut titles: Vec<String> = opcost::host::Host::default()
        .facts()
        .into_iter()
        .map(|f| f.section)
        .filter(|s| !s.is_empty())
        .collect();
    titles.dedup();
    assert_eq!(titles.len(), 12, "{titles:?}");
    for title in titles {
        assert!(
            text.lines().any(|l| l == title),
            "no section {title} in:\n{text}"
        );
    }
    assert!(text.starts_with("hostname"));
    assert!(text.contains(env!("CARGO_PKG_VERSION")));
    let topology: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Topology")
        .take_while(|l| !l.is_empty())
        .collect();
    common::assert_one_says(&topology, &["placement classes", "same-cpu ("]);
    assert!(
        topology.iter().any(|l| l.contains("CPUs ")),
        "the picture lists the CPUs: {topology:?}"
    );
}

/// The CPU numbers of a sysfs list (`0-3,6`).
fn cpu_list(text: &str) -> Vec<u64> {
    text.split(',')
        .filter(|p| !p.is_empty())
        .flat_map(|p| match p.split_once('-') {
            Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<u64>>(),
            None => vec![p.parse().unwrap()],
        })
        .collect()
}

#[test]
fn env_json_topology_is_the_usable_cpus_as_sysfs_groups_them() {
    let h = env_json();
    let t = &h["topology"];
    let cpus = common::numbers_of(t, "cpus", "cpu");
    // The child inherits this test's affinity mask.
    let status = read("/proc/self/status").unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|l| cpu_list(l.trim()))
        .unwrap();
    let online = read("/sys/devices/system/cpu/online").map(|l| cpu_list(&l));
    let expected: Vec<u64> = allowed
        .into_iter()
        .filter(|c| online.as_ref().is_none_or(|o| o.contains(c)))
        .collect();
    assert_eq!(cpus, expected);
    for p in t["cpus"].as_array().unwrap() {
        let cpu = p["cpu"].as_u64().unwrap();
        for index in 0..8 {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cache/index{index}");
            let level = read(&format!("{dir}/level"));
            if level.as_deref() == Some("3") {
                let list = read(&format!("{dir}/shared_cpu_list")).unwrap();
                let lowest = cpu_list(&list).into_iter().min();
                assert_eq!(p["l3"].as_u64(), lowest, "CPU {cpu}'s L3 group");
            }
        }
    }
    let classes = t["classes"].as_array().unwrap();
    assert_eq!(classes[0]["class"], "same-cpu");
    assert_eq!(classes[0]["a"], classes[0]["b"]);
    if cpus.len() > 1 {
        assert!(
            classes.len() >= 2,
            "two usable CPUs make a second class: {classes:?}"
        );
    }
}

#[test]
fn env_rejects_unknown_flags() {
    common::fails_saying(opcost().args(["env", "--jsn"]), 2, &["--json"]);
}

#[test]
fn a_run_document_carries_the_full_host() {
    let doc = common::run_doc(common::QUICK_RUN);
    let env = env_json();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&doc["host"]), keys(&env));
    assert_eq!(doc["host"]["kernel"], env["kernel"]);
    assert_eq!(doc["host"]["cpu"], env["cpu"]);
    assert_eq!(doc["host"]["topology"], env["topology"]);
    let warnings = doc["warnings"].as_array().unwrap();
    if env["virt"]["hypervisor"].is_string() {
        assert!(
            warnings
                .iter()
                .any(|w| w.as_str().unwrap().starts_with("virtual machine")),
            "{warnings:?}"
        );
    }
}

#[test]
fn secrets_never_reach_the_document_the_database_or_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (db, json, html) = (
        dir.path().join("h.db"),
        dir.path().join("run.json"),
        dir.path().join("report.html"),
    );
    let secrets = [
        ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIsecretvalue1"),
        ("PGPASSWORD", "hunter2secretvalue2"),
        ("CI_JOB_TOKEN", "glcbtsecretvalue3"),
        // Taken by the malloc prefix, yet secret-looking.
        ("MALLOC_TOKEN", "secretvalue4"),
    ];
    let mut run = opcost();
    run.arg("--db")
        .arg(&db)
        .env_remove("OPCOST_DB")
        .args(common::QUICK_RUN)
        .arg("--json")
        .arg(&json)
        .env("MALLOC_ARENA_MAX", "2");
    for (k, v) in secrets {
        run.env(k, v);
    }
    run.assert().success();
    opcost()
        .arg("--db")
        .arg(&db)
        .env_remove("OPCOST_DB")
        .args(["report", "-o"])
        .arg(&html)
        .assert()
        .success();
    let doc = common::read_json(&json);
    assert_eq!(
        doc["host"]["settings"]["env"]["MALLOC_ARENA_MAX"], "2",
        "the recorded variable"
    );
    let mut files = vec![json.clone(), html.clone()];
    files.extend(
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains("h.db")),
    );
    assert!(files.len() >= 3, "{files:?}");
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for (k, v) in secrets {
            assert!(!text.contains(v), "{v} of {k} is in {}", f.display());
            assert!(!text.contains(k), "{k} is named in {}", f.display());
        }
    }
    // The database holds the run and its settings.
    let html_text = std::fs::read_to_string(&html).unwrap();
    assert!(
        html_text.contains("MALLOC_ARENA_MAX"),
        "the report shows the setting"
    );
}
