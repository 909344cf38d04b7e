//! Every way to start work, timed from the call to the reaped exit: fork,
//! vfork, clone, posix_spawn, popen, system(), `std::process::Command`, and
//! a thread; and the parent memory the growth curve makes fork copy.
//!
//! One operation is one child started, run to its end and reaped (a thread:
//! spawned and joined), so no child outlives the operation that made it.
//! Each operation is also timed on its own: on machines where waking a
//! process on another CPU is slow, the child's placement makes the
//! per-operation times bimodal, and the harness says so.
//!
//! vfork is issued as a raw system call in inline assembly whose child side
//! never leaves the assembly (it only calls execve or exit_group): a vfork
//! child shares the parent's stack, and Rust code cannot be trusted to run
//! in it. The clone row uses `libc::clone` with a stack of its own, and
//! gives the child a stdout pipe as popen does, so it does popen's job
//! without the shell.
//!
//! system() ignores SIGINT in the caller while its child runs (POSIX). A
//! Ctrl-C typed in the terminal reaches the child too, and opcost delivers
//! it to itself when system() returns; a SIGINT sent to opcost's pid alone
//! during that window is lost, as for any program that calls system().

use std::hint::black_box;
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};

use super::sched::{Waiting, run_delay_ns};
use super::target::{ExecPtrs, ExecTarget};
use crate::harness::warnings::Warning;
use crate::harness::{Ctx, PrepareError, Timed};
use crate::host::mem_available_now;
use crate::os::child::{Child, SignalsBlocked, Slot, check_status};
use crate::units::human_bytes;

/// A way to start work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// fork(); the child calls _exit(0).
    ForkExit,
    /// vfork(); the child calls _exit(0).
    VforkExit,
    /// fork(); the child execs the target.
    ForkExec,
    /// vfork(); the child execs the target.
    VforkExec,
    /// posix_spawn() of the target.
    PosixSpawn,
    /// clone(CLONE_VM | CLONE_VFORK) on a stack of its own; the child's
    /// stdout is a pipe to the parent (popen's job without the shell) and
    /// it execs the target.
    CloneVforkExec,
    /// popen() of the target through /bin/sh, then pclose().
    Popen,
    /// system() of the target through /bin/sh.
    System,
    /// Rust's std::process::Command::status().
    Command,
    /// std::thread::spawn + join.
    Thread,
}

impl Method {
    /// True when the method runs a program (needs an exec target).
    pub fn execs(self) -> bool {
        !matches!(self, Method::ForkExit | Method::VforkExit | Method::Thread)
    }

    /// True when the method needs the raw vfork of this module.
    fn raw_vfork(self) -> bool {
        matches!(self, Method::VforkExit | Method::VforkExec)
    }
}

/// Memory the parent has touched (written page by page), so that fork has
/// page tables to copy. Unmapped on drop.
pub struct Region {
    addr: usize,
    len: usize,
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `Region::touched` and is unmapped once.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}

/// Memory left free beside a growth-curve region, so the machine is not pushed into reclaim.
pub const HEADROOM: u64 = 256 << 20;

/// The region of the current growth point, shared by the benchmarks of one
/// interleaved group (prepared together, so alive together). A group
/// releases it before the next is prepared, so only one size is ever
/// alive; otherwise the parent would have touched the sum.
static SHARED_REGION: Mutex<Option<(u64, Weak<Region>)>> = Mutex::new(None);

impl Region {
    /// A region of `bytes` touched page by page, shared with the other
    /// benchmarks of the same point; skipped when memory is short.
    pub fn shared(bytes: u64, ctx: &Ctx) -> Result<Arc<Region>, PrepareError> {
        let mut cache = SHARED_REGION.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((n, w)) = cache.as_ref()
            && *n == bytes
            && let Some(r) = w.upgrade()
        {
            return Ok(r);
        }
        *cache = None;
        let r = Arc::new(Region::touched(bytes, ctx)?);
        *cache = Some((bytes, Arc::downgrade(&r)));
        Ok(r)
    }

