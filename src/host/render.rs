//! The description as sectioned, aligned text for `opcost env`.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::topology::{Topology, cpu_list};
use super::{CacheInfo, Host};
use crate::units::human_bytes;

/// The indentation of the rows under a section title.
const INDENT: &str = "  ";

/// What is shown for a fact that could not be read.
const UNKNOWN: &str = "unknown";

/// The caches row when sysfs lists none (many arm boards): the sizes are
/// then the latency curve's to find, and its findings say they come from it.
const NO_CACHES: &str = "not in sysfs (this kernel lists none; `opcost run memory.latency` finds the levels on the latency curve)";

/// One line of the description: its section (empty for the top lines),
/// its name and its value as shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// Section title (`CPU`, `Kernel`...), empty for hostname and load.
    pub section: String,
    /// The fact's name within its section.
    pub key: String,
    /// Its value as text (`unknown` when it could not be read).
    pub value: String,
}

/// A titled block of `key  value` rows with optional notes under it.
struct Section {
    title: &'static str,
    rows: Vec<(String, String)>,
    notes: Vec<String>,
    /// Preformatted lines drawn under the rows (not facts).
    picture: Vec<String>,
}

impl Section {
    fn new(title: &'static str) -> Section {
        Section {
            title,
            rows: Vec::new(),
            notes: Vec::new(),
            picture: Vec::new(),
        }
    }

    fn row(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.rows.push((key.into(), value.into()));
        self
    }

    fn opt(&mut self, key: &str, value: Option<impl ToString>) -> &mut Self {
        let v = value.map_or_else(|| UNKNOWN.to_string(), |v| v.to_string());
        self.row(key, v)
    }

    /// A row only when its value is known (a fact most machines lack).
    fn known(&mut self, key: &str, value: Option<impl ToString>) -> &mut Self {
        match value {
            Some(v) => self.row(key, v.to_string()),
            None => self,
        }
    }
}

fn mhz(v: Option<f64>) -> Option<String> {
    v.map(|m| format!("{m:.0} MHz"))
}

fn bytes(v: Option<u64>) -> Option<String> {
    v.map(|b| human_bytes(b as f64))
}

/// A size in whole binary units when it is one (`48 KiB`, `32 MiB`), else
/// three significant digits.
pub(super) fn size_text(b: u64) -> String {
    for (scale, unit) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if b >= scale && b.is_multiple_of(scale) {
            return format!("{} {unit}", b / scale);
        }
    }
    human_bytes(b as f64)
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// `L1d`, `L1i`, `L2`... as lscpu names them.
fn cache_name(c: &CacheInfo) -> String {
    match c.kind.as_str() {
        "Data" => format!("L{}d", c.level),
        "Instruction" => format!("L{}i", c.level),
        _ => format!("L{}", c.level),
    }
}

fn cache_text(c: &CacheInfo) -> String {
    let mut parts = vec![match c.instances {
        Some(n) => format!("{} × {n}", size_text(c.size_bytes)),
        None => size_text(c.size_bytes),
    }];
    if let Some(s) = c.shared_cpus.as_deref().filter(|s| s.contains([',', '-'])) {
        parts.push(format!("shared by CPUs {s}"));
    }
    if let Some(w) = c.ways {
        parts.push(format!("{w}-way"));
    }
    if let Some(l) = c.line_bytes {
        parts.push(format!("{l} B lines"));
    }
    parts.join(", ")
}

