//! Read bandwidth by thread count (STREAM practice): `threads=N` for N =
//! 2, 4, 8... below every usable CPU, between the `threads=1` and
//! `threads=all` results that already exist, and where it saturates.
//!
//! Threads are spread by the topology model: one node is filled first, one
//! thread per core before any SMT sibling, then the next node, so the
//! ladder climbs a node's memory bandwidth before it adds another node's.
//! At the quick profile the intermediate counts run only when a pattern
//! selects them (the whole-machine quick run stays as it was); at the
//! others always. They are interleaved with `threads=1` and `threads=all`
//! of read, so every step of the ladder is measured in the same rounds.

use std::collections::BTreeSet;

use serde_json::json;

use super::bandwidth::{self, Kernel, Plan};
use super::findings::finding;
use super::{BANDWIDTH_BUDGET, array_bytes_for, every_cpu_usable};
use crate::harness::claims::{Est, Ratio, speedup, with_typical_width};
use crate::harness::{Bench, Ctx, Finding, Measurement, Unit};
use crate::host::Topology;
use crate::suites::bench::FnBench;
use crate::units::{BaseUnit, human};

/// A step of the ladder that adds less than this factor (its whole
/// interval below it) is where bandwidth saturates: "adds less than 10%".
pub const SATURATION_GAIN: f64 = 1.10;

/// The id of read bandwidth on `threads` threads spread by the topology.
pub fn id(threads: usize) -> String {
    format!("memory.bandwidth.read/threads={threads}")
}

/// The usable CPUs of `t` in the order threads take them: the first node
/// (the node of the lowest CPU) before the next, within a node one CPU per
/// core (lowest CPU first) before the second thread of any core. CPUs whose
/// node or core sysfs does not give count as one node, and as a core each.
pub fn spread(t: &Topology) -> Vec<usize> {
    let mut nodes: Vec<Option<u32>> = Vec::new();
    for p in &t.cpus {
        if !nodes.contains(&p.node) {
            nodes.push(p.node);
        }
    }
    let mut out = Vec::with_capacity(t.cpus.len());
    for node in nodes {
        // Each CPU's rank among the threads of its core (0 = the first).
        let mut ranked: Vec<(usize, usize)> = Vec::new();
        for p in t.cpus.iter().filter(|p| p.node == node) {
            let rank = p.core.map_or(0, |core| {
                ranked
                    .iter()
                    .filter(|(_, c)| t.place(*c).and_then(|q| q.core) == Some(core))
                    .count()
            });
            ranked.push((rank, p.cpu));
        }
        ranked.sort_unstable();
        out.extend(ranked.into_iter().map(|(_, c)| c));
    }
    out
}

/// The thread counts between one and `all`: 2, 4, 8... below `all`.
pub fn counts(all: usize) -> Vec<usize> {
    std::iter::successors(Some(2usize), |n| n.checked_mul(2))
        .take_while(|&n| n < all)
        .collect()
}

/// The NUMA nodes of `cpus` in `t`, in increasing order (unknown ones left out).
pub fn nodes_of(t: &Topology, cpus: &[usize]) -> Vec<u32> {
    let set: BTreeSet<u32> = cpus.iter().filter_map(|&c| t.place(c)?.node).collect();
    set.into_iter().collect()
}

/// The intermediate read bandwidth benchmarks of `t` (none below three
/// usable CPUs: 1 and 2 are `threads=1` and `threads=all`).
pub fn benches(t: &Topology) -> Vec<Box<dyn Bench>> {
    let order = spread(t);
    let steps = counts(order.len());
    let alive = steps.len() + 2;
    steps
        .iter()
        .map(|&n| {
            let cpus: Vec<usize> = order[..n].to_vec();
            let nodes = nodes_of(t, &cpus);
            let cores: BTreeSet<usize> = cpus.iter().filter_map(|&c| t.place(c)?.core).collect();
            let pass = bandwidth::pass_bytes(n);
            let cores = cores.len();
            FnBench::new(
                id(n),
                format!(
                    "{}, {n} threads spread by the topology (a node's cores, then their SMT siblings, then the next node)",
                    Kernel::Read.summary()
                ),
                Unit::Throughput {
                    bytes_per_op: pass as f64,
                },
                move |ctx: &Ctx| {
                    every_cpu_usable(ctx, &cpus)?;
                    let (array, note) = array_bytes_for(ctx, alive, pass)?;
                    let mut extra = serde_json::Map::new();
                    extra.insert("nodes".into(), json!(nodes));
                    extra.insert("cores".into(), json!(cores));
                    bandwidth::prepare(Plan {
                        kernel: Kernel::Read,
                        array_bytes: array,
                        pass_bytes: pass,
                        cpus: cpus.clone(),
                        warnings: note.into_iter().collect(),
                        bind: None,
                        extra,
                    })
                },
            )
            .param("threads", n.to_string())
            .param("accounting", Kernel::Read.accounting())
            .interleave("memory.bandwidth.read")
            .with_budget(BANDWIDTH_BUDGET)
            .on_request()
            .boxed()
        })
        .collect()
}

