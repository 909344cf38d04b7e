//! Pure signalling, no payload: an eventfd ping-pong and a futex ping-pong.
//! These are the floor under every blocking mechanism: what waking the
//! other process and being woken back costs. And the smallest notification
//! that carries a value: a queued real-time signal (`sigqueue`, received
//! with `sigwaitinfo`), whose payload is the sequence number itself.
//!
//! Every round trip carries a sequence number that the peer must return,
//! so a lost or duplicated wake-up is an error, not a fast number.
//!
//! The signal ping-pong: the parent queues the signal to the peer with
//! `sigqueue`; the peer takes it with `sigwaitinfo` and answers with the
//! same value, queued to the measuring thread itself (`rt_tgsigqueueinfo`,
//! the thread-directed form of `sigqueue`), which takes it with
//! `sigtimedwait` (`sigwaitinfo` with a deadline). The signal is blocked in
//! the measuring thread only while it measures, and has a handler that does
//! nothing, so no other thread of the process can be hit by it.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::eventfd::{EfdFlags, EventFd};

use super::link::op_time_stride;
use super::peer::{
    Cpus, Ctl, Padded, Peer, STALL_LIMIT, Shared, Step, ZeroShared, futex_wait, futex_wake,
};
use crate::harness::affinity::Pinned;
use crate::harness::{PrepareError, Timed};
use crate::os::sys::retry_eintr;

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
    /// A real-time signal with a value each way: sigqueue, sigwaitinfo.
    Sigqueue,
}

/// The real-time signal the signal ping-pong uses.
fn rt_signal() -> i32 {
    libc::SIGRTMIN() + 7
}

/// The set holding only [`rt_signal`].
fn rt_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; both are async-signal-safe.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, rt_signal());
        set
    }
}

/// A handler that does nothing: a reply that arrives after its thread
/// stopped waiting is dropped, never the default action (termination).
extern "C" fn ignore_signal(_: libc::c_int) {}

/// Installs [`ignore_signal`] for [`rt_signal`], once per process.
fn install_handler() -> Result<(), PrepareError> {
    static DONE: std::sync::OnceLock<Result<(), Errno>> = std::sync::OnceLock::new();
    let r = DONE.get_or_init(|| {
        // SAFETY: sigaction is plain data; zero is a valid start.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = ignore_signal as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        // SAFETY: a valid sigaction for a real-time signal nobody else uses.
        let r = unsafe {
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(rt_signal(), &sa, std::ptr::null_mut())
        };
        Errno::result(r).map(drop)
    });
    r.map_err(|e| PrepareError::Skip(format!("cannot handle real-time signals here ({e})")))
}

/// Blocks [`rt_signal`] in the calling thread until dropped.
struct RtBlocked {
    old: libc::sigset_t,
}

impl RtBlocked {
    fn new() -> RtBlocked {
        let set = rt_set();
        // SAFETY: valid sets; only the calling thread's mask changes.
        unsafe {
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            RtBlocked { old }
        }
    }
}

impl Drop for RtBlocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by new.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// The calling thread's id.
fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// A `siginfo_t` as the kernel reads it for a queued signal (x86-64 and
/// aarch64 layout: three ints, padding, then pid, uid and the value).
#[repr(C)]
struct QueuedInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    pid: i32,
    uid: u32,
    value: u64,
    _rest: [u64; 12],
}

const _: () = assert!(std::mem::size_of::<QueuedInfo>() == 128);

/// The peer's signal loop: take a signal, queue its value back to the
/// parent's measuring thread (published in `w`).
fn sigqueue_peer(w: &Word, ctl: &Ctl) -> i32 {
    let set = rt_set();
    // SAFETY: the child is single-threaded; blocking is async-signal-safe.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    // SAFETY: getpid and getuid have no preconditions.
    let (me, uid) = unsafe { (libc::getpid(), libc::getuid()) };
    loop {
        // SAFETY: siginfo_t is plain data.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid set and info.
        let r = unsafe { libc::sigwaitinfo(&set, &mut info) };
        if let Err(e) = Errno::result(r) {
            if e == Errno::EINTR {
                continue;
            }
            return ctl.fail(Step::Recv, e);
        }
        // SAFETY: a queued signal's info holds a value.
        let value = unsafe { info.si_value().sival_ptr } as u64;
        let out = QueuedInfo {
            signo: rt_signal(),
            errno: 0,
            code: libc::SI_QUEUE,
            _pad: 0,
            pid: me,
            uid,
            value,
            _rest: [0; 12],
        };
        let (tgid, tid) = (w.tgid.load(Ordering::SeqCst), w.tid.load(Ordering::SeqCst));
        // SAFETY: out is a valid 128-byte siginfo for a queued signal.
        let r = unsafe {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                tgid,
                tid,
                rt_signal(),
                &out as *const QueuedInfo,
            )
        };
        if let Err(e) = Errno::result(r) {
            return ctl.fail(Step::Send, e);
        }
    }
}

