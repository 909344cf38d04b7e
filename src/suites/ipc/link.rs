//! The two shapes of an IPC benchmark, for any mechanism that can send and
//! receive messages ([`End`]): throughput (the parent streams messages to a
//! sink that acknowledges each batch) and round-trip latency (the parent
//! sends a message, the peer echoes it).
//!
//! A mechanism only supplies the two ends; set-up, the integrity check,
//! timing, pinning and clean-up are the same for all, so mechanisms are
//! compared on equal terms.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nix::errno::Errno;

use super::check::{Fnv, echo_mismatch, pattern, stream_mismatch, verify_len};
use super::peer::{Before, Buf, Cpus, Ctl, EXIT_OK, Peer, STALL_LIMIT, Shared, Step};
use crate::harness::affinity::Pinned;
use crate::harness::{PrepareError, Timed};

/// One end of a channel. The peer calls these methods after `fork`, so an
/// implementation must be async-signal-safe: system calls and atomics only,
/// no allocation, no locks.
pub trait End {
    /// True when a receive returns one whole message (datagrams, message
    /// queues), false for a byte stream.
    fn datagram(&self) -> bool;
    /// Sends all of `msg` (one datagram, or stream bytes).
    fn send(&mut self, msg: &[u8]) -> Result<(), Errno>;
    /// Receives into `buf`: one message, or at least one stream byte.
    /// Returns the byte count; 0 means the other end closed.
    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno>;
    /// Receives and consumes up to `buf.len()` bytes as a real receiver
    /// would; a zero-copy path may discard them without copying.
    fn drain(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        self.recv(buf)
    }
    /// Parent, after the last message of a batch: pushes out anything the
    /// mechanism holds back (Nagle's algorithm), so the batch can end.
    fn flush(&mut self) -> Result<(), Errno> {
        Ok(())
    }
    /// Parent, before a timed batch (wakes a parked spinning peer).
    fn begin(&mut self) -> Result<(), Errno> {
        Ok(())
    }
    /// Parent, after a timed batch (lets a spinning peer park).
    fn end(&mut self) {}
    /// What limits the message size, said when the kernel refuses one.
    fn size_limit(&self) -> &'static str {
        "the mechanism's maximum message size"
    }
}

/// Receives exactly `buf.len()` bytes of a stream (several receives if
/// needed). `Ok(false)` when the other end closed first.
pub fn recv_exact<E: End>(end: &mut E, buf: &mut [u8]) -> Result<bool, Errno> {
    let mut got = 0;
    while got < buf.len() {
        let Some(rest) = buf.get_mut(got..) else {
            break;
        };
        match end.recv(rest)? {
            0 => return Ok(false),
            n => got += n,
        }
    }
    Ok(true)
}

/// Receives one message of `buf.len()` bytes: a datagram of exactly that
/// size, or that many stream bytes. Returns the size received (0 = closed).
fn recv_message<E: End>(end: &mut E, buf: &mut [u8]) -> Result<usize, Errno> {
    if end.datagram() {
        end.recv(buf)
    } else if recv_exact(end, buf)? {
        Ok(buf.len())
    } else {
        Ok(0)
    }
}

/// Maps a failed send during the check: a refused size is a skip.
fn send_failure<E: End>(end: &E, size: usize, e: Errno, peer: &Peer, ctl: &Ctl) -> PrepareError {
    if e == Errno::EMSGSIZE || (e == Errno::EINVAL && end.datagram()) {
        PrepareError::Skip(format!(
            "the kernel refuses {size}-byte messages here ({e}); the limit is {}",
            end.size_limit()
        ))
    } else {
        PrepareError::Fail(peer.explain("sending the integrity-check data", e, Some(ctl)))
    }
}