    /// Maps `bytes` of anonymous memory without huge pages and writes every page.
    fn touched(bytes: u64, ctx: &Ctx) -> Result<Region, PrepareError> {
        let avail = mem_available_now().ok_or_else(|| {
            PrepareError::Skip("cannot read MemAvailable from /proc/meminfo".into())
        })?;
        let need = bytes + HEADROOM;
        if avail < need {
            return Err(PrepareError::Skip(format!(
                "touching {} in the parent needs {} with headroom, only {} available now",
                human_bytes(bytes as f64),
                human_bytes(need as f64),
                human_bytes(avail as f64)
            )));
        }
        let len = usize::try_from(bytes)
            .map_err(|_| PrepareError::Skip("region larger than the address space".into()))?;
        let p = crate::os::sys::map_base_pages(len).map_err(|e| {
            PrepareError::Skip(format!(
                "cannot map {} for the parent: {e}",
                human_bytes(bytes as f64)
            ))
        })?;
        let region = Region {
            addr: p as usize,
            len,
        };
        let page = page_size();
        let base = p.cast::<u8>();
        for (i, off) in (0..len).step_by(page).enumerate() {
            if i % 4096 == 0 && ctx.stopping() {
                return Err(PrepareError::Skip("interrupted".into()));
            }
            // SAFETY: `off` is inside the mapping.
            unsafe { base.add(off).write_volatile(1) };
        }
        Ok(region)
    }
}

/// The size of a base page.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

/// Size of the stack given to the clone child (it only calls execve).
const CLONE_STACK: usize = 64 << 10;

/// A prepared way to start work, timed per operation.
pub struct Spawner {
    method: Method,
    target: Option<ExecTarget>,
    ptrs: Option<ExecPtrs>,
    stack: Vec<u8>,
    _region: Option<Arc<Region>>,
    op_times: Vec<f64>,
    waiting: Waiting,
    warnings: Vec<String>,
    details: serde_json::Value,
}

impl Spawner {
    /// Prepares `method`, executing `exe` when it execs, with the parent
    /// holding `region`; starts one child to check it all works.
    pub fn new(
        method: Method,
        exe: Option<&std::path::Path>,
        region: Option<Arc<Region>>,
        ctx: &Ctx,
    ) -> Result<Spawner, PrepareError> {
        if method.raw_vfork() && !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            return Err(PrepareError::Skip(format!(
                "raw vfork is implemented for x86_64 and aarch64 only, not {}",
                std::env::consts::ARCH
            )));
        }
        let target = match (method.execs(), exe) {
            (true, Some(p)) => Some(ExecTarget::new(p)?),
            (true, None) => return Err(anyhow!("no program to exec").into()),
            (false, _) => None,
        };
        let mut details = serde_json::json!({
            "pinned_cpu": ctx.cpu,
            "rss_bytes": region.as_ref().map_or(0, |r| r.len),
        });
        if let Some(p) = exe {
            details["exe"] = p.display().to_string().into();
        }
        let mut warnings = Vec::new();
        if method == Method::Command {
            let (how, why) = command_path();
            details["command_uses"] = how.into();
            if how != "posix_spawn" {
                warnings.push(
                    Warning::CommandForks {
                        why: why.to_string(),
                    }
                    .to_string(),
                );
            }
            details["command_why"] = why.into();
        }
        let mut s = Spawner {
            method,
            ptrs: target.as_ref().map(ExecTarget::ptrs),
            target,
            stack: if method == Method::CloneVforkExec {
                vec![0; CLONE_STACK]
            } else {
                Vec::new()
            },
            _region: region,
            op_times: Vec::new(),
            waiting: Waiting::default(),
            warnings,
            details,
        };
        s.trial()?;
        Ok(s)
    }

    /// Adds a fact to the result's details.
    pub fn detail(&mut self, key: &str, value: serde_json::Value) {
        self.details[key] = value;
    }

    /// Adds a caveat to the result.
    pub fn warn(&mut self, w: Warning) {
        self.warnings.push(w.to_string());
    }

    /// Starts one child and turns the failures a machine can legitimately
    /// have (noexec temp dir, strict overcommit) into skips.
    fn trial(&mut self) -> Result<(), PrepareError> {
        match self.once() {
            Ok(()) => Ok(()),
            Err(e) => {
                let errno = e
                    .downcast_ref::<std::io::Error>()
                    .and_then(std::io::Error::raw_os_error);
                let exe = self.details["exe"]
                    .as_str()
                    .unwrap_or("the program")
                    .to_string();
                match errno {
                    Some(libc::EACCES) | Some(libc::EPERM) => Err(PrepareError::Skip(format!(
                        "cannot execute {exe} ({e}); a temp dir mounted noexec does this: set TMPDIR to a directory that allows exec"
                    ))),
                    Some(libc::ENOEXEC) => Err(PrepareError::Skip(format!(
                        "this kernel refuses the embedded exec target ({e})"
                    ))),
                    Some(libc::ENOMEM) | Some(libc::EAGAIN) => Err(PrepareError::Skip(format!(
                        "cannot start a child with this much parent memory ({e}); strict overcommit (vm.overcommit_memory=2) or a process limit"
                    ))),
                    _ => Err(PrepareError::Fail(e)),
                }
            }
        }
    }

    /// Starts one child (or thread), lets it finish and reaps it.
    fn once(&mut self) -> anyhow::Result<()> {
        match self.method {
            Method::ForkExit => fork_child(None),
            Method::ForkExec => fork_child(self.ptrs),
            Method::VforkExit => vfork_child(None),
            Method::VforkExec => vfork_child(self.ptrs),
            Method::PosixSpawn => posix_spawn_child(self.ptrs.context("no exec target")?),
            Method::CloneVforkExec => {
                clone_vfork_child(self.ptrs.context("no exec target")?, &mut self.stack)
            }
            Method::Popen => popen_child(self.target.as_ref().context("no exec target")?),
            Method::System => system_child(self.target.as_ref().context("no exec target")?),
            Method::Command => command_child(self.target.as_ref().context("no exec target")?),
            Method::Thread => std::thread::Builder::new()
                .spawn(|| black_box(1u64))
                .context("spawning a thread")?
                .join()
                .map(|v| {
                    black_box(v);
                })
                .map_err(|_| anyhow!("the thread panicked")),
        }
    }
}

