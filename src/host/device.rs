//! What a storage figure came from below the file system: the transport
//! and drivers of each physical device (nvme, sata/ahci, scsi, virtio,
//! usb-storage/uas, mmc/sdhci, loop, zram), its queue settings, and the
//! kernel's write-back limits in force.
//!
//! Why: the same file system on the same model of flash gives different
//! figures over USB (uas or the older usb-storage), an SD host controller
//! or NVMe, and with other queue settings (read-ahead, request depth,
//! write-back throttling); the dirty-page limits decide when buffered
//! writes start to wait for the device. Kept apart from the stack resolver
//! in [`super::location`]: these read one device directory each.
//!
//! Every reader takes the sysfs (or procfs) root as a parameter so it can
//! be tested on a fake tree.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A device's request-queue settings (`/sys/block/X/queue`); what the
/// kernel does not offer stays unknown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Queue {
    /// Requests the queue holds (`nr_requests`).
    pub nr_requests: Option<u64>,
    /// Read-ahead, KiB.
    pub read_ahead_kb: Option<u64>,
    /// Largest request the kernel sends, KiB.
    pub max_sectors_kb: Option<u64>,
    /// Logical block size, bytes.
    pub logical_block_size: Option<u64>,
    /// Physical block size, bytes.
    pub physical_block_size: Option<u64>,
    /// Write-back throttling target latency, µs (0: off); the queue that
    /// paces buffered write-back against reads.
    pub wbt_lat_usec: Option<u64>,
    /// Hardware queues (entries of `mq/`).
    pub hw_queues: Option<u64>,
}

/// The kernel's dirty-page limits (`/proc/sys/vm`): when buffered writes
/// start background write-back and when writers are made to wait.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Writeback {
    /// Per cent of available memory at which writers wait (`dirty_ratio`).
    pub dirty_ratio: Option<u64>,
    /// Per cent at which background write-back starts.
    pub dirty_background_ratio: Option<u64>,
    /// The same limit in bytes (0: the ratio applies).
    pub dirty_bytes: Option<u64>,
    /// The background limit in bytes (0: the ratio applies).
    pub dirty_background_bytes: Option<u64>,
    /// Age at which dirty data is written back, centiseconds.
    pub dirty_expire_centisecs: Option<u64>,
    /// Interval of the write-back threads, centiseconds.
    pub dirty_writeback_centisecs: Option<u64>,
}

