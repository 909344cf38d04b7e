//! Swapping priced: a page written out to swap (`madvise(MADV_PAGEOUT)`)
//! and a page fault that reads one back, from a temporary swap file the run
//! creates in `--dir` (its scratch dir otherwise) and from a hot-added zram
//! device (docs/suites/memory.md, "Swap").
//!
//! Each row enables a swap area of its own (os/swap.rs: labelled, at the
//! highest priority so the pages go to it and not to the user's swap, and
//! removed on drop, on a second Ctrl-C and by the next run's sweep after a
//! kill). Enabling swap on someone's machine is intrusive, so the rows run
//! only when a pattern names them ([`for_patterns`]): `opcost run
//! memory.swap`; `opcost run memory` and the whole-machine runs leave them
//! out.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::scratch::ScratchDir;
use crate::harness::{Bench, Ctx, Finding, Measurement, PrepareError, Timed, Unit};
use crate::host::location::locate;
use crate::os::fs::{fs_space, reserve_bytes};
use crate::os::swap::{self, Kind, SwapArea};
use crate::suites::bench::{Budget, FnBench, get, ratio_finding};

/// The ids of the swap rows start with this.
pub const PREFIX: &str = "memory.swap.";
/// Pages the benchmark's mapping holds (16 MiB of 4 KiB pages): the most
/// one batch may swap.
pub const MAP_BYTES: u64 = 16 << 20;
/// The temporary swap area: four times the mapping, so it never counts as
/// more than half full (the kernel then frees swap slots on swap-in, which
/// would change what is measured).
pub const AREA_BYTES: u64 = 4 * MAP_BYTES;
/// Random bytes at the start of each page; the rest repeats a phrase, so a
/// page compresses about 3:1 as ordinary data does (a page of zeros is
/// never written to swap at all on recent kernels).
const RANDOM_BYTES: usize = 1024;
/// How long the write-out waits for the kernel's write-back to finish.
const WRITEBACK_LIMIT: Duration = Duration::from_secs(20);

/// Where the pages go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backing {
    /// A swap file in `--dir`.
    File,
    /// A hot-added zram device.
    Zram,
}

/// Which way the pages move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Side {
    /// Written out: `madvise(MADV_PAGEOUT)` until written.
    Out,
    /// Read back: a read fault per page, in a shuffled order.
    In,
}

impl Backing {
    fn name(self) -> &'static str {
        match self {
            Backing::File => "file",
            Backing::Zram => "zram",
        }
    }
}

/// The id of a swap row: `memory.swap.{file,zram}.{out,in}`.
pub fn swap_id(b: Backing, s: Side) -> String {
    let side = match s {
        Side::Out => "out",
        Side::In => "in",
    };
    format!("{PREFIX}{}.{side}", b.name())
}

/// Leaves the swap rows out unless a pattern names them (contains `swap`):
/// they enable a swap area, which a run does only when asked to.
pub fn for_patterns(mut benches: Vec<Box<dyn Bench>>, patterns: &[String]) -> Vec<Box<dyn Bench>> {
    if !patterns.iter().any(|p| p.contains("swap")) {
        benches.retain(|b| !b.id().starts_with(PREFIX));
    }
    benches
}

/// The four swap rows.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let mut out = Vec::new();
    for b in [Backing::File, Backing::Zram] {
        for s in [Side::Out, Side::In] {
            let what = match (b, s) {
                (Backing::File, Side::Out) => {
                    "a 4 KiB page written out to a temporary swap file (MADV_PAGEOUT, until written)"
                }
                (Backing::File, Side::In) => {
                    "a page fault that reads a 4 KiB page back from a temporary swap file"
                }
                (Backing::Zram, Side::Out) => {
                    "a 4 KiB page compressed out to a temporary zram swap device (MADV_PAGEOUT)"
                }
                (Backing::Zram, Side::In) => {
                    "a page fault that decompresses a 4 KiB page back from a temporary zram device"
                }
            };
            out.push(
                FnBench::new(
                    swap_id(b, s),
                    format!("{what}; runs only when named (enables swap, needs root)"),
                    Unit::Latency,
                    move |ctx: &Ctx| prepare(ctx, b, s),
                )
                .with_budget(Budget::Fixed([
                    Duration::from_secs(3),
                    Duration::from_secs(6),
                    Duration::from_secs(12),
                ]))
                .on_request()
                .boxed(),
            );
        }
    }
    out
}

