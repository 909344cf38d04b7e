//! `opcost serve`: the far end of `opcost run net --peer`.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use anyhow::Context;

use super::usage;
use crate::cli::ServeArgs;
use crate::host::Host;
use crate::suites::net::proto::random_key;
use crate::suites::net::server::{Config, Limits, Server};

/// Listens, prints the address and the token, and serves the net tests
/// until Ctrl-C or the idle limit; returns 0.
pub fn execute(args: &ServeArgs) -> anyhow::Result<i32> {
    let addr: SocketAddr = args.listen.parse().map_err(|_| {
        usage(format!(
            "--listen {}: not an ADDR:PORT address (e.g. 127.0.0.1:7207 or 0.0.0.0:7207)",
            args.listen
        ))
    })?;
    let token = match &args.token {
        Some(t) if t.is_empty() || t.len() > 256 || t.chars().any(char::is_whitespace) => {
            return Err(usage(
                "--token: give 1 to 256 characters without spaces (or none for a random one)",
            ));
        }
        Some(t) => t.clone(),
        None => random_key(),
    };
    let listener = TcpListener::bind(addr).with_context(|| format!("listening on {addr}"))?;
    let bound = listener.local_addr()?;
    let host = serde_json::to_value(Host::detect()).context("describing this machine")?;
    let cfg = Config {
        token: token.clone(),
        limits: Limits {
            max_clients: args.max_clients as usize,
            max_secs: args.max_test_secs,
            max_bytes: args.max_test_mib.saturating_mul(1 << 20),
            idle: (args.idle_secs > 0).then(|| Duration::from_secs(args.idle_secs)),
            ..Limits::default()
        },
        host: Some(host),
        log: true,
    };
    let server = Server::new(listener, cfg);
    let stop = server.stop_flag();
    crate::os::signals::on_ctrl_c(stop, Default::default());
    // Printed once; a reader that goes away afterwards does not stop the server.
    let mut out = std::io::stdout();
    let _ = writeln!(out, "opcost serve: listening on {bound}");
    let _ = writeln!(out, "token: {token}");
    let _ = writeln!(
        out,
        "run on the client: opcost run net --peer HOST:{} --token {token}",
        bound.port()
    );
    let _ = out.flush();
    if !bound.ip().is_loopback() {
        eprintln!(
            "opcost serve: reachable from the network on {bound}; it serves only the net tests, to clients with the token"
        );
    }
    server.run()?;
    eprintln!("opcost serve: stopped");
    Ok(0)
}
