//! `opcost show`: a saved run (or a JSON file) as the run table, Markdown,
//! CSV or JSON.

use crate::store::Location;

use crate::cli::ShowArgs;
use crate::report;

use super::source::Loader;

/// Prints the run.
pub fn execute(args: &ShowArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    let doc = Loader::new(db).load(&args.run)?;
    print!("{}", report::render_run(&doc, args.format)?);
    Ok(0)
}
