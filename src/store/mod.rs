//! The history: every run, kept in one SQLite file so that machines,
//! kernels and settings can be compared later.
//!
//! Why it is shaped this way:
//! - The run document is stored whole (`runs.doc`) and is what [`Store::load`]
//!   returns, so run → save → load gives back an equal document; the other
//!   tables only index it (see [`schema`]).
//! - A run is written while it happens, as hyperfine exports after every
//!   benchmark: [`Store::begin`] records it as incomplete, each result is
//!   kept as it completes ([`Store::put_partial`]), and [`Store::finish`]
//!   replaces all that with the whole document in one transaction. A run
//!   killed midway (a panic, the OOM killer, SIGKILL) keeps what it had
//!   measured, marked incomplete in `runs`, `show` and `compare`.
//! - A finished run is written in one transaction: an interrupted save leaves nothing.
//! - Several opcost processes may share a history: WAL journal and a busy
//!   timeout, and migrations run inside an immediate transaction that
//!   re-reads the version, so two first uses cannot both migrate.
//! - A file that is not an opcost history, a history made by a newer opcost
//!   or a corrupt one is refused with an error that says what to do, and is
//!   never written to.

mod history;
pub mod location;
pub mod postgres;
pub mod schema;

pub use history::History;
pub use location::{Location, PgUrl};

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params,
};

use crate::document::RunDoc;
use crate::harness::Measurement;
use crate::units::BaseUnit;

/// How long a write waits for another opcost process holding the lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The history's path: `--db` when given, else
/// `$XDG_DATA_HOME/opcost/results.db`, else `~/.local/share/opcost/results.db`.
pub fn default_path(db: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = db {
        return Ok(p.to_path_buf());
    }
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let base = match (non_empty("XDG_DATA_HOME"), non_empty("HOME")) {
        (Some(x), _) if Path::new(&x).is_absolute() => PathBuf::from(x),
        (_, Some(h)) => Path::new(&h).join(".local/share"),
        _ => bail!(
            "cannot tell where to keep the history: neither XDG_DATA_HOME nor HOME is set; pass --db PATH"
        ),
    };
    Ok(base.join("opcost").join("results.db"))
}

/// One line of `opcost runs`: a saved run without its results.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    /// The run id (8 hex digits).
    pub id: String,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// The host name.
    pub hostname: String,
    /// The CPU model, when the host block names it.
    pub cpu_model: Option<String>,
    /// The profile name.
    pub profile: String,
    /// The user's label.
    pub label: Option<String>,
    /// Number of measurements.
    pub n_results: i64,
    /// Number of skipped or failed benchmarks.
    pub n_skipped: i64,
    /// True when the run was stopped before the end.
    pub interrupted: bool,
    /// False while a run is being written, and for a run that died before its end.
    pub complete: bool,
    /// The file it was imported from, for imported runs.
    pub source: Option<String>,
}

/// Which runs a trend reads: complete runs, optionally of one host, from
/// a start time on, with a label.
#[derive(Clone, Debug, Default)]
pub struct TrendFilter {
    /// Only this host.
    pub host: Option<String>,
    /// Only runs started at or after this time (RFC 3339, or a date prefix).
    pub since: Option<String>,
    /// Only runs with this label.
    pub label: Option<String>,
}

/// A run as a trend reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct TrendRun {
    /// The run id.
    pub id: String,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// The host name.
    pub hostname: String,
    /// The profile name.
    pub profile: String,
    /// The host block, JSON.
    pub host: String,
}

/// One result as a trend reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrendValue {
    /// Index of its run in [`TrendRows::runs`].
    pub run: usize,
    /// Index of its benchmark in [`TrendRows::benches`].
    pub bench: usize,
    /// The median (base unit).
    pub median: f64,
    /// The 95% interval (NaN when not stored).
    pub ci_low: f64,
    /// The 95% interval (NaN when not stored).
    pub ci_high: f64,
}

/// What a trend reads from a history: the runs in start order, the
/// benchmarks (id, unit) and their results, read from the indexed columns
/// without parsing any run document.
#[derive(Clone, Debug, Default)]
pub struct TrendRows {
    /// The runs, oldest first.
    pub runs: Vec<TrendRun>,
    /// The benchmarks as (id, unit).
    pub benches: Vec<(String, BaseUnit)>,
    /// The results.
    pub values: Vec<TrendValue>,
    run_index: std::collections::HashMap<String, usize>,
    bench_index: std::collections::HashMap<(String, String), Option<usize>>,
}

