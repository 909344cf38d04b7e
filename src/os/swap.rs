//! Temporary swap areas a benchmark creates, enables and removes: a swap
//! file in a directory the run writes to, or a hot-added zram device.
//!
//! The user's own swap configuration is never changed: opcost only adds
//! areas of its own, each labelled `opcost:PID` in its swap header (written
//! here, not by `mkswap`, so nothing outside opcost is needed), and only
//! ever disables and removes areas carrying that label. Every live area is
//! listed so that an exit that skips destructors (a second Ctrl-C) disables
//! it first ([`remove_all`]); an area whose owner was killed outright
//! (SIGKILL, the OOM killer) is found by its label and removed by the next
//! opcost process that sweeps ([`sweep_stale`]), which every run does when
//! it starts, when it ends and when it aborts.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The label prefix of opcost's swap areas; the owner's pid follows.
pub const LABEL_PREFIX: &str = "opcost:";
/// The highest swap priority the kernel accepts: pages go to the area
/// with the highest priority first, so a temporary area at this priority
/// takes the benchmark's pages rather than the user's swap.
pub const PRIORITY: i32 = 32767;
/// Offset of the label in the swap header (after the 1 KiB boot block,
/// version, last page, bad-page count and the 16-byte uuid).
const LABEL_AT: usize = 1024 + 12 + 16;
/// Length of the label field.
const LABEL_LEN: usize = 16;

/// The kind of a temporary swap area.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// A swap file at this path.
    File,
    /// The zram device with this index.
    Zram(u32),
}

/// A swap area opcost enabled, disabled and removed when dropped.
#[derive(Debug)]
pub struct SwapArea {
    /// What it is.
    pub kind: Kind,
    /// The file or device node enabled (`/proc/swaps` names it).
    pub path: PathBuf,
    /// Its size in bytes, header included.
    pub bytes: u64,
}

/// Areas alive in this process, for [`remove_all`].
static LIVE: Mutex<Vec<(Kind, PathBuf)>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<(Kind, PathBuf)>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held while an area is disabled and removed: a second Ctrl-C's
/// [`remove_all`] (another thread) and the owner's drop never work on one
/// area at once, and the process exits only once a removal begun is done.
static REMOVING: Mutex<()> = Mutex::new(());

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

/// The first page of a version-1 swap area of `bytes` bytes labelled for
/// process `pid` (what `mkswap -L opcost:PID` writes).
pub fn header(bytes: u64, pid: u32) -> Vec<u8> {
    let ps = page_size();
    let mut h = vec![0u8; ps];
    let last_page = (bytes / ps as u64).saturating_sub(1) as u32;
    h[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    h[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    // Bad pages 0; the uuid from the pid and the time, only to tell areas apart.
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    h[1036..1044].copy_from_slice(&t.to_ne_bytes());
    h[1044..1048].copy_from_slice(&pid.to_ne_bytes());
    let label = format!("{LABEL_PREFIX}{pid}");
    let n = label.len().min(LABEL_LEN - 1);
    h[LABEL_AT..LABEL_AT + n].copy_from_slice(&label.as_bytes()[..n]);
    h[ps - 10..].copy_from_slice(b"SWAPSPACE2");
    h
}

/// The owner pid of a swap header's opcost label, if it has one.
pub fn label_owner(first_page: &[u8]) -> Option<u32> {
    let field = first_page.get(LABEL_AT..LABEL_AT + LABEL_LEN)?;
    let end = field.iter().position(|&b| b == 0).unwrap_or(LABEL_LEN);
    let text = std::str::from_utf8(&field[..end]).ok()?;
    text.strip_prefix(LABEL_PREFIX)?.parse().ok()
}

/// One line of `/proc/swaps`.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The file or device, unescaped.
    pub path: String,
    /// `file` or `partition`.
    pub kind: String,
    /// Size in KiB.
    pub size_kib: u64,
    /// Used in KiB.
    pub used_kib: u64,
    /// Priority.
    pub priority: i32,
}

/// Parses `/proc/swaps` text.
pub fn parse_swaps(text: &str) -> Vec<Entry> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            Some(Entry {
                path: unescape(f[0]),
                kind: f[1].to_string(),
                size_kib: f[2].parse().ok()?,
                used_kib: f[3].parse().ok()?,
                priority: f[4].parse().ok()?,
            })
        })
        .collect()
}

