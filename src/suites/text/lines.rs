//! E11: iterating the lines of a file, eight ways, and `wc -l` for scale:
//! MiB/s, lines/s and the peak memory each way needs.
//!
//! Each benchmark writes its own file (LF or CRLF, lines of about 40 B or
//! 4 KiB) in a private directory of the run's `--dir`, sized by the profile,
//! the free space and the memory available, fsynced, and removed on drop or
//! Ctrl-C. One operation is one pass over the whole file that hands every
//! line, without its terminator, to the caller; the caller counts lines and
//! bytes, and every pass must find the count the file was written with.
//! Warm rows read a file already in the page cache (a first pass in set-up
//! is discarded); cold rows drop it with `posix_fadvise(DONTNEED)` before
//! each pass. The peak memory of a method is measured in a forked child
//! that does one pass and nothing else: the child maps all of its program's
//! code first (a forked child maps those pages only as it touches them, and
//! they would count: up to 1 MiB in a debug build), resets its RSS
//! high-water mark (`/proc/self/clear_refs`), and the peak (`VmHWM`) above
//! its resident size before the pass is what the method added.

use std::ffi::CString;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::harness::round::expected_slow;
use crate::harness::scratch::ScratchDir;
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::host::location::locate;
use crate::os::fs::{MIB, drop_from_cache, fit_size, fs_space, reserve_bytes};
use crate::suites::bench::FnBench;
use crate::units::{human_bytes, size_label};

/// Smallest file a benchmark accepts after scaling down to the free space.
const MIN_FILE: u64 = MIB;
/// The block `memchr_block` reads and the buffer `fgets` fills.
const BLOCK: usize = 64 * 1024;
/// Budget scale: a pass is long enough that a few samples converge.
const BUDGET: f64 = 0.5;

/// File size per profile (the seed read a 508 MiB file; thorough comes close).
fn file_size(p: Profile) -> u64 {
    match p {
        Profile::Quick => 4 * MIB,
        Profile::Default => 64 * MIB,
        Profile::Thorough => 512 * MIB,
    }
}

/// A way of iterating lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `BufReader::lines()`: a new `String` per line.
    Lines,
    /// `read_line` into one reused `String`.
    ReadLine,
    /// `read_until(b'\n')` into one reused `Vec<u8>`.
    ReadUntil,
    /// `read` in 64 KiB blocks, `memchr` for the newlines.
    MemchrBlock,
    /// `memchr` over an mmap of the whole file.
    MemchrMmap,
    /// `read_to_string` of the whole file, then `lines()` collected into a `Vec<&str>`.
    WholeSplit,
    /// C `getline` with one reused buffer.
    Getline,
    /// C `fgets` into a 64 KiB buffer.
    Fgets,
    /// The `wc -l` program, process start included (a row for scale).
    WcL,
}

impl Method {
    /// Every method, in report order.
    pub const ALL: [Method; 9] = [
        Method::Lines,
        Method::ReadLine,
        Method::ReadUntil,
        Method::MemchrBlock,
        Method::MemchrMmap,
        Method::WholeSplit,
        Method::Getline,
        Method::Fgets,
        Method::WcL,
    ];

    /// The name used in ids.
    pub fn name(self) -> &'static str {
        match self {
            Method::Lines => "lines",
            Method::ReadLine => "read_line",
            Method::ReadUntil => "read_until",
            Method::MemchrBlock => "memchr_block",
            Method::MemchrMmap => "memchr_mmap",
            Method::WholeSplit => "whole_split",
            Method::Getline => "getline",
            Method::Fgets => "fgets",
            Method::WcL => "wc_l",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Method::Lines => "BufRead::lines (a String per line)",
            Method::ReadLine => "read_line into a reused String",
            Method::ReadUntil => "read_until into a reused Vec",
            Method::MemchrBlock => "memchr over 64 KiB blocks read in turn",
            Method::MemchrMmap => "memchr over an mmap of the file",
            Method::WholeSplit => "whole file into memory, then split into a Vec of lines",
            Method::Getline => "C getline with a reused buffer",
            Method::Fgets => "C fgets into a 64 KiB buffer",
            Method::WcL => "the wc -l program (process start included)",
        }
    }
}

/// The shape of a generated file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Lines end in `\r\n` rather than `\n`.
    pub crlf: bool,
    /// Mean line length in bytes, terminator included.
    pub line: usize,
}

