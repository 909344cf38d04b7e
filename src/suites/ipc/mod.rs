//! E3: pipe, /dev/shm or a TCP socket — which is faster? Every way two
//! processes on one machine talk, by throughput across message sizes and
//! by round-trip latency, with both ends pinned to the same CPU or to two
//! different ones.
//!
//! Why this shape: the original experiment used dd's 512-byte blocks, so it
//! measured system-call overhead more than the mechanisms; sweeping the
//! message size separates the two. And on many machines (VMs above all)
//! where the two ends run matters more than the mechanism: a wake-up on the
//! other CPU can cost 30 times one on the same CPU, so an unpinned round
//! trip is bimodal. Every benchmark therefore pins both ends and says where.
//!
//! Ids: `ipc.MECH.tput/SIZE/PLACE` (bytes/s), `ipc.MECH.rtt/SIZE/PLACE`
//! (ns per round trip), `ipc.eventfd.rtt/PLACE` and `ipc.futex.rtt/PLACE`
//! (wake-ups without payload) and `ipc.sigqueue.rtt/PLACE` (a queued
//! signal with its value), `ipc.inotify.rtt/PLACE`,
//! `ipc.inotify.{rename,close_write}.rtt/PLACE`,
//! `ipc.fanotify[.close_write].rtt/PLACE` and
//! `ipc.stat_poll[.10ms].rtt/PLACE` (a change to a file and its
//! notification each way, [`notify`]); PLACE is `same` or `cross`. A mechanism made for
//! large messages (cross-memory attach, a handed-over memfd) is measured at
//! the sizes it is made for ([`Mech::tput_sizes`], [`Mech::rtt_sizes`]).
//!
//! Modules: [`peer`] (the forked peer, placement, shared memory, futex
//! bells), [`check`] (the integrity check), [`link`] (the two benchmark
//! shapes for any [`link::End`]), and one module per mechanism family.

pub mod check;
pub mod cma;
pub mod findings;
pub mod link;
pub mod memfd;
pub mod mqueue;
pub mod notify;
pub mod peer;
pub mod pipe;
pub mod shm;
pub mod signal;
pub mod socket;
pub mod sysv;
pub mod sysv_kernel;

use std::path::Path;
use std::time::Duration;

use super::bench::{Budget, FnBench, Suite};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::host::Host;
use crate::units::size_label;
use link::{End, RoundTrip, Throughput};
use peer::{Cpus, Placement};
use shm::Wake;

/// The IPC suite.
pub fn suite() -> Suite {
    Suite {
        name: "ipc",
        summary: "pipe, FIFO, splice, Unix/TCP/UDP sockets, shm ring and file, POSIX and System V queues and shared memory, process_vm_readv/writev, memfd hand-over, eventfd, futex, sigqueue, file-change notification (inotify, fanotify, stat() polling): throughput and round trips, same vs cross CPU",
        benches,
        findings: findings::findings,
    }
}

/// Message sizes of the throughput sweep (512 B is dd's default block).
pub const TPUT_SIZES: [usize; 5] = [64, 512, 4 << 10, 64 << 10, 1 << 20];
/// Message sizes of the round-trip benchmarks.
pub const RTT_SIZES: [usize; 4] = [8, 64, 1 << 10, 4 << 10];
/// Throughput sizes of the mechanisms made for large messages.
const LARGE: [usize; 3] = [4 << 10, 64 << 10, 1 << 20];
/// Throughput sizes of System V messages: those within the default
/// `kernel.msgmax` (8 KiB).
const SYSV_MSG_TPUT: [usize; 3] = [64, 512, 4 << 10];

