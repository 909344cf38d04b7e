//! Command-line definitions (clap) only; the work is in `commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::harness::Profile;

pub mod version;

/// What primitive operations cost on this machine: system calls, IPC,
/// process creation, memory, storage — measured with honest statistics.
#[derive(Debug, Parser)]
#[command(name = "opcost", version, about, long_about = None)]
pub struct Cli {
    /// The command; without one, every benchmark runs at the quick profile.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The results history: an SQLite file (default:
    /// $XDG_DATA_HOME/opcost/results.db) or a PostgreSQL database
    /// (postgres://USER@HOST/DB; add ?sslmode=require for TLS).
    #[arg(
        long,
        global = true,
        value_name = "PATH|URL",
        env = "OPCOST_DB",
        hide_env_values = true
    )]
    pub db: Option<String>,
}

impl Cli {
    /// Parses the command line, exiting with clap's message on an error.
    ///
    /// Each subcommand's usage line is fixed to its plain form (`opcost run
    /// [OPTIONS] [PATTERNS]...`): clap otherwise writes the usage of an
    /// error with the arguments it saw, and after a typo it suggests a fix
    /// for (`--profil`) that line read as if the suggested option and the
    /// patterns were both required.
    pub fn parse_args() -> Cli {
        use clap::{CommandFactory, FromArgMatches};
        let mut cmd = Cli::command();
        if version::asked(std::env::args_os()) {
            // Read from the executable itself, so only when it is printed.
            cmd = cmd.version(&*Box::leak(version::text().into_boxed_str()));
        }
        let matches = plain_usages(cmd).get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// `cmd` with every subcommand's usage line fixed to the one clap writes
/// when no argument has been seen.
pub fn plain_usages(mut cmd: clap::Command) -> clap::Command {
    cmd.build();
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(&name, |sub| {
            let usage = sub.clone().render_usage().to_string();
            let plain = usage.trim().trim_start_matches("Usage:").trim().to_string();
            sub.override_usage(plain)
        });
    }
    cmd
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the benchmarks that match the patterns (all when none is given).
    Run(RunArgs),
    /// List benchmarks with their unit and a one-line summary.
    List(ListArgs),
    /// Describe this machine: CPU, caches, kernel, mitigations, clocksource...
    Env(EnvArgs),
    /// List the saved runs, newest first.
    Runs(RunsArgs),
    /// Print a saved run (or a JSON file) as the run table.
    Show(ShowArgs),
    /// Compare two runs: ratio B/A with its 95% CI and a verdict per benchmark.
    Compare(CompareArgs),
    /// Measure benchmarks under two settings (CPU, environment, wrapper),
    /// alternating A and B round by round, and compare them.
    Ab(AbArgs),
    /// Write an offline HTML report with charts of one or more runs.
    Report(ReportArgs),
    /// Print a saved run as JSON, CSV or Markdown.
    Export(ExportArgs),
    /// Add run documents (JSON, e.g. from other machines) to the history.
    Import(ImportArgs),
    /// Copy runs to another history, e.g. a fleet's shared PostgreSQL database.
    Push(PushArgs),
    /// The latest run of each host side by side, hosts grouped by CPU and
    /// kernel, outliers flagged with what may explain them.
    Fleet(FleetArgs),
    /// Each benchmark's runs on a host over time: when its cost changed,
    /// by how much, and what changed in the host description then.
    Trend(TrendArgs),
    /// Be the far end of `opcost run net --peer` (the net tests' responder only).
    Serve(ServeArgs),
    /// Time whole programs as processes, each net of its baseline (start-up).
    Cmd(CmdArgs),
}

/// How a run or a comparison is printed (defined with the renderers).
pub use crate::report::Format;

/// Options of `opcost run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Id prefixes or globs (`syscall`, `syscall.io.*`); none selects everything.
    pub patterns: Vec<String>,
    /// Effort level: quick (<1 min for everything), default, thorough.
    #[arg(long, value_enum, default_value = "default")]
    pub profile: Profile,
    /// Also write the run as a JSON document to FILE (`-`: standard output,
    /// and the table goes to standard error).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Pin the run to CPU N.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Samples per benchmark (overrides the profile's count and its time budget).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(3..=100_000))]
    pub samples: Option<u32>,
    /// Independent rounds per benchmark (overrides the profile's count);
    /// the result's interval comes from the spread of its rounds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: Option<u32>,
    /// The interval half-width to aim for, in percent (default: 2): after
    /// a first stage of 3 rounds each benchmark's rounds are decided once,
    /// between 3 and the profile's count, to reach it (or half the
    /// run-to-run spread this host's history shows, when wider); 0 takes
    /// the profile's rounds, no more and no fewer.
    #[arg(long, value_name = "PCT", value_parser = parse_precision)]
    pub target_precision: Option<f64>,
    /// Seed of the order in which each pass measures the benchmarks (default:
    /// random); every run records its own, so `--seed` repeats an order.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Directory for file benchmarks (default: a private temp dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A file of your own for the codec suite to measure (repeatable);
    /// its name and size are recorded, never its content.
    #[arg(long, value_name = "FILE")]
    pub input: Vec<PathBuf>,
    /// A list of your own for the text suite to compare and sort (UTF-8, one
    /// entry a line; repeatable): `text.user.*`, each method's order checked
    /// against ICU's for the locale. Its name, size and line count are
    /// recorded, never its content.
    #[arg(long, value_name = "FILE")]
    pub words: Vec<PathBuf>,
    /// The locale of the --words lists (repeatable; a name `locale -a`
    /// lists, in UTF-8, e.g. tr_TR.UTF-8); default: the environment's.
    #[arg(long, value_name = "NAME", requires = "words")]
    pub locale: Vec<String>,
    /// A label saved with the run (e.g. "mitigations=off").
    #[arg(long)]
    pub label: Option<String>,
    /// Do not save the run in the history.
    #[arg(long)]
    pub no_save: bool,
    /// Findings from this run alone: do not settle their words with earlier
    /// runs of the host in the history.
    #[arg(long)]
    pub no_history: bool,
    /// How the results are printed.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Run the net benchmarks against `opcost serve` at HOST:PORT (only `net.peer.*`).
    #[arg(long, value_name = "HOST:PORT")]
    pub peer: Option<String>,
    /// The token the peer printed when it started (with --peer).
    #[arg(long, value_name = "TOKEN", requires = "peer")]
    pub token: Option<String>,
    /// Measure ICMP echo against HOST, a device that runs none of opcost
    /// (only `net.target.*`; never a default).
    #[arg(long, value_name = "HOST", conflicts_with = "peer")]
    pub target: Option<String>,
    /// Most ICMP echo requests per second sent to --target (default 1000).
    #[arg(long, value_name = "N", requires = "target", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_pps: Option<u32>,
    /// Measure every round in this process (by default each round runs in
    /// an opcost process of its own, so that the interval holds the
    /// variation between executions, not only within one).
    #[arg(long)]
    pub one_process: bool,
    /// Also measure the CPU x CPU matrix of the cache-line round trip:
    /// one CPU per core (`cores`, the default) or every CPU (`all`), in a
    /// time bounded by the profile (90 s at quick, whatever the CPU count).
    #[arg(long, value_enum, value_name = "CPUS", num_args = 0..=1, default_missing_value = "cores")]
    pub matrix: Option<crate::suites::topology::matrix::Sampling>,
}

