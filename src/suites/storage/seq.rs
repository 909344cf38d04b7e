//! Sequential write and read in 1 MiB blocks, told apart by what they really
//! measure: buffered writes land in the page cache (memory), fdatasync at
//! the end makes them durable (the device), O_DIRECT skips the cache both
//! ways; a read after posix_fadvise(DONTNEED) comes from the device, a
//! cache-hot reread is a memory copy and is reported apart.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use super::common::{
    AlignedBuf, MIB, MIN_FILE, Sizes, Workspace, drop_from_cache, lay_out, open_direct,
};
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::suites::bench::FnBench;

/// What a round spends setting a benchmark up and tearing it down besides
/// its samples (the file written or read, laid out and dropped from the page cache): 40 ms a round on the quick runs of a 2-vCPU AMD EPYC (Zen 4) KVM guest. Only the run-time estimate
/// uses it ([`FnBench::setup_time`]).
const SETUP: Duration = Duration::from_millis(40);

/// A write benchmark's file holds this many batches (at most the read file).
const WRITE_FILE_BATCHES: u64 = 4;

/// How a sequential benchmark moves its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// write(2) into the page cache, never synced while timed.
    BufferedWrite,
    /// A batch of buffered writes, then one fdatasync.
    SyncedWrite,
    /// O_DIRECT writes over a laid-out file.
    DirectWrite,
    /// Buffered reads of a file dropped from the page cache.
    ColdRead,
    /// O_DIRECT reads.
    DirectRead,
    /// Buffered reads of a file in the page cache.
    HotRead,
}

impl Mode {
    fn io(self) -> &'static str {
        match self {
            Mode::DirectWrite | Mode::DirectRead => "O_DIRECT",
            Mode::SyncedWrite => "buffered, fdatasync at the end of each batch",
            Mode::ColdRead => "buffered, file dropped from the page cache before each pass",
            Mode::HotRead => "buffered, file in the page cache",
            Mode::BufferedWrite => "buffered, no sync",
        }
    }
    fn is_write(self) -> bool {
        matches!(
            self,
            Mode::BufferedWrite | Mode::SyncedWrite | Mode::DirectWrite
        )
    }
}

/// A prepared sequential benchmark over one file. A read batch is one pass
/// over the whole file from its start: short batches interleaved with other
/// benchmarks would let readahead (or a cache below) work between them and
/// flatter the result. A write batch is [`Sizes::write_batch`] (less than
/// the file, to bound what a run writes), continuing where the last ended.
struct Seq {
    ws: Workspace,
    file: File,
    buf: AlignedBuf,
    size: u64,
    mode: Mode,
    batch: u64,
    next: u64,
}

impl Seq {
    fn prepare(ctx: &Ctx, mode: Mode) -> Result<Box<dyn Timed>, PrepareError> {
        let sizes = Sizes::of(ctx.profile);
        // Writes rotate through a file of a few batches; reads pass over it all.
        let wanted = if mode.is_write() {
            sizes.seq_file.min(WRITE_FILE_BATCHES * sizes.write_batch)
        } else {
            sizes.seq_file
        };
        let (ws, size) = Workspace::new(ctx, wanted, MIN_FILE)?;
        let path = ws.file("seq");
        let buffered = lay_out(&path, size, ctx)?;
        let file = match mode {
            Mode::DirectWrite | Mode::DirectRead => {
                open_direct(&ws, &path, mode.is_write(), MIB as usize)?
            }
            _ => buffered,
        };
        if matches!(
            mode,
            Mode::HotRead | Mode::BufferedWrite | Mode::SyncedWrite
        ) {
            // Bring the file into the page cache before timing: hot reads
            // need it, and buffered writes then overwrite cached pages.
            let mut buf = vec![0u8; MIB as usize];
            let mut off = 0;
            while off < size {
                file.read_exact_at(&mut buf, off)
                    .context("warming the file")?;
                off += MIB;
            }
        }
        let blocks = size / MIB;
        let batch = if mode.is_write() {
            (sizes.write_batch / MIB).clamp(1, blocks)
        } else {
            blocks
        };
        Ok(Box::new(Seq {
            ws,
            file,
            buf: AlignedBuf::new(MIB as usize)?,
            size,
            mode,
            batch,
            next: 0,
        }))
    }
}

