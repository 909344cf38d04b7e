//! CPU pinning: the CPUs this process may use, pinning the calling thread,
//! and [`Pinned`], the guard benchmarks hold while they must stay on a CPU.
//!
//! Pinning removes migrations between CPUs from the samples, and lets
//! benchmarks with two ends (IPC, context switches) choose whether they
//! share a CPU, which on a VM can change a wake-up from ~1 µs to ~30 µs.

use std::cell::RefCell;

use anyhow::{Context, bail};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

use super::{Ctx, PrepareError};
use crate::host::PlaceClass;

/// The CPUs this process may run on, in increasing order.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Pins the calling thread (and children it forks later) to `cpu`.
pub fn pin_to(cpu: usize) -> anyhow::Result<()> {
    let allowed = allowed_cpus();
    if !allowed.contains(&cpu) {
        bail!(
            "CPU {cpu} is not available to this process (allowed: {})",
            cpu_list(&allowed)
        );
    }
    let mut set = CpuSet::new();
    set.set(cpu)
        .with_context(|| format!("CPU {cpu} is out of range"))?;
    sched_setaffinity(Pid::from_raw(0), &set).with_context(|| format!("pinning to CPU {cpu}"))
}

/// Restores the calling thread's affinity to `cpus`.
pub fn pin_to_set(cpus: &[usize]) -> anyhow::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)
            .with_context(|| format!("CPU {c} is out of range"))?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).context("setting CPU affinity")
}

pub use crate::host::topology::cpu_list;

/// The pinning of this thread held by [`Pinned`] guards: the CPU, how many
/// guards hold it, and the affinity to restore when the last one goes.
struct PinState {
    cpu: usize,
    refs: usize,
    saved: Vec<usize>,
}

thread_local! {
    /// Affinity is a property of a thread, and so is its pinning state.
    static PIN: RefCell<Option<PinState>> = const { RefCell::new(None) };
}

/// The calling thread pinned to one CPU while any of these is alive; the
/// last one to go restores the affinity the first one found. Benchmarks of
/// one interleaved group that share a CPU each hold one (children and
/// threads started meanwhile inherit the pinning).
pub struct Pinned(());

impl Pinned {
    /// Pins the calling thread to `cpu`; an error when it is not allowed or
    /// when another live guard of this thread holds a different CPU.
    pub fn to(cpu: usize) -> anyhow::Result<Pinned> {
        PIN.with(|st| {
            let mut st = st.borrow_mut();
            match st.as_mut() {
                Some(s) if s.cpu == cpu => s.refs += 1,
                Some(s) => bail!("already pinned to CPU {} for another benchmark", s.cpu),
                None => {
                    let saved = allowed_cpus();
                    pin_to(cpu)?;
                    *st = Some(PinState {
                        cpu,
                        refs: 1,
                        saved,
                    });
                }
            }
            Ok(Pinned(()))
        })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        PIN.with(|st| {
            let mut st = st.borrow_mut();
            if let Some(s) = st.as_mut() {
                s.refs -= 1;
                if s.refs == 0 {
                    let _ = pin_to_set(&s.saved);
                    *st = None;
                }
            }
        });
    }
}

/// Where the two ends run relative to each other.
///
/// `Same` and `Cross` are the two placements every host has (ids ending
/// `/same`, `/cross`); `Class` is a further placement class of the host's
/// topology model (ids ending in the class's name, `/cross-package`),
/// measured where the machine has that level and the `cross` pair does not
/// already stand for it (see [`Placement::of_host`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    /// Both ends pinned to the same CPU: every hand-over is a context switch.
    Same,
    /// The ends pinned to two different CPUs, the peer on another physical
    /// core when there is one: the nearest pair that is not SMT siblings.
    Cross,
    /// The ends pinned to the representative pair of a placement class.
    Class(PlaceClass),
}

impl Placement {
    /// The placements every host has, in report order.
    pub const ALL: [Placement; 2] = [Placement::Same, Placement::Cross];

    /// The placements measured on `host`: `Same`, `Cross`, then every
    /// other class of its topology model, closest first, except `same-cpu`
    /// and the class of the `cross` pair (which `Cross` measures under its
    /// old name, so the ids of a host's earlier runs stay). A 2-vCPU guest
    /// with one L3 has only `Same` and `Cross`.
    pub fn of_host(host: &crate::host::Host) -> Vec<Placement> {
        let t = &host.topology;
        let cross = cross_class(t);
        let mut out = Placement::ALL.to_vec();
        out.extend(
            t.class_names()
                .into_iter()
                .filter(|&c| c != PlaceClass::SameCpu && Some(c) != cross)
                .map(Placement::Class),
        );
        out
    }

