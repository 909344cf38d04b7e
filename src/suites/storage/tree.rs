//! A small-file tree, as a source checkout or an unpacked tarball is:
//! thousands of files of a few KiB in nested directories, written and
//! synced (like `tar -x && sync`, but only this tree: write-back of each
//! file, then an fsync of each directory), read back with their data
//! dropped from the page cache, and deleted (then synced). Rates are files
//! per second, the sync included, so a device that is fast for big files
//! but slow for small ones shows it (E15).

use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::fcntl::{OFlag, PosixFadviseAdvice, open, openat, posix_fadvise};
use nix::sys::stat::{Mode, mkdirat};
use nix::unistd::{UnlinkatFlags, fdatasync, fsync, unlinkat};
use serde_json::json;

use super::common::{MIB, Sizes, Workspace, fill_pattern};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::suites::bench::FnBench;

/// Trees the write benchmark keeps on disk at most (then deletes the oldest).
const KEEP_TREES: u64 = 16;
/// Files per directory.
const PER_DIR: u64 = 50;
/// Directories per top-level group.
const PER_GROUP: u64 = 10;
/// Smallest file.
const MIN_FILE: u64 = 512;
/// Largest file (exclusive): sizes are uniform in [MIN_FILE, MAX_FILE), mean ~8 KiB.
const MAX_FILE: u64 = 16 * 1024;

/// The shape of the tree: directories in creation order, files with sizes.
pub struct Layout {
    /// Directories, parents before children.
    pub dirs: Vec<CString>,
    /// Files with their sizes.
    pub files: Vec<(CString, u64)>,
}

impl Layout {
    /// `n` files, [`PER_DIR`] per directory, [`PER_GROUP`] directories per
    /// group, sizes drawn from a fixed seed so every run writes the same tree.
    pub fn new(n: u64) -> Layout {
        let mut rng = fastrand::Rng::with_seed(0x7ee);
        let mut dirs = Vec::new();
        let mut files = Vec::with_capacity(n as usize);
        let c = |s: String| CString::new(s).unwrap_or_default();
        for i in 0..n {
            let d = i / PER_DIR;
            let g = d / PER_GROUP;
            if i % (PER_DIR * PER_GROUP) == 0 {
                dirs.push(c(format!("g{g:04}")));
            }
            if i % PER_DIR == 0 {
                dirs.push(c(format!("g{g:04}/d{d:05}")));
            }
            let size = rng.u64(MIN_FILE..MAX_FILE);
            files.push((c(format!("g{g:04}/d{d:05}/f{i:06}.c")), size));
        }
        Layout { dirs, files }
    }

