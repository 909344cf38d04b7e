//! File-change notification: how long from a `write()` to a waiting
//! process learning of it, by inotify and by a `stat()` polling loop.
//!
//! Each end writes one file and watches another, both in a private
//! directory under the run's temp dir: the parent writes `a` and waits for
//! `b` to change, the peer the other way round, so a round trip is a write
//! and its notification each way (the one-way time is half of it, the two
//! directions being the same). The message is the file's content: the
//! receiver reads it back with `pread` once notified, so the integrity
//! check of [`super::link::RoundTrip`] holds for files too.
//!
//! - inotify: an `IN_MODIFY` watch on the file read, a blocking `read` of
//!   the inotify descriptor, then the content; the message is written over
//!   the start of the file (`pwrite` at offset 0).
//! - `stat()` polling: `fstat` of the file read every [`POLL`] (a
//!   `nanosleep` between looks) until it has grown, then the new bytes;
//!   the message is appended. The size, not the modification time, tells a
//!   change: the kernel stamps files from a clock that ticks once a
//!   jiffy, so two writes within a tick look the same.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use nix::errno::Errno;

use super::link::End;
use crate::harness::PrepareError;

/// The interval of the polling loop.
pub const POLL: Duration = Duration::from_millis(1);

/// How an end learns that the file it reads has changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// An inotify `IN_MODIFY` watch, read blocking.
    Inotify,
    /// `fstat` every [`POLL`] until the file has grown.
    StatPoll,
}

/// One end: writes one file, watches the other.
pub struct FileEnd {
    watch: Watch,
    /// The inotify descriptor (inotify only).
    inotify: Option<OwnedFd>,
    /// The file the other end writes.
    rx: OwnedFd,
    /// The file this end writes.
    tx: OwnedFd,
    /// Bytes of `rx` already received (polling: the file grows).
    seen: i64,
    /// Bytes written to `tx` (polling: messages are appended).
    written: i64,
    /// Room for the inotify events of one read.
    events: [u64; 64],
    /// The directory, held by the parent's end and removed with it.
    _dir: Option<tempfile::TempDir>,
}

fn fail(what: &str, path: &Path, e: Errno) -> PrepareError {
    PrepareError::Fail(anyhow::anyhow!("{what} {}: {e}", path.display()))
}

/// Opens `path` for reading and writing, created empty.
fn open_rw(path: &Path) -> Result<OwnedFd, PrepareError> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| PrepareError::Fail(anyhow::anyhow!("a NUL in {}", path.display())))?;
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

/// An inotify descriptor with an `IN_MODIFY` watch on `path`.
fn inotify_on(path: &Path) -> Result<OwnedFd, PrepareError> {
    // SAFETY: no arguments beyond flags.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
    let fd = match Errno::result(fd) {
        Ok(fd) => fd,
        Err(e @ (Errno::ENOSYS | Errno::EMFILE | Errno::ENFILE)) => {
            return Err(PrepareError::Skip(format!(
                "inotify is not available here ({e}; fs.inotify.max_user_instances)"
            )));
        }
        Err(e) => return Err(fail("inotify_init1 for", path, e)),
    };
    // SAFETY: fd was just opened and is owned by no one else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| PrepareError::Fail(anyhow::anyhow!("a NUL in {}", path.display())))?;
    // SAFETY: a valid descriptor and C string.
    let w = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), libc::IN_MODIFY) };
    match Errno::result(w) {
        Ok(_) => Ok(fd),
        Err(e @ Errno::ENOSPC) => Err(PrepareError::Skip(format!(
            "no inotify watch left ({e}; fs.inotify.max_user_watches)"
        ))),
        Err(e) => Err(fail("inotify_add_watch", path, e)),
    }
}

/// The two ends of a file-change link in `dir` (a private directory the
/// parent's end keeps until it is dropped): (parent's, peer's).
pub fn pair(watch: Watch, dir: tempfile::TempDir) -> Result<(FileEnd, FileEnd), PrepareError> {
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let (fa, fb) = (open_rw(&a)?, open_rw(&b)?);
    let (ia, ib) = match watch {
        Watch::Inotify => (Some(inotify_on(&b)?), Some(inotify_on(&a)?)),
        Watch::StatPoll => (None, None),
    };
    let end = |inotify, rx: &OwnedFd, tx: &OwnedFd, dir| -> Result<FileEnd, PrepareError> {
        Ok(FileEnd {
            watch,
            inotify,
            rx: rx.try_clone()?,
            tx: tx.try_clone()?,
            seen: 0,
            written: 0,
            events: [0; 64],
            _dir: dir,
        })
    };
    let peer = end(ib, &fa, &fb, None)?;
    let parent = end(ia, &fb, &fa, Some(dir))?;
    Ok((parent, peer))
}

/// `pread` of all of `buf` from `fd` at `off`.
fn pread_all(fd: RawFd, buf: &mut [u8], off: i64) -> Result<usize, Errno> {
    loop {
        // SAFETY: buf is a valid writable buffer of buf.len() bytes.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off) };
        match Errno::result(n) {
            Ok(n) => return Ok(n as usize),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

impl FileEnd {
    /// Blocks until the inotify descriptor has an event, and consumes it.
    fn wait_event(&mut self, fd: RawFd) -> Result<(), Errno> {
        loop {
            let len = std::mem::size_of_val(&self.events);
            // SAFETY: events is a valid writable, aligned buffer of len bytes.
            let n = unsafe { libc::read(fd, self.events.as_mut_ptr().cast(), len) };
            match Errno::result(n) {
                Ok(0) => return Err(Errno::EIO),
                Ok(_) => return Ok(()),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Sleeps [`POLL`] between `fstat`s until `rx` holds `want` new bytes.
    fn poll_grown(&self, want: usize) -> Result<(), Errno> {
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: POLL.as_nanos() as libc::c_long,
        };
        loop {
            // SAFETY: stat is plain data; zero is a valid start.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: a valid descriptor and a writable stat.
            Errno::result(unsafe { libc::fstat(self.rx.as_raw_fd(), &mut st) })?;
            if st.st_size >= self.seen + want as i64 {
                return Ok(());
            }
            // SAFETY: a valid timespec; an interrupted sleep just polls early.
            unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
        }
    }
}

impl End for FileEnd {
    fn datagram(&self) -> bool {
        true
    }

    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        let off = match self.watch {
            Watch::Inotify => 0,
            Watch::StatPoll => self.written,
        };
        loop {
            // SAFETY: msg is a valid readable buffer of msg.len() bytes.
            let n =
                unsafe { libc::pwrite(self.tx.as_raw_fd(), msg.as_ptr().cast(), msg.len(), off) };
            match Errno::result(n) {
                Ok(n) if n as usize == msg.len() => break,
                Ok(_) => return Err(Errno::EIO),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
        self.written += msg.len() as i64;
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        match (self.watch, self.inotify.as_ref().map(AsRawFd::as_raw_fd)) {
            (Watch::Inotify, Some(fd)) => {
                self.wait_event(fd)?;
                pread_all(self.rx.as_raw_fd(), buf, 0)
            }
            _ => {
                self.poll_grown(buf.len())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_reaches_the_other_end_by_either_watch() {
        for watch in [Watch::Inotify, Watch::StatPoll] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().to_path_buf();
            let (mut parent, mut peer) = match pair(watch, dir) {
                Ok(p) => p,
                Err(PrepareError::Skip(why)) => {
                    eprintln!("skipped: {why}");
                    continue;
                }
                Err(e) => panic!("{e}"),
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
}