impl TrendRows {
    /// Adds a run (in start order).
    pub(crate) fn add_run(&mut self, run: TrendRun) {
        self.run_index.insert(run.id.clone(), self.runs.len());
        self.runs.push(run);
    }

    /// Adds a result of a run added before, when `keep` selects its
    /// benchmark, its unit is a base unit and it has a median.
    pub(crate) fn add_value(
        &mut self,
        run_id: &str,
        bench: (String, String),
        stats: [Option<f64>; 3],
        keep: &dyn Fn(&str) -> bool,
    ) {
        let (Some(&run), [Some(median), lo, hi]) = (self.run_index.get(run_id), stats) else {
            return;
        };
        let next = self.benches.len();
        let b = match self.bench_index.get(&bench) {
            Some(b) => *b,
            None => {
                let unit = BaseUnit::from_label(&bench.1).filter(|_| keep(&bench.0));
                let b = unit.map(|_| next);
                if let Some(unit) = unit {
                    self.benches.push((bench.0.clone(), unit));
                }
                self.bench_index.insert(bench, b);
                b
            }
        };
        if let Some(bench) = b {
            self.values.push(TrendValue {
                run,
                bench,
                median,
                ci_low: lo.unwrap_or(f64::NAN),
                ci_high: hi.unwrap_or(f64::NAN),
            });
        }
    }
}

/// What [`Store::save`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    /// The run is now in the history.
    New,
    /// An identical run with the same id was already there; nothing changed.
    AlreadyPresent,
}

/// A saved run with the same id but different content.
#[derive(Debug, thiserror::Error)]
#[error(
    "a different run with id {0} is already in the history; nothing was changed (run ids are random: the other run is not this one)"
)]
pub struct IdConflict(pub String);

/// The runs whose id starts with a prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prefix {
    /// No run.
    None,
    /// Exactly one run: its id.
    One(String),
    /// Several runs: their ids.
    Many(Vec<String>),
}

impl Prefix {
    /// The answer for the ids found.
    pub fn of(ids: Vec<String>) -> Prefix {
        match ids.len() {
            0 => Prefix::None,
            1 => Prefix::One(ids.into_iter().next().unwrap_or_default()),
            _ => Prefix::Many(ids),
        }
    }
}

/// A run given to `save_all`.
#[derive(Clone, Debug)]
pub struct Incoming {
    /// The run.
    pub doc: RunDoc,
    /// The file it was imported from, if any.
    pub source: Option<String>,
    /// Its JSON as a history stored it, when at hand: known to load back
    /// equal, so it is neither made nor checked again (a bulk copy then
    /// parses each document once).
    pub json: Option<String>,
}

impl Incoming {
    /// A run with no source and no stored JSON.
    pub fn new(doc: RunDoc) -> Incoming {
        Incoming {
            doc,
            source: None,
            json: None,
        }
    }

    /// The document and its JSON, made and checked when not at hand.
    pub(crate) fn into_parts(self) -> anyhow::Result<Parts> {
        let json = match self.json {
            Some(j) => j,
            None => checked_json(&self.doc)?,
        };
        Ok((self.doc, self.source, json))
    }
}

/// A run given to `save_all` made ready to write: its document, its source
/// and its checked JSON.
pub(crate) type Parts = (RunDoc, Option<String>, String);

/// What became of one run given to `save_all`.
#[derive(Debug)]
pub struct Outcome {
    /// The run's id (empty when its document could not be read).
    pub id: String,
    /// Saved, already present, or why not.
    pub result: anyhow::Result<Saved>,
}

