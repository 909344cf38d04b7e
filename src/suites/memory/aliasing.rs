//! Cache aliasing: does a power-of-two distance between data hurt? (E8)
//!
//! A cache is split into sets; the set of a line is picked by the address
//! bits just above the line offset, so lines a multiple of (sets x line
//! size) apart (one *way*: 4 KiB for a 32 KiB 8-way L1d) all land in one
//! set, which holds only as many lines as the cache has ways. A working set
//! far smaller than the cache then misses it anyway.
//!
//! The sweep chases pointers in random order through a fixed number of
//! lines ([`LINES`]) placed a stride apart, from 64 B (contiguous) to
//! 64 KiB, plus each cache's way size plus one line (4160 B for a 4 KiB
//! way), where the same lines fall into consecutive sets: the control the
//! cliff is measured against. Each result records, per cache level, how
//! many of its lines share one set at its stride ([`set_load`]), computed
//! from the sysfs geometry; the finding compares the way-size stride with
//! its control by their intervals.
//!
//! The lines are on transparent huge pages where the kernel gives them:
//! caches past L1 are indexed by physical address, and with 4 KiB pages
//! the bits of a larger stride above the page are the kernel's choice of
//! frames, not the stride's (L1d's set bits lie inside the page offset,
//! so its cliff shows on any page size).

use serde_json::json;

use super::latency;
use super::region::{Pages, thp_mode};
use crate::harness::claims::{Est, compare, fast_end};
use crate::harness::{Bench, Ctx, Finding, Measurement, PrepareError, Timed, Unit};
use crate::host::{CacheInfo, Host};
use crate::suites::bench::FnBench;
use crate::units::{ValueUnit, size_label};

/// Lines chased at every stride: well within any L1d (512 lines of 32 KiB),
/// but four times the ways of the usual 8-way set, and few enough pages
/// (at 4 KiB strides and beyond) to stay within the first-level TLB.
pub const LINES: u64 = 32;
/// The smallest stride: one line.
pub const MIN_STRIDE: u64 = 64;
/// The largest power-of-two stride.
pub const MAX_STRIDE: u64 = 64 << 10;
/// The line size assumed when sysfs does not give one.
const LINE_GUESS: u64 = 64;
/// Budget of one stride point, relative to the profile's default (a chase
/// of 32 lines needs only the profile's samples).
const POINT_BUDGET: f64 = 0.5;

/// The id of the point at `stride` bytes: `memory.alias.stride/4KiB`.
pub fn alias_id(stride: u64) -> String {
    format!("memory.alias.stride/{}", size_label(stride))
}

