//! The machine's shape priced: what a cache line costs to move between
//! two CPUs of each placement class (SMT siblings, a shared L2, a shared
//! L3, one NUMA node, one package, two packages), and the CPU × CPU matrix
//! of that round trip ([`matrix`], `opcost run --matrix`).
//!
//! Why a suite of its own: the IPC and cpu suites price OS mechanisms and
//! locks per class; this one prices the hardware under all of them, the
//! coherence round trip, so a pipe's cost across packages can be read as
//! "N line moves plus the kernel's work". Its ids begin `topology.` and
//! name the class (`topology.c2c.cas/cross-package`), never `cross`, so
//! one machine's row compares with another's of the same class.
//!
//! Modules: [`pingpong`] (the two pinned threads and the line), [`matrix`]
//! (the sampled pairs, bounded in time), [`ladder`] (findings that walk
//! the classes closest first, shared with the IPC suite).

pub mod ladder;
pub mod matrix;
pub mod pingpong;

use std::time::Duration;

use super::bench::{Budget, FnBench, Suite};
use crate::harness::affinity::Placement;
use crate::harness::{Bench, Ctx, Finding, Measurement, Timed, Unit};
use crate::host::{Host, PlaceClass};
use pingpong::{PingPong, Write};

/// The area name.
pub const AREA: &str = "topology";

/// The topology suite.
pub fn suite() -> Suite {
    Suite {
        name: AREA,
        summary: "cache-line round trip between two CPUs of every placement class (SMT siblings, L2, L3, NUMA node, package), and the CPU x CPU matrix (--matrix)",
        benches,
        findings,
    }
}

/// Each round trip is tens to hundreds of nanoseconds: short budgets.
const BUDGET: Budget = Budget::Fixed([
    Duration::from_millis(150),
    Duration::from_millis(600),
    Duration::from_millis(3000),
]);

/// The id of the round trip written by `write` between two CPUs of `class`.
pub fn c2c_id(write: Write, class: PlaceClass) -> String {
    format!("topology.c2c.{}/{}", write.name(), class.name())
}

fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let mut out: Vec<Box<dyn Bench>> = Vec::new();
    for class in host.topology.class_names() {
        if class == PlaceClass::SameCpu {
            continue;
        }
        for write in Write::ALL {
            let how = match write {
                Write::Cas => "compare-and-swap",
                Write::Store => "plain store after the load that saw the turn",
            };
            let b = FnBench::new(
                c2c_id(write, class),
                format!(
                    "a cache line handed back and forth between {} ({how}): one round trip",
                    class.describe()
                ),
                Unit::Latency,
                move |ctx: &Ctx| {
                    let cpus = Placement::Class(class).cpus(ctx)?;
                    Ok(Box::new(PingPong::start(write, cpus)?) as Box<dyn Timed>)
                },
            )
            .param("placement", class.name())
            .param("write", write.name())
            .interleave(format!("topology.c2c/{}", class.name()))
            .with_budget(BUDGET);
            // The quick profile prices each level with the CAS; the plain
            // store runs when a pattern asks, and at the others always.
            let b = if write == Write::Store {
                b.on_request()
            } else {
                b
            };
            out.push(b.boxed());
        }
    }
    out
}

/// Why the suite has no benchmark on `host`: it prices pairs of CPUs, and
/// the run may use one (or none the model knows). None when it has some.
pub fn unavailable(host: &Host) -> Option<String> {
    match host.topology.cpus.as_slice() {
        [] => Some(
            "topology needs two usable CPUs, and this machine's CPUs are unknown to the run"
                .to_string(),
        ),
        [one] => Some(format!(
            "topology needs two usable CPUs, and this run may use one (CPU {})",
            one.cpu
        )),
        _ => None,
    }
}

