//! What every IPC benchmark shares: the peer process at the other end, the
//! placement of the two ends on CPUs, memory shared between them, and the
//! futex "bells" one side sleeps on and the other rings.
//!
//! Why a forked child and not a thread: IPC is between processes, and a
//! process has its own address space (page tables, TLB) as a real peer would.
//! The child is forked from a process that may have other threads (the
//! Ctrl-C handler), so after `fork` it may only make async-signal-safe calls:
//! no allocation, no locks, no destructors. Everything it uses is allocated
//! before the fork and it leaves through `_exit`.

use std::cell::Cell;
use std::num::NonZeroUsize;
use std::ops::Deref;
use std::os::fd::AsFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::mman::{MapFlags, ProtFlags, mmap, mmap_anonymous, munmap};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::harness::PrepareError;
use crate::os::child;

/// How long a waiting parent tolerates a peer that makes no progress.
pub const STALL_LIMIT: Duration = Duration::from_secs(5);
/// One futex sleep; a waiter re-checks its deadline after each.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

pub use crate::harness::affinity::{Cpus, Placement};

/// How a waiter on the placement `cpus` spins.
pub fn spin_of(cpus: &Cpus) -> Spin {
    Spin::new(cpus.parent == cpus.peer)
}

/// The steps a peer reports when it fails (stored in [`Ctl::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Step {
    /// No failure recorded.
    None = 0,
    /// Receiving data.
    Recv = 1,
    /// Sending data.
    Send = 2,
    /// A message of the wrong size or content.
    Integrity = 3,
    /// Waiting for the parent.
    Wait = 4,
    /// Reading or writing a file.
    File = 5,
}

impl Step {
    fn from_u32(v: u32) -> Step {
        match v {
            1 => Step::Recv,
            2 => Step::Send,
            3 => Step::Integrity,
            4 => Step::Wait,
            5 => Step::File,
            _ => Step::None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Step::None => "no step",
            Step::Recv => "receiving",
            Step::Send => "sending",
            Step::Integrity => "checking a message",
            Step::Wait => "waiting",
            Step::File => "file I/O",
        }
    }
}

/// Exit code of a peer that ended normally (its input closed).
pub const EXIT_OK: i32 = 0;
/// Exit code of a peer that recorded a failure in [`Ctl`].
pub const EXIT_FAILED: i32 = 1;

/// A child process running the far end of a benchmark. Dropping it kills
/// and reaps the child, so no peer outlives its benchmark.
pub struct Peer {
    pid: Pid,
    status: Cell<Option<WaitStatus>>,
}

