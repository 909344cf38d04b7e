//! Parsers of the text that procfs and sysfs hand out. They take text, not
//! paths, so each one is tested on fixed samples from real machines (x86,
//! arm64, VMs) without depending on the machine the tests run on.

use std::collections::BTreeMap;

/// What `/proc/cpuinfo` says about the CPUs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cpuinfo {
    /// Processor blocks (one per online logical CPU).
    pub processors: usize,
    /// `vendor_id` (x86) or the implementer's name (arm).
    pub vendor: Option<String>,
    /// `model name` (`cpu` on POWER), or a name built from the arm part number.
    pub model_name: Option<String>,
    /// `cpu family` (x86) or `CPU architecture` (arm).
    pub family: Option<String>,
    /// `model` (x86) or `CPU part` (arm).
    pub model: Option<String>,
    /// `stepping` (x86) or `rVpR` from `CPU variant`/`CPU revision` (arm).
    pub stepping: Option<String>,
    /// `microcode` revision.
    pub microcode: Option<String>,
    /// `cpu MHz` of the first processor.
    pub mhz: Option<f64>,
    /// `flags` (x86) or `Features` (arm).
    pub flags: Vec<String>,
    /// True when the flags came from an x86 `flags` line, where the
    /// `hypervisor` flag is meaningful.
    pub x86_flags: bool,
    /// Distinct (`physical id`, `core id`) pairs, when listed.
    pub cores: usize,
    /// Distinct `physical id`s, when listed.
    pub sockets: usize,
}

/// Parses `/proc/cpuinfo`: the first processor's identity, counts of all.
pub fn cpuinfo(text: &str) -> Cpuinfo {
    let mut out = Cpuinfo::default();
    let mut cores = std::collections::BTreeSet::new();
    let mut sockets = std::collections::BTreeSet::new();
    let mut first = true;
    let mut phys: Option<String> = None;
    let (mut variant, mut revision, mut implementer) = (None, None, None);
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => {
                if out.processors > 0 {
                    first = false;
                }
                out.processors += 1;
                phys = None;
            }
            "physical id" => {
                sockets.insert(value.to_string());
                phys = Some(value.to_string());
            }
            "core id" => {
                cores.insert((phys.clone().unwrap_or_default(), value.to_string()));
            }
            _ if !first => {}
            "vendor_id" => out.vendor = non_empty(value),
            "model name" | "Processor" | "cpu model" | "cpu" if out.model_name.is_none() => {
                out.model_name = non_empty(value)
            }
            "cpu family" | "CPU architecture" => out.family = non_empty(value),
            "model" | "CPU part" => out.model = non_empty(value),
            "stepping" => out.stepping = non_empty(value),
            "CPU variant" => variant = parse_int(value),
            "CPU revision" => revision = parse_int(value),
            "CPU implementer" => implementer = non_empty(value),
            "microcode" => out.microcode = non_empty(value),
            "cpu MHz" => out.mhz = value.parse().ok().filter(|m: &f64| *m > 0.0),
            "flags" => {
                out.flags = value.split_whitespace().map(str::to_string).collect();
                out.x86_flags = true;
            }
            "Features" | "features" => {
                out.flags = value.split_whitespace().map(str::to_string).collect()
            }
            _ => {}
        }
    }
    if let Some(imp) = implementer {
        let vendor = arm_implementer(&imp);
        if out.model_name.is_none() {
            let part = out.model.as_deref().unwrap_or("?");
            out.model_name = Some(match arm_part(&imp, part) {
                Some(name) => format!("{vendor} {name}"),
                None => format!("{vendor} part {part}"),
            });
        }
        out.vendor.get_or_insert(vendor);
    }
    if let (Some(v), Some(r)) = (variant, revision) {
        out.stepping.get_or_insert(format!("r{v}p{r}"));
    }
    out.cores = cores.len();
    out.sockets = sockets.len();
    out
}

/// The name of an arm `CPU implementer` code, or the code itself.
fn arm_implementer(code: &str) -> String {
    let name = match parse_int(code) {
        Some(0x41) => "ARM",
        Some(0x42) => "Broadcom",
        Some(0x43) => "Cavium",
        Some(0x46) => "Fujitsu",
        Some(0x48) => "HiSilicon",
        Some(0x4e) => "NVIDIA",
        Some(0x50) => "APM",
        Some(0x51) => "Qualcomm",
        Some(0x61) => "Apple",
        Some(0x6d) => "Microsoft",
        Some(0xc0) => "Ampere",
        _ => return format!("implementer {code}"),
    };
    name.to_string()
}