impl Shape {
    /// Every shape: short and long lines, LF and CRLF.
    pub const ALL: [Shape; 4] = [
        Shape {
            crlf: true,
            line: 40,
        },
        Shape {
            crlf: false,
            line: 40,
        },
        Shape {
            crlf: true,
            line: 4096,
        },
        Shape {
            crlf: false,
            line: 4096,
        },
    ];

    /// `crlf-40B`, `lf-4KiB`.
    pub fn label(self) -> String {
        format!(
            "{}-{}",
            if self.crlf { "crlf" } else { "lf" },
            size_label(self.line as u64)
        )
    }
}

/// What a pass found: lines, and bytes of line content (terminators excluded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    /// Lines.
    pub lines: u64,
    /// Bytes of the lines without `\n` or `\r\n`.
    pub bytes: u64,
}

impl Count {
    #[inline]
    fn line(&mut self, content: &[u8]) {
        self.lines += 1;
        self.bytes += strip_cr(content).len() as u64;
    }
}

/// `line` without a final `\r`.
#[inline]
fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The E11 benchmarks: every method on every shape, warm; cold rows for
/// short and long lines. Quick keeps the seed's case (CRLF, short lines)
/// and one cold row.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let shared: Vec<Arc<SharedFile>> = Shape::ALL.iter().map(|_| Arc::default()).collect();
    let mut v = Vec::new();
    for (i, &shape) in Shape::ALL.iter().enumerate() {
        for m in Method::ALL {
            let from = if i == 0 {
                Profile::Quick
            } else {
                Profile::Default
            };
            v.push(bench(m, shape, false, from, shared[i].clone()));
        }
    }
    for i in [0, 3] {
        for m in Method::ALL {
            let quick = i == 0 && m == Method::MemchrBlock;
            let from = if quick {
                Profile::Quick
            } else {
                Profile::Default
            };
            v.push(bench(m, Shape::ALL[i], true, from, shared[i].clone()));
        }
    }
    v
}

fn bench(
    m: Method,
    shape: Shape,
    cold: bool,
    from: Profile,
    file: Arc<SharedFile>,
) -> Box<dyn Bench> {
    let id = format!(
        "text.lines.{}/{}{}",
        m.name(),
        shape.label(),
        if cold { "/cold" } else { "" }
    );
    let summary = format!(
        "lines of a {} file ({}), {}: {}",
        shape.label(),
        if shape.crlf { "CRLF" } else { "LF" },
        if cold {
            "page cache dropped before each pass"
        } else {
            "in the page cache"
        },
        m.describe()
    );
    // Measured in the first round, kept for the others.
    let peak: Arc<Mutex<Option<Result<u64, String>>>> = Arc::default();
    FnBench::new(
        id,
        summary,
        Unit::Throughput {
            bytes_per_op: MIB as f64,
        },
        move |ctx| {
            let file = file.get(ctx, shape)?;
            LinesRun::prepare(ctx, m, file, cold, &peak)
        },
    )
    .param("method", m.name())
    .param("eol", if shape.crlf { "crlf" } else { "lf" })
    .param("line_bytes", shape.line)
    .param("cache", if cold { "cold" } else { "warm" })
    .budget_scale(BUDGET)
    .min_profile(from)
    .expected_by(move |profile, budget| lines_expected(m, profile, budget))
    .boxed()
}

/// Typical speed of each way over the files of a default run, GB/s (the
/// harmonic mean over shapes, warm and cold, on a quiet 2-vCPU AMD EPYC
/// (Zen 4) KVM guest, 2026-11-28). Only the run-time estimate uses them.
fn nominal_gbps(m: Method) -> f64 {
    match m {
        Method::Lines => 0.99,
        Method::ReadLine => 1.34,
        Method::ReadUntil => 1.80,
        Method::Getline => 2.16,
        Method::Fgets => 1.29,
        Method::MemchrBlock => 3.20,
        Method::MemchrMmap => 3.34,
        Method::WholeSplit => 0.86,
        Method::WcL => 4.12,
    }
}

