//! `opcost trend` on an SQLite history: a step in one benchmark found at
//! its run with the kernel change named, none in the other; JSON, text,
//! Markdown and CSV; an unknown host and a series too short; the fleet
//! view flagging a host that changed alone in its group. (The same
//! on PostgreSQL is in tests/postgres.rs.)

mod common;

use std::path::Path;

use assert_cmd::Command;
use opcost::store::{Incoming, Store};
use predicates::prelude::*;

fn history(db: &Path, runs: &[opcost::document::RunDoc]) {
    let mut store = Store::open(db).unwrap();
    let mut items = runs.iter().map(|d| Ok(Incoming::new(d.clone())));
    let out = store.save_all(&mut items).unwrap();
    assert!(out.iter().all(|o| o.result.is_ok()));
}

fn opcost(db: &Path) -> Command {
    let mut c = Command::cargo_bin("opcost").unwrap();
    c.arg("--db").arg(db).env_remove("OPCOST_DB");
    c
}

/// What `opcost ARGS` prints, as JSON, failing on a failure.
fn json_of(db: &Path, args: &[&str]) -> serde_json::Value {
    let out = opcost(db).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_step_is_found_at_its_run_with_the_kernel_change() {
    let (_dir, db) = common::scratch("h.db");
    let runs = common::trend_runs(24, 16);
    history(&db, &runs);
    let v = json_of(&db, &["trend", "syscall", "--format", "json"]);
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    let a = series.iter().find(|s| s["id"] == "syscall.a.raw").unwrap();
    let b = series.iter().find(|s| s["id"] == "syscall.b.raw").unwrap();
    assert_eq!(
        (a["host"].as_str(), a["profile"].as_str()),
        (Some("vm"), Some("quick"))
    );
    assert_eq!(a["runs"], 24);
    assert_eq!(b["change_points"].as_array().unwrap().len(), 0, "{b}");
    let cps = a["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{a}");
    let c = &cps[0];
    assert_eq!(c["run"], runs[16].run.id.as_str());
    assert_eq!(c["started"], runs[16].run.started.as_str());
    let (r, lo, hi) = (
        c["ratio"].as_f64().unwrap(),
        c["ci_low"].as_f64().unwrap(),
        c["ci_high"].as_f64().unwrap(),
    );
    assert!(1.0 < lo && lo < r && r < hi, "{c}");
    assert!((r - 1.08).abs() < 0.02, "{c}");
    let env = c["env_changes"].as_array().unwrap();
    assert_eq!(env.len(), 1, "{env:?}");
    assert_eq!(env[0]["fact"], "kernel");
    assert_eq!(
        (env[0]["before"].as_str(), env[0]["after"].as_str()),
        (Some("6.18.44"), Some("6.19.2"))
    );

    // Text: one line, naming the run, the change and the kernel.
    opcost(&db)
        .args(["trend", "--host", "vm"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("syscall.a.raw")
                .and(predicate::str::contains(runs[16].run.id.as_str()))
                .and(predicate::str::contains("slower"))
                .and(predicate::str::contains("kernel 6.18.44 → 6.19.2"))
                .and(predicate::str::contains("1 change point in 1 of 2 series")),
        );
    common::prints(
        opcost(&db).args(["trend", "--format", "md"]),
        &["| syscall.a.raw |"],
    );
    let csv = opcost(&db)
        .args(["trend", "--format", "csv"])
        .output()
        .unwrap();
    let text = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.starts_with("host,profile,benchmark"), "{text}");

    // --since after the step: nothing changed since.
    common::prints(
        opcost(&db).args(["trend", "--since", "2026-03-17"]),
        &["0 change points in 0 of 2 series"],
    );
}

#[test]
fn an_unknown_host_is_refused_naming_the_hosts() {
    let (_dir, db) = common::scratch("h.db");
    history(&db, &common::trend_runs(3, 10));
    opcost(&db)
        .args(["trend", "--host", "nosuch"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no host 'nosuch'").and(predicate::str::contains("vm")));
    common::fails_saying(
        opcost(&db).args(["trend", "--since", "March"]),
        2,
        &["'--since <DATE>'", "give a date"],
    );
    common::fails_saying(
        opcost(&db).args(["trend", "nosuch.bench"]),
        2,
        &["matches nosuch.bench"],
    );
}

#[test]
fn a_series_too_short_is_said_not_an_error() {
    let (_dir, db) = common::scratch("h.db");
    history(&db, &common::trend_runs(4, 2));
    common::prints(
        opcost(&db).arg("trend"),
        &["2 series with fewer than 6 runs"],
    );
    let out = opcost(&db)
        .args(["trend", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["series"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["analysed"] == false)
    );
}

#[test]
fn the_fleet_flags_a_host_that_changed_alone_in_its_group() {
    let (_dir, db) = common::scratch("h.db");
    let mut runs = Vec::new();
    for (k, name) in ["vm", "vm2", "vm3"].iter().enumerate() {
        // Only vm steps at run 17, with a new microcode; one kernel for all.
        let shift_from = if k == 0 { 16 } else { 100 };
        for mut d in common::trend_runs(24, shift_from) {
            let after = d.host.kernel.release.as_deref() == Some("6.19.2");
            d.host.kernel.release = Some("6.18.44".into());
            d.host.cpu.microcode = Some(if after { "0xb2" } else { "0xb1" }.into());
            d.host.hostname = name.to_string();
            d.run.id = format!("{:x}{}", k + 1, &d.run.id[1..]);
            runs.push(d);
        }
    }
    history(&db, &runs);
    let v = json_of(&db, &["fleet", "syscall", "--format", "json"]);
    let hosts = v["groups"][0]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    for h in hosts {
        let changes = h["changes"].as_array().unwrap();
        if h["hostname"] == "vm" {
            assert_eq!(changes.len(), 1, "{h}");
            assert_eq!(changes[0]["benchmark"], "syscall.a.raw");
            assert_eq!(changes[0]["point"]["env_changes"][0]["fact"], "microcode");
        } else {
            assert!(changes.is_empty(), "{h}");
        }
    }
    opcost(&db)
        .args(["fleet", "syscall"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "changed in their history, alone in their group:",
        ))
        .stdout(predicate::str::contains(
            "vm: syscall.a.raw from 2026-03-17",
        ))
        .stdout(predicate::str::contains("microcode 0xb1 → 0xb2"));
}
