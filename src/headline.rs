//! The headline price list: about fifteen figures that answer "what does
//! this machine cost", each with its unit and a gloss in plain words.
//!
//! The list is a table of (selector, label, gloss) entries. A selector names
//! a benchmark id, an id prefix (the first result of a run whose id starts
//! with it: how suites that may or may not be present are named), or a
//! memory level, resolved against the run's own cache sizes. An entry the
//! run has no result for is simply left out.

use crate::document::RunDoc;
use crate::harness::Measurement;
use crate::units::{ValueUnit, parse_quantity};

/// How an entry finds its result in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Exactly this benchmark id.
    Id(&'static str),
    /// The first result (in run order) whose id starts with the first of
    /// these prefixes that any result has: a suite's headline figure, then
    /// anything of the suite.
    Prefix(&'static [&'static str]),
    /// Random-access latency inside cache level N: the largest
    /// `memory.latency.random` working set at most half of that level
    /// (and above the level below), sizes as the run's curve shows them;
    /// none when the run's findings say the level was not found, or when
    /// its fast end is not clearly between the level below and memory.
    Cache(u8),
    /// Random-access latency in main memory: the largest working set, when
    /// it is at least twice the last cache level.
    Dram,
}

/// One line of the price list as declared.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// How the result is found.
    pub pick: Pick,
    /// What it is, in a few words.
    pub label: &'static str,
    /// What it means, in plain words.
    pub gloss: &'static str,
}

/// The price list, in the order it is shown.
pub static ENTRIES: &[Entry] = &[
    Entry {
        pick: Pick::Id("syscall.function_call"),
        label: "function call",
        gloss: "a plain call and return: the smallest unit of work",
    },
    Entry {
        pick: Pick::Id("syscall.getppid.raw"),
        label: "system call",
        gloss: "the cheapest trip into the kernel and back",
    },
    Entry {
        pick: Pick::Id("syscall.clock_gettime.monotonic.vdso"),
        label: "clock read (vDSO)",
        gloss: "asking the time without entering the kernel",
    },
    Entry {
        pick: Pick::Id("ipc.pipe.rtt/8B/same"),
        label: "pipe round trip, same CPU",
        gloss: "two processes on one core passing a message there and back",
    },
    Entry {
        pick: Pick::Id("ipc.pipe.rtt/8B/cross"),
        label: "pipe round trip, two CPUs",
        gloss: "the same across two cores: wake-ups and cache-line transfers",
    },
    Entry {
        pick: Pick::Id("ipc.pipe.rtt/8B/same-package"),
        label: "pipe round trip, other L3 or node",
        gloss: "the same between two cores of one package that share no cache",
    },
    Entry {
        pick: Pick::Id("ipc.pipe.rtt/8B/cross-package"),
        label: "pipe round trip, two packages",
        gloss: "the same between two sockets: the wake-up crosses the interconnect",
    },
    Entry {
        pick: Pick::Id("topology.c2c.cas/same-l3"),
        label: "cache line between two cores",
        gloss: "a compare-and-swap handed to a core sharing the L3 and back",
    },
    Entry {
        pick: Pick::Id("topology.c2c.cas/same-package"),
        label: "cache line across L3 groups",
        gloss: "the same between cores of one package with no cache in common",
    },
    Entry {
        pick: Pick::Id("topology.c2c.cas/cross-package"),
        label: "cache line across packages",
        gloss: "the same between two sockets",
    },
    Entry {
        pick: Pick::Id("ipc.tcp.rtt/8B/same"),
        label: "TCP round trip (loopback)",
        gloss: "a request and its reply through the whole network stack, no wire",
    },
    Entry {
        pick: Pick::Id("process.thread"),
        label: "thread start",
        gloss: "creating a thread and joining it",
    },
    Entry {
        pick: Pick::Id("process.fork_exec/rss=0B"),
        label: "fork + exec",
        gloss: "starting a new program from a small process",
    },
    Entry {
        pick: Pick::Cache(1),
        label: "L1 hit",
        gloss: "a dependent load that finds its data in the first-level cache",
    },
    Entry {
        pick: Pick::Cache(2),
        label: "L2 hit",
        gloss: "the same load served by the second-level cache",
    },
    Entry {
        pick: Pick::Cache(3),
        label: "L3 hit",
        gloss: "the same load served by the last-level cache",
    },
    Entry {
        pick: Pick::Dram,
        label: "main-memory load",
        gloss: "a cache miss all the way to DRAM (TLB misses included)",
    },
    Entry {
        pick: Pick::Id("memory.numa.latency/cpu_node=0/mem_node=1"),
        label: "remote-memory load",
        gloss: "a cache miss to the other NUMA node's DRAM: a CPU of node 0, memory of node 1",
    },
    Entry {
        pick: Pick::Id("memory.bandwidth.copy/threads=1"),
        label: "memory copy",
        gloss: "memcpy of a buffer far larger than the caches, one thread",
    },
    Entry {
        pick: Pick::Id("memory.bandwidth.stream_triad/threads=all"),
        label: "memory bandwidth, all CPUs",
        gloss: "STREAM triad on every CPU at once: what the memory system can feed",
    },
    Entry {
        pick: Pick::Id("storage.rand.read.qd1"),
        label: "4 KiB random read",
        gloss: "one uncached block read from the disk, waiting for each",
    },
    Entry {
        pick: Pick::Id("storage.sync.fsync"),
        label: "fsync",
        gloss: "making a small write durable: what every commit waits for",
    },
    Entry {
        pick: Pick::Id("crypto.aes256gcm.encrypt/16KiB"),
        label: "AES-256-GCM",
        gloss: "encrypting and authenticating data",
    },
    Entry {
        pick: Pick::Id("crypto.sha256/16KiB"),
        label: "SHA-256",
        gloss: "hashing data",
    },
    Entry {
        pick: Pick::Id("cpu.integer.primes"),
        label: "integer score",
        gloss: "sysbench-style prime counting up to 10000, events per second",
    },
    Entry {
        pick: Pick::Prefix(&["text.cmp.icu.tertiary/sv", "text.cmp.", "text."]),
        label: "word compare (collation)",
        gloss: "ordering two words as a language's dictionary does (collation)",
    },
    Entry {
        pick: Pick::Prefix(&["codec.json.zstd-1.compress", "codec."]),
        label: "compression",
        gloss: "compressing data (JSON with zstd at its fastest level when measured)",
    },
    Entry {
        pick: Pick::Prefix(&["net.loopback.tcp.crr", "net.loopback.tcp.rr/", "net."]),
        label: "TCP connect + request",
        gloss: "opening a connection, one request and its reply, closing (loopback)",
    },
];

