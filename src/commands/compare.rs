//! `opcost compare A B [PATTERN...]`: two runs side by side with the ratio
//! B/A, its 95% confidence interval and a verdict per benchmark (method in
//! [`crate::analysis::compare`]).

use crate::store::Location;

use crate::analysis::compare::{Comparison, Gate, compare_sides};
use crate::cli::{CompareArgs, Format};

/// Earlier runs of a host read for its noise floor, newest first.
const HISTORY_RUNS: usize = 20;
use crate::report::{self, comparison};

use super::source::Loader;

/// Prints the comparison.
pub fn execute(args: &CompareArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    if args.format.is_dashboard() {
        return Err(super::usage(
            "--format bmf and github-benchmark describe one run: use them with `opcost run`, `show` or `export` (a dashboard compares the runs it is fed), and `compare --fail-on` for a gate",
        ));
    }
    let mut loader = Loader::new(db);
    let a = loader.load_side(&args.a)?;
    let b = loader.load_side(&args.b)?;
    // Earlier runs of A's host give each benchmark's run-to-run noise
    // floor; a history that cannot be opened only means there is none.
    let history = if args.no_history {
        Vec::new()
    } else {
        let except: Vec<String> = a.iter().chain(&b).map(|d| d.run.id.clone()).collect();
        loader
            .history(&a[0], &except, HISTORY_RUNS)
            .unwrap_or_default()
    };
    let c = compare_sides(&a, &b, &args.patterns, args.threshold, &history);
    let shared = c.shared_runs();
    if !args.fail_on.is_empty() && !shared.is_empty() {
        return Err(super::usage(format!(
            "--fail-on: run {} is on both sides, so the gate would compare a run with itself and could not fail; give A a baseline run and B the run to check",
            shared.join(", ")
        )));
    }
    let passed = print_gated(&c, &args.fail_on, args.format)?;
    if !args.patterns.is_empty() && c.rows.is_empty() && c.only_a.is_empty() && c.only_b.is_empty()
    {
        eprintln!(
            "note: no benchmark of either run matches {}",
            args.patterns.join(" ")
        );
    }
    Ok(if passed { 0 } else { 1 })
}

/// Prints a comparison, and before it the rows that fail `gates` (when
/// any gate is given); true when every gate passed. `ab` gates the same way.
pub(super) fn print_gated(c: &Comparison, gates: &[Gate], format: Format) -> anyhow::Result<bool> {
    let failures = c.gate(gates);
    let body = report::render_comparison(c, format)?;
    if !gates.is_empty() {
        // The offending rows first: on standard output before a table, on
        // standard error before a document, which must stay parseable.
        let gate = comparison::gate_report(c, &failures);
        match format {
            Format::Text | Format::Md => println!("{gate}"),
            _ => eprint!("{gate}"),
        }
    }
    print!("{body}");
    Ok(failures.passed())
}
