//! Child-process hygiene shared by every benchmark that starts children: a
//! fixed cap on children alive at once, a guard that kills and reaps a
//! child that was not waited for (an error, a panic, Ctrl-C), the
//! exit-status check, the signal mask held around `fork`/`vfork`/`clone`,
//! and the forked peer that runs the far end of a two-process benchmark.
//!
//! Why block signals around fork: between `fork` and `exec` the child still
//! has opcost's Ctrl-C handler installed; a Ctrl-C arriving in that window
//! would run the handler a second time in the child, which opcost reads as
//! "abort now". glibc's `posix_spawn` blocks every signal around its
//! `clone` for the same reason, so the rows stay comparable.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{anyhow, bail};

/// Most children started by benchmarks alive at once; a spawn beyond it is refused.
/// Every benchmark reaps its child before starting the next, so the cap is
/// a safety net: it is never reached unless reaping failed.
pub const MAX_CHILDREN: usize = 4;

/// Children currently alive (spawned and not yet reaped).
static ALIVE: AtomicUsize = AtomicUsize::new(0);

/// The right to have one more child alive, released on drop.
pub struct Slot(());

impl Slot {
    /// Reserves a slot, or fails when [`MAX_CHILDREN`] are already alive.
    pub fn take() -> anyhow::Result<Slot> {
        if ALIVE.fetch_add(1, Ordering::SeqCst) >= MAX_CHILDREN {
            ALIVE.fetch_sub(1, Ordering::SeqCst);
            bail!(
                "refusing to start a child: {MAX_CHILDREN} are already alive (earlier children were not reaped)"
            );
        }
        Ok(Slot(()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        ALIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Children currently alive, for tests.
#[cfg(test)]
pub(crate) fn alive() -> usize {
    ALIVE.load(Ordering::SeqCst)
}

/// A started child process. Dropping it without [`Child::wait`] kills it
/// (SIGKILL) and reaps it, so no child outlives its benchmark.
pub struct Child {
    pid: libc::pid_t,
    reaped: bool,
    _slot: Slot,
}

impl Child {
    /// Takes charge of `pid`, counted against `slot`.
    pub fn new(pid: libc::pid_t, slot: Slot) -> Child {
        Child {
            pid,
            reaped: false,
            _slot: slot,
        }
    }

    /// Waits for the child to end and checks that it exited with status 0.
    pub fn wait(self) -> anyhow::Result<()> {
        check_status(self.wait_status()?)
    }

    /// Waits for the child to end and returns its raw wait status, for a
    /// child whose exit code is its answer.
    pub fn wait_status(mut self) -> anyhow::Result<libc::c_int> {
        let status = waitpid(self.pid)?;
        self.reaped = true;
        Ok(status)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: the pid is our own unreaped child, so it cannot have been recycled.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            let _ = waitpid(self.pid);
        }
    }
}

/// `waitpid(pid, 0)`, retried on EINTR; returns the raw wait status.
fn waitpid(pid: libc::pid_t) -> anyhow::Result<libc::c_int> {
    loop {
        let mut status = 0;
        // SAFETY: plain system call on a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(status);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return Err(anyhow!(
            "waiting for child {pid}: {err} (is SIGCHLD ignored by the environment?)"
        ));
    }
}

/// Accepts a wait status of a child that exited with 0 — or that died of
/// SIGINT, which only happens when the user pressed Ctrl-C (the run is
/// stopping and will discard the unfinished sample anyway).
pub fn check_status(status: libc::c_int) -> anyhow::Result<()> {
    if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => Ok(()),
            127 => bail!("the child could not exec its program (exit status 127)"),
            code => bail!("the child exited with status {code}, expected 0"),
        }
    } else if libc::WIFSIGNALED(status) {
        match libc::WTERMSIG(status) {
            libc::SIGINT => Ok(()),
            sig => bail!("the child was killed by signal {sig}"),
        }
    } else {
        bail!("unexpected wait status {status:#x}")
    }
}

/// Every signal blocked on the calling thread until dropped (see the module doc).
pub struct SignalsBlocked {
    old: libc::sigset_t,
}

impl SignalsBlocked {
    /// Blocks every blockable signal on the calling thread.
    pub fn all() -> SignalsBlocked {
        let mut full = MaybeUninit::<libc::sigset_t>::uninit();
        let mut old = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigfillset initialises `full`; pthread_sigmask fills `old`
        // (it cannot fail with a valid `how`, and glibc keeps its own
        // internal signals unblocked).
        unsafe {
            libc::sigfillset(full.as_mut_ptr());
            libc::pthread_sigmask(libc::SIG_SETMASK, full.as_ptr(), old.as_mut_ptr());
            SignalsBlocked {
                old: old.assume_init(),
            }
        }
    }
}

