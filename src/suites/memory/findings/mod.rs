//! The memory suite's findings: the cache levels read from the latency
//! curve (named against sysfs, never a memory latency under a cache's
//! name), the bandwidth of one thread and of all, and the copy methods
//! ranked in tiers. Every word is decided by intervals ([`crate::harness::claims`]).

use super::methods::{self, Method, Op};
use super::*;
use crate::harness::claims::{Est, Ratio, speedup};
use crate::units::{BaseUnit, ValueUnit};

mod bandwidth;
pub(super) use bandwidth::{bandwidth_findings, method_findings};

/// The points of one latency curve (`memory.latency.NAME/SIZE`) in a run,
/// each at its fast end ([`crate::suites::bench::fast_ns_per_op`]): on a shared
/// machine other tenants of the caches only ever add time.
pub(super) fn curve(ms: &[Measurement], name: &str) -> Vec<detect::Point> {
    let prefix = latency_prefix(name);
    let mut pts: Vec<detect::Point> = ms
        .iter()
        .filter(|m| m.id.starts_with(&prefix) && !short_of_huge_pages(m))
        .filter_map(|m| {
            Some(detect::Point {
                size: m.params.get("size")?.as_u64()?,
                ns: crate::suites::bench::fast_ns_per_op(m),
            })
        })
        .collect();
    pts.sort_by_key(|p| p.size);
    pts
}

/// Whether `m` asked for huge pages and got them for less than half of its
/// working set (recorded as `huge_page_fraction`): such a point measured 4
/// KiB pages, and read as a huge-page point it would hide the TLB's cost
/// and cut the curve short where the larger sizes were skipped (a qemu
/// aarch64 guest in THP `madvise` mode gave none at any size).
fn short_of_huge_pages(m: &Measurement) -> bool {
    let Some(d) = m.details.as_ref() else {
        return false;
    };
    d.get("pages").and_then(|p| p.as_str()) == Some("thp")
        && d.get("huge_page_fraction")
            .and_then(|f| f.as_f64())
            .is_some_and(|f| f < 0.5)
}

