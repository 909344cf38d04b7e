//! Where a storage result was measured: the directory, its file system and
//! mount options, the block device behind it, and the I/O scheduler that
//! really applies.
//!
//! Why this is more than reading `/sys/block/X/queue/scheduler`: a file
//! system often lives on a partition (whose queue is its disk's), on a
//! device-mapper volume (LVM, dm-crypt) or on md RAID. Those stacked devices
//! are bio-based: their own queue shows `none` and it is the scheduler of
//! each underlying disk that orders the requests. Only request-based
//! device-mapper (multipath) schedules at the top. So the resolver walks
//! `slaves/` down to the physical devices and reports what applies, and says
//! so when a device (zram, some virtio or NVMe set-ups) has no scheduler.
//!
//! The resolver takes the sysfs root as a parameter so it can be tested on a
//! fake tree; [`locate`] reads the real `/proc/self/mountinfo` and `/sys`.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

/// How deep `slaves/` links are followed (stacks are a few levels at most).
const MAX_DEPTH: usize = 16;

/// One line of `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// Device major number as the mount reports it (0 for anonymous devices).
    pub major: u32,
    /// Device minor number.
    pub minor: u32,
    /// The mount point, unescaped.
    pub mount_point: PathBuf,
    /// Per-mount options (`rw,relatime`).
    pub options: String,
    /// File system type (`ext4`, `tmpfs`, `overlay`...).
    pub fs_type: String,
    /// Mount source (`/dev/vda`, `tmpfs`, `pool/data`).
    pub source: String,
    /// Per-superblock options (`rw,discard,errors=remount-ro`).
    pub super_options: String,
}

/// Undoes mountinfo's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = oct
                    .iter()
                    .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `/proc/self/mountinfo`; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_mount_line).collect()
}

fn parse_mount_line(line: &str) -> Option<Mount> {
    // id parent major:minor root mount_point options [optional...] - fstype source super_options
    let fields: Vec<&str> = line.split(' ').collect();
    let sep = fields.iter().position(|f| *f == "-")?;
    if sep < 6 || fields.len() < sep + 3 {
        return None;
    }
    let (major, minor) = fields[2].split_once(':')?;
    Some(Mount {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        mount_point: PathBuf::from(unescape(fields[4])),
        options: fields[5].to_string(),
        fs_type: fields[sep + 1].to_string(),
        source: unescape(fields[sep + 2]),
        super_options: fields.get(sep + 3).copied().unwrap_or("").to_string(),
    })
}

/// The mount that holds `path` (canonical): the longest mount point that is
/// a prefix of it, preferring mounts whose device is `dev`; among equals the
/// last one listed (a later mount hides an earlier one).
pub fn mount_for<'a>(
    mounts: &'a [Mount],
    path: &Path,
    dev: Option<(u32, u32)>,
) -> Option<&'a Mount> {
    let holds = |m: &&Mount| path.starts_with(&m.mount_point);
    let best = |it: &mut dyn Iterator<Item = &'a Mount>| {
        let mut best: Option<&'a Mount> = None;
        for m in it {
            let len = m.mount_point.components().count();
            if best.is_none_or(|b| len >= b.mount_point.components().count()) {
                best = Some(m);
            }
        }
        best
    };
    if let Some((ma, mi)) = dev {
        let mut same = mounts
            .iter()
            .filter(holds)
            .filter(|m| m.major == ma && m.minor == mi);
        if let Some(m) = best(&mut same) {
            return Some(m);
        }
    }
    best(&mut mounts.iter().filter(holds))
}

/// A physical (bottom-of-stack) block device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Physical {
    /// Kernel name (`sda`, `nvme0n1`, `vda`).
    pub name: String,
    /// The selected scheduler; `None` when the device has no scheduler at all.
    pub scheduler: Option<String>,
    /// Whether sysfs calls it rotational (virtual disks often say yes).
    pub rotational: Option<bool>,
    /// `write back` (volatile cache: flushes cost) or `write through`.
    pub write_cache: Option<String>,
    /// Model string, when the device has one.
    pub model: Option<String>,
    /// How it is attached (`nvme`, `sata (ahci)`, `virtio_blk`, `usb (uas)`,
    /// `mmc (sdhci-pci)`...; see [`super::device::transport_of`]).
    pub transport: Option<String>,
    /// The drivers along its sysfs path, nearest first.
    pub drivers: Vec<String>,
    /// Its request-queue settings.
    pub queue: Option<super::device::Queue>,
}