/// An open history.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens the history at `path`, creating it (and its directory) on first
    /// use and migrating it to the current schema.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        let shown = path.display();
        if path.is_dir() {
            bail!("history {shown} is a directory; pass --db with a file path");
        }
        if path.exists() {
            check_header(path)?;
        } else if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!(
                    "cannot create the directory {} for the history; pass --db with a writable path",
                    dir.display()
                )
            })?;
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| explain(e, path))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| explain(e, path))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.identify()?;
        store
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(|e| explain(e, path))?;
        store
            .conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(|e| explain(e, path))?;
        // Results are written as they come, between rounds: with WAL,
        // NORMAL makes a commit an append to the log (no fsync each time)
        // and still survives a crash of opcost; only a power cut can lose
        // the last commits.
        store
            .conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| explain(e, path))?;
        store.migrate()?;
        Ok(store)
    }

    /// The file this history lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open history.
    pub fn version(&self) -> anyhow::Result<i64> {
        self.conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| explain(e, &self.path))
    }

    /// Refuses, before anything is written, a database that is not an
    /// opcost history or was made by a newer opcost.
    fn identify(&self) -> anyhow::Result<()> {
        let p = &self.path;
        // Both reads in one read transaction: another opcost creating the
        // schema at this moment must be seen wholly or not at all.
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(|e| explain(e, p))?;
        let objects: i64 = tx
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| explain(e, p))?;
        let app: i32 = tx
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .map_err(|e| explain(e, p))?;
        drop(tx);
        if app != schema::APPLICATION_ID && !(app == 0 && objects == 0) {
            bail!(
                "{} is an SQLite database but not an opcost history (it holds other data); nothing was changed. Pass --db with another path",
                p.display()
            );
        }
        let version = self.version()?;
        if version > schema::latest() {
            bail!(
                "the history {} has schema version {version}, newer than this opcost understands ({}); upgrade opcost, or pass --db with another path. Nothing was changed",
                p.display(),
                schema::latest()
            );
        }
        Ok(())
    }

    /// Applies the migrations this history lacks, each version in the same
    /// immediate transaction as the re-read of the version.
    fn migrate(&mut self) -> anyhow::Result<()> {
        let p = self.path.clone();
        if self.version()? == schema::latest() {
            return Ok(());
        }
        let tx = immediate(&mut self.conn, &p)?;
        let mut version: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| explain(e, &p))?;
        while version < schema::latest() {
            let sql = schema::MIGRATIONS[version as usize];
            tx.execute_batch(sql)
                .map_err(|e| explain(e, &p))
                .with_context(|| format!("migrating the history to schema {}", version + 1))?;
            version += 1;
        }
        tx.pragma_update(None, "application_id", schema::APPLICATION_ID)
            .map_err(|e| explain(e, &p))?;
        tx.pragma_update(None, "user_version", version)
            .map_err(|e| explain(e, &p))?;
        tx.commit().map_err(|e| explain(e, &p))?;
        Ok(())
    }

    /// Saves a run in one transaction. An identical run already saved is
    /// left alone ([`Saved::AlreadyPresent`]); a different run with the same
    /// id is an [`IdConflict`]. `source` names the file of an imported run.
    pub fn save(&mut self, doc: &RunDoc, source: Option<&str>) -> anyhow::Result<Saved> {
        // Only what loads back equal is stored (JSON has no NaN or infinity).
        let text = checked_json(doc)?;
        let p = self.path.clone();
        let tx = immediate(&mut self.conn, &p)?;
        let saved = save_in(&tx, doc, &text, source, &p)?;
        tx.commit().map_err(|e| explain(e, &p))?;
        Ok(saved)
    }

    /// Saves every run `docs` yields, in one transaction: all are written
    /// or, on a database error, none. A run already there with the same
    /// content is [`Saved::AlreadyPresent`]; a different one with the same
    /// id, or a document that could not be read (an `Err` item), is a failed
    /// [`Outcome`] and the others are still saved.
    pub fn save_all(
        &mut self,
        docs: &mut dyn Iterator<Item = anyhow::Result<Incoming>>,
    ) -> anyhow::Result<Vec<Outcome>> {
        let p = self.path.clone();
        let tx = immediate(&mut self.conn, &p)?;
        let mut out = Vec::new();
        for item in docs {
            let (doc, source, text) = match item.and_then(Incoming::into_parts) {
                Ok(x) => x,
                Err(e) => {
                    out.push(Outcome {
                        id: String::new(),
                        result: Err(e),
                    });
                    continue;
                }
            };
            // A database error ends it all; a conflict is this run's outcome.
            let result = match save_in(&tx, &doc, &text, source.as_deref(), &p) {
                Err(e) if e.downcast_ref::<IdConflict>().is_none() => return Err(e),
                r => r.map_err(|e| e.context(format!("run {}", doc.run.id))),
            };
            out.push(Outcome {
                id: doc.run.id.clone(),
                result,
            });
        }
        tx.commit().map_err(|e| explain(e, &p))?;
        Ok(out)
    }

    /// Records a run that is starting, marked incomplete, with no results
    /// yet; draws a new id when its random one is taken (changing `doc.run.id`).
    pub fn begin(&mut self, doc: &mut RunDoc) -> anyhow::Result<()> {
        let p = self.path.clone();
        for _ in 0..16 {
            let tx = immediate(&mut self.conn, &p)?;
            let taken: bool = tx
                .query_row(
                    "SELECT count(*) > 0 FROM runs WHERE id = ?1",
                    [&doc.run.id],
                    |r| r.get(0),
                )
                .map_err(|e| explain(e, &p))?;
            if taken {
                doc.run.id = crate::document::new_run_id();
                continue;
            }
            let text = serde_json::to_string(doc).context("serialising the run")?;
            insert_run(&tx, doc, &text, None, false, &p)?;
            tx.commit().map_err(|e| explain(e, &p))?;
            return Ok(());
        }
        bail!("could not find a free run id in {}", p.display())
    }

    /// Keeps the result so far of the benchmark at position `seq` of a run
    /// begun with [`Store::begin`], replacing the one kept before.
    pub fn put_partial(&mut self, run_id: &str, seq: usize, m: &Measurement) -> anyhow::Result<()> {
        let text = serde_json::to_string(m).context("serialising a result")?;
        self.conn
            .execute(
                "INSERT OR REPLACE INTO partial_results (run_id, seq, doc) VALUES (?1, ?2, ?3)",
                params![run_id, seq as i64, text],
            )
            .map_err(|e| explain(e, &self.path))?;
        Ok(())
    }

    /// Replaces a run begun with [`Store::begin`] by its whole document, in
    /// one transaction, and marks it complete.
    pub fn finish(&mut self, doc: &RunDoc) -> anyhow::Result<()> {
        let text = checked_json(doc)?;
        let p = self.path.clone();
        let tx = immediate(&mut self.conn, &p)?;
        tx.execute("DELETE FROM runs WHERE id = ?1", [&doc.run.id])
            .map_err(|e| explain(e, &p))?;
        insert_run(&tx, doc, &text, None, true, &p)?;
        tx.commit().map_err(|e| explain(e, &p))?;
        Ok(())
    }
}

