//! Two private network namespaces joined by a veth pair, set up through
//! rtnetlink (no `ip` command needed).
//!
//! Why private, unnamed namespaces: they are held only by file descriptors
//! of this process (nothing is mounted in /run/netns), so the kernel removes
//! them, and the veth pair with them, when the last descriptor closes or the
//! process exits, however it exits (Ctrl-C, a crash, SIGKILL). Nothing of
//! the host's own network is touched.
//!
//! Network namespaces belong to threads: a socket lives in the namespace of
//! the thread that created it, and stays there whatever thread uses it. So
//! set-up runs in short-lived threads that enter a namespace, and a
//! benchmark creates its sockets inside an [`Enter`] guard.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};

use anyhow::{Context, anyhow};
use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};
use nix::sched::{CloneFlags, setns, unshare};

use crate::harness::PrepareError;

/// The client end's address (namespace A, interface `opc0`).
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 231, 0, 1);
/// The server end's address (namespace B, interface `opc1`).
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 231, 0, 2);
/// Prefix length of the link's subnet.
const PREFIX: u8 = 24;
/// Interface names inside the namespaces (each namespace is private, so
/// they cannot clash with the host's).
pub const IF_CLIENT: &str = "opc0";
const IF_SERVER: &str = "opc1";

/// Two namespaces joined by a veth pair, removed when dropped.
pub struct Veth {
    /// Namespace A, where the client's sockets live.
    pub client: OwnedFd,
    /// Namespace B, where the server's sockets live.
    pub server: OwnedFd,
}

/// The pair currently in use, shared by the benchmarks that run while it
/// lives; it goes away with the last of them.
static CURRENT: Mutex<Weak<Veth>> = Mutex::new(Weak::new());

/// The veth pair, set up now unless a benchmark already holds one.
pub fn shared() -> Result<Arc<Veth>, PrepareError> {
    let mut cur = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = cur.upgrade() {
        return Ok(v);
    }
    let v = Arc::new(Veth::create()?);
    *cur = Arc::downgrade(&v);
    Ok(v)
}

impl Veth {
    /// Creates both namespaces, the veth pair between them, their addresses,
    /// and brings every link (loopback included) up.
    pub fn create() -> Result<Veth, PrepareError> {
        let server = new_netns()?;
        let client = new_netns()?;
        in_netns(&client, || -> Result<(), PrepareError> {
            let nl = Netlink::open()?;
            nl.link_up("lo")?;
            nl.add_veth(IF_CLIENT, IF_SERVER, &server)?;
            nl.add_addr(IF_CLIENT, CLIENT_ADDR)?;
            nl.link_up(IF_CLIENT)?;
            Ok(())
        })??;
        in_netns(&server, || -> Result<(), PrepareError> {
            let nl = Netlink::open()?;
            nl.link_up("lo")?;
            nl.add_addr(IF_SERVER, SERVER_ADDR)?;
            nl.link_up(IF_SERVER)?;
            Ok(())
        })??;
        Ok(Veth { client, server })
    }
}

/// A new, empty network namespace, held by the returned descriptor.
fn new_netns() -> Result<OwnedFd, PrepareError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<OwnedFd, PrepareError> {
            unshare(CloneFlags::CLONE_NEWNET).map_err(|e| {
                PrepareError::Skip(format!(
                    "creating a network namespace was refused ({e}): the veth path needs CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root)"
                ))
            })?;
            let f = File::open("/proc/thread-self/ns/net")
                .context("opening /proc/thread-self/ns/net")?;
            Ok(f.into())
        })
        .join()
        .map_err(|_| PrepareError::Fail(anyhow!("the namespace thread panicked")))?
    })
}

/// Runs `f` in a thread that has entered namespace `ns`.
pub fn in_netns<R: Send>(ns: &OwnedFd, f: impl FnOnce() -> R + Send) -> Result<R, PrepareError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<R, PrepareError> {
            setns(ns.as_fd(), CloneFlags::CLONE_NEWNET)
                .map_err(|e| PrepareError::Fail(anyhow!("entering a network namespace: {e}")))?;
            Ok(f())
        })
        .join()
        .map_err(|_| PrepareError::Fail(anyhow!("the namespace thread panicked")))?
    })
}

/// While alive, the current thread is in another network namespace; the
/// previous one is restored on drop.
pub struct Enter {
    back: Option<File>,
}

impl Enter {
    /// Enters `ns` (nothing when `None`).
    pub fn new(ns: Option<&OwnedFd>) -> anyhow::Result<Enter> {
        let Some(ns) = ns else {
            return Ok(Enter { back: None });
        };
        let back =
            File::open("/proc/thread-self/ns/net").context("opening /proc/thread-self/ns/net")?;
        setns(ns.as_fd(), CloneFlags::CLONE_NEWNET).context("entering a network namespace")?;
        Ok(Enter { back: Some(back) })
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        if let Some(back) = &self.back {
            // Failing to return would leave this thread in a namespace that
            // is about to vanish; nothing could work after that.
            if let Err(e) = setns(back.as_fd(), CloneFlags::CLONE_NEWNET) {
                panic!("returning to the original network namespace failed: {e}");
            }
        }
    }
}

