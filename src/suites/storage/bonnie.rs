//! bonnie++'s classic pair: a file written and read one character at a time
//! through C stdio (putc/getc, which batch into one system call per buffer)
//! against the same file moved in 8 KiB write()/read() blocks, bonnie++'s
//! chunk size. The file stays in the page cache, so the difference is the
//! cost of the interface (a locked stdio call per byte vs a system call per
//! block), not the device's: that is in `storage.seq.*`.

use std::ffi::CStr;
use std::fs::File;
use std::os::fd::IntoRawFd;
use std::os::unix::fs::FileExt;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde_json::json;

use super::common::{MIB, Sizes, Workspace, lay_out};
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::suites::FnBench;

/// bonnie++'s block size.
pub const CHUNK: u64 = 8192;

/// A C stdio stream, closed on drop.
struct CFile(NonNull<libc::FILE>);

impl CFile {
    /// Wraps `file` in a stdio stream opened with `mode` (`r+`).
    fn from_file(file: File, mode: &CStr) -> anyhow::Result<CFile> {
        let fd = file.into_raw_fd();
        // SAFETY: fd is a valid descriptor we own; fdopen takes it over.
        let f = unsafe { libc::fdopen(fd, mode.as_ptr()) };
        match NonNull::new(f) {
            Some(p) => Ok(CFile(p)),
            None => {
                let e = std::io::Error::last_os_error();
                // SAFETY: fdopen failed, so fd is still ours to close.
                unsafe { libc::close(fd) };
                Err(anyhow!("fdopen: {e}"))
            }
        }
    }

    fn rewind(&mut self) -> anyhow::Result<()> {
        // SAFETY: self.0 is an open stream.
        if unsafe { libc::fseek(self.0.as_ptr(), 0, libc::SEEK_SET) } != 0 {
            bail!("fseek: {}", std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for CFile {
    fn drop(&mut self) {
        // SAFETY: self.0 is an open stream, closed exactly once here.
        unsafe { libc::fclose(self.0.as_ptr()) };
    }
}

/// What is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    PutcWrite,
    BlockWrite,
    GetcRead,
    BlockRead,
}

enum Handle {
    Stdio(CFile),
    Block(File),
}

struct Bonnie {
    ws: Workspace,
    handle: Handle,
    way: Way,
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
        if self.pos + ops * step > self.size {
            // Untimed: back to the start of the file.
            if let Handle::Stdio(f) = &mut self.handle {
                f.rewind()?;
            }
            self.pos = 0;
        }
        let start = Instant::now();
        match (&mut self.handle, self.way) {
            (Handle::Stdio(f), Way::PutcWrite) => {
                let f = f.0.as_ptr();
                for i in 0..ops {
                    let c = b'a' as libc::c_int + (i % 26) as libc::c_int;
                    // SAFETY: f is an open stream.
                    if unsafe { libc::fputc(c, f) } == libc::EOF {
                        bail!("putc: {}", std::io::Error::last_os_error());
                    }
                }
            }
            (Handle::Stdio(f), _) => {
                let f = f.0.as_ptr();
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
        let took = start.elapsed();
        self.pos += ops * step;
        Ok(took)
    }
    fn max_ops(&self) -> Option<u64> {
        Some(match self.way {
            Way::PutcWrite | Way::GetcRead => self.size,
            Way::BlockWrite | Way::BlockRead => self.size / CHUNK,
        })
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
            "page_cache": "file in the page cache, not synced",
        })))
    }
}

fn prepare(ctx: &Ctx, way: Way) -> Result<Box<dyn Timed>, PrepareError> {
    let (ws, size) = Workspace::new(ctx, Sizes::of(ctx.profile).bonnie_file, MIB)?;
    let path = ws.file("bonnie");
    let file = lay_out(&path, size, ctx)?;
    // Bring it back into the page cache: both ways then work on cached pages.
    let mut buf = vec![0u8; CHUNK as usize];
    let mut off = 0;
    while off < size {
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

/// The per-character vs block benchmarks.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let b = |id: &str, summary: &str, way: Way, bytes: u64, key: &str| {
        FnBench::new(
            id,
            summary,
            Unit::Throughput {
                bytes_per_op: bytes as f64,
            },
            move |ctx| prepare(ctx, way),
        )
        .interleave(key)
        .budget_scale(1.5)
        .boxed()
    };
    vec![
        b(
            WRITE_PERCHAR,
            "write a cached file one byte at a time with C stdio putc (bonnie++ per-chr output)",
            Way::PutcWrite,
            1,
            "storage.bonnie.write",
        ),
        b(
            WRITE_BLOCK,
            "write the same cached file in 8 KiB write() calls (bonnie++ block output)",
            Way::BlockWrite,
            CHUNK,
            "storage.bonnie.write",
        ),
        b(
            READ_PERCHAR,
            "read a cached file one byte at a time with C stdio getc (bonnie++ per-chr input)",
            Way::GetcRead,
            1,
            "storage.bonnie.read",
        ),
        b(
            READ_BLOCK,
            "read the same cached file in 8 KiB read() calls (bonnie++ block input)",
            Way::BlockRead,
            CHUNK,
            "storage.bonnie.read",
        ),
    ]
}
