//! The machine's description: everything that explains a number.
//!
//! Why it exists: a system call costs 60 ns on one kernel and 600 ns on the
//! same CPU with other mitigations; a vDSO clock read becomes a system call
//! when the clocksource is not tsc; a VM makes cross-CPU wake-ups 30x
//! dearer. A result without these facts cannot be compared, so every run
//! records them and `opcost env` shows them.
//!
//! Detection never fails: whatever cannot be read (no cpufreq in a VM, no
//! DMI in a container, a kernel without a vulnerabilities directory) is
//! `None` or empty, which is normal. The reading of files is separate from
//! their parsing ([`parse`]) and takes a root directory ([`Host::detect_at`]),
//! so both are tested on fixed inputs. A `Host` is also read back from the
//! documents of other machines and older versions, so every field has a
//! default and a document missing any of them still loads.

#[cfg(test)]
mod arm_tests;
pub mod classes;
pub mod device;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod location;
mod parse;
mod picture;
mod probe;
mod reader;
mod render;
pub mod settings;
mod sysfs;
pub mod topology;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use classes::{ClassPair, PlaceClass};
pub use render::Fact;
pub use settings::{SettingChange, Settings};
pub use topology::{CpuPlace, NumaNode, Topology};

/// The machine a run was made on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Host {
    /// Host name.
    pub hostname: String,
    /// The processor: identity, topology, SMT.
    pub cpu: Cpu,
    /// Logical CPUs online on the machine (not only those this process may use).
    pub logical_cpus: usize,
    /// The machine's shape (packages, nodes, L3 groups, cores, threads) for
    /// the CPUs this process may use, and its placement classes; empty in
    /// documents older than it.
    pub topology: Topology,
    /// CPU caches from sysfs, cpu0's first, one entry per level, type and size.
    pub caches: Vec<CacheInfo>,
    /// Clock frequencies and the cpufreq driver.
    pub freq: Frequency,
    /// cpufreq governor of cpu0 (`performance`, `powersave`, `schedutil`...).
    pub governor: Option<String>,
    /// Kernel release, version and command line.
    pub kernel: Kernel,
    /// Every file of /sys/devices/system/cpu/vulnerabilities: name → state.
    pub vulnerabilities: BTreeMap<String, String>,
    /// Current clocksource (`tsc`, `kvm-clock`, `hpet`...).
    pub clocksource: Option<String>,
    /// Clocksources the kernel could switch to.
    pub clocksources_available: Vec<String>,
    /// Transparent huge pages settings.
    pub thp: Thp,
    /// Total memory in bytes.
    pub mem_total_bytes: Option<u64>,
    /// Available memory in bytes when the host was detected.
    pub mem_available_bytes: Option<u64>,
    /// Swap and huge page pool.
    pub memory: Memory,
    /// Hypervisor, DMI and container facts.
    pub virt: Virtualization,
    /// Load averages (1, 5, 15 minutes) when the host was detected.
    pub loadavg: Option<[f64; 3]>,
    /// The OS, C library and the opcost build.
    pub software: Software,
    /// The run's own settings that move a cost: the recorded environment
    /// variables, cgroup limits, allowed CPUs, scheduling, per-CPU
    /// governor and EPP (unknown in documents older than them).
    pub settings: Settings,
}

/// The processor's identity and topology.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    /// Architecture this opcost was built for (`x86_64`, `aarch64`...).
    pub arch: String,
    /// Model name (`AMD EPYC 9654`, `ARM Neoverse-N1`).
    pub model: Option<String>,
    /// Vendor (`GenuineIntel`, `AuthenticAMD`, `ARM`...).
    pub vendor: Option<String>,
    /// The board of an arm machine without DMI (`Raspberry Pi 5 Model B
    /// Rev 1.0`): /proc/cpuinfo's `Model` line, else the device tree's model.
    pub board: Option<String>,
    /// Family (x86 `cpu family`, arm architecture).
    pub family: Option<String>,
    /// Model number (x86 `model`, arm part number).
    pub model_number: Option<String>,
    /// Stepping (x86) or `rVpR` revision (arm).
    pub stepping: Option<String>,
    /// Microcode revision.
    pub microcode: Option<String>,
    /// Physical cores (distinct package/core ids).
    pub physical_cores: Option<usize>,
    /// Sockets (distinct packages).
    pub sockets: Option<usize>,
    /// Hardware threads per core (logical CPUs / physical cores).
    pub threads_per_core: Option<usize>,
    /// SMT control (`on`, `off`, `forceoff`, `notsupported`, `notimplemented`).
    pub smt_control: Option<String>,
    /// Whether SMT siblings are active.
    pub smt_active: Option<bool>,
    /// NUMA nodes online.
    pub numa_nodes: Option<usize>,
    /// CPU flags, space-separated as /proc/cpuinfo lists them (x86 `flags`, arm `Features`).
    pub flags: String,
}

