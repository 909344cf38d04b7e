//! Sysfs trees of documented machine shapes, generated for the tests of
//! the topology model and its placement classes: machines no guest here
//! can imitate. Each tree holds only what the model reads (topology,
//! caches, nodes, CPU kinds, the affinity mask), laid out and numbered as
//! Linux does on that hardware.

use std::fs;

use tempfile::TempDir;

/// Files of a sysfs/procfs tree, written under a temp dir by [`Tree::write`].
#[derive(Default)]
pub struct Tree {
    files: Vec<(String, String)>,
}

/// A CPU list as sysfs writes one: sorted, runs as ranges (`0-3,8`).
pub fn list(cpus: impl IntoIterator<Item = usize>) -> String {
    let mut v: Vec<usize> = cpus.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    super::topology::cpu_list(&v)
}

const CPU: &str = "sys/devices/system/cpu";

impl Tree {
    /// Adds one file.
    pub fn file(&mut self, path: &str, text: &str) -> &mut Tree {
        self.files.push((path.to_string(), format!("{text}\n")));
        self
    }

    /// Online (and present) CPUs.
    pub fn online(&mut self, cpus: &str) -> &mut Tree {
        self.file(&format!("{CPU}/online"), cpus)
            .file(&format!("{CPU}/present"), cpus)
    }

    /// A CPU's topology files: package, die, core id and SMT siblings.
    pub fn cpu(&mut self, cpu: usize, package: u32, core_id: u32, siblings: &[usize]) -> &mut Tree {
        let t = format!("{CPU}/cpu{cpu}/topology");
        self.file(&format!("{t}/physical_package_id"), &package.to_string())
            .file(&format!("{t}/die_id"), "0")
            .file(&format!("{t}/core_id"), &core_id.to_string())
            .file(
                &format!("{t}/thread_siblings_list"),
                &list(siblings.iter().copied()),
            )
    }

    /// A CPU's cache of `level` (index = level, an L1d at index1),
    /// shared by `shared`.
    pub fn cache(&mut self, cpu: usize, level: u8, size: &str, shared: &[usize]) -> &mut Tree {
        let kind = if level == 1 { "Data" } else { "Unified" };
        self.cache_at(cpu, level, level, kind, size, shared)
    }

    /// A CPU's cache at `index`: its level, type (`Data`, `Instruction`,
    /// `Unified`), size and the CPUs sharing it.
    pub fn cache_at(
        &mut self,
        cpu: usize,
        index: u8,
        level: u8,
        kind: &str,
        size: &str,
        shared: &[usize],
    ) -> &mut Tree {
        let d = format!("{CPU}/cpu{cpu}/cache/index{index}");
        self.file(&format!("{d}/level"), &level.to_string())
            .file(&format!("{d}/type"), kind)
            .file(&format!("{d}/size"), size)
            .file(
                &format!("{d}/shared_cpu_list"),
                &list(shared.iter().copied()),
            )
    }

    /// An arm core's caches as arm64 numbers them: L1d at index0, L1i at
    /// index1, its L2 (shared by `l2.1`) at index2 and the L3, if any, at
    /// index3.
    pub fn arm_caches(
        &mut self,
        cpu: usize,
        l1: &str,
        l2: (&str, &[usize]),
        l3: Option<(&str, &[usize])>,
    ) -> &mut Tree {
        self.cache_at(cpu, 0, 1, "Data", l1, &[cpu])
            .cache_at(cpu, 1, 1, "Instruction", l1, &[cpu])
            .cache_at(cpu, 2, 2, "Unified", l2.0, l2.1);
        if let Some((size, shared)) = l3 {
            self.cache_at(cpu, 3, 3, "Unified", size, shared);
        }
        self
    }

    /// An arm CPU's identity register and, when given, its `cpu_capacity`.
    pub fn arm_cpu(&mut self, cpu: usize, midr: u32, capacity: Option<u32>) -> &mut Tree {
        self.file(
            &format!("{CPU}/cpu{cpu}/regs/identification/midr_el1"),
            &format!("{:#018x}", midr),
        );
        if let Some(c) = capacity {
            self.file(&format!("{CPU}/cpu{cpu}/cpu_capacity"), &c.to_string());
        }
        self
    }

