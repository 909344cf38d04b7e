//! File-change notification: how long from a change to a file to a
//! waiting process learning of it, by inotify, by fanotify and by a
//! `stat()` polling loop.
//!
//! Each end writes one file and watches another, both in a private
//! directory under the run's temp dir: the parent writes `a` and waits for
//! `b` to change, the peer the other way round, so a round trip is a change
//! and its notification each way (the one-way time is half of it, the two
//! directions being the same). The message is the file's content: the
//! receiver reads it back with `pread` (through a descriptor it opened
//! before the run) once notified, so the integrity check of
//! [`super::link::RoundTrip`] holds for files too.
//!
//! - inotify, `IN_MODIFY`: a watch on the file read, a blocking `read` of
//!   the inotify descriptor, then the content; the message is written over
//!   the start of the file (`pwrite` at offset 0).
//! - inotify, `IN_MOVED_TO`: the file lives in one of two directories and
//!   the sender writes the message, then `rename()`s the file into the
//!   other directory; the receiver watches both directories for a name
//!   moved in (an atomic save: write, then rename into place).
//! - inotify, `IN_CLOSE_WRITE`: the sender opens the file by name, writes
//!   the message and closes it; the receiver watches the file.
//! - fanotify (`FAN_CLASS_NOTIF`), `FAN_MODIFY` or `FAN_CLOSE_WRITE`: a
//!   mark on the file read, written as for inotify's two; each event
//!   carries a descriptor of the file, opened by the kernel for the reader,
//!   which closes it. It needs `CAP_SYS_ADMIN`: without, the rows skip.
//! - `stat()` polling: `fstat` of the file read every [`POLL`] or
//!   [`POLL_SLOW`] (a `nanosleep` between looks) until it has grown, then
//!   the new bytes; the message is appended. The size, not the
//!   modification time, tells a change: the kernel stamps files from a
//!   clock that ticks once a jiffy, so two writes within a tick look the
//!   same. What such a loop burns while nothing changes is measured once
//!   per set-up ([`idle_burn`]); a blocked inotify reader burns nothing
//!   until its event.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::errno::Errno;

use super::link::End;
use crate::harness::claims;
use crate::harness::{PrepareError, Timed};
use crate::os::sys::retry_eintr;

/// The interval of the polling loop.
pub const POLL: Duration = Duration::from_millis(1);
/// The interval of the slower polling loop.
pub const POLL_SLOW: Duration = Duration::from_millis(10);

/// How an end learns that the file it reads has changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// An inotify `IN_MODIFY` watch on the file, read blocking.
    Inotify,
    /// An inotify `IN_MOVED_TO` watch on the two directories the file is renamed between.
    InotifyRename,
    /// An inotify `IN_CLOSE_WRITE` watch; the sender opens, writes and closes.
    InotifyCloseWrite,
    /// A fanotify `FAN_MODIFY` mark on the file, read blocking.
    Fanotify,
    /// A fanotify `FAN_CLOSE_WRITE` mark; the sender opens, writes and closes.
    FanotifyCloseWrite,
    /// `fstat` every [`POLL`] until the file has grown.
    StatPoll,
    /// `fstat` every [`POLL_SLOW`] until the file has grown.
    StatPollSlow,
}

/// How the sender changes the file it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// `pwrite` over the start of the open file.
    Overwrite,
    /// `pwrite` over the start, then `rename()` into the other directory.
    Rename,
    /// `open` by name, `pwrite` over the start, `close`.
    Reopen,
    /// `pwrite` appended at the end (polling sees the size grow).
    Append,
}

impl Watch {
    /// Every watch, in report order.
    pub const ALL: [Watch; 7] = [
        Watch::Inotify,
        Watch::InotifyRename,
        Watch::InotifyCloseWrite,
        Watch::Fanotify,
        Watch::FanotifyCloseWrite,
        Watch::StatPoll,
        Watch::StatPollSlow,
    ];

