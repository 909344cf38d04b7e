//! Shared memory: a single-producer single-consumer ring buffer in a memfd
//! mapped by both processes (waiting by spinning, or by futex), and a file
//! in /dev/shm written by one process and read back by the other, as the
//! original experiment did with dd.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::unistd::ftruncate;

use super::check::{Fnv, pattern, stream_mismatch, verify_len};
use super::link::End;
use super::peer::{
    Before, Bell, Buf, Cpus, Ctl, EXIT_OK, Mapping, Padded, Peer, STALL_LIMIT, Shared, Spin, Step,
};
use crate::harness::affinity::Pinned;
use crate::harness::warnings::Warning;
use crate::harness::{PrepareError, Timed};

/// How the two ends of a ring wait for each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Busy-polling (with a yield when both ends share a CPU); the peer
    /// parks between timed batches so it does not burn an idle CPU.
    Spin,
    /// Sleeping on a futex, woken by the other side only when asleep.
    Futex,
}

/// The ring's shared header; the data follows at [`HDR`].
#[repr(C)]
struct RingHdr {
    /// Bytes ever written (producer).
    head: Padded<AtomicU64>,
    /// Bytes ever read (consumer).
    tail: Padded<AtomicU64>,
    /// The consumer sleeps here for data.
    data: Bell,
    /// The producer sleeps here for space.
    space: Bell,
    /// Spin mode: 1 while the parent times a batch.
    running: Padded<AtomicU32>,
    /// Spin mode: 1 while the peer polls (not parked).
    awake: Padded<AtomicU32>,
    /// The parent sleeps here until the peer is awake.
    awake_bell: Bell,
}

/// Offset of the data area: the header rounded up to a page.
const HDR: usize = 4096;
const _: () = assert!(std::mem::size_of::<RingHdr>() <= HDR);

/// Polls a spinning parent makes before it falls back to sleeping.
const PARENT_POLLS: u32 = 1 << 24;

/// One ring: a memfd mapping holding the header and `cap` data bytes.
struct Ring {
    map: Arc<Mapping>,
    cap: u64,
}

/// The memory a ring lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A memfd mapped shared by both processes.
    Memfd,
    /// A System V segment (shmget/shmat), inherited across the fork.
    SysV,
}

impl Ring {
    fn new(cap: usize, backing: Backing) -> Result<Ring, PrepareError> {
        let len = HDR + cap;
        let map = match backing {
            Backing::Memfd => {
                let fd = super::memfd::memfd(c"opcost-ipc-ring").map_err(|e| {
                    PrepareError::Skip(format!("memfd_create is not available ({e})"))
                })?;
                ftruncate(&fd, len as i64)?;
                Mapping::of_file(&fd, len)?
            }
            Backing::SysV => Mapping::sysv(len)?,
        };
        Ok(Ring {
            map: Arc::new(map),
            cap: cap as u64,
        })
    }

    fn half(&self) -> Half {
        Half {
            map: self.map.clone(),
            cap: self.cap,
            pos: 0,
            seen: 0,
        }
    }
}

/// One side's view of a ring: its own cursor and a cached copy of the other's.
struct Half {
    map: Arc<Mapping>,
    cap: u64,
    /// Producer: bytes written; consumer: bytes read.
    pos: u64,
    /// The other side's cursor when last read (refreshed only when needed).
    seen: u64,
}

impl Half {
    fn hdr(&self) -> &RingHdr {
        // SAFETY: self.map keeps the mapping alive as long as self.
        unsafe { hdr_at(self.map.as_ptr()) }
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: HDR + cap bytes are mapped.
        unsafe { self.map.as_ptr().add(HDR) }
    }

    /// Copies `src` into the ring at stream position `pos` (wrapping).
    fn copy_in(&self, pos: u64, src: &[u8]) {
        let off = (pos % self.cap) as usize;
        let first = src.len().min(self.cap as usize - off);
        // SAFETY: both ranges lie inside the data area; the consumer does not
        // read these bytes until head is published after the copy.
        unsafe {
            ptr::copy_nonoverlapping(src.as_ptr(), self.data().add(off), first);
            ptr::copy_nonoverlapping(src.as_ptr().add(first), self.data(), src.len() - first);
        }
    }

    /// Copies from stream position `pos` into `dst` (wrapping).
    fn copy_out(&self, pos: u64, dst: &mut [u8]) {
        let off = (pos % self.cap) as usize;
        let first = dst.len().min(self.cap as usize - off);
        // SAFETY: both ranges lie inside the data area; the producer does
        // not overwrite them until tail is published after the copy.
        unsafe {
            ptr::copy_nonoverlapping(self.data().add(off), dst.as_mut_ptr(), first);
            ptr::copy_nonoverlapping(self.data(), dst.as_mut_ptr().add(first), dst.len() - first);
        }
    }
}

