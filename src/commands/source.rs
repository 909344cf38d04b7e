//! Where a run comes from: the history (an id or a unique prefix of one,
//! `latest`, `host:NAME`) or a JSON run document on disk. The history is
//! opened only when a run is asked of it, so comparing two files never
//! touches it.

use std::path::{Path, PathBuf};

use anyhow::bail;

use super::usage;
use crate::document::RunDoc;
use crate::store::{self, Prefix, Store};

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
    db: Option<PathBuf>,
    store: Option<Store>,
}

impl Loader {
    /// A loader for the history at `--db` (or the default path).
    pub fn new(db: Option<&Path>) -> Loader {
        Loader {
            db: db.map(Path::to_path_buf),
            store: None,
        }
    }

    /// The history, opened (and created) on first use.
    pub fn store(&mut self) -> anyhow::Result<&mut Store> {
        if self.store.is_none() {
            let path = store::default_path(self.db.as_deref())?;
            self.store = Some(Store::open(&path)?);
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
                        store.path().display()
                    )));
                }
                for r in rows {
                    out.push(store.load(&r.id)?);
                }
            } else {
                out.push(self.load(spec)?);
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
        if self.store.is_none() && !store::default_path(self.db.as_deref())?.exists() {
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
                let store = self.store()?;
                match store.latest(None)? {
                    Some(id) => store.load(&id),
                    None => Err(usage(format!(
                        "the history {} has no runs yet; `opcost run` saves one",
                        store.path().display()
                    ))),
                }
            }
            Spec::Host(name) => {
                let store = self.store()?;
                match store.latest(Some(&name))? {
                    Some(id) => store.load(&id),
                    None => Err(usage(format!(
                        "no run of host '{name}' in {}; `opcost runs` lists the hosts",
                        store.path().display()
                    ))),
                }
            }
            Spec::Id(prefix) => {
                let store = self.store()?;
                match store.find_prefix(&prefix)? {
                    Prefix::One(id) => store.load(&id),
                    Prefix::None => Err(usage(format!(
                        "no run id starts with '{prefix}' in {}; `opcost runs` lists them",
                        store.path().display()
                    ))),
                    Prefix::Many(ids) => Err(usage(format!(
                        "'{prefix}' is ambiguous: {}{}; give more digits",
                        ids.iter().take(10).cloned().collect::<Vec<_>>().join(", "),
                        if ids.len() > 10 { ", ..." } else { "" }
                    ))),
                }
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
