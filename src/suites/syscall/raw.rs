//! The raw system-call instruction, and a look into the vDSO.
//!
//! Why inline assembly: `libc::syscall` is itself a variadic function that
//! shuffles registers and sets errno, and the libc wrappers (`getpid`,
//! `read`) add their own call. To measure the kernel entry and nothing
//! else, the instruction (`syscall` on x86_64, `svc 0` on aarch64) is
//! issued inline. Other architectures fall back to `libc::syscall`, and
//! [`FALLBACK`] carries the warning that says so.
//!
//! Why look into the vDSO: a libc call such as `clock_gettime` is fast only
//! when the kernel's vDSO offers that function; otherwise libc quietly makes
//! the system call. Asking the dynamic loader for the vDSO's own symbol tells
//! which case a result is, instead of guessing from the timing.

use std::ffi::{CStr, CString, c_void};

use libc::c_long;

/// System call numbers used by the suite.
pub mod nr {
    use libc::c_long;

    /// getpid(2).
    pub const GETPID: c_long = libc::SYS_getpid;
    /// getppid(2), the call `perf bench syscall basic` loops on.
    pub const GETPPID: c_long = libc::SYS_getppid;
    /// read(2).
    pub const READ: c_long = libc::SYS_read;
    /// write(2).
    pub const WRITE: c_long = libc::SYS_write;

    /// clock_gettime(2), where opcost knows its number on this architecture.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub const CLOCK_GETTIME: Option<c_long> = Some(libc::SYS_clock_gettime);
    /// clock_gettime(2), where opcost knows its number on this architecture.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub const CLOCK_GETTIME: Option<c_long> = None;

    /// gettimeofday(2), where opcost knows its number on this architecture.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub const GETTIMEOFDAY: Option<c_long> = Some(libc::SYS_gettimeofday);
    /// gettimeofday(2), where opcost knows its number on this architecture.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub const GETTIMEOFDAY: Option<c_long> = None;

    /// getcpu(2), where opcost knows its number on this architecture.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub const GETCPU: Option<c_long> = Some(libc::SYS_getcpu);
    /// getcpu(2), where opcost knows its number on this architecture.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub const GETCPU: Option<c_long> = None;

    /// time(2): only some architectures (x86_64 among them) still have it.
    #[cfg(target_arch = "x86_64")]
    pub const TIME: Option<c_long> = Some(libc::SYS_time);
    /// time(2): only some architectures (x86_64 among them) still have it.
    #[cfg(not(target_arch = "x86_64"))]
    pub const TIME: Option<c_long> = None;
}

/// True on architectures without an inline system-call path, where every
/// raw result goes through `libc::syscall` and says so.
pub const FALLBACK: bool = cfg!(not(any(target_arch = "x86_64", target_arch = "aarch64")));

/// Issues system call `nr` with no arguments; returns the kernel's result
/// (a negative errno on failure).
///
/// # Safety
/// The call must be one that takes no arguments and touches no memory of
/// the caller (getpid, getppid...).
#[inline(always)]
pub unsafe fn syscall0(nr: c_long) -> isize {
    #[cfg(target_arch = "x86_64")]
    {
        let ret: isize;
        // SAFETY: the caller guarantees the call is harmless; `syscall`
        // clobbers rcx and r11 only, and restores the flags.
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") nr as isize => ret,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack, preserves_flags)
            );
        }
        ret
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ret: isize;
        // SAFETY: the caller guarantees the call is harmless; `svc 0`
        // returns in x0 and preserves every other register.
        unsafe {
            core::arch::asm!(
                "svc 0",
                in("x8") nr as isize,
                lateout("x0") ret,
                options(nostack, preserves_flags)
            );
        }
        ret
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: as above; libc::syscall sets errno instead of returning it.
        let r = unsafe { libc::syscall(nr) };
        if r == -1 {
            -(errno() as isize)
        } else {
            r as isize
        }
    }
}

/// Issues system call `nr` with three arguments (unused ones zero); returns
/// the kernel's result (a negative errno on failure).
///
/// # Safety
/// The arguments must be valid for the call: pointers must point to memory
/// of the right size that the call may read or write.
#[inline(always)]
pub unsafe fn syscall3(nr: c_long, a: usize, b: usize, c: usize) -> isize {
    #[cfg(target_arch = "x86_64")]
    {
        let ret: isize;
        // SAFETY: the caller guarantees valid arguments; `syscall` clobbers
        // rcx and r11 only, and memory is not declared untouched.
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") nr as isize => ret,
                in("rdi") a,
                in("rsi") b,
                in("rdx") c,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack, preserves_flags)
            );
        }
        ret
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ret: isize;
        // SAFETY: the caller guarantees valid arguments; `svc 0` returns in
        // x0 and preserves every other register.
        unsafe {
            core::arch::asm!(
                "svc 0",
                in("x8") nr as isize,
                inlateout("x0") a as isize => ret,
                in("x1") b,
                in("x2") c,
                options(nostack, preserves_flags)
            );
        }
        ret
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: as above; libc::syscall sets errno instead of returning it.
        let r = unsafe { libc::syscall(nr, a, b, c) };
        if r == -1 {
            -(errno() as isize)
        } else {
            r as isize
        }
    }
}