/// One CPU cache as sysfs describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheInfo {
    /// 1, 2, 3...
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size in bytes of one instance.
    pub size_bytes: u64,
    /// The CPUs sharing cpu0's instance (or the first one seen), as sysfs lists them (`0-1`).
    pub shared_cpus: Option<String>,
    /// Distinct instances of this cache on the machine.
    pub instances: Option<usize>,
    /// Line size in bytes.
    pub line_bytes: Option<u64>,
    /// Ways of associativity.
    pub ways: Option<u64>,
    /// The CPUs that have a cache of this level, type and size, when not
    /// every CPU does (big.LITTLE: each kind of core has its own sizes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
}

impl CacheInfo {
    /// Sets of the cache: size / (ways x line), when sysfs gave all three.
    pub fn sets(&self) -> Option<u64> {
        let per_set = self.ways?.checked_mul(self.line_bytes?)?;
        (per_set > 0 && self.size_bytes.is_multiple_of(per_set)).then(|| self.size_bytes / per_set)
    }

    /// Bytes of one way (sets x line): addresses this far apart share a set.
    pub fn way_bytes(&self) -> Option<u64> {
        Some(self.sets()? * self.line_bytes?)
    }
}

/// Clock frequencies.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Frequency {
    /// cpu0's current frequency from cpufreq, MHz.
    pub current_mhz: Option<f64>,
    /// Lowest frequency cpufreq allows, MHz.
    pub min_mhz: Option<f64>,
    /// Highest frequency (with boost), MHz.
    pub max_mhz: Option<f64>,
    /// `cpu MHz` of /proc/cpuinfo (the only figure in most VMs).
    pub cpuinfo_mhz: Option<f64>,
    /// cpufreq driver (`intel_pstate`, `acpi-cpufreq`, `amd-pstate`...).
    pub driver: Option<String>,
    /// Whether turbo/boost is enabled.
    pub boost: Option<bool>,
}

/// The kernel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Kernel {
    /// Kernel name (`Linux`).
    pub name: Option<String>,
    /// Release (`uname -r`).
    pub release: Option<String>,
    /// Version string (`uname -v`: build number, SMP, preemption, date).
    pub version: Option<String>,
    /// Boot command line (mitigations=, isolcpus=...).
    pub cmdline: Option<String>,
}

/// Transparent huge pages: the selected value of each setting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Thp {
    /// `always`, `madvise` or `never`.
    pub enabled: Option<String>,
    /// Defragmentation policy.
    pub defrag: Option<String>,
    /// Policy for shared memory (tmpfs, shm).
    pub shmem_enabled: Option<String>,
}

/// Memory facts beyond total and available.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Memory {
    /// Swap space in bytes.
    pub swap_total_bytes: Option<u64>,
    /// Default huge page size in bytes.
    pub hugepage_size_bytes: Option<u64>,
    /// Huge pages reserved in the pool.
    pub hugepages_total: Option<u64>,
}

/// Whether and how the machine is virtualised.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Virtualization {
    /// The x86 `hypervisor` CPU flag (None where the architecture has none).
    pub hypervisor_flag: Option<bool>,
    /// Hypervisor vendor from cpuid or /sys/hypervisor (`KVM`, `Xen`...).
    pub hypervisor: Option<String>,
    /// DMI system vendor.
    pub dmi_vendor: Option<String>,
    /// DMI product name.
    pub dmi_product: Option<String>,
    /// Container runtime, when one is visible (`docker`, `podman`, `lxc`...).
    pub container: Option<String>,
}

/// The software side: OS, C library, the opcost build.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Software {
    /// Operating system (`PRETTY_NAME` of /etc/os-release).
    pub os: Option<String>,
    /// C library and version (`glibc 2.41`, `musl`).
    pub libc: Option<String>,
    /// opcost version.
    pub opcost_version: String,
    /// Git commit opcost was built from (None outside a git checkout).
    pub git_commit: Option<String>,
    /// The rustc that built opcost.
    pub rustc_version: Option<String>,
    /// `release` or `debug` build.
    pub build_profile: String,
}

