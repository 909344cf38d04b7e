//! Command-line definitions (clap) only; the work is in `commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::harness::Profile;

/// What primitive operations cost on this machine: system calls, IPC,
/// process creation, memory, storage — measured with honest statistics.
#[derive(Debug, Parser)]
#[command(name = "opcost", version, about, long_about = None)]
pub struct Cli {
    /// The command; without one, every benchmark runs at the quick profile.
    #[command(subcommand)]
    pub command: Option<Command>,
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
}

/// Options of `opcost run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Id prefixes or globs (`syscall`, `syscall.io.*`); none selects everything.
    pub patterns: Vec<String>,
    /// Effort level: quick (<1 min for everything), default, thorough.
    #[arg(long, value_enum, default_value = "default")]
    pub profile: Profile,
    /// Also write the run as a JSON document to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Pin the run to CPU N.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Samples per benchmark (overrides the profile's count and its time budget).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(3..=100_000))]
    pub samples: Option<u32>,
    /// Directory for file benchmarks (default: a private temp dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A label saved with the run (e.g. "mitigations=off").
    #[arg(long)]
    pub label: Option<String>,
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
            dir: None,
            label: None,
        }
    }
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
