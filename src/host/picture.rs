//! The topology as a compact picture in text, as lstopo draws it: packages,
//! dies, nodes, L3 groups and L2 clusters nested, alike siblings folded
//! into one line (`4 × L3 (32 MiB), each 8 cores × 2 threads`), then the
//! nodes without usable CPUs and the distances the firmware declares.

use std::collections::{BTreeMap, BTreeSet};

use super::Host;
use super::render::size_text;
use super::topology::{CpuPlace, Topology, cpu_list};
use crate::units::human_bytes;

/// One level of the picture.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Package,
    Die,
    Node,
    L3,
    L2,
}

impl Level {
    fn key(self, p: &CpuPlace) -> Option<usize> {
        match self {
            Level::Package => p.package.map(|v| v as usize),
            Level::Die => p.die.map(|v| v as usize),
            Level::Node => p.node.map(|v| v as usize),
            Level::L3 => p.l3,
            Level::L2 => p.l2,
        }
    }
}

/// A drawn group: its head, its summary when it is a leaf, its CPUs, the
/// lines under it and how many alike leaf siblings it stands for.
struct Item {
    head: String,
    leaf: Option<String>,
    cpus: Vec<usize>,
    lines: Vec<String>,
    count: usize,
}

/// Draws a model: the levels it shows, and whether CPUs differ in kind
/// or capacity (then every leaf says which).
struct Painter<'h> {
    host: &'h Host,
    levels: Vec<Level>,
    kinds: bool,
    capacities: bool,
}

impl Host {
    /// The placement classes with their pairs, then the topology picture:
    /// what `opcost env` shows of the machine's shape, for other outputs
    /// (the HTML report); empty when the model is unknown.
    pub fn topology_lines(&self) -> Vec<String> {
        let t = &self.topology;
        if !t.is_known() {
            return Vec::new();
        }
        let classes: Vec<String> = t
            .classes
            .iter()
            .map(|c| format!("{} ({}, {})", c.class.name(), c.a, c.b))
            .collect();
        let mut out = vec![format!("placement classes: {}", classes.join(", "))];
        out.extend(self.topology_picture());
        out
    }

    /// The topology picture, one line per group, indented by nesting.
    pub(super) fn topology_picture(&self) -> Vec<String> {
        let t = &self.topology;
        if !t.is_known() {
            return Vec::new();
        }
        let mut levels = vec![Level::Package];
        let dies: BTreeSet<_> = t.cpus.iter().map(|p| (p.package, p.die)).collect();
        let packages: BTreeSet<_> = t.cpus.iter().map(|p| p.package).collect();
        let mut middle = Vec::new();
        if dies.len() > packages.len() {
            middle.push(Level::Die);
        }
        middle.extend([Level::Node, Level::L3]);
        // The level with fewer groups holds the others: a node that spans
        // two dies (one node per socket, two dies in it) is drawn above
        // them, an L3 that spans two nodes (sub-NUMA clustering) above its
        // nodes; alike counts keep the order die, node, L3.
        let groups = |l: Level| {
            t.cpus
                .iter()
                .map(|p| (p.package, l.key(p)))
                .collect::<BTreeSet<_>>()
                .len()
        };
        middle.sort_by_key(|&l| groups(l));
        levels.extend(middle);
        let mut cores_per_l2: BTreeMap<usize, BTreeSet<Option<usize>>> = BTreeMap::new();
        for p in &t.cpus {
            if let Some(l2) = p.l2 {
                cores_per_l2.entry(l2).or_default().insert(p.core);
            }
        }
        if cores_per_l2.values().any(|c| c.len() > 1) {
            levels.push(Level::L2);
        }
        let distinct = |f: fn(&CpuPlace) -> Option<String>| {
            t.cpus.iter().map(f).collect::<BTreeSet<_>>().len() > 1
        };
        let painter = Painter {
            host: self,
            levels,
            kinds: distinct(|p| p.kind.clone()),
            capacities: distinct(|p| p.capacity.map(|c| c.to_string())),
        };
        let places: Vec<&CpuPlace> = t.cpus.iter().collect();
        let mut out = painter.draw(&places, 0, 0);
        out.extend(nodes_without_cpus(t));
        out.extend(distances(t));
        out
    }

