//! The clock and the calibration of the batch size.
//!
//! Timing a single cheap operation is meaningless (the clock read costs
//! more than a function call), so every sample times a batch of `ops`
//! operations, and calibration grows `ops` until one batch takes at least
//! the profile's sample target: the two clock reads are then a negligible
//! part of it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::Timed;

/// A batch never holds more operations than this, whatever calibration says.
pub const MAX_OPS: u64 = 1 << 34;

/// Finds the number of operations whose batch takes at least `target`.
///
/// Starts at the benchmark's `min_ops` and returns `(ops, time of the last
/// batch)`. Gives up growing at the benchmark's `max_ops`, at [`MAX_OPS`],
/// or when calibration itself has used `limit` (a slow operation then runs
/// `min_ops` per batch).
pub fn calibrate(
    t: &mut dyn Timed,
    target: Duration,
    limit: Duration,
) -> anyhow::Result<(u64, Duration)> {
    let cap = t.max_ops().unwrap_or(MAX_OPS).clamp(1, MAX_OPS);
    let started = Instant::now();
    let mut ops = t.min_ops().clamp(1, cap);
    loop {
        let mut took = t.run(ops)?;
        if took >= target && ops < cap && started.elapsed() < limit {
            // One disturbed batch (an interrupt, a preemption, a cold cache)
            // can look long enough on its own, and would leave every sample
            // at a handful of operations: confirm with a second batch.
            took = took.min(t.run(ops)?);
        }
        if took >= target || ops >= cap || started.elapsed() >= limit {
            return Ok((ops, took));
        }
        let next = if took.as_nanos() == 0 {
            ops.saturating_mul(10)
        } else {
            // Aim 20% past the target, but never grow more than 10x per step
            // so that a first batch disturbed by a cold cache cannot explode it.
            let want = (ops as f64 * target.as_secs_f64() * 1.2 / took.as_secs_f64()).ceil();
            (want as u64).clamp(ops + 1, ops.saturating_mul(10))
        };
        ops = next.min(cap);
    }
}

/// The empty twin of a benchmark loop: the counted loop with no work in it.
#[derive(Default)]
pub struct EmptyLoop;

impl Timed for EmptyLoop {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let start = Instant::now();
        for i in 0..ops {
            black_box(i);
        }
        Ok(start.elapsed())
    }
}

/// Runs `f` `ops` times, timing only the loop: the common shape of a cheap benchmark.
#[inline(always)]
pub fn time_loop<F: FnMut()>(ops: u64, mut f: F) -> Duration {
    let start = Instant::now();
    for _ in 0..ops {
        f();
    }
    start.elapsed()
}

/// The environment variable that makes every sample slower on purpose.
pub const SLOWDOWN_ENV: &str = "OPCOST_SLOWDOWN_PCT";

/// The share every sample is made slower by (`OPCOST_SLOWDOWN_PCT`, percent,
/// 0–100; 0 when unset or not a number in that range): a known, real
/// change for testing what `compare` and `ab` can see.
pub fn slowdown() -> f64 {
    static SHARE: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *SHARE.get_or_init(|| {
        std::env::var(SLOWDOWN_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
            .map_or(0.0, |p| p / 100.0)
    })
}

/// A batch's time made [`slowdown`] slower by a busy wait of that share of
/// it, timed and added: the machine really spends it, with its noise.
pub fn slow_down(took: Duration) -> Duration {
    let share = slowdown();
    if share <= 0.0 {
        return took;
    }
    let wait = took.mul_f64(share);
    let start = Instant::now();
    while start.elapsed() < wait {
        std::hint::spin_loop();
    }
    took + start.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake operation that costs `ns` of simulated time per op.
    struct Fake {
        ns: u64,
        max: Option<u64>,
    }
    impl Timed for Fake {
        fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
            Ok(Duration::from_nanos(ops * self.ns))
        }
        fn max_ops(&self) -> Option<u64> {
            self.max
        }
    }

    #[test]
    fn calibration_reaches_the_target() {
        let mut f = Fake { ns: 7, max: None };
        let (ops, took) =
            calibrate(&mut f, Duration::from_millis(5), Duration::from_secs(5)).unwrap();
        assert!(took >= Duration::from_millis(5));
        // not absurdly past it either
        assert!(took <= Duration::from_millis(60), "{took:?} with {ops} ops");
    }

    #[test]
    fn calibration_respects_max_ops() {
        let mut f = Fake {
            ns: 1,
            max: Some(1000),
        };
        let (ops, _) = calibrate(&mut f, Duration::from_secs(1), Duration::from_secs(5)).unwrap();
        assert_eq!(ops, 1000);
    }

    #[test]
    fn calibration_starts_at_min_ops() {
        struct Slow;
        impl Timed for Slow {
            fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
                Ok(Duration::from_millis(10 * ops))
            }
            fn min_ops(&self) -> u64 {
                32
            }
        }
        let (ops, took) =
            calibrate(&mut Slow, Duration::from_millis(5), Duration::from_secs(5)).unwrap();
        assert_eq!(ops, 32);
        assert_eq!(took, Duration::from_millis(320));
    }

    #[test]
    fn slow_operation_runs_one_per_batch() {
        let mut f = Fake {
            ns: 50_000_000,
            max: None,
        };
        let (ops, _) = calibrate(&mut f, Duration::from_millis(5), Duration::from_secs(5)).unwrap();
        assert_eq!(ops, 1);
    }

    /// An operation whose first run is disturbed (100x slower), then steady.
    struct FirstSlow {
        runs: u32,
    }
    impl Timed for FirstSlow {
        fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
            self.runs += 1;
            let ns = if self.runs == 1 { 10_000_000 } else { 100_000 };
            Ok(Duration::from_nanos(ops * ns))
        }
    }

    #[test]
    fn one_disturbed_batch_does_not_stop_calibration() {
        let mut f = FirstSlow { runs: 0 };
        let (ops, took) =
            calibrate(&mut f, Duration::from_millis(5), Duration::from_secs(5)).unwrap();
        assert!(ops >= 50, "{ops} ops, {took:?}");
    }

    #[test]
    fn empty_loop_scales_with_ops() {
        let mut e = EmptyLoop;
        assert!(e.run(0).unwrap() < Duration::from_millis(50));
        assert!(e.run(1_000_000).unwrap() > Duration::ZERO);
    }
}