/// The data and unified cache sizes sysfs listed, by level, as recorded
/// with the latency results.
pub(super) fn sysfs_caches(ms: &[Measurement]) -> Vec<(u8, u64)> {
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

pub(super) fn level_name(level: usize) -> String {
    if level == 1 {
        "L1d".to_string()
    } else {
        format!("L{level}")
    }
}

/// Latency with cycles when the clock is known: `4.1 ns (11 cycles)`.
pub(super) fn ns_cycles(ns: f64, ghz: Option<f64>) -> String {
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

pub(super) fn finding(text: String, value: f64, unit: impl Into<ValueUnit>) -> Finding {
    Finding {
        area: "memory".into(),
        text,
        value,
        unit: unit.into(),
    }
}

pub(super) fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = latency_findings(ms);
    out.extend(bandwidth_findings(ms));
    out.extend(method_findings(ms));
    out.extend(super::aliasing::findings(ms));
    out
}

/// The latency curves of a run and what they show: the levels detected
/// (named against sysfs), the memory plateau, the TLB steps.
struct Latency {
    /// The curve on 4 KiB pages (`random`).
    small: Vec<detect::Point>,
    /// The curve on huge pages (`random_thp`), maybe empty.
    huge: Vec<detect::Point>,
    /// 4 KiB pages against huge pages at each size measured both ways.
    pages: Vec<PageGap>,
    /// The hierarchy detected on them.
    h: detect::Hierarchy,
    /// The run's clock, GHz, when known.
    ghz: Option<f64>,
    /// The data and unified cache sizes sysfs lists, by level.
    sysfs: Vec<(u8, u64)>,
    /// The level number of each detected level ([`name_levels`]).
    names: Vec<usize>,
    /// The largest working set of the 4 KiB curve.
    top: u64,
}

impl Latency {
    /// The latency curves of `ms` analysed; `None` with fewer than three
    /// points on 4 KiB pages.
    fn of(ms: &[Measurement]) -> Option<Latency> {
        let small = curve(ms, "random");
        if small.len() < 3 {
            return None;
        }
        let huge = curve(ms, "random_thp");
        let h = detect::analyse(&small, (huge.len() >= 3).then_some(huge.as_slice()));
        let sysfs = sysfs_caches(ms);
        let names = name_levels(&h.levels, &sysfs);
        Some(Latency {
            top: small.last().map_or(0, |p| p.size),
            ghz: crate::suites::bench::run_ghz(ms),
            pages: page_gaps(ms),
            small,
            huge,
            h,
            sysfs,
            names,
        })
    }

    /// The last level sysfs lists (its number and size) when the curve
    /// ends before half of it: such a curve cannot tell a share of that
    /// cache usable here from memory (a 480 MiB L3 shared with the host,
    /// read to 64 MiB, showed a level and memory in one run and neither in
    /// the next two), so the level and memory are one statement
    /// ([`Latency::beyond_finding`]) instead of words that come and go.
    fn llc_beyond(&self) -> Option<(usize, u64)> {
        let &(level, size) = self.sysfs.last()?;
        (self.top < size / 2).then_some((usize::from(level), size))
    }

    /// The one statement about a last-level cache the curve ends well
    /// inside of ([`Latency::llc_beyond`]): where the curve ends and what a
    /// load takes there, which this curve cannot place in the cache or in
    /// memory.
    fn beyond_finding(&self) -> Option<Finding> {
        let (level, size) = self.llc_beyond()?;
        let end = self.small.last()?;
        Some(finding(
            format!(
                "{} (sysfs: {}) past the curve's end at {}: a load there takes {} (its fast end), which a curve this short cannot place in a share of the {} usable here or in memory; use a longer profile",
                level_name(level),
                crate::units::approx_size(size),
                crate::units::approx_size(end.size),
                ns_cycles(end.ns, self.ghz),
                level_name(level),
            ),
            end.ns,
            BaseUnit::NsPerOp,
        ))
    }

    /// One finding per detected level: its size and latency, with what
    /// sysfs says of its size (none for a last level past the curve's end,
    /// [`Latency::llc_beyond`]).
    fn level_findings(&self) -> Vec<Finding> {
        let caveat = if self.huge.len() >= 3 {
            ""
        } else {
            " (no huge-page curve: a TLB step may pass for a level)"
        };
        let sysfs = &self.sysfs;
        let mut out = Vec::new();
        let beyond = self.llc_beyond().map(|b| b.0);
        for (i, l) in self.h.levels.iter().enumerate() {
            let n = self.names[i];
            if beyond == Some(n) {
                continue;
            }
            let sys = sysfs.iter().find(|c| usize::from(c.0) == n).map(|c| c.1);
            let last = sysfs.iter().map(|c| usize::from(c.0)).max() == Some(n);
            let verdict = match sys {
                Some(s) => size_verdict(l, s, last),
                None if sysfs.is_empty() => "from this curve (sysfs lists no caches)".to_string(),
                None => "sysfs lists no such level".to_string(),
            };
            out.push(finding(
                format!(
                    "{} ~{} @ {} (the plateau's fast end); {verdict}{}",
                    detected_name(&self.names, i),
                    crate::units::approx_size(l.size),
                    ns_cycles(l.ns, self.ghz),
                    if i == 0 { caveat } else { "" }
                ),
                l.size as f64,
                ValueUnit::Bytes,
            ));
        }
        out
    }

    /// The levels sysfs lists that the curve does not show (a last level
    /// past the curve's end among them, whatever the curve detected).
    fn unseen_levels(&self) -> Vec<usize> {
        let beyond = self.llc_beyond().map(|b| b.0);
        self.sysfs
            .iter()
            .map(|c| usize::from(c.0))
            .filter(|n| !self.names.contains(n) || beyond == Some(*n))
            .collect()
    }

    /// One finding per level sysfs lists that the curve does not show,
    /// saying why: the curve ends before it, or no plateau between the
    /// levels it would sit between (a last level past the curve's end has
    /// its own statement, [`Latency::beyond_finding`]).
    fn missing_level_findings(&self) -> Vec<Finding> {
        let (names, levels, top) = (&self.names, &self.h.levels, self.top);
        let memory_ns = self.h.memory.map(|m| m.ns);
        let beyond = self.llc_beyond().map(|b| b.0);
        let mut out = Vec::new();
        for &(level, size) in self
            .sysfs
            .iter()
            .filter(|c| !names.contains(&usize::from(c.0)) && beyond != Some(usize::from(c.0)))
        {
            let n = usize::from(level);
            // The neighbours the missing level would sit between.
            let below = names
                .iter()
                .zip(levels)
                .rfind(|(m, _)| **m != UNNUMBERED && **m < n)
                .map(|(m, l)| format!("{} ({})", level_name(*m), human_ns(l.ns)));
            let above = names
                .iter()
                .zip(levels)
                .find(|(m, _)| **m > n)
                .map(|(m, l)| format!("{} ({})", level_name(*m), human_ns(l.ns)))
                .or_else(|| memory_ns.map(|ns| format!("memory ({})", human_ns(ns))));
            let why = match (below, above) {
                _ if top < size / 2 => format!(
                    "the curve ends at {}, before it",
                    crate::units::approx_size(top)
                ),
                (Some(b), Some(a)) => format!(
                    "no plateau between {b} and {a}; sysfs lists {}, of which too little is usable here to show (shared with other tenants, or partitioned)",
                    crate::units::approx_size(size)
                ),
                (None, Some(a)) => format!(
                    "no plateau below {a}; sysfs lists {}",
                    crate::units::approx_size(size)
                ),
                _ => format!(
                    "the curve shows no level; sysfs lists {}",
                    crate::units::approx_size(size)
                ),
            };
            out.push(finding(
                format!("{} not found: {why}", level_name(n)),
                size as f64,
                ValueUnit::Bytes,
            ));
        }
        out
    }

    /// The memory plateau's latency, when the curve shows levels below
    /// it, with how far short of the last-level cache the curve stopped;
    /// none when the curve ends well inside the last-level cache
    /// ([`Latency::llc_beyond`]), where it cannot tell memory.
    fn memory_finding(&self) -> Option<Finding> {
        if self.llc_beyond().is_some() {
            return None;
        }
        let m = self.h.memory.filter(|_| !self.h.levels.is_empty())?;
        let (top, ghz) = (self.top, self.ghz);
        // Whether the top of the curve is a plateau or still the ramp
        // varies from run to run near the end of a quick sweep: the words
        // stay the same, the caveat below says how far the curve went.
        // A flat top inside the last-level cache sysfs lists is that cache
        // unless the curve already found it as a level (a guest that can
        // use only a share of it: past that share is memory).
        let llc_found = self
            .sysfs
            .last()
            .is_some_and(|c| self.names.contains(&usize::from(c.0)));
        let text = match self.sysfs.last().map(|c| c.1) {
            Some(l) if top < l && self.h.memory_reached && !llc_found => format!(
                "last plateau from {} @ {} (its fast end): the curve ends at {}, inside the {} last-level cache, so memory latency was not reached; use a longer profile",
                crate::units::approx_size(m.from),
                ns_cycles(m.ns, ghz),
                crate::units::approx_size(top),
                crate::units::approx_size(l)
            ),
            Some(l) if top < l * LLC_FACTOR => format!(
                "memory @ {} (the plateau's fast end) from {} on; the curve stops at {}, below 4x the last-level cache",
                ns_cycles(m.ns, ghz),
                crate::units::approx_size(m.from),
                crate::units::approx_size(top)
            ),
            _ => format!(
                "memory @ {} (the plateau's fast end) from {} on",
                ns_cycles(m.ns, ghz),
                crate::units::approx_size(m.from)
            ),
        };
        Some(finding(text, m.ns, BaseUnit::NsPerOp))
    }

    /// What 4 KiB pages cost against huge pages: the TLB steps, the TLB's
    /// reach, and the page walk at the largest working set measured both
    /// ways.
    fn tlb_findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for t in &self.h.tlb_steps {
            out.push(finding(
                format!(
                    "TLB step at ~{} with 4 KiB pages: {} slower than on huge pages just past it (page walks, not a cache level)",
                    crate::units::approx_size(t.size),
                    fmt_ratio(t.ratio)
                ),
                t.ratio,
                ValueUnit::Ratio,
            ));
        }
        let Some(last) = self.pages.last() else {
            return out;
        };
        match first_apart(&self.pages) {
            Some(0) => out.push(finding(
                format!(
                    "TLB reach with 4 KiB pages: below {} (4 KiB pages are clearly {}× slower than huge pages from the smallest working set measured both ways on)",
                    crate::units::approx_size(self.pages[0].size),
                    detect::MIN_TLB_STEP
                ),
                self.pages[0].size as f64,
                ValueUnit::Bytes,
            )),
            Some(i) => out.push(finding(
                format!(
                    "TLB reach with 4 KiB pages: ~{} (the largest working set before 4 KiB pages are clearly {}× slower than huge pages); past it a load pays a page walk",
                    crate::units::approx_size(self.pages[i - 1].size),
                    detect::MIN_TLB_STEP
                ),
                self.pages[i - 1].size as f64,
                ValueUnit::Bytes,
            )),
            None => out.push(finding(
                format!(
                    "TLB reach with 4 KiB pages: not seen up to {} (no size where 4 KiB pages are clearly {}× slower than huge pages)",
                    crate::units::approx_size(last.size),
                    detect::MIN_TLB_STEP
                ),
                last.size as f64,
                ValueUnit::Bytes,
            )),
        }
        // The page walk at the largest working set measured both ways.
        let (s, h, r) = (last.small.value, last.huge.value, last.ratio);
        let walk = if last.apart() {
            format!("page walks add {} per load", human_ns(s - h))
        } else {
            format!("4 KiB pages not clearly {}× slower", detect::MIN_TLB_STEP)
        };
        out.push(finding(
            format!(
                "at {} 4 KiB pages take {} per load, huge pages {}: {walk} ({})",
                crate::units::approx_size(last.size),
                human_ns(s),
                human_ns(h),
                r.text()
            ),
            r.ratio,
            ValueUnit::Ratio,
        ));
        out
    }
}

