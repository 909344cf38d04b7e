//! Load-to-use latency by pointer chasing (E8).
//!
//! Each cache line of a working set holds the address of the next line to
//! visit, so every load depends on the one before: the time per load is the
//! latency of whichever level of the hierarchy holds the working set. In
//! random order (one cycle through every line, Sattolo's algorithm) the
//! hardware prefetcher cannot guess the next address and the cache cliffs
//! show; in sequential order (a 64-byte stride, as lmbench's `lat_mem_rd`
//! walks by default) the prefetcher hides most of them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::json;

use super::region::{Pages, Region};
use crate::harness::warnings::Warning;
use crate::harness::{Ctx, PrepareError, Timed};

/// Bytes between two chased pointers: one cache line on most CPUs.
pub const LINE: usize = 64;

/// Pointers per line slot (only the first one is chased).
const SLOT_WORDS: usize = LINE / std::mem::size_of::<usize>();

/// Loads unrolled per loop iteration, so the loop counter hides in their shadow.
const UNROLL: u64 = 16;

/// How often a long build checks for Ctrl-C, in lines.
const STOP_CHECK_EVERY: usize = 1 << 20;

/// The order in which the lines are visited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// One random cycle through every line: defeats the prefetcher.
    Random,
    /// Line after line, wrapping at the end: what the prefetcher hides.
    Stride,
}

impl Order {
    /// The name recorded with results.
    pub fn name(self) -> &'static str {
        match self {
            Order::Random => "random",
            Order::Stride => "stride",
        }
    }
}

/// A prepared pointer chain; each operation is one dependent load.
pub struct Chase {
    /// Owns the memory the chain points into; `cur` is valid while it lives.
    region: Region,
    cur: *const usize,
    warnings: Vec<String>,
    details: serde_json::Value,
}

/// Builds the chain for a working set of `size` bytes (untimed).
pub fn prepare(
    size: usize,
    order: Order,
    pages: Pages,
    ctx: &Ctx,
    mut warnings: Vec<String>,
) -> Result<Box<dyn Timed>, PrepareError> {
    let lines = (size / LINE).max(2);
    let mut region = Region::from_pool(lines * LINE, pages)?;
    match order {
        Order::Random => link_random(&mut region, lines, ctx)?,
        Order::Stride => link_stride(&mut region, lines),
    }
    let huge = region.huge_fraction();
    if pages == Pages::Huge {
        match huge {
            Some(f) if f == 0.0 && size >= super::region::huge_page_size() => {
                return Err(PrepareError::Skip(format!(
                    "the kernel gave no transparent huge pages (THP mode: {}); enable them with `echo madvise > /sys/kernel/mm/transparent_hugepage/enabled`",
                    super::region::thp_mode().unwrap_or_else(|| "unknown".into())
                )));
            }
            Some(f) if f < 0.9 && size >= super::region::huge_page_size() => {
                warnings.push(Warning::FewHugePages { share: f }.to_string())
            }
            _ => {}
        }
    }
    let details = json!({
        "lines": lines,
        "line_bytes": LINE,
        "pages": pages.name(),
        "huge_page_fraction": huge,
        "ghz_estimate": crate::harness::clock::ghz_estimate(),
        "sysfs_caches": ctx
            .host
            .caches
            .iter()
            .filter(|c| c.kind != "Instruction")
            .map(|c| json!({"level": c.level, "size_bytes": c.size_bytes}))
            .collect::<Vec<_>>(),
    });
    let cur = region.as_ptr().cast::<usize>().cast_const();
    Ok(Box::new(Chase {
        region,
        cur,
        warnings,
        details,
    }))
}

/// Links every line into one random cycle (Sattolo's algorithm, in place:
/// each line first holds a line number, then the address it stands for).
fn link_random(region: &mut Region, lines: usize, ctx: &Ctx) -> Result<(), PrepareError> {
    link_random_spaced(region, lines, LINE, ctx)
}

/// [`link_random`] over `lines` lines `spacing` bytes apart (a multiple of
/// [`LINE`]): line i at byte i x spacing of the region.
fn link_random_spaced(
    region: &mut Region,
    lines: usize,
    spacing: usize,
    ctx: &Ctx,
) -> Result<(), PrepareError> {
    let base = region.as_ptr() as usize;
    let step = spacing / std::mem::size_of::<usize>();
    let words = region.as_mut_slice::<usize>();
    for i in 0..lines {
        words[i * step] = i;
    }
    let mut rng = fastrand::Rng::with_seed(0x5eed ^ lines as u64);
    for i in (1..lines).rev() {
        if i % STOP_CHECK_EVERY == 0 && ctx.stopping() {
            return Err(PrepareError::Skip("interrupted while building".into()));
        }
        let j = rng.usize(..i);
        words.swap(i * step, j * step);
    }
    for i in 0..lines {
        words[i * step] = base + words[i * step] * spacing;
    }
    Ok(())
}

