//! File-system helpers any benchmark that writes files shares: free space,
//! the share of it left untouched, a file's size fitted to both, and
//! dropping a file from the page cache.

use std::fs::File;
use std::path::Path;

use anyhow::Context;
use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};

/// One MiB, the sequential block size.
pub const MIB: u64 = 1 << 20;

/// Space left untouched on the file system: 10% of it, at most 1 GiB, at least 32 MiB.
pub fn reserve_bytes(total: u64) -> u64 {
    (total / 10).clamp(32 * MIB, 1 << 30)
}

/// The size a benchmark's file may have: `wanted`, scaled down to a quarter
/// of the usable free space (several benchmarks of a group hold files at
/// once) and, on a file system in memory, to a quarter of available memory;
/// rounded down to whole MiB where that keeps it at least `min`. `None` when
/// it is below `min`.
pub fn fit_size(
    wanted: u64,
    min: u64,
    free: u64,
    total: u64,
    mem_available: Option<u64>,
) -> Option<u64> {
    let usable = free.saturating_sub(reserve_bytes(total));
    let mut size = wanted.min(usable / 4);
    if let Some(mem) = mem_available {
        size = size.min(mem / 4);
    }
    // Whole MiB, unless that would fall below a minimum that fits as it is.
    let floored = size / MIB * MIB;
    let size = if floored >= min { floored } else { size };
    (size >= min && size > 0).then_some(size)
}

/// Bytes available to unprivileged writers and total size of the file
/// system holding `dir` (statvfs).
#[allow(clippy::useless_conversion)] // the fields are 32-bit on 32-bit targets
pub fn fs_space(dir: &Path) -> nix::Result<(u64, u64)> {
    let v = nix::sys::statvfs::statvfs(dir)?;
    let frag = u64::from(v.fragment_size());
    Ok((
        u64::from(v.blocks_available()) * frag,
        u64::from(v.blocks()) * frag,
    ))
}

/// fdatasync, then posix_fadvise(DONTNEED) over the whole file: the next
/// read of it comes from the device, not from memory.
pub fn drop_from_cache(f: &File) -> anyhow::Result<()> {
    f.sync_data().context("fdatasync")?;
    posix_fadvise(f, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED).context("posix_fadvise")?;
    Ok(())
}
