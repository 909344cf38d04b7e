//! Metadata operations on empty files, per second, as bonnie++ counts them:
//! create, stat, rename, unlink. Names are relative to an open directory
//! (the *at() calls), so the path walk from `/` is not what is measured,
//! and nothing is synced: this is the file system's in-memory work plus
//! whatever its journal does on the way.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::fcntl::{AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{Mode, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use serde_json::json;

use super::common::{Sizes, Workspace};
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::suites::bench::FnBench;

/// What a round spends setting a benchmark up and tearing it down besides
/// its samples (the directory of files made and removed): 56 ms a round on the quick runs of a 2-vCPU AMD EPYC (Zen 4) KVM guest. Only the run-time estimate
/// uses it ([`FnBench::setup_time`]).
const SETUP: Duration = Duration::from_millis(56);

/// The most files a create or unlink batch makes at once.
const MAX_BATCH: u64 = 200_000;
/// Files the create benchmark keeps at most before deleting them (untimed).
const KEEP_FILES: u64 = 500_000;
/// Room asked for: empty files take inodes and directory blocks only.
const SPACE: u64 = 64 << 20;

/// Which metadata operation is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Create,
    Stat,
    Rename,
    Unlink,
}

struct Meta {
    ws: Workspace,
    dir: OwnedFd,
    op: Op,
    /// Create/unlink: names of the current batch; stat/rename: the pool (a, then b names).
    names: Vec<CString>,
    alt: Vec<CString>,
    renamed: Vec<bool>,
    next: u64,
    serial: u64,
    /// Create: files made by earlier batches, still there.
    kept: Vec<CString>,
    /// Create: how many files may stay.
    keep_max: u64,
}

fn name(prefix: &str, i: u64) -> CString {
    // No interior NUL can occur in a formatted number.
    CString::new(format!("{prefix}{i:08}")).unwrap_or_default()
}

fn create_file(dir: &OwnedFd, n: &CString) -> nix::Result<()> {
    let flags = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
    openat(dir, n.as_c_str(), flags, Mode::from_bits_truncate(0o644)).map(drop)
}

impl Meta {
    /// Fresh names for a create/unlink batch (untimed).
    fn fresh_names(&mut self, ops: u64) {
        self.names.clear();
        for _ in 0..ops {
            self.names.push(name("f", self.serial));
            self.serial += 1;
        }
    }

    fn remove_batch(&self) -> anyhow::Result<()> {
        for n in &self.names {
            unlinkat(&self.dir, n.as_c_str(), UnlinkatFlags::NoRemoveDir).context("unlink")?;
        }
        Ok(())
    }
}

impl Timed for Meta {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        match self.op {
            Op::Create => {
                // The files stay until the end (up to keep_max): deleting
                // them between batches would make the next batch pay for it
                // on file systems that avoid reusing freed inodes at once.
                if self.kept.len() as u64 + ops > self.keep_max {
                    for n in self.kept.drain(..) {
                        unlinkat(&self.dir, n.as_c_str(), UnlinkatFlags::NoRemoveDir)
                            .context("unlink")?;
                    }
                }
                self.fresh_names(ops);
                let start = Instant::now();
                for n in &self.names {
                    create_file(&self.dir, n).context("create")?;
                }
                let took = start.elapsed();
                self.kept.append(&mut self.names);
                Ok(took)
            }
            Op::Unlink => {
                self.fresh_names(ops);
                for n in &self.names {
                    create_file(&self.dir, n).context("create")?;
                }
                let start = Instant::now();
                self.remove_batch()?;
                Ok(start.elapsed())
            }
            Op::Stat => {
                let pool = self.names.len() as u64;
                let start = Instant::now();
                for _ in 0..ops {
                    let n = &self.names[(self.next % pool) as usize];
                    let st = fstatat(&self.dir, n.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                        .context("stat")?;
                    std::hint::black_box(st);
                    self.next += 1;
                }
                Ok(start.elapsed())
            }
            Op::Rename => {
                let pool = self.names.len() as u64;
                let start = Instant::now();
                for _ in 0..ops {
                    let i = (self.next % pool) as usize;
                    let (from, to) = if self.renamed[i] {
                        (&self.alt[i], &self.names[i])
                    } else {
                        (&self.names[i], &self.alt[i])
                    };
                    renameat(&self.dir, from.as_c_str(), &self.dir, to.as_c_str())
                        .context("rename")?;
                    self.renamed[i] = !self.renamed[i];
                    self.next += 1;
                }
                Ok(start.elapsed())
            }
        }
    }
    fn max_ops(&self) -> Option<u64> {
        Some(MAX_BATCH.min(self.keep_max))
    }
    fn warnings(&self) -> Vec<String> {
        self.ws.create_warnings()
    }
    fn details(&self) -> Option<serde_json::Value> {
        let pool = matches!(self.op, Op::Stat | Op::Rename).then_some(self.names.len());
        Some(
            self.ws
                .details(json!({ "files_in_dir": pool, "synced": false })),
        )
    }
}

fn prepare(ctx: &Ctx, op: Op) -> Result<Box<dyn Timed>, PrepareError> {
    let (ws, _) = Workspace::new(ctx, SPACE, SPACE)?;
    let dir: OwnedFd = nix::fcntl::open(
        ws.scratch.path(),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .context("opening the scratch directory")?;
    let mut m = Meta {
        ws,
        dir,
        op,
        names: Vec::new(),
        alt: Vec::new(),
        renamed: Vec::new(),
        next: 0,
        serial: 0,
        kept: Vec::new(),
        keep_max: KEEP_FILES,
    };
    if let Ok(v) = nix::sys::statvfs::statvfs(m.ws.scratch.path()) {
        // Leave most of the file system's free inodes alone.
        #[allow(clippy::useless_conversion)] // 32-bit on 32-bit targets
        let free = u64::from(v.files_available());
        m.keep_max = KEEP_FILES.min(free / 4).max(1);
    }
    if matches!(op, Op::Stat | Op::Rename) {
        let pool = Sizes::of(ctx.profile).meta_files;
        for i in 0..pool {
            let n = name("a", i);
            create_file(&m.dir, &n).context("creating the files")?;
            m.names.push(n);
            m.alt.push(name("b", i));
        }
        m.renamed = vec![false; pool as usize];
    }
    Ok(Box::new(m))
}

/// The metadata benchmarks.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let b = |id: &str, summary: &str, op: Op| {
        FnBench::new(id, summary, Unit::Rate, move |ctx| prepare(ctx, op))
            .budget_scale(1.5)
            .cpu_cost()
            .setup_time(SETUP)
            .boxed()
    };
    vec![
        b(
            "storage.meta.create",
            "create an empty file (openat O_CREAT|O_EXCL + close), not synced: files per second",
            Op::Create,
        ),
        b(
            "storage.meta.stat",
            "fstatat of one of the 1000-5000 files of a directory (by profile): per second",
            Op::Stat,
        ),
        b(
            "storage.meta.rename",
            "renameat of an empty file within one directory, not synced: per second",
            Op::Rename,
        ),
        b(
            "storage.meta.unlink",
            "unlinkat of an empty file, not synced: files per second",
            Op::Unlink,
        ),
    ]
}
