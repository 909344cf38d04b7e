//! The responder of the net benchmarks: `opcost serve` on another host,
//! and the same code inside opcost for the loopback and veth paths.
//!
//! Why it is careful: it listens on a network. Every connection must show
//! the token (control) or the session key (data) before anything else; a
//! request is one bounded line read under a timeout; only the net tests'
//! responders exist (nothing runs a command or touches a file); each
//! session is capped in time and bytes; at most `max_clients` sessions run
//! at once and the rest are turned away at once, so memory stays bounded
//! however many connections arrive. Refusals are logged with the reason.
//!
//! A connection still sending its request is not a session yet: it waits
//! in a handshake slot of its own (at most [`PENDING_PER_CLIENT`] per
//! session slot) and must finish its request line within one total
//! deadline, however its bytes arrive, so a client trickling a byte a
//! second is closed at the deadline and never holds a session slot that a
//! real client needs. When every handshake slot is taken, a newcomer is
//! not refused: the oldest incomplete handshake is shed (told it was, and
//! closed), as nginx and HAProxy drop their oldest idle connection. A
//! real client sends its request as soon as it connects and so finishes
//! long before it is the oldest, while connections that never finish are
//! shed one by one, however fast they are reopened; the slots keep memory
//! and descriptors bounded (two descriptors a slot).

use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{setsockopt, sockopt};

use super::dgram::Receiver;
use super::proto::{
    KEY_LEN, LineError, Reply, Request, Tally, Test, random_key, read_key, read_line,
};

/// What the server allows.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Sessions served at once; more are refused.
    pub max_clients: usize,
    /// Longest session.
    pub max_secs: u64,
    /// Most bytes moved in one session.
    pub max_bytes: u64,
    /// Exit after this long without any connection (None: never).
    pub idle: Option<Duration>,
    /// Longest wait for a request line or a data connection's key.
    pub handshake: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_clients: 8,
            max_secs: 300,
            max_bytes: 256 << 30,
            idle: Some(Duration::from_secs(600)),
            handshake: Duration::from_secs(5),
        }
    }
}

/// Server settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The token every session must present.
    pub token: String,
    /// Caps and timeouts.
    pub limits: Limits,
    /// This machine's description, sent in answer to `hello`.
    pub host: Option<serde_json::Value>,
    /// Log refusals and sessions to standard error (`opcost serve`).
    pub log: bool,
}

/// A listening server; [`Server::run`] serves until stopped or idle.
pub struct Server {
    listener: TcpListener,
    cfg: Arc<Config>,
    stop: Arc<AtomicBool>,
}

/// Handshake slots per session slot: connections that may be reading
/// their request line at once, each closed at the handshake deadline.
pub const PENDING_PER_CLIENT: usize = 8;

/// A connection in its handshake: a handle on it to shed it, and whether
/// it was.
struct Entry {
    id: u64,
    stream: TcpStream,
    shed: Arc<AtomicBool>,
}

/// The connections still sending their request, oldest first.
#[derive(Default)]
struct Handshakes {
    queue: std::sync::Mutex<std::collections::VecDeque<Entry>>,
    next: AtomicU64,
    /// Connections shed since the last report (see [`Handshakes::shed_report`]).
    shed: AtomicU64,
}

/// A connection's place among the [`Handshakes`], given up on drop.
struct Pending {
    handshakes: Arc<Handshakes>,
    id: u64,
    shed: Arc<AtomicBool>,
}

impl Pending {
    /// True when the connection was shed for a newer one.
    fn was_shed(&self) -> bool {
        self.shed.load(Ordering::SeqCst)
    }
}

