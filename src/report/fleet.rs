//! The fleet view ([`crate::analysis::fleet`]) as text, Markdown, CSV and an HTML section.

use std::fmt::Write;

use comfy_table::Table;
use comfy_table::presets::NOTHING;

use super::format::cell;
use super::format::esc;
use crate::analysis::fleet::{Flag, Fleet, Group, HostRow};
use crate::units::{fmt_ratio, human};

/// A value in its column's unit, `!` after a flagged one.
fn shown(f: &Fleet, h: &HostRow, j: usize) -> String {
    match h.values[j] {
        Some(v) => {
            let mark = if h.flags.iter().any(|x| x.column == j) {
                " !"
            } else {
                ""
            };
            format!("{}{mark}", human(v, f.columns[j].unit))
        }
        None => "—".into(),
    }
}

/// The heading of a group.
fn heading(g: &Group) -> String {
    let io = if g.io.is_empty() {
        String::new()
    } else {
        format!(" · {}", g.io)
    };
    let env = if g.settings.is_empty() {
        String::new()
    } else {
        format!(" · {}", g.settings)
    };
    format!(
        "{} · kernel {}{io}{env} · {} host{}",
        g.cpu_model,
        g.kernel,
        g.hosts.len(),
        if g.hosts.len() == 1 { "" } else { "s" }
    )
}

/// One flag in words: `system call 412 ns, 3.10× the group's 133 ns (worse)`.
fn flag_text(f: &Fleet, x: &Flag) -> String {
    let c = &f.columns[x.column];
    format!(
        "{} {}, {} the group's median {} ({})",
        c.label,
        human(x.value, c.unit),
        fmt_ratio(x.ratio),
        human(x.median, c.unit),
        if x.worse { "worse" } else { "better" }
    )
}

