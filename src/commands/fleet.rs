//! `opcost fleet [PATTERN...]`: the latest complete run of each host in the
//! history (local or shared), hosts grouped by CPU model and kernel, the
//! outliers of each group flagged with what may explain them (the method
//! is in [`crate::analysis::fleet`]).

use crate::analysis::fleet::{self, Rule};
use crate::analysis::trend::Method;
use crate::cli::FleetArgs;
use crate::report;
use crate::store::{Location, TrendFilter};

use super::source::Loader;
use super::usage;

/// Prints the fleet view.
pub fn execute(args: &FleetArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    let mut loader = Loader::new(db);
    let store = loader.store()?;
    let ids = store.latest_per_host(args.label.as_deref())?;
    if ids.is_empty() {
        return Err(usage(match &args.label {
            Some(l) => format!("no complete run labelled '{l}' in {}", store.shown()),
            None => format!(
                "no complete run in {}; `opcost run` or `opcost push` adds some",
                store.shown()
            ),
        }));
    }
    let docs = ids
        .iter()
        .map(|id| store.load(id))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let view = fleet::build(
        &docs,
        &args.patterns,
        Rule {
            k: args.k,
            margin: args.margin,
        },
    );
    let mut view = view;
    // Each host's history: change points it alone in its group went through.
    let filter = TrendFilter {
        label: args.label.clone(),
        ..TrendFilter::default()
    };
    let rows = store.trend_rows(&filter, &super::trend::selects(&args.patterns))?;
    let trend = super::trend::analyse(rows, &Method::default());
    fleet::flag_changes(&mut view, &trend);
    if view.columns.is_empty() {
        return Err(usage(if args.patterns.is_empty() {
            "none of the headline figures was measured in these runs; name benchmarks (`opcost fleet syscall`)".to_string()
        } else {
            format!(
                "no benchmark of the hosts' latest runs matches {}",
                args.patterns.join(" ")
            )
        }));
    }
    print!("{}", report::render_fleet(&view, args.format)?);
    Ok(0)
}