/// How long a run should expect a lines benchmark to take
/// ([`expected_slow`]): a batch is at least one whole pass over the file,
/// so calibration, which grows a batch one MiB at a time, reads it about
/// three times before the first sample; the round's preparation opens it
/// (and, cold, drops it from the page cache): about 1 GB/s.
fn lines_expected(m: Method, profile: Profile, budget: Duration) -> Duration {
    let bytes = file_size(profile) as f64;
    let pass = Duration::from_secs_f64(bytes / (nominal_gbps(m) * 1e9));
    let prep = Duration::from_secs_f64(bytes / 1e9) + pass * 5 / 2;
    expected_slow(profile, budget, prep, pass)
}

/// The file of one shape, laid out by the first of its benchmarks to run
/// and shared by all of them (and by their rounds) until the run drops its
/// benchmarks: one file per shape on disk at a time, written once.
#[derive(Default)]
pub struct SharedFile {
    slot: Mutex<Option<(PathBuf, u64, Arc<TextFile>)>>,
}

impl SharedFile {
    /// The file for this run's directory and profile, created if needed.
    fn get(&self, ctx: &Ctx, shape: Shape) -> Result<Arc<TextFile>, PrepareError> {
        let wanted = file_size(ctx.profile);
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((dir, size, f)) = slot.as_ref()
            && *dir == ctx.dir
            && *size == wanted
            && f.path.exists()
        {
            return Ok(f.clone());
        }
        *slot = None; // another run's file goes first
        let f = Arc::new(TextFile::create(ctx, shape, wanted)?);
        *slot = Some((ctx.dir.clone(), wanted, f.clone()));
        Ok(f)
    }
}

/// A generated file in its private directory (removed with it).
pub struct TextFile {
    scratch: ScratchDir,
    path: PathBuf,
    size: u64,
    count: Count,
}

impl TextFile {
    /// Writes a file of `shape` of about `wanted` bytes (less when space or
    /// memory is short) in a private directory of `ctx.dir`, whole lines
    /// only, fsynced; the count is what every pass must find.
    fn create(ctx: &Ctx, shape: Shape, wanted: u64) -> Result<TextFile, PrepareError> {
        let (free, total) = fs_space(&ctx.dir).map_err(|e| {
            PrepareError::Fail(anyhow::anyhow!("statvfs {}: {e}", ctx.dir.display()))
        })?;
        // Reading the whole file into memory must fit too.
        let mem = crate::host::mem_available_now();
        let Some(size) = fit_size(wanted, MIN_FILE, free, total, mem) else {
            return Err(PrepareError::Skip(format!(
                "not enough room for a text file in {}: {} free, {} kept in reserve{}; free some space or choose another --dir",
                ctx.dir.display(),
                human_bytes(free as f64),
                human_bytes(reserve_bytes(total) as f64),
                mem.map(|m| format!(", {} of memory available", human_bytes(m as f64)))
                    .unwrap_or_default()
            )));
        };
        let scratch = ScratchDir::new_in(&ctx.dir, "opcost-text-")
            .with_context(|| format!("creating a directory in {}", ctx.dir.display()))?;
        let path = scratch.path().join(format!("lines-{}.txt", shape.label()));
        let (block, block_count) = line_block(shape, MIB as usize);
        let f = File::create_new(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut w = BufWriter::with_capacity(MIB as usize, f);
        let mut written = 0u64;
        let mut count = Count::default();
        // Whole blocks of whole lines, then whole lines of one more block.
        while written + block.len() as u64 <= size {
            if ctx.stopping() {
                return Err(PrepareError::Skip("interrupted".into()));
            }
            w.write_all(&block).context("writing the text file")?;
            written += block.len() as u64;
            count.lines += block_count.lines;
            count.bytes += block_count.bytes;
        }
        for line in block.split_inclusive(|&b| b == b'\n') {
            if written + line.len() as u64 > size {
                break;
            }
            w.write_all(line).context("writing the text file")?;
            written += line.len() as u64;
            count.line(&line[..line.len() - 1]);
        }
        let f = w.into_inner().map_err(|e| e.into_error())?;
        drop_from_cache(&f).context("syncing the text file")?;
        Ok(TextFile {
            scratch,
            path,
            size: written,
            count,
        })
    }
}

/// About `len` bytes of whole lines of `shape` (words of lowercase ASCII
/// letters, lengths spread ±50% around the mean), and their count.
fn line_block(shape: Shape, len: usize) -> (Vec<u8>, Count) {
    let mut rng = fastrand::Rng::with_seed(0x11e5 ^ shape.line as u64);
    let eol: &[u8] = if shape.crlf { b"\r\n" } else { b"\n" };
    let mut out = Vec::with_capacity(len + shape.line * 2);
    let mut count = Count::default();
    while out.len() < len {
        let content = rng.usize(shape.line / 2..=shape.line * 3 / 2) - eol.len();
        let start = out.len();
        while out.len() - start < content {
            if out.len() > start && rng.u8(..6) == 0 {
                out.push(b' ');
            } else {
                out.push(rng.u8(b'a'..=b'z'));
            }
        }
        count.line(&out[start..]);
        out.extend_from_slice(eol);
    }
    (out, count)
}

/// One pass of `m` over `path`.
pub fn pass(m: Method, path: &Path) -> anyhow::Result<Count> {
    let mut c = Count::default();
    let open = || File::open(path).with_context(|| format!("opening {}", path.display()));
    match m {
        Method::Lines => {
            for line in BufReader::new(open()?).lines() {
                let line = line.context("reading a line")?;
                c.lines += 1;
                c.bytes += line.len() as u64;
            }
        }
        Method::ReadLine => {
            let mut r = BufReader::new(open()?);
            let mut s = String::new();
            loop {
                s.clear();
                if r.read_line(&mut s).context("read_line")? == 0 {
                    break;
                }
                c.line(s.as_bytes().strip_suffix(b"\n").unwrap_or(s.as_bytes()));
            }
        }
        Method::ReadUntil => {
            let mut r = BufReader::new(open()?);
            let mut v = Vec::new();
            loop {
                v.clear();
                if r.read_until(b'\n', &mut v).context("read_until")? == 0 {
                    break;
                }
                c.line(v.strip_suffix(b"\n").unwrap_or(&v));
            }
        }
        Method::MemchrBlock => c = memchr_block(open()?)?,
        Method::MemchrMmap => {
            let f = open()?;
            // SAFETY: the file is private to this benchmark and nothing
            // writes it while it is mapped.
            let map = unsafe { memmap2::Mmap::map(&f) }.context("mmap")?;
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', &map) {
                c.line(&map[start..nl]);
                start = nl + 1;
            }
            if start < map.len() {
                c.line(&map[start..]);
            }
        }
        Method::WholeSplit => {
            let text = std::fs::read_to_string(path).context("reading the whole file")?;
            let lines: Vec<&str> = text.lines().collect();
            c.lines = lines.len() as u64;
            c.bytes = lines.iter().map(|l| l.len() as u64).sum();
            std::hint::black_box(&lines);
        }
        Method::Getline | Method::Fgets => c = c_pass(m, path)?,
        Method::WcL => c.lines = wc_l(path)?,
    }
    Ok(c)
}