/// The block device a file system lives on, resolved down to physical devices.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlockDevice {
    /// The device the mount names (`sda2`, `dm-0`, `md0`, `vda`).
    pub name: String,
    /// What it is: `disk`, `partition of sda`, `LVM volume vg-root (device-mapper)`...
    pub kind: String,
    /// Every device met walking down the stack, top first, with its kind.
    pub stack: Vec<String>,
    /// The devices at the bottom of the stack.
    pub physical: Vec<Physical>,
    /// The scheduler(s) in effect (`mq-deadline`, `none`, `bfq (sda), none (sdb)`).
    pub scheduler: String,
    /// Why that scheduler applies (stacking, no scheduler...).
    pub scheduler_note: String,
    /// True when any physical device is rotational.
    pub rotational: Option<bool>,
}

/// What a queue/scheduler file says: the selected one and every choice.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SchedulerFile {
    selected: String,
    choices: Vec<String>,
}

/// Parses `none [mq-deadline] kyber bfq` (a lone `none` is selected too).
fn parse_scheduler(text: &str) -> Option<SchedulerFile> {
    let choices: Vec<String> = text
        .split_whitespace()
        .map(|c| c.trim_matches(['[', ']']).to_string())
        .collect();
    let selected = text
        .split_whitespace()
        .find(|c| c.starts_with('['))
        .map(|c| c.trim_matches(['[', ']']).to_string())
        .or_else(|| (choices.len() == 1).then(|| choices[0].clone()))?;
    Some(SchedulerFile { selected, choices })
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn name_of(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A partition's directory sits inside its disk's; anything else is a disk.
fn disk_of(dev_dir: &Path) -> PathBuf {
    if dev_dir.join("partition").exists()
        && let Some(parent) = dev_dir.parent()
    {
        return parent.to_path_buf();
    }
    dev_dir.to_path_buf()
}

/// What kind of device `dir` is, in words.
fn kind_of(dir: &Path) -> String {
    let name = name_of(dir);
    if dir.join("partition").exists() {
        let disk = dir.parent().map(name_of).unwrap_or_default();
        return format!("partition of {disk}");
    }
    if let Some(dm) = read_trim(&dir.join("dm/name")) {
        let uuid = read_trim(&dir.join("dm/uuid")).unwrap_or_default();
        let what = match uuid.split('-').next().unwrap_or("") {
            "LVM" => "LVM volume",
            "CRYPT" => "dm-crypt volume",
            "mpath" => "multipath device",
            "VDO" => "VDO volume",
            _ => "device-mapper volume",
        };
        return format!("{what} {dm} (device-mapper)");
    }
    if dir.join("md").is_dir() {
        let level = read_trim(&dir.join("md/level")).unwrap_or_else(|| "md".into());
        return format!("md {level}");
    }
    if let Some(file) = read_trim(&dir.join("loop/backing_file")) {
        return format!("loop device on {file}");
    }
    if name.starts_with("zram") {
        return "zram (compressed RAM)".into();
    }
    if name.starts_with("nbd") {
        return "network block device".into();
    }
    "disk".into()
}

fn slaves_of(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir.join("slaves")) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| fs::canonicalize(e.path()).ok())
        .collect();
    v.sort();
    v
}

fn physical_of(disk: &Path) -> Physical {
    Physical {
        name: name_of(disk),
        scheduler: read_trim(&disk.join("queue/scheduler"))
            .and_then(|s| parse_scheduler(&s))
            .map(|s| s.selected),
        rotational: read_trim(&disk.join("queue/rotational")).map(|r| r == "1"),
        write_cache: read_trim(&disk.join("queue/write_cache")),
        model: read_trim(&disk.join("device/model")),
        transport: super::device::transport_of(disk),
        drivers: super::device::drivers_of(disk),
        queue: super::device::queue_of(disk),
    }
}

/// Walks `slaves/` from `dev` (a device directory) to the physical devices.
fn walk(dev: &Path, depth: usize, stack: &mut Vec<String>, out: &mut Vec<Physical>) {
    let disk = disk_of(dev);
    let entry = format!("{} ({})", name_of(dev), kind_of(dev));
    if !stack.contains(&entry) {
        stack.push(entry);
    }
    if disk != dev {
        let entry = format!("{} ({})", name_of(&disk), kind_of(&disk));
        if !stack.contains(&entry) {
            stack.push(entry);
        }
    }
    let slaves = slaves_of(&disk);
    if slaves.is_empty() || depth >= MAX_DEPTH {
        let p = physical_of(&disk);
        if !out.iter().any(|q| q.name == p.name) {
            out.push(p);
        }
        return;
    }
    for s in slaves {
        walk(&s, depth + 1, stack, out);
    }
}

