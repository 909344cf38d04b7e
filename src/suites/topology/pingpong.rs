//! The cache-line round trip: two threads pinned to two CPUs hand one
//! counter back and forth, so every hand-over moves the line from one
//! core's cache to the other's.
//!
//! The measuring thread, when it sees the even value `x`, writes `x + 1`;
//! the rival, when it sees an odd value, writes the next even one. One
//! operation is one round trip: the line goes to the rival and back. Two
//! ways to take a turn: with a compare-and-swap of the value expected,
//! spun on until it succeeds (each attempt asks for the line in exclusive
//! state at once, as core-to-core-latency's CAS benchmark does), or with a
//! plain store after the loads that spin until the turn is seen (the line
//! is first shared, then upgraded).
//!
//! The line sits alone on a page of its own, first touched by the
//! measuring CPU, so it lives on that CPU's NUMA node; the node is checked
//! with `move_pages` and recorded (a line on an arbitrary node once made a
//! published matrix blame a socket for the memory's place).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::harness::affinity::{self, Cpus, Pinned};
use crate::harness::{PrepareError, Timed};

/// How the turn is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// compare-and-swap of the value seen for the next one.
    Cas,
    /// A plain store of the next value after the load that saw the turn.
    Store,
}

impl Write {
    /// Both, in report order.
    pub const ALL: [Write; 2] = [Write::Cas, Write::Store];

    /// The name used in ids: `cas`, `store`.
    pub fn name(self) -> &'static str {
        match self {
            Write::Cas => "cas",
            Write::Store => "store",
        }
    }
}

/// How long the measuring thread waits for the rival's turn before the
/// batch fails (a rival starved of its CPU this long is no result).
const STALL: Duration = Duration::from_secs(5);

/// One page of anonymous memory holding the line at its start.
struct Page {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the page is only ever accessed through the AtomicU64 at its
// start, which is Sync; the mapping lives until the Page is dropped,
// after both threads are done with it.
unsafe impl Send for Page {}
unsafe impl Sync for Page {}

impl Page {
    fn new() -> anyhow::Result<Page> {
        // The kernel rounds the length up to its page size (4 KiB to 64 KiB).
        let len = 4096;
        let ptr = crate::os::sys::map_anon(len).context("mapping the line's page")?;
        Ok(Page { ptr, len })
    }

    fn line(&self) -> &AtomicU64 {
        // SAFETY: the mapping is page-aligned, zeroed, at least 8 bytes,
        // and lives as long as `self`.
        unsafe { AtomicU64::from_ptr(self.ptr.cast()) }
    }