/// A route netlink socket in the current thread's namespace.
struct Netlink {
    sock: Socket,
    seq: std::cell::Cell<u32>,
}

impl Netlink {
    fn open() -> anyhow::Result<Netlink> {
        let mut sock = Socket::new(NETLINK_ROUTE).context("opening a netlink socket")?;
        sock.bind_auto().context("binding a netlink socket")?;
        sock.connect(&SocketAddr::new(0, 0))
            .context("connecting a netlink socket")?;
        Ok(Netlink {
            sock,
            seq: std::cell::Cell::new(1),
        })
    }

    /// Sends one request and waits for its acknowledgement.
    fn request(&self, msg: RouteNetlinkMessage, create: bool) -> std::io::Result<()> {
        let mut hdr = NetlinkHeader::default();
        hdr.flags = NLM_F_REQUEST | NLM_F_ACK;
        if create {
            hdr.flags |= NLM_F_CREATE | NLM_F_EXCL;
        }
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        hdr.sequence_number = seq;
        let mut req = NetlinkMessage::new(hdr, NetlinkPayload::from(msg));
        req.finalize();
        let mut buf = vec![0u8; req.buffer_len()];
        req.serialize(&mut buf);
        self.sock.send(&buf, 0)?;
        let mut rx = vec![0u8; 8192];
        loop {
            let n = self.sock.recv(&mut &mut rx[..], 0)?;
            let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&rx[..n])
                .map_err(|e| std::io::Error::other(format!("bad netlink reply: {e}")))?;
            if reply.header.sequence_number != seq {
                continue;
            }
            return match reply.payload {
                NetlinkPayload::Error(e) if e.code.is_some() => Err(e.to_io()),
                _ => Ok(()),
            };
        }
    }

    fn index(&self, name: &str) -> anyhow::Result<u32> {
        nix::net::if_::if_nametoindex(name).with_context(|| format!("no interface {name}"))
    }

    fn link_up(&self, name: &str) -> anyhow::Result<()> {
        let mut msg = LinkMessage::default();
        msg.header.index = self.index(name)?;
        msg.header.flags = LinkFlags::Up;
        msg.header.change_mask = LinkFlags::Up;
        self.request(RouteNetlinkMessage::SetLink(msg), false)
            .with_context(|| format!("bringing {name} up"))
    }

    fn add_veth(&self, name: &str, peer: &str, peer_ns: &OwnedFd) -> Result<(), PrepareError> {
        let mut peer_msg = LinkMessage::default();
        peer_msg
            .attributes
            .push(LinkAttribute::IfName(peer.to_string()));
        peer_msg
            .attributes
            .push(LinkAttribute::NetNsFd(peer_ns.as_raw_fd()));
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_string()));
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer_msg))),
        ]));
        self.request(RouteNetlinkMessage::NewLink(msg), true)
            .map_err(|e| {
                if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::ENODEV)) {
                    PrepareError::Skip(format!(
                        "the kernel cannot create a veth pair ({e}): load the veth module (modprobe veth)"
                    ))
                } else {
                    PrepareError::Fail(anyhow!("creating a veth pair: {e}"))
                }
            })
    }

    fn add_addr(&self, name: &str, addr: Ipv4Addr) -> anyhow::Result<()> {
        let mut msg = AddressMessage::default();
        msg.header.family = AddressFamily::Inet;
        msg.header.prefix_len = PREFIX;
        msg.header.index = self.index(name)?;
        msg.attributes
            .push(AddressAttribute::Local(IpAddr::V4(addr)));
        msg.attributes
            .push(AddressAttribute::Address(IpAddr::V4(addr)));
        self.request(RouteNetlinkMessage::NewAddress(msg), true)
            .with_context(|| format!("adding {addr}/{PREFIX} to {name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn veth_pair_carries_tcp_between_namespaces() {
        let v = match Veth::create() {
            Ok(v) => v,
            Err(PrepareError::Skip(why)) => {
                eprintln!("skipped: {why}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let listener = in_netns(&v.server, || {
            std::net::TcpListener::bind((SERVER_ADDR, 0)).unwrap()
        })
        .unwrap();
        let port = listener.local_addr().unwrap().port();
        // The server's address does not exist in this namespace.
        assert!(std::net::TcpListener::bind((SERVER_ADDR, 0)).is_err());
        let conn = {
            let _in = Enter::new(Some(&v.client)).unwrap();
            std::net::TcpStream::connect((SERVER_ADDR, port)).unwrap()
        };
        let (_, from) = listener.accept().unwrap();
        assert_eq!(from.ip(), IpAddr::V4(CLIENT_ADDR));
        drop(conn);
    }
}
