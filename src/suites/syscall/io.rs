//! E2: is buffering worth it? Small reads and writes through the raw system
//! call, the libc wrapper, C stdio (`fread`/`fwrite` on a `FILE*` with its
//! default buffer) and Rust's `BufReader`/`BufWriter`.
//!
//! Two targets: the devices (/dev/zero, /dev/null), where a request costs
//! the kernel almost nothing but the system call itself, and a regular file
//! in the run's temp dir, which adds the page cache. On the file, a sweep of
//! the request size (1 B .. 64 KiB) shows where the buffered line meets the
//! unbuffered one: batching saves system calls but adds a copy.
//!
//! Bounded files: the read file is a multiple of every request size, so a
//! read is either whole or at end of file, where it rewinds (once per
//! 4 MiB: negligible). Writes to the file are truncated between batches,
//! outside the timed section, and a batch never writes more than
//! [`WRITE_FILE_CAP`] bytes. Buffered writers flush inside the timed
//! section: the flush is part of what buffering costs.

use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::raw::{self, nr};
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::os::stdio::CFile;
use crate::suites::bench::FnBench;
use crate::suites::undisturbed::Undisturbed;
use crate::units::size_label;

/// Request sizes of the sweep, in bytes.
pub const SWEEP_SIZES: [usize; 9] = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536];
/// The request size of the method comparison (E2's "4-byte reads and writes").
pub const SMALL: usize = 4;
/// Size of the file the read benchmarks read: a multiple of every request size.
const READ_FILE_BYTES: usize = 4 << 20;
/// The most bytes one batch writes to the file before it is truncated.
const WRITE_FILE_CAP: u64 = 64 << 20;
/// Free space left untouched beyond what a benchmark writes.
const SPACE_MARGIN: u64 = 64 << 20;

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Reading `size` bytes per operation.
    Read,
    /// Writing `size` bytes per operation.
    Write,
}

/// How the bytes are moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The raw system-call instruction.
    Raw,
    /// The libc `read`/`write` wrapper.
    Libc,
    /// C stdio `fread`/`fwrite` on a `FILE*` with its default buffer.
    Stdio,
    /// Rust's `BufReader`/`BufWriter` with their default capacity.
    RustBuf,
}

/// Where the bytes come from or go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// /dev/zero for reads, /dev/null for writes.
    Device,
    /// A regular file in the run's temp dir (page cache).
    File,
}

/// Id of one E2 benchmark: `syscall.io.read.libc.file/4B`, `syscall.io.fwrite.null/4B`.
pub fn id(dir: Dir, method: Method, target: Target, size: usize) -> String {
    let m = match (dir, method) {
        (Dir::Read, Method::Raw) => "read.raw",
        (Dir::Read, Method::Libc) => "read.libc",
        (Dir::Read, Method::Stdio) => "fread",
        (Dir::Read, Method::RustBuf) => "bufreader",
        (Dir::Write, Method::Raw) => "write.raw",
        (Dir::Write, Method::Libc) => "write.libc",
        (Dir::Write, Method::Stdio) => "fwrite",
        (Dir::Write, Method::RustBuf) => "bufwriter",
    };
    format!(
        "syscall.io.{m}.{}/{}",
        target_name(dir, target),
        size_label(size as u64)
    )
}

/// `zero`, `null` or `file`.
fn target_name(dir: Dir, target: Target) -> &'static str {
    match (dir, target) {
        (Dir::Read, Target::Device) => "zero",
        (Dir::Write, Target::Device) => "null",
        (_, Target::File) => "file",
    }
}

/// The E2 benchmarks: every method at 4 B on both targets, and the
/// unbuffered-vs-stdio sweep of the request size on the file.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let methods = [Method::Raw, Method::Libc, Method::Stdio, Method::RustBuf];
    let mut v = Vec::new();
    for dir in [Dir::Read, Dir::Write] {
        for m in methods {
            v.push(bench(dir, m, Target::Device, SMALL));
        }
        for size in SWEEP_SIZES {
            let ms: &[Method] = if size == SMALL {
                &methods
            } else {
                &[Method::Libc, Method::Stdio]
            };
            for &m in ms {
                v.push(bench(dir, m, Target::File, size));
            }
        }
    }
    v
}