/// One line of the price list as found in a run.
#[derive(Clone, Debug)]
pub struct Line<'a> {
    /// The declared entry.
    pub entry: &'static Entry,
    /// The result it found.
    pub m: &'a Measurement,
}

impl Line<'_> {
    /// The entry's gloss, and for a memory level the working set whose
    /// median it shows: the memory findings give each level's plateau at
    /// its fast end, another figure of the same level, so the two name
    /// what each is.
    pub fn gloss(&self) -> String {
        match self.entry.pick {
            Pick::Cache(_) | Pick::Dram => {
                let at = self
                    .m
                    .id
                    .strip_prefix("memory.latency.random/")
                    .and_then(parse_quantity)
                    .map(|(x, _)| crate::units::approx_size(x as u64))
                    .unwrap_or_default();
                format!("{} (the median at a {at} working set)", self.entry.gloss)
            }
            _ => self.entry.gloss.to_string(),
        }
    }
}

/// The price list of `doc`: every entry the run has a result for, in order.
pub fn lines(doc: &RunDoc) -> Vec<Line<'_>> {
    ENTRIES
        .iter()
        .filter_map(|e| find(doc, e.pick).map(|m| Line { entry: e, m }))
        .collect()
}

/// The result an entry picks in `doc`, if any.
pub fn find(doc: &RunDoc, pick: Pick) -> Option<&Measurement> {
    let usable = |m: &&Measurement| m.median.is_finite() && m.median > 0.0;
    match pick {
        Pick::Id(id) => doc.results.iter().filter(usable).find(|m| m.id == id),
        Pick::Prefix(prefixes) => prefixes.iter().find_map(|p| {
            doc.results
                .iter()
                .filter(usable)
                .find(|m| m.id.starts_with(p))
        }),
        Pick::Cache(level) => {
            if not_found(doc, level) {
                return None;
            }
            let size = cache_size(doc, level)?;
            let below = if level > 1 {
                cache_size(doc, level - 1).unwrap_or(0)
            } else {
                0
            };
            let m = latency_points(doc)
                .filter(|(x, _)| *x <= size / 2 && *x > below)
                .max_by_key(|(x, _)| *x)
                .map(|(_, m)| m)?;
            // A cache's latency sits clearly between its neighbours':
            // never a memory latency under a cache's name.
            let step = crate::suites::memory::detect::MIN_STEP;
            let under_memory = find(doc, Pick::Dram).is_none_or(|d| m.p5 * step <= d.p5);
            let over_below =
                level == 1 || find(doc, Pick::Cache(level - 1)).is_none_or(|b| m.p5 >= b.p5 * step);
            (under_memory && over_below).then_some(m)
        }
        Pick::Dram => {
            let last = (1..=4).filter_map(|l| cache_size(doc, l)).max()?;
            latency_points(doc)
                .filter(|(x, _)| *x >= last.saturating_mul(2))
                .max_by_key(|(x, _)| *x)
                .map(|(_, m)| m)
        }
    }
}

