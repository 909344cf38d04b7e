//! The stability canary and what the kernel can tell about interference.
//!
//! Why: a shared cloud guest changes speed in phases of seconds (host
//! contention on the physical core, frequency, cache partitioning), and in a
//! slow phase *everything* is slower, the minimum included, so no low
//! percentile of a benchmark's own samples can filter it out. A fixed
//! reference workload, measured between the rounds of a run, sees those
//! phases directly: when it is slower than the machine's fast phase, so is
//! whatever ran next to it. The runner marks such rounds, measures them
//! again within a bounded budget, and the run reports how stable the
//! machine was.
//!
//! The kernel's own counters explain part of it: steal time (the hypervisor
//! ran someone else), involuntary context switches of the measuring thread
//! (another task took its CPU), CPU migrations, the load average, and the
//! share of the CPUs' time other programs used while the run went on (the
//! CPUs' busy time in /proc/stat less opcost's own, children included):
//! the figure that says a run shared the machine, which the cpu and
//! syscall suites' per-operation costs deliberately do not show.

use std::hint::black_box;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::stats::quantile;

/// A canary slower than the run's fast phase by more than this factor marks
/// the round next to it as run in a slow phase (the phases seen on cloud
/// guests are ~1.25x; a single check's noise is a few per cent).
pub const SLOW_PHASE: f64 = 1.10;
/// Other programs' share of the CPUs above which a run says it shared the
/// machine (a few per cent is the kernel's and the system's own work).
pub const BUSY_SHARE: f64 = 0.10;
/// A run whose canary spread (p90 / p10 - 1) exceeds this is called unstable.
pub const UNSTABLE_SPREAD: f64 = 0.10;
/// Share of the planned run time that may go to measuring slow rounds again.
pub const REMEASURE_SHARE: f64 = 0.25;

/// Dependent multiply-adds in one canary pass (about 20 µs at 3 GHz).
const CHAIN: u64 = 20_000;
/// Raw `getppid` system calls in one canary pass.
const SYSCALLS: u64 = 100;
/// Passes per check; the check is the fastest (interrupts only add time).
const PASSES: usize = 3;