impl Peer {
    /// Forks a child pinned to `cpu` that runs `body` and exits with its code.
    ///
    /// `body` runs in the child after `fork`: it must only make
    /// async-signal-safe calls (no allocation, no locks) and must not return
    /// through destructors; its captures are never dropped in the child.
    /// The child dies with its parent (PR_SET_PDEATHSIG) and ignores SIGINT,
    /// which the parent handles for both.
    pub fn spawn<F: FnMut() -> i32>(cpu: usize, body: F) -> Result<Peer, PrepareError> {
        let pid = child::fork_peer(Some(cpu), body)?;
        Ok(Peer {
            pid: Pid::from_raw(pid),
            status: Cell::new(None),
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Why the peer is gone, if it is (reaps it); `None` while it runs.
    pub fn exit_reason(&self, ctl: Option<&Ctl>) -> Option<String> {
        let status = match self.status.get() {
            Some(s) => s,
            None => match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => return None,
                Ok(s) => {
                    self.status.set(Some(s));
                    s
                }
            },
        };
        Some(match status {
            WaitStatus::Exited(_, EXIT_FAILED) => match ctl.and_then(Ctl::failure) {
                Some(f) => format!("the peer process failed {f}"),
                None => "the peer process failed".to_string(),
            },
            WaitStatus::Exited(_, child::EXIT_PIN) => {
                "the peer process could not pin itself".into()
            }
            WaitStatus::Exited(_, code) => format!("the peer process exited early (status {code})"),
            WaitStatus::Signaled(_, sig, _) => format!("the peer process was killed by {sig}"),
            other => format!("the peer process stopped ({other:?})"),
        })
    }

    /// Turns an error of the parent's end into a message that says whether
    /// the peer died, and why.
    pub fn explain(&self, what: &str, e: Errno, ctl: Option<&Ctl>) -> anyhow::Error {
        // Give a dying peer a moment to become reapable before asking: up to
        // a second, as on a loaded machine it may not have run yet (this is
        // the error path, so the wait costs nothing otherwise).
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            if let Some(reason) = self.exit_reason(ctl) {
                return anyhow::anyhow!("{what}: {e} ({reason})");
            }
            if Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if e == Errno::ETIMEDOUT {
            anyhow::anyhow!(
                "{what}: the peer process made no progress for {} s; the machine may be overloaded",
                STALL_LIMIT.as_secs()
            )
        } else {
            anyhow::anyhow!("{what}: {e}")
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if self.status.get().is_none() {
            let _ = kill(self.pid, Signal::SIGKILL);
            let _ = waitpid(self.pid, None);
        }
    }
}

/// A shared (or private) memory mapping, unmapped (or, for a System V
/// segment, detached) on drop.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    sysv: bool,
}

// SAFETY: the mapping is plain memory; shared access goes through atomics
// or raw-pointer copies whose synchronisation the users provide.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Anonymous memory shared with children forked later (zero-filled).
    pub fn shared(len: usize) -> nix::Result<Mapping> {
        Self::anonymous(len, MapFlags::MAP_SHARED)
    }

    /// Anonymous private memory (zero-filled, page-aligned): message buffers.
    pub fn private(len: usize) -> nix::Result<Mapping> {
        Self::anonymous(len, MapFlags::MAP_PRIVATE)
    }

    fn anonymous(len: usize, flags: MapFlags) -> nix::Result<Mapping> {
        let n = NonZeroUsize::new(len.max(1)).ok_or(Errno::EINVAL)?;
        // SAFETY: a fresh anonymous mapping aliases nothing.
        let p = unsafe {
            mmap_anonymous(None, n, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE, flags)?
        };
        Ok(Mapping {
            ptr: p.cast(),
            len: n.get(),
            sysv: false,
        })
    }

    /// Maps `len` bytes of a file (a memfd) shared.
    pub fn of_file<F: AsFd>(fd: F, len: usize) -> nix::Result<Mapping> {
        let n = NonZeroUsize::new(len).ok_or(Errno::EINVAL)?;
        // SAFETY: the file is private to this benchmark; nothing else maps it.
        let p = unsafe {
            mmap(
                None,
                n,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                0,
            )?
        };
        Ok(Mapping {
            ptr: p.cast(),
            len: n.get(),
            sysv: false,
        })
    }

    /// A private System V segment of `len` bytes, attached, and marked for
    /// removal at once (the kernel frees it when the last user detaches).
    pub fn sysv(len: usize) -> Result<Mapping, PrepareError> {
        let (p, _) = super::sysv_kernel::segment(len)?;
        let ptr = NonNull::new(p).ok_or_else(|| anyhow::anyhow!("shmat returned null"))?;
        Ok(Mapping {
            ptr,
            len,
            sysv: true,
        })
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty mapping (never: a mapping has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.sysv {
            // SAFETY: ptr came from shmat and is detached once.
            unsafe { libc::shmdt(self.ptr.as_ptr().cast()) };
        } else {
            // SAFETY: ptr/len came from mmap and are unmapped once.
            let _ = unsafe { munmap(self.ptr.cast(), self.len) };
        }
    }
}

/// A page-aligned private buffer: messages are sent from and received into
/// these, so every mechanism sees the same alignment.
pub struct Buf {
    map: Mapping,
    len: usize,
}

impl Buf {
    /// A zeroed buffer of `len` bytes, its pages touched (no first-use faults).
    pub fn new(len: usize) -> nix::Result<Buf> {
        let mut b = Buf {
            map: Mapping::private(len)?,
            len,
        };
        b.as_mut_slice().fill(0);
        Ok(b)
    }

    /// A buffer holding a copy of `data`.
    pub fn from_slice(data: &[u8]) -> nix::Result<Buf> {
        let mut b = Buf::new(data.len())?;
        b.as_mut_slice().copy_from_slice(data);
        Ok(b)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is private, at least len bytes, owned by self.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_ptr(), self.len) }
    }
}

/// Types that are valid when all their bytes are zero and contain only
/// atomics, so they can live in shared memory.
///
/// # Safety
/// Implementors must be valid when zero-filled and be `Sync`.
pub unsafe trait ZeroShared: Sync {}

/// A `T` in memory shared between the parent and the peer.
pub struct Shared<T: ZeroShared> {
    map: Mapping,
    _t: std::marker::PhantomData<T>,
}

impl<T: ZeroShared> Shared<T> {
    /// A zero-filled `T` in a fresh shared mapping.
    pub fn new() -> nix::Result<Shared<T>> {
        let map = Mapping::shared(std::mem::size_of::<T>())?;
        Ok(Shared {
            map,
            _t: std::marker::PhantomData,
        })
    }
}