/// An immediate transaction (it takes the write lock at once) on the
/// history at `path`.
fn immediate<'c>(conn: &'c mut Connection, path: &Path) -> anyhow::Result<Transaction<'c>> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| explain(e, path))
}

/// The document as JSON, refused when it does not load back equal (JSON
/// has no NaN or infinity).
pub(crate) fn checked_json(doc: &RunDoc) -> anyhow::Result<String> {
    let text = serde_json::to_string(doc).context("serialising the run")?;
    match RunDoc::from_json(&text) {
        Ok(back) if back == *doc => Ok(text),
        _ => bail!(
            "run {} holds a value JSON cannot keep exactly (NaN or infinity); it was not saved",
            doc.run.id
        ),
    }
}

/// Saves a run inside an open transaction unless a run with its id is there.
fn save_in(
    tx: &rusqlite::Transaction<'_>,
    doc: &RunDoc,
    text: &str,
    source: Option<&str>,
    p: &Path,
) -> anyhow::Result<Saved> {
    let old: Option<(String, bool)> = tx
        .query_row(
            "SELECT doc, complete FROM runs WHERE id = ?1",
            [&doc.run.id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(|e| explain(e, p))?;
    if let Some((old, complete)) = old {
        return match RunDoc::from_json(&old) {
            Ok(o) if o == *doc && complete => Ok(Saved::AlreadyPresent),
            _ => Err(IdConflict(doc.run.id.clone()).into()),
        };
    }
    insert_run(tx, doc, text, source, true, p)?;
    Ok(Saved::New)
}

/// Inserts the run row and its index rows (results, rounds, findings).
fn insert_run(
    tx: &rusqlite::Transaction<'_>,
    doc: &RunDoc,
    text: &str,
    source: Option<&str>,
    complete: bool,
    p: &Path,
) -> anyhow::Result<()> {
    let host = serde_json::to_value(&doc.host).context("serialising the host")?;
    tx.execute(
        "INSERT INTO runs (id, started, duration_s, profile, label, hostname, cpu_model,
            opcost_version, doc_schema, interrupted, n_results, n_skipped, saved, source,
            host, doc, complete)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        params![
            doc.run.id,
            doc.run.started,
            finite(doc.run.duration_s).unwrap_or(0.0),
            doc.run.profile.name(),
            doc.run.label,
            doc.host.hostname,
            cpu_model(&host),
            doc.opcost_version,
            doc.schema,
            doc.run.interrupted,
            doc.results.len() as i64,
            doc.skipped.len() as i64,
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            source,
            host.to_string(),
            text,
            complete,
        ],
    )
    .map_err(|e| explain(e, p))?;
    insert_results(tx, doc, p)?;
    insert_findings(tx, doc, p)
}

/// Inserts the index rows of a run's results and their rounds.
fn insert_results(tx: &rusqlite::Transaction<'_>, doc: &RunDoc, p: &Path) -> anyhow::Result<()> {
    let mut ins = tx
        .prepare(
            "INSERT INTO results (run_id, seq, bench_id, area, unit, params, median,
                ci_low, ci_high, p5, p95, min, max, cv, n_samples, noisy, n_rounds)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )
        .map_err(|e| explain(e, p))?;
    let mut ins_round = tx
        .prepare(
            "INSERT INTO rounds (run_id, seq, round, bench_id, median, n_samples, at_s,
                canary, slow, used, steal_ms, nivcsw, migrations, load)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )
        .map_err(|e| explain(e, p))?;
    for (i, m) in doc.results.iter().enumerate() {
        let params_json = serde_json::to_string(&m.params).context("serialising params")?;
        ins.execute(params![
            doc.run.id,
            i as i64,
            m.id,
            m.area,
            m.unit.label(),
            params_json,
            finite(m.median),
            finite(m.ci_low),
            finite(m.ci_high),
            finite(m.p5),
            finite(m.p95),
            finite(m.min),
            finite(m.max),
            finite(m.cv),
            m.samples.len() as i64,
            m.noisy,
            m.rounds.len() as i64,
        ])
        .map_err(|e| explain(e, p))?;
        for (k, r) in m.rounds.iter().enumerate() {
            ins_round
                .execute(params![
                    doc.run.id,
                    i as i64,
                    k as i64,
                    m.id,
                    finite(r.median),
                    r.n as i64,
                    finite(r.at_s),
                    r.canary.and_then(finite),
                    r.slow,
                    r.used,
                    r.steal_ms.and_then(finite),
                    r.nivcsw.map(|v| v as i64),
                    r.migrations.map(|v| v as i64),
                    r.load.and_then(finite),
                ])
                .map_err(|e| explain(e, p))?;
        }
    }
    Ok(())
}