    /// The interval of a polling watch.
    pub fn poll(self) -> Option<Duration> {
        match self {
            Watch::StatPoll => Some(POLL),
            Watch::StatPollSlow => Some(POLL_SLOW),
            _ => None,
        }
    }

    /// The mechanism: `inotify`, `fanotify` or `stat_poll`.
    pub fn mechanism(self) -> &'static str {
        match self {
            Watch::Inotify | Watch::InotifyRename | Watch::InotifyCloseWrite => "inotify",
            Watch::Fanotify | Watch::FanotifyCloseWrite => "fanotify",
            Watch::StatPoll | Watch::StatPollSlow => "stat_poll",
        }
    }

    /// The event waited for (`modify`, `moved_to`, `close_write`; `size` for polling).
    pub fn event(self) -> &'static str {
        match self {
            Watch::Inotify | Watch::Fanotify => "modify",
            Watch::InotifyRename => "moved_to",
            Watch::InotifyCloseWrite | Watch::FanotifyCloseWrite => "close_write",
            Watch::StatPoll | Watch::StatPollSlow => "size",
        }
    }

    /// The id's name: `inotify`, `inotify.rename`, `fanotify.close_write`, `stat_poll.10ms`...
    pub fn name(self) -> &'static str {
        match self {
            Watch::Inotify => "inotify",
            Watch::InotifyRename => "inotify.rename",
            Watch::InotifyCloseWrite => "inotify.close_write",
            Watch::Fanotify => "fanotify",
            Watch::FanotifyCloseWrite => "fanotify.close_write",
            Watch::StatPoll => "stat_poll",
            Watch::StatPollSlow => "stat_poll.10ms",
        }
    }

    /// What a round trip of this watch does, for its summary.
    pub fn what(self) -> &'static str {
        match self {
            Watch::Inotify => {
                "a write to a file and its inotify event read by the waiting process, each way (IN_MODIFY, blocking read, pread)"
            }
            Watch::InotifyRename => {
                "a write to a file, then rename() into the other of two watched directories, and the inotify event read by the waiting process, each way (IN_MOVED_TO, blocking read, pread)"
            }
            Watch::InotifyCloseWrite => {
                "open, write and close of a file and its inotify event read by the waiting process, each way (IN_CLOSE_WRITE, blocking read, pread)"
            }
            Watch::Fanotify => {
                "a write to a file and its fanotify event read by the waiting process, each way (FAN_CLASS_NOTIF, FAN_MODIFY mark on the file, blocking read, the event's descriptor closed, pread)"
            }
            Watch::FanotifyCloseWrite => {
                "open, write and close of a file and its fanotify event read by the waiting process, each way (FAN_CLASS_NOTIF, FAN_CLOSE_WRITE mark on the file, blocking read, the event's descriptor closed, pread)"
            }
            Watch::StatPoll => {
                "a write appended to a file and seen by a fstat() polling loop (1 ms naps), each way"
            }
            Watch::StatPollSlow => {
                "a write appended to a file and seen by a fstat() polling loop (10 ms naps), each way"
            }
        }
    }

    fn change(self) -> Change {
        match self {
            Watch::Inotify | Watch::Fanotify => Change::Overwrite,
            Watch::InotifyRename => Change::Rename,
            Watch::InotifyCloseWrite | Watch::FanotifyCloseWrite => Change::Reopen,
            Watch::StatPoll | Watch::StatPollSlow => Change::Append,
        }
    }
}

/// One end: writes one file, watches the other.
pub struct FileEnd {
    watch: Watch,
    /// The inotify or fanotify descriptor (not for polling).
    notify: Option<OwnedFd>,
    /// The file the other end writes.
    rx: OwnedFd,
    /// The file this end writes.
    tx: OwnedFd,
    /// The names the file this end writes has: where it is now, and (a
    /// rename) where it goes next.
    tx_path: [CString; 2],
    /// Bytes of `rx` already received (polling: the file grows).
    seen: i64,
    /// Bytes written to `tx` (polling: messages are appended).
    written: i64,
    /// Room for the events of one read.
    events: [u64; 64],
    /// The directory, held by the parent's end and removed with it.
    _dir: Option<tempfile::TempDir>,
}

