//! Every warning a result or a run can carry, the harness's and the
//! suites' alike, with its text, its hint and its code in one place, so
//! that the same situation is always explained the same way (as
//! hyperfine's one `warnings.rs` does). The suites' caveats are here by
//! that choice: the harness imports no suite, and a suite names its caveat
//! by a variant of [`Warning`].
//!
//! Results keep warnings as text (schema 1); [`Warning::code`] names each
//! kind for programs that group or filter them.

use std::fmt;

use crate::stats::{NOISE_THRESHOLD, Summary};

/// A caveat about a result or a run, shown in every output.
#[derive(Clone, Debug, PartialEq)]
pub enum Warning {
    /// The per-op time is below one CPU cycle.
    BelowOneCycle {
        /// The per-op time.
        ns: f64,
        /// The clock assumed for a cycle.
        ghz: f64,
    },
    /// The CI of the median is wider than the noise threshold.
    Noisy {
        /// CI half-width relative to the median.
        ci_rel: f64,
        /// The threshold.
        threshold: f64,
    },
    /// The CI of the median is wider than the noise threshold, mostly by
    /// the spread between the host's runs its history shows.
    NoisyBetweenRuns {
        /// CI half-width relative to the median.
        ci_rel: f64,
        /// The threshold.
        threshold: f64,
        /// The part of the half-width from the spread between runs.
        between: f64,
    },
    /// Per-op timings fall into two separate clusters.
    Bimodal {
        /// Median per-op time (ns).
        p50: f64,
        /// 99th percentile (ns).
        p99: f64,
    },
    /// The rounds fall into two levels (see `harness::levels`).
    TwoLevels {
        /// The lower level, with its unit.
        low: String,
        /// Rounds at the lower level.
        n_low: usize,
        /// The upper level, with its unit.
        high: String,
        /// Rounds at the upper level.
        n_high: usize,
        /// How far apart, as a ratio less 1.
        apart: f64,
        /// Whether the levels follow the CPU their rounds ran on.
        cpus: LevelCpus,
    },
    /// The run was interrupted while this benchmark was sampling.
    Interrupted {
        /// Samples gathered before the stop.
        samples: usize,
    },
    /// The time budget ran out before the wanted number of samples.
    FewSamples {
        /// Samples gathered.
        got: usize,
        /// Samples wanted.
        wanted: usize,
    },
    /// The clocksource is not tsc, so vDSO clock calls may fall back to a system call.
    Clocksource(String),
    /// The CPU frequency governor is not `performance`.
    Governor(String),
    /// Other processes were using the CPUs when the run started.
    Load {
        /// 1-minute load average.
        load: f64,
        /// CPUs online.
        cpus: usize,
    },
    /// The run is in a virtual machine.
    Virtualized(String),
    /// Every sample was made slower on purpose by this share
    /// (`OPCOST_SLOWDOWN_PCT`, the known change of a power test).
    Slowdown {
        /// The slowdown, percent.
        pct: f64,
    },
    /// Datagrams were sent that never arrived (the receiver fell behind).
    DatagramLoss {
        /// Lost share of the datagrams sent, in percent.
        percent: f64,
    },
    /// The kernel's flow hash put the senders on fewer sockets than the reuseport group has.
    ReuseportSpread {
        /// Sockets that received datagrams.
        used: u32,
        /// Sockets in the group.
        sockets: u32,
    },
    /// A cold-cache benchmark ran on a file system in memory, so nothing was dropped.
    ColdInMemory {
        /// The run's directory.
        dir: String,
        /// Its file system type.
        fs_type: String,
    },
    /// Each operation starts a program, whose start-up is part of the time.
    ProgramStartIncluded(String),
    /// The kernel's vDSO lacks a function, so its libc call makes a system call.
    VdsoMissing {
        /// The vDSO function (`clock_gettime`, `getcpu`...).
        func: String,
    },
    /// No inline system-call instruction on this architecture.
    RawViaLibc,
    /// A part of the timed runs was preempted on every retry.
    Preempted {
        /// Runs preempted on every try.
        kept: u64,
        /// Runs timed.
        done: u64,
        /// Tries per run.
        tries: u32,
    },
    /// A share of the timed wall time went to waiting for a CPU.
    WaitedForCpu {
        /// The share, 0..1.
        share: f64,
    },
    /// `std::process::Command` forks and execs here instead of posix_spawn.
    CommandForks {
        /// Why the standard library took that path.
        why: String,
    },
    /// The system's `true` is static, so no loader cost is measured.
    TrueIsStatic,
    /// Huge-page faults fell back to base pages.
    HugeFaultFallback {
        /// Most faults seen for one huge page.
        faults: f64,
    },
    /// Hardware counters cannot be read.
    NoCounters {
        /// Why.
        why: String,
    },
    /// The compiler may turn the measured branch into a conditional move.
    BranchMayBeCmov,
    /// Each operation of a chain also goes through memory (black_box).
    ChainThroughMemory,
    /// Spinning ends share one CPU, so spins become yields and switches.
    SpinSharedCpu,
    /// The directory of the shm-file benchmark is not a tmpfs.
    NotTmpfs {
        /// The directory.
        dir: String,
    },
    /// Only part of a working set is backed by huge pages.
    FewHugePages {
        /// The share on huge pages, 0..1.
        share: f64,
    },
    /// glibc's non-temporal threshold could not be read, so the glibc
    /// bandwidth methods use fixed block sizes for "above" and "below" it.
    GlibcThresholdUnknown {
        /// The block standing for "above" (a size label).
        above: String,
        /// The block standing for "below" (a size label).
        below: String,
    },
    /// The largest point of the latency curve at this profile stays in the caches.
    CurveTopInCache {
        /// The profile.
        profile: &'static str,
        /// The working set (a size label).
        size: String,
        /// 4x the last-level cache (a size label), if that size is known.
        llc4: Option<String>,
        /// What goes further: a longer profile, or nothing (memory caps it).
        further: &'static str,
    },
    /// Bandwidth arrays smaller than 4x the last-level cache (or that cache unknown).
    ArraysInCache {
        /// The array size (a size label).
        size: String,
        /// 4x the last-level cache (a size label), if that size is known.
        llc4: Option<String>,
        /// What capped the arrays (the profile, the memory available).
        why: String,
    },
    /// All-CPU bandwidth threads finished far apart.
    UnevenThreads {
        /// Typical slowest/fastest time ratio.
        spread: f64,
    },
    /// A storage benchmark's directory is on a file system in memory.
    FsInMemory {
        /// The run's directory.
        dir: String,
        /// The file system type.
        fs: String,
    },
    /// zfs caches data in its ARC, which posix_fadvise cannot drop.
    ZfsArc,
    /// ext4 without a journal avoids recently freed inodes.
    NoJournal {
        /// The file system type.
        fs: String,
    },
    /// O_DIRECT was refused, so random reads are buffered after a cache drop.
    DirectRefused {
        /// The file system type.
        fs: String,
    },
    /// The log file cannot be preallocated.
    NoPrealloc {
        /// The file system type.
        fs: String,
    },
    /// File data is dropped from the cache before each pass, metadata is not.
    MetadataCached,
    /// The CPU lacks the instructions a crypto crate would use (named), so
    /// its portable implementation was measured.
    NoCryptoInstructions(&'static str),
    /// Some runs of a command exited non-zero or died, and `-i` let them count.
    FailedRuns {
        /// Runs that failed.
        failed: usize,
        /// Runs in all (command and baseline).
        runs: usize,
    },
    /// The CI of a command's net time (minus its baseline) reaches zero or below.
    NetUnresolved {
        /// Lower bound of the CI, ns.
        ci_low: f64,
        /// Upper bound of the CI, ns.
        ci_high: f64,
    },
}

/// How the text of a [`Warning::Noisy`] begins, as stored in a result.
pub const NOISY_PREFIX: &str = "noisy:";

/// True when a stored warning text is the noise warning (which reports
/// show as a mark rather than a note).
pub fn is_noise(text: &str) -> bool {
    text.starts_with(NOISY_PREFIX)
}

/// Whether a result's two levels follow the CPU their rounds ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelCpus {
    /// Every round of the lower level ran on CPU `low`, every round of the
    /// upper on CPU `high` (none migrated): pinning reads one level.
    Tied {
        /// The lower level's CPU.
        low: u32,
        /// The upper level's CPU.
        high: u32,
    },
    /// Every round stayed on one CPU, and the levels do not follow them.
    Apart,
    /// A round migrated or did not record its CPU.
    Unknown,
}