/// The core name of a common arm part number (the ones found in servers,
/// boards and laptops); None for the rest.
pub(super) fn arm_part(implementer: &str, part: &str) -> Option<&'static str> {
    if parse_int(implementer) != Some(0x41) {
        return None;
    }
    Some(match parse_int(part)? {
        0xd03 => "Cortex-A53",
        0xd04 => "Cortex-A35",
        0xd05 => "Cortex-A55",
        0xd07 => "Cortex-A57",
        0xd08 => "Cortex-A72",
        0xd09 => "Cortex-A73",
        0xd0a => "Cortex-A75",
        0xd0b => "Cortex-A76",
        0xd0c => "Neoverse-N1",
        0xd0d => "Cortex-A77",
        0xd40 => "Neoverse-V1",
        0xd41 => "Cortex-A78",
        0xd44 => "Cortex-X1",
        0xd46 => "Cortex-A510",
        0xd47 => "Cortex-A710",
        0xd48 => "Cortex-X2",
        0xd49 => "Neoverse-N2",
        0xd4f => "Neoverse-V2",
        0xd80 => "Cortex-A520",
        0xd81 => "Cortex-A720",
        0xd82 => "Cortex-X4",
        0xd84 => "Neoverse-V3",
        0xd8e => "Neoverse-N3",
        _ => return None,
    })
}

/// Parses a decimal or `0x` hexadecimal integer.
pub fn parse_int(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The `key: value kB` lines of `/proc/meminfo`, values in bytes (or plain
/// counts for the lines without a unit, such as `HugePages_Total`).
pub fn meminfo(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(n) = words.next().and_then(|w| w.parse::<u64>().ok()) else {
            continue;
        };
        let scale = match words.next() {
            Some("kB") => 1024,
            Some("mB") => 1 << 20,
            _ => 1,
        };
        out.insert(key.trim().to_string(), n.saturating_mul(scale));
    }
    out
}

/// The three load averages of `/proc/loadavg`.
pub fn loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|w| w.parse::<f64>().ok());
    let a = [it.next()??, it.next()??, it.next()??];
    a.iter().all(|v| v.is_finite() && *v >= 0.0).then_some(a)
}

/// A CPU list as sysfs writes it (`0-3,6,8-9`); None when malformed.
pub fn cpu_list(text: &str) -> Option<Vec<usize>> {
    let text = text.trim();
    let mut out = Vec::new();
    if text.is_empty() {
        return Some(out);
    }
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// A sysfs cache size (`48K`, `1024K`, `32M`, or plain bytes) in bytes.
pub fn size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, scale) = match t.char_indices().last()? {
        (i, 'K' | 'k') => (&t[..i], 1 << 10),
        (i, 'M' | 'm') => (&t[..i], 1 << 20),
        (i, 'G' | 'g') => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(scale)
}

/// The selected word of a sysfs choice file (`always [madvise] never` →
/// `madvise`); the whole trimmed text when nothing is bracketed.
pub fn selected(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let chosen = t
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')));
    Some(chosen.unwrap_or(t).to_string())
}

