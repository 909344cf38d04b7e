//! Batches the scheduler did not interrupt.
//!
//! Every benchmark of this suite is CPU-bound and never blocks, so a batch
//! during which the thread was preempted (an involuntary context switch:
//! another task took the CPU) measured the other task's time slice, not
//! the operation. On a busy machine that is most of the spread between
//! runs. Such a batch is timed again, up to [`RETRIES`] times; if every try
//! was preempted, the quickest is kept and the result says how many were.
//! The clock stays the wall clock, so on a quiet machine nothing changes.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};

use crate::harness::Timed;

/// Extra tries of a preempted batch.
pub const RETRIES: usize = 3;

/// Involuntary context switches of the calling thread so far.
fn preemptions() -> Option<libc::c_long> {
    getrusage(UsageWho::RUSAGE_THREAD)
        .ok()
        .map(|u| u.involuntary_context_switches())
}

/// A [`Timed`] whose batches are retimed when the thread was preempted.
pub struct Undisturbed<T> {
    inner: T,
    /// Reads the preemption count (the kernel's, or a fake in tests).
    count: fn() -> Option<libc::c_long>,
    /// Batches timed, tries included.
    batches: u64,
    /// Tries that were preempted.
    preempted: u64,
    /// Batches kept although every try was preempted.
    kept_preempted: u64,
}

impl<T: Timed> Undisturbed<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Undisturbed {
            inner,
            count: preemptions,
            batches: 0,
            preempted: 0,
            kept_preempted: 0,
        }
    }
}

impl<T: Timed> Timed for Undisturbed<T> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let mut quickest: Option<Duration> = None;
        for _ in 0..=RETRIES {
            let before = (self.count)();
            let took = self.inner.run(ops)?;
            self.batches += 1;
            match (before, (self.count)()) {
                (Some(a), Some(b)) if a != b => {
                    self.preempted += 1;
                    quickest = Some(quickest.map_or(took, |q| q.min(took)));
                }
                // Not preempted, or the count is unavailable: keep it.
                _ => return Ok(took),
            }
        }
        self.kept_preempted += 1;
        Ok(quickest.unwrap_or_default())
    }

    fn max_ops(&self) -> Option<u64> {
        self.inner.max_ops()
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        self.inner.take_op_times()
    }

    fn warnings(&self) -> Vec<String> {
        let mut w = self.inner.warnings();
        if self.kept_preempted > 0 {
            w.push(format!(
                "{} batches were preempted on every one of {} tries: another task kept taking this CPU; quieten the machine or pin with --cpu",
                self.kept_preempted,
                RETRIES + 1
            ));
        }
        w
    }

    fn details(&self) -> Option<serde_json::Value> {
        let mut d = self
            .inner
            .details()
            .unwrap_or_else(|| serde_json::json!({}));
        if let Some(map) = d.as_object_mut() {
            map.insert("batches_timed".into(), self.batches.into());
            map.insert("batches_preempted".into(), self.preempted.into());
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
        static SWITCHES: Cell<libc::c_long> = const { Cell::new(0) };
    }

    fn fake_count() -> Option<libc::c_long> {
        Some(SWITCHES.with(Cell::get))
    }

    /// Takes `ops` + 10 × (tries left to be preempted) ns; the first
    /// `preempted` tries are preempted.
    struct Fake {
        calls: u64,
        preempted: u64,
    }
    impl Timed for Fake {
        fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
            self.calls += 1;
            let left = self.preempted.saturating_sub(self.calls - 1);
            if left > 0 {
                SWITCHES.with(|c| c.set(c.get() + 1));
            }
            Ok(Duration::from_nanos(ops + 10 * left))
        }
        fn max_ops(&self) -> Option<u64> {
            Some(7)
        }
    }

    fn wrap(preempted: u64, count: fn() -> Option<libc::c_long>) -> Undisturbed<Fake> {
        let mut u = Undisturbed::new(Fake {
            calls: 0,
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
        assert_eq!(
            (d["batches_timed"].as_u64(), d["batches_preempted"].as_u64()),
            (Some(1), Some(0))
        );
    }

    #[test]
    fn a_preempted_batch_is_timed_again() {
        let mut u = wrap(2, fake_count);
        assert_eq!(u.run(100).unwrap(), Duration::from_nanos(100));
        assert_eq!((u.inner.calls, u.preempted, u.kept_preempted), (3, 2, 0));
        assert!(u.warnings().is_empty());
    }

    #[test]
    fn a_batch_preempted_on_every_try_keeps_the_quickest_and_says_so() {
        let mut u = wrap(100, fake_count);
        let took = u.run(100).unwrap();
        assert_eq!(u.inner.calls, RETRIES as u64 + 1);
        // The last try had the fewest preempted tries left: the quickest.
        assert_eq!(
            took,
            Duration::from_nanos(100 + 10 * (100 - RETRIES as u64))
        );
        assert_eq!(u.kept_preempted, 1);
        assert!(u.warnings()[0].contains("preempted"), "{:?}", u.warnings());
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