/// Memory available right now to this process, in bytes: MemAvailable of
/// /proc/meminfo plus what its own pool of mappings holds
/// ([`crate::os::mempool`]), which it gives up before mapping more.
pub fn mem_available_now() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let avail = parse::meminfo(&text).get("MemAvailable").copied()?;
    Some(avail + crate::os::mempool::held_bytes())
}

impl Host {
    /// The facts of a host description that change what operations cost, as
    /// (name, value) pairs; unknown is `?`.
    pub fn cost_facts(&self) -> Vec<(String, String)> {
        let h = self;
        let s = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
        let b =
            |v: Option<bool>| v.map_or("?".to_string(), |x| if x { "on" } else { "off" }.into());
        let cmdline_mitigations = h
            .kernel
            .cmdline
            .as_deref()
            .and_then(|c| {
                c.split_whitespace()
                    .find_map(|w| w.strip_prefix("mitigations="))
            })
            .unwrap_or("default")
            .to_string();
        let mut out = vec![
            ("clocksource".to_string(), s(&h.clocksource)),
            ("mitigations=".to_string(), cmdline_mitigations),
            ("THP".to_string(), s(&h.thp.enabled)),
            ("governor".to_string(), s(&h.governor)),
            ("microcode".to_string(), s(&h.cpu.microcode)),
            ("SMT".to_string(), b(h.cpu.smt_active)),
            ("boost".to_string(), b(h.freq.boost)),
            ("cpufreq driver".to_string(), s(&h.freq.driver)),
            (
                "hypervisor".to_string(),
                h.hypervisor().unwrap_or_else(|| "none".into()),
            ),
        ];
        out.extend(
            h.vulnerabilities
                .iter()
                .map(|(k, v)| (format!("vulnerability {k}"), v.clone())),
        );
        out.extend(h.settings.facts());
        out
    }

    /// Detects this machine; never fails (unknown facts are None or empty).
    pub fn detect() -> Host {
        let mut host = Host::detect_at(Path::new("/"));
        probe::complete(&mut host);
        host.settings = Settings::detect();
        host
    }

    /// Reads everything procfs and sysfs under `root` say (`/` for this
    /// machine; a directory tree of fixed files in tests). Facts that come
    /// from elsewhere (cpuid, the C library, the build) are left empty.
    pub fn detect_at(root: &Path) -> Host {
        sysfs::read_host(root)
    }

    /// The size of the last-level data or unified cache, in bytes.
    pub fn llc_bytes(&self) -> Option<u64> {
        self.caches
            .iter()
            .filter(|c| c.kind != "Instruction")
            .max_by_key(|c| c.level)
            .map(|c| c.size_bytes)
    }

    /// The data or unified cache of `level`, if sysfs lists one.
    pub fn cache(&self, level: u8) -> Option<&CacheInfo> {
        self.caches
            .iter()
            .find(|c| c.level == level && c.kind != "Instruction")
    }

    /// The CPU clock in GHz: the maximum cpufreq allows, else the current
    /// cpufreq figure, else /proc/cpuinfo's `cpu MHz` (VMs); None if unknown.
    pub fn cpu_ghz(&self) -> Option<f64> {
        let f = &self.freq;
        [f.max_mhz, f.current_mhz, f.cpuinfo_mhz]
            .into_iter()
            .flatten()
            .find(|m| m.is_finite() && *m > 0.0)
            .map(|m| m / 1000.0)
    }

    /// The hypervisor in a few words (`KVM`, `QEMU Standard PC`), or None on
    /// bare metal or when nothing says so.
    pub fn hypervisor(&self) -> Option<String> {
        let v = &self.virt;
        if let Some(h) = &v.hypervisor {
            return Some(h.clone());
        }
        let dmi = format!(
            "{} {}",
            v.dmi_vendor.as_deref().unwrap_or(""),
            v.dmi_product.as_deref().unwrap_or("")
        );
        if probe::dmi_is_virtual(&dmi) {
            return Some(dmi.trim().to_string());
        }
        (v.hypervisor_flag == Some(true)).then(|| "hypervisor CPU flag".to_string())
    }
}

