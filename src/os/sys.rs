//! Thin system-call helpers: a call retried while a signal interrupts it,
//! and private anonymous mappings.

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

/// Maps `len` bytes of private anonymous read-write memory (zeroed); the
/// caller unmaps it.
pub fn map_anon(len: usize) -> std::io::Result<*mut libc::c_void> {
    // SAFETY: a fresh private anonymous mapping; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p)
}

/// Maps `len` bytes of private anonymous memory in base pages on every
/// machine, whatever its THP setting (one page-table entry per base page);
/// the caller unmaps it.
pub fn map_base_pages(len: usize) -> std::io::Result<*mut libc::c_void> {
    let p = map_anon(len)?;
    // SAFETY: advice on our own mapping; failure only leaves the default.
    unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    Ok(p)
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

    #[test]
    fn base_pages_map_zeroed_writable_memory() {
        let len = 3 * 4096;
        let p = map_base_pages(len).unwrap();
        // SAFETY: the mapping just made, len bytes long.
        let s = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) };
        assert!(s.iter().all(|&b| b == 0));
        s[len - 1] = 1;
        // SAFETY: unmapping our own mapping once.
        assert_eq!(unsafe { libc::munmap(p, len) }, 0);
    }
}
