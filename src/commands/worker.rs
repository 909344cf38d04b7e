//! The round worker: opcost executed again by a run to measure rounds in a
//! process of their own (see [`crate::harness::worker`]). Its first line of
//! input is a [`Hello`] (the run's plan) that says how to build the run's benchmarks.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;

use super::plan::Hello;
use crate::harness::scratch;
use crate::harness::worker::{WORKER_ARG, serve};
use crate::os::signals::{OnCtrlC, on_ctrl_c};

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
    serve(benches, &ctx, &opts, input, BufWriter::new(output))
}
