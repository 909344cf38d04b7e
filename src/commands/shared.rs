//! Where the commands that make runs (`run`, `cmd`, `ab`) save them.
//!
//! A new run is always written to a local SQLite history first (while it
//! happens, so a crash loses nothing measured). When `--db` names a
//! PostgreSQL database, the finished run is then copied there; if the
//! database cannot be reached, the run stays in the local history, the
//! error says how to send it later (`opcost push`), and the command exits 1.

use std::path::PathBuf;

use crate::document::RunDoc;
use crate::store::postgres::PgStore;
use crate::store::{self, Incoming, Location, PgUrl, Saved};

/// Where a new run goes.
#[derive(Clone, Debug)]
pub struct Targets {
    /// The SQLite file it is written to.
    pub local: PathBuf,
    /// The shared database it is copied to when done.
    pub shared: Option<PgUrl>,
}

/// The targets for `--db`: a path is the local history itself; a URL is the
/// shared one, the local history then being the default file.
pub fn targets(db: Option<&Location>) -> anyhow::Result<Targets> {
    Ok(match db {
        Some(Location::Sqlite(p)) => Targets {
            local: p.clone(),
            shared: None,
        },
        Some(Location::Postgres(u)) => Targets {
            local: store::default_path(None)?,
            shared: Some(u.clone()),
        },
        None => Targets {
            local: store::default_path(None)?,
            shared: None,
        },
    })
}

/// Connects to the shared history before a run, so that a wrong URL or a
/// database that is down is said at once rather than after the run; the
/// run goes ahead either way (it is saved locally).
pub fn connect_early(url: &PgUrl) -> Option<PgStore> {
    match PgStore::open(url) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!(
                "error: {e:#}\nopcost: measuring anyway; the run will be saved in the local history only"
            );
            None
        }
    }
}

/// Copies finished runs to the shared history (reconnecting when there is
/// no connection yet); prints what happened and returns false on failure.
pub fn copy_to_shared(
    url: &PgUrl,
    conn: Option<PgStore>,
    docs: &[&RunDoc],
    local: &std::path::Path,
) -> bool {
    let items = || docs.iter().map(|d| Ok(Incoming::new((*d).clone())));
    let had_conn = conn.is_some();
    let mut result = conn
        .map_or_else(|| PgStore::open(url), Ok)
        .and_then(|mut s| s.save_all(&mut items()));
    if had_conn && result.is_err() {
        // The connection made before the run may have been dropped since
        // (a server restart, an idle timeout): once more on a new one.
        result = PgStore::open(url).and_then(|mut s| s.save_all(&mut items()));
    }
    let ids: Vec<&str> = docs.iter().map(|d| d.run.id.as_str()).collect();
    let failed = match result {
        Ok(outcomes) => {
            let mut failed = false;
            for o in outcomes {
                match o.result {
                    Ok(Saved::New) => eprintln!("copied run {} to {url}", o.id),
                    Ok(Saved::AlreadyPresent) => {
                        eprintln!("run {} was already in {url}", o.id)
                    }
                    Err(e) => {
                        eprintln!("error: {e:#}");
                        failed = true;
                    }
                }
            }
            failed
        }
        Err(e) => {
            eprintln!("error: the shared history got nothing: {e:#}");
            true
        }
    };
    if failed {
        eprintln!(
            "hint: the run{} {} {} in {}; `opcost --db {} push {} --to URL` sends {} later",
            if ids.len() > 1 { "s" } else { "" },
            ids.join(", "),
            if ids.len() > 1 { "are" } else { "is" },
            local.display(),
            local.display(),
            ids.join(" "),
            if ids.len() > 1 { "them" } else { "it" },
        );
    }
    !failed
}