/// Undoes the octal escapes of `/proc/swaps` (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && b.len() >= i + 4
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The swap areas enabled now.
pub fn enabled() -> Vec<Entry> {
    std::fs::read_to_string("/proc/swaps")
        .map(|t| parse_swaps(&t))
        .unwrap_or_default()
}

/// The opcost owner of an enabled area, read from its header.
pub fn owner_of(path: &str) -> Option<u32> {
    let mut f = File::open(path).ok()?;
    let mut page = vec![0u8; page_size()];
    f.read_exact(&mut page).ok()?;
    label_owner(&page)
}

/// True while process `pid` lives (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X"),
        Err(_) => false,
    }
}

/// `<sys/swap.h>`: the priority given in the flags is used.
const SWAP_FLAG_PREFER: i32 = 0x8000;
/// `<sys/swap.h>`: the bits of the priority.
const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;

fn swapon(path: &Path, priority: i32) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    let flags = SWAP_FLAG_PREFER | (priority & SWAP_FLAG_PRIO_MASK);
    // SAFETY: a valid C string and flags.
    if unsafe { libc::swapon(c.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn swapoff(path: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
    // SAFETY: a valid C string.
    if unsafe { libc::swapoff(c.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Why a temporary swap area could not be set up: a reason to skip.
pub fn why_swapon_failed(e: &std::io::Error, what: &str) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => format!(
            "needs root to enable a temporary {what} (swapon was refused: {e}); run as root or with CAP_SYS_ADMIN, outside a container"
        ),
        Some(libc::EINVAL) => format!(
            "the kernel refused the temporary {what} (swapon: {e}); its file system may not support swap files (tmpfs, btrfs without nocow): choose another --dir"
        ),
        Some(libc::ENOSYS) => {
            "the kernel was built without swap (CONFIG_SWAP); a kernel with it would run these rows"
                .into()
        }
        _ => format!("swapon of the temporary {what} failed: {e}"),
    }
}

impl SwapArea {
    /// Creates a swap file of `bytes` at `path` (no holes: allocated, then
    /// its header written), and enables it at [`PRIORITY`]. The error is a
    /// reason to skip.
    pub fn file(path: &Path, bytes: u64) -> Result<SwapArea, String> {
        let ps = page_size() as u64;
        let bytes = bytes / ps * ps;
        let mut f = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| format!("creating {}: {e}", path.display()))?;
        // Listed before it is enabled, so an abort in between removes it.
        live().push((Kind::File, path.to_path_buf()));
        let area = SwapArea {
            kind: Kind::File,
            path: path.to_path_buf(),
            bytes,
        };
        use std::os::unix::fs::PermissionsExt;
        let _ = f.set_permissions(std::fs::Permissions::from_mode(0o600));
        // Written, not fallocated: a swap file must have no holes, and
        // some file systems refuse unwritten extents.
        let chunk = vec![0u8; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n])
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
            left -= n as u64;
        }
        f.write_all_at(&header(bytes, std::process::id()), 0)
            .and_then(|_| f.sync_all())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        drop(f);
        swapon(path, PRIORITY).map_err(|e| why_swapon_failed(&e, "swap file"))?;
        Ok(area)
    }

    /// Hot-adds a zram device of `bytes` (the kernel's default compressor),
    /// writes its swap header and enables it at [`PRIORITY`]. The error is
    /// a reason to skip.
    pub fn zram(bytes: u64) -> Result<SwapArea, String> {
        let control = Path::new("/sys/class/zram-control/hot_add");
        if !control.exists() {
            return Err(if Path::new("/sys/module/zram").exists() {
                "zram is loaded but /sys/class/zram-control/hot_add is missing, and opcost does not take over an existing zram device".into()
            } else {
                "no zram in this kernel (no /sys/module/zram); `modprobe zram` as root, or a kernel with CONFIG_ZRAM, would run these rows".into()
            });
        }
        let index: u32 = std::fs::read_to_string(control)
            .map_err(|e| why_swapon_failed(&e, "zram device (hot_add)"))?
            .trim()
            .parse()
            .map_err(|e| format!("hot_add answered no device number: {e}"))?;
        let path = PathBuf::from(format!("/dev/zram{index}"));
        live().push((Kind::Zram(index), path.clone()));
        let ps = page_size() as u64;
        let bytes = bytes / ps * ps;
        let area = SwapArea {
            kind: Kind::Zram(index),
            path: path.clone(),
            bytes,
        };
        let sys = zram_sys(index);
        std::fs::write(sys.join("disksize"), bytes.to_string())
            .map_err(|e| format!("setting the zram disksize: {e}"))?;
        // The device node appears asynchronously (devtmpfs); wait briefly.
        let start = std::time::Instant::now();
        while !path.exists() && start.elapsed() < std::time::Duration::from_secs(2) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let f = File::options()
            .write(true)
            .open(&path)
            .map_err(|e| format!("opening {}: {e}", path.display()))?;
        f.write_all_at(&header(bytes, std::process::id()), 0)
            .and_then(|_| f.sync_all())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        drop(f);
        swapon(&path, PRIORITY).map_err(|e| why_swapon_failed(&e, "zram swap"))?;
        Ok(area)
    }

    /// Its line in `/proc/swaps`, while enabled.
    pub fn entry(&self) -> Option<Entry> {
        let p = self.path.to_string_lossy();
        enabled().into_iter().find(|e| e.path == p)
    }
}

