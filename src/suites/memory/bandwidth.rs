//! Memory bandwidth (E6, E8): read, write, copy as mbw does it (memcpy, a
//! naive element loop, block-wise memcpy) and the four STREAM kernels, on
//! one thread and on every CPU, plus copies small enough to stay in a cache.
//!
//! One operation is one *pass*: [`PASS`] bytes of each array, processed by
//! one call of the kernel (one memcpy of 32 MiB, like `perf bench mem
//! memcpy` or mbw do with their whole array), so that libc takes the same
//! code path (non-temporal stores above its threshold) whatever the
//! profile. Arrays are a whole number of passes long and passes walk
//! through them in turn, so with arrays beyond the last-level cache every
//! pass comes from memory. With several threads each thread takes its own
//! slice of every pass, pinned to its own CPU, and the time is from the
//! moment all threads were released together to the moment the last one
//! finished (thread start-up is not counted).
//!
//! Byte accounting differs between tools, so every result says which one
//! it uses: `copied` counts each byte copied once (mbw, `perf bench mem
//! memcpy`), `stream` counts bytes read plus bytes written (STREAM: copy
//! and scale 2 arrays, add and triad 3), `read` and `written` count the
//! bytes loaded or stored. None counts the read-for-ownership of a store
//! that misses the cache.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use serde_json::json;

use super::region::{Pages, Pod, Region};
use crate::harness::affinity;
use crate::harness::warnings::Warning;
use crate::harness::{PrepareError, Timed};

/// Bytes of each array one operation processes.
pub const PASS: usize = 32 << 20;

/// Block size of the block-wise copy: mbw's default for MCBLOCK.
pub const BLOCK: usize = 256 << 10;

/// Thread slices are whole multiples of this (a page).
const SLICE_ALIGN: usize = 4096;

/// STREAM's scalar.
const SCALAR: f64 = 3.0;

/// Threads whose busy times typically differ more than this are reported.
const UNEVEN_THREADS: f64 = 1.3;

/// Longest a released thread waits for the others before starting anyway.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// What one pass does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Sum every 64-bit word of one array.
    Read,
    /// Store a value in every 64-bit word of one array.
    Write,
    /// memcpy from one array to another.
    Copy,
    /// Copy word by word in a plain loop (mbw DUMB).
    CopyDumb,
    /// memcpy in 256 KiB blocks (mbw MCBLOCK).
    CopyBlock,
    /// STREAM Copy: c[i] = a[i].
    StreamCopy,
    /// STREAM Scale: b[i] = s * c[i].
    StreamScale,
    /// STREAM Add: c[i] = a[i] + b[i].
    StreamAdd,
    /// STREAM Triad: a[i] = b[i] + s * c[i].
    StreamTriad,
}

impl Kernel {
    /// Every kernel, in run order.
    pub const ALL: [Kernel; 9] = [
        Kernel::Read,
        Kernel::Write,
        Kernel::Copy,
        Kernel::CopyDumb,
        Kernel::CopyBlock,
        Kernel::StreamCopy,
        Kernel::StreamScale,
        Kernel::StreamAdd,
        Kernel::StreamTriad,
    ];

