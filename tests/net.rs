//! `opcost serve` and `opcost run net --peer`: the responder end to end,
//! and how it treats wrong tokens, garbage and oversized requests.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

const TOKEN: &str = "test-token-123";

/// A running `opcost serve` on a free loopback port; killed on drop.
struct Serve {
    child: Child,
    ip: String,
    port: u16,
    _out: BufReader<std::process::ChildStdout>,
}

impl Serve {
    fn start(extra: &[&str]) -> Serve {
        Serve::launch(&[], "127.0.0.1", extra)
    }

    /// `opcost serve` on `ip`, started through `prefix` (e.g. `ip netns exec NS`).
    fn launch(prefix: &[&str], ip: &str, extra: &[&str]) -> Serve {
        let bin = assert_cmd::cargo::cargo_bin("opcost");
        let mut cmd = match prefix.split_first() {
            Some((p, rest)) => {
                let mut c = StdCommand::new(p);
                c.args(rest).arg(&bin);
                c
            }
            None => StdCommand::new(&bin),
        };
        let listen = format!("{ip}:0");
        let mut child = cmd
            .args(["serve", "--listen", &listen, "--token", TOKEN])
            .args(["--idle-secs", "60"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("opcost serve starts");
        let out = child.stdout.take().expect("stdout is piped");
        let mut first = String::new();
        let mut out = BufReader::new(out);
        out.read_line(&mut first).expect("serve prints its address");
        let port = first
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {first:?}"));
        Serve {
            child,
            ip: ip.to_string(),
            port,
            _out: out,
        }
    }

    fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// Sends `bytes` on a fresh connection and returns the server's answer line.
    fn ask(&self, bytes: &[u8]) -> String {
        let mut c = TcpStream::connect(self.addr()).expect("connects");
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(bytes).expect("sends");
        let mut line = String::new();
        BufReader::new(c).read_line(&mut line).expect("answer");
        line
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .expect("VmRSS")
    }

    /// Stops the server and returns what it logged.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut log = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut log);
        }
        log
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hello(token: &str) -> Vec<u8> {
    format!("{{\"token\":\"{token}\",\"test\":\"hello\"}}\n").into_bytes()
}

#[test]
fn peer_run_measures_against_serve_and_records_both_hosts() {
    let serve = Serve::start(&[]);
    let doc = peer_run(
        &serve.addr(),
        &[
            "net.peer.tcp.rr/1B",
            "net.peer.udp.mmsg/64B",
            "net.peer.tcp.stream.one",
            "net.peer.tcp.crr",
        ],
    );
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "{:#}", doc["skipped"]);
    for r in results {
        assert!(r["id"].as_str().unwrap().starts_with("net.peer."));
        assert!(r["median"].as_f64().unwrap() > 0.0);
        // opcost's side of the CPU it cost (the peer's is its own).
        assert!(
            r["details"]["cpu_share"].as_f64().is_some_and(|s| s >= 0.0),
            "{r}"
        );
        // The interface it went through, as ethtool would name it.
        let iface = &r["details"]["interface"];
        assert!(
            iface["name"].is_string() && iface["mtu"].is_u64(),
            "{iface}"
        );
    }
    assert!(doc["host"]["hostname"].is_string());
    assert!(doc["peer"]["host"]["hostname"].is_string());
    assert_eq!(doc["peer"]["addr"], serve.addr());
    let log = serve.stop();
    assert!(log.contains("tcp_echo done"), "{log}");
}

/// A network namespace joined to this one by a veth pair (this side
/// `10.(232+S).N.1/30`, the namespace's `10.(232+S).N.2/30`, N from the
/// pid so that parallel test runs do not collide, S a slot per test of this
/// process); deleted, with the pair, on drop.
struct NetNs {
    name: String,
    far: String,
}

/// The namespace of `slot` (see [`NetNs::create`]), or `None` after saying
/// why the test is skipped (no root, no `ip`...).
fn namespace_or_skip(slot: u32) -> Option<NetNs> {
    match NetNs::create(slot) {
        Ok(ns) => Some(ns),
        Err(why) => {
            eprintln!("skipping: {why}");
            None
        }
    }
}

impl NetNs {
    /// Why not, when the machine cannot (not root, no `ip`, no veth).
    fn create(slot: u32) -> Result<NetNs, String> {
        // SAFETY: plain system call.
        if unsafe { libc::geteuid() } != 0 {
            return Err(
                "not root: creating a namespace and a veth pair needs CAP_NET_ADMIN".into(),
            );
        }
        let n = std::process::id() % 250 + 1;
        let net = 232 + slot;
        let ns = NetNs {
            name: format!("opcost-t{}-{slot}", std::process::id()),
            far: format!("10.{net}.{n}.2"),
        };
        let (near_if, far_if) = (format!("oc{slot}t{n}a"), format!("oc{slot}t{n}b"));
        let near = format!("10.{net}.{n}.1/30");
        let far = format!("{}/30", ns.far);
        let steps: [&[&str]; 7] = [
            &["netns", "add", &ns.name],
            &[
                "link", "add", &near_if, "type", "veth", "peer", "name", &far_if,
            ],
            &["link", "set", &far_if, "netns", &ns.name],
            &["addr", "add", &near, "dev", &near_if],
            &["link", "set", &near_if, "up"],
            &["-n", &ns.name, "addr", "add", &far, "dev", &far_if],
            &["-n", &ns.name, "link", "set", &far_if, "up"],
        ];
        for args in steps {
            let out = StdCommand::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
            if !out.status.success() {
                // The pair goes with the namespace; a pair not yet moved goes by itself.
                let _ = StdCommand::new("ip")
                    .args(["link", "del", &near_if])
                    .output();
                return Err(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(ns)
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = StdCommand::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

#[test]
fn peer_run_reaches_serve_in_another_network_namespace() {
    let Some(ns) = namespace_or_skip(0) else {
        return;
    };
    // Declared after the namespace, so dropped (killed) before it goes.
    let serve = Serve::launch(&["ip", "netns", "exec", &ns.name], &ns.far, &[]);
    let doc = peer_run(
        &serve.addr(),
        &["net.peer.tcp.rr/1B", "net.peer.udp.plain/64B"],
    );
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{:#}", doc["skipped"]);
    for r in results {
        assert!(r["median"].as_f64().unwrap() > 0.0, "{r:#}");
    }
    let udp = results
        .iter()
        .find(|r| r["id"] == "net.peer.udp.plain/64B")
        .unwrap();
    assert!(udp["details"]["received"].as_u64().unwrap() > 0);
    assert_eq!(udp["details"]["responder"], serve.addr());
    assert_eq!(doc["peer"]["addr"], serve.addr());
    let log = serve.stop();
    assert!(log.contains("tcp_echo done"), "{log}");
    assert!(log.contains("udp_sink done"), "{log}");
}

#[test]
fn refusals_have_reasons_and_the_server_survives_them() {
    let serve = Serve::start(&[]);
    let wrong = serve.ask(&hello("nope"));
    assert!(
        wrong.contains("\"ok\":false") && wrong.contains("wrong token"),
        "{wrong}"
    );
    let garbage = serve.ask(b"\x00\xff\xfe garbage \x01\n");
    assert!(garbage.contains("\"ok\":false"), "{garbage}");
    let long = serve.ask(&vec![b'{'; 10_000]);
    assert!(long.contains("longer than 4096"), "{long}");
    let over = serve.ask(
        format!("{{\"token\":\"{TOKEN}\",\"test\":\"udp_sink\",\"size\":100000,\"sockets\":1,\"batch\":1}}\n")
            .as_bytes(),
    );
    assert!(over.contains("over limit"), "{over}");
    let ok = serve.ask(&hello(TOKEN));
    assert!(ok.contains("\"ok\":true"), "{ok}");
    // The client reports a wrong token as a failure, not as results.
    common::fails_saying(
        Command::cargo_bin("opcost")
            .unwrap()
            .args(["run", "net", "--peer", &serve.addr(), "--token", "bad"])
            .args(["--profile", "quick", "--no-save"]),
        1,
        &["wrong token"],
    );
    let log = serve.stop();
    for why in [
        "wrong token",
        "bad request",
        "longer than 4096",
        "over limit",
    ] {
        assert!(log.contains(why), "no '{why}' in the log:\n{log}");
    }
}

#[test]
fn memory_stays_bounded_under_100_garbage_connections() {
    let serve = Serve::start(&["--max-clients", "8"]);
    let before = serve.rss_kib();
    let mut conns = Vec::new();
    for i in 0..100 {
        let mut c = TcpStream::connect(serve.addr()).expect("connects");
        // Half send garbage without a newline and wait; half send a flood.
        let junk = if i % 2 == 0 {
            vec![b'x'; 2000]
        } else {
            vec![0xffu8; 64 << 10]
        };
        let _ = c.write_all(&junk);
        conns.push(c);
    }
    std::thread::sleep(Duration::from_millis(500));
    let during = serve.rss_kib();
    drop(conns);
    assert!(
        during < before + 64 * 1024,
        "RSS grew from {before} KiB to {during} KiB"
    );
    // Still serving once the garbage is gone (sessions time out within 5 s).
    let t0 = Instant::now();
    loop {
        let a = serve.ask(&hello(TOKEN));
        if a.contains("\"ok\":true") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "still refusing: {a}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = serve.stop();
    // The floods were refused with the reason (in a handshake slot), or
    // shed when every handshake slot was taken.
    assert!(
        log.contains("longer than 4096") || log.contains("shed"),
        "{log}"
    );
}

#[test]
fn peer_benchmarks_need_peer_and_token() {
    common::fails_saying(
        Command::cargo_bin("opcost")
            .unwrap()
            .args(["run", "net.peer", "--no-save"]),
        2,
        &["--peer"],
    );
    common::fails_saying(
        Command::cargo_bin("opcost").unwrap().args([
            "run",
            "net",
            "--peer",
            "127.0.0.1:1",
            "--no-save",
        ]),
        2,
        &["--token"],
    );
    Command::cargo_bin("opcost")
        .unwrap()
        .args(["serve", "--listen", "nonsense"])
        .assert()
        .code(2);
}

/// `opcost run IDS --peer ADDR` at quick; its JSON document.
fn peer_run(addr: &str, ids: &[&str]) -> serde_json::Value {
    let (_dir, json) = common::scratch("run.json");
    Command::cargo_bin("opcost")
        .unwrap()
        .arg("run")
        .args(ids)
        .args(["--peer", addr, "--token", TOKEN])
        .args(["--profile", "quick", "--no-save", "--format", "json"])
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    common::read_json(&json)
}

/// A client that sends `request` one byte every `gap` and returns how long
/// the server let it go on and what it answered (bounded: 40 bytes at most).
fn trickle(addr: String, request: Vec<u8>, gap: Duration) -> (Duration, String) {
    let mut c = TcpStream::connect(&addr).expect("connects");
    c.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let t0 = Instant::now();
    let mut answer = Vec::new();
    for &b in request.iter().take(40) {
        if c.write_all(&[b]).is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        let until = Instant::now() + gap;
        let mut closed = false;
        while Instant::now() < until {
            match c.read(&mut buf) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
        if closed {
            break;
        }
    }
    (t0.elapsed(), String::from_utf8_lossy(&answer).into_owned())
}

#[test]
fn trickling_clients_are_closed_at_the_deadline_and_a_real_client_still_runs() {
    let serve = Serve::start(&["--max-clients", "8"]);
    let before = serve.rss_kib();
    // 8 clients that send a valid request a byte a second (it would take
    // 40 s), and 50 connections of garbage without a newline, left open.
    let tricklers: Vec<_> = (0..8)
        .map(|_| {
            let addr = serve.addr();
            std::thread::spawn(move || trickle(addr, hello(TOKEN), Duration::from_secs(1)))
        })
        .collect();
    let mut garbage = Vec::new();
    for _ in 0..50 {
        let mut c = TcpStream::connect(serve.addr()).expect("connects");
        let _ = c.write_all(&[b'x'; 1000]);
        garbage.push(c);
    }
    std::thread::sleep(Duration::from_millis(300));
    // A real client is served meanwhile, at once: a hello, then a test.
    let t0 = Instant::now();
    let ok = serve.ask(&hello(TOKEN));
    assert!(ok.contains("\"ok\":true"), "{ok}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    let doc = peer_run(&serve.addr(), &["net.peer.tcp.rr/1B"]);
    assert_eq!(doc["results"].as_array().unwrap().len(), 1, "{doc:#}");
    let during = serve.rss_kib();
    assert!(
        during < before + 64 * 1024,
        "RSS grew from {before} KiB to {during} KiB"
    );
    // Every trickler was closed by the handshake deadline (5 s), with the reason.
    for t in tricklers {
        let (held, answer) = t.join().expect("trickler");
        assert!(held < Duration::from_secs(9), "held for {held:?}");
        assert!(answer.contains("sent too slowly"), "{answer}");
    }
    drop(garbage);
    let log = serve.stop();
    assert!(log.contains("no complete request within 5 s"), "{log}");
    assert!(log.contains("tcp_echo done"), "{log}");
}

/// `n` connections to `addr` that send `request` a byte a second, each
/// opened again as soon as the server closes it, until `stop` is set (one
/// thread, non-blocking sockets); returns how many were closed by the
/// server and how many of those were told they were shed.
fn slow_crowd(
    addr: String,
    n: usize,
    request: Vec<u8>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<(usize, usize)> {
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let open = || {
            let c = TcpStream::connect(&addr).expect("connects");
            c.set_nonblocking(true).unwrap();
            (c, 0usize, Instant::now(), Vec::new())
        };
        let mut conns: Vec<_> = (0..n).map(|_| open()).collect();
        let (mut closed, mut shed) = (0, 0);
        while !stop.load(Ordering::Relaxed) {
            for slot in conns.iter_mut() {
                let (c, sent, last, answer) = slot;
                let mut buf = [0u8; 512];
                let gone = match c.read(&mut buf) {
                    Ok(0) => true,
                    Ok(k) => {
                        answer.extend_from_slice(&buf[..k]);
                        false
                    }
                    Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                };
                if gone {
                    closed += 1;
                    shed += usize::from(String::from_utf8_lossy(answer).contains("shed"));
                    *slot = open();
                } else if last.elapsed() >= Duration::from_secs(1) && *sent < request.len() - 1 {
                    // Never the newline: the request is never complete.
                    let _ = c.write_all(&request[*sent..*sent + 1]);
                    *sent += 1;
                    *last = Instant::now();
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (closed, shed)
    })
}

#[test]
fn a_crowd_of_slow_connections_reopened_at_once_cannot_shut_the_responder() {
    if common::emulation_exception(
        "qemu-user keeps memory for every guest thread started (the responder's handshake threads, reopened by the crowd): the RSS bound measures the emulator",
    ) {
        return;
    }
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let serve = Serve::start(&["--max-clients", "8"]);
    let before = serve.rss_kib();
    // 100 connections trickling a request that never ends, against 64
    // handshake slots (8 per client slot), each reopened when closed.
    let stop = Arc::new(AtomicBool::new(false));
    let crowd = slow_crowd(serve.addr(), 100, hello(TOKEN), stop.clone());
    std::thread::sleep(Duration::from_secs(3));
    // A real client is served, every time, within 10 s.
    for _ in 0..3 {
        let t0 = Instant::now();
        let doc = peer_run(&serve.addr(), &["net.peer.tcp.rr/1B"]);
        assert_eq!(doc["results"].as_array().unwrap().len(), 1, "{doc:#}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    }
    let during = serve.rss_kib();
    stop.store(true, Ordering::Relaxed);
    let (closed, shed) = crowd.join().expect("the crowd");
    assert!(
        during < before + 64 * 1024,
        "RSS grew from {before} KiB to {during} KiB"
    );
    // The crowd was shed, oldest first, and told so.
    assert!(closed > 0 && shed > 0, "closed {closed}, shed {shed}");
    let log = serve.stop();
    assert!(
        log.contains("connections still sending their request"),
        "{log}"
    );
    assert!(log.contains("tcp_echo done"), "{log}");
}

#[test]
fn icmp_echo_measures_the_kernel_responder_of_a_namespace() {
    let Some(ns) = namespace_or_skip(1) else {
        return;
    };
    let (_dir, json) = common::scratch("run.json");
    Command::cargo_bin("opcost")
        .unwrap()
        .args(["run", "net", "--target", &ns.far, "--max-pps", "2000"])
        .args(["--profile", "quick", "--no-save"])
        .arg("--json")
        .arg(&json)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let doc: serde_json::Value = common::read_json(&json);
    let results = doc["results"].as_array().unwrap();
    // Only the target rows run with --target.
    assert!(
        results
            .iter()
            .all(|r| r["id"].as_str().unwrap().starts_with("net.target.")),
        "{results:#?}"
    );
    if let Some(s) = doc["skipped"].as_array().unwrap().first() {
        // Neither a ping socket nor a raw one: the reason names both.
        let why = s["reason"].as_str().unwrap();
        assert!(
            why.contains("ping_group_range") && why.contains("CAP_NET_RAW"),
            "{why}"
        );
        return;
    }
    let find = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id} missing: {doc:#}"))
    };
    let rate = find("net.target.icmp.rate");
    assert_eq!(rate["unit"], "ops/s");
    let d = &rate["details"];
    assert_eq!(d["address"], ns.far.as_str());
    assert_eq!(d["max_pps"], 2000);
    assert_eq!(d["window"], 16);
    let (sent, received) = (d["sent"].as_u64().unwrap(), d["received"].as_u64().unwrap());
    assert!(received > 0 && received <= sent, "{d}");
    assert_eq!(d["lost"].as_u64().unwrap(), sent - received);
    // The cap holds: no sample came back faster than the requests went out.
    assert!(
        rate["median"].as_f64().unwrap() <= 2000.0 * 1.05,
        "{rate:#}"
    );
    let (p50, p99) = (
        d["rtt_p50_ns"].as_f64().unwrap(),
        d["rtt_p99_ns"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99, "{d}");
    let rtt = find("net.target.icmp.rtt");
    assert_eq!(rtt["unit"], "ns/op");
    assert!(rtt["median"].as_f64().unwrap() > 0.0);
    assert_eq!(rtt["details"]["window"], 1);
}

#[test]
fn bad_targets_exit_2_with_the_reason() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--target", "opcost-no-such-host.invalid"],
            "does not resolve",
        ),
        (&["--target", "10.0.0.1", "--max-pps", "0"], "--max-pps"),
        (&["--max-pps", "100"], "--target"),
        (
            &[
                "--target",
                "10.0.0.1",
                "--peer",
                "127.0.0.1:1",
                "--token",
                "x",
            ],
            "--peer",
        ),
    ];
    for (args, message) in cases {
        Command::cargo_bin("opcost")
            .unwrap()
            .args(["run", "net", "--profile", "quick", "--no-save"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
    }
    // Without --target the rows do not run, and asking for them says why.
    common::fails_saying(
        Command::cargo_bin("opcost")
            .unwrap()
            .args(["run", "net.target", "--no-save"]),
        2,
        &["--target HOST"],
    );
}
