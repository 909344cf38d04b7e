//! The Ansible playbook of deploy/ansible, run for real against this
//! machine (`-i localhost, -c local`): it copies the binary, runs a tiny
//! pattern at the quick profile with a label, pushes the run to a
//! throw-away PostgreSQL and fetches its JSON document back; and in check
//! mode against an inventory of hosts of several architectures and
//! kernels (faked in the inventory, all this machine): each host is given
//! its architecture's bundle, and the hosts opcost cannot run on fail
//! alone, saying why. Fails when ansible-playbook or PostgreSQL is missing
//! (scripts/install-test-deps.sh installs both).

mod common;

mod pg;

use std::path::Path;
use std::process::Command;

use opcost::document::RunDoc;
use opcost::store::PgUrl;
use opcost::store::postgres::PgStore;

/// The playbook and the ansible-playbook command.
/// `ansible-playbook PLAYBOOK -e @VARS` with its temporary directories
/// under `work` and no colours; the caller adds the inventory and the rest.
fn ansible_run(ansible: &Path, playbook: &Path, work: &Path, vars: &serde_json::Value) -> Command {
    let vars_file = work.join("vars.json");
    std::fs::write(&vars_file, vars.to_string()).unwrap();
    let mut cmd = Command::new(ansible);
    cmd.arg(playbook)
        .arg("-e")
        .arg(format!("@{}", vars_file.display()))
        .env("ANSIBLE_LOCAL_TEMP", work.join("ansible-local"))
        .env("ANSIBLE_REMOTE_TEMP", work.join("ansible-remote"))
        .env("ANSIBLE_NOCOLOR", "1");
    cmd
}

fn playbook() -> (std::path::PathBuf, std::path::PathBuf) {
    let playbook = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/ansible/opcost.yml");
    let ansible = which::which("ansible-playbook").unwrap_or_else(|_| {
        panic!("ansible-playbook is not installed: run scripts/install-test-deps.sh")
    });
    (playbook, ansible)
}

#[test]
fn the_playbook_runs_pushes_and_fetches_on_localhost() {
    let (playbook, ansible) = playbook();
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
    let out = ansible_run(&ansible, &playbook, work.path(), &vars)
        .arg("-i")
        .arg("localhost,")
        .args(["-c", "local"])
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

/// Writes release bundles `opcost-9.9.9-ARCH-linux.tar.gz` into `dir`, each
/// holding `content` as its opcost, and their SHA256SUMS; returns each
/// binary's sha256 in hex.
fn bundles(dir: &Path, archs: &[(&str, &str)]) -> Vec<String> {
    use sha2::Digest;
    let hex = |b: &[u8]| {
        sha2::Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    };
    let mut sums = String::new();
    let mut binaries = Vec::new();
    for (arch, content) in archs {
        let name = format!("opcost-9.9.9-{arch}-linux");
        std::fs::create_dir_all(dir.join(&name)).unwrap();
        std::fs::write(dir.join(&name).join("opcost"), content).unwrap();
        std::fs::write(dir.join(&name).join("README.md"), "# opcost\n").unwrap();
        let tar = Command::new("tar")
            .arg("-C")
            .arg(dir)
            .args(["-czf", &format!("{name}.tar.gz"), &name])
            .current_dir(dir)
            .status()
            .expect("tar runs");
        assert!(tar.success());
        std::fs::remove_dir_all(dir.join(&name)).unwrap();
        let tarball = std::fs::read(dir.join(format!("{name}.tar.gz"))).unwrap();
        sums.push_str(&format!("{}  {name}.tar.gz\n", hex(&tarball)));
        binaries.push(hex(content.as_bytes()));
    }
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
    binaries
}

/// The PLAY RECAP line of `host`.
fn recap<'a>(stdout: &'a str, host: &str) -> &'a str {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("PLAY RECAP"))
        .find(|l| l.split_whitespace().next() == Some(host))
        .unwrap_or_else(|| panic!("no recap line for {host}:\n{stdout}"))
}

