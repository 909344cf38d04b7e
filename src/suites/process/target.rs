//! The programs the spawn benchmarks execute.
//!
//! The static target is a hand-assembled ELF executable of about 130 bytes
//! whose only instruction sequence is `exit_group(0)`: no dynamic loader, no
//! libc start-up, so a spawn row measures process creation, exec and exit —
//! nothing the program does. It ships inside opcost as bytes and is written
//! into the run's private temp dir (mode 0755) when a benchmark is prepared,
//! which keeps opcost a single file and needs no compiler at run time.
//! Variants exist for x86_64 and aarch64; on other architectures the rows
//! that need it are skipped. The dynamic row runs `/bin/true` so the cost of
//! the loader and libc start-up can be read as the difference.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::harness::PrepareError;

/// Virtual address the static target is loaded at.
const LOAD_ADDR: u64 = 0x40_0000;
/// Size of an ELF64 file header.
const EHDR_SIZE: u16 = 64;
/// Size of an ELF64 program header.
const PHDR_SIZE: u16 = 56;
/// ELF program header type of the loader path (`PT_INTERP`).
const PT_INTERP: u32 = 3;

/// The ELF machine number and the code of `exit_group(0)` for this architecture.
#[cfg(target_arch = "x86_64")]
const EXIT_CODE: Option<(u16, &[u8])> = Some((
    62, // EM_X86_64
    &[
        0x31, 0xff, // xor edi, edi
        0xb8, 0xe7, 0x00, 0x00, 0x00, // mov eax, 231 (exit_group)
        0x0f, 0x05, // syscall
    ],
));
/// The ELF machine number and the code of `exit_group(0)` for this architecture.
#[cfg(target_arch = "aarch64")]
const EXIT_CODE: Option<(u16, &[u8])> = Some((
    183, // EM_AARCH64
    &[
        0x00, 0x00, 0x80, 0xd2, // mov x0, #0
        0xc8, 0x0b, 0x80, 0xd2, // mov x8, #94 (exit_group)
        0x01, 0x00, 0x00, 0xd4, // svc #0
    ],
));
/// The ELF machine number and the code of `exit_group(0)` for this architecture.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const EXIT_CODE: Option<(u16, &[u8])> = None;

/// File name of the static target inside the run's temp dir.
pub const STATIC_NAME: &str = "exit-static";

/// Builds a minimal static ELF64 executable: one header, one loadable
/// segment holding `code`, entry at the code. `None` on architectures
/// without an embedded variant.
pub fn static_elf() -> Option<Vec<u8>> {
    let (machine, code) = EXIT_CODE?;
    Some(build_elf(machine, code))
}

/// Lays out header, program header and code (little-endian ELF64, ET_EXEC).
fn build_elf(machine: u16, code: &[u8]) -> Vec<u8> {
    let code_off = u64::from(EHDR_SIZE + PHDR_SIZE);
    let total = code_off + code.len() as u64;
    let mut f = Vec::with_capacity(total as usize);
    // e_ident: magic, 64-bit, little-endian, version 1, System V ABI, padding.
    f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&2u16.to_le_bytes()); // e_type: ET_EXEC
    f.extend_from_slice(&machine.to_le_bytes()); // e_machine
    f.extend_from_slice(&1u32.to_le_bytes()); // e_version
    f.extend_from_slice(&(LOAD_ADDR + code_off).to_le_bytes()); // e_entry
    f.extend_from_slice(&u64::from(EHDR_SIZE).to_le_bytes()); // e_phoff
    f.extend_from_slice(&0u64.to_le_bytes()); // e_shoff: no sections
    f.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    f.extend_from_slice(&EHDR_SIZE.to_le_bytes()); // e_ehsize
    f.extend_from_slice(&PHDR_SIZE.to_le_bytes()); // e_phentsize
    f.extend_from_slice(&1u16.to_le_bytes()); // e_phnum
    f.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
    f.extend_from_slice(&0u16.to_le_bytes()); // e_shnum
    f.extend_from_slice(&0u16.to_le_bytes()); // e_shstrndx
    // The one PT_LOAD segment: the whole file, readable and executable.
    f.extend_from_slice(&1u32.to_le_bytes()); // p_type: PT_LOAD
    f.extend_from_slice(&5u32.to_le_bytes()); // p_flags: R | X
    f.extend_from_slice(&0u64.to_le_bytes()); // p_offset
    f.extend_from_slice(&LOAD_ADDR.to_le_bytes()); // p_vaddr
    f.extend_from_slice(&LOAD_ADDR.to_le_bytes()); // p_paddr
    f.extend_from_slice(&total.to_le_bytes()); // p_filesz
    f.extend_from_slice(&total.to_le_bytes()); // p_memsz
    f.extend_from_slice(&0x1000u64.to_le_bytes()); // p_align
    f.extend_from_slice(code);
    f
}

