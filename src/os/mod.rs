//! Operating-system helpers that know nothing of measuring, shared by the
//! suites, the harness and the commands: children ([`child`]: capped,
//! reaped, forked with signals blocked, the forked peer), files ([`fs`]:
//! free space, a file's size fitted to it, dropping the page cache), a round
//! worker's pool of populated mappings ([`mempool`]), NUMA memory policy and
//! page placement ([`numa`]), Ctrl-C ([`signals`]), C stdio streams
//! ([`stdio`]), temporary swap areas ([`swap`]), a call retried after a
//! signal and anonymous mappings ([`sys`]); and here, opcost's own
//! executable and the end of a helper process. CPU pinning lives in
//! [`crate::harness::affinity`], which the runner uses too.
//!
//! Why a module of its own: what two suites both need lives a floor below
//! every suite (IPC peers and process benchmarks both fork children;
//! storage, text and swap rows all size files), so no suite reaches into
//! another.

pub mod child;
pub mod fs;
pub mod mempool;
pub mod numa;
pub mod signals;
pub mod stdio;
pub mod swap;
pub mod sys;

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

/// A path that names this executable in any process, for a program that
/// another program starts (a wrapper such as `nice` or `taskset`): there
/// `/proc/self/exe` names the wrapper itself. The file's own path while
/// it is still the file this process runs; `/proc/PID/exe` of this
/// process once it was replaced or deleted (valid while this process
/// runs); else the path it was started from.
pub fn self_exe_for_others() -> std::io::Result<PathBuf> {
    match std::fs::read_link("/proc/self/exe") {
        Ok(path) if path.exists() && !path.to_string_lossy().ends_with(" (deleted)") => Ok(path),
        Ok(_) => Ok(PathBuf::from(format!("/proc/{}/exe", std::process::id()))),
        Err(_) => std::env::current_exe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_path_for_others_names_this_very_file() {
        let path = self_exe_for_others().unwrap();
        // Another process resolves it to this executable, not to itself.
        assert!(!path.starts_with("/proc/self"), "{}", path.display());
        // Opened, not stat'ed: qemu-user opens the emulated program for
        // /proc/self/exe but lets stat follow the link to qemu itself.
        let (mine, theirs) = (
            std::fs::File::open("/proc/self/exe")
                .unwrap()
                .metadata()
                .unwrap(),
            std::fs::metadata(&path).unwrap(),
        );
        assert_eq!((mine.dev(), mine.ino()), (theirs.dev(), theirs.ino()));
    }
}
