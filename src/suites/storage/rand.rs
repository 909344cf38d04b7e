//! Random 4 KiB reads: one at a time (queue depth 1, the latency a
//! database's index lookup waits for, with its p99), and from several
//! threads at once (a deeper queue, the IOPS the device can sustain).
//! O_DIRECT where the file system allows it, so the page cache cannot answer.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use serde_json::json;

use super::common::{
    AlignedBuf, MIN_FILE, Sizes, Workspace, drop_from_cache, lay_out, min_ops_for, try_direct,
};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::suites::bench::FnBench;

/// What a round spends setting a benchmark up and tearing it down besides
/// its samples (the file laid out and its reader threads started): 64 ms a round on the quick runs of a 2-vCPU AMD EPYC (Zen 4) KVM guest. Only the run-time estimate
/// uses it ([`FnBench::setup_time`]).
const SETUP: Duration = Duration::from_millis(64);

/// The random read size.
pub const BLOCK: u64 = 4096;
/// Threads of the deeper-queue benchmark, each with one read in flight.
pub const DEPTH: usize = 16;
/// Reads per thread per batch at least, so that start-up and tail of a
/// batch (threads finishing at different times) stay a small part of it.
const MIN_READS_PER_THREAD: u64 = 64;
/// The longest a minimum batch should take (slow disks get fewer reads).
const MIN_BATCH_TIME: Duration = Duration::from_millis(20);

/// The file random reads go to, and how it is opened.
struct Target {
    ws: Workspace,
    file: File,
    blocks: u64,
    direct: bool,
}

impl Target {
    fn prepare(ctx: &Ctx) -> Result<Target, PrepareError> {
        let (ws, size) = Workspace::new(ctx, Sizes::of(ctx.profile).rand_file, MIN_FILE)?;
        let path = ws.file("rand");
        let buffered = lay_out(&path, size, ctx)?;
        let (file, direct) = match try_direct(&path, false, BLOCK as usize) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (buffered, false),
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context("opening with O_DIRECT")
                    .into());
            }
        };
        Ok(Target {
            ws,
            file,
            blocks: size / BLOCK,
            direct,
        })
    }

    fn warnings(&self) -> Vec<String> {
        let mut w = self.ws.warnings();
        if !self.direct {
            w.push(
                Warning::DirectRefused {
                    fs: self.ws.location.fs_type.clone(),
                }
                .to_string(),
            );
        }
        w
    }

    fn details(&self, extra: serde_json::Value) -> serde_json::Value {
        let mut v = self.ws.details(json!({
            "file_bytes": self.blocks * BLOCK,
            "block_bytes": BLOCK,
            "io": if self.direct { "O_DIRECT" } else { "buffered, dropped from the page cache per batch" },
        }));
        if let (Some(o), serde_json::Value::Object(more)) = (v.as_object_mut(), extra) {
            o.extend(more);
        }
        v
    }

    /// Untimed, before a batch: without O_DIRECT, make the reads cold again.
    fn before_batch(&self) -> anyhow::Result<()> {
        if !self.direct {
            drop_from_cache(&self.file)?;
        }
        Ok(())
    }
}

/// Queue depth 1: one read at a time, each timed for the p99.
struct Qd1 {
    t: Target,
    buf: AlignedBuf,
    rng: fastrand::Rng,
    op_times: Vec<f64>,
    min_ops: u64,
}

impl Qd1 {
    fn read_one(&mut self) -> anyhow::Result<Duration> {
        let off = self.rng.u64(0..self.t.blocks) * BLOCK;
        let start = Instant::now();
        self.t
            .file
            .read_exact_at(self.buf.as_mut_slice(), off)
            .context("read")?;
        Ok(start.elapsed())
    }
}

impl Timed for Qd1 {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        self.t.before_batch()?;
        let start = Instant::now();
        for _ in 0..ops {
            let d = self.read_one()?;
            self.op_times.push(d.as_nanos() as f64);
        }
        Ok(start.elapsed())
    }
    fn min_ops(&self) -> u64 {
        self.min_ops
    }
    fn take_op_times(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.op_times)
    }
    fn warnings(&self) -> Vec<String> {
        self.t.warnings()
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.t.details(json!({ "queue_depth": 1 })))
    }
}

fn prepare_qd1(ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
    let t = Target::prepare(ctx)?;
    let mut q = Qd1 {
        t,
        buf: AlignedBuf::new(BLOCK as usize)?,
        rng: fastrand::Rng::new(),
        op_times: Vec::new(),
        min_ops: 1,
    };
    // Estimate one read to size the batch (an SSD: 64 reads, a disk: fewer).
    let mut est: Vec<Duration> = (0..8).map(|_| q.read_one()).collect::<Result<_, _>>()?;
    est.sort();
    q.min_ops = min_ops_for(est[est.len() / 2], MIN_READS_PER_THREAD, MIN_BATCH_TIME);
    Ok(Box::new(q))
}