/// The sysfs directory of zram device `index`.
pub fn zram_sys(index: u32) -> PathBuf {
    PathBuf::from(format!("/sys/block/zram{index}"))
}

/// The compressor a zram device uses (the bracketed one of comp_algorithm).
pub fn zram_algorithm(index: u32) -> Option<String> {
    let t = std::fs::read_to_string(zram_sys(index).join("comp_algorithm")).ok()?;
    t.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(['[', ']']).to_string())
}

/// How long a removal keeps trying a step the device refuses as busy.
const BUSY_FOR: std::time::Duration = std::time::Duration::from_secs(3);

/// `step` until it does not fail with EBUSY (a zram device still open,
/// e.g. probed after its reset), for at most [`BUSY_FOR`].
fn unless_busy(step: impl Fn() -> std::io::Result<()>) -> std::io::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match step() {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && start.elapsed() < BUSY_FOR => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// Disables and removes one area: swapoff, then the file unlinked or the
/// zram device reset and (unless it is zram0) removed. An area no longer
/// enabled (swapoff's EINVAL) is still removed.
fn remove(kind: &Kind, path: &Path) -> std::io::Result<()> {
    let on = enabled()
        .iter()
        .any(|e| Path::new(&e.path) == path || e.path.starts_with(&*path.to_string_lossy()));
    if on {
        match swapoff(path) {
            Err(e) if e.raw_os_error() != Some(libc::EINVAL) => return Err(e),
            _ => {}
        }
    }
    match kind {
        Kind::File => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        },
        Kind::Zram(i) => {
            let sys = zram_sys(*i);
            if sys.exists() {
                unless_busy(|| std::fs::write(sys.join("reset"), "1"))?;
            }
            if *i != 0 && sys.exists() {
                unless_busy(|| {
                    std::fs::write("/sys/class/zram-control/hot_remove", i.to_string())
                })?;
            }
        }
    }
    Ok(())
}