/// The sink the peer runs for a throughput benchmark: receives forever,
/// checksums the first `check_len` bytes, acknowledges each batch target.
fn sink<E: End>(rx: &mut E, buf: &mut [u8], ctl: &Ctl, check_len: u64) -> i32 {
    let mut total = 0u64;
    let mut acked = 0u64;
    let mut sum = Fnv::default();
    let progress = ctl.progress.load(Ordering::SeqCst) != 0;
    loop {
        let checking = total < check_len;
        let r = if checking {
            rx.recv(buf)
        } else {
            rx.drain(buf)
        };
        let n = match r {
            Ok(0) => return EXIT_OK,
            Ok(n) => n as u64,
            Err(Errno::EINTR) => continue,
            Err(e) => return ctl.fail(Step::Recv, e),
        };
        if checking {
            let take = n.min(check_len - total) as usize;
            sum.update(buf.get(..take).unwrap_or(&[]));
            if total + n >= check_len {
                ctl.sum.store(sum.finish(), Ordering::SeqCst);
            }
        }
        total += n;
        if progress || checking {
            ctl.received.store(total, Ordering::SeqCst);
            ctl.credit.ring();
        }
        let target = ctl.target.load(Ordering::SeqCst);
        if total >= target && target > acked {
            acked = target;
            ctl.acknowledge(total);
        }
    }
}

/// The echo the peer runs for a round-trip benchmark.
fn echo<E: End>(end: &mut E, buf: &mut [u8], ctl: &Ctl) -> i32 {
    loop {
        let n = match recv_message(end, buf) {
            Ok(0) => return EXIT_OK,
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return ctl.fail(Step::Recv, e),
        };
        let Some(msg) = buf.get(..n) else {
            return ctl.fail(Step::Integrity, Errno::EMSGSIZE);
        };
        if let Err(e) = end.send(msg) {
            return ctl.fail(Step::Send, e);
        }
    }
}

/// How long the integrity check waits between looks at the peer's progress.
const CHECK_SLICE: Duration = Duration::from_millis(100);
/// A check whose peer received nothing new for this long lost bytes.
const CHECK_STALL: Duration = Duration::from_secs(1);

/// Throughput: the parent sends `ops` messages of `size` bytes per batch;
/// the batch ends when the peer acknowledges the last byte.
pub struct Throughput<E: End> {
    peer: Peer,
    tx: E,
    ctl: Arc<Shared<Ctl>>,
    msg: Buf,
    sent: u64,
    cpus: Cpus,
    /// For lossy transports (UDP): bytes allowed in flight.
    window: Option<u64>,
    notes: Vec<String>,
}

impl<E: End> Throughput<E> {
    /// Forks the sink with `rx`, checks that a sample transfer arrives
    /// intact, and returns the parent's side ready to time.
    pub fn start<R: End>(
        tx: E,
        mut rx: R,
        size: usize,
        cpus: Cpus,
        window: Option<u64>,
    ) -> Result<Throughput<E>, PrepareError> {
        let ctl = Arc::new(Shared::<Ctl>::new()?);
        ctl.progress
            .store(u32::from(window.is_some()), Ordering::SeqCst);
        let check = pattern(verify_len(size), size as u64);
        let mut buf = Buf::new(size)?;
        let c = ctl.clone();
        let check_len = check.len() as u64;
        let peer = Peer::spawn(cpus.peer, move || {
            sink(&mut rx, buf.as_mut_slice(), &c, check_len)
        })?;
        let mut t = Throughput {
            peer,
            tx,
            ctl,
            msg: Buf::from_slice(&pattern(size, 1))?,
            sent: 0,
            cpus,
            window,
            notes: Vec::new(),
        };
        t.check(&check, size)?;
        Ok(t)
    }

    /// Adds a caveat shown with the result.
    pub fn note(mut self, text: impl Into<String>) -> Self {
        self.notes.push(text.into());
        self
    }

