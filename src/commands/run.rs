//! `opcost run` (and bare `opcost`): plan, measure, deliver.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::analysis;
use crate::cli::{Format, RunArgs};
use crate::document::{RunDoc, Sink, sink_of};
use crate::harness::round::Event;
use crate::harness::worker::WorkerCmd;
use crate::harness::{self, Bench, Ctx, RunOptions, RunOutcome, runner, scratch};
use crate::host::Host;
use crate::os::signals::{OnCtrlC, on_ctrl_c};
use crate::plan::{self, RunPlan, RunRequest};
use crate::store::{Location, Store};
use crate::suites;

/// Runs the selected benchmarks and saves the run in the history (`db`)
/// unless `--no-save`; returns 0, 1 when saving failed, 130 when interrupted.
pub fn execute(args: &RunArgs, db: Option<&Location>) -> anyhow::Result<i32> {
    // First of all, so that a Ctrl-C while the run is being set up (host
    // detection takes a few ms) stops it cleanly instead of killing it.
    let stop = Arc::new(AtomicBool::new(false));
    install_ctrlc(stop.clone());
    let plan = RunPlan::new(super::request::run(args)?)?;
    let req = &plan.request;
    let targets = super::shared::targets(db)?;
    let mut store = req.save.then(|| Store::open(&targets.local)).transpose()?;
    let tmp = plan::scratch_dir(req.dir.as_deref())?;
    let hello = plan.hello(tmp.path());
    let ctx = plan.ctx(&hello, tmp.path(), stop);
    let mut opts = hello.opts(plan.seed);
    let workers = plan.worker_cmd(&hello)?;
    let mut doc = plan.document(chrono::Utc::now());
    let earlier = earlier_runs(req, db, &doc);
    // The two-stage rule reads each benchmark's run-to-run spread there.
    opts.history = Arc::new(harness::row_histories(
        earlier.iter().flat_map(|d| &d.results),
    ));
    let estimate = plan.estimate(&opts, &earlier);
    announce(req, plan.benches.len(), &estimate, &plan.host);
    let shared = match (&targets.shared, req.save) {
        (Some(url), true) => Some((url, super::shared::connect_early(url))),
        _ => None,
    };
    doc.run.estimate_s = Some(estimate.total.as_secs_f64());
    // The bar moves by each benchmark's expected time per planned round.
    let mut live = Live::new(store.as_mut(), &mut doc, plan.budget(&opts));
    let outcome = live.measure(plan.benches, &ctx, &opts, workers);
    let save_error = live.save_error;
    plan::sweep_swap();
    drop(tmp);
    if let Some(sampling) = req.matrix.filter(|_| !outcome.interrupted) {
        doc.matrix = Some(core_matrix(req, &plan.host, sampling, &ctx.stop)?);
    }
    let interrupted = outcome.interrupted;
    let settle = &earlier[..earlier.len().min(analysis::history_words::EARLIER_RUNS)];
    doc.fill(outcome, |ms| plan::findings(ms, settle));
    // Saved before printing, so the table shows what the history holds.
    let saved = match (store.as_mut(), save_error) {
        (None, _) => None,
        (Some(_), Some(e)) => Some(Err(e)),
        (Some(s), None) => Some(s.finish(&doc).map(|()| s.path())),
    };
    super::quiet_broken_pipe(); // every benchmark and its peers are done
    let mut code = deliver(args, &doc, saved)?;
    if let Some((url, conn)) = shared
        && !super::shared::copy_to_shared(url, conn, &[&doc], &targets.local)
    {
        code = 1;
    }
    Ok(if code == 0 && interrupted { 130 } else { code })
}

/// Earlier runs of this host at this profile (none without `--history`):
/// what their benchmarks took tells this run's time and how many rounds
/// each will take (the two-stage rule, `crate::stats::stages`), and they
/// settle the findings' words (`analysis::history_words`); a history that
/// cannot be read only means none.
fn earlier_runs(req: &RunRequest, db: Option<&Location>, doc: &RunDoc) -> Vec<RunDoc> {
    match req.history {
        true => super::source::Loader::new(db)
            .history(doc, &[], EARLIER_RUNS)
            .unwrap_or_default(),
        false => Vec::new(),
    }
}

