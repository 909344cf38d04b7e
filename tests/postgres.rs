//! The PostgreSQL history against a real, throw-away server (see tests/pg):
//! round trip and migrations, refusals, push (idempotent) and the read
//! commands on the pushed runs, the same rows as SQLite, the fleet view of
//! 200 hosts, and connection failures that neither lose a run nor show a
//! password. Without the PostgreSQL binaries these tests fail.

mod common;
mod pg;

use std::path::Path;

use assert_cmd::Command;
use opcost::document::RunDoc;
use opcost::store::postgres::PgStore;
use opcost::store::{History, Location, PgUrl, Saved, Store, schema};
use predicates::prelude::*;

fn opcost(db: &str, home: &Path) -> Command {
    let mut c = Command::cargo_bin("opcost").expect("the opcost binary");
    c.arg("--db")
        .arg(db)
        .env("XDG_DATA_HOME", home)
        .env_remove("OPCOST_DB");
    c
}

fn url(s: &str) -> PgUrl {
    PgUrl::parse(s).expect("a URL")
}

#[test]
fn store_round_trip_migrations_and_refusals() {
    let c = pg::Cluster::start(&[]);
    let u = url(&c.new_database("store"));
    let mut s = PgStore::open(&u).unwrap();
    assert_eq!(s.version().unwrap(), schema::latest());
    assert_eq!(schema::PG_MIGRATIONS.len(), schema::MIGRATIONS.len());
    let a = common::run_a();
    let mut b = common::run_b();
    b.results[0].samples = vec![0.1 + 0.2, 1e-300, 123_456_789.123_456_78, f64::MIN_POSITIVE];
    assert_eq!(s.save(&a, Some("a.json")).unwrap(), Saved::New);
    assert_eq!(s.save(&b, None).unwrap(), Saved::New);
    assert_eq!(s.save(&a, None).unwrap(), Saved::AlreadyPresent);
    let mut other = a.clone();
    other.run.label = Some("another run".into());
    let e = s.save(&other, None).unwrap_err();
    assert!(
        format!("{e:#}").contains("different run with id aaaa0001"),
        "{e:#}"
    );
    assert_eq!(s.load(&a.run.id).unwrap(), a);
    assert_eq!(
        s.load(&b.run.id).unwrap(),
        b,
        "awkward floats survive exactly"
    );
    assert_eq!(s.count().unwrap(), 2);
    assert_eq!(s.latest(None).unwrap().as_deref(), Some("bbbb0002"));
    assert_eq!(
        s.latest(Some("box-a")).unwrap().as_deref(),
        Some("aaaa0001")
    );
    let rows = s.list(None, 0).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].source.as_deref(), Some("a.json"));
    assert_eq!(rows[0].n_results, b.results.len() as i64);
    assert_eq!(
        s.find_prefix("AAAA").unwrap(),
        opcost::store::Prefix::One("aaaa0001".into())
    );
    assert!(s.load("ffffffff").is_err());
    drop(s);

    // Opening again (and from two threads at once) migrates nothing twice.
    let fresh = url(&c.new_database("fresh"));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let u = fresh.clone();
            std::thread::spawn(move || PgStore::open(&u).map(|mut s| s.version().unwrap()))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), schema::latest());
    }

    // A history of schema 1 migrates, and its runs still load.
    let old = url(&c.new_database("old"));
    {
        let mut raw = postgres::Client::connect(old.secret(), postgres::NoTls).unwrap();
        raw.batch_execute("CREATE SCHEMA opcost; SET search_path TO opcost;")
            .unwrap();
        raw.batch_execute(schema::PG_MIGRATIONS[0]).unwrap();
        raw.batch_execute("UPDATE schema_version SET version = 1")
            .unwrap();
        let mut d = common::run_a();
        d.run.id = "01d00001".into();
        let text = serde_json::to_string(&d).unwrap();
        raw.execute(
            "INSERT INTO runs (id, started, duration_s, profile, label, hostname, cpu_model,
                opcost_version, doc_schema, interrupted, n_results, n_skipped, saved, source, host, doc)
             VALUES ($1, $2, 1, 'quick', NULL, 'box-a', NULL, '0.0.0', 1, false, 0, 0,
                '2025-01-01T00:00:00Z', NULL, '{}'::jsonb, $3)",
            &[&d.run.id, &d.run.started, &text],
        )
        .unwrap();
    }
    let mut s = PgStore::open(&old).unwrap();
    assert_eq!(s.version().unwrap(), schema::latest());
    assert_eq!(s.load("01d00001").unwrap().run.id, "01d00001");
    assert!(s.list(None, 0).unwrap()[0].complete);
    drop(s);

    // A newer history and a foreign `opcost` schema are refused, unchanged.
    let newer = url(&c.new_database("newer"));
    drop(PgStore::open(&newer).unwrap());
    {
        let mut raw = postgres::Client::connect(newer.secret(), postgres::NoTls).unwrap();
        raw.batch_execute("UPDATE opcost.schema_version SET version = 99")
            .unwrap();
    }
    let e = PgStore::open(&newer).unwrap_err();
    assert!(format!("{e:#}").contains("newer than this opcost"), "{e:#}");
    let foreign = url(&c.new_database("alien"));
    {
        let mut raw = postgres::Client::connect(foreign.secret(), postgres::NoTls).unwrap();
        raw.batch_execute("CREATE SCHEMA opcost; CREATE TABLE opcost.runs (x int)")
            .unwrap();
    }
    let e = PgStore::open(&foreign).unwrap_err();
    assert!(format!("{e:#}").contains("not an opcost history"), "{e:#}");
}

