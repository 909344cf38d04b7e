//! The terminal table of `opcost cmd`: per command its runs, the gross
//! time, the baseline's, the net time with the CI of the paired median,
//! net user and system CPU and peak memory; then warnings and findings.

use std::fmt::Write;

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use crate::document::RunDoc;
use crate::report::format::{NOISY_MARK, note_number, run_on_host};
use crate::units::{human_bytes, human_ns};

use super::Outcome;

/// Renders the measured commands of a run.
pub fn render(doc: &RunDoc, outcomes: &[Outcome]) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "command", "runs", "total", "baseline", "net", "95% CI", "user", "sys", "max RSS",
        ]);
    for i in 1..=8 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let dash = || "—".to_string();
    let mut notes: Vec<String> = Vec::new();
    for o in outcomes {
        let ms = o.measurements();
        let Some(wall) = ms.first() else {
            continue;
        };
        let fig = |i: usize| ms.get(i).map_or_else(dash, |m| human_ns(m.median));
        let mut mark = String::new();
        if wall.noisy {
            mark.push_str(NOISY_MARK);
        }
        // The CPU-time rows share the command's caveats; noise is the mark's.
        for w in wall.other_warnings() {
            let n = note_number(&mut notes, w);
            if !mark.contains(&format!("[{n}]")) {
                let _ = write!(mark, "[{n}]");
            }
        }
        t.add_row(vec![
            Cell::new(format!("{}\n  {}{mark}", wall.id, o.spec.command)),
            Cell::new(o.runs.len()),
            Cell::new(o.gross(|u| u.wall).map_or_else(dash, human_ns)),
            Cell::new(o.baseline(|u| u.wall).map_or_else(dash, human_ns)),
            Cell::new(human_ns(wall.median)),
            Cell::new(format!(
                "{} … {}",
                human_ns(wall.ci_low),
                human_ns(wall.ci_high)
            )),
            Cell::new(fig(1)),
            Cell::new(fig(2)),
            Cell::new(o.gross(|u| u.max_rss).map_or_else(dash, human_bytes)),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "opcost cmd run {}{}",
        run_on_host(doc),
        if doc.run.interrupted {
            " — interrupted"
        } else {
            ""
        }
    );
    for w in &doc.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let _ = writeln!(out, "{t}");
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(out, "  [{}] {n}", i + 1);
    }
    for f in &doc.findings {
        let _ = writeln!(out, "  » {}", f.text);
    }
    if let Some(sh) = outcomes.first().map(|o| o.shell).filter(|s| s.wall > 0.0) {
        let _ = writeln!(
            out,
            "shell start-up subtracted from every run: {} (median of /bin/sh -c '')",
            human_ns(sh.wall)
        );
    }
    let _ = writeln!(
        out,
        "medians per run; net = command minus its baseline, paired run by run (B C, C B...), with the 95% CI of the median difference; {NOISY_MARK} = CI wider than ±{:.0}% of the net",
        crate::stats::NOISE_THRESHOLD * 100.0
    );
    out
}
