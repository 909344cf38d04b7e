//! Page faults: the first touch of memory that is mapped but not yet
//! backed. Each batch maps fresh memory (untimed), touches it (timed) and
//! unmaps it (untimed). The kernel's own fault count (getrusage minor
//! faults) is read around the timed part, so a result says how many faults
//! it really took: one per page for anonymous memory, one per huge page with
//! THP, and fewer than one per page for a file, where the kernel maps the
//! neighbours of a faulting page too ("fault-around"; on file systems with
//! large folios one fault can map a whole folio, hundreds of pages). The
//! details also give the time per fault.

use std::hint::black_box;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::sched::{Waiting, run_delay_ns};
use super::spawn::{HEADROOM, page_size};
use crate::harness::warnings::Warning;
use crate::harness::{Ctx, PrepareError, Timed};
use crate::host::mem_available_now;
use crate::units::human_bytes;

/// Most memory one anonymous batch maps.
const ANON_MAX_BYTES: usize = 64 << 20;
/// Most memory one huge-page batch maps.
const THP_MAX_BYTES: usize = 256 << 20;
/// Size of the file whose pages are faulted in.
const FILE_BYTES: usize = 64 << 20;
/// sysfs file with the THP mode.
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
/// sysfs file with the PMD huge page size.
const THP_SIZE: &str = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size";

/// What memory is faulted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Anonymous memory in base pages (MADV_NOHUGEPAGE); one op = one page written.
    Anon,
    /// Anonymous memory with MADV_HUGEPAGE; one op = one huge page written.
    AnonThp,
    /// A cached file mapped shared read-only; one op = one page read.
    File,
}

/// A prepared fault benchmark.
pub struct Faults {
    kind: Kind,
    /// Bytes between two touches (the page or huge page size).
    stride: usize,
    max_ops: u64,
    file: Option<(std::fs::File, PathBuf)>,
    /// Minor faults per op in the last batch, and the most seen.
    faults_last: f64,
    faults_max: f64,
    /// Time per fault in the last batch (ns).
    ns_per_fault: f64,
    waiting: Waiting,
}

/// The selected word of a sysfs choice file: `always [madvise] never` -> `madvise`.
pub fn selected(text: &str) -> Option<&str> {
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(&text[start..end])
}

/// Bytes one operation of `kind` touches: a base page, or a PMD huge page
/// (as sysfs states it; 2 MiB when it does not).
pub fn touch_bytes(kind: Kind) -> usize {
    match kind {
        Kind::Anon | Kind::File => page_size(),
        Kind::AnonThp => std::fs::read_to_string(THP_SIZE)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .filter(|&s| s > 0)
            .unwrap_or(2 << 20),
    }
}

/// The PMD huge page size, when THP can be used through madvise.
fn thp_size() -> Result<usize, PrepareError> {
    let mode = std::fs::read_to_string(THP_ENABLED).map_err(|_| {
        PrepareError::Skip("this kernel has no transparent huge pages (no sysfs entry)".into())
    })?;
    match selected(&mode) {
        Some("always") | Some("madvise") => {}
        Some(other) => {
            return Err(PrepareError::Skip(format!(
                "transparent huge pages are disabled ({THP_ENABLED} = {other})"
            )));
        }
        None => return Err(PrepareError::Skip(format!("cannot parse {THP_ENABLED}"))),
    }
    Ok(touch_bytes(Kind::AnonThp))
}

/// Minor faults of the calling thread so far.
fn minor_faults() -> i64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct; on failure it stays zeroed.
    unsafe {
        libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr());
        ru.assume_init().ru_minflt
    }
}

impl Faults {
    /// Prepares a fault benchmark of `kind` (writes the file for [`Kind::File`]).
    pub fn new(kind: Kind, ctx: &Ctx) -> Result<Faults, PrepareError> {
        let page = page_size();
        let (stride, max_bytes) = match kind {
            Kind::Anon => (page, ANON_MAX_BYTES),
            Kind::AnonThp => {
                let h = thp_size()?;
                (h, THP_MAX_BYTES.max(4 * h))
            }
            Kind::File => (page, FILE_BYTES),
        };
        let avail = mem_available_now().unwrap_or(0);
        if avail < max_bytes as u64 + HEADROOM {
            return Err(PrepareError::Skip(format!(
                "needs {} of memory with headroom, only {} available now",
                human_bytes((max_bytes as u64 + HEADROOM) as f64),
                human_bytes(avail as f64)
            )));
        }
        let file = match kind {
            Kind::File => Some(write_file(ctx, max_bytes)?),
            _ => None,
        };
        Ok(Faults {
            kind,
            stride,
            max_ops: (max_bytes / stride) as u64,
            file,
            faults_last: 0.0,
            faults_max: 0.0,
            ns_per_fault: 0.0,
            waiting: Waiting::default(),
        })
    }
}