/// The size of cache level `level`: as the memory suite detected it on the
/// run's latency curve (its finding `L1d ~48 KiB @ ...`, value in bytes),
/// else as sysfs gives it. Detection first, because a virtual machine's
/// sysfs may name a last-level cache its share of the host does not have.
fn cache_size(doc: &RunDoc, level: u8) -> Option<u64> {
    let name = if level == 1 {
        "L1d ~".to_string()
    } else {
        format!("L{level} ~")
    };
    let detected = doc
        .findings
        .iter()
        .find(|f| f.area == "memory" && f.text.starts_with(&name) && f.unit == ValueUnit::Bytes)
        .map(|f| f.value as u64);
    detected.filter(|s| *s > 0).or_else(|| {
        doc.host
            .caches
            .iter()
            .find(|c| c.level == level && c.kind != "Instruction")
            .map(|c| c.size_bytes)
            .filter(|s| *s > 0)
    })
}

/// True when the memory suite's findings say the run's curve did not
/// show cache level `level` (`L3 not found: ...`), or ended well inside it
/// (`L3 (sysfs: 480 MiB) past the curve's end ...`: the curve's top may be
/// memory as well as that cache).
fn not_found(doc: &RunDoc, level: u8) -> bool {
    let name = if level == 1 {
        "L1d".to_string()
    } else {
        format!("L{level}")
    };
    let (missing, beyond) = (format!("{name} not found"), format!("{name} (sysfs: "));
    doc.findings.iter().any(|f| {
        f.area == "memory" && (f.text.starts_with(&missing) || f.text.starts_with(&beyond))
    })
}