    fn check(&mut self, data: &[u8], size: usize) -> Result<(), PrepareError> {
        let target = data.len() as u64;
        self.ctl.target.store(target, Ordering::SeqCst);
        let _pin = Pinned::to(self.cpus.parent)?;
        self.tx
            .begin()
            .map_err(|e| self.peer.explain("waking the peer", e, Some(&self.ctl)))?;
        for chunk in data.chunks(size) {
            let r = send_one(
                &mut self.tx,
                &self.ctl,
                self.window,
                &mut self.sent,
                &self.cpus,
                chunk,
            );
            if let Err(e) = r {
                return Err(send_failure(&self.tx, size, e, &self.peer, &self.ctl));
            }
        }
        self.tx
            .flush()
            .map_err(|e| self.peer.explain("flushing", e, Some(&self.ctl)))?;
        self.wait_check(target)?;
        self.tx.end();
        let got = self.ctl.received.load(Ordering::SeqCst);
        let sum = self.ctl.sum.load(Ordering::SeqCst);
        match stream_mismatch(data, got, sum) {
            Some(why) => Err(PrepareError::Fail(anyhow::anyhow!(why))),
            None => Ok(()),
        }
    }

    /// Waits for the check's acknowledgement; bytes that never arrive are
    /// an integrity failure once the peer has made no progress for a while.
    fn wait_check(&self, target: u64) -> Result<(), PrepareError> {
        let mut last = u64::MAX;
        let mut since = Instant::now();
        loop {
            match self.ctl.wait_ack(target, &self.cpus, CHECK_SLICE) {
                Ok(()) => return Ok(()),
                Err(Errno::ETIMEDOUT) => {
                    if let Some(why) = self.peer.exit_reason(Some(&self.ctl)) {
                        return Err(PrepareError::Fail(anyhow::anyhow!(
                            "waiting for the integrity check: {why}"
                        )));
                    }
                    let got = self.ctl.received.load(Ordering::SeqCst);
                    if got != last {
                        (last, since) = (got, Instant::now());
                    } else if since.elapsed() >= CHECK_STALL {
                        return Err(PrepareError::Fail(anyhow::anyhow!(
                            "integrity check failed: sent {target} bytes, the peer received {got} and nothing more for {} s: bytes were lost",
                            CHECK_STALL.as_secs()
                        )));
                    }
                }
                Err(e) => {
                    return Err(PrepareError::Fail(self.peer.explain(
                        "waiting for the integrity check",
                        e,
                        Some(&self.ctl),
                    )));
                }
            }
        }
    }
}

/// Sends one message of a throughput benchmark, first waiting for room in
/// the window if there is one; counts it in `sent`.
#[inline]
fn send_one<E: End>(
    tx: &mut E,
    ctl: &Ctl,
    window: Option<u64>,
    sent: &mut u64,
    cpus: &Cpus,
    msg: &[u8],
) -> Result<(), Errno> {
    if let Some(w) = window {
        let limit = w.saturating_sub(msg.len() as u64);
        let s = *sent;
        let in_flight = || s - ctl.received.load(Ordering::SeqCst).min(s);
        if in_flight() > limit {
            ctl.credit.wait(
                Before::Poll(super::peer::ACK_SPIN_POLLS, super::peer::spin_of(cpus)),
                Some(STALL_LIMIT),
                || in_flight() <= limit,
            )?;
        }
    }
    tx.send(msg)?;
    *sent += msg.len() as u64;
    Ok(())
}

impl<E: End> Timed for Throughput<E> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let _pin = Pinned::to(self.cpus.parent)?;
        self.tx
            .begin()
            .map_err(|e| self.peer.explain("waking the peer", e, Some(&self.ctl)))?;
        let size = self.msg.as_slice().len() as u64;
        let target = self.sent + ops * size;
        self.ctl.target.store(target, Ordering::SeqCst);
        let Throughput {
            tx,
            ctl,
            msg,
            sent,
            cpus,
            window,
            ..
        } = self;
        let start = Instant::now();
        let mut res = Ok(());
        for _ in 0..ops {
            res = send_one(tx, ctl, *window, sent, cpus, msg.as_slice());
            if res.is_err() {
                break;
            }
        }
        let res = res
            .and_then(|()| tx.flush())
            .and_then(|()| ctl.wait_ack(target, cpus, STALL_LIMIT));
        let took = start.elapsed();
        tx.end();
        res.map_err(|e| {
            self.peer
                .explain("streaming to the peer", e, Some(&self.ctl))
        })?;
        Ok(took)
    }

    fn warnings(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(self.cpus.details())
    }
}

