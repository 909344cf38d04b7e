//! The round worker: opcost executed again by a run to measure rounds in a
//! process of their own (see [`crate::harness::worker`]). Its first line of
//! input is a [`Hello`] (the run's plan) that says how to build the run's benchmarks.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;

use crate::harness::scratch;
use crate::harness::worker::{WORKER_ARG, serve};
use crate::os::mempool;
use crate::os::signals::{OnCtrlC, on_ctrl_c};
use crate::plan::Hello;

/// Serves rounds when this process is a worker (its first argument is
/// [`WORKER_ARG`]); returns otherwise.
pub fn serve_if_asked() {
    if std::env::args_os().nth(1).is_none_or(|a| a != WORKER_ARG) {
        return;
    }
    crate::os::exit_with("opcost worker", work());
}

fn work() -> anyhow::Result<()> {
    // The protocol moves to descriptors of its own, and standard input and
    // output become /dev/null: nothing a benchmark or a child of it reads or
    // prints can get into the answers.
    let input = File::from(nix::unistd::dup(std::io::stdin()).context("dup stdin")?);
    let output = File::from(nix::unistd::dup(std::io::stdout()).context("dup stdout")?);
    let null = File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
        .context("opening /dev/null")?;
    nix::unistd::dup2_stdin(&null).context("dup2 stdin")?;
    nix::unistd::dup2_stdout(&null).context("dup2 stdout")?;
    let mut input = BufReader::new(input);

    let mut line = String::new();
    input.read_line(&mut line).context("reading the hello")?;
    let hello: Hello = serde_json::from_str(&line).context("reading the hello")?;
    // A run pinned to a CPU has its workers inherit it; `ab`'s side asks here.
    if let Some(cpu) = hello.cpu {
        crate::harness::affinity::pin_to(cpu).with_context(|| format!("--cpu {cpu}"))?;
    }
    let host = Arc::new(hello.host.clone());
    let benches = hello.benches(&host)?;
    // The memory benchmarks of this worker's rounds share their pages.
    mempool::enable(host.mem_total_bytes);
    let tmp = tempfile::Builder::new()
        .prefix("worker-")
        .tempdir_in(&hello.tmp)
        .context("creating the worker's temp dir")?;
    let stop = Arc::new(AtomicBool::new(false));
    let dir = tmp.path().to_path_buf();
    // The first SIGINT (passed on by the run) ends the round after the
    // current sample; a second aborts, as in the run itself.
    on_ctrl_c(
        stop.clone(),
        OnCtrlC {
            abort: Some(Box::new(move || {
                scratch::remove_all();
                let _ = std::fs::remove_dir_all(&dir);
            })),
            ..OnCtrlC::default()
        },
    );
    let ctx = hello.ctx(host, tmp.path(), stop);
    // A worker measures the rounds it is asked for; the order is the run's.
    let opts = hello.opts(0);
    let input = IdleReader {
        inner: input,
        idle_ms: IDLE_MS,
        holding: || mempool::held_bytes() > 0,
        on_idle: mempool::release,
    };
    serve(benches, &ctx, &opts, input, BufWriter::new(output))
}

/// How long a worker waits for its next request before it counts itself
/// idle: the run answers within milliseconds while this worker's pass
/// lasts.
const IDLE_MS: u16 = 250;

/// The requests, read so that a worker with nothing to do holds no pool
/// of mappings: when `holding()` and no request comes within `idle_ms`
/// (its pass is over), it calls `on_idle` (unmaps the pool) before waiting
/// on.
struct IdleReader<H: Fn() -> bool, F: FnMut()> {
    inner: BufReader<File>,
    idle_ms: u16,
    holding: H,
    on_idle: F,
}

impl<H: Fn() -> bool, F: FnMut()> Read for IdleReader<H, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf)
    }
}

impl<H: Fn() -> bool, F: FnMut()> BufRead for IdleReader<H, F> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.inner.buffer().is_empty() && (self.holding)() {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            let mut fds = [PollFd::new(self.inner.get_ref().as_fd(), PollFlags::POLLIN)];
            if matches!(poll(&mut fds, PollTimeout::from(self.idle_ms)), Ok(0)) {
                (self.on_idle)();
            }
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.inner.consume(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, Instant};

    /// A reader over a pipe whose `on_idle` counts its calls.
    fn reader(idle_ms: u16) -> (impl BufRead, File, std::rc::Rc<std::cell::Cell<u32>>) {
        let (r, w) = nix::unistd::pipe().unwrap();
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let seen = calls.clone();
        let rd = IdleReader {
            inner: BufReader::new(File::from(r)),
            idle_ms,
            holding: || true,
            on_idle: move || seen.set(seen.get() + 1),
        };
        (rd, File::from(w), calls)
    }

    #[test]
    fn a_request_that_waits_past_the_idle_time_empties_the_pool_first() {
        let (mut rd, mut w, calls) = reader(50);
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            w.write_all(b"late\n").unwrap();
        });
        let mut line = String::new();
        rd.read_line(&mut line).unwrap();
        writer.join().unwrap();
        assert_eq!(line, "late\n");
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn requests_that_are_waiting_are_read_without_the_idle_wait() {
        let (mut rd, mut w, calls) = reader(10_000);
        w.write_all(b"one\ntwo\n").unwrap();
        let started = Instant::now();
        let mut line = String::new();
        rd.read_line(&mut line).unwrap();
        rd.read_line(&mut line).unwrap();
        assert_eq!(line, "one\ntwo\n");
        assert_eq!(calls.get(), 0);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