/// A rung of the ladder: a thread count and its result.
struct Rung<'a> {
    threads: usize,
    m: &'a Measurement,
}

/// The read bandwidth results of a run by thread count: `threads=1`, the
/// numeric ones and `threads=all` (its count from its details), sorted,
/// one per count.
fn ladder(ms: &[Measurement]) -> Vec<Rung<'_>> {
    let prefix = "memory.bandwidth.read/threads=";
    let mut out: Vec<Rung<'_>> = ms
        .iter()
        .filter_map(|m| {
            let tag = m.id.strip_prefix(prefix)?;
            let threads = match tag {
                "all" => m.details.as_ref()?.get("threads")?.as_u64()? as usize,
                t => t.parse().ok()?,
            };
            (threads > 0 && m.median > 0.0).then_some(Rung { threads, m })
        })
        .collect();
    out.sort_by_key(|r| r.threads);
    out.dedup_by_key(|r| r.threads);
    out
}

/// The NUMA nodes a result's threads ran on, as recorded in its details.
fn nodes(m: &Measurement) -> Vec<u64> {
    m.details
        .as_ref()
        .and_then(|d| d.get("nodes")?.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect()
}

/// How one step of the ladder reads: clearly adding, adding less than
/// [`SATURATION_GAIN`], or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The interval of the gain lies above 1.
    Adds,
    /// The interval of the gain lies below [`SATURATION_GAIN`].
    Flat,
    /// Neither: not told apart from either.
    Unclear,
}

/// The reading of a gain (more threads' bandwidth over fewer's).
pub fn step(gain: &Ratio) -> Step {
    if gain.high < SATURATION_GAIN {
        Step::Flat
    } else if gain.low > 1.0 {
        Step::Adds
    } else {
        Step::Unclear
    }
}

/// "2 threads" / "1 thread".
fn threads(n: usize) -> String {
    if n == 1 {
        "1 thread".to_string()
    } else {
        format!("{n} threads")
    }
}