#[test]
fn push_is_idempotent_and_every_read_command_works_on_the_pushed_runs() {
    let c = pg::Cluster::start(&[]);
    let shared = c.new_database("shared");
    let (home, local) = common::scratch("local.db");
    let local_s = local.to_str().unwrap();
    {
        let mut s = Store::open(&local).unwrap();
        for d in [common::run_a(), common::run_b()] {
            s.save(&d, None).unwrap();
        }
        // A run that died midway is not pushed.
        let mut dying = common::run_a();
        dying.run.id = "dead0001".into();
        dying.results.clear();
        s.begin(&mut dying).unwrap();
    }
    opcost(local_s, home.path())
        .args(["push", "--to", &shared])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "2 pushed, 0 already there, 0 incomplete, 0 failed",
        ));
    opcost(local_s, home.path())
        .args(["push", "aaaa", "bbbb0002", "dead", "--to", &shared])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "0 pushed, 2 already there, 1 incomplete, 0 failed",
        ));

    // runs, show, export, compare, report against the database.
    common::prints(
        opcost(&shared, home.path()).arg("runs"),
        &["aaaa0001", "bbbb0002", "2 runs in postgresql:///shared"],
    );
    common::prints(
        opcost(&shared, home.path()).args(["show", "aaaa"]),
        &["syscall.getpid.raw"],
    );
    let exported = opcost(&shared, home.path())
        .args(["export", "host:box-b"])
        .output()
        .unwrap();
    assert!(exported.status.success());
    let back = RunDoc::from_json(std::str::from_utf8(&exported.stdout).unwrap()).unwrap();
    assert_eq!(back, common::run_b(), "a pushed run comes back equal");
    common::prints(
        opcost(&shared, home.path()).args([
            "compare",
            "aaaa0001",
            "bbbb0002",
            "syscall.getpid",
            "--format",
            "csv",
        ]),
        &["syscall.getpid.raw", "slower"],
    );
    let html = home.path().join("r.html");
    opcost(&shared, home.path())
        .args(["report", "aaaa0001", "bbbb0002", "-o"])
        .arg(&html)
        .assert()
        .success();
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("id=\"fleet\""), "two hosts: a fleet section");
    assert!(text.contains("box-a") && text.contains("box-b"));

    // The environment names the history as well as --db.
    let mut env = Command::cargo_bin("opcost").unwrap();
    env.env("OPCOST_DB", &shared)
        .env("XDG_DATA_HOME", home.path())
        .args(["runs", "--host", "box-a"])
        .assert()
        .success()
        .stdout(predicate::str::contains("aaaa0001"))
        .stdout(predicate::str::contains("bbbb0002").not());

    // Import straight into the database, and a conflicting id is refused.
    let mut clash = common::run_a();
    clash.run.label = Some("not the same".into());
    let f = home.path().join("clash.json");
    clash.write_json(&f).unwrap();
    common::fails_saying(
        opcost(&shared, home.path()).arg("import").arg(&f),
        1,
        &["different run with id aaaa0001"],
    );

    // Pushing from the database to a new SQLite file works the other way.
    let copy = home.path().join("copy.db");
    opcost(&shared, home.path())
        .args(["push", "@all", "--to", copy.to_str().unwrap()])
        .assert()
        .success()
        .stderr(predicate::str::contains("2 pushed"));

    // The same logical rows in both stores.
    let mut pg = postgres::Client::connect(&shared, postgres::NoTls).unwrap();
    let q = "SELECT bench_id, unit, median, n_samples, n_rounds FROM opcost.results
             WHERE run_id = 'aaaa0001' ORDER BY seq";
    let pg_rows: Vec<(String, String, Option<f64>, i64, i64)> = pg
        .query(q, &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect();
    let lite = rusqlite::Connection::open(&local).unwrap();
    let mut st = lite
        .prepare(&q.replace("opcost.results", "results"))
        .unwrap();
    let lite_rows: Vec<(String, String, Option<f64>, i64, i64)> = st
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!pg_rows.is_empty());
    assert_eq!(pg_rows, lite_rows);

    // Usage errors.
    common::fails_saying(
        opcost(local_s, home.path()).args(["push", "--to", local_s]),
        2,
        &["the history the runs come from"],
    );
    opcost(local_s, home.path())
        .args(["push", "--to", "mysql://u:hunter2@h/x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("hunter2").not());
    common::fails_saying(
        opcost(local_s, home.path()).args(["push", "x.json", "--to", &shared]),
        2,
        &["opcost import"],
    );
}

#[test]
fn fleet_of_200_hosts_on_postgres_finds_the_clocksource_outlier() {
    let c = pg::Cluster::start(&[]);
    let shared = c.new_database("fleet");
    let home = tempfile::tempdir().unwrap();
    let mut h = History::open(Some(&Location::parse(&shared).unwrap())).unwrap();
    let runs = common::fleet_runs(200, 42);
    let mut items = runs
        .iter()
        .map(|d| Ok(opcost::store::Incoming::new(d.clone())));
    let out = h.save_all(&mut items).unwrap();
    assert_eq!(out.iter().filter(|o| o.result.is_ok()).count(), 200);
    drop(h);
    opcost(&shared, home.path())
        .args(["fleet", "--label", "fleet-test"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Test CPU 9000 · kernel 6.1.0-test · 200 hosts",
        ))
        .stdout(predicate::str::contains("node-042: clock read (vDSO)"))
        .stdout(predicate::str::contains("clocksource hpet (group: tsc)"))
        .stdout(predicate::str::contains("node-041:").not());
}

#[test]
fn trend_on_postgres_gives_what_it_gives_on_sqlite() {
    let c = pg::Cluster::start(&[]);
    let shared = c.new_database("trend");
    let (home, local) = common::scratch("trend.db");
    let runs = common::trend_runs(24, 16);
    for db in [shared.clone(), local.display().to_string()] {
        let mut h = History::open(Some(&Location::parse(&db).unwrap())).unwrap();
        let mut items = runs
            .iter()
            .map(|d| Ok(opcost::store::Incoming::new(d.clone())));
        let out = h.save_all(&mut items).unwrap();
        assert_eq!(out.iter().filter(|o| o.result.is_ok()).count(), 24);
    }
    let json = |db: &str| {
        let out = common::succeeded(
            opcost(db, home.path())
                .args(["trend", "--format", "json", "--since", "2026-03-02"])
                .output()
                .unwrap(),
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let pg = json(&shared);
    assert_eq!(pg, json(&local.display().to_string()));
    let v: serde_json::Value = serde_json::from_str(&pg).unwrap();
    let a = &v["series"][0];
    assert_eq!(
        (a["id"].as_str(), a["runs"].as_u64()),
        (Some("syscall.a.raw"), Some(23))
    );
    assert_eq!(a["change_points"][0]["run"], runs[16].run.id.as_str());
    assert_eq!(a["change_points"][0]["env_changes"][0]["fact"], "kernel");
    common::fails_saying(
        opcost(&shared, home.path()).args(["trend", "--host", "nosuch"]),
        2,
        &["its hosts: vm"],
    );
}

#[test]
fn an_unreachable_database_is_a_clear_error_and_the_run_is_kept_locally() {
    let home = tempfile::tempdir().unwrap();
    // Port 1 on loopback: nothing listens there.
    let bad = "postgres://alice:hunter2@127.0.0.1:1/opcost?connect_timeout=5";
    opcost(bad, home.path())
        .arg("runs")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot connect to the PostgreSQL history",
        ))
        .stderr(predicate::str::contains(
            "postgres://alice:***@127.0.0.1:1/opcost",
        ))
        .stderr(predicate::str::contains("hunter2").not());
    opcost(bad, home.path())
        .args(common::QUICK_RUN)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("saved as run"))
        .stderr(predicate::str::contains("push"))
        .stderr(predicate::str::contains("hunter2").not());
    let local = home.path().join("opcost/results.db");
    let s = Store::open(&local).unwrap();
    assert_eq!(s.count().unwrap(), 1, "the run is in the local history");
    // A URL the driver cannot read is a usage error, without its password.
    opcost(
        "postgres://alice:hunter2@h/x?sslmode=sometimes",
        home.path(),
    )
    .arg("runs")
    .assert()
    .code(2)
    .stderr(predicate::str::contains("hunter2").not());
}

