//! Forking from a small parent. fork copies the parent's page tables, so a
//! fork from opcost itself (its binary, the heap earlier suites left) costs
//! what opcost weighs, not what a program pays. So fork rows fork from a
//! helper: opcost re-executed with [`HELPER_ENV`] set, which does nothing
//! but serve requests on its stdin and answer on its stdout, and times its
//! own loop. The growth curve has the helper touch N bytes first, so it
//! starts from that small parent. The RSS and mapped size of both the
//! helper and opcost are reported with every result.
//!
//! Protocol, one line each way: `fork_exit OPS`, `fork_exec OPS PATH`,
//! `fork_exec_close OPS HOW PATH` (the child closes its descriptors the
//! [`Close`] way first), `touch BYTES`, `nofile N` (the helper's own soft
//! RLIMIT_NOFILE, so opcost's stays as it is), `fds N` (the helper holds N
//! close-on-exec descriptors open, [`FdSet`]), `status`; answers
//! `ok NANOSECONDS`, `ok`, `ok OPEN`, `ok RSS VMSIZE` or `err MESSAGE`.
//! End of input ends the helper.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde_json::json;

use super::fds::FdSet;
use super::nofile::{self, Close};
use crate::harness::{Ctx, PrepareError, Timed};

/// Set in the environment of the helper process.
pub const HELPER_ENV: &str = "OPCOST_FORK_HELPER";

/// Serves requests when this process is the helper; returns otherwise.
pub fn serve_if_asked() {
    if std::env::var_os(HELPER_ENV).is_none() {
        return;
    }
    crate::os::exit_with("opcost fork helper", serve());
}

fn serve() -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut region: Option<(*mut libc::c_void, usize)> = None;
    // Descriptors held open for `fds` (kept for as long as the helper runs).
    let mut held: Option<FdSet> = None;
    for line in stdin.lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer = match words.as_slice() {
            ["fork_exit", ops] => {
                forks(ops.parse()?, None, Close::None).map(|ns| format!("ok {ns}"))
            }
            ["fork_exec", ops, path] => {
                let c = std::ffi::CString::new(*path)?;
                forks(ops.parse()?, Some(&c), Close::None).map(|ns| format!("ok {ns}"))
            }
            ["fork_exec_close", ops, how, path] => {
                let c = std::ffi::CString::new(*path)?;
                let how = Close::parse(how)?;
                forks(ops.parse()?, Some(&c), how).map(|ns| format!("ok {ns}"))
            }
            ["nofile", n] => nofile::set_own(n.parse()?).map(|()| "ok".to_string()),
            ["fds", n] => {
                // The old set goes first: its limit is restored before the new one.
                drop(held.take());
                match FdSet::open(n.parse()?) {
                    Ok(set) => {
                        let open = set.open_total();
                        held.replace(set);
                        Ok(format!("ok {open}"))
                    }
                    Err(PrepareError::Skip(why)) => Err(anyhow!("{why}")),
                    Err(PrepareError::Fail(e)) => Err(e),
                }
            }
            ["touch", bytes] => {
                if let Some((p, len)) = region.take() {
                    // SAFETY: our own mapping, no longer referenced.
                    unsafe { libc::munmap(p, len) };
                }
                touch(bytes.parse()?).map(|r| {
                    region = r;
                    "ok".to_string()
                })
            }
            ["status"] => {
                let (rss, vm) = status_of("self");
                Ok(format!("ok {} {}", rss.unwrap_or(0), vm.unwrap_or(0)))
            }
            _ => Err(anyhow!("unknown request {line:?}")),
        };
        match answer {
            Ok(a) => writeln!(out, "{a}")?,
            Err(e) => writeln!(out, "err {e:#}")?,
        }
        out.flush()?;
    }
    Ok(())
}