impl Timed for Spawner {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let delay = run_delay_ns();
        let start = Instant::now();
        let mut last = start;
        for _ in 0..ops {
            self.once()?;
            let now = Instant::now();
            self.op_times.push((now - last).as_nanos() as f64);
            last = now;
        }
        self.waiting.add(delay, last - start);
        Ok(last - start)
    }

    /// One spawn per sample: an operation takes tens of microseconds or
    /// more, so the clock reads are negligible, and a sample disturbed by
    /// another process (a late wake-up) stays one outlier the median ignores
    /// instead of inflating a whole batch.
    fn max_ops(&self) -> Option<u64> {
        Some(1)
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.op_times)
    }

    fn warnings(&self) -> Vec<String> {
        let mut w = self.warnings.clone();
        w.extend(self.waiting.warning());
        w
    }

    fn details(&self) -> Option<serde_json::Value> {
        let mut d = self.details.clone();
        d["cpu_wait_share"] = self.waiting.share().into();
        Some(d)
    }
}

/// The error of a failed libc call, from errno.
fn os_err(what: &str) -> anyhow::Error {
    anyhow::Error::new(std::io::Error::last_os_error()).context(what.to_string())
}

/// The error of a call that returns an errno value instead of setting errno.
fn errno_err(code: libc::c_int, what: &str) -> anyhow::Error {
    anyhow::Error::new(std::io::Error::from_raw_os_error(code)).context(what.to_string())
}

/// fork(); the child execs `exec` (or exits 0 when None); waits for it.
fn fork_child(exec: Option<ExecPtrs>) -> anyhow::Result<()> {
    let slot = Slot::take()?;
    let blocked = SignalsBlocked::all();
    // SAFETY: the child only calls async-signal-safe functions (execve, _exit).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child; pointers were built before the fork.
        unsafe {
            if let Some(e) = exec {
                libc::execve(e.path, e.argv, e.envp);
                libc::_exit(127);
            }
            libc::_exit(0);
        }
    }
    drop(blocked);
    if pid < 0 {
        return Err(os_err("fork"));
    }
    Child::new(pid, slot).wait()
}