    /// The name used in benchmark ids.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Write => "write",
            Kernel::Copy => "copy",
            Kernel::CopyDumb => "copy_dumb",
            Kernel::CopyBlock => "copy_block",
            Kernel::StreamCopy => "stream_copy",
            Kernel::StreamScale => "stream_scale",
            Kernel::StreamAdd => "stream_add",
            Kernel::StreamTriad => "stream_triad",
        }
    }

    /// One line for `opcost list`.
    pub fn summary(self) -> &'static str {
        match self {
            Kernel::Read => "sum of 64-bit words streamed from memory (bytes read)",
            Kernel::Write => "64-bit stores of a value to memory (bytes written)",
            Kernel::Copy => {
                "memcpy of a large array, as mbw MEMCPY / perf bench mem memcpy (bytes copied)"
            }
            Kernel::CopyDumb => "word-by-word copy loop, as mbw DUMB (bytes copied)",
            Kernel::CopyBlock => "memcpy in 256 KiB blocks, as mbw MCBLOCK (bytes copied)",
            Kernel::StreamCopy => "STREAM Copy c=a (STREAM accounting: read + written)",
            Kernel::StreamScale => "STREAM Scale b=s*c (STREAM accounting: read + written)",
            Kernel::StreamAdd => "STREAM Add c=a+b (STREAM accounting: read + written)",
            Kernel::StreamTriad => "STREAM Triad a=b+s*c (STREAM accounting: read + written)",
        }
    }

    /// Arrays the kernel works on: sources first, the destination last.
    pub fn arrays(self) -> usize {
        match self {
            Kernel::Read | Kernel::Write => 1,
            Kernel::StreamAdd | Kernel::StreamTriad => 3,
            _ => 2,
        }
    }

    /// How many array-lengths of bytes one pass counts under its accounting.
    pub fn counted_arrays(self) -> usize {
        match self {
            Kernel::Read | Kernel::Write | Kernel::Copy | Kernel::CopyDumb | Kernel::CopyBlock => 1,
            Kernel::StreamCopy | Kernel::StreamScale => 2,
            Kernel::StreamAdd | Kernel::StreamTriad => 3,
        }
    }

    /// The byte accounting of the result.
    pub fn accounting(self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Write => "written",
            Kernel::Copy | Kernel::CopyDumb | Kernel::CopyBlock => "copied",
            _ => "stream",
        }
    }

    /// Initial value of the array at `index` (STREAM's a=1, b=2; destinations 0).
    fn initial(self, index: usize) -> f64 {
        if index + 1 == self.arrays() && self != Kernel::Read {
            0.0
        } else {
            (index + 1) as f64
        }
    }

    /// Runs the kernel once over `parts` (one equal-length slice per array).
    pub(crate) fn apply(self, parts: &mut [&mut [u8]]) {
        match (self, parts) {
            (Kernel::Read, [a]) => {
                let sum = view::<u64>(a).iter().fold(0u64, |s, &x| s.wrapping_add(x));
                black_box(sum);
            }
            (Kernel::Write, [a]) => {
                let v = black_box(0x0123_4567_89ab_cdef_u64);
                view_mut::<u64>(a).fill(v);
            }
            (Kernel::Copy | Kernel::StreamCopy, [src, dst]) => dst.copy_from_slice(src),
            (Kernel::CopyDumb, [src, dst]) => {
                for (d, s) in view_mut::<u64>(dst).iter_mut().zip(view::<u64>(src)) {
                    // A volatile store keeps the loop a loop: no memcpy, no vector code.
                    // SAFETY: `d` is a valid, aligned, exclusive reference.
                    unsafe { std::ptr::write_volatile(d, *s) };
                }
            }
            (Kernel::CopyBlock, [src, dst]) => {
                for (d, s) in dst.chunks_mut(BLOCK).zip(src.chunks(BLOCK)) {
                    d.copy_from_slice(s);
                }
            }
            (Kernel::StreamScale, [c, b]) => {
                let s = black_box(SCALAR);
                for (bi, ci) in view_mut::<f64>(b).iter_mut().zip(view::<f64>(c)) {
                    *bi = s * ci;
                }
            }
            (Kernel::StreamAdd, [a, b, c]) => {
                for ((ci, ai), bi) in view_mut::<f64>(c)
                    .iter_mut()
                    .zip(view::<f64>(a))
                    .zip(view::<f64>(b))
                {
                    *ci = ai + bi;
                }
            }
            (Kernel::StreamTriad, [b, c, a]) => {
                let s = black_box(SCALAR);
                for ((ai, bi), ci) in view_mut::<f64>(a)
                    .iter_mut()
                    .zip(view::<f64>(b))
                    .zip(view::<f64>(c))
                {
                    *ai = bi + s * ci;
                }
            }
            _ => {}
        }
    }
}