/// A counter of `/proc/vmstat`.
fn vmstat(name: &str) -> u64 {
    std::fs::read_to_string("/proc/vmstat")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == name).then(|| v.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

/// Waits until the pages under write-back are back to `base` (or fewer):
/// the pages MADV_PAGEOUT handed to a swap file are written when this
/// returns. A zram write is done before MADV_PAGEOUT returns.
fn wait_writeback(base: u64) -> bool {
    let start = Instant::now();
    while vmstat("nr_writeback") > base {
        if start.elapsed() > WRITEBACK_LIMIT {
            return false;
        }
        std::thread::sleep(Duration::from_micros(20));
    }
    true
}

/// Anonymous memory the benchmark swaps, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    pages: usize,
    page: usize,
}

impl Mapping {
    fn new(bytes: u64) -> anyhow::Result<Mapping> {
        let page = swap::page_size();
        let pages = bytes as usize / page;
        // Base pages, each swapped alone.
        let ptr = crate::os::sys::map_base_pages(pages * page)
            .map_err(|e| anyhow::anyhow!("mmap: {e}"))?;
        Ok(Mapping {
            ptr: ptr.cast(),
            pages,
            page,
        })
    }

    fn advise(&self, n: usize, advice: libc::c_int) -> std::io::Result<()> {
        // SAFETY: the first n pages of our mapping.
        let r = unsafe { libc::madvise(self.ptr.cast(), n * self.page, advice) };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Writes the first `n` pages: random head, repeated tail.
    fn fill(&mut self, n: usize, seed: u64) {
        let mut x = seed | 1;
        for i in 0..n {
            // SAFETY: page i of our mapping, exclusively ours.
            let p =
                unsafe { std::slice::from_raw_parts_mut(self.ptr.add(i * self.page), self.page) };
            for chunk in p[..RANDOM_BYTES].chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_ne_bytes());
            }
            let phrase = b"opcost swaps this page out and back in; it repeats. ";
            for (k, b) in p[RANDOM_BYTES..].iter_mut().enumerate() {
                *b = phrase[(k + i) % phrase.len()];
            }
        }
    }

    /// Reads one byte of each page in `order`.
    fn touch(&self, order: &[usize]) -> u64 {
        let mut sum = 0u64;
        for &i in order {
            // SAFETY: a page of our mapping.
            sum = sum.wrapping_add(u64::from(unsafe {
                std::ptr::read_volatile(self.ptr.add(i * self.page + 64))
            }));
        }
        sum
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping.
        unsafe { libc::munmap(self.ptr.cast(), self.pages * self.page) };
    }
}

// SAFETY: the mapping is owned by one Swapper, used by one thread at a time.
unsafe impl Send for Mapping {}

/// A prepared swap row. Field order is drop order: the mapping (its swap
/// slots freed), then the swap area (disabled, removed), then its directory.
struct Swapper {
    map: Mapping,
    area: SwapArea,
    _dir: Option<ScratchDir>,
    side: Side,
    batch: u64,
    pages: u64,
    device_pages: u64,
    compression: Option<f64>,
    details: serde_json::Value,
    warnings: Vec<String>,
}

impl Swapper {
    /// Pushes the first `n` pages out to swap and waits for the writes.
    fn page_out(&self, n: usize) -> anyhow::Result<()> {
        let base = vmstat("nr_writeback");
        self.map.advise(n, libc::MADV_PAGEOUT)?;
        if !wait_writeback(base) {
            anyhow::bail!("write-back to the swap area did not finish in {WRITEBACK_LIMIT:?}");
        }
        Ok(())
    }

    /// The pages out and back in order, shuffled per batch.
    fn order(&self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        let mut rng = fastrand::Rng::with_seed(self.batch);
        rng.shuffle(&mut v);
        v
    }
}

