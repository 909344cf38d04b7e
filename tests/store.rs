//! The history: round trip, migrations, refusals of foreign or newer files,
//! import idempotence, run specs, compare on runs with known ratios, and the
//! exit codes and messages of bad input. Every test uses its own temp dir
//! as the history (`--db` or XDG_DATA_HOME), never the real home.

mod common;

use std::path::Path;

use assert_cmd::Command;
use opcost::analysis::compare::{Change, compare};
use opcost::document::RunDoc;
use opcost::store::{Saved, Store, schema};
use predicates::prelude::*;

fn opcost(db: &Path) -> Command {
    let mut c = Command::cargo_bin("opcost").expect("the opcost binary");
    c.arg("--db").arg(db);
    c
}

fn write(doc: &RunDoc, dir: &Path, name: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    doc.write_json(&p).expect("write a document");
    p
}

#[test]
fn run_save_load_round_trip_is_exact() {
    let (_dir, db) = common::scratch("h.db");
    let mut store = Store::open(&db).unwrap();
    let a = common::run_a();
    assert_eq!(store.save(&a, None).unwrap(), Saved::New);
    assert_eq!(store.load(&a.run.id).unwrap(), a);
    // Awkward floats survive exactly.
    let mut b = common::run_b();
    b.results[0].samples = vec![0.1 + 0.2, 1e-300, 123_456_789.123_456_78, f64::MIN_POSITIVE];
    b.results[0].median = std::f64::consts::PI;
    store.save(&b, None).unwrap();
    drop(store);
    let store = Store::open(&db).unwrap();
    assert_eq!(store.load(&b.run.id).unwrap(), b);
}

#[test]
fn a_real_run_is_saved_and_loads_back_equal() {
    let (dir, db) = common::scratch("h.db");
    let json = dir.path().join("run.json");
    opcost(&db)
        .args(common::QUICK_RUN)
        .args(["--json"])
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains("saved as run"));
    let written = RunDoc::read_json(&json).unwrap();
    let store = Store::open(&db).unwrap();
    assert_eq!(store.load(&written.run.id).unwrap(), written);
    // `show` prints it, `runs` lists it.
    common::prints(
        opcost(&db).args(["show", &written.run.id[..5]]),
        &["syscall.function_call"],
    );
    opcost(&db)
        .arg("runs")
        .assert()
        .success()
        .stdout(predicate::str::contains(&written.run.id))
        .stdout(predicate::str::contains("1 run in"));
}

#[test]
fn no_save_leaves_no_history_and_xdg_data_home_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::cargo_bin("opcost").unwrap();
    c.env("XDG_DATA_HOME", dir.path())
        .args(common::QUICK_RUN)
        .args(["--no-save"])
        .assert()
        .success()
        .stderr(predicate::str::contains("saved as").not());
    assert!(!dir.path().join("opcost").exists());
    let mut c = Command::cargo_bin("opcost").unwrap();
    c.env("XDG_DATA_HOME", dir.path())
        .args(common::QUICK_RUN)
        .args(["--format", "csv"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("run,host,id,area,unit,median"));
    let store = Store::open(&dir.path().join("opcost/results.db")).unwrap();
    assert_eq!(store.count().unwrap(), 1);
}

#[test]
fn a_history_of_schema_1_migrates_and_its_runs_still_load() {
    let (_dir, db) = common::scratch("v1.db");
    let doc = common::run_a();
    {
        // A history as the first opcost wrote it: schema 1, one run.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "application_id", schema::APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute(
            "INSERT INTO runs (id, started, duration_s, profile, label, hostname, cpu_model,
                opcost_version, doc_schema, interrupted, n_results, n_skipped, saved, source,
                host, doc)
             VALUES (?1, ?2, 1.0, 'quick', NULL, ?3, NULL, '0.1.0', 1, 0, ?4, 0, ?2, NULL, '{}', ?5)",
            rusqlite::params![
                doc.run.id,
                doc.run.started,
                doc.host.hostname,
                doc.results.len() as i64,
                serde_json::to_string(&doc).unwrap()
            ],
        )
        .unwrap();
    }
    let store = Store::open(&db).unwrap();
    assert_eq!(store.version().unwrap(), schema::latest());
    assert_eq!(store.load(&doc.run.id).unwrap(), doc);
    let rows = store.list(None, 0).unwrap();
    assert!(rows[0].complete, "an old run is a complete one");
}

