//! Memory: where the cache cliffs are (E8) and how fast memory moves (E6).
//!
//! The latency curve chases pointers through working sets from 1 KiB to
//! beyond the last-level cache, about four points per doubling, in random
//! order (the cliffs), in sequential order (what the prefetcher hides) and
//! on transparent huge pages (so TLB steps are told apart from cache
//! levels); [`detect`] finds the levels in it. The bandwidth benchmarks
//! stream arrays far larger than the caches, on one thread and on all.
//!
//! Sizes follow the machine but stay bounded: the curve's largest points
//! and the bandwidth arrays grow with the profile (quick stays small) and
//! never take more than half of the memory available, and a result says so
//! when such a cap kept it below 4x the last-level cache. A second sweep
//! ([`aliasing`]) keeps the working set fixed and varies the distance
//! between its lines, to show the set-associativity cliff.

pub mod aliasing;
pub mod bandwidth;
pub mod detect;
pub mod dynamic;
pub mod findings;
pub mod latency;
pub mod methods;
pub mod numa;
pub mod region;
pub mod scaling;
pub mod swap;

use serde_json::json;

use std::time::Duration;

use super::bench::{Budget, FnBench, Suite};
use crate::harness::round::expected_slow;
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, Finding, Measurement, PrepareError, Profile, Unit};
use crate::host::Host;
use crate::units::{fmt_ratio, human_ns, size_label};
use bandwidth::{Kernel, Plan};
use latency::Order;
use region::Pages;

/// Smallest working set of the latency curve.
pub const CURVE_MIN: u64 = 1 << 10;
/// The curve reaches at least this far where memory allows ("and 1 GiB").
pub const CURVE_FLOOR_TOP: u64 = 1 << 30;
/// The smallest working set of the huge-page curve (TLB reach starts above it).
pub const THP_MIN: u64 = 32 << 10;
/// Largest latency working set and bandwidth array at the quick profile.
pub const QUICK_MAX: u64 = 64 << 20;
/// Largest latency working set and bandwidth array at the default profile.
pub const DEFAULT_MAX: u64 = 1 << 30;
/// Largest bandwidth array at the thorough profile.
pub const THOROUGH_MAX: u64 = 4 << 30;
/// The last-level cache assumed for sizing arrays when sysfs does not say.
pub const UNKNOWN_LLC_GUESS: u64 = 64 << 20;
/// Working sets are at least this many times the last-level cache to measure memory.
pub const LLC_FACTOR: u64 = 4;
/// Budget of one latency point, relative to the profile's default: there
/// are about a hundred of them, each needing only a few milliseconds.
pub const LATENCY_BUDGET: f64 = 0.5;
/// Budget of one bandwidth benchmark relative to the profile's default:
/// at the default profile the interleaved pair maps and fills several
/// 4x-LLC arrays before its first sample, which takes a good part of it.
pub const BANDWIDTH_BUDGET: Budget = Budget::Scaled([1.0, 1.5, 1.0]);

/// The id of a point of a latency curve: `memory.latency.CURVE/SIZE`.
fn latency_id(curve: &str, size: u64) -> String {
    format!("{}{}", latency_prefix(curve), size_label(size))
}

/// The ids of one latency curve start with this.
fn latency_prefix(curve: &str) -> String {
    format!("memory.latency.{curve}/")
}

/// The id of a streaming bandwidth benchmark, on one thread or on all.
fn bandwidth_id(kernel: Kernel, all: bool) -> String {
    let tag = if all { "all" } else { "1" };
    format!("memory.bandwidth.{}/threads={tag}", kernel.name())
}

/// The id of a cache-resident copy of `size` bytes.
fn cached_copy_id(size: u64) -> String {
    format!("memory.bandwidth.copy_cached/{}", size_label(size))
}

/// Sizes of the cache-resident copies (each of source and destination).
pub const CACHED_COPY_SIZES: [u64; 4] = [8 << 10, 64 << 10, 512 << 10, 4 << 20];

/// The memory suite.
pub fn suite() -> Suite {
    Suite {
        name: "memory",
        summary: "latency vs working set (cache cliffs), bandwidth: read, write, copy, STREAM",
        benches,
        findings: all_findings,
    }
}

