//! The run document: one run's host, results and findings, in the versioned
//! JSON layout of docs/output.md, "The JSON document". JSON is the
//! interchange format; the terminal table, the history and the reports are
//! all made from this.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::harness::{Finding, Measurement, Profile, RunOutcome, Skipped};
use crate::host::Host;

/// The version of the document layout this binary writes and reads.
pub const SCHEMA: u32 = 1;

/// The CPU x CPU matrix of the cache-line round trip (`opcost run
/// --matrix`): the CPUs in topology order and the median round trip of
/// every pair, symmetric (each pair measured once, the lower CPU of the
/// order as the measuring end, where the line lives).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CoreMatrix {
    /// How the turn was taken: `cas`.
    pub write: String,
    /// The CPUs, in topology order (package, node, L3, L2, core).
    pub cpus: Vec<usize>,
    /// How the CPUs were chosen: "one CPU per core", "every CPU".
    pub sampling: String,
    /// `ns[i][j]`: the median round trip between `cpus[i]` and `cpus[j]`
    /// in nanoseconds; None on the diagonal and for pairs not measured.
    pub ns: Vec<Vec<Option<f64>>>,
    /// The time each pair was given (ms).
    pub per_pair_ms: f64,
    /// Where the line lived, and whether that was checked.
    pub line: String,
    /// How long the matrix took (s).
    pub seconds: f64,
    /// True when Ctrl-C stopped it before every pair was measured.
    pub interrupted: bool,
}

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
    /// Seed of the order in which each pass measured the benchmarks
    /// (`run --seed` repeats it); absent in documents made before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// The run time announced before it started, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_s: Option<f64>,
    /// Seconds of the run spent on each benchmark (its rounds with their
    /// preparation and calibration; a group's rounds under the member
    /// that finished first): what the next run's estimate learns from.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub wall_s: std::collections::BTreeMap<String, f64>,
}

/// The largest matrix printed cell by cell; a larger one is summarised
/// per class (the JSON document and the HTML report have every cell).
const MATRIX_PRINTED: usize = 16;

/// One placement class's pairs in a [`CoreMatrix`].
#[derive(Clone, Debug, PartialEq)]
pub struct ClassSpread {
    /// The class.
    pub class: crate::host::PlaceClass,
    /// How many pairs of the matrix have it.
    pub pairs: usize,
    /// The fastest pair's round trip (ns).
    pub min: f64,
    /// The median pair's (ns).
    pub median: f64,
    /// The slowest pair's (ns).
    pub max: f64,
}

impl CoreMatrix {
    /// The measured pairs grouped by their class in `topology`, closest
    /// class first (pairs whose class is unknown are left out).
    pub fn by_class(&self, topology: &crate::host::Topology) -> Vec<ClassSpread> {
        let mut groups: std::collections::BTreeMap<crate::host::PlaceClass, Vec<f64>> =
            std::collections::BTreeMap::new();
        for (i, row) in self.ns.iter().enumerate() {
            for (j, v) in row.iter().enumerate().skip(i + 1) {
                let (Some(v), Some(&a), Some(&b)) = (v, self.cpus.get(i), self.cpus.get(j)) else {
                    continue;
                };
                if let Some(class) = topology.class_of(a, b) {
                    groups.entry(class).or_default().push(*v);
                }
            }
        }
        groups
            .into_iter()
            .map(|(class, mut v)| {
                v.sort_by(f64::total_cmp);
                ClassSpread {
                    class,
                    pairs: v.len(),
                    min: v[0],
                    median: v[v.len() / 2],
                    max: v[v.len() - 1],
                }
            })
            .collect()
    }