/// What a failed removal says: the error, and how to finish it by hand.
fn not_removed(kind: &Kind, path: &Path, e: &std::io::Error) -> String {
    let p = path.display();
    let by_hand = match kind {
        Kind::File => format!("swapoff {p}; rm {p}"),
        Kind::Zram(0) => format!("swapoff {p}; echo 1 > /sys/block/zram0/reset"),
        Kind::Zram(i) => {
            format!("swapoff {p}; echo {i} > /sys/class/zram-control/hot_remove")
        }
    };
    format!("opcost: could not remove the temporary swap {p}: {e}; as root: {by_hand}")
}

impl Drop for SwapArea {
    fn drop(&mut self) {
        let _one = REMOVING.lock().unwrap_or_else(|e| e.into_inner());
        // Gone from the list: a second Ctrl-C's remove_all took it already.
        let listed = {
            let mut l = live();
            let before = l.len();
            l.retain(|(_, p)| p != &self.path);
            l.len() != before
        };
        if !listed {
            return;
        }
        if let Err(e) = remove(&self.kind, &self.path) {
            eprintln!("{}", not_removed(&self.kind, &self.path, &e));
        }
    }
}

/// Disables and removes every area of this process: for an exit that skips
/// destructors (after a removal another thread has begun); then sweeps the
/// areas of dead owners.
pub fn remove_all() {
    let _one = REMOVING.lock().unwrap_or_else(|e| e.into_inner());
    let areas: Vec<(Kind, PathBuf)> = live().drain(..).collect();
    for (kind, path) in areas {
        if let Err(e) = remove(&kind, &path) {
            eprintln!("{}", not_removed(&kind, &path, &e));
        }
    }
    sweep_stale();
}

/// Disables and removes the enabled areas labelled by an opcost process
/// that is gone, and returns their paths. Areas without opcost's label
/// (the user's swap) and those of live processes are left alone.
pub fn sweep_stale() -> Vec<String> {
    let mut removed = Vec::new();
    for e in enabled() {
        let Some(pid) = owner_of(&e.path) else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        let kind = match e
            .path
            .strip_prefix("/dev/zram")
            .and_then(|n| n.parse().ok())
        {
            Some(i) => Kind::Zram(i),
            None => Kind::File,
        };
        if remove(&kind, Path::new(&e.path)).is_ok() {
            removed.push(e.path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_carries_the_label_and_the_signature() {
        let h = header(64 << 20, 4242);
        let ps = page_size();
        assert_eq!(h.len(), ps);
        assert_eq!(&h[ps - 10..], b"SWAPSPACE2");
        assert_eq!(label_owner(&h), Some(4242));
        let last = u32::from_ne_bytes(h[1028..1032].try_into().unwrap());
        assert_eq!(last as u64, (64 << 20) / ps as u64 - 1);
        assert_eq!(label_owner(&vec![0u8; ps]), None);
    }

    #[test]
    fn proc_swaps_is_parsed_with_escapes() {
        let t = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                 /work/my\\040dir/swapfile               file\t\t131068\t\t12\t\t32767\n\
                 /dev/zram1                              partition\t65532\t\t0\t\t-2\n";
        let e = parse_swaps(t);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].path, "/work/my dir/swapfile");
        assert_eq!(e[0].priority, 32767);
        assert_eq!(e[1].path, "/dev/zram1");
        assert_eq!(e[1].used_kib, 0);
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn a_failed_removal_says_how_to_finish_it() {
        let e = std::io::Error::from_raw_os_error(libc::EBUSY);
        let z = not_removed(&Kind::Zram(3), Path::new("/dev/zram3"), &e);
        assert!(
            z.contains("echo 3 > /sys/class/zram-control/hot_remove"),
            "{z}"
        );
        let f = not_removed(&Kind::File, Path::new("/tmp/x/swapfile"), &e);
        assert!(
            f.ends_with("as root: swapoff /tmp/x/swapfile; rm /tmp/x/swapfile"),
            "{f}"
        );
    }

    #[test]
    fn a_dead_process_is_not_alive() {
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX - 1));
    }
}