/// Counts lines reading the file in blocks and finding each newline with
/// memchr; a line cut by the end of a block is carried to the next one.
fn memchr_block(mut f: File) -> anyhow::Result<Count> {
    let mut c = Count::default();
    let mut buf = vec![0u8; BLOCK];
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let n = f.read(&mut buf).context("read")?;
        if n == 0 {
            break;
        }
        let block = &buf[..n];
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', block) {
            if carry.is_empty() {
                c.line(&block[start..nl]);
            } else {
                carry.extend_from_slice(&block[start..nl]);
                c.line(&carry);
                carry.clear();
            }
            start = nl + 1;
        }
        carry.extend_from_slice(&block[start..]);
    }
    if !carry.is_empty() {
        c.line(&carry);
    }
    Ok(c)
}

/// The line count `wc -l` prints for the file.
fn wc_l(path: &Path) -> anyhow::Result<u64> {
    let out = std::process::Command::new("wc")
        .arg("-l")
        .arg(path)
        .output()
        .context("running wc -l")?;
    if !out.status.success() {
        bail!(
            "wc -l failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("reading the count from wc -l: {text:?}"))
}

/// A C stdio stream, closed on drop.
struct CFile(*mut libc::FILE);

impl Drop for CFile {
    fn drop(&mut self) {
        // SAFETY: opened by fopen, closed once.
        unsafe { libc::fclose(self.0) };
    }
}

/// One pass with C stdio: `getline` or `fgets`.
fn c_pass(m: Method, path: &Path) -> anyhow::Result<Count> {
    use std::os::unix::ffi::OsStrExt;
    let p = CString::new(path.as_os_str().as_bytes()).context("path holds a NUL")?;
    // SAFETY: valid C strings.
    let fp = unsafe { libc::fopen(p.as_ptr(), c"r".as_ptr()) };
    if fp.is_null() {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("fopen {}", path.display()));
    }
    let f = CFile(fp);
    let mut c = Count::default();
    if m == Method::Getline {
        let mut line: *mut libc::c_char = std::ptr::null_mut();
        let mut cap: libc::size_t = 0;
        loop {
            // SAFETY: getline manages the buffer (malloc/realloc) through these pointers.
            let n = unsafe { libc::getline(&mut line, &mut cap, f.0) };
            if n < 0 {
                break;
            }
            // SAFETY: getline wrote n bytes at line.
            let s = unsafe { std::slice::from_raw_parts(line.cast::<u8>(), n as usize) };
            c.line(s.strip_suffix(b"\n").unwrap_or(s));
        }
        // SAFETY: allocated by getline (or null).
        unsafe { libc::free(line.cast()) };
    } else {
        let mut buf = vec![0u8; BLOCK];
        // A line longer than the buffer comes in pieces: count it at its '\n'.
        let mut partial = 0u64;
        let mut last = 0u8;
        loop {
            // SAFETY: buf holds BLOCK bytes; fgets writes at most that, NUL included.
            let r = unsafe { libc::fgets(buf.as_mut_ptr().cast(), BLOCK as libc::c_int, f.0) };
            if r.is_null() {
                break;
            }
            let n = buf.iter().position(|&b| b == 0).unwrap_or(BLOCK);
            let piece = &buf[..n];
            if let Some(content) = piece.strip_suffix(b"\n") {
                let cr = content.last().copied().unwrap_or(last) == b'\r';
                c.lines += 1;
                c.bytes += partial + content.len() as u64 - u64::from(cr);
                partial = 0;
                last = 0;
            } else {
                partial += n as u64;
                last = piece.last().copied().unwrap_or(last);
            }
        }
        if partial > 0 {
            c.lines += 1;
            c.bytes += partial - u64::from(last == b'\r');
        }
    }
    // SAFETY: the stream is open.
    if unsafe { libc::ferror(f.0) } != 0 {
        bail!("reading {} with stdio failed", path.display());
    }
    Ok(c)
}

/// Peak memory a pass of `m` adds, measured in a forked child (see the
/// module doc): bytes, or why it could not be measured.
pub fn peak_extra(m: Method, path: &Path) -> anyhow::Result<u64> {
    use crate::os::child::{Child, SignalsBlocked, Slot};
    let slot = Slot::take()?;
    let (rd, wr) = nix::unistd::pipe().context("pipe")?;
    let blocked = SignalsBlocked::all();
    // SAFETY: the child only runs the pass, writes to the pipe and _exits;
    // glibc makes malloc usable in the child of a threaded parent.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        drop(rd);
        let (code, msg) = match std::panic::catch_unwind(|| child_measure(m, path)) {
            Ok(Ok(bytes)) => (0, bytes.to_le_bytes().to_vec()),
            Ok(Err(e)) => (1, format!("{e:#}").into_bytes()),
            Err(_) => (2, b"the pass panicked".to_vec()),
        };
        let _ = File::from(wr).write_all(&msg);
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    drop(blocked);
    drop(wr);
    let child = Child::new(pid, slot);
    let mut msg = Vec::new();
    let read = File::from(rd).read_to_end(&mut msg);
    let status = child.wait();
    read.context("reading the child's measurement")?;
    match (status, <[u8; 8]>::try_from(msg.as_slice())) {
        (Ok(()), Ok(bytes)) => Ok(u64::from_le_bytes(bytes)),
        (Ok(()), Err(_)) => bail!("the memory-measuring child sent {} bytes, not 8", msg.len()),
        (Err(e), _) if msg.is_empty() => Err(e.context("the memory-measuring child")),
        (Err(_), _) => bail!(
            "measuring memory in a child: {}",
            String::from_utf8_lossy(&msg)
        ),
    }
}

/// In the child: return freed heap to the kernel, reset the high-water
/// mark, do one pass, and report how far the peak rose above the start.
fn child_measure(m: Method, path: &Path) -> anyhow::Result<u64> {
    // First, so that the heap it uses is given back with the rest below.
    map_code()?;
    // Large buffers from fresh mappings, whatever the parent freed before:
    // glibc raises its mmap threshold after big frees, and a buffer placed
    // in heap pages inherited from the parent (resident, shared copy-on-
    // write) would not raise the resident peak at all.
    // The mmap threshold only counts once an arena has no free memory
    // left, and a thread's arena keeps the free top of its heap resident
    // (malloc_trim releases only the main arena's top): a low trim
    // threshold and one large free make glibc give that top back too.
    // SAFETY: plain glibc calls; the block is freed once, unused.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
        libc::free(libc::malloc(256 * 1024));
        libc::malloc_trim(0);
    }
    let resident = status_kib("VmRSS")?;
    std::fs::write("/proc/self/clear_refs", b"5").context("resetting VmHWM")?;
    // The mark is reset to the resident size of the moment, which may sit
    // a little above what is resident once the reset's own work is freed:
    // the pass's peak counts from the mark, never from below it.
    let before = status_kib("VmHWM")?;
    if before > resident + 8 * 1024 {
        bail!("VmHWM was not reset ({before} kB against {resident} kB resident)");
    }
    std::hint::black_box(pass(m, path)?);
    let peak = status_kib("VmHWM")?;
    Ok(peak.saturating_sub(before) * 1024)
}

