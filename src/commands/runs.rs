//! `opcost runs`: the saved runs, newest first.

use crate::store::Location;

use comfy_table::Table;
use comfy_table::presets::NOTHING;

use crate::cli::RunsArgs;

use super::source::Loader;

/// Lists the runs of the history.
pub fn execute(args: &RunsArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    let mut loader = Loader::new(db);
    let store = loader.store()?;
    let rows = store.list(args.host.as_deref(), args.limit)?;
    let total = store.count()?;
    let path = store.shown();
    if rows.is_empty() {
        match &args.host {
            Some(h) if total > 0 => println!("no run of host '{h}' in {path}"),
            _ => println!("no runs in {path} yet; `opcost run` saves one"),
        }
        return Ok(0);
    }
    let mut t = Table::new();
    t.load_style(NOTHING).set_header(vec![
        "id",
        "started (UTC)",
        "host",
        "cpu",
        "profile",
        "results",
        "label",
        "note",
    ]);
    for r in &rows {
        let mut note: Vec<String> = Vec::new();
        if !r.complete {
            note.push("incomplete (running, or it died)".into());
        }
        if r.interrupted {
            note.push("interrupted".into());
        }
        if r.n_skipped > 0 {
            note.push(format!("{} skipped/failed", r.n_skipped));
        }
        if let Some(src) = &r.source {
            note.push(format!("imported from {src}"));
        }
        t.add_row(vec![
            r.id.clone(),
            short_time(&r.started),
            r.hostname.clone(),
            r.cpu_model.clone().unwrap_or_default(),
            r.profile.clone(),
            r.n_results.to_string(),
            r.label.clone().unwrap_or_default(),
            note.join("; "),
        ]);
    }
    println!("{t}");
    let shown = if (rows.len() as i64) < total {
        format!("{} of {total} runs (--limit 0 shows all)", rows.len())
    } else {
        crate::units::count(total as usize, "run")
    };
    println!("\n{shown} in {path}");
    Ok(0)
}

/// `2026-11-22T01:06:00Z` → `2026-11-22 01:06`.
fn short_time(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| rfc3339.to_string())
}
