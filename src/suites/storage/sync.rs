//! The durability cost: write a small record to a log and make it durable,
//! as a write-ahead log does. The pattern is etcd's WAL: a segment file
//! preallocated with fallocate, written sequentially in small records, each
//! followed by fdatasync (which flushes the data and the extent the write
//! turned from allocated into written) or fsync (the rest of the inode too).
//! Each operation is timed on its own for the median and the p99.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::posix_fallocate;
use serde_json::json;

use super::common::{MIB, Workspace, create_file, fill_pattern, min_ops_for};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::suites::bench::FnBench;

/// What a round spends setting a benchmark up and tearing it down besides
/// its samples (the file made and removed): 4 ms a round on the quick runs of a 2-vCPU AMD EPYC (Zen 4) KVM guest. Only the run-time estimate
/// uses it ([`FnBench::setup_time`]).
const SETUP: Duration = Duration::from_millis(4);

/// The record written before each sync.
pub const RECORD: u64 = 4096;
/// The size of a log segment (etcd's); a new one starts, untimed, when full.
const SEGMENT: u64 = 64 * MIB;
/// The longest a minimum batch should take (slow devices get fewer syncs).
const MIN_BATCH_TIME: Duration = Duration::from_millis(50);

/// Which sync follows each write.
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
    /// False when the file system cannot preallocate: the log then grows.
    preallocated: bool,
}

impl SyncLat {
    /// Starts an empty segment, preallocated where the file system can.
    fn new_segment(&mut self) -> anyhow::Result<()> {
        self.file.set_len(0).context("truncating the log")?;
        if self.preallocated {
            match posix_fallocate(&self.file, 0, SEGMENT as libc::off_t) {
                Ok(()) => {}
                Err(Errno::EOPNOTSUPP | Errno::EINVAL | Errno::ENOSYS) => self.preallocated = false,
                Err(e) => return Err(anyhow::Error::new(e).context("fallocate")),
            }
        }
        self.file.sync_all().context("fsync")?;
        self.len = 0;
        Ok(())
    }

    fn write_and_sync(&mut self) -> anyhow::Result<Duration> {
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
        if self.len + ops * RECORD > SEGMENT {
            self.new_segment()?; // untimed
        }
        let start = Instant::now();
        for _ in 0..ops {
            let d = self.write_and_sync()?;
            self.op_times.push(d.as_nanos() as f64);
        }
        Ok(start.elapsed())
    }
    fn min_ops(&self) -> u64 {
        self.min_ops
    }
    fn max_ops(&self) -> Option<u64> {
        Some(SEGMENT / RECORD)
    }
    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.op_times)
    }
    fn warnings(&self) -> Vec<String> {
        let mut w = self.ws.warnings();
        if !self.preallocated {
            w.push(
                Warning::NoPrealloc {
                    fs: self.ws.location.fs_type.clone(),
                }
                .to_string(),
            );
        }
        w
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.ws.details(json!({
            "record_bytes": RECORD,
            "pattern": if self.preallocated {
                "sequential writes into a preallocated 64 MiB segment, each then synced"
            } else {
                "appends, each then synced"
            },
            "sync": match self.kind { Kind::Fdatasync => "fdatasync", Kind::Fsync => "fsync" },
        })))
    }
}

fn prepare(ctx: &Ctx, kind: Kind) -> Result<Box<dyn Timed>, PrepareError> {
    let (ws, _) = Workspace::new(ctx, SEGMENT, SEGMENT)?;
    let path = ws.file("log");
    let file = create_file(&path)?;
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
        preallocated: true,
    };
    s.new_segment()?;
    let want = match ctx.profile {
        Profile::Quick => 4,
        Profile::Default => 8,
        Profile::Thorough => 16,
    };
    let est = s.write_and_sync()?.max(s.write_and_sync()?);
    s.min_ops = min_ops_for(est, want, MIN_BATCH_TIME);
    Ok(Box::new(s))
}

/// Id of a log write made durable with fdatasync.
pub const FDATASYNC: &str = "storage.sync.fdatasync";
/// Id of a log write made durable with fsync.
pub const FSYNC: &str = "storage.sync.fsync";

/// The sync-latency benchmarks.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let b = |id: &str, summary: &str, kind: Kind| {
        FnBench::new(id, summary, Unit::Latency, move |ctx| prepare(ctx, kind))
            .param("record", "4KiB")
            .interleave("storage.sync")
            .budget_scale(4.0)
            .cpu_cost()
            .setup_time(SETUP)
            .boxed()
    };
    vec![
        b(
            FDATASYNC,
            "write 4 KiB to a preallocated log then fdatasync (etcd's WAL commit): latency, with its p99",
            Kind::Fdatasync,
        ),
        b(
            FSYNC,
            "write 4 KiB to a preallocated log then fsync: latency, with its p99",
            Kind::Fsync,
        ),
    ]
}
