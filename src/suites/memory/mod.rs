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
//! when such a cap kept it below 4x the last-level cache.

pub mod bandwidth;
pub mod detect;
pub mod dynamic;
pub mod latency;
pub mod methods;
pub mod region;

use serde_json::json;

use super::{Budget, FnBench, Suite};
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
        findings,
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

fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let mut out = latency_benches(host);
    out.extend(bandwidth_benches(host));
    out.extend(methods::benches());
    out.extend(dynamic_benches());
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
                    let (array, note) = array_bytes(
                        ctx.host.llc_bytes(),
                        ctx.profile,
                        crate::host::mem_available_now(),
                        kernel.arrays(),
                        pass,
                    )
                    .map_err(PrepareError::Skip)?;
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
            .boxed()
        })
        .collect()
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

fn bandwidth_benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let cpus = crate::harness::affinity::allowed_cpus();
    let mut out: Vec<Box<dyn Bench>> = Vec::new();
    for kernel in Kernel::ALL {
        for all in [false, true] {
            let threads = if all { cpus.len().max(1) } else { 1 };
            let pass = bandwidth::pass_bytes(threads);
            let bytes_per_op = (pass * kernel.counted_arrays()) as f64;
            let tag = if all { "all" } else { "1" };
            let cpus = cpus.clone();
            let b = FnBench::new(
                bandwidth_id(kernel, all),
                format!(
                    "{}, {}",
                    kernel.summary(),
                    if all { "one thread per CPU" } else { "one thread" }
                ),
                Unit::Throughput { bytes_per_op },
                move |ctx: &Ctx| {
                    let cpus = if all {
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
                        cpus.clone()
                    } else {
                        Vec::new()
                    };
                    // Both thread counts of a kernel are alive at once (interleaved).
                    let alive = kernel.arrays() * 2;
                    let (array, note) = array_bytes(
                        ctx.host.llc_bytes(),
                        ctx.profile,
                        crate::host::mem_available_now(),
                        alive,
                        pass,
                    )
                    .map_err(PrepareError::Skip)?;
                    bandwidth::prepare(Plan {
                        kernel,
                        array_bytes: array,
                        pass_bytes: pass,
                        cpus,
                        warnings: note.into_iter().collect(),
                    })
                },
            )
            .param("threads", tag)
            .param("accounting", kernel.accounting())
            .interleave(format!("memory.bandwidth.{}", kernel.name()))
            .with_budget(BANDWIDTH_BUDGET);
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

/// The points of one latency curve (`memory.latency.NAME/SIZE`) in a run,
/// each at its fast end ([`super::cpu::fast_ns_per_op`]): on a shared
/// machine other tenants of the caches only ever add time.
fn curve(ms: &[Measurement], name: &str) -> Vec<detect::Point> {
    let prefix = latency_prefix(name);
    let mut pts: Vec<detect::Point> = ms
        .iter()
        .filter(|m| m.id.starts_with(&prefix))
        .filter_map(|m| {
            Some(detect::Point {
                size: m.params.get("size")?.as_u64()?,
                ns: super::cpu::fast_ns_per_op(m),
            })
        })
        .collect();
    pts.sort_by_key(|p| p.size);
    pts
}

/// The data and unified cache sizes sysfs listed, by level, as recorded
/// with the latency results.
fn sysfs_caches(ms: &[Measurement]) -> Vec<(u8, u64)> {
    let mut out: Vec<(u8, u64)> = ms
        .iter()
        .filter(|m| m.id.starts_with("memory.latency."))
        .find_map(|m| {
            let list = m.details.as_ref()?.get("sysfs_caches")?.as_array()?;
            Some(
                list.iter()
                    .filter_map(|c| {
                        Some((
                            u8::try_from(c.get("level")?.as_u64()?).ok()?,
                            c.get("size_bytes")?.as_u64()?,
                        ))
                    })
                    .collect::<Vec<_>>(),
            )
        })
        .unwrap_or_default();
    out.sort();
    out.dedup_by_key(|c| c.0);
    out
}

/// A size rounded for a finding: `48 KiB`, `4.5 MiB`.
fn approx_size(bytes: u64) -> String {
    let b = bytes as f64;
    let (v, unit) = if b >= (1u64 << 30) as f64 {
        (b / (1u64 << 30) as f64, "GiB")
    } else if b >= (1u64 << 20) as f64 {
        (b / (1u64 << 20) as f64, "MiB")
    } else if b >= 1024.0 {
        (b / 1024.0, "KiB")
    } else {
        (b, "B")
    };
    if v >= 10.0 || v.fract() < 0.05 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

fn level_name(level: usize) -> String {
    if level == 1 {
        "L1d".to_string()
    } else {
        format!("L{level}")
    }
}

/// Latency with cycles when the clock is known: `4.1 ns (11 cycles)`.
fn ns_cycles(ns: f64, ghz: Option<f64>) -> String {
    let t = human_ns(ns);
    match ghz {
        Some(g) => {
            let c = ns * g;
            if c >= 9.95 {
                format!("{t} ({c:.0} cycles)")
            } else {
                format!("{t} ({c:.1} cycles)")
            }
        }
        None => t,
    }
}

fn finding(text: String, value: f64, unit: &str) -> Finding {
    Finding {
        area: "memory".into(),
        text,
        value,
        unit: unit.into(),
    }
}

fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = latency_findings(ms);
    out.extend(bandwidth_findings(ms));
    out.extend(methods::findings(ms));
    out
}

fn latency_findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    let small = curve(ms, "random");
    if small.len() < 3 {
        return out;
    }
    let huge = curve(ms, "random_thp");
    let h = detect::analyse(&small, (huge.len() >= 3).then_some(huge.as_slice()));
    let ghz = super::cpu::run_ghz(ms);
    let sysfs = sysfs_caches(ms);
    let llc = sysfs.last().map(|c| c.1);
    let top = small.last().map_or(0, |p| p.size);
    let caveat = if huge.len() >= 3 {
        ""
    } else {
        " (no huge-page curve: a TLB step may pass for a level)"
    };
    let names = name_levels(&h.levels, &sysfs);
    let memory_ns = h.memory.map(|m| m.ns);
    for (i, l) in h.levels.iter().enumerate() {
        let n = names[i];
        let sys = sysfs.iter().find(|c| usize::from(c.0) == n).map(|c| c.1);
        let last = sysfs.iter().map(|c| usize::from(c.0)).max() == Some(n);
        let verdict = match sys {
            Some(s) => size_verdict(l, s, last),
            None if sysfs.is_empty() => "sysfs: not known".to_string(),
            None => "sysfs lists no such level".to_string(),
        };
        out.push(finding(
            format!(
                "{} ~{} @ {}; {verdict}{}",
                level_name(n),
                approx_size(l.size),
                ns_cycles(l.ns, ghz),
                if i == 0 { caveat } else { "" }
            ),
            l.size as f64,
            "B",
        ));
    }
    for &(level, size) in sysfs.iter().filter(|c| !names.contains(&usize::from(c.0))) {
        let n = usize::from(level);
        // The neighbours the missing level would sit between.
        let below = names
            .iter()
            .zip(&h.levels)
            .rfind(|(m, _)| **m < n)
            .map(|(m, l)| format!("{} ({})", level_name(*m), human_ns(l.ns)));
        let above = names
            .iter()
            .zip(&h.levels)
            .find(|(m, _)| **m > n)
            .map(|(m, l)| format!("{} ({})", level_name(*m), human_ns(l.ns)))
            .or_else(|| memory_ns.map(|ns| format!("memory ({})", human_ns(ns))));
        let why = match (below, above) {
            _ if top < size / 2 => format!("the curve ends at {}, before it", approx_size(top)),
            (Some(b), Some(a)) => format!(
                "no plateau between {b} and {a}; sysfs lists {}, of which too little is usable here to show (shared with other tenants, or partitioned)",
                approx_size(size)
            ),
            (None, Some(a)) => format!("no plateau below {a}; sysfs lists {}", approx_size(size)),
            _ => format!(
                "the curve shows no level; sysfs lists {}",
                approx_size(size)
            ),
        };
        out.push(finding(
            format!("{} not found: {why}", level_name(n)),
            size as f64,
            "B",
        ));
    }
    if let Some(m) = h.memory.filter(|_| !h.levels.is_empty()) {
        // Whether the top of the curve is a plateau or still the ramp
        // varies from run to run near the end of a quick sweep: the words
        // stay the same, the caveat below says how far the curve went.
        let text = match llc {
            Some(l) if top < l && h.memory_reached => format!(
                "last plateau from {} @ {}: the curve ends at {}, inside the {} last-level cache, so memory latency was not reached; use a longer profile",
                approx_size(m.from),
                ns_cycles(m.ns, ghz),
                approx_size(top),
                approx_size(l)
            ),
            Some(l) if top < l * LLC_FACTOR => format!(
                "memory @ {} from {} on; the curve stops at {}, below 4x the last-level cache",
                ns_cycles(m.ns, ghz),
                approx_size(m.from),
                approx_size(top)
            ),
            _ => format!(
                "memory @ {} from {} on",
                ns_cycles(m.ns, ghz),
                approx_size(m.from)
            ),
        };
        out.push(finding(text, m.ns, "ns/op"));
    }
    for t in &h.tlb_steps {
        out.push(finding(
            format!(
                "TLB step at ~{} with 4 KiB pages: {} slower than on huge pages just past it (page walks, not a cache level)",
                approx_size(t.size),
                fmt_ratio(t.ratio)
            ),
            t.ratio,
            "x",
        ));
    }
    // Page-walk cost at the largest working set measured both ways.
    let both = small
        .iter()
        .rev()
        .find_map(|s| huge.iter().find(|p| p.size == s.size).map(|p| (s, p)));
    if let Some(reach) = tlb_reach(&small, &huge) {
        out.push(finding(
            format!(
                "TLB reach with 4 KiB pages: ~{} (the largest working set where 4 KiB pages are as fast as huge pages); past it a load pays a page walk",
                approx_size(reach)
            ),
            reach as f64,
            "B",
        ));
    }
    if let Some((s, p)) = both {
        out.push(finding(
            format!(
                "page-walk cost at {}: {} per load on 4 KiB pages over huge pages",
                approx_size(s.size),
                crate::units::human_ns((s.ns - p.ns).max(0.0))
            ),
            (s.ns - p.ns).max(0.0),
            "ns/op",
        ));
        out.push(finding(
            format!(
                "at {} 4 KiB pages take {} per load, huge pages {}: {} (TLB misses and page walks)",
                approx_size(s.size),
                human_ns(s.ns),
                human_ns(p.ns),
                fmt_ratio(s.ns / p.ns)
            ),
            s.ns / p.ns,
            "x",
        ));
    }
    // What the prefetcher hides: sequential vs random at the largest common size.
    let stride = curve(ms, "stride");
    let common = small
        .iter()
        .rev()
        .find_map(|r| stride.iter().find(|p| p.size == r.size).map(|p| (r, p)));
    if let Some((r, p)) = common {
        out.push(finding(
            format!(
                "at {} a sequential 64-byte stride takes {} per load, random order {} ({} slower): the prefetcher hides the cliffs",
                approx_size(r.size),
                human_ns(p.ns),
                human_ns(r.ns),
                fmt_ratio(r.ns / p.ns)
            ),
            r.ns / p.ns,
            "x",
        ));
    }
    out
}

/// The level number (1 = L1d) of each detected level: matched in order
/// to the levels sysfs lists, so that a level the curve does not show is
/// skipped rather than its name given to the next one. A detected level
/// costs the log of its distance to the sysfs size it takes (a last level
/// smaller than sysfs only a quarter of that: a shared cache), a level
/// left unmatched on either side costs a factor of four.
pub fn name_levels(levels: &[detect::Level], sysfs: &[(u8, u64)]) -> Vec<usize> {
    if sysfs.is_empty() {
        return (1..=levels.len()).collect();
    }
    let skip = 4f64.ln();
    let last = sysfs.len() - 1;
    let cost = |d: &detect::Level, k: usize| {
        let r = (d.size.max(1) as f64 / sysfs[k].1.max(1) as f64).ln();
        if k == last && r < 0.0 {
            -r / 4.0
        } else {
            r.abs()
        }
    };
    // best[i][k]: the cheapest match of the first i levels with the first
    // k sysfs levels; the choice made, to walk back.
    let (n, m) = (levels.len(), sysfs.len());
    let mut best = vec![vec![f64::INFINITY; m + 1]; n + 1];
    let mut step = vec![vec![0u8; m + 1]; n + 1];
    best[0][0] = 0.0;
    for i in 0..=n {
        for k in 0..=m {
            let here = best[i][k];
            if !here.is_finite() {
                continue;
            }
            if i < n && k < m && here + cost(&levels[i], k) < best[i + 1][k + 1] {
                best[i + 1][k + 1] = here + cost(&levels[i], k);
                step[i + 1][k + 1] = 1;
            }
            if k < m && here + skip < best[i][k + 1] {
                best[i][k + 1] = here + skip;
                step[i][k + 1] = 2;
            }
            if i < n && here + skip < best[i + 1][k] {
                best[i + 1][k] = here + skip;
                step[i + 1][k] = 3;
            }
        }
    }
    let mut out = vec![0usize; n];
    let (mut i, mut k) = (n, m);
    // Levels sysfs does not list are numbered on from the one below.
    let mut extra: Vec<usize> = Vec::new();
    while i > 0 || k > 0 {
        match step[i][k] {
            1 => {
                out[i - 1] = usize::from(sysfs[k - 1].0);
                i -= 1;
                k -= 1;
            }
            2 => k -= 1,
            _ => {
                extra.push(i - 1);
                i -= 1;
            }
        }
    }
    for e in extra.into_iter().rev() {
        let below = out[..e].iter().copied().max().unwrap_or(0);
        let mut n = below + 1;
        while out.contains(&n) || sysfs.iter().any(|c| usize::from(c.0) == n) {
            n += 1;
        }
        out[e] = n;
    }
    out
}

/// What sysfs's size `s` says next to a detected level, decided on the
/// level's interval (the sizes clearly below and above its step), so that
/// repeated runs say the same words: it agrees when the interval comes
/// within [`SIZE_AGREES`] of `s`; the last level may be smaller than
/// sysfs (a cache shared with other tenants); else the curve contradicts.
pub fn size_verdict(l: &detect::Level, s: u64, last: bool) -> String {
    let (lo, hi) = (l.size_lo.min(l.size) as f64, l.size_hi.max(l.size) as f64);
    let sf = s as f64;
    if hi * SIZE_AGREES >= sf && lo <= sf * SIZE_AGREES {
        format!("sysfs: {}", approx_size(s))
    } else if last && hi < sf {
        format!(
            "sysfs: {}, of which about {} is usable here (the step to memory is at {}-{}: shared with other tenants or partitioned)",
            approx_size(s),
            approx_size(l.size),
            approx_size(l.size_lo),
            approx_size(l.size_hi)
        )
    } else {
        let r = l.size.max(s) as f64 / l.size.min(s).max(1) as f64;
        format!(
            "sysfs: {}, which the curve contradicts ({} apart)",
            approx_size(s),
            fmt_ratio(r)
        )
    }
}

/// A detected size agrees with sysfs within this factor.
pub const SIZE_AGREES: f64 = 1.25;

/// The largest working set measured on both curves before which 4 KiB
/// pages are never [`detect::MIN_TLB_STEP`] slower than huge pages.
pub fn tlb_reach(small: &[detect::Point], huge: &[detect::Point]) -> Option<u64> {
    let mut reach = None;
    for h in huge {
        let Some(s) = small.iter().find(|p| p.size == h.size) else {
            continue;
        };
        if s.ns / h.ns >= detect::MIN_TLB_STEP {
            return reach;
        }
        reach = Some(h.size);
    }
    None
}

fn bandwidth_findings(ms: &[Measurement]) -> Vec<Finding> {
    use crate::units::human;
    let mut out = Vec::new();
    for kernel in [
        Kernel::Read,
        Kernel::Write,
        Kernel::Copy,
        Kernel::StreamTriad,
    ] {
        let one = super::get(ms, &bandwidth_id(kernel, false));
        let all = super::get(ms, &bandwidth_id(kernel, true));
        let (Some(one), Some(all)) = (one, all) else {
            continue;
        };
        let threads = all
            .details
            .as_ref()
            .and_then(|d| d.get("threads")?.as_u64())
            .unwrap_or(0);
        let dynamic = super::median_of(
            ms,
            &format!("memory.bandwidth.{}/threads=all_dynamic", kernel.name()),
        )
        .map(|d| format!(", {} with blocks handed out dynamically", human(d, "B/s")))
        .unwrap_or_default();
        out.push(finding(
            format!(
                "{} bandwidth: {} on one thread, {} on {threads} threads in fixed slices{dynamic} ({}; {} accounting)",
                kernel.name(),
                human(one.median, "B/s"),
                human(all.median, "B/s"),
                fmt_ratio(all.median / one.median),
                kernel.accounting()
            ),
            all.median / one.median,
            "x",
        ));
    }
    let memory = super::median_of(ms, &bandwidth_id(Kernel::Copy, false));
    let cached: Vec<(String, f64)> = CACHED_COPY_SIZES
        .iter()
        .filter_map(|&s| {
            let m = super::get(ms, &cached_copy_id(s))?;
            let fits = m.param("fits").filter(|f| f != "null");
            Some((
                format!(
                    "{}{} {}",
                    approx_size(s),
                    fits.map(|f| format!(" ({f})")).unwrap_or_default(),
                    human(m.median, "B/s")
                ),
                m.median,
            ))
        })
        .collect();
    if let (Some(mem), Some(best)) = (memory, cached.iter().map(|c| c.1).max_by(f64::total_cmp)) {
        out.push(finding(
            format!(
                "memcpy within caches: {}; from memory {} ({} slower than the fastest)",
                cached
                    .iter()
                    .map(|c| c.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                human(mem, "B/s"),
                fmt_ratio(best / mem)
            ),
            best / mem,
            "x",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
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
    fn tlb_reach_is_the_last_size_where_small_pages_keep_up() {
        let p = |size: u64, ns: f64| detect::Point { size, ns };
        let small = [
            p(128 << 10, 3.8),
            p(256 << 10, 3.9),
            p(384 << 10, 9.4),
            p(512 << 10, 10.0),
        ];
        let huge = [
            p(128 << 10, 3.8),
            p(256 << 10, 4.5),
            p(384 << 10, 5.9),
            p(512 << 10, 8.6),
        ];
        assert_eq!(tlb_reach(&small, &huge), Some(256 << 10));
        // Never apart: no step inside the curve, so no reach to state.
        assert_eq!(tlb_reach(&huge, &huge), None);
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