    /// The matrix as the terminal report prints it: its pairs per class,
    /// then the cells. Beside the type, so that the suite that measures it
    /// and the report that prints it both reach it from below.
    pub fn to_text(&self, topology: &crate::host::Topology) -> String {
        use std::fmt::Write as _;

        use crate::units::human_ns;
        let m = self;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "core-to-core round trip ({}), {} CPUs ({}), {:.1} ms per pair, {:.1} s{}; the line on {}",
            m.write,
            m.cpus.len(),
            m.sampling,
            m.per_pair_ms,
            m.seconds,
            if m.interrupted { ", interrupted" } else { "" },
            m.line
        );
        for c in m.by_class(topology) {
            let _ = writeln!(
                out,
                "  {:<14} {:>5} pair{} {:>9} median, {} – {}",
                c.class.name(),
                c.pairs,
                if c.pairs == 1 { " " } else { "s" },
                human_ns(c.median),
                human_ns(c.min),
                human_ns(c.max)
            );
        }
        if m.cpus.len() > MATRIX_PRINTED {
            let _ = writeln!(
                out,
                "  ({n}x{n} cells in the JSON document and the HTML report)",
                n = m.cpus.len()
            );
            return out;
        }
        let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        let width =
            m.ns.iter()
                .flatten()
                .map(|v| cell(*v).len())
                .chain(m.cpus.iter().map(|c| c.to_string().len()))
                .max()
                .unwrap_or(1)
                + 1;
        let _ = write!(out, "  {:>w$}", "ns", w = width);
        for c in &m.cpus {
            let _ = write!(out, "{c:>width$}");
        }
        let _ = writeln!(out);
        for (i, row) in m.ns.iter().enumerate() {
            let _ = write!(out, "  {:>width$}", m.cpus.get(i).copied().unwrap_or(0));
            for v in row {
                let _ = write!(out, "{:>width$}", cell(*v));
            }
            let _ = writeln!(out);
        }
        out
    }
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
    /// The far end of `--peer` runs: its address and its own description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerInfo>,
    /// The core-to-core matrix, when the run was asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<CoreMatrix>,
}

/// The host at the other end of a `--peer` run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// The address given with `--peer`, as resolved.
    pub addr: String,
    /// Its machine description as it sent it (kept as JSON, so a peer of
    /// another opcost version still describes itself).
    pub host: serde_json::Value,
}

/// A new random run id: 8 hex digits.
pub fn new_run_id() -> String {
    format!("{:08x}", fastrand::u32(..))
}

impl RunDoc {
    /// A new run on `host`, started at `started`, with no results yet and
    /// the host's run-wide warnings; `cpu` (`--cpu`) is recorded in its
    /// settings too.
    pub fn start(
        host: Host,
        profile: Profile,
        label: Option<String>,
        cpu: Option<usize>,
        started: chrono::DateTime<chrono::Utc>,
    ) -> RunDoc {
        let mut host = host;
        if cpu.is_some() {
            // The pinned CPU is one of the run's settings.
            host.settings.pinned_cpu = cpu;
        }
        RunDoc {
            schema: SCHEMA,
            opcost_version: env!("CARGO_PKG_VERSION").to_string(),
            run: RunInfo {
                id: new_run_id(),
                started: started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                duration_s: 0.0,
                profile,
                label,
                cpu,
                interrupted: false,
                incomplete: false,
                order_seed: None,
                estimate_s: None,
                wall_s: Default::default(),
            },
            warnings: crate::harness::warnings::host_warnings(&host)
                .iter()
                .map(ToString::to_string)
                .collect(),
            host,
            results: Vec::new(),
            skipped: Vec::new(),
            findings: Vec::new(),
            stability: None,
            peer: None,
            matrix: None,
        }
    }

    /// Files what the run produced: its measurements, what it skipped, the
    /// machine's stability, whether it was stopped, and the `findings`
    /// drawn from the measurements (those without a finite value left out).
    pub fn fill(
        &mut self,
        outcome: RunOutcome,
        findings: impl FnOnce(&[Measurement]) -> Vec<Finding>,
    ) {
        self.run.interrupted = outcome.interrupted;
        self.findings = findings(&outcome.measurements);
        self.findings.retain(|f| f.value.is_finite());
        self.results = outcome.measurements;
        self.skipped = outcome.skipped;
        self.stability = outcome.stability;
        // A busy start that did not last: what other programs used of the
        // CPUs during the run says more than the load average at its start,
        // which counts a run that just ended (opcost's own, back to back)
        // for a minute after it.
        if self
            .stability
            .as_ref()
            .is_some_and(|s| s.others_share.is_some() && !s.shared())
        {
            self.warnings
                .retain(|w| !crate::harness::warnings::is_load(w));
        }
    }

    /// Writes the document as pretty JSON to `path` (see [`write_atomic`]:
    /// `-` is standard output, a regular file is replaced atomically, a
    /// device or FIFO is written through), so a failure leaves no partial file.
    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self).context("serialising the run")? + "\n";
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
        // The usual case, straight into the types (several times faster
        // than through a `Value`, which matters for bulk copies); a
        // document that does not parse is read again below, so that its
        // schema version is judged before its fields.
        if let Ok(doc) = serde_json::from_str::<RunDoc>(text)
            && (1..=SCHEMA).contains(&doc.schema)
        {
            return Ok(doc);
        }
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

#[cfg(test)]
impl RunDoc {
    /// A run of `profile` on `host` started now, with no label or CPU: for tests.
    pub(crate) fn started_now(host: Host, profile: Profile) -> RunDoc {
        RunDoc::start(host, profile, None, None, chrono::Utc::now())
    }
}

