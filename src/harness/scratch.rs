//! Scratch directories that benchmarks write into.
//!
//! A benchmark that writes files creates a private directory inside the
//! directory the run writes to (`--dir`), so nothing else there is touched.
//! Dropping it removes it with its contents; and because a second Ctrl-C
//! exits at once without running destructors, every live scratch directory
//! is also listed here so that the exit path can remove it first.
//!
//! A process killed outright (SIGKILL, the OOM killer) removes nothing, so
//! each scratch directory holds a lock file, locked while its owner lives:
//! [`sweep_stale`] removes the ones whose lock nobody holds any more.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use nix::fcntl::{Flock, FlockArg};

/// The lock file inside a scratch directory, locked while its owner lives.
pub const LOCK_FILE: &str = ".opcost-lock";

/// Age after which an empty, lock-less `opcost-XXXXXX` temp dir (made by a
/// version without lock files, or killed before it locked) counts as left over.
pub const STALE_EMPTY_AGE: Duration = Duration::from_secs(600);

/// Scratch directories alive now, for [`remove_all`].
static LIVE: Registry = Registry::new();

/// A list of live scratch directories that can be closed: once closed (the
/// process is exiting), no directory is made through it, so none can appear
/// behind the exit path's back.
struct Registry {
    dirs: Mutex<Vec<PathBuf>>,
    closed: AtomicBool,
}

impl Registry {
    const fn new() -> Registry {
        Registry {
            dirs: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        }
    }

    fn dirs(&self) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
        self.dirs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `parent/<prefix><random>` and lists it, under the list's lock
    /// (so [`Registry::close`] never misses one made but not yet listed);
    /// `Interrupted` once closed.
    fn make(&self, parent: &Path, prefix: &str) -> std::io::Result<tempfile::TempDir> {
        let mut dirs = self.dirs();
        if self.closed.load(Ordering::SeqCst) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the run is being aborted",
            ));
        }
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
        dirs.push(dir.path().to_path_buf());
        Ok(dir)
    }

    fn unlist(&self, p: &Path) {
        self.dirs().retain(|x| x != p);
    }

    /// Closes the list and returns what was on it.
    fn close(&self) -> Vec<PathBuf> {
        let mut dirs = self.dirs();
        self.closed.store(true, Ordering::SeqCst);
        dirs.drain(..).collect()
    }
}

/// Directories where this process's children make scratch directories of
/// their own, swept by [`remove_all`] once those children are gone.
static PARENTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A private directory inside a parent, removed with its contents when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    // Removed in this order: the tree first (in `drop`), then the lock is released.
    dir: tempfile::TempDir,
    _lock: Option<Flock<File>>,
}

impl ScratchDir {
    /// Creates `parent/<prefix><random>`, with its lock file held (refused,
    /// `Interrupted`, once [`remove_all`] has run).
    pub fn new_in(parent: &Path, prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = LIVE.make(parent, prefix)?;
        let lock = hold_lock(dir.path());
        Ok(ScratchDir { dir, _lock: lock })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // The tree goes while it is still listed: a second Ctrl-C's abort
        // that comes meanwhile removes it too before it exits the process,
        // which would otherwise end this removal half done. (The TempDir
        // field, dropped next, finds nothing left.)
        let p = self.dir.path();
        let _ = std::fs::remove_dir_all(p);
        LIVE.unlist(p);
    }
}

/// Locks a new lock file in `dir`. It is locked under another name and
/// renamed into place, so a sweep never finds it there unlocked while its
/// owner lives. `None` where the file system has no `flock` (the directory
/// is then simply never swept).
fn hold_lock(dir: &Path) -> Option<Flock<File>> {
    let fresh = dir.join(".opcost-lock-new");
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(&fresh)
        .ok()?;
    let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock).ok()?;
    std::fs::rename(&fresh, dir.join(LOCK_FILE)).ok()?;
    Some(lock)
}