/// The points of curves `a` and `b` at the largest size both measured.
fn largest_common<'a>(
    a: &'a [detect::Point],
    b: &'a [detect::Point],
) -> Option<(&'a detect::Point, &'a detect::Point)> {
    a.iter()
        .rev()
        .find_map(|x| b.iter().find(|y| y.size == x.size).map(|y| (x, y)))
}

/// What the prefetcher hides: sequential (`stride`) against random order
/// on 4 KiB pages (`small`) at the largest size measured both ways.
fn prefetch_finding(small: &[detect::Point], stride: &[detect::Point]) -> Option<Finding> {
    let (r, p) = largest_common(small, stride)?;
    Some(finding(
        format!(
            "at {} a sequential 64-byte stride takes {} per load, random order {} ({} slower): the prefetcher hides the cliffs",
            crate::units::approx_size(r.size),
            human_ns(p.ns),
            human_ns(r.ns),
            fmt_ratio(r.ns / p.ns)
        ),
        r.ns / p.ns,
        ValueUnit::Ratio,
    ))
}

/// The latency findings: the levels the curve shows and those sysfs lists
/// that it does not, memory, the TLB, and the prefetcher.
pub(super) fn latency_findings(ms: &[Measurement]) -> Vec<Finding> {
    let Some(l) = Latency::of(ms) else {
        return Vec::new();
    };
    let mut out = l.level_findings();
    out.extend(l.missing_level_findings());
    out.extend(l.beyond_finding());
    out.extend(l.memory_finding());
    out.extend(l.tlb_findings());
    out.extend(prefetch_finding(&l.small, &curve(ms, "stride")));
    out
}