/// The calling thread's errno.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Turns a raw result into `Ok(value)` or the OS error it encodes.
pub fn check(ret: isize) -> std::io::Result<usize> {
    if ret < 0 {
        Err(std::io::Error::from_raw_os_error((-ret) as i32))
    } else {
        Ok(ret as usize)
    }
}

/// What the vDSO says about one of its functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vdso {
    /// The vDSO exports the function, at this address.
    Found(*mut c_void),
    /// The vDSO is there but has no such function: libc makes a system call.
    Missing,
    /// The vDSO could not be inspected (static binary, another libc).
    Unknown,
}

/// The names the loader gives the vDSO (`linux-gate` on 32-bit x86).
const VDSO_NAMES: [&CStr; 2] = [c"linux-vdso.so.1", c"linux-gate.so.1"];

/// Looks up `func` (`clock_gettime`, `getcpu`...) in the vDSO under the
/// names kernels export it as (`__vdso_*` on x86 and RISC-V, `__kernel_*`
/// on arm64 and POWER).
pub fn vdso_lookup(func: &str) -> Vdso {
    let Some(handle) = VDSO_NAMES.iter().find_map(|name| {
        // SAFETY: RTLD_NOLOAD only returns an object that is already mapped;
        // nothing is loaded or initialised.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        (!h.is_null()).then_some(h)
    }) else {
        return Vdso::Unknown;
    };
    let mut found = Vdso::Missing;
    for prefix in ["__vdso_", "__kernel_"] {
        let Ok(sym) = CString::new(format!("{prefix}{func}")) else {
            continue;
        };
        // SAFETY: `handle` is a live handle and `sym` a NUL-terminated name.
        let addr = unsafe { libc::dlsym(handle, sym.as_ptr()) };
        if !addr.is_null() {
            found = Vdso::Found(addr);
            break;
        }
    }
    // The vDSO stays mapped for the life of the process, so its addresses
    // remain valid after the handle is released.
    // SAFETY: balances the dlopen above.
    unsafe { libc::dlclose(handle) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_getpid_and_getppid_agree_with_libc() {
        // SAFETY: getpid and getppid take no arguments.
        let pid = check(unsafe { syscall0(nr::GETPID) }).unwrap();
        assert_eq!(pid as u32, std::process::id());
        let ppid = check(unsafe { syscall0(nr::GETPPID) }).unwrap();
        // SAFETY: getppid has no preconditions.
        assert_eq!(ppid as i32, unsafe { libc::getppid() });
    }

    #[test]
    fn raw_read_fills_the_buffer_and_errors_are_negative() {
        let f = std::fs::File::open("/dev/zero").unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        let mut buf = [0xffu8; 8];
        // SAFETY: buf is 8 writable bytes.
        let n = unsafe { syscall3(nr::READ, fd as usize, buf.as_mut_ptr() as usize, 8) };
        assert_eq!(check(n).unwrap(), 8);
        assert_eq!(buf, [0; 8]);
        // SAFETY: an invalid descriptor is rejected by the kernel.
        let bad = unsafe { syscall3(nr::READ, usize::MAX >> 1, buf.as_mut_ptr() as usize, 8) };
        assert_eq!(check(bad).unwrap_err().raw_os_error(), Some(libc::EBADF));
    }

    #[test]
    fn raw_clock_gettime_moves_forward() {
        let Some(n) = nr::CLOCK_GETTIME else { return };
        let mut a = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut b = a;
        let p = |t: &mut libc::timespec| t as *mut _ as usize;
        // SAFETY: the timespecs are valid and writable.
        unsafe {
            check(syscall3(n, libc::CLOCK_MONOTONIC as usize, p(&mut a), 0)).unwrap();
            check(syscall3(n, libc::CLOCK_MONOTONIC as usize, p(&mut b), 0)).unwrap();
        }
        assert!(a.tv_sec > 0 || a.tv_nsec > 0);
        assert!((b.tv_sec, b.tv_nsec) >= (a.tv_sec, a.tv_nsec));
    }

    #[test]
    fn vdso_lookup_never_invents_a_function() {
        assert!(!matches!(
            vdso_lookup("no_such_function_here"),
            Vdso::Found(_)
        ));
        // Where the vDSO can be inspected at all, every Linux vDSO has clock_gettime.
        if vdso_lookup("clock_gettime") != Vdso::Unknown {
            assert!(matches!(vdso_lookup("clock_gettime"), Vdso::Found(_)));
        }
    }
}
