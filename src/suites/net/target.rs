//! The far end of a net benchmark, as the client sees it: a responder
//! started inside opcost (loopback, or in the server namespace of the veth
//! pair), or a remote `opcost serve` given with `--peer`.

use std::io::{BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};

use super::netns::{self, Enter, Veth};
use super::proto::{LineError, Reply, Request, Tally, Test, random_key, read_reply};
use super::server::{self, Config, Limits, Server};
use crate::harness::PrepareError;

/// The network path a benchmark measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// 127.0.0.1 within this network namespace.
    Loopback,
    /// Two private network namespaces joined by a veth pair.
    Veth,
    /// The host given with `--peer`.
    Peer,
}

impl Path {
    /// Every path, in report order.
    pub const ALL: [Path; 3] = [Path::Loopback, Path::Veth, Path::Peer];

    /// The id segment: `loopback`, `veth`, `peer`.
    pub fn label(self) -> &'static str {
        match self {
            Path::Loopback => "loopback",
            Path::Veth => "veth",
            Path::Peer => "peer",
        }
    }
}

/// A remote `opcost serve`, checked once when the run starts.
#[derive(Clone, Debug)]
pub struct Peer {
    /// Its control address.
    pub addr: SocketAddr,
    /// Its token.
    pub token: String,
    /// Its machine description, as it sent it.
    pub host: serde_json::Value,
    /// One control round trip (connect, request, answer).
    pub rtt: Duration,
}

/// Connects to `addr` and checks the token with a `hello`: the peer of
/// the `net.peer.*` benchmarks, which the run carries in its context.
pub fn connect_peer(addr: &str, token: &str) -> anyhow::Result<Peer> {
    let sock = addr
        .to_socket_addrs()
        .with_context(|| format!("--peer {addr}: not a HOST:PORT address"))?
        .next()
        .ok_or_else(|| anyhow!("--peer {addr}: the name resolves to no address"))?;
    let t0 = Instant::now();
    let s =
        Session::open(None, sock, token, Test::Hello).map_err(|e| anyhow!("--peer {addr}: {e}"))?;
    let rtt = t0.elapsed();
    Ok(Peer {
        addr: sock,
        token: token.to_string(),
        host: s.reply.host.clone().unwrap_or(serde_json::Value::Null),
        rtt,
    })
}

/// The far end of one benchmark. Dropping it stops an in-process responder
/// and lets go of the veth pair.
pub struct Target {
    /// The control address of the responder.
    pub addr: SocketAddr,
    token: String,
    /// How long the responder waits for datagrams still in flight.
    pub quiet: Duration,
    _responder: Option<server::Handle>,
    veth: Option<Arc<Veth>>,
}

impl Target {
    /// Starts the responder of `path`, or for the peer path finds `peer`
    /// (the run's, when it was given one).
    pub fn open(path: Path, peer: Option<&Peer>) -> Result<Target, PrepareError> {
        let local = |listener: TcpListener, veth: Option<Arc<Veth>>| {
            let addr = listener.local_addr()?;
            let token = random_key();
            let cfg = Config {
                token: token.clone(),
                limits: Limits {
                    idle: None,
                    ..Limits::default()
                },
                host: None,
                log: false,
            };
            let responder = Server::new(listener, cfg).spawn(veth.as_ref().map(|v| &v.server))?;
            Ok::<Target, PrepareError>(Target {
                addr,
                token,
                quiet: Duration::from_millis(2),
                _responder: Some(responder),
                veth,
            })
        };
        match path {
            Path::Loopback => local(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?, None),
            Path::Veth => {
                let v = netns::shared()?;
                let listener =
                    netns::in_netns(&v.server, || TcpListener::bind((netns::SERVER_ADDR, 0)))??;
                local(listener, Some(v))
            }
            Path::Peer => {
                let p = peer.ok_or_else(|| {
                    PrepareError::Skip("no peer: give one with --peer HOST:PORT".into())
                })?;
                Ok(Target {
                    addr: p.addr,
                    token: p.token.clone(),
                    quiet: (p.rtt * 4).clamp(Duration::from_millis(2), Duration::from_secs(1)),
                    _responder: None,
                    veth: None,
                })
            }
        }
    }