/// The level number (1 = L1d) of each detected level: matched in order
/// to the levels sysfs lists, so that a level the curve does not show is
/// skipped rather than its name given to the next one. A detected level
/// costs the log of its distance to the sysfs size it takes (a last level
/// smaller than sysfs only a quarter of that: a shared cache), a level
/// left unmatched on either side costs a factor of four. A level sysfs does
/// not list is numbered on from the one below it, or [`UNNUMBERED`] when a
/// larger level took a smaller number.
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
        // A level below one that took a smaller number has no number of its
        // own: one run's stretch at 6.7 MiB came out as "L4" before the L3.
        let numbered_above = out[e + 1..].iter().any(|&m| m != UNNUMBERED && m < n);
        out[e] = if numbered_above { UNNUMBERED } else { n };
    }
    out
}

/// The name [`name_levels`] gives a level that sysfs does not list and that
/// sits below a level it does: it is named by its neighbours instead.
const UNNUMBERED: usize = 0;

/// The name of detected level `i` of `names` ([`name_levels`]): `L2`, or
/// for an unnumbered one its place, "a level between L2 and L3".
fn detected_name(names: &[usize], i: usize) -> String {
    if names[i] != UNNUMBERED {
        return level_name(names[i]);
    }
    let below = names[..i].iter().rev().find(|&&m| m != UNNUMBERED);
    let above = names[i + 1..].iter().find(|&&m| m != UNNUMBERED);
    match (below, above) {
        (Some(&b), Some(&a)) => format!("a level between {} and {}", level_name(b), level_name(a)),
        (None, Some(&a)) => format!("a level below {}", level_name(a)),
        (Some(&b), None) => format!("a level above {}", level_name(b)),
        (None, None) => "a level".to_string(),
    }
}

/// What sysfs's size `s` says next to a detected level, decided on the
/// level's interval (the sizes clearly below and above its step), so that
/// repeated runs say the same words. A level other than the last agrees
/// when its interval comes within [`SIZE_AGREES`] of `s` above it or
/// within [`SIZE_SHORT_AGREES`] below it, else the curve contradicts. The
/// last level (the one before memory) whose interval is wholly below `s`
/// is said as the share of it usable here, whatever the gap: the AMD
/// guest's 32 MiB L3 stepped at 6-8, 8-12, 12-16 or 16-24 MiB from run to
/// run and day to day, and every line drawn in that range (2x, then the
/// whole interval within 2x) split some day's runs between "sysfs: 32
/// MiB" and "usable here". Reaching `s` (within [`SIZE_AGREES`] above it)
/// it agrees; further above, it contradicts.
pub fn size_verdict(l: &detect::Level, s: u64, last: bool) -> String {
    let (lo, hi) = (l.size_lo.min(l.size) as f64, l.size_hi.max(l.size) as f64);
    let sf = s as f64;
    if last && hi < sf {
        format!(
            "sysfs: {}, of which about {} is usable here (the step to memory is at {}–{}: a cache steps before it is full, and earlier when shared with other tenants or partitioned)",
            crate::units::approx_size(s),
            crate::units::approx_size(l.size),
            crate::units::approx_size(l.size_lo),
            crate::units::approx_size(l.size_hi)
        )
    } else if hi * SIZE_SHORT_AGREES >= sf && lo <= sf * SIZE_AGREES {
        format!("sysfs: {}", crate::units::approx_size(s))
    } else {
        let r = l.size.max(s) as f64 / l.size.min(s).max(1) as f64;
        format!(
            "sysfs: {}, which the curve contradicts ({} apart)",
            crate::units::approx_size(s),
            fmt_ratio(r)
        )
    }
}

/// A detected size agrees with sysfs within this factor above it.
pub const SIZE_AGREES: f64 = 1.25;

/// A detected size agrees with sysfs within this factor below it: a
/// latency curve's step for a cache comes before the cache is full (4 KiB
/// pages land on its sets unevenly, and its replacement is not LRU), so
/// this guest's 512 KiB L2 stepped at 304-422 KiB from run to run, and
/// 1.25x made "contradicts" come and go with the run.
pub const SIZE_SHORT_AGREES: f64 = 2.0;

/// 4 KiB pages against huge pages at one working set: the medians of the
/// two latency results with their intervals (the table's figures; the two
/// curves are measured in the same interleaved rounds, so a slow phase
/// weighs on both) and how many times faster huge pages are.
#[derive(Clone, Copy, Debug)]
pub struct PageGap {
    /// Working set in bytes.
    pub size: u64,
    /// A load on 4 KiB pages, ns.
    pub small: Est<'static>,
    /// A load on huge pages, ns.
    pub huge: Est<'static>,
    /// Huge pages' speed over 4 KiB pages', with its interval.
    pub ratio: Ratio,
}

