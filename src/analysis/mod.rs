//! The analyses: what kept runs say when read together.
//!
//! Measuring (`harness`, `suites`) makes one run; these read runs side by
//! side and decide: two runs compared benchmark by benchmark
//! ([`compare`]), a host's history searched for change points ([`trend`]),
//! the hosts of a fleet set against their groups ([`fleet`]), a run scored
//! against the shipped reference ([`score`]), and a run's findings decided
//! with the host's earlier runs ([`history_words`]). Each returns data that
//! the report layer renders without deciding anything ([`Overview`] is what
//! a report of several runs shows). Apart from measuring (which knows no
//! analysis) and from presentation; the pure statistics they share sit
//! below both, in [`crate::stats`].

pub mod compare;
pub mod fleet;
pub mod history_words;
pub mod score;
pub mod trend;

use crate::document::RunDoc;

/// What the analyses say of the runs a report shows, for the report to
/// render: the fleet view when they come from several hosts, the trend
/// when a host has enough of them for a change point.
#[derive(Clone, Debug, Default)]
pub struct Overview {
    /// The fleet view ([`fleet::of_docs`]).
    pub fleet: Option<fleet::Fleet>,
    /// The trend ([`trend::of_docs`]).
    pub trend: Option<trend::HistoryTrend>,
}

impl Overview {
    /// The analyses of `docs`.
    pub fn of(docs: &[RunDoc]) -> Overview {
        Overview {
            fleet: fleet::of_docs(docs),
            trend: trend::of_docs(docs),
        }
    }
}