/// The random-order latency curve: (working set in bytes, result).
fn latency_points(doc: &RunDoc) -> impl Iterator<Item = (u64, &Measurement)> {
    doc.results.iter().filter_map(|m| {
        let label = m.id.strip_prefix("memory.latency.random/")?;
        let (x, bytes) = parse_quantity(label)?;
        (bytes && m.median.is_finite() && m.median > 0.0).then_some((x as u64, m))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::CacheInfo;

    /// The shipped reference run with these results and known cache sizes.
    fn doc(results: Vec<Measurement>) -> RunDoc {
        let mut d: RunDoc = serde_json::from_str(crate::analysis::score::reference_json())
            .expect("the reference is a run");
        d.host.caches = [(1, 32u64 << 10), (2, 1 << 20), (3, 32 << 20)]
            .into_iter()
            .map(|(level, size_bytes)| CacheInfo {
                level,
                kind: if level == 1 { "Data" } else { "Unified" }.into(),
                size_bytes,
                line_bytes: Some(64),
                ..CacheInfo::default()
            })
            .collect();
        d.results = results;
        d.findings.clear();
        d
    }

    /// A random-order latency curve: `memory.latency.random/SIZE` at each
    /// (SIZE, ns) point.
    fn curve(points: &[(&str, f64)]) -> Vec<Measurement> {
        points
            .iter()
            .map(|(s, ns)| Measurement::point(&format!("memory.latency.random/{s}"), "ns/op", *ns))
            .collect()
    }

    /// The size of the latency row [`find`] picks for `p` (`16MiB`).
    fn picked(d: &RunDoc, p: Pick) -> Option<&str> {
        find(d, p).map(|m| m.id.trim_start_matches("memory.latency.random/"))
    }

    #[test]
    fn entries_are_about_fifteen_and_glossed() {
        // The placement levels only servers have (other L3, other package,
        // remote memory) add six that a one-socket machine never shows.
        let levels = ENTRIES
            .iter()
            .filter(|e| {
                matches!(e.pick, Pick::Id(id) if id.ends_with("-package")
                    || id.starts_with("topology.")
                    || id.starts_with("memory.numa"))
            })
            .count();
        assert_eq!(levels, 6);
        assert!((15..=25).contains(&(ENTRIES.len() - levels + 1)));
        for e in ENTRIES {
            assert!(!e.label.is_empty() && e.gloss.len() > 10, "{e:?}");
        }
    }

    #[test]
    fn missing_entries_are_skipped_and_order_is_kept() {
        let d = doc(vec![
            Measurement::point("process.thread", "ns/op", 20_000.0),
            Measurement::point("syscall.function_call", "ns/op", 1.5),
            Measurement::point("net.other", "ns/op", 1.0),
            Measurement::point("net.loopback.tcp.crr", "ns/op", 50_000.0),
        ]);
        let l = lines(&d);
        let ids: Vec<&str> = l.iter().map(|x| x.m.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "syscall.function_call",
                "process.thread",
                "net.loopback.tcp.crr"
            ]
        );
    }

    #[test]
    fn remote_memory_is_a_line_on_machines_with_a_second_node_only() {
        let remote = "memory.numa.latency/cpu_node=0/mem_node=1";
        let d = doc(vec![
            Measurement::point("memory.numa.latency/cpu_node=0/mem_node=0", "ns/op", 90.0),
            Measurement::point(remote, "ns/op", 140.0),
        ]);
        let l = lines(&d);
        assert_eq!(l.len(), 1);
        assert_eq!(
            (l[0].m.id.as_str(), l[0].entry.label),
            (remote, "remote-memory load")
        );
        assert!(
            lines(&doc(vec![Measurement::point(
                "syscall.function_call",
                "ns/op",
                1.5
            )]))
            .iter()
            .all(|x| !x.m.id.starts_with("memory.numa."))
        );
    }

    #[test]
    fn cache_levels_pick_points_inside_each_level() {
        let d = doc(curve(&[
            ("4KiB", 1.2),
            ("16KiB", 1.2),
            ("64KiB", 3.7),
            ("512KiB", 4.0),
            ("4MiB", 16.0),
            ("16MiB", 17.0),
            ("256MiB", 110.0),
        ]));
        assert_eq!(picked(&d, Pick::Cache(1)), Some("16KiB"));
        assert_eq!(picked(&d, Pick::Cache(2)), Some("512KiB"));
        assert_eq!(picked(&d, Pick::Cache(3)), Some("16MiB"));
        assert_eq!(picked(&d, Pick::Dram), Some("256MiB"));
        assert_eq!(picked(&d, Pick::Cache(4)), None);
    }

    #[test]
    fn a_level_not_found_or_at_memory_latency_gets_no_cache_line() {
        let with_l3 = |l3_ns: f64| {
            curve(&[
                ("16KiB", 1.2),
                ("256KiB", 3.7),
                ("16MiB", l3_ns),
                ("256MiB", 110.0),
            ])
        };
        // The curve found no L3: the line is left out, not filled from sysfs.
        let mut d = doc(with_l3(16.0));
        d.findings = vec![crate::harness::Finding {
            area: "memory".into(),
            text: "L3 not found: no plateau between L2 (3.7 ns) and memory (110 ns)".into(),
            value: 32.0 * 1048576.0,
            unit: ValueUnit::Bytes,
        }];
        assert!(find(&d, Pick::Cache(3)).is_none());
        assert!(find(&d, Pick::Cache(2)).is_some());
        // The curve ended well inside the L3 sysfs lists: no L3 line either.
        d.findings[0].text = "L3 (sysfs: 480 MiB) past the curve's end at 64 MiB: a load there takes 66.8 ns (its fast end), which a curve this short cannot place in a share of the L3 usable here or in memory; use a longer profile".into();
        assert!(find(&d, Pick::Cache(3)).is_none());
        assert!(find(&d, Pick::Cache(2)).is_some());
        // No findings, sysfs only, and the point inside "L3" is at memory
        // latency (a shared host): no L3 line either.
        let d = doc(with_l3(105.0));
        assert!(find(&d, Pick::Cache(3)).is_none());
        let d = doc(with_l3(16.0));
        assert_eq!(picked(&d, Pick::Cache(3)), Some("16MiB"));
    }

    #[test]
    fn detected_levels_win_over_sysfs() {
        let mut d = doc(curve(&[
            ("16KiB", 1.2),
            ("256KiB", 3.7),
            ("768KiB", 15.0),
            ("16MiB", 100.0),
            ("256MiB", 110.0),
        ]));
        // sysfs says 1 MiB of L2 and 32 MiB of L3, the curve 378 KiB and 1.7 MiB.
        let level = |text: &str, value: f64| crate::harness::Finding {
            area: "memory".into(),
            text: text.into(),
            value,
            unit: ValueUnit::Bytes,
        };
        d.findings = vec![
            level("L2 ~378 KiB @ 3.75 ns; sysfs: 512 KiB", 378.0 * 1024.0),
            level(
                "L3 ~1.7 MiB @ 14.1 ns; sysfs: 32 MiB, which the curve contradicts",
                1.7 * 1048576.0,
            ),
        ];
        assert_eq!(picked(&d, Pick::Cache(3)), Some("768KiB"));
        assert_eq!(picked(&d, Pick::Dram), Some("256MiB"));
    }
}