impl RunArgs {
    /// The arguments of a bare `opcost`: everything at the quick profile.
    pub fn whole_machine() -> RunArgs {
        RunArgs {
            patterns: Vec::new(),
            profile: Profile::Quick,
            json: None,
            cpu: None,
            samples: None,
            rounds: None,
            target_precision: None,
            seed: None,
            dir: None,
            input: Vec::new(),
            words: Vec::new(),
            locale: Vec::new(),
            label: None,
            no_save: false,
            no_history: false,
            format: Format::Text,
            peer: None,
            token: None,
            target: None,
            max_pps: None,
            one_process: false,
            matrix: None,
        }
    }
}

/// Options of `opcost cmd`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  \
opcost cmd 'python3 m.py 2000' ::: 'python3 m.py 1'\n  \
opcost cmd --baseline '{} /dev/null' 'python3 m.py' 'lua m.lua'\n  \
opcost cmd -P size 1000 5000 --step 1000 './loop {size}' ::: './loop 1'\n  \
opcost cmd --cwd /tmp/x --prepare 'rm -rf src' 'tar -xf ../src.tar'")]
pub struct CmdArgs {
    /// Commands to time; `CMD ::: BASELINE` gives a command its own baseline.
    #[arg(required = true, value_name = "CMD")]
    pub commands: Vec<String>,
    /// Baseline of every command without its own; `{}` stands for the command's program.
    #[arg(long, value_name = "CMD")]
    pub baseline: Option<String>,
    /// Unmeasured runs of each command (and its baseline) first.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: u32,
    /// Measured runs (pairs with the baseline); default: at least 10, about 3 s per command.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub runs: Option<u32>,
    /// Run through /bin/sh -c, its own start-up measured and subtracted.
    #[arg(long)]
    pub shell: bool,
    /// Standard input of every run (default: /dev/null).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Names for the results (`cmd.NAME`), one per command, in order.
    #[arg(long, value_name = "NAME")]
    pub name: Vec<String>,
    /// Accept non-zero exits (and deaths by signal) instead of failing.
    #[arg(short = 'i', long = "ignore-failure")]
    pub ignore_failure: bool,
    /// Kill a run (its whole process group) after DUR: 500ms, 2s, 1.5m, or seconds.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Scan a parameter: `{VAR}` in the commands takes every value MIN..=MAX.
    #[arg(short = 'P', long = "parameter-scan", num_args = 3, value_names = ["VAR", "MIN", "MAX"])]
    pub scan: Option<Vec<String>>,
    /// Step of the parameter scan.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub step: i64,
    /// Let the commands' stdout and stderr through instead of discarding them.
    #[arg(long)]
    pub show_output: bool,
    /// Working directory of every command, baseline and hook.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Run CMD before every run (warm-ups and baselines included), untimed.
    #[arg(long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Run CMD after every run, untimed.
    #[arg(long, value_name = "CMD")]
    pub conclude: Option<String>,
    /// Run CMD once before the runs of each command, untimed.
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Run CMD once after the runs of each command, untimed.
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Also write the run as a JSON document to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// A label saved with the run.
    #[arg(long)]
    pub label: Option<String>,
    /// Do not save the run in the history.
    #[arg(long)]
    pub no_save: bool,
    /// How the results are printed.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// Parses a duration: a number with `ms`, `s` or `m`, or plain seconds.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 500ms, 2s, 1.5m)"))?;
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return Err(format!("'{s}': the duration must be positive"));
    }
    std::time::Duration::try_from_secs_f64(v * scale).map_err(|e| format!("'{s}': {e}"))
}

