//! `opcost import`: run documents made elsewhere join the local history.
//! Importing is idempotent: a run already present (same id, same content)
//! is skipped, never duplicated.

use crate::store::Location;

use crate::cli::ImportArgs;
use crate::document::RunDoc;
use crate::store::Saved;

use super::source::Loader;
use super::{UsageError, usage};

/// Imports each file; returns 1 when any could not be imported (the others
/// still are), 2 when every failure was a usage error (a missing file).
pub fn execute(args: &ImportArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    let mut loader = Loader::new(db);
    let store = loader.store()?;
    let (mut new, mut present) = (0, 0);
    let mut failures: Vec<anyhow::Error> = Vec::new();
    for path in &args.files {
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
