//! `opcost show`: a saved run (or a JSON file) as the run table, Markdown,
//! CSV or JSON.

use crate::store::Location;

use crate::cli::{Format, ShowArgs};
use crate::document::RunDoc;
use crate::report::{csv, dashboards, markdown, table};

use super::source::Loader;

/// Prints the run.
pub fn execute(args: &ShowArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    let doc = Loader::new(db).load(&args.run)?;
    print!("{}", render(&doc, args.format)?);
    Ok(0)
}

/// A run in the given format.
pub fn render(doc: &RunDoc, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => table::render(doc),
        Format::Md => markdown::render_run(doc),
        Format::Csv => csv::render_run(doc)?,
        Format::Json => serde_json::to_string_pretty(doc)? + "\n",
        Format::Bmf => serde_json::to_string_pretty(&dashboards::bmf(doc))? + "\n",
        Format::GithubBenchmark => {
            serde_json::to_string_pretty(&dashboards::github_benchmark(doc))? + "\n"
        }
    })
}