/// Writes the static target into `dir` (once per run; later calls reuse
/// it) with mode 0755 and returns its path.
pub fn install_static(dir: &Path) -> Result<PathBuf, PrepareError> {
    let bytes = static_elf().ok_or_else(|| {
        PrepareError::Skip(format!(
            "no embedded exec target for {} (x86_64 and aarch64 only)",
            std::env::consts::ARCH
        ))
    })?;
    let path = dir.join(STATIC_NAME);
    if std::fs::read(&path).is_ok_and(|b| b == bytes) {
        return Ok(path);
    }
    write_target(dir, &path, &bytes)?;
    if let Err(e) = check_runs(&path) {
        let _ = std::fs::remove_file(&path); // so that the next benchmark checks again
        return Err(e);
    }
    Ok(path)
}

/// Runs the freshly written target once; a temp dir that forbids exec or a
/// kernel that refuses the file is a skip, with what to do about it.
fn check_runs(path: &Path) -> Result<(), PrepareError> {
    match std::process::Command::new(path).status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(PrepareError::Skip(format!(
            "the embedded exec target {} ended with {s} instead of exiting 0",
            path.display()
        ))),
        Err(e) => match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => Err(PrepareError::Skip(format!(
                "cannot execute programs in {} ({e}); it is probably mounted noexec: set TMPDIR to a directory that allows exec",
                path.parent().unwrap_or(path).display()
            ))),
            Some(libc::ENOEXEC) => Err(PrepareError::Skip(format!(
                "this kernel refuses the embedded exec target ({e})"
            ))),
            _ => Err(anyhow::Error::new(e)
                .context(format!("running {}", path.display()))
                .into()),
        },
    }
}

/// Writes `bytes` to `path` with mode 0755, through a temporary name.
fn write_target(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), PrepareError> {
    // Write beside it and rename, so a half-written file is never executed.
    let partial = dir.join(format!("{STATIC_NAME}.partial"));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o755)
        .open(&partial)
        .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
        .and_then(|()| std::fs::rename(&partial, path))
        .with_context(|| format!("writing the exec target {}", path.display()))?;
    Ok(())
}

/// Finds `true` for the dynamic row: /bin/true, /usr/bin/true, else on PATH.
pub fn find_true() -> Option<PathBuf> {
    let fixed = ["/bin/true", "/usr/bin/true"].map(PathBuf::from);
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("true"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    fixed
        .into_iter()
        .chain(on_path)
        .find(|p| p.is_absolute() && p.is_file())
}

/// Whether an ELF64 little-endian executable asks for a dynamic loader
/// (has a `PT_INTERP` program header); `None` when it is not such a file.
pub fn is_dynamic(bytes: &[u8]) -> Option<bool> {
    if bytes.len() < usize::from(EHDR_SIZE) || bytes[..4] != [0x7f, b'E', b'L', b'F'] {
        return None;
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return None; // not 64-bit little-endian
    }
    let u16_at = |o: usize| {
        bytes
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let phoff = bytes
        .get(0x20..0x28)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    let phoff = usize::try_from(phoff).ok()?;
    let mut dynamic = false;
    for i in 0..phnum {
        let at = phoff.checked_add(i.checked_mul(phentsize)?)?;
        let ty = bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))?;
        dynamic |= ty == PT_INTERP;
    }
    Some(dynamic)
}

/// A program ready to be executed without allocating: its path, argv and
/// environment as NUL-terminated C arrays (built once, in `prepare`).
pub struct ExecTarget {
    path: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    _env: Vec<CString>,
    shell_cmd: CString,
}

