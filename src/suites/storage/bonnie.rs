//! bonnie++'s classic pair: a file written and read one character at a time
//! through C stdio (putc/getc, which batch into one system call per buffer)
//! against the same file moved in 8 KiB write()/read() blocks, bonnie++'s
//! chunk size. The file stays in the page cache, so the difference is the
//! cost of the interface (a locked stdio call per byte vs a system call per
//! block), not the device's: that is in `storage.seq.*`.
//!
//! The `.synced` and `.cold` rows reach the device, so they stand beside
//! bonnie++'s own figures: one sample is a whole pass over the file, a
//! write pass ends with fflush and fdatasync inside the timing (the data
//! is on the device when the clock stops), and a read pass starts with the
//! file dropped from the page cache (untimed), so every byte comes from the
//! device through the kernel's readahead. The plain rows stay in the page
//! cache, as their `reaches` parameter says.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use super::common::{MIB, Sizes, Workspace, lay_out};
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::os::stdio::CFile;
use crate::suites::bench::FnBench;

/// What a round spends setting a benchmark up and tearing it down besides
/// its samples (the file made and removed): 16 ms a round on the quick runs of a 2-vCPU AMD EPYC (Zen 4) KVM guest. Only the run-time estimate
/// uses it ([`FnBench::setup_time`]).
const SETUP: Duration = Duration::from_millis(16);

/// bonnie++'s block size.
pub const CHUNK: u64 = 8192;

/// What is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    PutcWrite,
    BlockWrite,
    GetcRead,
    BlockRead,
}

/// Where a row's bytes go: the page cache only, or the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// The file stays in the page cache; nothing is synced.
    Cache,
    /// Whole passes: writes end with fdatasync, reads start uncached.
    Device,
}

impl Reach {
    /// The `reaches` parameter of a row.
    fn param(self) -> &'static str {
        match self {
            Reach::Cache => "page cache",
            Reach::Device => "device",
        }
    }
}

enum Handle {
    Stdio(CFile),
    Block(File),
}

struct Bonnie {
    ws: Workspace,
    handle: Handle,
    way: Way,
    reach: Reach,
    size: u64,
    pos: u64,
    buf: Vec<u8>,
}

impl Timed for Bonnie {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let step = if matches!(self.way, Way::PutcWrite | Way::GetcRead) {
            1
        } else {
            CHUNK
        };
        if self.reach == Reach::Device || self.pos + ops * step > self.size {
            // Untimed: back to the start of the file.
            if let Handle::Stdio(f) = &mut self.handle {
                f.rewind()?;
            }
            self.pos = 0;
        }
        if self.reach == Reach::Device && matches!(self.way, Way::GetcRead | Way::BlockRead) {
            // Untimed: the pass must come from the device.
            self.drop_cache()?;
        }
        let start = Instant::now();
        match (&mut self.handle, self.way) {
            (Handle::Stdio(f), Way::PutcWrite) => {
                let f = f.ptr();
                for i in 0..ops {
                    let c = b'a' as libc::c_int + (i % 26) as libc::c_int;
                    // SAFETY: f is an open stream.
                    if unsafe { libc::fputc(c, f) } == libc::EOF {
                        bail!("putc: {}", std::io::Error::last_os_error());
                    }
                }
            }
            (Handle::Stdio(f), _) => {
                let f = f.ptr();
                for _ in 0..ops {
                    // SAFETY: f is an open stream.
                    let c = unsafe { libc::fgetc(f) };
                    if c == libc::EOF {
                        bail!("getc: unexpected end of file or error");
                    }
                    std::hint::black_box(c);
                }
            }
            (Handle::Block(f), Way::BlockWrite) => {
                for i in 0..ops {
                    f.write_all_at(&self.buf, self.pos + i * CHUNK)
                        .context("write")?;
                }
            }
            (Handle::Block(f), _) => {
                for i in 0..ops {
                    f.read_exact_at(&mut self.buf, self.pos + i * CHUNK)
                        .context("read")?;
                }
            }
        }
        if self.reach == Reach::Device && matches!(self.way, Way::PutcWrite | Way::BlockWrite) {
            self.sync()?;
        }
        let took = start.elapsed();
        self.pos += ops * step;
        Ok(took)
    }
    fn max_ops(&self) -> Option<u64> {
        Some(self.ops_per_pass())
    }
    fn min_ops(&self) -> u64 {
        // A device row's sample is a whole pass (one sync, one cold file).
        match self.reach {
            Reach::Device => self.ops_per_pass(),
            Reach::Cache => 1,
        }
    }
    fn warnings(&self) -> Vec<String> {
        self.ws.warnings()
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.ws.details(json!({
            "file_bytes": self.size,
            "io": match self.way {
                Way::PutcWrite => "C stdio fputc per byte",
                Way::GetcRead => "C stdio fgetc per byte",
                Way::BlockWrite => "write(2) of 8 KiB",
                Way::BlockRead => "read(2) of 8 KiB",
            },
            "page_cache": match (self.reach, self.way) {
                (Reach::Cache, _) => "file in the page cache, not synced",
                (Reach::Device, Way::PutcWrite | Way::BlockWrite) =>
                    "whole pass over the file, fflush + fdatasync timed at its end",
                (Reach::Device, _) =>
                    "whole pass over the file, dropped from the page cache before each pass",
            },
            "reaches": self.reach.param(),
        })))
    }
}

