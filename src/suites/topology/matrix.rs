//! The CPU × CPU matrix of the cache-line round trip (`opcost run
//! --matrix`), sampled so that it ends in bounded time on any machine.
//!
//! Every pair of N CPUs is N(N-1)/2 round trips to measure: 32,640 on a
//! 256-CPU server, which a tool that walks them all (each for ~0.1 s)
//! cannot finish. So by default one CPU per core is taken (SMT siblings
//! are priced by the `same-core` class row, and a sibling's row of the
//! matrix repeats its core's), and the time per pair shrinks so the whole
//! matrix fits the profile's cap ([`CAP`]); `--matrix all` takes every CPU.
//! The CPUs are ordered by the topology (package, node, L3, L2, core), so
//! the classes form blocks along the diagonal.
//!
//! Each pair is measured once, the lower CPU in that order as the
//! measuring end: the line is first touched there, so it lives on that
//! CPU's NUMA node, and the matrix is symmetric by construction (a pair's
//! other direction would put the line on the other node). The figure is
//! the median over [`BATCHES`] batches of the compare-and-swap ping-pong.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;

use super::pingpong::{PingPong, Write};
use crate::document::CoreMatrix;
use crate::harness::affinity::{Cpus, Placement, allowed_cpus};
use crate::harness::{PrepareError, Profile, Timed};
use crate::host::{PlaceClass, Topology};

/// Which CPUs the matrix takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Sampling {
    /// One CPU per core (the lowest-numbered): N cores, N(N-1)/2 pairs.
    Cores,
    /// Every usable CPU, SMT siblings included.
    All,
}

impl Sampling {
    /// In words, for the document: "one CPU per core".
    pub fn text(self) -> &'static str {
        match self {
            Sampling::Cores => "one CPU per core",
            Sampling::All => "every CPU",
        }
    }
}

/// Time per pair at each profile (quick, default, thorough), before the cap.
const PER_PAIR: [Duration; 3] = [
    Duration::from_millis(8),
    Duration::from_millis(30),
    Duration::from_millis(100),
];

/// The most the whole matrix may take at each profile: the time per pair
/// shrinks to fit (never below [`MIN_PER_PAIR`]).
pub const CAP: [Duration; 3] = [
    Duration::from_secs(90),
    Duration::from_secs(300),
    Duration::from_secs(1200),
];

/// The least time per pair: a thread start, a warm-up and five batches of
/// a few hundred round trips.
const MIN_PER_PAIR: Duration = Duration::from_millis(2);

/// Batches per pair; the pair's figure is their median.
pub const BATCHES: usize = 5;

/// The pair order's key of a CPU: package, node, L3, L2, core, number.
fn order_key(t: &Topology, cpu: usize) -> [usize; 6] {
    let p = t.place(cpu);
    let g = |f: Option<usize>| f.unwrap_or(usize::MAX);
    match p {
        Some(p) => [
            g(p.package.map(|x| x as usize)),
            g(p.node.map(|x| x as usize)),
            g(p.l3),
            g(p.l2),
            g(p.core),
            cpu,
        ],
        None => [
            usize::MAX,
            usize::MAX,
            usize::MAX,
            usize::MAX,
            usize::MAX,
            cpu,
        ],
    }
}

/// The CPUs of the matrix among `allowed`, in topology order.
pub fn cpus(t: &Topology, allowed: &[usize], sampling: Sampling) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut cores_seen = std::collections::BTreeSet::new();
    let mut sorted = allowed.to_vec();
    sorted.sort();
    for cpu in sorted {
        if sampling == Sampling::Cores
            && let Some(core) = t.place(cpu).and_then(|p| p.core)
            && !cores_seen.insert(core)
        {
            continue;
        }
        out.push(cpu);
    }
    out.sort_by_key(|&c| order_key(t, c));
    out
}

/// The plan: the CPUs, and the time each pair gets so that all
/// N(N-1)/2 pairs fit the profile's cap.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The CPUs, in topology order.
    pub cpus: Vec<usize>,
    /// The time of one pair.
    pub per_pair: Duration,
    /// How the CPUs were chosen.
    pub sampling: Sampling,
}

impl Plan {
    /// Plans the matrix of `allowed` CPUs at `profile`.
    pub fn new(t: &Topology, allowed: &[usize], sampling: Sampling, profile: Profile) -> Plan {
        let cpus = cpus(t, allowed, sampling);
        let i = profile_index(profile);
        let pairs = pair_count(cpus.len()).max(1) as u32;
        let per_pair = PER_PAIR[i].min(CAP[i] / pairs).max(MIN_PER_PAIR);
        Plan {
            cpus,
            per_pair,
            sampling,
        }
    }