fn bench(dir: Dir, method: Method, target: Target, size: usize) -> Box<dyn Bench> {
    let (verb, prep) = match dir {
        Dir::Read => ("read", "from"),
        Dir::Write => ("write", "to"),
    };
    let how = match method {
        Method::Raw => "the raw system-call instruction",
        Method::Libc => "the libc wrapper",
        Method::Stdio => "C stdio (default FILE buffer)",
        Method::RustBuf => "Rust's BufReader/BufWriter",
    };
    let place = match (dir, target) {
        (Dir::Read, Target::Device) => "/dev/zero",
        (Dir::Write, Target::Device) => "/dev/null",
        (_, Target::File) => "a file in the page cache",
    };
    // On the file the results form a sweep, so they are throughputs.
    let unit = match target {
        Target::Device => Unit::Latency,
        Target::File => Unit::Throughput {
            bytes_per_op: size as f64,
        },
    };
    let label = size_label(size as u64);
    FnBench::new(
        id(dir, method, target, size),
        format!("{verb} {label} per call {prep} {place} through {how}"),
        unit,
        move |ctx| {
            prepare(dir, method, target, size, ctx)
                .map(|t| Box::new(Undisturbed::new(t)) as Box<dyn Timed>)
        },
    )
    .param("size", size)
    .param("target", target_name(dir, target))
    .subtract_loop()
    .interleave(format!(
        "syscall.io.{verb}.{}/{label}",
        target_name(dir, target)
    ))
    .boxed()
}

/// How a prepared benchmark holds its target.
enum Handle {
    /// A plain descriptor, for raw and libc calls.
    Fd(File),
    /// A C stream.
    Stdio(CFile),
    /// A Rust buffered reader.
    BufRead(BufReader<File>),
    /// A Rust buffered writer.
    BufWrite(BufWriter<File>),
}

/// A prepared E2 benchmark. Dropping it closes the target; the temp file
/// has no name, so closing it frees it, even after a crash.
pub struct Io {
    dir: Dir,
    method: Method,
    size: usize,
    /// True on the regular file (reads rewind at end of file, writes truncate).
    is_file: bool,
    buf: Vec<u8>,
    handle: Handle,
    /// The target's st_blksize: the buffer glibc gives a stream on it.
    blksize: libc::blksize_t,
}

/// Refuses to start when the temp dir has too little room.
fn ensure_space(dir: &Path, need: u64) -> Result<(), PrepareError> {
    let st =
        nix::sys::statvfs::statvfs(dir).with_context(|| format!("statvfs {}", dir.display()))?;
    let free = st.blocks_available() as u64 * st.fragment_size() as u64;
    if free < need + SPACE_MARGIN {
        return Err(PrepareError::Skip(format!(
            "only {} MiB free in the temp dir {}, {} MiB needed; free some space there or point TMPDIR elsewhere",
            free >> 20,
            dir.display(),
            (need + SPACE_MARGIN) >> 20
        )));
    }
    Ok(())
}

/// Opens the target and wraps it for `method`.
pub fn prepare(
    dir: Dir,
    method: Method,
    target: Target,
    size: usize,
    ctx: &Ctx,
) -> Result<Io, PrepareError> {
    let file = match (dir, target) {
        (Dir::Read, Target::Device) => File::open("/dev/zero")
            .map_err(|e| PrepareError::Skip(format!("cannot open /dev/zero: {e}")))?,
        (Dir::Write, Target::Device) => OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .map_err(|e| PrepareError::Skip(format!("cannot open /dev/null: {e}")))?,
        (Dir::Read, Target::File) => {
            ensure_space(&ctx.tmp, READ_FILE_BYTES as u64)?;
            let mut f = tempfile::tempfile_in(&ctx.tmp)
                .with_context(|| format!("creating a file in {}", ctx.tmp.display()))?;
            let chunk: Vec<u8> = (0..=255u8).cycle().take(64 << 10).collect();
            for _ in 0..READ_FILE_BYTES / chunk.len() {
                f.write_all(&chunk).context("filling the file to read")?;
            }
            f.rewind()?;
            f
        }
        (Dir::Write, Target::File) => {
            ensure_space(&ctx.tmp, WRITE_FILE_CAP)?;
            tempfile::tempfile_in(&ctx.tmp)
                .with_context(|| format!("creating a file in {}", ctx.tmp.display()))?
        }
    };
    let blksize = nix::sys::stat::fstat(&file).map_or(0, |st| st.st_blksize);
    let handle = match (dir, method) {
        (_, Method::Raw | Method::Libc) => Handle::Fd(file),
        (Dir::Read, Method::Stdio) => Handle::Stdio(CFile::from_file(file, c"r")?),
        (Dir::Write, Method::Stdio) => Handle::Stdio(CFile::from_file(file, c"w")?),
        (Dir::Read, Method::RustBuf) => Handle::BufRead(BufReader::new(file)),
        (Dir::Write, Method::RustBuf) => Handle::BufWrite(BufWriter::new(file)),
    };
    Ok(Io {
        dir,
        method,
        size,
        is_file: target == Target::File,
        buf: vec![b'x'; size],
        handle,
        blksize,
    })
}