/// Sweep points from `min` to `max` inclusive, `per_doubling` (1, 2 or 4)
/// per doubling, on the grid 2^k x {1, 1.25, 1.5, 1.75} that holds the
/// usual cache sizes (48 KiB, 1.25 MiB, 1.5 MiB, 12 MiB...).
pub fn sweep(min: u64, max: u64, per_doubling: u32) -> Vec<u64> {
    let quarters: &[u64] = match per_doubling {
        0 | 1 => &[4],
        2 | 3 => &[4, 6],
        _ => &[4, 5, 6, 7],
    };
    let mut out = Vec::new();
    let mut base = min.max(1).next_power_of_two();
    while base <= max {
        for q in quarters {
            let s = base / 4 * q;
            if s >= min && s <= max {
                out.push(s);
            }
        }
        base = match base.checked_mul(2) {
            Some(b) => b,
            None => break,
        };
    }
    out
}

/// Extra points just past the first two cache sizes sysfs lists, as
/// fractions of the size: a step that sharp (an L1d) otherwise falls
/// between two points a quarter apart, and its size could only be placed
/// somewhere between them.
pub const BOUNDARY_POINTS: [(u64, u64); 2] = [(17, 16), (9, 8)];

/// `sizes` with [`BOUNDARY_POINTS`] past the L1d and L2 sizes of `host`.
pub fn with_boundaries(mut sizes: Vec<u64>, host: &Host) -> Vec<u64> {
    let max = sizes.last().copied().unwrap_or(0);
    for level in [1u8, 2] {
        let Some(c) = host.cache(level).filter(|c| c.size_bytes >= 1024) else {
            continue;
        };
        for (num, den) in BOUNDARY_POINTS {
            let s = c.size_bytes / den * num;
            if s <= max {
                sizes.push(s);
            }
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The largest working set any profile measures on `host`: at least 4x the
/// last-level cache and 1 GiB, but never more than a quarter of the memory.
pub fn curve_top(host: &Host) -> u64 {
    let want = host
        .llc_bytes()
        .map_or(CURVE_FLOOR_TOP, |l| (l * LLC_FACTOR).max(CURVE_FLOOR_TOP));
    match host.mem_total_bytes {
        Some(total) => want.min(total / 4).max(QUICK_MAX),
        None => want,
    }
}

/// The largest working set measured at `profile` (`top` = [`curve_top`]).
pub fn profile_max(profile: Profile, top: u64) -> u64 {
    match profile {
        Profile::Quick => QUICK_MAX.min(top),
        Profile::Default => DEFAULT_MAX.min(top),
        Profile::Thorough => top,
    }
}

/// The cheapest profile that measures a working set of `size`.
pub fn min_profile_for(size: u64, top: u64) -> Profile {
    [Profile::Quick, Profile::Default, Profile::Thorough]
        .into_iter()
        .find(|&p| size <= profile_max(p, top))
        .unwrap_or(Profile::Thorough)
}

/// Why the largest point of the curve at `profile` is below 4x the LLC, if it is.
pub fn top_point_note(
    size: u64,
    next: Option<u64>,
    profile: Profile,
    llc: Option<u64>,
) -> Option<String> {
    let is_top = next.is_none_or(|n| n > profile_max(profile, u64::MAX));
    if !is_top {
        return None;
    }
    let llc4 = match llc {
        None => None,
        Some(l) if size < l * LLC_FACTOR => Some(size_label(l * LLC_FACTOR)),
        Some(_) => return None,
    };
    let further = match profile {
        Profile::Quick => "--profile default goes further",
        Profile::Default => "--profile thorough goes further",
        Profile::Thorough => "capped by the memory of this machine",
    };
    Some(
        Warning::CurveTopInCache {
            profile: profile.name(),
            size: size_label(size),
            llc4,
            further,
        }
        .to_string(),
    )
}

/// [`array_bytes`] for the run of `ctx` (its last-level cache, its profile
/// and the memory available now); a size that cannot be had skips the row.
pub fn array_bytes_for(
    ctx: &Ctx,
    arrays: usize,
    pass: usize,
) -> Result<(usize, Option<String>), PrepareError> {
    array_bytes(
        ctx.host.llc_bytes(),
        ctx.profile,
        crate::host::mem_available_now(),
        arrays,
        pass,
    )
    .map_err(PrepareError::Skip)
}

/// Bytes per bandwidth array at `profile`: 4x the LLC (at least one pass),
/// capped by the profile and by half the available memory over `arrays`
/// arrays alive at once; with the reason when a cap kept it below 4x the LLC.
pub fn array_bytes(
    llc: Option<u64>,
    profile: Profile,
    available: Option<u64>,
    arrays: usize,
    pass: usize,
) -> Result<(usize, Option<String>), String> {
    let pass64 = pass as u64;
    let llc_or_guess = llc.unwrap_or(UNKNOWN_LLC_GUESS);
    let want = (llc_or_guess * LLC_FACTOR).div_ceil(pass64) * pass64;
    let want = want.max(pass64);
    let profile_cap = match profile {
        Profile::Quick => QUICK_MAX.min(pass64 * 2).max(pass64),
        Profile::Default => DEFAULT_MAX,
        Profile::Thorough => THOROUGH_MAX,
    };
    let mem_cap = available.map_or(u64::MAX, |a| a / 2 / arrays.max(1) as u64);
    let mut size = want.min(profile_cap / pass64 * pass64);
    let mut why = (size < want).then(|| format!("the {} profile", profile.name()));
    if size > mem_cap {
        size = mem_cap / pass64 * pass64;
        why = Some("the memory available".to_string());
    }
    if size < pass64 {
        return Err(format!(
            "{arrays} arrays of {} do not fit in half the memory available; free some memory",
            size_label(pass64)
        ));
    }
    let note = match (llc, why) {
        (Some(l), Some(why)) if size < l * LLC_FACTOR => Some(Warning::ArraysInCache {
            size: size_label(size),
            llc4: Some(size_label(l * LLC_FACTOR)),
            why,
        }),
        (None, _) => Some(Warning::ArraysInCache {
            size: size_label(size),
            llc4: None,
            why: String::new(),
        }),
        _ => None,
    }
    .map(|w| w.to_string());
    Ok((size as usize, note))
}

/// Every memory finding: the curve's and the methods' (findings.rs), the
/// read ladder's (scaling.rs) and the NUMA matrices' (numa.rs).
fn all_findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = findings::findings(ms);
    out.extend(scaling::findings(ms));
    out.extend(numa::findings(ms));
    out.extend(swap::findings(ms));
    out
}

fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let mut out = latency_benches(host);
    out.extend(bandwidth_benches(host));
    out.extend(methods::benches());
    out.extend(dynamic_benches());
    out.extend(aliasing::benches(host));
    out.extend(numa::benches(host));
    out.extend(swap::benches());
    out
}

/// All-CPU read, write and copy with blocks handed out dynamically.
fn dynamic_benches() -> Vec<Box<dyn Bench>> {
    let cpus = crate::harness::affinity::allowed_cpus();
    [Kernel::Read, Kernel::Write, Kernel::Copy]
        .into_iter()
        .map(|kernel| {
            let cpus = cpus.clone();
            let pass = bandwidth::PASS;
            FnBench::new(
                format!("memory.bandwidth.{}/threads=all_dynamic", kernel.name()),
                format!(
                    "{}, one thread per CPU taking 1 MiB blocks as they come (as sysbench)",
                    kernel.summary()
                ),
                Unit::Throughput {
                    bytes_per_op: (pass * kernel.counted_arrays()) as f64,
                },
                move |ctx: &Ctx| {
                    every_cpu_usable(ctx, &cpus)?;
                    let (array, note) = array_bytes_for(ctx, kernel.arrays(), pass)?;
                    dynamic::Dynamic::new(
                        kernel,
                        array,
                        pass,
                        cpus.clone(),
                        note.into_iter().collect(),
                    )
                    .map(|d| Box::new(d) as Box<dyn crate::harness::Timed>)
                },
            )
            .param("threads", "all_dynamic")
            .param("accounting", kernel.accounting())
            .with_budget(BANDWIDTH_BUDGET)
            .setup_time(BANDWIDTH_SETUP)
            .boxed()
        })
        .collect()
}

/// Typical time a latency round spends per byte of its working set before
/// the first chase (the mapping made or reused and zeroed, huge pages
/// asked for, the chain of pointers laid through it), ns: from a default
/// run on a 2-vCPU AMD EPYC (Zen 4) KVM guest, where populating a page
/// runs at about 1.5 GB/s. Only the run-time estimate uses it.
fn chase_setup_ns(order: Order, pages: Pages) -> f64 {
    match (order, pages) {
        (Order::Random, Pages::Huge) => 1.8,
        (Order::Random, _) => 1.15,
        _ => 0.45,
    }
}

fn latency_benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let top = curve_top(host);
    let thp = region::thp_mode().is_some_and(|m| m != "never");
    let mut curves = vec![
        (
            Order::Random,
            Pages::Small,
            "random",
            with_boundaries(sweep(CURVE_MIN, top, 4), host),
        ),
        (
            Order::Stride,
            Pages::Small,
            "stride",
            sweep(CURVE_MIN, top, 1),
        ),
    ];
    if thp {
        curves.push((
            Order::Random,
            Pages::Huge,
            "random_thp",
            sweep(THP_MIN, top, 2),
        ));
    }
    let mut out = Vec::new();
    for (order, pages, name, sizes) in curves {
        for (i, &size) in sizes.iter().enumerate() {
            let next = sizes.get(i + 1).copied();
            let summary = match (order, pages) {
                (Order::Random, Pages::Huge) => {
                    "dependent loads in random order on transparent huge pages (fewer TLB misses)"
                }
                (Order::Random, _) => {
                    "dependent loads in random order through the working set (4 KiB pages)"
                }
                _ => "dependent loads in sequential 64-byte stride (the prefetcher helps)",
            };
            let b = FnBench::new(
                latency_id(name, size),
                summary,
                Unit::Latency,
                move |ctx: &Ctx| {
                    let mut warnings = Vec::new();
                    if let Some(n) = top_point_note(size, next, ctx.profile, ctx.host.llc_bytes()) {
                        warnings.push(n);
                    }
                    latency::prepare(size as usize, order, pages, ctx, warnings)
                },
            )
            .param("size", size)
            .param("order", order.name())
            .param("pages", pages.name())
            .budget_scale(LATENCY_BUDGET)
            .expected_by(move |profile, budget| {
                let prep =
                    Duration::from_secs_f64(size as f64 * chase_setup_ns(order, pages) * 1e-9);
                expected_slow(profile, budget, prep, Duration::ZERO)
            })
            .min_profile(min_profile_for(size, top));
            out.push(b.boxed());
        }
    }
    out
}