/// A mechanism that carries a payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mech {
    /// Anonymous pipe, write/read.
    Pipe,
    /// Named pipe (FIFO), write/read.
    Fifo,
    /// vmsplice into a pipe, splice out to /dev/null: the zero-copy path.
    Splice,
    /// Unix domain stream socket.
    UnixStream,
    /// Unix domain datagram socket.
    UnixDgram,
    /// Unix domain seqpacket socket.
    UnixSeqpacket,
    /// TCP over 127.0.0.1.
    Tcp,
    /// UDP over 127.0.0.1.
    Udp,
    /// A file in /dev/shm, written and read back.
    ShmFile,
    /// Shared-memory ring buffer, waiting by spinning.
    RingSpin,
    /// Shared-memory ring buffer, waiting on a futex.
    RingFutex,
    /// POSIX message queue.
    Mqueue,
    /// process_vm_readv: the receiver pulls the sender's message (MPI's single copy).
    VmReadv,
    /// process_vm_writev: the sender pushes into the receiver's posted buffer.
    VmWritev,
    /// System V message queue.
    SysvMsg,
    /// The shared-memory ring (futex wake-ups) in a System V segment.
    SysvShm,
    /// A fresh memfd per message, handed over through SCM_RIGHTS.
    MemfdPass,
}

impl Mech {
    /// Mechanisms measured for throughput, in report order.
    pub const TPUT: [Mech; 17] = [
        Mech::Pipe,
        Mech::Fifo,
        Mech::Splice,
        Mech::UnixStream,
        Mech::UnixDgram,
        Mech::UnixSeqpacket,
        Mech::Tcp,
        Mech::Udp,
        Mech::ShmFile,
        Mech::RingSpin,
        Mech::RingFutex,
        Mech::Mqueue,
        Mech::VmReadv,
        Mech::VmWritev,
        Mech::SysvMsg,
        Mech::SysvShm,
        Mech::MemfdPass,
    ];

    /// Mechanisms measured for round trips, in report order: those with
    /// round-trip sizes (splice, the file and the memfd hand-over have no
    /// way back; a FIFO, once open, is the anonymous pipe).
    pub fn rtt() -> impl Iterator<Item = Mech> {
        Mech::TPUT.into_iter().filter(|m| !m.rtt_sizes().is_empty())
    }

    /// The throughput message sizes measured for this mechanism.
    pub fn tput_sizes(self) -> &'static [usize] {
        match self {
            Mech::VmReadv | Mech::VmWritev | Mech::SysvShm | Mech::MemfdPass => &LARGE,
            Mech::SysvMsg => &SYSV_MSG_TPUT,
            _ => &TPUT_SIZES,
        }
    }

    /// The round-trip message sizes measured for this mechanism (none for
    /// one-way mechanisms).
    pub fn rtt_sizes(self) -> &'static [usize] {
        match self {
            Mech::Fifo | Mech::Splice | Mech::ShmFile | Mech::MemfdPass => &[],
            Mech::VmReadv | Mech::VmWritev => &RTT_SIZES[3..],
            Mech::SysvShm => &RTT_SIZES[..1],
            _ => &RTT_SIZES,
        }
    }

    /// True when the receiver never holds the bytes (splice to /dev/null):
    /// such a row is reported apart from the mechanisms that deliver.
    pub fn sink_only(self) -> bool {
        self == Mech::Splice
    }

    /// The id segment.
    pub fn name(self) -> &'static str {
        match self {
            Mech::Pipe => "pipe",
            Mech::Fifo => "fifo",
            Mech::Splice => "splice",
            Mech::UnixStream => "unix_stream",
            Mech::UnixDgram => "unix_dgram",
            Mech::UnixSeqpacket => "unix_seqpacket",
            Mech::Tcp => "tcp",
            Mech::Udp => "udp",
            Mech::ShmFile => "shm_file",
            Mech::RingSpin => "ring_spin",
            Mech::RingFutex => "ring_futex",
            Mech::Mqueue => "mqueue",
            Mech::VmReadv => "vm_readv",
            Mech::VmWritev => "vm_writev",
            Mech::SysvMsg => "sysv_msg",
            Mech::SysvShm => "sysv_shm",
            Mech::MemfdPass => "memfd_pass",
        }
    }

    /// What it is, for summaries.
    fn what(self) -> &'static str {
        match self {
            Mech::Pipe => "anonymous pipe (write/read)",
            Mech::Fifo => "FIFO (named pipe, write/read)",
            Mech::Splice => "vmsplice into a pipe, splice to /dev/null (zero-copy)",
            Mech::UnixStream => "Unix stream socket",
            Mech::UnixDgram => "Unix datagram socket",
            Mech::UnixSeqpacket => "Unix seqpacket socket",
            Mech::Tcp => "TCP over 127.0.0.1",
            Mech::Udp => "UDP over 127.0.0.1 (sender windowed: no loss)",
            Mech::ShmFile => "file in /dev/shm, written then read back by the peer",
            Mech::RingSpin => "shared-memory ring (memfd), both ends spinning",
            Mech::RingFutex => "shared-memory ring (memfd), futex wake-ups",
            Mech::Mqueue => "POSIX message queue",
            Mech::VmReadv => {
                "process_vm_readv: the receiver copies the sender's message (one copy, a rendezvous each)"
            }
            Mech::VmWritev => {
                "process_vm_writev: the sender copies into the receiver's posted buffer (one copy, a rendezvous each)"
            }
            Mech::SysvMsg => "System V message queue (msgsnd/msgrcv)",
            Mech::SysvShm => "shared-memory ring in a System V segment, futex wake-ups",
            Mech::MemfdPass => {
                "a fresh memfd per message passed through SCM_RIGHTS; the receiver maps it and faults its pages in"
            }
        }
    }
}

