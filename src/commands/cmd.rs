//! `opcost cmd`: time whole programs, each net of its baseline, and save
//! them as a run (area `cmd`) like any other.

use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget};

use super::usage;
use crate::cli::{CmdArgs, Format};
use crate::cmdtime::child::{self, Launch};
use crate::cmdtime::plan::{self, Request, Scan, Spec};
use crate::cmdtime::{self, Options, Outcome, Startup, render};
use crate::document::{RunDoc, check_writable};
use crate::harness::Profile;
use crate::host::Host;
use crate::store::{Location, Store};

/// Measures the commands, prints and saves them; 0, 1 when a run failed or
/// saving did, 130 when interrupted.
pub fn execute(args: &CmdArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    // Everything the user could have got wrong is checked before running.
    let request = request(args)?;
    let specs = plan::expand(&request).map_err(usage)?;
    if let Some(path) = &args.json {
        check_writable(path).map_err(|e| usage(format!("--json {}: {e:#}", path.display())))?;
    }
    let targets = super::shared::targets(db)?;
    let mut store = if args.no_save {
        None
    } else {
        Some(Store::open(&targets.local)?)
    };
    let shared = match (&targets.shared, args.no_save) {
        (Some(url), false) => Some((url, super::shared::connect_early(url))),
        _ => None,
    };

    child::install_ctrlc();
    let host = Host::detect();
    let started_at = chrono::Utc::now();
    let started = Instant::now();
    let outcomes = measure_all(&specs, args)?;

    let interrupted = child::stopped();
    let mut doc = RunDoc::start(host, Profile::Default, args.label.clone(), None, started_at);
    doc.run.duration_s = started.elapsed().as_secs_f64();
    doc.run.interrupted = interrupted;
    doc.results = outcomes.iter().flat_map(|o| o.measurements()).collect();
    doc.findings = cmdtime::findings(&outcomes);
    doc.findings.retain(|f| f.value.is_finite());
    // Saved before printing, so the table shows the id the history holds.
    let saved = store
        .as_mut()
        .map(|s| s.save_new(&mut doc).map(|()| s.path().to_path_buf()));
    super::quiet_broken_pipe();
    match args.format {
        Format::Text => print!("{}", render::render(&doc, &outcomes)),
        f => print!("{}", crate::report::render_run(&doc, f)?),
    }
    if let Some(path) = &args.json {
        doc.write_json(path)?;
        eprintln!("wrote {}", path.display());
    }
    match saved {
        Some(Ok(path)) => eprintln!("saved as run {} in {}", doc.run.id, path.display()),
        Some(Err(e)) => {
            eprintln!("error: the run was not saved: {e:#}");
            return Ok(1);
        }
        None => {}
    }
    if let Some((url, conn)) = shared
        && !super::shared::copy_to_shared(url, conn, &[&doc], &targets.local)
    {
        return Ok(1);
    }
    Ok(if interrupted { 130 } else { 0 })
}

/// The request the arguments make (the scan parsed): a usage error when
/// the scan is malformed.
fn request(args: &CmdArgs) -> anyhow::Result<Request> {
    let scan = args
        .scan
        .as_ref()
        .map(|w| Scan::parse(w, args.step))
        .transpose()
        .map_err(usage)?;
    Ok(Request {
        words: args.commands.clone(),
        baseline: args.baseline.clone(),
        names: args.name.clone(),
        scan,
        shell: args.shell,
        input: args.input.clone(),
        show_output: args.show_output,
        timeout: args.timeout,
        cwd: args.cwd.clone(),
        hooks: plan::HookLines {
            setup: args.setup.clone(),
            prepare: args.prepare.clone(),
            conclude: args.conclude.clone(),
            cleanup: args.cleanup.clone(),
        },
    })
}

/// Measures each command in turn (the shell's own start measured first
/// with `--shell`), with a progress bar; stops early when interrupted.
fn measure_all(specs: &[Spec], args: &CmdArgs) -> anyhow::Result<Vec<Outcome>> {
    let shell = args.shell.then(|| Launch {
        argv: ["/bin/sh", "-c", ""].map(String::from).to_vec(),
        input: None,
        show_output: false,
        timeout: args.timeout,
        cwd: args.cwd.clone(),
    });
    let opts = Options {
        warmup: args.warmup,
        runs: args.runs,
        ignore_failure: args.ignore_failure,
        shell: shell.clone(),
    };
    let startup = match &shell {
        Some(sh) => cmdtime::shell_startup(sh).map_err(cmdtime::into_anyhow)?,
        None => Startup::default(),
    };
    let bar = ProgressBar::with_draw_target(Some(specs.len() as u64), ProgressDrawTarget::stderr());
    let mut outcomes = Vec::new();
    for spec in specs {
        bar.set_message(spec.command.clone());
        let o = cmdtime::measure(spec, &opts, startup, &mut |_| bar.tick())
            .map_err(cmdtime::into_anyhow)?;
        outcomes.push(o);
        bar.inc(1);
        if child::stopped() {
            break;
        }
    }
    bar.finish_and_clear();
    Ok(outcomes)
}