impl Bonnie {
    /// Operations in one pass over the file.
    fn ops_per_pass(&self) -> u64 {
        match self.way {
            Way::PutcWrite | Way::GetcRead => self.size,
            Way::BlockWrite | Way::BlockRead => self.size / CHUNK,
        }
    }

    /// The descriptor under either handle.
    fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        match &self.handle {
            // SAFETY: the stream is open for as long as self, so is its descriptor.
            Handle::Stdio(f) => unsafe {
                std::os::fd::BorrowedFd::borrow_raw(libc::fileno(f.ptr()))
            },
            Handle::Block(f) => f.as_fd(),
        }
    }

    /// fflush (stdio) and fdatasync: the pass's bytes are on the device.
    fn sync(&mut self) -> anyhow::Result<()> {
        if let Handle::Stdio(f) = &self.handle {
            // SAFETY: an open stream.
            if unsafe { libc::fflush(f.ptr()) } != 0 {
                bail!("fflush: {}", std::io::Error::last_os_error());
            }
        }
        nix::unistd::fdatasync(self.fd()).context("fdatasync")?;
        Ok(())
    }

    /// Drops the file's pages from the page cache (they are clean: the file
    /// was synced when laid out, and read rows never write).
    fn drop_cache(&mut self) -> anyhow::Result<()> {
        nix::fcntl::posix_fadvise(
            self.fd(),
            0,
            0,
            nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
        )
        .context("posix_fadvise(DONTNEED)")?;
        if let Handle::Stdio(f) = &mut self.handle {
            // Also the stream's own buffer: rewinding discards it.
            f.rewind()?;
        }
        Ok(())
    }
}

fn prepare(ctx: &Ctx, way: Way, reach: Reach) -> Result<Box<dyn Timed>, PrepareError> {
    let (ws, size) = Workspace::new(ctx, Sizes::of(ctx.profile).bonnie_file, MIB)?;
    let path = ws.file("bonnie");
    let file = lay_out(&path, size, ctx)?;
    // Bring it back into the page cache: both ways then work on cached
    // pages (the device rows drop or sync it themselves).
    let mut buf = vec![0u8; CHUNK as usize];
    let mut off = 0;
    while reach == Reach::Cache && off < size {
        file.read_exact_at(&mut buf, off)
            .context("warming the file")?;
        off += CHUNK;
    }
    let handle = match way {
        Way::PutcWrite | Way::GetcRead => {
            let mut f = CFile::from_file(file, c"r+")?;
            f.rewind()?; // the descriptor's offset is at the end after lay_out
            Handle::Stdio(f)
        }
        Way::BlockWrite | Way::BlockRead => Handle::Block(file),
    };
    Ok(Box::new(Bonnie {
        ws,
        handle,
        way,
        reach,
        size: size / CHUNK * CHUNK,
        pos: 0,
        buf,
    }))
}

/// Id of per-character stdio writes.
pub const WRITE_PERCHAR: &str = "storage.bonnie.write.perchar";
/// Id of 8 KiB block writes.
pub const WRITE_BLOCK: &str = "storage.bonnie.write.block";
/// Id of per-character stdio reads.
pub const READ_PERCHAR: &str = "storage.bonnie.read.perchar";
/// Id of 8 KiB block reads.
pub const READ_BLOCK: &str = "storage.bonnie.read.block";

/// Id of per-character stdio writes made durable (fdatasync per pass).
pub const WRITE_PERCHAR_SYNCED: &str = "storage.bonnie.write.perchar.synced";
/// Id of 8 KiB block writes made durable (fdatasync per pass).
pub const WRITE_BLOCK_SYNCED: &str = "storage.bonnie.write.block.synced";
/// Id of per-character stdio reads of an uncached file.
pub const READ_PERCHAR_COLD: &str = "storage.bonnie.read.perchar.cold";
/// Id of 8 KiB block reads of an uncached file.
pub const READ_BLOCK_COLD: &str = "storage.bonnie.read.block.cold";

