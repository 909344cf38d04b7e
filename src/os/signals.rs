//! Ctrl-C, the same way in every command: each Ctrl-C raises the command's
//! stop flag (it finishes the step in progress and reports what is done)
//! and runs its `each` hook; the first prints a note; where the command has
//! an abort hook, a second Ctrl-C runs it and exits at once with 130.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};

/// Work a Ctrl-C handler does besides raising the flag.
pub type Hook = Box<dyn Fn() + Send + 'static>;

/// What a command does on Ctrl-C.
#[derive(Default)]
pub struct OnCtrlC {
    /// Printed on standard error at the first Ctrl-C.
    pub note: Option<&'static str>,
    /// Run at every Ctrl-C, after the flag is raised.
    pub each: Option<Hook>,
    /// Run at the second Ctrl-C, before exiting with 130; without it a
    /// second Ctrl-C only raises the flag again.
    pub abort: Option<Hook>,
}

/// Installs the process's Ctrl-C handler for `stop` (an `Arc<AtomicBool>`
/// or a `&'static AtomicBool`). A process has one: the last call wins, and
/// a failure to install (a handler already set by a library) is ignored,
/// leaving the default (the process ends).
pub fn on_ctrl_c<S>(stop: S, on: OnCtrlC)
where
    S: Deref<Target = AtomicBool> + Send + 'static,
{
    let _ = ctrlc::set_handler(move || {
        let again = stop.swap(true, Ordering::SeqCst);
        if let Some(each) = &on.each {
            each();
        }
        match (&on.abort, again) {
            (Some(abort), true) => {
                abort();
                std::process::exit(130);
            }
            (_, false) => {
                if let Some(note) = on.note {
                    eprintln!("\n{note}");
                }
            }
            (None, true) => {}
        }
    });
}
