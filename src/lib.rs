//! opcost: what the primitive operations of a computer cost on the machine
//! it runs on, measured with honest statistics and kept for comparison.

#![warn(missing_docs)]

pub mod cli;
pub mod cmdtime;
pub mod commands;
pub mod compare;
pub mod document;
pub mod error;
pub mod fleet;
pub mod harness;
pub mod headline;
pub mod host;
pub mod os;
pub mod pattern;
pub mod report;
pub mod score;
pub mod store;
pub mod suites;
pub mod trend;
pub mod units;
