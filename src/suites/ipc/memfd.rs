//! Handing a buffer over instead of copying it: the sender builds each
//! message in a fresh memfd (create, size, map, write the bytes, unmap) and
//! passes the descriptor through a Unix seqpacket socket (`SCM_RIGHTS`);
//! the receiver maps it and faults its pages in (one byte read per page),
//! so the bytes are in its memory, then unmaps and closes it.
//!
//! The bytes are written once, by the producer, into memory the receiver
//! then maps: no kernel copy. What it costs instead is a new file, its
//! pages (allocated and zeroed by the kernel), two mappings and the page
//! faults, per message. The sender may run a few buffers ahead (the
//! benchmark's window), as a real producer would with a small pool in flight.

use std::os::fd::{AsRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};

use super::link::End;
use crate::harness::PrepareError;
use crate::os::sys::retry_eintr;

/// Bytes of the header sent with each descriptor: the message length.
const HDR: usize = 8;
/// The page size assumed for faulting pages in (a smaller real page only
/// means fewer pages touched than exist; 4 KiB is the minimum on Linux).
const PAGE: usize = 4096;

/// The sending end: makes a memfd per message and passes it.
pub struct PassSender {
    sock: OwnedFd,
}

/// The receiving end: maps each descriptor it receives.
pub struct PassReceiver {
    sock: OwnedFd,
}

/// A hand-over channel: (sender, receiver), and the bytes the sender may
/// have in flight for `size`-byte messages (a few buffers, at least 256 KiB).
pub fn pass_pair(size: usize) -> Result<(PassSender, PassReceiver, u64), PrepareError> {
    let (a, b) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| {
        PrepareError::Skip(format!(
            "Unix seqpacket sockets are not available here ({e})"
        ))
    })?;
    // Probe memfd_create, so a kernel without it is a skip.
    if let Err(e) = memfd(c"opcost-ipc-pass") {
        return Err(PrepareError::Skip(format!(
            "memfd_create is not available ({e})"
        )));
    }
    let window = (size as u64 * 4).max(256 << 10);
    Ok((PassSender { sock: a }, PassReceiver { sock: b }, window))
}

/// memfd_create(2) with MFD_CLOEXEC, called through syscall(2): glibc's
/// wrapper (2.27) is newer than the release binaries' glibc floor (2.17).
pub(super) fn memfd(name: &std::ffi::CStr) -> Result<std::os::fd::OwnedFd, Errno> {
    use std::os::fd::FromRawFd;
    // SAFETY: a valid C string and flags.
    let fd = unsafe { libc::syscall(libc::SYS_memfd_create, name.as_ptr(), libc::MFD_CLOEXEC) };
    // SAFETY: the new descriptor is this process's alone.
    Errno::result(fd).map(|fd| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// Closes a descriptor this end owns.
fn close(fd: i32) {
    // SAFETY: fd is a descriptor this process owns and closes once.
    unsafe { libc::close(fd) };
}

/// Maps `len` bytes of `fd` with `prot`.
fn map(fd: i32, len: usize, prot: i32) -> Result<*mut u8, Errno> {
    // SAFETY: a fresh shared mapping of a memfd this process holds.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        Err(Errno::last())
    } else {
        Ok(p.cast())
    }
}

/// Unmaps what [`map`] mapped.
fn unmap(p: *mut u8, len: usize) {
    // SAFETY: p/len came from map and are unmapped once.
    unsafe { libc::munmap(p.cast(), len) };
}

/// Control-message space for one descriptor, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct CmsgBuf([u8; 64]);

impl CmsgBuf {
    /// A message header of the one buffer `iov` and the first
    /// `control_len` bytes of this control space.
    fn msghdr(&mut self, iov: &mut libc::iovec, control_len: usize) -> libc::msghdr {
        // SAFETY: msghdr is plain data; zero is a valid start.
        let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
        mh.msg_iov = iov;
        mh.msg_iovlen = 1;
        mh.msg_control = self.0.as_mut_ptr().cast();
        mh.msg_controllen = control_len as _;
        mh
    }
}

impl PassSender {
    /// A fresh memfd holding `msg`.
    fn build(msg: &[u8]) -> Result<i32, Errno> {
        let fd = std::os::fd::IntoRawFd::into_raw_fd(memfd(c"opcost-ipc-pass")?);
        let filled = (|| {
            // SAFETY: plain system call on our descriptor.
            Errno::result(unsafe { libc::ftruncate(fd, msg.len() as libc::off_t) })?;
            let p = map(fd, msg.len(), libc::PROT_READ | libc::PROT_WRITE)?;
            // SAFETY: p maps msg.len() writable bytes.
            unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), p, msg.len()) };
            unmap(p, msg.len());
            Ok(())
        })();
        match filled {
            Ok(()) => Ok(fd),
            Err(e) => {
                close(fd);
                Err(e)
            }
        }
    }
}