/// The futex ping-pong's shared word.
#[derive(Default)]
#[repr(C)]
struct Word {
    seq: Padded<AtomicU32>,
    /// Signal ping-pong: the parent's process id.
    tgid: AtomicI32,
    /// Signal ping-pong: the parent's measuring thread.
    tid: AtomicI32,
}

// SAFETY: only atomics, valid when zero.
unsafe impl ZeroShared for Word {}

enum How {
    Eventfd {
        to_peer: OwnedFd,
        from_peer: OwnedFd,
    },
    Futex(Arc<Shared<Word>>),
    Sigqueue(Arc<Shared<Word>>),
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
    // SAFETY: v is a valid 8-byte buffer.
    match retry_eintr(|| unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) })? {
        8 => Ok(v),
        _ => Err(Errno::EIO),
    }
}

/// Adds `v` to an eventfd.
fn efd_write(fd: i32, v: u64) -> Result<(), Errno> {
    // SAFETY: v is a valid 8-byte buffer.
    match retry_eintr(|| unsafe { libc::write(fd, (&v as *const u64).cast(), 8) })? {
        8 => Ok(()),
        _ => Err(Errno::EIO),
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
            Kind::Sigqueue => {
                install_handler()?;
                let w = Arc::new(Shared::<Word>::new()?);
                let w2 = w.clone();
                // The peer inherits the mask of the thread that forks it:
                // blocked from its first instruction, no signal is lost.
                let _blocked = RtBlocked::new();
                let peer = Peer::spawn(cpus.peer, move || sigqueue_peer(&w2, &c))?;
                (peer, How::Sigqueue(w))
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
        let _blocked = s.enter();
        for _ in 0..CHECK_ROUNDS {
            s.round().map_err(PrepareError::Fail)?;
        }
        Ok(s)
    }

    /// Signal ping-pong: blocks the signal in the calling thread and tells
    /// the peer which thread to answer; nothing for the others.
    fn enter(&self) -> Option<RtBlocked> {
        let How::Sigqueue(w) = &self.how else {
            return None;
        };
        let b = RtBlocked::new();
        // SAFETY: getpid has no preconditions.
        w.tgid.store(unsafe { libc::getpid() }, Ordering::SeqCst);
        w.tid.store(gettid(), Ordering::SeqCst);
        Some(b)
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
            How::Sigqueue(_) => sig_round(self.peer.pid().as_raw(), expect),
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

/// Parent side of one signal round: queue `expect` to the peer, take the
/// answer (the signal must be blocked in this thread: [`Signalling::enter`]).
#[inline]
fn sig_round(peer: libc::pid_t, expect: u32) -> Result<u64, Errno> {
    let value = libc::sigval {
        sival_ptr: expect as usize as *mut libc::c_void,
    };
    // SAFETY: plain system call.
    Errno::result(unsafe { libc::sigqueue(peer, rt_signal(), value) })?;
    let set = rt_set();
    let slice = libc::timespec {
        tv_sec: 0,
        tv_nsec: SLICE.as_nanos() as libc::c_long,
    };
    let mut deadline: Option<Instant> = None;
    loop {
        // SAFETY: siginfo_t is plain data.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid set, info and timeout.
        let r = unsafe { libc::sigtimedwait(&set, &mut info, &slice) };
        match Errno::result(r) {
            Ok(_) => {
                // SAFETY: a queued signal's info holds a pid and a value.
                let (from, v) = unsafe { (info.si_pid(), info.si_value().sival_ptr as u64) };
                if from != peer {
                    continue; // not our peer's answer
                }
                return Ok(v);
            }
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let d = *deadline.get_or_insert_with(|| Instant::now() + STALL_LIMIT);
                if Instant::now() >= d {
                    return Err(Errno::ETIMEDOUT);
                }
            }
            Err(e) => return Err(e),
        }
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
        let _blocked = self.enter();
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
            class: None,
        };
        for kind in [Kind::Eventfd, Kind::Futex, Kind::Sigqueue] {
            let mut s = Signalling::start(kind, cpus).unwrap();
            assert!(s.run(20).unwrap() > Duration::ZERO);
            let t = s.take_op_times();
            assert_eq!(t.len(), 20);
            assert!(t.iter().all(|&x| x > 0.0), "{kind:?}");
        }
    }
}
