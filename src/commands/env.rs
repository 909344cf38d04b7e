//! `opcost env`: the machine description, as sectioned text or as JSON
//! (the same `host` block every run document carries).

use anyhow::Context;

use crate::cli::EnvArgs;
use crate::host::Host;

/// Prints the machine description.
pub fn execute(args: &EnvArgs) -> anyhow::Result<i32> {
    let host = Host::detect();
    if args.json {
        let text = serde_json::to_string_pretty(&host).context("serialising the host")?;
        println!("{text}");
    } else {
        print!("{}", host.render_text());
    }
    Ok(0)
}
