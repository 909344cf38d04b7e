//! Records what built opcost, so every run says which code and compiler
//! produced its numbers: `OPCOST_GIT_COMMIT` (`git rev-parse --short HEAD`,
//! empty outside a git checkout or without git) and `OPCOST_RUSTC_VERSION`
//! (`$RUSTC --version`). Neither failure stops the build. `OPCOST_TARGET`
//! is the target triple (`opcost --version` prints it).
//!
//! On x86_64 Linux the executable is linked with identical code folding
//! (`--icf=all`, rustc's own lld): generic functions instantiated for
//! different types often compile to the same machine code (drop glue, `Vec`
//! and iterator methods), and the linker keeps one copy. Rust promises no
//! distinct addresses for distinct functions, so nothing can tell. Set
//! `OPCOST_LINK_ICF=0` for a linker without it (GNU ld, Zig's:
//! scripts/release.sh).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=OPCOST_GIT_COMMIT={commit}");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = output(Command::new(rustc).arg("--version")).unwrap_or_default();
    println!("cargo:rustc-env=OPCOST_RUSTC_VERSION={version}");
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=OPCOST_TARGET={target}");
    println!("cargo:rerun-if-env-changed=OPCOST_LINK_ICF");
    let icf = std::env::var("OPCOST_LINK_ICF");
    if icf.as_deref() != Ok("0") && target == "x86_64-unknown-linux-gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
    for path in git_files_to_watch() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// Runs git in the package directory; None when git or the repository is missing.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    output(Command::new("git").arg("-C").arg(dir).args(args))
}

/// The command's first line of stdout when it succeeds and prints one.
fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().next()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}

/// HEAD, the branch it points to and packed-refs: a commit or a checkout
/// changes one of them, which reruns this script. Only existing files are
/// listed (cargo would rerun on every build for a missing one).
fn git_files_to_watch() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return files;
    };
    let mut path_of = |p: &str| {
        // Printed relative to the package directory, or absolute.
        if let Some(path) = git(&["rev-parse", "--git-path", p]) {
            let path = dir.join(path);
            if path.is_file() {
                files.push(path);
            }
        }
    };
    path_of("HEAD");
    path_of("packed-refs");
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        path_of(&branch);
    }
    files
}
