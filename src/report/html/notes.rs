//! The runs' warnings and the benchmarks they skipped or that failed.

use std::fmt::Write;

use super::{esc, swatch};
use crate::document::RunDoc;

/// The warnings, skips and failures of each run; nothing when there are none.
pub(super) fn section(h: &mut String, docs: &[RunDoc], names: &[String]) {
    let any = docs
        .iter()
        .any(|d| !d.warnings.is_empty() || !d.skipped.is_empty());
    if !any {
        return;
    }
    h.push_str("<section id=\"notes\">\n<h2>warnings, skipped and failed</h2>\n<ul>\n");
    for (i, d) in docs.iter().enumerate() {
        for w in &d.warnings {
            let _ = writeln!(
                h,
                "<li>{}{}: warning: {}</li>",
                swatch(i),
                esc(&names[i]),
                esc(w)
            );
        }
        for s in &d.skipped {
            let _ = writeln!(
                h,
                "<li>{}{}: <code>{}</code> {}: {}</li>",
                swatch(i),
                esc(&names[i]),
                esc(&s.id),
                if s.failed { "failed" } else { "skipped" },
                esc(&s.reason)
            );
        }
    }
    h.push_str("</ul>\n</section>\n");
}
