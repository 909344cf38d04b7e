//! What a run's benchmarks took against their budgets, per area:
//! `cargo run --release --example budgets -- DOC.json...` reads each run
//! document's `run.wall_s` (each benchmark's time with its preparation and
//! calibration) and prints, per area, the budgets of those benchmarks at
//! the run's profile, what a first run expects of them (their budget, or
//! what their operations need when they outlast it), the time they took
//! and the ratio to what was expected, worst first: where a first run's
//! estimate goes wrong. `--groups N` lists, below each document, the N
//! interleaved groups (or lone benchmarks) whose time exceeded what was
//! expected of them by most: where to look first.

use std::collections::BTreeMap;

fn main() -> anyhow::Result<()> {
    let mut paths: Vec<String> = std::env::args().skip(1).collect();
    let mut groups = 0;
    if let Some(i) = paths.iter().position(|a| a == "--groups") {
        let n = paths.get(i + 1).and_then(|n| n.parse().ok());
        let Some(n) = n else {
            anyhow::bail!("--groups needs a count");
        };
        groups = n;
        paths.drain(i..i + 2);
    }
    if paths.is_empty() {
        anyhow::bail!("usage: budgets [--groups N] DOC.json...");
    }
    for p in paths {
        let d = opcost::document::RunDoc::read_json(std::path::Path::new(&p))?;
        if d.run.wall_s.is_empty() {
            println!("{p}: no run.wall_s (made before it was recorded)");
            continue;
        }
        let profile = d.run.profile;
        let mut areas: BTreeMap<String, (f64, f64, f64, usize)> = BTreeMap::new();
        let mut by_group: BTreeMap<String, (f64, f64, usize)> = BTreeMap::new();
        let ran: Vec<_> = opcost::suites::all_benches(&d.host)
            .into_iter()
            .filter(|b| d.run.wall_s.contains_key(b.id()))
            .collect();
        let opts = opcost::harness::RunOptions::new(profile);
        let expected = opcost::plan::expected_each(&ran, &opts);
        for (b, (_, x)) in ran.iter().zip(&expected) {
            let took = d.run.wall_s[b.id()];
            let g = by_group
                .entry(b.interleave().unwrap_or(b.id()).to_string())
                .or_default();
            g.0 += x.as_secs_f64();
            g.1 += took;
            g.2 += 1;
            let area = b.id().split('.').next().unwrap_or("").to_string();
            let e = areas.entry(area).or_default();
            e.0 += b.budget(profile).as_secs_f64();
            e.1 += x.as_secs_f64();
            e.2 += took;
            e.3 += 1;
        }
        let mut rows: Vec<_> = areas.into_iter().collect();
        rows.sort_by(|a, b| (b.1.2 / b.1.1).total_cmp(&(a.1.2 / a.1.1)));
        let (mut budget, mut expected, mut took) = (0.0, 0.0, 0.0);
        println!(
            "{p}: {} profile, announced {:.0} s, took {:.0} s",
            profile.name(),
            d.run.estimate_s.unwrap_or(f64::NAN),
            d.run.duration_s
        );
        println!("  area        benches   budget s   expected s   took s   took/expected");
        for (area, (b, x, t, n)) in rows {
            println!(
                "  {area:<10} {n:>8} {b:>10.1} {x:>12.1} {t:>8.1} {:>15.2}",
                t / x
            );
            budget += b;
            expected += x;
            took += t;
        }
        println!(
            "  all                 {budget:>10.1} {expected:>12.1} {took:>8.1} {:>15.2}",
            took / expected
        );
        if groups > 0 {
            let mut g: Vec<_> = by_group.into_iter().collect();
            g.sort_by(|a, b| (b.1.1 - b.1.0).total_cmp(&(a.1.1 - a.1.0)));
            println!(
                "  group (or benchmark)                              members   expected s   took s"
            );
            for (key, (x, t, n)) in g.into_iter().take(groups) {
                println!("  {key:<50} {n:>5} {x:>12.1} {t:>8.1}");
            }
        }
    }
    Ok(())
}