fn fail(what: &str, path: &Path, e: Errno) -> PrepareError {
    PrepareError::Fail(anyhow::anyhow!("{what} {}: {e}", path.display()))
}

fn c_path(path: &Path) -> Result<CString, PrepareError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| PrepareError::Fail(anyhow::anyhow!("a NUL in {}", path.display())))
}

/// Opens `path` for reading and writing, created empty.
fn open_rw(path: &Path) -> Result<OwnedFd, PrepareError> {
    let c = c_path(path)?;
    // SAFETY: a valid C string; the descriptor is owned at once.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o600,
        )
    };
    let fd = Errno::result(fd).map_err(|e| fail("opening", path, e))?;
    // SAFETY: fd was just opened and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An inotify descriptor watching each of `paths` for `mask`.
fn inotify_on(paths: &[&Path], mask: u32) -> Result<OwnedFd, PrepareError> {
    // SAFETY: no arguments beyond flags.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
    let fd = match Errno::result(fd) {
        Ok(fd) => fd,
        Err(e @ (Errno::ENOSYS | Errno::EMFILE | Errno::ENFILE)) => {
            return Err(PrepareError::Skip(format!(
                "inotify is not available here ({e}; fs.inotify.max_user_instances)"
            )));
        }
        Err(e) => return Err(fail("inotify_init1 for", paths[0], e)),
    };
    // SAFETY: fd was just opened and is owned by no one else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    for path in paths {
        let c = c_path(path)?;
        // SAFETY: a valid descriptor and C string.
        let w = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), mask) };
        match Errno::result(w) {
            Ok(_) => {}
            Err(e @ Errno::ENOSPC) => {
                return Err(PrepareError::Skip(format!(
                    "no inotify watch left ({e}; fs.inotify.max_user_watches)"
                )));
            }
            Err(e) => return Err(fail("inotify_add_watch", path, e)),
        }
    }
    Ok(fd)
}

/// Why fanotify cannot be used, from the error of `fanotify_init` or
/// `fanotify_mark`: a skip for what the host does not allow or have, `None`
/// for a real failure.
pub fn fanotify_skip(e: Errno) -> Option<String> {
    match e {
        Errno::EPERM => Some(format!(
            "fanotify needs CAP_SYS_ADMIN ({e}): run as root, or in a container with that capability"
        )),
        Errno::ENOSYS => Some(format!("the kernel lacks fanotify ({e}; CONFIG_FANOTIFY)")),
        Errno::EMFILE | Errno::ENFILE => Some(format!(
            "no fanotify group left ({e}; fs.fanotify.max_user_groups)"
        )),
        // A file system or kernel that cannot mark this file or event.
        Errno::EINVAL | Errno::ENODEV | Errno::EOPNOTSUPP | Errno::EXDEV => Some(format!(
            "fanotify cannot mark this file for this event here ({e})"
        )),
        _ => None,
    }
}

/// A fanotify (notification class) descriptor with a mark for `mask` on `path`.
fn fanotify_on(path: &Path, mask: u64) -> Result<OwnedFd, PrepareError> {
    let why = |what, e| match fanotify_skip(e) {
        Some(s) => PrepareError::Skip(s),
        None => fail(what, path, e),
    };
    // SAFETY: no arguments beyond flags.
    let fd = unsafe {
        libc::fanotify_init(
            libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC,
            (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_LARGEFILE) as libc::c_uint,
        )
    };
    let fd = Errno::result(fd).map_err(|e| why("fanotify_init for", e))?;
    // SAFETY: fd was just opened and is owned by no one else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let c = c_path(path)?;
    // SAFETY: a valid descriptor and C string.
    let r = unsafe {
        libc::fanotify_mark(
            fd.as_raw_fd(),
            libc::FAN_MARK_ADD,
            mask,
            libc::AT_FDCWD,
            c.as_ptr(),
        )
    };
    Errno::result(r).map_err(|e| why("fanotify_mark", e))?;
    Ok(fd)
}

