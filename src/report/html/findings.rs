//! The findings of every area, after the charts.

use std::fmt::Write;

use super::{esc, swatch};
use crate::document::RunDoc;

/// Per area, each run's findings (named by run when there are several).
pub(super) fn section(h: &mut String, docs: &[RunDoc], names: &[String], areas: &[String]) {
    h.push_str("<section id=\"findings\">\n<h2>findings</h2>\n");
    let mut any = false;
    for area in areas {
        if !docs
            .iter()
            .any(|d| d.findings.iter().any(|f| &f.area == area))
        {
            continue;
        }
        any = true;
        let _ = writeln!(h, "<h3>{}</h3>\n<ul class=\"findings\">", esc(area));
        for (i, d) in docs.iter().enumerate() {
            for f in d.findings.iter().filter(|f| &f.area == area) {
                let who = if docs.len() > 1 {
                    format!("{}{}: ", swatch(i), esc(&names[i]))
                } else {
                    String::new()
                };
                let _ = writeln!(h, "<li>{who}{}</li>", esc(&f.text));
            }
        }
        h.push_str("</ul>\n");
    }
    if !any {
        h.push_str(
            "<p class=\"meta\">No finding: the runs lack the results the findings need.</p>\n",
        );
    }
    h.push_str("</section>\n");
}
