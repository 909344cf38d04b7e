//! Storage: file-system and device costs without page-cache lies (E6 disk,
//! E7, E15), each result naming where it was measured.
//!
//! Every benchmark works in a private directory inside the run's `--dir`
//! (removed on drop, also on Ctrl-C), sizes its files to the free space,
//! and attaches the location block (file system, mount options, block
//! device resolved through partitions, device-mapper and md to the physical
//! devices, the scheduler that really applies) to its result. Buffered,
//! synced and O_DIRECT variants are kept apart so that a page-cache figure
//! is never mistaken for the device's.

pub mod bonnie;
pub mod common;
pub mod location;
pub mod meta;
pub mod rand;
pub mod seq;
pub mod sync;
pub mod tree;

use std::path::Path;

use serde::Deserialize;

use super::{Suite, get, ratio_finding};
use crate::harness::{Bench, Finding, Measurement};
use crate::host::Host;
use crate::units::{fmt_ratio, human, human_bytes};
use location::Location;

/// Below this hot/cold ratio the "cold" read was probably served from a cache.
const COLD_AS_HOT: f64 = 1.5;

/// The storage suite.
pub fn suite() -> Suite {
    Suite {
        name: "storage",
        summary: "sequential and random I/O, fsync latency, metadata, small files, stdio vs block; with the device and scheduler in effect",
        benches,
        findings,
    }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let mut v = seq::benches();
    v.extend(rand::benches());
    v.extend(sync::benches());
    v.extend(meta::benches());
    v.extend(tree::benches());
    v.extend(bonnie::benches());
    v
}

/// The first storage result's location block, if any result has one.
fn location_of(ms: &[Measurement]) -> Option<&serde_json::Value> {
    ms.iter()
        .filter(|m| m.area == "storage")
        .find_map(|m| m.details.as_ref()?.get("location"))
}

/// The finding that names where the storage results were measured, from
/// the location block as results carry it.
fn location_finding(v: &serde_json::Value) -> Option<Finding> {
    let loc = Location::deserialize(v).ok()?;
    // Each benchmark wrote in its own subdirectory: name the parent (--dir).
    if loc.dir.is_empty() {
        return None;
    }
    let d = Path::new(&loc.dir);
    let dir = d.parent().unwrap_or(d).display();
    let fs_type = if loc.fs_type.is_empty() {
        "unknown file system"
    } else {
        &loc.fs_type
    };
    let fs = match loc.journal {
        Some(false) => format!("{fs_type} without a journal"),
        _ => fs_type.to_string(),
    };
    let opts = loc
        .mount_options
        .as_ref()
        .map(|o| format!(" ({o})"))
        .unwrap_or_default();
    let physical: Vec<&str> = loc.physical.iter().map(|p| p.name.as_str()).collect();
    let on = match (&loc.device, loc.device_kind.as_deref()) {
        (Some(d), Some("disk") | None) => format!(" on {d}"),
        (Some(d), Some(k)) => format!(" on {d} ({k}) over {}", physical.join(", ")),
        (None, _) => String::new(),
    };
    let or = |s: &str, none: &str| {
        if s.is_empty() {
            none.to_string()
        } else {
            s.to_string()
        }
    };
    let sched = match loc.device {
        Some(_) => format!(
            "; scheduler in effect: {} ({})",
            or(&loc.scheduler, "unknown"),
            loc.scheduler_note
        ),
        None => format!("; {}", or(&loc.scheduler_note, "no block device")),
    };
    let rot = match loc.rotational {
        Some(true) => "; the device reports itself rotational",
        Some(false) => "; non-rotational",
        None => "",
    };
    let free = loc.free_bytes.map(|f| f as f64);
    let free_text = free
        .map(|f| format!("; {} free", human_bytes(f)))
        .unwrap_or_default();
    Some(Finding {
        area: "storage".into(),
        text: format!("measured in {dir}: {fs}{opts}{on}{sched}{rot}{free_text}"),
        value: free.unwrap_or(0.0),
        unit: "B".into(),
    })
}

fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(f) = location_of(ms).and_then(location_finding) {
        out.push(f);
    }
    let med = |id: &str| get(ms, id).map(|m| m.median);

    if let (Some(buf), Some(durable)) = (med(seq::WRITE_BUFFERED), med(seq::WRITE_FDATASYNC)) {
        let r = buf / durable;
        out.push(ratio_finding(
            "storage",
            format!(
                "buffered writes ({}) look {} faster than durable ones ({} with fdatasync): the page cache absorbs them",
                human(buf, "B/s"),
                fmt_ratio(r),
                human(durable, "B/s")
            ),
            r,
        ));
    }
    if let (Some(hot), Some(cold)) = (med(seq::READ_HOT), med(seq::READ_COLD)) {
        let r = hot / cold;
        let why = if r < COLD_AS_HOT {
            "the cold read is nearly as fast as the cached one, so the file was probably still cached (tmpfs, a network or a caching file system)"
        } else {
            "without dropping the cache, a read benchmark measures memory"
        };
        out.push(ratio_finding(
            "storage",
            format!(
                "a cache-hot reread ({}) is {} the speed of a cold read ({}): {why}",
                human(hot, "B/s"),
                fmt_ratio(r),
                human(cold, "B/s")
            ),
            r,
        ));
    }
    if let (Some(cold), Some(direct)) = (med(seq::READ_COLD), med(seq::READ_DIRECT)) {
        let r = cold / direct;
        out.push(ratio_finding(
            "storage",
            format!(
                "buffered cold reads with readahead run at {} the speed of 1 MiB O_DIRECT reads ({} vs {})",
                fmt_ratio(r),
                human(cold, "B/s"),
                human(direct, "B/s")
            ),
            r,
        ));
    }
    if let Some(m) = get(ms, rand::READ_QD1) {
        if let Some(p) = &m.per_op {
            out.push(Finding {
                area: "storage".into(),
                text: format!(
                    "random 4 KiB read at queue depth 1: median {}, p99 {} over {} reads",
                    human(p.p50, "ns"),
                    human(p.p99, "ns"),
                    p.count
                ),
                value: p.p99,
                unit: "ns/op".into(),
            });
        }
        let deep = rand::deep_id();
        if let Some(iops) = med(&deep) {
            let qd1_iops = 1e9 / m.median;
            let r = iops / qd1_iops;
            out.push(ratio_finding(
                "storage",
                format!(
                    "{} random reads in flight give {} the IOPS of one at a time ({} vs {})",
                    rand::DEPTH,
                    fmt_ratio(r),
                    human(iops, "ops/s"),
                    human(qd1_iops, "ops/s")
                ),
                r,
            ));
        }
    }
    for (id, what) in [(sync::FDATASYNC, "fdatasync"), (sync::FSYNC, "fsync")] {
        if let Some(p) = get(ms, id).and_then(|m| m.per_op.as_ref()) {
            out.push(Finding {
                area: "storage".into(),
                text: format!(
                    "a 4 KiB log write made durable with {what}: median {}, p99 {} (at most {:.0} commits/s for a log that syncs each one)",
                    human(p.p50, "ns"),
                    human(p.p99, "ns"),
                    1e9 / p.p50
                ),
                value: p.p99,
                unit: "ns/op".into(),
            });
        }
    }
    out.extend(small_files_verdicts(ms));
    for (what, cached, device, how) in [
        (
            "block writes",
            bonnie::WRITE_BLOCK,
            bonnie::WRITE_BLOCK_SYNCED,
            "synced",
        ),
        (
            "per-character writes",
            bonnie::WRITE_PERCHAR,
            bonnie::WRITE_PERCHAR_SYNCED,
            "synced",
        ),
        (
            "block reads",
            bonnie::READ_BLOCK,
            bonnie::READ_BLOCK_COLD,
            "uncached",
        ),
        (
            "per-character reads",
            bonnie::READ_PERCHAR,
            bonnie::READ_PERCHAR_COLD,
            "uncached",
        ),
    ] {
        if let (Some(c), Some(d)) = (med(cached), med(device))
            && d > 0.0
        {
            out.push(ratio_finding(
                "storage",
                format!(
                    "bonnie {what} reaching the device ({how}; the figure to set beside bonnie++'s): {}, against {} in the page cache ({} the device figure)",
                    human(d, "B/s"),
                    human(c, "B/s"),
                    fmt_ratio(c / d)
                ),
                c / d,
            ));
        }
    }
    for (dir, perchar, block) in [
        ("write", bonnie::WRITE_PERCHAR, bonnie::WRITE_BLOCK),
        ("read", bonnie::READ_PERCHAR, bonnie::READ_BLOCK),
    ] {
        if let (Some(ch), Some(bl)) = (med(perchar), med(block)) {
            let r = bl / ch;
            out.push(ratio_finding(
                "storage",
                format!(
                    "8 KiB block {dir}s move bytes {} faster than per-character stdio ({} vs {})",
                    fmt_ratio(r),
                    human(bl, "B/s"),
                    human(ch, "B/s")
                ),
                r,
            ));
        }
    }
    out
}

