//! The host descriptions, collapsed: grouped, rows that differ between the
//! runs first and highlighted, the caches as a small table.

use std::fmt::Write;

use super::{esc, open_runs_table};
use crate::document::RunDoc;
use crate::host::CacheInfo;
use crate::units::human_bytes;

/// The group a flattened host key belongs to, by its first segment.
fn host_group(key: &str) -> &'static str {
    let first = key.split('.').next().unwrap_or(key);
    match first {
        "cpu" | "logical_cpus" => "CPU",
        "freq" | "governor" => "frequency",
        "caches" => "caches",
        "mem_total_bytes" | "mem_available_bytes" | "memory" | "thp" => "memory",
        "kernel" | "clocksource" | "clocksources_available" => "kernel and clock",
        "vulnerabilities" => "CPU vulnerabilities and mitigations",
        "virt" => "virtualization",
        "software" => "software",
        "settings" => "settings: environment, cgroup, CPUs, scheduling",
        _ => "general",
    }
}

/// The order of the host groups.
const HOST_GROUPS: [&str; 10] = [
    "general",
    "CPU",
    "frequency",
    "caches",
    "memory",
    "kernel and clock",
    "CPU vulnerabilities and mitigations",
    "virtualization",
    "software",
    "settings: environment, cgroup, CPUs, scheduling",
];

/// Each run's host description as `key: text` rows, and the keys of all
/// runs but the caches in first-appearance order.
struct Described {
    blocks: Vec<Vec<(String, String)>>,
    keys: Vec<String>,
}

impl Described {
    /// The descriptions of the runs' hosts.
    fn of(docs: &[RunDoc]) -> Described {
        let blocks: Vec<Vec<(String, String)>> = docs
            .iter()
            .map(|d| {
                let mut rows = Vec::new();
                if let Ok(v) = serde_json::to_value(&d.host) {
                    flatten("", &v, &mut rows);
                }
                rows
            })
            .collect();
        let mut keys: Vec<String> = Vec::new();
        for b in &blocks {
            for (k, _) in b {
                if !keys.contains(k) && host_group(k) != "caches" {
                    keys.push(k.clone());
                }
            }
        }
        Described { blocks, keys }
    }

    /// Run `i`'s value of `k` (empty when it lacks it).
    fn value(&self, i: usize, k: &str) -> String {
        self.blocks[i]
            .iter()
            .find(|(x, _)| x == k)
            .map_or(String::new(), |(_, v)| v.clone())
    }

    /// True when some run's value of `k` is not the first run's.
    fn differs(&self, k: &str) -> bool {
        (1..self.blocks.len()).any(|i| self.value(i, k) != self.value(0, k))
    }
}

/// The host descriptions, one column per run, group by group.
pub(super) fn section(h: &mut String, docs: &[RunDoc]) {
    let described = Described::of(docs);
    let n_diff = described
        .keys
        .iter()
        .filter(|k| described.differs(k))
        .count();
    let _ = writeln!(
        h,
        "<section id=\"hosts\">\n<details>\n<summary><b>host description</b>{}</summary>",
        if docs.len() > 1 {
            format!(
                " — {n_diff} rows differ between the runs (shown first in each group, highlighted)"
            )
        } else {
            String::new()
        }
    );
    for group in HOST_GROUPS {
        if group == "caches" {
            caches_table(h, docs);
            topology_pictures(h, docs);
        } else {
            group_table(h, docs, &described, group);
        }
    }
    h.push_str("</details>\n</section>\n");
}

