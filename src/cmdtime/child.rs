//! Running one command once: spawned in its own process group, stdin from
//! a file or /dev/null, output discarded unless asked, timed wall-clock
//! from just before the spawn to just after `wait4` reaped it (as hyperfine
//! and `time` count a run: the reaping is part of what a caller waits for),
//! with its CPU times and peak memory from `wait4`. Each run's environment
//! carries a variable of random length (0 to 4 KiB), as hyperfine's does:
//! the environment sits above the stack, so its size shifts the stack's
//! alignment, and one fixed size would bias every run of a program alike.
//!
//! No process outlives a run: after the command exits, whatever it left in
//! its process group is killed; a run past its time limit has its whole
//! group killed; Ctrl-C kills the group of the run in progress (the
//! terminal's SIGINT reaches only opcost's own foreground group).

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};

/// The process group of the run in progress (0 when none), for Ctrl-C.
static RUNNING: AtomicI32 = AtomicI32::new(0);

/// The variable of random length added to every run's environment.
pub const ENV_OFFSET_VAR: &str = "OPCOST_RANDOMIZED_ENVIRONMENT_OFFSET";
/// The longest value of [`ENV_OFFSET_VAR`], bytes (a page, as hyperfine).
const ENV_OFFSET_MAX: usize = 4096;

/// Set by the first Ctrl-C: finish nothing more, report what is done.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// First Ctrl-C: kill the run in progress and stop measuring (what is done
/// is reported). Second Ctrl-C: kill it again and exit at once.
pub fn install_ctrlc() {
    let _ = ctrlc::set_handler(|| {
        let again = STOP.swap(true, Ordering::SeqCst);
        kill_group(RUNNING.load(Ordering::SeqCst));
        if again {
            std::process::exit(130);
        }
        eprintln!("\nopcost: stopped; reporting the runs done so far (Ctrl-C again to abort)");
    });
}

/// True once the user pressed Ctrl-C.
pub fn stopped() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// SIGKILL to every process of group `pgid` (nothing for 0).
fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: plain system call; the group leader is never reaped while
        // its id is published, so the id cannot name someone else's group.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
    }
}

/// How every run of a command is started.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The program and its arguments (`/bin/sh -c LINE` in shell mode).
    pub argv: Vec<String>,
    /// Standard input: this file, or /dev/null.
    pub input: Option<PathBuf>,
    /// Pass stdout and stderr through instead of discarding them.
    pub show_output: bool,
    /// Kill the run's process group after this long.
    pub timeout: Option<Duration>,
    /// Working directory of the run (default: opcost's own).
    pub cwd: Option<PathBuf>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this status.
    Code(i32),
    /// Killed by this signal (not by opcost).
    Signal(i32),
    /// Killed by opcost after the time limit.
    TimedOut,
    /// Killed by opcost because the user pressed Ctrl-C.
    Interrupted,
}

impl Exit {
    /// True for exit status 0.
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }

    /// How it ended, in words.
    pub fn describe(self) -> String {
        match self {
            Exit::Code(c) => format!("exited with status {c}"),
            Exit::Signal(s) => format!("was killed by signal {s}"),
            Exit::TimedOut => "ran past its time limit and was killed".into(),
            Exit::Interrupted => "was interrupted".into(),
        }
    }
}

/// The figures of one run.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    /// Wall-clock time, spawn to reaped, ns.
    pub wall: f64,
    /// User CPU time of the process and its waited-for descendants, ns.
    pub user: f64,
    /// System CPU time, ns.
    pub sys: f64,
    /// Peak resident set size, bytes.
    pub max_rss: f64,
    /// How it ended.
    pub exit: Exit,
}

/// A spawned child whose process group is killed and whose pid is reaped
/// if it is dropped before [`Running::wait`] finished (an error, a panic).
struct Running {
    pid: i32,
    reaped: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            kill_group(self.pid);
            RUNNING.store(0, Ordering::SeqCst);
            let _ = wait4(self.pid);
        }
    }
}

/// Why a command could not be started at all.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program does not exist (in PATH or at the given path).
    #[error("command not found: {0}")]
    NotFound(String),
    /// The program exists but cannot be executed.
    #[error("cannot execute {0}: permission denied")]
    NotExecutable(String),
    /// Any other failure (out of processes, unreadable input...).
    #[error("{0:#}")]
    Other(anyhow::Error),
}