    /// The client's side of the path: its interface's driver, link speed,
    /// MTU and offloads (see [`super::iface`]), as JSON for `details`;
    /// null when it cannot be found.
    pub fn interface(&self) -> serde_json::Value {
        let iface = match (&self.veth, self._responder.is_some()) {
            (Some(v), _) => {
                netns::in_netns(&v.client, || super::iface::describe(netns::IF_CLIENT)).ok()
            }
            (None, true) => Some(super::iface::describe("lo")),
            (None, false) => super::iface::toward(self.addr).map(|n| super::iface::describe(&n)),
        };
        iface.map_or(serde_json::Value::Null, |i| {
            serde_json::to_value(i).unwrap_or_default()
        })
    }

    /// The namespace client sockets must be created in (veth only).
    pub fn client_ns(&self) -> Option<&std::os::fd::OwnedFd> {
        self.veth.as_ref().map(|v| &v.client)
    }

    /// Starts the responder of `path` ([`Target::open`]) and opens a
    /// session for `test` on it: what every benchmark's set-up begins with.
    pub fn with_session(
        path: Path,
        peer: Option<&Peer>,
        test: Test,
    ) -> Result<(Target, Session), PrepareError> {
        let target = Target::open(path, peer)?;
        let session = target.session(test)?;
        Ok((target, session))
    }

    /// Opens a session for `test`.
    pub fn session(&self, test: Test) -> Result<Session, PrepareError> {
        Session::open(self.client_ns(), self.addr, &self.token, test).map_err(PrepareError::Fail)
    }

    /// A TCP connection to the session's data port, the key already sent.
    pub fn connect(&self, s: &Session) -> anyhow::Result<TcpStream> {
        let _in = Enter::new(self.client_ns())?;
        let mut c = TcpStream::connect((self.addr.ip(), s.port()?)).with_context(|| {
            format!("connecting to {}:{}", self.addr.ip(), s.port().unwrap_or(0))
        })?;
        c.write_all(s.key()?.as_bytes())?;
        Ok(c)
    }

    /// A UDP socket connected to the session's data port.
    pub fn udp(&self, s: &Session) -> anyhow::Result<UdpSocket> {
        let _in = Enter::new(self.client_ns())?;
        let any: IpAddr = match self.addr.ip() {
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
        };
        let u = UdpSocket::bind((any, 0))?;
        u.connect((self.addr.ip(), s.port()?))?;
        Ok(u)
    }
}

/// One control connection and the server's answer to its request.
pub struct Session {
    conn: TcpStream,
    reader: BufReader<TcpStream>,
    /// The server's answer.
    pub reply: Reply,
}

/// How long a client goes on asking a busy server (one that answered
/// `busy`, or closed the connection before answering) before it gives up.
pub const BUSY_PATIENCE: Duration = Duration::from_secs(10);
/// The first pause before asking a busy server again; each next one is
/// twice as long, up to [`BUSY_PAUSE_MAX`], and drawn at random between
/// half and all of it, so that clients turned away together do not return
/// together.
pub const BUSY_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause between two asks of a busy server.
pub const BUSY_PAUSE_MAX: Duration = Duration::from_secs(1);

/// Why one attempt to open a session failed.
enum Attempt {
    /// The server was busy (said so, or shed the connection): worth
    /// another try after a pause.
    Busy(anyhow::Error),
    /// Anything else: final.
    Failed(anyhow::Error),
}

