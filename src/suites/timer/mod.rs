//! How late a sleeping task wakes: the overshoot of a 1 ms and a 1 s sleep
//! past the time asked for, through `nanosleep` (relative),
//! `clock_nanosleep(TIMER_ABSTIME)` (the call a periodic task makes) and a
//! timerfd read, with the CPUs idle and with every CPU kept busy by opcost's
//! own load threads.
//!
//! One operation is one wake-up; its value is the overshoot in nanoseconds
//! (the time the call returned minus the deadline), so a result's median is
//! the median overshoot and `per_op` holds its p99. The overshoot includes
//! the thread's timer slack (50 µs by default on Linux for normal threads,
//! recorded in the details), the wake-up latency, and under load the wait
//! for a CPU.
//!
//! The load threads spin on every CPU while a loaded benchmark's round is
//! prepared and measured, and stop when it ends; each also stops on its own
//! when the measuring thread has not taken a sample for [`LOAD_IDLE`], so
//! nothing is left running if the run stalls.

mod findings;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use super::bench::{Budget, FnBench, Suite};
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::host::Host;

/// The area name.
const AREA: &str = "timer";

/// A load thread stops on its own this long after the last sample.
pub const LOAD_IDLE: Duration = Duration::from_secs(10);

/// The timer suite.
pub fn suite() -> Suite {
    Suite {
        name: AREA,
        summary: "sleep and timer overshoot (nanosleep, clock_nanosleep absolute, timerfd), idle and with every CPU busy",
        benches,
        findings: findings::findings,
    }
}

/// How a task sleeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// nanosleep(period), relative.
    Nanosleep,
    /// clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline).
    AbsSleep,
    /// A timerfd armed for an absolute deadline, then read().
    Timerfd,
}

impl Method {
    /// Every method, in run order.
    pub const ALL: [Method; 3] = [Method::Nanosleep, Method::AbsSleep, Method::Timerfd];

    /// The name in ids.
    pub fn name(self) -> &'static str {
        match self {
            Method::Nanosleep => "nanosleep",
            Method::AbsSleep => "clock_nanosleep_abs",
            Method::Timerfd => "timerfd",
        }
    }

    /// How it is called, for summaries and findings.
    fn call(self) -> &'static str {
        match self {
            Method::Nanosleep => "nanosleep",
            Method::AbsSleep => "clock_nanosleep(TIMER_ABSTIME)",
            Method::Timerfd => "timerfd read",
        }
    }
}

/// A sleep length measured, with its label in ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// The label (`1ms`, `1s`).
    pub label: &'static str,
    /// The length in nanoseconds.
    pub ns: u64,
}

/// The sleep lengths.
pub const PERIODS: [Period; 2] = [
    Period {
        label: "1ms",
        ns: 1_000_000,
    },
    Period {
        label: "1s",
        ns: 1_000_000_000,
    },
];

/// The id of a sleep benchmark.
pub fn id(m: Method, p: Period, loaded: bool) -> String {
    format!(
        "{AREA}.{}/{}/{}",
        m.name(),
        p.label,
        if loaded { "loaded" } else { "idle" }
    )
}

/// The profile a variant starts at: the 1 ms sleeps at every profile; the
/// 1 s sleeps cost three seconds a round (calibration, warm-up, one
/// sample), so the absolute sleep, the one a periodic task uses, runs from
/// the default profile and the other two only at thorough.
fn min_profile(m: Method, p: Period) -> Profile {
    match (p.ns >= 1_000_000_000, m) {
        (false, _) => Profile::Quick,
        (true, Method::AbsSleep) => Profile::Default,
        (true, _) => Profile::Thorough,
    }
}

/// Wake-ups per timed batch at `profile` for a sleep of `p`: one for the
/// 1 s sleeps (so each sample is one), a few for the 1 ms sleeps at the
/// longer profiles, so their p99 rests on more wake-ups.
fn batch(profile: Profile, p: Period) -> u64 {
    if p.ns >= 100_000_000 {
        return 1;
    }
    match profile {
        Profile::Quick => 1,
        Profile::Default => 4,
        Profile::Thorough => 8,
    }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let mut v = Vec::new();
    for p in PERIODS {
        for m in Method::ALL {
            for loaded in [false, true] {
                let load = if loaded {
                    "with every CPU kept busy by spinning threads"
                } else {
                    "CPUs idle"
                };
                let budget = if p.ns >= 100_000_000 {
                    // At least one sample a round whatever the budget: this
                    // only keeps the rounds from taking more.
                    Budget::Fixed([
                        Duration::ZERO,
                        Duration::from_secs(1),
                        Duration::from_secs(2),
                    ])
                } else {
                    let ms = Duration::from_millis;
                    Budget::Fixed([ms(60), ms(400), ms(2000)])
                };
                v.push(
                    FnBench::new(
                        id(m, p, loaded),
                        format!(
                            "how late a {} {} wakes past its deadline (overshoot per wake-up), {load}",
                            p.label,
                            m.call()
                        ),
                        Unit::Latency,
                        move |ctx| Ok(Box::new(Sleeper::new(m, p, loaded, ctx)?) as Box<dyn Timed>),
                    )
                    .param("period", p.label)
                    .param("period_ns", p.ns)
                    .param("load", if loaded { "all CPUs busy" } else { "idle" })
                    .with_budget(budget)
                    .expected_by(move |profile, budget| {
                        // A sleep of a second or more outlasts any budget:
                        // a round takes three (measured: 15 s for the five
                        // rounds of a default run).
                        let sleeps = 3.0 * profile.rounds() as f64;
                        budget.max(Duration::from_nanos(p.ns).mul_f64(sleeps))
                    })
                    .min_profile(min_profile(m, p))
                    .boxed(),
                );
            }
        }
    }
    v
}

