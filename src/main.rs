//! The opcost binary: parse the command line, run a command, map errors to
//! exit codes (0 ok, 1 runtime failure, 2 bad usage, 130 interrupted).

use clap::Parser;
use opcost::cli::{Cli, Command, RunArgs};
use opcost::commands;

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        None => commands::run::execute(&RunArgs::whole_machine()),
        Some(Command::Run(a)) => commands::run::execute(&a),
        Some(Command::List(a)) => commands::list::execute(&a),
        Some(Command::Env(a)) => commands::env::execute(&a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(commands::exit_code(&e));
        }
    }
}
