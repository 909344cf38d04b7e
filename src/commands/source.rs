//! Where a run comes from: the history (an id or a unique prefix of one,
//! `latest`, `host:NAME`) or a JSON run document on disk. The history is
//! opened only when a run is asked of it, so comparing two files never
//! touches it.

use std::path::{Path, PathBuf};

use anyhow::bail;

use super::usage;
use crate::document::RunDoc;
use crate::store::{self, History, Location, Prefix};

/// A run as named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    /// The latest run in the history.
    Latest,
    /// The latest run of this host name.
    Host(String),
    /// A run id or a prefix of one.
    Id(String),
    /// A JSON run document.
    File(PathBuf),
}

/// Reads a run spec: `latest`, `host:NAME`, a JSON file (a path with a `/`,
/// ending in `.json`, or an existing file), or hex digits of a run id.
pub fn parse(s: &str) -> anyhow::Result<Spec> {
    if s == "latest" {
        return Ok(Spec::Latest);
    }
    if let Some(name) = s.strip_prefix("host:") {
        if name.is_empty() {
            return Err(usage("host: needs a host name, e.g. host:myserver"));
        }
        return Ok(Spec::Host(name.to_string()));
    }
    let path = Path::new(s);
    if s.contains('/') || s.ends_with(".json") || path.is_file() {
        return Ok(Spec::File(path.to_path_buf()));
    }
    if !s.is_empty() && s.len() <= 8 && s.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(Spec::Id(s.to_ascii_lowercase()));
    }
    Err(usage(format!(
        "'{s}' is not a run: give a run id or a prefix of one (hex digits, see `opcost runs`), `latest`, `host:NAME` or a JSON file"
    )))
}

/// Loads runs by spec, opening the history on first need.
pub struct Loader {
    db: Option<Location>,
    store: Option<History>,
}

impl Loader {
    /// A loader for the history at `--db` (or the default path).
    pub fn new(db: Option<&Location>) -> Loader {
        Loader {
            db: db.cloned(),
            store: None,
        }
    }

    /// The history, opened on first use; a history that is not there is
    /// an error, never created (the loader only reads).
    pub fn store(&mut self) -> anyhow::Result<&mut History> {
        if self.store.is_none() {
            self.store = Some(History::open_existing(self.db.as_ref())?);
        }
        match self.store.as_mut() {
            Some(s) => Ok(s),
            None => bail!("the history could not be opened"),
        }
    }

    /// Loads the runs of one side of a comparison: specs joined by commas,
    /// each a single run or `host:NAME@N` (the latest N runs of a host,
    /// `@all` for every one).
    pub fn load_side(&mut self, specs: &str) -> anyhow::Result<Vec<RunDoc>> {
        let mut out = Vec::new();
        for spec in specs.split(',').map(str::trim) {
            if matches!(parse(spec), Ok(Spec::File(_))) {
                out.push(self.load(spec)?);
                continue;
            }
            for id in self.resolve(spec)? {
                out.push(self.store()?.load(&id)?);
            }
        }
        Ok(out)
    }

    /// Earlier complete runs like `like` (same host, profile and label) in
    /// the history, newest first, at most `limit`, leaving out the ids in
    /// `except`: the runs that tell how much a benchmark varies from run to
    /// run on that host when nothing was meant to change.
    pub fn history(
        &mut self,
        like: &RunDoc,
        except: &[String],
        limit: usize,
    ) -> anyhow::Result<Vec<RunDoc>> {
        let (host, profile) = (&like.host.hostname, like.run.profile.name());
        // Only a history that exists is read: comparing files creates none.
        if self.store.is_none() && !self.exists()? {
            return Ok(Vec::new());
        }
        let store = self.store()?;
        let mut out = Vec::new();
        for r in store.list(Some(host), 0)? {
            if out.len() >= limit {
                break;
            }
            if r.complete
                && r.profile == profile
                && r.label == like.run.label
                && !except.contains(&r.id)
            {
                out.push(store.load(&r.id)?);
            }
        }
        Ok(out)
    }

    /// Whether the history is there already (a database always is).
    fn exists(&self) -> anyhow::Result<bool> {
        Ok(match &self.db {
            Some(Location::Postgres(_)) => true,
            Some(Location::Sqlite(p)) => p.exists(),
            None => store::default_path(None)?.exists(),
        })
    }