impl Warning {
    /// The noise warning a summary earns ([`Summary::is_noisy`]), if any.
    pub fn noise_of(s: &Summary) -> Option<Warning> {
        s.is_noisy().then(|| Warning::Noisy {
            ci_rel: s.ci_rel(),
            threshold: NOISE_THRESHOLD,
        })
    }

    /// A stable name of the kind of warning, for programs: `noisy`, `vdso_missing`...
    pub fn code(&self) -> &'static str {
        match self {
            Warning::BelowOneCycle { .. } => "below_one_cycle",
            Warning::Noisy { .. } | Warning::NoisyBetweenRuns { .. } => "noisy",
            Warning::Bimodal { .. } => "bimodal",
            Warning::TwoLevels { .. } => "two_levels",
            Warning::Interrupted { .. } => "interrupted",
            Warning::FewSamples { .. } => "few_samples",
            Warning::Clocksource(_) => "clocksource",
            Warning::Governor(_) => "governor",
            Warning::Load { .. } => "load",
            Warning::Virtualized(_) => "virtualized",
            Warning::Slowdown { .. } => "slowdown",
            Warning::VdsoMissing { .. } => "vdso_missing",
            Warning::RawViaLibc => "raw_via_libc",
            Warning::Preempted { .. } => "preempted",
            Warning::WaitedForCpu { .. } => "waited_for_cpu",
            Warning::CommandForks { .. } => "command_forks",
            Warning::TrueIsStatic => "true_is_static",
            Warning::HugeFaultFallback { .. } => "huge_fault_fallback",
            Warning::NoCounters { .. } => "no_counters",
            Warning::BranchMayBeCmov => "branch_may_be_cmov",
            Warning::ChainThroughMemory => "chain_through_memory",
            Warning::SpinSharedCpu => "spin_shared_cpu",
            Warning::NotTmpfs { .. } => "not_tmpfs",
            Warning::FewHugePages { .. } => "few_huge_pages",
            Warning::GlibcThresholdUnknown { .. } => "glibc_threshold_unknown",
            Warning::CurveTopInCache { .. } => "curve_top_in_cache",
            Warning::ArraysInCache { .. } => "arrays_in_cache",
            Warning::UnevenThreads { .. } => "uneven_threads",
            Warning::FsInMemory { .. } => "fs_in_memory",
            Warning::ZfsArc => "zfs_arc",
            Warning::NoJournal { .. } => "no_journal",
            Warning::DirectRefused { .. } => "direct_refused",
            Warning::NoPrealloc { .. } => "no_prealloc",
            Warning::MetadataCached => "metadata_cached",
            Warning::NoCryptoInstructions(_) => "no_crypto_instructions",
            Warning::DatagramLoss { .. } => "datagram_loss",
            Warning::ReuseportSpread { .. } => "reuseport_spread",
            Warning::FailedRuns { .. } => "failed_runs",
            Warning::NetUnresolved { .. } => "net_unresolved",
            Warning::ColdInMemory { .. } => "cold_in_memory",
            Warning::ProgramStartIncluded(_) => "program_start_included",
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NoCryptoInstructions(which) => write!(
                f,
                "no {which} instructions on this CPU: the crate's portable (constant-time) implementation was measured, not the hardware path"
            ),
            Warning::BelowOneCycle { ns, ghz } => write!(
                f,
                "{ns:.3} ns/op is below one CPU cycle at {ghz:.1} GHz: the work was probably optimised away"
            ),
            Warning::Noisy { ci_rel, threshold } => write!(
                f,
                "{NOISY_PREFIX} 95% CI of the median is ±{:.1}% (threshold ±{:.0}%); rerun with --profile thorough, pin with --cpu, or quieten the machine",
                ci_rel * 100.0,
                threshold * 100.0
            ),
            Warning::NoisyBetweenRuns {
                ci_rel,
                threshold,
                between,
            } => write!(
                f,
                "{NOISY_PREFIX} 95% CI of the median is ±{:.1}% (threshold ±{:.0}%), most of it the spread between this host's runs (±{:.1}%), which more rounds in one run do not narrow; pin with --cpu or quieten the machine",
                ci_rel * 100.0,
                threshold * 100.0,
                between * 100.0
            ),
            Warning::Bimodal { p50, p99 } => write!(
                f,
                "bimodal: per-op times form two clusters (p50 {p50:.0} ns, p99 {p99:.0} ns), typically same-CPU vs cross-CPU wake-ups; pin both ends"
            ),
            Warning::TwoLevels {
                low,
                n_low,
                high,
                n_high,
                apart,
                cpus,
            } => {
                let n = n_low + n_high;
                let (on_low, on_high, tail) = match cpus {
                    LevelCpus::Tied { low, high } => (
                        format!(" on CPU {low}"),
                        format!(" on CPU {high}"),
                        "a state tied to where the rounds ran, which the interval spans; pin with --cpu to read one",
                    ),
                    LevelCpus::Apart => (
                        String::new(),
                        String::new(),
                        "a state the machine held for whole rounds (each in a process of its own), not the CPU they ran on, which the interval spans",
                    ),
                    LevelCpus::Unknown => (
                        String::new(),
                        String::new(),
                        "a state the machine held for whole rounds, which the interval spans",
                    ),
                };
                write!(
                    f,
                    "two levels: its rounds read {low} ({n_low} of {n}){on_low} or {high} ({n_high} of {n}){on_high}, {:.0}% apart: {tail}",
                    apart * 100.0
                )
            }
            Warning::Interrupted { samples } => {
                write!(f, "interrupted after {samples} samples")
            }
            Warning::FewSamples { got: _, wanted } => write!(
                f,
                "fewer than the {wanted} samples wanted fit in the time budget (the count is in the JSON); use --profile thorough for more"
            ),
            Warning::Clocksource(cs) => write!(
                f,
                "clocksource is {cs}, not tsc: vDSO clock calls may fall back to a real system call"
            ),
            Warning::Governor(g) => write!(
                f,
                "CPU frequency governor is {g}, not performance: clock speed may change during the run"
            ),
            Warning::Load { load, cpus } => write!(
                f,
                "load average {load:.2} on {cpus} CPUs when the run started: other work may disturb the numbers"
            ),
            Warning::DatagramLoss { percent } => write!(
                f,
                "{percent:.1}% of the datagrams sent never arrived: the sender outran the receiver; the figure is the rate received (details: sent and lost)"
            ),
            Warning::ReuseportSpread { used, sockets } => write!(
                f,
                "only {used} of {sockets} SO_REUSEPORT sockets received: the kernel spreads flows by a hash of their addresses, and these collided"
            ),
            Warning::Virtualized(what) => write!(
                f,
                "virtual machine ({what}), as most cloud machines are: wake-ups across vCPUs and exits to the hypervisor cost more than on bare metal, so compare with machines of the same kind"
            ),
            Warning::Slowdown { pct } => write!(
                f,
                "every sample was made {pct}% slower on purpose (OPCOST_SLOWDOWN_PCT: a busy wait of that share of each timed batch, added to it), for testing what compare and ab can see; these are not the machine's costs"
            ),
            Warning::ColdInMemory { dir, fs_type } => write!(
                f,
                "{dir} is on {fs_type}: there is no page cache to drop, so the cold pass reads memory; use --dir on a disk"
            ),
            Warning::ProgramStartIncluded(program) => write!(
                f,
                "each pass starts {program}: its start-up (about a millisecond) is part of the time, so the rate is a lower bound for large files"
            ),
            Warning::VdsoMissing { func } => write!(
                f,
                "this kernel's vDSO has no {func}: the libc call makes a system call"
            ),
            Warning::RawViaLibc => write!(
                f,
                "no inline system-call instruction on this architecture: measured through libc::syscall, which adds a function call and errno handling"
            ),
            Warning::Preempted { kept, done, tries } => write!(
                f,
                "{kept} of {done} timed runs were preempted on every one of {tries} tries: another task kept taking this CPU; quieten the machine or pin with --cpu"
            ),
            Warning::WaitedForCpu { share } => write!(
                f,
                "{:.0}% of the timed wall time was spent waiting for a CPU (other processes were running): the figure includes that scheduling delay; rerun on a quieter machine",
                share * 100.0
            ),
            Warning::CommandForks { why } => write!(
                f,
                "std::process::Command falls back to fork+exec here ({why}), so it grows with the parent's memory like fork"
            ),
            Warning::TrueIsStatic => write!(
                f,
                "`true` is statically linked here: no loader cost is included"
            ),
            Warning::HugeFaultFallback { faults } => write!(
                f,
                "some huge-page faults fell back to base pages (up to {faults:.0} faults per huge page): memory may be fragmented"
            ),
            Warning::NoCounters { why } => write!(
                f,
                "hardware counters unavailable: {why}; cycle figures of this run are estimated from this clock"
            ),
            Warning::BranchMayBeCmov => write!(
                f,
                "on this architecture the compiler may turn the branch into a conditional move"
            ),
            Warning::ChainThroughMemory => write!(
                f,
                "on this architecture every operation also passes through memory (black_box)"
            ),
            Warning::SpinSharedCpu => write!(
                f,
                "both ends spin on one CPU: each poll yields the CPU to the other end, so this measures yields and context switches, not spinning"
            ),
            Warning::NotTmpfs { dir } => write!(
                f,
                "{dir} is not a tmpfs here, so this measures a file system's page cache"
            ),
            Warning::FewHugePages { share } => write!(
                f,
                "only {:.0}% of the working set is on huge pages (memory fragmented?)",
                share * 100.0
            ),
            Warning::GlibcThresholdUnknown { above, below } => write!(
                f,
                "glibc's non-temporal threshold is not known here (no `ld.so --list-tunables`): blocks of {above} stand for \"above\" and {below} for \"below\""
            ),
            Warning::CurveTopInCache {
                profile,
                size,
                llc4: None,
                ..
            } => write!(
                f,
                "largest working set at the {profile} profile ({size}); the last-level cache size is unknown, so whether it reaches memory is not known"
            ),
            Warning::CurveTopInCache {
                profile,
                size,
                llc4: Some(llc4),
                further,
            } => write!(
                f,
                "largest working set at the {profile} profile: {size} is below 4x the last-level cache ({llc4}); {further}"
            ),
            Warning::ArraysInCache {
                size, llc4: None, ..
            } => write!(
                f,
                "last-level cache size unknown: arrays of {size} may not exceed it"
            ),
            Warning::ArraysInCache {
                size,
                llc4: Some(llc4),
                why,
            } => write!(
                f,
                "arrays of {size} are below 4x the last-level cache ({llc4}), capped by {why}: part of the traffic may be served by the cache"
            ),
            Warning::UnevenThreads { spread } => write!(
                f,
                "threads finished far apart (typically the slowest took {spread:.1}x the fastest): other work shares these CPUs, and all-CPU bandwidth waits for the last thread"
            ),
            Warning::FsInMemory { dir, fs } => write!(
                f,
                "{dir} is on {fs}: no disk is involved, these are memory figures"
            ),
            Warning::ZfsArc => write!(
                f,
                "zfs keeps data in its own cache (the ARC), which posix_fadvise cannot drop: cold and O_DIRECT reads may come from memory"
            ),
            Warning::NoJournal { fs } => write!(
                f,
                "{fs} without a journal: a new file skips the inodes freed in the last minute, so creating files soon after deleting many (as a previous run or benchmark may have) costs extra CPU"
            ),
            Warning::DirectRefused { fs } => write!(
                f,
                "O_DIRECT refused by {fs}: buffered reads of a file dropped from the page cache before each batch (a block read twice in a batch comes from memory)"
            ),
            Warning::NoPrealloc { fs } => write!(
                f,
                "{fs} cannot preallocate (fallocate): the log grows by appends, which also update its size"
            ),
            Warning::MetadataCached => write!(
                f,
                "file data dropped from the page cache before each pass; directory entries and inodes stay cached"
            ),
            Warning::FailedRuns { failed, runs } => write!(
                f,
                "{failed} of {runs} runs failed (non-zero exit or signal) and were counted because of -i"
            ),
            Warning::NetUnresolved { ci_low, ci_high } if *ci_high < 0.0 => write!(
                f,
                "the 95% CI of the net time ({:.3} … {:.3} ms) lies below zero: the baseline takes longer than the command, so it is not this command's start-up; choose another baseline",
                ci_low / 1e6,
                ci_high / 1e6
            ),
            Warning::NetUnresolved { ci_low, ci_high } => write!(
                f,
                "the 95% CI of the net time ({:.3} … {:.3} ms) reaches zero: the command costs no measurable time beyond its baseline; give it more work or more --runs",
                ci_low / 1e6,
                ci_high / 1e6
            ),
        }
    }
}

