//! Locks and atomics: what taking a mutex or bumping a shared counter
//! costs alone, and what it costs when a second thread wants the same
//! cache line.
//!
//! Uncontended, a lock and an atomic add are one locked read-modify-write
//! on a line the core already owns: a few nanoseconds. Contended from
//! another CPU, every operation first has to pull the line out of the other
//! core's cache, and the cost is the coherence round trip, tens of
//! nanoseconds; two threads time-sharing one CPU never move the line, so
//! their contention costs what no contention does. A mutex handed from one
//! thread to the other on every acquisition adds the waiter's futex sleep
//! and wake-up when the hand-over is slower than the lock's spinning.
//!
//! Two mutexes are measured: `std::sync::Mutex` (a futex lock with a short
//! spin) and [`FutexMutex`], the textbook three-state futex lock in a dozen
//! lines (Drepper, "Futexes are tricky", mutex 3), which a C program can
//! repeat instruction for instruction (`scripts/peer-sync.sh`).
//!
//! The two-thread rows run a rival thread pinned to the CPU the placement
//! chooses ([`Placement::cpus`]); the measuring thread is pinned to its own
//! CPU for the life of the benchmark. A batch of `ops` is `ops` increments
//! (or hand-overs) made by the two threads together, so the time per
//! operation is the throughput of the pair, whichever thread made them.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::affinity::{self, Pinned};
use crate::harness::affinity::{Cpus, Placement};
use crate::harness::clock::ghz_estimate as clock_ghz_estimate;
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::suites::bench::{FnBench, Looped};
use crate::suites::undisturbed::Undisturbed;

/// Id of std's mutex locked and unlocked by one thread.
pub const MUTEX_STD: &str = "cpu.mutex.std.uncontended";
/// Id of the futex mutex locked and unlocked by one thread.
pub const MUTEX_FUTEX: &str = "cpu.mutex.futex.uncontended";
/// Id of std's mutex handed between two threads on two CPUs.
pub const HANDOFF_STD: &str = "cpu.mutex.std.handoff";
/// Id of the futex mutex handed between two threads on two CPUs.
pub const HANDOFF_FUTEX: &str = "cpu.mutex.futex.handoff";
/// Id of an atomic add on a line no other thread touches.
pub const ATOMIC_UNCONTENDED: &str = "cpu.atomic.add.uncontended";

/// The id of an atomic add contended by two threads placed on `p`:
/// `cpu.atomic.add.contended/same` or `/cross`.
pub fn atomic_contended_id(p: Placement) -> String {
    format!("cpu.atomic.add.contended/{}", p.label())
}

