//! The analyses: what kept runs say when read together.
//!
//! Measuring (`harness`, `suites`) makes one run; these read runs side by
//! side and decide: two runs compared benchmark by benchmark
//! ([`compare`]), a host's history searched for change points ([`trend`]),
//! the hosts of a fleet set against their groups ([`fleet`]), a run scored
//! against the shipped reference ([`score`]), and a run's findings
//! decided with the host's earlier runs ([`history_words`]). Each returns data;
//! the report layer renders it and decides nothing. The pure statistics
//! they share sit below, in `harness::stats`.

pub mod compare;
pub mod fleet;
pub mod history_words;
pub mod score;
pub mod trend;