/// Queue depth N: N threads, each with one read in flight.
struct Deep {
    t: Target,
    jobs: Vec<mpsc::Sender<u64>>,
    done: mpsc::Receiver<Result<(), String>>,
    threads: Vec<JoinHandle<()>>,
    min_ops: u64,
}

impl Deep {
    fn spawn(t: Target, depth: usize) -> Result<Deep, PrepareError> {
        let (done_tx, done) = mpsc::channel();
        let mut jobs = Vec::with_capacity(depth);
        let mut threads = Vec::with_capacity(depth);
        for i in 0..depth {
            let (tx, rx) = mpsc::channel::<u64>();
            let file = t.file.try_clone().context("dup of the file descriptor")?;
            let mut buf = AlignedBuf::new(BLOCK as usize)?;
            let done_tx = done_tx.clone();
            let blocks = t.blocks;
            let h = std::thread::Builder::new()
                .name(format!("opcost-qd{i}"))
                .spawn(move || {
                    let mut rng = fastrand::Rng::new();
                    while let Ok(n) = rx.recv() {
                        let mut r = Ok(());
                        for _ in 0..n {
                            let off = rng.u64(0..blocks) * BLOCK;
                            if let Err(e) = file.read_exact_at(buf.as_mut_slice(), off) {
                                r = Err(format!("read at {off}: {e}"));
                                break;
                            }
                        }
                        if done_tx.send(r).is_err() {
                            break;
                        }
                    }
                })
                .context("spawning a reader thread")?;
            jobs.push(tx);
            threads.push(h);
        }
        Ok(Deep {
            t,
            jobs,
            done,
            threads,
            min_ops: 1,
        })
    }
}

impl Timed for Deep {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        self.t.before_batch()?;
        let n = self.jobs.len() as u64;
        let start = Instant::now();
        for (i, tx) in self.jobs.iter().enumerate() {
            let share = ops / n + u64::from((i as u64) < ops % n);
            tx.send(share)
                .map_err(|_| anyhow!("a reader thread has exited"))?;
        }
        for _ in 0..n {
            self.done
                .recv()
                .map_err(|_| anyhow!("a reader thread has exited"))?
                .map_err(|e| anyhow!(e))?;
        }
        Ok(start.elapsed())
    }
    fn min_ops(&self) -> u64 {
        self.min_ops
    }
    fn warnings(&self) -> Vec<String> {
        self.t.warnings()
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.t.details(json!({
            "queue_depth": self.jobs.len(),
            "method": "one thread per request in flight, synchronous pread",
        })))
    }
}

impl Drop for Deep {
    fn drop(&mut self) {
        self.jobs.clear(); // closes the channels: the threads leave their loop
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

fn prepare_deep(ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
    let t = Target::prepare(ctx)?;
    let mut d = Deep::spawn(t, DEPTH)?;
    // Time a few reads per thread to size the batch.
    const PROBE: u32 = 4;
    let per_read = d.run(DEPTH as u64 * u64::from(PROBE))? / PROBE;
    d.min_ops = DEPTH as u64 * min_ops_for(per_read, MIN_READS_PER_THREAD, 2 * MIN_BATCH_TIME);
    Ok(Box::new(d))
}

/// Id of random reads one at a time.
pub const READ_QD1: &str = "storage.rand.read.qd1";

/// Id of random reads [`DEPTH`] at a time.
pub fn deep_id() -> String {
    format!("storage.rand.read.qd{DEPTH}")
}

/// The random-read benchmarks.
pub fn benches() -> Vec<Box<dyn Bench>> {
    vec![
        FnBench::new(
            READ_QD1,
            "4 KiB O_DIRECT reads at random offsets, one at a time: latency, with its p99",
            Unit::Latency,
            prepare_qd1,
        )
        .param("block", "4KiB")
        .param("depth", 1)
        .interleave("storage.rand.read")
        .budget_scale(4.0)
        .cpu_cost()
        .setup_time(SETUP)
        .boxed(),
        FnBench::new(
            deep_id(),
            format!("4 KiB O_DIRECT random reads from {DEPTH} threads at once: IOPS at queue depth {DEPTH}"),
            Unit::Rate,
            prepare_deep,
        )
        .param("block", "4KiB")
        .param("depth", DEPTH as u64)
        .interleave("storage.rand.read")
        .budget_scale(4.0)
        .cpu_cost()
        .setup_time(SETUP)
        .boxed(),
    ]
}
