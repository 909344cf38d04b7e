//! The machine's description: everything that explains a number.
//! (Stub: to be completed.)

use serde::{Deserialize, Serialize};

/// The machine a run was made on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Host name.
    pub hostname: String,
    /// Current clocksource.
    pub clocksource: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Max frequency in MHz.
    pub cpu_mhz: Option<f64>,
    /// Governor.
    pub governor: Option<String>,
    /// Load averages.
    pub loadavg: Option<[f64; 3]>,
    /// Logical CPUs.
    pub logical_cpus: usize,
    /// CPU caches from sysfs (cpu0's view).
    pub caches: Vec<CacheInfo>,
    /// Total memory in bytes.
    pub mem_total_bytes: Option<u64>,
    /// Available memory in bytes when the host was detected.
    pub mem_available_bytes: Option<u64>,
}

/// One CPU cache as sysfs describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheInfo {
    /// 1, 2, 3...
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// The CPUs sharing it, as sysfs lists them (`0-1`).
    pub shared_cpus: Option<String>,
}

/// Memory available right now (MemAvailable of /proc/meminfo), in bytes.
pub fn mem_available_now() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

impl Host {
    /// Detects the host; never fails (unknown facts are None).
    pub fn detect() -> Host {
        Host {
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .unwrap_or_default()
                .trim()
                .to_string(),
            clocksource: std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .ok()
            .map(|s| s.trim().to_string()),
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ..Default::default()
        }
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

    /// The CPU clock in GHz, if known.
    pub fn cpu_ghz(&self) -> Option<f64> {
        self.cpu_mhz.map(|m| m / 1000.0)
    }
}

impl Host {
    /// The description as aligned `key: value` text.
    pub fn render_text(&self) -> String {
        format!("hostname: {}\n", self.hostname)
    }
}
