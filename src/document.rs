//! The run document: one run's host, results and findings, in the versioned
//! JSON layout of DESIGN.md "Results". JSON is the interchange format; the
//! terminal table, the history and the reports are all made from this.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::harness::{Finding, Measurement, Profile, Skipped};
use crate::host::Host;

/// The version of the document layout this binary writes and reads.
pub const SCHEMA: u32 = 1;

/// Facts about the run itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Short random id (8 hex digits).
    pub id: String,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// Wall-clock duration in seconds.
    pub duration_s: f64,
    /// The profile used.
    pub profile: Profile,
    /// The user's label (`--label`), if any.
    #[serde(default)]
    pub label: Option<String>,
    /// The CPU the run was pinned to, if any.
    #[serde(default)]
    pub cpu: Option<usize>,
    /// True when the user stopped the run before the end.
    #[serde(default)]
    pub interrupted: bool,
    /// True for a run loaded from the history before it ended (still
    /// running, or killed): its results are those completed by then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

/// One run, as written to `--json`, exported and imported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunDoc {
    /// Layout version ([`SCHEMA`]).
    pub schema: u32,
    /// Version of the opcost that made it.
    pub opcost_version: String,
    /// The run's id, time, profile, label.
    pub run: RunInfo,
    /// The machine.
    pub host: Host,
    /// The measurements.
    pub results: Vec<Measurement>,
    /// Benchmarks skipped (with the reason) or failed (with the error).
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// Conclusions derived from the results.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Run-wide caveats (clocksource, governor, load...).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// How stable the machine was during the run (the canary between rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<crate::harness::canary::Stability>,
}

/// A new random run id: 8 hex digits.
pub fn new_run_id() -> String {
    format!("{:08x}", fastrand::u32(..))
}

impl RunDoc {
    /// Writes the document as pretty JSON, atomically: a temp file in the
    /// same directory renamed over `path`, so a failure leaves no partial file.
    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self).context("serialising the run")?;
        write_atomic(path, text.as_bytes())
    }

    /// Reads and validates a document written by this or another opcost.
    pub fn read_json(path: &Path) -> anyhow::Result<RunDoc> {
        let text =
            fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::from_json(&text)
            .with_context(|| format!("{} is not a usable opcost run document", path.display()))
    }

    /// Parses a document from text, checking the schema version first.
    pub fn from_json(text: &str) -> anyhow::Result<RunDoc> {
        let v: serde_json::Value = serde_json::from_str(text).context("invalid JSON")?;
        match v.get("schema").and_then(serde_json::Value::as_u64) {
            None => bail!("no \"schema\" field: not an opcost run document"),
            Some(s) if s > SCHEMA as u64 => bail!(
                "schema version {s} is newer than this opcost understands ({SCHEMA}); upgrade opcost"
            ),
            Some(s) if s < 1 => bail!("schema version {s} is not valid"),
            Some(_) => {}
        }
        serde_json::from_value(v).context("the document does not have the expected fields")
    }

    /// Measurements of one area, in run order.
    pub fn area<'a>(&'a self, area: &'a str) -> impl Iterator<Item = &'a Measurement> + 'a {
        self.results.iter().filter(move |m| m.area == area)
    }

    /// The areas present, in first-appearance order.
    pub fn areas(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let names = self
            .results
            .iter()
            .map(|m| &m.area)
            .chain(self.findings.iter().map(|f| &f.area));
        for a in names {
            if !out.contains(a) {
                out.push(a.clone());
            }
        }
        out
    }
}

/// Checks up front that `path` can be written (its directory exists and
/// accepts a new file), so a long run does not end in a write error.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if path.is_dir() {
        bail!("{} is a directory; give a file name", path.display());
    }
    if !dir.is_dir() {
        bail!(
            "directory {} does not exist; create it or choose another path",
            dir.display()
        );
    }
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .with_context(|| {
            format!(
                "cannot create files in {}; choose a writable path",
                dir.display()
            )
        })
}

/// Writes `bytes` to `path` through a temp file in the same directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // An ordinary file (0666 less the umask), not tempfile's private 0600.
    let mut tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_missing_and_future_schema() {
        assert!(
            RunDoc::from_json("{}")
                .unwrap_err()
                .to_string()
                .contains("schema")
        );
        let e = RunDoc::from_json(r#"{"schema": 999}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("newer"), "{e}");
        assert!(RunDoc::from_json("not json").is_err());
    }

    #[test]
    fn run_ids_are_8_hex_digits() {
        let id = new_run_id();
        assert_eq!(id.len(), 8);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
