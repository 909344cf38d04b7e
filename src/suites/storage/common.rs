//! What every storage benchmark shares: its private scratch directory in
//! the run's `--dir`, the free-space check that sizes its files, the
//! location block attached to its result, aligned buffers for O_DIRECT, and
//! the helpers that lay out a file and drop it from the page cache.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::harness::scratch::ScratchDir;
use crate::harness::warnings::Warning;
use crate::harness::{Ctx, PrepareError, Profile};
use crate::host::location::{Location, locate};
pub use crate::os::fs::{MIB, drop_from_cache, fit_size, fs_space, reserve_bytes};
use crate::units::human_bytes;

/// The alignment O_DIRECT buffers get (covers 512 B and 4 KiB sectors).
pub const DIRECT_ALIGN: usize = 4096;
/// Smallest file a sequential or random benchmark accepts after scaling down.
pub const MIN_FILE: u64 = 4 * MIB;

/// File sizes and counts per profile.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// The file of the sequential benchmarks (reads pass over all of it).
    pub seq_file: u64,
    /// Bytes one batch of a sequential write benchmark writes (then
    /// fdatasyncs, for that variant): less than the file, to bound wear.
    pub write_batch: u64,
    /// The file random reads go to.
    pub rand_file: u64,
    /// The file of the per-character (bonnie++-style) benchmarks.
    pub bonnie_file: u64,
    /// Files in the small-file tree.
    pub tree_files: u64,
    /// Files the metadata benchmarks keep around (stat, rename).
    pub meta_files: u64,
}

impl Sizes {
    /// The sizes for `profile` (quick writes a few hundred MiB in all, and
    /// holds less than 100 MiB on disk at any time).
    pub fn of(profile: Profile) -> Sizes {
        match profile {
            Profile::Quick => Sizes {
                seq_file: 16 * MIB,
                write_batch: 8 * MIB,
                rand_file: 16 * MIB,
                bonnie_file: 8 * MIB,
                // File creation costs ~1 ms on some cloud disks: a tree of
                // 1000 files took ~4 s a round there.
                tree_files: 100,
                meta_files: 200,
            },
            Profile::Default => Sizes {
                seq_file: 256 * MIB,
                write_batch: 32 * MIB,
                rand_file: 256 * MIB,
                bonnie_file: 32 * MIB,
                tree_files: 4000,
                meta_files: 2000,
            },
            Profile::Thorough => Sizes {
                seq_file: 1024 * MIB,
                write_batch: 128 * MIB,
                rand_file: 1024 * MIB,
                bonnie_file: 64 * MIB,
                tree_files: 10_000,
                meta_files: 5000,
            },
        }
    }
}

/// The fewest ops per batch: `want`, fewer when one op takes `est` and
/// `want` of them would take longer than `cap` (a slow disk).
pub fn min_ops_for(est: std::time::Duration, want: u64, cap: std::time::Duration) -> u64 {
    let fit = cap.as_nanos() / est.as_nanos().max(1);
    u64::try_from(fit).unwrap_or(u64::MAX).clamp(1, want.max(1))
}

/// A benchmark's private directory and the facts about where it is.
pub struct Workspace {
    /// Removed with everything in it when the workspace is dropped.
    pub scratch: ScratchDir,
    /// Where it lives (file system, device, scheduler).
    pub location: Location,
}

