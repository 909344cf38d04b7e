//! Storage: file-system and device costs without page-cache lies (E6 disk,
//! E7, E15), each result naming where it was measured.
//!
//! Every benchmark works in a private directory inside the run's `--dir`
//! (removed on drop, also on Ctrl-C), sizes its files to the free space,
//! and attaches the location block (file system, mount options, block
//! device resolved through partitions, device-mapper and md to the physical
//! devices, the scheduler that really applies) to its result. Buffered,
//! synced and O_DIRECT variants are kept apart so that a page-cache figure
//! is never mistaken for the device's.

pub mod bonnie;
pub mod common;
mod findings;
pub mod meta;
pub mod rand;
pub mod seq;
pub mod stall;
pub mod sync;
pub mod tree;

use super::bench::Suite;
use crate::harness::Bench;
use crate::host::Host;

/// The storage suite.
pub fn suite() -> Suite {
    Suite {
        name: "storage",
        summary: "sequential and random I/O, fsync latency, metadata, small files, stdio vs block; with the device and scheduler in effect",
        benches,
        findings: findings::findings,
    }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    [
        seq::benches(),
        rand::benches(),
        sync::benches(),
        meta::benches(),
        tree::benches(),
        bonnie::benches(),
        stall::benches(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
