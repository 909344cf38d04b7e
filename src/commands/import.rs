//! `opcost import`: run documents made elsewhere join the local history.
//! Importing is idempotent: a run already present (same id, same content)
//! is skipped, never duplicated.

use std::path::PathBuf;

use crate::store::Location;

use crate::cli::ImportArgs;
use crate::document::RunDoc;
use crate::store::{History, Saved};

use super::{UsageError, usage};

/// Imports each file (a directory: every `.json` file in it); returns 1 when any could not be imported (the others
/// still are), 2 when every failure was a usage error (a missing file).
pub fn execute(args: &ImportArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    // Importing adds runs: the history is created when it is not there.
    let mut store = History::open(db)?;
    let (mut new, mut present) = (0, 0);
    let mut failures: Vec<anyhow::Error> = Vec::new();
    for path in documents(&args.files, &mut failures) {
        let path = &path;
        let result = if path.is_file() {
            RunDoc::read_json(path).and_then(|doc| {
                let source = path.display().to_string();
                let saved = store.save(&doc, Some(&source)).map_err(|e| {
                    e.context(format!("{}: run {} not imported", source, doc.run.id))
                })?;
                Ok((doc, saved))
            })
        } else {
            Err(usage(format!("{}: no such file", path.display())))
        };
        match result {
            Ok((doc, Saved::New)) => {
                new += 1;
                eprintln!(
                    "imported run {} ({}, {}) from {}",
                    doc.run.id,
                    doc.host.hostname,
                    doc.run.started,
                    path.display()
                );
            }
            Ok((doc, Saved::AlreadyPresent)) => {
                present += 1;
                eprintln!(
                    "run {} from {} is already in the history; skipped",
                    doc.run.id,
                    path.display()
                );
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                failures.push(e);
            }
        }
    }
    eprintln!(
        "{new} imported, {present} already present, {} failed, into {}",
        failures.len(),
        store.shown()
    );
    if failures.is_empty() {
        Ok(0)
    } else if failures
        .iter()
        .all(|e| e.chain().any(|c| c.downcast_ref::<UsageError>().is_some()))
    {
        Ok(2)
    } else {
        Ok(1)
    }
}

/// The files to import: each file as given, and for a directory the
/// `.json` files directly in it, by name. A directory without any is a
/// failure (a usage error) that names it; so is one that cannot be read.
fn documents(args: &[PathBuf], failures: &mut Vec<anyhow::Error>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in args {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let listed = std::fs::read_dir(path).and_then(|entries| {
            entries
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<Vec<PathBuf>>>()
        });
        let mut found: Vec<PathBuf> = match listed {
            Ok(entries) => entries
                .into_iter()
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
                .collect(),
            Err(e) => {
                let e = anyhow::Error::new(e)
                    .context(format!("{}: the directory cannot be read", path.display()));
                eprintln!("error: {e:#}");
                failures.push(e);
                continue;
            }
        };
        if found.is_empty() {
            let e = usage(format!(
                "{}: a directory with no .json file in it; give run documents or a directory of them",
                path.display()
            ));
            eprintln!("error: {e:#}");
            failures.push(e);
        }
        found.sort();
        out.extend(found);
    }
    out
}