impl Workspace {
    /// Creates a private directory in `ctx.dir` after checking there is room
    /// for a file of `wanted` bytes (at least `min`); returns it with the
    /// size the benchmark may use. Short of space is a skip with the reason.
    pub fn new(ctx: &Ctx, wanted: u64, min: u64) -> Result<(Workspace, u64), PrepareError> {
        let (free, total) = fs_space(&ctx.dir).map_err(|e| {
            PrepareError::Fail(anyhow::anyhow!("statvfs {}: {e}", ctx.dir.display()))
        })?;
        let probe = locate(&ctx.dir);
        let mem = if probe.in_memory() {
            crate::host::mem_available_now()
        } else {
            None
        };
        let Some(size) = fit_size(wanted, min, free, total, mem) else {
            let mem_note = mem
                .map(|m| format!(" and {} of memory available", human_bytes(m as f64)))
                .unwrap_or_default();
            return Err(PrepareError::Skip(format!(
                "not enough free space in {}: {} free{mem_note}, {} kept in reserve, {} needed; free some space or choose another --dir",
                ctx.dir.display(),
                human_bytes(free as f64),
                human_bytes(reserve_bytes(total) as f64),
                human_bytes((min * 4 + reserve_bytes(total)) as f64),
            )));
        };
        if ctx.stopping() {
            return Err(PrepareError::Skip("interrupted".into()));
        }
        let scratch = ScratchDir::new_in(&ctx.dir, "opcost-storage-")
            .with_context(|| format!("creating a directory in {}", ctx.dir.display()))?;
        let location = locate(scratch.path());
        Ok((Workspace { scratch, location }, size))
    }

    /// A path inside the private directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.scratch.path().join(name)
    }

    /// The JSON attached to results: the location block plus `extra` facts.
    pub fn details(&self, extra: serde_json::Value) -> serde_json::Value {
        let mut v = serde_json::json!({ "location": self.location });
        if let (Some(obj), serde_json::Value::Object(more)) = (v.as_object_mut(), extra) {
            obj.extend(more);
        }
        v
    }

    /// Caveats that follow from the location (a file system in memory, one
    /// with a cache of its own).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.location.in_memory() {
            // Name the run's directory, not this benchmark's subdirectory,
            // so that the same caveat reads the same for every result.
            let dir = Path::new(&self.location.dir);
            w.push(
                Warning::FsInMemory {
                    dir: dir.parent().unwrap_or(dir).display().to_string(),
                    fs: self.location.fs_type.clone(),
                }
                .to_string(),
            );
        }
        if self.location.fs_type == "zfs" {
            w.push(Warning::ZfsArc.to_string());
        }
        w
    }
}

impl Workspace {
    /// [`Workspace::warnings`] plus what affects creating files: ext4
    /// without a journal avoids reusing recently freed inodes, at a cost.
    pub fn create_warnings(&self) -> Vec<String> {
        let mut w = self.warnings();
        if self.location.journal == Some(false) {
            w.push(
                Warning::NoJournal {
                    fs: self.location.fs_type.clone(),
                }
                .to_string(),
            );
        }
        w
    }
}

/// A zeroed buffer aligned for O_DIRECT, freed on drop.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    /// `len` bytes (a multiple of [`DIRECT_ALIGN`]) aligned to [`DIRECT_ALIGN`],
    /// filled with a non-zero pattern so that no layer can skip zero blocks.
    pub fn new(len: usize) -> anyhow::Result<AlignedBuf> {
        let layout = std::alloc::Layout::from_size_align(len.max(DIRECT_ALIGN), DIRECT_ALIGN)
            .context("buffer layout")?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(raw)
            .ok_or_else(|| anyhow::anyhow!("out of memory allocating {len} bytes"))?;
        let mut b = AlignedBuf { ptr, layout };
        fill_pattern(b.as_mut_slice(), 0x5eed);
        Ok(b)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to layout.size() initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

/// Fills `buf` with cheap pseudo-random bytes (incompressible enough that a
/// compressing or deduplicating layer cannot shortcut the writes).
pub fn fill_pattern(buf: &mut [u8], seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for chunk in buf.chunks_mut(8) {
        let v = rng.u64(..).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// Creates the file `path`, which must not exist yet, open for reading and
/// writing.
pub fn create_file(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))
}

/// Writes `size` bytes of non-zero data to a new file at `path` in 1 MiB
/// blocks, makes it durable and drops it from the page cache.
pub fn lay_out(path: &Path, size: u64, ctx: &Ctx) -> Result<File, PrepareError> {
    let mut f = create_file(path)?;
    let mut block = vec![0u8; MIB as usize];
    let mut done = 0;
    while done < size {
        if ctx.stopping() {
            return Err(PrepareError::Skip("interrupted".into()));
        }
        fill_pattern(&mut block, done);
        let n = (size - done).min(MIB) as usize;
        f.write_all(&block[..n])
            .with_context(|| format!("writing {}", path.display()))?;
        done += n as u64;
    }
    drop_from_cache(&f).with_context(|| format!("syncing {}", path.display()))?;
    Ok(f)
}

/// Opens `path` with O_DIRECT and checks that an aligned read (and, when
/// `write`, a write) of `block` bytes at offset 0 really works: some file
/// systems refuse O_DIRECT at open, others at the first I/O (EINVAL).
pub fn try_direct(path: &Path, write: bool, block: usize) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let mut buf = AlignedBuf::new(block).map_err(std::io::Error::other)?;
    f.read_at(buf.as_mut_slice(), 0)?;
    if write {
        f.write_at(buf.as_slice(), 0)?;
    }
    Ok(f)
}

