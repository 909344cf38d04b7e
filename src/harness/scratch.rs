//! Scratch directories that benchmarks write into.
//!
//! A benchmark that writes files creates a private directory inside the
//! directory the run writes to (`--dir`), so nothing else there is touched.
//! Dropping it removes it with its contents; and because a second Ctrl-C
//! exits at once without running destructors, every live scratch directory
//! is also listed here so that the exit path can remove it first.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Scratch directories alive now, for [`remove_all`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A private directory inside a parent, removed with its contents when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    dir: tempfile::TempDir,
}

impl ScratchDir {
    /// Creates `parent/<prefix><random>`.
    pub fn new_in(parent: &Path, prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
        live().push(dir.path().to_path_buf());
        Ok(ScratchDir { dir })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let p = self.dir.path();
        live().retain(|x| x != p);
        // The TempDir field is dropped next and removes the tree.
    }
}

/// Removes every live scratch directory: for an exit that skips destructors.
/// Retries a few times, as a benchmark may still be creating files in one.
pub fn remove_all() {
    for p in live().drain(..) {
        for _ in 0..3 {
            if std::fs::remove_dir_all(&p).is_ok() || !p.exists() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_removes_the_directory_and_its_contents() {
        let parent = tempfile::tempdir().unwrap();
        let s = ScratchDir::new_in(parent.path(), "t-").unwrap();
        std::fs::write(s.path().join("f"), b"x").unwrap();
        let p = s.path().to_path_buf();
        assert!(live().contains(&p));
        drop(s);
        assert!(!p.exists());
        assert!(!live().contains(&p));
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
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
