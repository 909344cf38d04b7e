//! System V IPC: a message queue (msgsnd / msgrcv) and a shared-memory
//! segment (shmget / shmat) holding the same ring as the memfd ring.
//!
//! Clean-up: a segment is marked for removal (IPC_RMID) as soon as it is
//! attached, so the kernel frees it when the last process detaches,
//! whatever ends the run. A queue cannot be marked that way (it would go at
//! once), so its owner removes it on drop and it is listed in
//! [`crate::harness::scratch`] for an exit that skips destructors.
//! A kernel without System V IPC, or limits below the message size, is a
//! skip that names the limit.

use nix::errno::Errno;

use super::link::End;
use super::peer::Buf;
use super::sysv_kernel::{limit, no_sysv};
use crate::harness::{PrepareError, scratch};
use crate::os::sys::retry_eintr;

/// A message queue, removed when dropped.
struct Queue(i32);

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::msgctl(self.0, libc::IPC_RMID, std::ptr::null_mut()) };
        scratch::queue_removed(self.0);
    }
}

/// An end of a queue channel: both directions share one queue, told apart
/// by the message type (1: to the peer, 2: to the parent).
pub struct MsgEnd {
    id: i32,
    send_type: libc::c_long,
    recv_type: libc::c_long,
    /// The type word and the message behind it, as msgsnd wants them.
    out: Buf,
    /// Where msgrcv puts a message.
    inb: Buf,
    _own: Option<Queue>,
}

/// Bytes of the type word in front of every message.
const TYPE: usize = std::mem::size_of::<libc::c_long>();

/// A queue channel for `size`-byte messages: (parent end, peer end).
pub fn msg_pair(size: usize) -> Result<(MsgEnd, MsgEnd), PrepareError> {
    let (max, mnb) = (limit("msgmax"), limit("msgmnb"));
    if let Some(m) = max.filter(|&m| (size as u64) > m) {
        return Err(PrepareError::Skip(format!(
            "System V messages hold at most {m} bytes here (kernel.msgmax); {size} does not fit"
        )));
    }
    if let Some(m) = mnb.filter(|&m| (size as u64) > m) {
        return Err(PrepareError::Skip(format!(
            "a System V queue holds at most {m} bytes here (kernel.msgmnb); a {size}-byte message does not fit"
        )));
    }
    // SAFETY: plain system call.
    let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
    let id = match Errno::result(id) {
        Ok(id) => id,
        Err(Errno::ENOSYS) => return Err(no_sysv(Errno::ENOSYS)),
        Err(e @ Errno::ENOSPC) => {
            return Err(PrepareError::Skip(format!(
                "the kernel refuses another System V message queue ({e}; kernel.msgmni is {})",
                limit("msgmni").map_or("?".into(), |m| m.to_string())
            )));
        }
        Err(e) => return Err(PrepareError::Fail(anyhow::anyhow!("msgget: {e}"))),
    };
    scratch::queue_created(id);
    let own = Queue(id);
    let mk = |send_type, recv_type, own| -> nix::Result<MsgEnd> {
        Ok(MsgEnd {
            id,
            send_type,
            recv_type,
            out: Buf::new(TYPE + size)?,
            inb: Buf::new(TYPE + size)?,
            _own: own,
        })
    };
    Ok((mk(1, 2, Some(own))?, mk(2, 1, None)?))
}

impl MsgEnd {
    /// Receives one message into the end's own buffer; returns its size.
    #[inline]
    fn take(&mut self) -> Result<usize, Errno> {
        let cap = self.inb.as_slice().len() - TYPE;
        // SAFETY: inb holds the type word and cap bytes.
        retry_eintr(|| unsafe {
            libc::msgrcv(
                self.id,
                self.inb.as_mut_slice().as_mut_ptr().cast(),
                cap,
                self.recv_type,
                0,
            )
        })
        .map(|n| n as usize)
    }
}

impl End for MsgEnd {
    fn datagram(&self) -> bool {
        true
    }

    /// Copies the message behind the type word (as a sender whose data
    /// lives elsewhere must) and sends it.
    #[inline]
    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        let out = self.out.as_mut_slice();
        let Some(body) = out.get_mut(TYPE..TYPE + msg.len()) else {
            return Err(Errno::EMSGSIZE);
        };
        body.copy_from_slice(msg);
        if let Some(t) = out.get_mut(..TYPE) {
            t.copy_from_slice(&self.send_type.to_ne_bytes());
        }
        // SAFETY: out holds the type word and msg.len() bytes.
        retry_eintr(|| unsafe { libc::msgsnd(self.id, out.as_ptr().cast(), msg.len(), 0) })
            .map(drop)
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let n = self.take()?;
        let got = self.inb.as_slice().get(TYPE..TYPE + n).unwrap_or(&[]);
        let Some(dst) = buf.get_mut(..got.len()) else {
            return Err(Errno::EMSGSIZE);
        };
        dst.copy_from_slice(got);
        Ok(n)
    }

    /// The message stays where msgrcv put it, in the receiver's memory.
    #[inline]
    fn drain(&mut self, _buf: &mut [u8]) -> Result<usize, Errno> {
        self.take()
    }

    fn size_limit(&self) -> &'static str {
        "kernel.msgmax"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::sysv_kernel::segment;

    fn ids(kind: &str) -> Vec<String> {
        std::fs::read_to_string(format!("/proc/sysvipc/{kind}"))
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
            .collect()
    }

    #[test]
    fn a_queue_carries_both_ways_and_is_gone_after_drop() {
        let (mut a, mut b) = match msg_pair(64) {
            Ok(p) => p,
            Err(PrepareError::Skip(why)) => {
                eprintln!("skipped: {why}");
                return;
            }
            Err(PrepareError::Fail(e)) => panic!("{e:#}"),
        };
        let id = a.id.to_string();
        assert!(ids("msg").contains(&id));
        a.send(b"hello, peer").unwrap();
        b.send(b"hello, parent").unwrap();
        let mut buf = [0u8; 64];
        let n = b.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello, peer");
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello, parent");
        assert_eq!(a.send(&[0u8; 65]), Err(Errno::EMSGSIZE));
        drop((a, b));
        assert!(!ids("msg").contains(&id), "the queue outlived its ends");
    }

    #[test]
    fn an_oversized_message_is_a_skip_naming_the_limit() {
        let Some(max) = limit("msgmax") else { return };
        match msg_pair(max as usize + 1) {
            Err(PrepareError::Skip(why)) => assert!(why.contains("kernel.msgmax"), "{why}"),
            _ => panic!("a message over msgmax was accepted"),
        }
    }

    #[test]
    fn a_segment_is_marked_for_removal_at_once() {
        let len = 8192;
        let (p, id) = match segment(len) {
            Ok(s) => s,
            Err(PrepareError::Skip(_)) => return,
            Err(PrepareError::Fail(e)) => panic!("{e:#}"),
        };
        // SAFETY: the segment is attached and len bytes long.
        unsafe { std::ptr::write_bytes(p, 7, len) };
        // SAFETY: detaches the segment attached above.
        assert_eq!(unsafe { libc::shmdt(p.cast()) }, 0);
        // Detached by its only user, the segment is gone.
        assert!(!ids("shm").contains(&id.to_string()));
    }
}