impl Session {
    /// Connects (inside namespace `ns`), sends the request, reads the
    /// answer; a busy server is asked again, after pauses that grow, for
    /// at most [`BUSY_PATIENCE`].
    pub fn open(
        ns: Option<&std::os::fd::OwnedFd>,
        addr: SocketAddr,
        token: &str,
        test: Test,
    ) -> anyhow::Result<Session> {
        let give_up = Instant::now() + BUSY_PATIENCE;
        let mut pause = BUSY_PAUSE;
        let mut tries = 1;
        loop {
            match Session::attempt(ns, addr, token, test.clone()) {
                Ok(s) => return Ok(s),
                Err(Attempt::Failed(e)) => return Err(e),
                Err(Attempt::Busy(e)) => {
                    let wait = pause.mul_f64(0.5 + fastrand::f64() / 2.0);
                    if Instant::now() + wait >= give_up {
                        return Err(e.context(format!(
                            "{addr} stayed busy for {} s ({tries} tries)",
                            BUSY_PATIENCE.as_secs()
                        )));
                    }
                    std::thread::sleep(wait);
                    pause = (pause * 2).min(BUSY_PAUSE_MAX);
                    tries += 1;
                }
            }
        }
    }

    /// One try of [`Session::open`].
    fn attempt(
        ns: Option<&std::os::fd::OwnedFd>,
        addr: SocketAddr,
        token: &str,
        test: Test,
    ) -> Result<Session, Attempt> {
        let failed = Attempt::Failed;
        let conn = {
            let _in = Enter::new(ns).map_err(failed)?;
            TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .with_context(|| format!("connecting to {addr}"))
                .map_err(failed)?
        };
        let io = |e: std::io::Error| failed(e.into());
        conn.set_nodelay(true).map_err(io)?;
        conn.set_read_timeout(Some(Duration::from_secs(15)))
            .map_err(io)?;
        let mut line = serde_json::to_vec(&Request {
            token: token.to_string(),
            test,
        })
        .map_err(|e| failed(e.into()))?;
        line.push(b'\n');
        // A server that shed the connection may have closed it already.
        let sent = (&conn).write_all(&line);
        let mut reader = BufReader::new(conn.try_clone().map_err(io)?);
        let text = match read_reply(&mut reader) {
            Ok(t) => t,
            // Shed while busy: closed, or reset (the request unread).
            Err(LineError::Closed) => {
                return Err(Attempt::Busy(anyhow!(
                    "{addr} closed the connection before answering"
                )));
            }
            Err(LineError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
                ) =>
            {
                return Err(Attempt::Busy(anyhow!(
                    "{addr} reset the connection before answering: {e}"
                )));
            }
            Err(e) => {
                let e = anyhow!("no answer from {addr}: {e}");
                return Err(failed(match sent {
                    Err(s) => e.context(format!("sending the request: {s}")),
                    Ok(()) => e,
                }));
            }
        };
        let reply: Reply = serde_json::from_str(&text).map_err(|e| {
            failed(anyhow!(
                "{addr} answered something that is not opcost serve: {e}"
            ))
        })?;
        if !reply.ok {
            let why = reply.error.as_deref().unwrap_or("no reason given");
            let e = anyhow!("{addr} refused: {why}");
            return Err(if why.starts_with("busy") {
                Attempt::Busy(e)
            } else {
                failed(e)
            });
        }
        Ok(Session {
            conn,
            reader,
            reply,
        })
    }

    /// The data port of the session.
    pub fn port(&self) -> anyhow::Result<u16> {
        self.reply
            .port
            .ok_or_else(|| anyhow!("the server gave no data port"))
    }

    fn key(&self) -> anyhow::Result<&str> {
        self.reply
            .key
            .as_deref()
            .ok_or_else(|| anyhow!("the server gave no session key"))
    }

    /// Sends a control line and reads the server's tally.
    pub fn tally(&mut self, line: &str) -> anyhow::Result<Tally> {
        (&self.conn).write_all(format!("{line}\n").as_bytes())?;
        let text = read_reply(&mut self.reader).map_err(|e| anyhow!("the responder: {e}"))?;
        serde_json::from_str(&text).map_err(|_| {
            let why = serde_json::from_str::<Reply>(&text)
                .ok()
                .and_then(|r| r.error)
                .unwrap_or(text);
            anyhow!("the responder stopped the test: {why}")
        })
    }
}