/// Maps `bytes` of base pages and writes every page (none for 0).
fn touch(bytes: usize) -> anyhow::Result<Option<(*mut libc::c_void, usize)>> {
    if bytes == 0 {
        return Ok(None);
    }
    // Base pages, as in the parent-side growth region: one entry per page.
    let p =
        crate::os::sys::map_base_pages(bytes).with_context(|| format!("mmap of {bytes} bytes"))?;
    let page = super::spawn::page_size();
    for off in (0..bytes).step_by(page) {
        // SAFETY: inside the mapping.
        unsafe { p.cast::<u8>().add(off).write_volatile(1) };
    }
    Ok(Some((p, bytes)))
}

/// `ops` times: fork, the child exits (or closes its descriptors the
/// `close` way and execs `exe`), wait. Nanoseconds.
fn forks(ops: u64, exe: Option<&std::ffi::CStr>, close: Close) -> anyhow::Result<u128> {
    let argv = exe.map(|e| [e.as_ptr(), std::ptr::null()]);
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    let closer = close.closer()?;
    let start = Instant::now();
    for _ in 0..ops {
        // SAFETY: this helper is single-threaded; the child only calls
        // async-signal-safe functions (execve, _exit).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            if let (Some(e), Some(a)) = (exe, argv.as_ref()) {
                // SAFETY: the closer only makes system calls (see `nofile`);
                // NUL-terminated argv and envp that outlive the call.
                unsafe {
                    closer.run();
                    libc::execve(e.as_ptr(), a.as_ptr(), envp.as_ptr())
                };
                // SAFETY: leaving the child without running any destructor.
                unsafe { libc::_exit(127) };
            }
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
            bail!("waitpid: {}", std::io::Error::last_os_error());
        }
        if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
            bail!("child ended with status {status:#x}");
        }
    }
    Ok(start.elapsed().as_nanos())
}

/// VmRSS and VmSize (bytes) of a process (`self` or a pid) from /proc.
pub fn status_of(pid: &str) -> (Option<u64>, Option<u64>) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    parse_status(&text)
}

/// VmRSS and VmSize (bytes) from the text of /proc/PID/status.
pub fn parse_status(text: &str) -> (Option<u64>, Option<u64>) {
    let kib = |key: &str| {
        text.lines().find_map(|l| {
            let v = l.strip_prefix(key)?.trim().strip_suffix("kB")?.trim();
            v.parse::<u64>().ok().map(|k| k * 1024)
        })
    };
    (kib("VmRSS:"), kib("VmSize:"))
}

/// The helper as seen from opcost; it ends when dropped.
pub struct SmallParent {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    request: String,
    details: serde_json::Value,
}

impl SmallParent {
    /// Starts the helper; it forks (and execs `exe`, if given) after
    /// touching `touched` bytes of its own.
    pub fn new(exe: Option<&Path>, touched: u64, ctx: &Ctx) -> Result<SmallParent, PrepareError> {
        Self::start(exe, touched, None, None, ctx)
    }

    /// Starts the helper holding `fds` close-on-exec descriptors open; it
    /// forks and execs `exe`. A count above the hard limit is a skip with
    /// the reason.
    pub fn holding(exe: &Path, fds: u64, ctx: &Ctx) -> Result<SmallParent, PrepareError> {
        Self::start(Some(exe), 0, None, Some(fds), ctx)
    }

    /// Starts the helper with its soft RLIMIT_NOFILE at `limit`; it forks,
    /// the child closes its descriptors the `close` way, and execs `exe`.
    /// A limit the helper may not set is a skip with the kernel's reason.
    pub fn closing(
        exe: &Path,
        limit: u64,
        close: Close,
        ctx: &Ctx,
    ) -> Result<SmallParent, PrepareError> {
        Self::start(Some(exe), 0, Some((limit, close)), None, ctx)
    }