    /// The short form used in ids: `same`, `cross`, or the class's name.
    pub fn label(self) -> &'static str {
        match self {
            Placement::Same => "same",
            Placement::Cross => "cross",
            Placement::Class(c) => c.name(),
        }
    }

    /// The value of the `placement` parameter: `same-cpu`, `cross-cpu`, or
    /// the class's name (`same-core`, `cross-package`...).
    pub fn param(self) -> &'static str {
        match self {
            Placement::Same => "same-cpu",
            Placement::Cross => "cross-cpu",
            Placement::Class(c) => c.name(),
        }
    }

    /// The name of the two ends' relation on `host`, in the one vocabulary
    /// of its topology model: the class of the `cross` pair where the model
    /// knows it (`cross-package` for CPUs of two packages, as the topology
    /// suite names the same pair), else [`Placement::param`].
    pub fn class_name(self, host: &crate::host::Host) -> &'static str {
        match self {
            Placement::Cross => cross_class(&host.topology).map_or(self.param(), PlaceClass::name),
            _ => self.param(),
        }
    }

    /// Where the ends are, for a summary: "the same CPU", "SMT siblings of one core".
    pub fn text(self) -> &'static str {
        match self {
            Placement::Same => "the same CPU",
            Placement::Cross => "two different CPUs",
            Placement::Class(c) => c.describe(),
        }
    }

    /// True for a placement beyond `same` and `cross`: a class only some
    /// machines have, which the quick profile measures for the few rows
    /// that price the levels (the others run when a pattern asks).
    pub fn is_class(self) -> bool {
        matches!(self, Placement::Class(_))
    }

    /// Chooses the CPUs of the two ends among those this process may use.
    ///
    /// Cross placement prefers a CPU on another physical core (not an SMT
    /// sibling), as the host's topology model says; with one allowed CPU
    /// it is skipped, saying why. A class takes its representative pair
    /// from the model; it is skipped when `--cpu` pins the run or one of
    /// the pair's CPUs is not allowed here.
    pub fn cpus(self, ctx: &Ctx) -> Result<Cpus, PrepareError> {
        let allowed = allowed_cpus();
        let Some(&parent) = allowed.first() else {
            return Err(PrepareError::Skip(
                "no CPU is allowed to this process".into(),
            ));
        };
        let topology = &ctx.host.topology;
        let core = |c: usize| topology.place(c).and_then(|p| p.core);
        let pinned_note = || {
            if ctx.cpu.is_some() {
                " (--cpu pins the run to one CPU)"
            } else {
                ""
            }
        };
        match self {
            Placement::Same => Ok(Cpus {
                placement: self,
                parent,
                peer: parent,
                same_core: true,
                class: topology.class_of(parent, parent),
            }),
            Placement::Cross => {
                let Some((parent, peer)) = cross_pair(&allowed, topology) else {
                    return Err(PrepareError::Skip(format!(
                        "cross-cpu needs two CPUs, but only CPU {parent} is allowed to this process{}",
                        pinned_note()
                    )));
                };
                let home = core(parent);
                Ok(Cpus {
                    placement: self,
                    parent,
                    peer,
                    same_core: home.is_some() && core(peer) == home,
                    class: topology.class_of(parent, peer),
                })
            }
            Placement::Class(class) => {
                let pair = topology
                    .pair(class)
                    .map_err(|e| PrepareError::Skip(e.to_string()))?;
                if ctx.cpu.is_some() {
                    return Err(PrepareError::Skip(format!(
                        "{class} is measured on CPUs {} and {}{}",
                        pair.a,
                        pair.b,
                        pinned_note()
                    )));
                }
                // The model holds the CPUs this process may use; this
                // thread may be pinned to one of them by another member
                // of its group, so its own mask is not the test.
                let usable: Vec<usize> = topology.cpus.iter().map(|p| p.cpu).collect();
                if let Some(&c) = [pair.a, pair.b].iter().find(|c| !usable.contains(c)) {
                    return Err(PrepareError::Skip(format!(
                        "{class} is measured on CPUs {} and {}, but CPU {c} is not allowed to this process (allowed: {})",
                        pair.a,
                        pair.b,
                        cpu_list(&usable)
                    )));
                }
                Ok(Cpus {
                    placement: self,
                    parent: pair.a,
                    peer: pair.b,
                    same_core: matches!(class, PlaceClass::SameCpu | PlaceClass::SameCore),
                    class: Some(class),
                })
            }
        }
    }
}