/// Options of `opcost list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only ids matching this prefix or glob.
    pub pattern: Option<String>,
}

/// Options of `opcost env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Options of `opcost runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only runs of this host name.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Show at most N runs (0: all).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
}

/// Options of `opcost show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A run id (or a unique prefix), `latest`, `host:NAME` or a JSON file.
    #[arg(default_value = "latest")]
    pub run: String,
    /// How the run is printed.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// Options of `opcost compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Run A, the reference: an id (or unique prefix), `latest`, `host:NAME`
    /// or a JSON file; several runs of one side joined by commas
    /// (`3f2a,77c1,9e04`), or the latest N runs of a host (`host:NAME@N`).
    pub a: String,
    /// Run B, compared with A (the same forms).
    pub b: String,
    /// Only benchmarks matching these id prefixes or globs.
    pub patterns: Vec<String>,
    /// Smallest relative difference called faster or slower, in percent
    /// (2 by default, calibrated on real A/A pairs: see `compare::DEFAULT_THRESHOLD`).
    #[arg(long, value_name = "PCT", default_value_t = crate::analysis::compare::DEFAULT_THRESHOLD * 100.0,
          value_parser = parse_percent)]
    pub threshold: f64,
    /// Do not use earlier runs of the same host in the history as the noise floor.
    #[arg(long)]
    pub no_history: bool,
    /// How the comparison is printed.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// A CI gate: exit 1 when a row is called slower by more than PCT
    /// (`slower[:PCT]`), or an area's geometric mean is (`area[:PCT]`);
    /// the offending rows are printed first. Repeatable.
    #[arg(long, value_name = "slower[:PCT]|area[:PCT]")]
    pub fail_on: Vec<crate::analysis::compare::Gate>,
}

