//! POSIX message queues (mq_send / mq_receive). The queues are unlinked as
//! soon as both processes hold descriptors, so nothing outlives the run. A
//! kernel without them, or limits too small for the message size, is a skip
//! that says which limit.

use std::ffi::CString;

use nix::errno::Errno;

use super::link::End;
use crate::harness::PrepareError;
use crate::os::sys::retry_eintr;

/// Messages a queue may hold, at most (the kernel's default `msg_max`).
const MAX_MSGS: i64 = 10;

/// A queue descriptor owned by one end; closed on drop.
struct Mqd(libc::mqd_t);

impl Drop for Mqd {
    fn drop(&mut self) {
        // SAFETY: the descriptor came from mq_open and is closed once.
        unsafe { libc::mq_close(self.0) };
    }
}

/// An end of a message-queue channel: sends to one queue, receives from another.
pub struct MqEnd {
    _own: Vec<Mqd>,
    send_q: libc::mqd_t,
    recv_q: libc::mqd_t,
}

/// Reads a limit from /proc/sys/fs/mqueue, for the skip message.
fn limit(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/fs/mqueue/{name}"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Creates a queue for `size`-byte messages and opens it twice (one
/// descriptor per process), then unlinks its name.
fn queue(tag: &str, size: usize) -> Result<(Mqd, Mqd), PrepareError> {
    let name = CString::new(format!(
        "/opcost-{}-{tag}-{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ))
    .map_err(|e| anyhow::anyhow!("queue name: {e}"))?;
    let mut last = Errno::UnknownErrno;
    let mut msgs = MAX_MSGS;
    while msgs >= 1 {
        // SAFETY: mq_attr is plain data; zero is a valid starting value.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = msgs;
        attr.mq_msgsize = size as i64;
        // SAFETY: name is a valid C string, attr a valid mq_attr.
        let a = unsafe {
            libc::mq_open(
                name.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600 as libc::mode_t,
                &attr as *const libc::mq_attr,
            )
        };
        if a != -1 {
            let a = Mqd(a);
            // SAFETY: as above; the queue exists now.
            let b = unsafe { libc::mq_open(name.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
            let err = Errno::last();
            // SAFETY: name is a valid C string.
            unsafe { libc::mq_unlink(name.as_ptr()) };
            if b == -1 {
                return Err(PrepareError::Fail(anyhow::anyhow!(
                    "opening a message queue a second time: {err}"
                )));
            }
            return Ok((a, Mqd(b)));
        }
        last = Errno::last();
        match last {
            Errno::ENOSYS => {
                return Err(PrepareError::Skip(
                    "this kernel has no POSIX message queues (CONFIG_POSIX_MQUEUE)".into(),
                ));
            }
            // Too many messages or bytes for the limits: try a shorter queue.
            Errno::EINVAL | Errno::EMFILE | Errno::ENOMEM => msgs /= 2,
            _ => break,
        }
    }
    Err(PrepareError::Skip(format!(
        "the kernel refuses a message queue for {size}-byte messages ({last}); limits: msgsize_max {} B, msg_max {} (/proc/sys/fs/mqueue), and RLIMIT_MSGQUEUE",
        limit("msgsize_max"),
        limit("msg_max")
    )))
}

/// A message-queue channel: (parent end, peer end). Without `duplex` only
/// the parent-to-peer queue is used.
pub fn mq_pair(size: usize, duplex: bool) -> Result<(MqEnd, MqEnd), PrepareError> {
    let (a_send, b_recv) = queue("a", size)?;
    let (a_recv, b_send) = if duplex {
        let (x, y) = queue("b", size)?;
        (Some(x), Some(y))
    } else {
        (None, None)
    };
    let raw = |q: &Option<Mqd>| q.as_ref().map_or(-1, |q| q.0);
    let parent = MqEnd {
        send_q: a_send.0,
        recv_q: raw(&a_recv),
        _own: [Some(a_send), a_recv].into_iter().flatten().collect(),
    };
    let peer = MqEnd {
        send_q: raw(&b_send),
        recv_q: b_recv.0,
        _own: [Some(b_recv), b_send].into_iter().flatten().collect(),
    };
    Ok((parent, peer))
}

impl End for MqEnd {
    fn datagram(&self) -> bool {
        true
    }

    #[inline]
    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        // SAFETY: msg is a valid buffer of msg.len() bytes.
        retry_eintr(|| unsafe { libc::mq_send(self.send_q, msg.as_ptr().cast(), msg.len(), 0) })
            .map(drop)
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        // SAFETY: buf is a valid writable buffer; its length is at least
        // the queue's message size (both are the benchmark's size).
        retry_eintr(|| unsafe {
            libc::mq_receive(
                self.recv_q,
                buf.as_mut_ptr().cast(),
                buf.len(),
                std::ptr::null_mut(),
            )
        })
        .map(|n| n as usize)
    }

    fn size_limit(&self) -> &'static str {
        "the queue's message size"
    }
}
