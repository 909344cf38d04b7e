//! Cross-memory attach: `process_vm_readv` and `process_vm_writev`, the
//! single copy MPI libraries use for large messages between processes of
//! one node. The bytes go straight from one address space to the other;
//! only a descriptor (address, length, pid) travels through shared memory,
//! and the sender's buffer is busy until the copy is done (a rendezvous
//! per message, as in MPI).
//!
//! `vm_readv`: the sender posts its message's address, the receiver pulls
//! the bytes into its own buffer. `vm_writev`: the receiver posts its
//! buffer's address, the sender pushes the bytes into it. Either side
//! waits on a futex bell (polling briefly first when the ends are on two
//! CPUs), as the parent waits for every sink's acknowledgement.
//!
//! Permission: the caller needs ptrace access to the other process. Under
//! Yama `ptrace_scope` 1 a child may not access its parent, so while such a
//! benchmark lives the parent names its peers as allowed tracers
//! (`PR_SET_PTRACER_ANY`, as MPI libraries do); a kernel that still refuses
//! (scope 2 or 3, no `CONFIG_CROSS_MEMORY_ATTACH`, or an emulator without the
//! calls) is a skip that says so.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;

use super::link::End;
use super::peer::{
    ACK_SPIN_POLLS, Before, Bell, Cpus, Padded, Peer, STALL_LIMIT, Shared, Spin, ZeroShared,
};
use crate::harness::PrepareError;

/// Which process makes the copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// The receiver pulls from the sender (`process_vm_readv`).
    Read,
    /// The sender pushes into the receiver (`process_vm_writev`).
    Write,
}

/// One direction of a channel, in shared memory: the posted descriptor,
/// the rendezvous counters and the two bells.
#[repr(C)]
#[derive(Default)]
struct Slot {
    /// Descriptors posted (by the sender for `Read`, the receiver for `Write`).
    posted: Padded<AtomicU64>,
    /// Descriptors completed by the side that copies.
    done: Padded<AtomicU64>,
    /// The posted address.
    addr: AtomicU64,
    /// The posted length (for `Write`, the bytes the sender wrote).
    len: AtomicU64,
    /// Bytes written into a posted buffer (`Write`).
    filled: AtomicU64,
    /// The pid of the process whose memory the address is in.
    pid: AtomicI32,
    /// The copying side sleeps here until a descriptor is posted.
    post_bell: Bell,
    /// The posting side sleeps here until the copy is done.
    done_bell: Bell,
}

// SAFETY: only atomics, all valid when zero.
unsafe impl ZeroShared for Slot {}

impl Slot {
    /// The posting side: posts the `len` bytes at `addr` in process `pid`,
    /// then waits until the copying side has copied them.
    fn post(
        &self,
        (addr, len, pid): (u64, usize, libc::pid_t),
        before: Before<'_>,
        stall: Option<Duration>,
    ) -> Result<(), Errno> {
        self.addr.store(addr, Ordering::Relaxed);
        self.len.store(len as u64, Ordering::Relaxed);
        self.pid.store(pid, Ordering::Relaxed);
        let n = self.posted.fetch_add(1, Ordering::SeqCst) + 1;
        self.post_bell.ring();
        self.done_bell
            .wait(before, stall, || self.done.load(Ordering::SeqCst) >= n)
    }

    /// The copying side: waits for post `n`; the posting process, the
    /// address and the length posted.
    fn wait_post(
        &self,
        n: u64,
        before: Before<'_>,
        stall: Option<Duration>,
    ) -> Result<(libc::pid_t, u64, usize), Errno> {
        self.post_bell
            .wait(before, stall, || self.posted.load(Ordering::SeqCst) >= n)?;
        Ok((
            self.pid.load(Ordering::Relaxed),
            self.addr.load(Ordering::Relaxed),
            self.len.load(Ordering::Relaxed) as usize,
        ))
    }

    /// The copying side: says post `n` is copied.
    fn finish(&self, n: u64) {
        self.done.store(n, Ordering::SeqCst);
        self.done_bell.ring();
    }
}

/// How long a peer's wait may last: forever (it dies with its parent).
fn stall(parent: bool) -> Option<Duration> {
    parent.then_some(STALL_LIMIT)
}

/// Counts the live benchmarks that need their peers to access the
/// parent's memory; the first turns `PR_SET_PTRACER_ANY` on, the last off.
static TRACEES: Mutex<u32> = Mutex::new(0);

/// Held by a parent end whose peer copies from or into the parent.
struct PtracerGrant;

