//! Pipes: the anonymous pipe, the FIFO (a pipe with a name in the file
//! system), and the zero-copy path through a pipe (vmsplice in, splice out).
//!
//! [`FdEnd`] is also the end of every socket mechanism: `read` and `write`
//! on a file descriptor, as dd and cat use them.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl, open};
use nix::sys::stat::Mode;
use nix::unistd::{mkfifo, pipe};

use super::link::End;
use crate::harness::PrepareError;
use crate::os::sys::retry_eintr;

/// An end made of file descriptors: it writes to `wr` and reads from `rd`
/// (the same descriptor for a socket). Owns them; closes them on drop.
pub struct FdEnd {
    _own: Vec<OwnedFd>,
    rd: RawFd,
    wr: RawFd,
    datagram: bool,
    limit: &'static str,
    nagle: bool,
}

impl FdEnd {
    /// An end owning `own`, reading `rd` and writing `wr`.
    pub fn new(own: Vec<OwnedFd>, rd: RawFd, wr: RawFd, datagram: bool) -> FdEnd {
        FdEnd {
            _own: own,
            rd,
            wr,
            datagram,
            limit: "the mechanism's maximum message size",
            nagle: false,
        }
    }

    /// An end on one socket (reads and writes the same descriptor).
    pub fn socket(fd: OwnedFd, datagram: bool) -> FdEnd {
        let raw = fd.as_raw_fd();
        FdEnd::new(vec![fd], raw, raw, datagram)
    }

    /// Names what limits the message size (shown when the kernel refuses one).
    pub fn limited_by(mut self, what: &'static str) -> FdEnd {
        self.limit = what;
        self
    }

    /// Marks a TCP end that keeps Nagle's algorithm: [`End::flush`] pushes
    /// out a held-back last segment instead of waiting for a delayed ACK.
    pub fn with_nagle(mut self) -> FdEnd {
        self.nagle = true;
        self
    }

    fn set_nodelay(&self, on: bool) -> Result<(), Errno> {
        let v: libc::c_int = on.into();
        // SAFETY: v is a valid c_int option value for TCP_NODELAY.
        let r = unsafe {
            libc::setsockopt(
                self.wr,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        Errno::result(r).map(drop)
    }

    /// One anonymous pipe: (write end, read end).
    pub fn pipe() -> nix::Result<(FdEnd, FdEnd)> {
        let (r, w) = pipe()?;
        let (rr, wr) = (r.as_raw_fd(), w.as_raw_fd());
        Ok((
            FdEnd::new(vec![w], -1, wr, false),
            FdEnd::new(vec![r], rr, -1, false),
        ))
    }

    /// Two anonymous pipes, one each way: (parent end, peer end).
    pub fn pipe_duplex() -> nix::Result<(FdEnd, FdEnd)> {
        let (r1, w1) = pipe()?;
        let (r2, w2) = pipe()?;
        let (a_wr, b_rd) = (w1.as_raw_fd(), r1.as_raw_fd());
        let (b_wr, a_rd) = (w2.as_raw_fd(), r2.as_raw_fd());
        Ok((
            FdEnd::new(vec![w1, r2], a_rd, a_wr, false),
            FdEnd::new(vec![r1, w2], b_rd, b_wr, false),
        ))
    }
}

impl End for FdEnd {
    fn datagram(&self) -> bool {
        self.datagram
    }

    #[inline]
    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        let mut off = 0;
        while off < msg.len() {
            let rest = msg.get(off..).unwrap_or(&[]);
            // SAFETY: rest is a valid readable buffer of rest.len() bytes.
            off +=
                retry_eintr(|| unsafe { libc::write(self.wr, rest.as_ptr().cast(), rest.len()) })?
                    as usize;
            if self.datagram && off < msg.len() {
                return Err(Errno::EMSGSIZE); // a datagram goes whole or not at all
            }
        }
        Ok(())
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        // SAFETY: buf is a valid writable buffer of buf.len() bytes.
        retry_eintr(|| unsafe { libc::read(self.rd, buf.as_mut_ptr().cast(), buf.len()) })
            .map(|n| n as usize)
    }

    fn flush(&mut self) -> Result<(), Errno> {
        if self.nagle {
            // Turning TCP_NODELAY on sends what Nagle holds back at once.
            self.set_nodelay(true)?;
            self.set_nodelay(false)?;
        }
        Ok(())
    }

    fn size_limit(&self) -> &'static str {
        self.limit
    }
}