/// The notification descriptor an end of `watch` reads to learn that
/// `file` changed (renamed between `dirs`): `None` for polling.
fn listener(watch: Watch, file: &Path, dirs: [&Path; 2]) -> Result<Option<OwnedFd>, PrepareError> {
    Ok(match watch {
        Watch::Inotify => Some(inotify_on(&[file], libc::IN_MODIFY)?),
        Watch::InotifyRename => Some(inotify_on(&dirs, libc::IN_MOVED_TO)?),
        Watch::InotifyCloseWrite => Some(inotify_on(&[file], libc::IN_CLOSE_WRITE)?),
        Watch::Fanotify => Some(fanotify_on(file, libc::FAN_MODIFY)?),
        Watch::FanotifyCloseWrite => Some(fanotify_on(file, libc::FAN_CLOSE_WRITE)?),
        Watch::StatPoll | Watch::StatPollSlow => None,
    })
}

/// The two ends of a file-change link in `dir` (a private directory the
/// parent's end keeps until it is dropped): (parent's, peer's).
pub fn pair(watch: Watch, dir: tempfile::TempDir) -> Result<(FileEnd, FileEnd), PrepareError> {
    let root = dir.path().to_path_buf();
    // Each file starts in its first directory; a rename moves it to the
    // second and back.
    let dirs = |f: &str| -> Result<[std::path::PathBuf; 2], PrepareError> {
        let d = [root.join(format!("{f}0")), root.join(format!("{f}1"))];
        for p in &d {
            std::fs::create_dir(p).map_err(|e| {
                PrepareError::Fail(anyhow::anyhow!("creating {}: {e}", p.display()))
            })?;
        }
        Ok(d)
    };
    let (da, db) = (dirs("a")?, dirs("b")?);
    let (a, b) = (da[0].join("m"), db[0].join("m"));
    let (fa, fb) = (open_rw(&a)?, open_rw(&b)?);
    let ia = listener(watch, &b, [&db[0], &db[1]])?;
    let ib = listener(watch, &a, [&da[0], &da[1]])?;
    let names = |d: &[std::path::PathBuf; 2]| -> Result<[CString; 2], PrepareError> {
        Ok([c_path(&d[0].join("m"))?, c_path(&d[1].join("m"))?])
    };
    let end = |notify, rx: &OwnedFd, tx: &OwnedFd, tx_path, dir| -> Result<FileEnd, PrepareError> {
        Ok(FileEnd {
            watch,
            notify,
            rx: rx.try_clone()?,
            tx: tx.try_clone()?,
            tx_path,
            seen: 0,
            written: 0,
            events: [0; 64],
            _dir: dir,
        })
    };
    let peer = end(ib, &fa, &fb, names(&db)?, None)?;
    let parent = end(ia, &fb, &fa, names(&da)?, Some(dir))?;
    Ok((parent, peer))
}

/// `pread` of all of `buf` from `fd` at `off`.
fn pread_all(fd: RawFd, buf: &mut [u8], off: i64) -> Result<usize, Errno> {
    // SAFETY: buf is a valid writable buffer of buf.len() bytes.
    retry_eintr(|| unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off) })
        .map(|n| n as usize)
}

/// `pwrite` of all of `msg` to `fd` at `off`.
fn pwrite_all(fd: RawFd, msg: &[u8], off: i64) -> Result<(), Errno> {
    // SAFETY: msg is a valid readable buffer of msg.len() bytes.
    match retry_eintr(|| unsafe { libc::pwrite(fd, msg.as_ptr().cast(), msg.len(), off) })? {
        n if n as usize == msg.len() => Ok(()),
        _ => Err(Errno::EIO),
    }
}

