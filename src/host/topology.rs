//! The machine's shape: packages, dies, NUMA nodes, L3 groups, L2
//! clusters, cores, SMT threads and CPU kinds, as sysfs describes them,
//! for the CPUs this process may use.
//!
//! Why it exists: "across CPUs" is not one price. A cache line moves
//! between SMT siblings in ~10 ns, between cores of one L3 in ~30 ns,
//! between L3 groups in ~100 ns and between sockets in ~200 ns, so a
//! two-ended result means nothing without the place of its two CPUs. As
//! in hwloc and likwid, the shape lives in one model that every reader
//! asks ([`super::classes`] derives the placement classes from it); no
//! suite reads sysfs topology on its own.
//!
//! Reading never fails. A piece sysfs does not give (many ARM boards list
//! no caches, some guests no NUMA nodes) leaves its level unknown (`None`)
//! and is named in [`Topology::missing`]; a level nobody can see is never
//! a placement class. The CPUs this process may use are those of
//! `Cpus_allowed_list` in `/proc/self/status` (the affinity mask within
//! the cpuset, what `sched_getaffinity` returns), read under the same
//! root as sysfs so fixtures can hide CPUs too.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::parse;
use super::reader::{CPU, Reader};

/// Where sysfs describes NUMA nodes.
const NODE: &str = "sys/devices/system/node";

/// The machine's shape as this process sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Topology {
    /// The CPUs this process may use (online and in its affinity mask), in
    /// increasing order, each with its place.
    pub cpus: Vec<CpuPlace>,
    /// The online NUMA nodes in increasing id order, memory-only (CPU-less)
    /// ones included.
    pub nodes: Vec<NumaNode>,
    /// Online CPUs this process may not use (a cpuset or affinity mask).
    pub hidden_cpus: Vec<usize>,
    /// CPUs present but offline.
    pub offline_cpus: Vec<usize>,
    /// The sysfs pieces that were absent, so the levels they describe are
    /// unknown (`cpu*/cache`, `node*`...).
    pub missing: Vec<String>,
    /// The placement classes of this machine, each with its representative
    /// pair of CPUs (see [`super::classes`]).
    pub classes: Vec<ClassPair>,
}

/// One CPU and the groups it belongs to. A group is named by the lowest
/// online CPU in it (as sysfs lists its members), so names are stable and
/// need no counter; `None` is a level sysfs did not describe.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuPlace {
    /// The logical CPU number.
    pub cpu: usize,
    /// Package (socket) id, `physical_package_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<u32>,
    /// Die id within the package, `die_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub die: Option<u32>,
    /// The NUMA node whose `cpulist` holds this CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// The core: the lowest CPU among its SMT siblings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<usize>,
    /// The L2 group (cluster): the lowest CPU sharing its L2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2: Option<usize>,
    /// The L3 group (an AMD CCX, a whole Intel package): the lowest CPU
    /// sharing its L3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l3: Option<usize>,
    /// The kind of core on hybrid machines (`P-core`, `E-core` on x86; the
    /// core's name from its MIDR on arm, `Cortex-A76`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The scheduler's relative capacity, `cpu_capacity` (1024 the biggest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u32>,
}

/// A NUMA node: its CPUs, memory and the distances the firmware declares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NumaNode {
    /// Node id.
    pub id: u32,
    /// The CPUs of this node this process may use (empty for a memory-only node).
    pub cpus: Vec<usize>,
    /// Every online CPU of the node, usable or not.
    pub all_cpus: Vec<usize>,
    /// Memory of the node (`MemTotal` of its meminfo), bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Declared distances (ACPI SLIT, `node*/distance`) to every node of
    /// [`Topology::nodes`], in the same order; 10 is local.
    pub distances: Vec<u32>,
}

impl Topology {
    /// The numbers of the CPUs this process may use.
    pub fn cpu_numbers(&self) -> Vec<usize> {
        self.cpus.iter().map(|p| p.cpu).collect()
    }