    /// The NUMA node the page is on, from `move_pages` in query mode;
    /// None where the kernel does not say (no NUMA support).
    fn node(&self) -> Option<i32> {
        let status = crate::os::numa::query_nodes(&[self.ptr as usize]).ok()?;
        status.first().copied().filter(|&n| n >= 0)
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

/// What the two threads share besides the line.
struct Shared {
    page: Page,
    quit: AtomicBool,
    unpinned: AtomicBool,
    /// Set by the measuring thread for the length of a batch: the rival
    /// spins only then. A rival that spun between batches would take the
    /// peer CPU from the rival of another benchmark of its group (they are
    /// prepared side by side), which then answers in time slices.
    active: AtomicBool,
    /// Set by the rival while it spins on the line.
    spinning: AtomicBool,
}

/// A cache-line ping-pong between two pinned CPUs, ready to time.
pub struct PingPong {
    write: Write,
    shared: Arc<Shared>,
    rival: Option<JoinHandle<()>>,
    /// The even value the line holds when it is this thread's turn.
    next: u64,
    peer: usize,
    details: serde_json::Value,
    _pinned: Pinned,
}

impl PingPong {
    /// Pins this thread to `cpus.parent`, touches the line there and
    /// starts the rival on `cpus.peer`. The two CPUs must differ: on one
    /// CPU the two spinning threads would take turns by time slices.
    pub fn start(write: Write, cpus: Cpus) -> Result<PingPong, PrepareError> {
        if cpus.parent == cpus.peer {
            return Err(PrepareError::Skip(
                "a cache-line round trip needs two CPUs".into(),
            ));
        }
        let pinned = Pinned::to(cpus.parent).map_err(PrepareError::Fail)?;
        let page = Page::new().map_err(PrepareError::Fail)?;
        // First touch from the measuring CPU places the page on its node.
        page.line().store(0, Ordering::SeqCst);
        let node = page.node();
        let shared = Arc::new(Shared {
            page,
            quit: AtomicBool::new(false),
            unpinned: AtomicBool::new(false),
            active: AtomicBool::new(false),
            spinning: AtomicBool::new(false),
        });
        let s = shared.clone();
        let peer = cpus.peer;
        let rival = std::thread::Builder::new()
            .name("opcost-pingpong".into())
            .spawn(move || {
                // Not `pin_to`: this thread inherited the measuring
                // thread's pinning, which does not allow the peer CPU.
                if affinity::pin_to_set(&[peer]).is_err() {
                    s.unpinned.store(true, Ordering::SeqCst);
                    return;
                }
                let line = s.page.line();
                // The odd value the rival answers next: the measuring
                // thread writes 1, 3, 5... in turn, the rival 2, 4, 6...
                let mut expect = 1u64;
                while !s.quit.load(Ordering::Relaxed) {
                    if !s.active.load(Ordering::Acquire) {
                        s.spinning.store(false, Ordering::Release);
                        std::thread::park_timeout(Duration::from_millis(50));
                        continue;
                    }
                    s.spinning.store(true, Ordering::Release);
                    let mut idle = 0u32;
                    loop {
                        let answered = match write {
                            // Spin with the swap itself on the value
                            // expected: the line is asked for exclusive at
                            // once, as core-to-core-latency does.
                            Write::Cas => line
                                .compare_exchange(
                                    expect,
                                    expect + 1,
                                    Ordering::AcqRel,
                                    Ordering::Relaxed,
                                )
                                .is_ok(),
                            Write::Store => {
                                let v = line.load(Ordering::Acquire);
                                let mine = v == expect;
                                if mine {
                                    line.store(v + 1, Ordering::Release);
                                }
                                mine
                            }
                        };
                        if answered {
                            expect += 2;
                            idle = 0;
                            continue;
                        }
                        idle = idle.wrapping_add(1);
                        if idle.is_multiple_of(256) && !s.active.load(Ordering::Relaxed) {
                            break;
                        }
                        std::hint::spin_loop();
                    }
                }
            })
            .map_err(|e| PrepareError::Fail(e.into()))?;
        let mut details = cpus.details();
        if let Some(d) = details.as_object_mut() {
            d.insert("write".into(), json!(write.name()));
            d.insert(
                "line_node".into(),
                node.map_or(serde_json::Value::Null, |n| json!(n)),
            );
            d.insert("line_first_touch_cpu".into(), json!(cpus.parent));
        }
        Ok(PingPong {
            write,
            shared,
            rival: Some(rival),
            next: 0,
            peer,
            details,
            _pinned: pinned,
        })
    }

    /// `ops` round trips, timed; the rival is spinning.
    fn batch(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let shared = self.shared.clone();
        let line = shared.page.line();
        let start = Instant::now();
        for _ in 0..ops {
            let x = self.next;
            match self.write {
                // Take the turn with the swap itself, spinning on it until
                // the rival's answer to the last turn is there.
                Write::Cas => self.spin_until(start, || {
                    line.compare_exchange(x, x + 1, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                })?,
                Write::Store => {
                    self.spin_until(start, || line.load(Ordering::Acquire) == x)?;
                    line.store(x + 1, Ordering::Release);
                }
            }
            self.next = x + 2;
        }
        // The rival's answer to the last turn ends the last round trip.
        let last = self.next;
        self.spin_until(start, || line.load(Ordering::Acquire) == last)?;
        Ok(start.elapsed())
    }

    /// Spins until `done` holds; an error once the batch begun at `start`
    /// has waited [`STALL`] (the rival is starved of its CPU).
    fn spin_until(&self, start: Instant, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
        let mut spins = 0u32;
        while !done() {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1 << 16) && start.elapsed() > STALL {
                bail!(
                    "the rival thread on CPU {} made no progress for {} s",
                    self.peer,
                    STALL.as_secs()
                );
            }
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// The NUMA node the line is on, when the kernel says.
    pub fn line_node(&self) -> Option<i64> {
        self.details.get("line_node").and_then(|v| v.as_i64())
    }
}

impl Timed for PingPong {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let shared = self.shared.clone();
        let s = &*shared;
        // Wake the rival and wait until it spins: its wake-up is not timed.
        s.active.store(true, Ordering::Release);
        if let Some(h) = &self.rival {
            h.thread().unpark();
        }
        let woken = Instant::now();
        while !s.spinning.load(Ordering::Acquire) {
            if s.unpinned.load(Ordering::SeqCst) {
                bail!("the rival thread could not be pinned to CPU {}", self.peer);
            }
            if woken.elapsed() > STALL {
                s.active.store(false, Ordering::Release);
                bail!(
                    "the rival thread on CPU {} did not wake for {} s",
                    self.peer,
                    STALL.as_secs()
                );
            }
            std::hint::spin_loop();
        }
        let timed = self.batch(ops);
        s.active.store(false, Ordering::Release);
        timed
    }

    /// Short batches: a round trip stalls whenever either vCPU is
    /// descheduled (milliseconds on a shared guest), so long batches would
    /// all carry a stall; short ones leave most batches clean, and the
    /// median is the line's round trip, not the hypervisor's time slice.
    fn max_ops(&self) -> Option<u64> {
        Some(MAX_BATCH)
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(self.details.clone())
    }
}

/// The most round trips one batch holds: ~20–200 µs at 20–200 ns each.
const MAX_BATCH: u64 = 1000;

impl Drop for PingPong {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::Relaxed);
        if let Some(h) = self.rival.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::affinity::Placement;

    fn two_cpus() -> Option<Cpus> {
        let all = affinity::allowed_cpus();
        let (a, b) = (all[0], *all.get(1)?);
        Some(Cpus {
            placement: Placement::Cross,
            parent: a,
            peer: b,
            same_core: false,
            class: None,
        })
    }

    #[test]
    fn the_line_goes_back_and_forth_once_per_operation() {
        let Some(cpus) = two_cpus() else { return };
        for write in Write::ALL {
            let mut p = PingPong::start(write, cpus).unwrap();
            p.run(1000).unwrap();
            p.run(10).unwrap();
            // Each round trip adds two: this thread's turn and the rival's.
            assert_eq!(
                p.shared.page.line().load(Ordering::SeqCst),
                2020,
                "{write:?}"
            );
            let d = p.details().unwrap();
            assert_eq!(d["write"], write.name());
            assert_eq!(d["line_first_touch_cpu"], cpus.parent);
            assert!(d.get("line_node").is_some(), "{d}");
        }
    }

    #[test]
    fn one_cpu_is_no_pair() {
        let cpu = affinity::allowed_cpus()[0];
        let cpus = Cpus {
            placement: Placement::Same,
            parent: cpu,
            peer: cpu,
            same_core: true,
            class: None,
        };
        match PingPong::start(Write::Cas, cpus) {
            Err(PrepareError::Skip(why)) => assert!(why.contains("two CPUs"), "{why}"),
            _ => panic!("one CPU must be skipped"),
        }
    }
}
