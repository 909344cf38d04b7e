//! The command line turned into requests, in one place: `opcost run`'s
//! and `opcost ab`'s flags become a [`RunRequest`] or an [`AbRequest`],
//! and every flag that cannot go with another, or names a file that cannot
//! be written, is refused here with the usage exit code, before anything
//! runs.

use crate::cli::{AbArgs, RunArgs};
use crate::document::check_writable;
use crate::harness::worker::Launch;
use crate::plan::{AbRequest, DataPaths, FarEnd, RunRequest, Sampling, Setting};

use super::usage;

/// The request of `opcost run` (and of a bare `opcost`).
pub fn run(args: &RunArgs) -> anyhow::Result<RunRequest> {
    if let Some(path) = &args.json {
        check_writable(path).map_err(|e| usage(format!("--json {}: {e:#}", path.display())))?;
    }
    let far = FarEnd::of_flags(
        args.peer.as_deref(),
        args.token.as_deref(),
        args.target.as_deref(),
        args.max_pps,
    )?;
    RunRequest {
        patterns: args.patterns.clone(),
        profile: args.profile,
        sampling: Sampling {
            samples: args.samples.map(|n| n as usize),
            rounds: args.rounds.map(|n| n as usize),
            target_precision: args.target_precision.map(|p| p / 100.0),
        },
        seed: args.seed,
        cpu: args.cpu,
        dir: args.dir.clone(),
        data: DataPaths {
            inputs: args.input.clone(),
            words: args.words.clone(),
            locales: args.locale.clone(),
        },
        far,
        one_process: args.one_process,
        matrix: args.matrix,
        label: args.label.clone(),
        save: !args.no_save,
        history: !args.no_history,
    }
    .check()
}

/// The request of `opcost ab`: both sides' settings, and what they measure.
pub fn ab(args: &AbArgs) -> anyhow::Result<AbRequest> {
    if args.format.is_dashboard() {
        return Err(usage(
            "--format bmf and github-benchmark describe one run, and ab prints a comparison: use --format json, or `opcost show RUN --format bmf` for either side",
        ));
    }
    let side = |cpu, env: &[(String, String)], wrap: &Option<String>| Setting {
        cpu,
        launch: Launch {
            env: env.to_vec(),
            wrap: wrap.clone(),
        },
    };
    AbRequest::new(
        args.patterns.clone(),
        args.profile,
        args.rounds,
        (
            side(args.a_cpu, &args.a_env, &args.a_wrap),
            side(args.b_cpu, &args.b_env, &args.b_wrap),
        ),
        args.dir.clone(),
        !args.no_save,
    )
}
