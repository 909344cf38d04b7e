//! `opcost fleet` on an SQLite history: 200 synthetic hosts, one of which
//! has another clocksource; it must be the one flagged, with the
//! clocksource named. (The same view on PostgreSQL is in tests/postgres.rs.)

mod common;

use assert_cmd::Command;
use opcost::store::Store;
use predicates::prelude::*;

#[test]
fn the_outlier_of_200_hosts_is_found_and_its_clocksource_named() {
    let (_dir, db) = common::scratch("fleet.db");
    let mut store = Store::open(&db).unwrap();
    let runs = common::fleet_runs(200, 137);
    let mut items = runs
        .iter()
        .map(|d| Ok(opcost::store::Incoming::new(d.clone())));
    let out = store.save_all(&mut items).unwrap();
    assert_eq!(out.len(), 200);
    assert!(out.iter().all(|o| o.result.is_ok()));
    drop(store);

    let json = common::succeeded(
        Command::cargo_bin("opcost")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(["fleet", "--format", "json"])
            .output()
            .unwrap(),
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "one CPU model, one kernel");
    let hosts = groups[0]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 200);
    let flagged: Vec<&serde_json::Value> = hosts
        .iter()
        .filter(|h| !h["flags"].as_array().unwrap().is_empty())
        .collect();
    assert_eq!(flagged.len(), 1, "only the outlier: {flagged:?}");
    assert_eq!(flagged[0]["hostname"], "node-137");
    let diffs = flagged[0]["differences"].as_array().unwrap();
    assert!(
        diffs
            .iter()
            .any(|d| d["fact"] == "clocksource" && d["host"] == "hpet" && d["group"] == "tsc"),
        "{diffs:?}"
    );
    // The flagged figure is the clock read, worse, about 60x the median.
    let cols = v["columns"].as_array().unwrap();
    let flag = &flagged[0]["flags"][0];
    let col = &cols[flag["column"].as_u64().unwrap() as usize];
    assert_eq!(col["label"], "clock read (vDSO)");
    assert_eq!(flag["worse"], true);
    let ratio = flag["ratio"].as_f64().unwrap();
    assert!(ratio > 20.0 && ratio < 200.0, "{ratio}");

    // The text view names it too, and patterns choose the columns.
    Command::cargo_bin("opcost")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["fleet", "syscall.clock*"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "node-137: syscall.clock_gettime.monotonic.vdso",
        ))
        .stdout(predicate::str::contains("clocksource hpet (group: tsc)"))
        .stdout(predicate::str::contains("200 hosts in 1 group "));
}

#[test]
fn fleet_refuses_what_it_cannot_show() {
    let (_dir, db) = common::scratch("fleet.db");
    let opcost = || {
        let mut c = Command::cargo_bin("opcost").unwrap();
        c.arg("--db").arg(&db);
        c
    };
    common::fails_saying(opcost().arg("fleet"), 2, &["no history there"]);
    let mut store = Store::open(&db).unwrap();
    common::fails_saying(opcost().arg("fleet"), 2, &["no complete run"]);
    for d in common::fleet_runs(3, 0) {
        store.save(&d, None).unwrap();
    }
    drop(store);
    common::fails_saying(
        opcost().args(["fleet", "--label", "other"]),
        2,
        &["no complete run labelled 'other'"],
    );
    common::fails_saying(
        opcost().args(["fleet", "nosuchbench"]),
        2,
        &["no benchmark"],
    );
    opcost()
        .args(["fleet", "--label", "fleet-test", "--format", "csv"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("host,cpu_model,kernel,run,"));
    opcost()
        .args(["fleet", "--format", "md"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "## Test CPU 9000 · kernel 6.1.0-test · 3 hosts",
        ));
}

#[test]
fn a_report_of_several_hosts_has_the_fleet_section_with_the_outlier() {
    let (dir, db) = common::scratch("fleet.db");
    let mut store = Store::open(&db).unwrap();
    let runs = common::fleet_runs(6, 3);
    for d in &runs {
        store.save(d, None).unwrap();
    }
    drop(store);
    let html = dir.path().join("r.html");
    let mut cmd = Command::cargo_bin("opcost").unwrap();
    cmd.arg("--db").arg(&db).arg("report");
    for d in &runs {
        cmd.arg(&d.run.id);
    }
    cmd.arg("-o").arg(&html).assert().success();
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("<a href=\"#fleet\">fleet</a>"));
    let section = &text[text.find("<section id=\"fleet\">").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("6 hosts"), "{section}");
    assert_eq!(section.matches("flagged\">").count(), 1, "{section}");
    assert!(section.contains("<b>node-003</b>"));
    assert!(section.contains("clocksource hpet (group: tsc)"));
}
