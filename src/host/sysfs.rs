//! Reading procfs, sysfs and /etc under a root directory. Every read is
//! optional: a missing or unreadable file leaves its fact unknown.

use std::collections::{BTreeMap, BTreeSet};

use std::path::Path;

use super::parse;
use super::reader::{CPU, Reader};
use super::{
    CacheInfo, Cpu, CpuPlace, Frequency, Host, Kernel, Memory, Software, Thp, Virtualization,
};

/// Builds a [`Host`] from the files under `root`.
pub fn read_host(root: &Path) -> Host {
    let r = Reader { root };
    let info = r
        .text("proc/cpuinfo")
        .map(|t| parse::cpuinfo(&t))
        .unwrap_or_default();
    let online = r
        .text(&format!("{CPU}/online"))
        .and_then(|t| parse::cpu_list(&t))
        .filter(|v| !v.is_empty());
    let cpus = online
        .clone()
        .unwrap_or_else(|| (0..info.processors).collect());
    let mem = r
        .text("proc/meminfo")
        .map(|t| parse::meminfo(&t))
        .unwrap_or_default();
    let first = cpus.first().copied().unwrap_or(0);
    let (governor, freq) = frequency(&r, first, info.mhz);
    let mut shape = super::topology::read(&r, &cpus);
    shape.topology.classes = super::classes::representatives(&shape.topology);

    Host {
        hostname: r.text("proc/sys/kernel/hostname").unwrap_or_default(),
        cpu: cpu(&r, &shape.all, shape.topology.nodes.len(), &info),
        logical_cpus: cpus.len(),
        topology: shape.topology,
        caches: caches(&r, &cpus),
        freq,
        governor,
        kernel: Kernel {
            name: r.text("proc/sys/kernel/ostype"),
            release: r.text("proc/sys/kernel/osrelease"),
            version: r.text("proc/sys/kernel/version"),
            cmdline: r.text("proc/cmdline"),
        },
        vulnerabilities: vulnerabilities(&r),
        clocksource: r.text("sys/devices/system/clocksource/clocksource0/current_clocksource"),
        clocksources_available: r
            .text("sys/devices/system/clocksource/clocksource0/available_clocksource")
            .map(|t| t.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
        thp: Thp {
            enabled: thp(&r, "enabled"),
            defrag: thp(&r, "defrag"),
            shmem_enabled: thp(&r, "shmem_enabled"),
        },
        mem_total_bytes: mem.get("MemTotal").copied().filter(|&t| t > 0),
        mem_available_bytes: mem.get("MemAvailable").copied(),
        memory: Memory {
            swap_total_bytes: mem.get("SwapTotal").copied(),
            hugepage_size_bytes: mem.get("Hugepagesize").copied(),
            hugepages_total: mem.get("HugePages_Total").copied(),
        },
        virt: virtualization(&r, &info),
        loadavg: r.text("proc/loadavg").and_then(|t| parse::loadavg(&t)),
        // The process's own settings need its environment as well as the
        // files: `Host::detect` reads them (`Settings::read_at` for a tree).
        settings: Default::default(),
        software: Software {
            os: r
                .text("etc/os-release")
                .or_else(|| r.text("usr/lib/os-release"))
                .and_then(|t| parse::os_release(&t)),
            ..Default::default()
        },
    }
}

/// Identity from /proc/cpuinfo, counts from the places of every online
/// CPU (cpuinfo as fallback) and the number of NUMA nodes.
fn cpu(r: &Reader, places: &[CpuPlace], nodes: usize, info: &parse::Cpuinfo) -> Cpu {
    let cores: BTreeSet<usize> = places.iter().filter_map(|p| p.core).collect();
    let packages: BTreeSet<u32> = places.iter().filter_map(|p| p.package).collect();
    let physical_cores = match cores.len() {
        0 => (info.cores > 0).then_some(info.cores),
        n => Some(n),
    };
    let sockets = match packages.len() {
        0 => (info.sockets > 0).then_some(info.sockets),
        n => Some(n),
    };
    let siblings = places.first().and_then(|first| {
        let core = first.core?;
        Some(places.iter().filter(|p| p.core == Some(core)).count())
    });
    let cpus: Vec<usize> = places.iter().map(|p| p.cpu).collect();
    let threads_per_core = siblings.or_else(|| {
        physical_cores
            .filter(|&p| p > 0 && !cpus.is_empty())
            .map(|p| cpus.len().div_ceil(p))
    });
    Cpu {
        arch: String::new(),
        model: info.model_name.clone(),
        vendor: info.vendor.clone(),
        board: info
            .board
            .clone()
            .or_else(|| r.text("sys/firmware/devicetree/base/model")),
        family: info.family.clone(),
        model_number: info.model.clone(),
        stepping: info.stepping.clone(),
        microcode: info.microcode.clone().or_else(|| {
            cpus.first()
                .and_then(|c| r.text(&format!("{CPU}/cpu{c}/microcode/version")))
        }),
        physical_cores,
        sockets,
        threads_per_core,
        smt_control: r.text(&format!("{CPU}/smt/control")),
        smt_active: r.text(&format!("{CPU}/smt/active")).map(|t| t != "0"),
        numa_nodes: (nodes > 0).then_some(nodes),
        flags: info.flags.join(" "),
    }
}

/// The caches of every online CPU, grouped by level, type and size, with
/// the number of distinct instances (sharing sets) of each.
fn caches(r: &Reader, cpus: &[usize]) -> Vec<CacheInfo> {
    let mut out: Vec<CacheInfo> = Vec::new();
    let mut sharing: Vec<BTreeSet<String>> = Vec::new();
    let mut having: Vec<Vec<usize>> = Vec::new();
    for &c in cpus {
        let dir = format!("{CPU}/cpu{c}/cache");
        let mut indices: Vec<(u32, String)> = r
            .entries(&dir)
            .into_iter()
            .filter_map(|n| Some((n.strip_prefix("index")?.parse().ok()?, n)))
            .collect();
        indices.sort();
        for (_, name) in indices {
            let d = format!("{dir}/{name}");
            let (Some(level), Some(kind), Some(size_bytes)) = (
                r.int(&format!("{d}/level"))
                    .and_then(|l| u8::try_from(l).ok()),
                r.text(&format!("{d}/type")),
                r.text(&format!("{d}/size")).and_then(|s| parse::size(&s)),
            ) else {
                continue;
            };
            let shared = r.text(&format!("{d}/shared_cpu_list"));
            let i = match out
                .iter()
                .position(|e| e.level == level && e.kind == kind && e.size_bytes == size_bytes)
            {
                Some(i) => i,
                None => {
                    out.push(CacheInfo {
                        level,
                        kind,
                        size_bytes,
                        shared_cpus: shared.clone(),
                        instances: None,
                        line_bytes: r.int(&format!("{d}/coherency_line_size")),
                        ways: r.int(&format!("{d}/ways_of_associativity")),
                        cpus: None,
                    });
                    sharing.push(BTreeSet::new());
                    having.push(Vec::new());
                    out.len() - 1
                }
            };
            if having[i].last() != Some(&c) {
                having[i].push(c);
            }
            if let Some(s) = shared {
                sharing[i].insert(s);
            }
        }
    }
    for ((c, s), h) in out.iter_mut().zip(&sharing).zip(&having) {
        c.instances = (!s.is_empty()).then_some(s.len());
        c.cpus = (h.len() < cpus.len()).then(|| super::topology::cpu_list(h));
    }
    // By level, then Data, Instruction, Unified: the caches of each kind of
    // a big.LITTLE machine side by side, as lscpu lists them.
    out.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    out
}

/// The governor and frequencies of `cpu` (cpufreq, kHz in sysfs).
fn frequency(r: &Reader, cpu: usize, cpuinfo_mhz: Option<f64>) -> (Option<String>, Frequency) {
    let d = format!("{CPU}/cpu{cpu}/cpufreq");
    let mhz = |name: &str| {
        r.int(&format!("{d}/{name}"))
            .filter(|&k| k > 0)
            .map(|khz| khz as f64 / 1000.0)
    };
    let boost = r
        .int(&format!("{CPU}/cpufreq/boost"))
        .or_else(|| r.int(&format!("{d}/boost")))
        .map(|b| b != 0)
        .or_else(|| {
            r.int(&format!("{CPU}/intel_pstate/no_turbo"))
                .map(|n| n == 0)
        });
    let freq = Frequency {
        current_mhz: mhz("scaling_cur_freq").or_else(|| mhz("cpuinfo_cur_freq")),
        min_mhz: mhz("cpuinfo_min_freq"),
        max_mhz: mhz("cpuinfo_max_freq"),
        cpuinfo_mhz,
        driver: r.text(&format!("{d}/scaling_driver")),
        boost,
    };
    (r.text(&format!("{d}/scaling_governor")), freq)
}

fn vulnerabilities(r: &Reader) -> BTreeMap<String, String> {
    let dir = format!("{CPU}/vulnerabilities");
    r.entries(&dir)
        .into_iter()
        .filter_map(|name| {
            let text = r.text(&format!("{dir}/{name}"))?;
            Some((name, text))
        })
        .collect()
}

fn thp(r: &Reader, name: &str) -> Option<String> {
    r.text(&format!("sys/kernel/mm/transparent_hugepage/{name}"))
        .and_then(|t| parse::selected(&t))
}

fn virtualization(r: &Reader, info: &parse::Cpuinfo) -> Virtualization {
    let hypervisor = r
        .text("sys/hypervisor/type")
        .or_else(|| {
            // Device tree (arm): "xen,xen-4.14\0xen,xen" → "xen".
            r.text("sys/firmware/devicetree/base/hypervisor/compatible")
                .and_then(|t| t.split([',', '\0']).next().map(str::to_string))
        })
        .map(|h| match h.as_str() {
            "xen" => "Xen".to_string(),
            _ => h,
        });
    let container = r
        .text("run/systemd/container")
        .or_else(|| r.exists(".dockerenv").then(|| "docker".to_string()))
        .or_else(|| r.exists("run/.containerenv").then(|| "podman".to_string()));
    Virtualization {
        hypervisor_flag: info
            .x86_flags
            .then(|| info.flags.iter().any(|f| f == "hypervisor")),
        hypervisor,
        dmi_vendor: r.text("sys/class/dmi/id/sys_vendor"),
        dmi_product: r.text("sys/class/dmi/id/product_name"),
        container,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes `files` (path → content) under a fresh temp dir (the host
    /// readers' tests build their trees with it).
    pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    fn cache_files(cpu: usize, shared_l2: &str) -> Vec<(String, String)> {
        let mut v = Vec::new();
        let idx = [
            ("1", "Data", "48K", cpu.to_string(), "12"),
            ("1", "Instruction", "32K", cpu.to_string(), "8"),
            ("2", "Unified", "2048K", shared_l2.to_string(), "16"),
            ("3", "Unified", "491520K", "0-3".to_string(), "16"),
        ];
        for (i, (level, kind, size, shared, ways)) in idx.iter().enumerate() {
            let d = format!("sys/devices/system/cpu/cpu{cpu}/cache/index{i}");
            v.push((format!("{d}/level"), format!("{level}\n")));
            v.push((format!("{d}/type"), format!("{kind}\n")));
            v.push((format!("{d}/size"), format!("{size}\n")));
            v.push((format!("{d}/shared_cpu_list"), format!("{shared}\n")));
            v.push((format!("{d}/coherency_line_size"), "64\n".to_string()));
            v.push((format!("{d}/ways_of_associativity"), format!("{ways}\n")));
        }
        v
    }

    fn topology(cpu: usize, core: usize) -> Vec<(String, String)> {
        let d = format!("sys/devices/system/cpu/cpu{cpu}/topology");
        let sib = if core == 0 { "0-1" } else { "2-3" };
        vec![
            (format!("{d}/physical_package_id"), "0\n".into()),
            (format!("{d}/die_id"), "0\n".into()),
            (format!("{d}/core_id"), format!("{core}\n")),
            (format!("{d}/thread_siblings_list"), format!("{sib}\n")),
        ]
    }

    /// A 4-thread, 2-core SMT machine with cpufreq, a 480 MiB "L3" as some
    /// hypervisors report it, and the usual procfs files.
    fn machine() -> tempfile::TempDir {
        let mut owned: Vec<(String, String)> = Vec::new();
        for cpu in 0..4 {
            let l2 = if cpu < 2 { "0-1" } else { "2-3" };
            owned.extend(cache_files(cpu, l2));
            owned.extend(topology(cpu, cpu / 2));
        }
        let mut files: Vec<(&str, &str)> = owned
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        files.extend([
            ("proc/cpuinfo", "processor : 0\nvendor_id : GenuineIntel\ncpu family : 6\nmodel : 143\nmodel name : Intel(R) Xeon(R) Platinum 8480+\nstepping : 8\nmicrocode : 0x2b000590\ncpu MHz : 2000.000\nflags : fpu tsc hypervisor\n\nprocessor : 1\n\nprocessor : 2\n\nprocessor : 3\n"),
            ("proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 600 kB\nSwapTotal: 0 kB\nHugePages_Total: 0\nHugepagesize: 2048 kB\n"),
            ("proc/loadavg", "1.00 0.50 0.25 1/100 42\n"),
            ("proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/vda1 mitigations=off\n"),
            ("proc/sys/kernel/hostname", "box\n"),
            ("proc/sys/kernel/ostype", "Linux\n"),
            ("proc/sys/kernel/osrelease", "6.1.0-test\n"),
            ("proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Debian\n"),
            ("sys/devices/system/cpu/online", "0-3\n"),
            ("sys/devices/system/cpu/smt/control", "on\n"),
            ("sys/devices/system/cpu/smt/active", "1\n"),
            ("sys/devices/system/node/online", "0\n"),
            ("sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "1200000\n"),
            ("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_min_freq", "800000\n"),
            ("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3800000\n"),
            ("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n"),
            ("sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", "intel_pstate\n"),
            ("sys/devices/system/cpu/intel_pstate/no_turbo", "0\n"),
            ("sys/devices/system/cpu/vulnerabilities/meltdown", "Not affected\n"),
            ("sys/devices/system/cpu/vulnerabilities/spectre_v2", "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional\n"),
            ("sys/devices/system/clocksource/clocksource0/current_clocksource", "kvm-clock\n"),
            ("sys/devices/system/clocksource/clocksource0/available_clocksource", "kvm-clock tsc acpi_pm \n"),
            ("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n"),
            ("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never\n"),
            ("sys/kernel/mm/transparent_hugepage/shmem_enabled", "always within_size advise [never] deny force\n"),
            ("sys/class/dmi/id/sys_vendor", "QEMU\n"),
            ("sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n"),
            ("etc/os-release", "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n"),
            (".dockerenv", ""),
        ]);
        tree(&files)
    }

    #[test]
    fn a_full_tree_is_read_into_every_section() {
        let dir = machine();
        let h = read_host(dir.path());
        assert_eq!(h.hostname, "box");
        assert_eq!(h.logical_cpus, 4);
        assert_eq!(
            h.cpu.model.as_deref(),
            Some("Intel(R) Xeon(R) Platinum 8480+")
        );
        assert_eq!(h.cpu.vendor.as_deref(), Some("GenuineIntel"));
        assert_eq!(
            (h.cpu.family.as_deref(), h.cpu.model_number.as_deref()),
            (Some("6"), Some("143"))
        );
        assert_eq!(h.cpu.stepping.as_deref(), Some("8"));
        assert_eq!(h.cpu.microcode.as_deref(), Some("0x2b000590"));
        assert_eq!(h.cpu.physical_cores, Some(2));
        assert_eq!(h.cpu.sockets, Some(1));
        assert_eq!(h.cpu.threads_per_core, Some(2));
        assert_eq!(h.cpu.smt_control.as_deref(), Some("on"));
        assert_eq!(h.cpu.smt_active, Some(true));
        assert_eq!(h.cpu.numa_nodes, Some(1));
        assert_eq!(h.cpu.flags, "fpu tsc hypervisor");

        assert_eq!(h.governor.as_deref(), Some("powersave"));
        assert_eq!(h.freq.current_mhz, Some(1200.0));
        assert_eq!(h.freq.min_mhz, Some(800.0));
        assert_eq!(h.freq.max_mhz, Some(3800.0));
        assert_eq!(h.freq.cpuinfo_mhz, Some(2000.0));
        assert_eq!(h.freq.driver.as_deref(), Some("intel_pstate"));
        assert_eq!(h.freq.boost, Some(true));
        assert_eq!(h.cpu_ghz(), Some(3.8));

        assert_eq!(h.kernel.name.as_deref(), Some("Linux"));
        assert_eq!(h.kernel.release.as_deref(), Some("6.1.0-test"));
        assert!(h.kernel.version.as_deref().unwrap().contains("PREEMPT"));
        assert!(
            h.kernel
                .cmdline
                .as_deref()
                .unwrap()
                .contains("mitigations=off")
        );
        assert_eq!(h.vulnerabilities.len(), 2);
        assert_eq!(h.vulnerabilities["meltdown"], "Not affected");
        assert!(h.vulnerabilities["spectre_v2"].starts_with("Mitigation"));
        assert_eq!(h.clocksource.as_deref(), Some("kvm-clock"));
        assert_eq!(h.clocksources_available, ["kvm-clock", "tsc", "acpi_pm"]);
        assert_eq!(h.thp.enabled.as_deref(), Some("madvise"));
        assert_eq!(h.thp.defrag.as_deref(), Some("madvise"));
        assert_eq!(h.thp.shmem_enabled.as_deref(), Some("never"));
        assert_eq!(h.mem_total_bytes, Some(1000 * 1024));
        assert_eq!(h.mem_available_bytes, Some(600 * 1024));
        assert_eq!(h.memory.swap_total_bytes, Some(0));
        assert_eq!(h.memory.hugepage_size_bytes, Some(2 << 20));
        assert_eq!(h.memory.hugepages_total, Some(0));
        assert_eq!(h.loadavg, Some([1.0, 0.5, 0.25]));
        assert_eq!(h.virt.hypervisor_flag, Some(true));
        assert_eq!(h.virt.dmi_vendor.as_deref(), Some("QEMU"));
        assert_eq!(h.virt.container.as_deref(), Some("docker"));
        assert_eq!(
            h.hypervisor().as_deref(),
            Some("QEMU Standard PC (Q35 + ICH9, 2009)")
        );
        assert_eq!(
            h.software.os.as_deref(),
            Some("Debian GNU/Linux 13 (trixie)")
        );
    }

    #[test]
    fn caches_are_grouped_with_their_instances() {
        let dir = machine();
        let h = read_host(dir.path());
        let summary: Vec<_> = h
            .caches
            .iter()
            .map(|c| (c.level, c.kind.as_str(), c.size_bytes >> 10, c.instances))
            .collect();
        assert_eq!(
            summary,
            [
                (1, "Data", 48, Some(4)),
                (1, "Instruction", 32, Some(4)),
                (2, "Unified", 2048, Some(2)),
                (3, "Unified", 480 << 10, Some(1)),
            ]
        );
        let l1 = h.cache(1).unwrap();
        assert_eq!((l1.line_bytes, l1.ways), (Some(64), Some(12)));
        assert_eq!(l1.shared_cpus.as_deref(), Some("0"));
        assert_eq!(h.cache(3).unwrap().shared_cpus.as_deref(), Some("0-3"));
        assert_eq!(h.llc_bytes(), Some(480 << 20));
    }

    #[test]
    fn an_empty_root_gives_an_empty_host() {
        let dir = tempfile::tempdir().unwrap();
        let h = read_host(dir.path());
        assert_eq!(h, Host::default());
        assert_eq!(h.cpu_ghz(), None);
        assert_eq!(h.hypervisor(), None);
    }

    #[test]
    fn a_missing_root_is_not_an_error() {
        let h = read_host(Path::new("/nonexistent/opcost-test-root"));
        assert_eq!(h.logical_cpus, 0);
        assert!(h.caches.is_empty());
    }

    #[test]
    fn a_vm_without_cpufreq_or_sysfs_topology_falls_back_to_cpuinfo() {
        let dir = tree(&[(
            "proc/cpuinfo",
            "processor : 0\nmodel name : AMD EPYC\ncpu MHz : 2596.122\nphysical id : 0\ncore id : 0\nflags : fpu hypervisor\n\nprocessor : 1\nphysical id : 0\ncore id : 1\n",
        )]);
        let h = read_host(dir.path());
        assert_eq!(h.logical_cpus, 2);
        assert_eq!(h.cpu.physical_cores, Some(2));
        assert_eq!(h.cpu.sockets, Some(1));
        assert_eq!(h.cpu.threads_per_core, Some(1));
        assert_eq!(h.governor, None);
        assert_eq!(h.freq.max_mhz, None);
        assert_eq!(h.cpu_ghz(), Some(2.596122));
        assert_eq!(h.hypervisor().as_deref(), Some("hypervisor CPU flag"));
    }

    #[test]
    fn malformed_files_leave_facts_unknown() {
        let dir = tree(&[
            ("sys/devices/system/cpu/online", "garbage"),
            ("proc/cpuinfo", "processor : 0\n"),
            ("sys/devices/system/cpu/cpu0/cache/index0/level", "x"),
            ("sys/devices/system/cpu/cpu0/cache/index0/type", "Data"),
            ("sys/devices/system/cpu/cpu0/cache/index0/size", "48K"),
            ("sys/devices/system/cpu/cpu0/cache/notanindex/level", "1"),
            ("proc/loadavg", "high\n"),
            ("proc/meminfo", "MemTotal: lots\n"),
            ("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "-5"),
        ]);
        let h = read_host(dir.path());
        assert_eq!(
            h.logical_cpus, 1,
            "cpuinfo stands in for a garbled online list"
        );
        assert!(h.caches.is_empty());
        assert_eq!(h.loadavg, None);
        assert_eq!(h.mem_total_bytes, None);
        assert_eq!(h.freq.max_mhz, None);
    }

    #[test]
    fn xen_is_named_from_sys_hypervisor() {
        let dir = tree(&[("sys/hypervisor/type", "xen\n")]);
        assert_eq!(read_host(dir.path()).hypervisor().as_deref(), Some("Xen"));
    }
}