#[test]
fn check_mode_gives_each_host_its_architectures_binary_and_names_the_hosts_it_cannot_serve() {
    let (playbook, ansible) = playbook();
    let work = tempfile::tempdir().unwrap();
    let dist = work.path().join("dist");
    std::fs::create_dir(&dist).unwrap();
    let sums = bundles(
        &dist,
        &[
            ("x86_64", "#!/bin/sh\necho x86_64 stand-in\n"),
            ("aarch64", "#!/bin/sh\necho aarch64 stand-in\n"),
        ],
    );
    // Every host is this machine; the inventory gives each the
    // architecture and kernel its facts would report.
    let inventory = work.path().join("inventory");
    let host = "ansible_connection=local ansible_python_interpreter=auto_silent";
    std::fs::write(
        &inventory,
        format!(
            "intel {host} ansible_architecture=x86_64 ansible_kernel=6.1.0-13-amd64\n\
             graviton {host} ansible_architecture=aarch64 ansible_kernel=6.1.0-13-arm64\n\
             pi {host} ansible_architecture=arm64 ansible_kernel=6.6.31+rpt-rpi-v8\n\
             sifive {host} ansible_architecture=riscv64 ansible_kernel=6.1.0\n\
             centos6 {host} ansible_architecture=x86_64 ansible_kernel=2.6.32-754.el6.x86_64\n"
        ),
    )
    .unwrap();
    let remote = work.path().join("remote");
    let vars = serde_json::json!({
        "opcost_bundles": dist,
        "opcost_fetch_dir": work.path().join("fetched"),
        "opcost_remote_dir": remote,
    });
    let out = ansible_run(&ansible, &playbook, work.path(), &vars)
        .arg("--check")
        .arg("-i")
        .arg(&inventory)
        .env("ANSIBLE_FORKS", "5")
        .output()
        .expect("ansible-playbook runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A debug message (`ok: [host] => {` then `"msg": ...`) or a failure's
    // (`fatal: [host]: FAILED! => {... "msg": ...}` on one line).
    let said = |host: &str, msg: &str| {
        stdout.contains(&format!("ok: [{host}] => {{\n    \"msg\": \"{msg}\""))
            || stdout.lines().any(|l| {
                l.starts_with(&format!("fatal: [{host}]: FAILED!"))
                    && l.contains(&format!("\"msg\": \"{msg}\""))
            })
    };
    // Each host is given its own architecture's binary, named with its checksum.
    assert!(
        said(
            "intel",
            &format!(
                "x86_64 host: opcost-9.9.9-x86_64-linux/opcost (sha256 {})",
                sums[0]
            )
        ),
        "{stdout}"
    );
    for arm in ["graviton", "pi"] {
        assert!(
            said(
                arm,
                &format!(
                    "aarch64 host: opcost-9.9.9-aarch64-linux/opcost (sha256 {})",
                    sums[1]
                )
            ),
            "{stdout}"
        );
    }
    // The hosts it cannot serve fail, saying why, and only they.
    assert!(
        said(
            "sifive",
            "opcost is not built for this host's architecture (riscv64): the bundles are for aarch64 and x86_64"
        ),
        "{stdout}"
    );
    assert!(
        said(
            "centos6",
            "the host's kernel (2.6.32-754.el6.x86_64) is too old for opcost, which needs Linux 3.2 or newer on x86_64"
        ),
        "{stdout}"
    );
    for ok in ["intel", "graviton", "pi"] {
        assert!(recap(&stdout, ok).contains("failed=0"), "{stdout}");
    }
    for failed in ["sifive", "centos6"] {
        assert!(recap(&stdout, failed).contains("failed=1"), "{stdout}");
    }
    // Check mode copied and ran nothing.
    assert!(!remote.exists());
    assert!(!work.path().join("fetched").exists());
}
