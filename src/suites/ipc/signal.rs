//! Pure signalling, no payload: an eventfd ping-pong and a futex ping-pong.
//! These are the floor under every blocking mechanism: what waking the
//! other process and being woken back costs.
//!
//! Every round trip carries a sequence number that the peer must return,
//! so a lost or duplicated wake-up is an error, not a fast number.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::eventfd::{EfdFlags, EventFd};

use super::link::op_time_stride;
use super::peer::{
    Cpus, Ctl, Padded, Peer, STALL_LIMIT, Shared, Step, ZeroShared, futex_wait, futex_wake,
};
use crate::harness::affinity::Pinned;
use crate::harness::{PrepareError, Timed};

/// Round trips made by the set-up check.
const CHECK_ROUNDS: u32 = 8;
/// One futex sleep of the parent before it re-checks the peer.
const SLICE: Duration = Duration::from_millis(50);

/// Which signalling primitive a [`Signalling`] benchmark uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Two eventfds, one each way: write(1 value), read it back.
    Eventfd,
    /// One futex word in shared memory: odd = request, even = reply.
    Futex,
}

/// The futex ping-pong's shared word.
#[derive(Default)]
#[repr(C)]
struct Word {
    seq: Padded<AtomicU32>,
}

// SAFETY: only atomics, valid when zero.
unsafe impl ZeroShared for Word {}

enum How {
    Eventfd {
        to_peer: OwnedFd,
        from_peer: OwnedFd,
    },
    Futex(Arc<Shared<Word>>),
}

/// A ping-pong of wake-ups between the parent and its peer; every round
/// trip is timed (p99, bimodality).
pub struct Signalling {
    peer: Peer,
    how: How,
    ctl: Arc<Shared<Ctl>>,
    seq: u32,
    cpus: Cpus,
    times: Vec<f64>,
}

