//! UDP sends and receives one datagram at a time or in sendmmsg/recvmmsg
//! batches, for both ends of the UDP benchmarks.

use std::io::{IoSlice, IoSliceMut};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use nix::sys::socket::{MsgFlags, MultiHeaders, SockaddrStorage, recvmmsg, sendmmsg};

/// How long a receiver polls an empty queue before it blocks.
pub const SPIN: Duration = Duration::from_micros(50);

/// The receiving end: a socket and buffers for one batch.
pub struct Receiver {
    sock: UdpSocket,
    bufs: Vec<Vec<u8>>,
    hdrs: MultiHeaders<SockaddrStorage>,
}

impl Receiver {
    /// Receives on `sock` up to `batch` datagrams of at most `size` bytes per call.
    pub fn new(sock: UdpSocket, size: usize, batch: usize) -> Receiver {
        let batch = batch.max(1);
        Receiver {
            sock,
            bufs: vec![vec![0u8; size.max(1)]; batch],
            hdrs: MultiHeaders::preallocate(batch, None),
        }
    }

    /// Waits for datagrams (up to the socket's receive timeout) and returns
    /// how many arrived: one `recv` when the batch is 1, else one `recvmmsg`.
    ///
    /// An empty queue is polled without sleeping for [`SPIN`] before the
    /// call blocks: a receiver that sleeps whenever it has caught up makes
    /// the sender wake it for every datagram, a cost that belongs to
    /// neither path nor socket (iperf3's receiver, slower per datagram,
    /// seldom sleeps during a test, and so spares its sender that cost).
    pub fn recv(&mut self) -> std::io::Result<usize> {
        let start = Instant::now();
        loop {
            match self.take(MsgFlags::MSG_DONTWAIT) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if start.elapsed() >= SPIN {
                        return self.take(MsgFlags::empty());
                    }
                    std::hint::spin_loop();
                }
                other => return other,
            }
        }
    }

    /// One `recv` or `recvmmsg` with `flags` (MSG_DONTWAIT: do not block).
    fn take(&mut self, flags: MsgFlags) -> std::io::Result<usize> {
        let fd = self.sock.as_raw_fd();
        if self.bufs.len() == 1 {
            return Ok(nix::sys::socket::recv(fd, &mut self.bufs[0], flags).map(|_| 1)?);
        }
        let mut iovs: Vec<[IoSliceMut; 1]> =
            self.bufs.iter_mut().map(|b| [IoSliceMut::new(b)]).collect();
        // MSG_WAITFORONE: block for the first datagram only, then take what is queued.
        let res = recvmmsg(
            fd,
            &mut self.hdrs,
            iovs.iter_mut(),
            flags | MsgFlags::MSG_WAITFORONE,
            None,
        )?;
        Ok(res.count())
    }
}

/// The sending end: a connected socket and one payload sent `batch` times per call.
pub struct Sender {
    sock: UdpSocket,
    payload: Vec<u8>,
    batch: usize,
}

impl Sender {
    /// Sends `size`-byte datagrams on the connected `sock`, `batch` per call.
    pub fn new(sock: UdpSocket, size: usize, batch: usize) -> Sender {
        let batch = batch.max(1);
        Sender {
            sock,
            payload: vec![0x5a; size],
            batch,
        }
    }

    /// Sends `n` datagrams; returns how many the kernel accepted (a full
    /// send queue on a non-blocking path or ENOBUFS drops the rest of a call).
    pub fn send(&mut self, n: u64) -> std::io::Result<u64> {
        let mut sent = 0;
        if self.batch == 1 {
            while sent < n {
                match self.sock.send(&self.payload) {
                    // ENOBUFS: dropped on the way out, a loss like any other.
                    Ok(_) => sent += 1,
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => sent += 1,
                    Err(e) => return Err(e),
                }
            }
            return Ok(sent);
        }
        // Built per call: the headers hold raw pointers, which would keep
        // a Sender from moving to the thread that uses it.
        let mut hdrs = MultiHeaders::<SockaddrStorage>::preallocate(self.batch, None);
        let iov = [IoSlice::new(&self.payload)];
        while sent < n {
            let want = (n - sent).min(self.batch as u64) as usize;
            let slices: Vec<&[IoSlice]> = vec![&iov[..]; want];
            let addrs: Vec<Option<SockaddrStorage>> = vec![None; want];
            match sendmmsg(
                self.sock.as_raw_fd(),
                &mut hdrs,
                slices.iter(),
                &addrs,
                [],
                MsgFlags::empty(),
            ) {
                // A short count leaves the rest of the batch for the next call.
                Ok(r) => sent += r.count().max(1) as u64,
                Err(nix::errno::Errno::ENOBUFS) => sent += want as u64,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(sent)
    }
}