/// Options of `opcost report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Runs to show side by side: ids (or unique prefixes), `latest`,
    /// `host:NAME` or JSON files. Default: the latest run.
    pub runs: Vec<String>,
    /// The HTML file to write (`-`: standard output).
    #[arg(short, long, value_name = "FILE.html")]
    pub output: PathBuf,
}

/// Options of `opcost export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A run id (or a unique prefix), `latest` or `host:NAME`.
    #[arg(default_value = "latest")]
    pub run: String,
    /// The format.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Write to FILE instead of standard output (`-` is standard output too).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Options of `opcost import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Run documents (JSON, as written by `run --json` or `export`), or
    /// directories: every `.json` file directly in one is imported.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub files: Vec<PathBuf>,
}

/// Options of `opcost push`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
opcost push --to postgres://opcost@db.example/opcost\n  \
opcost push host:web1@5 3f2a --to 'postgres://opcost@db.example/opcost?sslmode=require'")]
pub struct PushArgs {
    /// Runs to copy: ids (or unique prefixes), `latest`, `host:NAME`,
    /// `host:NAME@N`, `host:NAME@all`, `@all`. Default: every complete run.
    pub runs: Vec<String>,
    /// The history to copy them to: a postgres:// URL (or an SQLite path).
    #[arg(long, value_name = "URL|PATH")]
    pub to: String,
}

/// Options of `opcost fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Benchmarks to show as columns (id prefixes or globs); default: the
    /// headline figures.
    pub patterns: Vec<String>,
    /// Only runs with this label (e.g. the label a fleet job ran with).
    #[arg(long)]
    pub label: Option<String>,
    /// Flag a host whose figure is further than K scaled MADs from its
    /// group's median (and at least --margin from it).
    #[arg(long, value_name = "K", default_value_t = 4.0, value_parser = parse_positive)]
    pub k: f64,
    /// The smallest relative difference from the group's median flagged, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 10.0, value_parser = parse_percent)]
    pub margin: f64,
    /// How the view is printed.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// Options of `opcost trend`.
#[derive(Debug, Args)]
pub struct TrendArgs {
    /// Only benchmarks matching these id prefixes or globs.
    pub patterns: Vec<String>,
    /// Only this host's runs.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Only runs started on or after this date (YYYY-MM-DD, or an RFC 3339 time).
    #[arg(long, value_name = "DATE", value_parser = parse_since)]
    pub since: Option<String>,
    /// Only runs with this label.
    #[arg(long)]
    pub label: Option<String>,
    /// The level of the tests (false change points per series tested, at
    /// most): half of it for the runs where a recorded fact changed, shared
    /// among them, and half for the scan (all of it without such runs).
    #[arg(long, value_name = "P", default_value_t = crate::analysis::trend::Method::default().alpha,
          value_parser = parse_level)]
    pub alpha: f64,
    /// The smallest change reported, in percent: a change point's 95%
    /// interval must lie wholly beyond it (its estimate, at a run where a
    /// recorded fact changed).
    #[arg(long, value_name = "PCT", default_value_t = 3.0, value_parser = parse_percent)]
    pub min_change: f64,
    /// How the change points are printed.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// A `--since` date: YYYY-MM-DD, or an RFC 3339 time (its date is read).
