//! Placement classes: for two CPUs, the closest thing they share, from
//! one vocabulary (`same-cpu`, `same-core`, `same-l2`, `same-l3`,
//! `same-node`, `same-package`, `cross-package`).
//!
//! Why: a two-ended benchmark on "two CPUs" of a 64-core server could be
//! on SMT siblings or on two sockets, a 10x difference; naming the class
//! makes one server's figure comparable with another's, and sampling one
//! pair per class prices every level without measuring all N² pairs.
//!
//! The closest shared level is the smallest group holding both CPUs,
//! counted among the CPUs this process may use; when two levels hold the
//! same CPUs (one L3 per node, one node per package) the earlier name in
//! the vocabulary wins. So levels that do not nest are still ordered by
//! what they hold: on a Xeon with sub-NUMA clustering, where one L3 spans
//! two nodes, two CPUs of one node are `same-node` and two of the other
//! node are `same-l3`. A level the machine lacks, or that separates
//! nothing here, is no class: a 2-vCPU guest with one L3 has `same-cpu`
//! and `same-l3`.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::bail;

// The vocabulary lives with the model that records it; its names, parsing
// and the classifying are here.
pub use super::topology::{ClassPair, PlaceClass};
use super::topology::{CpuPlace, Topology};

impl PlaceClass {
    /// Every class, closest first.
    pub const ALL: [PlaceClass; 7] = [
        PlaceClass::SameCpu,
        PlaceClass::SameCore,
        PlaceClass::SameL2,
        PlaceClass::SameL3,
        PlaceClass::SameNode,
        PlaceClass::SamePackage,
        PlaceClass::CrossPackage,
    ];

    /// The class's name in the vocabulary (`same-l3`).
    pub fn name(self) -> &'static str {
        match self {
            PlaceClass::SameCpu => "same-cpu",
            PlaceClass::SameCore => "same-core",
            PlaceClass::SameL2 => "same-l2",
            PlaceClass::SameL3 => "same-l3",
            PlaceClass::SameNode => "same-node",
            PlaceClass::SamePackage => "same-package",
            PlaceClass::CrossPackage => "cross-package",
        }
    }

    /// What the class means, in words.
    pub fn describe(self) -> &'static str {
        match self {
            PlaceClass::SameCpu => "one CPU",
            PlaceClass::SameCore => "SMT siblings of one core",
            PlaceClass::SameL2 => "two cores sharing an L2",
            PlaceClass::SameL3 => "two cores sharing an L3",
            PlaceClass::SameNode => "one NUMA node, no shared cache",
            PlaceClass::SamePackage => {
                "one package, two NUMA nodes (or two L3s where nodes are unknown)"
            }
            PlaceClass::CrossPackage => "two packages",
        }
    }

    /// The class named `name`; an error listing the vocabulary otherwise.
    pub fn parse(name: &str) -> anyhow::Result<PlaceClass> {
        match PlaceClass::ALL.into_iter().find(|c| c.name() == name) {
            Some(c) => Ok(c),
            None => bail!(
                "unknown placement class `{name}`; the classes are {}",
                names(&PlaceClass::ALL)
            ),
        }
    }

    /// The group of this level a CPU belongs to; None when unknown.
    fn group(self, p: &CpuPlace) -> Option<usize> {
        match self {
            PlaceClass::SameCpu => Some(p.cpu),
            PlaceClass::SameCore => p.core,
            PlaceClass::SameL2 => p.l2,
            PlaceClass::SameL3 => p.l3,
            PlaceClass::SameNode => p.node.map(|n| n as usize),
            PlaceClass::SamePackage => p.package.map(|n| n as usize),
            PlaceClass::CrossPackage => Some(0),
        }
    }
}

