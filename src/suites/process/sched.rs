//! How long the measuring thread was runnable but waiting for a CPU (the
//! kernel's schedstat "run delay"). A spawn sleeps and is woken several
//! times per operation; on a machine busy with other work each wake-up can
//! wait for another task's time slice, and the result then measures the
//! machine's load more than the operation. The share of the timed wall time
//! spent waiting is kept with the result, and a warning says so when it is
//! large. (Not for the same-CPU ping-pong: there each end waits for the
//! other by design.) A child waiting for a CPU is not counted: only the
//! measuring thread's own delay is visible.

use crate::harness::warnings::Warning;
use std::time::Duration;

/// Share of the timed wall time spent waiting for a CPU above which a result is flagged.
pub const WAIT_WARN_SHARE: f64 = 0.2;

/// The calling thread's run delay so far (ns), if the kernel reports it.
pub fn run_delay_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().nth(1)?.parse().ok()
}

/// Run delay accumulated over timed batches, beside their wall time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Waiting {
    waited_ns: u64,
    elapsed_ns: u64,
}

impl Waiting {
    /// Adds a batch that started when the run delay was `before` and took `elapsed`.
    pub fn add(&mut self, before: Option<u64>, elapsed: Duration) {
        if let (Some(b), Some(a)) = (before, run_delay_ns()) {
            self.waited_ns += a.saturating_sub(b);
            self.elapsed_ns += u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        }
    }

    /// The share of the timed wall time spent waiting for a CPU, when known.
    pub fn share(&self) -> Option<f64> {
        (self.elapsed_ns > 0).then(|| self.waited_ns as f64 / self.elapsed_ns as f64)
    }

    /// A caveat when the share is above [`WAIT_WARN_SHARE`].
    pub fn warning(&self) -> Option<String> {
        let s = self.share()?;
        (s > WAIT_WARN_SHARE).then(|| Warning::WaitedForCpu { share: s }.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_and_warning_follow_the_threshold() {
        let mut w = Waiting::default();
        assert_eq!(w.share(), None);
        assert!(w.warning().is_none());
        w.waited_ns = 10;
        w.elapsed_ns = 100;
        assert_eq!(w.share(), Some(0.1));
        assert!(w.warning().is_none());
        w.waited_ns = 50;
        let text = w.warning().unwrap();
        assert!(text.starts_with("50%"), "{text}");
    }

    #[test]
    fn the_run_delay_is_readable_and_accumulates() {
        // schedstat exists on kernels with CONFIG_SCHED_INFO, as nearly all have.
        if let Some(before) = run_delay_ns() {
            let mut w = Waiting::default();
            w.add(Some(before), Duration::from_millis(1));
            assert!(w.share().is_some_and(|s| s >= 0.0));
        }
    }
}