impl Handshakes {
    fn queue(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<Entry>> {
        // A panic elsewhere leaves the queue itself consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connections in their handshake now.
    fn len(&self) -> usize {
        self.queue().len()
    }

    /// Admits `conn` (through `handle`, a second descriptor of it); when
    /// `max` are in their handshake already, sheds the oldest first: tells
    /// it why and closes it (its thread then sees the end of its input).
    fn admit(self: &Arc<Self>, handle: TcpStream, max: usize) -> Pending {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let shed = Arc::new(AtomicBool::new(false));
        let oldest = {
            let mut q = self.queue();
            let oldest = (q.len() >= max.max(1)).then(|| q.pop_front()).flatten();
            q.push_back(Entry {
                id,
                stream: handle,
                shed: shed.clone(),
            });
            oldest
        };
        if let Some(old) = oldest {
            old.shed.store(true, Ordering::SeqCst);
            self.shed.fetch_add(1, Ordering::Relaxed);
            // A connection that was sent nothing yet has room in its send
            // buffer for the line: this write does not wait.
            let _ = (&old.stream).write_all(&reply_line(&refusal(
                "busy: shed as the oldest incomplete request, for a newer connection; try again",
            )));
            let _ = old.stream.shutdown(Shutdown::Both);
        }
        Pending {
            handshakes: self.clone(),
            id,
            shed,
        }
    }

    /// The connections shed since the last call, for one log line a
    /// second at most (a crowd reopening its connections is shed
    /// thousands of times a second, and a log written per shed would
    /// block the server on a standard error nobody reads).
    fn shed_report(&self) -> u64 {
        self.shed.swap(0, Ordering::Relaxed)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut q = self.handshakes.queue();
        if let Some(i) = q.iter().position(|e| e.id == self.id) {
            q.remove(i);
        }
    }
}

/// A slot taken in a counter (sessions), given back on drop.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// Takes a slot of `counter` when fewer than `max` are taken.
    fn take(counter: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(counter.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The state of a running server: sessions being served, and connections
/// still in their handshake.
struct Slots {
    active: Arc<AtomicUsize>,
    pending: Arc<Handshakes>,
}

impl Server {
    /// A server on `listener` (already bound) with `cfg`.
    pub fn new(listener: TcpListener, cfg: Config) -> Server {
        Server {
            listener,
            cfg: Arc::new(cfg),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag that stops [`Server::run`] (checked a few times a second).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts and serves sessions until the stop flag is set or no
    /// connection came for the idle limit; waits for running sessions.
    pub fn run(self) -> anyhow::Result<()> {
        let slots = Arc::new(Slots {
            active: Arc::new(AtomicUsize::new(0)),
            pending: Arc::new(Handshakes::default()),
        });
        let max_pending = self
            .cfg
            .limits
            .max_clients
            .saturating_mul(PENDING_PER_CLIENT);
        let mut last = Instant::now();
        let mut last_shed_report = Instant::now();
        let mut sessions: Vec<JoinHandle<()>> = Vec::new();
        loop {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some(idle) = self.cfg.limits.idle
                && slots.active.load(Ordering::SeqCst) + slots.pending.len() == 0
                && last.elapsed() >= idle
            {
                self.log(format_args!(
                    "no connection for {} s: exiting",
                    idle.as_secs()
                ));
                break;
            }
            let mut fds = [PollFd::new(self.listener.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(20u16)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e).context("waiting for connections"),
            }
            let (conn, from) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) => {
                    self.log(format_args!("accept failed: {e}"));
                    continue;
                }
            };
            last = Instant::now();
            sessions.retain(|h| !h.is_finished());
            let handle = match conn.try_clone() {
                Ok(h) => h,
                Err(e) => {
                    self.log(format_args!("refused {from}: {e}"));
                    continue;
                }
            };
            let handshake = slots.pending.admit(handle, max_pending);
            if last_shed_report.elapsed() >= Duration::from_secs(1) {
                last_shed_report = Instant::now();
                let n = slots.pending.shed_report();
                if n > 0 {
                    self.log(format_args!(
                        "shed {n} connections still sending their request, the oldest of {max_pending} each time, for newer ones (latest for {from})"
                    ));
                }
            }
            let cfg = self.cfg.clone();
            let stop = self.stop.clone();
            let slots = slots.clone();
            let spawned = std::thread::Builder::new()
                .name("opcost-session".into())
                .stack_size(256 << 10)
                .spawn(move || {
                    session(conn, from, &cfg, &stop, &slots, handshake);
                });
            match spawned {
                Ok(h) => sessions.push(h),
                Err(e) => self.log(format_args!("refused {from}: no thread ({e})")),
            }
        }
        self.stop.store(true, Ordering::SeqCst);
        for h in sessions {
            let _ = h.join();
        }
        Ok(())
    }

    fn log(&self, msg: std::fmt::Arguments) {
        if self.cfg.log {
            // A closed standard error must not stop the server.
            let _ = writeln!(std::io::stderr(), "opcost serve: {msg}");
        }
    }

    /// Runs the server in a thread (inside network namespace `ns` when
    /// given); dropping the handle stops it and waits for it.
    pub fn spawn(self, ns: Option<&OwnedFd>) -> anyhow::Result<Handle> {
        let stop = self.stop.clone();
        let ns = ns.map(|n| n.try_clone()).transpose()?;
        let thread = std::thread::Builder::new()
            .name("opcost-responder".into())
            .spawn(move || -> anyhow::Result<()> {
                if let Some(ns) = ns {
                    nix::sched::setns(ns.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
                        .context("entering the server's network namespace")?;
                }
                self.run()
            })?;
        Ok(Handle {
            stop,
            thread: Some(thread),
        })
    }
}

/// A server running in a thread of this process.
pub struct Handle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn refusal(why: &str) -> Reply {
    Reply {
        ok: false,
        error: Some(why.to_string()),
        ..Reply::default()
    }
}

fn reply_line(r: &Reply) -> Vec<u8> {
    let mut v = serde_json::to_vec(r).unwrap_or_else(|_| b"{\"ok\":false}".to_vec());
    v.push(b'\n');
    v
}

/// What one session shares with the threads serving its data connections.
struct Run {
    deadline: Instant,
    max_bytes: u64,
    stop: Arc<AtomicBool>,
    server_stop: Arc<AtomicBool>,
    key: String,
    handshake: Duration,
}

impl Run {
    fn over(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self.server_stop.load(Ordering::Relaxed)
            || Instant::now() >= self.deadline
    }
}

/// Reads the request line of a control connection, which must be complete
/// by `deadline` however its bytes arrive (each read waits only for the
/// time left).
fn read_request(
    reader: &mut BufReader<&TcpStream>,
    deadline: Instant,
) -> Result<String, LineError> {
    use std::io::BufRead;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(LineError::Deadline);
        }
        reader.get_ref().set_read_timeout(Some(left))?;
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if timed_out(&e) => return Err(LineError::Deadline),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if chunk.is_empty() {
            return Err(LineError::Closed);
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        buf.extend_from_slice(&chunk[..take]);
        reader.consume(take);
        // The line without its newline may not exceed MAX_LINE.
        if buf.len() - usize::from(done) > super::proto::MAX_LINE {
            return Err(LineError::TooLong(super::proto::MAX_LINE));
        }
        if done {
            buf.pop();
            return String::from_utf8(buf).map_err(|_| LineError::NotText);
        }
    }
}

/// Serves one control connection: the request (under the handshake
/// deadline, in a handshake slot), then, in a session slot, its test.
fn session(
    conn: TcpStream,
    from: SocketAddr,
    cfg: &Config,
    server_stop: &Arc<AtomicBool>,
    slots: &Slots,
    handshake: Pending,
) {
    let log = |msg: std::fmt::Arguments| {
        if cfg.log {
            let _ = writeln!(std::io::stderr(), "opcost serve: {from}: {msg}");
        }
    };
    let _ = conn.set_write_timeout(Some(cfg.limits.handshake));
    let _ = conn.set_nodelay(true);
    let mut reader = BufReader::with_capacity(super::proto::MAX_LINE, &conn);
    let refuse = |why: String| {
        log(format_args!("refused: {why}"));
        let _ = (&conn).write_all(&reply_line(&refusal(&why)));
    };
    let line = match read_request(&mut reader, Instant::now() + cfg.limits.handshake) {
        Ok(l) => l,
        // Shed for a newer connection: counted by the accept loop.
        Err(_) if handshake.was_shed() => return,
        Err(LineError::Closed) => return log(format_args!("closed before a request")),
        Err(LineError::Deadline) => {
            return refuse(format!(
                "closed: no complete request within {:.0} s (sent too slowly)",
                cfg.limits.handshake.as_secs_f64()
            ));
        }
        Err(e) => return refuse(format!("bad request: {e}")),
    };
    drop(handshake);
    let _ = conn.set_read_timeout(Some(cfg.limits.handshake));
    let Some(_session) = Slot::take(&slots.active, cfg.limits.max_clients) else {
        return refuse(format!(
            "busy: too many clients ({} sessions already)",
            cfg.limits.max_clients
        ));
    };
    let req: Request = match serde_json::from_str(&line) {
        Ok(r) => r,
        Err(e) => return refuse(format!("malformed request: {e}")),
    };
    if req.token != cfg.token {
        return refuse("wrong token".to_string());
    }
    if let Some(why) = req.test.over_limit() {
        return refuse(format!("over limit: {why}"));
    }
    let local_ip = match conn.local_addr() {
        Ok(a) => a.ip(),
        Err(e) => return log(format_args!("no local address: {e}")),
    };
    let run = Arc::new(Run {
        deadline: Instant::now() + Duration::from_secs(cfg.limits.max_secs),
        max_bytes: cfg.limits.max_bytes,
        stop: Arc::new(AtomicBool::new(false)),
        server_stop: server_stop.clone(),
        key: random_key(),
        handshake: cfg.limits.handshake,
    });
    let ok = |port: Option<u16>, host: Option<serde_json::Value>| Reply {
        ok: true,
        error: None,
        port,
        key: port.map(|_| run.key.clone()),
        host,
        max_secs: cfg.limits.max_secs,
        max_bytes: cfg.limits.max_bytes,
    };
    let name = test_name(&req.test);
    let result = match req.test {
        Test::Hello => (&conn)
            .write_all(&reply_line(&ok(None, cfg.host.clone())))
            .map_err(anyhow::Error::from),
        test => serve_test(
            test,
            Control {
                ip: local_ip,
                conn: &conn,
                reader,
                run: &run,
                ok: &ok,
            },
        ),
    };
    run.stop.store(true, Ordering::SeqCst);
    match result {
        Ok(()) => log(format_args!("{name} done")),
        Err(e) => log(format_args!("{name} ended: {e:#}")),
    }
}

fn test_name(t: &Test) -> &'static str {
    match t {
        Test::Hello => "hello",
        Test::TcpSink { .. } => "tcp_sink",
        Test::TcpEcho { .. } => "tcp_echo",
        Test::TcpCrr { .. } => "tcp_crr",
        Test::UdpSink { .. } => "udp_sink",
    }
}

/// The control side of one test: the client's connection, what the
/// session allows and how the server says yes.
struct Control<'a> {
    /// The address the client reached, where the data side listens.
    ip: IpAddr,
    conn: &'a TcpStream,
    reader: BufReader<&'a TcpStream>,
    run: &'a Arc<Run>,
    ok: &'a dyn Fn(Option<u16>, Option<serde_json::Value>) -> Reply,
}

impl Control<'_> {
    /// Tells the client the data side's port.
    fn send_port(&self, port: u16) -> anyhow::Result<()> {
        (&*self.conn).write_all(&reply_line(&(self.ok)(Some(port), None)))?;
        Ok(())
    }

    /// A TCP listener for the data side, its port told to the client.
    fn listen(&self) -> anyhow::Result<TcpListener> {
        let listener = TcpListener::bind((self.ip, 0))?;
        self.send_port(listener.local_addr()?.port())?;
        Ok(listener)
    }

    /// Serves control lines ([`control_loop`]), each answered by `answer`.
    fn serve_lines(
        &mut self,
        answer: impl FnMut(&str) -> anyhow::Result<Tally>,
    ) -> anyhow::Result<()> {
        control_loop(&mut self.reader, self.conn, self.run, answer)
    }
}

/// Sets up the data side of `test`, answers with its port, and serves it
/// until the client closes the control connection or a cap is reached.
fn serve_test(test: Test, mut c: Control<'_>) -> anyhow::Result<()> {
    // Control lines may come seconds apart during a test.
    c.conn.set_read_timeout(Some(Duration::from_millis(50)))?;
    let run = c.run;
    match test {
        Test::UdpSink {
            size,
            sockets,
            batch,
        } => serve_udp_sink(size, sockets, batch, &mut c),
        Test::TcpSink { streams } => serve_tcp_sink(streams, &mut c),
        Test::TcpEcho { size } => {
            let listener = c.listen()?;
            let Some(s) = accept_keyed(&listener, run)? else {
                return Ok(());
            };
            s.set_nodelay(true)?;
            let handle = s.try_clone()?;
            let r = run.clone();
            let t = std::thread::spawn(move || echo(s, size as usize, &r));
            let res = c.serve_lines(|_| anyhow::bail!("unknown control line"));
            run.stop.store(true, Ordering::SeqCst);
            let _ = handle.shutdown(Shutdown::Both);
            let _ = t.join();
            res
        }
        Test::TcpCrr { size } => {
            let listener = c.listen()?;
            let r = run.clone();
            let t = std::thread::spawn(move || crr(listener, size as usize, &r));
            let res = c.serve_lines(|_| anyhow::bail!("unknown control line"));
            run.stop.store(true, Ordering::SeqCst);
            let _ = t.join();
            res
        }
        Test::Hello => Ok(()),
    }
}

/// Serves a UDP sink test: `sockets` receivers of `size`-byte datagrams,
/// counted until the client asks for the tally.
fn serve_udp_sink(size: u32, sockets: u32, batch: u32, c: &mut Control<'_>) -> anyhow::Result<()> {
    let run = c.run;
    let socks = udp_group(c.ip, sockets as usize)?;
    let port = socks[0].local_addr()?.port();
    // The tally looks at the sockets' queues through duplicates.
    let queues = socks
        .iter()
        .map(UdpSocket::try_clone)
        .collect::<std::io::Result<Vec<_>>>()?;
    let counters: Vec<Arc<Counters>> = (0..socks.len()).map(|_| Arc::default()).collect();
    let epoch = Instant::now();
    let mut threads = Vec::new();
    for (s, c) in socks.into_iter().zip(&counters) {
        let (run, c) = (run.clone(), c.clone());
        threads.push(std::thread::spawn(move || {
            udp_receive(s, size as usize, batch as usize, &c, epoch, &run)
        }));
    }
    c.send_port(port)?;
    let res = c.serve_lines(|line| {
        // `count QUIET_US [SENT]`: SENT, when given, ends the wait
        // as soon as every datagram sent has been counted.
        let mut words = line
            .strip_prefix("count")
            .ok_or_else(|| anyhow::anyhow!("unknown control line"))?
            .split_whitespace()
            .map(str::parse::<u64>);
        let malformed = || anyhow::anyhow!("malformed count line");
        let quiet_us = words
            .next()
            .ok_or_else(malformed)?
            .map_err(|_| malformed())?;
        let sent = words.next().transpose().map_err(|_| malformed())?;
        if words.next().is_some() {
            return Err(malformed());
        }
        Ok(tally_udp(
            &counters,
            &queues,
            Duration::from_micros(quiet_us.clamp(200, 1_000_000)),
            sent,
            run,
        ))
    });
    run.stop.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
    res
}

/// Serves a TCP sink test: `streams` connections whose bytes are counted
/// and thrown away, with a `sync` control line to wait for a byte count.
fn serve_tcp_sink(streams: u32, c: &mut Control<'_>) -> anyhow::Result<()> {
    let run = c.run;
    let listener = c.listen()?;
    let total = Arc::new(AtomicU64::new(0));
    let mut data = Vec::new();
    let mut threads = Vec::new();
    for _ in 0..streams {
        let Some(s) = accept_keyed(&listener, run)? else {
            break;
        };
        data.push(s.try_clone()?);
        let (run, total) = (run.clone(), total.clone());
        threads.push(std::thread::spawn(move || sink(s, &total, &run)));
    }
    let res = c.serve_lines(|line| {
        let want: u64 = line
            .strip_prefix("sync ")
            .ok_or_else(|| anyhow::anyhow!("unknown control line"))?
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("malformed sync line"))?;
        let t0 = Instant::now();
        while total.load(Ordering::Acquire) < want && !run.over() {
            if t0.elapsed() > Duration::from_secs(10) {
                anyhow::bail!("sync: {want} bytes never arrived");
            }
            std::thread::yield_now();
        }
        Ok(Tally {
            received: total.load(Ordering::Acquire),
            timed: 0,
            span_ns: 0,
            sockets_used: data.len() as u32,
        })
    });
    run.stop.store(true, Ordering::SeqCst);
    for s in &data {
        let _ = s.shutdown(Shutdown::Both);
    }
    for t in threads {
        let _ = t.join();
    }
    res
}