/// A random chase through `lines` lines `spacing` bytes apart (a multiple
/// of [`LINE`]), for sweeps of the distance between the lines rather than
/// of the working set; `details` are recorded with the result.
pub fn prepare_spaced(
    lines: usize,
    spacing: usize,
    pages: Pages,
    ctx: &Ctx,
    details: serde_json::Value,
) -> Result<Chase, PrepareError> {
    let lines = lines.max(2);
    let spacing = spacing.max(LINE) / LINE * LINE;
    let mut region = Region::from_pool(lines * spacing, pages)?;
    link_random_spaced(&mut region, lines, spacing, ctx)?;
    let cur = region.as_ptr().cast::<usize>().cast_const();
    let mut details = details;
    if let Some(d) = details.as_object_mut() {
        d.insert("huge_page_fraction".into(), json!(region.huge_fraction()));
    }
    Ok(Chase {
        region,
        cur,
        warnings: Vec::new(),
        details,
    })
}

/// A random chase through every line of `region`, which the caller has
/// mapped and placed (a NUMA node's memory, bound before first touch);
/// `details` are recorded with the result.
pub fn chase_in(
    mut region: Region,
    ctx: &Ctx,
    details: serde_json::Value,
) -> Result<Chase, PrepareError> {
    let lines = (region.len() / LINE).max(2);
    if region.len() < lines * LINE {
        return Err(PrepareError::Fail(anyhow::anyhow!(
            "a region of {} bytes holds fewer than two lines",
            region.len()
        )));
    }
    link_random(&mut region, lines, ctx)?;
    let cur = region.as_ptr().cast::<usize>().cast_const();
    Ok(Chase {
        region,
        cur,
        warnings: Vec::new(),
        details,
    })
}

/// Links line i to line i+1, the last back to the first.
fn link_stride(region: &mut Region, lines: usize) {
    let base = region.as_ptr() as usize;
    let words = region.as_mut_slice::<usize>();
    for (i, slot) in words.chunks_exact_mut(SLOT_WORDS).take(lines).enumerate() {
        slot[0] = base + ((i + 1) % lines) * LINE;
    }
}

/// Follows `n` pointers from `p` and returns where it stopped.
///
/// # Safety
/// `p` must point into a closed chain of valid, aligned pointers.
#[inline(never)]
unsafe fn chase(mut p: *const usize, n: u64) -> *const usize {
    macro_rules! step {
        () => {
            // SAFETY: the caller guarantees every pointer in the chain is valid.
            p = unsafe { *p } as *const usize
        };
    }
    for _ in 0..n / UNROLL {
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
        step!();
    }
    for _ in 0..n % UNROLL {
        step!();
    }
    p
}

impl Chase {
    /// Follows `n` pointers without timing them (for tests); returns the
    /// byte offset it stopped at over [`LINE`].
    pub fn walk(&mut self, n: u64) -> usize {
        // SAFETY: `cur` is in the chain built in `prepare`, kept alive by `region`.
        self.cur = unsafe { chase(self.cur, n) };
        (self.cur as usize - self.region.as_ptr() as usize) / LINE
    }

    /// Attaches a caveat to the result.
    pub fn warn(&mut self, w: String) {
        self.warnings.push(w);
    }
}

impl Timed for Chase {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let start = Instant::now();
        // SAFETY: `cur` is in the chain built in `prepare`, kept alive by `region`.
        let end = unsafe { chase(self.cur, ops) };
        let took = start.elapsed();
        self.cur = black_box(end);
        Ok(took)
    }
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.details.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::test_ctx as ctx;

    fn chain(size: usize, order: Order) -> Chase {
        let lines = size / LINE;
        let mut region = Region::new(size, Pages::Small).unwrap();
        match order {
            Order::Random => link_random(&mut region, lines, &ctx()).unwrap(),
            Order::Stride => link_stride(&mut region, lines),
        }
        let cur = region.as_ptr().cast::<usize>().cast_const();
        Chase {
            region,
            cur,
            warnings: Vec::new(),
            details: serde_json::Value::Null,
        }
    }

    /// The chain is one cycle through every line: n steps visit n distinct
    /// lines and come back to the start.
    #[test]
    fn random_chain_is_a_single_cycle_through_every_line() {
        for size in [2 * LINE, 1024, 48 * 1024 + 4096] {
            let lines = size / LINE;
            let mut c = chain(size, Order::Random);
            let mut seen = vec![false; lines];
            for _ in 0..lines {
                let at = c.walk(1);
                assert!(!seen[at], "line {at} visited twice in {lines}");
                seen[at] = true;
            }
            assert!(seen.iter().all(|&s| s));
            assert_eq!(c.walk(0), 0, "back at the start after {lines} steps");
        }
    }

    #[test]
    fn random_chain_is_not_sequential() {
        let mut c = chain(64 * 1024, Order::Random);
        let steps: Vec<usize> = (0..64).map(|_| c.walk(1)).collect();
        let sequential = steps.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(sequential < 8, "{sequential} of 63 steps were +1");
    }

    #[test]
    fn stride_chain_walks_line_after_line_and_wraps() {
        let mut c = chain(1024, Order::Stride);
        assert_eq!(c.walk(1), 1);
        assert_eq!(c.walk(14), 15);
        assert_eq!(c.walk(1), 0);
        assert_eq!(c.walk(33), 1);
    }

    #[test]
    fn timed_run_reports_time_and_keeps_its_place() {
        let mut t = prepare(4096, Order::Random, Pages::Small, &ctx(), vec!["w".into()]).unwrap();
        let d = t.run(10_000).unwrap();
        assert!(d > Duration::ZERO);
        assert_eq!(t.warnings(), vec!["w".to_string()]);
        let details = t.details().unwrap();
        assert_eq!(details["lines"], 64);
        assert_eq!(details["pages"], "4KiB");
    }
}