/// The strides measured on `host`: powers of two from [`MIN_STRIDE`] to
/// [`MAX_STRIDE`], and each data cache's way size (if in that range) plus
/// one line, the control of that way's cliff.
pub fn strides(host: &Host) -> Vec<u64> {
    let mut out: Vec<u64> = std::iter::successors(Some(MIN_STRIDE), |s| Some(s * 2))
        .take_while(|&s| s <= MAX_STRIDE)
        .collect();
    for way in way_sizes(host) {
        out.push(way + line_of(host));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The way sizes of the data and unified caches within the sweep, smallest
/// first (4 KiB for L1d, 64 KiB for a 512 KiB 8-way L2); 4 KiB, the usual
/// L1d way and page, when sysfs gives no geometry.
fn way_sizes(host: &Host) -> Vec<u64> {
    let mut ways: Vec<u64> = data_caches(host)
        .filter_map(CacheInfo::way_bytes)
        .filter(|w| (MIN_STRIDE..=MAX_STRIDE).contains(w) && w.is_power_of_two())
        .collect();
    if ways.is_empty() {
        ways.push(4 << 10);
    }
    ways.sort_unstable();
    ways.dedup();
    ways
}

fn data_caches(host: &Host) -> impl Iterator<Item = &CacheInfo> {
    host.caches.iter().filter(|c| c.kind != "Instruction")
}

fn line_of(host: &Host) -> u64 {
    host.cache(1)
        .and_then(|c| c.line_bytes)
        .unwrap_or(LINE_GUESS)
}

/// How `lines` lines `stride` bytes apart spread over a cache of `sets`
/// sets of `line`-byte lines: (sets they use, most lines in one set).
/// Line k falls in set (k x stride / line) mod sets, and those repeat
/// every sets / gcd(sets, stride / line) lines.
pub fn set_load(lines: u64, stride: u64, line: u64, sets: u64) -> (u64, u64) {
    if sets == 0 || line == 0 || lines == 0 {
        return (0, 0);
    }
    if !stride.is_multiple_of(line) {
        // Not line-aligned: consecutive sets, as for a contiguous array.
        let used = lines.min(sets);
        return (used, lines.div_ceil(used));
    }
    let step = (stride / line) % sets;
    let period = if step == 0 { 1 } else { sets / gcd(sets, step) };
    let used = lines.min(period);
    (used, lines.div_ceil(used))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The name of a cache level in findings: `L1d`, `L2`.
fn level_name(level: u8) -> String {
    if level == 1 {
        "L1d".into()
    } else {
        format!("L{level}")
    }
}

/// What the result of one stride records about each cache: its sets and
/// ways, and how the chased lines load its sets.
fn geometry(host: &Host, stride: u64) -> serde_json::Value {
    let line = line_of(host);
    let levels: Vec<serde_json::Value> = data_caches(host)
        .filter_map(|c| {
            let sets = c.sets()?;
            let (used, per_set) = set_load(LINES, stride, c.line_bytes.unwrap_or(line), sets);
            Some(json!({
                "level": c.level,
                "sets": sets,
                "ways": c.ways,
                "way_bytes": c.way_bytes(),
                "sets_used": used,
                "lines_per_set": per_set,
                "over_ways": c.ways.is_some_and(|w| per_set > w),
            }))
        })
        .collect();
    json!({
        "lines": LINES,
        "stride_bytes": stride,
        "caches": levels,
        "ghz_estimate": crate::harness::clock::ghz_estimate(),
    })
}

/// The aliasing sweep on `host`.
pub fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
    strides(host)
        .into_iter()
        .map(|stride| {
            FnBench::new(
                alias_id(stride),
                format!(
                    "dependent loads in random order through {LINES} lines {} apart (set conflicts at way-size strides)",
                    size_label(stride)
                ),
                Unit::Latency,
                move |ctx: &Ctx| prepare(stride, ctx),
            )
            .param("stride", stride)
            .param("lines", LINES)
            .budget_scale(POINT_BUDGET)
            .interleave("memory.alias")
            .on_request().boxed()
        })
        .collect()
}

fn prepare(stride: u64, ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
    let thp = thp_mode().is_some_and(|m| m != "never");
    let pages = if thp { Pages::Huge } else { Pages::Small };
    let mut details = geometry(&ctx.host, stride);
    if let Some(d) = details.as_object_mut() {
        d.insert("pages".into(), json!(pages.name()));
    }
    let mut chase = latency::prepare_spaced(LINES as usize, stride as usize, pages, ctx, details)?;
    let huge = chase
        .details()
        .and_then(|d| d.get("huge_page_fraction")?.as_f64());
    if stride > 4096 && huge.is_none_or(|f| f < 1.0) {
        chase.warn(
            "not all lines are on huge pages: beyond L1d, set conflicts at strides over 4 KiB depend on which physical pages the kernel gave".to_string(),
        );
    }
    Ok(Box::new(chase))
}

/// The stride of a result, from its parameters.
fn stride_of(m: &Measurement) -> Option<u64> {
    m.params.get("stride")?.as_u64()
}

/// One cache level as a stride point recorded it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Load {
    level: u64,
    way: u64,
    ways: u64,
    sets_used: u64,
    per_set: u64,
    over: bool,
}

/// The per-level loads a result recorded.
fn loads(m: &Measurement) -> Vec<Load> {
    let Some(caches) = m.details.as_ref().and_then(|d| d.get("caches")?.as_array()) else {
        return Vec::new();
    };
    caches
        .iter()
        .filter_map(|c| {
            let u = |k: &str| c.get(k).and_then(|v| v.as_u64());
            Some(Load {
                level: u("level")?,
                way: u("way_bytes")?,
                ways: u("ways")?,
                sets_used: u("sets_used")?,
                per_set: u("lines_per_set")?,
                over: c.get("over_ways")?.as_bool()?,
            })
        })
        .collect()
}

/// "stride 4 KiB: 32 lines map to one L1d set (8 ways); latency 3.1×
/// (2.9–3.3) the 4160 B stride": for every cache level whose way size was
/// measured, against a control stride whose lines fit that level's sets
/// and load every level below it as the way-size stride does (so only
/// this level differs): the way size plus a line when it qualifies, else
/// the largest qualifying stride below the way. The set load comes from
/// the recorded geometry, the verdict from the two fast ends' intervals.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let points: Vec<(u64, &Measurement, Vec<Load>)> = ms
        .iter()
        .filter(|m| m.id.starts_with("memory.alias.stride/"))
        .filter_map(|m| Some((stride_of(m)?, m, loads(m))))
        .collect();
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for (stride, cliff, cliff_loads) in &points {
        for l in cliff_loads {
            if l.way != *stride || seen.contains(&l.way) {
                continue;
            }
            let line = line_from(cliff).unwrap_or(LINE_GUESS);
            let below = |ls: &[Load]| -> Vec<bool> {
                ls.iter()
                    .filter(|x| x.level < l.level)
                    .map(|x| x.over)
                    .collect()
            };
            let qualifies = |ls: &[Load]| {
                below(ls) == below(cliff_loads) && ls.iter().any(|x| x.level == l.level && !x.over)
            };
            let candidates: Vec<&(u64, &Measurement, Vec<Load>)> = points
                .iter()
                .filter(|(s, _, ls)| s != stride && qualifies(ls))
                .collect();
            let control = candidates
                .iter()
                .find(|(s, _, _)| *s == l.way + line)
                .or_else(|| {
                    candidates
                        .iter()
                        .filter(|(s, _, _)| s < stride)
                        .max_by_key(|(s, _, _)| *s)
                });
            let Some((control_stride, control, _)) = control else {
                continue;
            };
            seen.push(l.way);
            out.push(finding(l, *control_stride, &est(cliff), &est(control)));
        }
    }
    out
}

