//! E14: what a network path costs per packet and per byte. UDP packets per
//! second at four payload sizes (plain send/recv, sendmmsg/recvmmsg
//! batches, SO_REUSEPORT over every CPU), TCP bulk throughput (one stream
//! and one per CPU), request/response round trips (TCP_RR) and connection
//! set-up (TCP_CRR), on three paths: loopback, two network namespaces
//! joined by a veth pair (set up by opcost when it may, removed after), and
//! a remote `opcost serve` given with `--peer`.
//!
//! Why this shape: bytes per second is not the only limit of a path; the
//! packet rate is, and it is what small messages meet. A UDP benchmark that
//! counts only sends measures the sender, so the responder counts arrivals
//! and the rate reported is the rate received, with sent and lost beside
//! it. Every path is measured by the same client against the same
//! responder ([`server`]), so loopback, veth and a real link differ only
//! in the path.
//!
//! Ids: `net.PATH.udp.MODE/SIZE` (datagrams/s; MODE `plain`, `mmsg`,
//! `reuseport`), `net.PATH.tcp.stream.one` and `.per_cpu` (B/s),
//! `net.PATH.tcp.rr/SIZE` (ns per round trip, p50/p99), `net.PATH.tcp.crr`
//! (ns per connect+request+response+close); PATH is `loopback`, `veth` or
//! `peer`. With `--target HOST`, `net.target.icmp.rate` (ICMP echo
//! replies/s) and `net.target.icmp.rtt` (ns per echo) measure a device
//! that runs none of opcost (see [`icmp`]).

pub mod bench;
pub mod dgram;
pub mod findings;
pub mod icmp;
pub mod iface;
pub mod netns;
pub mod proto;
pub mod server;
pub mod target;

use std::time::Duration;

use super::bench::{FnBench, Suite};
use crate::harness::{Bench, Ctx, PrepareError, Profile, Unit, affinity};
use crate::host::Host;
use crate::units::size_label;
use bench::{CHUNK, TcpCrr, TcpRr, TcpStreamBench, UdpRate};
pub use icmp::{IcmpTarget, is_target_bench, resolve_target};
pub use target::{Path, Peer, connect_peer};

/// The net suite.
pub fn suite() -> Suite {
    Suite {
        name: "net",
        summary: "UDP packets/s (plain, sendmmsg, SO_REUSEPORT), TCP throughput, TCP_RR and TCP_CRR, on loopback, a veth pair between namespaces, or a peer running opcost serve",
        benches,
        findings: findings::findings,
    }
}

/// UDP payloads: 18 B fills a minimal 64 B Ethernet frame, 1472 B a
/// 1500 B MTU.
pub const UDP_SIZES: [usize; 4] = [18, 64, 512, 1472];
/// Request/response sizes of the TCP_RR sweep.
pub const RR_SIZES: [usize; 5] = [1, 64, 1 << 10, 16 << 10, 64 << 10];
/// Datagrams per sendmmsg/recvmmsg call.
pub const BATCH: usize = 32;

/// How datagrams are sent and received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One send()/recv() per datagram.
    Plain,
    /// sendmmsg/recvmmsg, [`BATCH`] per call.
    Mmsg,
    /// One SO_REUSEPORT socket and thread per CPU, with batches.
    Reuseport,
}

impl Mode {
    /// The id segment.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Mmsg => "mmsg",
            Mode::Reuseport => "reuseport",
        }
    }
}

/// True for the ids of benchmarks that need `--peer`.
pub fn is_peer_bench(id: &str) -> bool {
    id.starts_with("net.peer.")
}

/// Keeps the net.peer.* benchmarks when a peer was given and the
/// net.target.* ones when a target was, each only then; refuses a
/// selection left empty by that.
pub fn for_far_end(
    benches: Vec<Box<dyn Bench>>,
    peer: bool,
    target: bool,
) -> Result<Vec<Box<dyn Bench>>, String> {
    let selected = benches.len();
    let kept: Vec<Box<dyn Bench>> = benches
        .into_iter()
        .filter(|b| is_peer_bench(b.id()) == peer && is_target_bench(b.id()) == target)
        .collect();
    if kept.is_empty() && selected > 0 {
        return Err(if peer {
            "--peer runs only the net.peer.* benchmarks; select them with `net` or `net.peer`"
        } else if target {
            "--target runs only the net.target.* benchmarks; select them with `net` or `net.target`"
        } else {
            "the net.peer.* benchmarks need --peer HOST:PORT --token TOKEN (a host running opcost serve), the net.target.* ones --target HOST"
        }
        .to_string());
    }
    Ok(kept)
}

/// The run's peer (`--peer`), from its context.
fn peer(ctx: &Ctx) -> Option<&Peer> {
    ctx.given.get()
}

/// CPUs this process may use (so also the `--cpu` pin), at least one.
fn cpus() -> usize {
    affinity::allowed_cpus().len().max(1)
}

