//! opcost: what the primitive operations of a computer cost on the machine
//! it runs on, measured with honest statistics and kept for comparison.

#![warn(missing_docs)]

pub mod analysis;
pub mod cli;
pub mod cmdtime;
pub mod commands;
pub mod document;
pub mod error;
pub mod harness;
pub mod headline;
pub mod host;
pub mod os;
pub mod pattern;
pub mod plan;
pub mod report;
pub mod stats;
pub mod store;
pub mod suites;
pub mod units;

/// In a unit test: true, after saying why on standard error, when the test
/// runs under user-mode emulation (`OPCOST_EMULATED=1`, set by
/// scripts/aarch64-test.sh) and checks something emulation cannot give
/// (`reason`); the test then returns early. Each call is one entry of the
/// emulation-only exceptions listed in that script.
#[cfg(test)]
pub(crate) fn emulation_exception(reason: &str) -> bool {
    let emulated = std::env::var_os("OPCOST_EMULATED").is_some_and(|v| v == "1");
    if emulated {
        eprintln!("emulation-only exception: {reason}");
    }
    emulated
}