/// vfork(); the child execs `exec` (or exits 0 when None); waits for it.
fn vfork_child(exec: Option<ExecPtrs>) -> anyhow::Result<()> {
    let slot = Slot::take()?;
    let blocked = SignalsBlocked::all();
    // SAFETY: see `raw_vfork`; the pointers stay valid while the parent is suspended.
    let ret = unsafe { raw_vfork(exec) };
    drop(blocked);
    if ret < 0 {
        return Err(
            anyhow::Error::new(std::io::Error::from_raw_os_error((-ret) as i32)).context("vfork"),
        );
    }
    Child::new(ret as libc::pid_t, slot).wait()
}

/// Issues vfork as a raw system call. The child never returns from the
/// assembly: it calls execve (then exit_group(127) if that failed), or
/// exit_group(0) when `exec` is None. Returns the pid or `-errno`.
///
/// # Safety
/// Signals must be blocked (the child shares our stack), and `exec`'s
/// pointers must be valid C strings and NULL-terminated arrays.
#[cfg(target_arch = "x86_64")]
unsafe fn raw_vfork(exec: Option<ExecPtrs>) -> isize {
    let ret: isize;
    match exec {
        Some(e) => unsafe {
            core::arch::asm!(
                "syscall",
                "test rax, rax",
                "jnz 2f",
                "mov eax, {execve}",
                "syscall",
                "mov edi, 127",
                "mov eax, {exit_group}",
                "syscall",
                "2:",
                execve = const libc::SYS_execve,
                exit_group = const libc::SYS_exit_group,
                inlateout("rax") libc::SYS_vfork as isize => ret,
                in("rdi") e.path,
                in("rsi") e.argv,
                in("rdx") e.envp,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        },
        None => unsafe {
            core::arch::asm!(
                "syscall",
                "test rax, rax",
                "jnz 2f",
                "xor edi, edi",
                "mov eax, {exit_group}",
                "syscall",
                "2:",
                exit_group = const libc::SYS_exit_group,
                inlateout("rax") libc::SYS_vfork as isize => ret,
                lateout("rdi") _,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        },
    }
    ret
}

/// Issues vfork as a raw system call (see the x86_64 variant). aarch64 has
/// no vfork system call: clone(CLONE_VM | CLONE_VFORK | SIGCHLD) with the
/// same stack is what libc's vfork does there.
///
/// # Safety
/// As for the x86_64 variant.
#[cfg(target_arch = "aarch64")]
unsafe fn raw_vfork(exec: Option<ExecPtrs>) -> isize {
    const FLAGS: u64 = (libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as u64;
    let ret: isize;
    let (path, argv, envp) = exec.map_or(
        (std::ptr::null(), std::ptr::null(), std::ptr::null()),
        |e| (e.path, e.argv, e.envp),
    );
    let do_exec: u64 = u64::from(exec.is_some());
    unsafe {
        core::arch::asm!(
            "svc #0",
            "cbnz x0, 2f",
            "cbz x12, 3f",
            "mov x0, x9",
            "mov x1, x10",
            "mov x2, x11",
            "mov x8, #{execve}",
            "svc #0",
            "mov x0, #127",
            "mov x8, #{exit_group}",
            "svc #0",
            "3:",
            "mov x0, #0",
            "mov x8, #{exit_group}",
            "svc #0",
            "2:",
            execve = const libc::SYS_execve,
            exit_group = const libc::SYS_exit_group,
            inlateout("x0") FLAGS as isize => ret,
            in("x1") 0u64,
            in("x2") 0u64,
            in("x3") 0u64,
            in("x4") 0u64,
            in("x8") libc::SYS_clone,
            in("x9") path,
            in("x10") argv,
            in("x11") envp,
            in("x12") do_exec,
            options(nostack),
        );
    }
    ret
}

/// Placeholder on architectures without the raw vfork (the rows are skipped).
///
/// # Safety
/// Never starts a child.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
unsafe fn raw_vfork(_exec: Option<ExecPtrs>) -> isize {
    -(libc::ENOSYS as isize)
}

/// posix_spawn() with default attributes; waits for the child.
fn posix_spawn_child(e: ExecPtrs) -> anyhow::Result<()> {
    let slot = Slot::take()?;
    let mut pid: libc::pid_t = 0;
    // SAFETY: valid C strings and NULL-terminated arrays; null attributes mean defaults.
    let rc = unsafe {
        libc::posix_spawn(
            &mut pid,
            e.path,
            std::ptr::null(),
            std::ptr::null(),
            e.argv as *const *mut libc::c_char,
            e.envp as *const *mut libc::c_char,
        )
    };
    if rc != 0 {
        return Err(errno_err(rc, "posix_spawn"));
    }
    Child::new(pid, slot).wait()
}

/// What the clone child needs: the program, and the write end of the pipe
/// that becomes its stdout (as popen gives its child).
#[repr(C)]
struct CloneArg {
    exec: ExecPtrs,
    stdout: libc::c_int,
}

/// The child side of the clone row: stdout onto the pipe, exec, or exit 127.
extern "C" fn clone_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points to the parent's CloneArg, alive while the parent
    // is suspended (CLONE_VFORK); dup2, execve and _exit are
    // async-signal-safe. The pipe's ends are close-on-exec, and dup2 clears
    // the flag on the copy that becomes stdout.
    unsafe {
        let a = &*(arg as *const CloneArg);
        if libc::dup2(a.stdout, libc::STDOUT_FILENO) < 0 {
            libc::_exit(127);
        }
        libc::execve(a.exec.path, a.exec.argv, a.exec.envp);
        libc::_exit(127)
    }
}

/// A pipe with both ends close-on-exec: (read end, write end).
fn cloexec_pipe() -> anyhow::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: a valid out-array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_err("pipe2"));
    }
    // SAFETY: pipe2 returned two fresh descriptors we own.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// clone(CLONE_VM | CLONE_VFORK | SIGCHLD) on `stack`; the child's stdout