/// Findings: the round trip class by class, closest first, per way of
/// writing, and CAS against a plain store where both ran.
fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for write in Write::ALL {
        let ids: Vec<String> = PlaceClass::ALL.iter().map(|&c| c2c_id(write, c)).collect();
        let rungs = ladder::rungs(ms, &ids);
        let what = format!("a cache-line round trip ({})", write.name());
        if let Some(f) = ladder::finding(AREA, &what, &rungs) {
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::matrix::{CAP, Plan, Sampling};
    use super::*;
    use crate::host::PlaceClass::*;
    use crate::host::fixtures::{self, Tree};

    fn host(tree: &Tree) -> Host {
        let dir = tree.write();
        Host::detect_at(dir.path())
    }

    #[test]
    fn the_two_vcpu_guest_keeps_same_and_cross_and_one_class_row() {
        let h = host(&fixtures::two_vcpu_guest());
        assert_eq!(Placement::of_host(&h), Placement::ALL.to_vec());
        let ids: Vec<String> = benches(&h).iter().map(|b| b.id().to_string()).collect();
        assert_eq!(
            ids,
            ["topology.c2c.cas/same-l3", "topology.c2c.store/same-l3"]
        );
    }

    #[test]
    fn a_two_socket_epyc_measures_every_class_once() {
        // Cross is CPUs 0 and 1, one CCX: same-l3 is what `cross` measures.
        let h = host(&fixtures::epyc(1));
        assert_eq!(
            Placement::of_host(&h),
            [
                Placement::Same,
                Placement::Cross,
                Placement::Class(SameCore),
                Placement::Class(SameNode),
                Placement::Class(CrossPackage),
            ]
        );
        let ids: Vec<String> = benches(&h).iter().map(|b| b.id().to_string()).collect();
        for class in ["same-core", "same-l3", "same-node", "cross-package"] {
            assert!(
                ids.contains(&format!("topology.c2c.cas/{class}")),
                "{ids:?}"
            );
        }
        assert_eq!(ids.len(), 8);
        // The IPC rows: the smallest round trip of a class runs at quick,
        // its other rows on request.
        let ipc = crate::suites::ipc::suite();
        let rows = (ipc.benches)(&h);
        let row = |id: &str| rows.iter().find(|b| b.id() == id).map(|b| b.on_request());
        assert_eq!(row("ipc.pipe.rtt/8B/cross-package"), Some(false));
        assert_eq!(row("ipc.futex.rtt/same-core"), Some(false));
        assert_eq!(row("ipc.pipe.rtt/4KiB/cross-package"), Some(true));
        assert_eq!(row("ipc.pipe.tput/64KiB/same-node"), Some(true));
        assert_eq!(row("ipc.pipe.rtt/8B/cross"), Some(false));
        assert_eq!(row("ipc.pipe.rtt/8B/same-l3"), None);
    }

    #[test]
    fn a_class_takes_its_pair_from_the_model_or_says_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = crate::harness::test_ctx_with(host(&fixtures::epyc(1)), dir.path());
        let c = Placement::Class(SameNode).cpus(&ctx).unwrap();
        assert_eq!((c.parent, c.peer, c.class), (0, 8, Some(SameNode)));
        assert_eq!(c.details()["placement"], "same-node");
        let c = Placement::Class(SameCore).cpus(&ctx).unwrap();
        assert_eq!((c.parent, c.peer, c.same_core), (0, 64, true));
        let ctx = crate::harness::test_ctx_with(host(&fixtures::two_vcpu_guest()), dir.path());
        match Placement::Class(CrossPackage).cpus(&ctx) {
            Err(crate::harness::PrepareError::Skip(why)) => {
                assert!(why.contains("does not exist on this machine"), "{why}");
                assert!(why.contains("same-cpu, same-l3"), "{why}");
            }
            other => panic!("{:?}", other.map(|c| c.parent)),
        }
    }

    /// The plan of `sampling` at `profile` over every CPU of `h`.
    fn every_cpu(h: &Host, sampling: Sampling, profile: crate::harness::Profile) -> Plan {
        let allowed: Vec<usize> = h.topology.cpus.iter().map(|p| p.cpu).collect();
        Plan::new(&h.topology, &allowed, sampling, profile)
    }

    #[test]
    fn the_matrix_is_bounded_on_256_cpus_and_ordered_by_the_topology() {
        let mut tree = Tree::default();
        tree.smt_server(128, 32, 8, ["32K", "512K", "32768K"]);
        let h = host(&tree);
        let cores = every_cpu(&h, Sampling::Cores, crate::harness::Profile::Quick);
        assert_eq!(cores.cpus.len(), 128);
        assert_eq!(cores.pairs(), 128 * 127 / 2);
        assert!(
            cores.estimate() <= CAP[0] + std::time::Duration::from_secs(30),
            "{:?}",
            cores.estimate()
        );
        assert!(cores.estimate() <= std::time::Duration::from_secs(120));
        let all = every_cpu(&h, Sampling::All, crate::harness::Profile::Quick);
        assert_eq!(all.cpus.len(), 256);
        assert!(
            all.estimate() <= std::time::Duration::from_secs(120),
            "{:?}",
            all.estimate()
        );
        // Package by package: the first 32 are one package's cores.
        let pkg = |c: usize| h.topology.place(c).unwrap().package;
        assert!(
            cores.cpus[..32]
                .iter()
                .all(|&c| pkg(c) == pkg(cores.cpus[0]))
        );
        assert!(cores.cpus.windows(2).all(|w| pkg(w[0]) <= pkg(w[1])));
        // On the EPYC, SMT siblings sit next to each other with `all`.
        let e = host(&fixtures::epyc(1));
        let p = every_cpu(&e, Sampling::All, crate::harness::Profile::Default);
        assert_eq!(&p.cpus[..4], &[0, 64, 1, 65]);
        let p = every_cpu(&e, Sampling::Cores, crate::harness::Profile::Default);
        assert_eq!(&p.cpus[..3], &[0, 1, 2]);
        assert_eq!(p.cpus.len(), 64);
    }

    #[test]
    fn the_matrix_of_this_machine_is_symmetric_and_grouped_by_class() {
        let h = Host::detect();
        let allowed = crate::harness::affinity::allowed_cpus();
        if allowed.len() < 2 {
            return;
        }
        let mut plan = Plan::new(
            &h.topology,
            &allowed,
            Sampling::Cores,
            crate::harness::Profile::Quick,
        );
        plan.cpus.truncate(3);
        plan.per_pair = std::time::Duration::from_millis(3);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let mut calls = 0;
        let m = matrix::measure(&h.topology, &plan, &stop, |_, _| calls += 1).unwrap();
        let n = m.cpus.len();
        assert_eq!(calls, n * (n - 1) / 2);
        for i in 0..n {
            assert_eq!(m.ns[i][i], None);
            for j in 0..n {
                assert_eq!(m.ns[i][j], m.ns[j][i]);
                if i != j {
                    assert!(m.ns[i][j].unwrap() > 0.0);
                }
            }
        }
        let spread = m.by_class(&h.topology);
        assert_eq!(
            spread.iter().map(|c| c.pairs).sum::<usize>(),
            n * (n - 1) / 2
        );
        let text = m.to_text(&h.topology);
        assert!(text.starts_with("core-to-core round trip (cas)"), "{text}");
        // Stopped before the first pair: nothing measured, and it says so.
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let m = matrix::measure(&h.topology, &plan, &stop, |_, _| {}).unwrap();
        assert!(m.interrupted);
        assert!(m.ns.iter().flatten().all(Option::is_none));
    }
}