/// Inserts the index rows of a run's findings.
fn insert_findings(tx: &rusqlite::Transaction<'_>, doc: &RunDoc, p: &Path) -> anyhow::Result<()> {
    let mut ins = tx
        .prepare(
            "INSERT INTO findings (run_id, seq, area, text, value, unit)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(|e| explain(e, p))?;
    for (i, f) in doc.findings.iter().enumerate() {
        ins.execute(params![
            doc.run.id,
            i as i64,
            f.area,
            f.text,
            finite(f.value),
            f.unit.label()
        ])
        .map_err(|e| explain(e, p))?;
    }
    Ok(())
}

/// Saves a fresh run with `save`; when its random id is taken (an
/// [`IdConflict`]), draws new ids until one is free (changing
/// `doc.run.id`). `place` names the history in the error.
pub fn save_with_free_id(
    doc: &mut RunDoc,
    place: &str,
    mut save: impl FnMut(&RunDoc) -> anyhow::Result<Saved>,
) -> anyhow::Result<()> {
    for _ in 0..16 {
        match save(doc) {
            Ok(_) => return Ok(()),
            Err(e) if e.downcast_ref::<IdConflict>().is_some() => {
                doc.run.id = crate::document::new_run_id();
            }
            Err(e) => return Err(e),
        }
    }
    bail!("could not find a free run id in {place}")
}

impl Store {
    /// Saves a fresh run; when its random id is taken, draws new ids until
    /// one is free (changing `doc.run.id`).
    pub fn save_new(&mut self, doc: &mut RunDoc) -> anyhow::Result<()> {
        let place = self.path.display().to_string();
        save_with_free_id(doc, &place, |d| self.save(d, None))
    }

    /// Loads the run with exactly this id.
    pub fn load(&self, id: &str) -> anyhow::Result<RunDoc> {
        self.load_with_json(id).map(|(d, _)| d)
    }

    /// Loads the run with exactly this id, and for a complete run the
    /// JSON it is stored as.
    pub fn load_with_json(&self, id: &str) -> anyhow::Result<(RunDoc, Option<String>)> {
        let row: Option<(String, bool)> = self
            .conn
            .query_row("SELECT doc, complete FROM runs WHERE id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(|e| explain(e, &self.path))?;
        let (text, complete) =
            row.ok_or_else(|| anyhow!("no run {id} in {}", self.path.display()))?;
        let unreadable = || {
            format!(
                "run {id} in {} cannot be read by this opcost",
                self.path.display()
            )
        };
        let mut doc = RunDoc::from_json(&text).with_context(unreadable)?;
        if !complete {
            // A run still being written, or one that died: what it had measured.
            let mut st = self
                .conn
                .prepare("SELECT doc FROM partial_results WHERE run_id = ?1 ORDER BY seq")
                .map_err(|e| explain(e, &self.path))?;
            let parts = st
                .query_map([id], |r| r.get::<_, String>(0))
                .map_err(|e| explain(e, &self.path))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| explain(e, &self.path))?;
            for p in parts {
                let m: Measurement = serde_json::from_str(&p).with_context(unreadable)?;
                doc.results.push(m);
            }
            doc.run.incomplete = true;
        }
        Ok((doc, complete.then_some(text)))
    }

    /// Saved runs, newest first (by start time), optionally of one host;
    /// `limit` 0 means all.
    pub fn list(&self, host: Option<&str>, limit: usize) -> anyhow::Result<Vec<RunRow>> {
        let limit = if limit == 0 { -1 } else { limit as i64 };
        let mut st = self
            .conn
            .prepare(
                "SELECT id, started, hostname, cpu_model, profile, label,
                        CASE WHEN complete THEN n_results
                             ELSE (SELECT count(*) FROM partial_results p WHERE p.run_id = runs.id)
                        END,
                        n_skipped, interrupted, source, complete
                 FROM runs WHERE ?1 IS NULL OR hostname = ?1
                 ORDER BY started DESC, rowid DESC LIMIT ?2",
            )
            .map_err(|e| explain(e, &self.path))?;
        let rows = st
            .query_map(params![host, limit], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    started: r.get(1)?,
                    hostname: r.get(2)?,
                    cpu_model: r.get(3)?,
                    profile: r.get(4)?,
                    label: r.get(5)?,
                    n_results: r.get(6)?,
                    n_skipped: r.get(7)?,
                    interrupted: r.get(8)?,
                    source: r.get(9)?,
                    complete: r.get(10)?,
                })
            })
            .map_err(|e| explain(e, &self.path))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| explain(e, &self.path))
    }

    /// The id of the latest run (by start time), of one host if given.
    pub fn latest(&self, host: Option<&str>) -> anyhow::Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT id FROM runs WHERE ?1 IS NULL OR hostname = ?1
                 ORDER BY started DESC, rowid DESC LIMIT 1",
                [host],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| explain(e, &self.path))
    }

    /// The ids of the latest complete run of each host (with this label,
    /// when given), by host name.
    pub fn latest_per_host(&self, label: Option<&str>) -> anyhow::Result<Vec<String>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id FROM (
                    SELECT id, hostname, row_number() OVER (
                        PARTITION BY hostname ORDER BY started DESC, rowid DESC) AS k
                    FROM runs WHERE complete AND (?1 IS NULL OR label = ?1)
                 ) WHERE k = 1 ORDER BY hostname",
            )
            .map_err(|e| explain(e, &self.path))?;
        st.query_map([label], |r| r.get(0))
            .map_err(|e| explain(e, &self.path))?
            .collect::<Result<Vec<String>, _>>()
            .map_err(|e| explain(e, &self.path))
    }

    /// The runs whose id starts with `prefix` (hex digits, any case).
    pub fn find_prefix(&self, prefix: &str) -> anyhow::Result<Prefix> {
        let prefix = prefix.to_ascii_lowercase();
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(Prefix::None);
        }
        let mut st = self
            .conn
            .prepare("SELECT id FROM runs WHERE substr(id, 1, ?2) = ?1 ORDER BY id LIMIT 11")
            .map_err(|e| explain(e, &self.path))?;
        let ids = st
            .query_map(params![prefix, prefix.len() as i64], |r| r.get(0))
            .map_err(|e| explain(e, &self.path))?
            .collect::<Result<Vec<String>, _>>()
            .map_err(|e| explain(e, &self.path))?;
        Ok(Prefix::of(ids))
    }

    /// The complete runs `filter` selects, oldest first, and those of
    /// their results whose benchmark `keep` selects.
    pub fn trend_rows(
        &self,
        filter: &TrendFilter,
        keep: &dyn Fn(&str) -> bool,
    ) -> anyhow::Result<TrendRows> {
        const WHERE: &str = "u.complete AND (?1 IS NULL OR u.hostname = ?1)
            AND (?2 IS NULL OR u.started >= ?2) AND (?3 IS NULL OR u.label = ?3)";
        let args = params![filter.host, filter.since, filter.label];
        let mut rows = TrendRows::default();
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT id, started, hostname, profile, host FROM runs u
                 WHERE {WHERE} ORDER BY started, rowid"
            ))
            .map_err(|e| explain(e, &self.path))?;
        let mut q = st.query(args).map_err(|e| explain(e, &self.path))?;
        while let Some(r) = q.next().map_err(|e| explain(e, &self.path))? {
            rows.add_run(TrendRun {
                id: r.get(0)?,
                started: r.get(1)?,
                hostname: r.get(2)?,
                profile: r.get(3)?,
                host: r.get(4)?,
            });
        }
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT r.run_id, r.bench_id, r.unit, r.median, r.ci_low, r.ci_high
                 FROM results r JOIN runs u ON u.id = r.run_id
                 WHERE {WHERE} ORDER BY u.started, u.rowid, r.seq"
            ))
            .map_err(|e| explain(e, &self.path))?;
        let mut q = st.query(args).map_err(|e| explain(e, &self.path))?;
        while let Some(r) = q.next().map_err(|e| explain(e, &self.path))? {
            let run_id: String = r.get(0)?;
            rows.add_value(
                &run_id,
                (r.get(1)?, r.get(2)?),
                [r.get(3)?, r.get(4)?, r.get(5)?],
                keep,
            );
        }
        Ok(rows)
    }

    /// The number of saved runs.
    pub fn count(&self) -> anyhow::Result<i64> {
        self.conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .map_err(|e| explain(e, &self.path))
    }
}