    /// How many pairs it measures.
    pub fn pairs(&self) -> usize {
        pair_count(self.cpus.len())
    }

    /// How long it should take.
    pub fn estimate(&self) -> Duration {
        self.per_pair * self.pairs() as u32
    }
}

fn pair_count(n: usize) -> usize {
    n * n.saturating_sub(1) / 2
}

fn profile_index(p: Profile) -> usize {
    match p {
        Profile::Quick => 0,
        Profile::Default => 1,
        Profile::Thorough => 2,
    }
}

/// Measures the matrix of `plan` on this machine, calling `progress`
/// with (pairs done, pairs in all) after each pair. Stops between pairs
/// when `stop` is set and returns what it has (`interrupted`).
pub fn measure(
    t: &Topology,
    plan: &Plan,
    stop: &AtomicBool,
    mut progress: impl FnMut(usize, usize),
) -> anyhow::Result<CoreMatrix> {
    let n = plan.cpus.len();
    if n < 2 {
        bail!(
            "the core-to-core matrix needs two CPUs; this process may use {}",
            crate::harness::affinity::cpu_list(&allowed_cpus())
        );
    }
    let started = Instant::now();
    let mut ns = vec![vec![None; n]; n];
    let mut line_nodes = std::collections::BTreeSet::new();
    let mut moved = Vec::new();
    let total = plan.pairs();
    let mut done = 0;
    let mut interrupted = false;
    let pairs = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j)));
    for (i, j) in pairs {
        {
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            let (a, b) = (plan.cpus[i], plan.cpus[j]);
            let class = t.class_of(a, b);
            let cpus = Cpus {
                placement: class.map_or(Placement::Cross, Placement::Class),
                parent: a,
                peer: b,
                same_core: class == Some(PlaceClass::SameCore),
                class,
            };
            let (v, node) = pair(cpus, plan.per_pair)?;
            let home = t.place(a).and_then(|p| p.node).map(i64::from);
            if let Some(node) = node {
                line_nodes.insert(node);
                if home.is_some_and(|h| h != node) {
                    moved.push((a, b, node));
                }
            }
            ns[i][j] = Some(v);
            ns[j][i] = Some(v);
            done += 1;
            progress(done, total);
        }
    }
    let line = match (line_nodes.len(), moved.is_empty()) {
        (0, _) => {
            "the measuring CPU's node by first touch (the kernel did not say where pages are)"
                .to_string()
        }
        (_, true) => {
            "the measuring CPU's node by first touch (checked with move_pages)".to_string()
        }
        (_, false) => format!(
            "first touched by the measuring CPU, but for {} pair(s) move_pages found it elsewhere (first: CPUs {} and {}, node {})",
            moved.len(),
            moved[0].0,
            moved[0].1,
            moved[0].2
        ),
    };
    Ok(CoreMatrix {
        write: Write::Cas.name().into(),
        cpus: plan.cpus.clone(),
        sampling: plan.sampling.text().into(),
        ns,
        per_pair_ms: plan.per_pair.as_secs_f64() * 1e3,
        line,
        seconds: started.elapsed().as_secs_f64(),
        interrupted,
    })
}

/// One pair's median round trip (ns) and the line's node.
fn pair(cpus: Cpus, budget: Duration) -> anyhow::Result<(f64, Option<i64>)> {
    let mut p = match PingPong::start(Write::Cas, cpus) {
        Ok(p) => p,
        Err(PrepareError::Skip(why)) => bail!("CPUs {} and {}: {why}", cpus.parent, cpus.peer),
        Err(PrepareError::Fail(e)) => {
            return Err(e.context(format!("CPUs {} and {}", cpus.parent, cpus.peer)));
        }
    };
    let node = p.line_node();
    // Warm up and calibrate: a batch is a fifth of the pair's time, less
    // the warm-up.
    let warm = 200u64;
    let t = p.run(warm)?;
    let per_op = (t.as_secs_f64() / warm as f64).max(1e-9);
    let batch_s = budget.as_secs_f64() * 0.8 / BATCHES as f64;
    let ops = ((batch_s / per_op) as u64).clamp(50, 10_000_000);
    let mut v: Vec<f64> = (0..BATCHES)
        .map(|_| p.run(ops).map(|d| d.as_nanos() as f64 / ops as f64))
        .collect::<anyhow::Result<_>>()?;
    v.sort_by(f64::total_cmp);
    Ok((v[v.len() / 2], node))
}