/// Maps every page of the program and its libraries (each file with an
/// executable mapping: its code, constants and relocated data) into this
/// process, so that the pages a pass runs are resident before its peak is
/// measured, whichever of them it touches.
fn map_code() -> anyhow::Result<()> {
    let maps = std::fs::read_to_string("/proc/self/maps").context("reading /proc/self/maps")?;
    // Address range, permissions, and the file (absent for anonymous maps).
    let entries: Vec<(&str, &str, &str)> = maps
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((*f.first()?, *f.get(1)?, *f.get(5)?))
        })
        .filter(|(_, _, file)| file.starts_with('/'))
        .collect();
    let programs: std::collections::HashSet<&str> = entries
        .iter()
        .filter(|(_, perms, _)| perms.contains('x'))
        .map(|(_, _, file)| *file)
        .collect();
    for (range, perms, file) in entries {
        if !perms.starts_with('r') || !programs.contains(file) {
            continue;
        }
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (lo, hi) = (
            usize::from_str_radix(lo, 16)?,
            usize::from_str_radix(hi, 16)?,
        );
        for page in (lo..hi).step_by(4096) {
            // SAFETY: a readable mapping of this process, one byte per page read.
            unsafe { std::ptr::read_volatile(page as *const u8) };
        }
    }
    Ok(())
}

