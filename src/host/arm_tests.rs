//! `opcost env` on documented arm machines: a Raspberry Pi 4 whose sysfs
//! lists no caches, a Raspberry Pi 5, a 64-core Graviton3 with one L3, and
//! an RK3588 with two kinds of core. Each is read from its /proc/cpuinfo
//! and sysfs tree ([`super::fixtures`]) and must name the CPU model, the
//! kinds and the caches as the hardware has them.

use super::Host;
use super::fixtures::{self, Tree};
use super::parse;

fn host(tree: &Tree) -> Host {
    let dir = tree.write();
    Host::detect_at(dir.path())
}

/// The value of the row `key` in section `section` of the text.
fn row(text: &str, section: &str, key: &str) -> String {
    let mut in_section = section.is_empty();
    for line in text.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            in_section = line == section;
            continue;
        }
        let t = line.trim_start();
        if in_section
            && let Some(rest) = t.strip_prefix(key)
            && rest.starts_with("  ")
        {
            return rest.trim().to_string();
        }
    }
    panic!("no row {key} in section {section} of\n{text}");
}

/// One cache: level, type, size in KiB, instances and the CPUs having it.
type CacheRow<'a> = (u8, &'a str, u64, Option<usize>, Option<&'a str>);

/// Every cache of `h` as a [`CacheRow`].
fn caches(h: &Host) -> Vec<CacheRow<'_>> {
    h.caches
        .iter()
        .map(|c| {
            (
                c.level,
                c.kind.as_str(),
                c.size_bytes >> 10,
                c.instances,
                c.cpus.as_deref(),
            )
        })
        .collect()
}

#[test]
fn a_raspberry_pi_4_without_caches_in_sysfs_says_so() {
    let h = host(&fixtures::rpi4());
    assert_eq!(h.cpu.model.as_deref(), Some("ARM Cortex-A72"));
    assert_eq!(h.cpu.vendor.as_deref(), Some("ARM"));
    assert_eq!(h.cpu.stepping.as_deref(), Some("r0p3"));
    assert_eq!(
        h.cpu.board.as_deref(),
        Some("Raspberry Pi 4 Model B Rev 1.4")
    );
    assert_eq!(h.logical_cpus, 4);
    assert!(h.caches.is_empty());
    assert_eq!(h.freq.max_mhz, Some(1800.0));
    let text = h.render_text();
    assert_eq!(row(&text, "CPU", "model"), "ARM Cortex-A72");
    assert_eq!(row(&text, "CPU", "board"), "Raspberry Pi 4 Model B Rev 1.4");
    assert_eq!(row(&text, "Topology", "CPU kinds"), "Cortex-A72: CPUs 0-3");
    assert!(row(&text, "Caches", "caches").starts_with("not in sysfs"));
    assert!(
        row(&text, "Topology", "not in sysfs").contains("cpu*/cache (no cache info)"),
        "{text}"
    );
    assert!(
        !text.contains("BCM2835"),
        "the Hardware line names no Pi's SoC"
    );
}

#[test]
fn a_raspberry_pi_5_has_its_caches_and_one_kind() {
    let h = host(&fixtures::rpi5());
    assert_eq!(h.cpu.model.as_deref(), Some("ARM Cortex-A76"));
    assert_eq!(h.cpu.stepping.as_deref(), Some("r4p1"));
    assert_eq!(
        h.cpu.board.as_deref(),
        Some("Raspberry Pi 5 Model B Rev 1.0")
    );
    assert_eq!(
        caches(&h),
        [
            (1, "Data", 64, Some(4), None),
            (1, "Instruction", 64, Some(4), None),
            (2, "Unified", 512, Some(4), None),
            (3, "Unified", 2048, Some(1), None),
        ]
    );
    let text = h.render_text();
    assert_eq!(row(&text, "Caches", "L3"), "2 MiB × 1, shared by CPUs 0-3");
    assert_eq!(row(&text, "Caches", "L2"), "512 KiB × 4");
    assert_eq!(row(&text, "Topology", "CPU kinds"), "Cortex-A76: CPUs 0-3");
    assert!(!text.contains("not in sysfs"), "{text}");
    assert_eq!(h.cpu_ghz(), Some(2.4));
}

