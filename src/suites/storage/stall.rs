//! Stalls under write-back: how long a small operation waits while a
//! buffered writer floods the same file system, against the same operation
//! with the file system idle.
//!
//! Why: "the machine freezes for seconds while it writes to the SD card".
//! A buffered writer fills the page cache with dirty pages at memory
//! speed; once they pass the kernel's dirty limits the device has to
//! absorb them, and an unrelated `fsync`, a read that misses the cache,
//! even a `stat`, can queue behind that write-back. The median hides
//! this; the p99 and the maximum of operations timed one at a time show
//! it. Each operation is timed on its own; the flood rows run while a
//! writer thread rewrites a file of its own in 1 MiB blocks, the idle
//! rows with no writer.
//!
//! Bounds: the flood file is sized to the free space like every storage
//! file ([`Workspace::new`]) and per profile; the writer stops at the
//! profile's time limit, when the benchmark is dropped (end of its round,
//! Ctrl-C, a failure) and when the run is stopped, and its file goes with
//! the benchmark's private directory.
//!
//! Ids: `storage.stall.{read,stat,fsync}.{idle,flood}` (ns per operation,
//! p50/p99/max in `per_op`).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
use serde_json::json;

use super::common::{MIB, MIN_FILE, Workspace, create_file, fill_pattern, lay_out, min_ops_for};
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::suites::bench::{Budget, FnBench};

/// The block of a read and of the record written before each fsync.
pub const BLOCK: u64 = 4096;
/// The file small reads go to (dropped from the cache after each read).
const READ_FILE: u64 = 16 * MIB;
/// Files the `stat` row cycles through.
const STAT_FILES: usize = 64;
/// Most operations kept for the tail of a round (in `details.op_ns`).
const KEEP_OPS: usize = 4000;
/// The longest the fewest operations of a batch should take.
const MIN_BATCH_TIME: Duration = Duration::from_millis(50);

/// Operations a batch holds at least (fewer when they are slow), so that
/// a round gathers enough of them for a tail.
fn ops_wanted(p: Profile) -> u64 {
    match p {
        Profile::Quick => 16,
        Profile::Default => 32,
        Profile::Thorough => 64,
    }
}

/// The operation timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A 4 KiB read at a random offset of a file not in the page cache.
    Read,
    /// `stat` of one of a few files.
    Stat,
    /// A 4 KiB write to a separate file, then `fsync`.
    Fsync,
}

impl Op {
    fn label(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Stat => "stat",
            Op::Fsync => "fsync",
        }
    }
}

/// The id of `op` idle (`flood` false) or under the flood.
pub fn id(op: Op, flood: bool) -> String {
    format!(
        "storage.stall.{}.{}",
        op.label(),
        if flood { "flood" } else { "idle" }
    )
}

/// How much the flood writer may hold on disk, per profile (then scaled
/// to the free space): past the background dirty threshold of a small
/// board, well short of a big server's.
fn flood_bytes(p: Profile) -> u64 {
    match p {
        Profile::Quick => 256 * MIB,
        Profile::Default => 1024 * MIB,
        Profile::Thorough => 4096 * MIB,
    }
}

/// The longest the writer runs in one round, per profile.
fn flood_time(p: Profile) -> Duration {
    match p {
        Profile::Quick => Duration::from_secs(3),
        Profile::Default => Duration::from_secs(10),
        Profile::Thorough => Duration::from_secs(30),
    }
}

/// What an idle read or stat round spends besides its samples: the
/// operation's files laid out (a 16 MiB file to read, 64 to stat) and
/// dropped from the page cache; those rows took 0.09-0.23 s at quick where
/// their samples take 0.04 s (the idle fsync row 0.045-0.09 s).
const IDLE_SETUP: Duration = Duration::from_millis(25);

/// What a flood round spends besides its samples, per profile: the
/// writer's file laid out, its dirty pages written back when it stops and
/// the file removed. Traced on the AMD and Xeon guests: a flood row took
/// 0.24-1.4 s at quick (median 0.35 s over 9 runs, 0.04 s of it samples)
/// and 3.5-4.2 s at default; thorough's 4 GiB file scaled from default's.
fn flood_setup(p: Profile) -> Duration {
    match p {
        Profile::Quick => Duration::from_millis(100),
        Profile::Default => Duration::from_millis(750),
        Profile::Thorough => Duration::from_secs(3),
    }
}

/// What the writer did, shared with the benchmark.
#[derive(Default)]
struct Tally {
    written: AtomicU64,
    /// Largest `Dirty + Writeback` seen in /proc/meminfo while it ran, bytes.
    peak_dirty: AtomicU64,
}

/// A buffered writer rewriting one file in 1 MiB blocks until stopped,
/// `deadline` passes or the run stops; stopped and joined on drop.
struct Flood {
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
    handle: Option<JoinHandle<()>>,
    size: u64,
}