/// Resolves the block device `major:minor` under the sysfs root `sysfs`
/// (normally `/sys`): partition → disk, dm/md → physical devices, and the
/// scheduler that applies. Errors say what could not be found.
pub fn resolve_block(sysfs: &Path, major: u32, minor: u32) -> Result<BlockDevice, String> {
    let link = sysfs.join(format!("dev/block/{major}:{minor}"));
    let dev = fs::canonicalize(&link)
        .map_err(|e| format!("block device {major}:{minor} not in sysfs ({e})"))?;
    let top = disk_of(&dev);
    let mut stack = Vec::new();
    let mut physical = Vec::new();
    walk(&dev, 0, &mut stack, &mut physical);

    let top_sched = read_trim(&top.join("queue/scheduler")).and_then(|s| parse_scheduler(&s));
    let stacked = !slaves_of(&top).is_empty();
    let top_kind = kind_of(&top);
    let describe = |p: &Physical| p.scheduler.clone().unwrap_or_else(|| "none".into());
    let (scheduler, scheduler_note) = if stacked {
        // A bio-based stacked device's queue offers no choice ("none");
        // request-based device-mapper offers the usual list.
        let request_based = top_sched.as_ref().is_some_and(|s| s.choices.len() > 1);
        if request_based {
            let s = top_sched.map(|s| s.selected).unwrap_or_default();
            (
                s,
                format!(
                    "request-based {top_kind}: its own queue's scheduler applies, requests bypass the underlying queues' schedulers"
                ),
            )
        } else {
            let names: std::collections::BTreeSet<String> = physical.iter().map(describe).collect();
            let s = if names.len() <= 1 {
                names.into_iter().next().unwrap_or_else(|| "none".into())
            } else {
                physical
                    .iter()
                    .map(|p| format!("{} ({})", describe(p), p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let under: Vec<&str> = physical.iter().map(|p| p.name.as_str()).collect();
            (
                s,
                format!(
                    "{} is bio-based ({top_kind}): the schedulers of the underlying {} apply",
                    name_of(&top),
                    under.join(", ")
                ),
            )
        }
    } else {
        match top_sched {
            None => (
                "none".into(),
                format!("{} has no I/O scheduler (bio-based driver)", name_of(&top)),
            ),
            Some(s) if s.selected == "none" => (
                "none".into(),
                format!("{}'s scheduler is set to none", name_of(&top)),
            ),
            Some(s) => (s.selected, format!("{}'s own scheduler", name_of(&top))),
        }
    };
    let rotational = if physical.iter().all(|p| p.rotational.is_none()) {
        None
    } else {
        Some(physical.iter().any(|p| p.rotational == Some(true)))
    };
    Ok(BlockDevice {
        name: name_of(&dev),
        kind: kind_of(&dev),
        stack,
        physical,
        scheduler,
        scheduler_note,
        rotational,
    })
}

/// Where a directory lives, as attached to every storage result (and read
/// back from it by the findings; missing fields read as unknown).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Location {
    /// The directory the benchmark wrote in.
    pub dir: String,
    /// File system type (`ext4`, `xfs`, `tmpfs`...).
    pub fs_type: String,
    /// The mount point holding `dir`.
    pub mount_point: Option<String>,
    /// The mount's source (`/dev/vda`, `tmpfs`).
    pub source: Option<String>,
    /// Per-mount options.
    pub mount_options: Option<String>,
    /// File-system (superblock) options.
    pub super_options: Option<String>,
    /// File-system block size (statfs).
    #[serde(deserialize_with = "any_number")]
    pub fs_block_size: Option<u64>,
    /// Bytes available to an unprivileged writer when located.
    #[serde(deserialize_with = "any_number")]
    pub free_bytes: Option<u64>,
    /// The block device the mount names, if any.
    pub device: Option<String>,
    /// What that device is.
    pub device_kind: Option<String>,
    /// Devices met walking down the stack, top first.
    pub stack: Vec<String>,
    /// The physical devices at the bottom.
    pub physical: Vec<Physical>,
    /// The scheduler(s) in effect, or `n/a` without a block device.
    pub scheduler: String,
    /// Why (stacking, no scheduler, no block device).
    pub scheduler_note: String,
    /// True when any physical device is rotational.
    pub rotational: Option<bool>,
    /// For ext3/ext4: whether the file system has a journal (jbd2).
    pub journal: Option<bool>,
    /// The physical devices' transports joined (`virtio_blk`, `nvme + usb (uas)`).
    pub transport: Option<String>,
    /// The kernel's dirty-page limits when located.
    pub writeback: Option<super::device::Writeback>,
}

/// A byte count written as an integer or, by other tools, as a float.
fn any_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.map(|f| f as u64))
}