/// The CPUs of the `cross` placement among `allowed`: the first allowed
/// CPU and the first other one on another physical core (or, when every
/// other is an SMT sibling or the model knows no cores, the next one).
/// None with fewer than two CPUs.
fn cross_pair(allowed: &[usize], topology: &crate::host::Topology) -> Option<(usize, usize)> {
    let core = |c: usize| topology.place(c).and_then(|p| p.core);
    let (&parent, others) = allowed.split_first()?;
    let &first = others.first()?;
    let home = core(parent);
    let peer = others
        .iter()
        .copied()
        .find(|&c| home.is_none() || core(c) != home)
        .unwrap_or(first);
    Some((parent, peer))
}

/// The class of the `cross` pair among the CPUs the model holds (those
/// this process may use); None with one CPU or an unknown model.
fn cross_class(t: &crate::host::Topology) -> Option<PlaceClass> {
    let allowed: Vec<usize> = t.cpus.iter().map(|p| p.cpu).collect();
    cross_pair(&allowed, t).and_then(|(a, b)| t.class_of(a, b))
}

/// The CPUs chosen for the two ends of a benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpus {
    /// The placement they implement.
    pub placement: Placement,
    /// The CPU of the measuring (parent) end.
    pub parent: usize,
    /// The CPU of the peer (child) end.
    pub peer: usize,
    /// True when both CPUs are on one physical core (identical or SMT siblings).
    pub same_core: bool,
    /// What the two CPUs share at the closest, when the host's topology
    /// model knows both.
    pub class: Option<PlaceClass>,
}

impl Cpus {
    /// The facts recorded with the result (`class` only when known).
    pub fn details(&self) -> serde_json::Value {
        // The relation by the model's name where it knows the pair, as
        // the benchmark's `placement` parameter has it.
        let placement = match (self.placement, self.class) {
            (Placement::Cross, Some(class)) => class.name(),
            _ => self.placement.param(),
        };
        let mut d = serde_json::json!({
            "placement": placement,
            "parent_cpu": self.parent,
            "peer_cpu": self.peer,
            "same_core": self.same_core,
        });
        if let Some(class) = self.class {
            d["class"] = class.name().into();
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_list_compacts_ranges() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(cpu_list(&[1]), "1");
        assert_eq!(cpu_list(&[]), "");
    }

    #[test]
    fn placements_record_the_class_of_their_pair_from_the_model() {
        let ctx = crate::harness::test_ctx();
        let same = Placement::Same.cpus(&ctx).unwrap();
        assert_eq!(same.class, Some(PlaceClass::SameCpu));
        assert_eq!(same.details()["class"], "same-cpu");
        if let Ok(cross) = Placement::Cross.cpus(&ctx) {
            let class = ctx.host.topology.class_of(cross.parent, cross.peer);
            assert_eq!(cross.class, class);
            assert_ne!(class, Some(PlaceClass::SameCpu));
            assert_eq!(cross.same_core, class == Some(PlaceClass::SameCore));
        }
        // A host without a model (an older document's) records no class.
        let mut bare = crate::harness::test_ctx();
        bare.host = std::sync::Arc::new(crate::host::Host::default());
        let d = Placement::Same.cpus(&bare).unwrap().details();
        assert!(d.get("class").is_none(), "{d}");
    }

    #[test]
    fn allowed_cpus_is_not_empty() {
        assert!(!allowed_cpus().is_empty());
    }

    #[test]
    fn pinning_to_a_missing_cpu_is_an_error() {
        let err = pin_to(100_000).unwrap_err().to_string();
        assert!(err.contains("not available"), "{err}");
    }

    #[test]
    fn pinning_is_shared_and_restored_by_the_last() {
        let before = allowed_cpus();
        let cpu = *before.last().unwrap();
        let a = Pinned::to(cpu).unwrap();
        let b = Pinned::to(cpu).unwrap();
        assert_eq!(allowed_cpus(), vec![cpu]);
        if let Some(&other) = before.iter().find(|&&c| c != cpu) {
            let e = Pinned::to(other).err().expect("a second CPU is refused");
            assert!(e.to_string().contains("already pinned"), "{e}");
        }
        drop(a);
        assert_eq!(allowed_cpus(), vec![cpu]);
        drop(b);
        assert_eq!(allowed_cpus(), before);
    }

    #[test]
    fn pinning_is_undone_on_drop() {
        let before = sched_getaffinity(Pid::from_raw(0)).unwrap();
        let cpu = allowed_cpus()[0];
        {
            let _p = Pinned::to(cpu).unwrap();
            assert_eq!(allowed_cpus(), vec![cpu]);
        }
        assert_eq!(sched_getaffinity(Pid::from_raw(0)).unwrap(), before);
    }
}