/// A `kB` field of /proc/self/status.
fn status_kib(field: &str) -> anyhow::Result<u64> {
    let s = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no {field} in /proc/self/status"))
}

/// A prepared line-iteration benchmark.
struct LinesRun {
    file: Arc<TextFile>,
    method: Method,
    cold: bool,
    /// The file as read for dropping it from the cache.
    handle: File,
    passes: u64,
    time: Duration,
    details: Value,
    warnings: Vec<String>,
}

impl LinesRun {
    fn prepare(
        ctx: &Ctx,
        m: Method,
        file: Arc<TextFile>,
        cold: bool,
        peak_memo: &Mutex<Option<Result<u64, String>>>,
    ) -> Result<Box<dyn Timed>, PrepareError> {
        if m == Method::WcL && which_wc().is_none() {
            return Err(PrepareError::Skip("wc is not installed (coreutils)".into()));
        }
        let handle = File::open(&file.path).context("opening the text file")?;
        // The first pass warms the page cache and is discarded; it also
        // checks the method's count before anything is timed.
        let first = pass(m, &file.path)?;
        check_count(m, first, file.count)?;
        let peak = peak_memo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| {
                if m == Method::WcL {
                    Err("wc -l runs in a process of its own".to_string())
                } else {
                    peak_extra(m, &file.path).map_err(|e| format!("{e:#}"))
                }
            })
            .clone();
        let location = locate(file.scratch.path());
        let mut warnings = Vec::new();
        if cold && location.in_memory() {
            warnings.push(
                Warning::ColdInMemory {
                    dir: ctx.dir.display().to_string(),
                    fs_type: location.fs_type.clone(),
                }
                .to_string(),
            );
        }
        if m == Method::WcL {
            warnings.push(Warning::ProgramStartIncluded("wc -l".into()).to_string());
        }
        let details = json!({
            "file_bytes": file.size,
            "lines": file.count.lines,
            "content_bytes": file.count.bytes,
            "peak_extra_bytes": peak.as_ref().ok(),
            "peak_extra_per_file_byte": peak.as_ref().ok().map(|&b| b as f64 / file.size as f64),
            "peak_note": peak.as_ref().err(),
            "fs_type": location.fs_type,
        });
        Ok(Box::new(LinesRun {
            file,
            method: m,
            cold,
            handle,
            passes: 0,
            time: Duration::ZERO,
            details,
            warnings,
        }))
    }
}

