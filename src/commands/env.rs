//! `opcost env`: the machine description, as text or JSON.

use crate::cli::EnvArgs;
use crate::host::Host;

/// Prints the machine description.
pub fn execute(args: &EnvArgs) -> anyhow::Result<i32> {
    let host = Host::detect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&host)?);
    } else {
        print!("{}", host.render_text());
    }
    Ok(0)
}