#[test]
fn runs_record_the_topology_and_those_from_before_it_still_load() {
    let (dir, db) = common::scratch("h.db");
    let a = common::run_a();
    assert!(a.host.topology.is_known(), "today's host carries the model");
    let json = serde_json::to_value(&a).unwrap();
    assert!(json["host"]["topology"]["classes"][0]["class"] == "same-cpu");

    // A document written before the model: no host.topology.
    let mut old = json.clone();
    old["host"].as_object_mut().unwrap().remove("topology");
    let file = dir.path().join("old.json");
    std::fs::write(&file, serde_json::to_string(&old).unwrap()).unwrap();
    opcost(&db)
        .arg("import")
        .arg(&file)
        .assert()
        .success()
        .stderr(predicate::str::contains("1 imported"));
    let mut expected = a.clone();
    expected.host.topology = Default::default();
    assert_eq!(Store::open(&db).unwrap().load(&a.run.id).unwrap(), expected);

    // A history written before the model: its rows lack it in both columns.
    let (_dir2, db2) = common::scratch("h2.db");
    Store::open(&db2).unwrap().save(&a, None).unwrap();
    {
        // Edited here, not in SQL: the store's SQLite is built without
        // its JSON functions.
        let conn = rusqlite::Connection::open(&db2).unwrap();
        let (host, doc): (String, String) = conn
            .query_row("SELECT host, doc FROM runs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        let mut host: serde_json::Value = serde_json::from_str(&host).unwrap();
        let mut doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert!(host.as_object_mut().unwrap().remove("topology").is_some());
        assert!(
            doc["host"]
                .as_object_mut()
                .unwrap()
                .remove("topology")
                .is_some()
        );
        let n = conn
            .execute(
                "UPDATE runs SET host = ?1, doc = ?2",
                [host.to_string(), doc.to_string()],
            )
            .unwrap();
        assert_eq!(n, 1);
    }
    let store = Store::open(&db2).unwrap();
    assert_eq!(store.load(&a.run.id).unwrap(), expected);
    assert_eq!(store.list(None, 0).unwrap().len(), 1);
    drop(store);
    common::prints(
        opcost(&db2).args(["show", &a.run.id[..5]]),
        &["syscall.function_call"],
    );
}

#[test]
fn migrations_run_from_an_empty_file_and_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    // Missing file, in a missing directory.
    let db = dir.path().join("new/dir/h.db");
    let store = Store::open(&db).unwrap();
    assert_eq!(store.version().unwrap(), schema::latest());
    assert_eq!(store.count().unwrap(), 0);
    drop(store);
    // Reopening changes nothing.
    assert_eq!(
        Store::open(&db).unwrap().version().unwrap(),
        schema::latest()
    );
    // An empty (0-byte) file is an empty database.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let store = Store::open(&empty).unwrap();
    assert_eq!(store.version().unwrap(), schema::latest());
    let conn = rusqlite::Connection::open(&empty).unwrap();
    let app: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app, schema::APPLICATION_ID);
    for table in ["runs", "results", "findings"] {
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1, "table {table}");
    }
}

#[test]
fn results_are_queryable_by_benchmark_id() {
    let (_dir, db) = common::scratch("h.db");
    let mut store = Store::open(&db).unwrap();
    store.save(&common::run_a(), None).unwrap();
    store.save(&common::run_b(), None).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT r.hostname, x.median, x.unit FROM results x JOIN runs r ON r.id = x.run_id
             WHERE x.bench_id = 'syscall.getpid.raw' ORDER BY r.started",
        )
        .unwrap();
    let rows: Vec<(String, f64, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].0, "box-a");
    assert_eq!(rows[1].2, "ns/op");
    assert!(rows[1].1 > rows[0].1 * 1.5);
}

