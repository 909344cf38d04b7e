//! The interface a net figure went through: its driver, link speed, MTU
//! and the offloads in effect, as `ethtool` shows them.
//!
//! Why: the same path measures differently on another driver (virtio_net,
//! a USB adapter, a veth), link speed, MTU, or with segmentation and
//! checksum offloads off; a figure without them cannot be compared across
//! machines. They are read through the ethtool ioctl on a socket created in
//! the client's network namespace (sysfs shows only the namespace it was
//! mounted in, so the veth end would be missing there).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use serde::{Deserialize, Serialize};

/// What `ethtool IFACE` would say of one interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Iface {
    /// Interface name (`lo`, `eth0`, `opc0`).
    pub name: String,
    /// Driver (`loopback`, `veth`, `virtio_net`, `r8152`...), when it says.
    pub driver: Option<String>,
    /// Link speed, Mb/s, when known.
    pub speed_mbps: Option<u64>,
    /// MTU, bytes.
    pub mtu: Option<u64>,
    /// Offloads in effect (`tso`, `gso`, `gro`, `sg`, `rx_csum`, `tx_csum`).
    pub offloads: std::collections::BTreeMap<String, bool>,
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const SIOCGIFMTU: libc::c_ulong = 0x8921;
const ETHTOOL_GSET: u32 = 0x1;
const ETHTOOL_GDRVINFO: u32 = 0x3;
/// The legacy get-offload commands and the names ethtool gives them.
const OFFLOADS: [(u32, &str); 6] = [
    (0x14, "rx_csum"),
    (0x16, "tx_csum"),
    (0x18, "sg"),
    (0x1e, "tso"),
    (0x23, "gso"),
    (0x2b, "gro"),
];

#[repr(C)]
union IfrU {
    data: *mut libc::c_void,
    mtu: libc::c_int,
    _pad: [u8; 24],
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    u: IfrU,
}

impl IfReq {
    fn new(name: &str) -> Option<IfReq> {
        let b = name.as_bytes();
        if b.is_empty() || b.len() >= libc::IFNAMSIZ {
            return None;
        }
        let mut n = [0u8; libc::IFNAMSIZ];
        n[..b.len()].copy_from_slice(b);
        Some(IfReq {
            name: n,
            u: IfrU { _pad: [0; 24] },
        })
    }
}

/// One ethtool command on `fd` for interface `name`, with `buf` (whose
/// first four bytes are the command) as its argument.
fn ethtool(fd: i32, name: &str, buf: &mut [u8]) -> bool {
    let Some(mut req) = IfReq::new(name) else {
        return false;
    };
    req.u.data = buf.as_mut_ptr().cast();
    // SAFETY: req is a valid ifreq whose data points at `buf`, which is
    // at least as large as the structure the command fills.
    unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut req) == 0 }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads interface `name` through a socket of the calling thread's
/// network namespace; what the driver does not answer stays unknown.
pub fn describe(name: &str) -> Iface {
    let mut out = Iface {
        name: name.to_string(),
        ..Iface::default()
    };
    let Ok(sock) = UdpSocket::bind("0.0.0.0:0") else {
        return out;
    };
    let fd = sock.as_raw_fd();
    if let Some(mut req) = IfReq::new(name) {
        // SAFETY: req is a valid ifreq; SIOCGIFMTU fills its mtu.
        if unsafe { libc::ioctl(fd, SIOCGIFMTU as _, &mut req) } == 0 {
            // SAFETY: the kernel wrote the mtu member.
            out.mtu = u64::try_from(unsafe { req.u.mtu }).ok();
        }
    }
    // struct ethtool_drvinfo: cmd, then driver[32].
    let mut drv = [0u8; 196];
    drv[..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
    if ethtool(fd, name, &mut drv) {
        let s = &drv[4..36];
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        out.driver =
            Some(String::from_utf8_lossy(&s[..end]).into_owned()).filter(|d| !d.is_empty());
    }
    if out.driver.is_none() && name == "lo" {
        out.driver = Some("loopback".into());
    }
    // struct ethtool_cmd: speed (u16) at 12, speed_hi (u16) at 28.
    let mut cmd = [0u8; 44];
    cmd[..4].copy_from_slice(&ETHTOOL_GSET.to_ne_bytes());
    if ethtool(fd, name, &mut cmd) {
        let lo = u16::from_ne_bytes([cmd[12], cmd[13]]) as u32;
        let hi = u16::from_ne_bytes([cmd[28], cmd[29]]) as u32;
        let speed = lo | (hi << 16);
        if speed != 0 && speed != u32::MAX && speed != 0xFFFF {
            out.speed_mbps = Some(u64::from(speed));
        }
    }
    for (c, label) in OFFLOADS {
        // struct ethtool_value: cmd, data.
        let mut v = [0u8; 8];
        v[..4].copy_from_slice(&c.to_ne_bytes());
        if ethtool(fd, name, &mut v) {
            out.offloads.insert(label.to_string(), u32_at(&v, 4) != 0);
        }
    }
    out
}

/// The interface whose address this host uses to reach `peer` (the one
/// holding the local address of a socket connected to it).
pub fn toward(peer: SocketAddr) -> Option<String> {
    let any: SocketAddr = if peer.is_ipv4() {
        "0.0.0.0:0".parse().ok()?
    } else {
        "[::]:0".parse().ok()?
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect(peer).ok()?;
    let local: IpAddr = s.local_addr().ok()?.ip();
    nix::ifaddrs::getifaddrs().ok()?.find_map(|ifa| {
        let a = ifa.address?;
        let ip: Option<IpAddr> = a
            .as_sockaddr_in()
            .map(|v| IpAddr::V4(v.ip()))
            .or_else(|| a.as_sockaddr_in6().map(|v| IpAddr::V6(v.ip())));
        (ip == Some(local)).then_some(ifa.interface_name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_an_mtu_and_a_driver() {
        let lo = describe("lo");
        assert_eq!(lo.name, "lo");
        assert!(lo.mtu.is_some_and(|m| m >= 1280), "{lo:?}");
        assert!(lo.driver.is_some(), "{lo:?}");
        // Every offload read is a yes or a no under ethtool's name.
        for k in lo.offloads.keys() {
            assert!(OFFLOADS.iter().any(|(_, n)| n == k), "{k}");
        }
    }

    #[test]
    fn unknown_or_bad_names_give_only_the_name() {
        let x = describe("nosuchif0");
        assert_eq!((x.driver, x.mtu, x.speed_mbps), (None, None, None));
        assert!(x.offloads.is_empty());
        assert_eq!(describe("a-name-far-too-long-for-linux").mtu, None);
    }

    #[test]
    fn the_loopback_address_is_reached_through_lo() {
        let lo = toward("127.0.0.1:9".parse().unwrap());
        assert_eq!(lo.as_deref(), Some("lo"));
    }
}
