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
            Warning::FewSamples { got, wanted } => write!(
                f,
                "only {got} of {wanted} samples fit in the time budget; use --profile thorough for more"
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
                "running under a hypervisor ({what}): wake-ups across vCPUs and timer reads can cost more than on bare metal"
            ),
        }
    }
}

/// Run-wide warnings that follow from the machine's state at the start.
pub fn host_warnings(host: &crate::host::Host) -> Vec<Warning> {
    let mut w = Vec::new();
    if let Some(cs) = &host.clocksource
        && cs != "tsc"
        && cs != "arch_sys_counter"
    {
        w.push(Warning::Clocksource(cs.clone()));
    }
    if let Some(g) = &host.governor
        && g != "performance"
    {
        w.push(Warning::Governor(g.clone()));
    }
    if let Some([one, _, _]) = host.loadavg {
        let cpus = host.logical_cpus.max(1);
        if one > 0.5 * cpus as f64 {
            w.push(Warning::Load { load: one, cpus });
        }
    }
    w
}