#[test]
fn a_graviton3_is_64_neoverse_v1_cores_under_one_l3() {
    let h = host(&fixtures::graviton3());
    assert_eq!(h.cpu.model.as_deref(), Some("ARM Neoverse-V1"));
    assert_eq!(h.cpu.stepping.as_deref(), Some("r1p1"));
    assert_eq!(h.cpu.board, None, "a server has DMI, not a board line");
    assert!(h.cpu.flags.split(' ').any(|f| f == "sve"));
    assert_eq!(
        (
            h.logical_cpus,
            h.cpu.physical_cores,
            h.cpu.threads_per_core,
            h.cpu.numa_nodes
        ),
        (64, Some(64), Some(1), Some(1))
    );
    assert_eq!(
        caches(&h),
        [
            (1, "Data", 64, Some(64), None),
            (1, "Instruction", 64, Some(64), None),
            (2, "Unified", 1024, Some(64), None),
            (3, "Unified", 32768, Some(1), None),
        ]
    );
    let text = h.render_text();
    assert_eq!(
        row(&text, "Caches", "L3"),
        "32 MiB × 1, shared by CPUs 0-63"
    );
    assert_eq!(
        row(&text, "Topology", "CPU kinds"),
        "Neoverse-V1: CPUs 0-63"
    );
    assert_eq!(
        row(&text, "Virtualisation", "DMI vendor / product"),
        "Amazon EC2 / c7g.16xlarge"
    );
    assert!(text.contains("L3 (32 MiB): 64 cores, CPUs 0-63"), "{text}");
    let classes: Vec<_> = h.topology.classes.iter().map(|c| c.class.name()).collect();
    assert_eq!(classes, ["same-cpu", "same-l3"]);
}

#[test]
fn an_rk3588_names_both_kinds_with_their_capacities_and_caches() {
    let h = host(&fixtures::rk3588());
    assert_eq!(h.cpu.model.as_deref(), Some("ARM Cortex-A55 + Cortex-A76"));
    assert_eq!(h.cpu.board.as_deref(), Some("Radxa ROCK 5B"));
    let t = &h.topology;
    assert_eq!(t.place(0).unwrap().kind.as_deref(), Some("Cortex-A55"));
    assert_eq!(t.place(7).unwrap().kind.as_deref(), Some("Cortex-A76"));
    assert_eq!(
        (t.place(3).unwrap().capacity, t.place(4).unwrap().capacity),
        (Some(397), Some(1024))
    );
    assert_eq!(
        caches(&h),
        [
            (1, "Data", 32, Some(4), Some("0-3")),
            (1, "Data", 64, Some(4), Some("4-7")),
            (1, "Instruction", 32, Some(4), Some("0-3")),
            (1, "Instruction", 64, Some(4), Some("4-7")),
            (2, "Unified", 128, Some(4), Some("0-3")),
            (2, "Unified", 512, Some(4), Some("4-7")),
            (3, "Unified", 3072, Some(1), None),
        ]
    );
    let text = h.render_text();
    assert_eq!(row(&text, "CPU", "model"), "ARM Cortex-A55 + Cortex-A76");
    assert_eq!(
        row(&text, "Topology", "CPU kinds"),
        "Cortex-A55 (capacity 397): CPUs 0-3; Cortex-A76 (capacity 1024): CPUs 4-7"
    );
    let l2: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("L2 "))
        .map(str::trim)
        .collect();
    assert_eq!(
        l2,
        [
            "128 KiB × 4, on CPUs 0-3 (Cortex-A55)",
            "512 KiB × 4, on CPUs 4-7 (Cortex-A76)"
        ]
    );
    assert_eq!(row(&text, "Caches", "L3"), "3 MiB × 1, shared by CPUs 0-7");
}

#[test]
fn the_cpuinfo_of_each_fixture_agrees_with_its_midr_files() {
    for (name, tree) in [
        ("rpi4", fixtures::rpi4()),
        ("rpi5", fixtures::rpi5()),
        ("graviton3", fixtures::graviton3()),
        ("rk3588", fixtures::rk3588()),
    ] {
        let h = host(&tree);
        let kinds: Vec<String> = h
            .topology
            .cpus
            .iter()
            .filter_map(|p| p.kind.clone())
            .collect();
        assert_eq!(kinds.len(), h.logical_cpus, "{name}");
        let model = h.cpu.model.clone().unwrap();
        for k in kinds {
            assert!(model.contains(&k), "{name}: {model} lacks {k}");
        }
    }
}