    /// `/proc/cpuinfo` as arm64 kernels print it (arch/arm64/kernel/cpuinfo.c):
    /// one block per CPU, its identity taken from its MIDR, then `tail`
    /// (the `Revision`, `Serial` and `Model` lines a Raspberry Pi kernel adds).
    pub fn arm_cpuinfo(
        &mut self,
        midrs: &[u32],
        bogomips: &str,
        features: &str,
        tail: &str,
    ) -> &mut Tree {
        let mut text = String::new();
        for (cpu, m) in midrs.iter().enumerate() {
            text.push_str(&format!(
                "processor\t: {cpu}\nBogoMIPS\t: {bogomips}\nFeatures\t: {features}\n\
                 CPU implementer\t: {:#04x}\nCPU architecture: 8\nCPU variant\t: {:#x}\n\
                 CPU part\t: {:#05x}\nCPU revision\t: {}\n\n",
                m >> 24,
                (m >> 20) & 0xf,
                (m >> 4) & 0xfff,
                m & 0xf
            ));
        }
        text.push_str(tail);
        self.file("proc/cpuinfo", text.trim_end())
    }

    /// cpu0's cpufreq policy: limits in kHz, driver and governor.
    pub fn cpufreq(
        &mut self,
        min_khz: u32,
        max_khz: u32,
        driver: &str,
        governor: &str,
    ) -> &mut Tree {
        let d = format!("{CPU}/cpu0/cpufreq");
        self.file(&format!("{d}/cpuinfo_min_freq"), &min_khz.to_string())
            .file(&format!("{d}/cpuinfo_max_freq"), &max_khz.to_string())
            .file(&format!("{d}/scaling_cur_freq"), &max_khz.to_string())
            .file(&format!("{d}/scaling_driver"), driver)
            .file(&format!("{d}/scaling_governor"), governor)
    }

    /// An x86 server's cores with SMT 2, numbered as Linux does: CPUs
    /// 0..cores are the first threads, cores..2×cores their siblings (all
    /// online); `per_package` cores a package, `per_l3` an L3 group, an
    /// L1d and an L2 per core, of `sizes` (L1d, L2, L3).
    pub fn smt_server(
        &mut self,
        cores: usize,
        per_package: usize,
        per_l3: usize,
        sizes: [&str; 3],
    ) -> &mut Tree {
        self.online(&format!("0-{}", 2 * cores - 1));
        for core in 0..cores {
            let threads = [core, core + cores];
            let first = core / per_l3 * per_l3;
            let l3: Vec<usize> = (first..first + per_l3)
                .flat_map(|c| [c, c + cores])
                .collect();
            for cpu in threads {
                let (package, id) = (core / per_package, core % per_package);
                self.cpu(cpu, package as u32, id as u32, &threads)
                    .cache(cpu, 1, sizes[0], &threads)
                    .cache(cpu, 2, sizes[1], &threads)
                    .cache(cpu, 3, sizes[2], &l3);
            }
        }
        self
    }

    /// A NUMA node: CPUs, memory in GiB and declared distances.
    pub fn node(&mut self, id: usize, cpus: &[usize], gib: u64, distances: &[u32]) -> &mut Tree {
        let d = format!("sys/devices/system/node/node{id}");
        let dist = distances
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        self.file(&format!("{d}/cpulist"), &list(cpus.iter().copied()))
            .file(
                &format!("{d}/meminfo"),
                &format!("Node {id} MemTotal:       {} kB", gib << 20),
            )
            .file(&format!("{d}/distance"), &dist)
    }

    /// The affinity mask of the process reading the tree.
    pub fn allowed(&mut self, cpus: &str) -> &mut Tree {
        self.file(
            "proc/self/status",
            &format!("Name:\topcost\nCpus_allowed_list:\t{cpus}"),
        )
    }

    /// Writes the tree under a fresh temp dir, in memory (/dev/shm) where
    /// there is one: a tree is thousands of small files, and on a VM's disk
    /// writing them took seconds per machine.
    pub fn write(&self) -> TempDir {
        let dir = tempfile::Builder::new()
            .prefix("opcost-sysfs-")
            .tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        for (path, text) in &self.files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        dir
    }
}

/// A 2-socket AMD EPYC (Zen 3, 2 × 32 cores, SMT 2): CPUs 0-63 are the
/// first threads (package 0 holds cores 0-31), 64-127 their siblings; an
/// L3 per 8-core CCX, an L2 per core; `nps` nodes per socket (NPS1, 2 or
/// 4), distances 10 local, 12 same socket, 32 other socket.
pub fn epyc(nps: usize) -> Tree {
    let mut t = Tree::default();
    t.smt_server(64, 32, 8, ["32K", "512K", "32768K"]);
    let per_node = 32 / nps;
    let node_of = |core: usize| core / per_node;
    let nodes = 2 * nps;
    for n in 0..nodes {
        let cpus: Vec<usize> = (0..64)
            .filter(|&c| node_of(c) == n)
            .flat_map(|c| [c, c + 64])
            .collect();
        let dist: Vec<u32> = (0..nodes)
            .map(|m| match (m == n, m / nps == n / nps) {
                (true, _) => 10,
                (false, true) => 12,
                (false, false) => 32,
            })
            .collect();
        t.node(n, &cpus, (512 / nodes) as u64, &dist);
    }
    t
}