/// What a round spends setting an IPC benchmark up and tearing it down
/// besides its samples (its peer thread or process started and joined, the
/// channel made and closed): 2–5 ms a round on the quick runs of a 2-vCPU AMD EPYC (Zen 4) KVM guest and the
/// Xeon one. Only the run-time estimate uses it ([`FnBench::setup_time`]).
const SETUP: Duration = Duration::from_millis(3);

/// The budget of every IPC benchmark: there are many and each is cheap,
/// so together they must fit the quick profile.
pub const BUDGET: Budget = Budget::Fixed([
    Duration::from_millis(60),
    Duration::from_millis(320),
    Duration::from_millis(2600),
]);

/// The id of a throughput benchmark.
pub fn tput_id(m: Mech, size: usize, p: Placement) -> String {
    format!(
        "ipc.{}.tput/{}/{}",
        m.name(),
        size_label(size as u64),
        p.label()
    )
}

/// The id of a round-trip benchmark.
pub fn rtt_id(m: Mech, size: usize, p: Placement) -> String {
    format!(
        "ipc.{}.rtt/{}/{}",
        m.name(),
        size_label(size as u64),
        p.label()
    )
}

/// Mechanisms the whole-machine quick profile leaves out (they run at the
/// quick profile when a pattern selects them, and at the others always):
/// the ones beyond the everyday pipes, sockets, rings and queues.
const ON_REQUEST: [&str; 9] = [
    "vm_readv",
    "vm_writev",
    "sysv_msg",
    "sysv_shm",
    "memfd_pass",
    "sigqueue",
    "inotify",
    "fanotify",
    "stat_poll",
];

/// Bytes of the message a file-change round trip writes each way.
pub const NOTIFY_SIZE: usize = 8;

/// The id of a file-change round trip: `ipc.inotify.rtt/same`,
/// `ipc.inotify.rename.rtt/cross`, `ipc.stat_poll.10ms.rtt/same`...
pub fn notify_id(watch: notify::Watch, p: Placement) -> String {
    format!("ipc.{}.rtt/{}", watch.name(), p.label())
}

/// Looks of each slice of a polling loop's idle-burn measurement: about
/// 8 ms of a 1 ms loop, one look of a 10 ms one.
fn idle_looks(poll: Duration) -> u64 {
    (8 / poll.as_millis().max(1) as u64).max(1)
}

