//! Thin system-call helpers: a call retried while a signal interrupts it.

use nix::errno::{Errno, ErrnoSentinel};

/// Makes the call `call` until it does not fail with `EINTR`; its result
/// as `Errno::result` reads it. Inlined, so a timed loop that calls it
/// holds the bare system call.
#[inline(always)]
pub fn retry_eintr<S: ErrnoSentinel + PartialEq<S>>(
    mut call: impl FnMut() -> S,
) -> Result<S, Errno> {
    loop {
        match Errno::result(call()) {
            Err(Errno::EINTR) => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_call_is_made_again_and_other_results_pass_through() {
        let mut calls = 0;
        let r = retry_eintr(|| {
            calls += 1;
            if calls < 3 {
                Errno::EINTR.set();
                -1isize
            } else {
                7
            }
        });
        assert_eq!((r, calls), (Ok(7), 3));
        let r = retry_eintr(|| {
            Errno::EAGAIN.set();
            -1i32
        });
        assert_eq!(r, Err(Errno::EAGAIN));
    }
}