/// [`try_direct`] for a benchmark that needs O_DIRECT: a refusal (EINVAL) is
/// a skip that names the file system, anything else a failure.
pub fn open_direct(
    ws: &Workspace,
    path: &Path,
    write: bool,
    block: usize,
) -> Result<File, PrepareError> {
    try_direct(path, write, block).map_err(|e| {
        if e.raw_os_error() == Some(libc::EINVAL) {
            PrepareError::Skip(format!(
                "O_DIRECT refused by {} in {} ({e}); the buffered variants still ran",
                ws.location.fs_type, ws.location.dir
            ))
        } else {
            PrepareError::Fail(
                anyhow::Error::new(e).context(format!("opening {} with O_DIRECT", path.display())),
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_shrink_to_fit_and_refuse_when_too_small() {
        let gib = 1u64 << 30;
        // plenty of room: the wanted size
        assert_eq!(
            fit_size(256 * MIB, MIN_FILE, 80 * gib, 250 * gib, None),
            Some(256 * MIB)
        );
        // 1 GiB reserve out of 2 GiB free: a quarter of the rest
        assert_eq!(
            fit_size(1024 * MIB, MIN_FILE, 2 * gib, 250 * gib, None),
            Some(256 * MIB)
        );
        // nearly full
        assert_eq!(fit_size(256 * MIB, MIN_FILE, gib, 250 * gib, None), None);
        // a file system in memory is bounded by memory too
        assert_eq!(
            fit_size(256 * MIB, MIN_FILE, 80 * gib, 250 * gib, Some(400 * MIB)),
            Some(100 * MIB)
        );
        // results are whole MiB
        let s = fit_size(256 * MIB, MIN_FILE, 2 * gib + 12345, 250 * gib, None).unwrap();
        assert_eq!(s % MIB, 0);
        assert!(fit_size(10, 0, 0, 0, None).is_none());
        // a minimum that is not whole MiB is granted as it is
        let odd = 12 * MIB + 345;
        assert_eq!(fit_size(odd, odd, 80 * gib, 250 * gib, None), Some(odd));
    }

    #[test]
    fn batch_size_follows_the_device_speed() {
        use std::time::Duration;
        let cap = Duration::from_millis(20);
        assert_eq!(min_ops_for(Duration::from_micros(100), 64, cap), 64);
        assert_eq!(min_ops_for(Duration::from_millis(10), 64, cap), 2);
        assert_eq!(min_ops_for(Duration::from_secs(1), 64, cap), 1);
        assert_eq!(min_ops_for(Duration::ZERO, 64, cap), 64);
        assert_eq!(min_ops_for(Duration::from_micros(1), 0, cap), 1);
    }

    #[test]
    fn reserve_is_bounded() {
        assert_eq!(reserve_bytes(0), 32 * MIB);
        assert_eq!(reserve_bytes(1 << 40), 1 << 30);
        assert_eq!(reserve_bytes(1 << 30), (1 << 30) / 10);
    }

    #[test]
    fn aligned_buffers_are_aligned_and_not_zero() {
        let b = AlignedBuf::new(3 * DIRECT_ALIGN).unwrap();
        assert_eq!(b.as_slice().as_ptr() as usize % DIRECT_ALIGN, 0);
        assert_eq!(b.as_slice().len(), 3 * DIRECT_ALIGN);
        assert!(b.as_slice().iter().any(|&x| x != 0));
    }
}