    /// The one size of the data or unified caches of `level`, if one.
    fn one_cache_size(&self, level: u8) -> Option<u64> {
        let sizes: BTreeSet<u64> = self
            .caches
            .iter()
            .filter(|c| c.level == level && c.kind != "Instruction")
            .map(|c| c.size_bytes)
            .collect();
        (sizes.len() == 1).then(|| *sizes.first().unwrap())
    }
}

impl Painter<'_> {
    /// The lines of `places` from level `from` down, at `depth`.
    fn draw(&self, places: &[&CpuPlace], from: usize, depth: usize) -> Vec<String> {
        let Some(level) = (from..self.levels.len())
            .map(|i| (i, self.levels[i]))
            .find(|(_, l)| places.iter().any(|p| l.key(p).is_some()))
        else {
            return vec![format!("{}{}", "  ".repeat(depth), self.leaf_line(places))];
        };
        let (i, level) = level;
        let mut groups: BTreeMap<Option<usize>, Vec<&CpuPlace>> = BTreeMap::new();
        for p in places {
            groups.entry(level.key(p)).or_default().push(p);
        }
        let mut items: Vec<Item> = Vec::new();
        for (key, members) in groups {
            let head = self.head(level, key);
            let cpus: Vec<usize> = members.iter().map(|p| p.cpu).collect();
            let deeper = (i + 1..self.levels.len())
                .any(|j| members.iter().any(|p| self.levels[j].key(p).is_some()));
            let item = if deeper {
                Item {
                    head,
                    leaf: None,
                    cpus,
                    lines: self.draw(&members, i + 1, depth + 1),
                    count: 1,
                }
            } else {
                Item {
                    head,
                    leaf: Some(self.summary(&members)),
                    cpus,
                    lines: Vec::new(),
                    count: 1,
                }
            };
            match items.last_mut() {
                Some(last)
                    if item.leaf.is_some() && last.leaf == item.leaf && last.head == item.head =>
                {
                    last.cpus.extend(item.cpus);
                    last.count += 1;
                }
                _ => items.push(item),
            }
        }
        let pad = "  ".repeat(depth);
        let mut out = Vec::new();
        for mut item in items {
            item.cpus.sort_unstable();
            match &item.leaf {
                Some(summary) if item.count == 1 => out.push(format!(
                    "{pad}{}: {summary}, {}",
                    item.head,
                    cpus_text(&item.cpus)
                )),
                Some(summary) => out.push(format!(
                    "{pad}{} × {}, each {summary}, {}",
                    item.count,
                    item.head,
                    cpus_text(&item.cpus)
                )),
                None => {
                    out.push(format!("{pad}{}", item.head));
                    out.extend(item.lines);
                }
            }
        }
        out
    }

    /// A group's name: `Package 0`, `Node 1 (64 GiB)`, `L3 (32 MiB)`.
    fn head(&self, level: Level, key: Option<usize>) -> String {
        let id = key.map_or_else(|| "?".to_string(), |k| k.to_string());
        let size = |l: u8| {
            self.host
                .one_cache_size(l)
                .map(|b| format!(" ({})", size_text(b)))
                .unwrap_or_default()
        };
        match level {
            Level::Package => format!("Package {id}"),
            Level::Die => format!("Die {id}"),
            Level::Node => {
                let mem = self
                    .host
                    .topology
                    .nodes
                    .iter()
                    .find(|n| Some(n.id as usize) == key)
                    .and_then(|n| n.memory_bytes)
                    .map(memory_text)
                    .unwrap_or_default();
                format!("Node {id}{mem}")
            }
            Level::L3 if key.is_none() => "no L3".to_string(),
            Level::L2 if key.is_none() => "no L2".to_string(),
            Level::L3 => format!("L3{}", size(3)),
            Level::L2 => format!("L2{}", size(2)),
        }
    }

    /// The line of a group no level divides further.
    fn leaf_line(&self, places: &[&CpuPlace]) -> String {
        let cpus: Vec<usize> = places.iter().map(|p| p.cpu).collect();
        format!("{}, {}", self.summary(places), cpus_text(&cpus))
    }

    /// Cores and threads of a group (`8 cores × 2 threads`), with their
    /// kinds and capacities when the machine has several.
    fn summary(&self, places: &[&CpuPlace]) -> String {
        let mut threads: BTreeMap<usize, usize> = BTreeMap::new();
        for p in places {
            *threads.entry(p.core.unwrap_or(p.cpu)).or_default() += 1;
        }
        let cores = threads.len();
        let per: BTreeSet<usize> = threads.values().copied().collect();
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let mut text = match per.iter().collect::<Vec<_>>()[..] {
            [1] => plural(cores, "core"),
            [&t] => format!("{} × {t} threads", plural(cores, "core")),
            _ => format!(
                "{}, {}",
                plural(cores, "core"),
                plural(places.len(), "thread")
            ),
        };
        if self.kinds {
            let kinds: BTreeSet<&str> = places
                .iter()
                .map(|p| p.kind.as_deref().unwrap_or("?"))
                .collect();
            text.push_str(&format!(
                ", {}",
                kinds.into_iter().collect::<Vec<_>>().join("+")
            ));
        }
        if self.capacities {
            let caps: BTreeSet<String> = places
                .iter()
                .map(|p| p.capacity.map_or("?".to_string(), |c| c.to_string()))
                .collect();
            text.push_str(&format!(
                ", capacity {}",
                caps.into_iter().collect::<Vec<_>>().join("/")
            ));
        }
        text
    }
}

