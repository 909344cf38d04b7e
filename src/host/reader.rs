//! Reading files under a root directory that stands for `/` (the real
//! one, or a test's tree): the one reader that the host description and
//! the topology model both read procfs and sysfs through.

use std::fs;
use std::path::{Path, PathBuf};

use super::parse;

/// Reads files relative to a root directory.
pub(super) struct Reader<'a> {
    /// The directory standing for `/`.
    pub(super) root: &'a Path,
}

impl Reader<'_> {
    pub(super) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The file's text, trimmed; None when missing, unreadable or empty.
    pub(super) fn text(&self, rel: &str) -> Option<String> {
        let bytes = fs::read(self.path(rel)).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let t = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
        (!t.is_empty()).then(|| t.to_string())
    }

    pub(super) fn int(&self, rel: &str) -> Option<u64> {
        self.text(rel).and_then(|t| parse::parse_int(&t))
    }

    pub(super) fn signed(&self, rel: &str) -> Option<i64> {
        self.text(rel).and_then(|t| t.parse().ok())
    }

    pub(super) fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// The entries of a directory, sorted by name; empty when missing.
    pub(super) fn entries(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path(rel))
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// Where the CPUs are described, under the root.
pub(super) const CPU: &str = "sys/devices/system/cpu";
