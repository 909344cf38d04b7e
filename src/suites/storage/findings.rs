//! What the storage results say: where they were measured, buffered
//! against durable writes, cache-hot against cold and O_DIRECT reads, the
//! tails of one read and one commit at a time, deep queues, small files
//! against the sequential rate, and bonnie's per-character against block
//! I/O, in the page cache and on the device.
//!
//! Every word that orders two results ("faster", "within noise", whether
//! the cold read was still cached) comes from
//! [`crate::harness::claims`], decided by the intervals of the medians,
//! never by their point estimates; a per-operation distribution with two
//! modes is named as bimodal instead of being read at one of its levels.

use std::path::Path;

use serde::Deserialize;

use super::{bonnie, rand, seq, sync};
use crate::harness::claims::{self, Est, Ratio, Verdict, compare, speedup};
use crate::harness::{Finding, Measurement, OpStats};
use crate::host::location::Location;
use crate::suites::bench::{get, ratio_finding};
use crate::units::{BaseUnit, ValueUnit, fmt_ratio, human, human_bytes};

/// Below this hot/cold ratio the "cold" read was probably served from a
/// cache; the verdict needs the ratio's whole interval on one side of it.
const COLD_AS_HOT: f64 = 1.5;

/// Id of writing and syncing the small-file tree (declared in `tree`).
const TREE_WRITE: &str = "storage.tree.write";
/// Id of reading the small-file tree back, not cached (declared in `tree`).
const TREE_READ: &str = "storage.tree.read";

/// Every storage finding of a run.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(f) = location_of(ms).and_then(location_finding) {
        out.push(f);
    }
    out.extend(buffered_vs_durable(ms));
    out.extend(hot_vs_cold(ms));
    out.extend(cold_vs_direct(ms));
    out.extend(random_reads(ms));
    for (id, what) in [(sync::FDATASYNC, "fdatasync"), (sync::FSYNC, "fsync")] {
        if let Some(p) = get(ms, id).and_then(|m| m.per_op.as_ref()) {
            out.push(Finding {
                area: "storage".into(),
                text: format!(
                    "a 4 KiB log write made durable with {what}: {} (at most {:.0} commits/s for a log that syncs each one)",
                    tail_text(p),
                    1e9 / p.p50
                ),
                value: p.p99,
                unit: BaseUnit::NsPerOp.into(),
            });
        }
    }
    out.extend(small_files_verdicts(ms));
    out.extend(bonnie_device(ms));
    out.extend(bonnie_perchar_vs_block(ms));
    out.extend(cpu_limits(ms));
    out.extend(stalls(ms));
    out
}

/// How much longer the flood's p99 must be than the idle one, over the
/// whole interval of the ratio, to be called a stall: a tail is noisier
/// from run to run than its interval says.
const STALL_FACTOR: f64 = 2.0;