/// Measures the core-to-core matrix after the benchmarks, with a bar.
fn core_matrix(
    req: &RunRequest,
    host: &Host,
    sampling: suites::topology::matrix::Sampling,
    stop: &AtomicBool,
) -> anyhow::Result<crate::document::CoreMatrix> {
    use suites::topology::matrix;
    let allowed = crate::harness::affinity::allowed_cpus();
    let plan = matrix::Plan::new(&host.topology, &allowed, sampling, req.profile);
    eprintln!(
        "core-to-core matrix: {} CPUs ({}), {} pairs, about {:.0} s",
        plan.cpus.len(),
        sampling.text(),
        plan.pairs(),
        plan.estimate().as_secs_f64().ceil()
    );
    let bar = super::progress_bar(plan.estimate());
    let per_pair = plan.per_pair;
    let m = matrix::measure(&host.topology, &plan, stop, |done, _| {
        bar.set_position((per_pair * done as u32).as_millis() as u64);
    });
    bar.finish_and_clear();
    m
}

/// Earlier runs of the host read for the estimate (the newest that
/// measured a benchmark gives its time).
const EARLIER_RUNS: usize = 8;

/// Says what is about to run and for how long (and whence the figure),
/// and that it will take longer when the machine is busy.
fn announce(req: &RunRequest, benches: usize, estimate: &plan::Estimate, host: &Host) {
    let whence = match estimate.learned {
        0 => String::new(),
        n if n == estimate.of => " (as long as on this host's last runs)".to_string(),
        n => format!(
            " ({n} of {} benchmarks timed on this host's last runs)",
            estimate.of
        ),
    };
    eprintln!(
        "opcost: {benches} benchmarks, {} profile, about {}{whence}{}",
        req.profile.name(),
        about(estimate.total),
        req.cpu
            .map(|c| format!(", pinned to CPU {c}"))
            .unwrap_or_default()
    );
    if let Some(note) = busy_note(host, others_share_now()) {
        eprintln!("opcost: {note}");
    }
}

/// A run's expected length as people say it: "58 s" under two minutes,
/// then "34 min", then "2 h 10 min".
fn about(d: Duration) -> String {
    let s = d.as_secs_f64().ceil() as u64;
    match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", (s + 30) / 60),
        _ => {
            let m = (s + 30) / 60;
            format!("{} h {} min", m / 60, m % 60)
        }
    }
}

/// How long the machine is watched before a run for other programs' use.
const BUSY_LOOK: Duration = Duration::from_millis(150);

/// "the machine is busy ..." when other programs use at least half a CPU
/// right now (`others`: their share of all the CPUs' time over a short
/// look, from /proc/stat less opcost's own), or, where that cannot be
/// read, when the load average is at least half the CPUs (a lagging
/// sign: a run just ended still counts in it). Their work shares the CPUs,
/// so the run will take longer than estimated and its figures will be
/// noisier.
fn busy_note(host: &Host, others: Option<f64>) -> Option<String> {
    let cpus = match host.topology.cpus.len() {
        0 => host.logical_cpus.max(1),
        n => n,
    };
    match others {
        Some(share) => {
            let used = share * host.logical_cpus.max(1) as f64;
            (used >= 0.5).then(|| {
                format!(
                    "the machine is busy (other programs are using {used:.1} CPUs of {cpus}): the run will take longer than that, and its figures will be noisier"
                )
            })
        }
        None => {
            let load = host.loadavg?[0];
            (load >= 0.5 * cpus as f64).then(|| {
                format!(
                    "the machine is busy (load average {load:.1} on {cpus} CPUs): the run will take longer than that, and its figures will be noisier"
                )
            })
        }
    }
}

/// Other programs' share of all the CPUs' time over [`BUSY_LOOK`].
fn others_share_now() -> Option<f64> {
    let before = crate::harness::canary::Snapshot::now();
    std::thread::sleep(BUSY_LOOK);
    before
        .until(&crate::harness::canary::Snapshot::now())
        .others_share
}

/// A run being measured: its progress bar, and its results kept in the
/// history as they complete.
struct Live<'a> {
    store: Option<&'a mut Store>,
    doc: &'a mut RunDoc,
    bar: ProgressBar,
    /// Why the history stopped taking results, when it did.
    save_error: Option<anyhow::Error>,
    started: Instant,
}