impl Timed for Swapper {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let n = (ops as usize).clamp(1, self.map.pages);
        self.batch += 1;
        self.map
            .fill(n, self.batch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let took = match self.side {
            Side::Out => {
                let before = vmstat("pswpout");
                let base = vmstat("nr_writeback");
                let t = Instant::now();
                self.map.advise(n, libc::MADV_PAGEOUT)?;
                let done = wait_writeback(base);
                let took = t.elapsed();
                if !done {
                    anyhow::bail!(
                        "write-back to the swap area did not finish in {WRITEBACK_LIMIT:?}"
                    );
                }
                self.device_pages += vmstat("pswpout").saturating_sub(before);
                took
            }
            Side::In => {
                // Out, back in from the swap cache and out again: a page
                // a swap file wrote stays in the swap cache until memory
                // runs short, and a fault would find it there; clean, the
                // second MADV_PAGEOUT frees it at once, leaving only the
                // copy on the device.
                self.page_out(n)?;
                let order = self.order(n);
                std::hint::black_box(self.map.touch(&order));
                self.page_out(n)?;
                let before = vmstat("pswpin");
                let t = Instant::now();
                std::hint::black_box(self.map.touch(&order));
                let took = t.elapsed();
                self.device_pages += vmstat("pswpin").saturating_sub(before);
                took
            }
        };
        self.pages += n as u64;
        // zram's compression while the batch's pages are all in it.
        if let Kind::Zram(i) = self.area.kind
            && let Ok(t) = std::fs::read_to_string(swap::zram_sys(i).join("mm_stat"))
        {
            let f: Vec<f64> = t
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if f.len() >= 2 && f[1] > 0.0 {
                self.compression = Some(f[0] / f[1]);
            }
        }
        // Frees the pages and their swap slots.
        self.map.advise(n, libc::MADV_DONTNEED)?;
        Ok(took)
    }
    fn max_ops(&self) -> Option<u64> {
        Some(self.map.pages as u64)
    }
    fn min_ops(&self) -> u64 {
        64
    }
    fn warnings(&self) -> Vec<String> {
        let mut w = self.warnings.clone();
        if self.pages > 0 && (self.device_pages as f64) < 0.9 * self.pages as f64 {
            w.push(format!(
                "only {} of {} pages went through the swap device (pswp{} in /proc/vmstat): the rest stayed in memory",
                self.device_pages,
                self.pages,
                if self.side == Side::In { "in" } else { "out" }
            ));
        }
        w
    }
    fn details(&self) -> Option<serde_json::Value> {
        let mut d = self.details.clone();
        d["pages"] = json!(self.pages);
        d["device_pages"] = json!(self.device_pages);
        if let Some(r) = self.compression {
            d["zram_compression_ratio"] = json!(r);
        }
        Some(d)
    }
}

/// Why this machine cannot run the rows, before anything is created.
fn precheck() -> Result<(), PrepareError> {
    if !cfg!(target_os = "linux") {
        return Err(PrepareError::Skip("swap rows run on Linux only".into()));
    }
    if !std::path::Path::new("/proc/swaps").exists() {
        return Err(PrepareError::Skip(
            "no /proc/swaps: the kernel was built without swap (CONFIG_SWAP)".into(),
        ));
    }
    if !nix::unistd::geteuid().is_root() {
        return Err(PrepareError::Skip(
            "needs root to enable a temporary swap area (swapon); run as root or with CAP_SYS_ADMIN"
                .into(),
        ));
    }
    let theirs: Vec<_> = swap::enabled()
        .into_iter()
        .filter(|e| e.priority >= swap::PRIORITY)
        .collect();
    if let Some(e) = theirs.first() {
        return Err(PrepareError::Skip(format!(
            "{} already has the highest swap priority ({}), so the benchmark's pages could go to it; opcost leaves the swap configuration alone",
            e.path, e.priority
        )));
    }
    Ok(())
}

fn prepare(ctx: &Ctx, backing: Backing, side: Side) -> Result<Box<dyn Timed>, PrepareError> {
    precheck()?;
    if ctx.stopping() {
        return Err(PrepareError::Skip("interrupted".into()));
    }
    let others = swap::enabled().len();
    let (area, dir, mut details) = match backing {
        Backing::File => {
            let (free, total) = fs_space(&ctx.dir).map_err(|e| {
                PrepareError::Fail(anyhow::anyhow!("statvfs {}: {e}", ctx.dir.display()))
            })?;
            let need = AREA_BYTES + reserve_bytes(total);
            if free < need {
                return Err(PrepareError::Skip(format!(
                    "not enough free space in {} for a {} MiB swap file ({} MiB free, {} MiB needed with the reserve); free some space or choose another --dir",
                    ctx.dir.display(),
                    AREA_BYTES >> 20,
                    free >> 20,
                    need >> 20
                )));
            }
            let dir = ScratchDir::new_in(&ctx.dir, "opcost-swap-").map_err(|e| {
                PrepareError::Fail(anyhow::anyhow!(
                    "creating a directory in {}: {e}",
                    ctx.dir.display()
                ))
            })?;
            let location = locate(dir.path());
            let area = SwapArea::file(&dir.path().join("swapfile"), AREA_BYTES)
                .map_err(PrepareError::Skip)?;
            let device = format!(
                "swap file on {}, /dev/{} ({})",
                location.fs_type,
                location.device.as_deref().unwrap_or("?"),
                location.transport.as_deref().unwrap_or("unknown transport")
            );
            let d = json!({
                "device": device,
                "location": location,
                "swap_file": area.path,
            });
            (area, Some(dir), d)
        }
        Backing::Zram => {
            let area = SwapArea::zram(AREA_BYTES).map_err(PrepareError::Skip)?;
            let Kind::Zram(i) = area.kind else {
                unreachable!("a zram area")
            };
            let alg = swap::zram_algorithm(i).unwrap_or_else(|| "unknown".into());
            let d = json!({
                "device": format!("zram{i}, compressor {alg}"),
                "zram_device": format!("zram{i}"),
                "zram_algorithm": alg,
            });
            (area, None, d)
        }
    };
    let page_cluster = std::fs::read_to_string("/proc/sys/vm/page-cluster")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    let zswap = std::fs::read_to_string("/sys/module/zswap/parameters/enabled")
        .map(|s| s.trim() == "Y")
        .unwrap_or(false);
    details["area_bytes"] = json!(area.bytes);
    details["priority"] = json!(swap::PRIORITY);
    details["other_swap_areas"] = json!(others);
    details["page_cluster"] = json!(page_cluster);
    details["zswap"] = json!(zswap);
    let mut warnings = Vec::new();
    if zswap {
        warnings.push(
            "zswap is enabled: pages are compressed in memory before reaching the swap device, so these rows price zswap".to_string(),
        );
    }
    let map = Mapping::new(MAP_BYTES).map_err(PrepareError::Fail)?;
    let mut s = Swapper {
        map,
        area,
        _dir: dir,
        side,
        batch: 0,
        pages: 0,
        device_pages: 0,
        compression: None,
        details,
        warnings,
    };
    // A trial: the pages must reach our area.
    let trial = 16;
    s.map.fill(trial, 7);
    let before = vmstat("pswpout");
    if let Err(e) = s.map.advise(trial, libc::MADV_PAGEOUT) {
        return Err(PrepareError::Skip(format!(
            "madvise(MADV_PAGEOUT) failed ({e}); Linux 5.4 or later has it"
        )));
    }
    let _ = wait_writeback(u64::MAX);
    let out = vmstat("pswpout").saturating_sub(before);
    let used = s.area.entry().map_or(0, |e| e.used_kib);
    s.map
        .advise(trial, libc::MADV_DONTNEED)
        .map_err(|e| PrepareError::Fail(e.into()))?;
    if out == 0 || used == 0 {
        return Err(PrepareError::Skip(format!(
            "MADV_PAGEOUT swapped no page to the temporary area ({out} pages written out, {used} KiB used): a memory cgroup that forbids swap (memory.swap.max 0) would do this"
        )));
    }
    Ok(Box::new(s))
}