/// An IPC benchmark of `mech` (with a message `size`, if it has one) whose
/// ends sit at the placement named `place` (the model's name of their
/// relation, [`Placement::class_name`]), interleaved with the others of
/// group `key`.
fn ipc_bench(
    id: String,
    summary: String,
    unit: Unit,
    (mech, size, place): (&str, Option<usize>, &'static str),
    key: String,
    prepare: impl Fn(&Ctx) -> Result<Box<dyn Timed>, PrepareError> + Send + Sync + 'static,
) -> FnBench {
    let b = FnBench::new(id, summary, unit, prepare).param("mechanism", mech);
    let b = if ON_REQUEST.contains(&mech) {
        b.on_request()
    } else {
        b
    };
    let b = b
        .param("placement", place)
        .interleave(key)
        .with_budget(BUDGET)
        .setup_time(SETUP);
    match size {
        Some(s) => b.param("size", s),
        None => b,
    }
}

fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let mut out: Vec<Box<dyn Bench>> = Vec::new();
    for p in Placement::of_host(host) {
        for (shape, sizes) in [(Shape::Tput, &TPUT_SIZES[..]), (Shape::Rtt, &RTT_SIZES[..])] {
            for &size in sizes {
                // A mechanism without this shape or size has no sizes to match.
                for m in Mech::TPUT {
                    let wanted = match shape {
                        Shape::Tput => m.tput_sizes(),
                        Shape::Rtt => m.rtt_sizes(),
                    };
                    if !wanted.contains(&size) {
                        continue;
                    }
                    let label = size_label(size as u64);
                    let (id, summary, unit, key) = match shape {
                        Shape::Tput => (
                            tput_id(m, size, p),
                            format!(
                                "{}: throughput of {label} messages, ends on {}",
                                m.what(),
                                place_text(p)
                            ),
                            Unit::Throughput {
                                bytes_per_op: size as f64,
                            },
                            format!("ipc.tput/{label}/{}", p.label()),
                        ),
                        Shape::Rtt => (
                            rtt_id(m, size, p),
                            format!(
                                "{}: round trip of a {label} message and its echo, ends on {}",
                                m.what(),
                                place_text(p)
                            ),
                            Unit::Latency,
                            format!("ipc.rtt/{label}/{}", p.label()),
                        ),
                    };
                    let b = ipc_bench(
                        id,
                        summary,
                        unit,
                        (m.name(), Some(size), p.class_name(host)),
                        key,
                        move |ctx| open(m, shape, size, &p.cpus(ctx)?, ctx),
                    );
                    // A sink that never holds the bytes says so in its row.
                    let b = if shape == Shape::Tput && m.sink_only() {
                        b.param("sink_only", true)
                    } else {
                        b
                    };
                    // A further placement class prices its level with the
                    // smallest round trip; the rest of its rows run on request.
                    let b = if p.is_class() && (shape == Shape::Tput || size != RTT_SIZES[0]) {
                        b.on_request()
                    } else {
                        b
                    };
                    out.push(b.boxed());
                }
            }
        }
        for (kind, name, what) in [
            (
                signal::Kind::Eventfd,
                "eventfd",
                "eventfd ping-pong (a wake-up each way, no payload)",
            ),
            (
                signal::Kind::Futex,
                "futex",
                "futex ping-pong in shared memory (a wake-up each way, no payload)",
            ),
            (
                signal::Kind::Sigqueue,
                "sigqueue",
                "real-time signal ping-pong, sigqueue and sigwaitinfo (a wake-up each way carrying a value)",
            ),
        ] {
            out.push(
                ipc_bench(
                    format!("ipc.{name}.rtt/{}", p.label()),
                    format!("{what}, ends on {}", place_text(p)),
                    Unit::Latency,
                    (name, None, p.class_name(host)),
                    format!("ipc.signal/{}", p.label()),
                    move |ctx| {
                        let cpus = p.cpus(ctx)?;
                        Ok(Box::new(signal::Signalling::start(kind, cpus)?) as Box<dyn Timed>)
                    },
                )
                .boxed(),
            );
        }
        for watch in notify::Watch::ALL {
            let b = ipc_bench(
                notify_id(watch, p),
                format!("{}, ends on {}", watch.what(), place_text(p)),
                Unit::Latency,
                (watch.mechanism(), Some(NOTIFY_SIZE), p.class_name(host)),
                format!("ipc.notify/{}", p.label()),
                move |ctx| {
                    let cpus = p.cpus(ctx)?;
                    // What the loop burns while idle, measured before the
                    // peer runs, on the parent's CPU.
                    let idle = match watch.poll() {
                        Some(poll) => Some(idle_burn(ctx, &cpus, poll)?),
                        None => None,
                    };
                    let ends = notify::pair(watch, private_dir(ctx)?)?;
                    let rt = start(Shape::Rtt, ends, NOTIFY_SIZE, &cpus, None, None)?;
                    Ok(match idle {
                        Some(idle) => {
                            Box::new(notify::Polled { inner: rt, idle }) as Box<dyn Timed>
                        }
                        None => rt,
                    })
                },
            )
            .param("event", watch.event());
            // A polled event waits about one interval a round trip, and
            // each round first watches the idle loop for IDLE_SLICES slices
            // of its looks; the estimate counts both (the notify group took
            // 1.4 s a placement at quick where operations far shorter than
            // a sample were expected: 0.34 s; the 1 ms poll alone 0.45 s).
            let b = match watch.poll() {
                Some(poll) => b.param("poll_ms", poll.as_millis() as u64).expected_by(
                    move |profile, budget| {
                        let idle = poll * (idle_looks(poll) as usize * notify::IDLE_SLICES) as u32;
                        crate::harness::round::expected_slow(profile, budget, SETUP + idle, poll)
                    },
                ),
                None => b,
            };
            out.push(b.boxed());
        }
    }
    out
}