/// Which process an end belongs to, which decides how it waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Parent,
    Peer,
}

/// An end of a ring channel: a producer half, a consumer half, or both
/// (round trips use one ring each way).
pub struct RingEnd {
    tx: Option<Half>,
    rx: Option<Half>,
    /// The ring whose header holds `running`/`awake` (parent to peer).
    ctl: Arc<Mapping>,
    wake: Wake,
    spin: Spin,
    side: Side,
    strong: Ordering,
}

/// A ring channel: (parent end, peer end); with `duplex` a second ring
/// carries replies. Capacity holds at least two messages of `size`.
pub fn ring_pair(
    size: usize,
    wake: Wake,
    cpus: &Cpus,
    duplex: bool,
) -> Result<(RingEnd, RingEnd), PrepareError> {
    ring_pair_in(Backing::Memfd, size, wake, cpus, duplex)
}

/// [`ring_pair`] in memory of `backing`.
pub fn ring_pair_in(
    backing: Backing,
    size: usize,
    wake: Wake,
    cpus: &Cpus,
    duplex: bool,
) -> Result<(RingEnd, RingEnd), PrepareError> {
    let cap = (size * 2).max(256 << 10).next_power_of_two();
    let a = Ring::new(cap, backing)?;
    let b = if duplex {
        Some(Ring::new(cap, backing)?)
    } else {
        None
    };
    let strong = match wake {
        Wake::Spin => Ordering::Release,
        Wake::Futex => Ordering::SeqCst,
    };
    let mk = |side, tx: Option<Half>, rx: Option<Half>| RingEnd {
        tx,
        rx,
        ctl: a.map.clone(),
        wake,
        spin: super::peer::spin_of(cpus),
        side,
        strong,
    };
    let parent = mk(Side::Parent, Some(a.half()), b.as_ref().map(Ring::half));
    let peer = mk(Side::Peer, b.as_ref().map(Ring::half), Some(a.half()));
    Ok((parent, peer))
}

/// The header at the start of a ring mapping.
///
/// # Safety
/// `p` must point at a live ring mapping that outlives the reference.
unsafe fn hdr_at<'a>(p: *mut u8) -> &'a RingHdr {
    // SAFETY: the caller's promise; the header is all atomics, valid when zero.
    unsafe { &*(p as *const RingHdr) }
}

/// How an end waits for the other side.
fn before_for(wake: Wake, side: Side, spin: Spin, running: &AtomicU32) -> Before<'_> {
    match (wake, side) {
        (Wake::Futex, _) => Before::Sleep,
        (Wake::Spin, Side::Parent) => Before::Poll(PARENT_POLLS, spin),
        (Wake::Spin, Side::Peer) => Before::PollWhile(running, spin),
    }
}

impl RingEnd {
    fn ctl(&self) -> &RingHdr {
        // SAFETY: self.ctl keeps the mapping alive as long as self.
        unsafe { hdr_at(self.ctl.as_ptr()) }
    }

    fn before(&self) -> Before<'_> {
        before_for(self.wake, self.side, self.spin, &self.ctl().running)
    }

    fn stall(&self) -> Option<Duration> {
        match self.side {
            Side::Parent => Some(STALL_LIMIT),
            Side::Peer => None,
        }
    }

    /// Peer, spin mode: waits for data, polling while the parent runs a
    /// batch and parked on the futex between batches.
    fn peer_wait_data(&self, h: &Half) -> Result<(), Errno> {
        let ctl = self.ctl();
        let hdr = h.hdr();
        let avail = || hdr.head.load(Ordering::SeqCst) != h.pos;
        loop {
            if avail() {
                return Ok(());
            }
            if ctl.running.load(Ordering::SeqCst) != 0 {
                if ctl.awake.load(Ordering::Relaxed) == 0 {
                    ctl.awake.store(1, Ordering::SeqCst);
                    ctl.awake_bell.ring();
                }
                hdr.data.wait(self.before(), None, avail)?;
            } else {
                ctl.awake.store(0, Ordering::SeqCst);
                hdr.data.wait(Before::Sleep, None, || {
                    avail() || ctl.running.load(Ordering::SeqCst) != 0
                })?;
            }
        }
    }
}

impl End for RingEnd {
    fn datagram(&self) -> bool {
        false
    }

