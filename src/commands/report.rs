//! `opcost report`: an offline HTML file with charts of one or more runs.

use crate::store::Location;
use crate::units::count;

use crate::cli::ReportArgs;
use crate::document::{check_writable, write_atomic};
use crate::report::html;

use super::source::Loader;
use super::usage;

/// Writes the report.
pub fn execute(args: &ReportArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    check_writable(&args.output)
        .map_err(|e| usage(format!("-o {}: {e:#}", args.output.display())))?;
    let mut loader = Loader::new(db);
    let specs = if args.runs.is_empty() {
        vec!["latest".to_string()]
    } else {
        args.runs.clone()
    };
    let mut docs = Vec::new();
    for spec in &specs {
        let doc = loader.load(spec)?;
        if docs
            .iter()
            .any(|d: &crate::document::RunDoc| d.run.id == doc.run.id)
        {
            return Err(usage(format!("run {} is given twice", doc.run.id)));
        }
        docs.push(doc);
    }
    let report = html::render(&docs, &crate::analysis::Overview::of(&docs))?;
    write_atomic(&args.output, report.html.as_bytes())?;
    eprintln!(
        "wrote {} ({}, {})",
        if args.output.as_os_str() == "-" {
            "standard output".to_string()
        } else {
            args.output.display().to_string()
        },
        count(docs.len(), "run"),
        count(report.charts, "chart")
    );
    Ok(0)
}