impl Drop for SignalsBlocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `all`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// Makes the child `cmd` starts receive `sig` when the thread that started
/// it ends, so a parent killed outright (SIGKILL, SIGTERM) leaves no child
/// running: with SIGINT the child stops and cleans up as on Ctrl-C.
pub fn dies_with_parent(cmd: &mut std::process::Command, sig: libc::c_int) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs between fork and exec and makes one
    // async-signal-safe system call.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, sig) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Exit code of a forked peer whose parent was already gone.
pub const EXIT_ORPHAN: i32 = 3;
/// Exit code of a forked peer that could not pin itself.
pub const EXIT_PIN: i32 = 4;

/// Forks a peer: a child that dies with its parent (PR_SET_PDEATHSIG),
/// ignores SIGINT (the parent handles Ctrl-C for both), runs pinned to
/// `cpu` when one is given, then runs `body` and exits with its code.
/// Returns the child's pid; the caller owns it (reaps or kills it).
///
/// `body` runs in the child after `fork`, from a process that may have
/// other threads: it must only make async-signal-safe calls (no
/// allocation, no locks) and its captures are never dropped in the child.
/// The parent drops its copy of `body` (and so its copies of the child's
/// ends) before returning.
pub fn fork_peer<F: FnMut() -> i32>(
    cpu: Option<usize>,
    mut body: F,
) -> anyhow::Result<libc::pid_t> {
    // Everything the child needs is prepared before the fork.
    // SAFETY: a zeroed cpu_set_t is an empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if let Some(c) = cpu {
        if c >= libc::CPU_SETSIZE as usize {
            bail!("CPU {c} is out of range");
        }
        // SAFETY: c is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the child branch only makes async-signal-safe calls (prctl,
    // getppid, signal, sched_setaffinity, the body's system calls) and
    // leaves through _exit without running destructors.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: plain system calls on valid arguments; _exit never returns.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                libc::_exit(EXIT_ORPHAN);
            }
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            if cpu.is_some() && libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                libc::_exit(EXIT_PIN);
            }
            let code = body();
            libc::_exit(code)
        }
    }
    drop(body);
    if pid < 0 {
        return Err(anyhow::Error::new(std::io::Error::last_os_error()).context("fork"));
    }
    Ok(pid)
}

/// Serialises the tests that start children, so that the slot count they see is their own
/// and a test that reaps any child (`waitpid(-1)`) reaps no other test's: every unit test
/// that starts a process takes it.
#[cfg(test)]
pub(crate) fn test_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32) -> libc::c_int {
        (code & 0xff) << 8
    }

    #[test]
    fn status_zero_and_sigint_are_accepted() {
        assert!(check_status(exited(0)).is_ok());
        assert!(check_status(libc::SIGINT).is_ok());
    }

    #[test]
    fn failures_are_explained() {
        let e = check_status(exited(127)).unwrap_err().to_string();
        assert!(e.contains("could not exec"), "{e}");
        let e = check_status(exited(3)).unwrap_err().to_string();
        assert!(e.contains("status 3"), "{e}");
        let e = check_status(libc::SIGKILL).unwrap_err().to_string();
        assert!(e.contains("signal 9"), "{e}");
    }

    #[test]
    fn slots_are_capped_and_released() {
        let _g = test_lock();
        let held: Vec<Slot> = (0..MAX_CHILDREN).map(|_| Slot::take().unwrap()).collect();
        assert_eq!(alive(), MAX_CHILDREN);
        let e = Slot::take().err().expect("the cap must refuse").to_string();
        assert!(e.contains("already alive"), "{e}");
        drop(held);
        assert_eq!(alive(), 0);
        assert!(Slot::take().is_ok());
    }

    #[test]
    fn dropping_an_unwaited_child_kills_and_reaps_it() {
        let _g = test_lock();
        let slot = Slot::take().unwrap();
        let c = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep is installed");
        let pid = c.id() as libc::pid_t;
        std::mem::forget(c); // the guard owns it now
        drop(Child::new(pid, slot));
        // Reaped: the pid is no longer our child.
        let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(r, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ECHILD)
        );
    }
}