impl Io {
    /// Empties the written file and goes back to its start (untimed).
    fn truncate(&mut self) -> anyhow::Result<()> {
        match &mut self.handle {
            Handle::Fd(f) => {
                f.set_len(0)?;
                f.rewind()?;
            }
            Handle::BufWrite(w) => {
                w.flush()?;
                w.get_ref().set_len(0)?;
                w.rewind()?;
            }
            Handle::Stdio(f) => {
                // SAFETY: the stream is open; it was flushed at the end of the
                // last batch, so truncating under it loses nothing.
                unsafe {
                    if libc::fflush(f.ptr()) != 0
                        || libc::ftruncate(libc::fileno(f.ptr()), 0) != 0
                        || libc::fseek(f.ptr(), 0, libc::SEEK_SET) != 0
                    {
                        return Err(std::io::Error::last_os_error()).context("truncating");
                    }
                }
            }
            Handle::BufRead(_) => {}
        }
        Ok(())
    }

    /// Times `ops` requests of the raw system call or the libc wrapper on
    /// descriptor `fd`.
    fn time_fd(&mut self, fd: RawFd, ops: u64) -> anyhow::Result<Duration> {
        let n = self.size;
        let p = self.buf.as_mut_ptr();
        let start;
        let raw = self.method == Method::Raw;
        match self.dir {
            Dir::Read if raw => {
                start = Instant::now();
                for _ in 0..ops {
                    // SAFETY: buf holds n writable bytes.
                    let r = unsafe { raw::syscall3(nr::READ, fd as usize, p as usize, n) };
                    if r != n as isize {
                        read_rest(fd, p, n, r)?;
                    }
                }
            }
            Dir::Read => {
                start = Instant::now();
                for _ in 0..ops {
                    // SAFETY: buf holds n writable bytes.
                    let r = unsafe { libc::read(fd, p.cast(), n) };
                    if r != n as isize {
                        read_rest(fd, p, n, r)?;
                    }
                }
            }
            Dir::Write if raw => {
                start = Instant::now();
                for _ in 0..ops {
                    // SAFETY: buf holds n readable bytes.
                    let r = unsafe { raw::syscall3(nr::WRITE, fd as usize, p as usize, n) };
                    if r != n as isize {
                        write_rest(fd, p, n, r)?;
                    }
                }
            }
            Dir::Write => {
                start = Instant::now();
                for _ in 0..ops {
                    // SAFETY: buf holds n readable bytes.
                    let r = unsafe { libc::write(fd, p.cast(), n) };
                    if r != n as isize {
                        write_rest(fd, p, n, r)?;
                    }
                }
            }
        }
        Ok(start.elapsed())
    }

    /// Times `ops` requests of `fread` or `fwrite` (then one `fflush`) on
    /// the C stream `f`.
    fn time_stdio(&mut self, f: *mut libc::FILE, ops: u64) -> anyhow::Result<Duration> {
        let n = self.size;
        let p = self.buf.as_mut_ptr();
        let start;
        match self.dir {
            Dir::Read => {
                start = Instant::now();
                for _ in 0..ops {
                    // SAFETY: the stream is open; buf holds n writable bytes.
                    let got = unsafe { libc::fread(p.cast(), 1, n, f) };
                    if got != n {
                        fread_rest(f, p, n, got)?;
                    }
                }
            }
            Dir::Write => {
                start = Instant::now();
                for _ in 0..ops {
                    // SAFETY: the stream is open; buf holds n readable bytes.
                    if unsafe { libc::fwrite(p.cast(), 1, n, f) } != n {
                        return Err(std::io::Error::last_os_error()).context("fwrite");
                    }
                }
                // SAFETY: the stream is open.
                if unsafe { libc::fflush(f) } != 0 {
                    return Err(std::io::Error::last_os_error()).context("fflush");
                }
            }
        }
        Ok(start.elapsed())
    }
}