/// The line size of a result's first cache (the stride of the control).
fn line_from(m: &Measurement) -> Option<u64> {
    let c = m.details.as_ref()?.get("caches")?.as_array()?;
    let first = c.first()?;
    let way = first.get("way_bytes")?.as_u64()?;
    let sets = first.get("sets")?.as_u64()?;
    (sets > 0).then(|| way / sets)
}

fn est(m: &Measurement) -> Est<'_> {
    fast_end(m).unwrap_or_else(|| Est::of(m))
}

fn finding(l: &Load, control_stride: u64, cliff: &Est, control: &Est) -> Finding {
    let name = level_name(l.level as u8);
    let sets = if l.sets_used == 1 {
        format!("{LINES} lines map to one {name} set ({} ways)", l.ways)
    } else {
        format!(
            "{LINES} lines map to {} {name} sets, {} per set ({} ways)",
            l.sets_used, l.per_set, l.ways
        )
    };
    let control_label = if control_stride.is_power_of_two() {
        crate::units::approx_size(control_stride)
    } else {
        format!("{control_stride} B")
    };
    let verdict = compare(control, cliff).pick(
        |r| format!("latency {r} the {control_label} stride"),
        |r| format!("latency {r} lower than at the {control_label} stride"),
        |_| format!("latency within noise of the {control_label} stride: no cliff measured"),
    );
    Finding {
        area: "memory".into(),
        text: format!(
            "stride {}: {sets}; {verdict} ({:.2} vs {:.2} ns per load, fastest 5%)",
            crate::units::approx_size(l.way),
            cliff.value,
            control.value
        ),
        value: cliff.value / control.value,
        unit: ValueUnit::Ratio,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        let mut h = Host::default();
        for (level, size, ways) in [
            (1u8, 32u64 << 10, 8u64),
            (2, 512 << 10, 8),
            (3, 32 << 20, 16),
        ] {
            h.caches.push(CacheInfo {
                level,
                kind: if level == 1 { "Data" } else { "Unified" }.into(),
                size_bytes: size,
                line_bytes: Some(64),
                ways: Some(ways),
                ..Default::default()
            });
        }
        h
    }

    #[test]
    fn a_way_sized_stride_puts_every_line_in_one_set() {
        // L1d: 64 sets of 64 B, 8 ways.
        assert_eq!(set_load(32, 4096, 64, 64), (1, 32));
        assert_eq!(set_load(32, 4160, 64, 64), (32, 1));
        assert_eq!(set_load(32, 64, 64, 64), (32, 1));
        assert_eq!(set_load(32, 2048, 64, 64), (2, 16));
        // L2: 1024 sets; 4 KiB apart, lines use 16 sets, 2 each.
        assert_eq!(set_load(32, 4096, 64, 1024), (16, 2));
        assert_eq!(set_load(32, 64 << 10, 64, 1024), (1, 32));
        assert_eq!(set_load(0, 64, 64, 64), (0, 0));
    }

    #[test]
    fn the_sweep_holds_the_way_sizes_and_their_controls() {
        let s = strides(&host());
        assert_eq!(s.first(), Some(&64));
        assert!(s.contains(&4096) && s.contains(&4160));
        assert!(s.contains(&(64 << 10)) && s.contains(&((64 << 10) + 64)));
        assert!(!s.contains(&((2 << 20) + 64)), "L3's way is past the sweep");
        // Without geometry: the 4 KiB control all the same.
        assert!(strides(&Host::default()).contains(&4160));
        assert_eq!(alias_id(4160), "memory.alias.stride/4160B");
        assert_eq!(alias_id(4096), "memory.alias.stride/4KiB");
    }

    fn point(h: &Host, stride: u64, ns: f64, rel: f64) -> Measurement {
        let mut m = Measurement::within(&alias_id(stride), "ns/op", ns, rel);
        m.params.insert("stride".into(), json!(stride));
        m.details = Some(geometry(h, stride));
        m
    }

    #[test]
    fn the_finding_states_the_set_load_and_the_ratio_decided_by_intervals() {
        let h = host();
        let ms = vec![
            point(&h, 4096, 3.6, 0.03),
            point(&h, 4160, 1.2, 0.03),
            point(&h, 8 << 10, 3.6, 0.03),
            point(&h, 64 << 10, 3.7, 0.03),
            point(&h, (64 << 10) + 64, 1.2, 0.03),
        ];
        let f = findings(&ms);
        assert_eq!(f.len(), 2, "{f:?}");
        f[0].assert_starts_with(
            "stride 4 KiB: 32 lines map to one L1d set (8 ways); latency 3.00× (",
        );
        f[0].assert_says("the 4160 B stride");
        assert!((f[0].value - 3.0).abs() < 1e-9);
        // L2's control also misses L1d (8 KiB, not 65600 B, which hits it).
        f[1].assert_says("one L2 set");
        f[1].assert_says("within noise of the 8 KiB stride: no cliff measured");
        // Without the control there is nothing to compare with.
        assert!(findings(&ms[..1]).is_empty());
    }

    #[test]
    fn a_spaced_chase_visits_every_line_at_its_stride() {
        let ctx = crate::harness::test_ctx_with(host(), &std::env::temp_dir());
        let mut c = latency::prepare_spaced(32, 4160, Pages::Small, &ctx, json!({})).unwrap();
        let mut seen: Vec<usize> = (0..32).map(|_| c.walk(1) * 64).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..32).map(|i| i * 4160).collect::<Vec<_>>());
        assert!(c.run(1000).unwrap() > std::time::Duration::ZERO);
    }
}
