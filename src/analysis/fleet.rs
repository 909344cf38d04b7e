//! The fleet view: the latest run of each host side by side, to answer
//! "which of our hosts pays twice as much for a system call, and why".
//!
//! Hosts are grouped by CPU model, kernel release, the storage and net
//! devices their figures came through ([`io_of`]) and the recorded
//! environment variables of their runs (`GLIBC_TUNABLES`, `LD_PRELOAD`...,
//! not the locale, time zone or `LD_LIBRARY_PATH`):
//! only hosts of one kind are expected to agree. Within a group, each figure's spread is
//! measured robustly (median and MAD, so the outliers themselves do not
//! widen it), and a host outside it is flagged with the differences of its
//! description from the rest of its group that may explain it
//! (mitigations, clocksource, transparent huge pages, governor, microcode,
//! the cgroup's limits, allowed CPUs, scheduling and a few more). The rule
//! is in [`Rule`] and docs/statistics.md, "The fleet's outlier rule".

use std::collections::BTreeMap;

use serde::Serialize;

use crate::document::RunDoc;
use crate::headline;
use crate::host::Host;
use crate::stats::{MAD_TO_SIGMA, median};
use crate::units::BaseUnit;

/// Fewest hosts with a figure for its group's spread to mean anything.
pub const MIN_GROUP: usize = 3;

/// When a host's figure is outside its group's spread.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rule {
    /// Scaled MADs from the median (4: about 1 in 16 000 for normal data).
    pub k: f64,
    /// The smallest relative distance from the median flagged (0.10 = 10%):
    /// a group of identical hosts has a MAD near zero, and a 2% difference
    /// is noise between runs, not a finding.
    pub margin: f64,
}

impl Default for Rule {
    fn default() -> Rule {
        Rule {
            k: 4.0,
            margin: 0.10,
        }
    }
}

/// One column: a headline figure or a benchmark.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Column {
    /// What it is (the headline label, or the benchmark id).
    pub label: String,
    /// The base unit (`ns/op`, `B/s`, `ops/s`).
    pub unit: BaseUnit,
    /// True for rates and throughputs.
    pub higher_is_better: bool,
}

/// A fact of the host description that differs from its group's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// The fact (`clocksource`, `THP`, `vulnerability spectre_v2`...).
    pub fact: String,
    /// This host's value.
    pub host: String,
    /// The value most hosts of the group have.
    pub group: String,
}

/// A figure outside its group's spread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Flag {
    /// Index of the column.
    pub column: usize,
    /// The host's value.
    pub value: f64,
    /// The group's median.
    pub median: f64,
    /// value / median.
    pub ratio: f64,
    /// True when the host is worse (slower, or lower throughput).
    pub worse: bool,
}

/// One host: its latest run's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostRow {
    /// Host name.
    pub hostname: String,
    /// The run the figures come from.
    pub run_id: String,
    /// Its start time.
    pub started: String,
    /// One value per column (base unit), None when the run has no such result.
    pub values: Vec<Option<f64>>,
    /// The figures outside the group's spread.
    pub flags: Vec<Flag>,
    /// For a flagged host: how its description differs from its group's.
    pub differences: Vec<Difference>,
    /// Change points its latest run sits after that no other host of its
    /// group shares (see [`flag_changes`]).
    pub changes: Vec<Change>,
}

/// A change point in a host's history ([`crate::analysis::trend`]) that the other
/// hosts of its group do not share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// The benchmark.
    pub benchmark: String,
    /// The change point, as the trend found it.
    pub point: crate::analysis::trend::ChangePoint,
}

/// Hosts of one CPU model, kernel, storage/net device and recorded
/// environment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// CPU model.
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// The storage transport and net interface its figures came through
    /// (`storage virtio_blk; net virtio_net 10000 Mb/s MTU 1500`), empty
    /// when its runs had neither (see [`io_of`]).
    #[serde(default)]
    pub io: String,
    /// The recorded environment variables its hosts' runs had
    /// (`GLIBC_TUNABLES=…`: [`crate::host::Settings::env_key`]), empty
    /// when none or not recorded: a variable that changes what the C
    /// library or an allocator does makes another kind of host.
    #[serde(default)]
    pub settings: String,
    /// The hosts, by name.
    pub hosts: Vec<HostRow>,
    /// Per column: the median of the group's hosts.
    pub medians: Vec<Option<f64>>,
    /// Per column: the range a host may be in without being flagged (None
    /// with fewer than [`MIN_GROUP`] values).
    pub bounds: Vec<Option<(f64, f64)>>,
}

