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
use crate::analysis::fleet::Fleet;
use crate::analysis::trend::HistoryTrend;
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
    let renderers: Renderers<_> = (
        comparison::render,
        markdown::render_compare,
        csv::render_compare,
    );
    render_view(c, format, renderers, "a comparison has no dashboard format")
}

/// The fleet view in the given format; a dashboard format is refused.
pub fn render_fleet(view: &Fleet, format: Format) -> anyhow::Result<String> {
    let renderers: Renderers<_> = (fleet::render_text, fleet::render_md, fleet::render_csv);
    render_view(view, format, renderers, DASHBOARD_RUN_ONLY)
}

/// The trend in the given format; a dashboard format is refused.
pub fn render_trend(t: &HistoryTrend, format: Format) -> anyhow::Result<String> {
    let renderers: Renderers<_> = (trend::render_text, trend::render_md, trend::render_csv);
    render_view(t, format, renderers, DASHBOARD_RUN_ONLY)
}

/// A view's text, Markdown and CSV renderers.
type Renderers<T> = (
    fn(&T) -> String,
    fn(&T) -> String,
    fn(&T) -> anyhow::Result<String>,
);

/// A view that is not a run in `format`: by its renderers, JSON as it
/// serialises; a dashboard format is refused with `no_dashboard`.
fn render_view<T: serde::Serialize>(
    value: &T,
    format: Format,
    (text, md, csv): Renderers<T>,
    no_dashboard: &str,
) -> anyhow::Result<String> {
    Ok(match format {
        Format::Text => text(value),
        Format::Md => md(value),
        Format::Csv => csv(value)?,
        Format::Json => json(value)?,
        Format::Bmf | Format::GithubBenchmark => return Err(unsupported(no_dashboard)),
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
