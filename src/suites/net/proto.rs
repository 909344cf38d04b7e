//! The wire protocol between the net benchmarks and their responder
//! (`opcost serve`, or the same server run inside opcost for the loopback
//! and veth paths).
//!
//! A session is one TCP control connection. The client sends one JSON line
//! (at most [`MAX_LINE`] bytes) with the token and the test; the server
//! answers one JSON line ([`Reply`]) with the data port, then serves the
//! test until the control connection closes. Every data connection starts
//! with the session key from the reply, so no connection is served without
//! the token. During a UDP or TCP-sink session the client sends
//! `count QUIET_US [SENT]` or `sync N` lines on the control connection and
//! gets a [`Tally`] back.

use std::io::{BufRead, Read};

use serde::{Deserialize, Serialize};

/// Longest request line the server reads; anything longer is refused.
pub const MAX_LINE: usize = 4096;
/// Length of a session key (hex digits), sent first on every data connection.
pub const KEY_LEN: usize = 32;
/// Largest TCP request/response message a server accepts.
pub const MAX_MSG: u32 = 1 << 20;
/// Largest UDP payload (IPv4, no fragmentation beyond what the stack does).
pub const MAX_UDP: u32 = 65_507;
/// Most parallel streams or sockets one session may ask for.
pub const MAX_STREAMS: u32 = 64;

/// What a session asks the server to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "snake_case")]
pub enum Test {
    /// Nothing but the server's description: checks the token and reachability.
    Hello,
    /// Accept `streams` connections and discard what they send.
    TcpSink {
        /// Connections the client will open.
        streams: u32,
    },
    /// Accept one connection and echo every `size`-byte message.
    TcpEcho {
        /// Bytes per message each way.
        size: u32,
    },
    /// Accept connections one after another: read `size` bytes, answer `size` bytes, close.
    TcpCrr {
        /// Bytes of request and of response.
        size: u32,
    },
    /// Count the datagrams arriving on `sockets` SO_REUSEPORT sockets of one port.
    UdpSink {
        /// Expected payload size (datagrams are read into a buffer this large).
        size: u32,
        /// Sockets (and receiving threads) in the reuseport group.
        sockets: u32,
        /// Datagrams per recvmmsg call (1: plain recvfrom).
        batch: u32,
    },
}

impl Test {
    /// Why the server refuses this request, if it is beyond its limits.
    pub fn over_limit(&self) -> Option<String> {
        match *self {
            Test::Hello => None,
            Test::TcpSink { streams } if streams == 0 || streams > MAX_STREAMS => Some(format!(
                "tcp_sink streams {streams} is outside 1..={MAX_STREAMS}"
            )),
            Test::TcpEcho { size } | Test::TcpCrr { size } if size == 0 || size > MAX_MSG => {
                Some(format!("message size {size} is outside 1..={MAX_MSG}"))
            }
            Test::UdpSink { size, .. } if size == 0 || size > MAX_UDP => {
                Some(format!("udp payload {size} is outside 1..={MAX_UDP}"))
            }
            Test::UdpSink { sockets, .. } if sockets == 0 || sockets > MAX_STREAMS => Some(
                format!("udp_sink sockets {sockets} is outside 1..={MAX_STREAMS}"),
            ),
            Test::UdpSink { batch, .. } if batch == 0 || batch > 1024 => {
                Some(format!("udp_sink batch {batch} is outside 1..=1024"))
            }
            _ => None,
        }
    }
}

/// The first line of a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The server's token.
    pub token: String,
    /// What to do.
    #[serde(flatten)]
    pub test: Test,
}

/// The server's answer to a [`Request`]; a field it leaves out is false,
/// absent or zero.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reply {
    /// True when the test is being served.
    pub ok: bool,
    /// Why it is not, when `ok` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The data port (TCP listener or UDP sockets), for tests that have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The key every data connection sends first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The server's machine description (only for `hello`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<serde_json::Value>,
    /// Longest time the server serves one session (s).
    pub max_secs: u64,
    /// Most bytes the server moves in one session.
    pub max_bytes: u64,
}

