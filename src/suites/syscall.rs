//! System calls next to function calls and vDSO calls (E1), and whether
//! stdio buffering is worth it (E2). (Placeholder: to be completed.)

use std::hint::black_box;

use super::{FnBench, Looped, Suite};
use crate::harness::{Bench, Finding, Measurement, Unit};
use crate::host::Host;

/// The system-call suite.
pub fn suite() -> Suite {
    Suite {
        name: "syscall",
        summary: "function call vs system call vs vDSO; stdio buffering",
        benches,
        findings,
    }
}

#[inline(never)]
fn plain_function(x: u64) -> u64 {
    x.wrapping_add(1)
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    vec![
        FnBench::new(
            "syscall.function_call",
            "a plain non-inlined function call",
            Unit::Latency,
            |_| {
                let mut x = 0u64;
                Ok(Looped::new(move || x = black_box(plain_function(black_box(x)))).boxed())
            },
        )
        .subtract_loop()
        .boxed(),
    ]
}

fn findings(_ms: &[Measurement]) -> Vec<Finding> {
    Vec::new()
}
