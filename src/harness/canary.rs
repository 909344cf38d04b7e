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

use super::response::{self, PlacementEffect, Response};
use crate::stats::quantile;

/// A canary slower than the run's fast phase by more than this factor marks
/// the round next to it as run in a slow phase (the phases seen on cloud
/// guests are ~1.25x; a single check's noise is a few per cent).
pub const SLOW_PHASE: f64 = 1.10;
/// Other programs' share of the CPUs above which a run says it shared the
/// machine (a few per cent is the kernel's and the system's own work).
pub const BUSY_SHARE: f64 = 0.10;
/// A canary spread (p90 / p10 - 1) above which the machine switched between
/// phases during the run: the run is graded `shared`, not `steady` (the
/// slow rounds are measured again or set aside, so this alone does not
/// break intervals).
pub const PHASED_SPREAD: f64 = 0.10;
/// Share of a run's rounds that may stay in the estimate although they ran
/// in a slow phase (neither measured again nor set aside, only corrected
/// for the phase) before the run is graded `unstable`: beyond it most of
/// the estimate is a correction, not a measurement of the fast phase. Runs
/// with 10-40% of their rounds left slow (a cache-thrashing load in
/// phases) held their A/A compares; the one quiet-machine run with 78%
/// did not (docs/notes/canary-and-stability.md).
pub const SLOW_LEFT_SHARE: f64 = 0.50;
/// Change of the canary's mean from the first to the last third of a run
/// above which the run is graded `unstable`: the machine's speed drifted
/// (a load that grew or eased, a frequency change), and a drift moves the
/// rounds of every benchmark the same way, which rounds cannot average out.
/// The mix of ~1.3x phases alone moves it by up to ±15% in runs whose
/// intervals held.
pub const DRIFT: f64 = 0.20;
/// Steal (share of the CPUs' time the hypervisor gave to others) above which
/// a run is graded `unstable`.
pub const STEAL_SHARE: f64 = 0.05;
/// Share of the planned run time that may go to measuring slow rounds again.
pub const REMEASURE_SHARE: f64 = 0.25;

/// Dependent multiply-adds in one canary pass (about 25 µs at 3 GHz).
const CHAIN: u64 = 20_000;
/// Passes per check; the check is the fastest (interrupts only add time).
const PASSES: usize = 3;

/// The canary's work: a fixed dependent integer chain, pure user-space
/// work (no system call, no memory beyond registers), so a change of the
/// kernel's costs (mitigations, a new kernel) reads as a change of the
/// benchmarks that enter the kernel and leaves the machine-speed canary
/// quiet. Earlier canaries also made 100 raw `getppid` calls: 1 ms with
/// page-table isolation, 49 µs without, and `compare` then blamed the
/// machine for the kernel.
pub fn work() -> u64 {
    let mut x = black_box(1u64);
    for _ in 0..CHAIN {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
    }
    black_box(x)
}