/// Writes the file to fault in (it stays in the page cache) under ctx.tmp.
fn write_file(ctx: &Ctx, len: usize) -> Result<(std::fs::File, PathBuf), PrepareError> {
    let st = nix::sys::statvfs::statvfs(&ctx.tmp)
        .with_context(|| format!("checking free space in {}", ctx.tmp.display()))?;
    let free = st.blocks_available() as u64 * st.fragment_size() as u64;
    if free < 2 * len as u64 {
        return Err(PrepareError::Skip(format!(
            "needs {} free in {}, only {} there",
            human_bytes(2.0 * len as f64),
            ctx.tmp.display(),
            human_bytes(free as f64)
        )));
    }
    let path = ctx.tmp.join("fault-file");
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    let chunk = vec![0x5au8; 1 << 20];
    let mut left = len;
    while left > 0 {
        if ctx.stopping() {
            let _ = std::fs::remove_file(&path);
            return Err(PrepareError::Skip("interrupted".into()));
        }
        let n = left.min(chunk.len());
        if let Err(e) = f.write_all(&chunk[..n]) {
            let _ = std::fs::remove_file(&path);
            return Err(anyhow::Error::new(e)
                .context(format!("writing {}", path.display()))
                .into());
        }
        left -= n;
    }
    Ok((f, path))
}

impl Drop for Faults {
    fn drop(&mut self) {
        if let Some((_, path)) = self.file.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A mapping unmapped on drop.
struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

impl Faults {
    /// Maps memory for `ops` touches; returns the mapping and the first touch address.
    fn map(&self, ops: usize) -> anyhow::Result<(Mapping, *mut u8)> {
        let want = ops * self.stride;
        let (len, prot, flags, fd) = match (&self.kind, &self.file) {
            (Kind::File, Some((f, _))) => (want, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd()),
            (Kind::File, None) => bail!("the fault file is gone"),
            // One extra huge page so the start can be aligned to it.
            (Kind::AnonThp, _) => (
                want + self.stride,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            ),
            (Kind::Anon, _) => (
                want,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            ),
        };
        // SAFETY: a fresh mapping; checked below.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
        if p == libc::MAP_FAILED {
            return Err(anyhow::Error::new(std::io::Error::last_os_error())
                .context(format!("mapping {}", human_bytes(len as f64))));
        }
        let m = Mapping { addr: p, len };
        let start = match self.kind {
            Kind::AnonThp => {
                let a = (p as usize).next_multiple_of(self.stride);
                // SAFETY: advice on our own mapping.
                unsafe { libc::madvise(a as *mut libc::c_void, want, libc::MADV_HUGEPAGE) };
                a as *mut u8
            }
            Kind::Anon => {
                // SAFETY: advice on our own mapping.
                unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
                p.cast::<u8>()
            }
            Kind::File => p.cast::<u8>(),
        };
        Ok((m, start))
    }
}

impl Timed for Faults {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        if ops > self.max_ops {
            bail!(
                "a batch of {ops} exceeds the {} touches one mapping holds",
                self.max_ops
            );
        }
        let n = usize::try_from(ops).context("batch too large")?;
        let (_mapping, base) = self.map(n)?;
        let before = minor_faults();
        let delay = run_delay_ns();
        let start = Instant::now();
        let mut sum = 0u8;
        for i in 0..n {
            // SAFETY: `i * stride` is inside the mapping.
            unsafe {
                let p = base.add(i * self.stride);
                if self.kind == Kind::File {
                    sum = sum.wrapping_add(p.read_volatile());
                } else {
                    p.write_volatile(1);
                }
            }
        }
        let took = start.elapsed();
        let total = (minor_faults() - before).max(0);
        self.waiting.add(delay, took);
        let faults = total as f64 / n.max(1) as f64;
        black_box(sum);
        if total > 0 {
            self.ns_per_fault = took.as_nanos() as f64 / total as f64;
        }
        self.faults_last = faults;
        self.faults_max = self.faults_max.max(faults);
        Ok(took)
    }

    fn max_ops(&self) -> Option<u64> {
        Some(self.max_ops)
    }

    fn warnings(&self) -> Vec<String> {
        let mut w: Vec<String> = self.waiting.warning().into_iter().collect();
        if self.kind == Kind::AnonThp && self.faults_max > 1.5 {
            w.push(
                Warning::HugeFaultFallback {
                    faults: self.faults_max,
                }
                .to_string(),
            );
        }
        w
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "touch_bytes": self.stride,
            "faults_per_op": self.faults_last,
            "ns_per_fault": self.ns_per_fault,
            "cpu_wait_share": self.waiting.share(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_choice_is_parsed() {
        assert_eq!(selected("always [madvise] never\n"), Some("madvise"));
        assert_eq!(selected("[always] madvise never"), Some("always"));
        assert_eq!(selected("always madvise never"), None);
        assert_eq!(selected("[never"), None);
    }

    #[test]
    fn anonymous_touches_fault_once_per_page() {
        let ctx = crate::harness::test_ctx();
        let mut f = Faults::new(Kind::Anon, &ctx).unwrap();
        assert!(f.run(256).unwrap() > Duration::ZERO);
        // One fault per page, give or take what the thread did besides.
        assert!(
            (0.9..1.2).contains(&f.faults_last),
            "{} faults per page",
            f.faults_last
        );
    }

    #[test]
    fn file_touches_fault_at_most_once_per_page_and_clean_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = crate::harness::test_ctx();
        ctx.tmp = dir.path().to_path_buf();
        let mut f = Faults::new(Kind::File, &ctx).unwrap();
        assert!(f.run(1024).unwrap() > Duration::ZERO);
        assert!(f.faults_last <= 1.1, "{}", f.faults_last);
        assert!(
            f.run(f.max_ops + 1).is_err(),
            "a batch past max_ops is refused"
        );
        drop(f);
        assert!(!dir.path().join("fault-file").exists());
    }
}