/// True for a name `tempfile` gives with `prefix`: the prefix and six
/// letters or digits.
fn generated_name(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Removes the directories `parent/<prefix>*` that opcost processes killed
/// outright left behind, and returns them. A directory is removed with its
/// contents when it is ours (same owner) and its lock file is there and
/// unlocked (its owner is gone). With `old_empty` (for the system's temp
/// dir, not a user's `--dir`), an empty directory with a generated name,
/// no lock file and unchanged for [`STALE_EMPTY_AGE`] is removed too.
/// Anything else, a live run's directory included, is left alone.
pub fn sweep_stale(parent: &Path, prefix: &str, old_empty: bool) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let uid = nix::unistd::geteuid().as_raw();
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(prefix) {
            continue;
        }
        let path = e.path();
        // symlink_metadata: a link is never followed, let alone removed.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid {
            continue;
        }
        let stale = match File::open(path.join(LOCK_FILE)) {
            // Free lock: its owner is gone. Held while the tree is removed.
            Ok(f) => match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
                Ok(_held) => std::fs::remove_dir_all(&path).is_ok(),
                Err(_) => false,
            },
            Err(_) => {
                let old = meta
                    .modified()
                    .ok()
                    .and_then(|m| SystemTime::now().duration_since(m).ok())
                    .is_some_and(|age| age >= STALE_EMPTY_AGE);
                // remove_dir fails on a directory that is not empty.
                old_empty
                    && old
                    && generated_name(&name, prefix)
                    && std::fs::remove_dir(&path).is_ok()
            }
        };
        if stale {
            removed.push(path);
        }
    }
    removed
}

