//! Facts that do not come from files: the hypervisor's cpuid signature, the
//! C library's version, what the build recorded (build.rs), and uname as a
//! fallback where procfs is missing.

use super::Host;

/// Fills in what [`super::sysfs::read_host`] cannot know from files.
pub fn complete(host: &mut Host) {
    host.cpu.arch = std::env::consts::ARCH.to_string();
    if host.logical_cpus == 0 {
        // SAFETY: sysconf has no memory-safety preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        host.logical_cpus = usize::try_from(n)
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    }
    if (host.hostname.is_empty() || host.kernel.release.is_none())
        && let Ok(u) = nix::sys::utsname::uname()
    {
        let s = |o: &std::ffi::OsStr| o.to_string_lossy().into_owned();
        if host.hostname.is_empty() {
            host.hostname = s(u.nodename());
        }
        host.kernel.name.get_or_insert_with(|| s(u.sysname()));
        host.kernel.release.get_or_insert_with(|| s(u.release()));
        host.kernel.version.get_or_insert_with(|| s(u.version()));
    }
    if host.virt.hypervisor.is_none() {
        host.virt.hypervisor = cpuid_hypervisor();
    }
    let sw = &mut host.software;
    sw.libc = libc_version();
    sw.opcost_version = env!("CARGO_PKG_VERSION").to_string();
    sw.git_commit = option_env!("OPCOST_GIT_COMMIT")
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    sw.rustc_version = option_env!("OPCOST_RUSTC_VERSION")
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    sw.build_profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
    .to_string();
}

/// The hypervisor's name from its cpuid signature (leaf 0x4000_0000), read
/// only when cpuid's hypervisor bit says one is present.
#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    if __cpuid(1).ecx & (1 << 31) == 0 {
        return None;
    }
    let r = __cpuid(0x4000_0000);
    let mut sig = Vec::with_capacity(12);
    for word in [r.ebx, r.ecx, r.edx] {
        sig.extend_from_slice(&word.to_le_bytes());
    }
    hypervisor_name(&sig)
}

/// No cpuid here: the hypervisor is known only from files.
#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor() -> Option<String> {
    None
}

/// Names a 12-byte cpuid hypervisor signature; unknown ones are shown as
/// they are, empty ones are None.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // read from cpuid on x86-64 only; tested everywhere
fn hypervisor_name(sig: &[u8]) -> Option<String> {
    let text: String = String::from_utf8_lossy(sig)
        .trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_string();
    let name = match text.as_str() {
        "" => return None,
        "KVMKVMKVM" | "Linux KVM Hv" => "KVM",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU (TCG)",
        "bhyve bhyve" => "bhyve",
        "lrpepyh  vr" => "Parallels",
        "ACRNACRNACRN" => "ACRN",
        "VBoxVBoxVBox" => "VirtualBox",
        "QNXQVMBSQG" => "QNX",
        "Apple VZ" => "Apple Virtualization",
        _ if text.chars().all(|c| c.is_ascii_graphic() || c == ' ') => return Some(text),
        _ => return None,
    };
    Some(name.to_string())
}

/// Whether DMI vendor and product (joined) name a virtual machine.
pub fn dmi_is_virtual(dmi: &str) -> bool {
    const VIRTUAL: [&str; 15] = [
        "qemu",
        "kvm",
        "vmware",
        "virtualbox",
        "innotek",
        "xen",
        "bochs",
        "bhyve",
        "parallels",
        "openstack",
        "google compute engine",
        "virtual machine",
        "cloud hypervisor",
        "firecracker",
        "apple virtualization",
    ];
    let d = dmi.to_ascii_lowercase();
    VIRTUAL.iter().any(|v| d.contains(v))
}

/// The C library and its version (`glibc 2.41`); `musl` has no version call.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn libc_version() -> Option<String> {
    // SAFETY: gnu_get_libc_version returns a pointer to a static,
    // NUL-terminated string owned by glibc.
    let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    Some(format!("glibc {}", v.to_string_lossy()))
}

/// The C library: musl, which offers no version call.
#[cfg(target_env = "musl")]
fn libc_version() -> Option<String> {
    Some("musl".to_string())
}

/// The C library is unknown on this target.
#[cfg(not(any(all(target_os = "linux", target_env = "gnu"), target_env = "musl")))]
fn libc_version() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypervisor_signatures_have_names() {
        assert_eq!(hypervisor_name(b"KVMKVMKVM\0\0\0").as_deref(), Some("KVM"));
        assert_eq!(hypervisor_name(b"Microsoft Hv").as_deref(), Some("Hyper-V"));
        assert_eq!(hypervisor_name(b"VMwareVMware").as_deref(), Some("VMware"));
        assert_eq!(
            hypervisor_name(b"NewVisor\0\0\0\0").as_deref(),
            Some("NewVisor")
        );
        assert_eq!(hypervisor_name(b"\0\0\0\0\0\0\0\0\0\0\0\0"), None);
        assert_eq!(hypervisor_name(&[0xff, 0x01, 0x02]), None);
    }

    #[test]
    fn dmi_names_of_virtual_machines() {
        assert!(dmi_is_virtual("QEMU Standard PC (i440FX + PIIX, 1996)"));
        assert!(dmi_is_virtual("Microsoft Corporation Virtual Machine"));
        assert!(dmi_is_virtual("innotek GmbH VirtualBox"));
        assert!(!dmi_is_virtual("Dell Inc. PowerEdge R750"));
        assert!(!dmi_is_virtual("LENOVO 20XW0026GE"));
        assert!(!dmi_is_virtual(""));
    }

    #[test]
    fn completion_records_the_build_and_the_library() {
        let mut h = Host::default();
        complete(&mut h);
        assert_eq!(h.cpu.arch, std::env::consts::ARCH);
        assert!(h.logical_cpus >= 1);
        assert_eq!(h.software.opcost_version, env!("CARGO_PKG_VERSION"));
        assert!(["debug", "release"].contains(&h.software.build_profile.as_str()));
        assert!(h.kernel.release.is_some(), "uname stands in for procfs");
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(h.software.libc.as_deref().unwrap().starts_with("glibc 2."));
        }
        if let Some(r) = &h.software.rustc_version {
            assert!(r.starts_with("rustc "), "{r}");
        }
    }
}