/// Sleeps `poll` between `fstat`s of `fd` until its size is at least `size`.
fn poll_size(fd: RawFd, size: i64, poll: Duration) -> Result<(), Errno> {
    let nap = libc::timespec {
        tv_sec: 0,
        tv_nsec: poll.as_nanos() as libc::c_long,
    };
    loop {
        if fstat_size(fd)? >= size {
            return Ok(());
        }
        // SAFETY: a valid timespec; an interrupted sleep just polls early.
        unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
    }
}

fn fstat_size(fd: RawFd) -> Result<i64, Errno> {
    // SAFETY: stat is plain data; zero is a valid start.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a writable stat.
    Errno::result(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st.st_size)
}

impl FileEnd {
    /// Blocks until the notification descriptor has an event, and consumes
    /// it (closing the descriptors fanotify's events carry).
    fn wait_event(&mut self, fd: RawFd) -> Result<(), Errno> {
        let len = std::mem::size_of_val(&self.events);
        // SAFETY: events is a valid writable, aligned buffer of len bytes.
        let n = match retry_eintr(|| unsafe {
            libc::read(fd, self.events.as_mut_ptr().cast(), len)
        })? {
            0 => return Err(Errno::EIO),
            n => n as usize,
        };
        if matches!(self.watch, Watch::Fanotify | Watch::FanotifyCloseWrite) {
            close_event_fds(&self.events, n);
        }
        Ok(())
    }

    /// Changes the file this end writes so that the other end is told.
    fn change(&mut self, msg: &[u8]) -> Result<(), Errno> {
        let tx = self.tx.as_raw_fd();
        match self.watch.change() {
            Change::Overwrite => pwrite_all(tx, msg, 0),
            Change::Append => pwrite_all(tx, msg, self.written),
            Change::Rename => {
                pwrite_all(tx, msg, 0)?;
                // SAFETY: two valid C strings.
                Errno::result(unsafe {
                    libc::rename(self.tx_path[0].as_ptr(), self.tx_path[1].as_ptr())
                })?;
                self.tx_path.swap(0, 1);
                Ok(())
            }
            Change::Reopen => {
                // SAFETY: a valid C string.
                let fd = Errno::result(unsafe {
                    libc::open(self.tx_path[0].as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC)
                })?;
                // SAFETY: fd was just opened and is owned by no one else.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                pwrite_all(fd.as_raw_fd(), msg, 0)
                // Dropping fd closes it: the event.
            }
        }
    }
}

/// Closes the descriptors carried by the fanotify events in the first `n`
/// bytes of `buf`.
fn close_event_fds(buf: &[u64; 64], n: usize) {
    let meta = std::mem::size_of::<libc::fanotify_event_metadata>();
    let mut off = 0;
    while off + meta <= n {
        // SAFETY: off is within the n bytes read, and every event starts
        // 8-byte aligned (event_len is a multiple of 8) in an aligned buffer.
        let m = unsafe {
            &*(buf.as_ptr().cast::<u8>().add(off)).cast::<libc::fanotify_event_metadata>()
        };
        if m.fd >= 0 {
            // SAFETY: the kernel opened this descriptor for us; no one else owns it.
            drop(unsafe { OwnedFd::from_raw_fd(m.fd) });
        }
        if m.event_len == 0 {
            break;
        }
        off += m.event_len as usize;
    }
}

impl End for FileEnd {
    fn datagram(&self) -> bool {
        true
    }

    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        self.change(msg)?;
        self.written += msg.len() as i64;
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        match (
            self.watch.poll(),
            self.notify.as_ref().map(AsRawFd::as_raw_fd),
        ) {
            (None, Some(fd)) => {
                self.wait_event(fd)?;
                pread_all(self.rx.as_raw_fd(), buf, 0)
            }
            (poll, _) => {
                let want = self.seen + buf.len() as i64;
                poll_size(self.rx.as_raw_fd(), want, poll.unwrap_or(POLL))?;
                let n = pread_all(self.rx.as_raw_fd(), buf, self.seen)?;
                self.seen += n as i64;
                Ok(n)
            }
        }
    }

    fn size_limit(&self) -> &'static str {
        "the file system's limits"
    }
}