/// The tail an operation's flood row shows against its idle row: the
/// figures (max, p99 under the flood, median idle) and the word, decided
/// by the p99s' distribution-free intervals ([`claims::quantile_est`],
/// open where too few operations bound a side), with the dirty limits in
/// force and how far the flood's dirty pages rose.
fn stalls(ms: &[Measurement]) -> Vec<Finding> {
    use super::stall::{Op, id};
    let mut out = Vec::new();
    for (op, what) in [
        (Op::Fsync, "a 4 KiB write + fsync"),
        (Op::Read, "a 4 KiB read from the device"),
        (Op::Stat, "a stat"),
    ] {
        let (Some(flood), Some(idle)) = (get(ms, &id(op, true)), get(ms, &id(op, false))) else {
            continue;
        };
        let (Some(fp), Some(ip)) = (flood.per_op.as_ref(), idle.per_op.as_ref()) else {
            continue;
        };
        // The p99s with their distribution-free intervals over every
        // operation of the used rounds (open sides stay open).
        let p99_est = |p: &OpStats| Est {
            value: p.p99,
            low: p.p99_low.unwrap_or(f64::MIN_POSITIVE),
            high: p.p99_high.unwrap_or(f64::INFINITY),
            higher_is_better: false,
            source: None,
        };
        let (fo, io) = (fp.count, ip.count);
        let verdict = match (Some(p99_est(fp)), Some(p99_est(ip))) {
            (Some(f), Some(i)) => {
                let r = speedup(&i, &f);
                match claims::compare_beyond(&i, &f, STALL_FACTOR) {
                    Verdict::Better(_) => format!(
                        "the flood stretches its p99 {} ({fo} operations under it, {io} idle)",
                        r.text(),
                    ),
                    _ => format!(
                        "its p99 under the flood cannot be told {STALL_FACTOR:.0}× the idle one ({fo} vs {io} operations; {})",
                        r.text()
                    ),
                }
            }
            _ => "too few operations to compare the tails".to_string(),
        };
        let det = flood.details.as_ref();
        let limits = det
            .and_then(|d| d.get("location")?.get("writeback").cloned())
            .and_then(|w| serde_json::from_value::<crate::host::device::Writeback>(w).ok())
            .map(|w| format!("; {}", w.describe()))
            .unwrap_or_default();
        let peak = det
            .and_then(|d| d.get("flood_peak_dirty_bytes")?.as_f64())
            .filter(|b| *b > 0.0)
            .map(|b| {
                format!(
                    "; dirty pages peaked at {} during the flood",
                    human_bytes(b)
                )
            })
            .unwrap_or_default();
        out.push(Finding {
            area: "storage".into(),
            text: format!(
                "{what} waits up to {} (p99 {}) while the device absorbs buffered writes; idle it takes {} (p99 {}): {verdict}{limits}{peak}",
                human(fp.max, BaseUnit::NsPerOp),
                human(fp.p99, BaseUnit::NsPerOp),
                human(ip.p50, BaseUnit::NsPerOp),
                human(ip.p99, BaseUnit::NsPerOp),
            ),
            value: fp.p99,
            unit: BaseUnit::NsPerOp.into(),
        });
    }
    out
}

/// What limits each sequential row (one thread moves the data): the CPU
/// or the device, from the CPU its samples kept busy.
fn cpu_limits(ms: &[Measurement]) -> Vec<Finding> {
    [
        seq::WRITE_BUFFERED,
        seq::WRITE_FDATASYNC,
        seq::WRITE_DIRECT,
        seq::READ_COLD,
        seq::READ_DIRECT,
        seq::READ_HOT,
    ]
    .iter()
    .filter_map(|id| res(ms, id))
    .filter_map(|m| crate::suites::bench::cpu_limit_finding(m, 1.0, "the device"))
    .collect()
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
    let dir = where_text(d.parent().unwrap_or(d));
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
    let on = format!("{on}{}", transport_text(&loc));
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
        unit: ValueUnit::Bytes,
    })
}

/// " via virtio_blk (queue 256 requests, read-ahead 4096 KiB, wbt 75 ms)":
/// the transport of the physical devices and the first one's queue.
fn transport_text(loc: &Location) -> String {
    let Some(t) = loc.transport.as_deref() else {
        return String::new();
    };
    let q = loc.physical.iter().find_map(|p| p.queue.as_ref());
    let mut parts = Vec::new();
    if let Some(q) = q {
        if let Some(n) = q.nr_requests {
            parts.push(format!("queue {n} requests"));
        }
        if let Some(r) = q.read_ahead_kb {
            parts.push(format!("read-ahead {r} KiB"));
        }
        match q.wbt_lat_usec {
            Some(0) => parts.push("write-back throttling off".to_string()),
            Some(w) => parts.push(format!("write-back throttling at {} ms", w / 1000)),
            None => {}
        }
    }
    if parts.is_empty() {
        format!(" via {t}")
    } else {
        format!(" via {t} ({})", parts.join(", "))
    }
}

/// The directory a run wrote in, as the location finding names it: the
/// run's own private temp dir (`opcost-XXXXXX` in the system's temp dir,
/// a new random name each run) by where it lives, any other by its path.
fn where_text(dir: &Path) -> String {
    let private = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("opcost-"));
    match dir.parent() {
        Some(tmp) if private && tmp == std::env::temp_dir() => {
            format!("a private temporary directory in {}", tmp.display())
        }
        _ => dir.display().to_string(),
    }
}