impl Flood {
    fn start(path: PathBuf, size: u64, deadline: Instant, run_stop: Arc<AtomicBool>) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Tally::default());
        let (s, t) = (stop.clone(), tally.clone());
        let handle = std::thread::Builder::new()
            .name("opcost-flood".into())
            .spawn(move || {
                let Ok(f) = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&path)
                else {
                    return;
                };
                let mut block = vec![0u8; MIB as usize];
                fill_pattern(&mut block, 11);
                let mut off = 0;
                let mut n = 0u64;
                while !s.load(Ordering::Relaxed)
                    && !run_stop.load(Ordering::Relaxed)
                    && Instant::now() < deadline
                {
                    if f.write_all_at(&block, off).is_err() {
                        break;
                    }
                    off = (off + MIB) % size;
                    n += 1;
                    t.written.fetch_add(MIB, Ordering::Relaxed);
                    if n.is_multiple_of(16)
                        && let Some(d) = dirty_now()
                    {
                        t.peak_dirty.fetch_max(d, Ordering::Relaxed);
                    }
                }
            })
            .ok();
        Flood {
            stop,
            tally,
            handle,
            size,
        }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// `Dirty + Writeback` of /proc/meminfo, bytes.
fn dirty_now() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| -> Option<u64> {
        text.lines()
            .find(|l| l.starts_with(key))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some((kib("Dirty:")? + kib("Writeback:")?) * 1024)
}

/// One stall benchmark: the operation's files, and the writer when flooding.
struct Stall {
    op: Op,
    read_file: Option<File>,
    read_blocks: u64,
    stat_paths: Vec<PathBuf>,
    sync_file: Option<File>,
    record: Vec<u8>,
    buf: Vec<u8>,
    rng: fastrand::Rng,
    op_times: Vec<f64>,
    kept: Vec<f64>,
    /// Set once calibration's times were taken (and discarded).
    sampling: bool,
    min_ops: u64,
    // Dropped before the workspace (declaration order): the writer stops
    // before its directory is removed.
    flood: Option<Flood>,
    ws: Workspace,
}

impl Stall {
    fn one(&mut self) -> anyhow::Result<Duration> {
        match self.op {
            Op::Read => {
                let f = self.read_file.as_ref().context("no read file")?;
                let off = self.rng.u64(0..self.read_blocks) * BLOCK;
                let start = Instant::now();
                f.read_exact_at(&mut self.buf, off).context("read")?;
                let took = start.elapsed();
                // Untimed: the next read of this block misses the cache again.
                posix_fadvise(
                    f,
                    off as libc::off_t,
                    BLOCK as libc::off_t,
                    PosixFadviseAdvice::POSIX_FADV_DONTNEED,
                )
                .context("posix_fadvise")?;
                Ok(took)
            }
            Op::Stat => {
                let p = &self.stat_paths[self.rng.usize(0..self.stat_paths.len())];
                let start = Instant::now();
                std::fs::metadata(p).context("stat")?;
                Ok(start.elapsed())
            }
            Op::Fsync => {
                let f = self.sync_file.as_ref().context("no sync file")?;
                let start = Instant::now();
                f.write_all_at(&self.record, 0).context("write")?;
                f.sync_all().context("fsync")?;
                Ok(start.elapsed())
            }
        }
    }
}

impl Timed for Stall {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let start = Instant::now();
        for _ in 0..ops {
            let ns = self.one()?.as_nanos() as f64;
            self.op_times.push(ns);
            if self.kept.len() < KEEP_OPS {
                self.kept.push(ns);
            }
        }
        Ok(start.elapsed())
    }
    fn min_ops(&self) -> u64 {
        self.min_ops
    }
    fn take_op_times(&mut self) -> Vec<f64> {
        // The first take is calibration and warm-up, discarded by the
        // runner: the tail kept starts with the samples.
        if !self.sampling {
            self.kept.clear();
            self.sampling = true;
        }
        std::mem::take(&mut self.op_times)
    }
    fn warnings(&self) -> Vec<String> {
        self.ws.warnings()
    }
    fn details(&self) -> Option<serde_json::Value> {
        let mut extra = json!({
            "op": self.op.label(),
            "block_bytes": BLOCK,
            "op_ns": self.kept,
            "writeback": crate::host::device::writeback(),
        });
        if let Some(f) = &self.flood {
            let obj = extra.as_object_mut().expect("an object");
            obj.insert("flood_file_bytes".into(), json!(f.size));
            obj.insert(
                "flood_written_bytes".into(),
                json!(f.tally.written.load(Ordering::Relaxed)),
            );
            obj.insert(
                "flood_peak_dirty_bytes".into(),
                json!(f.tally.peak_dirty.load(Ordering::Relaxed)),
            );
        }
        Some(self.ws.details(extra))
    }
}