/// What differs, in words: `clocksource hpet (group: tsc)`.
fn differences_text(h: &HostRow) -> String {
    if h.differences.is_empty() {
        return "no difference in its description from the group's (look at its load, firmware or hardware)".into();
    }
    h.differences
        .iter()
        .map(|d| format!("{} {} (group: {})", d.fact, d.host, d.group))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A flagged host in words: its flags, then what differs in its description.
fn flagged_text(f: &Fleet, h: &HostRow) -> String {
    let figures: Vec<String> = h.flags.iter().map(|x| flag_text(f, x)).collect();
    format!(
        "{}; differs in: {}",
        figures.join("; "),
        differences_text(h)
    )
}

/// The rule in words.
fn rule_text(f: &Fleet) -> String {
    format!(
        "flagged (!): outside the group's median ± max({}·MAD×{}, {:.0}% of the median), in groups of {} hosts or more",
        f.rule.k,
        crate::stats::MAD_TO_SIGMA,
        f.rule.margin * 100.0,
        crate::analysis::fleet::MIN_GROUP
    )
}

/// The terminal view: one table per group, then the flagged hosts.
pub fn render_text(f: &Fleet) -> String {
    let mut out = String::new();
    for g in &f.groups {
        let _ = writeln!(out, "{}\n{}\n", heading(g), group_table(f, g));
    }
    let flagged: Vec<_> = f.flagged().collect();
    if flagged.is_empty() {
        let _ = writeln!(out, "no host is outside its group's spread");
    } else {
        let _ = writeln!(out, "outside their group's spread:");
        for (_, h) in &flagged {
            let figures: Vec<String> = h.flags.iter().map(|x| flag_text(f, x)).collect();
            let _ = writeln!(out, "  {}: {}", h.hostname, figures.join("; "));
            let _ = writeln!(out, "    differs in: {}", differences_text(h));
        }
    }
    let changed: Vec<&HostRow> = f
        .groups
        .iter()
        .flat_map(|g| &g.hosts)
        .filter(|h| !h.changes.is_empty())
        .collect();
    if !changed.is_empty() {
        let _ = writeln!(out, "\nchanged in their history, alone in their group:");
        for h in changed {
            for c in &h.changes {
                let p = &c.point;
                let _ = writeln!(
                    out,
                    "  {}: {} from {} (run {}): {}; {}",
                    h.hostname,
                    c.benchmark,
                    p.started.get(..10).unwrap_or(&p.started),
                    p.run,
                    super::trend::change_text(p),
                    super::trend::env_text(p)
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{} host{} in {} group{} (CPU model, kernel, storage and net device); {}",
        f.hosts(),
        if f.hosts() == 1 { "" } else { "s" },
        f.groups.len(),
        if f.groups.len() == 1 { "" } else { "s" },
        rule_text(f)
    );
    out
}

/// One group's hosts, a row each, and the group's medians.
fn group_table(f: &Fleet, g: &Group) -> Table {
    let mut t = Table::new();
    let mut head = vec!["host".to_string(), "run".to_string()];
    head.extend(f.columns.iter().map(|c| c.label.clone()));
    t.load_style(NOTHING).set_header(head);
    for h in &g.hosts {
        let mut row = vec![h.hostname.clone(), h.run_id.clone()];
        row.extend((0..f.columns.len()).map(|j| shown(f, h, j)));
        t.add_row(row);
    }
    let mut med = vec!["median".to_string(), String::new()];
    med.extend(
        g.medians
            .iter()
            .zip(&f.columns)
            .map(|(m, c)| m.map_or("—".into(), |m| human(m, c.unit))),
    );
    t.add_row(med);
    t
}

/// Markdown: a table per group and the list of flagged hosts.
pub fn render_md(f: &Fleet) -> String {
    let mut out = String::from("# opcost fleet\n\n");
    for g in &f.groups {
        let _ = writeln!(out, "## {}\n", cell(&heading(g)));
        out.push_str("| host | run |");
        for c in &f.columns {
            let _ = write!(out, " {} |", cell(&c.label));
        }
        out.push_str("\n|---|---|");
        out.push_str(&"--:|".repeat(f.columns.len()));
        out.push('\n');
        for h in &g.hosts {
            let _ = write!(out, "| {} | `{}` |", cell(&h.hostname), h.run_id);
            for j in 0..f.columns.len() {
                let _ = write!(out, " {} |", cell(&shown(f, h, j)));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    let flagged: Vec<_> = f.flagged().collect();
    if !flagged.is_empty() {
        out.push_str("## Outside their group's spread\n\n");
        for (_, h) in flagged {
            let text = flagged_text(f, h);
            let _ = writeln!(out, "- **{}**: {}", cell(&h.hostname), cell(&text));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", cell(&rule_text(f)));
    out
}

/// CSV: one row per host, the columns' values in base units, then the
/// flagged columns and the differences.
pub fn render_csv(f: &Fleet) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut head = vec![
        "host".to_string(),
        "cpu_model".into(),
        "kernel".into(),
        "run".into(),
    ];
    head.extend(
        f.columns
            .iter()
            .map(|c| format!("{} [{}]", c.label, c.unit)),
    );
    head.extend(["flagged".to_string(), "differences".into()]);
    w.write_record(&head)?;
    for g in &f.groups {
        for h in &g.hosts {
            let mut row = vec![
                h.hostname.clone(),
                g.cpu_model.clone(),
                g.kernel.clone(),
                h.run_id.clone(),
            ];
            row.extend(
                h.values
                    .iter()
                    .map(|v| v.map_or(String::new(), |v| v.to_string())),
            );
            row.push(
                h.flags
                    .iter()
                    .map(|x| f.columns[x.column].label.clone())
                    .collect::<Vec<_>>()
                    .join("; "),
            );
            row.push(if h.flags.is_empty() {
                String::new()
            } else {
                differences_text(h)
            });
            w.write_record(&row)?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The HTML section of a report whose runs span several hosts.
pub fn html_section(h: &mut String, f: &Fleet) {
    h.push_str("<section id=\"fleet\">\n<h2>fleet</h2>\n");
    let _ = writeln!(
        h,
        "<p class=\"meta\">The latest run of each of {} hosts, grouped by CPU model, kernel, storage and net device; {}.</p>",
        f.hosts(),
        esc(&rule_text(f))
    );
    for g in &f.groups {
        let _ = writeln!(h, "<h3>{}</h3>", esc(&heading(g)));
        h.push_str("<table class=\"fleet\">\n<tr><th>host</th>");
        for c in &f.columns {
            let _ = write!(h, "<th>{}</th>", esc(&c.label));
        }
        h.push_str("</tr>\n");
        for r in &g.hosts {
            let _ = write!(
                h,
                "<tr><th>{}<span class=\"id\">{}</span></th>",
                esc(&r.hostname),
                esc(&r.run_id)
            );
            for j in 0..f.columns.len() {
                let class = match r.flags.iter().find(|x| x.column == j) {
                    Some(x) if x.worse => " slower flagged",
                    Some(_) => " faster flagged",
                    None => "",
                };
                let _ = write!(h, "<td class=\"num{class}\">{}</td>", esc(&shown(f, r, j)));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    let flagged: Vec<_> = f.flagged().collect();
    if !flagged.is_empty() {
        h.push_str("<ul class=\"findings\">\n");
        for (_, r) in flagged {
            let text = flagged_text(f, r);
            let _ = writeln!(h, "<li><b>{}</b>: {}</li>", esc(&r.hostname), esc(&text));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</section>\n");
}