/// Runs the command once and measures it.
pub fn run_once(l: &Launch) -> Result<Usage, SpawnError> {
    let (prog, args) = l
        .argv
        .split_first()
        .ok_or_else(|| SpawnError::Other(anyhow!("empty command")))?;
    let stdin = match &l.input {
        Some(p) => Stdio::from(
            File::open(p)
                .with_context(|| format!("opening --input {}", p.display()))
                .map_err(SpawnError::Other)?,
        ),
        None => Stdio::null(),
    };
    let out = || {
        if l.show_output {
            Stdio::inherit()
        } else {
            Stdio::null()
        }
    };
    let mut cmd = Command::new(OsString::from(prog));
    cmd.args(args)
        .stdin(stdin)
        .stdout(out())
        .stderr(out())
        .env(
            ENV_OFFSET_VAR,
            "X".repeat(fastrand::usize(..ENV_OFFSET_MAX)),
        )
        .process_group(0);
    if let Some(d) = &l.cwd {
        cmd.current_dir(d);
    }

    let start = Instant::now();
    let child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SpawnError::NotFound(prog.clone()),
        std::io::ErrorKind::PermissionDenied => SpawnError::NotExecutable(prog.clone()),
        _ => SpawnError::Other(anyhow!(e).context(format!("starting {prog}"))),
    })?;
    let pid = child.id() as i32;
    let mut running = Running { pid, reaped: false };
    RUNNING.store(pid, Ordering::SeqCst);
    if stopped() {
        kill_group(pid); // Ctrl-C came between the spawn and the publication
    }
    let mut timed_out = false;
    if let Some(limit) = l.timeout {
        timed_out = !exits_within(pid, limit).map_err(SpawnError::Other)?;
        if timed_out {
            kill_group(pid);
        }
    }
    wait_exited(pid).map_err(SpawnError::Other)?;
    // The leader is a zombie until reaped, so its group id is still ours:
    // clear it for Ctrl-C, then kill whatever the command left behind. That
    // clean-up is opcost's own work, so its time is left out of the run.
    let cleanup = Instant::now();
    RUNNING.store(0, Ordering::SeqCst);
    kill_group(pid);
    let cleanup = cleanup.elapsed();
    let (status, ru) = wait4(pid).map_err(SpawnError::Other)?;
    let wall = start.elapsed().saturating_sub(cleanup);
    running.reaped = true;
    let exit = if timed_out {
        Exit::TimedOut
    } else if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else if stopped() {
        Exit::Interrupted
    } else {
        Exit::Signal(libc::WTERMSIG(status))
    };
    let ns = |tv: libc::timeval| tv.tv_sec as f64 * 1e9 + tv.tv_usec as f64 * 1e3;
    Ok(Usage {
        wall: wall.as_nanos() as f64,
        user: ns(ru.ru_utime),
        sys: ns(ru.ru_stime),
        max_rss: ru.ru_maxrss as f64 * 1024.0,
        exit,
    })
}

/// Waits up to `limit` for `pid` to exit (without reaping it); false when
/// it is still running at the deadline.
fn exits_within(pid: i32, limit: Duration) -> anyhow::Result<bool> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return Err(anyhow!(
            "--timeout needs pidfd_open (Linux 5.3 or later): {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the descriptor was just opened and is owned here.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut p = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(i32::MAX as u128) as i32
            + i32::from(!left.subsec_micros().is_multiple_of(1000));
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r > 0 {
            return Ok(true);
        }
        if r == 0 {
            if Instant::now() >= deadline {
                return Ok(false);
            }
            continue;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(anyhow!(err).context("waiting for the command"));
        }
    }
}

/// Blocks until `pid` has exited, leaving it unreaped (`WNOWAIT`).
fn wait_exited(pid: i32) -> anyhow::Result<()> {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-buffer for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: plain system call on a valid out-pointer.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(anyhow!(err).context(format!("waiting for child {pid}")));
        }
    }
}

/// Reaps `pid`: its wait status and resource usage.
fn wait4(pid: i32) -> anyhow::Result<(i32, libc::rusage)> {
    loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-buffer.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: plain system call on valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            return Ok((status, ru));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(anyhow!(err).context(format!("reaping child {pid}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(argv: &[&str]) -> Launch {
        Launch {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            input: None,
            show_output: false,
            timeout: None,
            cwd: None,
        }
    }

    #[test]
    fn true_and_false_report_their_status() {
        let _g = crate::os::child::test_lock();
        let u = run_once(&launch(&["true"])).unwrap();
        assert_eq!(u.exit, Exit::Code(0));
        assert!(u.wall > 0.0 && u.max_rss > 0.0);
        assert_eq!(run_once(&launch(&["false"])).unwrap().exit, Exit::Code(1));
    }

    #[test]
    fn every_run_sees_a_padding_variable_of_at_most_a_page() {
        let _g = crate::os::child::test_lock();
        let probe = format!(
            "test ${{#{ENV_OFFSET_VAR}}} -le {ENV_OFFSET_MAX} && test -n \"${{{ENV_OFFSET_VAR}+set}}\""
        );
        let u = run_once(&launch(&["/bin/sh", "-c", &probe])).unwrap();
        assert_eq!(u.exit, Exit::Code(0));
    }

    #[test]
    fn a_missing_program_is_named() {
        let _g = crate::os::child::test_lock();
        if crate::emulation_exception(
            "qemu-user runs posix_spawn's clone(CLONE_VM | CLONE_VFORK) as a fork: the failed exec is not passed back, the child exits 127",
        ) {
            return;
        }
        match run_once(&launch(&["opcost-no-such-program"])) {
            Err(SpawnError::NotFound(p)) => assert_eq!(p, "opcost-no-such-program"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_run_starts_in_its_working_directory() {
        let _g = crate::os::child::test_lock();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker"), "x").unwrap();
        let mut l = launch(&["test", "-f", "marker"]);
        assert_eq!(run_once(&l).unwrap().exit, Exit::Code(1));
        l.cwd = Some(dir.path().to_path_buf());
        assert_eq!(run_once(&l).unwrap().exit, Exit::Code(0));
    }

    #[test]
    fn a_time_limit_kills_the_run() {
        let _g = crate::os::child::test_lock();
        let mut l = launch(&["sleep", "30"]);
        l.timeout = Some(Duration::from_millis(100));
        let u = run_once(&l).unwrap();
        assert_eq!(u.exit, Exit::TimedOut);
        assert!(u.wall < 20e9, "{}", u.wall);
    }
}
