//! Recomputes the findings of kept run documents with this source tree's
//! rules: `cargo run --release --example refind -- DOC.json...` rewrites
//! each document's findings in place. `scripts/findings-stability.sh -r
//! DIR -f` uses it on copies, to judge a change to the words on runs
//! already made instead of making new ones.
//!
//! With `--settle` the documents are taken as one host's history in the
//! order given, oldest first: each one's findings are settled with the
//! documents before it (newest first, as `run` reads its history), whose
//! findings are those this replay gave them. So a change to the words
//! that settle with history is judged on runs already made too.

fn main() -> anyhow::Result<()> {
    let mut paths: Vec<String> = std::env::args().skip(1).collect();
    let settle = paths.first().is_some_and(|a| a == "--settle");
    if settle {
        paths.remove(0);
    }
    if paths.is_empty() {
        anyhow::bail!("usage: refind [--settle] DOC.json...");
    }
    let mut done: Vec<opcost::document::RunDoc> = Vec::new();
    for p in paths {
        let path = std::path::Path::new(&p);
        let mut d = opcost::document::RunDoc::read_json(path)?;
        d.findings = if settle {
            let earlier: Vec<opcost::analysis::history_words::Earlier> = done
                .iter()
                .rev()
                .map(|e| opcost::analysis::history_words::Earlier {
                    results: &e.results,
                    findings: &e.findings,
                })
                .collect();
            opcost::analysis::history_words::findings_with_history(
                &d.results,
                &earlier,
                opcost::suites::findings,
            )
        } else {
            opcost::suites::findings(&d.results)
        };
        d.findings.retain(|f| f.value.is_finite());
        d.write_json(path)?;
        if settle {
            done.push(d);
        }
    }
    Ok(())
}
