//! Batches the scheduler did not interrupt.
//!
//! The benchmarks of the syscall and cpu suites are CPU-bound and never
//! block, so a batch during which the thread was preempted (an involuntary
//! context switch: another task took the CPU) measured the other task's
//! time slice, not the operation. On a busy machine that is most of the spread between
//! runs. So a preempted batch is timed again, up to [`RETRIES`] times.
//!
//! A batch longer than the scheduler's time slice is preempted on every
//! try when other tasks want the CPU (the default profile's 5 ms batches
//! are, under load). Then the batch is timed in pieces: its operations
//! are split into shorter runs, each retimed when preempted, and the
//! pieces' times are added up. The batch still holds the same operations
//! and is measured by the wall clock; only the intervals in which another
//! task held the CPU are left out. A piece never gets shorter than
//! [`MIN_PIECE`], so the clock reads stay negligible. If even the pieces
//! are preempted on every try, the quickest try is kept and the result
//! says how often that happened. On a quiet machine nothing changes.

use std::time::Duration;

use libc::c_long;
use nix::sys::resource::{UsageWho, getrusage};

use crate::harness::Timed;
use crate::harness::warnings::Warning;

/// Extra tries of a preempted piece.
pub const RETRIES: usize = 3;
/// Results warn when more than one piece in this many was preempted on every try.
pub const KEPT_PREEMPTED_SHARE: u64 = 10;
/// The shortest piece a batch is split into.
pub const MIN_PIECE: Duration = Duration::from_micros(250);

/// Involuntary context switches of the calling thread so far.
fn preemptions() -> Option<c_long> {
    getrusage(UsageWho::RUSAGE_THREAD)
        .ok()
        .map(|u| u.involuntary_context_switches())
}

/// A [`Timed`] whose batches leave out the time the thread was preempted.
pub struct Undisturbed<T> {
    inner: T,
    /// Reads the preemption count (the kernel's, or a fake in tests).
    count: fn() -> Option<c_long>,
    /// Pieces a batch is split into (grows under load).
    pieces: u64,
    /// Pieces measured.
    pieces_done: u64,
    /// Pieces timed, tries included.
    timed: u64,
    /// Tries that were preempted.
    preempted: u64,
    /// Pieces kept although every try was preempted.
    kept_preempted: u64,
    /// The quickest time per operation seen: the estimate of a piece's length.
    best_ns_per_op: f64,
}

impl<T: Timed> Undisturbed<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Undisturbed {
            inner,
            count: preemptions,
            pieces: 1,
            pieces_done: 0,
            timed: 0,
            preempted: 0,
            kept_preempted: 0,
            best_ns_per_op: f64::INFINITY,
        }
    }

    /// Times `ops` operations, again when preempted; returns the time and
    /// whether a try ran undisturbed.
    fn piece(&mut self, ops: u64) -> anyhow::Result<(Duration, bool)> {
        let mut quickest: Option<Duration> = None;
        self.pieces_done += 1;
        for _ in 0..=RETRIES {
            let before = (self.count)();
            let took = self.inner.run(ops)?;
            self.timed += 1;
            if ops > 0 {
                let per_op = took.as_nanos() as f64 / ops as f64;
                self.best_ns_per_op = self.best_ns_per_op.min(per_op);
            }
            match (before, (self.count)()) {
                (Some(a), Some(b)) if a != b => {
                    self.preempted += 1;
                    quickest = Some(quickest.map_or(took, |q| q.min(took)));
                }
                // Not preempted, or the count is unavailable: keep it.
                _ => return Ok((took, true)),
            }
        }
        self.kept_preempted += 1;
        Ok((quickest.unwrap_or_default(), false))
    }
}