fn place_text(p: Placement) -> &'static str {
    p.text()
}

/// What a polling loop of interval `poll` burns while nothing changes,
/// pinned to the parent's CPU.
fn idle_burn(ctx: &Ctx, cpus: &Cpus, poll: Duration) -> Result<notify::IdleBurn, PrepareError> {
    let _pin = crate::harness::affinity::Pinned::to(cpus.parent)?;
    let file = tempfile::tempfile_in(&ctx.tmp)
        .map_err(|e| PrepareError::Fail(anyhow::anyhow!("a file in {}: {e}", ctx.tmp.display())))?;
    use std::os::fd::AsRawFd;
    notify::idle_burn(file.as_raw_fd(), poll, idle_looks(poll))
        .map_err(|e| PrepareError::Fail(anyhow::anyhow!("an idle polling loop: {e}")))
}

/// A private directory under the run's temp dir for named objects; the
/// constructors remove the names as soon as both ends are open.
fn private_dir(ctx: &Ctx) -> Result<tempfile::TempDir, PrepareError> {
    tempfile::Builder::new()
        .prefix("ipc-")
        .tempdir_in(&ctx.tmp)
        .map_err(|e| {
            PrepareError::Fail(anyhow::anyhow!(
                "creating a directory in {}: {e}",
                ctx.tmp.display()
            ))
        })
}

/// Which of the two benchmark shapes a pair of ends is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// One-way stream of messages into a sink ([`Throughput`]).
    Tput,
    /// A message and its echo ([`RoundTrip`]): the ends must be duplex.
    Rtt,
}

/// Starts the benchmark of `shape` on the ends `a` and `b`, with the UDP
/// sender `window` (throughput only) and a caveat `note`.
fn start<A: End + 'static, B: End + 'static>(
    shape: Shape,
    (a, b): (A, B),
    size: usize,
    cpus: &Cpus,
    window: Option<u64>,
    note: Option<Warning>,
) -> Result<Box<dyn Timed>, PrepareError> {
    Ok(match shape {
        Shape::Tput => {
            let t = Throughput::start(a, b, size, *cpus, window)?;
            Box::new(match note {
                Some(n) => t.note(n.to_string()),
                None => t,
            })
        }
        Shape::Rtt => {
            let r = RoundTrip::start(a, b, size, *cpus)?;
            Box::new(match note {
                Some(n) => r.note(n.to_string()),
                None => r,
            })
        }
    })
}