/// is a pipe to us, as with popen, and it execs `e`; the pipe is closed and
/// the child reaped, as pclose does.
fn clone_vfork_child(e: ExecPtrs, stack: &mut [u8]) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    let slot = Slot::take()?;
    let (read, write) = cloexec_pipe()?;
    // The stack grows down: pass its 16-byte-aligned top.
    let top = (stack.as_mut_ptr() as usize + stack.len()) & !15;
    let mut arg = CloneArg {
        exec: e,
        stdout: write.as_raw_fd(),
    };
    let blocked = SignalsBlocked::all();
    // SAFETY: the child runs `clone_entry` on its own stack and only execs
    // or exits; CLONE_VFORK suspends us until then, so `arg` stays valid.
    let pid = unsafe {
        libc::clone(
            clone_entry,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut arg as *mut CloneArg).cast(),
        )
    };
    drop(blocked);
    drop(write);
    if pid < 0 {
        return Err(os_err("clone"));
    }
    drop(read);
    Child::new(pid, slot).wait()
}

/// popen(target, "r") through /bin/sh, then pclose (which waits).
fn popen_child(t: &ExecTarget) -> anyhow::Result<()> {
    let _slot = Slot::take()?;
    // SAFETY: valid C strings; the FILE is closed below.
    let fp = unsafe { libc::popen(t.shell_cmd().as_ptr(), c"r".as_ptr()) };
    if fp.is_null() {
        return Err(os_err("popen"));
    }
    // SAFETY: `fp` came from popen.
    let status = unsafe { libc::pclose(fp) };
    if status == -1 {
        return Err(os_err("pclose"));
    }
    check_status(status).context("popen through /bin/sh")
}

/// system(target) through /bin/sh (which waits).
fn system_child(t: &ExecTarget) -> anyhow::Result<()> {
    let _slot = Slot::take()?;
    // SAFETY: a valid C string.
    let status = unsafe { libc::system(t.shell_cmd().as_ptr()) };
    if status == -1 {
        return Err(os_err("system"));
    }
    // system() ignores SIGINT in the caller while its child runs, so a
    // Ctrl-C from the terminal only killed the child: deliver it to
    // ourselves now that our handler is back (as POSIX advises callers).
    if libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGINT {
        // SAFETY: raise has no preconditions.
        unsafe { libc::raise(libc::SIGINT) };
    }
    check_status(status).context("system() through /bin/sh")
}

