//! The core-to-core matrix of a run (`opcost run --matrix`) as a heatmap:
//! the CPUs in topology order on both axes, each cell's colour the pair's
//! round trip on a log scale, lines where the package, the NUMA node or
//! the L3 group changes along the order (so a class is a block), and the
//! pairs per class as a table beside it.

use std::fmt::Write;

use super::esc;
use crate::document::{CoreMatrix, RunDoc};
use crate::host::Topology;
use crate::units::human_ns;

/// Pixels per cell: small matrices get big cells, 256 CPUs fit 768 px.
fn cell_px(n: usize) -> f64 {
    (768.0 / n.max(1) as f64).clamp(3.0, 40.0)
}

/// The colour of `v` between `lo` and `hi` on a log scale: pale yellow
/// (fast) through orange to dark red (slow).
fn colour(v: f64, lo: f64, hi: f64) -> String {
    let t = if hi > lo {
        ((v.ln() - lo.ln()) / (hi.ln() - lo.ln())).clamp(0.0, 1.0)
    } else {
        0.0
    };
    // Three stops: #ffffcc, #fd8d3c, #800026.
    let stops = [
        (255.0, 255.0, 204.0),
        (253.0, 141.0, 60.0),
        (128.0, 0.0, 38.0),
    ];
    let (a, b, u) = if t < 0.5 {
        (stops[0], stops[1], t * 2.0)
    } else {
        (stops[1], stops[2], (t - 0.5) * 2.0)
    };
    let mix = |x: f64, y: f64| (x + (y - x) * u).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Where the group of a level changes between consecutive CPUs of the
/// order: the indices i where cpus[i-1] and cpus[i] differ, per level.
fn boundaries(m: &CoreMatrix, t: &Topology) -> Vec<(usize, &'static str)> {
    let key = |c: usize| {
        t.place(c)
            .map(|p| (p.package, p.node, p.l3))
            .unwrap_or((None, None, None))
    };
    let mut out = Vec::new();
    for i in 1..m.cpus.len() {
        let (a, b) = (key(m.cpus[i - 1]), key(m.cpus[i]));
        if a.0 != b.0 {
            out.push((i, "package"));
        } else if a.1 != b.1 {
            out.push((i, "node"));
        } else if a.2 != b.2 {
            out.push((i, "l3"));
        }
    }
    out
}

/// The heatmap of one matrix, as an SVG.
pub fn svg(m: &CoreMatrix, t: &Topology) -> String {
    let n = m.cpus.len();
    let px = cell_px(n);
    let label_every = (n as f64 / 32.0).ceil().max(1.0) as usize;
    let margin = 36.0;
    let side = px * n as f64;
    let values: Vec<f64> = m.ns.iter().flatten().flatten().copied().collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{w:.0}\" viewBox=\"0 0 {w:.0} {w:.0}\" role=\"img\" aria-label=\"core-to-core round trip, {n} CPUs\">",
        w = side + margin + 4.0
    );
    for (i, row) in m.ns.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let (x, y) = (margin + j as f64 * px, margin + i as f64 * px);
            match v {
                Some(v) => {
                    let _ = write!(
                        s,
                        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{px:.1}\" height=\"{px:.1}\" fill=\"{}\"><title>CPUs {} and {}: {}</title></rect>",
                        colour(*v, lo, hi),
                        m.cpus[i],
                        m.cpus[j],
                        esc(&human_ns(*v))
                    );
                }
                None => {
                    let _ = write!(
                        s,
                        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{px:.1}\" height=\"{px:.1}\" fill=\"#eee\"/>"
                    );
                }
            }
        }
    }
    for (i, &cpu) in m.cpus.iter().enumerate() {
        if i % label_every != 0 {
            continue;
        }
        let c = margin + (i as f64 + 0.5) * px;
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{c:.1}\" font-size=\"9\" text-anchor=\"end\" dominant-baseline=\"middle\">{cpu}</text><text x=\"{c:.1}\" y=\"{:.1}\" font-size=\"9\" text-anchor=\"middle\">{cpu}</text>",
            margin - 3.0,
            margin - 4.0
        );
    }
    for (i, level) in boundaries(m, t) {
        let at = margin + i as f64 * px;
        let width = match level {
            "package" => 2.5,
            "node" => 1.5,
            _ => 0.8,
        };
        let _ = write!(
            s,
            "<line class=\"{level}\" x1=\"{at:.1}\" y1=\"{margin}\" x2=\"{at:.1}\" y2=\"{e:.1}\" stroke=\"#222\" stroke-width=\"{width}\"/><line class=\"{level}\" x1=\"{margin}\" y1=\"{at:.1}\" x2=\"{e:.1}\" y2=\"{at:.1}\" stroke=\"#222\" stroke-width=\"{width}\"/>",
            e = margin + side
        );
    }
    s.push_str("</svg>");
    s
}