/// System V message queues alive now, for [`remove_all`]: unlike a file or
/// a shared-memory segment, a queue cannot be removed while in use, so it
/// lives until its owner removes it, and an exit that skips destructors
/// must remove it here.
static QUEUES: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn queues() -> std::sync::MutexGuard<'static, Vec<i32>> {
    QUEUES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Lists the System V message queue `id` as live (its owner removes it and
/// calls [`queue_removed`]).
pub fn queue_created(id: i32) {
    queues().push(id);
}

/// Unlists a queue its owner removed.
pub fn queue_removed(id: i32) {
    queues().retain(|&q| q != id);
}

/// Lists `parent` as a directory where this process's children (round
/// workers) make scratch directories, for [`remove_all`] to sweep.
pub fn watch_parent(parent: &Path) {
    let mut p = PARENTS.lock().unwrap_or_else(|e| e.into_inner());
    if !p.iter().any(|x| x == parent) {
        p.push(parent.to_path_buf());
    }
}

/// Removes every live scratch directory and System V message queue: for an
/// exit that skips destructors. A benchmark's threads may still be creating
/// files in a directory while it goes (the write-back flood's writers are),
/// so each removal is retried for up to [`REMOVE_FOR`], briefly pausing
/// between tries; three immediate tries once lost that race. No scratch
/// directory can be made after it. Last, the [`watch_parent`] directories
/// are swept of what children killed outright left ([`sweep_stale`]: only
/// directories whose owner is gone).
pub fn remove_all() {
    // Swap areas first: a swap file removed while enabled cannot be
    // disabled by name any more.
    crate::os::swap::remove_all();
    for id in queues().drain(..) {
        // SAFETY: IPC_RMID takes no buffer; an id already gone fails harmlessly.
        unsafe { libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    }
    for p in LIVE.close() {
        let start = std::time::Instant::now();
        while std::fs::remove_dir_all(&p).is_err() && p.exists() && start.elapsed() < REMOVE_FOR {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let parents = PARENTS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for parent in parents {
        sweep_stale(&parent, "opcost-", false);
    }
}

/// How long [`remove_all`] keeps trying to remove one directory.
const REMOVE_FOR: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_removes_the_directory_and_its_contents() {
        let parent = tempfile::tempdir().unwrap();
        let s = ScratchDir::new_in(parent.path(), "t-").unwrap();
        std::fs::write(s.path().join("f"), b"x").unwrap();
        let p = s.path().to_path_buf();
        assert!(LIVE.dirs().contains(&p));
        drop(s);
        assert!(!p.exists());
        assert!(!LIVE.dirs().contains(&p));
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_scratch_dir_holds_its_lock_until_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let s = ScratchDir::new_in(parent.path(), "opcost-").unwrap();
        let names: Vec<_> = std::fs::read_dir(s.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [LOCK_FILE]);
        // A live directory is not swept, even by this same process.
        assert!(sweep_stale(parent.path(), "opcost-", true).is_empty());
        assert!(s.path().exists());
        drop(s);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn sweep_removes_what_killed_owners_left_and_nothing_else() {
        let parent = tempfile::tempdir().unwrap();
        let p = parent.path();
        // Killed: the lock file is there and nobody holds it; data inside.
        let killed = p.join("opcost-storage-Ab3dE9");
        std::fs::create_dir(&killed).unwrap();
        std::fs::write(killed.join(LOCK_FILE), b"").unwrap();
        std::fs::write(killed.join("data"), vec![0u8; 4096]).unwrap();
        // Alive: held by a scratch dir of this process.
        let alive = ScratchDir::new_in(p, "opcost-").unwrap();
        // Old, empty, generated name, no lock file: left by an older version.
        let legacy = p.join("opcost-0FF2QG");
        std::fs::create_dir(&legacy).unwrap();
        let old = SystemTime::now() - STALE_EMPTY_AGE - Duration::from_secs(60);
        File::open(&legacy).unwrap().set_modified(old).unwrap();
        // Not ours to remove: a recent empty one, a non-empty one without a
        // lock, one with a name tempfile does not make, a file, a link.
        let recent = p.join("opcost-Zz9Yy8");
        std::fs::create_dir(&recent).unwrap();
        let full = p.join("opcost-Kept12");
        std::fs::create_dir(&full).unwrap();
        std::fs::write(full.join("results.json"), b"{}").unwrap();
        File::open(&full).unwrap().set_modified(old).unwrap();
        let named = p.join("opcost-net");
        std::fs::create_dir(&named).unwrap();
        File::open(&named).unwrap().set_modified(old).unwrap();
        std::fs::write(p.join("opcost-file"), b"x").unwrap();
        std::os::unix::fs::symlink(&killed, p.join("opcost-link00")).unwrap();
        let other = p.join("mine-Ab3dE9");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(LOCK_FILE), b"").unwrap();

        // In a user's directory, only what a lock shows to be ours.
        assert_eq!(
            sweep_stale(p, "opcost-", false),
            std::slice::from_ref(&killed)
        );
        std::fs::create_dir(&killed).unwrap();
        std::fs::write(killed.join(LOCK_FILE), b"").unwrap();
        let mut removed = sweep_stale(p, "opcost-", true);
        removed.sort();
        assert_eq!(removed, [legacy.clone(), killed.clone()]);
        assert!(!killed.exists() && !legacy.exists());
        for kept in [alive.path(), &recent, &full, &named, &other] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        assert!(p.join("opcost-file").exists());
        assert!(std::fs::symlink_metadata(p.join("opcost-link00")).is_ok());
    }

    #[test]
    fn a_closed_list_makes_nothing_and_gives_back_what_it_held() {
        let parent = tempfile::tempdir().unwrap();
        let reg = Registry::new();
        let a = reg.make(parent.path(), "t-").unwrap();
        assert_eq!(reg.close(), [a.path().to_path_buf()]);
        let e = reg.make(parent.path(), "t-").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted);
        assert!(reg.close().is_empty());
        drop(a);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn sweeping_a_missing_directory_finds_nothing() {
        assert!(sweep_stale(Path::new("/nonexistent/opcost"), "opcost-", true).is_empty());
    }

    #[test]
    fn dropping_an_already_removed_directory_is_harmless() {
        // What happens after remove_all(): the owner drops it later.
        let parent = tempfile::tempdir().unwrap();
        let s = ScratchDir::new_in(parent.path(), "t-").unwrap();
        std::fs::remove_dir_all(s.path()).unwrap();
        drop(s);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }
}
