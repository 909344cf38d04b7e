//! Every warning the harness can attach, with its text and its hint in one
//! place, so that the same situation is always explained the same way.

use std::fmt;

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
    /// Per-op timings fall into two separate clusters.
    Bimodal {
        /// Median per-op time (ns).
        p50: f64,
        /// 99th percentile (ns).
        p99: f64,
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
    /// A cold-cache benchmark ran on a file system in memory, so nothing was dropped.
    ColdInMemory {
        /// The run's directory.
        dir: String,
        /// Its file system type.
        fs_type: String,
    },
    /// Each operation starts a program, whose start-up is part of the time.
    ProgramStartIncluded(String),
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::BelowOneCycle { ns, ghz } => write!(
                f,
                "{ns:.3} ns/op is below one CPU cycle at {ghz:.1} GHz: the work was probably optimised away"
            ),
            Warning::Noisy { ci_rel, threshold } => write!(
                f,
                "noisy: 95% CI of the median is ±{:.1}% (threshold ±{:.0}%); rerun with --profile thorough, pin with --cpu, or quieten the machine",
                ci_rel * 100.0,
                threshold * 100.0
            ),
            Warning::Bimodal { p50, p99 } => write!(
                f,
                "bimodal: per-op times form two clusters (p50 {p50:.0} ns, p99 {p99:.0} ns), typically same-CPU vs cross-CPU wake-ups; pin both ends"
            ),
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
            Warning::Virtualized(what) => write!(
                f,
                "virtual machine ({what}), as most cloud machines are: wake-ups across vCPUs and exits to the hypervisor cost more than on bare metal, so compare with machines of the same kind"
            ),
            Warning::ColdInMemory { dir, fs_type } => write!(
                f,
                "{dir} is on {fs_type}: there is no page cache to drop, so the cold pass reads memory; use --dir on a disk"
            ),
            Warning::ProgramStartIncluded(program) => write!(
                f,
                "each pass starts {program}: its start-up (about a millisecond) is part of the time, so the rate is a lower bound for large files"
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
}