/// One canary check: the time of a fixed dependent integer chain plus a
/// few raw system calls, in ns (the fastest of a few passes).
pub fn check() -> f64 {
    (0..PASSES)
        .map(|_| {
            let t = Instant::now();
            let mut x = black_box(1u64);
            for _ in 0..CHAIN {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
            }
            black_box(x);
            for _ in 0..SYSCALLS {
                // SAFETY: getppid takes no arguments and cannot fail.
                black_box(unsafe { libc::syscall(libc::SYS_getppid) });
            }
            t.elapsed().as_nanos() as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// The fast phase of a set of canary checks: their 10th percentile, so a
/// machine that was slow for most of a run is still judged against the part
/// in which it was fast (on a host whose phases switch every second or so,
/// a run may see the fast one in only 15–25% of its checks, and a higher
/// percentile would then make a slow phase the run's baseline). A check is
/// the fastest of a few passes, so there are no spuriously fast ones to
/// guard against; the percentile only absorbs a check's few per cent of
/// noise.
pub fn baseline(checks: &[f64]) -> Option<f64> {
    quantile(checks, 0.10).filter(|b| *b > 0.0)
}

/// What a run says about the machine's stability.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// True when the machine's speed held during the run.
    pub stable: bool,
    /// Canary checks taken.
    pub checks: usize,
    /// The canary's fast-phase time, ns.
    pub canary_ns: f64,
    /// p90 / p10 - 1 of the canary checks (0.05 = the slow end 5% slower).
    pub spread: f64,
    /// Benchmark rounds measured.
    pub rounds: usize,
    /// Rounds that ran in a slow phase.
    pub slow_rounds: usize,
    /// Slow rounds measured again in a fast phase and replaced.
    pub remeasured: usize,
    /// Slow rounds left out of the estimate because enough fast rounds of
    /// the same benchmark remained.
    #[serde(default)]
    pub set_aside: usize,
    /// Slow rounds kept in the estimate and corrected for the phase.
    #[serde(default)]
    pub corrected: usize,
    /// Time stolen by the hypervisor during the run, as a share of the CPUs' time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_share: Option<f64>,
    /// Involuntary context switches of the measuring thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nivcsw: Option<u64>,
    /// Share of all CPUs' time that other programs used during the run
    /// (0.5 = one CPU's worth of two); absent when /proc/stat is unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_share: Option<f64>,
}

impl Stability {
    /// From the canary checks and the round counts.
    pub fn of(
        checks: &[f64],
        rounds: usize,
        slow_rounds: usize,
        remeasured: usize,
        set_aside: usize,
        corrected: usize,
        interference: &Interference,
    ) -> Option<Stability> {
        let steal_share = interference.steal_share;
        let base = baseline(checks)?;
        let p10 = quantile(checks, 0.10)?;
        let p90 = quantile(checks, 0.90)?;
        let spread = if p10 > 0.0 { p90 / p10 - 1.0 } else { 0.0 };
        let still_slow = slow_rounds.saturating_sub(remeasured + set_aside);
        let stable = spread <= UNSTABLE_SPREAD
            && (rounds == 0 || still_slow as f64 / rounds as f64 <= 0.10)
            && steal_share.is_none_or(|s| s <= 0.05);
        Some(Stability {
            stable,
            checks: checks.len(),
            canary_ns: base,
            spread,
            rounds,
            slow_rounds,
            remeasured,
            set_aside,
            corrected,
            steal_share,
            nivcsw: interference.nivcsw,
            others_share: interference.others_share,
        })
    }

    /// True when other programs used a noticeable share of the CPUs.
    pub fn shared(&self) -> bool {
        self.others_share.is_some_and(|o| o > BUSY_SHARE)
    }

    /// The one line shown at the top of a run's output.
    pub fn line(&self) -> String {
        let mut s = format!(
            "machine {}: canary spread {:.1}% over {} checks; {} of {} rounds ran in a slow phase, {} measured again, {} set aside, {} corrected",
            if self.stable { "stable" } else { "UNSTABLE" },
            self.spread * 100.0,
            self.checks,
            self.slow_rounds,
            self.rounds,
            self.remeasured,
            self.set_aside,
            self.corrected,
        );
        if let Some(st) = self.steal_share {
            s.push_str(&format!("; steal {:.1}%", st * 100.0));
        }
        if let Some(o) = self.others_share.filter(|_| self.shared()) {
            s.push_str(&format!(
                "; other programs used {:.0}% of the CPUs (per-operation costs leave out batches they interrupted; throughput and wake-up figures share the CPUs)",
                o * 100.0
            ));
        }
        if !self.stable {
            s.push_str("; results vary more than their intervals say: rerun on a quieter machine, or compare with several runs per side");
        }
        s
    }
}

/// Counters of interference, read at the start and end of a round.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    /// Steal ticks of all CPUs (USER_HZ), from /proc/stat.
    steal_ticks: Option<u64>,
    /// Sum of all ticks of all CPUs, from /proc/stat.
    total_ticks: Option<u64>,
    /// Involuntary context switches of this thread.
    nivcsw: Option<u64>,
    /// CPU migrations of this thread (needs the kernel's sched statistics).
    migrations: Option<u64>,
    /// Busy (not idle, not iowait) ticks of all CPUs, from /proc/stat.
    busy_ticks: Option<u64>,
    /// CPU time of this process and its reaped children, seconds.
    own_cpu_s: f64,
}

/// Differences between two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interference {
    /// Steal time in ms (all CPUs).
    pub steal_ms: Option<f64>,
    /// Share of all CPUs' ticks that were stolen.
    pub steal_share: Option<f64>,
    /// Involuntary context switches.
    pub nivcsw: Option<u64>,
    /// CPU migrations.
    pub migrations: Option<u64>,
    /// Share of all CPUs' time used by other programs (busy time less this
    /// process's and its children's).
    pub others_share: Option<f64>,
}

impl Snapshot {
    /// Reads the counters now; what the kernel does not offer stays unknown.
    pub fn now() -> Snapshot {
        let ticks = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| parse_cpu_ticks(&t));
        Snapshot {
            steal_ticks: ticks.map(|t| t.steal),
            total_ticks: ticks.map(|t| t.total),
            busy_ticks: ticks.map(|t| t.busy),
            own_cpu_s: own_cpu_s(),
            nivcsw: thread_nivcsw(),
            migrations: std::fs::read_to_string("/proc/thread-self/sched")
                .ok()
                .and_then(|t| parse_migrations(&t)),
        }
    }

    /// What happened between `self` (earlier) and `later`.
    pub fn until(&self, later: &Snapshot) -> Interference {
        let d = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
        let steal = d(self.steal_ticks, later.steal_ticks);
        let total = d(self.total_ticks, later.total_ticks);
        Interference {
            steal_ms: steal.map(|t| t as f64 * 1000.0 / ticks_per_second()),
            steal_share: match (steal, total) {
                (Some(s), Some(t)) if t > 0 => Some(s as f64 / t as f64),
                _ => None,
            },
            nivcsw: d(self.nivcsw, later.nivcsw),
            migrations: d(self.migrations, later.migrations),
            others_share: match (d(self.busy_ticks, later.busy_ticks), total) {
                (Some(busy), Some(t)) if t > 0 => {
                    let own = (later.own_cpu_s - self.own_cpu_s) * ticks_per_second();
                    Some(((busy as f64 - own) / t as f64).clamp(0.0, 1.0))
                }
                _ => None,
            },
        }
    }
}

/// Ticks of the aggregate `cpu` line of /proc/stat (USER_HZ).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuTicks {
    /// Time stolen by the hypervisor.
    pub steal: u64,
    /// All time (user nice system idle iowait irq softirq steal).
    pub total: u64,
    /// Time not idle and not waiting for I/O, steal left out.
    pub busy: u64,
}