/// `Some(x)` for a finite value, `None` (SQL NULL) otherwise.
pub(crate) fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The CPU model named in a host block, whatever its layout version.
pub(crate) fn cpu_model(host: &serde_json::Value) -> Option<String> {
    ["/cpu_model", "/cpu/model", "/cpu/model_name"]
        .iter()
        .find_map(|p| host.pointer(p).and_then(|v| v.as_str()))
        .map(str::to_string)
}

/// Refuses a non-empty file that does not start like an SQLite database.
fn check_header(path: &Path) -> anyhow::Result<()> {
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(path)
        .and_then(|f| f.take(16).read_to_end(&mut head))
        .with_context(|| {
            format!(
                "cannot read the history {}; check its permissions or pass --db with another path",
                path.display()
            )
        })?;
    if !head.is_empty() && head.as_slice() != SQLITE_MAGIC {
        bail!(
            "{} is not an SQLite database, so not an opcost history; nothing was changed. Pass --db with another path, or move the file away",
            path.display()
        );
    }
    Ok(())
}

/// Turns an SQLite error into one that says what to do.
fn explain(e: rusqlite::Error, path: &Path) -> anyhow::Error {
    use rusqlite::ErrorCode as C;
    let p = path.display();
    let known = match e.sqlite_error_code() {
        Some(C::NotADatabase) => format!(
            "{p} is not an SQLite database, so not an opcost history; nothing was changed. Pass --db with another path, or move the file away"
        ),
        Some(C::DatabaseCorrupt) => format!(
            "the history {p} is corrupt; move it away (opcost then starts a new one) or restore a backup"
        ),
        Some(C::DatabaseBusy | C::DatabaseLocked) => format!(
            "the history {p} stayed locked by another process for {} s; try again when it is done",
            BUSY_TIMEOUT.as_secs()
        ),
        Some(C::ReadOnly | C::PermissionDenied | C::CannotOpen) => format!(
            "cannot write the history {p}; check the permissions of the file and its directory, or pass --db with another path"
        ),
        Some(C::DiskFull) => format!("the disk holding the history {p} is full; free some space"),
        _ => return anyhow::Error::new(e).context(format!("history {p}")),
    };
    anyhow!(known)
}