/// Where `wc` is, if on the PATH.
fn which_wc() -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join("wc"))
        .find(|p| p.is_file())
}

/// An error unless `got` is what the file was written with (`wc -l` counts lines only).
fn check_count(m: Method, got: Count, want: Count) -> anyhow::Result<()> {
    let ok = if m == Method::WcL {
        got.lines == want.lines
    } else {
        got == want
    };
    if !ok {
        bail!(
            "{} found {} lines ({} bytes) where the file has {} ({} bytes)",
            m.name(),
            got.lines,
            got.bytes,
            want.lines,
            want.bytes
        );
    }
    Ok(())
}

impl Timed for LinesRun {
    /// An operation is one MiB of the file: a batch of `ops` is done as
    /// whole passes (at least one), and its time scaled to `ops` MiB.
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let want = ops as f64 * MIB as f64;
        let passes = ((want / self.file.size as f64).round() as u64).max(1);
        let mut total = Duration::ZERO;
        for _ in 0..passes {
            if self.cold {
                drop_from_cache(&self.handle)?;
            }
            let start = Instant::now();
            let got = pass(self.method, &self.file.path)?;
            total += start.elapsed();
            check_count(self.method, got, self.file.count)?;
        }
        self.passes += passes;
        self.time += total;
        Ok(total.mul_f64(want / (passes as f64 * self.file.size as f64)))
    }
    fn min_ops(&self) -> u64 {
        self.file.size.div_ceil(MIB)
    }
    fn details(&self) -> Option<Value> {
        let mut d = self.details.clone();
        if !self.time.is_zero() {
            let secs = self.time.as_secs_f64();
            d["lines_per_s"] = (self.file.count.lines as f64 * self.passes as f64 / secs).into();
            d["bytes_per_s"] = (self.file.size as f64 * self.passes as f64 / secs).into();
        }
        Some(d)
    }
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_counts_the_same_lines_and_bytes() {
        let _g = crate::os::child::test_lock();
        let dir = tempfile::tempdir().unwrap();
        for shape in Shape::ALL {
            let (block, want) = line_block(shape, 300_000);
            // A file whose lines cross every block boundary of the readers.
            let path = dir.path().join(shape.label());
            std::fs::write(&path, &block).unwrap();
            assert!(want.lines > 10);
            for m in Method::ALL {
                if m == Method::WcL && which_wc().is_none() {
                    continue;
                }
                let got = pass(m, &path).unwrap();
                check_count(m, got, want).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
            }
        }
    }

    #[test]
    fn a_last_line_without_newline_and_crlf_split_across_reads_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let mut text = "a".repeat(BLOCK - 1);
        text.push_str("\r\nbb\r\nlast");
        std::fs::write(&path, &text).unwrap();
        let want = Count {
            lines: 3,
            bytes: (BLOCK - 1 + 2 + 4) as u64,
        };
        for m in Method::ALL {
            if m == Method::WcL {
                continue; // wc -l counts newlines: 2
            }
            assert_eq!(pass(m, &path).unwrap(), want, "{m:?}");
        }
    }

    #[test]
    fn ids_and_quick_selection() {
        let b = benches();
        assert_eq!(b.len(), Method::ALL.len() * 6);
        let quick: Vec<&str> = b
            .iter()
            .filter(|b| b.runs_at(Profile::Quick))
            .map(|b| b.id())
            .collect();
        assert_eq!(quick.len(), Method::ALL.len() + 1);
        assert!(quick.contains(&"text.lines.memchr_block/crlf-40B/cold"));
        assert!(quick.contains(&"text.lines.wc_l/crlf-40B"));
    }
}
