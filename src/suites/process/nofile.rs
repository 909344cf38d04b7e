//! The descriptor-limit tax on spawning. A runtime that does not trust
//! close-on-exec closes every descriptor from 3 up to the soft
//! RLIMIT_NOFILE in the child before `exec`: it pays for the *limit*, not
//! for the descriptors open — with the 1,048,576 many containers start
//! with, a million `close` calls per spawn. `close_range(2)` (Linux 5.9)
//! and libc's `closefrom` (glibc 2.34) close what is open in one call.
//!
//! The rows fork from the small helper (see `small_parent`), whose own
//! soft limit is set to the point: opcost's limit is never touched. Where
//! the point is above the hard limit the helper raises the hard limit too,
//! which needs CAP_SYS_RESOURCE; without it the point is skipped with the
//! kernel's reason. The child does only system calls between fork and exec.

use anyhow::{anyhow, bail};

/// The soft RLIMIT_NOFILE at each point of the sweep: the common default,
/// a raised server limit, and the container default.
pub const NOFILE_POINTS: [u64; 3] = [1024, 65_536, 1_048_576];

/// The largest point a quick run measures: the loop at 1,048,576 costs a
/// tenth of a second or more per spawn, so it waits for the default profile.
pub const NOFILE_QUICK_MAX: u64 = 65_536;

/// The first descriptor a child closes (stdin, stdout and stderr stay).
const FIRST: libc::c_uint = 3;

/// How the child closes its descriptors before exec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    /// It does not: exec's close-on-exec is trusted.
    None,
    /// `close(fd)` for every fd from 3 up to the soft RLIMIT_NOFILE.
    Loop,
    /// One `close_range(3, ~0U, 0)` system call.
    Range,
    /// libc's `closefrom(3)`.
    Closefrom,
}

impl Close {
    /// Its name in requests, ids and details.
    pub fn name(self) -> &'static str {
        match self {
            Close::None => "none",
            Close::Loop => "loop",
            Close::Range => "close_range",
            Close::Closefrom => "closefrom",
        }
    }

    /// The way named `s`.
    pub fn parse(s: &str) -> anyhow::Result<Close> {
        [Close::None, Close::Loop, Close::Range, Close::Closefrom]
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| anyhow!("unknown way to close descriptors {s:?}"))
    }

    /// What a child runs to close its descriptors this way, resolved
    /// before the fork; an error says why this system cannot.
    pub fn closer(self) -> anyhow::Result<Closer> {
        let closefrom = match self {
            Close::Range if !close_range_works() => bail!(
                "this kernel has no close_range(2) (Linux 5.9 added it): {}",
                std::io::Error::last_os_error()
            ),
            Close::Closefrom => Some(
                libc_closefrom()
                    .ok_or_else(|| anyhow!("this libc has no closefrom (glibc 2.34 added it)"))?,
            ),
            _ => None,
        };
        Ok(Closer {
            how: self,
            closefrom,
        })
    }
}

/// The signature of libc's `closefrom`.
type ClosefromFn = unsafe extern "C" fn(libc::c_int);

/// libc's `closefrom`, looked up at run time so that opcost also runs on
/// a libc without it.
fn libc_closefrom() -> Option<ClosefromFn> {
    // SAFETY: looking a symbol up in the loaded objects; a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"closefrom".as_ptr()) };
    // SAFETY: glibc's closefrom has exactly this signature.
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, ClosefromFn>(p) })
}

/// Whether the kernel has close_range(2): closing the empty range at the
/// very top closes nothing and succeeds where the call exists.
fn close_range_works() -> bool {
    // SAFETY: a system call with integer arguments that closes no open descriptor.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            libc::c_uint::MAX,
            libc::c_uint::MAX,
            0,
        ) == 0
    }
}

/// A way to close descriptors, ready to run in a forked child.
pub struct Closer {
    how: Close,
    closefrom: Option<ClosefromFn>,
}

impl Closer {
    /// Closes every descriptor from 3 up this closer's way.
    ///
    /// # Safety
    /// Closes descriptors the caller may own: only for a child between
    /// fork and exec. It makes system calls only (close, getrlimit,
    /// close_range, and glibc's closefrom, which is async-signal-safe).
    pub unsafe fn run(&self) {
        match self.how {
            Close::None => {}
            Close::Loop => {
                let mut r = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                // SAFETY: a valid out-pointer.
                if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
                    return;
                }
                let top = libc::c_int::try_from(r.rlim_cur).unwrap_or(libc::c_int::MAX);
                for fd in FIRST as libc::c_int..top {
                    // SAFETY: closing a descriptor number; most are not open (EBADF).
                    unsafe { libc::close(fd) };
                }
            }
            Close::Range => {
                // SAFETY: integer arguments.
                unsafe { libc::syscall(libc::SYS_close_range, FIRST, libc::c_uint::MAX, 0) };
            }
            Close::Closefrom => {
                if let Some(f) = self.closefrom {
                    // SAFETY: libc's closefrom with a descriptor number.
                    unsafe { f(FIRST as libc::c_int) };
                }
            }
        }
    }
}

