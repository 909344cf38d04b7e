//! What the kernel's System V IPC allows: its limits, the skip when it has
//! none, and a private shared-memory segment. Below both the System V
//! message queue (sysv.rs) and the rings placed in a segment (peer.rs).

use nix::errno::Errno;

use crate::harness::PrepareError;

/// Reads a System V limit from /proc/sys/kernel, for skip messages.
pub fn limit(name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The skip for a kernel built without System V IPC.
pub fn no_sysv(e: Errno) -> PrepareError {
    PrepareError::Skip(format!(
        "this kernel has no System V IPC (CONFIG_SYSVIPC; {e})"
    ))
}

/// Creates a private segment of `len` bytes, attaches it and marks it for
/// removal at once: (address, id). The caller detaches it (shmdt).
pub fn segment(len: usize) -> Result<(*mut u8, i32), PrepareError> {
    // SAFETY: plain system call.
    let id = unsafe { libc::shmget(libc::IPC_PRIVATE, len, libc::IPC_CREAT | 0o600) };
    let id = match Errno::result(id) {
        Ok(id) => id,
        Err(Errno::ENOSYS) => return Err(no_sysv(Errno::ENOSYS)),
        Err(e @ (Errno::EINVAL | Errno::ENOSPC | Errno::ENOMEM)) => {
            let show = |n: &str| limit(n).map_or("?".into(), |m| m.to_string());
            return Err(PrepareError::Skip(format!(
                "the kernel refuses a {len}-byte System V segment ({e}); limits: kernel.shmmax {} B, kernel.shmall {} pages, kernel.shmmni {}",
                show("shmmax"),
                show("shmall"),
                show("shmmni")
            )));
        }
        Err(e) => return Err(PrepareError::Fail(anyhow::anyhow!("shmget: {e}"))),
    };
    // SAFETY: attaches the new segment wherever the kernel chooses.
    let p = unsafe { libc::shmat(id, std::ptr::null(), 0) };
    let attached = Errno::result(p as isize).map(|_| p);
    // Removed once nobody is attached: even a killed run leaves nothing.
    // SAFETY: IPC_RMID takes no buffer.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    let p = attached.map_err(|e| PrepareError::Fail(anyhow::anyhow!("shmat: {e}")))?;
    Ok((p.cast(), id))
}