/// Raw pointers of an [`ExecTarget`], handed to a child that shares our memory.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct ExecPtrs {
    /// The program path.
    pub path: *const libc::c_char,
    /// NULL-terminated argument vector.
    pub argv: *const *const libc::c_char,
    /// NULL-terminated environment.
    pub envp: *const *const libc::c_char,
}

impl ExecTarget {
    /// Prepares `path` with argv `[path]` and this process's environment.
    pub fn new(path: &Path) -> anyhow::Result<ExecTarget> {
        let c = |s: &OsStr| {
            CString::new(s.as_bytes()).with_context(|| format!("{s:?} contains a NUL byte"))
        };
        let path_c = c(path.as_os_str())?;
        let env: Vec<CString> = std::env::vars_os()
            .filter_map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).ok()
            })
            .collect();
        let mut envp: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        // The CString's heap buffer does not move when the struct does.
        let argv = vec![path_c.as_ptr(), std::ptr::null()];
        let shell_cmd = CString::new(shell_quote(path.as_os_str().as_bytes()))
            .context("the exec target path contains a NUL byte")?;
        Ok(ExecTarget {
            path: path_c,
            argv,
            envp,
            _env: env,
            shell_cmd,
        })
    }

    /// The pointers execve needs.
    pub fn ptrs(&self) -> ExecPtrs {
        ExecPtrs {
            path: self.path.as_ptr(),
            argv: self.argv.as_ptr(),
            envp: self.envp.as_ptr(),
        }
    }

    /// The path as a C string.
    pub fn path(&self) -> &CString {
        &self.path
    }

    /// The command line for `/bin/sh -c` (popen, system): the quoted path.
    pub fn shell_cmd(&self) -> &CString {
        &self.shell_cmd
    }
}

/// Quotes `s` for a POSIX shell: single quotes, with `'` written as `'\''`.
pub fn shell_quote(s: &[u8]) -> Vec<u8> {
    let mut out = vec![b'\''];
    for &b in s {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_layout_is_consistent() {
        let code = [0x90u8; 9];
        let f = build_elf(62, &code);
        assert_eq!(f.len(), 64 + 56 + 9);
        assert_eq!(&f[..4], b"\x7fELF");
        let entry = u64::from_le_bytes(f[24..32].try_into().unwrap());
        assert_eq!(entry, LOAD_ADDR + 120);
        let filesz = u64::from_le_bytes(f[64 + 32..64 + 40].try_into().unwrap());
        assert_eq!(filesz, f.len() as u64);
        assert_eq!(&f[120..], &code);
        assert_eq!(is_dynamic(&f), Some(false));
    }

    #[test]
    fn garbage_is_not_an_elf() {
        assert_eq!(is_dynamic(b"#!/bin/sh\nexit 0\n"), None);
        assert_eq!(is_dynamic(&[]), None);
        let mut truncated = build_elf(62, &[0x90]);
        truncated.truncate(66); // program header cut off
        assert_eq!(is_dynamic(&truncated), None);
    }

    #[test]
    fn shell_quoting_survives_quotes_and_spaces() {
        assert_eq!(shell_quote(b"/tmp/a b"), b"'/tmp/a b'");
        assert_eq!(shell_quote(b"it's"), b"'it'\\''s'");
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn the_static_target_runs_and_exits_zero() {
        let _g = crate::os::child::test_lock();
        let dir = tempfile::tempdir().unwrap();
        let path = match install_static(dir.path()) {
            Ok(p) => p,
            // A noexec temp dir is the one acceptable failure, as a skip.
            Err(PrepareError::Skip(r)) if r.contains("noexec") => return,
            Err(e) => panic!("{e}"),
        };
        // A second install reuses the file.
        assert_eq!(install_static(dir.path()).unwrap(), path);
        let status = std::process::Command::new(&path).status().unwrap();
        assert!(status.success(), "{status:?}");
        let meta = std::fs::metadata(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
    }

    #[test]
    fn bin_true_if_present_is_an_elf() {
        if let Some(t) = find_true() {
            let bytes = std::fs::read(&t).unwrap();
            // /bin/true may be a script on exotic systems; then None is right.
            if bytes.starts_with(b"\x7fELF") && bytes[4] == 2 {
                assert!(is_dynamic(&bytes).is_some());
            }
        }
    }
}