/// Slices of an idle-burn measurement: its share is their median, with
/// the median's distribution-free 95% interval.
pub const IDLE_SLICES: usize = 15;

/// What a polling loop burns while nothing changes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdleBurn {
    /// The share of one CPU (the loop's CPU time over wall time) per slice: median and interval.
    pub share: claims::Est<'static>,
    /// CPU time per look (`fstat` and `nanosleep`), ns.
    pub cpu_per_look_ns: f64,
    /// Looks in all.
    pub looks: u64,
    /// The interval between looks.
    pub poll: Duration,
}

impl IdleBurn {
    /// The burn as the details of a result: `{"idle_cpu": {...}}`.
    pub fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "idle_cpu": {
                "share": self.share.value,
                "share_low": self.share.low,
                "share_high": self.share.high,
                "cpu_per_look_ns": self.cpu_per_look_ns,
                "looks": self.looks,
                "poll_ms": self.poll.as_secs_f64() * 1e3,
                "slices": IDLE_SLICES,
            }
        })
    }
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs the polling loop of [`FileEnd`] on `fd`, a file nothing changes,
/// for [`IDLE_SLICES`] slices of `looks` looks every `poll`, and returns
/// the share of a CPU it burnt (the calling thread's CPU time over wall
/// time, per slice).
pub fn idle_burn(fd: RawFd, poll: Duration, looks: u64) -> Result<IdleBurn, Errno> {
    let nap = libc::timespec {
        tv_sec: 0,
        tv_nsec: poll.as_nanos() as libc::c_long,
    };
    let size = fstat_size(fd)?;
    let mut shares = Vec::with_capacity(IDLE_SLICES);
    let (mut cpu_all, mut n) = (Duration::ZERO, 0);
    for _ in 0..IDLE_SLICES {
        let (w0, c0) = (Instant::now(), thread_cpu());
        for _ in 0..looks {
            if fstat_size(fd)? > size {
                return Err(Errno::EBUSY);
            }
            // SAFETY: a valid timespec.
            unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
        }
        let (cpu, wall) = (thread_cpu() - c0, w0.elapsed());
        shares.push(cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9));
        cpu_all += cpu;
        n += looks;
    }
    let share = claims::quantile_est(&shares, 0.5, false).ok_or(Errno::EIO)?;
    Ok(IdleBurn {
        share,
        cpu_per_look_ns: cpu_all.as_nanos() as f64 / n.max(1) as f64,
        looks: n,
        poll,
    })
}

/// A polling round trip with what its loop burns while idle in its details.
pub struct Polled {
    /// The round trip.
    pub inner: Box<dyn Timed>,
    /// The idle burn, measured before the round trip started.
    pub idle: IdleBurn,
}

