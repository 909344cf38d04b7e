//! `opcost push [RUN...] --to URL`: copies runs of this history to another
//! one, usually the fleet's shared PostgreSQL database. Like `import`, it
//! is idempotent: a run already there with the same content is skipped and
//! counted, a different run with the same id is refused. Everything is
//! written in one transaction, table by table in bulk (see
//! [`crate::store::postgres`]), so a thousand runs take seconds.

use std::time::Instant;

use crate::cli::PushArgs;
use crate::store::{History, Incoming, Location, Saved};

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
    // Reading and parsing the runs (one thread) overlaps writing them (this one).
    let (send, receive) = std::sync::mpsc::sync_channel::<anyhow::Result<Incoming>>(32);
    let (outcomes, incomplete) = std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut incomplete: Vec<String> = Vec::new();
            for id in &ids {
                let item = match source.load_with_json(id) {
                    Ok((d, _)) if d.run.incomplete => {
                        incomplete.push(d.run.id);
                        continue;
                    }
                    Ok((doc, json)) => Ok(Incoming {
                        json,
                        ..Incoming::new(doc)
                    }),
                    Err(e) => Err(e),
                };
                if send.send(item).is_err() {
                    break; // the writer stopped
                }
            }
            incomplete
        });
        let outcomes = {
            let receive = receive;
            target.save_all(&mut receive.iter())
        };
        (outcomes, reader.join())
    });
    let outcomes = outcomes?;
    let incomplete = incomplete.map_err(|_| anyhow::anyhow!("reading the runs failed"))?;
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