/// A bonnie row: id, summary, what it times, where its bytes go, the interleave group.
type Row = (&'static str, &'static str, Way, Reach, &'static str);

/// Every bonnie row, the page-cache ones first.
const ROWS: [Row; 8] = [
    (
        WRITE_PERCHAR,
        "write a cached file one byte at a time with C stdio putc (bonnie++ per-chr output), page cache only",
        Way::PutcWrite,
        Reach::Cache,
        "storage.bonnie.write",
    ),
    (
        WRITE_BLOCK,
        "write the same cached file in 8 KiB write() calls (bonnie++ block output), page cache only",
        Way::BlockWrite,
        Reach::Cache,
        "storage.bonnie.write",
    ),
    (
        READ_PERCHAR,
        "read a cached file one byte at a time with C stdio getc (bonnie++ per-chr input), page cache only",
        Way::GetcRead,
        Reach::Cache,
        "storage.bonnie.read",
    ),
    (
        READ_BLOCK,
        "read the same cached file in 8 KiB read() calls (bonnie++ block input), page cache only",
        Way::BlockRead,
        Reach::Cache,
        "storage.bonnie.read",
    ),
    (
        WRITE_PERCHAR_SYNCED,
        "write the whole file one byte at a time with putc, then fflush + fdatasync (timed): reaches the device",
        Way::PutcWrite,
        Reach::Device,
        "storage.bonnie.write.device",
    ),
    (
        WRITE_BLOCK_SYNCED,
        "write the whole file in 8 KiB write() calls, then fdatasync (timed): reaches the device",
        Way::BlockWrite,
        Reach::Device,
        "storage.bonnie.write.device",
    ),
    (
        READ_PERCHAR_COLD,
        "read the whole file one byte at a time with getc, dropped from the page cache first: from the device",
        Way::GetcRead,
        Reach::Device,
        "storage.bonnie.read.device",
    ),
    (
        READ_BLOCK_COLD,
        "read the whole file in 8 KiB read() calls, dropped from the page cache first: from the device",
        Way::BlockRead,
        Reach::Device,
        "storage.bonnie.read.device",
    ),
];

/// The per-character vs block benchmarks. The device rows take a whole
/// file pass (and a sync or a cold read) per sample, so they start at the
/// default profile.
pub fn benches() -> Vec<Box<dyn Bench>> {
    ROWS.iter()
        .map(|&(id, summary, way, reach, key)| {
            let bytes = match way {
                Way::PutcWrite | Way::GetcRead => 1,
                Way::BlockWrite | Way::BlockRead => CHUNK,
            };
            let b = FnBench::new(
                id,
                summary,
                Unit::Throughput {
                    bytes_per_op: bytes as f64,
                },
                move |ctx| prepare(ctx, way, reach),
            )
            .param("reaches", reach.param())
            .interleave(key)
            .budget_scale(1.5)
            .cpu_cost()
            .setup_time(SETUP);
            match reach {
                Reach::Cache => b.boxed(),
                Reach::Device => b.min_profile(Profile::Default).boxed(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_say_where_their_bytes_go_and_device_rows_wait_for_default() {
        let b = benches();
        assert_eq!(b.len(), 8);
        for b in &b {
            let reaches = b.params()["reaches"].as_str().unwrap().to_string();
            let device = b.id().ends_with(".synced") || b.id().ends_with(".cold");
            assert_eq!(reaches == "device", device, "{}", b.id());
            assert_eq!(b.runs_at(Profile::Quick), !device, "{}", b.id());
            assert!(b.runs_at(Profile::Default));
            assert!(matches!(b.unit(), Unit::Throughput { .. }));
        }
    }

    #[test]
    fn device_rows_pass_over_the_whole_file_and_sync_or_start_cold() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = Ctx {
            profile: Profile::Quick,
            dir: tmp.path().to_path_buf(),
            tmp: tmp.path().to_path_buf(),
            ..crate::harness::test_ctx()
        };
        for way in [
            Way::PutcWrite,
            Way::BlockWrite,
            Way::GetcRead,
            Way::BlockRead,
        ] {
            let mut t = match prepare(&ctx, way, Reach::Device) {
                Ok(t) => t,
                Err(PrepareError::Skip(r)) => {
                    eprintln!("skipped: {r}");
                    return;
                }
                Err(PrepareError::Fail(e)) => panic!("{way:?}: {e:#}"),
            };
            let pass = t.max_ops().unwrap();
            assert_eq!(t.min_ops(), pass, "{way:?}");
            assert!(t.run(pass).unwrap() > Duration::ZERO);
            assert!(t.run(pass).unwrap() > Duration::ZERO, "a second pass works");
            let d = t.details().unwrap();
            assert_eq!(d["reaches"], "device");
        }
    }
}