    /// Starts the helper, touches `touched` bytes in it, sets its
    /// descriptor limit and way of closing when `nofile` says so, and has
    /// it hold `holding` descriptors open.
    fn start(
        exe: Option<&Path>,
        touched: u64,
        nofile: Option<(u64, Close)>,
        holding: Option<u64>,
        ctx: &Ctx,
    ) -> Result<SmallParent, PrepareError> {
        let _ = ctx;
        if cfg!(test) {
            return Err(PrepareError::Skip(
                "the small parent is the opcost binary re-executed, which a unit test is not"
                    .into(),
            ));
        }
        let me = crate::os::self_exe()
            .map_err(|e| PrepareError::Skip(format!("cannot find opcost's own binary: {e}")))?;
        let mut child = Command::new(&me)
            .env(HELPER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| PrepareError::Fail(anyhow!("starting {}: {e}", me.display())))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| PrepareError::Fail(anyhow!("the helper has no stdout")))?,
        );
        let request = match exe {
            None => "fork_exit".to_string(),
            Some(p) => {
                let s = p
                    .to_str()
                    .filter(|s| !s.contains(char::is_whitespace))
                    .ok_or_else(|| {
                        PrepareError::Skip(format!("{} is not a plain path", p.display()))
                    })?;
                match nofile {
                    None => format!("fork_exec {{}} {s}"),
                    Some((_, how)) => format!("fork_exec_close {{}} {} {s}", how.name()),
                }
            }
        };
        let mut sp = SmallParent {
            child,
            stdin,
            stdout,
            request,
            details: serde_json::Value::Null,
        };
        let helper_before = sp.ask("status").map_err(PrepareError::Fail)?;
        if touched > 0 {
            sp.ask(&format!("touch {touched}"))
                .map_err(PrepareError::Fail)?;
        }
        if let Some((limit, _)) = nofile {
            sp.ask(&format!("nofile {limit}"))
                .map_err(|e| PrepareError::Skip(format!("{e:#}")))?;
        }
        let fds_open = match holding {
            Some(n) => Some(
                sp.ask(&format!("fds {n}"))
                    .map_err(|e| PrepareError::Skip(format!("{e:#}")))?,
            ),
            None => None,
        };
        let helper = sp.ask("status").map_err(PrepareError::Fail)?;
        let num = |s: &str, i: usize| {
            s.split_whitespace()
                .nth(i)
                .and_then(|w| w.parse::<u64>().ok())
        };
        let (rss, vm) = status_of("self");
        sp.details = json!({
            "parent": "small helper (opcost re-executed)",
            "helper_pid": sp.child.id(),
            "helper_rss_bytes": num(&helper, 0),
            "helper_vm_bytes": num(&helper, 1),
            "helper_rss_untouched_bytes": num(&helper_before, 0),
            "opcost_rss_bytes": rss,
            "opcost_vm_bytes": vm,
            "touched_bytes": touched,
        });
        if let Some(open) = fds_open.as_deref().and_then(|o| o.parse::<u64>().ok()) {
            sp.details["fds_open"] = open.into();
        }
        if let Some((limit, how)) = nofile {
            sp.details["nofile_soft"] = limit.into();
            sp.details["close"] = how.name().into();
        }
        // One trial: a broken exec path fails here, not in a sample.
        sp.run(1).map_err(PrepareError::Fail)?;
        Ok(sp)
    }

    /// Sends one request and returns the text after `ok`.
    fn ask(&mut self, request: &str) -> anyhow::Result<String> {
        let stdin = self
            .stdin
            .as_mut()
            .context("the helper's stdin is closed")?;
        writeln!(stdin, "{request}").context("writing to the fork helper")?;
        stdin.flush()?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .context("reading from the fork helper")?;
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("ok") {
            return Ok(rest.trim().to_string());
        }
        match line.strip_prefix("err ") {
            Some(e) => bail!("fork helper: {e}"),
            None if line.is_empty() => {
                // It ended: say how, so a helper that could not start (an
                // emulator without binfmt_misc: 127) is told from a crash.
                // Its output closes as it exits: give it a moment to be reaped.
                let mut status = self.child.try_wait();
                for _ in 0..100 {
                    if !matches!(status, Ok(None)) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                    status = self.child.try_wait();
                }
                let how = match status {
                    Ok(Some(status)) => format!("it exited with {status}"),
                    Ok(None) => "it closed its output and is still running".to_string(),
                    Err(e) => format!("its status is unknown ({e})"),
                };
                let hint = if how.contains("127") {
                    " (127: the opcost binary could not be started again, e.g. under an emulator without binfmt_misc)"
                } else {
                    ""
                };
                bail!("the fork helper ended before answering: {how}{hint}")
            }
            None => bail!("the fork helper answered {line:?}"),
        }
    }
}

