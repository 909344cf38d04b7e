//! The durability cost: append a small record and make it durable, as a
//! write-ahead log does (etcd's WAL is the classic case). fdatasync flushes
//! the data and what is needed to read it back (the new size); fsync also
//! flushes the rest of the inode (timestamps). Each operation is timed on
//! its own for the median and the p99.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use super::common::{MIB, Workspace, fill_pattern, min_ops_for};
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::suites::FnBench;

/// The record appended before each sync.
pub const RECORD: u64 = 4096;
/// The log is truncated (untimed) when it would grow past this.
const WRAP: u64 = 64 * MIB;
/// The longest a minimum batch should take (slow devices get fewer syncs).
const MIN_BATCH_TIME: Duration = Duration::from_millis(50);

/// Which sync follows each append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Fdatasync,
    Fsync,
}

struct SyncLat {
    ws: Workspace,
    file: File,
    record: Vec<u8>,
    len: u64,
    kind: Kind,
    op_times: Vec<f64>,
    min_ops: u64,
}

impl SyncLat {
    fn append_and_sync(&mut self) -> anyhow::Result<Duration> {
        let start = Instant::now();
        self.file
            .write_all_at(&self.record, self.len)
            .context("write")?;
        match self.kind {
            Kind::Fdatasync => self.file.sync_data().context("fdatasync")?,
            Kind::Fsync => self.file.sync_all().context("fsync")?,
        }
        let took = start.elapsed();
        self.len += RECORD;
        Ok(took)
    }
}

impl Timed for SyncLat {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        if self.len + ops * RECORD > WRAP {
            // Untimed: start the log again.
            self.file.set_len(0).context("truncating the log")?;
            self.file.sync_all().context("fsync")?;
            self.len = 0;
        }
        let start = Instant::now();
        for _ in 0..ops {
            let d = self.append_and_sync()?;
            self.op_times.push(d.as_nanos() as f64);
        }
        Ok(start.elapsed())
    }
    fn min_ops(&self) -> u64 {
        self.min_ops
    }
    fn max_ops(&self) -> Option<u64> {
        Some(WRAP / RECORD)
    }
    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.op_times)
    }
    fn warnings(&self) -> Vec<String> {
        self.ws.warnings()
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.ws.details(json!({
            "record_bytes": RECORD,
            "pattern": "append, then sync",
            "sync": match self.kind { Kind::Fdatasync => "fdatasync", Kind::Fsync => "fsync" },
        })))
    }
}

fn prepare(ctx: &Ctx, kind: Kind) -> Result<Box<dyn Timed>, PrepareError> {
    let (ws, _) = Workspace::new(ctx, WRAP, WRAP)?;
    let path = ws.file("log");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    let mut record = vec![0u8; RECORD as usize];
    fill_pattern(&mut record, 7);
    let mut s = SyncLat {
        ws,
        file,
        record,
        len: 0,
        kind,
        op_times: Vec::new(),
        min_ops: 1,
    };
    let want = match ctx.profile {
        Profile::Quick => 4,
        Profile::Default => 8,
        Profile::Thorough => 16,
    };
    let est = s.append_and_sync()?.max(s.append_and_sync()?);
    s.min_ops = min_ops_for(est, want, MIN_BATCH_TIME);
    Ok(Box::new(s))
}

/// The sync-latency benchmarks.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let b = |id: &str, summary: &str, kind: Kind| {
        FnBench::new(id, summary, Unit::Latency, move |ctx| prepare(ctx, kind))
            .param("record", "4KiB")
            .interleave("storage.sync")
            .budget_scale(4.0)
            .boxed()
    };
    vec![
        b(
            "storage.sync.fdatasync",
            "append 4 KiB to a log then fdatasync (a write-ahead log's commit): latency, with its p99",
            Kind::Fdatasync,
        ),
        b(
            "storage.sync.fsync",
            "append 4 KiB to a log then fsync: latency, with its p99",
            Kind::Fsync,
        ),
    ]
}