    #[inline]
    fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
        // SAFETY: self.ctl keeps the mapping alive for this call.
        let ctl = unsafe { hdr_at(self.ctl.as_ptr()) };
        let before = before_for(self.wake, self.side, self.spin, &ctl.running);
        let stall = self.stall();
        let strong = self.strong;
        let Some(h) = self.tx.as_mut() else {
            return Err(Errno::EBADF);
        };
        // SAFETY: h.map keeps its mapping alive for this call.
        let hdr = unsafe { hdr_at(h.map.as_ptr()) };
        let mut off = 0;
        while off < msg.len() {
            let mut free = h.cap - (h.pos - h.seen);
            if free == 0 {
                h.seen = hdr.tail.load(Ordering::Acquire);
                free = h.cap - (h.pos - h.seen);
                if free == 0 {
                    let pos = h.pos;
                    let cap = h.cap;
                    hdr.space.wait(before, stall, || {
                        cap - (pos - hdr.tail.load(Ordering::SeqCst)) > 0
                    })?;
                    continue;
                }
            }
            let n = (free as usize).min(msg.len() - off);
            h.copy_in(h.pos, msg.get(off..off + n).unwrap_or(&[]));
            h.pos += n as u64;
            off += n;
            hdr.head.store(h.pos, strong);
            hdr.data.ring();
        }
        Ok(())
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let spin_peer = self.wake == Wake::Spin && self.side == Side::Peer;
        // SAFETY: self.ctl keeps the mapping alive for this call.
        let ctl = unsafe { hdr_at(self.ctl.as_ptr()) };
        let before = before_for(self.wake, self.side, self.spin, &ctl.running);
        let stall = self.stall();
        let strong = self.strong;
        let Some(h) = self.rx.as_ref() else {
            return Err(Errno::EBADF);
        };
        // SAFETY: h.map keeps its mapping alive for this call.
        let hdr = unsafe { hdr_at(h.map.as_ptr()) };
        if h.seen == h.pos {
            let head = hdr.head.load(Ordering::Acquire);
            if head == h.pos {
                if spin_peer {
                    self.peer_wait_data(h)?;
                } else {
                    let pos = h.pos;
                    hdr.data
                        .wait(before, stall, || hdr.head.load(Ordering::SeqCst) != pos)?;
                }
            }
        }
        let Some(h) = self.rx.as_mut() else {
            return Err(Errno::EBADF);
        };
        if h.seen == h.pos {
            h.seen = hdr.head.load(Ordering::Acquire);
        }
        let n = ((h.seen - h.pos) as usize).min(buf.len());
        h.copy_out(h.pos, buf.get_mut(..n).unwrap_or(&mut []));
        h.pos += n as u64;
        hdr.tail.store(h.pos, strong);
        hdr.space.ring();
        Ok(n)
    }

    fn begin(&mut self) -> Result<(), Errno> {
        if self.wake != Wake::Spin || self.side != Side::Parent {
            return Ok(());
        }
        let ctl = self.ctl();
        ctl.running.store(1, Ordering::SeqCst);
        ctl.data.ring();
        let before = if self.spin.yield_every == 1 {
            Before::Sleep
        } else {
            Before::Poll(PARENT_POLLS, self.spin)
        };
        ctl.awake_bell.wait(before, Some(STALL_LIMIT), || {
            ctl.awake.load(Ordering::SeqCst) != 0
        })
    }

    fn end(&mut self) {
        if self.wake == Wake::Spin && self.side == Side::Parent {
            self.ctl().running.store(0, Ordering::SeqCst);
        }
    }
}

/// Most bytes one batch writes to the /dev/shm file.
const SHM_FILE_MAX: u64 = 64 << 20;

/// A file in /dev/shm: the parent writes a batch of messages to it, the
/// peer reads them back; one batch is both. The file is emptied after each
/// batch (untimed), so every batch writes a new file as dd did.
///
/// The file has no name: it is unlinked as it is created and both
/// processes use the descriptor with explicit offsets (pwrite, pread), so
/// it cannot outlive the benchmark whatever ends the run.
pub struct ShmFile {
    peer: Peer,
    file: File,
    ctl: Arc<Shared<Ctl>>,
    msg: Buf,
    cpus: Cpus,
    job: u64,
    max_ops: u64,
    notes: Vec<String>,
}

