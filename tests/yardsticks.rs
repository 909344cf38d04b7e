//! The yardstick scripts' own logic, checked where it is not a timing run:
//! the findings-stability script's rule for which changes of words between
//! runs contradict (scripts/findings_words.py, its self-test).

use std::process::Command;

#[test]
fn the_findings_yardstick_counts_opposites_and_not_adjacent_flips() {
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/findings_words.py"
        ))
        .arg("--self-test")
        .output()
        .expect("python3 runs (scripts/install-test-deps.sh installs it)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("self-test passed"));
}
