//! `opcost trend [PATTERN...]`: each benchmark's runs on each host over
//! time, the change points in them and what changed in the host
//! description then (the method is in [`crate::analysis::trend`]).

use crate::analysis::trend::{History, HistoryTrend, Method, Point};
use crate::cli::TrendArgs;
use crate::host::Host;
use crate::report;
use crate::store::{Location, TrendFilter, TrendRows};

use super::source::Loader;
use super::usage;

/// Prints the change points.
pub fn execute(args: &TrendArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    if args.format.is_dashboard() {
        return Err(usage(
            "--format bmf and github-benchmark describe one run; a trend prints as text, md, csv or json",
        ));
    }
    let method = Method {
        alpha: args.alpha,
        min_change: args.min_change,
        ..Method::default()
    };
    let mut loader = Loader::new(db);
    let store = loader.store()?;
    let filter = TrendFilter {
        host: args.host.clone(),
        since: args.since.clone(),
        label: args.label.clone(),
    };
    let rows = store.trend_rows(&filter, &selects(&args.patterns))?;
    if rows.runs.is_empty() {
        if let Some(h) = &args.host {
            let mut hosts: Vec<String> = store
                .list(None, 0)?
                .into_iter()
                .map(|r| r.hostname)
                .collect();
            hosts.sort();
            hosts.dedup();
            if !hosts.contains(h) {
                return Err(usage(if hosts.is_empty() {
                    format!("no host '{h}': {} holds no run", store.shown())
                } else {
                    format!(
                        "no host '{h}' in {}; its hosts: {}",
                        store.shown(),
                        hosts.join(", ")
                    )
                }));
            }
        }
        return Err(usage(format!(
            "no complete run in {} matches{}{}{}",
            store.shown(),
            args.host
                .as_ref()
                .map_or(String::new(), |h| format!(" --host {h}")),
            args.since
                .as_ref()
                .map_or(String::new(), |s| format!(" --since {s}")),
            args.label
                .as_ref()
                .map_or(String::new(), |l| format!(" --label {l}")),
        )));
    }
    if rows.values.is_empty() {
        return Err(usage(format!(
            "no benchmark of these runs matches {}",
            args.patterns.join(" ")
        )));
    }
    let t = analyse(rows, &method);
    print!("{}", report::render_trend(&t, args.format)?);
    Ok(0)
}

/// Whether a benchmark id is one `patterns` select (all when there are none).
pub fn selects(patterns: &[String]) -> impl Fn(&str) -> bool + '_ {
    move |id| patterns.is_empty() || patterns.iter().any(|p| crate::pattern::matches(p, id))
}

/// The trend of the rows a history gave.
pub fn analyse(rows: TrendRows, method: &Method) -> HistoryTrend {
    let mut h = History {
        benches: rows.benches,
        ..History::default()
    };
    for r in rows.runs {
        // A host block this opcost cannot read counts as unknown facts.
        let host: Host = serde_json::from_str(&r.host).unwrap_or_default();
        h.add_run(r.id, r.started, r.hostname, r.profile, &host);
    }
    for v in &rows.values {
        let point = Point {
            median: v.median,
            ci_low: v.ci_low,
            ci_high: v.ci_high,
        };
        h.add_value(v.run, v.bench, point);
    }
    h.analyse(method)
}
