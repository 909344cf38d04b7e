//! `opcost export`: a saved run as JSON (the interchange format that
//! `import` reads on another machine), CSV or Markdown.

use crate::store::Location;

use crate::cli::ExportArgs;
use crate::document::{Sink, check_writable, sink_of, write_atomic};

use super::source::Loader;
use super::usage;

/// Writes the run to the file or standard output.
pub fn execute(args: &ExportArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    if let Some(path) = &args.output {
        check_writable(path).map_err(|e| usage(format!("-o {}: {e:#}", path.display())))?;
    }
    let doc = Loader::new(db).load(&args.run)?;
    let text = crate::report::render_run(&doc, args.format)?;
    match &args.output {
        Some(path) => {
            write_atomic(path, text.as_bytes())?;
            if sink_of(path)? != Sink::Stdout {
                eprintln!("wrote run {} to {}", doc.run.id, path.display());
            }
        }
        None => print!("{text}"),
    }
    Ok(0)
}