/// Most per-operation times kept from one batch: every operation is timed,
/// and a long batch keeps every k-th time (a systematic sample, unbiased for
/// quantiles), so a fast round trip at the thorough profile keeps a few MB,
/// not hundreds.
pub const MAX_OP_TIMES_PER_BATCH: u64 = 4096;

/// Keep every `op_time_stride(ops)`-th per-operation time of a batch.
pub fn op_time_stride(ops: u64) -> u64 {
    ops.div_ceil(MAX_OP_TIMES_PER_BATCH).max(1)
}

/// Messages sent (and compared) by the round-trip integrity check.
const ECHO_CHECKS: usize = 4;

/// Round-trip latency: the parent sends a message and waits for the echo;
/// every round trip is timed, for p99 and the bimodality flag.
pub struct RoundTrip<E: End> {
    peer: Peer,
    end: E,
    ctl: Arc<Shared<Ctl>>,
    msg: Buf,
    reply: Buf,
    cpus: Cpus,
    times: Vec<f64>,
    notes: Vec<String>,
}

impl<E: End> RoundTrip<E> {
    /// Forks the echoing peer with `far`, checks that messages come back
    /// intact, and returns the parent's side ready to time.
    pub fn start<R: End>(
        end: E,
        mut far: R,
        size: usize,
        cpus: Cpus,
    ) -> Result<RoundTrip<E>, PrepareError> {
        let ctl = Arc::new(Shared::<Ctl>::new()?);
        let mut buf = Buf::new(size)?;
        let c = ctl.clone();
        let peer = Peer::spawn(cpus.peer, move || echo(&mut far, buf.as_mut_slice(), &c))?;
        let mut t = RoundTrip {
            peer,
            end,
            ctl,
            msg: Buf::from_slice(&pattern(size, 1))?,
            reply: Buf::new(size)?,
            cpus,
            times: Vec::new(),
            notes: Vec::new(),
        };
        t.check(size)?;
        Ok(t)
    }

    /// Adds a caveat shown with the result.
    pub fn note(mut self, text: impl Into<String>) -> Self {
        self.notes.push(text.into());
        self
    }

    fn check(&mut self, size: usize) -> Result<(), PrepareError> {
        let _pin = Pinned::to(self.cpus.parent)?;
        let data = pattern(size * ECHO_CHECKS, 0x5eed + size as u64);
        self.end
            .begin()
            .map_err(|e| self.peer.explain("waking the peer", e, Some(&self.ctl)))?;
        for sent in data.chunks(size) {
            if let Err(e) = self.end.send(sent) {
                return Err(send_failure(&self.end, size, e, &self.peer, &self.ctl));
            }
            let n = recv_message(&mut self.end, self.reply.as_mut_slice()).map_err(|e| {
                self.peer
                    .explain("receiving the integrity-check echo", e, Some(&self.ctl))
            })?;
            let got = self.reply.as_slice().get(..n).unwrap_or(&[]);
            if let Some(why) = echo_mismatch(sent, got) {
                return Err(PrepareError::Fail(anyhow::anyhow!(why)));
            }
        }
        self.end.end();
        Ok(())
    }
}