/// A page-aligned part as a slice of `T` (a word or a float).
#[inline]
fn view<T: Pod>(b: &[u8]) -> &[T] {
    // SAFETY: every bit pattern is a valid T (Pod); parts are page-aligned.
    let (head, mid, _) = unsafe { b.align_to::<T>() };
    debug_assert!(head.is_empty());
    mid
}

/// A page-aligned part as a mutable slice of `T` (a word or a float).
#[inline]
fn view_mut<T: Pod>(b: &mut [u8]) -> &mut [T] {
    // SAFETY: as in `view`.
    let (head, mid, _) = unsafe { b.align_to_mut::<T>() };
    debug_assert!(head.is_empty());
    mid
}

/// Bytes of each array one pass covers with `threads` threads: [`PASS`]
/// rounded down so that every thread's slice is whole pages.
pub fn pass_bytes(threads: usize) -> usize {
    let t = threads.max(1);
    (PASS / t / SLICE_ALIGN).max(1) * SLICE_ALIGN * t
}

/// How a bandwidth benchmark is set up.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The kernel.
    pub kernel: Kernel,
    /// Bytes per array (a whole number of passes, or one cache-resident pass).
    pub array_bytes: usize,
    /// Bytes of each array per operation.
    pub pass_bytes: usize,
    /// CPUs to run on, one thread each; empty for the calling thread alone.
    pub cpus: Vec<usize>,
    /// Caveats to attach (a capped array size...).
    pub warnings: Vec<String>,
    /// The NUMA node the arrays are bound to before first touch (placement
    /// verified after it); `None` leaves placement to the kernel.
    pub bind: Option<u32>,
    /// Facts recorded with the result besides the arrays' (the CPUs'
    /// nodes, a declared distance...).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The arrays of a prepared bandwidth benchmark, where its next pass
/// starts and what it reports, however the work is handed to the threads.
pub(super) struct Passes {
    /// The kernel.
    pub(super) kernel: Kernel,
    /// Its arrays, a whole number of passes each.
    pub(super) arrays: Vec<Region>,
    /// Bytes of each array one pass covers.
    pub(super) pass: usize,
    /// Index of the next pass's window.
    window: usize,
    /// CPUs to run on, one thread each; empty for the calling thread alone.
    pub(super) cpus: Vec<usize>,
    /// Caveats to attach.
    pub(super) warnings: Vec<String>,
    /// Facts recorded with the result.
    pub(super) details: serde_json::Value,
}

impl Passes {
    /// `kernel`'s passes of `pass` bytes over `arrays`, from the first
    /// window, with `warnings` and no details yet.
    pub(super) fn new(
        kernel: Kernel,
        arrays: Vec<Region>,
        pass: usize,
        cpus: Vec<usize>,
        warnings: Vec<String>,
    ) -> Passes {
        Passes {
            kernel,
            arrays,
            pass,
            window: 0,
            cpus,
            warnings,
            details: serde_json::Value::Null,
        }
    }

    /// How many windows of a pass the arrays hold.
    pub(super) fn windows(&self) -> usize {
        self.arrays
            .first()
            .map_or(1, |a| a.len() / self.pass)
            .max(1)
    }

    /// Takes the windows of the next `ops` passes: the first one's index
    /// and the number of windows (pass `op` uses window
    /// `(first + op) % windows`); the passes after them start where these end.
    pub(super) fn take(&mut self, ops: u64) -> (usize, usize) {
        let windows = self.windows();
        let first = self.window;
        self.window = (first + (ops % windows as u64) as usize) % windows;
        (first, windows)
    }
}

/// A prepared bandwidth benchmark; one operation is one pass.
pub struct Bandwidth {
    passes: Passes,
    /// Per sample, the slowest thread's time over the fastest's.
    spreads: Vec<f64>,
}