/// CLOCK_MONOTONIC now, in nanoseconds.
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A timespec of `ns` nanoseconds.
fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Threads that keep every CPU busy until dropped, or until no sample was
/// taken for [`LOAD_IDLE`].
pub struct Load {
    stop: Arc<AtomicBool>,
    /// Milliseconds since `epoch` of the last sample.
    beat: Arc<AtomicU64>,
    epoch: Instant,
    threads: Vec<JoinHandle<()>>,
}

impl Load {
    /// Starts one spinning thread per CPU this process may run on.
    pub fn start() -> anyhow::Result<Load> {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stop = Arc::new(AtomicBool::new(false));
        let beat = Arc::new(AtomicU64::new(0));
        let epoch = Instant::now();
        let mut load = Load {
            stop,
            beat,
            epoch,
            threads: Vec::with_capacity(n),
        };
        for i in 0..n {
            let (stop, beat) = (load.stop.clone(), load.beat.clone());
            let t = std::thread::Builder::new()
                .name(format!("opcost-load-{i}"))
                .spawn(move || spin(&stop, &beat, epoch))
                .context("starting a load thread")?;
            load.threads.push(t);
        }
        Ok(load)
    }

    /// Tells the threads a sample is being taken (keeps them running).
    fn beat(&self) {
        let ms = self.epoch.elapsed().as_millis() as u64;
        self.beat.store(ms, Ordering::Relaxed);
    }

    /// True while every thread is still spinning.
    fn running(&self) -> bool {
        self.threads.iter().all(|t| !t.is_finished())
    }

    /// The number of threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }
}