impl Timed for Seq {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let blocks = self.size / MIB;
        if self.mode == Mode::ColdRead {
            // Untimed: the pass starts with nothing of the file in memory.
            drop_from_cache(&self.file)?;
        }
        let start = Instant::now();
        for i in 0..ops {
            let off = ((self.next + i) % blocks) * MIB;
            if self.mode.is_write() {
                self.file
                    .write_all_at(self.buf.as_slice(), off)
                    .context("write")?;
            } else {
                self.file
                    .read_exact_at(self.buf.as_mut_slice(), off)
                    .context("read")?;
            }
        }
        if self.mode == Mode::SyncedWrite {
            self.file.sync_data().context("fdatasync")?;
        }
        let took = start.elapsed();
        self.next = (self.next + ops) % blocks;
        Ok(took)
    }

    fn min_ops(&self) -> u64 {
        self.batch
    }

    fn max_ops(&self) -> Option<u64> {
        Some(self.batch)
    }

    fn warnings(&self) -> Vec<String> {
        self.ws.warnings()
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(self.ws.details(json!({
            "file_bytes": self.size,
            "block_bytes": MIB,
            "batch_bytes": self.batch * MIB,
            "io": self.mode.io(),
        })))
    }
}

/// Id of buffered writes, never synced.
pub const WRITE_BUFFERED: &str = "storage.seq.write.buffered";
/// Id of writes made durable with fdatasync.
pub const WRITE_FDATASYNC: &str = "storage.seq.write.fdatasync";
/// Id of O_DIRECT writes.
pub const WRITE_DIRECT: &str = "storage.seq.write.direct";
/// Id of buffered reads of a file out of the page cache.
pub const READ_COLD: &str = "storage.seq.read.cold";
/// Id of O_DIRECT reads.
pub const READ_DIRECT: &str = "storage.seq.read.direct";
/// Id of reads from the page cache.
pub const READ_HOT: &str = "storage.seq.read.hot";

/// The sequential benchmarks.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let mib = Unit::Throughput {
        bytes_per_op: MIB as f64,
    };
    let seq = |id: &str, summary: &str, mode: Mode, key: &str, scale: f64| {
        FnBench::new(id, summary, mib, move |ctx| Seq::prepare(ctx, mode))
            .param("block", "1MiB")
            .interleave(key)
            .budget_scale(scale)
            .cpu_cost()
            .setup_time(SETUP)
            .boxed()
    };
    vec![
        seq(
            WRITE_BUFFERED,
            "1 MiB write()s into the page cache, never synced: what the application sees, not the disk",
            Mode::BufferedWrite,
            "storage.seq.write",
            3.0,
        ),
        seq(
            WRITE_FDATASYNC,
            "1 MiB write()s rewriting a file, fdatasync after each batch (8/32/128 MiB by profile): the durable write speed",
            Mode::SyncedWrite,
            "storage.seq.write",
            5.0,
        ),
        seq(
            WRITE_DIRECT,
            "1 MiB O_DIRECT writes over a laid-out file: the device's write speed",
            Mode::DirectWrite,
            "storage.seq.write",
            3.0,
        ),
        seq(
            READ_COLD,
            "1 MiB buffered reads of a file dropped from the page cache (posix_fadvise DONTNEED)",
            Mode::ColdRead,
            "storage.seq.read",
            4.0,
        ),
        seq(
            READ_DIRECT,
            "1 MiB O_DIRECT reads: the device's read speed, no readahead",
            Mode::DirectRead,
            "storage.seq.read",
            4.0,
        ),
        seq(
            READ_HOT,
            "1 MiB reads of a file already in the page cache: a memory copy, not the device",
            Mode::HotRead,
            "storage.seq.read",
            4.0,
        ),
    ]
}