fn prepare(ctx: &Ctx, op: Op, flood: bool) -> Result<Box<dyn Timed>, PrepareError> {
    let wanted = if flood {
        flood_bytes(ctx.profile)
    } else {
        READ_FILE
    };
    let (ws, size) = Workspace::new(ctx, wanted, MIN_FILE)?;
    let mut s = Stall {
        op,
        read_file: None,
        read_blocks: 1,
        stat_paths: Vec::new(),
        sync_file: None,
        record: vec![0u8; BLOCK as usize],
        buf: vec![0u8; BLOCK as usize],
        rng: fastrand::Rng::with_seed(5),
        op_times: Vec::new(),
        kept: Vec::new(),
        sampling: false,
        min_ops: 1,
        flood: None,
        ws,
    };
    match op {
        Op::Read => {
            let read_size = READ_FILE.min(size);
            s.read_file = Some(lay_out(&s.ws.file("read"), read_size, ctx)?);
            s.read_blocks = (read_size / BLOCK).max(1);
        }
        Op::Stat => {
            let dir = s.ws.file("stat");
            std::fs::create_dir(&dir).context("creating the stat directory")?;
            for i in 0..STAT_FILES {
                let p = dir.join(format!("f{i}"));
                std::fs::write(&p, b"x").context("creating a file to stat")?;
                s.stat_paths.push(p);
            }
        }
        Op::Fsync => {
            fill_pattern(&mut s.record, 3);
            let path = s.ws.file("record");
            let f = create_file(&path)?;
            f.write_all_at(&s.record, 0).context("write")?;
            f.sync_all().context("fsync")?;
            s.sync_file = Some(f);
        }
    }
    if flood {
        let started = Instant::now();
        let time = flood_time(ctx.profile);
        let f = Flood::start(s.ws.file("flood"), size, started + time, ctx.stop.clone());
        // Untimed: the samples start once the writer has filled its file
        // once (dirty pages piling up), or a third of its time is gone.
        while f.tally.written.load(Ordering::Relaxed) < size
            && started.elapsed() < time / 3
            && !ctx.stopping()
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        s.flood = Some(f);
    }
    let est = s.one()?.max(s.one()?);
    s.min_ops = min_ops_for(est, ops_wanted(ctx.profile), MIN_BATCH_TIME);
    Ok(Box::new(s))
}

/// The stall benchmarks: each operation idle and under the flood (each
/// row its own group, so that one writer runs at a time and no idle
/// sample follows a flood's dirty pages within a round).
pub fn benches() -> Vec<Box<dyn Bench>> {
    let mut v = Vec::new();
    for op in [Op::Read, Op::Stat, Op::Fsync] {
        for flood in [false, true] {
            let what = match op {
                Op::Read => "a 4 KiB read of a file not in the page cache",
                Op::Stat => "stat of a file",
                Op::Fsync => "a 4 KiB write to a separate file, then fsync",
            };
            let when = if flood {
                "while a buffered writer floods the same file system"
            } else {
                "with the file system idle"
            };
            let budget = if flood {
                Budget::Fixed([
                    Duration::from_secs(2),
                    Duration::from_secs(8),
                    Duration::from_secs(30),
                ])
            } else {
                Budget::scaled(2.0)
            };
            v.push(
                FnBench::new(
                    id(op, flood),
                    format!("{what}, timed one at a time, {when} (median, p99, max)"),
                    Unit::Latency,
                    move |ctx| prepare(ctx, op, flood),
                )
                .param("op", op.label())
                .param("flood", flood)
                .with_budget(budget)
                .expected_by(move |p, budget| {
                    let prep = match (flood, op) {
                        (true, _) => flood_setup(p),
                        (false, Op::Fsync) => Duration::ZERO,
                        (false, _) => IDLE_SETUP,
                    };
                    crate::harness::round::expected_slow(p, budget, prep, Duration::ZERO)
                })
                .cpu_cost()
                .on_request()
                .boxed(),
            );
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::test_ctx_with;
    use std::sync::atomic::AtomicBool;

    fn ctx(dir: &std::path::Path) -> Ctx {
        test_ctx_with(crate::host::Host::default(), dir)
    }

    #[test]
    fn ids_name_the_operation_and_the_state() {
        assert_eq!(id(Op::Fsync, true), "storage.stall.fsync.flood");
        assert_eq!(id(Op::Stat, false), "storage.stall.stat.idle");
        let ids: Vec<String> = benches().iter().map(|b| b.id().to_string()).collect();
        assert_eq!(ids.len(), 6);
    }

    #[test]
    fn every_operation_is_timed_one_at_a_time_and_the_flood_is_cleaned_up() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        for op in [Op::Read, Op::Stat, Op::Fsync] {
            let mut t = prepare(&c, op, true).unwrap();
            t.run(3).unwrap();
            assert_eq!(t.take_op_times().len(), 3);
            t.run(2).unwrap();
            let d = t.details().unwrap();
            assert_eq!(d["op_ns"].as_array().unwrap().len(), 2);
            assert!(d["flood_file_bytes"].as_u64().unwrap() >= MIN_FILE);
            assert!(d["writeback"]["dirty_ratio"].is_number() || d["writeback"].is_null());
            drop(t);
            // The writer is joined and its file gone with the directory.
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }

    #[test]
    fn the_writer_stops_when_the_run_stops() {
        let dir = tempfile::tempdir().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let f = Flood::start(
            dir.path().join("f"),
            8 * MIB,
            Instant::now() + Duration::from_secs(60),
            stop.clone(),
        );
        std::thread::sleep(Duration::from_millis(20));
        stop.store(true, Ordering::Relaxed);
        let t = Instant::now();
        drop(f);
        assert!(t.elapsed() < Duration::from_secs(30));
    }
}
