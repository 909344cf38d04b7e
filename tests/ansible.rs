//! The Ansible playbook of deploy/ansible, run for real against this
//! machine (`-i localhost, -c local`): it copies the binary, runs a tiny
//! pattern at the quick profile with a label, pushes the run to a
//! throw-away PostgreSQL and fetches its JSON document back. Fails when
//! ansible-playbook or PostgreSQL is missing (scripts/install-test-deps.sh
//! installs both).

mod common;

mod pg;

use std::path::Path;
use std::process::Command;

use opcost::document::RunDoc;
use opcost::store::PgUrl;
use opcost::store::postgres::PgStore;

#[test]
fn the_playbook_runs_pushes_and_fetches_on_localhost() {
    let playbook = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/ansible/opcost.yml");
    let ansible = which::which("ansible-playbook").unwrap_or_else(|_| {
        panic!("ansible-playbook is not installed: run scripts/install-test-deps.sh")
    });
    let c = pg::Cluster::start(&[]);
    let shared = c.new_database("fleet");
    let (work, fetched) = common::scratch("fetched");
    let vars = serde_json::json!({
        "opcost_binary": env!("CARGO_BIN_EXE_opcost"),
        "opcost_patterns": "syscall.getpid*",
        "opcost_profile": "quick",
        "opcost_label": "ansible-test",
        "opcost_db": shared,
        "opcost_fetch_dir": fetched,
        "opcost_data_home": work.path().join("data"),
        "opcost_remote_dir": work.path().join("remote"),
    });
    let vars_file = work.path().join("vars.json");
    std::fs::write(&vars_file, vars.to_string()).unwrap();
    let out = Command::new(ansible)
        .arg("-i")
        .arg("localhost,")
        .args(["-c", "local"])
        .arg(&playbook)
        .arg("-e")
        .arg(format!("@{}", vars_file.display()))
        .env("ANSIBLE_LOCAL_TEMP", work.path().join("ansible-local"))
        .env("ANSIBLE_REMOTE_TEMP", work.path().join("ansible-remote"))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_PYTHON_INTERPRETER", "auto_silent")
        .env_remove("OPCOST_DB")
        .output()
        .expect("ansible-playbook runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("failed=0"), "{stdout}");

    // The document came back, with the label and only the chosen benchmarks.
    let doc = RunDoc::read_json(&fetched.join("localhost.json")).unwrap();
    assert_eq!(doc.run.label.as_deref(), Some("ansible-test"));
    assert!(!doc.results.is_empty());
    assert!(
        doc.results
            .iter()
            .all(|m| m.id.starts_with("syscall.getpid"))
    );
    // The same run is in the shared database and in the host's own history.
    let mut s = PgStore::open(&PgUrl::parse(&shared).unwrap()).unwrap();
    assert_eq!(s.load(&doc.run.id).unwrap(), doc);
    assert!(work.path().join("data/opcost/results.db").exists());
    // The scratch directory is gone.
    assert!(!work.path().join("remote").exists());
    // And the fleet view of the database shows the host.
    let fleet = Command::new(env!("CARGO_BIN_EXE_opcost"))
        .args([
            "--db",
            &shared,
            "fleet",
            "--label",
            "ansible-test",
            "syscall",
        ])
        .output()
        .unwrap();
    assert!(fleet.status.success());
    assert!(String::from_utf8_lossy(&fleet.stdout).contains(&doc.host.hostname));
}