#[cfg(test)]
impl Host {
    /// A default host whose vulnerabilities files say `states` (file, text).
    pub fn with_vulnerabilities(states: &[(&str, &str)]) -> Host {
        let mut h = Host::default();
        for (name, state) in states {
            h.vulnerabilities
                .insert(name.to_string(), state.to_string());
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_object_is_a_host() {
        let h: Host = serde_json::from_str("{}").unwrap();
        assert_eq!(h, Host::default());
    }

    #[test]
    fn partial_and_older_documents_load() {
        // An older layout: flat cpu_model/cpu_mhz fields, a cache without the new fields.
        let h: Host = serde_json::from_str(
            r#"{"hostname":"old","cpu_model":"X","cpu_mhz":3000.0,"logical_cpus":4,
                "caches":[{"level":2,"kind":"Unified","size_bytes":1048576}],
                "cpu":{"model":"Y"},"kernel":{},"virt":{"hypervisor":"KVM"}}"#,
        )
        .unwrap();
        assert_eq!(h.hostname, "old");
        assert_eq!(h.logical_cpus, 4);
        assert_eq!(h.cpu.model.as_deref(), Some("Y"));
        assert_eq!(h.cache(2).map(|c| c.size_bytes), Some(1 << 20));
        assert_eq!(h.cache(2).and_then(|c| c.instances), None);
        assert_eq!(h.hypervisor().as_deref(), Some("KVM"));
    }

    #[test]
    fn a_detected_host_round_trips_through_json() {
        let h = Host::detect();
        let back: Host = serde_json::from_str(&serde_json::to_string(&h).unwrap()).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn detection_finds_the_basics_of_this_machine() {
        let h = Host::detect();
        assert!(h.logical_cpus >= 1);
        assert!(!h.cpu.arch.is_empty());
        assert!(!h.software.opcost_version.is_empty());
        if let Some(t) = h.mem_total_bytes {
            assert!(t > 0);
            assert!(h.mem_available_bytes.is_none_or(|a| a <= t));
        }
        if let Some(g) = h.cpu_ghz() {
            assert!(g > 0.01 && g < 100.0, "{g} GHz");
        }
    }

    #[test]
    fn cpu_ghz_falls_back_from_cpufreq_to_cpuinfo() {
        let mut h = Host::default();
        assert_eq!(h.cpu_ghz(), None);
        h.freq.cpuinfo_mhz = Some(2596.0);
        assert_eq!(h.cpu_ghz(), Some(2.596));
        h.freq.current_mhz = Some(1200.0);
        assert_eq!(h.cpu_ghz(), Some(1.2));
        h.freq.max_mhz = Some(3500.0);
        assert_eq!(h.cpu_ghz(), Some(3.5));
        h.freq.max_mhz = Some(f64::NAN);
        assert_eq!(h.cpu_ghz(), Some(1.2), "an unusable figure is skipped");
    }

    #[test]
    fn llc_and_cache_skip_instruction_caches() {
        let c = |level, kind: &str, kib: u64| CacheInfo {
            level,
            kind: kind.into(),
            size_bytes: kib * 1024,
            ..Default::default()
        };
        let h = Host {
            caches: vec![
                c(1, "Data", 48),
                c(1, "Instruction", 32),
                c(2, "Unified", 1024),
                c(3, "Unified", 32768),
            ],
            ..Default::default()
        };
        assert_eq!(h.cache(1).map(|c| c.size_bytes), Some(48 * 1024));
        assert_eq!(h.llc_bytes(), Some(32 << 20));
        assert_eq!(Host::default().llc_bytes(), None);
    }

    #[test]
    fn hypervisor_comes_from_cpuid_dmi_or_the_flag() {
        let mut h = Host::default();
        assert_eq!(h.hypervisor(), None);
        h.virt.hypervisor_flag = Some(true);
        assert_eq!(h.hypervisor().as_deref(), Some("hypervisor CPU flag"));
        h.virt.dmi_vendor = Some("QEMU".into());
        h.virt.dmi_product = Some("Standard PC (Q35 + ICH9, 2009)".into());
        assert_eq!(
            h.hypervisor().as_deref(),
            Some("QEMU Standard PC (Q35 + ICH9, 2009)")
        );
        h.virt.hypervisor = Some("KVM".into());
        assert_eq!(h.hypervisor().as_deref(), Some("KVM"));
        let metal = Host {
            virt: Virtualization {
                hypervisor_flag: Some(false),
                dmi_vendor: Some("Dell Inc.".into()),
                dmi_product: Some("PowerEdge R750".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(metal.hypervisor(), None);
    }
}