/// Maps and fills the arrays (untimed; every thread first-touches its own slices).
pub fn prepare(plan: Plan) -> Result<Box<dyn Timed>, PrepareError> {
    Ok(Box::new(Bandwidth::new(plan)?))
}

impl Bandwidth {
    /// Maps and fills the arrays of `plan`.
    fn new(plan: Plan) -> Result<Bandwidth, PrepareError> {
        let Plan {
            kernel,
            array_bytes,
            pass_bytes,
            cpus,
            warnings,
            bind,
            extra,
        } = plan;
        if pass_bytes == 0 || array_bytes % pass_bytes != 0 {
            return Err(PrepareError::Fail(anyhow!(
                "array of {array_bytes} bytes is not a whole number of {pass_bytes}-byte passes"
            )));
        }
        crate::suites::bench::check_memory((array_bytes * kernel.arrays()) as u64)?;
        let mut arrays = Vec::with_capacity(kernel.arrays());
        for _ in 0..kernel.arrays() {
            let region = match bind {
                Some(node) => {
                    let region = Region::untouched(array_bytes, Pages::Default)?;
                    super::region::bind(&region, node)?;
                    region
                }
                // Every slice is populated and written by its thread in `fill`.
                None => Region::from_pool_untouched(array_bytes, Pages::Default)?,
            };
            arrays.push(region);
        }
        let mut b = Bandwidth {
            passes: Passes::new(kernel, arrays, pass_bytes, cpus, warnings),
            spreads: Vec::new(),
        };
        b.fill().map_err(PrepareError::Fail)?;
        let placement = match bind {
            Some(node) => Some(super::region::verify(&b.passes.arrays, node)?),
            None => None,
        };
        b.passes.details = json!({
            "array_bytes": array_bytes,
            "arrays": kernel.arrays(),
            "pass_bytes": pass_bytes,
            "threads": b.passes.cpus.len().max(1),
            "cpus": b.passes.cpus,
            "accounting": kernel.accounting(),
        });
        if let Some(d) = b.passes.details.as_object_mut() {
            d.extend(extra);
            if let Some(p) = placement {
                d.insert("placement".into(), p.details());
            }
        }
        Ok(b)
    }

    fn threads(&self) -> usize {
        self.passes.cpus.len().max(1)
    }

    /// Every thread's slices: `slices[thread][window][array]`.
    fn slices(&mut self) -> Vec<Vec<Vec<&mut [u8]>>> {
        let t = self.threads();
        let windows = self.passes.windows();
        let slice = self.passes.pass / t;
        let mut out: Vec<Vec<Vec<&mut [u8]>>> = (0..t)
            .map(|_| (0..windows).map(|_| Vec::new()).collect())
            .collect();
        for region in &mut self.passes.arrays {
            for (i, part) in region
                .as_mut_slice::<u8>()
                .chunks_exact_mut(slice)
                .enumerate()
            {
                out[i % t][i / t].push(part);
            }
        }
        out
    }

    /// Writes the initial values, each slice from the thread that will use it.
    fn fill(&mut self) -> anyhow::Result<()> {
        let kernel = self.passes.kernel;
        let cpus = self.passes.cpus.clone();
        let init = move |mine: Vec<Vec<&mut [u8]>>| {
            for window in mine {
                for (i, part) in window.into_iter().enumerate() {
                    super::region::populate(part);
                    view_mut::<f64>(part).fill(kernel.initial(i));
                }
            }
        };
        let slices = self.slices();
        if cpus.is_empty() {
            slices.into_iter().for_each(init);
            return Ok(());
        }
        std::thread::scope(|s| {
            let mut handles = Vec::new();
            for (mine, &cpu) in slices.into_iter().zip(&cpus) {
                let h = std::thread::Builder::new()
                    .name("opcost-fill".into())
                    .spawn_scoped(s, move || {
                        let _ = affinity::pin_to(cpu);
                        init(mine);
                    })
                    .context("starting a thread")?;
                handles.push(h);
            }
            for h in handles {
                h.join().map_err(|_| anyhow!("a fill thread panicked"))?;
            }
            Ok(())
        })
    }
}

