//! Emulated machines: their timings are the emulator's, so only what does
//! not depend on them is held: every document reads and replays, every row
//! has a result or a reason, and the machine's description names the shape
//! the emulator was given (its README's `Shape:` line).

use super::*;

/// The shape an emulated machine's README states, as `key=value` pairs
/// (`Shape: arch=x86_64 cpus=8 sockets=2 threads_per_core=2 numa_nodes=2
/// classes=same-cpu,same-core,same-l3,cross-package`).
fn stated_shape(dir: &Path) -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(dir.join("README.md"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let line = readme
        .lines()
        .find_map(|l| l.strip_prefix("Shape: "))
        .unwrap_or_else(|| panic!("{}: no `Shape:` line in its README", dir.display()));
    line.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("key=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// The lines of a machine description with their runs of blanks made one
/// space (`sockets                    2` reads `sockets 2`).
fn described(host: &opcost::host::Host) -> Vec<String> {
    host.render_text()
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// What in `host` differs from the stated shape, each named.
fn shape_misses(host: &opcost::host::Host, shape: &[(String, String)]) -> Vec<String> {
    let lines = described(host);
    let has = |s: &str| lines.iter().any(|l| l == s);
    let mut out = Vec::new();
    for (k, v) in shape {
        let (label, field) = match k.as_str() {
            "arch" => ("architecture", Some(host.cpu.arch.clone())),
            "cpus" => ("logical CPUs", Some(host.logical_cpus.to_string())),
            "sockets" => ("sockets", host.cpu.sockets.map(|n| n.to_string())),
            "threads_per_core" => (
                "threads per core",
                host.cpu.threads_per_core.map(|n| n.to_string()),
            ),
            "numa_nodes" => ("NUMA nodes", host.cpu.numa_nodes.map(|n| n.to_string())),
            "classes" => {
                let line = lines
                    .iter()
                    .find(|l| l.starts_with("placement classes "))
                    .cloned()
                    .unwrap_or_default();
                let named = line.matches(" (").count();
                let want: Vec<&str> = v.split(',').collect();
                if named != want.len() || !want.iter().all(|c| line.contains(&format!("{c} ("))) {
                    out.push(format!("classes {v}, described as `{line}`"));
                }
                continue;
            }
            _ => panic!("unknown key {k} in a `Shape:` line"),
        };
        if field.as_deref() != Some(v.as_str()) {
            out.push(format!("{k}={v}, recorded {field:?}"));
        }
        if !has(&format!("{label} {v}")) {
            out.push(format!("{k}={v}, not described as `{label} {v}`"));
        }
    }
    out
}

#[test]
fn emulated_runs_read_and_replay_and_name_their_machines_shape() {
    let dirs = machine_dirs(true);
    assert!(!dirs.is_empty(), "no emulated machine in the corpus");
    for dir in dirs {
        let machine = dir.file_name().unwrap().to_string_lossy().into_owned();
        let shape = stated_shape(&dir);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
            .collect();
        files.sort();
        let mut runs = 0;
        for path in &files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == "env.json.gz" {
                // `opcost env --json`: the description alone
                let mut text = String::new();
                flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
                    .read_to_string(&mut text)
                    .unwrap();
                let host: opcost::host::Host =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{machine}/{name}: {e}"));
                let misses = shape_misses(&host, &shape);
                assert!(misses.is_empty(), "{machine}/{name}: {misses:?}");
                continue;
            }
            runs += 1;
            let doc = read_run(path);
            let misses = shape_misses(&doc.host, &shape);
            assert!(misses.is_empty(), "{machine}/{name}: {misses:?}");
            assert!(!doc.results.is_empty(), "{machine}/{name}: no results");
            for m in &doc.results {
                assert!(
                    m.median.is_finite() && m.median > 0.0 && m.ci_low <= m.median,
                    "{machine}/{name}: {} {} [{}, {}]",
                    m.id,
                    m.median,
                    m.ci_low,
                    m.ci_high
                );
            }
            let failed: Vec<String> = doc
                .skipped
                .iter()
                .filter(|s| s.failed)
                .map(|s| format!("{}: {}", s.id, s.reason))
                .collect();
            assert!(failed.is_empty(), "{machine}/{name}: {failed:?}");
            assert!(
                doc.skipped.iter().all(|s| !s.reason.is_empty()),
                "{machine}/{name}: a row skipped without its reason"
            );
            // where the shape states its placement classes: the rows were
            // measured in them, and the cache-line round trip has a row in
            // each class but the CPU's own
            let classes: BTreeSet<&str> = shape
                .iter()
                .filter(|(k, _)| k == "classes")
                .flat_map(|(_, v)| v.split(','))
                .collect();
            let class_of = |m: &opcost::harness::Measurement| {
                m.details
                    .as_ref()
                    .and_then(|d| d.get("class"))
                    .and_then(|c| c.as_str())
                    .map(str::to_string)
            };
            for m in doc.results.iter().filter(|_| !classes.is_empty()) {
                if let Some(c) = class_of(m) {
                    assert!(
                        classes.contains(c.as_str()),
                        "{machine}/{name}: {} in class {c}",
                        m.id
                    );
                }
            }
            let c2c: BTreeSet<String> = doc
                .results
                .iter()
                .filter(|m| m.id.starts_with("topology.c2c."))
                .filter_map(class_of)
                .collect();
            if !c2c.is_empty() && !classes.is_empty() {
                let want: BTreeSet<String> = classes
                    .iter()
                    .filter(|c| **c != "same-cpu")
                    .map(|c| c.to_string())
                    .collect();
                assert_eq!(c2c, want, "{machine}/{name}: topology.c2c's classes");
            }
            // the NUMA latency matrix: a row for each node's CPUs reading
            // each node's memory
            let numa = doc
                .results
                .iter()
                .filter(|m| m.id.starts_with("memory.numa.latency/"))
                .count();
            if numa > 0 {
                let nodes = doc.host.cpu.numa_nodes.unwrap_or(1);
                assert_eq!(numa, nodes * nodes, "{machine}/{name}: NUMA latency rows");
            }
            if let Some(mx) = &doc.matrix {
                // every CPU's row of the core-to-core matrix, every pair measured
                assert_eq!(mx.cpus.len(), doc.host.logical_cpus, "{machine}/{name}");
                for (i, row) in mx.ns.iter().enumerate() {
                    for (j, v) in row.iter().enumerate() {
                        assert_eq!(v.is_some(), i != j, "{machine}/{name}: pair {i}, {j}");
                    }
                }
            }
            let findings = opcost::suites::findings(&doc.results);
            println!(
                "{machine}/{name}: {} results, {} skipped, {} findings; shape {}",
                doc.results.len(),
                doc.skipped.len(),
                findings.len(),
                shape
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        assert!(runs >= 1, "{machine}: no run document");
    }
}