/// The suite's benchmarks: per path, UDP datagram rates, TCP streams and
/// TCP round trips; then the ICMP echo rows against `--target`.
fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let mut v = Vec::new();
    for path in Path::ALL {
        for mode in [Mode::Plain, Mode::Mmsg, Mode::Reuseport] {
            for size in UDP_SIZES {
                v.push(udp_bench(path, mode, size));
            }
        }
        v.extend(stream_benches(path));
        v.extend(round_trip_benches(path));
    }
    v.extend(icmp_benches());
    v
}

/// What a round spends setting a network benchmark up and tearing it down
/// besides its samples (its sockets, the peer's threads, connections):
/// 10–40 ms a round on the quick runs of a 2-vCPU AMD EPYC (Zen 4) KVM guest, UDP's the most. Only
/// the run-time estimate uses it ([`FnBench::setup_time`]).
const SETUP: Duration = Duration::from_millis(20);

/// The rate of UDP datagrams of `size` bytes received over `path`, sent
/// and received the `mode` way.
fn udp_bench(path: Path, mode: Mode, size: usize) -> Box<dyn Bench> {
    let p = path.label();
    // Quick runs keep the two sizes the findings compare.
    let quick = size == 64 || (size == 1472 && mode != Mode::Reuseport);
    let b = FnBench::new(
        format!("net.{p}.udp.{}/{}", mode.label(), size_label(size as u64)),
        format!(
            "UDP {size} B datagrams received per second over {p}, {}",
            match mode {
                Mode::Plain => "one send/recv per datagram",
                Mode::Mmsg => "sendmmsg/recvmmsg batches of 32",
                Mode::Reuseport => "one SO_REUSEPORT socket and sender per CPU",
            }
        ),
        Unit::Rate,
        move |ctx: &Ctx| {
            let (batch, sockets) = match mode {
                Mode::Plain => (1, 1),
                Mode::Mmsg => (BATCH, 1),
                Mode::Reuseport => (BATCH, cpus()),
            };
            if mode == Mode::Reuseport && sockets < 2 {
                return Err(PrepareError::Skip(
                    "SO_REUSEPORT across CPUs needs two CPUs; one is allowed".into(),
                ));
            }
            Ok(UdpRate::prepare(path, peer(ctx), size, batch, sockets)?.boxed())
        },
    )
    .param("path", p)
    .param("payload", size as u64)
    .param("mode", mode.label())
    .param("batch", if mode == Mode::Plain { 1 } else { BATCH as u64 })
    .cpu_cost()
    .setup_time(SETUP);
    if quick {
        b
    } else {
        b.min_profile(Profile::Default)
    }
    .boxed()
}

/// TCP bulk throughput over `path`: one stream, and one per CPU.
fn stream_benches(path: Path) -> Vec<Box<dyn Bench>> {
    let p = path.label();
    let mut v = Vec::new();
    for per_cpu in [false, true] {
        let name = if per_cpu { "per_cpu" } else { "one" };
        v.push(
            FnBench::new(
                format!("net.{p}.tcp.stream.{name}"),
                format!(
                    "TCP bulk throughput over {p}, {}",
                    if per_cpu {
                        "one stream per CPU"
                    } else {
                        "one stream"
                    }
                ),
                Unit::Throughput {
                    bytes_per_op: CHUNK as f64,
                },
                move |ctx: &Ctx| {
                    let streams = if per_cpu { cpus() } else { 1 };
                    if per_cpu && streams < 2 {
                        return Err(PrepareError::Skip(
                            "one stream per CPU needs two CPUs; one is allowed".into(),
                        ));
                    }
                    Ok(Box::new(TcpStreamBench::prepare(path, peer(ctx), streams)?))
                },
            )
            .param("path", p)
            .param("write", CHUNK as u64)
            .cpu_cost()
            .setup_time(SETUP)
            .boxed(),
        );
    }
    v
}

/// TCP round trips over `path`: request and response of each size on one
/// connection (TCP_RR), and a connection per round trip (TCP_CRR).
fn round_trip_benches(path: Path) -> Vec<Box<dyn Bench>> {
    let p = path.label();
    let mut v = Vec::new();
    for size in RR_SIZES {
        let b = FnBench::new(
            format!("net.{p}.tcp.rr/{}", size_label(size as u64)),
            format!("TCP request/response round trip of {size} B each way over {p} (TCP_NODELAY)"),
            Unit::Latency,
            move |ctx: &Ctx| Ok(Box::new(TcpRr::prepare(path, peer(ctx), size)?)),
        )
        .param("path", p)
        .param("size", size as u64)
        .param("nodelay", true)
        .cpu_cost()
        .setup_time(SETUP);
        let quick = size == 1 || size == 64 << 10;
        v.push(
            if quick {
                b
            } else {
                b.min_profile(Profile::Default)
            }
            .boxed(),
        );
    }
    v.push(
        FnBench::new(
            format!("net.{p}.tcp.crr"),
            format!("TCP connect, 1 B request, 1 B response, close over {p} (TCP_CRR)"),
            Unit::Latency,
            move |ctx: &Ctx| Ok(Box::new(TcpCrr::prepare(path, peer(ctx), 1)?)),
        )
        .param("path", p)
        .param("size", 1u64)
        .cpu_cost()
        .setup_time(SETUP)
        .boxed(),
    );
    v
}