impl<T: ZeroShared> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the mapping is page-aligned, large enough, zero-filled,
        // and T is valid when zeroed (ZeroShared).
        unsafe { &*(self.map.as_ptr() as *const T) }
    }
}

/// A value alone on its cache line, so that two writers never share one.
#[repr(C, align(128))]
#[derive(Default)]
pub struct Padded<T>(pub T);

impl<T> Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Waits until `word` differs from `expected` or `timeout` passes (futex
/// shared between processes: no FUTEX_PRIVATE_FLAG).
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) -> Result<(), Errno> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: word is a valid, aligned u32 for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        )
    };
    if r == -1 { Err(Errno::last()) } else { Ok(()) }
}

/// Wakes up to `n` waiters on `word`.
pub fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: word is a valid, aligned u32.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, n);
    }
}

/// How a waiter spins before it sleeps.
#[derive(Clone, Copy, Debug)]
pub struct Spin {
    /// Polls between two `sched_yield` calls: a waiter sharing its CPU with
    /// the side it waits for must give the CPU away, or it spins a whole
    /// time slice.
    pub yield_every: u32,
}

impl Spin {
    /// The spin policy for ends that share a CPU (`shared`) or not.
    pub fn new(shared: bool) -> Spin {
        Spin {
            yield_every: if shared { 1 } else { 4096 },
        }
    }

    /// Waits one poll: a pause instruction, and a yield every so often.
    #[inline]
    pub fn poll(&self, i: u32) {
        std::hint::spin_loop();
        if i % self.yield_every == self.yield_every - 1 {
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
    }
}

/// Polls before a parent sleeps on an acknowledgement when the peer is on
/// another CPU (waking the parent across CPUs costs far more than polling).
pub const ACK_SPIN_POLLS: u32 = 20_000;

/// What a waiter does before it sleeps.
#[derive(Clone, Copy)]
pub enum Before<'a> {
    /// Sleeps at once.
    Sleep,
    /// Polls this many times first.
    Poll(u32, Spin),
    /// Polls for as long as the flag is non-zero (a benchmark is running).
    PollWhile(&'a AtomicU32, Spin),
}

/// A futex word one side sleeps on and the other side rings: the wake-up
/// costs a system call only when somebody really sleeps.
#[repr(C, align(128))]
#[derive(Default)]
pub struct Bell {
    /// 1 while the waiter is (about to be) asleep.
    word: AtomicU32,
}

impl Bell {
    /// Wakes the waiter if it sleeps. Call after making its condition true
    /// with a SeqCst store.
    #[inline]
    pub fn ring(&self) {
        if self.word.load(Ordering::SeqCst) == 1 && self.word.swap(0, Ordering::SeqCst) == 1 {
            futex_wake(&self.word, 1);
        }
    }

    /// Waits until `ready()` (which must read with SeqCst). `stall` bounds
    /// the sleep (ETIMEDOUT); `None` waits forever (peers: they die with
    /// their parent).
    pub fn wait(
        &self,
        before: Before<'_>,
        stall: Option<Duration>,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), Errno> {
        if ready() {
            return Ok(());
        }
        match before {
            Before::Sleep => {}
            Before::Poll(n, spin) => {
                for i in 0..n {
                    spin.poll(i);
                    if ready() {
                        return Ok(());
                    }
                }
            }
            Before::PollWhile(flag, spin) => {
                let mut i = 0u32;
                while flag.load(Ordering::Relaxed) != 0 {
                    spin.poll(i);
                    i = i.wrapping_add(1);
                    if ready() {
                        return Ok(());
                    }
                }
            }
        }
        let deadline = stall.map(|d| Instant::now() + d);
        loop {
            self.word.store(1, Ordering::SeqCst);
            if ready() {
                self.word.store(0, Ordering::Relaxed);
                return Ok(());
            }
            match futex_wait(&self.word, 1, SLEEP_SLICE) {
                Ok(()) | Err(Errno::EAGAIN) | Err(Errno::EINTR) | Err(Errno::ETIMEDOUT) => {}
                Err(e) => return Err(e),
            }
            if ready() {
                self.word.store(0, Ordering::Relaxed);
                return Ok(());
            }
            if let Some(d) = deadline
                && Instant::now() >= d
            {
                self.word.store(0, Ordering::Relaxed);
                return Err(Errno::ETIMEDOUT);
            }
        }
    }
}

/// The control block shared by the parent and its peer: batch targets,
/// acknowledgements, the integrity checksum and the peer's failure.
#[repr(C)]
#[derive(Default)]
pub struct Ctl {
    /// Cumulative bytes the sink must have received before it acknowledges.
    pub target: Padded<AtomicU64>,
    /// The sink's cumulative byte count, published with each acknowledgement.
    pub received: Padded<AtomicU64>,
    /// The parent sleeps here until an acknowledgement.
    pub ack: Bell,
    /// The parent sleeps here while a lossy transport's window is full.
    pub credit: Bell,
    /// The peer sleeps here until the parent posts work.
    pub go: Bell,
    /// A job number the parent increments to post work (file benchmarks).
    pub job: Padded<AtomicU64>,
    /// Checksum of the verification prefix, computed by the peer.
    pub sum: AtomicU64,
    /// Non-zero: the sink publishes `received` after every receive.
    pub progress: AtomicU32,
    /// The step at which the peer failed ([`Step`]).
    pub step: AtomicU32,
    /// The errno of the peer's failure.
    pub errno: AtomicI32,
}

// SAFETY: only atomics, all valid when zero.
unsafe impl ZeroShared for Ctl {}

impl Ctl {
    /// Records the peer's failure (async-signal-safe) and returns the exit code.
    pub fn fail(&self, step: Step, e: Errno) -> i32 {
        self.errno.store(e as i32, Ordering::SeqCst);
        self.step.store(step as u32, Ordering::SeqCst);
        EXIT_FAILED
    }