impl PtracerGrant {
    fn new() -> PtracerGrant {
        let mut n = TRACEES.lock().unwrap_or_else(|e| e.into_inner());
        if *n == 0 {
            // SAFETY: plain prctl; EINVAL (no Yama) is harmless.
            unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
        }
        *n += 1;
        PtracerGrant
    }
}

impl Drop for PtracerGrant {
    fn drop(&mut self) {
        let mut n = TRACEES.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            // SAFETY: plain prctl: no process may trace this one any more.
            unsafe { libc::prctl(libc::PR_SET_PTRACER, 0, 0, 0, 0) };
        }
    }
}

/// One end: sends on `tx`, receives on `rx` (either may be absent).
pub struct CmaEnd {
    dir: Dir,
    tx: Option<Arc<Shared<Slot>>>,
    rx: Option<Arc<Shared<Slot>>>,
    /// Descriptors this end has taken from `rx` (`Read`) or served on `tx` (`Write`).
    seen: u64,
    parent: bool,
    spin: Spin,
    cross: bool,
    /// This process's pid, read at first use (after the fork).
    me: libc::pid_t,
    _grant: Option<PtracerGrant>,
}

impl CmaEnd {
    fn before(&self) -> Before<'static> {
        if self.cross {
            Before::Poll(ACK_SPIN_POLLS, self.spin)
        } else {
            Before::Sleep
        }
    }

    fn me(&mut self) -> libc::pid_t {
        if self.me == 0 {
            // SAFETY: getpid has no preconditions.
            self.me = unsafe { libc::getpid() };
        }
        self.me
    }
}

/// Copies `len` bytes between `local` here and `remote` in `pid`.
fn copy(dir: Dir, pid: libc::pid_t, local: *mut u8, remote: u64, len: usize) -> Result<(), Errno> {
    let l = libc::iovec {
        iov_base: local.cast(),
        iov_len: len,
    };
    let r = libc::iovec {
        iov_base: remote as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: the local iovec covers a buffer of len bytes this process
    // owns for the call; the remote one is checked by the kernel.
    let n = unsafe {
        match dir {
            Dir::Read => libc::process_vm_readv(pid, &l, 1, &r, 1, 0),
            Dir::Write => libc::process_vm_writev(pid, &l, 1, &r, 1, 0),
        }
    };
    match Errno::result(n) {
        Ok(n) if n as usize == len => Ok(()),
        Ok(_) => Err(Errno::EFAULT),
        Err(e) => Err(e),
    }
}

impl End for CmaEnd {
    fn datagram(&self) -> bool {
        true
    }

    #[inline]
    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        let (before, stall, me) = (self.before(), stall(self.parent), self.me());
        let Some(s) = self.tx.as_deref() else {
            return Err(Errno::EBADF);
        };
        match self.dir {
            Dir::Read => {
                // Post the message, wait until the receiver has copied it.
                s.post((msg.as_ptr() as u64, msg.len(), me), before, stall)
            }
            Dir::Write => {
                // Wait for the receiver's buffer, copy into it, say so.
                let n = self.seen + 1;
                let (pid, addr, cap) = s.wait_post(n, before, stall)?;
                if msg.len() > cap {
                    return Err(Errno::EMSGSIZE);
                }
                copy(Dir::Write, pid, msg.as_ptr() as *mut u8, addr, msg.len())?;
                s.filled.store(msg.len() as u64, Ordering::Relaxed);
                s.finish(n);
                self.seen = n;
                Ok(())
            }
        }
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let (before, stall, me) = (self.before(), stall(self.parent), self.me());
        let Some(s) = self.rx.as_deref() else {
            return Err(Errno::EBADF);
        };
        match self.dir {
            Dir::Read => {
                let n = self.seen + 1;
                let (pid, addr, len) = s.wait_post(n, before, stall)?;
                if len > buf.len() {
                    return Err(Errno::EMSGSIZE);
                }
                copy(Dir::Read, pid, buf.as_mut_ptr(), addr, len)?;
                s.finish(n);
                self.seen = n;
                Ok(len)
            }
            Dir::Write => {
                s.post((buf.as_mut_ptr() as u64, buf.len(), me), before, stall)?;
                Ok(s.filled.load(Ordering::Relaxed) as usize)
            }
        }
    }

    fn size_limit(&self) -> &'static str {
        "the posted buffer's size"
    }
}

