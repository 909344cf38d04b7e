//! The table of the runs, in the page's header.

use std::fmt::Write;

use super::{esc, swatch};
use crate::document::RunDoc;

/// One row per run: id, host, start, profile, label, results, version and
/// whether it was interrupted or skipped benchmarks.
pub(super) fn section(h: &mut String, docs: &[RunDoc]) {
    h.push_str("<section id=\"runs\">\n<table class=\"runs\">\n<tr><th>run</th><th>host</th><th>started (UTC)</th><th>profile</th><th>label</th><th>results</th><th>opcost</th><th>note</th></tr>\n");
    for (i, d) in docs.iter().enumerate() {
        let mut note = Vec::new();
        if d.run.interrupted {
            note.push("interrupted".to_string());
        }
        if !d.skipped.is_empty() {
            note.push(format!("{} skipped/failed", d.skipped.len()));
        }
        let _ = writeln!(
            h,
            "<tr><td>{}<code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            swatch(i),
            esc(&d.run.id),
            esc(&d.host.hostname),
            esc(&d.run.started),
            d.run.profile.name(),
            esc(d.run.label.as_deref().unwrap_or("")),
            d.results.len(),
            esc(&d.opcost_version),
            esc(&note.join("; "))
        );
    }
    h.push_str("</table>\n</section>\n");
}