/// Opens the ends of `m` for `shape` and starts its benchmark: the one
/// place that knows how each mechanism's pair of ends is made.
fn open(
    m: Mech,
    shape: Shape,
    size: usize,
    cpus: &Cpus,
    ctx: &Ctx,
) -> Result<Box<dyn Timed>, PrepareError> {
    let duplex = shape == Shape::Rtt;
    let go = |ends| start(shape, ends, size, cpus, None, None);
    match (m, shape) {
        (Mech::Pipe, Shape::Tput) => go(pipe::FdEnd::pipe()?),
        (Mech::Pipe, Shape::Rtt) => go(pipe::FdEnd::pipe_duplex()?),
        (Mech::Fifo, Shape::Tput) => {
            let dir = private_dir(ctx)?;
            go(pipe::fifo(dir.path())?)
        }
        (Mech::Splice, Shape::Tput) => start(shape, pipe::splice_pair()?, size, cpus, None, None),
        (Mech::UnixStream, _) => go(socket::unix_stream(&ctx.tmp)?),
        (Mech::UnixDgram, _) => go(socket::unix_dgram(&ctx.tmp, size)?),
        (Mech::UnixSeqpacket, _) => go(socket::unix_seqpacket(&ctx.tmp, size)?),
        (Mech::Tcp, _) => go(socket::tcp(duplex)?),
        (Mech::Udp, _) => {
            let (a, b, window) = socket::udp(size)?;
            start(shape, (a, b), size, cpus, Some(window), None)
        }
        (Mech::ShmFile, Shape::Tput) => Ok(Box::new(shm::ShmFile::start(
            Path::new("/dev/shm"),
            size,
            *cpus,
        )?)),
        (Mech::RingSpin | Mech::RingFutex, _) => {
            let wake = if m == Mech::RingSpin {
                Wake::Spin
            } else {
                Wake::Futex
            };
            let note = (wake == Wake::Spin && shares_cpu(cpus)).then_some(Warning::SpinSharedCpu);
            let ends = shm::ring_pair(size, wake, cpus, duplex)?;
            start(shape, ends, size, cpus, None, note)
        }
        (Mech::Mqueue, _) => start(
            shape,
            mqueue::mq_pair(size, duplex)?,
            size,
            cpus,
            None,
            None,
        ),
        (Mech::VmReadv | Mech::VmWritev, _) => {
            let dir = if m == Mech::VmReadv {
                cma::Dir::Read
            } else {
                cma::Dir::Write
            };
            start(
                shape,
                cma::cma_pair(dir, cpus, duplex)?,
                size,
                cpus,
                None,
                None,
            )
        }
        (Mech::SysvMsg, _) => start(shape, sysv::msg_pair(size)?, size, cpus, None, None),
        (Mech::SysvShm, _) => {
            let ends = shm::ring_pair_in(shm::Backing::SysV, size, Wake::Futex, cpus, duplex)?;
            start(shape, ends, size, cpus, None, None)
        }
        (Mech::MemfdPass, Shape::Tput) => {
            let (a, b, window) = memfd::pass_pair(size)?;
            start(shape, (a, b), size, cpus, Some(window), None)
        }
        (Mech::Fifo | Mech::Splice | Mech::ShmFile | Mech::MemfdPass, Shape::Rtt) => Err(
            PrepareError::Skip(format!("{} has no round-trip benchmark", m.name())),
        ),
    }
}

