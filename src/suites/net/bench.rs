//! The timed halves of the net benchmarks (the client side); the
//! responder is [`super::server`].

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::socket::{setsockopt, sockopt};

use super::dgram::Sender;
use super::proto::{KEY_LEN, Test};
use super::target::{Path, Peer, Session, Target};
use crate::harness::warnings::Warning;
use crate::harness::{PrepareError, Timed};

/// Bytes written per operation of the bulk TCP benchmark.
pub const CHUNK: usize = 128 << 10;

/// UDP datagrams of `size` bytes from `senders` sockets (one thread each),
/// `batch` per sendmmsg (1: plain send), counted where they arrive.
pub struct UdpRate {
    // Dropped in this order: the session closes before the responder stops.
    senders: Vec<Sender>,
    session: Session,
    target: Target,
    batch: u64,
    sent: u64,
    received: u64,
    send_ns: f64,
    recv_ns: f64,
    timed: u64,
    sockets_used: u32,
    sockets: u32,
}

impl UdpRate {
    /// Sets up the responder's sockets and the client's senders.
    pub fn prepare(
        path: Path,
        peer: Option<&Peer>,
        size: usize,
        batch: usize,
        sockets: usize,
    ) -> Result<UdpRate, PrepareError> {
        let (target, session) = Target::with_session(
            path,
            peer,
            Test::UdpSink {
                size: size as u32,
                sockets: sockets as u32,
                batch: batch as u32,
            },
        )?;
        // Several flows per receiving socket, so that the kernel's hash of
        // the addresses spreads them over the reuseport group.
        let flows = if sockets > 1 { sockets * 4 } else { 1 };
        let mut senders = Vec::new();
        for _ in 0..flows {
            senders.push(Sender::new(target.udp(&session)?, size, batch));
        }
        Ok(UdpRate {
            senders,
            session,
            target,
            batch: batch as u64,
            sent: 0,
            received: 0,
            send_ns: 0.0,
            recv_ns: 0.0,
            timed: 0,
            sockets_used: 0,
            sockets: sockets as u32,
        })
    }

    fn send(&mut self, ops: u64) -> anyhow::Result<u64> {
        let threads = self.sockets as usize;
        if threads <= 1 {
            return Ok(self.senders[0].send(ops)?);
        }
        // One thread per receiving socket, each cycling over its flows.
        let n = self.senders.len() as u64;
        let per_flow = ops.div_ceil(n);
        let chunks: Vec<&mut [Sender]> = self.senders.chunks_mut(4).collect();
        let batch = self.batch;
        std::thread::scope(|s| {
            let hs: Vec<_> = chunks
                .into_iter()
                .map(|flows| {
                    s.spawn(move || -> anyhow::Result<u64> {
                        let mut sent = 0;
                        let mut left = vec![per_flow; flows.len()];
                        while left.iter().any(|&l| l > 0) {
                            for (f, l) in flows.iter_mut().zip(&mut left) {
                                let k = (*l).min(batch);
                                if k > 0 {
                                    sent += f.send(k)?;
                                    *l -= k;
                                }
                            }
                        }
                        Ok(sent)
                    })
                })
                .collect();
            let mut total = 0;
            for h in hs {
                total += h
                    .join()
                    .map_err(|_| anyhow::anyhow!("a sending thread panicked"))??;
            }
            Ok(total)
        })
    }
}