/// The bandwidth kernels the quick profile measures.
const QUICK_KERNELS: [Kernel; 5] = [
    Kernel::Read,
    Kernel::Write,
    Kernel::Copy,
    Kernel::StreamCopy,
    Kernel::StreamTriad,
];

/// What a round spends setting a bandwidth benchmark up besides its
/// samples (its arrays mapped or reused and filled, its threads started):
/// about 20 ms a round on the quick runs of a 2-vCPU AMD EPYC (Zen 4) KVM guest, where a
/// single-thread pass over them is a few ms. Only the run-time estimate
/// uses it ([`FnBench::setup_time`]).
pub const BANDWIDTH_SETUP: Duration = Duration::from_millis(20);

fn bandwidth_benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let cpus = crate::harness::affinity::allowed_cpus();
    // The read ladder's intermediate thread counts, interleaved with read's
    // one and all ([`scaling`]).
    let ladder = scaling::benches(&host.topology);
    let extra_read = ladder.len();
    let all_nodes = scaling::nodes_of(&host.topology, &cpus);
    let mut out: Vec<Box<dyn Bench>> = Vec::new();
    for kernel in Kernel::ALL {
        for all in [false, true] {
            let threads = if all { cpus.len().max(1) } else { 1 };
            let pass = bandwidth::pass_bytes(threads);
            let bytes_per_op = (pass * kernel.counted_arrays()) as f64;
            let tag = if all { "all" } else { "1" };
            let cpus = cpus.clone();
            let all_nodes = all_nodes.clone();
            let b = FnBench::new(
                bandwidth_id(kernel, all),
                format!(
                    "{}, {}",
                    kernel.summary(),
                    if all {
                        "one thread per CPU"
                    } else {
                        "one thread"
                    }
                ),
                Unit::Throughput { bytes_per_op },
                move |ctx: &Ctx| {
                    let cpus = if all {
                        every_cpu_usable(ctx, &cpus)?;
                        cpus.clone()
                    } else {
                        Vec::new()
                    };
                    // Both thread counts of a kernel are alive at once
                    // (interleaved), with read's ladder when it runs.
                    let ladder = if kernel == Kernel::Read {
                        extra_read
                    } else {
                        0
                    };
                    let alive = kernel.arrays() * (2 + ladder);
                    let (array, note) = array_bytes_for(ctx, alive, pass)?;
                    bandwidth::prepare(Plan {
                        kernel,
                        array_bytes: array,
                        pass_bytes: pass,
                        cpus,
                        warnings: note.into_iter().collect(),
                        bind: None,
                        extra: if all {
                            serde_json::Map::from_iter([("nodes".to_string(), json!(all_nodes))])
                        } else {
                            Default::default()
                        },
                    })
                },
            )
            .param("threads", tag)
            .param("accounting", kernel.accounting())
            .interleave(format!("memory.bandwidth.{}", kernel.name()))
            .with_budget(BANDWIDTH_BUDGET)
            .setup_time(BANDWIDTH_SETUP);
            // Quick keeps read, write, copy and STREAM's copy and triad: the
            // other kernels restate them, and filling their arrays is most
            // of a quick round.
            let b = if QUICK_KERNELS.contains(&kernel) {
                b
            } else {
                b.min_profile(Profile::Default)
            };
            out.push(b.boxed());
        }
    }
    out.extend(ladder);
    for size in CACHED_COPY_SIZES {
        let fits = fits_in(host, size * 2);
        out.push(
            FnBench::new(
                cached_copy_id(size),
                "memcpy between two arrays small enough to stay in a cache (bytes copied)",
                Unit::Throughput {
                    bytes_per_op: size as f64,
                },
                move |_ctx: &Ctx| {
                    bandwidth::prepare(Plan {
                        kernel: Kernel::Copy,
                        array_bytes: size as usize,
                        pass_bytes: size as usize,
                        cpus: Vec::new(),
                        warnings: Vec::new(),
                        bind: None,
                        extra: Default::default(),
                    })
                },
            )
            .param("size", size)
            .param("accounting", "copied")
            .param("fits", json!(fits))
            .boxed(),
        );
    }
    out
}