impl Timed for Bandwidth {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let kernel = self.passes.kernel;
        let (first, windows) = self.passes.take(ops);
        let cpus = self.passes.cpus.clone();
        let mut slices = self.slices();
        let pass = move |mine: &mut Vec<Vec<&mut [u8]>>| {
            for op in 0..ops {
                let w = (first + (op % windows as u64) as usize) % windows;
                kernel.apply(&mut mine[w]);
            }
        };
        if cpus.is_empty() {
            let mine = slices
                .first_mut()
                .ok_or_else(|| anyhow!("no arrays to work on"))?;
            let start = Instant::now();
            pass(mine);
            return Ok(start.elapsed());
        }
        let arrived = AtomicUsize::new(0);
        let n = cpus.len();
        let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
            let mut handles = Vec::new();
            for (mut mine, &cpu) in slices.into_iter().zip(&cpus) {
                let arrived = &arrived;
                let h = std::thread::Builder::new()
                    .name("opcost-bw".into())
                    .spawn_scoped(s, move || {
                        let _ = affinity::pin_to(cpu);
                        release_together(arrived, n);
                        let start = Instant::now();
                        pass(&mut mine);
                        (start, Instant::now())
                    })
                    .context("starting a thread")?;
                handles.push(h);
            }
            join_spans(handles)
        })?;
        let busy = spans.iter().map(|s| s.1.duration_since(s.0));
        if let (Some(lo), Some(hi)) = (busy.clone().min(), busy.max())
            && !lo.is_zero()
        {
            self.spreads.push(hi.as_secs_f64() / lo.as_secs_f64());
        }
        wall_of(&spans)
    }
    fn warnings(&self) -> Vec<String> {
        let mut w = self.passes.warnings.clone();
        let mut spreads = self.spreads.clone();
        spreads.sort_by(f64::total_cmp);
        if let Some(&typical) = spreads.get(spreads.len() / 2)
            && typical > UNEVEN_THREADS
        {
            w.push(Warning::UnevenThreads { spread: typical }.to_string());
        }
        w
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.passes.details.clone())
    }
}

/// The (start, end) of every thread's pass, once all have ended.
pub(super) fn join_spans(
    handles: Vec<std::thread::ScopedJoinHandle<'_, (Instant, Instant)>>,
) -> anyhow::Result<Vec<(Instant, Instant)>> {
    handles
        .into_iter()
        .map(|h| h.join().map_err(|_| anyhow!("a bandwidth thread panicked")))
        .collect()
}

/// From the first thread's start to the last one's end.
pub(super) fn wall_of(spans: &[(Instant, Instant)]) -> anyhow::Result<Duration> {
    let start = spans.iter().map(|s| s.0).min();
    let end = spans.iter().map(|s| s.1).max();
    match (start, end) {
        (Some(a), Some(b)) => Ok(b.duration_since(a)),
        _ => Err(anyhow!("no thread ran")),
    }
}

