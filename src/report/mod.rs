//! Presenting results: the terminal table, comparisons, Markdown, CSV and
//! the HTML report with its charts. Reports never
//! re-measure; they only read run documents.

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