/// The whole view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fleet {
    /// The columns.
    pub columns: Vec<Column>,
    /// The groups, largest first.
    pub groups: Vec<Group>,
    /// The rule hosts were flagged by.
    pub rule: Rule,
}

impl Fleet {
    /// Every flagged host with its group.
    pub fn flagged(&self) -> impl Iterator<Item = (&Group, &HostRow)> {
        self.groups
            .iter()
            .flat_map(|g| g.hosts.iter().map(move |h| (g, h)))
            .filter(|(_, h)| !h.flags.is_empty())
    }

    /// The number of hosts.
    pub fn hosts(&self) -> usize {
        self.groups.iter().map(|g| g.hosts.len()).sum()
    }
}

/// The fleet view of the runs a report shows, when they come from more
/// than one host and some figure is common to them; `None` otherwise.
pub fn of_docs(docs: &[RunDoc]) -> Option<Fleet> {
    let several = docs
        .iter()
        .any(|d| d.host.hostname != docs[0].host.hostname);
    several
        .then(|| build(docs, &[], Rule::default()))
        .filter(|f| !f.columns.is_empty())
}

/// Builds the view of `docs` (one run per host; for a host given twice, its
/// latest run counts). With `patterns`, the columns are the benchmarks they
/// select; without, the headline figures any of the runs has.
pub fn build(docs: &[RunDoc], patterns: &[String], rule: Rule) -> Fleet {
    let docs = latest_per_host(docs);
    let columns: Vec<(Column, Picker)> = if patterns.is_empty() {
        headline::ENTRIES
            .iter()
            .filter_map(|e| {
                let m = docs.iter().find_map(|d| headline::find(d, e.pick))?;
                Some((
                    Column {
                        label: e.label.to_string(),
                        unit: m.unit,
                        higher_is_better: m.higher_is_better(),
                    },
                    Picker::Headline(e.pick),
                ))
            })
            .collect()
    } else {
        let mut cols: Vec<(Column, Picker)> = Vec::new();
        for d in &docs {
            for m in &d.results {
                if patterns.iter().any(|p| crate::pattern::matches(p, &m.id))
                    && !cols.iter().any(|(c, _)| c.label == m.id)
                {
                    cols.push((
                        Column {
                            label: m.id.clone(),
                            unit: m.unit,
                            higher_is_better: m.higher_is_better(),
                        },
                        Picker::Id(m.id.clone()),
                    ));
                }
            }
        }
        cols
    };

    let mut by_kind: BTreeMap<(String, String, String, String), Vec<&RunDoc>> = BTreeMap::new();
    for d in &docs {
        let (cpu, kernel) = kind_of(&d.host);
        let env = d.host.settings.env_key();
        by_kind
            .entry((cpu, kernel, io_of(d), env))
            .or_default()
            .push(d);
    }
    let mut groups: Vec<Group> = by_kind
        .into_iter()
        .map(|((cpu_model, kernel, io, settings), runs)| {
            let mut g = group(cpu_model, kernel, &runs, &columns, rule);
            g.io = io;
            g.settings = settings;
            g
        })
        .collect();
    groups.sort_by(|a, b| {
        b.hosts
            .len()
            .cmp(&a.hosts.len())
            .then_with(|| a.cpu_model.cmp(&b.cpu_model))
    });
    Fleet {
        columns: columns.into_iter().map(|(c, _)| c).collect(),
        groups,
        rule,
    }
}

/// Flags each host with the latest change point of each of its series
/// (benchmark, at the profile of its latest run) when no other host of its
/// group has a change point in that benchmark in the same direction: the
/// host changed and its like did not.
pub fn flag_changes(fleet: &mut Fleet, trend: &crate::analysis::trend::HistoryTrend) {
    let mut latest: BTreeMap<(&str, &str), &crate::analysis::trend::ChangePoint> = BTreeMap::new();
    for s in &trend.series {
        // Change points are newest first.
        if let Some(c) = s.change_points.first() {
            latest.insert((s.host.as_str(), s.id.as_str()), c);
        }
    }
    for g in &mut fleet.groups {
        let names: Vec<String> = g.hosts.iter().map(|h| h.hostname.clone()).collect();
        for h in &mut g.hosts {
            h.changes = latest
                .iter()
                .filter(|((host, _), _)| *host == h.hostname)
                .filter(|((_, bench), c)| {
                    !names.iter().any(|other| {
                        other != &h.hostname
                            && latest
                                .get(&(other.as_str(), *bench))
                                .is_some_and(|o| (o.ratio > 1.0) == (c.ratio > 1.0))
                    })
                })
                .map(|((_, bench), c)| Change {
                    benchmark: bench.to_string(),
                    point: (*c).clone(),
                })
                .collect();
        }
    }
}