/// Reads control lines until the client closes the connection (the normal
/// end) or a cap is reached, answering each with `answer`'s tally.
fn control_loop(
    reader: &mut BufReader<&TcpStream>,
    conn: &TcpStream,
    run: &Run,
    mut answer: impl FnMut(&str) -> anyhow::Result<Tally>,
) -> anyhow::Result<()> {
    loop {
        if run.over() {
            let why = if Instant::now() >= run.deadline {
                "the session's time limit was reached"
            } else {
                "stopped"
            };
            let _ = (&*conn).write_all(&reply_line(&refusal(why)));
            anyhow::bail!("{why}");
        }
        let line = match read_line(reader) {
            Ok(l) => l,
            Err(LineError::Closed) => return Ok(()),
            Err(LineError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) => anyhow::bail!("control connection: {e}"),
        };
        let tally = answer(&line)?;
        let mut text = serde_json::to_vec(&tally)?;
        text.push(b'\n');
        (&*conn).write_all(&text)?;
    }
}

/// Accepts one data connection that starts with the session key; refuses
/// (and keeps waiting) for ones that do not. None when the session ends first.
fn accept_keyed(listener: &TcpListener, run: &Run) -> anyhow::Result<Option<TcpStream>> {
    let until = Instant::now() + run.handshake;
    while Instant::now() < until && !run.over() {
        let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        if poll(&mut fds, PollTimeout::from(20u16))? == 0 {
            continue;
        }
        let (mut s, _) = listener.accept()?;
        s.set_read_timeout(Some(run.handshake))?;
        match read_key(&mut s) {
            Ok(k) if k == run.key => {
                s.set_read_timeout(Some(Duration::from_millis(200)))?;
                return Ok(Some(s));
            }
            _ => continue,
        }
    }
    anyhow::bail!("no data connection with the session key arrived")
}