#[test]
fn midr_parts_are_named_as_linux_names_them() {
    let name = |imp: &str, part: &str| parse::arm_part(imp, part);
    for (imp, part, want) in [
        ("0x41", "0xd4f", "Neoverse-V2"),
        ("0x41", "0xd49", "Neoverse-N2"),
        ("0x41", "0xd84", "Neoverse-V3"),
        ("0x41", "0xd8e", "Neoverse-N3"),
        ("0x41", "0xd40", "Neoverse-V1"),
        ("0x41", "0xd0c", "Neoverse-N1"),
        ("0x41", "0xd0b", "Cortex-A76"),
        ("0x41", "0xd41", "Cortex-A78"),
        ("0x41", "0xd47", "Cortex-A710"),
        ("0x41", "0xd4d", "Cortex-A715"),
        ("0x41", "0xd81", "Cortex-A720"),
        ("0x41", "0xd87", "Cortex-A725"),
        ("0x41", "0xd44", "Cortex-X1"),
        ("0x41", "0xd48", "Cortex-X2"),
        ("0x41", "0xd4e", "Cortex-X3"),
        ("0x41", "0xd82", "Cortex-X4"),
        ("0x41", "0xd85", "Cortex-X925"),
        ("0x41", "0xd03", "Cortex-A53"),
        ("0x41", "0xd05", "Cortex-A55"),
        ("0x41", "0xd46", "Cortex-A510"),
        ("0x41", "0xd80", "Cortex-A520"),
        ("0x61", "0x022", "M1 Icestorm"),
        ("0x61", "0x023", "M1 Firestorm"),
        ("0x61", "0x032", "M2 Blizzard"),
        ("0x61", "0x033", "M2 Avalanche"),
        ("0xc0", "0xac3", "AmpereOne"),
        ("0xc0", "0xac4", "AmpereOne (Ampere-1a)"),
        ("0x51", "0x001", "Oryon"),
        ("0x51", "0x805", "Kryo-4XX-Silver"),
        ("0x46", "0x001", "A64FX"),
        ("0x48", "0xd01", "TSV110"),
        ("0x4e", "0x004", "Carmel"),
        ("0x6d", "0xd49", "Azure Cobalt 100"),
    ] {
        assert_eq!(name(imp, part), Some(want), "{imp} {part}");
    }
    // A part number means nothing without its implementer.
    assert_eq!(name("0x61", "0xd0c"), None);
    assert_eq!(name("0x41", "0x022"), None);
}

#[test]
fn vendors_prefix_the_core_once() {
    let one = |imp: &str, part: &str| {
        parse::cpuinfo(&format!(
            "processor : 0\nCPU implementer : {imp}\nCPU part : {part}\n"
        ))
        .model_name
        .unwrap()
    };
    assert_eq!(one("0x61", "0x023"), "Apple M1 Firestorm");
    assert_eq!(one("0xc0", "0xac3"), "AmpereOne");
    assert_eq!(one("0x46", "0x001"), "Fujitsu A64FX");
    assert_eq!(one("0x48", "0xd01"), "HiSilicon TSV110");
    assert_eq!(one("0x4e", "0x003"), "NVIDIA Denver");
}

#[test]
fn a_32_bit_kernel_s_generic_name_gives_way_to_the_part() {
    let c = parse::cpuinfo(
        "processor\t: 0\nmodel name\t: ARMv7 Processor rev 3 (v7l)\nCPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\nHardware\t: BCM2835\nRevision\t: c03114\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n",
    );
    assert_eq!(c.model_name.as_deref(), Some("ARM Cortex-A72"));
    assert_eq!(c.board.as_deref(), Some("Raspberry Pi 4 Model B Rev 1.4"));
    // An unknown part keeps the kernel's own words.
    let c = parse::cpuinfo(
        "processor : 0\nmodel name : ARMv8 Processor\nCPU implementer : 0x41\nCPU part : 0xfff\n",
    );
    assert_eq!(c.model_name.as_deref(), Some("ARMv8 Processor"));
}