impl Location {
    /// One line naming it: directory, file system, options, device, scheduler.
    pub fn describe(&self) -> String {
        let opts = self
            .mount_options
            .as_deref()
            .map(|o| format!(" ({o})"))
            .unwrap_or_default();
        let dev = match (&self.device, &self.device_kind) {
            (Some(d), Some(k)) if k != "disk" => {
                let phys: Vec<&str> = self.physical.iter().map(|p| p.name.as_str()).collect();
                format!(" on {d}, {k}, over {}", phys.join("+"))
            }
            (Some(d), _) => format!(" on {d}"),
            (None, _) => format!(" ({})", self.scheduler_note),
        };
        let rot = match self.rotational {
            Some(true) => ", reported rotational",
            Some(false) => ", non-rotational",
            None => "",
        };
        let sched = if self.device.is_some() {
            format!(", scheduler {}", self.scheduler)
        } else {
            String::new()
        };
        format!("{}: {}{opts}{dev}{sched}{rot}", self.dir, self.fs_type)
    }

    /// True when there is no block device behind the directory (tmpfs, ramfs).
    pub fn in_memory(&self) -> bool {
        matches!(self.fs_type.as_str(), "tmpfs" | "ramfs")
    }
}

/// True when jbd2 lists a journal for block device `dev` under `jbd2_dir`
/// (normally `/proc/fs/jbd2`, whose entries are named `<dev>-<inode>`).
pub fn has_journal(jbd2_dir: &Path, dev: &str) -> bool {
    let prefix = format!("{dev}-");
    fs::read_dir(jbd2_dir).is_ok_and(|rd| {
        rd.filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    })
}

/// Names a file-system magic number from statfs, for when mountinfo is unreadable.
fn fs_name_of_magic(magic: i64) -> String {
    let name = match magic {
        0xEF53 => "ext2/3/4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x8584_58f6 => "ramfs",
        0x794c_7630 => "overlay",
        0x6969 => "nfs",
        0xFF53_4D42 => "cifs",
        0x2FC1_2FC1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0x6573_5546 => "fuse",
        0x4d44 => "vfat",
        0x5346_544e => "ntfs",
        0x2011_BAB0 => "exfat",
        0xCA45_1A4E => "bcachefs",
        _ => return format!("unknown (statfs magic {magic:#x})"),
    };
    name.to_string()
}

/// Describes where `dir` lives, reading `/proc/self/mountinfo`, statfs and
/// `/sys`. Never fails: what cannot be found is left empty and said so.
pub fn locate(dir: &Path) -> Location {
    locate_with(dir, Path::new("/sys"), 0)
}

/// [`locate`] with the sysfs root `sysfs`; `depth` 1 when locating the
/// upper dir of an overlay (which is not followed further).
fn locate_with(dir: &Path, sysfs: &Path, depth: usize) -> Location {
    let canon = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let dev = fs::metadata(&canon).ok().map(|m| {
        let d = m.dev();
        (libc::major(d), libc::minor(d))
    });
    let mounts = fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default();
    let mount = mount_for(&mounts, &canon, dev).cloned();
    let mut loc = mount_location(&canon, mount.as_ref());
    let Some(m) = mount else {
        loc.scheduler_note = "mount not found in /proc/self/mountinfo".into();
        return loc;
    };
    match device_number(&m).map(|(ma, mi)| resolve_block(sysfs, ma, mi)) {
        Some(Ok(b)) => loc.take_block(b),
        Some(Err(e)) => loc.scheduler_note = e,
        None => loc.without_block(&m, sysfs, depth),
    }
    loc
}

