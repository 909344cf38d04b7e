//! The opcost binary: parse the command line, run a command, map errors to
//! exit codes (0 ok, 1 runtime failure, 2 bad usage, 130 interrupted).

#![warn(missing_docs)]

use opcost::cli::{Cli, Command, RunArgs};
use opcost::commands;

fn main() {
    // The small parent the fork benchmarks fork from is opcost re-executed.
    opcost::suites::process::small_parent::serve_if_asked();
    // So is the worker a run measures its rounds in.
    commands::worker::serve_if_asked();
    let cli = Cli::parse_args();
    if !matches!(
        cli.command,
        None | Some(Command::Run(_)) | Some(Command::Serve(_))
    ) {
        // A run restores it itself once its benchmarks (which use pipes) are
        // done; a server must outlive whoever reads its output.
        commands::quiet_broken_pipe();
    }
    // A URL's password never appears in a message: the parse error redacts it.
    let db = match cli
        .db
        .as_deref()
        .filter(|d| !d.is_empty())
        .map(opcost::store::Location::parse)
        .transpose()
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: --db: {e}");
            std::process::exit(2);
        }
    };
    let db = db.as_ref();
    let result = match cli.command {
        None => commands::run::execute(&RunArgs::whole_machine(), db),
        Some(Command::Run(a)) => commands::run::execute(&a, db),
        Some(Command::List(a)) => commands::list::execute(&a),
        Some(Command::Env(a)) => commands::env::execute(&a),
        Some(Command::Runs(a)) => commands::runs::execute(&a, db),
        Some(Command::Show(a)) => commands::show::execute(&a, db),
        Some(Command::Compare(a)) => commands::compare::execute(&a, db),
        Some(Command::Ab(a)) => commands::ab::execute(&a, db),
        Some(Command::Report(a)) => commands::report::execute(&a, db),
        Some(Command::Export(a)) => commands::export::execute(&a, db),
        Some(Command::Import(a)) => commands::import::execute(&a, db),
        Some(Command::Push(a)) => commands::push::execute(&a, db),
        Some(Command::Fleet(a)) => commands::fleet::execute(&a, db),
        Some(Command::Trend(a)) => commands::trend::execute(&a, db),
        Some(Command::Serve(a)) => commands::serve::execute(&a),
        Some(Command::Cmd(a)) => commands::cmd::execute(&a, db),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(opcost::error::exit_code(&e));
        }
    }
}