/// The ICMP echo rows against `--target`.
fn icmp_benches() -> Vec<Box<dyn Bench>> {
    let rate = FnBench::new(
        "net.target.icmp.rate",
        format!(
            "ICMP echo replies per second from the --target host, {} requests in flight, at most --max-pps requests per second",
            icmp::WINDOW
        ),
        Unit::Rate,
        |ctx: &Ctx| Ok(icmp::Echo::prepare(icmp::WINDOW, ctx.given.get())?.boxed()),
    )
    .param("path", "target")
    .param("window", icmp::WINDOW as u64)
    .paced();
    let rtt = FnBench::new(
        "net.target.icmp.rtt",
        "ICMP echo round trip to the --target host, one request at a time",
        Unit::Latency,
        |ctx: &Ctx| Ok(icmp::Echo::prepare(1, ctx.given.get())?.boxed()),
    )
    .param("path", "target")
    .param("window", 1u64);
    vec![rate.boxed(), rtt.boxed()]
}

trait BoxTimed {
    fn boxed(self) -> Box<dyn crate::harness::Timed>;
}

impl<T: crate::harness::Timed + 'static> BoxTimed for T {
    fn boxed(self) -> Box<dyn crate::harness::Timed> {
        Box::new(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Timed;

    #[test]
    fn ids_are_unique_and_every_path_has_every_test() {
        let host = Host::default();
        let bs = benches(&host);
        let mut ids: Vec<&str> = bs.iter().map(|b| b.id()).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
        for p in ["loopback", "veth", "peer"] {
            assert!(ids.contains(&format!("net.{p}.udp.plain/18B").as_str()));
            assert!(ids.contains(&format!("net.{p}.udp.reuseport/1472B").as_str()));
            assert!(ids.contains(&format!("net.{p}.tcp.stream.per_cpu").as_str()));
            assert!(ids.contains(&format!("net.{p}.tcp.rr/64KiB").as_str()));
            assert!(ids.contains(&format!("net.{p}.tcp.crr").as_str()));
        }
        assert!(is_peer_bench("net.peer.tcp.crr"));
        assert!(!is_peer_bench("net.veth.tcp.crr"));
    }

    #[test]
    fn udp_on_loopback_counts_arrivals_apart_from_sends() {
        let mut t = UdpRate::prepare(Path::Loopback, None, 64, BATCH, 1).unwrap();
        let d = t.run(t.min_ops() * 4).unwrap();
        assert!(d.as_nanos() > 0);
        let det = t.details().unwrap();
        let sent = det["sent"].as_u64().unwrap();
        let received = det["received"].as_u64().unwrap();
        assert!(sent >= t.min_ops() * 4);
        assert!(received > 0 && received <= sent);
        assert_eq!(det["lost"].as_u64().unwrap(), sent - received);
        assert!(det["received_per_s"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn tcp_shapes_run_on_loopback() {
        let mut s = TcpStreamBench::prepare(Path::Loopback, None, 2).unwrap();
        assert!(s.run(16).unwrap().as_nanos() > 0);
        let mut rr = TcpRr::prepare(Path::Loopback, None, 1000).unwrap();
        rr.run(20).unwrap();
        let times = rr.take_op_times();
        assert_eq!(times.len(), 20);
        assert!(times.iter().all(|&t| t > 0.0));
        let mut crr = TcpCrr::prepare(Path::Loopback, None, 1).unwrap();
        crr.run(10).unwrap();
        assert_eq!(crr.take_op_times().len(), 10);
    }

    #[test]
    fn the_responder_serves_every_shape_between_two_namespaces() {
        let mut rr = match TcpRr::prepare(Path::Veth, None, 64) {
            Ok(r) => r,
            Err(PrepareError::Skip(why)) => {
                eprintln!("skipped: {why}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        rr.run(10).unwrap();
        assert_eq!(rr.take_op_times().len(), 10);
        let det = rr.details().unwrap();
        assert!(
            det["responder"]
                .as_str()
                .unwrap()
                .starts_with("10.231.0.2:")
        );
        let mut udp = UdpRate::prepare(Path::Veth, None, 18, 1, 1).unwrap();
        udp.run(udp.min_ops() * 2).unwrap();
        assert!(udp.details().unwrap()["received"].as_u64().unwrap() > 0);
        let mut s = TcpStreamBench::prepare(Path::Veth, None, 1).unwrap();
        s.run(8).unwrap();
        let mut crr = TcpCrr::prepare(Path::Veth, None, 1).unwrap();
        crr.run(5).unwrap();
        assert_eq!(crr.take_op_times().len(), 5);
        // A session with the wrong token is refused from the client namespace too.
        let target = target::Target::open(Path::Veth, None).unwrap();
        let bad =
            target::Session::open(target.client_ns(), target.addr, "wrong", proto::Test::Hello);
        assert!(bad.err().unwrap().to_string().contains("wrong token"));
    }

    #[test]
    fn peer_benches_skip_without_a_peer() {
        match TcpRr::prepare(Path::Peer, None, 1) {
            Err(PrepareError::Skip(why)) => assert!(why.contains("--peer")),
            _ => panic!("expected a skip"),
        }
    }
}
