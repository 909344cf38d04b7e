//! Sockets: Unix domain (stream, datagram, seqpacket) with their paths in a
//! private directory that is removed as soon as the pair is connected, and
//! TCP and UDP bound to 127.0.0.1 only.
//!
//! Each constructor returns connected (parent, peer) ends; a connected
//! socket carries data both ways, so one pair serves both benchmark shapes.

use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::Path;

use nix::sys::socket::{
    AddressFamily, Backlog, SockFlag, SockType, UnixAddr, accept, bind, connect, getsockopt,
    listen, setsockopt, socket, sockopt,
};
use nix::sys::time::{TimeVal, TimeValLike};

use super::pipe::FdEnd;
use crate::harness::PrepareError;

/// Longest time the parent's end blocks in a receive before it reports a
/// lost message instead of hanging.
const RECV_TIMEOUT_S: i64 = 10;

/// A private directory for socket paths inside the run's temp dir. Unix
/// socket addresses hold at most 107 bytes, so an over-long temp path is
/// reported with what to do.
fn socket_dir(tmp: &Path) -> Result<tempfile::TempDir, PrepareError> {
    let dir = tempfile::Builder::new()
        .prefix("ipc-")
        .tempdir_in(tmp)
        .map_err(|e| anyhow::anyhow!("creating a directory in {}: {e}", tmp.display()))?;
    if dir.path().as_os_str().len() + 8 > 107 {
        return Err(PrepareError::Fail(anyhow::anyhow!(
            "the temp dir {} is too long for a Unix socket address (107 bytes at most); set TMPDIR to a shorter path",
            dir.path().display()
        )));
    }
    Ok(dir)
}

/// Bounds the parent end's receives, so that a lost message is an error.
fn recv_timeout<F: AsFd>(fd: &F) -> Result<(), PrepareError> {
    setsockopt(
        fd,
        sockopt::ReceiveTimeout,
        &TimeVal::seconds(RECV_TIMEOUT_S),
    )?;
    Ok(())
}

/// A Unix stream socket pair through a listening path: (parent, peer).
pub fn unix_stream(tmp: &Path) -> Result<(FdEnd, FdEnd), PrepareError> {
    let dir = socket_dir(tmp)?;
    let path = dir.path().join("s");
    let listener = UnixListener::bind(&path)?;
    let a = UnixStream::connect(&path)?;
    let (b, _) = listener.accept()?;
    drop(listener);
    drop(dir); // removes the path; the connection stays
    let (a, b): (OwnedFd, OwnedFd) = (a.into(), b.into());
    recv_timeout(&a)?;
    Ok((FdEnd::socket(a, false), FdEnd::socket(b, false)))
}

/// Two Unix datagram sockets bound to paths and connected to each other.
pub fn unix_dgram(tmp: &Path, size: usize) -> Result<(FdEnd, FdEnd), PrepareError> {
    let dir = socket_dir(tmp)?;
    let (pa, pb) = (dir.path().join("a"), dir.path().join("b"));
    let a = UnixDatagram::bind(&pa)?;
    let b = UnixDatagram::bind(&pb)?;
    a.connect(&pb)?;
    b.connect(&pa)?;
    drop(dir);
    let (a, b): (OwnedFd, OwnedFd) = (a.into(), b.into());
    message_ends(a, b, size)
}

/// A Unix seqpacket pair (connected, message boundaries kept).
pub fn unix_seqpacket(tmp: &Path, size: usize) -> Result<(FdEnd, FdEnd), PrepareError> {
    let dir = socket_dir(tmp)?;
    let addr = UnixAddr::new(&dir.path().join("q"))?;
    let mk = || {
        socket(
            AddressFamily::Unix,
            SockType::SeqPacket,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
    };
    let listener = mk().map_err(|e| {
        PrepareError::Skip(format!(
            "Unix seqpacket sockets are not available here ({e})"
        ))
    })?;
    bind(listener.as_raw_fd(), &addr)?;
    listen(&listener, Backlog::new(1)?)?;
    let a = mk()?;
    connect(a.as_raw_fd(), &addr)?;
    let b = accept(listener.as_raw_fd())?;
    // SAFETY: accept returned a new descriptor that nothing else owns.
    let b = unsafe { OwnedFd::from_raw_fd(b) };
    drop(listener);
    drop(dir);
    message_ends(a, b, size)
}

/// The ends of a connected pair of message sockets, each with a send buffer
/// grown for `size`-byte messages (the buffer is what limits them).
fn message_ends(a: OwnedFd, b: OwnedFd, size: usize) -> Result<(FdEnd, FdEnd), PrepareError> {
    for s in [&a, &b] {
        grow_sndbuf(s, size);
    }
    recv_timeout(&a)?;
    let limit = "the socket send buffer (net.core.wmem_max)";
    Ok((
        FdEnd::socket(a, true).limited_by(limit),
        FdEnd::socket(b, true).limited_by(limit),
    ))
}

/// Asks for a send buffer that holds a few messages (the kernel caps it at
/// net.core.wmem_max; a message larger than the buffer is refused).
fn grow_sndbuf<F: AsFd>(fd: &F, size: usize) {
    if let Ok(cur) = getsockopt(fd, sockopt::SndBuf) {
        let want = (size * 4 + 4096).min(64 << 20);
        if want > cur {
            let _ = setsockopt(fd, sockopt::SndBuf, &want);
        }
    }
}

/// A TCP connection over 127.0.0.1: (parent, peer). `nodelay` turns off
/// Nagle's algorithm (for round trips).
pub fn tcp(nodelay: bool) -> Result<(FdEnd, FdEnd), PrepareError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let a = TcpStream::connect(listener.local_addr()?)?;
    let (b, _) = listener.accept()?;
    drop(listener);
    a.set_nodelay(nodelay)?;
    b.set_nodelay(nodelay)?;
    let (a, b): (OwnedFd, OwnedFd) = (a.into(), b.into());
    recv_timeout(&a)?;
    let a = FdEnd::socket(a, false);
    let a = if nodelay { a } else { a.with_nagle() };
    Ok((a, FdEnd::socket(b, false)))
}

/// The largest UDP payload in one IPv4 datagram.
pub const UDP_MAX: usize = 65_507;

/// Two UDP sockets on 127.0.0.1 connected to each other: (parent, peer),
/// and the bytes the parent may have in flight without the receive buffer
/// overflowing (UDP drops what does not fit; the benchmark must not).
pub fn udp(size: usize) -> Result<(FdEnd, FdEnd, u64), PrepareError> {
    if size > UDP_MAX {
        return Err(PrepareError::Skip(format!(
            "a UDP datagram carries at most {UDP_MAX} bytes; {size} does not fit"
        )));
    }
    let a = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    let b = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    let (a, b): (OwnedFd, OwnedFd) = (a.into(), b.into());
    let _ = setsockopt(&b, sockopt::RcvBuf, &(4 << 20));
    let rcvbuf = getsockopt(&b, sockopt::RcvBuf).unwrap_or(200_000);
    // Each datagram costs its payload plus roughly 1.3 KB of kernel
    // bookkeeping against the receive buffer; keep half of it free.
    let msgs = (rcvbuf / 2 / (size + 1280)).max(1) as u64;
    recv_timeout(&a)?;
    Ok((
        FdEnd::socket(a, true),
        FdEnd::socket(b, true),
        msgs * size as u64,
    ))
}