/// `PRETTY_NAME` of an os-release file, else `NAME VERSION_ID`.
pub fn os_release(text: &str) -> Option<String> {
    let mut fields = BTreeMap::new();
    for line in text.lines() {
        if let Some((k, v)) = line.trim().split_once('=') {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            fields.insert(k.trim(), v.replace("\\\"", "\"").replace("\\\\", "\\"));
        }
    }
    if let Some(p) = fields.get("PRETTY_NAME").filter(|p| !p.is_empty()) {
        return Some(p.clone());
    }
    let name = fields.get("NAME")?;
    Some(match fields.get("VERSION_ID") {
        Some(v) => format!("{name} {v}"),
        None => name.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86_VM: &str = "\
processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
stepping\t: 1
microcode\t: 0x1000065
cpu MHz\t\t: 2596.122
cache size\t: 1024 KB
physical id\t: 0
siblings\t: 2
core id\t\t: 0
cpu cores\t: 2
flags\t\t: fpu vme de pse tsc msr hypervisor avx2
bogomips\t: 5192.24

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
stepping\t: 1
microcode\t: 0x1000065
cpu MHz\t\t: 2400.000
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu vme de pse tsc msr hypervisor avx2
";

    const ARM64: &str = "\
processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1

processor\t: 1
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1
";

    #[test]
    fn cpuinfo_x86_takes_the_first_processor_and_counts_all() {
        let c = cpuinfo(X86_VM);
        assert_eq!(c.processors, 2);
        assert_eq!(c.vendor.as_deref(), Some("AuthenticAMD"));
        assert_eq!(c.model_name.as_deref(), Some("AMD EPYC"));
        assert_eq!(c.family.as_deref(), Some("26"));
        assert_eq!(c.model.as_deref(), Some("2"));
        assert_eq!(c.stepping.as_deref(), Some("1"));
        assert_eq!(c.microcode.as_deref(), Some("0x1000065"));
        assert_eq!(c.mhz, Some(2596.122));
        assert!(c.x86_flags);
        assert!(c.flags.iter().any(|f| f == "hypervisor"));
        assert_eq!((c.cores, c.sockets), (2, 1));
    }

    #[test]
    fn cpuinfo_arm64_names_the_core_from_its_part_number() {
        let c = cpuinfo(ARM64);
        assert_eq!(c.processors, 2);
        assert_eq!(c.vendor.as_deref(), Some("ARM"));
        assert_eq!(c.model_name.as_deref(), Some("ARM Neoverse-N1"));
        assert_eq!(c.family.as_deref(), Some("8"));
        assert_eq!(c.model.as_deref(), Some("0xd0c"));
        assert_eq!(c.stepping.as_deref(), Some("r3p1"));
        assert_eq!(c.mhz, None);
        assert!(!c.x86_flags);
        assert!(c.flags.iter().any(|f| f == "atomics"));
        assert_eq!((c.cores, c.sockets), (0, 0));
    }

    #[test]
    fn cpuinfo_unknown_arm_part_keeps_the_number() {
        let c = cpuinfo("processor : 0\nCPU implementer : 0x99\nCPU part : 0x123\n");
        assert_eq!(c.model_name.as_deref(), Some("implementer 0x99 part 0x123"));
    }

    #[test]
    fn cpuinfo_of_garbage_is_empty_not_a_panic() {
        assert_eq!(cpuinfo(""), Cpuinfo::default());
        let c = cpuinfo("no colon here\n:::\ncpu MHz : fast\n");
        assert_eq!(c.mhz, None);
    }

    #[test]
    fn meminfo_scales_kilobytes_and_keeps_counts() {
        let m = meminfo(
            "MemTotal:       24609140 kB\nMemAvailable:   20000000 kB\nHugePages_Total:       4\nHugepagesize:       2048 kB\nbroken line\n",
        );
        assert_eq!(m["MemTotal"], 24_609_140 * 1024);
        assert_eq!(m["MemAvailable"], 20_000_000 * 1024);
        assert_eq!(m["HugePages_Total"], 4);
        assert_eq!(m["Hugepagesize"], 2 << 20);
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn loadavg_reads_three_numbers() {
        assert_eq!(
            loadavg("0.52 0.58 1.50 2/345 12345\n"),
            Some([0.52, 0.58, 1.5])
        );
        assert_eq!(loadavg("0.52 x 1"), None);
        assert_eq!(loadavg(""), None);
    }

    #[test]
    fn cpu_lists_expand_ranges() {
        assert_eq!(cpu_list("0-3,6,8-9\n"), Some(vec![0, 1, 2, 3, 6, 8, 9]));
        assert_eq!(cpu_list("0"), Some(vec![0]));
        assert_eq!(cpu_list(""), Some(vec![]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("a-b"), None);
    }

    #[test]
    fn cache_sizes_have_suffixes() {
        assert_eq!(size("48K\n"), Some(48 * 1024));
        assert_eq!(size("32768K"), Some(32 << 20));
        assert_eq!(size("2M"), Some(2 << 20));
        assert_eq!(size("512"), Some(512));
        assert_eq!(size("K"), None);
        assert_eq!(size(""), None);
    }

    #[test]
    fn selected_choice_is_the_bracketed_word() {
        assert_eq!(
            selected("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            selected("[always] within_size advise never deny force").as_deref(),
            Some("always")
        );
        assert_eq!(selected("tsc\n").as_deref(), Some("tsc"));
        assert_eq!(selected("  \n"), None);
    }

    #[test]
    fn os_release_prefers_pretty_name() {
        let t = "NAME=\"Debian GNU/Linux\"\nVERSION_ID=\"13\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n";
        assert_eq!(
            os_release(t).as_deref(),
            Some("Debian GNU/Linux 13 (trixie)")
        );
        assert_eq!(
            os_release("NAME=Alpine\nVERSION_ID=3.20.1\n").as_deref(),
            Some("Alpine 3.20.1")
        );
        assert_eq!(os_release("# nothing\n"), None);
    }

    #[test]
    fn integers_in_decimal_and_hex() {
        assert_eq!(parse_int("0x41"), Some(0x41));
        assert_eq!(parse_int(" 8 "), Some(8));
        assert_eq!(parse_int("zz"), None);
    }
}