/// A result with a usable median.
fn res<'a>(ms: &'a [Measurement], id: &str) -> Option<&'a Measurement> {
    get(ms, id).filter(|m| m.median.is_finite() && m.median > 0.0)
}

fn rate(m: &Measurement) -> String {
    human(m.median, BaseUnit::BytesPerSec)
}

/// `a` against `b` in words: "`a` R faster than `b`", the other way round,
/// or "`tie`" when their intervals cannot order them; with the value
/// (the speed of the faster over the slower, or of `a` over `b` for a tie).
fn ordered(
    a: &Est,
    b: &Est,
    a_faster: impl Fn(&Ratio) -> String,
    b_faster: impl Fn(&Ratio) -> String,
    tie: impl Fn() -> String,
) -> (String, f64) {
    match compare(a, b) {
        Verdict::Better(r) => (a_faster(&r), r.ratio),
        Verdict::Worse(r) => (b_faster(&r), r.ratio),
        Verdict::Tie(r) => (tie(), r.ratio),
    }
}

fn buffered_vs_durable(ms: &[Measurement]) -> Option<Finding> {
    let (buf, dur) = (
        res(ms, seq::WRITE_BUFFERED)?,
        res(ms, seq::WRITE_FDATASYNC)?,
    );
    let (b, d) = (rate(buf), rate(dur));
    let (text, value) = ordered(
        &Est::of(buf),
        &Est::of(dur),
        |r| {
            format!(
                "buffered writes ({b}) look {} faster than durable ones ({d} with fdatasync): the page cache absorbs them",
                r.text()
            )
        },
        |r| {
            format!(
                "durable writes ({d} with fdatasync) are {} faster than buffered ones ({b})",
                r.text()
            )
        },
        || {
            format!(
                "buffered writes ({b}) and durable ones ({d} with fdatasync) are within noise of each other: syncing costs nothing measurable here"
            )
        },
    );
    Some(ratio_finding("storage", text, value))
}

/// The hot reread against the cold read: how much the page cache hides,
/// and whether the cold read was cold at all (the ratio's whole interval
/// beyond or within [`COLD_AS_HOT`]; unsure otherwise).
fn hot_vs_cold(ms: &[Measurement]) -> Option<Finding> {
    let (hot, cold) = (res(ms, seq::READ_HOT)?, res(ms, seq::READ_COLD)?);
    let r = speedup(&Est::of(hot), &Est::of(cold));
    let why = match r.against(COLD_AS_HOT) {
        Some(true) => "without dropping the cache, a read benchmark measures memory",
        Some(false) => {
            "the cold read is nearly as fast as the cached one, so the file was probably still cached (tmpfs, a network or a caching file system)"
        }
        None => "too noisy to tell whether the cold read reached the device",
    };
    Some(ratio_finding(
        "storage",
        format!(
            "a cache-hot reread ({}) is {} the speed of a cold read ({}): {why}",
            rate(hot),
            r.text(),
            rate(cold)
        ),
        r.ratio,
    ))
}

fn cold_vs_direct(ms: &[Measurement]) -> Option<Finding> {
    let (cold, direct) = (res(ms, seq::READ_COLD)?, res(ms, seq::READ_DIRECT)?);
    let (c, d) = (rate(cold), rate(direct));
    let (text, value) = ordered(
        &Est::of(cold),
        &Est::of(direct),
        |r| {
            format!(
                "buffered cold reads with readahead are {} faster than 1 MiB O_DIRECT reads ({c} vs {d})",
                r.text()
            )
        },
        |r| {
            format!(
                "1 MiB O_DIRECT reads are {} faster than buffered cold reads with readahead ({d} vs {c})",
                r.text()
            )
        },
        || {
            format!(
                "buffered cold reads with readahead and 1 MiB O_DIRECT reads are within noise of each other ({c} vs {d})"
            )
        },
    );
    Some(ratio_finding("storage", text, value))
}

