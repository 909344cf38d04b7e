//! The packet rate of a device that runs none of opcost: ICMP echo against
//! the host given with `opcost run net --target HOST` (a router, a board, a
//! switch), whose kernel or firmware answers by itself. Never a default:
//! without `--target` these rows are not run.
//!
//! Requests go out with a bounded window in flight and at most `--max-pps`
//! per second (a modest default, so that a run never floods a device
//! nobody asked to stress); a request not answered within
//! [`LOSS_TIMEOUT`] is lost. The socket is an unprivileged ping socket
//! where `net.ipv4.ping_group_range` admits the user's group, otherwise a
//! raw socket (root, or CAP_NET_RAW); the details say which.
//!
//! Two rows, the same table as the rest of the suite: `net.target.icmp.rate`
//! (replies per second with [`WINDOW`] requests in flight; loss beside it)
//! and `net.target.icmp.rtt` (one request at a time: the round trip, with
//! its percentiles).

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};

use crate::harness::{PrepareError, Timed};

/// Requests per second when `--max-pps` is not given.
pub const DEFAULT_MAX_PPS: u32 = 1000;
/// Requests in flight at once in the rate row.
pub const WINDOW: usize = 16;
/// Send slots a late sender may make up for at once (see `exchange`).
const CATCH_UP: u32 = 4;
/// A request unanswered after this long is counted lost.
pub const LOSS_TIMEOUT: Duration = Duration::from_secs(1);
/// Payload bytes of each request: ping's default (64 B ICMP messages).
const PAYLOAD: usize = 56;
/// Size of an ICMP echo header.
const HEADER: usize = 8;
/// ICMP type of an echo request.
const ECHO_REQUEST: u8 = 8;
/// ICMP type of an echo reply.
const ECHO_REPLY: u8 = 0;

/// The device of this run (`opcost run --target`), resolved once before
/// any benchmark is prepared and carried in the run's context.
#[derive(Clone, Debug)]
pub struct IcmpTarget {
    /// As the user wrote it.
    pub name: String,
    /// The address it resolved to.
    pub addr: Ipv4Addr,
    /// The most requests per second sent to it.
    pub max_pps: u32,
}

/// True for the ids of benchmarks that need `--target`.
pub fn is_target_bench(id: &str) -> bool {
    id.starts_with("net.target.")
}

/// Resolves `host` to an IPv4 address; the error says why not.
pub fn resolve(host: &str) -> anyhow::Result<Ipv4Addr> {
    if host.trim().is_empty() {
        bail!("--target: an empty host name");
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return match ip {
            IpAddr::V4(v4) => Ok(v4),
            IpAddr::V6(_) => {
                bail!("--target {host}: IPv6 is not measured yet; give an IPv4 address")
            }
        };
    }
    let addrs = (host, 0)
        .to_socket_addrs()
        .map_err(|e| anyhow!("--target {host}: the name does not resolve ({e})"))?;
    addrs
        .filter_map(|a| match a.ip() {
            IpAddr::V4(v4) => Some(v4),
            IpAddr::V6(_) => None,
        })
        .next()
        .ok_or_else(|| anyhow!("--target {host}: the name resolves to no IPv4 address"))
}

/// The target `host` of the `net.target.*` benchmarks, sent at most
/// `max_pps` requests per second.
pub fn resolve_target(host: &str, max_pps: u32) -> anyhow::Result<IcmpTarget> {
    if max_pps == 0 {
        bail!("--max-pps 0: the rate cap must be at least 1 request per second");
    }
    Ok(IcmpTarget {
        name: host.to_string(),
        addr: resolve(host)?,
        max_pps,
    })
}

/// Which kind of socket sends the requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// SOCK_DGRAM + IPPROTO_ICMP: the kernel keeps the identifier.
    Ping,
    /// SOCK_RAW + IPPROTO_ICMP: replies come with their IP header.
    Raw,
}