/// True for the errors a read with a timeout returns when nothing came.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Discards what arrives on `s`, counting bytes into `total`, within the caps.
fn sink(mut s: TcpStream, total: &AtomicU64, run: &Run) {
    let mut buf = vec![0u8; 256 << 10];
    while !run.over() {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if total.fetch_add(n as u64, Ordering::Release) + n as u64 > run.max_bytes {
                    return;
                }
            }
            Err(e) if timed_out(&e) => continue,
            Err(_) => return,
        }
    }
}

/// Echoes every `size`-byte message on `s`, within the caps.
fn echo(mut s: TcpStream, size: usize, run: &Run) {
    let mut buf = vec![0u8; size];
    let mut moved = 0u64;
    while !run.over() && moved <= run.max_bytes {
        let mut have = 0;
        while have < size {
            match s.read(&mut buf[have..]) {
                Ok(0) => return,
                Ok(n) => have += n,
                Err(e) if timed_out(&e) && !run.over() => continue,
                Err(_) => return,
            }
        }
        if s.write_all(&buf).is_err() {
            return;
        }
        moved += 2 * size as u64;
    }
}

/// Serves connect-request-response-close cycles, one connection at a time.
fn crr(listener: TcpListener, size: usize, run: &Run) {
    let mut buf = vec![0u8; KEY_LEN + size];
    let mut moved = 0u64;
    while !run.over() && moved <= run.max_bytes {
        let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(20u16)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(_) => return,
        }
        let Ok((mut s, _)) = listener.accept() else {
            continue;
        };
        let _ = s.set_nodelay(true);
        let _ = s.set_read_timeout(Some(run.handshake));
        if s.read_exact(&mut buf).is_err() || buf[..KEY_LEN] != *run.key.as_bytes() {
            continue;
        }
        let _ = s.write_all(&buf[KEY_LEN..]);
        moved += 2 * size as u64;
    }
}