    /// Total bytes of file data.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, s)| s).sum()
    }

    fn create(&self, root: &OwnedFd, data: &[u8]) -> anyhow::Result<()> {
        for d in &self.dirs {
            mkdirat(root, d.as_c_str(), Mode::from_bits_truncate(0o755)).context("mkdir")?;
        }
        let flags = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
        for (f, size) in &self.files {
            let fd = openat(root, f.as_c_str(), flags, Mode::from_bits_truncate(0o644))
                .context("create")?;
            File::from(fd)
                .write_all(&data[..*size as usize])
                .context("write")?;
        }
        Ok(())
    }

    fn remove(&self, root: &OwnedFd) -> anyhow::Result<()> {
        for (f, _) in &self.files {
            unlinkat(root, f.as_c_str(), UnlinkatFlags::NoRemoveDir).context("unlink")?;
        }
        for d in self.dirs.iter().rev() {
            unlinkat(root, d.as_c_str(), UnlinkatFlags::RemoveDir).context("rmdir")?;
        }
        Ok(())
    }

    fn read_all(&self, root: &OwnedFd, buf: &mut [u8]) -> anyhow::Result<u64> {
        let mut total = 0;
        for (f, size) in &self.files {
            let fd = open_below(root, f.as_c_str(), OFlag::empty())?;
            let mut file = File::from(fd);
            file.read_exact(&mut buf[..*size as usize])
                .context("read")?;
            total += size;
        }
        Ok(total)
    }

    /// Makes the tree durable without touching other files of the file
    /// system (syncfs would also flush every other process's dirty data):
    /// start write-back of every file, wait for all of it, then fsync every
    /// directory, which commits the journal holding their metadata.
    fn sync(&self, root: &OwnedFd) -> anyhow::Result<()> {
        use libc::{
            SYNC_FILE_RANGE_WAIT_AFTER, SYNC_FILE_RANGE_WAIT_BEFORE, SYNC_FILE_RANGE_WRITE,
        };
        for flags in [
            SYNC_FILE_RANGE_WRITE,
            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER,
        ] {
            for (f, _) in &self.files {
                let fd = open_below(root, f.as_c_str(), OFlag::empty())?;
                write_back(&fd, flags)?;
            }
        }
        self.sync_dirs(root)
    }

    /// fsync of every directory and of the root.
    fn sync_dirs(&self, root: &OwnedFd) -> anyhow::Result<()> {
        for d in &self.dirs {
            let fd = open_below(root, d.as_c_str(), OFlag::O_DIRECTORY)?;
            fsync(&fd).context("fsync of a directory")?;
        }
        fsync(root).context("fsync of the tree's root")
    }

    fn drop_from_cache(&self, root: &OwnedFd) -> anyhow::Result<()> {
        for (f, _) in &self.files {
            let fd = open_below(root, f.as_c_str(), OFlag::empty())?;
            posix_fadvise(&fd, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED)
                .context("posix_fadvise")?;
        }
        Ok(())
    }
}

/// Opens `name` below `root` read-only, with `extra` flags (O_DIRECTORY).
#[inline(always)]
fn open_below(root: &OwnedFd, name: &CStr, extra: OFlag) -> anyhow::Result<OwnedFd> {
    openat(
        root,
        name,
        OFlag::O_RDONLY | OFlag::O_CLOEXEC | extra,
        Mode::empty(),
    )
    .context("open")
}

/// sync_file_range over the whole file; where the file system does not
/// support it, fdatasync (which waits for the same data, and more).
fn write_back(fd: &OwnedFd, flags: libc::c_uint) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: fd is an open descriptor; offset 0 and length 0 mean the whole file.
    let r = unsafe { libc::sync_file_range(fd.as_raw_fd(), 0, 0, flags) };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSYS) | Some(libc::EINVAL) | Some(libc::ESPIPE) => {
            fdatasync(fd).context("fdatasync")
        }
        _ => Err(anyhow::Error::new(e).context("sync_file_range")),
    }
}

/// Which phase is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Write,
    Read,
    Delete,
}

struct Tree {
    ws: Workspace,
    root: OwnedFd,
    layout: Layout,
    data: Vec<u8>,
    phase: Phase,
    /// Write: the passes whose trees are still on disk, oldest first.
    kept: VecDeque<u64>,
    /// Write: how many trees may stay on disk at once.
    keep_max: usize,
    next_pass: u64,
}

impl Tree {
    fn pass_name(n: u64) -> CString {
        CString::new(format!("p{n:05}")).unwrap_or_default()
    }

