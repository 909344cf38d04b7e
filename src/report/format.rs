//! What every output format shares: the formats themselves, escaping for
//! HTML and Markdown, the mark of a noisy result, and the pieces of a
//! run's heading.

use crate::document::{RunDoc, RunInfo};

/// How a run or a comparison is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The terminal table.
    Text,
    /// Markdown tables.
    Md,
    /// CSV, one row per benchmark.
    Csv,
    /// JSON.
    Json,
    /// Bencher Metric Format (a run only): each result's median and 95% interval.
    Bmf,
    /// github-action-benchmark's `customSmallerIsBetter` JSON (a run only):
    /// each result as time per operation with its range.
    GithubBenchmark,
}

impl Format {
    /// True for the formats that describe one run for a dashboard.
    pub fn is_dashboard(self) -> bool {
        matches!(self, Format::Bmf | Format::GithubBenchmark)
    }
}

/// The mark shown beside a noisy result.
pub const NOISY_MARK: &str = "~";

/// "ID on HOST: MACHINE", the run and the machine a text heading names.
pub fn run_on_host(doc: &RunDoc) -> String {
    format!(
        "{} on {}: {}",
        doc.run.id,
        doc.host.hostname,
        doc.host.summary()
    )
}

/// How a run ended, for the end of its heading: " — interrupted",
/// `incomplete` for a run that never ended, nothing for one that ended.
pub fn ending<'a>(run: &RunInfo, incomplete: &'a str) -> &'a str {
    if run.interrupted {
        " — interrupted"
    } else if run.incomplete {
        incomplete
    } else {
        ""
    }
}

/// The number (from 1) of the note `w` in `notes`, added at the end when new.
pub fn note_number(notes: &mut Vec<String>, w: &str) -> usize {
    match notes.iter().position(|x| x == w) {
        Some(i) => i + 1,
        None => {
            notes.push(w.to_string());
            notes.len()
        }
    }
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for a Markdown table cell.
pub fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}