/// "median X, p99 Y over N", or, when the times have two separate levels,
/// "bimodal per operation: median X, p99 Y over N" so that neither level
/// is read as the typical one.
fn tail_text(p: &OpStats) -> String {
    format!(
        "{}median {}, p99 {} over {} operations",
        if p.bimodal {
            "bimodal per operation (two separate levels): "
        } else {
            ""
        },
        human(p.p50, ValueUnit::Ns),
        human(p.p99, ValueUnit::Ns),
        p.count
    )
}

/// One random read at a time (its tail) and many in flight (IOPS against
/// one at a time, ordered by the intervals).
fn random_reads(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(m) = res(ms, rand::READ_QD1) else {
        return out;
    };
    if let Some(p) = &m.per_op {
        out.push(Finding {
            area: "storage".into(),
            text: format!("random 4 KiB read at queue depth 1: {}", tail_text(p)),
            value: p.p99,
            unit: BaseUnit::NsPerOp.into(),
        });
    }
    if let Some(deep) = res(ms, &rand::deep_id()) {
        // One read at a time as IOPS: the time per read inverted.
        let one = Est::new(1e9 / m.median, 1e9 / m.ci_high, 1e9 / m.ci_low, true);
        let (dv, ov) = (
            human(deep.median, BaseUnit::OpsPerSec),
            human(one.value, BaseUnit::OpsPerSec),
        );
        let n = rand::DEPTH;
        let (text, value) = ordered(
            &Est::of(deep),
            &one,
            |r| {
                format!(
                    "{n} random reads in flight give {} the IOPS of one at a time ({dv} vs {ov})",
                    r.text()
                )
            },
            |r| {
                format!(
                    "{n} random reads in flight give fewer IOPS than one at a time: one at a time is {} faster ({ov} vs {dv})",
                    r.text()
                )
            },
            || {
                format!(
                    "{n} random reads in flight give no more IOPS than one at a time, within noise ({dv} vs {ov})"
                )
            },
        );
        out.push(ratio_finding("storage", text, value));
    }
    out
}

/// Small files against throughput: the time the tree's files took, and
/// the time the same bytes take at the sequential rate of the same kind
/// (synced writes against durable sequential writes, cold reads against
/// cold sequential reads). The ratio is what small files cost on this
/// device beyond their bytes: a figure, which rate it uses depends only on
/// which results the run has.
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
                human(small * 1e9, ValueUnit::Ns),
                human(rate, BaseUnit::BytesPerSec),
                human(at_rate * 1e9, ValueUnit::Ns),
                fmt_ratio(small / at_rate)
            ),
            small / at_rate,
        ));
    }
    out
}

/// Bonnie's figures reaching the device beside the same I/O in the page
/// cache (a figure, with its ratio).
fn bonnie_device(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
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
        if let (Some(c), Some(d)) = (res(ms, cached), res(ms, device)) {
            let r = speedup(&Est::of(c), &Est::of(d));
            out.push(ratio_finding(
                "storage",
                format!(
                    "bonnie {what} reaching the device ({how}; the figure to set beside bonnie++'s): {}, against {} in the page cache ({} the device figure)",
                    rate(d),
                    rate(c),
                    r.text()
                ),
                r.ratio,
            ));
        }
    }
    out
}

