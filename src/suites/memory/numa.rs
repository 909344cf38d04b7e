//! NUMA memory: load latency and one thread's read bandwidth from each
//! node's CPUs to each node's memory, as a node × node matrix (what Intel
//! MLC's latency and bandwidth matrices show), with the distances the
//! firmware declares (ACPI SLIT, `node*/distance`) beside the measured
//! ratios.
//!
//! Placement is set, not hoped for: the measuring thread is pinned to a CPU
//! of the from-node (the node's last usable CPU, as the same-CPU benchmarks
//! avoid CPU 0's interrupts), the memory is bound to the to-node with
//! `mbind(MPOL_BIND)` before its first touch, and after the touch a sample
//! of its pages is asked where it lives (`move_pages` in query mode). A
//! page found anywhere else makes the entry a skip that says where the
//! pages went (a cpuset whose `mems` exclude the node, a kernel without
//! NUMA support), never a number under the wrong name.
//!
//! The matrix is registered only on machines that have one: at least two
//! entries (two nodes with CPUs, or one with CPUs and a memory-only node).
//! On one node the single entry would restate `memory.latency.random` at
//! its largest size, and a class the machine lacks is left out, as the
//! placement classes are. At the quick profile the row of the first node
//! with CPUs (local and every remote memory from it) runs in the whole
//! machine run; the other rows only when a pattern selects them.

use serde_json::json;

use super::bandwidth::{self, Kernel, Plan};
use super::findings::finding;
use super::latency::{self, Chase};
use super::region::{Pages, Region, bind, verify};
use super::{BANDWIDTH_BUDGET, LATENCY_BUDGET, array_bytes_for};
use crate::harness::affinity::Pinned;
use crate::harness::claims::{Est, Verdict, compare, with_typical_width};
use crate::harness::{Bench, Ctx, Finding, Measurement, PrepareError, Timed, Unit};
use crate::host::{Host, Topology};
use crate::suites::bench::FnBench;
use crate::units::{BaseUnit, ValueUnit, human, human_ns};

/// The distance sysfs declares between a node and itself.
pub const LOCAL_DISTANCE: u32 = 10;

/// The id of an entry of the latency matrix.
pub fn latency_id(cpu_node: u32, mem_node: u32) -> String {
    format!("memory.numa.latency/cpu_node={cpu_node}/mem_node={mem_node}")
}

/// The id of an entry of the read bandwidth matrix.
pub fn read_id(cpu_node: u32, mem_node: u32) -> String {
    format!("memory.numa.read/cpu_node={cpu_node}/mem_node={mem_node}")
}

/// One entry of the matrix: where the thread runs and where its memory is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The node whose CPU runs the measuring thread.
    pub cpu_node: u32,
    /// The node the memory is bound to.
    pub mem_node: u32,
    /// The CPU of `cpu_node` that runs it (its last usable one).
    pub cpu: usize,
    /// The declared distance from `cpu_node` to `mem_node`, when sysfs gives it.
    pub distance: Option<u32>,
    /// The declared distance from `cpu_node` to itself.
    pub local: Option<u32>,
}

impl Entry {
    /// The facts recorded with the entry's results.
    fn details(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut d = serde_json::Map::new();
        d.insert("cpu".into(), json!(self.cpu));
        d.insert("cpu_node".into(), json!(self.cpu_node));
        d.insert("mem_node".into(), json!(self.mem_node));
        d.insert("declared_distance".into(), json!(self.distance));
        d.insert("declared_local_distance".into(), json!(self.local));
        d
    }
}

/// The matrix of `t`: every node with usable CPUs against every node with
/// memory (a node whose meminfo says 0 bytes has none; one that says
/// nothing is kept), from-nodes first; empty when it would have fewer
/// than two entries.
pub fn matrix(t: &Topology) -> Vec<Entry> {
    let mem_nodes: Vec<u32> = t
        .nodes
        .iter()
        .filter(|n| n.memory_bytes != Some(0))
        .map(|n| n.id)
        .collect();
    let mut out = Vec::new();
    for from in t.nodes.iter() {
        let Some(&cpu) = from.cpus.last() else {
            continue;
        };
        for &to in &mem_nodes {
            out.push(Entry {
                cpu_node: from.id,
                mem_node: to,
                cpu,
                distance: t.distance(from.id, to),
                local: t.distance(from.id, from.id),
            });
        }
    }
    if out.len() < 2 { Vec::new() } else { out }
}