/// A futex word for a private (in-process) lock.
///
/// The IPC suite's futex calls are shared (between processes) and bounded
/// by a timeout; a lock inside one process uses the private operations,
/// which skip the kernel's lookup of the page's owner, as glibc and std do.
fn futex_wait_private(word: &AtomicU32, expected: u32) {
    // SAFETY: word is a valid, aligned u32 for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes one waiter of a private futex word.
fn futex_wake_private(word: &AtomicU32) {
    // SAFETY: word is a valid, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// The three-state futex mutex: 0 free, 1 taken, 2 taken with (possible)
/// waiters. Taking a free lock is one compare-and-swap and releasing it
/// one swap; the kernel is entered only when a thread must wait, and
/// woken only when one may be waiting.
#[derive(Default)]
#[repr(align(128))]
pub struct FutexMutex {
    state: AtomicU32,
}

impl FutexMutex {
    /// Takes the lock, sleeping in the kernel while another thread holds it.
    #[inline]
    pub fn lock(&self) {
        if let Err(mut c) = self
            .state
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        {
            if c != 2 {
                c = self.state.swap(2, Ordering::Acquire);
            }
            while c != 0 {
                futex_wait_private(&self.state, 2);
                c = self.state.swap(2, Ordering::Acquire);
            }
        }
    }

    /// Releases the lock, waking one waiter if there may be one.
    #[inline]
    pub fn unlock(&self) {
        if self.state.swap(0, Ordering::Release) == 2 {
            futex_wake_private(&self.state);
        }
    }
}

/// A value alone on its cache lines (128 bytes: the adjacent-line
/// prefetcher pairs lines), so that nothing but the benchmark shares it.
#[derive(Default)]
#[repr(align(128))]
struct Alone<T>(T);

/// What the two threads of a pair share.
#[derive(Default)]
struct Shared {
    /// The contended counter of the atomic rows.
    counter: Alone<AtomicU64>,
    /// std's mutex of the hand-over row; it counts the hand-overs.
    std_lock: Alone<Mutex<u64>>,
    /// The futex mutex of the hand-over row, and the count it guards.
    futex_lock: FutexMutex,
    futex_count: Alone<AtomicU64>,
    /// The batch number the rival should run; bumped by the measuring thread.
    go: Alone<AtomicU64>,
    /// The last batch the rival finished.
    done: Alone<AtomicU64>,
    /// Where the current batch ends (a counter value).
    end: AtomicU64,
    /// Set when the benchmark is dropped: the rival returns.
    quit: AtomicBool,
    /// Set by a rival that could not be pinned to its CPU (and returned).
    unpinned: AtomicBool,
}

/// What the two threads of a pair do in a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// Both add 1 to the counter until it reaches the end.
    AtomicAdd,
    /// Each takes std's mutex and, on its turn (the count's parity),
    /// counts one hand-over, until the count reaches the end.
    HandoffStd,
    /// The same with [`FutexMutex`].
    HandoffFutex,
}

impl Work {
    /// The count the batches advance.
    fn count(self, s: &Shared) -> u64 {
        match self {
            Work::AtomicAdd => s.counter.0.load(Ordering::SeqCst),
            Work::HandoffStd => *s.std_lock.0.lock().unwrap_or_else(|e| e.into_inner()),
            Work::HandoffFutex => s.futex_count.0.load(Ordering::SeqCst),
        }
    }

    /// Runs one thread's share of a batch that ends at count `end`; `me`
    /// (0 or 1) is the parity of the hand-overs this thread makes.
    fn run(self, s: &Shared, end: u64, me: u64) {
        match self {
            Work::AtomicAdd => while s.counter.0.fetch_add(1, Ordering::Relaxed) < end {},
            Work::HandoffStd => loop {
                let mut g = s.std_lock.0.lock().unwrap_or_else(|e| e.into_inner());
                // A measuring thread that gave up leaves the count short of
                // the end: the rival must not wait for its turn forever.
                if *g >= end || s.quit.load(Ordering::Relaxed) {
                    break;
                }
                if *g % 2 == me {
                    *g += 1;
                }
            },
            Work::HandoffFutex => loop {
                s.futex_lock.lock();
                let n = s.futex_count.0.load(Ordering::Relaxed);
                if n < end && n % 2 == me {
                    s.futex_count.0.store(n + 1, Ordering::Relaxed);
                }
                s.futex_lock.unlock();
                if n >= end || s.quit.load(Ordering::Relaxed) {
                    break;
                }
            },
        }
    }
}

/// A benchmark made by two threads on chosen CPUs: this one (pinned for
/// the benchmark's life) and a rival that runs its share of every batch.
struct Pair {
    work: Work,
    shared: Arc<Shared>,
    rival: Option<JoinHandle<()>>,
    _pinned: Pinned,
    peer: usize,
    details: serde_json::Value,
}

/// How long the measuring thread waits for the rival before calling the
/// batch failed (a rival starved of its CPU for this long is not a result).
const RIVAL_STALL: Duration = Duration::from_secs(5);

impl Pair {
    fn new(work: Work, cpus: Cpus) -> Result<Pair, PrepareError> {
        let pinned = Pinned::to(cpus.parent).map_err(PrepareError::Fail)?;
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let peer = cpus.peer;
        let yield_while_idle = cpus.parent == cpus.peer;
        let rival = std::thread::Builder::new()
            .name("opcost-rival".into())
            .spawn(move || {
                // Not `pin_to`: this thread inherited the measuring
                // thread's pinning, which does not allow the peer CPU.
                if affinity::pin_to_set(&[peer]).is_err() {
                    s.unpinned.store(true, Ordering::SeqCst);
                    return;
                }
                let mut seen = 0u64;
                while !s.quit.load(Ordering::Relaxed) {
                    let go = s.go.0.load(Ordering::Acquire);
                    if go == seen {
                        // Sharing the CPU with the measuring thread, give it
                        // away at once; on another CPU, poll.
                        if yield_while_idle {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                        continue;
                    }
                    seen = go;
                    work.run(&s, s.end.load(Ordering::Acquire), 1);
                    s.done.0.store(go, Ordering::Release);
                }
            })
            .map_err(|e| PrepareError::Fail(e.into()))?;
        let mut details = cpus.details();
        if let Some(d) = details.as_object_mut() {
            d.insert("ghz_estimate".into(), json!(clock_ghz_estimate()));
        }
        Ok(Pair {
            work,
            shared,
            rival: Some(rival),
            _pinned: pinned,
            peer,
            details,
        })
    }
}

impl Timed for Pair {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let s = &*self.shared;
        let start_count = self.work.count(s);
        let end = start_count + ops;
        let start = Instant::now();
        s.end.store(end, Ordering::Release);
        let batch = s.go.0.fetch_add(1, Ordering::AcqRel) + 1;
        self.work.run(s, end, 0);
        let mut polls = 0u32;
        while s.done.0.load(Ordering::Acquire) != batch {
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(1024) {
                std::thread::yield_now();
                if s.unpinned.load(Ordering::SeqCst) {
                    anyhow::bail!("the rival thread could not be pinned to CPU {}", self.peer);
                }
                if start.elapsed() > RIVAL_STALL {
                    anyhow::bail!(
                        "the rival thread made no progress for {} s",
                        RIVAL_STALL.as_secs()
                    );
                }
            } else {
                std::hint::spin_loop();
            }
        }
        Ok(start.elapsed())
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.details.clone())
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::Relaxed);
        if let Some(h) = self.rival.take() {
            let _ = h.join();
        }
    }
}