/// How a column finds its value in a run.
enum Picker {
    Headline(headline::Pick),
    Id(String),
}

impl Picker {
    fn value(&self, doc: &RunDoc) -> Option<f64> {
        let m = match self {
            Picker::Headline(p) => headline::find(doc, *p),
            Picker::Id(id) => doc.results.iter().find(|m| &m.id == id),
        }?;
        (m.median.is_finite() && m.median > 0.0).then_some(m.median)
    }
}

/// The latest run of each host among `docs`.
fn latest_per_host(docs: &[RunDoc]) -> Vec<&RunDoc> {
    let mut latest: BTreeMap<&str, &RunDoc> = BTreeMap::new();
    for d in docs {
        let e = latest.entry(d.host.hostname.as_str()).or_insert(d);
        if d.run.started > e.run.started {
            *e = d;
        }
    }
    latest.into_values().collect()
}

/// The group key of a host: CPU model and kernel release.
fn kind_of(h: &Host) -> (String, String) {
    (
        h.cpu.model.clone().unwrap_or_else(|| "unknown CPU".into()),
        h.kernel
            .release
            .clone()
            .unwrap_or_else(|| "unknown kernel".into()),
    )
}

/// What a run's storage and net figures came through: the storage
/// location's transport and the driver, speed and MTU of the interface
/// toward a peer (`storage virtio_blk; net virtio_net 10000 Mb/s MTU
/// 1500`); empty when the run has neither. Hosts whose figures came
/// through different devices are not expected to agree, so the fleet
/// groups by it as well.
pub fn io_of(d: &RunDoc) -> String {
    let detail = |prefix: &str, path: &[&str]| {
        d.results
            .iter()
            .filter(|m| m.id.starts_with(prefix))
            .find_map(|m| {
                let mut v = m.details.as_ref()?;
                for k in path {
                    v = v.get(*k)?;
                }
                (!v.is_null()).then(|| v.clone())
            })
    };
    let mut parts = Vec::new();
    if let Some(t) =
        detail("storage.", &["location", "transport"]).and_then(|v| v.as_str().map(String::from))
    {
        parts.push(format!("storage {t}"));
    }
    if let Some(i) = detail("net.peer.", &["interface"]) {
        let mut s = format!("net {}", i["driver"].as_str().unwrap_or("?"));
        if let Some(sp) = i["speed_mbps"].as_u64() {
            s.push_str(&format!(" {sp} Mb/s"));
        }
        if let Some(mtu) = i["mtu"].as_u64() {
            s.push_str(&format!(" MTU {mtu}"));
        }
        parts.push(s);
    }
    parts.join("; ")
}