/// Arrival counts of one receiving socket.
struct Counters {
    /// Datagrams received since the session began (only the receiving thread writes it).
    count: AtomicU64,
    /// `count` at the previous tally (only the tally writes it).
    tallied: AtomicU64,
    /// Datagrams of the first batch after a tally (they arrived before its timestamp).
    first_batch: AtomicU64,
    first_ns: AtomicU64,
    last_ns: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            count: AtomicU64::new(0),
            tallied: AtomicU64::new(0),
            first_batch: AtomicU64::new(0),
            first_ns: AtomicU64::new(u64::MAX),
            last_ns: AtomicU64::new(0),
        }
    }
}

/// `n` UDP sockets bound to one port of `ip` with SO_REUSEPORT.
fn udp_group(ip: IpAddr, n: usize) -> anyhow::Result<Vec<UdpSocket>> {
    let mut socks: Vec<UdpSocket> = Vec::new();
    let mut port = 0;
    for _ in 0..n {
        let domain = match ip {
            IpAddr::V4(_) => nix::sys::socket::AddressFamily::Inet,
            IpAddr::V6(_) => nix::sys::socket::AddressFamily::Inet6,
        };
        let fd = nix::sys::socket::socket(
            domain,
            nix::sys::socket::SockType::Datagram,
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
            None,
        )?;
        setsockopt(&fd, sockopt::ReusePort, &true)?;
        // The system's default receive buffer, as iperf3 and most servers
        // use: a deeper queue only holds more datagrams out of cache.
        let addr = nix::sys::socket::SockaddrStorage::from(SocketAddr::new(ip, port));
        nix::sys::socket::bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &addr)
            .with_context(|| format!("binding UDP {ip}:{port}"))?;
        let s = UdpSocket::from(fd);
        s.set_read_timeout(Some(Duration::from_millis(20)))?;
        port = s.local_addr()?.port();
        socks.push(s);
    }
    Ok(socks)
}