fn shares_cpu(c: &Cpus) -> bool {
    c.parent == c.peer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Profile;

    #[test]
    fn the_cross_pair_takes_its_name_from_the_topology_model() {
        // Four packages of two CPUs; the run may use CPUs 1, 2 and 6: the
        // cross pair is CPUs 1 and 2, in two packages, the pair the model
        // (and so the topology suite) calls cross-package.
        let mut tree = crate::host::fixtures::four_socket_guest();
        tree.allowed("1-2,6");
        let dir = tree.write();
        let host = Host::detect_at(dir.path());
        let pair = host
            .topology
            .pair(crate::host::PlaceClass::CrossPackage)
            .unwrap();
        assert_eq!((pair.a, pair.b), (1, 2));
        let bs = benches(&host);
        let place = |id: &str| {
            let b = bs.iter().find(|b| b.id() == id).unwrap();
            b.params()["placement"].as_str().unwrap().to_string()
        };
        assert_eq!(place("ipc.pipe.rtt/8B/cross"), "cross-package");
        assert_eq!(place("ipc.pipe.rtt/8B/same"), "same-cpu");
        // The model's class is not measured twice under two names.
        assert!(!bs.iter().any(|b| b.id().ends_with("/cross-package")));
        // Where the model knows no pair, the relation keeps its plain name.
        let plain = benches(&Host::default());
        let b = plain
            .iter()
            .find(|b| b.id() == "ipc.pipe.rtt/8B/cross")
            .unwrap();
        assert_eq!(b.params()["placement"], "cross-cpu");
    }

    #[test]
    fn ids_follow_the_scheme_and_are_unique() {
        let bs = benches(&Host::default());
        let per_place: usize = Mech::TPUT
            .iter()
            .map(|m| m.tput_sizes().len())
            .sum::<usize>()
            + Mech::rtt().map(|m| m.rtt_sizes().len()).sum::<usize>()
            + 3
            + notify::Watch::ALL.len();
        assert_eq!(bs.len(), 2 * per_place);
        // Every size a mechanism declares is one of the suite's sizes.
        for m in Mech::TPUT {
            assert!(
                m.tput_sizes().iter().all(|s| TPUT_SIZES.contains(s)),
                "{m:?}"
            );
        }
        assert_eq!(Mech::rtt().count(), 13);
        for m in Mech::rtt() {
            assert!(m.rtt_sizes().iter().all(|s| RTT_SIZES.contains(s)), "{m:?}");
        }
        let mut seen = std::collections::HashSet::new();
        for b in &bs {
            assert!(seen.insert(b.id().to_string()), "{}", b.id());
            let id = b.id();
            assert!(id.starts_with("ipc."), "{id}");
            assert!(id.ends_with("/same") || id.ends_with("/cross"), "{id}");
            assert!(id.contains(".tput/") || id.contains(".rtt/"), "{id}");
            let placement = b.params()["placement"].as_str().unwrap().to_string();
            assert!(placement == "same-cpu" || placement == "cross-cpu");
            match b.unit() {
                Unit::Throughput { bytes_per_op } => {
                    assert!(id.contains(".tput/"));
                    assert_eq!(b.params()["size"].as_f64().unwrap(), bytes_per_op);
                }
                Unit::Latency => assert!(id.contains(".rtt/")),
                Unit::Rate => panic!("{id}"),
            }
            assert!(b.interleave().is_some());
        }
        assert!(seen.contains("ipc.pipe.tput/64KiB/cross"));
        assert!(seen.contains("ipc.pipe.rtt/8B/same"));
        assert!(seen.contains("ipc.eventfd.rtt/same"));
        assert!(seen.contains("ipc.inotify.rtt/cross") && seen.contains("ipc.stat_poll.rtt/same"));
        for id in [
            "ipc.inotify.rename.rtt/same",
            "ipc.inotify.close_write.rtt/cross",
            "ipc.fanotify.rtt/same",
            "ipc.fanotify.close_write.rtt/cross",
            "ipc.stat_poll.10ms.rtt/same",
        ] {
            assert!(seen.contains(id), "{id}");
            let b = bs.iter().find(|b| b.id() == id).unwrap();
            assert!(
                b.on_request(),
                "{id}: the whole-machine quick profile leaves it out"
            );
        }
        for id in [
            "ipc.vm_readv.tput/1MiB/cross",
            "ipc.vm_writev.rtt/4KiB/same",
            "ipc.sysv_msg.tput/4KiB/same",
            "ipc.sysv_msg.rtt/8B/cross",
            "ipc.sysv_shm.tput/64KiB/same",
            "ipc.sysv_shm.rtt/8B/same",
            "ipc.memfd_pass.tput/1MiB/same",
            "ipc.sigqueue.rtt/cross",
        ] {
            assert!(seen.contains(id), "{id}");
        }
        assert!(!seen.contains("ipc.memfd_pass.rtt/8B/same"));
        let splice = bs
            .iter()
            .find(|b| b.id() == "ipc.splice.tput/64KiB/same")
            .unwrap();
        assert_eq!(splice.params()["sink_only"], true);
    }

    #[test]
    fn budgets_fit_the_quick_profile() {
        let bs = benches(&Host::default());
        let total: Duration = bs.iter().map(|b| b.budget(Profile::Quick)).sum();
        // `opcost run ipc --profile quick`: every row, those on request too.
        assert!(total <= Duration::from_secs(16), "{total:?}");
        // The whole-machine quick run leaves the rows on request out.
        let whole: Duration = bs
            .iter()
            .filter(|b| !b.on_request())
            .map(|b| b.budget(Profile::Quick))
            .sum();
        assert!(whole <= Duration::from_secs(15), "{whole:?}");
    }
}
