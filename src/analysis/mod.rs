//! The analyses: what kept runs say when read together.
//!
//! Measuring (`harness`, `suites`) makes one run; these read runs side by
//! side and decide: two runs compared benchmark by benchmark
//! ([`compare`]), a host's history searched for change points ([`trend`]),
//! the hosts of a fleet set against their groups ([`fleet`]), a run scored
//! against the shipped reference ([`score`]), and a run's findings
//! settled with the host's earlier runs ([`settle`]). Each returns data;
//! the report layer renders it and decides nothing. The pure statistics
//! they share sit below, in `harness::stats`.

pub mod compare;
pub mod fleet;
pub mod score;
pub mod settle;
pub mod trend;
