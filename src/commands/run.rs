//! `opcost run` (and bare `opcost`): select, measure, print, write.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::usage;
use crate::cli::{Format, RunArgs};
use crate::document::{RunDoc, Sink, check_writable, sink_of};
use crate::harness::runner::{self, Event, RunOptions};
use crate::harness::scratch::{self, ScratchDir};
use crate::harness::worker::WorkerCmd;
use crate::harness::{Ctx, affinity};
use crate::host::Host;
use crate::store::{Location, Store};
use crate::suites;

/// Runs the selected benchmarks and saves the run in the history (`db`)
/// unless `--no-save`; returns 0, 1 when saving failed, 130 when interrupted.
pub fn execute(args: &RunArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    // First of all, so that a Ctrl-C while the run is being set up (host
    // detection takes a few ms) stops it cleanly instead of killing it.
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrlc(stop.clone());
    // Everything the user could have got wrong is checked before measuring.
    if let Some(path) = &args.json {
        check_writable(path).map_err(|e| usage(format!("--json {}: {e:#}", path.display())))?;
    }
    if let Some(dir) = &args.dir {
        check_dir(dir)?;
    }
    let inputs = suites::codec::check_inputs(&args.input).map_err(usage)?;
    if let Some(cpu) = args.cpu {
        affinity::pin_to(cpu).map_err(|e| usage(format!("--cpu {cpu}: {e:#}")))?;
    }
    let targets = super::shared::targets(db)?;
    let mut store = if args.no_save {
        None
    } else {
        Some(Store::open(&targets.local)?)
    };
    let host = Arc::new(Host::detect());
    let mut all = suites::all_benches(&host);
    all.extend(suites::codec::input_benches(&inputs));
    let mut benches = suites::select(all, &args.patterns)?;
    if !inputs.is_empty() && !benches.iter().any(|b| b.id().starts_with("codec.file-")) {
        return Err(usage(
            "--input files are measured by the codec suite, which the patterns leave out; \
             select it (`opcost run codec.file --input FILE`)",
        ));
    }
    // The net.peer.* benchmarks run against --peer and only then; the
    // net.target.* ones against --target and only then.
    let selected = benches.len();
    benches.retain(|b| {
        suites::net::is_peer_bench(b.id()) == args.peer.is_some()
            && suites::net::is_target_bench(b.id()) == args.target.is_some()
    });
    if benches.is_empty() && selected > 0 {
        return Err(usage(if args.peer.is_some() {
            "--peer runs only the net.peer.* benchmarks; select them with `net` or `net.peer`"
        } else if args.target.is_some() {
            "--target runs only the net.target.* benchmarks; select them with `net` or `net.target`"
        } else {
            "the net.peer.* benchmarks need --peer HOST:PORT --token TOKEN (a host running opcost serve), the net.target.* ones --target HOST"
        }));
    }
    if let Some(host) = &args.target {
        let max_pps = args.max_pps.unwrap_or(suites::net::icmp::DEFAULT_MAX_PPS);
        let t = suites::net::set_target(host, max_pps).map_err(|e| usage(format!("{e:#}")))?;
        eprintln!(
            "opcost: ICMP echo to {} ({}), at most {} requests/s",
            t.name, t.addr, t.max_pps
        );
    }
    let peer = match &args.peer {
        None => None,
        Some(addr) => {
            let token = args.token.as_deref().ok_or_else(|| {
                usage("--peer needs --token TOKEN: the token opcost serve printed when it started")
            })?;
            let p = suites::net::set_peer(addr, token)?;
            eprintln!(
                "opcost: peer {} answered in {:.2} ms",
                p.addr,
                p.rtt.as_secs_f64() * 1e3
            );
            Some(crate::document::PeerInfo {
                addr: p.addr.to_string(),
                host: p.host.clone(),
            })
        }
    };
    let benches = suites::for_profile(benches, args.profile).map_err(|e| usage(e.to_string()))?;

    // What runs killed outright left in the temp dir and in --dir.
    let temp = std::env::temp_dir();
    let dirs = std::iter::once((&temp, true)).chain(args.dir.iter().map(|d| (d, false)));
    for (parent, is_temp) in dirs {
        let swept = scratch::sweep_stale(parent, "opcost-", is_temp);
        match swept.as_slice() {
            [] => {}
            [one] => eprintln!(
                "opcost: removed {}, left by a run that was killed",
                one.display()
            ),
            more => eprintln!(
                "opcost: removed {} opcost-* directories in {}, left by runs that were killed",
                more.len(),
                parent.display()
            ),
        }
    }
    let tmp = ScratchDir::new_in(&temp, "opcost-")
        .with_context(|| format!("creating a temp dir in {}", temp.display()))?;

    let mut opts = RunOptions {
        profile: args.profile,
        samples: args.samples.map(|n| n as usize),
        rounds: args.rounds.map(|n| n as usize),
        workers: None,
        canary: crate::harness::canary::check,
        seed: args.seed.unwrap_or_else(|| fastrand::u64(..)),
    };
    // Each round in a process of its own, but for the net.peer.* and
    // net.target.* benchmarks, whose peer connection and target belong to
    // this process.
    if !args.one_process && args.peer.is_none() && args.target.is_none() {
        let hello = super::worker::Hello {
            ids: benches.iter().map(|b| b.id().to_string()).collect(),
            profile: args.profile,
            samples: opts.samples,
            rounds: opts.rounds,
            cpu: args.cpu,
            dir: args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf()),
            tmp: tmp.path().to_path_buf(),
            inputs: inputs.iter().map(|u| u.path.clone()).collect(),
            host: (*host).clone(),
        };
        // This very binary, even if the file was replaced since it started.
        let this = PathBuf::from("/proc/self/exe");
        let exe = if this.exists() {
            this
        } else {
            std::env::current_exe().context("finding the opcost executable")?
        };
        opts.workers = Some(WorkerCmd {
            exe,
            hello: serde_json::to_string(&hello)?,
        });
    }
    let ctx = Ctx {
        profile: args.profile,
        host: host.clone(),
        tmp: tmp.path().to_path_buf(),
        dir: args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf()),
        cpu: args.cpu,
        stop: stop.clone(),
    };

    let total: Duration = benches.iter().map(|b| opts.budget_of(b.as_ref())).sum();
    eprintln!(
        "opcost: {} benchmarks, {} profile, about {:.0} s{}",
        benches.len(),
        args.profile.name(),
        total.as_secs_f64().ceil(),
        args.cpu
            .map(|c| format!(", pinned to CPU {c}"))
            .unwrap_or_default()
    );
    let shared = match (&targets.shared, args.no_save) {
        (Some(url), false) => Some((url, super::shared::connect_early(url))),
        _ => None,
    };
    let bar = progress_bar(total);
    let started_at = chrono::Utc::now();
    let started = Instant::now();
    let mut doc = RunDoc::start(
        (*host).clone(),
        args.profile,
        args.label.clone(),
        args.cpu,
        started_at,
    );
    doc.peer = peer;
    doc.run.order_seed = Some(opts.seed);
    // The run is in the history from its start, each result kept as it
    // completes, so that a crash or a kill loses nothing already measured.
    let mut save_error: Option<anyhow::Error> = None;
    if let Some(s) = store.as_mut()
        && let Err(e) = s.begin(&mut doc)
    {
        save_error = Some(e);
    }
    let outcome = runner::run(benches, &ctx, &opts, &mut |ev| match ev {
        Event::Started(ids) => bar.set_message(ids.join(" ")),
        Event::Finished(_, budget) => bar.inc(budget.as_millis() as u64),
        Event::Result(seq, m) => {
            if save_error.is_none()
                && let Some(s) = store.as_mut()
                && let Err(e) = s.put_partial(&doc.run.id, seq, m)
            {
                save_error = Some(e);
            }
        }
    });
    bar.finish_and_clear();
    drop(tmp);

    doc.run.duration_s = started.elapsed().as_secs_f64();
    doc.run.interrupted = outcome.interrupted;
    doc.findings = suites::findings(&outcome.measurements);
    doc.findings.retain(|f| f.value.is_finite());
    doc.results = outcome.measurements;
    doc.skipped = outcome.skipped;
    doc.stability = outcome.stability;
    // Saved before printing, so the table shows what the history holds.
    let saved = match (store.as_mut(), save_error) {
        (None, _) => None,
        (Some(_), Some(e)) => Some(Err(e)),
        (Some(s), None) => Some(s.finish(&doc).map(|()| s.path())),
    };
    super::quiet_broken_pipe(); // every benchmark and its peers are done
    let text = super::show::render(&doc, args.format)?;
    let json_to_stdout = args
        .json
        .as_deref()
        .is_some_and(|p| sink_of(p).is_ok_and(|s| s == Sink::Stdout));
    if json_to_stdout {
        // Standard output carries the JSON alone, so it can be piped.
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(path) = &args.json {
        doc.write_json(path)?;
        if !json_to_stdout {
            eprintln!("wrote {}", path.display());
        }
    }
    match saved {
        Some(Ok(path)) => eprintln!("saved as run {} in {}", doc.run.id, path.display()),
        Some(Err(e)) => {
            eprintln!("error: the run was not saved: {e:#}");
            if args.json.is_none() && args.format != Format::Json {
                eprintln!("hint: --json FILE keeps a run without the history");
            }
            return Ok(1);
        }
        None => {}
    }
    if let Some((url, conn)) = shared
        && !super::shared::copy_to_shared(url, conn, &[&doc], &targets.local)
    {
        return Ok(1);
    }
    Ok(if outcome.interrupted { 130 } else { 0 })
}

/// Refuses a `--dir` that is missing, not a directory or not writable.
fn check_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    if !dir.exists() {
        return Err(usage(format!(
            "--dir {}: no such directory; create it first",
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(usage(format!("--dir {}: not a directory", dir.display())));
    }
    tempfile::tempfile_in(dir).map(drop).map_err(|e| {
        usage(format!(
            "--dir {}: not writable ({e}); choose a directory you can write to",
            dir.display()
        ))
    })
}

/// First Ctrl-C: finish the current sample, then print and write what is
/// done. Second Ctrl-C: remove the temp dir and every scratch dir, and exit
/// at once.
fn install_ctrlc(stop: Arc<AtomicBool>) {
    let _ = ctrlc::set_handler(move || {
        if stop.swap(true, Ordering::SeqCst) {
            crate::harness::worker::abort_all();
            // The run's temp dir too: it is a scratch dir.
            scratch::remove_all();
            std::process::exit(130);
        }
        eprintln!("\nopcost: stopping after the current sample (Ctrl-C again to abort)");
    });
}

fn progress_bar(total: Duration) -> ProgressBar {
    let bar =
        ProgressBar::with_draw_target(Some(total.as_millis() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {percent:>3}% ETA {eta} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}