/// A channel copying with `dir`: (parent end, peer end); with `duplex` a
/// second slot carries replies. Probes the permission first, so a kernel
/// that refuses is a skip.
pub fn cma_pair(dir: Dir, cpus: &Cpus, duplex: bool) -> Result<(CmaEnd, CmaEnd), PrepareError> {
    // The peer copies from or into the parent when it receives (Read) or
    // when it sends replies (Write, round trips).
    let peer_copies = dir == Dir::Read || duplex;
    let grant = peer_copies.then(PtracerGrant::new);
    probe(cpus, peer_copies)?;
    let a = Arc::new(Shared::<Slot>::new()?);
    let b = if duplex {
        Some(Arc::new(Shared::<Slot>::new()?))
    } else {
        None
    };
    let cross = cpus.parent != cpus.peer;
    let mk = |parent, tx, rx, grant| CmaEnd {
        dir,
        tx,
        rx,
        seen: 0,
        parent,
        spin: super::peer::spin_of(cpus),
        cross,
        me: 0,
        _grant: grant,
    };
    Ok((
        mk(true, Some(a.clone()), b.clone(), grant),
        mk(false, b, Some(a), None),
    ))
}

/// What the probe child found.
#[repr(C)]
#[derive(Default)]
struct Probe {
    /// 1 once the child has tried.
    tried: AtomicU32,
    /// The child's errno (0: the copy worked).
    errno: AtomicI32,
    /// The parent sleeps here until the child has tried.
    bell: Bell,
    /// The word both copy.
    word: AtomicU64,
}

// SAFETY: only atomics, all valid when zero.
unsafe impl ZeroShared for Probe {}

/// Copies one word across the two processes the benchmark will use: the
/// peer from the parent when `peer_copies`, and the parent from the peer.
fn probe(cpus: &Cpus, peer_copies: bool) -> Result<(), PrepareError> {
    let p = Arc::new(Shared::<Probe>::new()?);
    p.word.store(0x6f70_636f_7374_0001, Ordering::SeqCst);
    let q = p.clone();
    let peer = Peer::spawn(cpus.peer, move || {
        let mut e = 0;
        if peer_copies {
            let mut v = 0u64;
            // SAFETY: getppid has no preconditions.
            let parent = unsafe { libc::getppid() };
            let at = q.word.as_ptr() as u64;
            if let Err(x) = copy(Dir::Read, parent, (&mut v as *mut u64).cast(), at, 8) {
                e = x as i32;
            }
        }
        q.errno.store(e, Ordering::SeqCst);
        q.tried.store(1, Ordering::SeqCst);
        q.bell.ring();
        loop {
            // SAFETY: pause has no preconditions; the parent kills this child.
            unsafe { libc::pause() };
        }
    })?;
    p.bell
        .wait(Before::Sleep, Some(STALL_LIMIT), || {
            p.tried.load(Ordering::SeqCst) != 0
        })
        .map_err(|e| PrepareError::Fail(peer.explain("probing process_vm_readv", e, None)))?;
    let mut v = 0u64;
    let at = p.word.as_ptr() as u64;
    let mine = copy(
        Dir::Read,
        peer.pid().as_raw(),
        (&mut v as *mut u64).cast(),
        at,
        8,
    );
    let theirs = match p.errno.load(Ordering::SeqCst) {
        0 => Ok(()),
        e => Err(Errno::from_raw(e)),
    };
    drop(peer);
    for (who, r) in [
        ("the peer, of its parent", theirs),
        ("the parent, of its peer", mine),
    ] {
        match r {
            Ok(()) => {}
            Err(Errno::ENOSYS) => {
                return Err(PrepareError::Skip(
                    "process_vm_readv/writev are not implemented here (ENOSYS): a kernel without CONFIG_CROSS_MEMORY_ATTACH, or a user-mode emulator (qemu-user) that lacks them"
                        .into(),
                ));
            }
            Err(e @ (Errno::EPERM | Errno::EACCES)) => {
                let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
                    .map(|s| format!("Yama ptrace_scope is {}", s.trim()))
                    .unwrap_or_else(|_| "no Yama".into());
                return Err(PrepareError::Skip(format!(
                    "the kernel refuses process_vm_readv by {who} ({e}; {scope}): it needs ptrace access"
                )));
            }
            Err(e) => {
                return Err(PrepareError::Fail(anyhow::anyhow!(
                    "probing process_vm_readv by {who}: {e}"
                )));
            }
        }
    }
    if v != p.word.load(Ordering::SeqCst) {
        return Err(PrepareError::Fail(anyhow::anyhow!(
            "integrity check failed: process_vm_readv returned {v:#x}, not the peer's word"
        )));
    }
    Ok(())
}