impl PageGap {
    /// 4 KiB pages clearly [`detect::MIN_TLB_STEP`] slower, by the tier
    /// rule of [`crate::harness::claims::rank_apart`]: the ratio at least
    /// that, and its interval above 1.
    pub fn apart(&self) -> bool {
        self.ratio.low > 1.0 && self.ratio.ratio >= detect::MIN_TLB_STEP
    }
}

/// The sizes a run measured on both latency curves (`random` and
/// `random_thp`), smallest first.
pub fn page_gaps(ms: &[Measurement]) -> Vec<PageGap> {
    let (sp, hp) = (latency_prefix("random"), latency_prefix("random_thp"));
    let size = |m: &Measurement| m.params.get("size")?.as_u64();
    let mut out: Vec<PageGap> = ms
        .iter()
        .filter(|m| m.id.starts_with(&hp) && !short_of_huge_pages(m))
        .filter_map(|hm| {
            let n = size(hm)?;
            let sm = ms
                .iter()
                .find(|m| m.id.starts_with(&sp) && size(m) == Some(n))?;
            let (small, huge) = (Est::of(sm), Est::of(hm));
            if !(small.value > 0.0 && huge.value > 0.0) {
                return None;
            }
            Some(PageGap {
                size: n,
                small: small.detached(),
                huge: huge.detached(),
                ratio: speedup(&huge, &small),
            })
        })
        .collect();
    out.sort_by_key(|g| g.size);
    out
}

/// The first of `pages` where 4 KiB pages are clearly slower than huge
/// pages ([`PageGap::apart`]) and stay so at the next size (one slow point
/// is noise); `None` when they never are.
pub fn first_apart(pages: &[PageGap]) -> Option<usize> {
    (0..pages.len()).find(|&i| pages[i].apart() && pages.get(i + 1).is_none_or(PageGap::apart))
}