impl ShmFile {
    /// Creates the (unnamed) file in `root` (/dev/shm), forks the reader,
    /// and checks a sample transfer.
    pub fn start(root: &Path, size: usize, cpus: Cpus) -> Result<ShmFile, PrepareError> {
        if !root.is_dir() {
            return Err(PrepareError::Skip(format!(
                "{} does not exist on this system",
                root.display()
            )));
        }
        let max_ops = (SHM_FILE_MAX / size as u64).max(1);
        let need = max_ops * size as u64;
        let stat = nix::sys::statvfs::statvfs(root)?;
        let free = stat.blocks_available() as u64 * stat.fragment_size() as u64;
        let avail = crate::host::mem_available_now().unwrap_or(u64::MAX);
        if free < 2 * need || avail < 4 * need {
            return Err(PrepareError::Skip(format!(
                "{} has {} MiB free and the machine {} MiB available; this benchmark needs {} MiB",
                root.display(),
                free >> 20,
                avail >> 20,
                (2 * need) >> 20
            )));
        }
        let mut notes = Vec::new();
        let fs = nix::sys::statfs::statfs(root)?;
        if fs.filesystem_type() != nix::sys::statfs::TMPFS_MAGIC {
            notes.push(
                Warning::NotTmpfs {
                    dir: root.display().to_string(),
                }
                .to_string(),
            );
        }
        let file = tempfile::tempfile_in(root)
            .map_err(|e| anyhow::anyhow!("creating a file in {}: {e}", root.display()))?;
        let reader = file.try_clone()?;
        let ctl = Arc::new(Shared::<Ctl>::new()?);
        let mut buf = Buf::new(size)?;
        let c = ctl.clone();
        let peer = Peer::spawn(cpus.peer, move || {
            read_back(&reader, buf.as_mut_slice(), &c)
        })?;
        let mut t = ShmFile {
            peer,
            file,
            ctl,
            msg: Buf::from_slice(&pattern(size, 1))?,
            cpus,
            job: 0,
            max_ops,
            notes,
        };
        t.check(size)?;
        Ok(t)
    }

    fn check(&mut self, size: usize) -> Result<(), PrepareError> {
        let data = pattern(verify_len(size).min(SHM_FILE_MAX as usize), 0xf11e);
        for (i, chunk) in data.chunks(size).enumerate() {
            self.file.write_all_at(chunk, (i * size) as u64)?;
        }
        self.read_job(data.len() as u64)
            .map_err(PrepareError::Fail)?;
        let got = self.ctl.target.load(Ordering::SeqCst);
        let sum = self.ctl.sum.load(Ordering::SeqCst);
        ftruncate(&self.file, 0)?;
        match stream_mismatch(&data, got, sum) {
            Some(why) => Err(PrepareError::Fail(anyhow::anyhow!(why))),
            None => Ok(()),
        }
    }

    /// Posts a job: the peer reads `len` bytes back from the start.
    fn read_job(&mut self, len: u64) -> anyhow::Result<()> {
        self.job += 1;
        self.ctl.target.store(len, Ordering::SeqCst);
        self.ctl.job.store(self.job, Ordering::SeqCst);
        self.ctl.go.ring();
        self.ctl
            .wait_ack(self.job, &self.cpus, STALL_LIMIT)
            .map_err(|e| {
                self.peer
                    .explain("reading the file back", e, Some(&self.ctl))
            })
    }
}

/// The peer's loop: wait for a job, read the file back, acknowledge.
/// The first job is the integrity check: its bytes are checksummed and
/// `target` is overwritten with the count actually read.
fn read_back(file: &File, buf: &mut [u8], ctl: &Ctl) -> i32 {
    let mut seen = 0u64;
    loop {
        let r = ctl.go.wait(Before::Sleep, None, || {
            ctl.job.load(Ordering::SeqCst) != seen
        });
        if let Err(e) = r {
            return ctl.fail(Step::Wait, e);
        }
        seen = ctl.job.load(Ordering::SeqCst);
        let len = ctl.target.load(Ordering::SeqCst);
        let mut off = 0u64;
        let mut sum = Fnv::default();
        while off < len {
            let want = (buf.len() as u64).min(len - off) as usize;
            let Some(dst) = buf.get_mut(..want) else {
                return ctl.fail(Step::File, Errno::EINVAL);
            };
            // SAFETY: dst is a valid writable buffer; pread has no other preconditions.
            let n = unsafe {
                libc::pread(
                    file.as_raw_fd(),
                    dst.as_mut_ptr().cast(),
                    dst.len(),
                    off as libc::off_t,
                )
            };
            match Errno::result(n) {
                Ok(0) => break,
                Ok(n) => {
                    if seen == 1 {
                        sum.update(dst.get(..n as usize).unwrap_or(&[]));
                    }
                    off += n as u64;
                }
                Err(Errno::EINTR) => {}
                Err(e) => return ctl.fail(Step::File, e),
            }
        }
        if seen == 1 {
            ctl.sum.store(sum.finish(), Ordering::SeqCst);
            ctl.target.store(off, Ordering::SeqCst);
        }
        ctl.acknowledge(seen);
        if seen == u64::MAX {
            return EXIT_OK;
        }
    }
}

impl Timed for ShmFile {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let _pin = Pinned::to(self.cpus.parent)?;
        let size = self.msg.as_slice().len() as u64;
        let start = Instant::now();
        for i in 0..ops {
            self.file.write_all_at(self.msg.as_slice(), i * size)?;
        }
        self.read_job(ops * size)?;
        let took = start.elapsed();
        ftruncate(&self.file, 0)?; // free the pages: the next batch writes a new file
        Ok(took)
    }

    fn max_ops(&self) -> Option<u64> {
        Some(self.max_ops)
    }

    fn warnings(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(self.cpus.details())
    }
}