/// The matrix section: one heatmap and class table per run that has a
/// matrix; nothing when none has. Returns the number of charts.
pub fn section(h: &mut String, docs: &[RunDoc], names: &[String]) -> usize {
    let with: Vec<(usize, &RunDoc, &CoreMatrix)> = docs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((i, d, d.matrix.as_ref()?)))
        .collect();
    if with.is_empty() {
        return 0;
    }
    h.push_str("<section id=\"matrix\"><h2>core-to-core matrix</h2>\n");
    for (i, d, m) in &with {
        let _ = writeln!(
            h,
            "<h3>{}{}</h3>\n<p class=\"meta\">Cache-line round trip ({}) between {} CPUs ({}), {:.1} ms per pair; the line on {}. Darker is slower (log scale); lines mark where the package (thick), the NUMA node or the L3 group (thin) changes.{}</p>",
            super::swatch(*i),
            esc(&names[*i]),
            esc(&m.write),
            m.cpus.len(),
            esc(&m.sampling),
            m.per_pair_ms,
            esc(&m.line),
            if m.interrupted {
                " Interrupted: grey cells were not measured."
            } else {
                ""
            }
        );
        h.push_str("<figure class=\"chart\" data-kind=\"heatmap\">");
        h.push_str(&svg(m, &d.host.topology));
        h.push_str("</figure>");
        h.push_str("\n<table class=\"matrix-classes\">\n<tr><th>class</th><th>pairs</th><th>median</th><th>fastest</th><th>slowest</th></tr>\n");
        for c in m.by_class(&d.host.topology) {
            let _ = writeln!(
                h,
                "<tr><td>{} <span class=\"meta\">({})</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                c.class.name(),
                esc(c.class.describe()),
                c.pairs,
                esc(&human_ns(c.median)),
                esc(&human_ns(c.min)),
                esc(&human_ns(c.max))
            );
        }
        h.push_str("</table>\n");
    }
    h.push_str("</section>\n");
    with.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heatmap_has_a_cell_per_pair_and_marks_the_package_boundary() {
        let dir = crate::host::fixtures::epyc(1).write();
        let host = crate::host::Host::detect_at(dir.path());
        // CPUs 0, 1 (one CCX), 8 (other CCX, same node), 32 (other package).
        let cpus = vec![0, 1, 8, 32];
        let v = |a: usize, b: usize| -> Option<f64> {
            (a != b).then(|| match (cpus[a], cpus[b]) {
                (0, 1) | (1, 0) => 30.0,
                (x, y) if x / 32 != y / 32 => 300.0,
                _ => 90.0,
            })
        };
        let m = CoreMatrix {
            write: "cas".into(),
            cpus: cpus.clone(),
            sampling: "one CPU per core".into(),
            ns: (0..4).map(|a| (0..4).map(|b| v(a, b)).collect()).collect(),
            per_pair_ms: 8.0,
            line: "the measuring CPU's node".into(),
            seconds: 0.1,
            interrupted: false,
        };
        let s = svg(&m, &host.topology);
        assert_eq!(s.matches("<title>").count(), 12);
        assert_eq!(s.matches("fill=\"#eee\"").count(), 4);
        assert!(s.contains("class=\"package\""), "{s}");
        assert!(s.contains("CPUs 0 and 32: 300 ns"), "{s}");
        // The slowest cell is the darkest colour, the fastest the palest.
        assert!(s.contains("#800026") && s.contains("#ffffcc"));
        let mut doc = crate::document::RunDoc::started_now(host, crate::harness::Profile::Quick);
        doc.matrix = Some(m);
        let mut h = String::new();
        assert_eq!(
            section(&mut h, std::slice::from_ref(&doc), &["r".into()]),
            1
        );
        assert!(h.contains("<td>cross-package"), "{h}");
        let mut none = String::new();
        doc.matrix = None;
        assert_eq!(section(&mut none, &[doc], &["r".into()]), 0);
        assert!(none.is_empty());
    }
}