/// Where bandwidth saturates, in words: the first step of the ladder that
/// adds less than 10% (its whole interval below [`SATURATION_GAIN`]),
/// with the steps before it; "no saturation seen" when no step is that
/// flat. Decided on the ladder's pooled intervals; needs three rungs (one
/// and every CPU alone are the bandwidth finding's).
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let rungs = ladder(ms);
    if rungs.len() < 3 {
        return Vec::new();
    }
    let ests = with_typical_width(&rungs.iter().map(|r| Est::of(r.m)).collect::<Vec<_>>());
    let gains: Vec<Ratio> = ests.windows(2).map(|w| speedup(&w[1], &w[0])).collect();
    let steps: Vec<Step> = gains.iter().map(step).collect();
    let step_text = |k: usize| {
        format!(
            "{} to {}: {}",
            rungs[k].threads,
            rungs[k + 1].threads,
            gains[k]
        )
    };
    let top = rungs.len() - 1;
    let text = match steps.iter().position(|&s| s == Step::Flat) {
        Some(k) => {
            let n = rungs[k].threads;
            // Named when the ladder goes on to other nodes.
            let node = match (nodes(rungs[k].m).as_slice(), nodes(rungs[top].m).len()) {
                ([one], many) if many > 1 => format!(" (all on node {one})"),
                _ => String::new(),
            };
            let before: Vec<usize> = (0..k).filter(|&j| steps[j] != Step::Adds).collect();
            let lead = match before.last() {
                None => format!("read bandwidth saturates at {}{node}", threads(n)),
                Some(_) => format!("read bandwidth saturates by {}{node}", threads(n)),
            };
            let after = format!(
                "{} add less than 10% ({})",
                threads(rungs[k + 1].threads),
                gains[k]
            );
            let why = match before.last() {
                None if k == 0 => String::new(),
                None => format!(
                    "; up to it each step adds ({})",
                    (0..k).map(step_text).collect::<Vec<_>>().join(", ")
                ),
                Some(&j) => format!("; the step {} adds no clear amount", step_text(j)),
            };
            format!(
                "{lead}: {after}{why}; {} at {}",
                human(ests[k].value, BaseUnit::BytesPerSec),
                threads(n)
            )
        }
        None => {
            let last = top - 1;
            let how = match steps[last] {
                Step::Adds => "",
                _ => ", not told apart from flat",
            };
            format!(
                "read bandwidth: no saturation seen up to {} (the last step, {}{how}); {} at {}",
                threads(rungs[top].threads),
                step_text(last),
                human(ests[top].value, BaseUnit::BytesPerSec),
                threads(rungs[top].threads)
            )
        }
    };
    let value = match steps.iter().position(|&s| s == Step::Flat) {
        Some(k) => ests[k].value,
        None => ests[top].value,
    };
    vec![finding(text, value, BaseUnit::BytesPerSec)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;
    use crate::host::fixtures::{self, Tree};

    fn topology(tree: &Tree) -> Topology {
        Host::detect_at(tree.write().path()).topology
    }

    #[test]
    fn the_guest_fills_a_nodes_cores_then_their_siblings_then_the_next_node() {
        let t = topology(&fixtures::two_socket_guest());
        assert_eq!(spread(&t), [0, 2, 1, 3, 4, 6, 5, 7]);
        let ids: Vec<String> = benches(&t).iter().map(|b| b.id().to_string()).collect();
        assert_eq!(ids, [id(2), id(4)], "8 is threads=all");
        assert_eq!(nodes_of(&t, &spread(&t)[..4]), [0]);
        assert_eq!(nodes_of(&t, &spread(&t)[..5]), [0, 1]);
    }

    #[test]
    fn an_epyc_fills_node_zeros_cores_before_any_sibling() {
        let t = topology(&fixtures::epyc(1));
        let s = spread(&t);
        assert_eq!(s.len(), 128);
        assert_eq!(s[..32], (0..32).collect::<Vec<_>>()[..]);
        assert_eq!(s[32..64], (64..96).collect::<Vec<_>>()[..]);
        assert_eq!(s[64..96], (32..64).collect::<Vec<_>>()[..]);
        assert_eq!(s[96], 96);
        // NPS4: the first node is 8 cores, their 8 siblings, then node 1.
        let s = spread(&topology(&fixtures::epyc(4)));
        assert_eq!(s[..8], (0..8).collect::<Vec<_>>()[..]);
        assert_eq!(s[8..16], (64..72).collect::<Vec<_>>()[..]);
        assert_eq!(s[16], 8);
    }

    #[test]
    fn a_hybrid_desktop_takes_every_core_before_a_p_cores_second_thread() {
        let s = spread(&topology(&fixtures::hybrid()));
        let mut want: Vec<usize> = (0..16).step_by(2).collect();
        want.extend(16..24);
        want.extend((1..16).step_by(2));
        assert_eq!(s, want);
    }

    #[test]
    fn machines_without_nodes_or_siblings_keep_the_cpu_order() {
        assert_eq!(spread(&topology(&fixtures::arm_board())), [0, 1, 2, 3]);
        assert_eq!(spread(&topology(&fixtures::xeon_snc()))[..4], [0, 1, 2, 3]);
        assert!(spread(&Topology::default()).is_empty());
        assert!(benches(&topology(&fixtures::two_vcpu_guest())).is_empty());
    }

    #[test]
    fn counts_double_below_every_cpu() {
        assert!(counts(0).is_empty() && counts(1).is_empty() && counts(2).is_empty());
        assert_eq!(counts(3), [2]);
        assert_eq!(counts(8), [2, 4]);
        assert_eq!(counts(12), [2, 4, 8]);
        assert_eq!(counts(128), [2, 4, 8, 16, 32, 64]);
    }

    #[test]
    fn ladder_rows_are_on_request_and_interleaved_with_read() {
        let b = benches(&topology(&fixtures::epyc(1)));
        assert_eq!(b.len(), 6);
        for b in &b {
            assert!(b.on_request() && b.runs_at(crate::harness::Profile::Quick));
            assert_eq!(b.interleave(), Some("memory.bandwidth.read"));
            assert_eq!(b.params()["threads"], b.id().rsplit('=').next().unwrap());
        }
        assert_eq!(b[5].id(), "memory.bandwidth.read/threads=64");
    }

    /// A read bandwidth result of the ladder, `all` with its thread count.
    fn rung(tag: &str, v: f64, rel: f64, nodes: &[u32]) -> Measurement {
        let mut m = Measurement::within(
            &format!("memory.bandwidth.read/threads={tag}"),
            "B/s",
            v,
            rel,
        );
        let threads = tag.parse::<usize>().unwrap_or(16);
        m.details = Some(json!({"threads": threads, "nodes": nodes}));
        m
    }

    #[test]
    fn bandwidth_saturates_where_a_step_adds_less_than_ten_per_cent() {
        let ms = vec![
            rung("1", 10e9, 0.02, &[0]),
            rung("2", 19e9, 0.02, &[0]),
            rung("4", 30e9, 0.02, &[0]),
            rung("8", 31e9, 0.02, &[0]),
            rung("all", 31.5e9, 0.02, &[0, 1]),
        ];
        let f = findings(&ms);
        assert_eq!(f.len(), 1);
        let t = &f[0];
        t.assert_starts_with("read bandwidth saturates at 4 threads (all on node 0): 8 threads add less than 10% (1.03× (");
        t.assert_says("; up to it each step adds (1 to 2: 1.90× (");
        t.assert_says(", 2 to 4: 1.58× (");
        assert_eq!(f[0].value, 30e9);
    }

    #[test]
    fn a_single_node_ladder_names_no_node_and_one_thread_can_saturate() {
        let ms = vec![
            rung("1", 10e9, 0.01, &[0]),
            rung("2", 10.1e9, 0.01, &[0]),
            rung("all", 10.2e9, 0.01, &[0]),
        ];
        let t = &findings(&ms)[0];
        t.assert_starts_with("read bandwidth saturates at 1 thread: 2 threads add less than 10% (");
    }

    #[test]
    fn a_step_that_neither_adds_nor_stays_flat_makes_it_saturate_by_not_at() {
        let ms = vec![
            rung("1", 10e9, 0.05, &[0]),
            rung("2", 10.6e9, 0.05, &[0]),
            rung("4", 10.6e9, 0.05, &[0]),
            rung("all", 10.6e9, 0.05, &[0]),
        ];
        let t = &findings(&ms)[0];
        t.assert_starts_with("read bandwidth saturates by 2 threads: ");
        t.assert_says("; the step 1 to 2: 1.06× (");
        t.assert_says(") adds no clear amount");
    }

    #[test]
    fn a_ladder_that_keeps_adding_or_ties_widely_shows_no_saturation() {
        let ms = vec![
            rung("1", 10e9, 0.02, &[0]),
            rung("2", 20e9, 0.02, &[0]),
            rung("all", 38e9, 0.02, &[0]),
        ];
        let t = &findings(&ms)[0];
        t.assert_starts_with(
            "read bandwidth: no saturation seen up to 16 threads (the last step, 2 to 16: 1.90× (",
        );
        assert!(!t.text.contains("flat"), "{}", t.text);
        // A tie too wide to call flat is no saturation either.
        let ms = vec![
            rung("1", 10e9, 0.2, &[0]),
            rung("2", 10e9, 0.2, &[0]),
            rung("all", 10e9, 0.2, &[0]),
        ];
        let t = &findings(&ms)[0];
        t.assert_says("no saturation seen up to 16 threads");
        t.assert_says(", not told apart from flat)");
    }

    #[test]
    fn too_short_or_foreign_ladders_say_nothing() {
        // One and every CPU alone: the bandwidth finding's business.
        let ms = vec![rung("1", 10e9, 0.02, &[0]), rung("all", 19e9, 0.02, &[0])];
        assert!(findings(&ms).is_empty());
        // `all` without its thread count, all_dynamic, a zero and a
        // garbled count are not rungs.
        let mut all = rung("all", 30e9, 0.02, &[0]);
        all.details = None;
        let ms = vec![
            rung("1", 10e9, 0.02, &[0]),
            rung("2", 0.0, 0.02, &[0]),
            rung("x", 20e9, 0.02, &[0]),
            Measurement::within(
                "memory.bandwidth.read/threads=all_dynamic",
                "B/s",
                30e9,
                0.02,
            ),
            all,
        ];
        assert!(findings(&ms).is_empty());
    }
}