/// `CPU 3` or `CPUs 0-3,8`.
fn cpus_text(cpus: &[usize]) -> String {
    match cpus {
        [one] => format!("CPU {one}"),
        _ => format!("CPUs {}", cpu_list(cpus)),
    }
}

/// A node's memory, ` (64 GiB)` or ` (23.5 GiB)`: whole gibibytes when it
/// is some, three digits otherwise (a node's memory is seldom a round size).
fn memory_text(b: u64) -> String {
    let text = if b.is_multiple_of(1 << 30) {
        size_text(b)
    } else {
        human_bytes(b as f64)
    };
    format!(" ({text})")
}

/// Nodes this process has no CPU of: memory-only ones, and those a cpuset hides.
fn nodes_without_cpus(t: &Topology) -> Vec<String> {
    t.nodes
        .iter()
        .filter(|n| n.cpus.is_empty())
        .map(|n| {
            let mem = n.memory_bytes.map(memory_text).unwrap_or_default();
            if n.all_cpus.is_empty() {
                format!("Node {}{mem}: memory only, no CPUs", n.id)
            } else {
                format!(
                    "Node {}{mem}: no usable CPU ({} hidden)",
                    n.id,
                    cpus_text(&n.all_cpus)
                )
            }
        })
        .collect()
}

