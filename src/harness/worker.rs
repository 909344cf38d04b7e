//! Rounds in processes of their own.
//!
//! Why: two executions of the same program can differ by more than two
//! stretches of time within one (Kalibera & Jones: variation lives at
//! several levels, and an interval must come from the top one). Where a
//! process's code, stack, heap and physical pages land, and the state it
//! starts from, hold for its whole life; rounds inside one process cannot
//! see that level, so two runs disagreed by more than either run's
//! interval said. Measured on a 2-vCPU KVM guest (4 quick runs of 8 rounds
//! each way): with a process per round the runs' spread was 2.0× the
//! rounds' standard error, against 3.7× with every round in one process.
//!
//! So a run measures round `k` of every benchmark in worker `k`: opcost
//! executed again ([`WORKER_ARG`]), which builds the same benchmarks and
//! measures the rounds the run asks of it, one at a time. The run (the
//! parent) keeps the order, the judging of slow rounds and the results; a
//! worker only measures, and takes the canary on either side of each round
//! (the run's own process, just woken from waiting, reads slow). The
//! spread of the rounds then holds the variation between executions, and
//! the interval with it.
//!
//! Protocol: the parent writes one line of hello (opaque here: the command
//! that starts workers builds and reads it), then one JSON [`Request`] per
//! line; the worker answers each with one JSON [`Reply`] line. End of input
//! ends the worker. Workers sit in their own process group: a stop (Ctrl-C)
//! reaches the parent, which passes it on to the worker measuring (one
//! `SIGINT`: finish the sample, answer). A second Ctrl-C aborts the parent,
//! which first sends every worker the second `SIGINT` that aborts it too
//! ([`abort_all`]).

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use super::round::{
    Canaries, Event, RoundCtx, RunOptions, RunOutcome, Skipped, Track, budget_left, drop_out,
    new_tracks, run_round,
};
use super::{Bench, Ctx, Round};

/// The first argument that makes opcost a round worker.
pub const WORKER_ARG: &str = "__round-worker";

/// How a run starts its workers: the executable and the hello line they
/// are given (everything they need to build the same benchmarks).
#[derive(Clone, Debug)]
pub struct WorkerCmd {
    /// The opcost executable.
    pub exe: PathBuf,
    /// The first line each worker reads (one line of JSON).
    pub hello: String,
    /// What the workers start under (`ab`'s setting of a side).
    pub launch: Launch,
}

/// What a worker is started under besides its hello: environment
/// variables and a wrapper (`ab`'s settings; a CPU travels in the hello).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Launch {
    /// Environment variables set for the worker.
    pub env: Vec<(String, String)>,
    /// A shell command line the worker runs under: opcost's path and its
    /// arguments are appended (`nice -n 10`, `taskset -c 2`, a script
    /// ending in `exec "$@"`).
    pub wrap: Option<String>,
}

impl Launch {
    /// The command that runs `exe` with `args` under this launch.
    pub fn command(&self, exe: &std::path::Path) -> Command {
        let mut c = match &self.wrap {
            Some(w) => {
                let mut c = Command::new("/bin/sh");
                c.arg("-c")
                    .arg(format!("{w} \"$@\""))
                    .arg("opcost-wrapped")
                    .arg(exe);
                c
            }
            None => Command::new(exe),
        };
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }
}

/// Measure round `pass` of the benchmarks at these positions of the run
/// (none: only take the canary).
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    /// Positions of the group's members in the run's list of benchmarks.
    pub group: Vec<usize>,
    /// The round.
    pub pass: usize,
    /// Seconds since the run started.
    pub at: f64,
}

/// What one round left of one benchmark.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Delta {
    /// Its position in the run.
    pub track: usize,
    /// Set when it was skipped or failed in this round.
    pub skipped: Option<Skipped>,
    /// The round, when it produced samples.
    pub round: Option<Round>,
    /// The round's samples, ns per operation.
    pub samples_ns: Vec<f64>,
    /// Per-operation timings it recorded.
    pub op_times: Vec<f64>,
    /// Its warnings.
    pub warnings: Vec<String>,
    /// Its details, when it gave any.
    pub details: Option<serde_json::Value>,
    /// The round was cut short by a stop.
    pub cut: bool,
}