impl fmt::Display for PlaceClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The names of `classes`, comma-separated.
fn names(classes: &[PlaceClass]) -> String {
    classes
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Classifies pairs of one topology: the size of every group, per level.
struct Classifier {
    sizes: Vec<BTreeMap<usize, usize>>,
}

impl Classifier {
    fn new(topology: &Topology) -> Classifier {
        let sizes = PlaceClass::ALL
            .iter()
            .map(|class| {
                let mut m = BTreeMap::new();
                for p in &topology.cpus {
                    if let Some(g) = class.group(p) {
                        *m.entry(g).or_insert(0) += 1;
                    }
                }
                m
            })
            .collect();
        Classifier { sizes }
    }

    /// The class of two places: the smallest group they share.
    fn class(&self, a: &CpuPlace, b: &CpuPlace) -> PlaceClass {
        PlaceClass::ALL
            .iter()
            .enumerate()
            .filter_map(|(i, class)| {
                let g = class.group(a)?;
                (class.group(b) == Some(g)).then(|| (self.sizes[i][&g], *class))
            })
            .min()
            .map_or(PlaceClass::CrossPackage, |(_, c)| c)
    }
}

impl Topology {
    /// The class of CPUs `a` and `b`; None when this process may not use one of them.
    pub fn class_of(&self, a: usize, b: usize) -> Option<PlaceClass> {
        let (pa, pb) = (self.place(a)?, self.place(b)?);
        Some(Classifier::new(self).class(pa, pb))
    }

    /// The classes this machine has, closest first.
    pub fn class_names(&self) -> Vec<PlaceClass> {
        self.classes.iter().map(|c| c.class).collect()
    }

    /// The representative pair of `class`; an error naming the classes this
    /// machine has when it lacks this one.
    pub fn pair(&self, class: PlaceClass) -> anyhow::Result<ClassPair> {
        match self.classes.iter().find(|c| c.class == class) {
            Some(p) => Ok(*p),
            None => bail!(
                "placement class {class} does not exist on this machine ({} usable CPU{}); it has {}",
                self.cpus.len(),
                if self.cpus.len() == 1 { "" } else { "s" },
                if self.classes.is_empty() {
                    "none (no CPU is known)".to_string()
                } else {
                    names(&self.class_names())
                }
            ),
        }
    }
}

/// The classes of `topology`, closest first, each with its pair: the
/// first pair (a, b), a ≤ b, in increasing order of a then b, of that
/// class; for the usual numbering a is the first usable CPU.
pub fn representatives(topology: &Topology) -> Vec<ClassPair> {
    let k = Classifier::new(topology);
    let mut found: BTreeMap<PlaceClass, ClassPair> = BTreeMap::new();
    let cpus = &topology.cpus;
    for (i, a) in cpus.iter().enumerate() {
        for b in &cpus[i..] {
            let class = k.class(a, b);
            found.entry(class).or_insert(ClassPair {
                class,
                a: a.cpu,
                b: b.cpu,
            });
        }
        if found.len() == PlaceClass::ALL.len() {
            break;
        }
    }
    found.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::PlaceClass::*;
    use super::*;
    use crate::host::Host;
    use crate::host::fixtures::{self, Tree};

    fn topology(tree: &Tree) -> Topology {
        let dir = tree.write();
        Host::detect_at(dir.path()).topology
    }

    /// The representative pairs as (class, a, b).
    fn pairs(t: &Topology) -> Vec<(PlaceClass, usize, usize)> {
        t.classes.iter().map(|p| (p.class, p.a, p.b)).collect()
    }

    /// Checks the class of every pair of usable CPUs against `expect`, an
    /// oracle written from the machine's numbering rather than from sysfs.
    fn every_pair(t: &Topology, expect: impl Fn(usize, usize) -> PlaceClass) {
        let k = Classifier::new(t);
        for a in &t.cpus {
            for b in &t.cpus {
                assert_eq!(
                    k.class(a, b),
                    expect(a.cpu, b.cpu),
                    "CPUs {} and {}",
                    a.cpu,
                    b.cpu
                );
            }
        }
    }

    #[test]
    fn epyc_classes_follow_the_nps_setting() {
        // Core c's threads are c and c+64; CCX c/8; package c/32.
        let core = |c: usize| c % 64;
        for (nps, expected) in [
            (
                1,
                vec![
                    (SameCpu, 0, 0),
                    (SameCore, 0, 64),
                    (SameL3, 0, 1),
                    (SameNode, 0, 8),
                    (CrossPackage, 0, 32),
                ],
            ),
            (
                2,
                vec![
                    (SameCpu, 0, 0),
                    (SameCore, 0, 64),
                    (SameL3, 0, 1),
                    (SameNode, 0, 8),
                    (SamePackage, 0, 16),
                    (CrossPackage, 0, 32),
                ],
            ),
            (
                4,
                vec![
                    (SameCpu, 0, 0),
                    (SameCore, 0, 64),
                    (SameL3, 0, 1),
                    (SamePackage, 0, 8),
                    (CrossPackage, 0, 32),
                ],
            ),
        ] {
            let t = topology(&fixtures::epyc(nps));
            assert_eq!(pairs(&t), expected, "NPS{nps}");
            let per_node = 32 / nps;
            every_pair(&t, |a, b| {
                let (ca, cb) = (core(a), core(b));
                if a == b {
                    SameCpu
                } else if ca == cb {
                    SameCore
                } else if ca / 8 == cb / 8 {
                    SameL3
                } else if ca / per_node == cb / per_node {
                    SameNode
                } else if ca / 32 == cb / 32 {
                    SamePackage
                } else {
                    CrossPackage
                }
            });
        }
    }

    #[test]
    fn xeon_snc_puts_the_node_inside_the_l3_it_spans() {
        let t = topology(&fixtures::xeon_snc());
        assert_eq!(
            pairs(&t),
            [
                (SameCpu, 0, 0),
                (SameCore, 0, 16),
                (SameL3, 0, 4),
                (SameNode, 0, 1),
                (CrossPackage, 0, 8),
            ]
        );
        let core = |c: usize| c % 16;
        every_pair(&t, |a, b| {
            let (ca, cb) = (core(a), core(b));
            match () {
                _ if a == b => SameCpu,
                _ if ca == cb => SameCore,
                _ if ca / 4 == cb / 4 => SameNode,
                _ if ca / 8 == cb / 8 => SameL3,
                _ => CrossPackage,
            }
        });
    }

    #[test]
    fn hybrid_desktop_has_smt_p_cores_and_e_core_clusters() {
        let t = topology(&fixtures::hybrid());
        assert_eq!(
            pairs(&t),
            [
                (SameCpu, 0, 0),
                (SameCore, 0, 1),
                (SameL2, 16, 17),
                (SameL3, 0, 2),
            ]
        );
        // P-core p holds CPUs 2p and 2p+1; E-cluster k holds 16+4k..20+4k.
        let core = |c: usize| if c < 16 { c / 2 } else { c };
        let l2 = |c: usize| if c < 16 { c / 2 } else { 100 + (c - 16) / 4 };
        every_pair(&t, |a, b| match () {
            _ if a == b => SameCpu,
            _ if core(a) == core(b) => SameCore,
            _ if l2(a) == l2(b) => SameL2,
            _ => SameL3,
        });
    }

    #[test]
    fn arm_board_without_caches_or_nodes_has_the_package() {
        let t = topology(&fixtures::arm_board());
        assert_eq!(pairs(&t), [(SameCpu, 0, 0), (SamePackage, 0, 1)]);
        every_pair(&t, |a, b| if a == b { SameCpu } else { SamePackage });
    }

    #[test]
    fn big_little_clusters_share_their_l2() {
        let t = topology(&fixtures::big_little());
        assert_eq!(
            pairs(&t),
            [(SameCpu, 0, 0), (SameL2, 0, 1), (SamePackage, 0, 4)]
        );
        every_pair(&t, |a, b| match () {
            _ if a == b => SameCpu,
            _ if (a < 4) == (b < 4) => SameL2,
            _ => SamePackage,
        });
    }

    #[test]
    fn arm_server_with_one_l3_has_two_classes() {
        let t = topology(&fixtures::arm_server());
        assert_eq!(pairs(&t), [(SameCpu, 0, 0), (SameL3, 0, 1)]);
        every_pair(&t, |a, b| if a == b { SameCpu } else { SameL3 });
    }

    #[test]
    fn the_two_vcpu_guest_has_the_same_cpu_and_the_same_l3() {
        let t = topology(&fixtures::two_vcpu_guest());
        assert_eq!(pairs(&t), [(SameCpu, 0, 0), (SameL3, 0, 1)]);
        assert_eq!(t.class_of(0, 1), Some(SameL3));
        assert_eq!(t.class_of(1, 1), Some(SameCpu));
        assert_eq!(t.class_of(0, 2), None, "CPU 2 is not in the model");
    }

    #[test]
    fn a_cpuset_removes_the_classes_it_hides_and_moves_the_pairs() {
        let mut tree = fixtures::epyc(1);
        tree.allowed("0-31,64-95");
        let t = topology(&tree);
        assert_eq!(
            pairs(&t),
            [
                (SameCpu, 0, 0),
                (SameCore, 0, 64),
                (SameL3, 0, 1),
                (SameNode, 0, 8),
            ]
        );
        let err = t.pair(CrossPackage).unwrap_err().to_string();
        assert!(err.contains("cross-package"), "{err}");

        let mut tree = fixtures::epyc(1);
        tree.allowed("1-127");
        let t = topology(&tree);
        assert_eq!(
            t.pair(SameCpu).unwrap(),
            ClassPair {
                class: SameCpu,
                a: 1,
                b: 1
            }
        );
        assert_eq!(
            t.pair(SameCore).unwrap(),
            ClassPair {
                class: SameCore,
                a: 1,
                b: 65
            }
        );
        assert_eq!(
            t.pair(SameNode).unwrap(),
            ClassPair {
                class: SameNode,
                a: 1,
                b: 8
            }
        );
    }

    #[test]
    fn pairs_are_the_same_on_every_reading() {
        let tree = fixtures::xeon_snc();
        assert_eq!(topology(&tree).classes, topology(&tree).classes);
    }

    #[test]
    fn a_class_the_machine_lacks_is_an_error_naming_those_it_has() {
        let t = topology(&fixtures::two_vcpu_guest());
        let err = t.pair(SameNode).unwrap_err().to_string();
        assert_eq!(
            err,
            "placement class same-node does not exist on this machine (2 usable CPUs); \
             it has same-cpu, same-l3"
        );
        let none = Topology::default().pair(SameCpu).unwrap_err().to_string();
        assert!(none.contains("none (no CPU is known)"), "{none}");
    }

    #[test]
    fn class_names_parse_and_unknown_ones_list_the_vocabulary() {
        for c in PlaceClass::ALL {
            assert_eq!(PlaceClass::parse(c.name()).unwrap(), c);
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::json!(c.name()),
                "JSON uses the same names"
            );
            assert!(!c.describe().is_empty());
        }
        let err = PlaceClass::parse("numa").unwrap_err().to_string();
        assert!(
            err.contains("`numa`")
                && err.contains(
                    "same-cpu, same-core, same-l2, same-l3, same-node, same-package, cross-package"
                ),
            "{err}"
        );
    }

    #[test]
    fn representatives_scale_to_256_cpus() {
        // 4 packages × 32 cores × 2 threads: every class is found.
        let mut tree = Tree::default();
        tree.smt_server(128, 32, 8, ["32K", "512K", "32768K"]);
        let t = topology(&tree);
        assert_eq!(t.cpus.len(), 256);
        assert_eq!(
            t.class_names(),
            [SameCpu, SameCore, SameL3, SamePackage, CrossPackage]
        );
    }
}