#[test]
fn a_newer_history_is_refused_and_left_alone() {
    let (_dir, db) = common::scratch("h.db");
    drop(Store::open(&db).unwrap());
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let e = Store::open(&db).unwrap_err().to_string();
    assert!(e.contains("newer") && e.contains("upgrade opcost"), "{e}");
    common::fails_saying(opcost(&db).arg("runs"), 1, &["schema version 99"]);
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn a_foreign_sqlite_database_is_refused() {
    let (_dir, db) = common::scratch("other.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    common::fails_saying(opcost(&db).arg("runs"), 1, &["not an opcost history"]);
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn a_text_file_as_db_is_refused_and_not_overwritten() {
    let (dir, db) = common::scratch("notes.txt");
    std::fs::write(&db, "my precious notes\n").unwrap();
    for args in [
        vec!["runs"],
        vec!["run", "syscall.function_call", "--profile", "quick"],
    ] {
        common::fails_saying(
            opcost(&db).args(&args),
            1,
            &["is not an SQLite database", "--db"],
        );
    }
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "my precious notes\n");
    // A directory is refused too.
    common::fails_saying(opcost(dir.path()).arg("runs"), 1, &["is a directory"]);
}

#[test]
fn a_corrupt_history_says_what_to_do() {
    let (_dir, db) = common::scratch("h.db");
    let mut store = Store::open(&db).unwrap();
    store.save(&common::run_a(), None).unwrap();
    drop(store);
    // Keep the header, destroy the pages after it.
    let mut bytes = std::fs::read(&db).unwrap();
    for b in bytes.iter_mut().skip(100) {
        *b = 0xa5;
    }
    std::fs::write(&db, &bytes).unwrap();
    opcost(&db)
        .arg("runs")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("corrupt").or(predicate::str::contains("not an")));
    assert_eq!(std::fs::read(&db).unwrap(), bytes);
}

#[test]
fn import_is_idempotent_and_conflicts_are_refused() {
    let (dir, db) = common::scratch("h.db");
    let a = write(&common::run_a(), dir.path(), "a.json");
    let b = write(&common::run_b(), dir.path(), "b.json");
    opcost(&db)
        .arg("import")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stderr(predicate::str::contains("2 imported, 0 already present"));
    opcost(&db)
        .arg("import")
        .arg(&a)
        .assert()
        .success()
        .stderr(predicate::str::contains("already in the history"))
        .stderr(predicate::str::contains("0 imported, 1 already present"));
    let store = Store::open(&db).unwrap();
    assert_eq!(store.count().unwrap(), 2);
    assert_eq!(store.load("aaaa0001").unwrap(), common::run_a());
    drop(store);
    // Same id, different content: refused, nothing changed.
    let mut changed = common::run_a();
    changed.run.label = Some("edited".into());
    let c = write(&changed, dir.path(), "changed.json");
    common::fails_saying(
        opcost(&db).arg("import").arg(&c),
        1,
        &["changed.json", "a different run with id aaaa0001"],
    );
    assert_eq!(
        Store::open(&db).unwrap().load("aaaa0001").unwrap(),
        common::run_a()
    );
    common::prints(opcost(&db).arg("runs"), &["imported from"]);
}

#[test]
fn import_of_a_directory_takes_every_json_file_in_it() {
    let (dir, db) = common::scratch("h.db");
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(runs.join("nested")).unwrap();
    write(&common::run_a(), &runs, "a.json");
    write(&common::run_b(), &runs, "b.json");
    std::fs::write(runs.join("notes.txt"), "not a run").unwrap();
    let mut deeper = common::run_a();
    deeper.run.id = "cccc0003".into();
    write(&deeper, &runs.join("nested"), "c.json");
    opcost(&db)
        .arg("import")
        .arg(&runs)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "2 imported, 0 already present, 0 failed",
        ));
    assert_eq!(Store::open(&db).unwrap().count().unwrap(), 2);
    // A directory without documents is named, and is a usage error.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    common::fails_saying(
        opcost(&db).arg("import").arg(&empty),
        2,
        &["empty: a directory with no .json file"],
    );
}

#[test]
fn malformed_documents_are_named_with_their_problem() {
    let (dir, db) = common::scratch("h.db");
    let good = serde_json::to_string_pretty(&common::run_a()).unwrap();
    let truncated = dir.path().join("truncated.json");
    std::fs::write(&truncated, &good[..good.len() / 2]).unwrap();
    common::fails_saying(
        opcost(&db).arg("import").arg(&truncated),
        1,
        &["truncated.json", "invalid JSON"],
    );

    let future = dir.path().join("future.json");
    std::fs::write(&future, good.replacen("\"schema\": 1", "\"schema\": 99", 1)).unwrap();
    common::fails_saying(
        opcost(&db).arg("import").arg(&future),
        1,
        &["future.json", "schema version 99 is newer"],
    );

    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"name": "not a run"}"#).unwrap();
    common::fails_saying(
        opcost(&db).arg("import").arg(&other),
        1,
        &["not an opcost run document"],
    );

    common::fails_saying(
        opcost(&db)
            .arg("import")
            .arg(dir.path().join("missing.json")),
        2,
        &["no such file"],
    );

    // The same files given to compare fail the same way.
    common::fails_saying(
        opcost(&db).arg("compare").arg(&truncated).arg(&future),
        1,
        &["truncated.json"],
    );
    assert_eq!(Store::open(&db).unwrap().count().unwrap(), 0);
}