/// What the server counted since the previous tally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// Datagrams (UDP) or bytes (TCP sink) received.
    pub received: u64,
    /// Of `received`, those that arrived within `span_ns` (the first
    /// batch of each socket arrived before its first timestamp).
    #[serde(default)]
    pub timed: u64,
    /// Time from the first to the last arrival, on the server's clock (ns).
    pub span_ns: u64,
    /// Sockets of the reuseport group that received anything.
    pub sockets_used: u32,
}

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The connection closed before a newline.
    #[error("connection closed")]
    Closed,
    /// More bytes than the line may hold (its limit) without a newline.
    #[error("line longer than {0} bytes")]
    TooLong(usize),
    /// Not UTF-8.
    #[error("request is not UTF-8 text")]
    NotText,
    /// The whole line did not arrive by its deadline.
    #[error("no complete request by the deadline")]
    Deadline,
    /// A read failed or timed out.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads one line of at most [`MAX_LINE`] bytes (the newline excluded):
/// a request, or a control line, from a client the server does not trust.
pub fn read_line(r: &mut impl BufRead) -> Result<String, LineError> {
    read_line_max(r, MAX_LINE)
}

/// Longest reply line a client reads from its server: a `hello` reply
/// carries the server's machine description, and the CPU flags of a
/// recent Xeon alone took it past [`MAX_LINE`].
pub const MAX_REPLY: usize = 1 << 20;

/// Reads one reply line of at most [`MAX_REPLY`] bytes (the newline
/// excluded), as a client reads its server's answers.
pub fn read_reply(r: &mut impl BufRead) -> Result<String, LineError> {
    read_line_max(r, MAX_REPLY)
}

/// Reads one line of at most `max` bytes (the newline excluded).
fn read_line_max(r: &mut impl BufRead, max: usize) -> Result<String, LineError> {
    let mut buf = Vec::new();
    let n = r.take(max as u64 + 1).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Err(LineError::Closed);
    }
    if buf.last() != Some(&b'\n') {
        return Err(if buf.len() > max {
            LineError::TooLong(max)
        } else {
            LineError::Closed
        });
    }
    buf.pop();
    String::from_utf8(buf).map_err(|_| LineError::NotText)
}

/// Reads exactly `KEY_LEN` bytes: the key a data connection starts with.
pub fn read_key(r: &mut impl Read) -> std::io::Result<String> {
    let mut k = [0u8; KEY_LEN];
    r.read_exact(&mut k)?;
    Ok(String::from_utf8_lossy(&k).into_owned())
}

/// A new random token or key: `KEY_LEN` hex digits.
pub fn random_key() -> String {
    (0..KEY_LEN / 16)
        .map(|_| format!("{:016x}", fastrand::u64(..)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_as_one_json_line() {
        let r = Request {
            token: "t".into(),
            test: Test::UdpSink {
                size: 64,
                sockets: 2,
                batch: 32,
            },
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains('\n'));
        assert!(text.contains("\"test\":\"udp_sink\""));
        assert_eq!(serde_json::from_str::<Request>(&text).unwrap(), r);
    }

    #[test]
    fn limits_refuse_zero_and_huge_requests() {
        assert!(Test::TcpEcho { size: 0 }.over_limit().is_some());
        assert!(Test::TcpEcho { size: MAX_MSG + 1 }.over_limit().is_some());
        assert!(Test::TcpEcho { size: 64 }.over_limit().is_none());
        assert!(
            Test::UdpSink {
                size: 70_000,
                sockets: 1,
                batch: 1
            }
            .over_limit()
            .is_some()
        );
        assert!(Test::TcpSink { streams: 1000 }.over_limit().is_some());
    }

    #[test]
    fn long_lines_are_refused_short_ones_read() {
        let mut ok = std::io::Cursor::new(b"abc\nrest".to_vec());
        assert_eq!(read_line(&mut ok).unwrap(), "abc");
        let long = vec![b'x'; MAX_LINE + 10];
        let mut r = std::io::Cursor::new(long.clone());
        assert!(matches!(
            read_line(&mut r),
            Err(LineError::TooLong(MAX_LINE))
        ));
        // A reply may be longer: a server's machine description.
        let mut reply = long;
        reply.push(b'\n');
        let text = read_reply(&mut std::io::Cursor::new(reply)).unwrap();
        assert_eq!(text.len(), MAX_LINE + 10);
        let mut huge = std::io::Cursor::new(vec![b'x'; MAX_REPLY + 1]);
        assert!(matches!(
            read_reply(&mut huge),
            Err(LineError::TooLong(MAX_REPLY))
        ));
        let mut eof = std::io::Cursor::new(b"no newline".to_vec());
        assert!(matches!(read_line(&mut eof), Err(LineError::Closed)));
        assert_eq!(random_key().len(), KEY_LEN);
    }
}