/// A FIFO in `dir`, opened both ways before the fork and unlinked at once:
/// (write end, read end).
pub fn fifo(dir: &Path) -> Result<(FdEnd, FdEnd), PrepareError> {
    let path = dir.join("fifo");
    mkfifo(&path, Mode::S_IRUSR | Mode::S_IWUSR)
        .map_err(|e| PrepareError::Fail(anyhow::anyhow!("mkfifo {}: {e}", path.display())))?;
    // Open the read end without blocking (no writer yet), then the write end.
    let r = open(&path, OFlag::O_RDONLY | OFlag::O_NONBLOCK, Mode::empty())?;
    let w = open(&path, OFlag::O_WRONLY, Mode::empty())?;
    fcntl(&r, FcntlArg::F_SETFL(OFlag::empty()))?;
    std::fs::remove_file(&path)?;
    let (rr, wr) = (r.as_raw_fd(), w.as_raw_fd());
    Ok((
        FdEnd::new(vec![w], -1, wr, false),
        FdEnd::new(vec![r], rr, -1, false),
    ))
}

/// The sending end of the zero-copy path: vmsplice maps the message's
/// pages into the pipe instead of copying them.
pub struct VmspliceEnd {
    wr: OwnedFd,
}

/// The receiving end of the zero-copy path: splice moves the pipe's pages
/// to /dev/null without copying them to user memory (the integrity check
/// reads them with read(), so the bytes are still verified).
pub struct SpliceEnd {
    rd: OwnedFd,
    null: File,
}

/// A pipe for the zero-copy path: (vmsplice end, splice end).
pub fn splice_pair() -> Result<(VmspliceEnd, SpliceEnd), PrepareError> {
    let (r, w) = pipe()?;
    let null = File::options()
        .write(true)
        .open("/dev/null")
        .map_err(|e| PrepareError::Skip(format!("cannot open /dev/null for splice: {e}")))?;
    // Probe both calls once so a kernel without them is a skip, not a failure.
    let probe = [0u8; 1];
    let iov = [libc::iovec {
        iov_base: probe.as_ptr() as *mut libc::c_void,
        iov_len: 1,
    }];
    // SAFETY: iov points at a live 1-byte buffer.
    let n = unsafe { libc::vmsplice(w.as_raw_fd(), iov.as_ptr(), 1, 0) };
    if let Err(e) = Errno::result(n) {
        return Err(PrepareError::Skip(format!(
            "vmsplice is not available here ({e})"
        )));
    }
    // SAFETY: valid descriptors, no offsets.
    let n = unsafe {
        libc::splice(
            r.as_raw_fd(),
            std::ptr::null_mut(),
            null.as_raw_fd(),
            std::ptr::null_mut(),
            1,
            0,
        )
    };
    if let Err(e) = Errno::result(n) {
        return Err(PrepareError::Skip(format!(
            "splice to /dev/null is not available here ({e})"
        )));
    }
    Ok((VmspliceEnd { wr: w }, SpliceEnd { rd: r, null }))
}

impl End for VmspliceEnd {
    fn datagram(&self) -> bool {
        false
    }

    #[inline]
    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        let mut off = 0;
        while off < msg.len() {
            let rest = msg.get(off..).unwrap_or(&[]);
            let iov = [libc::iovec {
                iov_base: rest.as_ptr() as *mut libc::c_void,
                iov_len: rest.len(),
            }];
            // SAFETY: iov describes a live buffer that stays unchanged while
            // the pipe references it (messages are never modified in place).
            off +=
                retry_eintr(|| unsafe { libc::vmsplice(self.wr.as_raw_fd(), iov.as_ptr(), 1, 0) })?
                    as usize;
        }
        Ok(())
    }

    fn recv(&mut self, _buf: &mut [u8]) -> Result<usize, Errno> {
        Err(Errno::EBADF) // the sending end only sends
    }
}

impl End for SpliceEnd {
    fn datagram(&self) -> bool {
        false
    }

    fn send(&mut self, _msg: &[u8]) -> Result<(), Errno> {
        Err(Errno::EBADF) // the receiving end only receives
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        // SAFETY: buf is a valid writable buffer of buf.len() bytes.
        retry_eintr(|| unsafe {
            libc::read(self.rd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())
        })
        .map(|n| n as usize)
    }

    #[inline]
    fn drain(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        // SAFETY: valid descriptors, no offsets.
        retry_eintr(|| unsafe {
            libc::splice(
                self.rd.as_raw_fd(),
                std::ptr::null_mut(),
                self.null.as_raw_fd(),
                std::ptr::null_mut(),
                buf.len(),
                0,
            )
        })
        .map(|n| n as usize)
    }
}