impl End for PassSender {
    fn datagram(&self) -> bool {
        true
    }

    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        if msg.is_empty() {
            return Err(Errno::EINVAL);
        }
        let fd = Self::build(msg)?;
        let mut head = (msg.len() as u64).to_ne_bytes();
        let mut iov = libc::iovec {
            iov_base: head.as_mut_ptr().cast(),
            iov_len: HDR,
        };
        let mut cbuf = CmsgBuf([0; 64]);
        // SAFETY: CMSG_SPACE is arithmetic.
        let mh = cbuf.msghdr(&mut iov, unsafe { libc::CMSG_SPACE(4) } as usize);
        // SAFETY: the control buffer holds one cmsghdr and an int.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&mh);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(4) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<i32>(), fd);
        }
        // SAFETY: mh describes live buffers.
        let r = retry_eintr(|| unsafe { libc::sendmsg(self.sock.as_raw_fd(), &mh, 0) });
        close(fd); // the receiver holds its own reference now
        r.map(drop)
    }

    fn recv(&mut self, _buf: &mut [u8]) -> Result<usize, Errno> {
        Err(Errno::EBADF) // the sending end only sends
    }

    fn size_limit(&self) -> &'static str {
        "the memfd size (RLIMIT_FSIZE, memory)"
    }
}

impl PassReceiver {
    /// Receives one descriptor and its length; `None` when the sender closed.
    #[inline]
    fn take(&mut self) -> Result<Option<(i32, usize)>, Errno> {
        let mut head = [0u8; HDR];
        let mut iov = libc::iovec {
            iov_base: head.as_mut_ptr().cast(),
            iov_len: HDR,
        };
        let mut cbuf = CmsgBuf([0; 64]);
        let len = cbuf.0.len();
        let mut mh = cbuf.msghdr(&mut iov, len);
        // SAFETY: mh describes live buffers.
        let n = retry_eintr(|| unsafe {
            libc::recvmsg(self.sock.as_raw_fd(), &mut mh, libc::MSG_CMSG_CLOEXEC)
        })?;
        if n == 0 {
            return Ok(None);
        }
        // SAFETY: the kernel filled mh's control buffer; walk it as such.
        let fd = unsafe {
            let c = libc::CMSG_FIRSTHDR(&mh);
            if c.is_null() || (*c).cmsg_type != libc::SCM_RIGHTS {
                None
            } else {
                Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<i32>()))
            }
        };
        let Some(fd) = fd else {
            return Err(Errno::EPROTO); // a message without its descriptor
        };
        if n as usize != HDR || mh.msg_flags & libc::MSG_CTRUNC != 0 {
            close(fd);
            return Err(Errno::EPROTO);
        }
        Ok(Some((fd, u64::from_ne_bytes(head) as usize)))
    }

    /// Receives a buffer, maps it and hands the mapping to `use_it`.
    #[inline]
    fn with_buffer(
        &mut self,
        cap: usize,
        use_it: impl FnOnce(*const u8, usize),
    ) -> Result<usize, Errno> {
        let Some((fd, len)) = self.take()? else {
            return Ok(0);
        };
        if len > cap || len == 0 {
            close(fd);
            return Err(Errno::EMSGSIZE);
        }
        let p = map(fd, len, libc::PROT_READ);
        close(fd);
        let p = p?;
        use_it(p, len);
        unmap(p, len);
        Ok(len)
    }
}

impl End for PassReceiver {
    fn datagram(&self) -> bool {
        true
    }

    fn send(&mut self, _msg: &[u8]) -> Result<(), Errno> {
        Err(Errno::EBADF) // the receiving end only receives
    }

    /// Copies the handed-over bytes out (the integrity check reads them).
    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let dst = buf.as_mut_ptr();
        self.with_buffer(buf.len(), |p, len| {
            // SAFETY: p maps len readable bytes; buf holds at least len.
            unsafe { std::ptr::copy_nonoverlapping(p, dst, len) };
        })
    }

    /// Maps the buffer and faults each of its pages in: the bytes are then
    /// in the receiver's memory, without a copy.
    #[inline]
    fn drain(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        self.with_buffer(buf.len(), |p, len| {
            let mut off = 0;
            while off < len {
                // SAFETY: off < len, inside the mapping.
                unsafe { std::ptr::read_volatile(p.add(off)) };
                off += PAGE;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::check::pattern;

    #[test]
    fn a_handed_over_buffer_arrives_intact_and_the_end_sees_eof() {
        let (mut tx, mut rx, window) = pass_pair(10_000).unwrap();
        assert!(window >= 40_000);
        let msg = pattern(10_000, 3);
        tx.send(&msg).unwrap();
        tx.send(&msg).unwrap();
        let mut buf = vec![0u8; 10_000];
        assert_eq!(rx.recv(&mut buf).unwrap(), 10_000);
        assert!(buf == msg);
        assert_eq!(rx.drain(&mut buf).unwrap(), 10_000);
        tx.send(&msg).unwrap();
        let mut small = vec![0u8; 100];
        assert_eq!(rx.recv(&mut small), Err(Errno::EMSGSIZE));
        drop(tx);
        assert_eq!(rx.recv(&mut buf).unwrap(), 0);
    }
}