/// A random chase run from a CPU of one node through memory of another.
struct NumaChase {
    chase: Chase,
    /// Keeps the measuring thread on the from-node's CPU.
    _pin: Pinned,
}

impl Timed for NumaChase {
    fn run(&mut self, ops: u64) -> anyhow::Result<std::time::Duration> {
        self.chase.run(ops)
    }
    fn warnings(&self) -> Vec<String> {
        self.chase.warnings()
    }
    fn details(&self) -> Option<serde_json::Value> {
        self.chase.details()
    }
}

/// A skip when the run is pinned (`--cpu`) to a CPU other than `cpu`.
fn needs_cpu(ctx: &Ctx, cpu: usize) -> Result<(), PrepareError> {
    match ctx.cpu {
        Some(c) if c != cpu => Err(PrepareError::Skip(format!(
            "the run is pinned to CPU {c} (--cpu) and this entry needs CPU {cpu}; run without --cpu"
        ))),
        _ => Ok(()),
    }
}

/// The working set (latency) or array (bandwidth) of an entry: as the
/// bandwidth arrays are sized, 4x the last-level cache within the profile's
/// cap, `alive` of them at once; with the caveat when a cap kept it smaller.
fn entry_bytes(ctx: &Ctx, alive: usize) -> Result<(usize, Option<String>), PrepareError> {
    array_bytes_for(ctx, alive, bandwidth::PASS)
}

/// Prepares the latency entry `e`; `alive` entries share its interleaved group.
fn prepare_latency(e: &Entry, ctx: &Ctx, alive: usize) -> Result<Box<dyn Timed>, PrepareError> {
    needs_cpu(ctx, e.cpu)?;
    let pin = Pinned::to(e.cpu).map_err(|err| PrepareError::Skip(format!("{err:#}")))?;
    let (bytes, note) = entry_bytes(ctx, alive)?;
    let mut region = Region::untouched(bytes, Pages::Small)?;
    bind(&region, e.mem_node)?;
    region.touch();
    let placement = verify(std::slice::from_ref(&region), e.mem_node)?;
    let mut details = e.details();
    details.insert("working_set_bytes".into(), json!(bytes));
    details.insert("pages".into(), json!(Pages::Small.name()));
    details.insert("placement".into(), placement.details());
    let mut chase = latency::chase_in(region, ctx, serde_json::Value::Object(details))?;
    if let Some(n) = note {
        chase.warn(n);
    }
    Ok(Box::new(NumaChase { chase, _pin: pin }))
}

/// Prepares the read bandwidth entry `e` (one thread, pinned by the kernel's runner).
fn prepare_read(e: &Entry, ctx: &Ctx, alive: usize) -> Result<Box<dyn Timed>, PrepareError> {
    needs_cpu(ctx, e.cpu)?;
    let (bytes, note) = entry_bytes(ctx, alive)?;
    bandwidth::prepare(Plan {
        kernel: Kernel::Read,
        array_bytes: bytes,
        pass_bytes: bandwidth::pass_bytes(1),
        cpus: vec![e.cpu],
        warnings: note.into_iter().collect(),
        bind: Some(e.mem_node),
        extra: e.details(),
    })
}

