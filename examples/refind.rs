//! Recomputes the findings of kept run documents with this source tree's
//! rules: `cargo run --release --example refind -- DOC.json...` rewrites
//! each document's findings in place. `scripts/findings-stability.sh -r
//! DIR -f` uses it on copies, to judge a change to the words on runs
//! already made instead of making new ones.

fn main() -> anyhow::Result<()> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        anyhow::bail!("usage: refind DOC.json...");
    }
    for p in paths {
        let path = std::path::Path::new(&p);
        let mut d = opcost::document::RunDoc::read_json(path)?;
        d.findings = opcost::suites::findings(&d.results);
        d.findings.retain(|f| f.value.is_finite());
        d.write_json(path)?;
    }
    Ok(())
}