    fn open_dir(&self, name: &CString) -> anyhow::Result<OwnedFd> {
        openat(
            &self.root,
            name.as_c_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .context("open")
    }

    /// Removes the tree of pass `n` and its directory.
    fn remove_pass(&self, n: u64) -> anyhow::Result<()> {
        let name = Self::pass_name(n);
        self.layout.remove(&self.open_dir(&name)?)?;
        unlinkat(&self.root, name.as_c_str(), UnlinkatFlags::RemoveDir).context("rmdir")?;
        fsync(&self.root).context("fsync")
    }
}

impl Timed for Tree {
    fn run(&mut self, _ops: u64) -> anyhow::Result<Duration> {
        // ops is always the tree's file count (min_ops = max_ops).
        match self.phase {
            Phase::Write => {
                // Untimed: each pass writes into a new, synced directory. The
                // trees stay until the end (up to keep_max): deleting them
                // between passes would make the next pass's creates pay for
                // it on file systems that avoid reusing freed inodes at once.
                if self.kept.len() >= self.keep_max
                    && let Some(old) = self.kept.pop_front()
                {
                    self.remove_pass(old)?;
                }
                let n = self.next_pass;
                self.next_pass += 1;
                let name = Self::pass_name(n);
                mkdirat(&self.root, name.as_c_str(), Mode::from_bits_truncate(0o755))
                    .context("mkdir")?;
                fsync(&self.root).context("fsync")?;
                let dir = self.open_dir(&name)?;
                self.kept.push_back(n);
                let start = Instant::now();
                self.layout.create(&dir, &self.data)?;
                self.layout.sync(&dir)?;
                Ok(start.elapsed())
            }
            Phase::Read => {
                self.layout.drop_from_cache(&self.root)?;
                let start = Instant::now();
                let n = self.layout.read_all(&self.root, &mut self.data)?;
                std::hint::black_box(n);
                Ok(start.elapsed())
            }
            Phase::Delete => {
                self.layout.create(&self.root, &self.data)?;
                self.layout.sync(&self.root)?;
                let start = Instant::now();
                self.layout.remove(&self.root)?;
                fsync(&self.root).context("fsync")?;
                Ok(start.elapsed())
            }
        }
    }
    fn min_ops(&self) -> u64 {
        self.layout.files.len() as u64
    }
    fn max_ops(&self) -> Option<u64> {
        Some(self.layout.files.len() as u64)
    }
    fn warnings(&self) -> Vec<String> {
        let mut w = self.ws.create_warnings();
        if self.phase == Phase::Read {
            w.push(Warning::MetadataCached.to_string());
        }
        w
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.ws.details(json!({
            "files": self.layout.files.len(),
            "dirs": self.layout.dirs.len(),
            "bytes": self.layout.bytes(),
            "file_sizes": format!("{MIN_FILE}..{MAX_FILE} B"),
            "sync": "sync_file_range of every file (write, then wait), then fsync of every directory",
        })))
    }
}