/// The smallest data cache level that holds `bytes`, as `L1d`, `L2`...
fn fits_in(host: &Host, bytes: u64) -> Option<String> {
    (1..=4u8).find_map(|level| {
        let c = host.cache(level)?;
        (c.size_bytes >= bytes).then(|| {
            if level == 1 {
                "L1d".to_string()
            } else {
                format!("L{level}")
            }
        })
    })
}

/// Whether an all-CPU bandwidth benchmark can run: not pinned to one CPU
/// (--cpu), and with more than one CPU in `cpus`.
fn every_cpu_usable(ctx: &Ctx, cpus: &[usize]) -> Result<(), PrepareError> {
    if ctx.cpu.is_some() {
        return Err(PrepareError::Skip(
            "the run is pinned to one CPU (--cpu); run without --cpu to use every CPU".into(),
        ));
    }
    if cpus.len() < 2 {
        return Err(PrepareError::Skip(
            "one CPU only: all-CPU bandwidth equals the single-thread one".into(),
        ));
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::findings::*;
    use super::*;

    #[test]
    fn sweep_has_four_points_per_doubling_on_the_cache_size_grid() {
        let s = sweep(1024, 8192, 4);
        assert_eq!(
            s,
            vec![
                1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192
            ]
        );
        assert!(sweep(1024, 1 << 30, 4).contains(&(48 << 10)));
        assert!(sweep(1024, 1 << 30, 4).contains(&(1280 << 10)));
        assert_eq!(sweep(1024, 8192, 1), vec![1024, 2048, 4096, 8192]);
        assert_eq!(
            sweep(32 << 10, 64 << 10, 2),
            vec![32 << 10, 48 << 10, 64 << 10]
        );
        assert!(sweep(1 << 20, 1024, 4).is_empty());
        assert!(sweep(1 << 62, u64::MAX, 4).len() <= 8);
    }

    fn host(llc: Option<u64>, mem: Option<u64>) -> Host {
        let mut h = Host::default();
        if let Some(l) = llc {
            h.caches.push(crate::host::CacheInfo {
                level: 3,
                kind: "Unified".into(),
                size_bytes: l,
                ..Default::default()
            });
        }
        h.mem_total_bytes = mem;
        h
    }

    #[test]
    fn curve_reaches_four_times_llc_and_a_gibibyte_within_memory() {
        assert_eq!(curve_top(&host(Some(32 << 20), Some(24 << 30))), 1 << 30);
        assert_eq!(
            curve_top(&host(Some(480 << 20), Some(24 << 30))),
            1920 << 20
        );
        assert_eq!(curve_top(&host(Some(480 << 20), Some(4 << 30))), 1 << 30);
        assert_eq!(curve_top(&host(None, None)), 1 << 30);
        // A tiny machine still gets the quick curve.
        assert_eq!(curve_top(&host(Some(1 << 20), Some(128 << 20))), QUICK_MAX);
    }

    #[test]
    fn quick_stays_small_and_larger_points_need_longer_profiles() {
        let top = 1920 << 20;
        assert_eq!(min_profile_for(1024, top), Profile::Quick);
        assert_eq!(min_profile_for(64 << 20, top), Profile::Quick);
        assert_eq!(min_profile_for(80 << 20, top), Profile::Default);
        assert_eq!(min_profile_for(1 << 30, top), Profile::Default);
        assert_eq!(min_profile_for(1920 << 20, top), Profile::Thorough);
    }

    #[test]
    fn the_top_point_says_when_it_stays_below_four_times_llc() {
        let llc = Some(480 << 20);
        let note = top_point_note(64 << 20, Some(80 << 20), Profile::Quick, llc).unwrap();
        assert!(
            note.contains("below 4x") && note.contains("--profile default"),
            "{note}"
        );
        assert!(top_point_note(32 << 20, Some(40 << 20), Profile::Quick, llc).is_none());
        assert!(top_point_note(64 << 20, Some(80 << 20), Profile::Quick, Some(8 << 20)).is_none());
        assert!(
            top_point_note(64 << 20, None, Profile::Quick, None)
                .unwrap()
                .contains("unknown")
        );
    }

    #[test]
    fn bandwidth_arrays_follow_llc_profile_and_memory() {
        let pass = bandwidth::PASS;
        let (s, note) =
            array_bytes(Some(32 << 20), Profile::Default, Some(20 << 30), 6, pass).unwrap();
        assert_eq!(s, 128 << 20);
        assert!(note.is_none());
        let (s, note) =
            array_bytes(Some(480 << 20), Profile::Quick, Some(20 << 30), 6, pass).unwrap();
        assert!(s <= QUICK_MAX as usize && s % pass == 0);
        assert!(note.unwrap().contains("quick profile"));
        let (s, note) =
            array_bytes(Some(480 << 20), Profile::Thorough, Some(2 << 30), 6, pass).unwrap();
        assert!(s as u64 * 6 <= 1 << 30, "{s}");
        assert!(note.unwrap().contains("memory available"));
        assert!(array_bytes(Some(480 << 20), Profile::Default, Some(100 << 20), 6, pass).is_err());
        let (s, note) = array_bytes(None, Profile::Default, None, 6, pass).unwrap();
        assert!(note.unwrap().contains("unknown"));
        assert_eq!(s as u64, UNKNOWN_LLC_GUESS * LLC_FACTOR);
    }

    #[test]
    fn tlb_reach_is_the_last_size_before_small_pages_are_clearly_slower() {
        use crate::harness::claims::{Est, speedup};
        // Each point's interval ±`w` around its fast end.
        let gap = |size: u64, small: f64, huge: f64, w: f64| {
            let small = Est::cost(small, small * (1.0 - w), small * (1.0 + w));
            let huge = Est::cost(huge, huge * (1.0 - w), huge * (1.0 + w));
            PageGap {
                size,
                small,
                huge,
                ratio: speedup(&huge, &small),
            }
        };
        let clear = [
            gap(128 << 10, 3.8, 3.8, 0.05),
            gap(256 << 10, 3.9, 4.5, 0.05),
            gap(384 << 10, 9.4, 5.9, 0.05),
            gap(512 << 10, 10.0, 8.6 / 1.3, 0.05),
        ];
        assert!(clear[2].apart() && clear[3].apart() && !clear[1].apart());
        assert_eq!(tlb_reach(&clear), Some(256 << 10));
        // The same point estimates with intervals that cannot tell the
        // pages apart: no reach is claimed.
        let wide: Vec<PageGap> = clear
            .iter()
            .map(|g| gap(g.size, g.small.value, g.huge.value, 0.6))
            .collect();
        assert_eq!(tlb_reach(&wide), None);
        // One slow point that does not last is noise.
        let once = [clear[0], clear[1], clear[2], gap(512 << 10, 8.7, 8.6, 0.05)];
        assert_eq!(tlb_reach(&once), None);
        // Clearly apart from the start: nothing below to call the reach,
        // but not "never apart" either.
        assert_eq!(tlb_reach(&clear[2..]), None);
        assert_eq!(first_apart(&clear[2..]), Some(0));
        assert_eq!(first_apart(&wide), None);
    }

    #[test]
    fn a_two_socket_server_adds_the_numa_matrix_and_the_read_ladder_once() {
        let tree = crate::host::fixtures::epyc(1);
        let h = Host::detect_at(tree.write().path());
        let b = benches(&h);
        let ids: Vec<&str> = b.iter().map(|b| b.id()).collect();
        let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len());
        let read: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|i| i.starts_with("memory.bandwidth.read/threads="))
            .collect();
        for n in ["1", "2", "4", "8", "16", "32", "64", "all", "all_dynamic"] {
            assert!(read.contains(&format!("memory.bandwidth.read/threads={n}").as_str()));
        }
        assert_eq!(read.len(), 9, "{read:?}");
        assert!(!ids.iter().any(|i| i.ends_with("threads=128")));
        assert_eq!(
            ids.iter().filter(|i| i.starts_with("memory.numa.")).count(),
            8
        );
        // The whole-machine quick run gains the first row of the matrix only.
        let quick_new: Vec<&str> = b
            .iter()
            .filter(|b| !b.on_request() && b.runs_at(Profile::Quick))
            .map(|b| b.id())
            .filter(|i| i.starts_with("memory.numa.") || read.contains(i))
            .collect();
        assert_eq!(quick_new.len(), 4 + 3, "{quick_new:?}");
        // One node and two CPUs: nothing new at all.
        let h = Host::detect_at(crate::host::fixtures::two_vcpu_guest().write().path());
        let ids: Vec<String> = benches(&h).iter().map(|b| b.id().to_string()).collect();
        assert!(!ids.iter().any(|i| i.starts_with("memory.numa.")));
        let read = ids
            .iter()
            .filter(|i| i.starts_with("memory.bandwidth.read/threads="))
            .count();
        assert_eq!(read, 3, "1, all and all_dynamic");
    }

    #[test]
    fn every_curve_point_is_listed_with_its_profile() {
        let h = host(Some(32 << 20), Some(24 << 30));
        let b = benches(&h);
        let ids: Vec<&str> = b.iter().map(|b| b.id()).collect();
        assert!(ids.contains(&"memory.latency.random/1KiB"));
        assert!(ids.contains(&"memory.latency.random/48KiB"));
        assert!(ids.contains(&"memory.latency.random/1GiB"));
        assert!(ids.contains(&"memory.latency.stride/1KiB"));
        assert!(ids.contains(&"memory.bandwidth.copy/threads=1"));
        assert!(ids.contains(&"memory.bandwidth.stream_triad/threads=all"));
        assert!(ids.contains(&"memory.bandwidth.copy_cached/8KiB"));
        let copy = b
            .iter()
            .find(|b| b.id() == "memory.bandwidth.copy/threads=1")
            .unwrap();
        assert_eq!(
            copy.budget(Profile::Default),
            Profile::Default.default_budget().mul_f64(1.5)
        );
        assert_eq!(copy.interleave(), Some("memory.bandwidth.copy"));
        let quick = b.iter().filter(|b| b.runs_at(Profile::Quick)).count();
        assert!(quick < b.len());
        for b in &b {
            if b.id().starts_with("memory.latency.") && b.id().ends_with("/1GiB") {
                assert!(!b.runs_at(Profile::Quick) && b.runs_at(Profile::Default));
            }
        }
    }
}