/// Counts datagrams arriving on `s` until the session ends.
fn udp_receive(s: UdpSocket, size: usize, batch: usize, c: &Counters, epoch: Instant, run: &Run) {
    let mut rx = Receiver::new(s, size, batch);
    let mut total = 0u64;
    while !run.over() && total.saturating_mul(size as u64) <= run.max_bytes {
        match rx.recv() {
            Ok(n) => {
                // Plain stores, no locked read-modify-write: only this
                // thread writes them, and tallies read them while the
                // sender is quiet.
                let now = epoch.elapsed().as_nanos() as u64;
                total += n as u64;
                c.count.store(total, Ordering::Relaxed);
                if c.first_ns.load(Ordering::Relaxed) == u64::MAX {
                    c.first_batch.store(n as u64, Ordering::Relaxed);
                    c.first_ns.store(now, Ordering::Relaxed);
                }
                c.last_ns.store(now, Ordering::Relaxed);
            }
            Err(e) if timed_out(&e) => continue,
            Err(_) => return,
        }
    }
}

/// How long a tally waits for the receiving threads to take datagrams
/// already queued on their sockets (they may be starved of CPU by other
/// load) before it counts what it has.
const QUEUED_WAIT: Duration = Duration::from_secs(2);

/// True when a datagram waits in `s`'s receive queue (FIONREAD gives the
/// size of the next one; every datagram the benchmarks send has a payload).
fn queued(s: &UdpSocket) -> bool {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through a valid pointer.
    let r = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(s), libc::FIONREAD, &mut n) };
    r == 0 && n > 0
}

