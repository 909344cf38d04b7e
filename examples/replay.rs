//! Applies this source tree's phase rules to kept run documents:
//! `cargo run --release --example replay -- DOC.json...` rewrites each
//! document's results (rounds, estimates, intervals) and stability in
//! place, as `opcost::harness::replay` does for the corpus tests, so that
//! the yardsticks (compare-power.sh, findings-stability.sh -r) can judge a
//! change to those rules on runs already made. Findings are left as they
//! were: `refind` makes them again from the replayed results.

fn main() -> anyhow::Result<()> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        anyhow::bail!("usage: replay DOC.json...");
    }
    for p in paths {
        let path = std::path::Path::new(&p);
        let mut d = opcost::document::RunDoc::read_json(path)?;
        let planned = d.run.profile.rounds();
        let r = opcost::harness::replay::replay(&mut d.results, planned, d.stability.as_mut());
        d.write_json(path)?;
        eprintln!(
            "{p}: {} slow rounds kept as measured, {} corrected",
            r.unpredicted, r.corrected
        );
    }
    Ok(())
}