    /// The recorded failure, as text: `while receiving: EFAULT`.
    pub fn failure(&self) -> Option<String> {
        let step = Step::from_u32(self.step.load(Ordering::SeqCst));
        if step == Step::None {
            return None;
        }
        let e = Errno::from_raw(self.errno.load(Ordering::SeqCst));
        Some(if step == Step::Integrity {
            "while checking a message: it arrived with the wrong size".to_string()
        } else {
            format!("while {}: {e}", step.name())
        })
    }

    /// Parent: waits until the sink acknowledged `target` bytes.
    /// Gives up with ETIMEDOUT after `stall`.
    pub fn wait_ack(&self, target: u64, cpus: &Cpus, stall: Duration) -> Result<(), Errno> {
        let before = if cpus.parent == cpus.peer {
            Before::Sleep
        } else {
            Before::Poll(ACK_SPIN_POLLS, spin_of(cpus))
        };
        self.ack.wait(before, Some(stall), || {
            self.received.load(Ordering::SeqCst) >= target
        })
    }

    /// Sink: publishes `total` and wakes the parent.
    pub fn acknowledge(&self, total: u64) {
        self.received.store(total, Ordering::SeqCst);
        self.ack.ring();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::affinity;
    use std::sync::Arc;

    /// A control block shared with a peer, forked on the first allowed CPU,
    /// that runs `body` on it.
    fn peer_running(body: impl Fn(&Ctl) -> i32) -> (Arc<Shared<Ctl>>, Peer) {
        let ctl = Arc::new(Shared::<Ctl>::new().unwrap());
        let c = ctl.clone();
        let peer = Peer::spawn(affinity::allowed_cpus()[0], move || body(&c)).unwrap();
        (ctl, peer)
    }

    #[test]
    fn shared_memory_is_seen_by_the_peer_and_the_peer_is_reaped() {
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        let (ctl, peer) = peer_running(|c| {
            c.sum.store(42, Ordering::SeqCst);
            c.acknowledge(7);
            EXIT_OK
        });
        let cpus = Cpus {
            placement: Placement::Same,
            parent: 0,
            peer: 0,
            same_core: true,
            class: None,
        };
        ctl.wait_ack(7, &cpus, STALL_LIMIT).unwrap();
        assert_eq!(ctl.sum.load(Ordering::SeqCst), 42);
        let pid = peer.pid();
        drop(peer);
        // Reaped: no such child any more.
        assert!(waitpid(pid, Some(WaitPidFlag::WNOHANG)).is_err());
    }

    #[test]
    fn a_failed_peer_explains_itself() {
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        let (ctl, peer) = peer_running(|c| c.fail(Step::Recv, Errno::EBADF));
        let msg = peer
            .explain("waiting", Errno::EPIPE, Some(&ctl))
            .to_string();
        assert!(msg.contains("receiving") && msg.contains("EBADF"), "{msg}");
    }

    #[test]
    fn a_wait_on_a_silent_peer_times_out() {
        let bell = Bell::default();
        let t = Instant::now();
        let r = bell.wait(Before::Sleep, Some(Duration::from_millis(60)), || false);
        assert_eq!(r, Err(Errno::ETIMEDOUT));
        assert!(t.elapsed() >= Duration::from_millis(60));
    }
}
