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

/// A CPU list as sysfs writes one (commas only; the reader takes ranges too).
pub fn list(cpus: impl IntoIterator<Item = usize>) -> String {
    cpus.into_iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
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

    /// A CPU's cache of `level` (index = level, an L1d at index0),
    /// shared by `shared`.
    pub fn cache(&mut self, cpu: usize, level: u8, size: &str, shared: &[usize]) -> &mut Tree {
        let d = format!("{CPU}/cpu{cpu}/cache/index{level}");
        self.file(&format!("{d}/level"), &level.to_string())
            .file(
                &format!("{d}/type"),
                if level == 1 { "Data" } else { "Unified" },
            )
            .file(&format!("{d}/size"), size)
            .file(
                &format!("{d}/shared_cpu_list"),
                &list(shared.iter().copied()),
            )
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

/// A 4-core arm board (Raspberry Pi 4, Cortex-A72): topology files and
/// MIDR, but no cache info and no NUMA node directory.
pub fn arm_board() -> Tree {
    let mut t = Tree::default();
    t.online("0-3");
    for cpu in 0..4 {
        t.cpu(cpu, 0, cpu as u32, &[cpu])
            .file(
                &format!("{CPU}/cpu{cpu}/regs/identification/midr_el1"),
                "0x00000000410fd083",
            )
            .file(&format!("{CPU}/cpu{cpu}/cpu_capacity"), "1024");
    }
    t
}

/// A 6-core arm big.LITTLE board (RK3399): four Cortex-A53 (CPUs 0-3,
/// capacity 485) sharing an L2, two Cortex-A72 (4-5, 1024) sharing
/// another; no L3, no NUMA node directory.
pub fn big_little() -> Tree {
    let mut t = Tree::default();
    t.online("0-5");
    for cpu in 0..6 {
        let (midr, cap, cluster): (&str, &str, Vec<usize>) = if cpu < 4 {
            ("0x410fd034", "485", (0..4).collect())
        } else {
            ("0x410fd082", "1024", (4..6).collect())
        };
        t.cpu(cpu, 0, cpu as u32, &[cpu])
            .cache(cpu, 1, "32K", &[cpu])
            .cache(cpu, 2, "512K", &cluster)
            .file(
                &format!("{CPU}/cpu{cpu}/regs/identification/midr_el1"),
                midr,
            )
            .file(&format!("{CPU}/cpu{cpu}/cpu_capacity"), cap);
    }
    t
}

/// A 64-core arm server (Ampere Altra Q64, Neoverse-N1): no SMT, an L2 per
/// core, one 32 MiB system-level cache listed as the L3 of all 64, one node.
pub fn arm_server() -> Tree {
    let mut t = Tree::default();
    t.online("0-63");
    let all: Vec<usize> = (0..64).collect();
    for cpu in 0..64 {
        t.cpu(cpu, 0, cpu as u32, &[cpu])
            .cache(cpu, 1, "64K", &[cpu])
            .cache(cpu, 2, "1024K", &[cpu])
            .cache(cpu, 3, "32768K", &all)
            .file(
                &format!("{CPU}/cpu{cpu}/regs/identification/midr_el1"),
                "0x413fd0c1",
            );
    }
    t.node(0, &all, 256, &[10]);
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