/// Where an output path leads: standard output, a file to replace
/// atomically, or something to write through (a device, a FIFO).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sink {
    /// `-`, `/dev/stdout` and the like: the process's standard output.
    Stdout,
    /// A regular file (or a path that does not exist yet), after following
    /// symbolic links: written to a temp file beside it and renamed over it.
    Replace(PathBuf),
    /// A character device, a FIFO or a `/dev/fd/N`: opened and written in
    /// place, never replaced.
    Through(PathBuf),
}

/// Most symbolic links followed before giving up (as the kernel's ELOOP).
const MAX_LINKS: usize = 40;

/// True for paths that name one of the process's own descriptors
/// (`/dev/stdout`, `/dev/fd/3`, `/proc/self/fd/1`...): they are written
/// through even when the descriptor is a regular file, so a shell
/// redirection keeps its meaning.
fn is_descriptor_path(path: &Path) -> bool {
    let s = path.to_string_lossy();
    s == "/dev/stdout"
        || s == "/dev/stderr"
        || s.starts_with("/dev/fd/")
        || s.starts_with("/proc/self/fd/")
        || s.starts_with("/proc/thread-self/fd/")
}

/// Decides how `path` is written (see [`Sink`]). Symbolic links are
/// followed, also dangling ones (their target is created). Directories,
/// block devices and sockets are refused.
pub fn sink_of(path: &Path) -> anyhow::Result<Sink> {
    if path.as_os_str() == "-" {
        return Ok(Sink::Stdout);
    }
    if path.as_os_str() == "/dev/stdout" || path.as_os_str() == "/proc/self/fd/1" {
        return Ok(Sink::Stdout);
    }
    if is_descriptor_path(path) {
        return Ok(Sink::Through(path.to_path_buf()));
    }
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let meta = match fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Sink::Replace(p)),
            Err(e) => return Err(e).with_context(|| format!("cannot examine {}", p.display())),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = fs::read_link(&p)
                .with_context(|| format!("cannot read the link {}", p.display()))?;
            p = match p.parent() {
                Some(dir) if target.is_relative() => dir.join(target),
                _ => target,
            };
            if is_descriptor_path(&p) {
                return Ok(Sink::Through(p));
            }
            continue;
        }
        if ft.is_file() {
            return Ok(Sink::Replace(p));
        }
        if ft.is_char_device() || ft.is_fifo() {
            return Ok(Sink::Through(p));
        }
        if ft.is_dir() {
            bail!("{} is a directory; give a file name", path.display());
        }
        let what = if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        bail!(
            "{} is {what}; opcost writes only to files, character devices, FIFOs and -",
            path.display()
        );
    }
    bail!("{}: too many levels of symbolic links", path.display())
}

/// The directory a new file at `path` goes in.
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks up front that `path` can be written (its directory exists and
/// accepts a new file, or the device or FIFO is writable), so a long run
/// does not end in a write error. `-` is standard output and always passes.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    match sink_of(path)? {
        Sink::Stdout => Ok(()),
        Sink::Through(p) => nix::unistd::access(&p, nix::unistd::AccessFlags::W_OK)
            .with_context(|| format!("{} is not writable", p.display())),
        Sink::Replace(p) => {
            let dir = dir_of(&p);
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
    }
}

/// Ignores SIGPIPE while alive, so that writing into a closed pipe or FIFO
/// is an `EPIPE` error that is reported instead of a silent death.
struct IgnoreSigpipe(libc::sighandler_t);

impl IgnoreSigpipe {
    fn new() -> IgnoreSigpipe {
        // SAFETY: changing a signal's disposition has no preconditions; the
        // previous one is restored on drop.
        IgnoreSigpipe(unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) })
    }
}

impl Drop for IgnoreSigpipe {
    fn drop(&mut self) {
        if self.0 != libc::SIG_ERR {
            // SAFETY: as above, restoring the disposition found at creation.
            unsafe {
                libc::signal(libc::SIGPIPE, self.0);
            }
        }
    }
}

/// Writes `bytes` to `path`: `-` is standard output, a regular file (or a
/// missing path) is replaced atomically, a device or FIFO is written
/// through, a symbolic link is followed. Every write error is returned.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