/// std::process::Command::new(target).status().
fn command_child(t: &ExecTarget) -> anyhow::Result<()> {
    let _slot = Slot::take()?;
    let path = std::ffi::OsStr::from_bytes(t.path().as_bytes());
    let status = std::process::Command::new(path)
        .status()
        .map_err(|e| anyhow::Error::new(e).context("std::process::Command"))?;
    use std::os::unix::process::ExitStatusExt;
    check_status(status.into_raw())
}

/// How std::process::Command starts a program here, following the
/// conditions in Rust's standard library: posix_spawn on glibc >= 2.24 and
/// on musl when no pre_exec hook, uid, gid or groups are set; fork+exec otherwise.
pub fn command_path() -> (&'static str, String) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        let v = v.to_string_lossy().into_owned();
        let mut it = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let ver = (it.next().unwrap_or(0), it.next().unwrap_or(0));
        if ver >= (2, 24) {
            ("posix_spawn", format!("glibc {v} >= 2.24"))
        } else {
            ("fork+exec", format!("glibc {v} < 2.24"))
        }
    }
    #[cfg(all(target_os = "linux", target_env = "musl"))]
    {
        ("posix_spawn", "musl".to_string())
    }
    #[cfg(not(all(target_os = "linux", any(target_env = "gnu", target_env = "musl"))))]
    {
        (
            "fork+exec",
            "no posix_spawn path in std for this target".to_string(),
        )
    }
}

/// Starts `n` children of `method` in a row, for tests.
#[cfg(test)]
fn start_n(method: Method, exe: Option<&std::path::Path>, n: usize) -> anyhow::Result<()> {
    let ctx = crate::harness::test_ctx();
    let mut s = Spawner::new(method, exe, None, &ctx).map_err(|e| match e {
        PrepareError::Skip(r) => anyhow!("skipped: {r}"),
        PrepareError::Fail(e) => e,
    })?;
    for _ in 0..n {
        s.once()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::target::install_static;
    use super::*;
    use crate::os::child::{alive, test_lock};

    const ALL: [Method; 10] = [
        Method::ForkExit,
        Method::VforkExit,
        Method::ForkExec,
        Method::VforkExec,
        Method::PosixSpawn,
        Method::CloneVforkExec,
        Method::Popen,
        Method::System,
        Method::Command,
        Method::Thread,
    ];

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn every_method_starts_and_reaps_its_children() {
        let _g = test_lock();
        let dir = tempfile::tempdir().unwrap();
        let exe = install_static(dir.path()).unwrap();
        for m in ALL {
            start_n(m, Some(&exe), 3).unwrap_or_else(|e| panic!("{m:?}: {e:#}"));
            assert_eq!(alive(), 0, "{m:?} left a child counted alive");
        }
        // No zombie: we have no child left to wait for.
        let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(r, -1);
    }

    #[test]
    fn a_missing_program_fails_clearly() {
        let _g = test_lock();
        let missing = std::path::Path::new("/nonexistent/opcost-no-such-program");
        for m in [Method::ForkExec, Method::PosixSpawn, Method::Command] {
            let e = format!("{:#}", start_n(m, Some(missing), 1).unwrap_err());
            assert!(
                e.contains("No such file") || e.contains("could not exec"),
                "{m:?}: {e}"
            );
            assert_eq!(alive(), 0);
        }
    }

    #[test]
    fn region_is_touched_and_shared() {
        let _g = test_lock();
        let ctx = crate::harness::test_ctx();
        let a = Region::shared(4 << 20, &ctx).unwrap();
        let b = Region::shared(4 << 20, &ctx).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.len, 4 << 20);
        let first = unsafe { *(a.addr as *const u8) };
        assert_eq!(first, 1);
    }

    #[test]
    fn an_impossible_region_is_a_skip() {
        let _g = test_lock();
        let ctx = crate::harness::test_ctx();
        match Region::shared(1 << 60, &ctx) {
            Err(PrepareError::Skip(r)) => assert!(r.contains("available"), "{r}"),
            Err(PrepareError::Fail(e)) => panic!("failed instead of skipping: {e}"),
            Ok(_) => panic!("an exabyte region was granted"),
        }
    }

    #[test]
    fn command_path_names_a_method() {
        let (how, why) = command_path();
        assert!(how == "posix_spawn" || how == "fork+exec");
        assert!(!why.is_empty());
    }
}