fn group(
    cpu_model: String,
    kernel: String,
    runs: &[&RunDoc],
    columns: &[(Column, Picker)],
    rule: Rule,
) -> Group {
    let mut hosts: Vec<HostRow> = runs
        .iter()
        .map(|d| HostRow {
            hostname: d.host.hostname.clone(),
            run_id: d.run.id.clone(),
            started: d.run.started.clone(),
            values: columns.iter().map(|(_, p)| p.value(d)).collect(),
            flags: Vec::new(),
            differences: Vec::new(),
            changes: Vec::new(),
        })
        .collect();
    let mut medians = Vec::new();
    let mut bounds = Vec::new();
    for (j, (col, _)) in columns.iter().enumerate() {
        let xs: Vec<f64> = hosts.iter().filter_map(|h| h.values[j]).collect();
        let m = median(&xs);
        medians.push(m);
        let b = m.filter(|_| xs.len() >= MIN_GROUP).and_then(|m| {
            let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
            let mad = median(&dev)? * MAD_TO_SIGMA;
            let half = (rule.k * mad).max(rule.margin * m);
            Some((m - half, m + half))
        });
        bounds.push(b);
        let (Some(m), Some((lo, hi))) = (m, b) else {
            continue;
        };
        for h in &mut hosts {
            if let Some(x) = h.values[j]
                && (x < lo || x > hi)
            {
                h.flags.push(Flag {
                    column: j,
                    value: x,
                    median: m,
                    ratio: x / m,
                    worse: (x > m) != col.higher_is_better,
                });
            }
        }
    }
    // What sets each flagged host apart from its group.
    let facts: Vec<Vec<(String, String)>> = runs.iter().map(|d| d.host.cost_facts()).collect();
    let mut modes: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for f in &facts {
        for (k, v) in f {
            *modes.entry(k).or_default().entry(v).or_default() += 1;
        }
    }
    for (h, f) in hosts.iter_mut().zip(&facts) {
        if h.flags.is_empty() {
            continue;
        }
        for (k, v) in f {
            let common = modes.get(k.as_str()).and_then(|vs| {
                vs.iter()
                    .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                    .map(|(v, _)| *v)
            });
            if let Some(c) = common
                && c != v
            {
                h.differences.push(Difference {
                    fact: k.clone(),
                    host: v.clone(),
                    group: c.to_string(),
                });
            }
        }
    }
    hosts.sort_by(|a, b| a.hostname.cmp(&b.hostname));
    Group {
        cpu_model,
        kernel,
        io: String::new(),
        settings: String::new(),
        hosts,
        medians,
        bounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Measurement;

    fn run(host: &str, getppid_ns: f64, clocksource: &str) -> RunDoc {
        let mut d: RunDoc = serde_json::from_str(crate::analysis::score::reference_json())
            .expect("the reference is a run");
        d.run.id = format!("{:08x}", fastrand::u32(..));
        d.host.hostname = host.into();
        d.host.clocksource = Some(clocksource.into());
        d.results = vec![Measurement::point(
            "syscall.getppid.raw",
            "ns/op",
            getppid_ns,
        )];
        d
    }

    #[test]
    fn the_outlier_of_a_group_is_flagged_with_its_difference() {
        let mut docs: Vec<RunDoc> = (0..20)
            .map(|i| run(&format!("h{i:02}"), 100.0 + i as f64, "tsc"))
            .collect();
        docs.push(run("slow", 250.0, "hpet"));
        let f = build(&docs, &[], Rule::default());
        assert_eq!(f.columns.len(), 1);
        assert_eq!(f.columns[0].label, "system call");
        assert_eq!(f.hosts(), 21);
        let flagged: Vec<_> = f.flagged().collect();
        assert_eq!(flagged.len(), 1, "{flagged:?}");
        let (_, h) = flagged[0];
        assert_eq!(h.hostname, "slow");
        assert!(h.flags[0].worse && h.flags[0].ratio > 2.0);
        assert!(
            h.differences
                .iter()
                .any(|d| d.fact == "clocksource" && d.host == "hpet" && d.group == "tsc"),
            "{:?}",
            h.differences
        );
    }

    #[test]
    fn hosts_are_grouped_by_the_device_their_figures_came_through() {
        let with = |host: &str, transport: &str| {
            let mut d = run(host, 100.0, "tsc");
            let mut m = Measurement::point("storage.seq.read.cold", "B/s", 1e9);
            m.details = Some(serde_json::json!({"location": {"transport": transport}}));
            d.results.push(m);
            let mut n = Measurement::point("net.peer.tcp.stream.one", "B/s", 1e9);
            n.details = Some(serde_json::json!({"interface": {
                "name": "eth0", "driver": "virtio_net", "speed_mbps": 10000, "mtu": 1500}}));
            d.results.push(n);
            d
        };
        let docs = [with("a", "nvme"), with("b", "nvme"), with("c", "usb (uas)")];
        assert_eq!(
            io_of(&docs[2]),
            "storage usb (uas); net virtio_net 10000 Mb/s MTU 1500"
        );
        let f = build(&docs, &["storage".to_string()], Rule::default());
        assert_eq!(f.groups.len(), 2);
        assert_eq!(f.groups[0].hosts.len(), 2);
        assert!(
            f.groups[0].io.starts_with("storage nvme"),
            "{}",
            f.groups[0].io
        );
        assert_eq!(io_of(&run("d", 1.0, "tsc")), "");
    }

    #[test]
    fn small_groups_and_the_latest_run_of_a_host() {
        let mut a = run("a", 100.0, "tsc");
        a.run.started = "2026-01-01T00:00:00Z".into();
        let mut a2 = run("a", 300.0, "tsc");
        a2.run.started = "2026-01-02T00:00:00Z".into();
        let b = run("b", 100.0, "tsc");
        let f = build(&[a, a2, b], &["syscall".to_string()], Rule::default());
        assert_eq!(f.hosts(), 2);
        assert_eq!(f.columns[0].label, "syscall.getppid.raw");
        let row = &f.groups[0].hosts[0];
        assert_eq!((row.hostname.as_str(), row.values[0]), ("a", Some(300.0)));
        // Two hosts are too few for a spread: nothing is flagged.
        assert_eq!(f.groups[0].bounds[0], None);
        assert_eq!(f.flagged().count(), 0);
    }

    #[test]
    fn a_change_point_only_one_host_of_a_group_has_is_flagged() {
        use crate::analysis::trend::{ChangePoint, HistoryTrend, Method, Series, Split};
        let docs: Vec<RunDoc> = ["a", "b", "c"]
            .iter()
            .map(|h| run(h, 100.0, "tsc"))
            .collect();
        let mut f = build(&docs, &[], Rule::default());
        let cp = |ratio: f64| ChangePoint {
            run: "7e000011".into(),
            started: "2026-03-17T10:00:00Z".into(),
            split: Split {
                index: 16,
                ratio,
                ci_low: ratio * 0.98,
                ci_high: ratio * 1.02,
                p: 0.002,
                recorded: false,
            },
            env_changes: Vec::new(),
        };
        let series = |host: &str, id: &str, c: Vec<ChangePoint>| Series {
            id: id.into(),
            host: host.into(),
            profile: "quick".into(),
            unit: BaseUnit::NsPerOp,
            runs: 24,
            analysed: true,
            noise: Some(0.01),
            min_step: Some(0.05),
            change_points: c,
            points: Vec::new(),
        };
        let t = HistoryTrend {
            series: vec![
                series("a", "syscall.getppid.raw", vec![cp(1.08)]),
                series("b", "syscall.getppid.raw", vec![]),
                series("a", "syscall.getpid.raw", vec![cp(1.08)]),
                series("b", "syscall.getpid.raw", vec![cp(1.10)]),
                series("c", "syscall.getpid.raw", vec![cp(0.9)]),
            ],
            method: Method::default(),
        };
        flag_changes(&mut f, &t);
        let changes = |name: &str| {
            f.groups[0]
                .hosts
                .iter()
                .find(|h| h.hostname == name)
                .map(|h| {
                    h.changes
                        .iter()
                        .map(|c| c.benchmark.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap()
        };
        // getpid: a and b both became slower, c faster alone.
        assert_eq!(changes("a"), vec!["syscall.getppid.raw".to_string()]);
        assert!(changes("b").is_empty());
        assert_eq!(changes("c"), vec!["syscall.getpid.raw".to_string()]);
    }

    #[test]
    fn kernels_and_cpus_make_separate_groups() {
        let mut docs: Vec<RunDoc> = (0..4)
            .map(|i| run(&format!("x{i}"), 100.0, "tsc"))
            .collect();
        for (i, d) in docs.iter_mut().enumerate().take(2) {
            d.host.kernel.release = Some("6.1.0".into());
            d.results[0].summary.median = 500.0 + i as f64;
        }
        let f = build(&docs, &[], Rule::default());
        assert_eq!(f.groups.len(), 2);
        assert_eq!(f.flagged().count(), 0, "each kind agrees with itself");
    }

    #[test]
    fn hosts_started_with_another_tunable_make_another_group() {
        let nowhere = std::path::Path::new("/nonexistent");
        let mut docs: Vec<RunDoc> = (0..6)
            .map(|i| run(&format!("t{i}"), 100.0 + i as f64, "tsc"))
            .collect();
        for (i, d) in docs.iter_mut().enumerate() {
            // The locale differs from host to host and splits nothing.
            let lang = if i % 2 == 0 { "C.UTF-8" } else { "de_DE.UTF-8" };
            let mut env = vec![("LANG", lang)];
            if i < 3 {
                env.push(("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2"));
                d.results[0].summary.median = 300.0 + i as f64;
            }
            d.host.settings = crate::host::Settings::read_at(nowhere, env);
        }
        let f = build(&docs, &[], Rule::default());
        let mut keys: Vec<&str> = f.groups.iter().map(|g| g.settings.as_str()).collect();
        keys.sort();
        assert_eq!(keys, ["", "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2"]);
        assert_eq!(f.flagged().count(), 0, "each kind agrees with itself");
    }
}
