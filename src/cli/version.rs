//! What `opcost --version` prints: the version, the commit and target it
//! was built from, and the oldest glibc it starts on, read from the
//! executable's own ELF version needs (the loader's own test), so the
//! answer is true of whichever build runs.

use std::path::Path;

/// The `--version` text after the name: version, commit, target and the
/// glibc this executable needs.
pub fn text() -> String {
    let commit = option_env!("OPCOST_GIT_COMMIT")
        .filter(|c| !c.is_empty())
        .unwrap_or("unknown");
    let target = option_env!("OPCOST_TARGET").unwrap_or("unknown target");
    let libc = match glibc_floor(Path::new("/proc/self/exe")) {
        Ok(Some(v)) => format!("needs glibc {v} or newer"),
        Ok(None) => "needs no glibc".to_string(),
        Err(e) => format!("glibc floor unknown: {e}"),
    };
    format!(
        "{} (commit {commit}, {target}, {libc})",
        env!("CARGO_PKG_VERSION")
    )
}

/// Whether the command line asks for the version (`-V` or `--version`):
/// only then is the executable read.
pub fn asked(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    args.into_iter().any(|a| a == "-V" || a == "--version")
}

/// The highest `GLIBC_x.y[.z]` version the ELF file at `path` needs (its
/// `.gnu.version_r` section, as `objdump -T` lists them), None when it
/// needs no glibc version (a static or non-glibc executable).
pub fn glibc_floor(path: &Path) -> Result<Option<String>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let needs = version_needs(&bytes).ok_or("not a little-endian 64-bit ELF file")?;
    Ok(needs
        .iter()
        .filter_map(|n| Some((glibc_version(n)?, n)))
        .max()
        .map(|(_, n)| n["GLIBC_".len()..].to_string()))
}

/// `GLIBC_2.2.5` as [2, 2, 5]; None for any other name (`GLIBC_PRIVATE`).
fn glibc_version(name: &str) -> Option<Vec<u32>> {
    let v = name.strip_prefix("GLIBC_")?;
    v.split('.').map(|p| p.parse().ok()).collect()
}

/// The version names of every `Vernaux` entry of the file's
/// SHT_GNU_verneed sections; None when the file is not a little-endian
/// ELF64 or a table points outside it.
fn version_needs(elf: &[u8]) -> Option<Vec<String>> {
    const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let shoff = u64_at(elf, 0x28)? as usize;
    let shentsize = u16_at(elf, 0x3a)? as usize;
    let shnum = u16_at(elf, 0x3c)? as usize;
    let section = |i: usize| -> Option<(u32, usize, usize, u32)> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        Some((
            u32_at(elf, h + 4)?,
            u64_at(elf, h + 24)? as usize,
            u64_at(elf, h + 32)? as usize,
            u32_at(elf, h + 40)?,
        ))
    };
    let mut names = Vec::new();
    for i in 0..shnum {
        let (kind, offset, _, link) = section(i)?;
        if kind != SHT_GNU_VERNEED {
            continue;
        }
        let (_, strtab, strsize, _) = section(link as usize)?;
        let strings = elf.get(strtab..strtab.checked_add(strsize)?)?;
        // Verneed: vn_cnt at 2, vn_aux at 8, vn_next at 12; Vernaux:
        // vna_name at 8, vna_next at 12 (offsets relative to the entry).
        let mut need = offset;
        loop {
            let count = u16_at(elf, need + 2)?;
            let mut aux = need.checked_add(u32_at(elf, need + 8)? as usize)?;
            for _ in 0..count {
                names.push(c_string(strings, u32_at(elf, aux + 8)? as usize)?);
                aux = aux.checked_add(u32_at(elf, aux + 12)? as usize)?;
            }
            match u32_at(elf, need + 12)? {
                0 => break,
                next => need = need.checked_add(next as usize)?,
            }
        }
    }
    Some(names)
}

/// The NUL-terminated string at `at` in a string table.
fn c_string(strings: &[u8], at: usize) -> Option<String> {
    let rest = strings.get(at..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Little-endian integers at a byte offset, None past the end.
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// See `u16_at`.
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// See `u16_at`.
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The glibc this process runs on, as [major, minor].
    fn running_glibc() -> Vec<u32> {
        // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
        glibc_version(&format!("GLIBC_{}", v.to_str().unwrap())).unwrap()
    }

    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }

    #[test]
    fn a_running_executable_needs_a_glibc_no_newer_than_the_one_it_runs_on() {
        let floor = glibc_floor(Path::new("/proc/self/exe")).unwrap().unwrap();
        let floor = glibc_version(&format!("GLIBC_{floor}")).unwrap();
        // Every test binary calls functions versioned since glibc 2.2.5
        // (x86_64's first) or 2.17 (aarch64's first).
        assert!(floor >= vec![2, 2, 5], "{floor:?}");
        assert!(floor <= running_glibc(), "{floor:?}");
    }

    #[test]
    fn versions_compare_as_numbers_and_other_names_are_not_versions() {
        assert!(glibc_version("GLIBC_2.17") > glibc_version("GLIBC_2.2.5"));
        assert!(glibc_version("GLIBC_2.35") > glibc_version("GLIBC_2.17"));
        assert_eq!(glibc_version("GLIBC_PRIVATE"), None);
        assert_eq!(glibc_version("GCC_3.0"), None);
    }

    #[test]
    fn a_file_that_is_not_elf_is_refused() {
        assert_eq!(version_needs(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(version_needs(b"\x7fELF\x02\x01"), None);
    }

    #[test]
    fn the_version_asked_for_by_either_flag_only() {
        let args = |a: &[&str]| {
            a.iter()
                .map(|s| s.into())
                .collect::<Vec<std::ffi::OsString>>()
        };
        assert!(asked(args(&["opcost", "--version"])));
        assert!(asked(args(&["opcost", "-V"])));
        assert!(!asked(args(&["opcost", "run", "syscall"])));
    }
}