fn prepare(ctx: &Ctx, phase: Phase) -> Result<Box<dyn Timed>, PrepareError> {
    let n = Sizes::of(ctx.profile).tree_files;
    let layout = Layout::new(n);
    // On disk: a tree's data plus its inodes and directories, roughly.
    let per_tree = layout.bytes() + n * 4096;
    let wanted = if phase == Phase::Write {
        per_tree * KEEP_TREES
    } else {
        per_tree
    };
    let (ws, granted) = Workspace::new(ctx, wanted.max(MIB), per_tree.max(MIB))?;
    let root = open(
        ws.scratch.path(),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .context("opening the scratch directory")?;
    let mut data = vec![0u8; MAX_FILE as usize];
    fill_pattern(&mut data, 11);
    let t = Tree {
        ws,
        root,
        layout,
        data,
        phase,
        kept: VecDeque::new(),
        keep_max: (granted / per_tree.max(1)).clamp(1, KEEP_TREES) as usize,
        next_pass: 0,
    };
    if phase == Phase::Read {
        t.layout.create(&t.root, &t.data)?;
        t.layout.sync(&t.root)?;
    }
    Ok(Box::new(t))
}

/// What a round of each phase took on a tree of the default profile's
/// 4000 files, seconds (write, read, delete): the median of three default
/// runs on a 2-vCPU AMD EPYC (Zen 4) KVM guest with a virtio disk. A round
/// writes, syncs and removes whole trees outside its timed operations (a
/// tree to read or delete is made first, each write's tree is deleted
/// later), several times its budget; only a first run's estimate uses
/// them (a host's own runs replace them).
const NOMINAL_ROUND_S: (f64, f64, f64) = (5.0, 4.5, 8.5);

/// How long a run should expect a tree benchmark of `phase` to take at
/// `profile`: its rounds at [`NOMINAL_ROUND_S`], scaled by the profile's
/// tree size, and never less than its `budget`.
fn expected(phase: Phase, profile: Profile, budget: Duration) -> Duration {
    let (w, r, d) = NOMINAL_ROUND_S;
    let round = match phase {
        Phase::Write => w,
        Phase::Read => r,
        Phase::Delete => d,
    };
    let files =
        Sizes::of(profile).tree_files as f64 / Sizes::of(Profile::Default).tree_files as f64;
    Duration::from_secs_f64(round * files * profile.rounds() as f64).max(budget)
}

/// The small-file tree benchmarks.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let b = |id: &str, summary: &str, phase: Phase, scale: f64| {
        FnBench::new(id, summary, Unit::Rate, move |ctx| prepare(ctx, phase))
            .param("files", "100/4000/10000 by profile")
            .budget_scale(scale)
            .expected_by(move |profile, budget| expected(phase, profile, budget))
            .cpu_cost()
            .boxed()
    };
    vec![
        b(
            "storage.tree.write",
            "write a source-like tree (50 files of 0.5-16 KiB per directory) and sync it: files per second",
            Phase::Write,
            6.0,
        ),
        b(
            "storage.tree.read",
            "read every file of the tree back, data dropped from the page cache: files per second",
            Phase::Read,
            4.0,
        ),
        b(
            "storage.tree.delete",
            "delete the tree and fsync its root (a journal commit): files per second",
            Phase::Delete,
            6.0,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_run_expects_the_trees_made_and_removed_outside_the_timing() {
        let of = |id: &str, p: Profile| {
            let b = benches().into_iter().find(|b| b.id() == id).expect(id);
            (b.budget(p), b.expected(p))
        };
        // Default: a round of delete makes a tree of 4000 files first.
        let (budget, expected) = of("storage.tree.delete", Profile::Default);
        assert!(expected > budget * 4, "{expected:?} against {budget:?}");
        let secs = expected.as_secs_f64();
        assert!((40.0..=45.0).contains(&secs), "{secs}");
        // Quick's 100-file trees fit in the budget.
        for id in [
            "storage.tree.write",
            "storage.tree.read",
            "storage.tree.delete",
        ] {
            let (budget, expected) = of(id, Profile::Quick);
            assert_eq!(expected, budget, "{id}");
        }
        // Thorough's trees are 2.5 times as large, and its rounds more.
        let (_, thorough) = of("storage.tree.write", Profile::Thorough);
        assert!(thorough > of("storage.tree.write", Profile::Default).1 * 3);
    }

    #[test]
    fn layout_nests_files_in_directories_created_first() {
        let l = Layout::new(1234);
        assert_eq!(l.files.len(), 1234);
        // 25 directories of 50 (the last partial) in 3 groups of 10
        assert_eq!(l.dirs.len(), 25 + 3);
        let mean = l.bytes() / 1234;
        assert!((MIN_FILE..MAX_FILE).contains(&mean), "{mean}");
        // every file's directory appears before any later directory's files
        for (f, _) in &l.files {
            let f = f.to_str().unwrap();
            let dir = &f[..f.rfind('/').unwrap()];
            assert!(l.dirs.iter().any(|d| d.to_str().unwrap() == dir), "{f}");
        }
        assert_eq!(
            Layout::new(10).bytes(),
            Layout::new(10).bytes(),
            "deterministic"
        );
    }

    #[test]
    fn a_tree_is_written_read_and_removed_completely() {
        let tmp = tempfile::tempdir().unwrap();
        let root: OwnedFd = open(
            tmp.path(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        let l = Layout::new(120);
        let mut data = vec![1u8; MAX_FILE as usize];
        l.create(&root, &data).unwrap();
        l.sync(&root).unwrap();
        l.drop_from_cache(&root).unwrap();
        assert_eq!(l.read_all(&root, &mut data).unwrap(), l.bytes());
        l.remove(&root).unwrap();
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