/// The rows of one group, those that differ first; nothing when it has none.
fn group_table(h: &mut String, docs: &[RunDoc], described: &Described, group: &str) {
    let mut rows: Vec<&str> = described
        .keys
        .iter()
        .map(String::as_str)
        .filter(|k| host_group(k) == group)
        .collect();
    if rows.is_empty() {
        return;
    }
    rows.sort_by_key(|k| !described.differs(k));
    let _ = writeln!(h, "<h3>{group}</h3>");
    open_runs_table(h, "hosts", "", docs);
    h.push_str("</tr>\n");
    for k in rows {
        let _ = write!(
            h,
            "<tr{}><th>{}</th>",
            if described.differs(k) {
                " class=\"diff\""
            } else {
                ""
            },
            esc(k)
        );
        for i in 0..docs.len() {
            let _ = write!(h, "<td>{}</td>", esc(&described.value(i, k)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Each run's machine shape as `opcost env` draws it (packages, dies,
/// nodes, L3 groups, L2 clusters, and the placement classes with their
/// pairs), side by side; nothing when no run recorded one.
fn topology_pictures(h: &mut String, docs: &[RunDoc]) {
    let pictures: Vec<Vec<String>> = docs.iter().map(|d| d.host.topology_lines()).collect();
    if pictures.iter().all(Vec::is_empty) {
        return;
    }
    h.push_str("<h3>topology</h3>\n");
    open_runs_table(h, "hosts topology", "", docs);
    h.push_str("</tr>\n<tr><th>shape</th>");
    for p in &pictures {
        if p.is_empty() {
            h.push_str("<td>not recorded</td>");
        } else {
            let _ = write!(h, "<td><pre>{}</pre></td>", esc(&p.join("\n")));
        }
    }
    h.push_str("</tr>\n</table>\n");
}

/// The caches of each run: one row per level and kind, size, line, ways
/// and sharing in the cells.
fn caches_table(h: &mut String, docs: &[RunDoc]) {
    let mut levels: Vec<(u8, String)> = Vec::new();
    for d in docs {
        for c in &d.host.caches {
            let key = (c.level, c.kind.clone());
            if !levels.contains(&key) {
                levels.push(key);
            }
        }
    }
    if levels.is_empty() {
        return;
    }
    levels.sort();
    h.push_str("<h3>caches</h3>\n");
    open_runs_table(h, "caches", "cache", docs);
    h.push_str("</tr>\n");
    for (level, kind) in levels {
        let cells: Vec<String> = docs
            .iter()
            .map(|d| {
                d.host
                    .caches
                    .iter()
                    .find(|c| c.level == level && c.kind == kind)
                    .map_or("—".to_string(), cache_text)
            })
            .collect();
        let differs = cells.iter().any(|c| *c != cells[0]);
        let _ = write!(
            h,
            "<tr{}><th>L{level} {}</th>",
            if differs { " class=\"diff\"" } else { "" },
            esc(&kind.to_lowercase())
        );
        for c in cells {
            let _ = write!(h, "<td>{}</td>", esc(&c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// A cache in words: size, line, ways, sharing and instances.
fn cache_text(c: &CacheInfo) -> String {
    let mut parts = vec![human_bytes(c.size_bytes as f64)];
    if let Some(l) = c.line_bytes {
        parts.push(format!("{l} B lines"));
    }
    if let Some(w) = c.ways {
        parts.push(format!("{w}-way"));
    }
    if let Some(s) = &c.shared_cpus {
        parts.push(format!("shared by CPUs {s}"));
    }
    if let Some(n) = c.instances {
        parts.push(format!("×{n}"));
    }
    parts.join(", ")
}

/// Flattens a JSON value into `key: text` rows (nested keys dotted).
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value as V;
    match v {
        V::Object(map) => {
            for (k, x) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        V::Array(items) if items.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let parts: Vec<String> = items.iter().map(|x| scalar(prefix, x)).collect();
            let text = if parts.is_empty() {
                "—".to_string()
            } else {
                parts.join(", ")
            };
            out.push((prefix.to_string(), text));
        }
        V::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|x| match x {
                    V::Object(m) => m
                        .iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| format!("{k} {}", scalar(k, v)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    other => other.to_string(),
                })
                .collect();
            out.push((prefix.to_string(), parts.join("; ")));
        }
        other => out.push((prefix.to_string(), scalar(prefix, other))),
    }
}

/// A scalar as text; byte counts (`*_bytes`) in binary units.
fn scalar(key: &str, v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "—".to_string(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if key.ends_with("bytes") => {
            n.as_f64().map(human_bytes).unwrap_or_else(|| n.to_string())
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_shape_is_drawn_per_run_where_recorded() {
        let dir = crate::host::fixtures::epyc(1).write();
        let epyc = RunDoc::started_now(
            crate::host::Host::detect_at(dir.path()),
            crate::harness::Profile::Quick,
        );
        let bare =
            RunDoc::started_now(crate::host::Host::default(), crate::harness::Profile::Quick);
        let mut h = String::new();
        topology_pictures(&mut h, &[epyc.clone(), bare.clone()]);
        assert!(h.contains("<table class=\"hosts topology\">"), "{h}");
        assert!(h.contains("cross-package (0, 32)"), "{h}");
        assert!(h.contains("<td>not recorded</td>"), "{h}");
        let mut none = String::new();
        topology_pictures(&mut none, &[bare]);
        assert!(none.is_empty());
    }

    #[test]
    fn flatten_nests_and_formats_bytes() {
        let v = serde_json::json!({"a": {"b": 1}, "mem_bytes": 2048, "list": [1, 2],
            "caches": [{"level": 1, "size_bytes": 49152}]});
        let mut rows = Vec::new();
        flatten("", &v, &mut rows);
        assert!(rows.contains(&("a.b".into(), "1".into())));
        assert!(rows.contains(&("mem_bytes".into(), "2.00 KiB".into())));
        assert!(rows.contains(&("list".into(), "1, 2".into())));
        assert!(rows.contains(&("caches".into(), "level 1, size_bytes 48.0 KiB".into())));
    }
}
