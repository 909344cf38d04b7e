//! System calls next to function calls and vDSO calls (E1), and whether
//! stdio buffering is worth it (E2).
//!
//! E1 puts a system call on the scale of a plain function call, and gives
//! the honest vDSO ratio: each operation the vDSO serves is also forced
//! through the raw system-call instruction, and the two are interleaved.
//! E2 compares 4-byte reads and writes through every layer (raw, libc,
//! stdio, Rust buffers) and sweeps the request size to find where
//! buffering stops paying.

mod calls;
mod findings;
mod io;
mod raw;

use super::bench::Suite;
use crate::harness::Bench;
use crate::host::Host;

/// The area name of the suite.
const AREA: &str = "syscall";

/// The system-call suite.
pub fn suite() -> Suite {
    Suite {
        name: AREA,
        summary: "function call vs system call vs vDSO; stdio buffering",
        benches,
        findings: findings::findings,
    }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    [calls::benches(), io::benches()]
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pid_cache_check_runs_here() {
        let _g = crate::os::child::test_lock();
        // glibc >= 2.25 and musl have no PID cache; the check must say so
        // on the machines the tests run on.
        assert!(!calls::libc_pid_cache().unwrap());
    }

    #[test]
    fn every_vdso_op_has_a_pair_in_the_suite() {
        let ids: Vec<String> = benches(&Host::default())
            .iter()
            .map(|b| b.id().to_string())
            .collect();
        for op in calls::VDSO_OPS {
            assert!(ids.contains(&op.vdso_id()), "{}", op.vdso_id());
            assert!(ids.contains(&op.raw_id()), "{}", op.raw_id());
        }
        for id in [calls::FUNCTION_CALL, calls::GETPID_RAW, calls::GETPID_LIBC] {
            assert!(ids.iter().any(|i| i == id), "{id}");
        }
    }
}