/// The RFC 1071 checksum of `data`.
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request with identifier `id` and sequence `seq`.
fn request(id: u16, seq: u16) -> [u8; HEADER + PAYLOAD] {
    let mut p = [0u8; HEADER + PAYLOAD];
    p[0] = ECHO_REQUEST;
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p[HEADER..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let c = checksum(&p);
    p[2..4].copy_from_slice(&c.to_be_bytes());
    p
}

/// The sequence number of an echo reply to identifier `id` (any, for a
/// ping socket, whose kernel filters by it), from a received packet.
fn reply_seq(pkt: &[u8], kind: Kind, id: u16) -> Option<u16> {
    let icmp = match kind {
        Kind::Ping => pkt,
        Kind::Raw => {
            let ihl = usize::from(pkt.first()? & 0x0f) * 4;
            pkt.get(ihl..)?
        }
    };
    if icmp.len() < HEADER || icmp[0] != ECHO_REPLY {
        return None;
    }
    let rid = u16::from_be_bytes([icmp[4], icmp[5]]);
    if kind == Kind::Raw && rid != id {
        return None;
    }
    Some(u16::from_be_bytes([icmp[6], icmp[7]]))
}

/// Opens an ICMP socket connected to `addr`: a ping socket if allowed,
/// else a raw one; a skip naming both ways when neither is.
fn open_socket(addr: Ipv4Addr) -> Result<(OwnedFd, Kind), PrepareError> {
    let open = |ty: libc::c_int| {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_INET,
                ty | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::IPPROTO_ICMP,
            )
        };
        if fd < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            // SAFETY: a fresh descriptor we own.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    };
    let (fd, kind) = match open(libc::SOCK_DGRAM) {
        Ok(fd) => (fd, Kind::Ping),
        Err(ping) => match open(libc::SOCK_RAW) {
            Ok(fd) => (fd, Kind::Raw),
            Err(raw) => {
                return Err(PrepareError::Skip(format!(
                    "cannot open an ICMP socket: a ping socket was refused ({ping}; net.ipv4.ping_group_range must include your group) and a raw one too ({raw}; needs root or CAP_NET_RAW)"
                )));
            }
        },
    };
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: a valid sockaddr_in of its own size.
    let r = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(PrepareError::Skip(format!(
            "cannot reach {addr}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok((fd, kind))
}

/// The requests of one exchange still in flight: each sequence number's
/// send time, and the sequence numbers in the order they were sent.
struct Flight {
    /// Send time by sequence number; `None` once answered or lost.
    sent_at: Vec<Option<Instant>>,
    /// Sequence numbers, oldest first (answered ones are dropped lazily).
    order: VecDeque<u16>,
}

impl Flight {
    /// No request in flight, a slot for every sequence number.
    fn new() -> Self {
        Flight {
            sent_at: vec![None; 1 << 16],
            order: VecDeque::new(),
        }
    }

    /// Records a request that left at `t`.
    fn sent(&mut self, seq: u16, t: Instant) {
        self.sent_at[usize::from(seq)] = Some(t);
        self.order.push_back(seq);
    }

    /// The send time of the request a reply answers, taken once (a
    /// duplicate or a reply after the loss timeout finds none).
    fn answered(&mut self, seq: u16) -> Option<Instant> {
        self.sent_at[usize::from(seq)].take()
    }

    /// Gives up the oldest requests past the loss timeout: true when any was.
    fn expire(&mut self, now: Instant) -> bool {
        let mut lost = false;
        while let Some(&s) = self.order.front() {
            match self.sent_at[usize::from(s)] {
                Some(t) if now.duration_since(t) >= LOSS_TIMEOUT => {
                    self.sent_at[usize::from(s)] = None;
                    self.order.pop_front();
                    lost = true;
                }
                Some(_) => break,
                None => {
                    self.order.pop_front();
                }
            }
        }
        lost
    }

    /// Requests still waiting for their reply.
    fn outstanding(&self) -> usize {
        self.order
            .iter()
            .filter(|&&s| self.sent_at[usize::from(s)].is_some())
            .count()
    }

    /// How long until the oldest request in flight is given up (the loss
    /// timeout when none is).
    fn until_oldest_expires(&self, now: Instant) -> Duration {
        self.order
            .front()
            .and_then(|&s| self.sent_at[usize::from(s)])
            .map_or(LOSS_TIMEOUT, |t| {
                (t + LOSS_TIMEOUT).saturating_duration_since(now)
            })
    }
}

/// ICMP echo against the run's target, `window` requests in flight.
pub struct Echo {
    sock: OwnedFd,
    kind: Kind,
    id: u16,
    seq: u16,
    window: usize,
    interval: Duration,
    target: IcmpTarget,
    sent: u64,
    received: u64,
    rtts: Vec<f64>,
    all_rtts: Vec<f64>,
    /// Per-operation times handed to the harness (the rtt row).
    op_times: Vec<f64>,
    /// Whether this is the one-at-a-time row (its time is the round trips).
    one_at_a_time: bool,
}

impl Echo {
    /// Opens the socket and checks that `target` (the run's, when it was
    /// given one) answers one request.
    pub fn prepare(window: usize, target: Option<&IcmpTarget>) -> Result<Echo, PrepareError> {
        let target = target.cloned().ok_or_else(|| {
            PrepareError::Skip("the net.target.* benchmarks need --target HOST".into())
        })?;
        let (sock, kind) = open_socket(target.addr)?;
        let mut e = Echo {
            sock,
            kind,
            id: (std::process::id() as u16) ^ fastrand::u16(..),
            seq: 0,
            window: window.max(1),
            interval: Duration::from_secs_f64(1.0 / f64::from(target.max_pps)),
            target,
            sent: 0,
            received: 0,
            rtts: Vec::new(),
            all_rtts: Vec::new(),
            op_times: Vec::new(),
            one_at_a_time: window <= 1,
        };
        let (_, got) = e.exchange(3).map_err(PrepareError::Fail)?;
        if got == 0 {
            return Err(PrepareError::Skip(format!(
                "{} ({}) answered none of 3 ICMP echo requests within {} s (a firewall, or no such host)",
                e.target.name,
                e.target.addr,
                LOSS_TIMEOUT.as_secs()
            )));
        }
        e.sent = 0;
        e.received = 0;
        e.all_rtts.clear();
        Ok(e)
    }

    /// Sends `n` requests (window and rate cap kept) and waits for their
    /// replies or their loss: (time from the first send to the end, replies).
    fn exchange(&mut self, n: u64) -> anyhow::Result<(Duration, u64)> {
        let mut flight = Flight::new();
        let mut buf = [0u8; 2048];
        let (mut sent, mut got) = (0u64, 0u64);
        let start = Instant::now();
        let mut next_send = start;
        let mut end = start;
        self.rtts.clear();
        loop {
            let now = Instant::now();
            if flight.expire(now) {
                end = now;
            }
            let outstanding = flight.outstanding();
            if sent >= n && outstanding == 0 {
                break;
            }
            let may_send = sent < n && outstanding < self.window;
            if may_send && now >= next_send && self.send_one(&mut flight)? {
                sent += 1;
                // Slots are kept on a fixed schedule, so a late wake-up is
                // made up for by the next sends; after a longer stall the
                // schedule restarts from now. Over any stretch the rate
                // stays at or below the cap.
                let stall = self.interval * CATCH_UP;
                next_send = if now > next_send + stall {
                    now
                } else {
                    next_send
                } + self.interval;
                continue;
            }
            // Wait for a reply, the next send slot, or the oldest expiry.
            let mut wait = flight.until_oldest_expires(now);
            if may_send {
                wait = wait.min(next_send.saturating_duration_since(now));
            }
            if !self.wait_readable(wait)? {
                continue;
            }
            let (replies, last) = self.receive_replies(&mut flight, &mut buf)?;
            got += replies;
            if let Some(at) = last {
                end = at;
            }
        }
        self.sent += sent;
        self.received += got;
        self.all_rtts.extend_from_slice(&self.rtts);
        Ok((end.duration_since(start), got))
    }

    /// Sends the next request: true when it left, false when the socket's
    /// buffer is full (it is tried again at the next slot).
    fn send_one(&mut self, flight: &mut Flight) -> anyhow::Result<bool> {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        let pkt = request(self.id, seq);
        // Timed from before the send, as ping does: on a short path the
        // reply is often queued before send() returns.
        let t_send = Instant::now();
        // SAFETY: sending our own buffer on our socket.
        let r = unsafe { libc::send(self.sock.as_raw_fd(), pkt.as_ptr().cast(), pkt.len(), 0) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::WouldBlock {
                return Ok(false);
            }
            return Err(anyhow!(e).context(format!("sending to {}", self.target.addr)));
        }
        flight.sent(seq, t_send);
        Ok(true)
    }

    /// Waits up to `wait` for the socket to become readable: false when a
    /// signal interrupted the wait.
    fn wait_readable(&self, wait: Duration) -> anyhow::Result<bool> {
        let mut p = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(wait.subsec_nanos() as i32),
        };
        // SAFETY: one valid pollfd, a valid timeout, no signal mask.
        let r = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(anyhow!(e).context("waiting for ICMP replies"));
        }
        Ok(true)
    }

    /// Receives every reply queued on the socket, timing each against its
    /// request: (replies matched, when the last one arrived).
    fn receive_replies(
        &mut self,
        flight: &mut Flight,
        buf: &mut [u8],
    ) -> anyhow::Result<(u64, Option<Instant>)> {
        let (mut got, mut last) = (0u64, None);
        loop {
            // SAFETY: receiving into our own buffer.
            let len =
                unsafe { libc::recv(self.sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if len < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::WouldBlock => break,
                    std::io::ErrorKind::Interrupted => continue,
                    // An ICMP error (unreachable) queued on the socket: that request is lost.
                    _ if e.raw_os_error().is_some() => break,
                    _ => return Err(anyhow!(e).context("receiving ICMP replies")),
                }
            }
            let at = Instant::now();
            if let Some(s) = reply_seq(&buf[..len as usize], self.kind, self.id)
                && let Some(t) = flight.answered(s)
            {
                got += 1;
                self.rtts.push(at.duration_since(t).as_nanos() as f64);
                last = Some(at);
            }
        }
        Ok((got, last))
    }

    /// A percentile of every round trip timed so far, ns.
    fn rtt_quantile(&self, q: f64) -> Option<f64> {
        if self.all_rtts.is_empty() {
            return None;
        }
        let mut v = self.all_rtts.clone();
        v.sort_by(f64::total_cmp);
        let i = ((v.len() - 1) as f64 * q).round() as usize;
        Some(v[i])
    }
}

impl Timed for Echo {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let (span, got) = self.exchange(ops)?;
        if got == 0 {
            bail!(
                "{} ({}) answered none of {ops} ICMP echo requests",
                self.target.name,
                self.target.addr
            );
        }
        let scale = ops as f64 / got as f64;
        if self.one_at_a_time {
            // The round trips themselves, lost requests left out.
            let sum: f64 = self.rtts.iter().sum();
            self.op_times.extend_from_slice(&self.rtts);
            return Ok(Duration::from_nanos((sum * scale) as u64));
        }
        // The time `ops` replies take at the rate they came back.
        Ok(Duration::from_nanos(
            (span.as_nanos() as f64 * scale) as u64,
        ))
    }

    fn min_ops(&self) -> u64 {
        if self.one_at_a_time {
            1
        } else {
            4 * self.window as u64
        }
    }

    fn max_ops(&self) -> Option<u64> {
        // A sample lasts at most about a tenth of a second at the rate cap,
        // so the run's budget bounds the requests sent.
        Some((u64::from(self.target.max_pps) / 10).max(self.min_ops()))
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.op_times)
    }

    fn warnings(&self) -> Vec<String> {
        super::bench::loss_warning(self.sent, self.received)
            .into_iter()
            .collect()
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "target": self.target.name,
            "address": self.target.addr.to_string(),
            "socket": match self.kind {
                Kind::Ping => "ping (SOCK_DGRAM)",
                Kind::Raw => "raw (SOCK_RAW)",
            },
            "window": self.window,
            "max_pps": self.target.max_pps,
            "payload": PAYLOAD,
            "sent": self.sent,
            "received": self.received,
            "lost": self.sent.saturating_sub(self.received),
            "loss": if self.sent > 0 { 1.0 - self.received as f64 / self.sent as f64 } else { 0.0 },
            "rtt_p50_ns": self.rtt_quantile(0.5),
            "rtt_p90_ns": self.rtt_quantile(0.9),
            "rtt_p99_ns": self.rtt_quantile(0.99),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_carries_a_valid_checksum() {
        let p = request(0x1234, 7);
        assert_eq!(p[0], ECHO_REQUEST);
        assert_eq!(checksum(&p), 0, "a packet with its checksum sums to zero");
        assert_eq!(u16::from_be_bytes([p[6], p[7]]), 7);
    }

    #[test]
    fn replies_are_matched_by_type_and_identifier() {
        let mut reply = request(9, 5);
        reply[0] = ECHO_REPLY;
        assert_eq!(reply_seq(&reply, Kind::Ping, 0), Some(5));
        let mut ip = vec![0x45u8];
        ip.extend_from_slice(&[0; 19]);
        ip.extend_from_slice(&reply);
        assert_eq!(reply_seq(&ip, Kind::Raw, 9), Some(5));
        assert_eq!(
            reply_seq(&ip, Kind::Raw, 10),
            None,
            "another pinger's reply"
        );
        let req = request(9, 5);
        assert_eq!(reply_seq(&req, Kind::Ping, 9), None, "our own request");
        assert_eq!(reply_seq(&[0x45], Kind::Raw, 9), None);
    }

    #[test]
    fn bad_targets_are_refused_with_the_reason() {
        assert!(resolve("").unwrap_err().to_string().contains("empty"));
        let e = resolve("opcost-no-such-host.invalid")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not resolve"), "{e}");
        assert!(resolve("::1").unwrap_err().to_string().contains("IPv6"));
        assert_eq!(resolve("192.0.2.1").unwrap(), Ipv4Addr::new(192, 0, 2, 1));
    }

    #[test]
    fn the_rows_skip_without_a_target() {
        match Echo::prepare(1, None) {
            Err(PrepareError::Skip(why)) => assert!(why.contains("--target")),
            _ => panic!("expected a skip"),
        }
    }
}