fn parse_since(s: &str) -> Result<String, String> {
    let date = s.get(..10).unwrap_or(s);
    match chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d") {
        Ok(_) => Ok(s.to_string()),
        Err(_) => Err("give a date (2026-03-01) or an RFC 3339 time".to_string()),
    }
}

/// A test's level: a number strictly between 0 and 1.
fn parse_level(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err("give a level between 0 and 1".to_string()),
    }
}

/// A positive, finite number.
fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("give a positive number".to_string()),
    }
}

/// Options of `opcost serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; loopback unless told otherwise.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:7207")]
    pub listen: String,
    /// The token clients must present (a random one is generated and printed when not given).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Clients served at once; more are refused.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_clients: u32,
    /// Longest test, in seconds.
    #[arg(long, value_name = "S", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub max_test_secs: u64,
    /// Most bytes one test may move, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 262_144,
          value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub max_test_mib: u64,
    /// Exit after this many seconds without a connection (0: never).
    #[arg(long, value_name = "S", default_value_t = 600)]
    pub idle_secs: u64,
}

/// Parses a percentage between 0 and 1000 into a fraction.
fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if (0.0..=1000.0).contains(&v) {
        Ok(v / 100.0)
    } else {
        Err(format!("{v} is not between 0 and 1000"))
    }
}

/// Options of `opcost ab`.
#[derive(Debug, Clone, Args)]
pub struct AbArgs {
    /// Id prefixes or globs of the benchmarks to measure under both settings.
    #[arg(required = true)]
    pub patterns: Vec<String>,
    /// Effort level: the number of rounds (A and B alternate once per round).
    #[arg(long, value_enum, default_value = "default")]
    pub profile: Profile,
    /// Rounds per side (overrides the profile's count).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=100))]
    pub rounds: Option<u32>,
    /// Setting A: pin to CPU N.
    #[arg(long, value_name = "N")]
    pub a_cpu: Option<usize>,
    /// Setting B: pin to CPU N.
    #[arg(long, value_name = "N")]
    pub b_cpu: Option<usize>,
    /// Setting A: an environment variable NAME=VALUE (repeatable).
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_env)]
    pub a_env: Vec<(String, String)>,
    /// Setting B: an environment variable NAME=VALUE (repeatable).
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_env)]
    pub b_env: Vec<(String, String)>,
    /// Setting A: a wrapper command run by /bin/sh before opcost (e.g. `numactl -m 0`, `nice -n 10`).
    #[arg(long, value_name = "CMD")]
    pub a_wrap: Option<String>,
    /// Setting B: a wrapper command.
    #[arg(long, value_name = "CMD")]
    pub b_wrap: Option<String>,
    /// Directory for file benchmarks (default: a private temp dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Do not save the two runs in the history.
    #[arg(long)]
    pub no_save: bool,
    /// Smallest relative difference called faster or slower, in percent
    /// (2 by default: A and B are compared round pair by round pair, so
    /// what the machine does between runs is not in the difference).
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = parse_percent)]
    pub threshold: f64,
    /// How the comparison is printed.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// A CI gate, as `compare` has it: exit 1 when a row of B is called
    /// slower than A by more than PCT (`slower[:PCT]`), or an area's
    /// geometric mean is (`area[:PCT]`); the offending rows are printed
    /// first. Repeatable.
    #[arg(long, value_name = "slower[:PCT]|area[:PCT]")]
    pub fail_on: Vec<crate::analysis::compare::Gate>,
}

/// Parses `NAME=VALUE`.
fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!("'{s}' is not NAME=VALUE")),
    }
}

/// A `--target-precision` in percent: a finite number from 0 to 50.
fn parse_precision(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage (e.g. 2)"))?;
    if v.is_finite() && (0.0..=50.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not between 0 and 50"))
    }
}
