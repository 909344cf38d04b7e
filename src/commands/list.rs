//! `opcost list`: the benchmarks on this machine, their unit and summary.

use comfy_table::Table;
use comfy_table::presets::NOTHING;

use crate::cli::ListArgs;
use crate::host::Host;
use crate::suites;

/// Prints the benchmarks matching the pattern (all when none).
pub fn execute(args: &ListArgs) -> anyhow::Result<i32> {
    let host = Host::detect();
    let patterns: Vec<String> = args.pattern.iter().cloned().collect();
    let benches = suites::select(suites::all_benches(&host), &patterns, &host)?;
    let mut t = Table::new();
    t.load_style(NOTHING)
        .set_header(vec!["id", "unit", "summary"]);
    for b in &benches {
        t.add_row(vec![b.id(), b.unit().label(), b.summary()]);
    }
    println!("{t}");
    println!("\n{} benchmarks", benches.len());
    Ok(0)
}