/// Reads one eventfd value (blocking).
fn efd_read(fd: i32) -> Result<u64, Errno> {
    let mut v = 0u64;
    loop {
        // SAFETY: v is a valid 8-byte buffer.
        let n = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
        match Errno::result(n) {
            Ok(8) => return Ok(v),
            Ok(_) => return Err(Errno::EIO),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Adds `v` to an eventfd.
fn efd_write(fd: i32, v: u64) -> Result<(), Errno> {
    loop {
        // SAFETY: v is a valid 8-byte buffer.
        let n = unsafe { libc::write(fd, (&v as *const u64).cast(), 8) };
        match Errno::result(n) {
            Ok(8) => return Ok(()),
            Ok(_) => return Err(Errno::EIO),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The peer's eventfd loop: read a value, write it back.
fn eventfd_peer(rx: i32, tx: i32, ctl: &Ctl) -> i32 {
    loop {
        let v = match efd_read(rx) {
            Ok(v) => v,
            Err(e) => return ctl.fail(Step::Recv, e),
        };
        if let Err(e) = efd_write(tx, v) {
            return ctl.fail(Step::Send, e);
        }
    }
}

/// The peer's futex loop: wait for an odd value, answer with the next one.
fn futex_peer(w: &AtomicU32, ctl: &Ctl) -> i32 {
    loop {
        let v = w.load(Ordering::SeqCst);
        if v % 2 == 1 {
            w.store(v.wrapping_add(1), Ordering::SeqCst);
            futex_wake(w, 1);
        } else {
            match futex_wait(w, v, SLICE) {
                Ok(()) | Err(Errno::EAGAIN | Errno::EINTR | Errno::ETIMEDOUT) => {}
                Err(e) => return ctl.fail(Step::Wait, e),
            }
        }
    }
}

impl Signalling {
    /// Forks the peer for `kind` and checks a few round trips.
    pub fn start(kind: Kind, cpus: Cpus) -> Result<Signalling, PrepareError> {
        let ctl = Arc::new(Shared::<Ctl>::new()?);
        let c = ctl.clone();
        let (peer, how) = match kind {
            Kind::Eventfd => {
                let mk = || {
                    EventFd::from_flags(EfdFlags::EFD_CLOEXEC)
                        .map(OwnedFd::from)
                        .map_err(|e| {
                            PrepareError::Skip(format!("eventfd is not available here ({e})"))
                        })
                };
                let (to_peer, from_peer) = (mk()?, mk()?);
                let (rx, tx) = (to_peer.as_raw_fd(), from_peer.as_raw_fd());
                let peer = Peer::spawn(cpus.peer, move || eventfd_peer(rx, tx, &c))?;
                (peer, How::Eventfd { to_peer, from_peer })
            }
            Kind::Futex => {
                let w = Arc::new(Shared::<Word>::new()?);
                let w2 = w.clone();
                let peer = Peer::spawn(cpus.peer, move || futex_peer(&w2.seq, &c))?;
                (peer, How::Futex(w))
            }
        };
        let mut s = Signalling {
            peer,
            how,
            ctl,
            seq: 0,
            cpus,
            times: Vec::new(),
        };
        let _pin = Pinned::to(cpus.parent)?;
        for _ in 0..CHECK_ROUNDS {
            s.round().map_err(PrepareError::Fail)?;
        }
        Ok(s)
    }

    /// One round trip; checks the value that comes back.
    #[inline]
    fn round(&mut self) -> anyhow::Result<()> {
        self.seq = self.seq.wrapping_add(2);
        let expect = self.seq;
        let got: u64 = match &self.how {
            How::Eventfd { to_peer, from_peer } => {
                efd_write(to_peer.as_raw_fd(), u64::from(expect))
                    .and_then(|()| efd_read(from_peer.as_raw_fd()))
            }
            How::Futex(w) => futex_round(&w.seq, expect).map(u64::from),
        }
        .map_err(|e| self.peer.explain("signalling the peer", e, Some(&self.ctl)))?;
        if got != u64::from(expect) {
            anyhow::bail!(
                "integrity check failed: sent wake-up {expect}, the peer answered {got} (a lost or duplicated wake-up)"
            );
        }
        Ok(())
    }
}

/// Parent side of one futex round: post `expect - 1` (odd), wait for `expect`.
#[inline]
fn futex_round(w: &AtomicU32, expect: u32) -> Result<u32, Errno> {
    w.store(expect.wrapping_sub(1), Ordering::SeqCst);
    futex_wake(w, 1);
    let mut deadline: Option<Instant> = None;
    loop {
        let v = w.load(Ordering::SeqCst);
        if v != expect.wrapping_sub(1) {
            return Ok(v);
        }
        match futex_wait(w, v, SLICE) {
            Ok(()) | Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(Errno::ETIMEDOUT) => {
                let d = *deadline.get_or_insert_with(|| Instant::now() + STALL_LIMIT);
                if Instant::now() >= d {
                    return Err(Errno::ETIMEDOUT);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

impl Timed for Signalling {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let _pin = Pinned::to(self.cpus.parent)?;
        let stride = op_time_stride(ops);
        self.times.reserve((ops / stride) as usize + 1);
        let start = Instant::now();
        let mut last = start;
        for i in 0..ops {
            self.round()?;
            let now = Instant::now();
            if i % stride == 0 {
                self.times.push((now - last).as_nanos() as f64);
            }
            last = now;
        }
        Ok(last - start)
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.times)
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(self.cpus.details())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::peer::Placement;

    #[test]
    fn both_ping_pongs_run_and_time_each_round() {
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        let c = crate::harness::affinity::allowed_cpus()[0];
        let cpus = Cpus {
            placement: Placement::Same,
            parent: c,
            peer: c,
            same_core: true,
        };
        for kind in [Kind::Eventfd, Kind::Futex] {
            let mut s = Signalling::start(kind, cpus).unwrap();
            assert!(s.run(20).unwrap() > Duration::ZERO);
            let t = s.take_op_times();
            assert_eq!(t.len(), 20);
            assert!(t.iter().all(|&x| x > 0.0), "{kind:?}");
        }
    }
}