/// Clocksources the vDSO reads directly on every kernel that has them: the
/// x86 TSC, the arm64 architected timer, the POWER timebase, the RISC-V
/// timer and the s390 TOD clock. Paravirtual clocks (kvm-clock, Hyper-V,
/// Xen) are read by the vDSO only when the hypervisor vouches for a stable
/// TSC; hpet, acpi_pm and jiffies never are.
const VDSO_CLOCKSOURCES: [&str; 5] = [
    "tsc",
    "arch_sys_counter",
    "timebase",
    "riscv_clocksource",
    "tod",
];

/// The clocksource warning, when the vDSO may not read the current
/// clocksource directly (for benchmarks of vDSO clock calls).
pub fn clocksource_warning(host: &crate::host::Host) -> Option<Warning> {
    host.clocksource
        .as_ref()
        .filter(|cs| !VDSO_CLOCKSOURCES.contains(&cs.as_str()))
        .map(|cs| Warning::Clocksource(cs.clone()))
}

/// A 1-minute load average above this share of the online CPUs means other
/// work was running when the run started.
const LOAD_PER_CPU: f64 = 0.5;

/// True for the text of a [`Warning::Load`] (a document keeps its warnings
/// as text).
pub fn is_load(text: &str) -> bool {
    text.starts_with("load average ")
}