impl Timed for Polled {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        self.inner.run(ops)
    }

    fn max_ops(&self) -> Option<u64> {
        self.inner.max_ops()
    }

    fn min_ops(&self) -> u64 {
        self.inner.min_ops()
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        self.inner.take_op_times()
    }

    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }

    fn details(&self) -> Option<serde_json::Value> {
        crate::harness::cpu::merge_into(self.inner.details(), Some(self.idle.details()))
    }

    fn peer_pids(&self) -> Vec<u32> {
        self.inner.peer_pids()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_reaches_the_other_end_by_every_watch() {
        for watch in Watch::ALL {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().to_path_buf();
            let (mut parent, mut peer) = match pair(watch, dir) {
                Ok(p) => p,
                Err(PrepareError::Skip(why)) => {
                    eprintln!("{watch:?} skipped: {why}");
                    continue;
                }
                Err(e) => panic!("{watch:?}: {e}"),
            };
            let mut buf = [0u8; 8];
            for i in 0..3u8 {
                parent.send(&[i; 8]).unwrap();
                assert_eq!(peer.recv(&mut buf).unwrap(), 8);
                assert_eq!(buf, [i; 8], "{watch:?}");
                peer.send(&[i + 10; 8]).unwrap();
                assert_eq!(parent.recv(&mut buf).unwrap(), 8);
                assert_eq!(buf, [i + 10; 8], "{watch:?}");
            }
            drop(peer);
            assert!(path.exists());
            drop(parent);
            assert!(!path.exists(), "the parent's end removes the directory");
        }
    }

    #[test]
    fn names_are_distinct_and_only_polling_has_an_interval() {
        let names: std::collections::HashSet<_> = Watch::ALL.iter().map(|w| w.name()).collect();
        assert_eq!(names.len(), Watch::ALL.len());
        for w in Watch::ALL {
            assert!(w.name().starts_with(w.mechanism()), "{w:?}");
            assert_eq!(w.poll().is_some(), w.mechanism() == "stat_poll", "{w:?}");
        }
        assert_eq!(Watch::StatPoll.name(), "stat_poll");
        assert_eq!(Watch::StatPollSlow.poll(), Some(Duration::from_millis(10)));
    }

    #[test]
    fn fanotify_refusals_skip_with_what_would_let_them_run() {
        let perm = fanotify_skip(Errno::EPERM).unwrap();
        assert!(
            perm.contains("needs CAP_SYS_ADMIN") && perm.contains("EPERM"),
            "{perm}"
        );
        let nosys = fanotify_skip(Errno::ENOSYS).unwrap();
        assert!(nosys.contains("kernel lacks fanotify"), "{nosys}");
        assert!(
            fanotify_skip(Errno::EMFILE)
                .unwrap()
                .contains("max_user_groups")
        );
        assert!(
            fanotify_skip(Errno::EBADF).is_none(),
            "a real failure fails"
        );
    }

    #[test]
    fn fanotify_without_the_capability_skips() {
        if crate::emulation_exception("qemu-user 7.2 has no fanotify_init (ENOSYS)") {
            return;
        }
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        // A child drops CAP_SYS_ADMIN from its bounding and effective sets
        // and tries: the set-up must skip, never fail.
        // SAFETY: the child only makes system calls and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = (|| {
                let dir = tempfile::tempdir().ok()?;
                drop_sys_admin()?;
                match pair(Watch::Fanotify, dir) {
                    Err(PrepareError::Skip(s)) if s.contains("needs CAP_SYS_ADMIN") => Some(0),
                    // Unprivileged fanotify (kernel 5.13+) needs FAN_REPORT_FID, which the rows do not use.
                    Ok(_) => Some(3),
                    _ => Some(1),
                }
            })()
            .unwrap_or(2);
            // SAFETY: leaves the child at once, without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: pid is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        let code = libc::WEXITSTATUS(status);
        // 2: the child could not drop the capability, so nothing was tried.
        assert!(code == 0 || code == 2, "child exit {code}");
    }

    /// Drops CAP_SYS_ADMIN from the calling process's effective set.
    fn drop_sys_admin() -> Option<()> {
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let mut h = Header {
            version: 0x2008_0522,
            pid: 0,
        };
        let mut d = [Data::default(); 2];
        // SAFETY: a valid header and room for two data words (version 3).
        if unsafe { libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()) } != 0 {
            return None;
        }
        const CAP_SYS_ADMIN: u32 = 21;
        d[0].effective &= !(1 << CAP_SYS_ADMIN);
        // SAFETY: as above.
        (unsafe { libc::syscall(libc::SYS_capset, &mut h, d.as_ptr()) } == 0).then_some(())
    }

    #[test]
    fn an_idle_poll_burns_a_little_cpu() {
        let f = tempfile::tempfile().unwrap();
        let b = idle_burn(f.as_raw_fd(), Duration::from_millis(1), 2).unwrap();
        assert_eq!(b.looks, 2 * IDLE_SLICES as u64);
        assert!(b.share.value > 0.0 && b.share.value < 0.5, "{b:?}");
        assert!(b.share.low <= b.share.value && b.share.value <= b.share.high);
        assert!(b.cpu_per_look_ns > 0.0);
        let d = b.details();
        assert_eq!(d["idle_cpu"]["poll_ms"], 1.0);
    }
}