/// The largest working set measured both ways before [`first_apart`];
/// `None` when 4 KiB pages are never clearly slower, or already are at
/// the smallest.
pub fn tlb_reach(pages: &[PageGap]) -> Option<u64> {
    first_apart(pages)?.checked_sub(1).map(|j| pages[j].size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::find_starting;

    fn bw(id: &str, v: f64, rel: f64) -> Measurement {
        Measurement::within(id, "B/s", v, rel)
    }

    #[test]
    fn a_level_sysfs_does_not_list_is_never_numbered_past_a_larger_one() {
        const MIB: u64 = 1 << 20;
        let level = |size: u64, ns: f64| detect::Level {
            size,
            size_lo: size,
            size_hi: size,
            ns,
            next_ns: ns * 2.5,
        };
        let sysfs = [(1, 32 << 10), (2, MIB), (3, 32 * MIB)];
        // One run's curve: a level at 6.7 MiB, then a mixed stretch at 20
        // MiB that took sysfs's 32 MiB L3 (the closer size).
        let levels = [
            level(34 << 10, 1.1),
            level(MIB, 3.8),
            level(6_700_000, 14.2),
            level(20 * MIB, 38.0),
        ];
        let names = name_levels(&levels, &sysfs);
        assert_eq!(names, [1, 2, UNNUMBERED, 3]);
        assert_eq!(detected_name(&names, 2), "a level between L2 and L3");
        assert_eq!(detected_name(&names, 3), "L3");
        // Past the last listed level, a level is numbered on.
        let names = name_levels(
            &[
                levels[0],
                levels[1],
                level(30 * MIB, 15.0),
                level(200 * MIB, 40.0),
            ],
            &sysfs,
        );
        assert_eq!(names, [1, 2, 3, 4]);
        assert_eq!(detected_name(&names, 3), "L4");
    }

    #[test]
    fn a_level_a_little_short_of_sysfs_agrees_and_one_far_off_contradicts() {
        const KIB: u64 = 1 << 10;
        const MIB: u64 = 1 << 20;
        let level = |size: u64, lo: u64, hi: u64| detect::Level {
            size: size * KIB,
            size_lo: lo * KIB,
            size_hi: hi * KIB,
            ns: 4.0,
            next_ns: 14.0,
        };
        // This guest's L2 (sysfs 512 KiB) over six runs: ~304 to ~422 KiB.
        for (size, lo, hi) in [(304, 256, 384), (387, 320, 448), (422, 384, 512)] {
            assert_eq!(
                size_verdict(&level(size, lo, hi), 512 * KIB, false),
                "sysfs: 512 KiB"
            );
        }
        let far = size_verdict(&level(100, 96, 128), 512 * KIB, false);
        assert!(
            far.ends_with("which the curve contradicts (5.12× apart)"),
            "{far}"
        );
        let above = size_verdict(&level(1024, 896, 1280), 512 * KIB, false);
        assert!(above.contains("contradicts"), "{above}");
        // A last level stepping anywhere wholly below a 32 MiB L3 is the
        // share usable here, in the same words; one reaching it agrees.
        for (size, lo, hi) in [(7, 6, 8), (9, 8, 12), (13, 12, 16), (17, 16, 24)] {
            let l3 = level(size * 1024, lo * 1024, hi * 1024);
            let said = size_verdict(&l3, 32 * MIB, true);
            assert!(
                said.contains(&format!("of which about {size} MiB is usable here")),
                "{said}"
            );
        }
        let l3 = level(13 * 1024, 12 * 1024, 16 * 1024);
        assert_eq!(size_verdict(&l3, 32 * MIB, false), "sysfs: 32 MiB");
        assert_eq!(
            size_verdict(&level(30 * 1024, 24 * 1024, 32 * 1024), 32 * MIB, true),
            "sysfs: 32 MiB"
        );
        let beyond = size_verdict(&level(64 * 1024, 48 * 1024, 96 * 1024), 32 * MIB, true);
        assert!(beyond.contains("contradicts"), "{beyond}");
        let shared = size_verdict(&level(2048, 1536, 3072), 32 * MIB, true);
        assert!(
            shared.contains("of which about 2 MiB is usable here"),
            "{shared}"
        );
    }

    #[test]
    fn levels_of_a_machine_whose_sysfs_lists_no_caches_come_from_the_curve() {
        // A Raspberry Pi 4's shape: 32 KiB L1d, 1 MiB L2, then memory; no
        // sysfs_caches recorded, as on a board whose kernel lists none.
        let mut ms = Vec::new();
        let mut size = 4096_u64;
        while size <= 256 << 20 {
            let ns = match size {
                s if s <= 32 << 10 => 1.5,
                s if s <= 1 << 20 => 9.0,
                _ => 110.0,
            };
            let mut m = Measurement::point(&format!("memory.latency.random/{size}B"), "ns/op", ns);
            m.params.insert("size".into(), size.into());
            ms.push(m);
            size = size * 6 / 5;
        }
        let f = latency_findings(&ms);
        let levels: Vec<&str> = f
            .iter()
            .map(|f| f.text.as_str())
            .filter(|t| t.starts_with('L'))
            .collect();
        assert_eq!(levels.len(), 2, "{f:#?}");
        for t in levels {
            assert!(
                t.contains("; from this curve (sysfs lists no caches)"),
                "{t}"
            );
        }
        assert!(f.iter().all(|f| !f.text.contains("not found")), "{f:#?}");
    }

    #[test]
    fn huge_page_points_the_kernel_gave_no_huge_pages_for_are_not_a_huge_page_curve() {
        // A qemu aarch64 guest in THP `madvise` mode: the huge-page curve's
        // points up to 1.5 MiB got none (larger ones were skipped), so they
        // measured 4 KiB pages. Read as huge pages they cut the curve at 1.5
        // MiB ("memory @ 26 ns from 1 MiB on") and compared 4 KiB pages with
        // themselves for the TLB.
        let ns = |size: u64| match size {
            s if s <= 32 << 10 => 1.5,
            s if s <= 1 << 20 => 9.0,
            _ => 150.0,
        };
        let point = |curve: &str, size: u64, details: serde_json::Value| {
            let mut m = Measurement::point(
                &format!("memory.latency.{curve}/{size}B"),
                "ns/op",
                ns(size),
            );
            m.params.insert("size".into(), size.into());
            m.details = Some(details);
            m
        };
        let sysfs = serde_json::json!([
            {"level": 1, "size_bytes": 32 << 10},
            {"level": 2, "size_bytes": 1 << 20},
        ]);
        let mut ms = Vec::new();
        let mut size = 4096_u64;
        while size <= 64 << 20 {
            ms.push(point(
                "random",
                size,
                serde_json::json!({"sysfs_caches": sysfs}),
            ));
            if size <= 1536 << 10 {
                let d = serde_json::json!({"pages": "thp", "huge_page_fraction": 0.0, "sysfs_caches": sysfs});
                ms.push(point("random_thp", size, d));
            }
            size = size * 6 / 5;
        }
        let f = latency_findings(&ms);
        find_starting(&f, "memory @ 150 ns");
        find_starting(&f, "L1d ~")
            .assert_says("(no huge-page curve: a TLB step may pass for a level)");
        assert!(
            f.iter()
                .all(|f| !f.text.contains("huge pages") || f.text.contains("no huge-page curve")),
            "{f:#?}"
        );
        assert!(page_gaps(&ms).is_empty());
        // The same points with their huge pages are a huge-page curve.
        for m in ms.iter_mut().filter(|m| m.id.contains("random_thp")) {
            m.details.as_mut().unwrap()["huge_page_fraction"] = 1.0.into();
        }
        assert!(!page_gaps(&ms).is_empty());
    }

    /// Latency results of a curve from 4 KiB to 64 MiB (`ns` of each
    /// size) on a machine whose sysfs lists a 48 KiB L1d, a 2 MiB L2 and a
    /// 480 MiB L3 (an Intel Xeon guest's, the host's L3).
    fn xeon_curve(ns: impl Fn(u64) -> f64) -> Vec<Measurement> {
        let sysfs = serde_json::json!({"sysfs_caches": [
            {"level": 1, "size_bytes": 48 << 10},
            {"level": 2, "size_bytes": 2 << 20},
            {"level": 3, "size_bytes": 480 << 20},
        ]});
        // 4 KiB, 6 KiB, 8 KiB, 12 KiB … 48 MiB, 64 MiB.
        let sizes = (12..=26).flat_map(|p| [1_u64 << p, 3 << (p - 1)]);
        sizes
            .filter(|&size| size <= 64 << 20)
            .map(|size| {
                let mut m = Measurement::point(
                    &format!("memory.latency.random/{size}B"),
                    "ns/op",
                    ns(size),
                );
                m.params.insert("size".into(), size.into());
                m.details = Some(sysfs.clone());
                m
            })
            .collect()
    }

    #[test]
    fn a_480_mib_sysfs_l3_read_to_64_mib_is_one_statement_whatever_the_curve_shows() {
        // Past the 2 MiB L2 the curve ends at 64 MiB, well inside the 480
        // MiB sysfs lists. Whether its top looks like a step to a flat
        // plateau (read as a usable share of the L3 and then memory) or a
        // ramp with no plateau, the words are the same: the L3 past the
        // curve's end, neither a level nor memory named.
        let step = xeon_curve(|s| match s {
            s if s <= 40 << 10 => 1.1,
            s if s <= 1536 << 10 => 3.8,
            s if s <= 20 << 20 => 35.0,
            _ => 110.0,
        });
        let ramp = xeon_curve(|s| match s {
            s if s <= 40 << 10 => 1.1,
            s if s <= 1536 << 10 => 3.8,
            s => 27.0 + 26.0 * ((s as f64).log2() - 21.0) / 5.0,
        });
        let words = |ms: &[Measurement]| -> Vec<String> {
            latency_findings(ms)
                .iter()
                .map(|f| crate::harness::claims::words(&f.text))
                .filter(|w| w.starts_with("L3") || w.contains("memory"))
                .collect()
        };
        let (a, b) = (words(&step), words(&ramp));
        assert_eq!(a, b);
        assert_eq!(a.len(), 1, "{a:#?}");
        let f = latency_findings(&step);
        let l3 = find_starting(&f, "L3 (sysfs: 480 MiB) past the curve's end at 64 MiB: ");
        l3.assert_says("a load there takes 110 ns (its fast end)");
        l3.assert_says("cannot place in a share of the L3 usable here or in memory");
        find_starting(&f, "L1d ~").assert_says("sysfs: 48 KiB");
        find_starting(&f, "L2 ~").assert_says("sysfs: 2 MiB");
        for gone in ["L3 ~", "L3 not found", "memory @", "last plateau"] {
            assert!(f.iter().all(|f| !f.text.starts_with(gone)), "{f:#?}");
        }
        // The copy within caches names the L3 as sysfs's, as in every run.
        let seen = Latency::of(&step).expect("a curve").unseen_levels();
        assert_eq!(seen, vec![3]);
    }

    #[test]
    fn findings_rank_methods_in_tiers_and_place_glibc_by_interval() {
        let ms = vec![
            bw(&methods::method_id(Op::Copy, Method::Avx2), 20e9, 0.03),
            bw(&methods::method_id(Op::Copy, Method::Avx2Nt), 10e9, 0.03),
            bw(
                &methods::method_id(Op::Copy, Method::RepString),
                20.3e9,
                0.03,
            ),
            bw(
                &methods::method_id(Op::Copy, Method::GlibcAbove),
                10.1e9,
                0.03,
            ),
            bw(
                &methods::method_id(Op::Copy, Method::GlibcBelow),
                19.8e9,
                0.03,
            ),
        ];
        let f = method_findings(&ms);
        assert_eq!(f.len(), 3, "{f:?}");
        let t = &f[0].text;
        assert!(
            t.contains(
                "fastest: glibc_below_threshold, rep_movsb and avx2; then glibc_above_threshold and avx2_nt ("
            ),
            "{t}"
        );
        // glibc's place is a finding per side of its threshold.
        let below = find_starting(
            &f,
            "copy bandwidth: glibc memcpy below its non-temporal threshold: ",
        );
        below.assert_says("(in the top tier: 0.98× (");
        let above = find_starting(
            &f,
            "copy bandwidth: glibc memcpy above its non-temporal threshold: ",
        );
        above.assert_says("slower than the top tier)");
        assert!(above.value > 1.9 && above.value < 2.1, "{}", above.value);
        // Swapping the tied members' point estimates changes no word.
        let mut swapped = ms.clone();
        swapped[0] = bw(&methods::method_id(Op::Copy, Method::Avx2), 20.3e9, 0.03);
        swapped[2] = bw(&methods::method_id(Op::Copy, Method::RepString), 20e9, 0.03);
        let words = |s: &str| {
            s.chars()
                .filter(|c| !c.is_ascii_digit() && *c != '.')
                .collect::<String>()
        };
        assert_eq!(words(&method_findings(&swapped)[0].text), words(t));
    }

    #[test]
    fn glibc_stands_where_the_ranking_puts_it_at_the_gaps_edge() {
        let copy = |m: Method, v: f64| bw(&methods::method_id(Op::Copy, m), v, 0.03);
        let glibc = |f: &[Finding]| {
            find_starting(
                f,
                "copy bandwidth: glibc memcpy below its non-temporal threshold: ",
            )
            .text
            .clone()
        };
        // 1.4× below the fastest with ±3%: the gap's whole interval clears
        // 1.25×, a tier of its own, slower than the top tier.
        let apart = method_findings(&[
            copy(Method::Avx2, 20e9),
            copy(Method::GlibcBelow, 20e9 / 1.4),
        ]);
        assert!(
            glibc(&apart).contains("slower than the top tier)"),
            "{apart:?}"
        );
        // 1.25× below: the gap's interval straddles 1.25×, the ranking
        // cannot set it apart, so it is in the top tier, though its ratio's
        // interval is below 1.
        let edge = method_findings(&[
            copy(Method::Avx2, 20e9),
            copy(Method::GlibcBelow, 20e9 / 1.25),
        ]);
        edge[0].assert_says("no clear 1.25× gap between");
        assert!(
            glibc(&edge).contains("(in the top tier: 0.80× ("),
            "{edge:?}"
        );
        // glibc the fastest: in the top tier at 1.00×.
        let top = method_findings(&[copy(Method::Avx2, 15e9), copy(Method::GlibcBelow, 20e9)]);
        assert!(glibc(&top).contains("(in the top tier: 1.00× ("), "{top:?}");
    }

    #[test]
    fn an_arm_machines_methods_are_ranked_by_their_names() {
        // aarch64: NEON and SVE copies, dc zva writes, glibc on either side.
        let ms = vec![
            bw(&methods::method_id(Op::Copy, Method::Neon), 20e9, 0.03),
            bw(&methods::method_id(Op::Copy, Method::NeonNt), 10e9, 0.03),
            bw(&methods::method_id(Op::Copy, Method::Sve), 20.2e9, 0.03),
            bw(&methods::method_id(Op::Copy, Method::SveNt), 10.1e9, 0.03),
            bw(
                &methods::method_id(Op::Copy, Method::GlibcBelow),
                19.9e9,
                0.03,
            ),
            bw(&methods::method_id(Op::Write, Method::DcZva), 30e9, 0.03),
            bw(&methods::method_id(Op::Write, Method::Neon), 15e9, 0.03),
            bw(&methods::method_id(Op::Read, Method::Neon), 25e9, 0.03),
            bw(&methods::method_id(Op::Read, Method::Sve), 25.5e9, 0.03),
        ];
        let f = method_findings(&ms);
        let copy = find_starting(&f, "the machine's copy bandwidth (one thread): ");
        copy.assert_says("fastest: glibc_below_threshold, neon and sve; then neon_nt and sve_nt (");
        let write = find_starting(&f, "the machine's write bandwidth (one thread): ");
        write.assert_says("fastest: dc_zva; then neon (");
        let read = find_starting(&f, "the machine's read bandwidth (one thread): ");
        read.assert_says("(no clear 1.25× gap between neon and sve)");
        find_starting(
            &f,
            "copy bandwidth: glibc memcpy below its non-temporal threshold: ",
        )
        .assert_says("(in the top tier: ");
    }

    #[test]
    fn methods_a_few_per_cent_apart_share_a_tier_and_a_wide_tie_is_not_within() {
        // 6% apart with ±2%: `rank` would split them; the clear gap does not.
        let ms = vec![
            bw(&methods::method_id(Op::Write, Method::Avx2), 10.6e9, 0.02),
            bw(
                &methods::method_id(Op::Write, Method::RepString),
                10e9,
                0.02,
            ),
        ];
        let f = method_findings(&ms);
        f[0].assert_says("(no clear 1.25× gap between rep_stosb and avx2)");
        // Every interval ±90%: glibc at half the top is not told apart from
        // it by the ranking, so it is in the top tier, its ratio printed.
        let ms = vec![
            bw(&methods::method_id(Op::Write, Method::Avx2), 10.6e9, 0.9),
            bw(&methods::method_id(Op::Write, Method::RepString), 10e9, 0.9),
            bw(&methods::method_id(Op::Write, Method::GlibcBelow), 5e9, 0.9),
        ];
        let f = method_findings(&ms);
        let below = find_starting(&f, "write bandwidth: glibc memset below");
        below.assert_says("(in the top tier: 0.47× (");
        assert!(!below.text.contains("within"), "{}", below.text);
    }

    #[test]
    fn the_finding_names_the_best_method_and_glibcs_distance() {
        let m = |id: String, v: f64| Measurement::point(&id, "B/s", v);
        let ms = vec![
            m(methods::method_id(Op::Copy, Method::GlibcAbove), 10e9),
            m(methods::method_id(Op::Copy, Method::GlibcBelow), 6e9),
            m(methods::method_id(Op::Copy, Method::Avx2Nt), 12e9),
            m("memory.bandwidth.copy/threads=1".into(), 7e9),
        ];
        let f = method_findings(&ms);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(
            f[0].text.contains("copy bandwidth") && f[0].text.contains("avx2_nt"),
            "{}",
            f[0].text
        );
        assert!(
            f[1].text.contains("above") && f[2].text.contains("below"),
            "{f:?}"
        );
        assert_eq!(f[0].value, 12e9);
    }
}