/// Run-wide warnings that follow from the machine's state at the start:
/// a clocksource the vDSO may not read, a governor other than
/// `performance`, a busy machine, a hypervisor underneath.
pub fn host_warnings(host: &crate::host::Host) -> Vec<Warning> {
    let mut w: Vec<Warning> = clocksource_warning(host).into_iter().collect();
    if let Some(g) = &host.governor
        && g != "performance"
    {
        w.push(Warning::Governor(g.clone()));
    }
    let cpus = host.logical_cpus.max(1);
    if let Some([one, _, _]) = host.loadavg
        && one > LOAD_PER_CPU * cpus as f64
    {
        w.push(Warning::Load { load: one, cpus });
    }
    if let Some(h) = host.hypervisor() {
        w.push(Warning::Virtualized(h));
    }
    let pct = super::timer::slowdown() * 100.0;
    if pct > 0.0 {
        w.push(Warning::Slowdown { pct });
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Host, Virtualization};

    #[test]
    fn a_quiet_bare_metal_host_has_no_warnings() {
        let h = Host {
            clocksource: Some("tsc".into()),
            governor: Some("performance".into()),
            loadavg: Some([0.1, 0.1, 0.1]),
            logical_cpus: 8,
            virt: Virtualization {
                hypervisor_flag: Some(false),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(host_warnings(&h), []);
        assert_eq!(
            host_warnings(&Host::default()),
            [],
            "unknown facts warn of nothing"
        );
    }

    #[test]
    fn each_host_condition_has_its_warning() {
        let h = Host {
            clocksource: Some("hpet".into()),
            governor: Some("powersave".into()),
            loadavg: Some([3.0, 1.0, 0.5]),
            logical_cpus: 2,
            virt: Virtualization {
                hypervisor: Some("KVM".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            host_warnings(&h),
            [
                Warning::Clocksource("hpet".into()),
                Warning::Governor("powersave".into()),
                Warning::Load { load: 3.0, cpus: 2 },
                Warning::Virtualized("KVM".into()),
            ]
        );
    }

    #[test]
    fn architected_timers_count_as_vdso_clocks() {
        let on = |cs: &str| Host {
            clocksource: Some(cs.into()),
            ..Default::default()
        };
        for cs in ["tsc", "arch_sys_counter"] {
            assert_eq!(host_warnings(&on(cs)), []);
        }
        let h = on("kvm-clock");
        assert_eq!(
            host_warnings(&h),
            [Warning::Clocksource("kvm-clock".into())]
        );
    }

    #[test]
    fn load_is_judged_per_cpu() {
        let mut h = Host {
            loadavg: Some([3.0, 0.0, 0.0]),
            logical_cpus: 64,
            ..Default::default()
        };
        assert_eq!(host_warnings(&h), []);
        h.logical_cpus = 4;
        assert_eq!(host_warnings(&h).len(), 1);
    }

    #[test]
    fn suite_caveats_keep_their_wording_and_have_distinct_codes() {
        let all = [
            Warning::VdsoMissing {
                func: "getcpu".into(),
            },
            Warning::RawViaLibc,
            Warning::Preempted {
                kept: 3,
                done: 10,
                tries: 4,
            },
            Warning::WaitedForCpu { share: 0.25 },
            Warning::CommandForks { why: "x".into() },
            Warning::TrueIsStatic,
            Warning::HugeFaultFallback { faults: 512.0 },
            Warning::NoCounters { why: "x".into() },
            Warning::BranchMayBeCmov,
            Warning::ChainThroughMemory,
            Warning::SpinSharedCpu,
            Warning::NotTmpfs {
                dir: "/dev/shm".into(),
            },
            Warning::FewHugePages { share: 0.5 },
            Warning::CurveTopInCache {
                profile: "quick",
                size: "64MiB".into(),
                llc4: Some("128MiB".into()),
                further: "--profile default goes further",
            },
            Warning::ArraysInCache {
                size: "64MiB".into(),
                llc4: None,
                why: String::new(),
            },
            Warning::UnevenThreads { spread: 2.0 },
            Warning::FsInMemory {
                dir: "/dev/shm".into(),
                fs: "tmpfs".into(),
            },
            Warning::ZfsArc,
            Warning::NoJournal { fs: "ext4".into() },
            Warning::DirectRefused { fs: "tmpfs".into() },
            Warning::NoPrealloc { fs: "tmpfs".into() },
            Warning::MetadataCached,
            Warning::DatagramLoss { percent: 12.5 },
            Warning::ReuseportSpread {
                used: 1,
                sockets: 2,
            },
            Warning::FailedRuns { failed: 1, runs: 2 },
            Warning::NetUnresolved {
                ci_low: -1.0,
                ci_high: 1.0,
            },
            Warning::ColdInMemory {
                dir: "/tmp".into(),
                fs_type: "tmpfs".into(),
            },
            Warning::ProgramStartIncluded("wc".into()),
            Warning::GlibcThresholdUnknown {
                above: "32MiB".into(),
                below: "1MiB".into(),
            },
        ];
        let mut codes = std::collections::HashSet::new();
        for w in &all {
            assert!(codes.insert(w.code()), "duplicate code {}", w.code());
            assert!(!w.to_string().is_empty());
        }
        assert_eq!(
            all[0].to_string(),
            "this kernel's vDSO has no getcpu: the libc call makes a system call"
        );
        assert_eq!(
            all[13].to_string(),
            "largest working set at the quick profile: 64MiB is below 4x the last-level cache (128MiB); --profile default goes further"
        );
        assert!(
            all[14]
                .to_string()
                .starts_with("last-level cache size unknown")
        );
    }
}