/// Times `ops` reads of `buf`'s size through the Rust buffered reader `r`,
/// rewinding at end of file.
fn time_buf_read(r: &mut BufReader<File>, buf: &mut [u8], ops: u64) -> anyhow::Result<Duration> {
    let start = Instant::now();
    for _ in 0..ops {
        if r.read_exact(buf).is_err() {
            // End of file: rewind (discarding the buffer) and retry.
            r.rewind()?;
            r.read_exact(buf).context("reading the file again")?;
        }
        black_box(&mut *buf);
    }
    Ok(start.elapsed())
}

/// Times `ops` writes of `buf` through the Rust buffered writer `w`, then
/// its flush.
fn time_buf_write(w: &mut BufWriter<File>, buf: &[u8], ops: u64) -> anyhow::Result<Duration> {
    let start = Instant::now();
    for _ in 0..ops {
        w.write_all(black_box(buf))?;
    }
    w.flush()?;
    Ok(start.elapsed())
}

impl Timed for Io {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        if self.dir == Dir::Write && self.is_file {
            self.truncate()?;
        }
        // One loop per way of calling, written out on purpose: each times
        // its call directly, with no dispatch inside the timed code.
        match &mut self.handle {
            Handle::Fd(f) => {
                let fd = f.as_raw_fd();
                self.time_fd(fd, ops)
            }
            Handle::Stdio(f) => {
                let f = f.ptr();
                self.time_stdio(f, ops)
            }
            Handle::BufRead(r) => time_buf_read(r, &mut self.buf, ops),
            Handle::BufWrite(w) => time_buf_write(w, &self.buf, ops),
        }
    }

    fn max_ops(&self) -> Option<u64> {
        (self.dir == Dir::Write && self.is_file).then(|| (WRITE_FILE_CAP / self.size as u64).max(1))
    }

    fn details(&self) -> Option<serde_json::Value> {
        let mut d = serde_json::json!({ "request_bytes": self.size, "st_blksize": self.blksize });
        if let Handle::BufRead(r) = &self.handle {
            d["buffer_bytes"] = r.capacity().into();
        }
        if let Handle::BufWrite(w) = &self.handle {
            d["buffer_bytes"] = w.capacity().into();
        }
        Some(d)
    }
}

/// The rare path of an unbuffered read that did not return `n` bytes: an
/// error, or end of file (rewind and read again).
#[cold]
#[inline(never)]
fn read_rest(fd: RawFd, p: *mut u8, n: usize, first: isize) -> anyhow::Result<()> {
    let mut done = raw::check(first).context("read")?;
    let mut rewound = false;
    while done < n {
        // SAFETY: p..p+n is the caller's buffer; done < n.
        let r = unsafe { libc::read(fd, p.add(done).cast(), n - done) };
        match r {
            0 if !rewound => {
                // SAFETY: lseek on an open descriptor.
                if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } < 0 {
                    return Err(std::io::Error::last_os_error()).context("rewinding");
                }
                rewound = true;
            }
            0 => bail!("read: the file is empty"),
            r if r < 0 => return Err(std::io::Error::last_os_error()).context("read"),
            r => done += r as usize,
        }
    }
    Ok(())
}

/// The rare path of an unbuffered write that did not take `n` bytes.
#[cold]
#[inline(never)]
fn write_rest(fd: RawFd, p: *mut u8, n: usize, first: isize) -> anyhow::Result<()> {
    let mut done = raw::check(first).context("write")?;
    while done < n {
        // SAFETY: p..p+n is the caller's buffer; done < n.
        let r = unsafe { libc::write(fd, p.add(done).cast(), n - done) };
        if r <= 0 {
            return Err(std::io::Error::last_os_error()).context("write");
        }
        done += r as usize;
    }
    Ok(())
}

