//! One module per subcommand, and the few helpers several of them share:
//! turning the flags of `run` and `ab` into the requests the plan is made
//! from, refusing flags that cannot go together before anything runs
//! ([`request`]), naming runs ([`source`]), saving them locally and to a
//! `--db` ([`shared`]), the progress bar, and the round worker's entry point
//! ([`worker`]). Each subcommand takes its parsed arguments and returns an
//! exit code or an error; `main` maps errors to exit codes.

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
pub mod request;
pub mod run;
pub mod runs;
pub mod serve;
pub mod shared;
pub mod show;
pub mod source;
pub mod trend;
pub mod worker;

pub use crate::error::{UsageError, exit_code, usage};

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

/// The progress bar of a run that should take `total`, drawn on standard
/// error: position in milliseconds of that time, the ETA, a message.
pub fn progress_bar(total: std::time::Duration) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let bar =
        ProgressBar::with_draw_target(Some(total.as_millis() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {percent:>3}% ETA {eta} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}