/// A 2-socket Xeon with sub-NUMA clustering (SNC2), 2 × 8 cores, SMT 2:
/// CPUs 0-15 first threads (package 0 holds cores 0-7), 16-31 siblings;
/// one L3 per package spanning its two nodes (as cpuid reports it), an L2
/// per core; nodes of 4 cores, distances 10, 12 same socket, 21 other;
/// and node 4, CXL memory without CPUs.
pub fn xeon_snc() -> Tree {
    let mut t = Tree::default();
    t.smt_server(16, 8, 8, ["48K", "2048K", "61440K"]);
    for n in 0..5 {
        let cpus: Vec<usize> = if n < 4 {
            (n * 4..n * 4 + 4).flat_map(|c| [c, c + 16]).collect()
        } else {
            Vec::new()
        };
        let dist: Vec<u32> = (0..5)
            .map(|m| match (n, m) {
                _ if n == m => 10,
                (4, _) | (_, 4) => 24,
                _ if n / 2 == m / 2 => 12,
                _ => 21,
            })
            .collect();
        t.node(n, &cpus, if n < 4 { 64 } else { 128 }, &dist);
    }
    t
}

/// An Intel hybrid desktop (Core i9-12900K): 8 P-cores with SMT (CPUs
/// 2k, 2k+1), 8 E-cores (CPUs 16-23) in two clusters of 4 sharing an L2,
/// one L3, one node; the kinds from the `cpu_core` / `cpu_atom` PMUs.
pub fn hybrid() -> Tree {
    let mut t = Tree::default();
    t.online("0-23");
    let all: Vec<usize> = (0..24).collect();
    for p in 0..8 {
        let threads = [2 * p, 2 * p + 1];
        for cpu in threads {
            t.cpu(cpu, 0, (4 * p) as u32, &threads)
                .cache(cpu, 1, "48K", &threads)
                .cache(cpu, 2, "1280K", &threads)
                .cache(cpu, 3, "30720K", &all);
        }
    }
    for e in 0..8 {
        let cpu = 16 + e;
        let cluster: Vec<usize> = (16 + e / 4 * 4..20 + e / 4 * 4).collect();
        t.cpu(cpu, 0, (32 + e) as u32, &[cpu])
            .cache(cpu, 1, "32K", &[cpu])
            .cache(cpu, 2, "2048K", &cluster)
            .cache(cpu, 3, "30720K", &all);
    }
    t.node(0, &all, 64, &[10])
        .file("sys/devices/cpu_core/cpus", "0-15")
        .file("sys/devices/cpu_atom/cpus", "16-23");
    t
}

/// An arm MIDR_EL1: implementer, variant, part and revision, with the
/// architecture field 0xf that every Armv8 core reports.
pub const fn midr(implementer: u32, variant: u32, part: u32, revision: u32) -> u32 {
    (implementer << 24) | (variant << 20) | (0xf << 16) | (part << 4) | revision
}

/// Cortex-A72 r0p3, the Raspberry Pi 4's BCM2711.
const RPI4_MIDR: u32 = midr(0x41, 0, 0xd08, 3);

/// A 4-core arm board (Raspberry Pi 4, Cortex-A72): topology files and
/// MIDR, but no cache info and no NUMA node directory.
pub fn arm_board() -> Tree {
    let mut t = Tree::default();
    t.online("0-3");
    for cpu in 0..4 {
        t.cpu(cpu, 0, cpu as u32, &[cpu])
            .arm_cpu(cpu, RPI4_MIDR, Some(1024));
    }
    t
}

/// A Raspberry Pi 4 Model B as Raspberry Pi OS shows it where the device
/// tree has no cache nodes: [`arm_board`] with its /proc/cpuinfo (four
/// Cortex-A72 r0p3 blocks, then `Hardware : BCM2835`, which every Pi has
/// said since Linux 4.9, the revision code c03114 of a 4 GB board rev 1.4,
/// a serial and the `Model` line), the device tree's model and cpufreq-dt
/// from 600 MHz to 1.8 GHz.
pub fn rpi4() -> Tree {
    let mut t = arm_board();
    t.arm_cpuinfo(
        &[RPI4_MIDR; 4],
        "108.00",
        "fp asimd evtstrm crc32 cpuid",
        "Hardware\t: BCM2835\nRevision\t: c03114\nSerial\t\t: 10000000e1f2a3b4\n\
         Model\t\t: Raspberry Pi 4 Model B Rev 1.4\n",
    )
    .file(
        "sys/firmware/devicetree/base/model",
        "Raspberry Pi 4 Model B Rev 1.4\0",
    )
    .cpufreq(600_000, 1_800_000, "cpufreq-dt", "ondemand");
    t
}