/// The declared node distances as a matrix, when there are several nodes.
fn distances(t: &Topology) -> Vec<String> {
    let n = t.nodes.len();
    if n < 2 || t.nodes.iter().any(|x| x.distances.len() != n) {
        return Vec::new();
    }
    let width = t
        .nodes
        .iter()
        .flat_map(|x| x.distances.iter().map(|d| d.to_string().len()))
        .chain(t.nodes.iter().map(|x| x.id.to_string().len()))
        .max()
        .unwrap_or(2);
    let cell = |s: String| format!(" {s:>width$}");
    let mut out = vec![format!(
        "node distances (declared):{}",
        t.nodes
            .iter()
            .map(|x| cell(x.id.to_string()))
            .collect::<String>()
    )];
    let label = "node distances (declared):".len();
    for x in &t.nodes {
        out.push(format!(
            "{:>label$}{}",
            x.id,
            x.distances
                .iter()
                .map(|d| cell(d.to_string()))
                .collect::<String>()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::host::Host;
    use crate::host::fixtures::{self, Tree};

    fn picture(tree: &Tree) -> Vec<String> {
        let dir = tree.write();
        Host::detect_at(dir.path()).topology_picture()
    }

    #[test]
    fn the_two_vcpu_guest_is_one_l3_of_two_cores() {
        assert_eq!(
            picture(&fixtures::two_vcpu_guest()),
            [
                "Package 0",
                "  Node 0 (8 GiB)",
                "    L3 (260 MiB): 2 cores, CPUs 0-1"
            ]
        );
    }

    #[test]
    fn node_memory_is_whole_gibibytes_or_three_digits() {
        let mut tree = fixtures::two_vcpu_guest();
        tree.file(
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal:       24683656 kB",
        );
        assert_eq!(picture(&tree)[1], "  Node 0 (23.5 GiB)");
    }

    #[test]
    fn epyc_folds_alike_ccxs_and_ends_with_the_distances() {
        let p = picture(&fixtures::epyc(2));
        assert_eq!(
            p[..7],
            [
                "Package 0",
                "  Node 0 (128 GiB)",
                "    2 × L3 (32 MiB), each 8 cores × 2 threads, CPUs 0-15,64-79",
                "  Node 1 (128 GiB)",
                "    2 × L3 (32 MiB), each 8 cores × 2 threads, CPUs 16-31,80-95",
                "Package 1",
                "  Node 2 (128 GiB)",
            ]
        );
        assert_eq!(
            p[p.len() - 5..],
            [
                "node distances (declared):  0  1  2  3",
                "                         0 10 12 32 32",
                "                         1 12 10 32 32",
                "                         2 32 32 10 12",
                "                         3 32 32 12 10",
            ]
        );
    }

    #[test]
    fn an_l3_that_spans_two_nodes_is_drawn_above_them() {
        // Sub-NUMA clustering: one L3 per socket, two nodes in it.
        let p = picture(&fixtures::xeon_snc());
        let l3 = p
            .iter()
            .position(|l| l.trim_start().starts_with("L3"))
            .unwrap();
        let node = p
            .iter()
            .position(|l| l.trim_start().starts_with("Node"))
            .unwrap();
        assert!(l3 < node, "{p:#?}");
        let indent = |l: &str| l.len() - l.trim_start().len();
        assert!(indent(&p[node]) > indent(&p[l3]), "{p:#?}");
    }

    #[test]
    fn the_lines_for_other_outputs_name_the_classes_first() {
        let dir = fixtures::two_vcpu_guest().write();
        let l = Host::detect_at(dir.path()).topology_lines();
        assert_eq!(l[0], "placement classes: same-cpu (0, 0), same-l3 (0, 1)");
        assert_eq!(l[1], "Package 0");
        assert!(Host::default().topology_lines().is_empty());
    }

    #[test]
    fn hybrid_shows_the_kinds_and_the_e_core_clusters() {
        assert_eq!(
            picture(&fixtures::hybrid()),
            [
                "Package 0",
                "  Node 0 (64 GiB)",
                "    L3 (30 MiB)",
                "      8 × L2, each 1 core × 2 threads, P-core, CPUs 0-15",
                "      2 × L2, each 4 cores, E-core, CPUs 16-23",
            ]
        );
    }

    #[test]
    fn big_little_shows_kinds_and_capacities() {
        assert_eq!(
            picture(&fixtures::big_little()),
            [
                "Package 0",
                "  L2 (512 KiB): 4 cores, Cortex-A53, capacity 485, CPUs 0-3",
                "  L2 (512 KiB): 2 cores, Cortex-A72, capacity 1024, CPUs 4-5",
            ]
        );
    }

    #[test]
    fn an_arm_board_without_caches_or_nodes_is_one_line() {
        assert_eq!(
            picture(&fixtures::arm_board()),
            ["Package 0: 4 cores, CPUs 0-3"]
        );
    }

    #[test]
    fn memory_only_and_hidden_nodes_are_named() {
        let p = picture(&fixtures::xeon_snc());
        assert!(
            p.contains(&"Node 4 (128 GiB): memory only, no CPUs".to_string()),
            "{p:#?}"
        );
        // One L3 per socket spans its two nodes: drawn above them.
        assert!(p.contains(&"  L3 (60 MiB)".to_string()), "{p:#?}");
        assert!(
            p.contains(&"    Node 0 (64 GiB): 4 cores × 2 threads, CPUs 0-3,16-19".to_string()),
            "{p:#?}"
        );
        let mut tree = fixtures::epyc(1);
        tree.allowed("0-31,64-95");
        let p = picture(&tree);
        assert!(
            p.contains(&"Node 1 (256 GiB): no usable CPU (CPUs 32-63,96-127 hidden)".to_string()),
            "{p:#?}"
        );
        assert!(!p.iter().any(|l| l == "Package 1"));
    }

    #[test]
    fn one_usable_cpu_is_named_in_the_singular() {
        let mut tree = fixtures::two_vcpu_guest();
        tree.allowed("1");
        assert_eq!(picture(&tree)[2], "    L3 (260 MiB): 1 core, CPU 1");
    }

    #[test]
    fn an_unknown_topology_draws_nothing() {
        assert!(Host::default().topology_picture().is_empty());
    }
}
