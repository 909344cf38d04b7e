//! Context switches: one byte ping-ponged over two pipes between two
//! processes, or two threads, pinned to the same CPU, so that every round
//! trip is two switches; and the same pipe traffic in a single thread (a
//! write followed by a read of the byte just written: no switch, no
//! wake-up) as the cost to subtract. lmbench's lat_ctx subtracts its pipe
//! overhead the same way. Cross-CPU ping-pong belongs to the IPC suite: it
//! measures inter-processor wake-ups, not switches.

use std::os::fd::{AsRawFd, OwnedFd};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::fcntl::OFlag;

use crate::harness::affinity::{self, Pinned};
use crate::harness::{Ctx, PrepareError, Timed};
use crate::os::child::{Child, SignalsBlocked, Slot, fork_peer};

/// Who answers the ping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// A forked child process on the same CPU.
    Process,
    /// A thread of ours on the same CPU.
    Thread,
    /// Nobody: one thread writes a byte and reads it back (the pipe cost alone).
    Nobody,
}

/// The CPU both ends share: `--cpu` when given, else the last CPU we may
/// use (CPU 0 tends to take more interrupts).
pub fn shared_cpu(ctx: &Ctx) -> usize {
    ctx.cpu
        .or_else(|| affinity::allowed_cpus().last().copied())
        .unwrap_or(0)
}

/// What answers the ping, kept so that Drop can end it.
enum Answerer {
    Process(Child),
    Thread(JoinHandle<()>),
    Nobody,
}

/// A prepared ping-pong; one operation is one round trip of one byte.
pub struct PingPong {
    /// Our write end (closed first on drop, so the peer sees end-of-file).
    tx: Option<OwnedFd>,
    /// Our read end.
    rx: OwnedFd,
    answerer: Answerer,
    cpu: usize,
    _pin: Pinned,
}

fn pipe() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC).context("creating a pipe")
}

impl PingPong {
    /// Starts the peer pinned with us to one CPU.
    pub fn new(peer: Peer, ctx: &Ctx) -> Result<PingPong, PrepareError> {
        let cpu = shared_cpu(ctx);
        let pin = Pinned::to(cpu).map_err(|e| PrepareError::Skip(format!("{e:#}")))?;
        match peer {
            Peer::Nobody => {
                let (rx, tx) = pipe()?;
                Ok(PingPong {
                    tx: Some(tx),
                    rx,
                    answerer: Answerer::Nobody,
                    cpu,
                    _pin: pin,
                })
            }
            Peer::Thread => {
                let (peer_rx, tx) = pipe()?;
                let (rx, peer_tx) = pipe()?;
                let handle = std::thread::Builder::new()
                    .name("opcost-pong".into())
                    .spawn(move || answer(peer_rx.as_raw_fd(), peer_tx.as_raw_fd()))
                    .context("spawning the peer thread")?;
                Ok(PingPong {
                    tx: Some(tx),
                    rx,
                    answerer: Answerer::Thread(handle),
                    cpu,
                    _pin: pin,
                })
            }
            Peer::Process => {
                let (peer_rx, tx) = pipe()?;
                let (rx, peer_tx) = pipe()?;
                let slot = Slot::take()?;
                let (ours_tx, ours_rx) = (tx.as_raw_fd(), rx.as_raw_fd());
                let (theirs_rx, theirs_tx) = (peer_rx.as_raw_fd(), peer_tx.as_raw_fd());
                let blocked = SignalsBlocked::all();
                // In the child: drop our copies of the parent's ends, answer
                // until end-of-file. Signals stay blocked (SIGKILL cannot be).
                let pid = fork_peer(None, || {
                    // SAFETY: closing descriptors the child inherited.
                    unsafe {
                        libc::close(ours_tx);
                        libc::close(ours_rx);
                    }
                    answer(theirs_rx, theirs_tx);
                    0
                });
                drop(blocked);
                let child = Child::new(pid?, slot);
                drop((peer_rx, peer_tx)); // the child's ends
                Ok(PingPong {
                    tx: Some(tx),
                    rx,
                    answerer: Answerer::Process(child),
                    cpu,
                    _pin: pin,
                })
            }
        }
    }
}

/// Reads a byte and writes it back until end-of-file or an error.
/// Only raw system calls: it also runs in a forked child.
fn answer(rx: libc::c_int, tx: libc::c_int) {
    let mut b = 0u8;
    loop {
        if !xfer(rx, &mut b, false) || !xfer(tx, &mut b, true) {
            return;
        }
    }
}

/// Moves one byte (write or read), retrying on EINTR; false on end-of-file or error.
#[inline(always)]
fn xfer(fd: libc::c_int, b: &mut u8, write: bool) -> bool {
    loop {
        let p = (b as *mut u8).cast::<libc::c_void>();
        // SAFETY: a one-byte buffer we own.
        let n = unsafe {
            if write {
                libc::write(fd, p, 1)
            } else {
                libc::read(fd, p, 1)
            }
        };
        if n == 1 {
            return true;
        }
        // SAFETY: errno of this thread.
        if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return false;
    }
}

impl Timed for PingPong {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let tx = self.tx.as_ref().context("the pipe is closed")?.as_raw_fd();
        let rx = self.rx.as_raw_fd();
        let mut b = 1u8;
        let start = Instant::now();
        for _ in 0..ops {
            if !xfer(tx, &mut b, true) || !xfer(rx, &mut b, false) {
                bail!("the ping-pong peer went away");
            }
        }
        Ok(start.elapsed())
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "cpu": self.cpu, "placement": "same-cpu" }))
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        self.tx = None; // end-of-file for the peer
        match std::mem::replace(&mut self.answerer, Answerer::Nobody) {
            Answerer::Thread(h) => {
                let _ = h.join();
            }
            Answerer::Process(c) => drop(c), // kills (if still there) and reaps
            Answerer::Nobody => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::child::{alive, test_lock};

    #[test]
    fn every_peer_answers_and_is_gone_after_drop() {
        let _g = test_lock();
        let ctx = crate::harness::test_ctx();
        let before = affinity::allowed_cpus();
        for peer in [Peer::Process, Peer::Thread, Peer::Nobody] {
            let mut p = PingPong::new(peer, &ctx).unwrap_or_else(|e| panic!("{peer:?}: {e}"));
            let d = p.run(100).unwrap();
            assert!(d > Duration::ZERO);
            drop(p);
            assert_eq!(alive(), 0, "{peer:?} left a child");
        }
        assert_eq!(affinity::allowed_cpus(), before, "pinning was not restored");
        let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(r, -1, "a child is left to reap");
    }
}