/// The matrix's benchmarks on `host`: a latency and a read bandwidth per
/// entry, each row (one from-node) interleaved so that local and remote
/// memory are measured in the same rounds.
pub fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let entries = matrix(&host.topology);
    let first = entries.first().map(|e| e.cpu_node);
    let mut out = Vec::new();
    for e in &entries {
        let row = entries.iter().filter(|x| x.cpu_node == e.cpu_node).count();
        let quick = Some(e.cpu_node) == first;
        let (cpu, mem) = (e.cpu_node, e.mem_node);
        let le = e.clone();
        let lat = entry_bench(
            e,
            latency_id(cpu, mem),
            "latency",
            format!("dependent loads in random order from a CPU of node {cpu} through memory bound to node {mem} (4 KiB pages)"),
            Unit::Latency,
            move |ctx: &Ctx| prepare_latency(&le, ctx, row),
        )
        .budget_scale(LATENCY_BUDGET);
        let re = e.clone();
        let read = entry_bench(
            e,
            read_id(cpu, mem),
            "read",
            format!("sum of 64-bit words streamed by one thread on node {cpu} from memory bound to node {mem} (bytes read)"),
            Unit::Throughput {
                bytes_per_op: bandwidth::pass_bytes(1) as f64,
            },
            move |ctx: &Ctx| prepare_read(&re, ctx, row),
        )
        .param("threads", 1)
        .param("accounting", Kernel::Read.accounting())
        .with_budget(BANDWIDTH_BUDGET);
        for b in [lat, read] {
            out.push(if quick { b } else { b.on_request() }.boxed());
        }
    }
    out
}

/// The row `id` of entry `e` in the matrix `kind` (`latency`, `read`): its
/// nodes as parameters, interleaved with the other rows of its CPU's node.
fn entry_bench(
    e: &Entry,
    id: String,
    kind: &str,
    summary: String,
    unit: Unit,
    prepare: impl Fn(&Ctx) -> Result<Box<dyn Timed>, PrepareError> + Send + Sync + 'static,
) -> FnBench {
    FnBench::new(id, summary, unit, prepare)
        .param("cpu_node", e.cpu_node)
        .param("mem_node", e.mem_node)
        .interleave(format!("memory.numa.{kind}/cpu_node={}", e.cpu_node))
}

/// The entries of one matrix (`memory.numa.KIND/`) measured in a run:
/// (from-node, to-node, measurement).
fn measured<'a>(ms: &'a [Measurement], kind: &str) -> Vec<(u32, u32, &'a Measurement)> {
    let prefix = format!("memory.numa.{kind}/");
    ms.iter()
        .filter(|m| m.id.starts_with(&prefix))
        .filter(|m| m.median > 0.0 && m.median.is_finite())
        .filter_map(|m| {
            let node = |k: &str| m.param(k)?.parse::<u32>().ok();
            Some((node("cpu_node")?, node("mem_node")?, m))
        })
        .collect()
}

/// A declared distance recorded with a result.
fn declared(m: &Measurement, key: &str) -> Option<u32> {
    let v = m.details.as_ref()?.get(key)?.as_u64()?;
    u32::try_from(v).ok().filter(|&d| d > 0)
}

/// What the firmware declares beside a measured ratio `r`, and where the
/// ratio's interval lies against it.
fn declared_text(m: &Measurement, r: &crate::harness::claims::Ratio) -> String {
    let (Some(d), Some(l)) = (
        declared(m, "declared_distance"),
        declared(m, "declared_local_distance"),
    ) else {
        return "; the firmware declares no distances".to_string();
    };
    let k = f64::from(d) / f64::from(l);
    let against = match r.against(k) {
        Some(true) => "the measured interval lies above it",
        Some(false) => "the measured interval lies below it",
        None => "the measured interval holds it",
    };
    format!(
        "; the firmware declares {} (distance {d} vs {l}): {against}",
        crate::units::fmt_ratio(k)
    )
}