impl Timed for SmallParent {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let req = if self.request == "fork_exit" {
            format!("fork_exit {ops}")
        } else {
            self.request.replacen("{}", &ops.to_string(), 1)
        };
        let ns: u64 = self.ask(&req)?.parse().context("the helper's time")?;
        Ok(Duration::from_nanos(ns))
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.details.clone())
    }
}

impl Drop for SmallParent {
    fn drop(&mut self) {
        // End of input ends the helper; reap it (kill it if it hangs).
        drop(self.stdin.take());
        let since = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if since.elapsed() > Duration::from_secs(5) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
}

/// A parent's weight recorded in a fork result's details (`key` in bytes),
/// as "12.3 MiB", or "?" when the result does not have it.
pub(super) fn weight(m: &crate::harness::Measurement, key: &str) -> String {
    m.details
        .as_ref()
        .and_then(|d| d.get(key)?.as_u64())
        .map_or_else(|| "?".to_string(), |b| crate::units::human_bytes(b as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_gives_rss_and_mapped_size_in_bytes() {
        let t = "Name:\topcost\nVmSize:\t   12000 kB\nVmRSS:\t    3000 kB\n";
        assert_eq!(parse_status(t), (Some(3000 * 1024), Some(12000 * 1024)));
        assert_eq!(parse_status(""), (None, None));
        let (rss, vm) = status_of("self");
        assert!(rss.unwrap() > 0 && vm.unwrap() >= rss.unwrap());
    }

    #[test]
    fn weight_reads_bytes_from_the_details() {
        let mut m = crate::harness::Measurement::point("process.fork_exit", "ns/op", 1.0);
        assert_eq!(weight(&m, "helper_rss_bytes"), "?");
        m.details = Some(json!({"helper_rss_bytes": 2u64 << 20}));
        assert!(weight(&m, "helper_rss_bytes").contains("MiB"));
    }

    #[test]
    fn a_helper_that_ends_says_how() {
        let _g = crate::os::child::test_lock();
        // A helper that cannot start answers nothing and exits 127.
        let mut child = Command::new("sh")
            .args(["-c", "read x; exit 127"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut sp = SmallParent {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            request: "fork_exit".into(),
            details: json!({}),
        };
        let e = sp.run(1).unwrap_err().to_string();
        assert!(e.contains("ended before answering: it exited with"), "{e}");
        assert!(
            e.contains("127") && e.contains("could not be started again"),
            "{e}"
        );
    }

    #[test]
    fn the_helper_loop_forks_and_reaps() {
        let _g = crate::os::child::test_lock();
        let ns = forks(3, None, Close::None).unwrap();
        assert!(ns > 0);
        let t = std::ffi::CString::new("/bin/true").unwrap();
        if Path::new("/bin/true").exists() {
            assert!(forks(1, Some(&t), Close::None).unwrap() > 0);
            assert!(forks(1, Some(&t), Close::Loop).unwrap() > 0);
            assert!(forks(1, Some(&t), Close::Range).unwrap() > 0);
        }
        let missing = std::ffi::CString::new("/nonexistent/opcost-target").unwrap();
        assert!(forks(1, Some(&missing), Close::None).is_err());
        let r = touch(1 << 20).unwrap().unwrap();
        // SAFETY: our own mapping.
        unsafe { libc::munmap(r.0, r.1) };
        assert!(touch(0).unwrap().is_none());
    }
}