/// A Raspberry Pi 5 Model B (BCM2712: four Cortex-A76 r4p1 at up to
/// 2.4 GHz): 64 KiB L1d and L1i and a 512 KiB L2 per core, a 2 MiB L3
/// shared by all four; capacity 1024 each, one node of 8 GiB; its
/// /proc/cpuinfo ends with the revision code d04170 (8 GB, rev 1.0), a
/// serial and the `Model` line.
pub fn rpi5() -> Tree {
    const A76: u32 = midr(0x41, 4, 0xd0b, 1);
    let mut t = Tree::default();
    t.online("0-3");
    let all = [0, 1, 2, 3];
    for cpu in all {
        t.cpu(cpu, 0, cpu as u32, &[cpu])
            .arm_caches(cpu, "64K", ("512K", &[cpu]), Some(("2048K", &all)))
            .arm_cpu(cpu, A76, Some(1024));
    }
    t.node(0, &all, 8, &[10])
        .arm_cpuinfo(
            &[A76; 4],
            "108.00",
            "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp",
            "Revision\t: d04170\nSerial\t\t: 5e6f7a8b9c0d1e2f\nModel\t\t: Raspberry Pi 5 Model B Rev 1.0\n",
        )
        .file(
            "sys/firmware/devicetree/base/model",
            "Raspberry Pi 5 Model B Rev 1.0\0",
        )
        .cpufreq(1_500_000, 2_400_000, "cpufreq-dt", "ondemand");
    t
}

/// A 6-core arm big.LITTLE board (RK3399): four Cortex-A53 (CPUs 0-3,
/// capacity 485) sharing an L2, two Cortex-A72 (4-5, 1024) sharing
/// another; no L3, no NUMA node directory.
pub fn big_little() -> Tree {
    let mut t = Tree::default();
    t.online("0-5");
    for cpu in 0..6 {
        let (midr, cap, cluster): (u32, u32, Vec<usize>) = if cpu < 4 {
            (0x410fd034, 485, (0..4).collect())
        } else {
            (0x410fd082, 1024, (4..6).collect())
        };
        t.cpu(cpu, 0, cpu as u32, &[cpu])
            .cache(cpu, 1, "32K", &[cpu])
            .cache(cpu, 2, "512K", &cluster)
            .arm_cpu(cpu, midr, Some(cap));
    }
    t
}

/// A phone-class big.LITTLE SoC (Rockchip RK3588 on a Radxa ROCK 5B, as
/// a mainline kernel shows it): four Cortex-A55 r2p0 (CPUs 0-3, 32 KiB L1,
/// 128 KiB L2 each) and four Cortex-A76 r4p0 (4-7, 64 KiB L1, 512 KiB L2
/// each) in clusters 4-5 and 6-7, one 3 MiB L3 over all eight. Capacities
/// are the device tree's capacity-dmips-mhz (530 and 1024, rk3588-base.dtsi)
/// scaled by the clusters' top clocks, 1.8 and 2.4 GHz: 397 and 1024. No
/// board line in /proc/cpuinfo: the name is the device tree's.
pub fn rk3588() -> Tree {
    const A55: u32 = midr(0x41, 2, 0xd05, 0);
    const A76: u32 = midr(0x41, 4, 0xd0b, 0);
    let mut t = Tree::default();
    t.online("0-7");
    let all: Vec<usize> = (0..8).collect();
    let mut midrs = Vec::new();
    for cpu in 0..8 {
        let (midr, cap, l1, l2, core) = if cpu < 4 {
            (A55, 397, "32K", "128K", cpu)
        } else {
            (A76, 1024, "64K", "512K", cpu % 2)
        };
        t.cpu(cpu, 0, core as u32, &[cpu])
            .arm_caches(cpu, l1, (l2, &[cpu]), Some(("3072K", &all)))
            .arm_cpu(cpu, midr, Some(cap));
        midrs.push(midr);
    }
    t.node(0, &all, 16, &[10])
        .arm_cpuinfo(
            &midrs,
            "48.00",
            "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp",
            "",
        )
        .file("sys/firmware/devicetree/base/model", "Radxa ROCK 5B\0");
    t
}