/// Waits until every datagram sent (`sent`, when the client says) has been
/// counted, or until no datagram arrived for `quiet` while none waits in a
/// socket's queue (datagrams still in flight get `quiet`; queued ones are
/// waited for, up to [`QUEUED_WAIT`], as a starved receiving thread takes
/// them late), then returns and resets the counts since the previous tally.
fn tally_udp(
    counters: &[Arc<Counters>],
    queues: &[UdpSocket],
    quiet: Duration,
    sent: Option<u64>,
    run: &Run,
) -> Tally {
    let sum = || -> u64 {
        counters
            .iter()
            .map(|c| c.count.load(Ordering::Relaxed) - c.tallied.load(Ordering::Relaxed))
            .sum()
    };
    let started = Instant::now();
    let mut seen = sum();
    let mut still = Instant::now();
    while !run.over() && sent.is_none_or(|n| seen < n) {
        let waiting = queues.iter().any(queued) && started.elapsed() < QUEUED_WAIT;
        if still.elapsed() >= quiet && !waiting {
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
        let now = sum();
        if now != seen {
            seen = now;
            still = Instant::now();
        }
    }
    let mut t = Tally::default();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for c in counters {
        let now = c.count.load(Ordering::Relaxed);
        let n = now - c.tallied.swap(now, Ordering::Relaxed);
        let fb = c.first_batch.swap(0, Ordering::Relaxed);
        let f = c.first_ns.swap(u64::MAX, Ordering::Relaxed);
        let l = c.last_ns.swap(0, Ordering::Relaxed);
        if n > 0 {
            t.received += n;
            t.timed += n - fb.min(n);
            t.sockets_used += 1;
            first = first.min(f);
            last = last.max(l);
        }
    }
    t.span_ns = last.saturating_sub(first);
    t
}