/// The matrices in words: per from-node and remote memory node, how much
/// slower a load and how much lower one thread's read bandwidth are than
/// on the local node, decided on the row's intervals (pooled over the
/// matrix, as the other memory rankings are), with the declared distance.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (kind, what) in [("latency", "latency"), ("read", "read bandwidth")] {
        let entries = measured(ms, kind);
        let ests = with_typical_width(&entries.iter().map(|e| Est::of(e.2)).collect::<Vec<_>>());
        for (i, &(from, to, m)) in entries.iter().enumerate() {
            if from == to {
                continue;
            }
            let Some(j) = entries.iter().position(|x| x.0 == from && x.1 == from) else {
                continue;
            };
            let (local, remote) = (&ests[j], &ests[i]);
            let fmt = |e: &Est| match kind {
                "latency" => human_ns(e.value),
                _ => human(e.value, BaseUnit::BytesPerSec),
            };
            let cpu = m
                .details
                .as_ref()
                .and_then(|d| d.get("cpu")?.as_u64())
                .map(|c| format!(" (CPU {c})"))
                .unwrap_or_default();
            // The local entry against the remote one: "better" is the local
            // memory being faster, whatever the unit; `as_remote` is how many
            // times slower the remote memory is (local speed over remote).
            let v = compare(local, remote);
            let (slower, faster) = match kind {
                "latency" => ("slower", "faster"),
                _ => ("lower", "higher"),
            };
            let (verdict, as_remote) = match v {
                Verdict::Better(r) => (format!("{r} {slower}"), r),
                Verdict::Worse(r) => (format!("{r} {faster}"), inverse(r)),
                Verdict::Tie(r) => (format!("no clear difference ({r})"), r),
            };
            out.push(finding(
                format!(
                    "{what} of memory on node {to} from node {from}{cpu}: {} against {} local, {verdict}{}",
                    fmt(remote),
                    fmt(local),
                    declared_text(m, &as_remote)
                ),
                as_remote.ratio,
                ValueUnit::Ratio,
            ));
        }
    }
    out
}

/// `1 / r` with its interval: the remote side's cost over the local one's
/// when `r` is the local side's speed over the remote one's.
fn inverse(r: crate::harness::claims::Ratio) -> crate::harness::claims::Ratio {
    crate::harness::claims::Ratio {
        ratio: 1.0 / r.ratio,
        low: 1.0 / r.high,
        high: 1.0 / r.low,
    }
}

#[cfg(test)]
mod tests {
    use super::super::region::{Placement, SAMPLE_PAGES, sample_pages};
    use super::*;
    use crate::harness::find_starting;
    use crate::host::fixtures::{self, Tree};
    use crate::os::numa::node_mask;

    fn topology(tree: &Tree) -> Topology {
        Host::detect_at(tree.write().path()).topology
    }

    fn host(tree: &Tree) -> Host {
        Host::detect_at(tree.write().path())
    }

    #[test]
    fn a_two_socket_machine_has_a_two_by_two_matrix_from_each_nodes_last_cpu() {
        let m = matrix(&topology(&fixtures::two_socket_guest()));
        let pairs: Vec<(u32, u32, usize)> =
            m.iter().map(|e| (e.cpu_node, e.mem_node, e.cpu)).collect();
        assert_eq!(pairs, [(0, 0, 3), (0, 1, 3), (1, 0, 7), (1, 1, 7)]);
        assert_eq!((m[1].distance, m[1].local), (Some(20), Some(10)));
        let m = matrix(&topology(&fixtures::epyc(1)));
        assert_eq!(m.len(), 4);
        assert_eq!((m[0].cpu, m[2].cpu), (95, 127));
        assert_eq!(m[1].distance, Some(32));
    }

    #[test]
    fn a_memory_only_node_is_a_column_and_never_a_row() {
        let m = matrix(&topology(&fixtures::xeon_snc()));
        assert_eq!(m.len(), 4 * 5);
        assert!(m.iter().all(|e| e.cpu_node != 4));
        let cxl: Vec<_> = m.iter().filter(|e| e.mem_node == 4).collect();
        assert_eq!(cxl.len(), 4);
        assert_eq!(cxl[0].distance, Some(24));
    }

    #[test]
    fn one_node_has_no_matrix() {
        for tree in [
            fixtures::two_vcpu_guest(),
            fixtures::arm_board(),
            fixtures::hybrid(),
            Tree::default(),
        ] {
            assert!(matrix(&topology(&tree)).is_empty());
            assert!(benches(&host(&tree)).is_empty());
        }
    }

    #[test]
    fn a_cpuset_without_a_nodes_cpus_leaves_its_row_out_but_keeps_its_memory() {
        let mut tree = fixtures::epyc(1);
        tree.allowed("0-31,64-95");
        let m = matrix(&topology(&tree));
        let pairs: Vec<(u32, u32)> = m.iter().map(|e| (e.cpu_node, e.mem_node)).collect();
        assert_eq!(pairs, [(0, 0), (0, 1)]);
    }

