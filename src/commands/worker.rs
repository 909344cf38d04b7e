//! The round worker: opcost executed again by a run to measure rounds in a
//! process of their own (see [`crate::harness::worker`]). Its first line of
//! input is a [`Hello`] that says how to build the run's benchmarks.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::harness::runner::RunOptions;
use crate::harness::worker::{WORKER_ARG, serve};
use crate::harness::{Ctx, Profile, scratch};
use crate::host::Host;
use crate::suites;

/// What a worker needs to build and measure the run's benchmarks.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    /// The run's benchmarks, in its order.
    pub ids: Vec<String>,
    /// The run's profile.
    pub profile: Profile,
    /// `--samples`.
    pub samples: Option<usize>,
    /// `--rounds`.
    pub rounds: Option<usize>,
    /// `--cpu` (the affinity itself is inherited).
    pub cpu: Option<usize>,
    /// Where file benchmarks write.
    pub dir: PathBuf,
    /// The run's temp dir; the worker makes its own inside it.
    pub tmp: PathBuf,
    /// `--input` files.
    pub inputs: Vec<PathBuf>,
    /// `--words` files.
    #[serde(default)]
    pub words: Vec<PathBuf>,
    /// The locales of the `--words` files, as the run resolved them.
    #[serde(default)]
    pub locales: Vec<String>,
    /// The machine, as the run detected it.
    pub host: Host,
}

/// Serves rounds when this process is a worker (its first argument is
/// [`WORKER_ARG`]); returns otherwise.
pub fn serve_if_asked() {
    if std::env::args_os().nth(1).is_none_or(|a| a != WORKER_ARG) {
        return;
    }
    let code = match work() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("opcost worker: {e:#}");
            1
        }
    };
    std::process::exit(code);
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
    let host = Arc::new(hello.host);
    let inputs = suites::codec::check_inputs(&hello.inputs).map_err(anyhow::Error::msg)?;
    let mut all = suites::all_benches(&host);
    all.extend(suites::codec::input_benches(&inputs));
    let (words, locales) =
        suites::text::user::check_args(&hello.words, &hello.locales).map_err(anyhow::Error::msg)?;
    all.extend(suites::text::user::benches(&words, &locales));
    let mut benches = Vec::with_capacity(hello.ids.len());
    for id in &hello.ids {
        let Some(k) = all.iter().position(|b| b.id() == id) else {
            bail!("this build has no benchmark {id}");
        };
        benches.push(all.swap_remove(k));
    }
    let tmp = tempfile::Builder::new()
        .prefix("worker-")
        .tempdir_in(&hello.tmp)
        .context("creating the worker's temp dir")?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let dir = tmp.path().to_path_buf();
        // The first SIGINT (passed on by the run) ends the round after the
        // current sample; a second aborts, as in the run itself.
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                scratch::remove_all();
                let _ = std::fs::remove_dir_all(&dir);
                std::process::exit(130);
            }
        });
    }
    let ctx = Ctx {
        profile: hello.profile,
        host,
        tmp: tmp.path().to_path_buf(),
        dir: hello.dir,
        cpu: hello.cpu,
        stop,
    };
    let opts = RunOptions {
        profile: hello.profile,
        samples: hello.samples,
        rounds: hello.rounds,
        workers: None,
        canary: crate::harness::canary::check,
        // A worker measures the rounds it is asked for; the order is the run's.
        seed: 0,
    };
    serve(benches, &ctx, &opts, input, BufWriter::new(output))
}