/// The ticks of the aggregate `cpu` line of /proc/stat.
pub fn parse_cpu_ticks(stat: &str) -> Option<CpuTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice;
    // guest time is already counted in user.
    let steal = *v.get(7)?;
    let total: u64 = v.iter().take(8).sum();
    let busy = total - v[3] - v[4] - steal;
    Some(CpuTicks { steal, total, busy })
}

/// User and system CPU time of this process and its reaped children, s.
fn own_cpu_s() -> f64 {
    let of = |who| {
        rusage(who).map_or(0.0, |ru| {
            let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            s(ru.ru_utime) + s(ru.ru_stime)
        })
    };
    of(libc::RUSAGE_SELF) + of(libc::RUSAGE_CHILDREN)
}

/// `getrusage(who)`, when it succeeds.
fn rusage(who: libc::c_int) -> Option<libc::rusage> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: ru is a valid out-pointer for getrusage.
    let rc = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
    // SAFETY: getrusage filled it in when it returned 0.
    (rc == 0).then(|| unsafe { ru.assume_init() })
}

/// `se.nr_migrations` from /proc/thread-self/sched.
pub fn parse_migrations(sched: &str) -> Option<u64> {
    sched
        .lines()
        .find(|l| l.trim_start().starts_with("se.nr_migrations"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// The 1-minute load average.
pub fn load1() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn thread_nivcsw() -> Option<u64> {
    rusage(libc::RUSAGE_THREAD).map(|ru| ru.ru_nivcsw as u64)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canary_check_is_positive_and_repeatable_in_magnitude() {
        let a = check();
        let b = check();
        assert!(a > 0.0 && b > 0.0);
        assert!(a / b < 20.0 && b / a < 20.0, "{a} {b}");
    }

    #[test]
    fn proc_stat_steal_is_the_eighth_value() {
        let stat = "cpu  100 5 50 1000 10 1 2 30 0 0\ncpu0 50 2 25 500 5 0 1 15 0 0\n";
        assert_eq!(
            parse_cpu_ticks(stat),
            Some(CpuTicks {
                steal: 30,
                total: 1198,
                busy: 1198 - 1000 - 10 - 30
            })
        );
        assert_eq!(parse_cpu_ticks("intr 1 2 3"), None);
    }

    #[test]
    fn others_share_is_the_busy_time_that_was_not_ours() {
        let ticks = ticks_per_second();
        let at = |busy: u64, total: u64, own_s: f64| Snapshot {
            busy_ticks: Some(busy),
            total_ticks: Some(total),
            steal_ticks: Some(0),
            own_cpu_s: own_s,
            ..Snapshot::default()
        };
        // 2 CPUs for 10 s: 20 s of ticks; busy 14 s of which 4 s were ours
        let t = |s: f64| (s * ticks) as u64;
        let i = at(0, 0, 1.0).until(&at(t(14.0), t(20.0), 5.0));
        assert!((i.others_share.unwrap() - 0.5).abs() < 0.01, "{i:?}");
        // our own work alone is no one else's
        let i = at(0, 0, 0.0).until(&at(t(4.0), t(20.0), 4.0));
        assert!(i.others_share.unwrap() < 0.01, "{i:?}");
        // unreadable /proc/stat: unknown
        let none = Snapshot::default();
        assert_eq!(none.until(&none).others_share, None);
        // the live counters give a share in range
        let now = Snapshot::now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        if let Some(o) = now.until(&Snapshot::now()).others_share {
            assert!((0.0..=1.0).contains(&o));
        }
    }

    #[test]
    fn migrations_are_read_from_sched() {
        let sched = "opcost (1234, #threads: 1)\n-----\nse.exec_start : 1.0\nse.nr_migrations                             :                    7\n";
        assert_eq!(parse_migrations(sched), Some(7));
        assert_eq!(parse_migrations("nothing"), None);
    }

    #[test]
    fn stability_calls_a_steady_canary_stable_and_a_phased_one_not() {
        let steady: Vec<f64> = (0..100).map(|i| 1000.0 + (i % 5) as f64).collect();
        let quiet = Interference {
            steal_share: Some(0.0),
            ..Interference::default()
        };
        let s = Stability::of(&steady, 300, 3, 3, 0, 0, &quiet).unwrap();
        assert!(s.stable, "{s:?}");
        assert!(s.line().starts_with("machine stable"));
        let mut phased = steady.clone();
        phased.extend((0..40).map(|_| 1250.0));
        let u = Stability::of(&phased, 300, 90, 10, 0, 0, &Interference::default()).unwrap();
        assert!(!u.stable);
        assert!(u.spread > 0.2, "{}", u.spread);
        assert!(u.line().contains("UNSTABLE"));
        assert_eq!(baseline(&steady).map(|b| b < 1003.0), Some(true));
    }

    #[test]
    fn snapshots_difference_is_never_negative() {
        let a = Snapshot::now();
        let b = Snapshot::now();
        let i = a.until(&b);
        assert!(i.steal_ms.is_none_or(|s| s >= 0.0));
        assert!(i.steal_share.is_none_or(|s| (0.0..=1.0).contains(&s)));
    }
}