    #[test]
    fn ids_name_both_nodes_and_only_the_first_row_runs_in_a_quick_whole_machine_run() {
        let b = benches(&host(&fixtures::epyc(2)));
        assert_eq!(b.len(), 4 * 4 * 2);
        let ids: BTreeSet<&str> = b.iter().map(|b| b.id()).collect();
        assert_eq!(ids.len(), b.len(), "ids are unique");
        assert!(ids.contains("memory.numa.latency/cpu_node=0/mem_node=3"));
        assert!(ids.contains("memory.numa.read/cpu_node=3/mem_node=0"));
        for b in &b {
            let first_row = b.id().contains("/cpu_node=0/");
            assert_eq!(b.on_request(), !first_row, "{}", b.id());
            assert!(b.runs_at(crate::harness::Profile::Quick));
            let key = b.interleave().unwrap();
            assert!(b.id().starts_with(key), "{} in {key}", b.id());
            assert_eq!(
                b.params()["mem_node"],
                b.id().rsplit('=').next().unwrap().parse::<u32>().unwrap()
            );
        }
    }

    use std::collections::BTreeSet;

    #[test]
    fn placement_counts_pages_by_node_and_says_where_the_others_went() {
        let p = Placement::of(&[1, 1, 0, -2, 1], 1);
        assert_eq!((p.checked, p.on_node), (5, 3));
        assert!(!p.verified());
        assert_eq!(
            p.reason(1),
            "3 of 5 sampled pages on node 1; 1 not present, 1 on node 0"
        );
        assert!(Placement::of(&[0, 0], 0).verified());
        assert!(
            !Placement::of(&[], 0).verified(),
            "nothing asked is nothing verified"
        );
        assert!(
            Placement::of(&[-14], 0)
                .reason(0)
                .contains("1 unreadable (errno 14)")
        );
        assert_eq!(
            Placement::of(&[2, 2], 2).details(),
            json!({"pages_checked": 2, "pages_on_node": 2})
        );
    }

    #[test]
    fn sampled_pages_spread_over_the_region_within_it() {
        let s = sample_pages(1 << 20, 64 << 20, 4096);
        assert_eq!(s.len(), SAMPLE_PAGES);
        assert_eq!(s[0], 1 << 20);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(*s.last().unwrap() < (1 << 20) + (64 << 20));
        assert_eq!(sample_pages(0, 3 * 4096, 4096), [0, 4096, 8192]);
        assert_eq!(sample_pages(0, 100, 4096), [0]);
    }

    #[test]
    fn the_node_mask_has_one_bit_and_a_spare_word() {
        assert_eq!(node_mask(0), [1, 0]);
        assert_eq!(node_mask(3), [8, 0]);
        let m = node_mask(65);
        assert_eq!(m.len(), 3);
        assert_eq!(m[1], 2);
    }

    #[test]
    fn memory_bound_to_this_machines_first_node_is_found_there() {
        if crate::emulation_exception("qemu-user 7.2 has no mbind nor move_pages (ENOSYS)") {
            return;
        }
        let Some(node) = Host::detect().topology.nodes.first().map(|n| n.id) else {
            return; // no NUMA in this kernel: nothing to bind to
        };
        let mut r = Region::untouched(4 << 20, Pages::Small).unwrap();
        bind(&r, node).unwrap();
        r.touch();
        let p = verify(std::slice::from_ref(&r), node).unwrap();
        assert!(p.verified() && p.checked == SAMPLE_PAGES, "{p:?}");
        // A node that does not exist is a skip that names it.
        let r = Region::untouched(1 << 20, Pages::Small).unwrap();
        match bind(&r, 1000) {
            Err(PrepareError::Skip(why)) => assert!(why.contains("node 1000"), "{why}"),
            other => panic!("expected a skip, got {:?}", other.err()),
        }
        // Untouched memory is nowhere: a skip saying so, not a number.
        let r = Region::untouched(1 << 20, Pages::Small).unwrap();
        match verify(std::slice::from_ref(&r), node) {
            Err(PrepareError::Skip(why)) => assert!(why.contains("not present"), "{why}"),
            other => panic!("expected a skip, got {other:?}"),
        }
    }