/// A worker's answer to a [`Request`].
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Reply {
    /// One per member of the group.
    pub deltas: Vec<Delta>,
    /// Progress: (benchmark, seconds of its budget spent), in order.
    pub finished: Vec<(String, f64)>,
    /// The worker's empty-loop overhead, ns, once measured.
    pub overhead: Option<f64>,
    /// The stability canary, ns, taken by the worker just before the round.
    #[serde(default)]
    pub canary_before: Option<f64>,
    /// The canary taken just after it (absent for a canary-only request).
    #[serde(default)]
    pub canary_after: Option<f64>,
}

/// Pids of the workers alive now, for [`abort_all`].
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<i32>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long [`abort_all`] waits for the workers to remove their scratch
/// files and exit (a write-back flood's file can take a moment to unlink)
/// before it kills them and removes what they left itself.
const ABORT_WAIT: Duration = Duration::from_secs(5);

/// How often [`abort_all`] sends a worker that has not exited `SIGINT`
/// again: two signals sent close together can arrive as one, which a
/// worker reads as the first Ctrl-C (finish the round), not the second.
const ABORT_RESEND: Duration = Duration::from_millis(100);

/// After this long, [`abort_all`] says on standard error what it waits for.
const ABORT_SAY_AFTER: Duration = Duration::from_secs(1);

/// Aborts every worker (the exit path of a second Ctrl-C, which skips
/// destructors): the second `SIGINT` a worker sees removes its scratch
/// files and exits it, so each gets two, a moment apart, and more while it
/// lives. No worker starts after it. Returns once every worker has exited,
/// so that the run, which exits next, never leaves before its workers'
/// files are gone: one still alive after [`ABORT_WAIT`] is killed, and
/// [`crate::harness::scratch::remove_all`] then sweeps what it left.
pub fn abort_all() {
    let pids = {
        let live = live();
        ABORTING.store(true, Ordering::SeqCst);
        live.clone()
    };
    end_workers(pids, ABORT_WAIT);
}

