//! One module per subcommand. Each takes its parsed arguments and returns
//! an exit code or an error; `main` maps errors to exit codes.

pub mod ab;
pub mod cmd;
pub mod compare;
pub mod env;
pub mod export;
pub mod fleet;
pub mod import;
pub mod list;
pub mod push;
pub mod report;
pub mod run;
pub mod runs;
pub mod serve;
pub mod shared;
pub mod show;
pub mod source;
pub mod trend;
pub mod worker;

/// A mistake in what the user asked for (exit code 2), as opposed to a
/// failure while doing it (exit code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Builds a [`UsageError`] as an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// The exit code for an error: 2 for usage errors, 1 otherwise.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<crate::suites::NoMatch>().is_some()
    }) {
        2
    } else {
        1
    }
}

/// Lets output piped into `head` and the like end quietly, as other tools
/// do: restores the default SIGPIPE (the Rust runtime ignores it, which
/// turns a closed pipe into a panic in `print!`). Not for use while
/// benchmarks run: a peer that closes its end must be an error, not a death.
pub fn quiet_broken_pipe() {
    // SAFETY: setting a signal disposition to its default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