    /// A matrix entry's measurement with its declared distances.
    fn entry(
        kind: &str,
        from: u32,
        to: u32,
        v: f64,
        rel: f64,
        dist: Option<(u32, u32)>,
    ) -> Measurement {
        let (id, unit) = match kind {
            "latency" => (latency_id(from, to), "ns/op"),
            _ => (read_id(from, to), "B/s"),
        };
        let mut m = Measurement::within(&id, unit, v, rel);
        m.params.insert("cpu_node".into(), json!(from));
        m.params.insert("mem_node".into(), json!(to));
        let (d, l) = dist.map_or((None, None), |(d, l)| (Some(d), Some(l)));
        m.details = Some(json!({
            "cpu": from * 4 + 3,
            "declared_distance": d,
            "declared_local_distance": l,
        }));
        m
    }

    #[test]
    fn remote_memory_is_worded_against_local_and_the_declared_distance() {
        let ms = vec![
            entry("latency", 0, 0, 100.0, 0.03, Some((10, 10))),
            entry("latency", 0, 1, 160.0, 0.03, Some((20, 10))),
            entry("read", 0, 0, 10e9, 0.03, Some((10, 10))),
            entry("read", 0, 1, 6e9, 0.03, Some((20, 10))),
        ];
        let f = findings(&ms);
        assert_eq!(f.len(), 2, "{f:#?}");
        let lat = find_starting(&f, "latency of memory on node 1 from node 0 (CPU 3): ");
        lat.assert_says("160 ns against 100 ns local, 1.60× (");
        lat.assert_says(") slower; the firmware declares 2.00× (distance 20 vs 10): the measured interval lies below it");
        assert!((lat.value - 1.6).abs() < 1e-9, "{}", lat.value);
        let bw = find_starting(
            &f,
            "read bandwidth of memory on node 1 from node 0 (CPU 3): ",
        );
        bw.assert_says(") lower; the firmware");
        assert!((bw.value - 10.0 / 6.0).abs() < 1e-9, "{}", bw.value);
        // A measured ratio as large as declared is held by its interval.
        let ms = vec![
            entry("latency", 0, 0, 100.0, 0.03, Some((10, 10))),
            entry("latency", 0, 1, 200.0, 0.03, Some((20, 10))),
        ];
        findings(&ms)[0].assert_says(": the measured interval holds it");
    }

    #[test]
    fn remote_memory_within_noise_of_local_is_a_tie_whichever_side_is_ahead() {
        for remote in [101.0, 99.0] {
            let ms = vec![
                entry("latency", 1, 1, 100.0, 0.05, None),
                entry("latency", 1, 0, remote, 0.05, None),
            ];
            let f = findings(&ms);
            f[0].assert_says("latency of memory on node 0 from node 1 (CPU 7): ");
            f[0].assert_says(" local, no clear difference (");
            f[0].assert_says("; the firmware declares no distances");
            assert!(!f[0].text.contains("slower"), "{}", f[0].text);
        }
    }

    #[test]
    fn entries_without_a_local_one_or_their_nodes_say_nothing() {
        // Only remote memory measured: nothing to set it against.
        let ms = vec![entry("latency", 0, 1, 160.0, 0.03, None)];
        assert!(findings(&ms).is_empty());
        // No node parameters (an old or foreign document): not an entry.
        let mut bare = entry("latency", 0, 0, 100.0, 0.03, None);
        bare.params.clear();
        let ms = vec![bare, entry("latency", 0, 1, 160.0, 0.03, None)];
        assert!(findings(&ms).is_empty());
        // A zero or nonsense distance is no declaration.
        let mut m = entry("latency", 0, 1, 160.0, 0.03, None);
        m.details = Some(json!({"declared_distance": 0, "declared_local_distance": "x"}));
        let ms = vec![entry("latency", 0, 0, 100.0, 0.03, None), m];
        findings(&ms)[0].assert_says("the firmware declares no distances");
        // A zero median is no measurement.
        let ms = vec![
            entry("latency", 0, 0, 0.0, 0.03, None),
            entry("latency", 0, 1, 160.0, 0.03, None),
        ];
        assert!(findings(&ms).is_empty());
    }
}