    /// The place of `cpu`, if this process may use it.
    pub fn place(&self, cpu: usize) -> Option<&CpuPlace> {
        self.cpus
            .binary_search_by_key(&cpu, |p| p.cpu)
            .ok()
            .map(|i| &self.cpus[i])
    }

    /// The declared distance from node `a` to node `b`, when sysfs gave it.
    pub fn distance(&self, a: u32, b: u32) -> Option<u32> {
        let from = self.nodes.iter().find(|n| n.id == a)?;
        let j = self.nodes.iter().position(|n| n.id == b)?;
        from.distances.get(j).copied()
    }

    /// Whether the model knows anything (false for documents older than it).
    pub fn is_known(&self) -> bool {
        !self.cpus.is_empty()
    }
}

/// Formats a CPU list compactly, as sysfs does: `0-3,6`.
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

/// Everything read about the online CPUs: every one's place (for the
/// machine-wide counts of [`super::Cpu`]) and the model of those this
/// process may use.
pub(super) struct Shape {
    /// The place of every online CPU.
    pub all: Vec<CpuPlace>,
    /// The model restricted to the usable CPUs.
    pub topology: Topology,
}

/// Reads the shape of the `online` CPUs under the reader's root.
pub(super) fn read(r: &Reader, online: &[usize]) -> Shape {
    let mut missing = Vec::new();
    let nodes = read_nodes(r);
    if online.is_empty() {
        // Nothing is known, so nothing is missing.
    } else if nodes.is_empty() {
        missing.push("node* (no NUMA nodes)".to_string());
    } else if nodes.iter().all(|n| n.distances.is_empty()) {
        missing.push("node*/distance".to_string());
    }
    let node_of: BTreeMap<usize, u32> = nodes
        .iter()
        .flat_map(|n| n.all_cpus.iter().map(move |&c| (c, n.id)))
        .collect();
    let kinds = x86_kinds(r);

    let mut all: Vec<CpuPlace> = Vec::with_capacity(online.len());
    let mut core_ids = BTreeMap::new();
    let mut seen_siblings = false;
    let mut seen_package = false;
    let mut seen_caches = false;
    for &cpu in online {
        let t = format!("{CPU}/cpu{cpu}/topology");
        let id = |f: &str| {
            r.signed(&format!("{t}/{f}"))
                .and_then(|v| u32::try_from(v).ok())
        };
        let package = id("physical_package_id");
        let die = id("die_id");
        let siblings_core = lowest(r, &format!("{t}/thread_siblings_list"));
        seen_siblings |= siblings_core.is_some();
        seen_package |= package.is_some();
        // Without a siblings list, a core is its (package, die, core_id).
        let core = siblings_core.or_else(|| {
            let key = (package?, die, id("core_id")?);
            Some(*core_ids.entry(key).or_insert(cpu))
        });
        let (l2, l3, any_cache) = cache_groups(r, cpu);
        seen_caches |= any_cache;
        all.push(CpuPlace {
            cpu,
            package,
            die,
            node: node_of.get(&cpu).copied(),
            core,
            l2,
            l3,
            kind: kinds.get(&cpu).cloned().or_else(|| arm_kind(r, cpu)),
            capacity: r
                .int(&format!("{CPU}/cpu{cpu}/cpu_capacity"))
                .and_then(|c| u32::try_from(c).ok()),
        });
    }
    if !all.is_empty() {
        if !seen_package {
            missing.push("cpu*/topology/physical_package_id".to_string());
        }
        if !seen_siblings {
            missing.push("cpu*/topology/thread_siblings_list".to_string());
        }
        if !seen_caches {
            missing.push("cpu*/cache (no cache info)".to_string());
        } else {
            for (level, has) in [
                (2, all.iter().any(|p| p.l2.is_some())),
                (3, all.iter().any(|p| p.l3.is_some())),
            ] {
                if !has {
                    missing.push(format!("cpu*/cache level {level}"));
                }
            }
        }
    }

    let allowed: BTreeSet<usize> = r
        .text("proc/self/status")
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("Cpus_allowed_list:")
                    .and_then(parse::cpu_list)
            })
        })
        .map_or_else(
            || online.iter().copied().collect(),
            |v| v.into_iter().collect(),
        );
    let cpus: Vec<CpuPlace> = all
        .iter()
        .filter(|p| allowed.contains(&p.cpu))
        .cloned()
        .collect();
    let hidden_cpus = online
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    let present = r
        .text(&format!("{CPU}/present"))
        .and_then(|t| parse::cpu_list(&t))
        .unwrap_or_default();
    let offline_cpus = present
        .into_iter()
        .filter(|c| !online.contains(c))
        .collect();
    let nodes = nodes
        .into_iter()
        .map(|n| NumaNode {
            cpus: n
                .all_cpus
                .iter()
                .copied()
                .filter(|c| allowed.contains(c))
                .collect(),
            ..n
        })
        .collect();
    let topology = Topology {
        cpus,
        nodes,
        hidden_cpus,
        offline_cpus,
        missing,
        // The representative pairs of its placement classes: filled by the
        // caller (`classes` reads this model, not the other way round).
        classes: Vec::new(),
    };
    Shape { all, topology }
}