/// Bonnie's 8 KiB blocks against per-character stdio, ordered by the intervals.
fn bonnie_perchar_vs_block(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (dir, perchar, block) in [
        ("write", bonnie::WRITE_PERCHAR, bonnie::WRITE_BLOCK),
        ("read", bonnie::READ_PERCHAR, bonnie::READ_BLOCK),
    ] {
        let (Some(ch), Some(bl)) = (res(ms, perchar), res(ms, block)) else {
            continue;
        };
        let (c, b) = (rate(ch), rate(bl));
        let (text, value) = ordered(
            &Est::of(bl),
            &Est::of(ch),
            |r| {
                format!(
                    "8 KiB block {dir}s move bytes {} faster than per-character stdio ({b} vs {c})",
                    r.text()
                )
            },
            |r| {
                format!(
                    "per-character stdio {dir}s move bytes {} faster than 8 KiB blocks ({c} vs {b})",
                    r.text()
                )
            },
            || {
                format!(
                    "8 KiB block {dir}s and per-character stdio move bytes within noise of each other ({b} vs {c})"
                )
            },
        );
        out.push(ratio_finding("storage", text, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::find_saying;

    fn stall_row(id: &str, ops: &[f64], limits: bool) -> Measurement {
        let mut m = Measurement::point(id, "ns/op", ops[ops.len() / 2]);
        m.per_op = crate::harness::runner::op_stats(ops);
        let mut d = serde_json::json!({ "op_ns": ops });
        if limits {
            d["location"] = serde_json::json!({"writeback": {
                "dirty_ratio": 20, "dirty_background_ratio": 10, "dirty_bytes": 0,
                "dirty_background_bytes": 0, "dirty_expire_centisecs": 3000}});
            d["flood_peak_dirty_bytes"] = serde_json::json!(1u64 << 30);
        }
        m.details = Some(d);
        m
    }

    #[test]
    fn a_stall_is_named_only_when_the_p99_intervals_separate() {
        // 1000 idle fsyncs near 1 ms; under the flood 5% take 2 s.
        let idle: Vec<f64> = (0..1000).map(|i| 1e6 + (i % 50) as f64 * 1e3).collect();
        let flood: Vec<f64> = (0..1000)
            .map(|i| if i % 20 == 0 { 2e9 } else { 1.2e6 })
            .collect();
        let ms = [
            stall_row("storage.stall.fsync.idle", &idle, false),
            stall_row("storage.stall.fsync.flood", &flood, true),
        ];
        let f = stalls(&ms);
        assert_eq!(f.len(), 1);
        let t = &f[0];
        t.assert_starts_with("a 4 KiB write + fsync waits up to 2.00 s (p99 2.00 s)");
        t.assert_says("the flood stretches its p99");
        t.assert_says("dirty limit 20%, background 10%, expire 30 s");
        t.assert_says("peaked at 1.00 GiB");
        // 15 operations each: the p99's upper side is open, no stall word.
        let ms = [
            stall_row("storage.stall.fsync.idle", &idle[..15], false),
            stall_row("storage.stall.fsync.flood", &flood[..15], false),
        ];
        let t = &stalls(&ms)[0];
        t.assert_says("cannot be told");
    }

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
        f.assert_starts_with("measured in /data: xfs (rw,noatime) on dm-0");
        f.assert_says("sda, sdb");
        f.assert_says("mq-deadline");
        assert_eq!(f.unit, ValueUnit::Bytes);
        assert_eq!(f.value, 1073741824.0);
    }

    #[test]
    fn the_runs_own_temp_dir_is_named_by_where_it_lives() {
        let tmp = std::env::temp_dir();
        let dir = tmp.join("opcost-Ybz7eK").join("opcost-storage-1");
        let loc = serde_json::json!({"dir": dir.to_str().unwrap(), "fs_type": "ext4"});
        let f = location_finding(&loc).unwrap();
        let want = format!(
            "measured in a private temporary directory in {}: ext4",
            tmp.display()
        );
        f.assert_starts_with(&want);
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
        f.assert_says("no block device");
        let ext4 = serde_json::json!({"dir": "/a/b", "fs_type": "ext4", "journal": false});
        let f = location_finding(&ext4).unwrap();
        f.assert_says("ext4 without a journal");
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
        let find = |s: &str| find_saying(&f, s);
        assert!(find("measured in /d:").text.contains("ext4"));
        assert_eq!(find("buffered writes").value, 20.0);
        let hot = find("cache-hot reread");
        assert_eq!(hot.value, 10.0);
        assert!(hot.text.contains("measures memory"));
        let tail = find("queue depth 1");
        assert_eq!(
            (tail.value, tail.unit),
            (400_000.0, BaseUnit::NsPerOp.into())
        );
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
        f[0].assert_starts_with("creating and syncing 1000 small files");
        assert!(
            f[0].text.contains("500 ms") && f[0].text.contains("100 ms"),
            "{}",
            f[0].text
        );
        assert!((f[0].value - 5.0).abs() < 1e-9);
        assert_eq!(f[0].unit, ValueUnit::Ratio);
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
        let b = find_saying(&b, "reaching the device");
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

    /// A result with a ±`rel` interval around its median.
    fn wide(id: &str, unit: &str, median: f64, rel: f64) -> Measurement {
        let mut x = m(id, unit, median, None);
        x.summary.ci_low = median * (1.0 - rel);
        x.summary.ci_high = median * (1.0 + rel);
        x
    }

    #[test]
    fn equal_results_within_noise_are_ties_whichever_median_is_higher() {
        for (a, b) in [(1.02e9, 1e9), (1e9, 1.02e9)] {
            let ms = vec![
                wide("storage.seq.write.buffered", "B/s", a, 0.05),
                wide("storage.seq.write.fdatasync", "B/s", b, 0.05),
                wide("storage.seq.read.cold", "B/s", a, 0.05),
                wide("storage.seq.read.direct", "B/s", b, 0.05),
                wide("storage.bonnie.write.perchar", "B/s", a, 0.05),
                wide("storage.bonnie.write.block", "B/s", b, 0.05),
            ];
            let f = findings(&ms);
            let texts: Vec<&str> = f.iter().map(|f| f.text.as_str()).collect();
            assert_eq!(
                texts
                    .iter()
                    .filter(|t| t.contains("within noise of each other"))
                    .count(),
                3,
                "{texts:?}"
            );
            assert!(!texts.iter().any(|t| t.contains("faster")), "{texts:?}");
        }
    }

    #[test]
    fn clearly_different_results_are_ordered_either_way() {
        let ms = vec![
            wide("storage.seq.read.cold", "B/s", 1e8, 0.05),
            wide("storage.seq.read.direct", "B/s", 4e8, 0.05),
            wide("storage.bonnie.read.perchar", "B/s", 1e8, 0.05),
            wide("storage.bonnie.read.block", "B/s", 2e9, 0.05),
        ];
        let f = findings(&ms);
        let direct = find_saying(&f, "O_DIRECT");
        direct.assert_starts_with("1 MiB O_DIRECT reads are 4.00× (");
        assert!((direct.value - 4.0).abs() < 1e-9);
        let block = find_saying(&f, "stdio");
        block.assert_starts_with("8 KiB block reads move bytes 20.0× (");
    }

    #[test]
    fn a_hot_cold_ratio_straddling_the_threshold_is_called_unsure() {
        let ms = vec![
            wide("storage.seq.read.hot", "B/s", 1.5e9, 0.3),
            wide("storage.seq.read.cold", "B/s", 1e9, 0.3),
        ];
        let f = findings(&ms);
        let hot = find_saying(&f, "cache-hot");
        hot.assert_says("too noisy to tell");
    }

    #[test]
    fn a_bimodal_tail_is_named_as_such() {
        let mut q = m(
            "storage.rand.read.qd1",
            "ns/op",
            100_000.0,
            Some((90_000.0, 400_000.0)),
        );
        let plain = findings(std::slice::from_ref(&q));
        let t = find_saying(&plain, "queue depth 1");
        t.assert_says(": median 90.0 µs, p99 400 µs over 100 operations");
        q.per_op.as_mut().unwrap().bimodal = true;
        let f = findings(&[q]);
        let t = find_saying(&f, "queue depth 1");
        t.assert_says(": bimodal per operation");
    }

    #[test]
    fn deep_queues_within_noise_of_one_read_give_no_more_iops() {
        // 10k IOPS at QD1 (100 µs) and 10.2k with 16 in flight, both ±10%.
        let ms = vec![
            wide("storage.rand.read.qd1", "ns/op", 100_000.0, 0.1),
            wide("storage.rand.read.qd16", "ops/s", 10_200.0, 0.1),
        ];
        let f = findings(&ms);
        let deep = find_saying(&f, "in flight");
        deep.assert_says("no more IOPS than one at a time");
    }

    #[test]
    fn no_results_no_findings() {
        assert!(findings(&[]).is_empty());
    }
}