/// Id of writing and syncing the small-file tree (declared in `tree`).
const TREE_WRITE: &str = "storage.tree.write";
/// Id of reading the small-file tree back, not cached (declared in `tree`).
const TREE_READ: &str = "storage.tree.read";

/// Small files against throughput: the time the tree's files took, and
/// the time the same bytes take at the sequential rate of the same kind
/// (synced writes against durable sequential writes, cold reads against
/// cold sequential reads). The ratio is what small files cost on this
/// device beyond their bytes.
fn small_files_verdicts(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let cases = [
        (
            TREE_WRITE,
            [seq::WRITE_FDATASYNC, seq::WRITE_DIRECT],
            "creating and syncing",
            "durable sequential",
        ),
        (
            TREE_READ,
            [seq::READ_COLD, seq::READ_DIRECT],
            "reading back (not cached)",
            "cold sequential",
        ),
    ];
    for (tree_id, seq_ids, doing, kind) in cases {
        let Some(t) = get(ms, tree_id) else { continue };
        let detail = |k: &str| t.details.as_ref()?.get(k)?.as_f64();
        let (Some(files), Some(bytes)) = (detail("files"), detail("bytes")) else {
            continue;
        };
        let Some(rate) = seq_ids
            .iter()
            .find_map(|id| get(ms, id).map(|m| m.median))
            .filter(|r| *r > 0.0)
        else {
            continue;
        };
        if t.median <= 0.0 || files <= 0.0 {
            continue;
        }
        let small = files / t.median;
        let at_rate = bytes / rate;
        out.push(ratio_finding(
            "storage",
            format!(
                "{doing} {files:.0} small files ({}) takes {} here; at the {kind} rate ({}) the same bytes would take {}: small files cost {} their bytes",
                human_bytes(bytes),
                human(small * 1e9, "ns"),
                human(rate, "B/s"),
                human(at_rate * 1e9, "ns"),
                fmt_ratio(small / at_rate)
            ),
            small / at_rate,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_location_finding_names_dir_fs_device_and_scheduler() {
        let loc = serde_json::json!({
            "dir": "/data/opcost-storage-abc",
            "fs_type": "xfs",
            "mount_options": "rw,noatime",
            "device": "dm-0",
            "device_kind": "LVM volume vg-data (device-mapper)",
            "physical": [{"name": "sda"}, {"name": "sdb"}],
            "scheduler": "mq-deadline",
            "scheduler_note": "dm-0 is bio-based",
            "rotational": false,
            "free_bytes": 1073741824u64,
        });
        let f = location_finding(&loc).unwrap();
        assert!(
            f.text
                .starts_with("measured in /data: xfs (rw,noatime) on dm-0"),
            "{}",
            f.text
        );
        assert!(f.text.contains("sda, sdb"), "{}", f.text);
        assert!(f.text.contains("mq-deadline"), "{}", f.text);
        assert_eq!(f.unit, "B");
        assert_eq!(f.value, 1073741824.0);
    }

    #[test]
    fn a_tmpfs_location_says_there_is_no_device() {
        let loc = serde_json::json!({
            "dir": "/dev/shm/opcost-storage-x",
            "fs_type": "tmpfs",
            "scheduler": "n/a",
            "scheduler_note": "no block device: tmpfs keeps files in memory",
        });
        let f = location_finding(&loc).unwrap();
        assert!(f.text.contains("no block device"), "{}", f.text);
        let ext4 = serde_json::json!({"dir": "/a/b", "fs_type": "ext4", "journal": false});
        let f = location_finding(&ext4).unwrap();
        assert!(f.text.contains("ext4 without a journal"), "{}", f.text);
        assert_eq!(f.value, 0.0, "free space unknown: still a finite value");
    }

    fn m(id: &str, unit: &str, median: f64, p50_p99: Option<(f64, f64)>) -> Measurement {
        let per_op = p50_p99.map(|(p50, p99)| {
            serde_json::json!({"count": 100, "p50": p50, "p90": p99, "p99": p99, "max": p99, "bimodal": false})
        });
        serde_json::from_value(serde_json::json!({
            "id": id, "area": "storage", "unit": unit, "params": {},
            "median": median, "min": median, "max": median, "mean": median,
            "p5": median, "p95": median, "mad": 0.0, "ci_low": median, "ci_high": median,
            "cv": 0.0, "outliers": {"low_severe": 0, "low_mild": 0, "high_mild": 0, "high_severe": 0},
            "ops_per_sample": 1, "noisy": false, "warnings": [], "per_op": per_op,
            "details": {"location": {"dir": "/d/opcost-storage-1", "fs_type": "ext4", "device": "vda",
                        "device_kind": "disk", "scheduler": "none", "scheduler_note": "x",
                        "free_bytes": 1e9}},
            "samples": [median],
        }))
        .unwrap()
    }

    #[test]
    fn findings_state_ratios_and_tails() {
        let ms = vec![
            m("storage.seq.write.buffered", "B/s", 8e9, None),
            m("storage.seq.write.fdatasync", "B/s", 4e8, None),
            m("storage.seq.read.hot", "B/s", 1e10, None),
            m("storage.seq.read.cold", "B/s", 1e9, None),
            m(
                "storage.rand.read.qd1",
                "ns/op",
                100_000.0,
                Some((90_000.0, 400_000.0)),
            ),
            m("storage.rand.read.qd16", "ops/s", 50_000.0, None),
            m("storage.sync.fdatasync", "ns/op", 2e6, Some((1.5e6, 9e6))),
        ];
        let f = findings(&ms);
        let find = |s: &str| {
            f.iter()
                .find(|f| f.text.contains(s))
                .unwrap_or_else(|| panic!("no '{s}' in {f:?}"))
        };
        assert!(find("measured in /d:").text.contains("ext4"));
        assert_eq!(find("buffered writes").value, 20.0);
        let hot = find("cache-hot reread");
        assert_eq!(hot.value, 10.0);
        assert!(hot.text.contains("measures memory"));
        let tail = find("queue depth 1");
        assert_eq!((tail.value, tail.unit.as_str()), (400_000.0, "ns/op"));
        // 50k IOPS vs 10k at QD1
        assert_eq!(find("in flight").value, 5.0);
        assert!(find("fdatasync: median").text.contains("p99 9.00 ms"));
        for x in &f {
            assert!(x.value.is_finite() && x.value > 0.0, "{x:?}");
        }
    }

    #[test]
    fn small_files_get_a_verdict_against_the_sequential_rate() {
        let mut w = m("storage.tree.write", "ops/s", 2_000.0, None);
        w.details = Some(serde_json::json!({"files": 1000, "bytes": 8_000_000u64}));
        let mut r = m("storage.tree.read", "ops/s", 10_000.0, None);
        r.details = w.details.clone();
        let ms = vec![
            w,
            r,
            m("storage.seq.write.fdatasync", "B/s", 80e6, None),
            m("storage.seq.read.direct", "B/s", 400e6, None),
        ];
        let f = small_files_verdicts(&ms);
        assert_eq!(f.len(), 2, "{f:?}");
        // 1000 files at 2000/s = 0.5 s; 8 MB at 80 MB/s = 0.1 s.
        assert!(
            f[0].text
                .starts_with("creating and syncing 1000 small files"),
            "{}",
            f[0].text
        );
        assert!(
            f[0].text.contains("500 ms") && f[0].text.contains("100 ms"),
            "{}",
            f[0].text
        );
        assert!((f[0].value - 5.0).abs() < 1e-9);
        assert_eq!(f[0].unit, "x");
        // Reads fall back to the O_DIRECT rate: 0.1 s vs 0.02 s.
        assert!((f[1].value - 5.0).abs() < 1e-9, "{}", f[1].value);
        assert!(
            findings(&ms)
                .iter()
                .any(|x| x.text.contains("small files cost"))
        );
        let ms = vec![
            m("storage.bonnie.write.block", "B/s", 2e9, None),
            m("storage.bonnie.write.block.synced", "B/s", 1e8, None),
        ];
        let b = findings(&ms);
        let b = b
            .iter()
            .find(|f| f.text.contains("reaching the device"))
            .unwrap();
        assert_eq!(b.value, 20.0);
        // Without the tree's details there is nothing to say.
        let bare = vec![
            m("storage.tree.write", "ops/s", 2_000.0, None),
            m("storage.seq.write.fdatasync", "B/s", 80e6, None),
        ];
        assert!(small_files_verdicts(&bare).is_empty());
    }

    #[test]
    fn a_cold_read_as_fast_as_a_hot_one_is_called_suspicious() {
        let ms = vec![
            m("storage.seq.read.hot", "B/s", 1e10, None),
            m("storage.seq.read.cold", "B/s", 9e9, None),
        ];
        let f = findings(&ms);
        assert!(
            f.iter().any(|f| f.text.contains("probably still cached")),
            "{f:?}"
        );
    }

    #[test]
    fn no_results_no_findings() {
        assert!(findings(&[]).is_empty());
    }
}
