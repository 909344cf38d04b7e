//! CPU pinning and scheduling priority.
//!
//! Pinning removes migrations between CPUs from the samples, and lets
//! benchmarks with two ends (IPC, context switches) choose whether they
//! share a CPU, which on a VM can change a wake-up from ~1 µs to ~30 µs.

use anyhow::{Context, bail};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// The CPUs this process may run on, in increasing order.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Pins the calling thread (and children it forks later) to `cpu`.
pub fn pin_to(cpu: usize) -> anyhow::Result<()> {
    let allowed = allowed_cpus();
    if !allowed.contains(&cpu) {
        bail!(
            "CPU {cpu} is not available to this process (allowed: {})",
            cpu_list(&allowed)
        );
    }
    let mut set = CpuSet::new();
    set.set(cpu)
        .with_context(|| format!("CPU {cpu} is out of range"))?;
    sched_setaffinity(Pid::from_raw(0), &set).with_context(|| format!("pinning to CPU {cpu}"))
}

/// Restores the calling thread's affinity to `cpus`.
pub fn pin_to_set(cpus: &[usize]) -> anyhow::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)
            .with_context(|| format!("CPU {c} is out of range"))?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).context("setting CPU affinity")
}

/// Formats a CPU list compactly: `0-3,6`.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_list_compacts_ranges() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(cpu_list(&[1]), "1");
        assert_eq!(cpu_list(&[]), "");
    }

    #[test]
    fn allowed_cpus_is_not_empty() {
        assert!(!allowed_cpus().is_empty());
    }

    #[test]
    fn pinning_to_a_missing_cpu_is_an_error() {
        let err = pin_to(100_000).unwrap_err().to_string();
        assert!(err.contains("not available"), "{err}");
    }
}