impl Timed for UdpRate {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let t0 = Instant::now();
        let sent = self.send(ops)?;
        let send_time = t0.elapsed();
        let quiet = self.target.quiet.as_micros();
        let t = self.session.tally(&format!("count {quiet} {sent}"))?;
        if t.received == 0 {
            bail!(
                "none of {sent} datagrams arrived at {}",
                self.target.addr.ip()
            );
        }
        if t.timed == 0 || t.span_ns == 0 {
            bail!(
                "too few datagrams arrived to time the receiver ({} of {sent})",
                t.received
            );
        }
        self.sent += sent;
        self.received += t.received;
        self.send_ns += send_time.as_nanos() as f64;
        self.recv_ns += t.span_ns as f64;
        self.timed += t.timed;
        self.sockets_used = self.sockets_used.max(t.sockets_used);
        // The time `ops` datagrams take at the rate they were received.
        Ok(Duration::from_nanos(
            (t.span_ns as f64 * ops as f64 / t.timed as f64) as u64,
        ))
    }

    fn min_ops(&self) -> u64 {
        // Enough for a span of several receive batches on every flow.
        (self.batch * 8 * self.senders.len() as u64).max(64)
    }

    fn warnings(&self) -> Vec<String> {
        let mut w: Vec<String> = loss_warning(self.sent, self.received).into_iter().collect();
        if self.sockets > 1 && self.sockets_used > 0 && self.sockets_used < self.sockets {
            w.push(
                Warning::ReuseportSpread {
                    used: self.sockets_used,
                    sockets: self.sockets,
                }
                .to_string(),
            );
        }
        w
    }

    fn details(&self) -> Option<serde_json::Value> {
        let rate = |n: u64, ns: f64| if ns > 0.0 { n as f64 * 1e9 / ns } else { 0.0 };
        Some(serde_json::json!({
            "sent": self.sent,
            "received": self.received,
            "lost": self.sent.saturating_sub(self.received),
            "loss": if self.sent > 0 { 1.0 - self.received as f64 / self.sent as f64 } else { 0.0 },
            "sent_per_s": rate(self.sent, self.send_ns),
            "received_per_s": rate(self.timed, self.recv_ns),
            "sockets_used": self.sockets_used,
            "responder": self.target.addr.to_string(),
            "interface": self.target.interface(),
        }))
    }
}

/// The warning of a packet loss above 1%, from packets sent and received.
pub fn loss_warning(sent: u64, received: u64) -> Option<String> {
    let loss = 1.0 - received as f64 / sent.max(1) as f64;
    (sent > 0 && loss > 0.01).then(|| {
        Warning::DatagramLoss {
            percent: loss * 100.0,
        }
        .to_string()
    })
}

/// Bulk TCP: `streams` connections written in `CHUNK`s; each batch ends
/// when the responder has received every byte.
pub struct TcpStreamBench {
    conns: Vec<TcpStream>,
    session: Session,
    target: Target,
    buf: Vec<u8>,
    written: u64,
}

impl TcpStreamBench {
    /// Opens `streams` connections to a sink.
    pub fn prepare(
        path: Path,
        peer: Option<&Peer>,
        streams: usize,
    ) -> Result<TcpStreamBench, PrepareError> {
        let (target, session) = Target::with_session(
            path,
            peer,
            Test::TcpSink {
                streams: streams as u32,
            },
        )?;
        let conns = (0..streams)
            .map(|_| target.connect(&session))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(TcpStreamBench {
            conns,
            session,
            target,
            buf: vec![0xa5; CHUNK],
            written: 0,
        })
    }
}

impl Timed for TcpStreamBench {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let n = self.conns.len() as u64;
        let t0 = Instant::now();
        if n == 1 {
            for _ in 0..ops {
                self.conns[0].write_all(&self.buf)?;
            }
        } else {
            let buf = &self.buf;
            std::thread::scope(|s| -> anyhow::Result<()> {
                let hs: Vec<_> = self
                    .conns
                    .iter_mut()
                    .enumerate()
                    .map(|(i, c)| {
                        let share = ops / n + u64::from((i as u64) < ops % n);
                        s.spawn(move || -> std::io::Result<()> {
                            for _ in 0..share {
                                c.write_all(buf)?;
                            }
                            Ok(())
                        })
                    })
                    .collect();
                for h in hs {
                    h.join()
                        .map_err(|_| anyhow::anyhow!("a writing thread panicked"))??;
                }
                Ok(())
            })?;
        }
        self.written += ops * CHUNK as u64;
        let t = self.session.tally(&format!("sync {}", self.written))?;
        if t.received < self.written {
            bail!(
                "the responder received {} of {} bytes",
                t.received,
                self.written
            );
        }
        Ok(t0.elapsed())
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "streams": self.conns.len(),
            "write_bytes": CHUNK,
            "responder": self.target.addr.to_string(),
            "interface": self.target.interface(),
        }))
    }
}