impl<T: Timed> Timed for Undisturbed<T> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let pieces = self.pieces.clamp(1, ops.max(1));
        let mut total = Duration::ZERO;
        let mut disturbed = false;
        for i in 0..pieces {
            let n = ops / pieces + u64::from(i < ops % pieces);
            let (took, clean) = self.piece(n)?;
            total += took;
            disturbed |= !clean;
        }
        // Preempted on every try: split the next batches into twice as many
        // pieces, while a piece stays longer than MIN_PIECE (judged by the
        // quickest time per op seen, as preempted tries include the wait).
        let next_piece_ns = ops as f64 / (2 * pieces) as f64 * self.best_ns_per_op;
        if disturbed && next_piece_ns >= MIN_PIECE.as_nanos() as f64 {
            self.pieces = pieces * 2;
        }
        Ok(total)
    }

    fn max_ops(&self) -> Option<u64> {
        self.inner.max_ops()
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        self.inner.take_op_times()
    }

    fn warnings(&self) -> Vec<String> {
        let mut w = self.inner.warnings();
        // A few such pieces barely move a median; say so when they are many.
        if self.kept_preempted * KEPT_PREEMPTED_SHARE > self.pieces_done {
            w.push(
                Warning::Preempted {
                    kept: self.kept_preempted,
                    done: self.pieces_done,
                    tries: RETRIES as u32 + 1,
                }
                .to_string(),
            );
        }
        w
    }

    fn details(&self) -> Option<serde_json::Value> {
        let mut d = self
            .inner
            .details()
            .unwrap_or_else(|| serde_json::json!({}));
        if let Some(map) = d.as_object_mut() {
            map.insert("runs_timed".into(), self.timed.into());
            map.insert("runs_preempted".into(), self.preempted.into());
            map.insert("pieces_per_batch".into(), self.pieces.into());
        }
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// The fake preemption count.
        static SWITCHES: Cell<c_long> = const { Cell::new(0) };
    }

    fn fake_count() -> Option<c_long> {
        Some(SWITCHES.with(Cell::get))
    }

    /// Takes 1 ns per op, plus 1 µs when preempted; the first `preempted`
    /// calls are preempted.
    struct Fake {
        calls: u64,
        ops: u64,
        preempted: u64,
    }
    impl Timed for Fake {
        fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
            self.calls += 1;
            self.ops += ops;
            let hit = self.calls <= self.preempted;
            if hit {
                SWITCHES.with(|c| c.set(c.get() + 1));
            }
            Ok(Duration::from_nanos(ops + if hit { 1_000 } else { 0 }))
        }
        fn max_ops(&self) -> Option<u64> {
            Some(7)
        }
    }

    fn wrap(preempted: u64, count: fn() -> Option<c_long>) -> Undisturbed<Fake> {
        let mut u = Undisturbed::new(Fake {
            calls: 0,
            ops: 0,
            preempted,
        });
        u.count = count;
        u
    }

    #[test]
    fn an_undisturbed_batch_is_timed_once() {
        let mut u = wrap(0, fake_count);
        assert_eq!(u.run(100).unwrap(), Duration::from_nanos(100));
        assert_eq!(u.inner.calls, 1);
        assert_eq!(u.max_ops(), Some(7));
        assert!(u.warnings().is_empty());
        let d = u.details().unwrap();
        assert_eq!(d["runs_timed"].as_u64(), Some(1));
        assert_eq!(d["runs_preempted"].as_u64(), Some(0));
        assert_eq!(d["pieces_per_batch"].as_u64(), Some(1));
    }

    #[test]
    fn a_preempted_batch_is_timed_again() {
        let mut u = wrap(2, fake_count);
        assert_eq!(u.run(100).unwrap(), Duration::from_nanos(100));
        assert_eq!((u.inner.calls, u.preempted, u.kept_preempted), (3, 2, 0));
        assert_eq!(u.pieces, 1);
        assert!(u.warnings().is_empty());
    }

    #[test]
    fn a_batch_preempted_on_every_try_keeps_the_quickest_and_is_split_next_time() {
        let mut u = wrap(RETRIES as u64 + 1, fake_count);
        let ops = 10_000_000; // 10 ms of fake work
        let took = u.run(ops).unwrap();
        assert_eq!(u.inner.calls, RETRIES as u64 + 1);
        assert_eq!(took, Duration::from_nanos(ops + 1_000));
        assert_eq!(u.kept_preempted, 1);
        assert!(u.warnings()[0].contains("preempted"), "{:?}", u.warnings());
        assert_eq!(u.pieces, 2);
        // The next batch runs in two clean pieces holding every operation.
        let before = u.inner.ops;
        assert_eq!(u.run(ops + 1).unwrap(), Duration::from_nanos(ops + 1));
        assert_eq!(u.inner.ops - before, ops + 1);
        assert_eq!(u.pieces, 2, "clean pieces do not split further");
    }

    #[test]
    fn a_rare_fully_preempted_piece_is_not_worth_a_warning() {
        let mut u = wrap(RETRIES as u64 + 1, fake_count);
        u.run(100).unwrap();
        assert_eq!(u.warnings().len(), 1);
        for _ in 0..KEPT_PREEMPTED_SHARE {
            u.run(100).unwrap();
        }
        assert!(u.warnings().is_empty(), "{:?}", u.warnings());
    }

    #[test]
    fn pieces_never_get_shorter_than_the_minimum() {
        let mut u = wrap(u64::MAX, fake_count);
        // 1 ms batches: 4 pieces of 250 µs at most.
        for _ in 0..10 {
            u.run(1_000_000).unwrap();
        }
        assert_eq!(u.pieces, 4);
        // A batch of fewer ops than pieces runs one op per piece.
        u.run(2).unwrap();
    }

    #[test]
    fn without_a_count_every_batch_is_kept() {
        let mut u = wrap(100, || None);
        u.run(5).unwrap();
        assert_eq!(u.inner.calls, 1);
    }

    #[test]
    fn the_kernel_count_is_readable_here() {
        assert!(preemptions().is_some_and(|n| n >= 0));
    }
}