/// The body of a load thread: dependent arithmetic, checking every few
/// microseconds whether to stop.
fn spin(stop: &AtomicBool, beat: &AtomicU64, epoch: Instant) {
    let idle_ms = LOAD_IDLE.as_millis() as u64;
    let mut x = 1u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let now = epoch.elapsed().as_millis() as u64;
        if now.saturating_sub(beat.load(Ordering::Relaxed)) > idle_ms {
            break;
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A prepared sleeper: one wake-up per operation, timed as overshoot.
pub struct Sleeper {
    method: Method,
    period: Period,
    tfd: Option<std::os::fd::OwnedFd>,
    load: Option<Load>,
    batch: u64,
    op_times: Vec<f64>,
    slack_ns: Option<u64>,
}

impl Sleeper {
    /// Prepares `method` sleeping `period`, with load threads when `loaded`;
    /// sleeps once to check that it works.
    pub fn new(
        method: Method,
        period: Period,
        loaded: bool,
        ctx: &Ctx,
    ) -> Result<Sleeper, PrepareError> {
        let tfd = if method == Method::Timerfd {
            use std::os::fd::FromRawFd;
            // SAFETY: plain system call; the result is checked.
            let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
            if fd < 0 {
                return Err(PrepareError::Skip(format!(
                    "timerfd_create: {}",
                    std::io::Error::last_os_error()
                )));
            }
            // SAFETY: a fresh descriptor we own.
            Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
        } else {
            None
        };
        // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the slack.
        let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        let mut s = Sleeper {
            method,
            period,
            tfd,
            load: None,
            batch: batch(ctx.profile, period),
            op_times: Vec::new(),
            slack_ns: u64::try_from(slack).ok(),
        };
        // A short trial of the call itself (not of the period), before the load starts.
        s.sleep_once(Period {
            label: "trial",
            ns: 10_000,
        })?;
        if loaded {
            s.load = Some(Load::start()?);
        }
        Ok(s)
    }

    /// One sleep of `p`; returns the overshoot in nanoseconds.
    fn sleep_once(&mut self, p: Period) -> anyhow::Result<u64> {
        let start = now_ns();
        let deadline = start + p.ns;
        match self.method {
            Method::Nanosleep => {
                let mut req = timespec(p.ns);
                loop {
                    let mut rem = timespec(0);
                    // SAFETY: valid timespecs.
                    if unsafe { libc::nanosleep(&req, &mut rem) } == 0 {
                        break;
                    }
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        bail!("nanosleep: {e}");
                    }
                    req = rem;
                }
            }
            Method::AbsSleep => {
                let ts = timespec(deadline);
                loop {
                    // SAFETY: a valid timespec; no remainder with TIMER_ABSTIME.
                    let r = unsafe {
                        libc::clock_nanosleep(
                            libc::CLOCK_MONOTONIC,
                            libc::TIMER_ABSTIME,
                            &ts,
                            std::ptr::null_mut(),
                        )
                    };
                    match r {
                        0 => break,
                        libc::EINTR => continue,
                        e => bail!("clock_nanosleep: {}", std::io::Error::from_raw_os_error(e)),
                    }
                }
            }
            Method::Timerfd => {
                use std::os::fd::AsRawFd;
                let fd = self.tfd.as_ref().context("no timerfd")?.as_raw_fd();
                let spec = libc::itimerspec {
                    it_interval: timespec(0),
                    it_value: timespec(deadline),
                };
                // SAFETY: a valid itimerspec; no old value wanted.
                let r = unsafe {
                    libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
                };
                if r != 0 {
                    bail!("timerfd_settime: {}", std::io::Error::last_os_error());
                }
                let mut expirations = 0u64;
                loop {
                    // SAFETY: reading 8 bytes into a u64.
                    let n = unsafe { libc::read(fd, (&mut expirations as *mut u64).cast(), 8) };
                    if n == 8 {
                        break;
                    }
                    let e = std::io::Error::last_os_error();
                    if n < 0 && e.kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    bail!("reading the timerfd: {e}");
                }
            }
        }
        Ok(now_ns().saturating_sub(deadline))
    }
}

impl Timed for Sleeper {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        if let Some(l) = &self.load {
            if !l.running() {
                bail!("the load threads stopped before the sample");
            }
            l.beat();
        }
        let mut total = 0u64;
        for _ in 0..ops {
            let late = self.sleep_once(self.period)?;
            self.op_times.push(late as f64);
            total += late;
        }
        // The overshoot is the measured quantity: ns per op = mean overshoot.
        Ok(Duration::from_nanos(total))
    }

    fn max_ops(&self) -> Option<u64> {
        Some(self.batch)
    }

    fn min_ops(&self) -> u64 {
        self.batch
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.op_times)
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(json!({
            "period_ns": self.period.ns,
            "wakeups_per_sample": self.batch,
            "timer_slack_ns": self.slack_ns,
            "load_threads": self.load.as_ref().map_or(0, Load::threads),
            "clock": "CLOCK_MONOTONIC",
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        crate::harness::test_ctx()
    }

    #[test]
    fn ids_profiles_and_units() {
        let b = benches(&Host::default());
        assert_eq!(b.len(), 12);
        let ms = b
            .iter()
            .find(|b| b.id() == "timer.clock_nanosleep_abs/1ms/loaded")
            .unwrap();
        assert_eq!(ms.unit(), Unit::Latency);
        assert!(ms.runs_at(Profile::Quick));
        assert_eq!(ms.params()["period_ns"], 1_000_000);
        let one_s = b
            .iter()
            .filter(|b| b.id().contains("/1s/"))
            .collect::<Vec<_>>();
        assert_eq!(one_s.len(), 6);
        assert!(one_s.iter().all(|b| !b.runs_at(Profile::Quick)));
        assert_eq!(
            one_s.iter().filter(|b| b.runs_at(Profile::Default)).count(),
            2
        );
        assert!(one_s.iter().all(|b| b.runs_at(Profile::Thorough)));
    }

    #[test]
    fn every_method_wakes_after_its_deadline() {
        let p = Period {
            label: "test",
            ns: 200_000,
        };
        for m in Method::ALL {
            let mut s = Sleeper::new(m, p, false, &ctx()).unwrap();
            let started = Instant::now();
            let d = s.run(3).unwrap();
            // Three sleeps of 200 µs took at least that long, overshoot aside.
            assert!(started.elapsed() >= Duration::from_micros(600), "{m:?}");
            let times = s.take_op_times();
            assert_eq!(times.len(), 3);
            assert!(times.iter().all(|t| t.is_finite() && *t >= 0.0));
            assert_eq!(d.as_nanos() as f64, times.iter().sum::<f64>());
            let det = s.details().unwrap();
            assert_eq!(det["load_threads"], 0);
        }
    }

    #[test]
    fn load_threads_run_and_stop_with_the_sleeper() {
        let p = Period {
            label: "test",
            ns: 100_000,
        };
        let mut s = Sleeper::new(Method::AbsSleep, p, true, &ctx()).unwrap();
        s.run(2).unwrap();
        let load = s.load.as_ref().unwrap();
        assert!(load.threads() >= 1);
        assert!(load.running());
        let stop = load.stop.clone();
        drop(s);
        assert!(
            stop.load(Ordering::Relaxed),
            "told to stop, and joined in drop"
        );
    }
}