/// Details of a one-thread row: the clock estimate, so cycles can be given
/// when `cpu.clock` is not in the run.
///
/// The one-thread rows keep their loop's overhead, as the two-thread rows
/// must (their loop is the work): a locked instruction holds the next
/// iteration back anyway, so the loop's increment and branch run in its
/// shadow, and subtracting an empty loop's time would make the
/// uncontended rows look cheaper than the contended ones they are set
/// against.
fn one_thread_details() -> serde_json::Value {
    json!({ "ghz_estimate": clock_ghz_estimate() })
}

/// A one-thread closure, retimed when preempted, boxed.
fn one_thread(f: impl FnMut() + 'static) -> Box<dyn Timed> {
    Box::new(Undisturbed::new(
        Looped::new(f).with_details(one_thread_details()),
    ))
}

/// The lock and atomic benchmarks.
pub fn benches(host: &crate::host::Host) -> Vec<Box<dyn Bench>> {
    let placements = Placement::of_host(host);
    let mut out =
        vec![
        FnBench::new(
            MUTEX_STD,
            "std::sync::Mutex lock + unlock by one thread (no other thread uses it)",
            Unit::Latency,
            |_ctx: &Ctx| {
                // No black_box in the loop: a reference read back from the
                // stack after each unlock would wait for the unlock's fence
                // and be timed with it; atomics are never optimised away.
                let m = Mutex::new(0u64);
                Ok(one_thread(move || {
                    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
                    *g += 1;
                }))
            },
        )
        .param("threads", 1)
        .interleave("cpu.mutex.uncontended")
        .on_request().boxed(),
        FnBench::new(
            MUTEX_FUTEX,
            "a three-state futex mutex (compare-and-swap to lock, swap to unlock) by one thread",
            Unit::Latency,
            |_ctx: &Ctx| {
                let (m, n) = (FutexMutex::default(), Alone(AtomicU64::new(0)));
                Ok(one_thread(move || {
                    m.lock();
                    // The guarded data: a plain load and store, as under any lock.
                    n.0.store(n.0.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                    m.unlock();
                }))
            },
        )
        .param("threads", 1)
        .interleave("cpu.mutex.uncontended")
        .on_request().boxed(),
        FnBench::new(
            ATOMIC_UNCONTENDED,
            "atomic fetch_add on a 64-bit counter only this thread touches (lock xadd on x86)",
            Unit::Latency,
            |_ctx: &Ctx| {
                let a = Alone(AtomicU64::new(0));
                Ok(one_thread(move || {
                    a.0.fetch_add(1, Ordering::Relaxed);
                }))
            },
        )
        .param("threads", 1)
        .on_request().boxed(),
    ];
    for &p in &placements {
        out.push(
            FnBench::new(
                atomic_contended_id(p),
                match p {
                    Placement::Same => {
                        "atomic fetch_add on one counter by two threads sharing one CPU (time per increment of the pair)".to_string()
                    }
                    _ => format!(
                        "atomic fetch_add on one counter by two threads on {}: the line moves on every add",
                        p.text()
                    ),
                },
                Unit::Latency,
                move |ctx: &Ctx| Ok(Box::new(Pair::new(Work::AtomicAdd, p.cpus(ctx)?)?) as _),
            )
            .param("threads", 2)
            .param("placement", p.class_name(host))
            .on_request().boxed(),
        );
    }
    // A hand-over on one CPU waits for the scheduler's time slice: the
    // hand-overs are placed on two CPUs, `cross` under the old ids.
    for &p in placements.iter().filter(|&&p| p != Placement::Same) {
        for (id, work, what) in [
            (HANDOFF_STD, Work::HandoffStd, "std::sync::Mutex"),
            (HANDOFF_FUTEX, Work::HandoffFutex, "the futex mutex"),
        ] {
            let id = match p {
                Placement::Cross => id.to_string(),
                _ => format!("{id}/{}", p.label()),
            };
            out.push(
                FnBench::new(
                    id,
                    format!(
                        "{what} handed between two threads on {}: each takes it in turn (time per hand-over)",
                        p.text()
                    ),
                    Unit::Latency,
                    move |ctx: &Ctx| Ok(Box::new(Pair::new(work, p.cpus(ctx)?)?) as _),
                )
                .param("threads", 2)
                .param("placement", p.class_name(host))
                .on_request().boxed(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_futex_mutex_excludes_and_counts_every_increment() {
        let m = Arc::new(FutexMutex::default());
        let n = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (m, n) = (m.clone(), n.clone());
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        m.lock();
                        // A non-atomic read-modify-write: lost updates if the lock leaks.
                        let v = n.load(Ordering::Relaxed);
                        n.store(v + 1, Ordering::Relaxed);
                        m.unlock();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(n.load(Ordering::Relaxed), 40_000);
        assert_eq!(m.state.load(Ordering::Relaxed), 0, "left unlocked");
    }

    fn cpus(p: Placement) -> Option<Cpus> {
        let allowed = affinity::allowed_cpus();
        let parent = allowed[0];
        let peer = match p {
            Placement::Same => parent,
            _ => *allowed.get(1)?,
        };
        Some(Cpus {
            placement: p,
            parent,
            peer,
            same_core: parent == peer,
            class: None,
        })
    }

    #[test]
    fn a_pair_makes_exactly_the_batch_and_the_hand_overs_alternate() {
        for work in [Work::AtomicAdd, Work::HandoffStd, Work::HandoffFutex] {
            for p in Placement::ALL {
                // A hand-over on one CPU waits for the scheduler's time
                // slice: not a row, and far too slow for a test.
                if work != Work::AtomicAdd && p == Placement::Same {
                    continue;
                }
                let Some(c) = cpus(p) else { continue };
                let mut pair = Pair::new(work, c).unwrap();
                let before = work.count(&pair.shared);
                pair.run(1000).unwrap();
                pair.run(10).unwrap();
                let made = work.count(&pair.shared) - before;
                // Each thread's last atomic add overshoots the end by one.
                let slack = if work == Work::AtomicAdd { 4 } else { 0 };
                assert!(
                    (1010..=1010 + slack).contains(&made),
                    "{work:?} {p:?}: {made}"
                );
                assert_eq!(pair.details().unwrap()["placement"], p.param());
            }
        }
    }

    #[test]
    fn ids_are_unique_and_name_their_placement() {
        let b = benches(&crate::host::Host::detect());
        let ids: std::collections::HashSet<&str> = b.iter().map(|b| b.id()).collect();
        assert_eq!(ids.len(), b.len());
        assert!(ids.contains("cpu.atomic.add.contended/cross"));
        assert!(ids.contains("cpu.atomic.add.contended/same"));
        assert!(ids.contains(MUTEX_STD) && ids.contains(HANDOFF_FUTEX));
        // A two-socket server adds its classes, the hand-overs under new ids.
        let dir = crate::host::fixtures::epyc(1).write();
        let b = benches(&crate::host::Host::detect_at(dir.path()));
        let ids: std::collections::HashSet<&str> = b.iter().map(|b| b.id()).collect();
        assert_eq!(ids.len(), b.len());
        assert!(ids.contains("cpu.atomic.add.contended/cross-package"));
        assert!(ids.contains("cpu.mutex.futex.handoff/same-core"));
        assert!(ids.contains(HANDOFF_FUTEX));
    }
}
