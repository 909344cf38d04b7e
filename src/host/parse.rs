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
    /// The board, from the `Model` line some arm kernels add at the end
    /// (`Raspberry Pi 4 Model B Rev 1.4`).
    pub board: Option<String>,
    /// Every distinct arm core (implementer, part) in processor order: two
    /// or more on big.LITTLE machines.
    pub arm_parts: Vec<(String, String)>,
}

/// Parses `/proc/cpuinfo`: the first processor's identity, counts of all.
pub fn cpuinfo(text: &str) -> Cpuinfo {
    let mut out = Cpuinfo::default();
    let mut cores = std::collections::BTreeSet::new();
    let mut sockets = std::collections::BTreeSet::new();
    let mut first = true;
    let mut phys: Option<String> = None;
    let (mut variant, mut revision, mut implementer) = (None, None, None);
    // The implementer and part of the processor block being read.
    let (mut imp, mut part): (Option<String>, Option<String>) = (None, None);
    let mut arm_parts: Vec<(String, String)> = Vec::new();
    let mut flush = |imp: &mut Option<String>, part: &mut Option<String>| {
        if let (Some(i), Some(p)) = (imp.take(), part.take())
            && !arm_parts.contains(&(i.clone(), p.clone()))
        {
            arm_parts.push((i, p));
        }
    };
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
                flush(&mut imp, &mut part);
            }
            "CPU implementer" if !first => imp = non_empty(value),
            "CPU part" if !first => part = non_empty(value),
            "Model" => out.board = non_empty(value),
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
            "model" => out.model = non_empty(value),
            "CPU part" => {
                out.model = non_empty(value);
                part = non_empty(value);
            }
            "stepping" => out.stepping = non_empty(value),
            "CPU variant" => variant = parse_int(value),
            "CPU revision" => revision = parse_int(value),
            "CPU implementer" => {
                implementer = non_empty(value);
                imp = non_empty(value);
            }
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
    flush(&mut imp, &mut part);
    out.arm_parts = arm_parts;
    if let Some(imp) = implementer {
        let vendor = arm_implementer(&imp);
        // A 32-bit kernel names every core `ARMv7 Processor rev 3 (v7l)`:
        // the part number says which core it is.
        let generic = out
            .model_name
            .as_deref()
            .is_none_or(|m| m.starts_with("ARMv"));
        let part = out.model.clone().unwrap_or_else(|| "?".to_string());
        if generic && (out.model_name.is_none() || arm_part(&imp, &part).is_some()) {
            out.model_name = Some(arm_model_name(&vendor, &imp, &part, &out.arm_parts));
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

// The names of arm implementers and parts follow the Linux kernel's
// arch/arm64/include/asm/cputype.h (`ARM_CPU_IMP_*`, `*_CPU_PART_*`), which
// is where new cores appear first; keep both tables in step with it.

/// arm implementer codes (MIDR bits 31-24) and their names.
const ARM_IMPLEMENTERS: &[(u64, &str)] = &[
    (0x41, "ARM"),
    (0x42, "Broadcom"),
    (0x43, "Cavium"),
    (0x46, "Fujitsu"),
    (0x48, "HiSilicon"),
    (0x4e, "NVIDIA"),
    (0x50, "APM"),
    (0x51, "Qualcomm"),
    (0x61, "Apple"),
    (0x6d, "Microsoft"),
    (0xc0, "Ampere"),
];

/// (implementer, part number, core name) of the arm cores Linux names.
/// Qualcomm's Kryo 5XX and later and NVIDIA's Grace report ARM's own
/// parts (Cortex-A77/X1/A78/A55, Neoverse-V2), so they are named as those.
const ARM_PARTS: &[(u64, u64, &str)] = &[
    (0x41, 0xd00, "Foundation"),
    (0x41, 0xd03, "Cortex-A53"),
    (0x41, 0xd04, "Cortex-A35"),
    (0x41, 0xd05, "Cortex-A55"),
    (0x41, 0xd07, "Cortex-A57"),
    (0x41, 0xd08, "Cortex-A72"),
    (0x41, 0xd09, "Cortex-A73"),
    (0x41, 0xd0a, "Cortex-A75"),
    (0x41, 0xd0b, "Cortex-A76"),
    (0x41, 0xd0c, "Neoverse-N1"),
    (0x41, 0xd0d, "Cortex-A77"),
    (0x41, 0xd0e, "Cortex-A76AE"),
    (0x41, 0xd0f, "AEMv8"),
    (0x41, 0xd40, "Neoverse-V1"),
    (0x41, 0xd41, "Cortex-A78"),
    (0x41, 0xd42, "Cortex-A78AE"),
    (0x41, 0xd44, "Cortex-X1"),
    (0x41, 0xd46, "Cortex-A510"),
    (0x41, 0xd47, "Cortex-A710"),
    (0x41, 0xd48, "Cortex-X2"),
    (0x41, 0xd49, "Neoverse-N2"),
    (0x41, 0xd4b, "Cortex-A78C"),
    (0x41, 0xd4c, "Cortex-X1C"),
    (0x41, 0xd4d, "Cortex-A715"),
    (0x41, 0xd4e, "Cortex-X3"),
    (0x41, 0xd4f, "Neoverse-V2"),
    (0x41, 0xd80, "Cortex-A520"),
    (0x41, 0xd81, "Cortex-A720"),
    (0x41, 0xd82, "Cortex-X4"),
    (0x41, 0xd83, "Neoverse-V3AE"),
    (0x41, 0xd84, "Neoverse-V3"),
    (0x41, 0xd85, "Cortex-X925"),
    (0x41, 0xd87, "Cortex-A725"),
    (0x41, 0xd8e, "Neoverse-N3"),
    (0x42, 0x100, "Brahma-B53"),
    (0x42, 0x516, "Vulcan"),
    (0x43, 0x0a1, "ThunderX"),
    (0x43, 0x0a2, "ThunderX-81XX"),
    (0x43, 0x0a3, "ThunderX-83XX"),
    (0x43, 0x0af, "ThunderX2"),
    (0x43, 0x0b1, "OcteonTX2-98XX"),
    (0x43, 0x0b2, "OcteonTX2-96XX"),
    (0x43, 0x0b3, "OcteonTX2-95XX"),
    (0x43, 0x0b4, "OcteonTX2-95XXN"),
    (0x43, 0x0b5, "OcteonTX2-95XXMM"),
    (0x43, 0x0b6, "OcteonTX2-95XXO"),
    (0x46, 0x001, "A64FX"),
    (0x48, 0xd01, "TSV110"),
    (0x48, 0xd02, "HIP09"),
    (0x48, 0xd06, "HIP12"),
    (0x4e, 0x003, "Denver"),
    (0x4e, 0x004, "Carmel"),
    (0x50, 0x000, "X-Gene"),
    (0x51, 0x001, "Oryon"),
    (0x51, 0x200, "Kryo"),
    // cputype.h also calls 0x800 Falkor v1 (Centriq engineering samples);
    // the phones that report it are far more common.
    (0x51, 0x800, "Kryo-2XX-Gold"),
    (0x51, 0x801, "Kryo-2XX-Silver"),
    (0x51, 0x802, "Kryo-3XX-Gold"),
    (0x51, 0x803, "Kryo-3XX-Silver"),
    (0x51, 0x804, "Kryo-4XX-Gold"),
    (0x51, 0x805, "Kryo-4XX-Silver"),
    (0x51, 0xc00, "Falkor"),
    (0x61, 0x022, "M1 Icestorm"),
    (0x61, 0x023, "M1 Firestorm"),
    (0x61, 0x024, "M1 Pro Icestorm"),
    (0x61, 0x025, "M1 Pro Firestorm"),
    (0x61, 0x028, "M1 Max Icestorm"),
    (0x61, 0x029, "M1 Max Firestorm"),
    (0x61, 0x032, "M2 Blizzard"),
    (0x61, 0x033, "M2 Avalanche"),
    (0x61, 0x034, "M2 Pro Blizzard"),
    (0x61, 0x035, "M2 Pro Avalanche"),
    (0x61, 0x038, "M2 Max Blizzard"),
    (0x61, 0x039, "M2 Max Avalanche"),
    // Azure Cobalt 100: r0p0 of Neoverse-N2 under Microsoft's code.
    (0x6d, 0xd49, "Azure Cobalt 100"),
    (0xc0, 0xac3, "AmpereOne"),
    (0xc0, 0xac4, "AmpereOne (Ampere-1a)"),
];

/// The name of an arm `CPU implementer` code, or the code itself.
fn arm_implementer(code: &str) -> String {
    let known = parse_int(code)
        .and_then(|c| ARM_IMPLEMENTERS.iter().find(|(k, _)| *k == c))
        .map(|(_, name)| name.to_string());
    known.unwrap_or_else(|| format!("implementer {code}"))
}

/// The core name of an arm part number of that implementer (MIDR bits
/// 15-4), from [`ARM_PARTS`]; None for a part Linux does not name.
pub(super) fn arm_part(implementer: &str, part: &str) -> Option<&'static str> {
    let (imp, part) = (parse_int(implementer)?, parse_int(part)?);
    ARM_PARTS
        .iter()
        .find(|(i, p, _)| (*i, *p) == (imp, part))
        .map(|(_, _, name)| *name)
}

/// The core's full name: `ARM Neoverse-V1`, `Apple M1 Firestorm`; a name
/// that already starts with its vendor's (`AmpereOne`) is not doubled.
fn arm_core_name(vendor: &str, implementer: &str, part: &str) -> String {
    match arm_part(implementer, part) {
        Some(name) if name.starts_with(vendor) => name.to_string(),
        Some(name) => format!("{vendor} {name}"),
        None => format!("{vendor} part {part}"),
    }
}

/// The model of an arm machine: its one core (`ARM Cortex-A72`), or its
/// kinds joined, in the order of the CPUs (`ARM Cortex-A55 + Cortex-A76`).
fn arm_model_name(vendor: &str, imp: &str, part: &str, parts: &[(String, String)]) -> String {
    let first = arm_core_name(vendor, imp, part);
    let rest: Vec<String> = parts
        .iter()
        .filter(|(i, p)| (i.as_str(), p.as_str()) != (imp, part))
        .map(|(i, p)| {
            let v = arm_implementer(i);
            let name = arm_core_name(&v, i, p);
            // The same vendor is named once.
            match name.strip_prefix(&format!("{vendor} ")) {
                Some(short) => short.to_string(),
                None => name,
            }
        })
        .collect();
    std::iter::once(first)
        .chain(rest)
        .collect::<Vec<_>>()
        .join(" + ")
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

    /// One Neoverse-N1 core's block of an arm64 /proc/cpuinfo, after its
    /// `processor` line.
    const ARM64_CORE: &str = "\
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1
";

    /// An arm64 /proc/cpuinfo of two such cores.
    fn arm64() -> String {
        format!("processor\t: 0\n{ARM64_CORE}\nprocessor\t: 1\n{ARM64_CORE}")
    }

    /// The processor count, then vendor, model name, family, model and stepping.
    fn identity(c: &Cpuinfo) -> (usize, [Option<&str>; 5]) {
        let Cpuinfo {
            vendor,
            model_name,
            family,
            model,
            stepping,
            ..
        } = c;
        let fields = [vendor, model_name, family, model, stepping];
        (c.processors, fields.map(|f| f.as_deref()))
    }

    #[test]
    fn cpuinfo_x86_takes_the_first_processor_and_counts_all() {
        let c = cpuinfo(X86_VM);
        assert_eq!(
            identity(&c),
            (2, ["AuthenticAMD", "AMD EPYC", "26", "2", "1"].map(Some))
        );
        assert_eq!(c.microcode.as_deref(), Some("0x1000065"));
        assert_eq!(c.mhz, Some(2596.122));
        assert!(c.x86_flags);
        assert!(c.flags.iter().any(|f| f == "hypervisor"));
        assert_eq!((c.cores, c.sockets), (2, 1));
    }

    #[test]
    fn cpuinfo_arm64_names_the_core_from_its_part_number() {
        let c = cpuinfo(&arm64());
        assert_eq!(
            identity(&c),
            (
                2,
                ["ARM", "ARM Neoverse-N1", "8", "0xd0c", "r3p1"].map(Some)
            )
        );
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