/// Sends the workers `pids` `SIGINT` until they exit, for up to `wait`,
/// then kills and reaps those left, and returns them.
fn end_workers(pids: Vec<i32>, wait: Duration) -> Vec<i32> {
    let start = Instant::now();
    let mut left = pids;
    let mut signals = 0u32;
    let mut next_signal = start;
    let mut said = false;
    while !left.is_empty() && start.elapsed() < wait {
        if Instant::now() >= next_signal {
            for &p in &left {
                let _ = kill(Pid::from_raw(p), Signal::SIGINT);
            }
            signals += 1;
            // The first two 30 ms apart, then every ABORT_RESEND.
            next_signal = Instant::now()
                + if signals == 1 {
                    Duration::from_millis(30)
                } else {
                    ABORT_RESEND
                };
        }
        // Reaped here or by its owner (ECHILD): gone. The run exits next,
        // so taking the status from the owner's `wait` costs nothing.
        left.retain(|&p| {
            matches!(
                waitpid(Pid::from_raw(p), Some(WaitPidFlag::WNOHANG)),
                Ok(WaitStatus::StillAlive)
            )
        });
        if !left.is_empty() && !said && start.elapsed() >= ABORT_SAY_AFTER {
            eprintln!("opcost: waiting for the round workers to remove their files");
            said = true;
        }
        if !left.is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for &p in &left {
        // Killed outright, its scratch directories' locks are free for the
        // sweep; reaped, so they are free before it runs.
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        let _ = waitpid(Pid::from_raw(p), None);
    }
    left
}

/// Set by [`abort_all`]: no worker starts after it.
static ABORTING: AtomicBool = AtomicBool::new(false);

/// One worker process.
struct Worker {
    child: Child,
    /// Its standard input; closing it ends the worker.
    to: Option<ChildStdin>,
    from: BufReader<ChildStdout>,
    /// Its number in the run, from 1 (a worker started again gets a new one).
    serial: u32,
}

impl Worker {
    /// Starts `cmd` as a worker in a process group of its own.
    fn spawn(cmd: &WorkerCmd, serial: u32) -> anyhow::Result<Worker> {
        // Started and listed under the list's lock, so abort_all never
        // misses one started but not yet listed.
        let mut live = live();
        if ABORTING.load(Ordering::SeqCst) {
            bail!("the run is being aborted");
        }
        let mut child = cmd
            .launch
            .command(&cmd.exe)
            .arg(WORKER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {}", cmd.exe.display()))?;
        live.push(child.id() as i32);
        drop(live);
        let (Some(mut to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both ends are piped");
        };
        // Dropped here, a failed worker is reaped and unlisted.
        let mut w = Worker {
            child,
            to: None,
            from: BufReader::new(from),
            serial,
        };
        writeln!(to, "{}", cmd.hello)
            .and_then(|()| to.flush())
            .context("starting a worker")?;
        w.to = Some(to);
        Ok(w)
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `req` and waits for the answer, passing a stop on to the
    /// worker once.
    fn exchange(&mut self, req: &Request, ctx: &Ctx) -> anyhow::Result<Reply> {
        let line = serde_json::to_string(req)?;
        let to = self.to.as_mut().context("the worker's input is closed")?;
        writeln!(to, "{line}")
            .and_then(|()| to.flush())
            .context("sending the round")?;
        let mut forwarded = false;
        loop {
            let fd = self.from.get_ref().as_fd();
            let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
            let ready = match poll(&mut fds, PollTimeout::from(50u16)) {
                Ok(n) => n > 0,
                Err(nix::errno::Errno::EINTR) => false,
                Err(e) => return Err(e).context("waiting for the round"),
            };
            if ready {
                break;
            }
            if ctx.stopping() && !forwarded {
                let _ = kill(Pid::from_raw(self.pid()), Signal::SIGINT);
                forwarded = true;
            }
        }
        let mut answer = String::new();
        let n = self
            .from
            .read_line(&mut answer)
            .context("reading the round")?;
        if n == 0 {
            let status = self.child.wait().context("waiting for the worker")?;
            bail!("its process ended ({status})");
        }
        serde_json::from_str(&answer).context("reading the round's answer")
    }
}

impl Drop for Worker {
    /// Closes its input, which ends it, and waits for it; kills one that
    /// does not end within seconds.
    fn drop(&mut self) {
        let pid = self.pid();
        drop(self.to.take());
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= until => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        live().retain(|&p| p != pid);
    }
}

/// The workers of a run: worker `k` measures round `k` of every benchmark
/// (and the slow rounds of pass `k` measured again).
pub(super) struct Pool {
    cmd: WorkerCmd,
    workers: Vec<Option<Worker>>,
    started: u32,
    /// Each worker's empty-loop overhead, ns, by serial.
    overheads: Vec<(u32, f64)>,
}

impl Pool {
    /// A pool for `rounds` rounds; workers start when first needed.
    pub(super) fn new(cmd: WorkerCmd, rounds: usize) -> Pool {
        Pool {
            cmd,
            workers: (0..rounds).map(|_| None).collect(),
            started: 0,
            overheads: Vec::new(),
        }
    }

    /// The worker of round `pass`, started if it is not running.
    fn worker(&mut self, pass: usize) -> anyhow::Result<&mut Worker> {
        let k = pass % self.workers.len();
        if self.workers[k].is_none() {
            self.started += 1;
            self.workers[k] = Some(Worker::spawn(&self.cmd, self.started)?);
        }
        Ok(self.workers[k].as_mut().expect("just started"))
    }

    /// Measures round `pass` of `group` in its worker and files what it
    /// measured in the tracks, as [`run_round`] would have here. A worker
    /// that cannot measure (it died: a crash in a benchmark, the OOM
    /// killer) fails the group's benchmarks, not the run.
    pub(super) fn round(
        &mut self,
        tracks: &mut [Track],
        group: &[usize],
        pass: usize,
        rc: &mut RoundCtx<'_>,
    ) -> Option<Canaries> {
        // Only the members still in: a worker of another pass has not seen
        // a benchmark drop out.
        let members: Vec<usize> = group.iter().copied().filter(|&i| !tracks[i].out).collect();
        if members.is_empty() {
            return None;
        }
        let ids: Vec<String> = members.iter().map(|&i| tracks[i].id.clone()).collect();
        (rc.progress)(Event::Started(&ids));
        let req = Request {
            group: members.clone(),
            pass,
            at: rc.at,
        };
        let answer = self
            .worker(pass)
            .and_then(|w| Ok((w.serial, w.exchange(&req, rc.ctx)?)));
        let (serial, reply) = match answer {
            Ok(a) => a,
            Err(e) => {
                let k = pass % self.workers.len();
                self.workers[k] = None;
                let rounds = rc.opts.rounds();
                for &i in &members {
                    let t = &mut tracks[i];
                    if rc.ctx.stopping() {
                        // Stopped while its worker ended: the round is lost, not failed.
                        t.cut = true;
                    } else {
                        let reason = format!(
                            "the process measuring its round failed: {e:#} \
                             (--one-process measures every round in opcost's own process)"
                        );
                        drop_out(t, rc.out, reason, true);
                    }
                    (rc.progress)(Event::Finished(&t.id, budget_left(t, rounds, pass)));
                }
                return None;
            }
        };
        if let Some(o) = reply.overhead.filter(|o| o.is_finite()) {
            self.overheads.retain(|&(s, _)| s != serial);
            self.overheads.push((serial, o));
            let all: Vec<f64> = self.overheads.iter().map(|&(_, o)| o).collect();
            *rc.overhead = crate::stats::median(&all);
        }
        for d in reply.deltas {
            let Some(t) = tracks
                .get_mut(d.track)
                .filter(|_| members.contains(&d.track))
            else {
                continue;
            };
            apply(t, d, serial, rc.out);
        }
        for (id, secs) in &reply.finished {
            (rc.progress)(Event::Finished(id, Duration::from_secs_f64(secs.max(0.0))));
        }
        Some(Canaries {
            before: reply.canary_before?,
            after: reply.canary_after?,
        })
    }

    /// The canary as worker `pass` reads it now; `None` when it cannot
    /// answer (a worker that failed is let go, and its pass's next round
    /// starts a new one).
    pub(super) fn canary(&mut self, pass: usize, ctx: &Ctx) -> Option<f64> {
        let req = Request {
            group: Vec::new(),
            pass,
            at: 0.0,
        };
        match self.worker(pass).and_then(|w| w.exchange(&req, ctx)) {
            Ok(reply) => reply.canary_before,
            Err(_) => {
                let k = pass % self.workers.len();
                self.workers[k] = None;
                None
            }
        }
    }
}

/// Files one benchmark's round, measured by worker `serial`, in its track.
fn apply(t: &mut Track, d: Delta, serial: u32, out: &mut RunOutcome) {
    if let Some(s) = d.skipped {
        t.out = true;
        out.skipped.push(s);
    }
    if let Some(mut r) = d.round {
        r.process = Some(serial);
        t.rounds.push(r);
        t.samples_ns.push(d.samples_ns);
        t.cut = d.cut;
    }
    t.op_times.extend(d.op_times);
    for w in d.warnings {
        if !t.warnings.contains(&w) {
            t.warnings.push(w);
        }
    }
    t.details = d.details.or(t.details.take());
}

/// The worker's side: builds tracks of `benches` (the run's, in the run's
/// order) and measures each requested round, until `input` ends.
pub fn serve(
    benches: Vec<Box<dyn Bench>>,
    ctx: &Ctx,
    opts: &RunOptions,
    input: impl BufRead,
    mut output: impl Write,
) -> anyhow::Result<()> {
    let mut tracks = new_tracks(benches, opts);
    let mut overhead: Option<f64> = None;
    for line in input.lines() {
        let line = line.context("reading a request")?;
        let req: Request = serde_json::from_str(&line).context("reading a request")?;
        if let Some(&bad) = req.group.iter().find(|&&i| i >= tracks.len()) {
            bail!("asked for benchmark {bad} of {}", tracks.len());
        }
        let canary_before = Some((opts.canary)());
        let canary_cpu = super::Placement::current_cpu();
        if req.group.is_empty() {
            let reply = Reply {
                canary_before,
                ..Reply::default()
            };
            write_reply(&mut output, &reply)?;
            continue;
        }
        let mut out = RunOutcome::default();
        let mut finished: Vec<(String, f64)> = Vec::new();
        {
            let mut progress = |ev: Event<'_>| {
                if let Event::Finished(id, spent) = ev {
                    finished.push((id.to_string(), spent.as_secs_f64()));
                }
            };
            let mut rc = RoundCtx {
                ctx,
                opts,
                overhead: &mut overhead,
                out: &mut out,
                progress: &mut progress,
                at: req.at,
            };
            run_round(&mut tracks, &req.group, req.pass, &mut rc);
        }
        super::round::note_canary_cpu(&mut tracks, &req.group, canary_cpu);
        let deltas = req
            .group
            .iter()
            .map(|&i| take_delta(&mut tracks[i], i, &mut out.skipped))
            .collect();
        let reply = Reply {
            deltas,
            finished,
            overhead,
            canary_before,
            canary_after: Some((opts.canary)()),
        };
        write_reply(&mut output, &reply)?;
    }
    Ok(())
}

/// Writes one answer line.
fn write_reply(output: &mut impl Write, reply: &Reply) -> anyhow::Result<()> {
    let text = serde_json::to_string(reply).context("writing the answer")?;
    writeln!(output, "{text}")
        .and_then(|()| output.flush())
        .context("writing the answer")
}

/// What the last round left in a worker's track, taken out of it.
fn take_delta(t: &mut Track, track: usize, skipped: &mut Vec<Skipped>) -> Delta {
    let mut d = Delta {
        track,
        skipped: skipped
            .iter()
            .position(|s| s.id == t.id)
            .map(|k| skipped.remove(k)),
        ..Delta::default()
    };
    if let Some(r) = t.rounds.pop() {
        d.round = Some(r);
        d.samples_ns = t.samples_ns.pop().unwrap_or_default();
        d.cut = t.cut;
    }
    d.op_times = std::mem::take(&mut t.op_times);
    d.warnings = std::mem::take(&mut t.warnings);
    d.details = t.details.take();
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::runner::run;
    use crate::harness::{PrepareError, Profile, Timed, Unit, test_ctx_with};

    struct Fake(&'static str, u64);
    struct FakeTimed(u64);
    impl Timed for FakeTimed {
        fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
            Ok(Duration::from_nanos(ops * self.0))
        }
        fn warnings(&self) -> Vec<String> {
            vec!["a warning".into()]
        }
    }
    impl Bench for Fake {
        fn id(&self) -> &str {
            self.0
        }
        fn summary(&self) -> &str {
            "fake"
        }
        fn unit(&self) -> Unit {
            Unit::Latency
        }
        fn prepare(&self, _ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
            if self.1 == 0 {
                return Err(PrepareError::Skip("not here".into()));
            }
            Ok(Box::new(FakeTimed(self.1)))
        }
    }

    fn ctx() -> Ctx {
        test_ctx_with(crate::host::Host::default(), &std::env::temp_dir())
    }

    fn opts() -> RunOptions {
        RunOptions::fixed(Profile::Quick, Some(6), Some(3))
    }

    #[test]
    fn a_worker_answers_each_request_with_the_round_of_each_member() {
        let _g = crate::os::child::test_lock();
        let benches: Vec<Box<dyn Bench>> =
            vec![Box::new(Fake("w.a", 100)), Box::new(Fake("w.b", 0))];
        let requests = [
            Request {
                group: vec![0, 1],
                pass: 0,
                at: 0.5,
            },
            Request {
                group: vec![0],
                pass: 1,
                at: 1.5,
            },
            Request {
                group: vec![],
                pass: 1,
                at: 0.0,
            },
        ]
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect::<String>();
        let mut output = Vec::new();
        serve(benches, &ctx(), &opts(), requests.as_bytes(), &mut output).unwrap();
        let replies: Vec<Reply> = String::from_utf8(output)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(replies.len(), 3);
        // The canary is taken in the worker, on either side of a round.
        assert!(replies[0].canary_before.is_some() && replies[0].canary_after.is_some());
        // A request of no benchmark only takes the canary.
        assert!(replies[2].deltas.is_empty() && replies[2].finished.is_empty());
        assert!(replies[2].canary_before.unwrap() > 0.0 && replies[2].canary_after.is_none());
        let first = &replies[0];
        assert_eq!(first.deltas.len(), 2);
        let a = &first.deltas[0];
        let r = a.round.as_ref().expect("a measured round");
        assert_eq!((a.track, r.n, a.samples_ns.len()), (0, 2, 2));
        assert!((r.median - 100.0).abs() < 1e-9 && r.at_s == 0.5, "{r:?}");
        assert_eq!(a.warnings, vec!["a warning".to_string()]);
        assert!(a.skipped.is_none() && !a.cut);
        // The skipped member says so once, with no round.
        let b = &first.deltas[1];
        assert_eq!(
            b.skipped.as_ref().map(|s| s.reason.as_str()),
            Some("not here")
        );
        assert!(b.round.is_none());
        // Progress for both, and a second round for the one left.
        assert_eq!(first.finished.len(), 2);
        assert_eq!(replies[1].deltas[0].round.as_ref().unwrap().at_s, 1.5);
    }

    #[test]
    fn a_worker_refuses_a_benchmark_it_does_not_have() {
        let _g = crate::os::child::test_lock();
        let benches: Vec<Box<dyn Bench>> = vec![Box::new(Fake("w.a", 100))];
        let req = serde_json::to_string(&Request {
            group: vec![3],
            pass: 0,
            at: 0.0,
        })
        .unwrap();
        let err = serve(benches, &ctx(), &opts(), req.as_bytes(), Vec::new()).unwrap_err();
        assert!(err.to_string().contains("benchmark 3 of 1"), "{err}");
    }

    #[test]
    fn a_worker_that_dies_fails_its_benchmarks_not_the_run() {
        let _g = crate::os::child::test_lock();
        // `false` reads no hello and answers nothing: every round's worker is gone.
        let cmd = WorkerCmd {
            exe: PathBuf::from("false"),
            hello: "{}".into(),
            launch: Launch::default(),
        };
        let out = run(
            vec![Box::new(Fake("w.a", 100)), Box::new(Fake("w.b", 200))],
            &ctx(),
            &opts(),
            Some(cmd),
            &mut |_| {},
        );
        assert!(out.measurements.is_empty());
        assert_eq!(out.skipped.len(), 2);
        for s in &out.skipped {
            assert!(s.failed, "{s:?}");
            assert!(
                s.reason
                    .starts_with("the process measuring its round failed"),
                "{s:?}"
            );
        }
    }

    /// Starts `sh -c script` and waits until it has set its SIGINT trap
    /// (`field` is `SigCgt` for a trap, `SigIgn` for an ignored signal).
    fn shell_with_trap(script: &str, field: &str) -> std::process::Child {
        let child = Command::new("sh").args(["-c", script]).spawn().unwrap();
        let status = format!("/proc/{}/status", child.id());
        let start = Instant::now();
        let set = || {
            let text = std::fs::read_to_string(&status).unwrap_or_default();
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{field}:")))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
                .is_some_and(|m| m & (1 << (libc::SIGINT - 1)) != 0)
        };
        while !set() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{script}: no trap"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        child
    }

    #[test]
    fn an_abort_signals_each_worker_until_it_is_gone_and_kills_one_that_stays() {
        let _g = crate::os::child::test_lock();
        // Exits at its fourth SIGINT only: two signals are not enough.
        let mut slow = shell_with_trap(
            "n=0; trap 'n=$((n+1)); [ $n -ge 4 ] && exit 0' INT; while :; do sleep 0.01; done",
            "SigCgt",
        );
        // Never exits on SIGINT.
        let mut deaf = shell_with_trap("trap '' INT; while :; do sleep 0.01; done", "SigIgn");
        let pids = [slow.id() as i32, deaf.id() as i32];
        let start = Instant::now();
        let killed = end_workers(pids.to_vec(), Duration::from_secs(2));
        assert_eq!(killed, [pids[1]]);
        assert!(start.elapsed() >= Duration::from_secs(2));
        // Both are gone and reaped: there is nothing left to wait for.
        for c in [&mut slow, &mut deaf] {
            let e = c.wait().unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ECHILD));
        }
    }
}
