//! Text: caseless compare and sort, and whether the order is right for the
//! language (E10); iterating the lines of a file, and the memory it takes
//! (E11).
//!
//! Why correctness sits beside speed: the fast ways of comparing caselessly
//! (lowercase, then compare bytes) put Swedish `ä` before `å`, and the right
//! ways (locale collation) cost many times more; a table of speeds alone
//! would recommend the wrong one. Every compare and sort result carries
//! `order_correct` for its language, checked against a fixed list written
//! from the CLDR rules, and the findings put the two side by side.

pub mod clocale;
pub mod collate;
mod findings;
pub mod lines;
pub mod methods;
pub mod user;
pub mod words;

use super::bench::Suite;
use crate::harness::Bench;
use crate::host::Host;

/// The text suite.
pub fn suite() -> Suite {
    Suite {
        name: "text",
        summary: "caseless compare and sort (bytes, ASCII, Unicode folding, C locale, ICU4X) with order correctness per language; line iteration speed and memory",
        benches,
        findings: findings::findings,
    }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    [collate::benches(), lines::benches()]
        .into_iter()
        .flatten()
        .collect()
}
