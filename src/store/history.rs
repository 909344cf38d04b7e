//! The one seam between the commands and the two stores: a [`History`] is
//! an SQLite file or a PostgreSQL database, and every command that reads
//! or adds runs does so through it, whichever it is.

use super::location::Location;
use super::postgres::PgStore;
use super::{
    Incoming, Outcome, Prefix, RunRow, Saved, Store, TrendFilter, TrendRows, default_path,
};
use crate::document::RunDoc;

/// An open history, local or shared.
#[derive(Debug)]
pub enum History {
    /// An SQLite file.
    Sqlite(Store),
    /// A PostgreSQL database.
    Postgres(PgStore),
}

/// Calls the same method on whichever store it is.
macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            History::Sqlite($s) => $e,
            History::Postgres($s) => $e,
        }
    };
}

impl History {
    /// Opens the history at `db` (`--db`, `OPCOST_DB`), or the default
    /// SQLite file when none is given, creating an SQLite file (and its
    /// directory) that is not there yet: for the commands that add runs.
    pub fn open(db: Option<&Location>) -> anyhow::Result<History> {
        match db {
            Some(Location::Postgres(url)) => Ok(History::Postgres(PgStore::open(url)?)),
            Some(Location::Sqlite(p)) => Ok(History::Sqlite(Store::open(p)?)),
            None => Ok(History::Sqlite(Store::open(&default_path(None)?)?)),
        }
    }

    /// Opens a history that is already there, for the commands that only
    /// read it (`runs`, `show`, `compare`, `export`, `report`, `trend`,
    /// `fleet`, `push`'s source): a missing SQLite file is an error naming
    /// its path, and neither it nor its directory is created.
    pub fn open_existing(db: Option<&Location>) -> anyhow::Result<History> {
        let path = match db {
            Some(Location::Postgres(_)) => return History::open(db),
            Some(Location::Sqlite(p)) => p.clone(),
            None => default_path(None)?,
        };
        if !path.exists() {
            return Err(crate::error::usage(format!(
                "{}: no history there (no such file); `opcost run` or `opcost import` creates one, and --db or OPCOST_DB name another",
                path.display()
            )));
        }
        History::open(Some(&Location::Sqlite(path)))
    }

    /// Where it is, as it may be shown (a path, or a URL without password).
    pub fn shown(&self) -> String {
        match self {
            History::Sqlite(s) => s.path().display().to_string(),
            History::Postgres(p) => p.url().to_string(),
        }
    }

    /// The schema version.
    pub fn version(&mut self) -> anyhow::Result<i64> {
        each!(self, s => s.version())
    }

    /// Saves a run ([`Saved::AlreadyPresent`] when an equal one is there; a
    /// different run with the same id is an [`super::IdConflict`]).
    pub fn save(&mut self, doc: &RunDoc, source: Option<&str>) -> anyhow::Result<Saved> {
        each!(self, s => s.save(doc, source))
    }

    /// Saves a fresh run, drawing new ids while its random one is taken.
    pub fn save_new(&mut self, doc: &mut RunDoc) -> anyhow::Result<()> {
        let place = self.shown();
        super::save_with_free_id(doc, &place, |d| self.save(d, None))
    }

    /// Saves many runs in one transaction (see [`Store::save_all`]).
    pub fn save_all(
        &mut self,
        docs: &mut dyn Iterator<Item = anyhow::Result<Incoming>>,
    ) -> anyhow::Result<Vec<Outcome>> {
        each!(self, s => s.save_all(docs))
    }

    /// Loads the run with exactly this id.
    pub fn load(&mut self, id: &str) -> anyhow::Result<RunDoc> {
        each!(self, s => s.load(id))
    }

    /// Loads a run, and for a complete run the JSON it is stored as.
    pub fn load_with_json(&mut self, id: &str) -> anyhow::Result<(RunDoc, Option<String>)> {
        each!(self, s => s.load_with_json(id))
    }

    /// Saved runs, newest first, optionally of one host; `limit` 0 means all.
    pub fn list(&mut self, host: Option<&str>, limit: usize) -> anyhow::Result<Vec<RunRow>> {
        each!(self, s => s.list(host, limit))
    }

    /// The id of the latest run, of one host if given.
    pub fn latest(&mut self, host: Option<&str>) -> anyhow::Result<Option<String>> {
        each!(self, s => s.latest(host))
    }

    /// The ids of the latest complete run of each host (with this label).
    pub fn latest_per_host(&mut self, label: Option<&str>) -> anyhow::Result<Vec<String>> {
        each!(self, s => s.latest_per_host(label))
    }

    /// The runs whose id starts with `prefix`.
    pub fn find_prefix(&mut self, prefix: &str) -> anyhow::Result<Prefix> {
        each!(self, s => s.find_prefix(prefix))
    }

    /// The complete runs `filter` selects, oldest first, with those of
    /// their results whose benchmark `keep` selects (what `trend` reads).
    pub fn trend_rows(
        &mut self,
        filter: &TrendFilter,
        keep: &dyn Fn(&str) -> bool,
    ) -> anyhow::Result<TrendRows> {
        each!(self, s => s.trend_rows(filter, keep))
    }

    /// The number of saved runs.
    pub fn count(&mut self) -> anyhow::Result<i64> {
        each!(self, s => s.count())
    }
}
