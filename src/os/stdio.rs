//! C stdio streams, for the benchmarks that time libc's buffered I/O
//! (`putc`/`getc`, `fread`/`fwrite`) against plain system calls.

use std::ffi::CStr;
use std::fs::File;
use std::os::fd::IntoRawFd;
use std::ptr::NonNull;

use anyhow::{Context, bail};

/// A C stdio stream (`FILE*`), closed (and so flushed) on drop.
pub struct CFile(NonNull<libc::FILE>);

impl CFile {
    /// Wraps `file` in a stream opened with `mode` (`r`, `w`, `r+`...); the
    /// stream takes the descriptor over.
    pub fn from_file(file: File, mode: &CStr) -> anyhow::Result<CFile> {
        let fd = file.into_raw_fd();
        // SAFETY: fd is an open descriptor we own; mode is a valid C string.
        let f = unsafe { libc::fdopen(fd, mode.as_ptr()) };
        match NonNull::new(f) {
            Some(f) => Ok(CFile(f)),
            None => {
                let e = std::io::Error::last_os_error();
                // SAFETY: fdopen failed, so the descriptor is still ours to close.
                unsafe { libc::close(fd) };
                Err(e).context("fdopen")
            }
        }
    }

    /// The stream, for libc's stdio calls.
    #[inline(always)]
    pub fn ptr(&self) -> *mut libc::FILE {
        self.0.as_ptr()
    }

    /// Moves to the start of the file, dropping what the stream buffered.
    pub fn rewind(&mut self) -> anyhow::Result<()> {
        // SAFETY: self.0 is an open stream.
        if unsafe { libc::fseek(self.ptr(), 0, libc::SEEK_SET) } != 0 {
            bail!("fseek: {}", std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for CFile {
    fn drop(&mut self) {
        // SAFETY: self.0 is an open stream, closed exactly once here.
        unsafe { libc::fclose(self.0.as_ptr()) };
    }
}