/// The write-up's question: zram or a swap file, in and out.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    use crate::harness::claims::{Est, compare};
    let mut out = Vec::new();
    for (side, verb, to) in [
        (Side::In, "swapped in", "from"),
        (Side::Out, "written out", "to"),
    ] {
        let (Some(z), Some(f)) = (
            get(ms, &swap_id(Backing::Zram, side)),
            get(ms, &swap_id(Backing::File, side)),
        ) else {
            continue;
        };
        let dev = |m: &Measurement, key: &str| {
            m.details
                .as_ref()
                .and_then(|d| d.get(key)?.as_str().map(str::to_string))
                .unwrap_or_else(|| "?".into())
        };
        let (ez, ef) = (Est::of(z), Est::of(f));
        let r = crate::harness::claims::speedup(&ef, &ez);
        let words = compare(&ez, &ef).pick(
            |r| format!("a page {verb} {to} zram is {r} cheaper than one {to} the swap file"),
            |r| format!("a page {verb} {to} the swap file is {r} cheaper than one {to} zram"),
            |_| format!("a page {verb} {to} zram and one {to} the swap file cost the same (a tie)"),
        );
        let text = format!(
            "{words}: {} against {} per page ({}; {})",
            crate::units::human_ns(z.median),
            crate::units::human_ns(f.median),
            dev(z, "device"),
            dev(f, "device"),
        );
        // The value: zram's cost as a multiple of the file's.
        out.push(ratio_finding("memory", text, r.ratio));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_convention() {
        let ids: Vec<String> = benches().iter().map(|b| b.id().to_string()).collect();
        assert_eq!(
            ids,
            [
                "memory.swap.file.out",
                "memory.swap.file.in",
                "memory.swap.zram.out",
                "memory.swap.zram.in"
            ]
        );
        assert!(benches().iter().all(|b| b.on_request()));
    }

    #[test]
    fn swap_rows_run_only_when_a_pattern_names_them() {
        let ids = |v: Vec<Box<dyn Bench>>| v.len();
        assert_eq!(ids(for_patterns(benches(), &[])), 0);
        assert_eq!(ids(for_patterns(benches(), &["memory".into()])), 0);
        assert_eq!(ids(for_patterns(benches(), &["memory.swap".into()])), 4);
        assert_eq!(ids(for_patterns(benches(), &["*swap*".into()])), 4);
    }

    #[test]
    fn without_root_the_rows_skip_with_what_would_run_them() {
        if nix::unistd::geteuid().is_root() {
            return;
        }
        match precheck() {
            Err(PrepareError::Skip(r)) => assert!(r.contains("needs root"), "{r}"),
            other => panic!("expected a skip, got {other:?}"),
        }
    }
}
