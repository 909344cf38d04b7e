//! `opcost push [RUN...] --to URL`: copies runs of this history to another
//! one, usually the fleet's shared PostgreSQL database. Like `import`, it
//! is idempotent: a run already there with the same content is skipped and
//! counted, a different run with the same id is refused. Everything is
//! written in one transaction, table by table in bulk (see
//! [`crate::store::postgres`]), so a thousand runs take seconds.

use std::time::Instant;

use crate::cli::PushArgs;
use crate::store::{History, Location, Saved};

use super::source::Loader;
use super::usage;

/// Pushes the runs; 0 when every run is there afterwards, 1 otherwise.
pub fn execute(args: &PushArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    let to = Location::parse(&args.to).map_err(|e| usage(format!("--to: {e}")))?;
    let from = match db {
        Some(l) => l.clone(),
        None => Location::Sqlite(crate::store::default_path(None)?),
    };
    if from == to {
        return Err(usage(format!(
            "--to {} is the history the runs come from; give another one",
            to.shown()
        )));
    }
    let mut loader = Loader::new(Some(&from));
    let specs = if args.runs.is_empty() {
        vec!["@all".to_string()]
    } else {
        args.runs.clone()
    };
    let mut ids: Vec<String> = Vec::new();
    for spec in &specs {
        for id in loader.resolve(spec)? {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    let started = Instant::now();
    let mut target = History::open(Some(&to))?;
    let source = loader.store()?;
    let mut incomplete: Vec<String> = Vec::new();
    let mut docs = ids.iter().filter_map(|id| match source.load(id) {
        Ok(d) if d.run.incomplete => {
            incomplete.push(d.run.id);
            None
        }
        Ok(d) => Some(Ok((d, None))),
        Err(e) => Some(Err(e)),
    });
    let outcomes = target.save_all(&mut docs)?;
    drop(docs);
    let (mut new, mut present, mut failed) = (0, 0, 0);
    for o in outcomes {
        match o.result {
            Ok(Saved::New) => new += 1,
            Ok(Saved::AlreadyPresent) => present += 1,
            Err(e) => {
                failed += 1;
                eprintln!("error: {e:#}");
            }
        }
    }
    for id in &incomplete {
        eprintln!("run {id} is incomplete (still running, or it died); not pushed");
    }
    eprintln!(
        "{new} pushed, {present} already there, {} incomplete, {failed} failed, to {} in {:.1} s",
        incomplete.len(),
        target.shown(),
        started.elapsed().as_secs_f64()
    );
    Ok(if failed > 0 { 1 } else { 0 })
}