/// The lowest CPU of the list in file `rel`.
fn lowest(r: &Reader, rel: &str) -> Option<usize> {
    r.text(rel)
        .and_then(|t| parse::cpu_list(&t))
        .and_then(|l| l.into_iter().min())
}

/// The L2 and L3 groups of `cpu` (data or unified caches), and whether it
/// lists any cache at all.
fn cache_groups(r: &Reader, cpu: usize) -> (Option<usize>, Option<usize>, bool) {
    let dir = format!("{CPU}/cpu{cpu}/cache");
    let (mut l2, mut l3, mut any) = (None, None, false);
    for name in r.entries(&dir) {
        if !name.starts_with("index") {
            continue;
        }
        let d = format!("{dir}/{name}");
        let Some(level) = r.int(&format!("{d}/level")) else {
            continue;
        };
        any = true;
        if r.text(&format!("{d}/type")).as_deref() == Some("Instruction") {
            continue;
        }
        let group = lowest(r, &format!("{d}/shared_cpu_list"));
        match level {
            2 => l2 = l2.or(group),
            3 => l3 = l3.or(group),
            _ => {}
        }
    }
    (l2, l3, any)
}

/// The online NUMA nodes with their CPUs, memory and distances.
fn read_nodes(r: &Reader) -> Vec<NumaNode> {
    let ids = r
        .text(&format!("{NODE}/online"))
        .and_then(|t| parse::cpu_list(&t))
        .unwrap_or_else(|| {
            // No online list: the node directories that exist.
            r.entries(NODE)
                .iter()
                .filter_map(|n| n.strip_prefix("node")?.parse().ok())
                .collect()
        });
    ids.into_iter()
        .filter_map(|id| {
            let d = format!("{NODE}/node{id}");
            let memory_bytes = r.text(&format!("{d}/meminfo")).and_then(|t| {
                t.lines().find_map(|l| {
                    let (_, rest) = l.split_once("MemTotal:")?;
                    let kb: u64 = rest.split_whitespace().next()?.parse().ok()?;
                    Some(kb * 1024)
                })
            });
            Some(NumaNode {
                id: u32::try_from(id).ok()?,
                cpus: Vec::new(),
                all_cpus: r
                    .text(&format!("{d}/cpulist"))
                    .and_then(|t| parse::cpu_list(&t))
                    .map(|mut l| {
                        l.sort_unstable();
                        l
                    })
                    .unwrap_or_default(),
                memory_bytes,
                distances: r
                    .text(&format!("{d}/distance"))
                    .map(|t| t.split_whitespace().map_while(|w| w.parse().ok()).collect())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// x86 hybrid kinds: the CPUs of the `cpu_core` and `cpu_atom` PMUs.
fn x86_kinds(r: &Reader) -> BTreeMap<usize, String> {
    let mut out = BTreeMap::new();
    for (pmu, kind) in [("cpu_core", "P-core"), ("cpu_atom", "E-core")] {
        let cpus = r
            .text(&format!("sys/devices/{pmu}/cpus"))
            .and_then(|t| parse::cpu_list(&t))
            .unwrap_or_default();
        for c in cpus {
            out.insert(c, kind.to_string());
        }
    }
    out
}

/// An arm CPU's core from its MIDR (implementer bits 31-24, part 15-4).
fn arm_kind(r: &Reader, cpu: usize) -> Option<String> {
    let midr = r.int(&format!("{CPU}/cpu{cpu}/regs/identification/midr_el1"))?;
    let implementer = format!("{:#x}", (midr >> 24) & 0xff);
    let part = format!("{:#x}", (midr >> 4) & 0xfff);
    Some(
        parse::arm_part(&implementer, &part).map_or_else(|| format!("part {part}"), str::to_string),
    )
}

/// What two CPUs share at the closest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlaceClass {
    /// One CPU: both ends take turns on it.
    SameCpu,
    /// Two hardware threads of one core (SMT siblings).
    SameCore,
    /// Two cores sharing an L2 (a cluster).
    SameL2,
    /// Two cores sharing an L3 (a CCX on AMD, often a whole package).
    SameL3,
    /// One NUMA node, no shared cache.
    SameNode,
    /// One package (socket), another node or L3 group.
    SamePackage,
    /// Nothing but the machine: two packages.
    CrossPackage,
}

/// A class with the pair of CPUs chosen to stand for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassPair {
    /// The class.
    pub class: PlaceClass,
    /// The first CPU (the measuring end).
    pub a: usize,
    /// The second CPU (the peer; equal to `a` for `same-cpu`).
    pub b: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;
    use crate::host::fixtures::{self, Tree};

    fn host(tree: &Tree) -> Host {
        let dir = tree.write();
        Host::detect_at(dir.path())
    }

    fn place(t: &Topology, cpu: usize) -> &CpuPlace {
        t.place(cpu).unwrap()
    }

    #[test]
    fn epyc_has_ccx_l3_groups_and_nps_nodes() {
        let h = host(&fixtures::epyc(4));
        let t = &h.topology;
        assert_eq!(t.cpus.len(), 128);
        assert!(t.missing.is_empty(), "{:?}", t.missing);
        assert!(t.hidden_cpus.is_empty() && t.offline_cpus.is_empty());
        let p = place(t, 72);
        assert_eq!(
            (p.package, p.node, p.core, p.l2, p.l3),
            (Some(0), Some(1), Some(8), Some(8), Some(8))
        );
        assert_eq!(place(t, 100).package, Some(1));
        assert_eq!(t.nodes.len(), 8);
        assert_eq!(
            t.nodes[1].cpus,
            [8, 9, 10, 11, 12, 13, 14, 15, 72, 73, 74, 75, 76, 77, 78, 79]
        );
        assert_eq!(t.nodes[1].memory_bytes, Some(64 << 30));
        assert_eq!(t.distance(0, 0), Some(10));
        assert_eq!(t.distance(0, 3), Some(12));
        assert_eq!(t.distance(0, 4), Some(32));
        assert_eq!(t.distance(0, 9), None);
        // The machine-wide counts come from the same reading.
        assert_eq!(
            (
                h.cpu.physical_cores,
                h.cpu.sockets,
                h.cpu.threads_per_core,
                h.cpu.numa_nodes
            ),
            (Some(64), Some(2), Some(2), Some(8))
        );
    }

    #[test]
    fn xeon_snc_has_an_l3_over_two_nodes_and_a_memory_only_node() {
        let t = host(&fixtures::xeon_snc()).topology;
        assert_eq!(t.cpus.len(), 32);
        let (a, b) = (place(&t, 0), place(&t, 4));
        assert_eq!((a.l3, b.l3), (Some(0), Some(0)));
        assert_eq!((a.node, b.node), (Some(0), Some(1)));
        let cxl = &t.nodes[4];
        assert_eq!(cxl.id, 4);
        assert!(cxl.cpus.is_empty() && cxl.all_cpus.is_empty());
        assert_eq!(cxl.memory_bytes, Some(128 << 30));
        assert_eq!(t.distance(4, 0), Some(24));
        assert_eq!(t.distance(1, 2), Some(21));
        assert!(t.cpus.iter().all(|p| p.node != Some(4)));
    }

    #[test]
    fn hybrid_kinds_come_from_the_pmus() {
        let t = host(&fixtures::hybrid()).topology;
        let kinds: BTreeSet<_> = t.cpus.iter().map(|p| p.kind.clone()).collect();
        assert_eq!(kinds.len(), 2);
        assert_eq!(place(&t, 15).kind.as_deref(), Some("P-core"));
        assert_eq!(place(&t, 16).kind.as_deref(), Some("E-core"));
        assert_eq!(place(&t, 15).core, Some(14));
        assert_eq!((place(&t, 19).l2, place(&t, 20).l2), (Some(16), Some(20)));
        assert_eq!(place(&t, 21).core, Some(21));
    }

    #[test]
    fn an_arm_board_says_what_sysfs_lacks() {
        let h = host(&fixtures::arm_board());
        let t = &h.topology;
        assert_eq!(t.cpus.len(), 4);
        assert_eq!(
            t.missing,
            ["node* (no NUMA nodes)", "cpu*/cache (no cache info)"]
        );
        let p = place(t, 3);
        assert_eq!((p.l2, p.l3, p.node), (None, None, None));
        assert_eq!(p.kind.as_deref(), Some("Cortex-A72"));
        assert_eq!(p.capacity, Some(1024));
        assert!(t.nodes.is_empty());
    }

    #[test]
    fn big_little_kinds_come_from_midr_and_capacity() {
        let t = host(&fixtures::big_little()).topology;
        assert_eq!(place(&t, 0).kind.as_deref(), Some("Cortex-A53"));
        assert_eq!(place(&t, 5).kind.as_deref(), Some("Cortex-A72"));
        assert_eq!(
            (place(&t, 0).capacity, place(&t, 5).capacity),
            (Some(485), Some(1024))
        );
        assert_eq!(t.missing, ["node* (no NUMA nodes)", "cpu*/cache level 3"]);
    }

    #[test]
    fn a_64_core_arm_server_has_one_l3_and_a_core_per_cpu() {
        let t = host(&fixtures::arm_server()).topology;
        assert_eq!(t.cpus.len(), 64);
        assert!(
            t.cpus
                .iter()
                .all(|p| p.l3 == Some(0) && p.core == Some(p.cpu))
        );
        assert!(
            t.cpus
                .iter()
                .all(|p| p.kind.as_deref() == Some("Neoverse-N1"))
        );
        assert_eq!(t.nodes[0].memory_bytes, Some(256 << 30));
    }

    #[test]
    fn the_two_vcpu_guest_is_two_cores_under_one_l3() {
        let t = host(&fixtures::two_vcpu_guest()).topology;
        assert_eq!(t.cpu_numbers(), [0, 1]);
        assert_eq!((place(&t, 1).l2, place(&t, 1).l3), (Some(1), Some(0)));
        assert_eq!(t.nodes[0].distances, [10]);
    }

    #[test]
    fn offline_cpus_are_named_and_left_out() {
        let mut tree = fixtures::arm_board();
        tree.file("sys/devices/system/cpu/online", "0-2")
            .file("sys/devices/system/cpu/present", "0-3");
        let h = host(&tree);
        assert_eq!(h.topology.cpu_numbers(), [0, 1, 2]);
        assert_eq!(h.topology.offline_cpus, [3]);
        assert_eq!(h.logical_cpus, 3);
    }

    #[test]
    fn a_cpuset_hides_cpus_from_the_model_but_not_the_machine_counts() {
        let mut tree = fixtures::epyc(1);
        tree.allowed("0-31,64-95");
        let h = host(&tree);
        let t = &h.topology;
        assert_eq!(t.cpus.len(), 64);
        assert_eq!(t.hidden_cpus.len(), 64);
        assert_eq!(t.hidden_cpus[0], 32);
        assert!(t.nodes[1].cpus.is_empty());
        assert_eq!(t.nodes[1].all_cpus.len(), 64);
        assert_eq!(h.cpu.physical_cores, Some(64), "counts are machine-wide");
        assert_eq!(h.logical_cpus, 128);
    }

    #[test]
    fn an_empty_tree_is_an_empty_model() {
        let t = host(&Tree::default()).topology;
        assert_eq!(t, Topology::default());
        assert!(!t.is_known());
    }

    #[test]
    fn garbled_files_leave_levels_unknown() {
        let mut tree = Tree::default();
        tree.online("0-1")
            .file(
                "sys/devices/system/cpu/cpu0/topology/physical_package_id",
                "-1",
            )
            .file(
                "sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
                "x-y",
            )
            .file("sys/devices/system/cpu/cpu0/cache/index3/level", "3")
            .file(
                "sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list",
                "9-1",
            )
            .file("sys/devices/system/node/online", "0")
            .file("sys/devices/system/node/node0/distance", "ten")
            .file("proc/self/status", "Cpus_allowed_list:\tnonsense");
        let t = host(&tree).topology;
        assert_eq!(t.cpu_numbers(), [0, 1], "a garbled mask is all online CPUs");
        let p = place(&t, 0);
        assert_eq!((p.package, p.core, p.l3), (None, None, None));
        assert!(t.nodes[0].distances.is_empty());
        assert!(
            t.missing.contains(&"node*/distance".to_string()),
            "{:?}",
            t.missing
        );
    }

    #[test]
    fn declared_distances_are_read_in_node_order_up_to_a_garbled_word() {
        let t = host(&fixtures::two_socket_guest()).topology;
        assert_eq!(t.nodes[0].distances, [10, 20]);
        assert_eq!((t.distance(0, 1), t.distance(1, 1)), (Some(20), Some(10)));
        let mut tree = fixtures::two_socket_guest();
        tree.file("sys/devices/system/node/node1/distance", "21 1x 10\n");
        let t = host(&tree).topology;
        assert_eq!(t.nodes[1].distances, [21]);
        assert_eq!((t.distance(1, 0), t.distance(1, 1)), (Some(21), None));
        assert_eq!(t.distance(0, 7), None, "no such node");
    }

    #[test]
    fn this_machine_has_a_model_of_the_cpus_it_may_use() {
        let h = Host::detect();
        let t = &h.topology;
        assert!(!t.cpus.is_empty());
        assert!(t.cpus.len() <= h.logical_cpus);
        assert!(t.cpus.windows(2).all(|w| w[0].cpu < w[1].cpu));
        assert_eq!(
            t.classes.first().map(|c| c.class),
            Some(crate::host::PlaceClass::SameCpu)
        );
    }

    #[test]
    fn documents_without_a_topology_load_with_an_empty_one() {
        let h: Host = serde_json::from_str(r#"{"hostname":"old","logical_cpus":2}"#).unwrap();
        assert!(!h.topology.is_known());
        let t: Topology = serde_json::from_str(r#"{"cpus":[{"cpu":3}]}"#).unwrap();
        assert_eq!(t.cpus[0].cpu, 3);
        assert_eq!(t.cpus[0].l3, None);
    }

    #[test]
    fn the_model_round_trips_through_json_without_empty_fields() {
        let t = host(&fixtures::xeon_snc()).topology;
        let text = serde_json::to_string(&t).unwrap();
        assert!(
            !text.contains("\"kind\":null"),
            "unknown fields are left out"
        );
        assert!(text.contains("\"class\":\"same-node\""));
        let back: Topology = serde_json::from_str(&text).unwrap();
        assert_eq!(back, t);
    }
}
