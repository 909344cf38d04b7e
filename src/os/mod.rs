//! Operating-system helpers that benchmarks of any suite share and that
//! know nothing of measuring: starting, capping and reaping child
//! processes, finding opcost's own executable, ending a helper process,
//! handling Ctrl-C, C stdio streams. CPU pinning lives in
//! [`crate::harness::affinity`], which the runner uses too.
//!
//! Why a module of its own: IPC peers and process benchmarks both fork
//! children; with the helpers here neither suite reaches into the other.

pub mod child;
pub mod fs;
pub mod signals;
pub mod stdio;

use std::path::PathBuf;

/// Ends a helper process (opcost executed again to serve a run): exit code
/// 0 when `result` is fine, else 1 after printing the error, prefixed with
/// `who`, to stderr.
pub fn exit_with(who: &str, result: anyhow::Result<()>) -> ! {
    let code = match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{who}: {e:#}");
            1
        }
    };
    std::process::exit(code);
}

/// This very executable, even if its file was replaced since it started
/// (`/proc/self/exe`), else the path it was started from.
pub fn self_exe() -> std::io::Result<PathBuf> {
    let this = PathBuf::from("/proc/self/exe");
    if this.exists() {
        Ok(this)
    } else {
        std::env::current_exe()
    }
}
