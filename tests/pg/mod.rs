//! A throw-away PostgreSQL cluster for the tests: `initdb` in a temp dir,
//! the server listening only on a Unix socket in that dir, stopped and
//! removed when the [`Cluster`] is dropped (also when a test panics).
//!
//! The server binaries must be installed (Debian: `postgresql`, which
//! scripts/install-test-deps.sh installs); without them the tests fail
//! loudly rather than pass without having run. PostgreSQL refuses to run
//! as root, so as root the cluster belongs to `nobody` and its commands run
//! through `runuser`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A running throw-away cluster.
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_user: Option<&'static str>,
    /// The URL of its `postgres` database (Unix socket, user `opcost`, no password).
    pub url: String,
}

/// The directory of `initdb`, `pg_ctl` and `postgres`: on PATH, else the
/// newest /usr/lib/postgresql/NN/bin (Debian keeps them off PATH).
pub fn bin_dir() -> PathBuf {
    if let Ok(p) = which::which("pg_ctl")
        && let Some(d) = p.parent()
    {
        return d.to_path_buf();
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("pg_ctl").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    match versions.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "the PostgreSQL server binaries (initdb, pg_ctl) are not installed: \
             run scripts/install-test-deps.sh (Debian package `postgresql`)"
        ),
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl Cluster {
    /// Creates and starts a cluster; panics with the server's log when it
    /// cannot. `settings` are extra `-c name=value` server settings.
    pub fn start(settings: &[&str]) -> Cluster {
        let c = Cluster::create();
        c.launch(settings);
        c
    }

    /// A cluster that also listens on 127.0.0.1:`port` with TLS, its
    /// certificate (self-signed, for 127.0.0.1 and localhost) returned in PEM.
    pub fn start_tls(port: u16) -> (Cluster, String) {
        let c = Cluster::create();
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .expect("a self-signed certificate");
        let cert = ck.cert.pem();
        c.write_private("server.crt", &cert);
        c.write_private("server.key", &ck.signing_key.serialize_pem());
        let dir = c.dir.path().display().to_string();
        let settings = [
            "ssl=on".to_string(),
            format!("ssl_cert_file={dir}/server.crt"),
            format!("ssl_key_file={dir}/server.key"),
            "listen_addresses=127.0.0.1".to_string(),
            "log_connections=on".to_string(),
            format!("port={port}"),
        ];
        c.launch(&settings.iter().map(String::as_str).collect::<Vec<_>>());
        (c, cert)
    }

    /// Writes a file only the server's user may read.
    fn write_private(&self, name: &str, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        if self.as_user.is_some() {
            let st = Command::new("chown")
                .arg("nobody:")
                .arg(&p)
                .status()
                .expect("chown");
            assert!(st.success());
        }
    }

    fn create() -> Cluster {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("opcost-pg-")
            .tempdir()
            .expect("a temp dir for the cluster");
        let as_user = is_root().then_some("nobody");
        if as_user.is_some() {
            let st = Command::new("chown")
                .args(["nobody:"])
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(st.success(), "chown of the cluster dir failed");
        }
        let c = Cluster {
            url: format!(
                "postgresql:///postgres?host={}&user=opcost",
                dir.path().display()
            ),
            dir,
            bin,
            as_user,
        };
        let data = c.data();
        c.run(
            "initdb",
            &[
                "-D",
                data.to_str().expect("utf-8 temp dir"),
                "-U",
                "opcost",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        c
    }

    fn launch(&self, settings: &[&str]) {
        let c = self;
        let data = c.data();
        let mut opts = format!(
            "-k {} -c listen_addresses= -c max_connections=40",
            c.dir.path().display()
        );
        for s in settings {
            opts.push_str(" -c ");
            opts.push_str(s);
        }
        let log = c.dir.path().join("server.log");
        let ok = c.try_run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().expect("utf-8"),
                "-l",
                log.to_str().expect("utf-8"),
                "-w",
                "-t",
                "60",
                "-o",
                &opts,
                "start",
            ],
        );
        if !ok {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("the test PostgreSQL did not start:\n{text}");
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// The data directory.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The directory holding the socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The URL of another database of the cluster, created empty.
    pub fn new_database(&self, name: &str) -> String {
        let mut c = postgres::Client::connect(&self.url, postgres::NoTls).expect("connect");
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create database");
        self.url.replace("/postgres?", &format!("/{name}?"))
    }

    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        match self.as_user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        }
    }

    fn try_run(&self, tool: &str, args: &[&str]) -> bool {
        let out = self
            .command(tool)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot start {tool}: {e}"));
        if !out.status.success() {
            eprintln!(
                "{tool} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        out.status.success()
    }

    fn run(&self, tool: &str, args: &[&str]) {
        assert!(self.try_run(tool, args), "{tool} {args:?} failed");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data();
        // Immediate: a test that panicked may hold connections open.
        let _ = self
            .command("pg_ctl")
            .args(["-D"])
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}