fn read_u64(p: &Path) -> Option<u64> {
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// The write-back limits under the procfs root `proc` (normally `/proc`).
pub fn writeback_in(proc: &Path) -> Writeback {
    let vm = proc.join("sys/vm");
    let r = |k: &str| read_u64(&vm.join(k));
    Writeback {
        dirty_ratio: r("dirty_ratio"),
        dirty_background_ratio: r("dirty_background_ratio"),
        dirty_bytes: r("dirty_bytes"),
        dirty_background_bytes: r("dirty_background_bytes"),
        dirty_expire_centisecs: r("dirty_expire_centisecs"),
        dirty_writeback_centisecs: r("dirty_writeback_centisecs"),
    }
}

/// The write-back limits in force now.
pub fn writeback() -> Writeback {
    writeback_in(Path::new("/proc"))
}

impl Writeback {
    /// "dirty_ratio 20%, background 10%, expire 30 s" (bytes when set).
    pub fn describe(&self) -> String {
        let limit = |bytes: Option<u64>, ratio: Option<u64>| match (bytes, ratio) {
            (Some(b), _) if b > 0 => crate::units::human_bytes(b as f64),
            (_, Some(r)) => format!("{r}%"),
            _ => "?".into(),
        };
        format!(
            "dirty limit {}, background {}, expire {}",
            limit(self.dirty_bytes, self.dirty_ratio),
            limit(self.dirty_background_bytes, self.dirty_background_ratio),
            self.dirty_expire_centisecs
                .map_or("?".into(), |c| format!("{:.0} s", c as f64 / 100.0)),
        )
    }
}

/// The queue settings of the disk directory `disk` (`/sys/block/X`).
pub fn queue_of(disk: &Path) -> Option<Queue> {
    let q = disk.join("queue");
    if !q.is_dir() {
        return None;
    }
    let r = |k: &str| read_u64(&q.join(k));
    Some(Queue {
        nr_requests: r("nr_requests"),
        read_ahead_kb: r("read_ahead_kb"),
        max_sectors_kb: r("max_sectors_kb"),
        logical_block_size: r("logical_block_size"),
        physical_block_size: r("physical_block_size"),
        wbt_lat_usec: r("wbt_lat_usec"),
        hw_queues: fs::read_dir(disk.join("mq"))
            .ok()
            .map(|rd| rd.filter_map(|e| e.ok()).count() as u64)
            .filter(|n| *n > 0),
    })
}

/// The drivers bound along the device's path in sysfs, nearest first
/// (`sd`, `uas`, `usb`, `xhci_hcd`; `virtio_blk`, `virtio-pci`), from
/// `disk/device` up to the root, each once.
pub fn drivers_of(disk: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(mut dir) = fs::canonicalize(disk.join("device")) else {
        return out;
    };
    loop {
        if let Ok(target) = fs::read_link(dir.join("driver"))
            && let Some(name) = target.file_name()
        {
            let name = name.to_string_lossy().into_owned();
            if !out.contains(&name) {
                out.push(name);
            }
        }
        match dir.parent() {
            Some(p) if p.file_name().is_some_and(|n| n != "devices") => dir = p.to_path_buf(),
            _ => break,
        }
    }
    out
}

/// The transport of a physical device, in words: `nvme`, `sata (ahci)`,
/// `scsi (virtio_scsi)`, `virtio_blk`, `usb (uas)`, `usb (usb-storage)`,
/// `mmc (sdhci-pci)`, `loop`, `zram`, `nbd`; `None` when nothing tells.
pub fn transport_of(disk: &Path) -> Option<String> {
    let name = disk.file_name()?.to_string_lossy().into_owned();
    for (prefix, what) in [("loop", "loop"), ("zram", "zram"), ("nbd", "nbd")] {
        if name.starts_with(prefix) {
            return Some(what.into());
        }
    }
    let drivers = drivers_of(disk);
    let path = fs::canonicalize(disk.join("device"))
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    Some(transport_from(&name, &drivers, &path)?.to_string())
}

/// [`transport_of`] from a device's name, its driver chain and its sysfs path.
pub fn transport_from(name: &str, drivers: &[String], path: &str) -> Option<String> {
    let has = |d: &str| drivers.iter().any(|x| x == d);
    let after = |d: &str| {
        drivers
            .iter()
            .skip_while(|x| *x != d)
            .nth(1)
            .cloned()
            .unwrap_or_else(|| "?".into())
    };
    let t = if name.starts_with("nvme") || has("nvme") {
        "nvme".to_string()
    } else if has("uas") {
        "usb (uas)".into()
    } else if has("usb-storage") {
        "usb (usb-storage)".into()
    } else if has("virtio_blk") {
        "virtio_blk".into()
    } else if has("virtio_scsi") {
        "scsi (virtio_scsi)".into()
    } else if name.starts_with("mmcblk") || has("mmcblk") || path.contains("/mmc_host/") {
        let host = drivers
            .iter()
            .find(|d| d.contains("sdhci") || d.contains("mmc") && *d != "mmcblk")
            .cloned()
            .unwrap_or_else(|| after("mmcblk"));
        format!("mmc ({host})")
    } else if has("ahci") {
        "sata (ahci)".into()
    } else if path.contains("/ata") {
        format!("ata ({})", after("sd"))
    } else if has("sd") {
        format!("scsi ({})", after("sd"))
    } else {
        drivers.first()?.clone()
    };
    Some(t)
}

/// The sysfs directory of block device `name` under `sysfs`.
pub fn block_dir(sysfs: &Path, name: &str) -> PathBuf {
    sysfs.join("block").join(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fake sysfs with `vda` on virtio and `sda` on a USB stick (uas).
    fn fake() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let mk = |p: &str| fs::create_dir_all(r.join(p)).unwrap();
        let link = |target: &str, at: &str| symlink(r.join(target), r.join(at)).unwrap();
        for d in ["virtio_blk", "virtio-pci", "sd", "uas", "usb", "xhci_hcd"] {
            mk(&format!("bus/x/drivers/{d}"));
        }
        mk("devices/pci0/0000:00:02.0/virtio1");
        link(
            "bus/x/drivers/virtio-pci",
            "devices/pci0/0000:00:02.0/driver",
        );
        link(
            "bus/x/drivers/virtio_blk",
            "devices/pci0/0000:00:02.0/virtio1/driver",
        );
        mk("block/vda/queue");
        mk("block/vda/mq/0");
        fs::write(r.join("block/vda/queue/nr_requests"), "256\n").unwrap();
        fs::write(r.join("block/vda/queue/wbt_lat_usec"), "75000\n").unwrap();
        link("devices/pci0/0000:00:02.0/virtio1", "block/vda/device");
        let usb = "devices/pci0/0000:00:14.0/usb2/2-1/2-1:1.0/host4/target4:0:0/4:0:0:0";
        mk(usb);
        link("bus/x/drivers/xhci_hcd", "devices/pci0/0000:00:14.0/driver");
        link(
            "bus/x/drivers/usb",
            "devices/pci0/0000:00:14.0/usb2/2-1/driver",
        );
        link(
            "bus/x/drivers/uas",
            "devices/pci0/0000:00:14.0/usb2/2-1/2-1:1.0/driver",
        );
        link("bus/x/drivers/sd", &format!("{usb}/driver"));
        mk("block/sda");
        link(usb, "block/sda/device");
        mk("block/loop0/queue");
        t
    }

    #[test]
    fn transports_come_from_the_drivers_along_the_device_path() {
        let t = fake();
        let vda = block_dir(t.path(), "vda");
        assert_eq!(drivers_of(&vda), vec!["virtio_blk", "virtio-pci"]);
        assert_eq!(transport_of(&vda).as_deref(), Some("virtio_blk"));
        let sda = block_dir(t.path(), "sda");
        assert_eq!(drivers_of(&sda), vec!["sd", "uas", "usb", "xhci_hcd"]);
        assert_eq!(transport_of(&sda).as_deref(), Some("usb (uas)"));
        assert_eq!(
            transport_of(&block_dir(t.path(), "loop0")).as_deref(),
            Some("loop")
        );
        let q = queue_of(&vda).unwrap();
        assert_eq!(
            (q.nr_requests, q.wbt_lat_usec, q.hw_queues),
            (Some(256), Some(75000), Some(1))
        );
        assert_eq!(q.read_ahead_kb, None);
        assert!(queue_of(&sda).is_none());
    }

    #[test]
    fn transports_by_driver_chain() {
        let v = |d: &[&str]| d.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(transport_from("nvme0n1", &[], "").as_deref(), Some("nvme"));
        assert_eq!(
            transport_from("sda", &v(&["sd", "ahci"]), "/x/ata1/host0").as_deref(),
            Some("sata (ahci)")
        );
        assert_eq!(
            transport_from("sda", &v(&["sd", "usb-storage", "usb"]), "").as_deref(),
            Some("usb (usb-storage)")
        );
        assert_eq!(
            transport_from(
                "mmcblk0",
                &v(&["mmcblk", "sdhci-iproc"]),
                "/x/mmc_host/mmc0"
            )
            .as_deref(),
            Some("mmc (sdhci-iproc)")
        );
        assert_eq!(
            transport_from("sdb", &v(&["sd", "virtio_scsi"]), "").as_deref(),
            Some("scsi (virtio_scsi)")
        );
        assert_eq!(transport_from("xyz", &[], ""), None);
    }

    #[test]
    fn write_back_limits_are_read_and_described() {
        let t = tempfile::tempdir().unwrap();
        let vm = t.path().join("sys/vm");
        fs::create_dir_all(&vm).unwrap();
        for (k, v) in [
            ("dirty_ratio", "20"),
            ("dirty_background_ratio", "10"),
            ("dirty_bytes", "0"),
            ("dirty_background_bytes", "0"),
            ("dirty_expire_centisecs", "3000"),
        ] {
            fs::write(vm.join(k), format!("{v}\n")).unwrap();
        }
        let w = writeback_in(t.path());
        assert_eq!(w.dirty_ratio, Some(20));
        assert_eq!(w.dirty_writeback_centisecs, None);
        assert_eq!(w.describe(), "dirty limit 20%, background 10%, expire 30 s");
        fs::write(vm.join("dirty_bytes"), "16777216").unwrap();
        assert!(
            writeback_in(t.path())
                .describe()
                .starts_with("dirty limit 16")
        );
    }
}
