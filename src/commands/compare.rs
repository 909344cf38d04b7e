//! `opcost compare A B [PATTERN...]`: two runs side by side with the ratio
//! B/A, its 95% confidence interval and a verdict per benchmark (method in
//! [`crate::compare`]).

use std::path::Path;

use crate::cli::{CompareArgs, Format};
use crate::compare::compare;
use crate::report::{comparison, csv, markdown};

use super::source::Loader;

/// Prints the comparison.
pub fn execute(args: &CompareArgs, db: Option<&Path>) -> anyhow::Result<i32> {
    let mut loader = Loader::new(db);
    let a = loader.load(&args.a)?;
    let b = loader.load(&args.b)?;
    let c = compare(&a, &b, &args.patterns, args.threshold);
    let text = match args.format {
        Format::Text => comparison::render(&c),
        Format::Md => markdown::render_compare(&c),
        Format::Csv => csv::render_compare(&c)?,
        Format::Json => serde_json::to_string_pretty(&c)? + "\n",
    };
    print!("{text}");
    if !args.patterns.is_empty() && c.rows.is_empty() && c.only_a.is_empty() && c.only_b.is_empty()
    {
        eprintln!(
            "note: no benchmark of either run matches {}",
            args.patterns.join(" ")
        );
    }
    Ok(0)
}
