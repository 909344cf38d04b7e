//! opcost: what the primitive operations of a computer cost on the machine
//! it runs on, measured with honest statistics and kept for comparison.

pub mod cli;
pub mod cmdtime;
pub mod commands;
pub mod compare;
pub mod document;
pub mod harness;
pub mod host;
pub mod report;
pub mod store;
pub mod suites;