#[test]
fn run_specs_resolve_prefixes_latest_and_hosts() {
    let (_dir, db) = common::scratch("h.db");
    let mut store = Store::open(&db).unwrap();
    let mut a2 = common::run_a();
    a2.run.id = "aaaa0777".into();
    a2.run.started = "2026-01-03T00:00:00Z".into();
    store.save(&common::run_a(), None).unwrap();
    store.save(&common::run_b(), None).unwrap();
    store.save(&a2, None).unwrap();
    drop(store);
    let show = |spec: &str| {
        let out = opcost(&db)
            .args(["show", spec, "--format", "json"])
            .output()
            .unwrap();
        (
            out.status.code(),
            RunDoc::from_json(&String::from_utf8_lossy(&out.stdout))
                .ok()
                .map(|d| d.run.id),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    assert_eq!(show("bbbb").1.as_deref(), Some("bbbb0002"));
    assert_eq!(show("AAAA0001").1.as_deref(), Some("aaaa0001"));
    assert_eq!(show("latest").1.as_deref(), Some("aaaa0777"));
    assert_eq!(show("host:box-a").1.as_deref(), Some("aaaa0777"));
    assert_eq!(show("host:box-b").1.as_deref(), Some("bbbb0002"));
    let (code, _, err) = show("aaaa");
    assert_eq!(code, Some(2));
    assert!(
        err.contains("ambiguous") && err.contains("aaaa0001"),
        "{err}"
    );
    let (code, _, err) = show("ffff");
    assert_eq!(code, Some(2));
    assert!(err.contains("no run id starts with 'ffff'"), "{err}");
    let (code, _, err) = show("host:nowhere");
    assert_eq!(code, Some(2));
    assert!(err.contains("no run of host 'nowhere'"), "{err}");
    let (code, _, err) = show("not-a-run");
    assert_eq!(code, Some(2));
    assert!(err.contains("is not a run"), "{err}");
}

#[test]
fn an_empty_history_says_how_to_fill_it() {
    let (_dir, db) = common::scratch("h.db");
    drop(Store::open(&db).unwrap());
    common::prints(opcost(&db).arg("runs"), &["no runs"]);
    common::fails_saying(opcost(&db).arg("show"), 2, &["no runs yet"]);
}

#[test]
fn commands_that_read_never_create_a_history() {
    let (dir, _) = common::scratch("h.db");
    let db = dir.path().join("missing").join("r.db");
    let a = write(&common::run_a(), dir.path(), "a.json");
    let reads: [&[&str]; 8] = [
        &["runs"],
        &["show", "latest"],
        &["export", "latest"],
        &["compare", "latest", "latest"],
        &["report", "latest", "-o", "out.html"],
        &["trend"],
        &["fleet"],
        &["push", "--to", "elsewhere.db"],
    ];
    for args in reads {
        let mut cmd = opcost(&db);
        cmd.current_dir(dir.path()).args(args);
        common::fails_saying(&mut cmd, 2, &["missing/r.db: no history there"]);
    }
    // A file as the other side still needs the history for `latest`.
    common::fails_saying(
        opcost(&db).arg("compare").arg(&a).arg("latest"),
        2,
        &["no history there"],
    );
    assert!(
        !dir.path().join("missing").exists(),
        "a read-only command created the history's directory"
    );
    assert!(!dir.path().join("elsewhere.db").exists());
    // Import adds runs, and so creates it.
    opcost(&db).arg("import").arg(&a).assert().success();
    assert!(db.exists());
}

#[test]
fn compare_finds_known_ratios() {
    let (a, b) = (common::run_a(), common::run_b());
    let c = compare(&a, &b, &[], 0.05);
    let row = |id: &str| c.rows.iter().find(|r| r.id == id).unwrap();

    let getpid = row("syscall.getpid.raw");
    assert_eq!(getpid.verdict, Change::Slower);
    assert!((getpid.ratio - 2.0).abs() < 0.1, "{}", getpid.ratio);
    assert!(getpid.ci_low <= getpid.ratio && getpid.ratio <= getpid.ci_high);
    assert!(getpid.ci_low > 1.8 && getpid.ci_high < 2.2);

    let same = row("syscall.same");
    assert_eq!(same.verdict, Change::Same);
    assert_eq!((same.ratio, same.ci_low, same.ci_high), (1.0, 1.0, 1.0));

    assert_eq!(row("syscall.function_call").verdict, Change::Same);
    assert_eq!(row("syscall.noisy").verdict, Change::Same);

    // Twice the bytes per second is faster.
    let pipe = row("ipc.pipe.throughput");
    assert_eq!(pipe.verdict, Change::Faster);
    assert!((pipe.ratio - 2.0).abs() < 0.1);
    assert!((pipe.time_ratio() - 0.5).abs() < 0.05);

    // The sweep is 1.4x slower at every point.
    assert!(
        c.rows
            .iter()
            .filter(|r| r.area == "memory")
            .all(|r| r.verdict == Change::Slower)
    );
    let mem = c.summaries.iter().find(|s| s.area == "memory").unwrap();
    assert!((mem.geomean_time_ratio - 1.4).abs() < 0.05, "{mem:?}");
    assert_eq!(mem.slower, 8);
    let ipc = c.summaries.iter().find(|s| s.area == "ipc").unwrap();
    assert!((ipc.geomean_time_ratio - 0.5).abs() < 0.05);
    assert_eq!(c.summaries.last().unwrap().area, "all");

    assert_eq!(c.only_a, vec!["syscall.only_in_a"]);
    assert_eq!(c.only_b, vec!["syscall.only_in_b"]);

    // A pattern narrows it; identical runs are the same everywhere.
    let c = compare(&a, &b, &["ipc".to_string()], 0.05);
    assert_eq!(c.rows.len(), 1);
    let c = compare(&a, &a, &[], 0.05);
    assert!(c.rows.iter().all(|r| r.verdict == Change::Same));
}

#[test]
fn compare_without_samples_uses_the_stored_intervals() {
    let (mut a, mut b) = (common::run_a(), common::run_b());
    for m in a.results.iter_mut().chain(b.results.iter_mut()) {
        m.samples.clear();
    }
    let c = compare(&a, &b, &[], 0.05);
    let getpid = c
        .rows
        .iter()
        .find(|r| r.id == "syscall.getpid.raw")
        .unwrap();
    assert_eq!(
        getpid.method,
        opcost::analysis::compare::CiMethod::MedianCis
    );
    assert_eq!(getpid.verdict, Change::Slower);
    assert!(getpid.ci_low < getpid.ratio && getpid.ratio < getpid.ci_high);
}

#[test]
fn compare_prints_text_markdown_csv_and_json() {
    let (dir, db) = common::scratch("h.db");
    let a = write(&common::run_a(), dir.path(), "a.json");
    let b = write(&common::run_b(), dir.path(), "b.json");
    let run = |fmt: &str| {
        let out = opcost(&db)
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--format", fmt])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run("text");
    assert!(text.contains("syscall.getpid.raw") && text.contains("slower"));
    assert!(text.contains("only in A: syscall.only_in_a"));
    assert!(text.contains("geometric mean"));

    let md = run("md");
    assert!(md.contains("| `syscall.getpid.raw` |"));
    assert!(md.contains("## only in B"));

    let csv = run("csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "id,area,unit,a,b,ratio,ci_low,ci_high,verdict,method,noisy_a,noisy_b,mde"
    );
    let getpid = csv
        .lines()
        .find(|l| l.starts_with("syscall.getpid.raw,"))
        .unwrap();
    assert!(getpid.contains(",slower,bootstrap,"), "{getpid}");
    assert!(
        csv.lines()
            .any(|l| l.starts_with("syscall.only_in_b,") && l.contains("only_b"))
    );

    // A run compared with itself is named as one run, in every format.
    let same = opcost(&db).arg("compare").arg(&a).arg(&a).output().unwrap();
    let same = String::from_utf8(same.stdout).unwrap();
    assert!(same.contains("A and B are one run (aaaa0001)"), "{same}");

    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!(json["a"]["id"], "aaaa0001");
    assert!(json["rows"].as_array().unwrap().len() >= 10);

    // Comparing two files never creates the history.
    assert!(!db.exists());

    // Bad threshold is a usage error.
    opcost(&db)
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--threshold", "-3"])
        .assert()
        .code(2);
}

#[test]
fn export_round_trips_and_writes_other_formats() {
    let (dir, db) = common::scratch("h.db");
    Store::open(&db)
        .unwrap()
        .save(&common::run_a(), None)
        .unwrap();
    let out = dir.path().join("export.json");
    opcost(&db)
        .args(["export", "aaaa", "-o"])
        .arg(&out)
        .assert()
        .success();
    assert_eq!(RunDoc::read_json(&out).unwrap(), common::run_a());
    common::prints(
        opcost(&db).args(["export", "latest", "--format", "md"]),
        &["# opcost run aaaa0001 on box-a", "- a finding of aaaa0001"],
    );
    let out = opcost(&db)
        .args(["export", "latest", "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8(out.stdout).unwrap();
    assert_eq!(csv.lines().count(), 1 + common::run_a().results.len());
    common::fails_saying(
        opcost(&db)
            .args(["export", "latest", "-o"])
            .arg(dir.path().join("no/such/dir/x.json")),
        2,
        &["does not exist"],
    );
}

#[test]
fn concurrent_writers_do_not_lose_runs() {
    let (_dir, db) = common::scratch("h.db");
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut store = Store::open(&db).unwrap();
                for i in 0..5 {
                    let mut d = common::run_a();
                    d.run.id = format!("{t:04x}{i:04x}");
                    store.save(&d, None).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(Store::open(&db).unwrap().count().unwrap(), 20);
}

#[test]
fn compare_fail_on_gates_the_exit_code_and_prints_the_offenders_first() {
    let (dir, db) = common::scratch("g.db");
    let a = write(&common::run_a(), dir.path(), "a.json");
    let b = write(&common::run_b(), dir.path(), "b.json");
    // B's getpid takes twice A's time: the gate fails, and says why first.
    let (text, _) = common::exits_with(
        opcost(&db)
            .args(["compare", "--fail-on", "slower:10"])
            .arg(&a)
            .arg(&b),
        1,
    );
    assert!(text.starts_with("gate FAILED"), "{text}");
    let gate = text.split("\n\n").next().unwrap();
    assert!(gate.contains("syscall.getpid.raw"), "{gate}");
    assert!(
        !gate.contains("ipc.pipe.throughput"),
        "faster never fails: {gate}"
    );
    // A run against itself is no gate: refused, naming the run.
    common::fails_saying(
        opcost(&db)
            .args(["compare", "--fail-on", "slower", "--fail-on", "area"])
            .arg(&a)
            .arg(&a),
        2,
        &["aaaa0001 is on both sides"],
    );
    // Another run with the same figures passes, and says so first.
    let mut twin = common::run_a();
    twin.run.id = "aaaa0009".into();
    let twin = write(&twin, dir.path(), "twin.json");
    opcost(&db)
        .args(["compare", "--fail-on", "slower", "--fail-on", "area"])
        .arg(&a)
        .arg(&twin)
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("gate passed"));
    // A limit above the change passes it.
    opcost(&db)
        .args(["compare", "--fail-on", "slower:150"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(0);
    // With a document format the gate goes to standard error, and the
    // document stays parseable.
    let out = opcost(&db)
        .args(["compare", "--format", "json", "--fail-on", "slower"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("gate FAILED"))
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON on stdout");
    assert!(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["mde"].is_number())
    );
    // Bad gates and dashboard formats are usage errors.
    common::fails_saying(
        opcost(&db)
            .args(["compare", "--fail-on", "faster"])
            .arg(&a)
            .arg(&b),
        2,
        &["slower[:PCT] or area[:PCT]"],
    );
    common::fails_saying(
        opcost(&db)
            .args(["compare", "--format", "bmf"])
            .arg(&a)
            .arg(&b),
        2,
        &["describe one run"],
    );
}

/// What `opcost show --format FORMAT FILE` prints, parsed as JSON.
fn show_json(db: &Path, format: &str, file: &Path) -> serde_json::Value {
    let out = opcost(db)
        .args(["show", "--format", format])
        .arg(file)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{format} is not JSON: {e}"))
}

#[test]
fn show_writes_a_run_for_dashboards() {
    let (dir, db) = common::scratch("d.db");
    let run = common::run_a();
    let a = write(&run, dir.path(), "a.json");
    let v = show_json(&db, "bmf", &a);
    let obj = v.as_object().unwrap();
    assert_eq!(obj.len(), run.results.len());
    assert!(obj["syscall.getpid.raw"]["latency"]["value"].is_number());
    assert!(obj["ipc.pipe.throughput"]["bytes-per-second"]["lower_value"].is_number());
    let v = show_json(&db, "github-benchmark", &a);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), run.results.len());
    for e in arr {
        assert_eq!(e["unit"], "ns/op");
        assert!(e["value"].as_f64().unwrap() > 0.0);
        assert!(e["name"].is_string() && e["range"].is_string());
    }
}
