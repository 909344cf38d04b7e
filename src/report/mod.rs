//! Presenting results: the terminal table, comparisons, Markdown, CSV and
//! the HTML report with its charts. Reports never
//! re-measure; they only read run documents.
//!
//! The commands print what [`render_run`], [`render_comparison`],
//! [`render_fleet`] and [`render_trend`] return: each value's [`Format`]
//! is chosen here, in one place.

pub mod charts;
pub mod comparison;
pub mod csv;
pub mod dashboards;
pub mod fleet;
pub mod format;
pub mod html;
pub mod markdown;
pub mod table;
pub mod trend;

pub use format::Format;

use crate::analysis::compare::Comparison;
use crate::document::RunDoc;

/// What the dashboard formats say when asked for something other than a run.
const DASHBOARD_RUN_ONLY: &str = "--format bmf and github-benchmark describe one run: use them with `opcost run`, `show` or `export`";

/// A run in the given format.
pub fn render_run(doc: &RunDoc, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => table::render(doc),
        Format::Md => markdown::render_run(doc),
        Format::Csv => csv::render_run(doc)?,
        Format::Json => json(doc)?,
        Format::Bmf => json(&dashboards::bmf(doc))?,
        Format::GithubBenchmark => json(&dashboards::github_benchmark(doc))?,
    })
}

/// A comparison in the given format; a dashboard format is refused.
pub fn render_comparison(c: &Comparison, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => comparison::render(c),
        Format::Md => markdown::render_compare(c),
        Format::Csv => csv::render_compare(c)?,
        Format::Json => json(c)?,
        Format::Bmf | Format::GithubBenchmark => {
            return Err(unsupported("a comparison has no dashboard format"));
        }
    })
}

/// The fleet view in the given format; a dashboard format is refused.
pub fn render_fleet(
    view: &crate::analysis::fleet::Fleet,
    format: Format,
) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => fleet::render_text(view),
        Format::Md => fleet::render_md(view),
        Format::Csv => fleet::render_csv(view)?,
        Format::Json => json(view)?,
        Format::Bmf | Format::GithubBenchmark => return Err(unsupported(DASHBOARD_RUN_ONLY)),
    })
}

/// The trend in the given format; a dashboard format is refused.
pub fn render_trend(
    t: &crate::analysis::trend::HistoryTrend,
    format: Format,
) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => trend::render_text(t),
        Format::Md => trend::render_md(t),
        Format::Csv => trend::render_csv(t)?,
        Format::Json => json(t)?,
        Format::Bmf | Format::GithubBenchmark => return Err(unsupported(DASHBOARD_RUN_ONLY)),
    })
}

/// A value as pretty JSON with a final newline.
fn json<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// A format the value cannot be printed in: a mistake in what the user
/// asked for (exit code 2).
fn unsupported(msg: &str) -> anyhow::Error {
    crate::error::usage(msg)
}