/// Writes what `produce` emits to `path`, as [`write_atomic`] does. When
/// `produce` or the writing fails, a file that existed is left as it was
/// and no temp file remains.
pub fn write_with(
    path: &Path,
    produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let shown = if path.as_os_str() == "-" {
        "standard output".to_string()
    } else {
        path.display().to_string()
    };
    let err = |e: std::io::Error| anyhow::Error::new(e).context(format!("writing {shown}"));
    match sink_of(path)? {
        Sink::Stdout => {
            let _guard = IgnoreSigpipe::new();
            let mut out = std::io::stdout().lock();
            produce(&mut out).and_then(|()| out.flush()).map_err(err)
        }
        Sink::Through(p) => {
            let _guard = IgnoreSigpipe::new();
            let mut f = fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .with_context(|| format!("opening {} for writing", p.display()))?;
            produce(&mut f).and_then(|()| f.flush()).map_err(err)
        }
        Sink::Replace(p) => {
            let dir = dir_of(&p);
            // The mode of the file it replaces, else an ordinary file (0666
            // less the umask), not tempfile's private 0600.
            let mode = fs::metadata(&p).map_or(0o666, |m| m.permissions().mode() & 0o7777);
            let mut tmp = tempfile::Builder::new()
                .prefix(".opcost-")
                .permissions(fs::Permissions::from_mode(mode))
                .tempfile_in(dir)
                .with_context(|| format!("cannot create a file in {}", dir.display()))?;
            // The data reaches the disk before the rename, so a crash or a
            // full disk cannot leave a short file in place of the old one.
            produce(&mut tmp)
                .and_then(|()| tmp.flush())
                .and_then(|()| tmp.as_file().sync_all())
                .map_err(err)?;
            tmp.persist(&p).map_err(|e| err(e.error))?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_start_is_warned_only_when_the_run_shared_the_machine() {
        use crate::harness::canary::{Interference, PhaseCounts, Stability};
        let filled = |others: Option<f64>| {
            let host = crate::host::Host {
                loadavg: Some([1.1, 0.5, 0.2]),
                logical_cpus: 2,
                ..Default::default()
            };
            let mut d = RunDoc::started_now(host, crate::harness::Profile::Quick);
            assert!(
                d.warnings
                    .iter()
                    .any(|w| w.starts_with("load average 1.10 on 2 CPUs"))
            );
            let i = Interference {
                others_share: others,
                ..Interference::default()
            };
            let counts = PhaseCounts {
                rounds: 10,
                ..Default::default()
            };
            let outcome = RunOutcome {
                stability: Stability::of(&[1000.0; 20], &[], counts, &i),
                ..Default::default()
            };
            d.fill(outcome, |_| Vec::new());
            d.warnings
                .iter()
                .any(|w| crate::harness::warnings::is_load(w))
        };
        // the load was the last run's: nobody else used the CPUs during this one
        assert!(!filled(Some(0.0)));
        // others did use them, or the run could not tell
        assert!(filled(Some(0.4)));
        assert!(filled(None));
    }

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
    fn an_old_documents_findings_load_with_every_unit_label_and_write_back_unchanged() {
        // The shipped reference run, written before findings had a typed unit.
        let mut old: serde_json::Value =
            serde_json::from_str(crate::analysis::score::reference_json()).unwrap();
        let labels = crate::units::LABELS;
        let template = old["findings"][0].clone();
        old["findings"] = labels
            .iter()
            .map(|l| {
                let mut f = template.clone();
                f["unit"] = (*l).into();
                f
            })
            .collect();
        let doc = RunDoc::from_json(&old.to_string()).unwrap();
        let read: Vec<&str> = doc.findings.iter().map(|f| f.unit.label()).collect();
        assert_eq!(read, labels);
        assert_eq!(
            serde_json::to_value(&doc.findings).unwrap(),
            old["findings"]
        );
        let unknown = old.to_string().replace("\"ns/1000fd\"", "\"furlongs\"");
        assert!(RunDoc::from_json(&unknown).is_err());
    }

    #[test]
    fn run_ids_are_8_hex_digits() {
        let id = new_run_id();
        assert_eq!(id.len(), 8);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    }

    fn read(p: &Path) -> String {
        fs::read_to_string(p).unwrap()
    }

    /// Names in `dir` (to see that no temp file was left behind).
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_regular_file_is_replaced_and_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        fs::write(&p, "old contents, longer than the new").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(sink_of(&p).unwrap(), Sink::Replace(p.clone()));
        write_atomic(&p, b"new").unwrap();
        assert_eq!(read(&p), "new");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(names(dir.path()), ["out.json"]);
    }

    #[test]
    fn a_missing_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.json");
        check_writable(&p).unwrap();
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(read(&p), "{}");
        assert!(fs::metadata(&p).unwrap().is_file());
        assert_eq!(names(dir.path()), ["new.json"]);
    }

    #[test]
    fn a_symlink_is_followed_and_its_target_replaced() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        let target = dir.path().join("real/data.json");
        fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real/data.json", &link).unwrap();
        // A chain of two links, the second relative to the first's directory.
        let link2 = dir.path().join("link2.json");
        std::os::unix::fs::symlink(&link, &link2).unwrap();
        write_atomic(&link2, b"new").unwrap();
        let is_link = |p: &Path| fs::symlink_metadata(p).unwrap().file_type().is_symlink();
        assert!(is_link(&link) && is_link(&link2));
        assert_eq!(read(&target), "new");
        assert_eq!(names(&dir.path().join("real")), ["data.json"]);
        // A dangling link: its target is created, the link stays.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink("real/later.json", &dangling).unwrap();
        write_atomic(&dangling, b"made").unwrap();
        assert!(is_link(&dangling));
        assert_eq!(read(&dir.path().join("real/later.json")), "made");
        // A loop is an error, not a hang.
        let a = dir.path().join("loop-a");
        let b = dir.path().join("loop-b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let e = write_atomic(&a, b"x").unwrap_err().to_string();
        assert!(e.contains("symbolic links"), "{e}");
    }

    #[test]
    fn a_fifo_is_written_through_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert_eq!(sink_of(&fifo).unwrap(), Sink::Through(fifo.clone()));
        check_writable(&fifo).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || read(&fifo))
        };
        write_atomic(&fifo, b"through the fifo").unwrap();
        assert_eq!(reader.join().unwrap(), "through the fifo");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), ["pipe"]);
    }

    #[test]
    fn a_fifo_whose_reader_left_is_an_epipe_error() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let reader = {
            let fifo = fifo.clone();
            // Opens, reads a byte, closes: the writer then meets EPIPE.
            std::thread::spawn(move || {
                let mut f = fs::File::open(&fifo).unwrap();
                let mut b = [0u8; 1];
                std::io::Read::read_exact(&mut f, &mut b).unwrap();
            })
        };
        let big = vec![b'x'; 4 << 20];
        let e = write_atomic(&fifo, &big).unwrap_err();
        reader.join().unwrap();
        let io = e.chain().find_map(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::BrokenPipe),
            "{e:#}"
        );
    }

    #[test]
    fn dev_null_is_written_through_and_stays_a_device() {
        let null = Path::new("/dev/null");
        assert_eq!(sink_of(null).unwrap(), Sink::Through(null.to_path_buf()));
        write_atomic(null, b"discarded").unwrap();
        assert!(
            fs::symlink_metadata(null)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn dev_full_is_an_error_and_stays_a_device() {
        let full = Path::new("/dev/full");
        check_writable(full).unwrap();
        let e = write_atomic(full, b"{}").unwrap_err();
        let io = e.chain().find_map(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.and_then(std::io::Error::raw_os_error),
            Some(libc::ENOSPC),
            "{e:#}"
        );
        assert!(format!("{e:#}").contains("/dev/full"), "{e:#}");
        assert!(
            fs::symlink_metadata(full)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn dash_and_dev_stdout_are_standard_output() {
        assert_eq!(sink_of(Path::new("-")).unwrap(), Sink::Stdout);
        assert_eq!(sink_of(Path::new("/dev/stdout")).unwrap(), Sink::Stdout);
        check_writable(Path::new("-")).unwrap();
        assert_eq!(
            sink_of(Path::new("/dev/fd/3")).unwrap(),
            Sink::Through(PathBuf::from("/dev/fd/3"))
        );
    }

    #[test]
    fn directories_and_unwritable_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_atomic(dir.path(), b"x").unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        // A directory that takes no new file: mode 0555, or for root (whom
        // modes do not stop) /proc, where nobody can create files.
        let ro = dir.path().join("ro");
        fs::create_dir(&ro).unwrap();
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
        // SAFETY: geteuid has no preconditions.
        let target = if unsafe { libc::geteuid() } == 0 {
            PathBuf::from("/proc/opcost-cannot-be-created.json")
        } else {
            ro.join("out.json")
        };
        assert!(check_writable(&target).is_err());
        let e = write_atomic(&target, b"x").unwrap_err();
        assert!(format!("{e:#}").contains("cannot create a file"), "{e:#}");
        assert!(!target.exists());
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn an_existing_file_is_intact_after_a_failed_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("keep.json");
        fs::write(&p, "precious").unwrap();
        let e = write_with(&p, |w| {
            w.write_all(b"half of the new cont")?;
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        })
        .unwrap_err();
        assert!(format!("{e:#}").contains("keep.json"), "{e:#}");
        assert_eq!(read(&p), "precious");
        assert_eq!(names(dir.path()), ["keep.json"], "no temp file left");
    }
}