/// One canary check: the time of [`work`] in ns (the fastest of a few
/// passes).
pub fn check() -> f64 {
    (0..PASSES)
        .map(|_| {
            let t = Instant::now();
            black_box(work());
            t.elapsed().as_nanos() as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Raw `getppid` system calls in one pass of the kernel canary.
pub const KERNEL_CALLS: usize = 64;

/// The kernel canary: the time of [`KERNEL_CALLS`] raw `getppid` system
/// calls in ns, the fastest of a few passes. Recorded beside the stability
/// canary ([`Stability::kernel_canary_ns`]), never used to judge a round:
/// a state of a shared machine can hold for a whole run and slow what
/// enters the kernel or touches memory while a loop of arithmetic on one
/// core reads the same (two runs of one binary on an AMD guest 1.15-1.23x
/// apart in every area, their stability canaries equal to the
/// nanosecond), and `compare` reads this one to tell such a state from a
/// change of the benchmarks. A kernel change moves it too, so `compare`
/// reads it only between runs of one kernel.
pub fn kernel_check() -> f64 {
    (0..PASSES)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..KERNEL_CALLS {
                // SAFETY: getppid takes no argument and cannot fail.
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

/// Whether a run's intervals can be trusted, graded by what the machine did
/// during the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grade {
    /// The machine's speed held and nothing else used it noticeably.
    Steady,
    /// The machine switched between speed phases or other programs shared
    /// its CPUs, but in a way the rounds absorbed: slow rounds were
    /// measured again or set aside, and nothing drifted. Intervals hold.
    Shared,
    /// The machine's speed changed within the run in a way rounds cannot
    /// average out (slow rounds left in the estimate, a drift from the
    /// start of the run to its end, steal): results vary more than their
    /// intervals say.
    Unstable,
}

impl Grade {
    /// The word shown in the stability line.
    pub fn word(self) -> &'static str {
        match self {
            Grade::Steady => "steady",
            Grade::Shared => "shared but holding",
            Grade::Unstable => "UNSTABLE",
        }
    }
}

/// What a run says about the machine's stability.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// True when the run's intervals can be trusted: the verdict is not
    /// `unstable` (kept for readers of older documents).
    pub stable: bool,
    /// The graded verdict; absent in documents written before it existed
    /// (see [`Stability::grade`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Grade>,
    /// Canary checks taken.
    pub checks: usize,
    /// The canary's fast-phase time, ns.
    pub canary_ns: f64,
    /// True when the canary was pure user-space work ([`work`]); documents
    /// written before had 100 system calls in it, so their `canary_ns` is
    /// no measure of the same work and is not compared with this one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_canary: bool,
    /// p90 / p10 - 1 of the canary checks (0.05 = the slow end 5% slower).
    pub spread: f64,
    /// The mean canary of the rounds in the last third of the run's time
    /// over that of the first third, less 1 (0.12 = the machine was 12%
    /// slower at the end); absent without rounds spread over time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<f64>,
    /// What became of the rounds in slow phases (`rounds`, `slow_rounds`,
    /// `remeasured`... in the document, beside the other fields).
    #[serde(flatten)]
    pub phases: PhaseCounts,
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
    /// The kernel canary's fast-phase time, ns ([`kernel_check`], the 10th
    /// percentile of the checks taken in the run's own process); absent
    /// in documents written before it and in runs that took none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_canary_ns: Option<f64>,
}

/// The drift of a run's canary: the mean canary of the rounds that began in
/// the last third of the run's time over the mean of those in the first
/// third, less 1. `timeline` holds (seconds since the start, canary) of
/// every round, in any order; `None` with fewer than two rounds in either
/// third or a run of no length.
pub fn drift(timeline: &[(f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = timeline
        .iter()
        .copied()
        .filter(|(t, c)| t.is_finite() && c.is_finite() && *c > 0.0)
        .collect();
    let (t0, t1) = pts
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (t, _)| {
            (lo.min(*t), hi.max(*t))
        });
    let span = t1 - t0;
    if span <= 0.0 || !span.is_finite() {
        return None;
    }
    let mean_in = |from: f64, to: f64| -> Option<f64> {
        let v: Vec<f64> = pts
            .iter()
            .filter(|(t, _)| (*t - t0) / span >= from && (*t - t0) / span <= to)
            .map(|(_, c)| *c)
            .collect();
        (v.len() >= 2).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    Some(mean_in(2.0 / 3.0, 1.0)? / mean_in(0.0, 1.0 / 3.0)? - 1.0)
}

/// The grade of a run from what it saw: `unstable` when slow rounds beyond
/// [`SLOW_LEFT_SHARE`] stayed in the estimate, the canary drifted beyond
/// [`DRIFT`], or steal exceeded [`STEAL_SHARE`]; else `shared` when the
/// canary switched phases or other programs used the CPUs; else `steady`.
fn grade_of(s: &Stability) -> Grade {
    if !s.unstable_because().is_empty() {
        Grade::Unstable
    } else if s.spread > PHASED_SPREAD || s.shared() {
        Grade::Shared
    } else {
        Grade::Steady
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What became of a run's rounds in slow phases.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseCounts {
    /// Benchmark rounds measured.
    pub rounds: usize,
    /// Rounds that ran in a slow phase.
    #[serde(rename = "slow_rounds")]
    pub slow: usize,
    /// Slow rounds measured again in a fast phase and replaced.
    pub remeasured: usize,
    /// Slow rounds left out of the estimate because enough fast rounds of
    /// the same benchmark remained.
    #[serde(default)]
    pub set_aside: usize,
    /// Slow rounds kept in the estimate and corrected for the phase.
    #[serde(default)]
    pub corrected: usize,
    /// Rounds the canary called slow in areas where the run's own rounds
    /// did not measure slower with it (see [`response`]): kept as measured,
    /// neither measured again, set aside nor corrected.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpredicted: usize,
    /// How each area's rounds responded to the canary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responses: Vec<Response>,
    /// The clearest state tied to where rounds ran, when one showed (see
    /// [`response::placement_effect`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementEffect>,
}

impl Stability {
    /// From the canary checks, the rounds' canaries over time (seconds
    /// since the start, canary relative to the fast phase; see [`drift`])
    /// and the round counts.
    pub fn of(
        checks: &[f64],
        timeline: &[(f64, f64)],
        counts: PhaseCounts,
        interference: &Interference,
    ) -> Option<Stability> {
        let base = baseline(checks)?;
        let p10 = quantile(checks, 0.10)?;
        let p90 = quantile(checks, 0.90)?;
        let spread = if p10 > 0.0 { p90 / p10 - 1.0 } else { 0.0 };
        let mut s = Stability {
            stable: true,
            verdict: None,
            checks: checks.len(),
            canary_ns: base,
            user_canary: true,
            spread,
            drift: drift(timeline),
            phases: counts,
            steal_share: interference.steal_share,
            nivcsw: interference.nivcsw,
            others_share: interference.others_share,
            kernel_canary_ns: None,
        };
        let v = grade_of(&s);
        s.verdict = Some(v);
        s.stable = v != Grade::Unstable;
        Some(s)
    }

    /// Grades the run again from its figures (after a replay of its rounds
    /// changed its counts).
    pub fn regrade(&mut self) {
        let v = grade_of(self);
        self.verdict = Some(v);
        self.stable = v != Grade::Unstable;
    }

    /// The graded verdict: the recorded one, or for a document written
    /// before verdicts existed, the one its recorded figures give.
    pub fn grade(&self) -> Grade {
        self.verdict.unwrap_or_else(|| grade_of(self))
    }

    /// Slow rounds that stayed in the estimate: neither measured again nor
    /// set aside (the corrected ones among them), in areas the canary
    /// predicts (the others' rounds are no slow phase of theirs).
    pub fn slow_left(&self) -> usize {
        self.phases.slow.saturating_sub(
            self.phases.remeasured + self.phases.set_aside + self.phases.unpredicted,
        )
    }

    /// [`Stability::slow_left`] as a share of the rounds.
    pub fn slow_left_share(&self) -> f64 {
        if self.phases.rounds == 0 {
            0.0
        } else {
            self.slow_left() as f64 / self.phases.rounds as f64
        }
    }

    /// What makes the run unstable, in words (empty when nothing does).
    pub fn unstable_because(&self) -> Vec<String> {
        let mut why = Vec::new();
        if self.slow_left_share() > SLOW_LEFT_SHARE {
            why.push(format!(
                "{} slow rounds ({:.0}%) stayed in the estimate",
                self.slow_left(),
                self.slow_left_share() * 100.0
            ));
        }
        if let Some(d) = self.drift.filter(|d| d.abs() > DRIFT) {
            why.push(format!(
                "the canary drifted {:+.0}% from the first to the last third of the run",
                d * 100.0
            ));
        }
        if let Some(st) = self.steal_share.filter(|s| *s > STEAL_SHARE) {
            why.push(format!(
                "the hypervisor stole {:.0}% of the CPUs' time",
                st * 100.0
            ));
        }
        why
    }

    /// True when other programs used a noticeable share of the CPUs.
    pub fn shared(&self) -> bool {
        self.others_share.is_some_and(|o| o > BUSY_SHARE)
    }

    /// The one line shown at the top of a run's output: the verdict, what
    /// the run saw (canary spread and drift, slow rounds, steal, other
    /// programs' share of the CPUs) and what it did about it.
    pub fn line(&self) -> String {
        let grade = self.grade();
        let mut s = format!(
            "machine {}: canary spread {:.1}% over {} checks",
            grade.word(),
            self.spread * 100.0,
            self.checks,
        );
        if let Some(d) = self.drift {
            s.push_str(&format!(
                ", {:+.1}% from the first to the last third",
                d * 100.0
            ));
        }
        s.push_str(&format!(
            "; {} of {} rounds ran in a slow phase: {} measured again, {} set aside, {} left in the estimate ({} of them corrected for the phase)",
            self.phases.slow,
            self.phases.rounds,
            self.phases.remeasured,
            self.phases.set_aside,
            self.slow_left(),
            self.phases.corrected,
        ));
        if self.phases.unpredicted > 0 {
            let areas = response::unpredicted_words(&self.phases.responses)
                .unwrap_or_else(|| "some areas".to_string());
            s.push_str(&format!(
                ", {} kept as measured: the canary's slow rounds did not measure slower in {areas}",
                self.phases.unpredicted
            ));
        }
        if let Some(p) = &self.phases.placement {
            s.push_str(&format!("; {}", p.words()));
        }
        if let Some(st) = self.steal_share {
            s.push_str(&format!("; steal {:.1}%", st * 100.0));
        }
        if let Some(o) = self.others_share.filter(|_| self.shared()) {
            s.push_str(&format!(
                "; other programs used {:.0}% of the CPUs (per-operation costs leave out batches they interrupted; throughput and wake-up figures share the CPUs)",
                o * 100.0
            ));
        }
        match grade {
            Grade::Steady => {}
            Grade::Shared => s.push_str("; the rounds absorbed it: intervals hold"),
            Grade::Unstable => {
                // A document graded by other thresholds may name no reason
                // by today's; its verdict stands.
                for why in self.unstable_because() {
                    s.push_str(&format!("; {why}"));
                }
                s.push_str(": results vary more than their intervals say: rerun on a quieter machine, or compare with several runs per side");
            }
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

    /// Round counts: rounds, slow, measured again, set aside, corrected.
    fn counts(rounds: usize, slow: usize, re: usize, aside: usize, corr: usize) -> PhaseCounts {
        PhaseCounts {
            rounds,
            slow,
            remeasured: re,
            set_aside: aside,
            corrected: corr,
            ..PhaseCounts::default()
        }
    }

    #[test]
    fn canary_check_is_positive_and_repeatable_in_magnitude() {
        let a = check();
        let b = check();
        assert!(a > 0.0 && b > 0.0);
        assert!(a / b < 20.0 && b / a < 20.0, "{a} {b}");
    }

    /// How a forked child that runs `f` under seccomp's strict mode ends
    /// (any system call but read, write, exit and sigreturn kills it):
    /// `Some(true)` when it exits cleanly, `Some(false)` when it is killed,
    /// `None` when this kernel refuses strict mode.
    fn ends_cleanly_without_system_calls(f: fn()) -> Option<bool> {
        // SAFETY: the child only calls prctl, `f` and the raw exit (no
        // allocation, no lock) before it ends; the parent waits for it.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                let strict = libc::SECCOMP_MODE_STRICT as libc::c_ulong;
                if libc::prctl(libc::PR_SET_SECCOMP, strict, 0, 0, 0) != 0 {
                    libc::syscall(libc::SYS_exit, 3);
                }
                f();
                // The raw exit: libc's _exit is exit_group, which strict
                // mode does not allow.
                libc::syscall(libc::SYS_exit, 0);
            }
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3 {
                return None;
            }
            Some(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0)
        }
    }

    #[test]
    fn the_canary_work_makes_no_system_call() {
        let Some(clean) = ends_cleanly_without_system_calls(|| {
            black_box(work());
        }) else {
            eprintln!("seccomp strict mode refused by this kernel: not checked");
            return;
        };
        assert!(clean, "the canary's work made a system call");
        // The filter does catch one: a single getppid kills the child.
        let caught = ends_cleanly_without_system_calls(|| {
            // SAFETY: getppid takes no arguments and cannot fail.
            black_box(unsafe { libc::syscall(libc::SYS_getppid) });
        });
        assert_eq!(caught, Some(false));
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

    /// A run of `n` rounds 0.1 s apart whose canary (relative to the fast
    /// phase) is `canary(i)`: the timeline, and checks in ns at 1000 ns
    /// for the fast phase.
    fn series(n: usize, canary: impl Fn(usize) -> f64) -> (Vec<(f64, f64)>, Vec<f64>) {
        let timeline: Vec<(f64, f64)> = (0..n).map(|i| (i as f64 * 0.1, canary(i))).collect();
        let checks = timeline.iter().map(|(_, c)| 1000.0 * c).collect();
        (timeline, checks)
    }

    fn quiet() -> Interference {
        Interference {
            steal_share: Some(0.0),
            others_share: Some(0.01),
            ..Interference::default()
        }
    }

    #[test]
    fn a_steady_canary_is_steady() {
        // a few per cent of noise, no trend
        let (t, c) = series(300, |i| 1.0 + (i % 5) as f64 * 0.005);
        let s = Stability::of(&c, &t, counts(300, 3, 3, 0, 0), &quiet()).unwrap();
        assert_eq!(s.verdict, Some(Grade::Steady), "{s:?}");
        assert!(s.stable);
        assert!(s.drift.unwrap().abs() < 0.01, "{s:?}");
        assert!(s.line().starts_with("machine steady: "), "{}", s.line());
        assert!(s.unstable_because().is_empty());
        assert_eq!(baseline(&c).map(|b| b < 1003.0), Some(true));
    }

    #[test]
    fn a_balanced_phased_canary_whose_slow_rounds_were_handled_is_shared() {
        // bimodal, 1.0x and 1.3x in stretches of 10 rounds all through the
        // run: a wide spread, but no drift, and the slow rounds were
        // measured again or set aside
        let (t, c) = series(300, |i| if (i / 10) % 3 == 0 { 1.3 } else { 1.0 });
        let s = Stability::of(&c, &t, counts(300, 100, 60, 30, 10), &quiet()).unwrap();
        assert!(s.spread > 0.2, "{s:?}");
        assert!(s.drift.unwrap().abs() < 0.05, "{s:?}");
        assert_eq!(s.verdict, Some(Grade::Shared), "{s:?}");
        assert!(s.stable);
        let line = s.line();
        assert!(
            line.starts_with("machine shared but holding: canary spread 3"),
            "{line}"
        );
        assert!(line.contains("100 of 300 rounds ran in a slow phase: 60 measured again, 30 set aside, 10 left in the estimate"), "{line}");
        assert!(line.contains("intervals hold"), "{line}");
        // a machine slow for most of the run, the slow rounds left in
        // (only corrected): most of the estimate is a correction
        let (t, c) = series(300, |i| if (i / 10) % 3 == 0 { 1.0 } else { 1.3 });
        let u = Stability::of(&c, &t, counts(300, 200, 20, 0, 180), &quiet()).unwrap();
        assert_eq!(u.verdict, Some(Grade::Unstable), "{u:?}");
        assert!(!u.stable);
        assert!(
            u.line()
                .contains("180 slow rounds (60%) stayed in the estimate"),
            "{}",
            u.line()
        );
    }

    #[test]
    fn a_drifting_canary_is_unstable() {
        // the machine slows down steadily by 50% over the run; no round is
        // far enough from its neighbours to leave many slow ones behind
        let (t, c) = series(300, |i| 1.0 + 0.5 * i as f64 / 300.0);
        let s = Stability::of(&c, &t, counts(300, 20, 20, 0, 0), &quiet()).unwrap();
        let d = s.drift.unwrap();
        assert!(d > 0.25 && d < 0.5, "{d}");
        assert_eq!(s.verdict, Some(Grade::Unstable), "{s:?}");
        assert!(s.line().starts_with("machine UNSTABLE: "), "{}", s.line());
        assert!(s.line().contains("the canary drifted +"), "{}", s.line());
        // and one that speeds up (a load that ends) is as much a change
        let (t, c) = series(300, |i| if i < 150 { 1.4 } else { 1.0 });
        let s = Stability::of(&c, &t, counts(300, 20, 20, 0, 0), &quiet()).unwrap();
        assert!(s.drift.unwrap() < -0.25, "{s:?}");
        assert_eq!(s.verdict, Some(Grade::Unstable));
    }

    #[test]
    fn other_programs_alone_share_the_machine_and_steal_breaks_it() {
        let (t, c) = series(100, |_| 1.0);
        let busy = Interference {
            others_share: Some(0.38),
            ..quiet()
        };
        let s = Stability::of(&c, &t, counts(100, 0, 0, 0, 0), &busy).unwrap();
        assert_eq!(s.verdict, Some(Grade::Shared), "{s:?}");
        assert!(
            s.line().contains("other programs used 38% of the CPUs"),
            "{}",
            s.line()
        );
        let stolen = Interference {
            steal_share: Some(0.08),
            ..quiet()
        };
        let s = Stability::of(&c, &t, counts(100, 0, 0, 0, 0), &stolen).unwrap();
        assert_eq!(s.verdict, Some(Grade::Unstable));
        assert!(s.line().contains("stole 8%"), "{}", s.line());
    }

    #[test]
    fn drift_needs_rounds_at_both_ends_of_the_run() {
        assert_eq!(drift(&[]), None);
        assert_eq!(drift(&[(1.0, 1.0), (1.0, 1.2)]), None);
        assert_eq!(drift(&[(0.0, 1.0), (0.5, 1.0), (3.0, 1.2)]), None);
        let d = drift(&[(0.0, 1.0), (0.1, 1.0), (1.5, 9.0), (2.9, 1.1), (3.0, 1.1)]).unwrap();
        assert!((d - 0.1).abs() < 1e-9, "{d}");
        // order does not matter, non-finite points are ignored
        let d2 = drift(&[
            (3.0, 1.1),
            (0.1, 1.0),
            (2.9, 1.1),
            (0.0, 1.0),
            (2.0, f64::NAN),
        ])
        .unwrap();
        assert!((d2 - 0.1).abs() < 1e-9, "{d2}");
    }

    #[test]
    fn a_stability_is_written_back_field_for_field_with_its_phase_counts_in_place() {
        let doc = concat!(
            r#"{"stable":true,"verdict":"steady","checks":58,"canary_ns":3853.0,"#,
            r#""user_canary":true,"spread":0.0625,"drift":-0.5,"rounds":78,"slow_rounds":9,"#,
            r#""remeasured":1,"set_aside":2,"corrected":3,"unpredicted":4,"responses":[{"#,
            r#""area":"ipc","slope":-0.125,"fitted":true,"low":-0.75,"high":0.5,"rounds":36,"#,
            r#""slow":5,"slow_canary":7.5,"predicts":false}],"steal_share":0.0,"nivcsw":3,"#,
            r#""others_share":0.0}"#
        );
        let s: Stability = serde_json::from_str(doc).unwrap();
        assert_eq!((s.phases.slow, s.phases.unpredicted), (9, 4));
        assert_eq!(serde_json::to_string(&s).unwrap(), doc);
    }

    #[test]
    fn an_older_document_without_a_verdict_is_graded_from_its_figures() {
        // written before verdicts: `stable` false from the old spread rule
        let old = r#"{"stable": false, "checks": 289, "canary_ns": 21720.8, "spread": 0.25,
            "rounds": 400, "slow_rounds": 52, "remeasured": 49, "set_aside": 0,
            "corrected": 3, "steal_share": 0.0, "others_share": 0.03}"#;
        let s: Stability = serde_json::from_str(old).unwrap();
        assert_eq!(s.verdict, None);
        assert_eq!(s.drift, None);
        assert!(!s.user_canary, "its canary made system calls");
        assert_eq!(s.grade(), Grade::Shared);
        assert!(
            s.line().starts_with("machine shared but holding"),
            "{}",
            s.line()
        );
        // and one with most slow rounds left in
        let old = old
            .replace("\"remeasured\": 49", "\"remeasured\": 0")
            .replace("\"slow_rounds\": 52", "\"slow_rounds\": 300");
        let s: Stability = serde_json::from_str(&old).unwrap();
        assert_eq!(s.grade(), Grade::Unstable);
        // a verdict recorded under other thresholds stands, said plainly
        let graded = old
            .replace(
                "\"stable\": false",
                "\"stable\": false, \"verdict\": \"unstable\"",
            )
            .replace("\"slow_rounds\": 300", "\"slow_rounds\": 0");
        let s: Stability = serde_json::from_str(&graded).unwrap();
        assert_eq!(s.grade(), Grade::Unstable);
        assert!(s.unstable_because().is_empty());
        let line = s.line();
        assert!(
            line.starts_with("machine UNSTABLE: ") && !line.contains("; :"),
            "{line}"
        );
        assert!(line.ends_with("several runs per side"), "{line}");
        // a new document says its verdict in lower case, next to `stable`
        let (t, c) = series(100, |_| 1.0);
        let new = Stability::of(&c, &t, counts(100, 0, 0, 0, 0), &quiet()).unwrap();
        let json = serde_json::to_value(&new).unwrap();
        assert_eq!(json["verdict"], "steady");
        assert_eq!(json["stable"], true);
        let back: Stability = serde_json::from_value(json).unwrap();
        assert_eq!(back, new);
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