impl<'a> Live<'a> {
    /// Puts the run in the history from its start (unless `store` is none),
    /// so that a crash or a kill loses nothing already measured.
    fn new(mut store: Option<&'a mut Store>, doc: &'a mut RunDoc, total: Duration) -> Live<'a> {
        let save_error = store.as_deref_mut().and_then(|s| s.begin(doc).err());
        Live {
            store,
            doc,
            bar: super::progress_bar(total),
            save_error,
            started: Instant::now(),
        }
    }

    /// Measures `benches`, showing progress and keeping each result.
    fn measure(
        &mut self,
        benches: Vec<Box<dyn Bench>>,
        ctx: &Ctx,
        opts: &RunOptions,
        workers: Option<WorkerCmd>,
    ) -> RunOutcome {
        // The time since the last event goes to the benchmark whose round
        // finishes next: its preparation, calibration and samples.
        let mut last = Instant::now();
        let mut pending = Duration::ZERO;
        let outcome = runner::run(benches, ctx, opts, workers, &mut |ev| {
            pending += last.elapsed();
            last = Instant::now();
            match ev {
                Event::Started(ids) => self.bar.set_message(ids.join(" ")),
                Event::Finished(id, budget) => {
                    *self.doc.run.wall_s.entry(id.to_string()).or_default() +=
                        std::mem::take(&mut pending).as_secs_f64();
                    self.bar.inc(budget.as_millis() as u64)
                }
                Event::Result(seq, m) => {
                    if self.save_error.is_none()
                        && let Some(s) = self.store.as_deref_mut()
                        && let Err(e) = s.put_partial(&self.doc.run.id, seq, m)
                    {
                        self.save_error = Some(e);
                    }
                }
            }
        });
        self.bar.finish_and_clear();
        self.doc.run.duration_s = self.started.elapsed().as_secs_f64();
        outcome
    }
}

/// Prints the run, writes `--json` and says where it was saved; returns 1
/// when it could not be saved.
fn deliver(
    args: &RunArgs,
    doc: &RunDoc,
    saved: Option<anyhow::Result<&std::path::Path>>,
) -> anyhow::Result<i32> {
    let text = crate::report::render_run(doc, args.format)?;
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
    Ok(0)
}

/// First Ctrl-C: finish the current sample, then print and write what is
/// done. Second Ctrl-C: stop every round worker, remove the temp dir and
/// every scratch dir, and exit at once.
fn install_ctrlc(stop: Arc<AtomicBool>) {
    on_ctrl_c(
        stop,
        OnCtrlC {
            note: Some("opcost: stopping after the current sample (Ctrl-C again to abort)"),
            each: None,
            abort: Some(Box::new(|| {
                crate::harness::worker::abort_all();
                // The run's temp dir too: it is a scratch dir.
                scratch::remove_all();
            })),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_length_is_said_in_the_unit_people_use() {
        let s = Duration::from_secs_f64;
        assert_eq!(about(s(58.2)), "59 s");
        assert_eq!(about(s(119.0)), "119 s");
        assert_eq!(about(s(2029.0)), "34 min");
        assert_eq!(about(s(7800.0)), "2 h 10 min");
    }

    #[test]
    fn a_busy_machine_is_named_and_a_quiet_one_is_not() {
        let mut host = Host {
            logical_cpus: 2,
            loadavg: Some([1.6, 1.0, 0.5]),
            ..Host::default()
        };
        // Other programs using 0.8 of the 2 CPUs now.
        let note = busy_note(&host, Some(0.4)).expect("0.8 CPUs used by others is busy");
        assert!(
            note.contains("other programs are using 0.8 CPUs of 2"),
            "{note}"
        );
        assert!(note.contains("will take longer"), "{note}");
        // Quiet now, whatever the lagging load average says.
        assert_eq!(busy_note(&host, Some(0.05)), None);
        // Without /proc/stat, the load average.
        let note = busy_note(&host, None).expect("load 1.6 on 2 CPUs is busy");
        assert!(note.contains("load average 1.6 on 2 CPUs"), "{note}");
        host.loadavg = Some([0.4, 1.0, 0.5]);
        assert_eq!(busy_note(&host, None), None);
        host.loadavg = None;
        assert_eq!(busy_note(&host, None), None);
    }
}