/// Where `canon` lives as its mount (when found) and statfs say, the block
/// device not yet resolved.
#[allow(clippy::useless_conversion)] // statfs's f_type is 32-bit on 32-bit targets
fn mount_location(canon: &Path, mount: Option<&Mount>) -> Location {
    let stat = nix::sys::statfs::statfs(canon).ok();
    let fs_type = match (mount, &stat) {
        (Some(m), _) => m.fs_type.clone(),
        (None, Some(s)) => fs_name_of_magic(i64::from(s.filesystem_type().0)),
        (None, None) => "unknown".into(),
    };
    Location {
        dir: canon.display().to_string(),
        fs_type,
        mount_point: mount.map(|m| m.mount_point.display().to_string()),
        source: mount.map(|m| m.source.clone()),
        mount_options: mount.map(|m| m.options.clone()),
        super_options: mount.map(|m| m.super_options.clone()),
        fs_block_size: stat.as_ref().map(|s| s.block_size() as u64),
        free_bytes: crate::os::fs::fs_space(canon).ok().map(|(free, _)| free),
        device: None,
        device_kind: None,
        stack: Vec::new(),
        physical: Vec::new(),
        scheduler: "n/a".into(),
        scheduler_note: String::new(),
        rotational: None,
        journal: None,
        transport: None,
        writeback: Some(super::device::writeback()),
    }
}

/// The device behind mount `m`: the mount's own number, or for anonymous
/// numbers (btrfs subvolumes) the device node named as its source.
fn device_number(m: &Mount) -> Option<(u32, u32)> {
    if m.major != 0 {
        Some((m.major, m.minor))
    } else if m.source.starts_with("/dev/") {
        fs::metadata(&m.source).ok().and_then(|md| {
            use std::os::unix::fs::FileTypeExt;
            md.file_type()
                .is_block_device()
                .then(|| (libc::major(md.rdev()), libc::minor(md.rdev())))
        })
    } else {
        None
    }
}

impl Location {
    /// Takes the block device `b` resolved behind the mount: its stack,
    /// scheduler and transports, and for ext3/ext4 whether it has a journal.
    fn take_block(&mut self, b: BlockDevice) {
        self.device = Some(b.name);
        self.device_kind = Some(b.kind);
        self.stack = b.stack;
        self.physical = b.physical;
        self.scheduler = b.scheduler;
        self.scheduler_note = b.scheduler_note;
        self.rotational = b.rotational;
        self.transport = transports_text(&self.physical);
        if matches!(self.fs_type.as_str(), "ext3" | "ext4") {
            let dev = self.device.as_deref().unwrap_or_default();
            self.journal = Some(has_journal(Path::new("/proc/fs/jbd2"), dev));
        }
    }

    /// For mount `m` with no block device of its own: an overlay takes the
    /// device of its writable layer (located once more, at `depth` 0
    /// only); otherwise the note says why there is none.
    fn without_block(&mut self, m: &Mount, sysfs: &Path, depth: usize) {
        // overlay: the writable layer is what the benchmark writes to.
        let upper = (m.fs_type == "overlay")
            .then(|| {
                m.super_options
                    .split(',')
                    .find_map(|o| o.strip_prefix("upperdir="))
            })
            .flatten();
        match upper {
            Some(up) if depth == 0 => {
                let under = locate_with(Path::new(up), sysfs, depth + 1);
                self.device = under.device;
                self.device_kind = under.device_kind;
                self.stack = under.stack;
                self.physical = under.physical;
                self.scheduler = under.scheduler;
                self.rotational = under.rotational;
                self.scheduler_note = format!(
                    "overlay whose upper dir {up} is on {}; {}",
                    under.fs_type, under.scheduler_note
                );
            }
            _ if self.in_memory() => {
                self.scheduler_note =
                    format!("no block device: {} keeps files in memory", m.fs_type);
            }
            _ => {
                self.scheduler_note =
                    format!("no local block device behind {} ({})", m.fs_type, m.source);
            }
        }
    }
}