/// Request/response round trips of `size` bytes each way on one
/// connection with TCP_NODELAY (netperf TCP_RR); every trip is timed.
pub struct TcpRr {
    conn: TcpStream,
    _session: Session,
    _target: Target,
    msg: Vec<u8>,
    back: Vec<u8>,
    times: Vec<f64>,
}

impl TcpRr {
    /// Connects to an echo responder.
    pub fn prepare(path: Path, peer: Option<&Peer>, size: usize) -> Result<TcpRr, PrepareError> {
        let (target, session) =
            Target::with_session(path, peer, Test::TcpEcho { size: size as u32 })?;
        let conn = target.connect(&session)?;
        conn.set_nodelay(true)?;
        conn.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(TcpRr {
            conn,
            _session: session,
            _target: target,
            msg: vec![0x3c; size],
            back: vec![0; size],
            times: Vec::new(),
        })
    }
}

impl Timed for TcpRr {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let t0 = Instant::now();
        for _ in 0..ops {
            let t = Instant::now();
            self.conn.write_all(&self.msg)?;
            self.conn
                .read_exact(&mut self.back)
                .context("reading the echo")?;
            self.times.push(t.elapsed().as_nanos() as f64);
        }
        Ok(t0.elapsed())
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.times)
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "nodelay": true,
            "responder": self._target.addr.to_string(),
            "interface": self._target.interface(),
        }))
    }
}

/// Connect, request, response, close per operation (netperf TCP_CRR).
/// The client closes with SO_LINGER 0 (a reset), so a long run leaves no
/// TIME_WAIT sockets to exhaust the ephemeral ports.
pub struct TcpCrr {
    _session: Session,
    target: Target,
    port: u16,
    req: Vec<u8>,
    back: Vec<u8>,
    times: Vec<f64>,
}

impl TcpCrr {
    /// Starts a connection-per-request responder.
    pub fn prepare(path: Path, peer: Option<&Peer>, size: usize) -> Result<TcpCrr, PrepareError> {
        let (target, session) =
            Target::with_session(path, peer, Test::TcpCrr { size: size as u32 })?;
        let port = session.port()?;
        let key = session
            .reply
            .key
            .clone()
            .ok_or_else(|| anyhow::anyhow!("the server gave no session key"))?;
        let mut req = key.into_bytes();
        req.truncate(KEY_LEN);
        req.resize(KEY_LEN + size, 0x21);
        Ok(TcpCrr {
            _session: session,
            target,
            port,
            req,
            back: vec![0; size],
            times: Vec::new(),
        })
    }
}

impl Timed for TcpCrr {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let _in = super::netns::Enter::new(self.target.client_ns())?;
        let addr = (self.target.addr.ip(), self.port);
        let t0 = Instant::now();
        for _ in 0..ops {
            let t = Instant::now();
            let mut c = TcpStream::connect(addr).context("connecting")?;
            c.set_nodelay(true)?;
            setsockopt(
                &c,
                sockopt::Linger,
                &libc::linger {
                    l_onoff: 1,
                    l_linger: 0,
                },
            )?;
            c.write_all(&self.req)?;
            c.read_exact(&mut self.back)
                .context("reading the response")?;
            drop(c);
            self.times.push(t.elapsed().as_nanos() as f64);
        }
        Ok(t0.elapsed())
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.times)
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(
            serde_json::json!({ "close": "reset (SO_LINGER 0)", "responder": self.target.addr.to_string(), "interface": self.target.interface() }),
        )
    }
}
