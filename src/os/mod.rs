//! Operating-system helpers that benchmarks of any suite share and that
//! know nothing of measuring: starting, capping and reaping child
//! processes. CPU pinning lives in [`crate::harness::affinity`], which the
//! runner uses too.
//!
//! Why a module of its own: IPC peers and process benchmarks both fork
//! children; with the helpers here neither suite reaches into the other.

pub mod child;