/// The capability that raises a hard limit (linux/capability.h).
const CAP_SYS_RESOURCE: u32 = 24;

/// Whether [`set_own`] of `n` will be refused here, as far as can be told
/// without trying: `n` above the kernel's fs.nr_open, or above the hard
/// limit without CAP_SYS_RESOURCE in the effective set. The run-time
/// estimate counts no time for such a point.
pub fn refused_here(n: u64) -> bool {
    let hard = super::fds::nofile().ok().map(|(_, hard)| hard);
    let cap_sys_resource = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .map(|caps| caps & (1 << CAP_SYS_RESOURCE) != 0);
    nr_open().is_some_and(|max| n > max)
        || hard.is_some_and(|h| n > h) && cap_sys_resource == Some(false)
}

/// The kernel's most descriptors a process may have (fs.nr_open).
fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
}

/// Sets this process's soft RLIMIT_NOFILE to `n`, raising the hard limit
/// to `n` when it is lower (CAP_SYS_RESOURCE); the error says what to do.
pub fn set_own(n: u64) -> anyhow::Result<()> {
    let hard = match super::fds::nofile() {
        Ok((_, hard)) => hard,
        Err(e) => bail!("getrlimit: {e}"),
    };
    let want = libc::rlimit {
        rlim_cur: n,
        rlim_max: hard.max(n),
    };
    // SAFETY: a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match nr_open() {
        Some(max) if n > max => bail!(
            "a soft RLIMIT_NOFILE of {n} is above the kernel's fs.nr_open ({max}) ({e}); raise it with `sysctl fs.nr_open={n}` as root"
        ),
        _ if n > hard => bail!(
            "a soft RLIMIT_NOFILE of {n} needs the hard limit raised from {hard}, which needs CAP_SYS_RESOURCE ({e}); raise it with `ulimit -Hn {n}` as root, limits.conf or the service's LimitNOFILE"
        ),
        _ => bail!("setting the soft RLIMIT_NOFILE to {n}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in [Close::None, Close::Loop, Close::Range, Close::Closefrom] {
            assert_eq!(Close::parse(c.name()).unwrap(), c);
        }
        assert!(Close::parse("everything").is_err());
    }

    #[test]
    fn every_closer_resolves_or_says_why() {
        for c in [Close::None, Close::Loop, Close::Range, Close::Closefrom] {
            if let Err(e) = c.closer() {
                let e = e.to_string();
                assert!(e.contains("added it"), "{c:?}: {e}");
            }
        }
        assert!(Close::Loop.closer().is_ok());
    }

    #[test]
    fn a_child_that_closes_leaves_no_descriptor_above_stderr() {
        let _g = crate::os::child::test_lock();
        for how in [Close::Loop, Close::Range, Close::Closefrom] {
            let Ok(closer) = how.closer() else { continue };
            let keep = std::fs::File::open("/dev/null").unwrap();
            let fd = std::os::fd::AsRawFd::as_raw_fd(&keep);
            assert!(fd >= 3);
            // SAFETY: the child only makes system calls, then _exit.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: in the child.
                unsafe {
                    closer.run();
                    let open = libc::fcntl(fd, libc::F_GETFD) != -1;
                    libc::_exit(i32::from(open));
                }
            }
            assert!(pid > 0);
            let mut st = 0;
            // SAFETY: our own child.
            assert_eq!(unsafe { libc::waitpid(pid, &mut st, 0) }, pid);
            assert!(libc::WIFEXITED(st));
            assert_eq!(libc::WEXITSTATUS(st), 0, "{how:?} left fd {fd} open");
        }
    }

    #[test]
    fn a_point_above_the_kernel_maximum_is_known_refused_before_it_runs() {
        assert!(refused_here(u64::MAX));
        assert!(!refused_here(0));
        assert!(!super::super::fds::refused_here(0));
    }

    #[test]
    fn a_limit_above_the_kernel_maximum_says_what_to_raise() {
        // No kernel allows 2^32 descriptors (fs.nr_open stays below 2^31),
        // so the call fails and this process's limit stays as it was.
        let mut before = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: a valid out-pointer.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut before) };
        let e = set_own(u64::from(u32::MAX)).unwrap_err().to_string();
        assert!(
            e.contains("nr_open") || e.contains("CAP_SYS_RESOURCE"),
            "{e}"
        );
        let mut after = before;
        // SAFETY: a valid out-pointer.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut after) };
        assert_eq!(
            (before.rlim_cur, before.rlim_max),
            (after.rlim_cur, after.rlim_max)
        );
    }
}