/// The kinds of the usable CPUs, in the order of their first CPU
/// (`Cortex-A55 (capacity 397): CPUs 0-3; Cortex-A76 (capacity 1024):
/// CPUs 4-7`), capacities when they differ; None when sysfs names no kind
/// and one capacity for all (most x86 machines, whose recent kernels list a
/// `cpu_capacity` of 1024 each).
fn kinds_text(t: &Topology) -> Option<String> {
    let capacities: BTreeSet<Option<u32>> = t.cpus.iter().map(|p| p.capacity).collect();
    let show_capacity = capacities.len() > 1;
    if !show_capacity && t.cpus.iter().all(|p| p.kind.is_none()) {
        return None;
    }
    let mut groups: Vec<(Option<&str>, Option<u32>, Vec<usize>)> = Vec::new();
    for p in &t.cpus {
        let key = (p.kind.as_deref(), p.capacity.filter(|_| show_capacity));
        match groups.iter_mut().find(|g| (g.0, g.1) == key) {
            Some(g) => g.2.push(p.cpu),
            None => groups.push((key.0, key.1, vec![p.cpu])),
        }
    }
    let text = groups
        .iter()
        .map(|(kind, capacity, cpus)| {
            let name = kind.unwrap_or("unknown kind");
            let cap = capacity.map_or(String::new(), |c| format!(" (capacity {c})"));
            let which = if cpus.len() == 1 { "CPU" } else { "CPUs" };
            format!("{name}{cap}: {which} {}", cpu_list(cpus))
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(text)
}

impl Host {
    /// The description as sectioned text with aligned `key  value` rows.
    pub fn render_text(&self) -> String {
        render(&self.sections())
    }

    /// Every fact as `env` shows it, in order, for reports that put two
    /// hosts side by side or list what differs between them.
    pub fn facts(&self) -> Vec<Fact> {
        self.sections()
            .into_iter()
            .flat_map(|s| {
                s.rows.into_iter().map(move |(key, value)| Fact {
                    section: s.title.to_string(),
                    key,
                    value,
                })
            })
            .collect()
    }

    /// One line naming the machine: CPU model, CPUs, memory, kernel, hypervisor.
    pub fn summary(&self) -> String {
        let mut parts = vec![
            self.cpu
                .model
                .clone()
                .unwrap_or_else(|| format!("{} CPU", self.cpu.arch)),
            format!(
                "{} CPU{}",
                self.logical_cpus,
                if self.logical_cpus == 1 { "" } else { "s" }
            ),
        ];
        if let Some(m) = self.mem_total_bytes {
            parts.push(human_bytes(m as f64));
        }
        if let Some(r) = &self.kernel.release {
            parts.push(format!(
                "{} {r}",
                self.kernel.name.as_deref().unwrap_or("kernel")
            ));
        }
        if let Some(h) = self.hypervisor() {
            parts.push(format!("VM: {h}"));
        }
        parts.join(", ")
    }

    fn sections(&self) -> Vec<Section> {
        vec![
            self.top_section(),
            self.cpu_section(),
            self.topology_section(),
            self.caches_section(),
            self.freq_section(),
            self.kernel_section(),
            self.mitigations_section(),
            self.clock_section(),
            self.thp_section(),
            self.memory_section(),
            self.virt_section(),
            self.sw_section(),
            self.settings_section(),
        ]
    }

    /// The run's settings that move a cost: the recorded environment
    /// variables (each its own row), cgroup limits, CPUs, scheduling.
    fn settings_section(&self) -> Section {
        let mut sec = Section::new("Settings");
        for (k, v) in self.settings.rows() {
            sec.row(k, v);
        }
        sec
    }

    /// The host name and load, untitled at the top.
    fn top_section(&self) -> Section {
        let mut top = Section::new("");
        top.row(
            "hostname",
            if self.hostname.is_empty() {
                UNKNOWN
            } else {
                &self.hostname
            },
        )
        .opt(
            "load average",
            self.loadavg
                .map(|[a, b, c]| format!("{a:.2} {b:.2} {c:.2} (1, 5, 15 min)")),
        );
        top
    }

    /// The CPU: model, topology, SMT.
    fn cpu_section(&self) -> Section {
        let c = &self.cpu;
        let mut cpu = Section::new("CPU");
        cpu.opt("model", c.model.as_ref())
            .opt("vendor", c.vendor.as_ref())
            .known("board", c.board.as_ref())
            .row(
                "family / model / stepping",
                [&c.family, &c.model_number, &c.stepping]
                    .map(|v| v.as_deref().unwrap_or("?"))
                    .join(" / "),
            )
            .opt("microcode", c.microcode.as_ref())
            .row("architecture", &c.arch)
            .row("logical CPUs", self.logical_cpus.to_string())
            .opt("physical cores", c.physical_cores)
            .opt("sockets", c.sockets)
            .opt("threads per core", c.threads_per_core)
            .opt(
                "SMT",
                match (&c.smt_control, c.smt_active) {
                    (Some(ctl), Some(a)) => {
                        Some(format!("{ctl}, {}", if a { "active" } else { "inactive" }))
                    }
                    (Some(ctl), None) => Some(ctl.clone()),
                    (None, Some(a)) => Some(if a { "active" } else { "inactive" }.to_string()),
                    (None, None) => None,
                },
            )
            .opt("NUMA nodes", c.numa_nodes);
        cpu
    }

    /// The machine's shape: usable CPUs, placement classes, what sysfs
    /// lacks, and the picture.
    fn topology_section(&self) -> Section {
        let t = &self.topology;
        let mut sec = Section::new("Topology");
        if !t.is_known() {
            sec.row("topology", format!("{UNKNOWN} (not recorded)"));
            return sec;
        }
        let mut usable = format!(
            "{} ({} of {} online)",
            cpu_list(&t.cpu_numbers()),
            t.cpus.len(),
            t.cpus.len() + t.hidden_cpus.len()
        );
        if !t.hidden_cpus.is_empty() {
            usable.push_str(&format!(
                "; {} hidden by the affinity mask or cpuset",
                cpu_list(&t.hidden_cpus)
            ));
        }
        if !t.offline_cpus.is_empty() {
            usable.push_str(&format!("; {} offline", cpu_list(&t.offline_cpus)));
        }
        sec.row("usable CPUs", usable).row(
            "placement classes",
            t.classes
                .iter()
                .map(|c| format!("{} ({}, {})", c.class, c.a, c.b))
                .collect::<Vec<_>>()
                .join(", "),
        );
        if let Some(kinds) = kinds_text(t) {
            sec.row("CPU kinds", kinds);
        }
        if !t.missing.is_empty() {
            sec.row("not in sysfs", t.missing.join(", "));
        }
        sec.picture = self.topology_picture();
        sec
    }

    /// The caches as sysfs lists them; a size only some CPUs have (each
    /// kind of a big.LITTLE machine its own) names them and their kind.
    fn caches_section(&self) -> Section {
        let virtual_machine = self.hypervisor();
        let mut caches = Section::new("Caches");
        for cache in &self.caches {
            let mut text = cache_text(cache);
            if let Some(cpus) = &cache.cpus {
                text.push_str(&format!(", on CPUs {cpus}{}", self.kind_of(cpus)));
            }
            caches.row(cache_name(cache), text);
        }
        if self.caches.is_empty() {
            caches.row("caches", NO_CACHES);
        } else if virtual_machine.is_some() {
            caches
                .notes
                .push("as the hypervisor reports them; the hardware may differ".to_string());
        }
        caches
    }

    /// ` (Cortex-A55)` when every usable CPU of the list `cpus` is of one
    /// known kind; empty otherwise.
    fn kind_of(&self, cpus: &str) -> String {
        let kinds: BTreeSet<Option<&str>> = super::parse::cpu_list(cpus)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| self.topology.place(c))
            .map(|p| p.kind.as_deref())
            .collect();
        match kinds.into_iter().collect::<Vec<_>>()[..] {
            [Some(kind)] => format!(" ({kind})"),
            _ => String::new(),
        }
    }

    /// The clock: cpufreq, governor, boost and the clock assumed for cycles.
    fn freq_section(&self) -> Section {
        let f = &self.freq;
        let mut freq = Section::new("Frequency");
        let no_cpufreq = f.current_mhz.is_none() && f.max_mhz.is_none() && f.driver.is_none();
        if no_cpufreq {
            freq.row("cpufreq", "absent (usual in VMs and containers)");
        } else {
            freq.opt("current", mhz(f.current_mhz))
                .opt(
                    "min … max",
                    match (f.min_mhz, f.max_mhz) {
                        (None, None) => None,
                        (lo, hi) => Some(format!(
                            "{} … {}",
                            mhz(lo).unwrap_or_else(|| "?".into()),
                            mhz(hi).unwrap_or_else(|| "?".into())
                        )),
                    },
                )
                .opt("driver", f.driver.as_ref())
                .opt("governor", self.governor.as_ref())
                .opt("boost", f.boost.map(|b| if b { "on" } else { "off" }));
        }
        freq.opt("cpu MHz (/proc/cpuinfo)", mhz(f.cpuinfo_mhz)).opt(
            "clock assumed for cycles",
            self.cpu_ghz().map(|g| format!("{g:.2} GHz")),
        );
        freq
    }

    /// The kernel's name, release and command line.
    fn kernel_section(&self) -> Section {
        let k = &self.kernel;
        let mut kernel = Section::new("Kernel");
        kernel
            .opt("name", k.name.as_ref())
            .opt("release", k.release.as_ref())
            .opt("version", k.version.as_ref())
            .opt("command line", k.cmdline.as_ref());
        kernel
    }

    /// The CPU vulnerabilities and their mitigations.
    fn mitigations_section(&self) -> Section {
        let mut mitigations = Section::new("Mitigations");
        for (name, state) in &self.vulnerabilities {
            mitigations.row(name.as_str(), state.as_str());
        }
        if self.vulnerabilities.is_empty() {
            mitigations.row(
                "vulnerabilities",
                format!("{UNKNOWN} (no /sys/devices/system/cpu/vulnerabilities)"),
            );
        }
        mitigations
    }

    /// The clocksource in use and those available.
    fn clock_section(&self) -> Section {
        let mut clock = Section::new("Clocksource");
        clock.opt("current", self.clocksource.as_ref()).opt(
            "available",
            (!self.clocksources_available.is_empty())
                .then(|| self.clocksources_available.join(" ")),
        );
        clock
    }

    /// Transparent huge pages.
    fn thp_section(&self) -> Section {
        let mut thp = Section::new("Transparent huge pages");
        thp.opt("enabled", self.thp.enabled.as_ref())
            .opt("defrag", self.thp.defrag.as_ref())
            .opt("shmem_enabled", self.thp.shmem_enabled.as_ref());
        thp
    }

    /// Memory, swap and the huge page pool.
    fn memory_section(&self) -> Section {
        let m = &self.memory;
        let mut memory = Section::new("Memory");
        memory
            .opt("total", bytes(self.mem_total_bytes))
            .opt("available", bytes(self.mem_available_bytes))
            .opt("swap", bytes(m.swap_total_bytes))
            .opt(
                "huge page pool",
                m.hugepages_total.map(|n| match m.hugepage_size_bytes {
                    Some(s) => format!("{n} × {}", size_text(s)),
                    None => n.to_string(),
                }),
            );
        memory
    }

    /// Whether this is a virtual machine or a container, and of what kind.
    fn virt_section(&self) -> Section {
        let virtual_machine = self.hypervisor();
        let v = &self.virt;
        let mut virt = Section::new("Virtualisation");
        virt.row(
            "virtual machine",
            match &virtual_machine {
                Some(h) => format!("yes ({h})"),
                None if v.hypervisor_flag == Some(false) || v.dmi_vendor.is_some() => {
                    "no".to_string()
                }
                None => format!("{UNKNOWN} (no sign of one)"),
            },
        )
        .opt("hypervisor (cpuid/sysfs)", v.hypervisor.as_ref())
        .opt("hypervisor CPU flag", v.hypervisor_flag.map(yes_no))
        .opt(
            "DMI vendor / product",
            match (&v.dmi_vendor, &v.dmi_product) {
                (None, None) => None,
                (a, b) => Some(format!(
                    "{} / {}",
                    a.as_deref().unwrap_or("?"),
                    b.as_deref().unwrap_or("?")
                )),
            },
        )
        .row(
            "container (marker files)",
            v.container.clone().unwrap_or_else(|| "none seen".into()),
        );
        virt
    }

    /// The OS, C library, opcost build and compiler.
    fn sw_section(&self) -> Section {
        let s = &self.software;
        let mut sw = Section::new("Software");
        sw.opt("OS", s.os.as_ref())
            .opt("C library", s.libc.as_ref())
            .row(
                "opcost",
                format!(
                    "{}{}{}",
                    if s.opcost_version.is_empty() {
                        UNKNOWN
                    } else {
                        &s.opcost_version
                    },
                    s.git_commit
                        .as_deref()
                        .map(|c| format!(" (commit {c})"))
                        .unwrap_or_default(),
                    if s.build_profile.is_empty() {
                        String::new()
                    } else {
                        format!(", {} build", s.build_profile)
                    }
                ),
            )
            .opt("compiler", s.rustc_version.as_ref());
        sw
    }
}

/// Lays out sections with one key column, as wide as the widest key.
fn render(sections: &[Section]) -> String {
    let width = sections
        .iter()
        .flat_map(|s| &s.rows)
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        // Untitled rows start at the margin; their values still line up.
        let (indent, extra) = if s.title.is_empty() {
            ("", INDENT.len())
        } else {
            let _ = writeln!(out, "{}", s.title);
            (INDENT, 0)
        };
        for (k, v) in &s.rows {
            let pad = width.saturating_sub(k.chars().count()) + extra;
            let _ = writeln!(out, "{indent}{k}{:pad$}  {v}", "");
        }
        for n in &s.notes {
            let _ = writeln!(out, "{indent}({n})");
        }
        for line in &s.picture {
            let _ = writeln!(out, "{indent}{line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_host_renders_every_section_with_unknowns() {
        let text = Host::default().render_text();
        for title in [
            "CPU",
            "Topology",
            "Caches",
            "Frequency",
            "Kernel",
            "Mitigations",
            "Clocksource",
            "Transparent huge pages",
            "Memory",
            "Virtualisation",
            "Software",
            "Settings",
        ] {
            assert!(
                text.lines().any(|l| l == title),
                "no section {title} in\n{text}"
            );
        }
        assert!(text.contains("hostname"));
        assert!(text.contains(UNKNOWN));
    }

    #[test]
    fn values_start_in_one_column() {
        let h = Host::with_vulnerabilities(&[
            ("indirect_target_selection", "Not affected"),
            ("spectre_v2", "Mitigation: Retpolines"),
        ]);
        let text = h.render_text();
        let col = |needle: &str, value: &str| {
            let line = text.lines().find(|l| l.contains(needle)).unwrap();
            line.find(value).unwrap()
        };
        assert_eq!(
            col("indirect_target_selection", "Not affected"),
            col("spectre_v2", "Mitigation")
        );
        assert_eq!(col("spectre_v2", "Mitigation"), col("  model", UNKNOWN));
        assert_eq!(col("spectre_v2", "Mitigation"), col("hostname", UNKNOWN));
    }

    #[test]
    fn facts_follow_the_text_and_show_differences() {
        let a = Host::default();
        let mut b = Host::default();
        b.kernel.release = Some("6.1.0".into());
        let fa = a.facts();
        let fb = b.facts();
        assert_eq!(fa.len(), fb.len());
        let diff: Vec<_> = fa.iter().zip(&fb).filter(|(x, y)| x != y).collect();
        assert_eq!(diff.len(), 1);
        assert_eq!(
            (diff[0].1.section.as_str(), diff[0].1.key.as_str()),
            ("Kernel", "release")
        );
        assert_eq!(diff[0].1.value, "6.1.0");
        let text = a.render_text();
        assert!(
            fa.iter()
                .all(|f| text.contains(&f.key) && text.contains(&f.value))
        );
    }

    #[test]
    fn summary_names_the_machine_in_one_line() {
        let mut h = Host {
            logical_cpus: 2,
            mem_total_bytes: Some(24 << 30),
            ..Default::default()
        };
        h.cpu.model = Some("AMD EPYC".into());
        h.kernel.name = Some("Linux".into());
        h.kernel.release = Some("6.18.44".into());
        h.virt.hypervisor = Some("KVM".into());
        assert_eq!(
            h.summary(),
            "AMD EPYC, 2 CPUs, 24.0 GiB, Linux 6.18.44, VM: KVM"
        );
        assert!(!Host::default().summary().contains('\n'));
    }

    #[test]
    fn kinds_are_shown_when_named_or_when_capacities_differ() {
        let place = |cpu, kind: Option<&str>, capacity| crate::host::CpuPlace {
            cpu,
            kind: kind.map(str::to_string),
            capacity,
            ..Default::default()
        };
        let t = |cpus| Topology {
            cpus,
            ..Default::default()
        };
        let x86 = t(vec![place(0, None, Some(1024)), place(1, None, Some(1024))]);
        assert_eq!(
            kinds_text(&x86),
            None,
            "one capacity and no kind says nothing"
        );
        let uneven = t(vec![place(0, None, Some(1024)), place(1, None, Some(512))]);
        assert_eq!(
            kinds_text(&uneven).as_deref(),
            Some("unknown kind (capacity 1024): CPU 0; unknown kind (capacity 512): CPU 1")
        );
        let hybrid = t(vec![
            place(0, Some("P-core"), None),
            place(1, Some("E-core"), None),
        ]);
        assert_eq!(
            kinds_text(&hybrid).as_deref(),
            Some("P-core: CPU 0; E-core: CPU 1")
        );
    }

    #[test]
    fn caches_read_like_lscpu() {
        let c = CacheInfo {
            level: 3,
            kind: "Unified".into(),
            size_bytes: 32 << 20,
            shared_cpus: Some("0-1".into()),
            instances: Some(1),
            line_bytes: Some(64),
            ways: Some(16),
            cpus: None,
        };
        assert_eq!(cache_name(&c), "L3");
        assert_eq!(
            cache_text(&c),
            "32 MiB × 1, shared by CPUs 0-1, 16-way, 64 B lines"
        );
        let d = CacheInfo {
            level: 1,
            kind: "Data".into(),
            size_bytes: 48 << 10,
            shared_cpus: Some("0".into()),
            ..Default::default()
        };
        assert_eq!(
            (cache_name(&d), cache_text(&d)),
            ("L1d".into(), "48 KiB".into())
        );
    }
}