impl<E: End> Timed for RoundTrip<E> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let _pin = Pinned::to(self.cpus.parent)?;
        self.end
            .begin()
            .map_err(|e| self.peer.explain("waking the peer", e, Some(&self.ctl)))?;
        let stride = op_time_stride(ops);
        self.times.reserve((ops / stride) as usize + 1);
        let size = self.msg.as_slice().len();
        let start = Instant::now();
        let mut last = start;
        let mut res = Ok(());
        for i in 0..ops {
            res = self.end.send(self.msg.as_slice()).and_then(|()| {
                match recv_message(&mut self.end, self.reply.as_mut_slice())? {
                    n if n == size => Ok(()),
                    0 => Err(Errno::EPIPE),
                    _ => Err(Errno::EMSGSIZE),
                }
            });
            if res.is_err() {
                break;
            }
            let now = Instant::now();
            if i % stride == 0 {
                self.times.push((now - last).as_nanos() as f64);
            }
            last = now;
        }
        self.end.end();
        res.map_err(|e| {
            self.peer
                .explain("round trip to the peer", e, Some(&self.ctl))
        })?;
        Ok(last - start)
    }

    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.times)
    }

    fn warnings(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(self.cpus.details())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::peer::Placement;
    use crate::suites::ipc::pipe::FdEnd;

    fn same_cpu() -> Cpus {
        let c = crate::harness::affinity::allowed_cpus()[0];
        Cpus {
            placement: Placement::Same,
            parent: c,
            peer: c,
            same_core: true,
            class: None,
        }
    }

    /// A test-only corrupting transport: wraps a working end and drops one
    /// byte of the stream (or flips one, for messages that must keep their size).
    struct Corrupt<E: End> {
        inner: E,
        sent: u64,
        flip: bool,
    }

    impl<E: End> End for Corrupt<E> {
        fn datagram(&self) -> bool {
            self.inner.datagram()
        }
        fn send(&mut self, msg: &[u8]) -> Result<(), Errno> {
            let mut bad = msg.to_vec(); // test only: allocation is fine here
            if self.sent == 0 && !bad.is_empty() {
                if self.flip {
                    bad[0] ^= 0x40;
                } else {
                    bad.remove(0);
                }
            }
            self.sent += msg.len() as u64;
            self.inner.send(&bad)
        }
        fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
            self.inner.recv(buf)
        }
    }

    fn reason(e: PrepareError) -> String {
        match e {
            PrepareError::Fail(e) => format!("{e:#}"),
            PrepareError::Skip(s) => format!("skip: {s}"),
        }
    }

    #[test]
    fn intact_transport_passes_and_runs() {
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        let (tx, rx) = FdEnd::pipe().unwrap();
        let mut t = Throughput::start(tx, rx, 4096, same_cpu(), None).unwrap();
        assert!(t.run(10).unwrap() > Duration::ZERO);
        let (a, b) = FdEnd::pipe_duplex().unwrap();
        let mut r = RoundTrip::start(a, b, 64, same_cpu()).unwrap();
        assert!(r.run(5).unwrap() > Duration::ZERO);
        let times = r.take_op_times();
        assert_eq!(times.len(), 5);
        assert_eq!(op_time_stride(5), 1);
        assert_eq!(op_time_stride(MAX_OP_TIMES_PER_BATCH * 3), 3);
        assert!(10_000_000 / op_time_stride(10_000_000) <= MAX_OP_TIMES_PER_BATCH);
        assert!(times.iter().all(|&t| t > 0.0));
    }

    /// Two different CPUs when the machine has them (else one).
    fn two_cpus() -> Cpus {
        let all = crate::harness::affinity::allowed_cpus();
        let (a, b) = (all[0], *all.last().unwrap());
        Cpus {
            placement: if a == b {
                Placement::Same
            } else {
                Placement::Cross
            },
            parent: a,
            peer: b,
            same_core: a == b,
            class: None,
        }
    }

    #[test]
    fn rings_carry_bursts_intact_across_wraparound() {
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        use crate::suites::ipc::shm::{Wake, ring_pair};
        const SIZE: usize = 1000; // odd size: copies wrap at unaligned offsets
        const BURST: usize = 200; // 200 KB in flight: the 256 KiB ring nearly fills
        for wake in [Wake::Spin, Wake::Futex] {
            let cpus = two_cpus();
            let (mut a, mut b) = ring_pair(SIZE, wake, &cpus, true).unwrap();
            let ctl = Arc::new(Shared::<Ctl>::new().unwrap());
            let c = ctl.clone();
            let mut buf = Buf::new(SIZE).unwrap();
            let _peer =
                Peer::spawn(cpus.peer, move || echo(&mut b, buf.as_mut_slice(), &c)).unwrap();
            let _pin = Pinned::to(cpus.parent).unwrap();
            a.begin().unwrap();
            let mut reply = vec![0u8; SIZE];
            for round in 0..4u64 {
                let data = pattern(SIZE * BURST, round);
                for m in data.chunks(SIZE) {
                    a.send(m).unwrap();
                }
                for (i, m) in data.chunks(SIZE).enumerate() {
                    assert!(recv_exact(&mut a, &mut reply).unwrap());
                    assert!(reply == m, "{wake:?}: round {round}, message {i} differs");
                }
            }
            a.end();
        }
    }

    /// Unwraps a set-up, or says the kernel's reason for a skip (None).
    fn or_skip<T>(r: Result<T, PrepareError>) -> Option<T> {
        match r {
            Ok(t) => Some(t),
            Err(PrepareError::Skip(why)) => {
                eprintln!("skipped: {why}");
                None
            }
            Err(PrepareError::Fail(e)) => panic!("{e:#}"),
        }
    }

    #[test]
    fn the_newer_mechanisms_pass_the_integrity_check_both_ways() {
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        use crate::suites::ipc::{cma, memfd, shm, sysv};
        for cpus in [same_cpu(), two_cpus()] {
            for dir in [cma::Dir::Read, cma::Dir::Write] {
                if let Some((a, b)) = or_skip(cma::cma_pair(dir, &cpus, false)) {
                    let mut t = Throughput::start(a, b, 64 << 10, cpus, None).unwrap();
                    assert!(t.run(8).unwrap() > Duration::ZERO, "{dir:?}");
                }
                if let Some((a, b)) = or_skip(cma::cma_pair(dir, &cpus, true)) {
                    let mut r = RoundTrip::start(a, b, 4096, cpus).unwrap();
                    assert!(r.run(8).unwrap() > Duration::ZERO, "{dir:?}");
                }
            }
            if let Some((a, b)) = or_skip(sysv::msg_pair(512)) {
                let mut t = Throughput::start(a, b, 512, cpus, None).unwrap();
                assert!(t.run(50).unwrap() > Duration::ZERO);
            }
            if let Some((a, b)) = or_skip(sysv::msg_pair(64)) {
                let mut r = RoundTrip::start(a, b, 64, cpus).unwrap();
                assert!(r.run(8).unwrap() > Duration::ZERO);
            }
            let ring = shm::ring_pair_in(shm::Backing::SysV, 4096, shm::Wake::Futex, &cpus, true);
            if let Some((a, b)) = or_skip(ring) {
                let mut r = RoundTrip::start(a, b, 4096, cpus).unwrap();
                assert!(r.run(8).unwrap() > Duration::ZERO);
            }
            if let Some((a, b, w)) = or_skip(memfd::pass_pair(64 << 10)) {
                let mut t = Throughput::start(a, b, 64 << 10, cpus, Some(w)).unwrap();
                assert!(t.run(8).unwrap() > Duration::ZERO);
            }
        }
    }

    /// Why a throughput check over a pipe whose sender drops a byte (or
    /// flips one, with `flip`) fails.
    fn throughput_failure(flip: bool) -> String {
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        let (tx, rx) = FdEnd::pipe().unwrap();
        let bad = Corrupt {
            inner: tx,
            sent: 0,
            flip,
        };
        reason(
            Throughput::start(bad, rx, 512, same_cpu(), None)
                .err()
                .unwrap(),
        )
    }

    #[test]
    fn throughput_check_fails_on_a_transport_that_drops_a_byte() {
        let err = throughput_failure(false);
        assert!(err.contains("integrity check failed"), "{err}");
    }

    #[test]
    fn throughput_check_fails_on_a_transport_that_flips_a_byte() {
        let err = throughput_failure(true);
        assert!(err.contains("checksum mismatch"), "{err}");
    }

    #[test]
    fn round_trip_check_fails_on_a_corrupting_transport() {
        // Other suites' tests count this process's children.
        let _children = crate::os::child::test_lock();
        let (a, b) = FdEnd::pipe_duplex().unwrap();
        let bad = Corrupt {
            inner: a,
            sent: 0,
            flip: true,
        };
        let err = reason(RoundTrip::start(bad, b, 64, same_cpu()).err().unwrap());
        assert!(err.contains("differs at byte 0"), "{err}");
    }
}