    /// The ids of the runs a spec names in the history, without loading
    /// them: ids and prefixes, `latest`, `host:NAME`, `host:NAME@N`,
    /// `host:NAME@all`, and `@all` (every complete run), joined by commas;
    /// the runs of a host newest first.
    /// JSON files are not runs of the history: they are refused here.
    pub fn resolve(&mut self, specs: &str) -> anyhow::Result<Vec<String>> {
        let mut out = Vec::new();
        for spec in specs.split(',').map(str::trim) {
            if spec == "@all" {
                let store = self.store()?;
                out.extend(
                    store
                        .list(None, 0)?
                        .into_iter()
                        .filter(|r| r.complete)
                        .map(|r| r.id),
                );
                continue;
            }
            if let Some((name, count)) = spec.strip_prefix("host:").and_then(|s| s.split_once('@'))
            {
                let limit = match count {
                    "all" => 0,
                    n => n.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                        usage(format!(
                            "'{spec}': after @ give a number of runs or `all` (host:NAME@5)"
                        ))
                    })?,
                };
                let store = self.store()?;
                let rows = store.list(Some(name), limit)?;
                if rows.is_empty() {
                    return Err(usage(format!(
                        "no run of host '{name}' in {}; `opcost runs` lists the hosts",
                        store.shown()
                    )));
                }
                out.extend(rows.into_iter().map(|r| r.id));
                continue;
            }
            let id = match parse(spec)? {
                Spec::File(p) => {
                    return Err(usage(format!(
                        "{}: a file, not a run of the history; `opcost import` adds it first",
                        p.display()
                    )));
                }
                Spec::Latest => self.latest_id(None)?,
                Spec::Host(name) => self.latest_id(Some(&name))?,
                Spec::Id(prefix) => self.find_id(&prefix)?,
            };
            out.push(id);
        }
        Ok(out)
    }

    /// The latest run's id, of one host if given.
    fn latest_id(&mut self, host: Option<&str>) -> anyhow::Result<String> {
        let store = self.store()?;
        match (store.latest(host)?, host) {
            (Some(id), _) => Ok(id),
            (None, None) => Err(usage(format!(
                "the history {} has no runs yet; `opcost run` saves one",
                store.shown()
            ))),
            (None, Some(name)) => Err(usage(format!(
                "no run of host '{name}' in {}; `opcost runs` lists the hosts",
                store.shown()
            ))),
        }
    }

    /// The one run id starting with `prefix`.
    fn find_id(&mut self, prefix: &str) -> anyhow::Result<String> {
        let store = self.store()?;
        match store.find_prefix(prefix)? {
            Prefix::One(id) => Ok(id),
            Prefix::None => Err(usage(format!(
                "no run id starts with '{prefix}' in {}; `opcost runs` lists them",
                store.shown()
            ))),
            Prefix::Many(ids) => Err(usage(format!(
                "'{prefix}' is ambiguous: {}{}; give more digits",
                ids.iter().take(10).cloned().collect::<Vec<_>>().join(", "),
                if ids.len() > 10 { ", ..." } else { "" }
            ))),
        }
    }

    /// Loads the run named by `spec`.
    pub fn load(&mut self, spec: &str) -> anyhow::Result<RunDoc> {
        match parse(spec)? {
            Spec::File(path) => {
                if !path.exists() {
                    return Err(usage(format!("{}: no such file", path.display())));
                }
                RunDoc::read_json(&path)
            }
            Spec::Latest => {
                let id = self.latest_id(None)?;
                self.store()?.load(&id)
            }
            Spec::Host(name) => {
                let id = self.latest_id(Some(&name))?;
                self.store()?.load(&id)
            }
            Spec::Id(prefix) => {
                let id = self.find_id(&prefix)?;
                self.store()?.load(&id)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_recognised() {
        assert_eq!(parse("latest").unwrap(), Spec::Latest);
        assert_eq!(parse("host:box").unwrap(), Spec::Host("box".into()));
        assert_eq!(parse("1A2b").unwrap(), Spec::Id("1a2b".into()));
        assert_eq!(
            parse("runs/a.json").unwrap(),
            Spec::File(PathBuf::from("runs/a.json"))
        );
        assert_eq!(
            parse("x.json").unwrap(),
            Spec::File(PathBuf::from("x.json"))
        );
        assert!(parse("host:").is_err());
        assert!(parse("zzz").is_err());
        assert!(parse("123456789").is_err());
    }
}
