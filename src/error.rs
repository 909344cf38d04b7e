//! The two kinds of failure a command ends with: a mistake in what the user
//! asked for (exit code 2) and a failure while doing it (exit code 1).
//! Here, at the bottom, so that any layer can refuse bad input as such.

/// A mistake in what the user asked for (exit code 2), as opposed to a
/// failure while doing it (exit code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Builds a [`UsageError`] as an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// The exit code for an error: 2 for usage errors (a pattern that selects
/// nothing is one), 1 otherwise.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if e.chain().any(|c| {
        c.downcast_ref::<UsageError>().is_some()
            || c.downcast_ref::<crate::pattern::NoMatch>().is_some()
    }) {
        2
    } else {
        1
    }
}