/// A 64-core arm server, one core per CPU: `midr` on every CPU, an L1d
/// and L1i of `l1` and an L2 of `l2` per core, one system-level cache of
/// `l3` listed as the L3 of all 64, one node of `gib`.
fn arm_server_of(midr: u32, l1: &str, l2: &str, l3: &str, gib: u64) -> Tree {
    let mut t = Tree::default();
    t.online("0-63");
    let all: Vec<usize> = (0..64).collect();
    for cpu in 0..64 {
        t.cpu(cpu, 0, cpu as u32, &[cpu])
            .arm_caches(cpu, l1, (l2, &[cpu]), Some((l3, &all)))
            .arm_cpu(cpu, midr, None);
    }
    t.node(0, &all, gib, &[10]);
    t
}

/// A 64-core arm server (Ampere Altra Q64, Neoverse-N1 r3p1): no SMT, an
/// L2 per core, one 32 MiB system-level cache listed as the L3 of all 64,
/// one node.
pub fn arm_server() -> Tree {
    arm_server_of(midr(0x41, 3, 0xd0c, 1), "64K", "1024K", "32768K", 256)
}

/// An AWS Graviton3 instance (c7g.16xlarge: 64 Neoverse-V1 r1p1, no SMT,
/// 64 KiB L1d and L1i and 1 MiB L2 per core, one 32 MiB L3 shared by all,
/// 128 GiB in one node; no cpufreq; DMI names the instance type) with its
/// /proc/cpuinfo.
pub fn graviton3() -> Tree {
    const V1: u32 = midr(0x41, 1, 0xd40, 1);
    let mut t = arm_server_of(V1, "64K", "1024K", "32768K", 128);
    t.arm_cpuinfo(
        &[V1; 64],
        "2100.00",
        "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng",
        "",
    )
    .file("sys/class/dmi/id/sys_vendor", "Amazon EC2")
    .file("sys/class/dmi/id/product_name", "c7g.16xlarge");
    t
}

/// This project's test machine: a 2-vCPU KVM guest, one core per vCPU,
/// an L2 each and one L3 shared by both, one node.
pub fn two_vcpu_guest() -> Tree {
    let mut t = Tree::default();
    t.online("0-1");
    for cpu in 0..2 {
        t.cpu(cpu, 0, cpu as u32, &[cpu])
            .cache(cpu, 1, "48K", &[cpu])
            .cache(cpu, 2, "2048K", &[cpu])
            .cache(cpu, 3, "266240K", &[0, 1]);
    }
    t.node(0, &[0, 1], 8, &[10]);
    t
}

/// The emulated server of `scripts/guest.sh` (qemu `-smp
/// 8,sockets=2,cores=2,threads=2`, one `-numa node` per socket): CPUs
/// 4s + 2c + t, SMT siblings adjacent, an L2 per core, an L3 per
/// package, two nodes at the distances qemu declares (10, 20).
pub fn two_socket_guest() -> Tree {
    let mut t = Tree::default();
    t.online("0-7");
    for cpu in 0..8 {
        let (package, core) = (cpu / 4, cpu / 2 % 2);
        let siblings = [cpu / 2 * 2, cpu / 2 * 2 + 1];
        let l3: Vec<usize> = (package * 4..package * 4 + 4).collect();
        t.cpu(cpu, package as u32, core as u32, &siblings)
            .cache(cpu, 1, "32K", &siblings)
            .cache(cpu, 2, "1024K", &siblings)
            .cache(cpu, 3, "16384K", &l3);
    }
    t.node(0, &[0, 1, 2, 3], 1, &[10, 20])
        .node(1, &[4, 5, 6, 7], 1, &[20, 10]);
    t
}

/// A 4-socket shape (qemu `-smp 8,sockets=4,cores=2,threads=1`, one `-numa
/// node` per socket): CPUs 2s + c, an L2 per core, an L3 per package, a
/// node per package at the distances qemu declares (10, 20).
pub fn four_socket_guest() -> Tree {
    let mut t = Tree::default();
    t.online("0-7");
    for cpu in 0..8 {
        let package = cpu / 2;
        let l3 = [package * 2, package * 2 + 1];
        t.cpu(cpu, package as u32, (cpu % 2) as u32, &[cpu])
            .cache(cpu, 1, "32K", &[cpu])
            .cache(cpu, 2, "1024K", &[cpu])
            .cache(cpu, 3, "16384K", &l3);
    }
    for node in 0..4 {
        let distances: Vec<u32> = (0..4).map(|n| if n == node { 10 } else { 20 }).collect();
        t.node(node, &[node * 2, node * 2 + 1], 1, &distances);
    }
    t
}