/// The transports of `physical` devices joined ("virtio_blk", "nvme +
/// usb (uas)"), for the location block and the fleet view.
pub fn transports_text(physical: &[Physical]) -> Option<String> {
    let mut names: Vec<String> = physical
        .iter()
        .filter_map(|p| p.transport.clone())
        .collect();
    names.dedup();
    (!names.is_empty()).then(|| names.join(" + "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
25 24 0:23 / /dev/shm rw,relatime shared:3 - tmpfs tmpfs rw,size=24684092k
40 27 8:2 / /mnt/my\\040disk rw,noatime master:1 shared:7 - xfs /dev/sda2 rw,attr2
41 27 0:50 / /mnt/over rw - ext4 /dev/sdb1 rw
42 27 8:17 / /mnt/over rw - ext4 /dev/sdb1 rw
garbage line
";

    #[test]
    fn mountinfo_fields_escapes_and_optional_fields() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 6);
        let disk = &m[3];
        assert_eq!(disk.mount_point, PathBuf::from("/mnt/my disk"));
        assert_eq!((disk.major, disk.minor), (8, 2));
        assert_eq!(disk.fs_type, "xfs");
        assert_eq!(disk.source, "/dev/sda2");
        assert_eq!(disk.options, "rw,noatime");
        assert_eq!(disk.super_options, "rw,attr2");
        assert_eq!(m[2].fs_type, "tmpfs");
    }

    #[test]
    fn the_longest_mount_point_wins_and_later_mounts_hide_earlier() {
        let m = parse_mountinfo(MOUNTINFO);
        let f = |p: &str| mount_for(&m, Path::new(p), None).map(|m| m.mount_point.clone());
        assert_eq!(f("/tmp/x"), Some(PathBuf::from("/")));
        assert_eq!(f("/dev/shm/a/b"), Some(PathBuf::from("/dev/shm")));
        assert_eq!(f("/mnt/my disk/z"), Some(PathBuf::from("/mnt/my disk")));
        // component-wise prefix: /mnt/my is not inside "/mnt/my disk"
        assert_eq!(f("/mnt/my"), Some(PathBuf::from("/")));
        let over = mount_for(&m, Path::new("/mnt/over/f"), None).unwrap();
        assert_eq!(over.minor, 17, "the later of two mounts on one point");
        // a matching device number is preferred
        let over = mount_for(&m, Path::new("/mnt/over/f"), Some((0, 50))).unwrap();
        assert_eq!(over.minor, 50);
    }

    #[test]
    fn scheduler_files() {
        let s = parse_scheduler("none [mq-deadline] kyber bfq").unwrap();
        assert_eq!(s.selected, "mq-deadline");
        assert_eq!(s.choices.len(), 4);
        assert_eq!(parse_scheduler("none").unwrap().selected, "none");
        assert_eq!(
            parse_scheduler("[none] mq-deadline").unwrap().selected,
            "none"
        );
        assert!(parse_scheduler("").is_none());
    }

    /// A fake sysfs tree built the way the kernel lays it out.
    struct FakeSys {
        root: tempfile::TempDir,
    }

    impl FakeSys {
        fn new() -> FakeSys {
            let root = tempfile::tempdir().unwrap();
            fs::create_dir_all(root.path().join("dev/block")).unwrap();
            FakeSys { root }
        }
        fn path(&self) -> &Path {
            self.root.path()
        }
        /// Creates a device dir at `rel` (under devices/) with files, and its dev link.
        fn dev(&self, rel: &str, number: &str, files: &[(&str, &str)]) -> PathBuf {
            let dir = self.path().join("devices").join(rel);
            fs::create_dir_all(dir.join("slaves")).unwrap();
            for (name, text) in files {
                let f = dir.join(name);
                fs::create_dir_all(f.parent().unwrap()).unwrap();
                fs::write(f, format!("{text}\n")).unwrap();
            }
            // Relative, like the kernel's: dev/block/8:0 -> ../../devices/...
            let target = format!("../../devices/{rel}");
            symlink(target, self.path().join("dev/block").join(number)).unwrap();
            dir
        }
        /// Adds `slave` (a devices/ path) to the slaves of `holder`, as a relative link.
        fn slave(&self, holder: &Path, slave_rel: &str) {
            let name = slave_rel.rsplit('/').next().unwrap();
            let target = self.path().join("devices").join(slave_rel);
            symlink(target, holder.join("slaves").join(name)).unwrap();
        }
    }

    fn disk(sys: &FakeSys, name: &str, number: &str, sched: &str, rot: &str) -> PathBuf {
        sys.dev(
            &format!("pci0/block/{name}"),
            number,
            &[
                ("queue/scheduler", sched),
                ("queue/rotational", rot),
                ("queue/write_cache", "write back"),
            ],
        )
    }

    fn partition(sys: &FakeSys, disk: &str, part: &str, number: &str) {
        sys.dev(
            &format!("pci0/block/{disk}/{part}"),
            number,
            &[("partition", "1")],
        );
    }

    #[test]
    fn a_plain_disk_uses_its_own_scheduler() {
        let sys = FakeSys::new();
        disk(&sys, "vda", "254:0", "none [mq-deadline] kyber bfq", "1");
        let b = resolve_block(sys.path(), 254, 0).unwrap();
        assert_eq!(b.name, "vda");
        assert_eq!(b.kind, "disk");
        assert_eq!(b.scheduler, "mq-deadline");
        assert_eq!(b.rotational, Some(true));
        assert_eq!(b.physical.len(), 1);
        assert_eq!(b.physical[0].write_cache.as_deref(), Some("write back"));
    }

    #[test]
    fn a_partition_maps_to_its_disk() {
        let sys = FakeSys::new();
        disk(&sys, "sda", "8:0", "mq-deadline [bfq] none", "0");
        partition(&sys, "sda", "sda2", "8:2");
        let b = resolve_block(sys.path(), 8, 2).unwrap();
        assert_eq!(b.name, "sda2");
        assert_eq!(b.kind, "partition of sda");
        assert_eq!(b.physical[0].name, "sda");
        assert_eq!(b.scheduler, "bfq");
        assert_eq!(b.rotational, Some(false));
    }

    #[test]
    fn lvm_on_a_partition_is_bio_based_and_the_disk_scheduler_applies() {
        let sys = FakeSys::new();
        disk(&sys, "sda", "8:0", "[mq-deadline] none", "0");
        partition(&sys, "sda", "sda3", "8:3");
        let dm = sys.dev(
            "virtual/block/dm-0",
            "253:0",
            &[
                ("dm/name", "vg-root"),
                ("dm/uuid", "LVM-abcdef"),
                ("queue/scheduler", "none"),
            ],
        );
        sys.slave(&dm, "pci0/block/sda/sda3");
        let b = resolve_block(sys.path(), 253, 0).unwrap();
        assert_eq!(b.name, "dm-0");
        assert!(b.kind.contains("LVM volume vg-root"), "{}", b.kind);
        assert_eq!(b.scheduler, "mq-deadline");
        assert!(
            b.scheduler_note.contains("bio-based"),
            "{}",
            b.scheduler_note
        );
        assert_eq!(b.physical.len(), 1);
        assert_eq!(b.physical[0].name, "sda");
        assert_eq!(b.stack.len(), 3, "{:?}", b.stack); // dm-0, sda3, sda
    }

    #[test]
    fn md_raid_over_two_disks_names_both_schedulers() {
        let sys = FakeSys::new();
        disk(&sys, "sda", "8:0", "[mq-deadline] none", "1");
        disk(&sys, "sdb", "8:16", "[bfq] none", "0");
        partition(&sys, "sda", "sda1", "8:1");
        partition(&sys, "sdb", "sdb1", "8:17");
        let md = sys.dev(
            "virtual/block/md0",
            "9:0",
            &[("md/level", "raid1"), ("queue/scheduler", "none")],
        );
        sys.slave(&md, "pci0/block/sda/sda1");
        sys.slave(&md, "pci0/block/sdb/sdb1");
        let b = resolve_block(sys.path(), 9, 0).unwrap();
        assert_eq!(b.kind, "md raid1");
        let names: Vec<&str> = b.physical.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["sda", "sdb"]);
        assert_eq!(b.scheduler, "mq-deadline (sda), bfq (sdb)");
        assert_eq!(
            b.rotational,
            Some(true),
            "one rotational member makes it rotational"
        );
    }

    #[test]
    fn lvm_on_md_walks_down_to_the_disks_once_each() {
        let sys = FakeSys::new();
        disk(&sys, "sda", "8:0", "[kyber] none", "0");
        partition(&sys, "sda", "sda1", "8:1");
        partition(&sys, "sda", "sda2", "8:2");
        let md = sys.dev(
            "virtual/block/md0",
            "9:0",
            &[("md/level", "raid0"), ("queue/scheduler", "none")],
        );
        sys.slave(&md, "pci0/block/sda/sda1");
        sys.slave(&md, "pci0/block/sda/sda2");
        let dm = sys.dev(
            "virtual/block/dm-1",
            "253:1",
            &[
                ("dm/name", "data"),
                ("dm/uuid", "CRYPT-LUKS2-x"),
                ("queue/scheduler", "none"),
            ],
        );
        sys.slave(&dm, "virtual/block/md0");
        let b = resolve_block(sys.path(), 253, 1).unwrap();
        assert!(b.kind.starts_with("dm-crypt volume data"), "{}", b.kind);
        assert_eq!(b.physical.len(), 1, "{:?}", b.physical);
        assert_eq!(b.scheduler, "kyber");
    }

    #[test]
    fn request_based_multipath_schedules_at_the_top() {
        let sys = FakeSys::new();
        disk(&sys, "sdc", "8:32", "[none] mq-deadline", "0");
        disk(&sys, "sdd", "8:48", "[none] mq-deadline", "0");
        let dm = sys.dev(
            "virtual/block/dm-2",
            "253:2",
            &[
                ("dm/name", "mpatha"),
                ("dm/uuid", "mpath-3600"),
                ("queue/scheduler", "[mq-deadline] kyber bfq none"),
            ],
        );
        sys.slave(&dm, "pci0/block/sdc");
        sys.slave(&dm, "pci0/block/sdd");
        let b = resolve_block(sys.path(), 253, 2).unwrap();
        assert_eq!(b.scheduler, "mq-deadline");
        assert!(
            b.scheduler_note.contains("request-based"),
            "{}",
            b.scheduler_note
        );
        assert_eq!(b.physical.len(), 2);
    }

    #[test]
    fn request_based_with_none_selected_is_none_at_the_top() {
        let sys = FakeSys::new();
        disk(&sys, "sdc", "8:32", "[mq-deadline] none", "0");
        let dm = sys.dev(
            "virtual/block/dm-3",
            "253:3",
            &[
                ("dm/name", "mpathb"),
                ("queue/scheduler", "[none] mq-deadline"),
            ],
        );
        sys.slave(&dm, "pci0/block/sdc");
        let b = resolve_block(sys.path(), 253, 3).unwrap();
        assert_eq!(b.scheduler, "none");
        assert!(
            b.scheduler_note.contains("request-based"),
            "{}",
            b.scheduler_note
        );
    }

    #[test]
    fn three_disks_two_alike_are_each_named() {
        let sys = FakeSys::new();
        disk(&sys, "sda", "8:0", "[bfq] none", "1");
        disk(&sys, "sdb", "8:16", "[none] bfq", "1");
        disk(&sys, "sdc", "8:32", "[bfq] none", "1");
        let md = sys.dev(
            "virtual/block/md1",
            "9:1",
            &[("md/level", "raid5"), ("queue/scheduler", "none")],
        );
        for d in ["sda", "sdb", "sdc"] {
            sys.slave(&md, &format!("pci0/block/{d}"));
        }
        let b = resolve_block(sys.path(), 9, 1).unwrap();
        assert_eq!(b.scheduler, "bfq (sda), none (sdb), bfq (sdc)");
        let sys2 = FakeSys::new();
        disk(&sys2, "sda", "8:0", "[bfq] none", "1");
        disk(&sys2, "sdb", "8:16", "[bfq] none", "1");
        let md = sys2.dev(
            "virtual/block/md2",
            "9:2",
            &[("md/level", "raid1"), ("queue/scheduler", "none")],
        );
        sys2.slave(&md, "pci0/block/sda");
        sys2.slave(&md, "pci0/block/sdb");
        assert_eq!(resolve_block(sys2.path(), 9, 2).unwrap().scheduler, "bfq");
    }

    #[test]
    fn a_device_without_a_scheduler_says_so() {
        let sys = FakeSys::new();
        sys.dev("virtual/block/zram0", "252:0", &[("queue/rotational", "0")]);
        let b = resolve_block(sys.path(), 252, 0).unwrap();
        assert_eq!(b.scheduler, "none");
        assert!(
            b.scheduler_note.contains("no I/O scheduler"),
            "{}",
            b.scheduler_note
        );
        assert_eq!(b.kind, "zram (compressed RAM)");
        assert_eq!(b.physical[0].scheduler, None);
    }

    #[test]
    fn an_unknown_device_number_is_an_error_not_a_panic() {
        let sys = FakeSys::new();
        let e = resolve_block(sys.path(), 1, 2).unwrap_err();
        assert!(e.contains("1:2"), "{e}");
        assert!(resolve_block(Path::new("/nonexistent-sysfs"), 8, 0).is_err());
    }

    #[test]
    fn locating_the_temp_dir_names_a_file_system() {
        let d = tempfile::tempdir().unwrap();
        let loc = locate(d.path());
        assert!(!loc.fs_type.is_empty());
        assert_ne!(loc.fs_type, "unknown");
        assert!(loc.free_bytes.is_some());
        assert!(loc.describe().contains(&loc.fs_type));
    }

    #[test]
    fn a_journal_is_found_by_its_jbd2_entry() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("sda2-8")).unwrap();
        assert!(has_journal(d.path(), "sda2"));
        assert!(!has_journal(d.path(), "sda"));
        assert!(!has_journal(&d.path().join("missing"), "sda2"));
    }

    #[test]
    fn unescaping() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/a\\134b"), "/a\\b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/end\\04"), "/end\\04");
    }
}