/// The rare path of an `fread` that returned fewer than `n` bytes: an
/// error, or end of file (rewind the stream and read the rest).
#[cold]
#[inline(never)]
fn fread_rest(f: *mut libc::FILE, p: *mut u8, n: usize, first: usize) -> anyhow::Result<()> {
    // SAFETY: f is an open stream; p..p+n is the caller's buffer.
    unsafe {
        if libc::ferror(f) != 0 {
            return Err(std::io::Error::last_os_error()).context("fread");
        }
        if libc::fseek(f, 0, libc::SEEK_SET) != 0 {
            return Err(std::io::Error::last_os_error()).context("rewinding the stream");
        }
        let more = libc::fread(p.add(first).cast(), 1, n - first, f);
        if first + more != n {
            bail!("fread: the file is shorter than one request");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::test_ctx_with;

    fn ctx(tmp: &Path) -> Ctx {
        test_ctx_with(crate::host::Host::default(), tmp)
    }

    #[test]
    fn ids_name_method_target_and_size() {
        assert_eq!(
            id(Dir::Read, Method::Libc, Target::File, 4),
            "syscall.io.read.libc.file/4B"
        );
        assert_eq!(
            id(Dir::Write, Method::Stdio, Target::Device, 65536),
            "syscall.io.fwrite.null/64KiB"
        );
        assert_eq!(
            id(Dir::Read, Method::RustBuf, Target::Device, 4),
            "syscall.io.bufreader.zero/4B"
        );
    }

    #[test]
    fn every_method_reads_and_writes_both_targets() {
        let tmp = tempfile::tempdir().unwrap();
        let c = ctx(tmp.path());
        for dir in [Dir::Read, Dir::Write] {
            for m in [Method::Raw, Method::Libc, Method::Stdio, Method::RustBuf] {
                for t in [Target::Device, Target::File] {
                    let mut io = prepare(dir, m, t, 16, &c).unwrap();
                    // Enough reads to pass the end of the 4 MiB file once.
                    let ops = if t == Target::File && dir == Dir::Read {
                        (READ_FILE_BYTES / 16 + 10) as u64
                    } else {
                        1000
                    };
                    let took = io.run(ops).unwrap();
                    assert!(took > Duration::ZERO, "{dir:?} {m:?} {t:?}");
                    io.run(3).unwrap();
                }
            }
        }
        // Nothing is left behind: the files had no name.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn writes_to_the_file_land_whole_and_are_truncated_between_batches() {
        let tmp = tempfile::tempdir().unwrap();
        let c = ctx(tmp.path());
        for m in [Method::Raw, Method::Libc, Method::Stdio, Method::RustBuf] {
            let mut io = prepare(Dir::Write, m, Target::File, 4, &c).unwrap();
            io.run(1000).unwrap();
            io.run(250).unwrap();
            let fd = match &io.handle {
                Handle::Fd(f) => f.as_raw_fd(),
                // SAFETY: the stream is open.
                Handle::Stdio(f) => unsafe { libc::fileno(f.ptr()) },
                Handle::BufWrite(w) => w.get_ref().as_raw_fd(),
                Handle::BufRead(_) => unreachable!(),
            };
            let len = nix::sys::stat::fstat(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
                .unwrap()
                .st_size;
            assert_eq!(
                len, 1000,
                "{m:?}: the second batch starts from an empty file"
            );
            assert_eq!(io.max_ops(), Some(WRITE_FILE_CAP / 4));
        }
    }

    #[test]
    fn reads_from_the_file_return_its_bytes_across_the_rewind() {
        let tmp = tempfile::tempdir().unwrap();
        let c = ctx(tmp.path());
        for m in [Method::Raw, Method::Libc, Method::Stdio, Method::RustBuf] {
            let mut io = prepare(Dir::Read, m, Target::File, 64 << 10, &c).unwrap();
            io.run((READ_FILE_BYTES / (64 << 10)) as u64 + 1).unwrap();
            // After one whole pass and a rewind, the buffer holds the first chunk.
            let want: Vec<u8> = (0..=255u8).cycle().take(64 << 10).collect();
            assert!(io.buf == want, "{m:?}");
        }
    }

    #[test]
    fn sweep_pairs_share_an_interleave_key_and_units_follow_the_target() {
        let benches = benches();
        let find = |id: &str| benches.iter().find(|b| b.id() == id).unwrap();
        let a = find("syscall.io.read.libc.file/1KiB");
        let b = find("syscall.io.fread.file/1KiB");
        assert_eq!(a.interleave(), b.interleave());
        assert_eq!(
            a.unit(),
            Unit::Throughput {
                bytes_per_op: 1024.0
            }
        );
        assert_eq!(find("syscall.io.read.raw.zero/4B").unit(), Unit::Latency);
        assert_ne!(
            find("syscall.io.write.libc.file/1KiB").interleave(),
            a.interleave()
        );
    }
}