/// Spins until `n` threads have arrived, so that they start at the same
/// moment (a futex wake-up across CPUs can take tens of microseconds).
fn release_together(arrived: &AtomicUsize, n: usize) {
    arrived.fetch_add(1, Ordering::AcqRel);
    let since = Instant::now();
    while arrived.load(Ordering::Acquire) < n {
        std::hint::spin_loop();
        if since.elapsed() > RELEASE_TIMEOUT {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(kernel: Kernel, array_bytes: usize, pass_bytes: usize, cpus: Vec<usize>) -> Plan {
        Plan {
            kernel,
            array_bytes,
            pass_bytes,
            cpus,
            warnings: Vec::new(),
            bind: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn pass_bytes_gives_every_thread_whole_pages() {
        for t in [1, 2, 3, 6, 7, 64, 1000] {
            let p = pass_bytes(t);
            assert!(p > 0 && p <= PASS, "{t}: {p}");
            assert_eq!(p % t, 0);
            assert_eq!((p / t) % SLICE_ALIGN, 0);
        }
        assert_eq!(pass_bytes(1), PASS);
        assert_eq!(pass_bytes(0), PASS);
    }

    #[test]
    fn kernels_compute_what_stream_defines() {
        let pass = 16 * SLICE_ALIGN;
        for k in [Kernel::StreamScale, Kernel::StreamAdd, Kernel::StreamTriad] {
            let mut b = Bandwidth::new(plan(k, pass * 2, pass, Vec::new())).unwrap();
            b.run(2).unwrap();
            let dst = b.passes.arrays.last_mut().unwrap().as_mut_slice::<f64>();
            let want = match k {
                Kernel::StreamScale => SCALAR * 1.0,
                Kernel::StreamAdd => 1.0 + 2.0,
                _ => 1.0 + SCALAR * 2.0,
            };
            assert!(dst.iter().all(|&x| x == want), "{k:?}: {}", dst[0]);
        }
    }

    #[test]
    fn copies_copy_every_byte_of_every_window_on_any_thread_count() {
        for k in [
            Kernel::Copy,
            Kernel::CopyDumb,
            Kernel::CopyBlock,
            Kernel::StreamCopy,
        ] {
            for cpus in [Vec::new(), vec![0, 0], vec![0, 0, 0]] {
                let pass = pass_bytes(cpus.len()).min(3 * 4 * SLICE_ALIGN);
                let mut b = Bandwidth::new(plan(k, pass * 3, pass, cpus.clone())).unwrap();
                // Three passes cover the three windows.
                assert!(b.run(3).unwrap() > Duration::ZERO);
                let d = b.details().unwrap();
                assert_eq!(d["arrays"], 2);
                assert_eq!(d["accounting"], k.accounting());
                let dst = b.passes.arrays[1].as_mut_slice::<f64>();
                assert!(dst.iter().all(|&x| x == 1.0), "{k:?} on {cpus:?}");
            }
        }
    }

    #[test]
    fn threads_that_typically_finish_far_apart_are_reported() {
        let mut b = Bandwidth::new(plan(
            Kernel::Read,
            8 * SLICE_ALIGN,
            8 * SLICE_ALIGN,
            vec![0, 0],
        ))
        .unwrap();
        b.run(1).unwrap();
        assert_eq!(b.spreads.len(), 1);
        b.spreads = vec![1.0, 1.1, 1.05];
        assert!(b.warnings().is_empty());
        b.spreads = vec![2.0, 1.1, 3.0];
        assert!(b.warnings().iter().any(|w| w.contains("far apart")));
    }

    #[test]
    fn read_and_write_run_on_one_array() {
        for k in [Kernel::Read, Kernel::Write] {
            let mut b =
                Bandwidth::new(plan(k, 8 * SLICE_ALIGN, 4 * SLICE_ALIGN, vec![0, 0])).unwrap();
            assert!(b.run(5).unwrap() > Duration::ZERO);
            assert_eq!(b.passes.window, 1);
        }
    }

    #[test]
    fn a_plan_that_does_not_divide_fails_cleanly() {
        assert!(matches!(
            prepare(plan(Kernel::Read, 10_000, 4096, Vec::new())),
            Err(PrepareError::Fail(_))
        ));
    }

    #[test]
    fn accounting_matches_the_arrays_counted() {
        for k in Kernel::ALL {
            assert!(k.counted_arrays() <= k.arrays().max(1) + 1);
            assert!(k.summary().contains(match k.accounting() {
                "stream" => "STREAM accounting",
                "copied" => "bytes copied",
                "read" => "bytes read",
                _ => "bytes written",
            }));
        }
    }
}