#[test]
fn a_run_with_a_database_url_is_saved_locally_and_copied() {
    let c = pg::Cluster::start(&[]);
    let shared = c.new_database("runs");
    let home = tempfile::tempdir().unwrap();
    opcost(&shared, home.path())
        .args(common::QUICK_RUN)
        .args(["--label", "copied"])
        .assert()
        .success()
        .stderr(predicate::str::contains("saved as run"))
        .stderr(predicate::str::contains("copied run"));
    let local = Store::open(&home.path().join("opcost/results.db")).unwrap();
    let id = local.latest(None).unwrap().expect("a local run");
    let mut pg = PgStore::open(&url(&shared)).unwrap();
    assert_eq!(pg.load(&id).unwrap(), local.load(&id).unwrap());
}

#[test]
fn tls_is_used_when_the_url_requires_it_and_the_certificate_is_checked() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let (c, cert) = pg::Cluster::start_tls(port);
    let (home, ca) = common::scratch("ca.pem");
    std::fs::write(&ca, cert).unwrap();
    let tls = format!("postgres://opcost:hunter2@127.0.0.1:{port}/postgres?sslmode=require");
    // Trusted (the certificate is the trust store): connects, over TLS.
    opcost(&tls, home.path())
        .env("SSL_CERT_FILE", &ca)
        .arg("runs")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "no runs in postgres://opcost:***@127.0.0.1",
        ));
    // The server logged opcost's connection as TLS.
    let log = c.log();
    assert!(
        log.lines()
            .any(|l| l.contains("application_name=opcost") && l.contains("SSL enabled")),
        "{log}"
    );
    // Another authority's certificate in the trust store: refused, with the
    // reason and without the password.
    let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let other_ca = home.path().join("other.pem");
    std::fs::write(&other_ca, other.cert.pem()).unwrap();
    opcost(&tls, home.path())
        .env("SSL_CERT_FILE", &other_ca)
        .arg("runs")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot connect to the PostgreSQL history",
        ))
        .stderr(predicate::str::contains("certificate"))
        .stderr(predicate::str::contains("hunter2").not());
    // Without sslmode the same server is reached in the clear.
    let plain = format!("postgres://opcost@127.0.0.1:{port}/postgres");
    opcost(&plain, home.path()).arg("runs").assert().success();
}

#[test]
fn a_test_that_panics_leaves_no_server_and_no_directory_behind() {
    let dir = std::thread::spawn(|| {
        let c = pg::Cluster::start(&[]);
        std::panic::panic_any(c.socket_dir().to_path_buf())
    })
    .join()
    .expect_err("the thread panicked");
    let dir = dir
        .downcast::<std::path::PathBuf>()
        .expect("the cluster's directory");
    assert!(!dir.exists(), "{} is still there", dir.display());
}
