//! All-CPU bandwidth with blocks handed out dynamically, as sysbench's
//! memory test does: every thread takes the next 1 MiB block of the pass
//! from a shared counter until the pass is done, so a thread that other
//! work slows down takes fewer blocks instead of holding everyone up (the
//! fixed slices of `threads=all` wait for the slowest thread). Both are
//! reported: the difference is what an uneven machine costs fixed slices.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use serde_json::json;

use super::bandwidth::{Kernel, Passes, join_spans, wall_of};
use super::region::{Pages, Region};
use crate::harness::affinity;
use crate::harness::{PrepareError, Timed};

/// Bytes of each array one block covers.
pub const BLOCK: usize = 1 << 20;

/// A raw array base shared by the threads (each touches disjoint blocks).
#[derive(Clone, Copy)]
struct Base(*mut u8);
// SAFETY: threads only touch disjoint blocks, handed out once each.
unsafe impl Send for Base {}
// SAFETY: as above.
unsafe impl Sync for Base {}

/// A prepared dynamic all-CPU benchmark; one operation is one pass.
pub struct Dynamic {
    passes: Passes,
}

impl Dynamic {
    /// Maps and fills `kernel`'s arrays of `array` bytes (whole passes).
    pub fn new(
        kernel: Kernel,
        array: usize,
        pass: usize,
        cpus: Vec<usize>,
        warnings: Vec<String>,
    ) -> Result<Dynamic, PrepareError> {
        if pass == 0
            || !pass.is_multiple_of(BLOCK)
            || !array.is_multiple_of(pass)
            || cpus.is_empty()
        {
            return Err(PrepareError::Fail(anyhow!(
                "array of {array} bytes is not whole passes of {pass} bytes in 1 MiB blocks for {} CPUs",
                cpus.len()
            )));
        }
        crate::suites::bench::check_memory((array * kernel.arrays()) as u64)?;
        let mut arrays = Vec::new();
        for i in 0..kernel.arrays() {
            let mut r = Region::from_pool_untouched(array, Pages::Default)?;
            r.touch();
            r.as_mut_slice::<f64>().fill(if i == 0 { 1.0 } else { 0.0 });
            arrays.push(r);
        }
        let details = json!({
            "array_bytes": array,
            "arrays": kernel.arrays(),
            "pass_bytes": pass,
            "block_bytes": BLOCK,
            "threads": cpus.len(),
            "cpus": cpus,
            "hand_out": "dynamic",
            "accounting": kernel.accounting(),
        });
        let mut passes = Passes::new(kernel, arrays, pass, cpus, warnings);
        passes.details = details;
        Ok(Dynamic { passes })
    }
}

impl Timed for Dynamic {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let (first, windows) = self.passes.take(ops);
        let Passes {
            kernel,
            arrays,
            pass,
            cpus,
            ..
        } = &self.passes;
        let per_pass = pass / BLOCK;
        let total = (ops as usize).saturating_mul(per_pass);
        let bases: Vec<Base> = arrays.iter().map(|r| Base(r.as_ptr())).collect();
        let next = AtomicUsize::new(0);
        let arrived = AtomicUsize::new(0);
        let (kernel, pass, n) = (*kernel, *pass, cpus.len());
        let spans = std::thread::scope(|s| {
            let mut handles = Vec::new();
            for &cpu in cpus {
                let (next, arrived, bases) = (&next, &arrived, &bases);
                let h = std::thread::Builder::new()
                    .name("opcost-bw-dyn".into())
                    .spawn_scoped(s, move || {
                        let _ = affinity::pin_to(cpu);
                        arrived.fetch_add(1, Ordering::AcqRel);
                        while arrived.load(Ordering::Acquire) < n {
                            std::hint::spin_loop();
                        }
                        let start = Instant::now();
                        loop {
                            let b = next.fetch_add(1, Ordering::Relaxed);
                            if b >= total {
                                break;
                            }
                            let w = (first + b / per_pass) % windows;
                            let off = w * pass + (b % per_pass) * BLOCK;
                            // SAFETY: block b is handed to this thread only;
                            // off + BLOCK lies inside every array.
                            let mut parts: Vec<&mut [u8]> = bases
                                .iter()
                                .map(|a| unsafe {
                                    std::slice::from_raw_parts_mut(a.0.add(off), BLOCK)
                                })
                                .collect();
                            kernel.apply(&mut parts);
                        }
                        (start, Instant::now())
                    })
                    .context("starting a thread")?;
                handles.push(h);
            }
            join_spans(handles)
        })?;
        wall_of(&spans)
    }
    fn warnings(&self) -> Vec<String> {
        self.passes.warnings.clone()
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.passes.details.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_is_copied_once_by_some_thread() {
        let mut d = Dynamic::new(
            Kernel::Copy,
            4 * BLOCK,
            2 * BLOCK,
            vec![0, 0, 0],
            Vec::new(),
        )
        .unwrap();
        assert!(d.run(2).unwrap() > Duration::ZERO);
        assert!(
            d.passes.arrays[1]
                .as_mut_slice::<f64>()
                .iter()
                .all(|&x| x == 1.0)
        );
        assert_eq!(d.details().unwrap()["hand_out"], "dynamic");
        for k in [Kernel::Read, Kernel::Write] {
            let mut d = Dynamic::new(k, 2 * BLOCK, 2 * BLOCK, vec![0, 0], Vec::new()).unwrap();
            assert!(d.run(3).unwrap() > Duration::ZERO);
        }
        assert!(Dynamic::new(Kernel::Read, BLOCK, BLOCK / 2, vec![0], Vec::new()).is_err());
        assert!(Dynamic::new(Kernel::Read, BLOCK, BLOCK, Vec::new(), Vec::new()).is_err());
    }
}
