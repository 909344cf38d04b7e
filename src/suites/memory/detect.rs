//! Finding the cache levels in a latency curve: pure functions, no I/O.
//!
//! A latency-vs-working-set curve is a staircase: a plateau per cache level
//! (the working set fits), a ramp where it stops fitting, and a last
//! plateau for memory. Real curves are noisy (a shared machine), ramps are
//! gradual (associativity, pseudo-LRU, physically indexed caches under
//! 4 KiB pages, a last-level cache shared with other tenants) and TLB
//! misses add steps of their own. The whole curve is read at once:
//!
//! 1. log latency over log size, a running median of three (isolated
//!    spikes go), then isotonic regression (a bigger working set is never
//!    faster: dips go); the noise is the spread of the raw points around
//!    the running median;
//! 2. an optimal piecewise-constant fit of that curve (segmented least
//!    squares by dynamic programming, a penalty per segment that grows with
//!    the noise): change points wherever the curve moves by more than the
//!    noise;
//! 3. plateaus: runs of neighbouring segments within [`PLATEAU_TOLERANCE`]
//!    of each other spanning at least [`MIN_PLATEAU_DOUBLINGS`]; plateaus
//!    closer than [`MIN_STEP`] in latency are one level;
//! 4. memory: the last plateau, or, when the curve still climbs by at
//!    least [`MIN_STEP`] past it (a short profile that stops on the ramp to
//!    memory), the top of the curve, marked as not reached, and the last
//!    plateau is then a cache level;
//! 5. a level's size is where the curve crosses the middle of the step
//!    (in log latency, at most [`MAX_KNEE_RISE`] above the level),
//!    interpolated in log size between the sizes measured, with the
//!    interval between the last size clearly below that middle and the
//!    first clearly above it.
//!
//! With a huge-page curve, levels come from it where 4 KiB pages are
//! slower (TLB misses are rare on huge pages) and from the finer 4 KiB-page
//! curve where both agree; a step that only the 4 KiB-page curve shows is
//! reported as a TLB step.

/// One point of a curve: working-set size and latency per load.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Working set in bytes.
    pub size: u64,
    /// Latency per load in ns.
    pub ns: f64,
}

/// A flat stretch of the curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plateau {
    /// Smallest working set on it.
    pub from: u64,
    /// Largest working set on it.
    pub to: u64,
    /// Its latency per load (median of its points), ns.
    pub ns: f64,
}

/// A cache level found in a curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    /// Estimated capacity in bytes: where the curve crosses the middle of
    /// the step to the next level.
    pub size: u64,
    /// The largest size measured that is clearly below that middle.
    pub size_lo: u64,
    /// The smallest size measured that is clearly above it.
    pub size_hi: u64,
    /// Latency per load while the working set fits, ns.
    pub ns: f64,
    /// Latency of what comes after it (the next level or memory), ns.
    pub next_ns: f64,
}

/// A step the 4 KiB-page curve has and the huge-page curve has not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TlbStep {
    /// Where the 4 KiB-page curve steps up, bytes.
    pub size: u64,
    /// Latency on 4 KiB pages over latency on huge pages just after it.
    pub ratio: f64,
}

/// What a curve says about the memory hierarchy.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Hierarchy {
    /// Cache levels, smallest first.
    pub levels: Vec<Level>,
    /// Memory: the last plateau, or the top of the curve when it ends on
    /// the ramp to memory (then `memory_reached` is false).
    pub memory: Option<Plateau>,
    /// False when the curve ends still climbing: memory latency is at
    /// least `memory.ns`.
    pub memory_reached: bool,
    /// Steps due to the TLB (only with a huge-page curve).
    pub tlb_steps: Vec<TlbStep>,
    /// Relative noise of the curve (log units, about a fraction).
    pub noise: f64,
}

/// Segments within this fraction of each other form one plateau.
pub const PLATEAU_TOLERANCE: f64 = 0.25;
/// A plateau spans at least this many doublings of the working set.
pub const MIN_PLATEAU_DOUBLINGS: f64 = 1.0;
/// Neighbouring plateaus closer in latency than this factor are one level
/// (a flat stretch inside a ramp, a TLB step inside a level, or noise).
/// Cache levels differ by 2.5x or more; a gentle stretch of a long ramp to
/// memory rises about 1.6x and must not pass for a level.
pub const MIN_STEP: f64 = 2.0;
/// A level ends where the curve is half way (in log terms) to the next
/// level, but never more than this factor above its own plateau: the cap
/// keeps a level whose next level is hidden (a ramp straight to memory,
/// 50x higher) from stretching up the whole ramp.
pub const MAX_KNEE_RISE: f64 = 2.5;
/// A TLB step is reported when 4 KiB pages are at least this much slower past it.
pub const MIN_TLB_STEP: f64 = 1.2;
/// Below this working set 4 KiB pages cost no page walk: the first-level
/// data TLB of current cores (64 entries or more) covers it.
pub const SMALL_PAGES_BELOW: u64 = 256 << 10;
/// Two step positions closer than this factor are the same step.
pub const SAME_STEP_FACTOR: f64 = 1.6;
/// The noise is taken as at least this (log units): timers and rounding.
pub const NOISE_FLOOR: f64 = 0.02;
/// Penalty of one more segment in the piecewise fit, in (log latency)^2,
/// on top of the noise term: a step of [`MIN_STEP`] between two stretches
/// of a few points always pays for itself, a creep along a plateau does not.
pub const SEGMENT_PENALTY: f64 = 0.05;
/// A size is clearly below (above) a step's middle when the curve there is
/// this many noise widths below (above) it.
pub const CLEAR_SIGMAS: f64 = 2.0;

/// The curve cleaned for detection: sorted, finite, smoothed, non-decreasing.
struct Clean {
    /// log2 of each size.
    x: Vec<f64>,
    /// ln latency, smoothed and non-decreasing.
    z: Vec<f64>,
    /// Robust noise of the raw ln latencies.
    noise: f64,
}

fn clean(points: &[Point]) -> Clean {
    let mut p: Vec<Point> = points
        .iter()
        .copied()
        .filter(|p| p.size > 0 && p.ns.is_finite() && p.ns > 0.0)
        .collect();
    p.sort_by_key(|p| p.size);
    p.dedup_by_key(|p| p.size);
    let y: Vec<f64> = p.iter().map(|p| p.ns.ln()).collect();
    let smooth: Vec<f64> = (0..y.len())
        .map(|i| {
            if i == 0 || i + 1 == y.len() {
                y[i]
            } else {
                median3(y[i - 1], y[i], y[i + 1])
            }
        })
        .collect();
    let mut dev: Vec<f64> = y.iter().zip(&smooth).map(|(a, b)| (a - b).abs()).collect();
    dev.sort_by(f64::total_cmp);
    // Half of the points sit on the running median itself: the upper
    // quartile of the deviations is about the MAD of the others.
    let noise = dev.get(dev.len() * 3 / 4).map_or(NOISE_FLOOR, |d| {
        (d * crate::stats::MAD_TO_SIGMA).max(NOISE_FLOOR)
    });
    Clean {
        x: p.iter().map(|p| (p.size as f64).log2()).collect(),
        z: isotonic(&smooth),
        noise,
    }
}

fn median3(a: f64, b: f64, c: f64) -> f64 {
    a.max(b).min(a.min(b).max(c))
}

/// Least-squares non-decreasing fit (pool adjacent violators).
fn isotonic(y: &[f64]) -> Vec<f64> {
    // Blocks of (sum, count).
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(y.len());
    for &v in y {
        blocks.push((v, 1));
        while blocks.len() >= 2 {
            let (s2, n2) = blocks[blocks.len() - 1];
            let (s1, n1) = blocks[blocks.len() - 2];
            if s1 / n1 as f64 <= s2 / n2 as f64 {
                break;
            }
            blocks.pop();
            let last = blocks.len() - 1;
            blocks[last] = (s1 + s2, n1 + n2);
        }
    }
    blocks
        .into_iter()
        .flat_map(|(s, n)| std::iter::repeat_n(s / n as f64, n))
        .collect()
}

/// The optimal piecewise-constant fit of `z` with `penalty` per segment
/// (segmented least squares): the segments as inclusive index ranges.
fn segments(z: &[f64], penalty: f64) -> Vec<(usize, usize)> {
    let n = z.len();
    if n == 0 {
        return Vec::new();
    }
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, v) in z.iter().enumerate() {
        s1[i + 1] = s1[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    // Squared error of z[i..j] around its mean.
    let sse = |i: usize, j: usize| {
        let k = (j - i) as f64;
        let s = s1[j] - s1[i];
        (s2[j] - s2[i] - s * s / k).max(0.0)
    };
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for j in 1..=n {
        for i in 0..j {
            let c = best[i] + sse(i, j) + penalty;
            if c < best[j] {
                best[j] = c;
                from[j] = i;
            }
        }
    }
    let mut out = Vec::new();
    let mut j = n;
    while j > 0 {
        let i = from[j];
        out.push((i, j - 1));
        j = i;
    }
    out.reverse();
    out
}

/// Plateaus as index ranges into the cleaned curve, with their level (ln ns).
fn plateau_runs(c: &Clean) -> Vec<(usize, usize, f64)> {
    let penalty = SEGMENT_PENALTY + 2.0 * c.noise * c.noise * (c.z.len().max(2) as f64).ln();
    let segs = segments(&c.z, penalty);
    let tol = (1.0 + PLATEAU_TOLERANCE).ln();
    let mean = |a: usize, b: usize| c.z[a..=b].iter().sum::<f64>() / (b - a + 1) as f64;
    // Greedy runs of segments whose means stay within the tolerance; the
    // fit is monotone, so the run's range is its last mean minus its first.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut k = 0;
    while k < segs.len() {
        let first = mean(segs[k].0, segs[k].1);
        let mut l = k;
        while l + 1 < segs.len() && mean(segs[l + 1].0, segs[l + 1].1) - first <= tol {
            l += 1;
        }
        let (a, b) = (segs[k].0, segs[l].1);
        if c.x[b] - c.x[a] >= MIN_PLATEAU_DOUBLINGS - 1e-9 {
            runs.push((a, b));
        }
        k = l + 1;
    }
    let level = |r: (usize, usize)| {
        let mut zs: Vec<f64> = c.z[r.0..=r.1].to_vec();
        zs.sort_by(f64::total_cmp);
        zs[zs.len() / 2]
    };
    // Neighbours too close in height are one level: merge the closest pair
    // first, until every step is at least MIN_STEP.
    loop {
        let closest = runs
            .windows(2)
            .enumerate()
            .map(|(k, w)| (k, level(w[1]) - level(w[0])))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match closest {
            Some((k, step)) if step < MIN_STEP.ln() => {
                runs[k].1 = runs[k + 1].1;
                runs.remove(k + 1);
            }
            _ => break,
        }
    }
    runs.into_iter().map(|r| (r.0, r.1, level(r))).collect()
}

/// Where a plateau starts, in ln ns: the lower quartile of its points (a
/// plateau that creeps up starts where the step before it ends).
fn start_level(c: &Clean, a: usize, b: usize) -> f64 {
    let mut zs: Vec<f64> = c.z[a..=b].to_vec();
    zs.sort_by(f64::total_cmp);
    zs[zs.len() / 4]
}

fn size_at(x: f64) -> u64 {
    x.exp2().round() as u64
}

/// The plateaus of a curve, smallest working set first.
pub fn plateaus(points: &[Point]) -> Vec<Plateau> {
    let c = clean(points);
    plateau_runs(&c)
        .into_iter()
        .map(|(a, b, z)| Plateau {
            from: size_at(c.x[a]),
            to: size_at(c.x[b]),
            ns: z.exp(),
        })
        .collect()
}

/// Where the cleaned curve crosses `target` (ln ns) from index `from` on,
/// interpolated in log size, with the last index clearly below and the
/// first clearly above it.
fn crossing(c: &Clean, from: usize, target: f64) -> Option<(f64, usize, usize)> {
    let i = (from..c.z.len()).find(|&i| c.z[i] >= target)?;
    let x = if i == 0 || i <= from {
        c.x[i]
    } else {
        let (x0, y0, x1, y1) = (c.x[i - 1], c.z[i - 1], c.x[i], c.z[i]);
        let t = if y1 > y0 {
            (target - y0) / (y1 - y0)
        } else {
            1.0
        };
        x0 + t.clamp(0.0, 1.0) * (x1 - x0)
    };
    let d = CLEAR_SIGMAS * c.noise;
    let lo = (from..c.z.len())
        .take_while(|&k| c.z[k] < target)
        .filter(|&k| c.z[k] <= target - d)
        .last()
        .unwrap_or(from);
    let hi = (from..c.z.len())
        .find(|&k| c.z[k] >= target + d)
        .unwrap_or(c.z.len() - 1);
    Some((x, lo, hi))
}

/// The hierarchy of one curve (no TLB steps: see [`analyse`]).
pub fn levels(points: &[Point]) -> Hierarchy {
    let c = clean(points);
    let runs = plateau_runs(&c);
    let Some(&last) = runs.last() else {
        return Hierarchy {
            noise: c.noise,
            ..Hierarchy::default()
        };
    };
    // Past the last plateau the curve may still climb: a step to memory
    // whose plateau the sweep does not reach.
    let top = *c.z.last().unwrap_or(&last.2);
    let climbs = last.1 + 1 < c.z.len() && top - last.2 >= MIN_STEP.ln();
    let mut bounds: Vec<(usize, usize, f64)> = runs.clone();
    let (memory, reached) = if climbs {
        // Memory is at least the top of the curve: from where it passes
        // the middle of the last step.
        let mid = last.2 + ((top - last.2) / 2.0).min(MAX_KNEE_RISE.ln());
        let from = (last.1..c.z.len())
            .find(|&k| c.z[k] >= mid)
            .unwrap_or(c.z.len() - 1);
        bounds.push((from, c.z.len() - 1, top));
        (
            Plateau {
                from: size_at(c.x[from]),
                to: size_at(c.x[c.z.len() - 1]),
                ns: top.exp(),
            },
            false,
        )
    } else {
        (
            Plateau {
                from: size_at(c.x[last.0]),
                to: size_at(c.x[last.1]),
                ns: last.2.exp(),
            },
            true,
        )
    };
    let mut levels = Vec::new();
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        let top = start_level(&c, b.0, b.1).max(a.2);
        let mid = a.2 + ((top - a.2) / 2.0).min(MAX_KNEE_RISE.ln());
        let (x, lo, hi) = crossing(&c, a.1, mid).unwrap_or((c.x[a.1], a.1, a.1));
        levels.push(Level {
            size: size_at(x),
            size_lo: size_at(c.x[lo]),
            size_hi: size_at(c.x[hi]),
            ns: a.2.exp(),
            next_ns: b.2.exp(),
        });
    }
    Hierarchy {
        levels,
        memory: Some(memory),
        memory_reached: reached,
        tlb_steps: Vec::new(),
        noise: c.noise,
    }
}

/// The size from which 4 KiB pages are clearly slower than huge pages:
/// the first size measured both ways where they are [`MIN_TLB_STEP`]
/// slower and stay so at the next such size (one slow point is noise).
fn tlb_apart(small: &[Point], huge: &[Point]) -> Option<u64> {
    let both: Vec<(u64, f64)> = huge
        .iter()
        .filter_map(|h| {
            let s = small.iter().find(|p| p.size == h.size)?;
            Some((h.size, s.ns / h.ns))
        })
        .collect();
    (0..both.len())
        .find(|&i| both[i].1 >= MIN_TLB_STEP && both.get(i + 1).is_none_or(|n| n.1 >= MIN_TLB_STEP))
        .map(|i| both[i].0)
}

/// The curve detection reads when a huge-page curve is measured: 4 KiB
/// pages (the finer sweep) below [`SMALL_PAGES_BELOW`] and below where
/// they become slower than huge pages, huge pages from there on. Mixing
/// the two further up would put a page walk on every other point of a
/// ramp, a zigzag that passes for a level. Where both were measured at
/// one size, the faster of the two: huge pages are slower than 4 KiB pages
/// only when the machine's state moved between the two points (on the AMD
/// guest the L3's share usable here changes from round to round, and one
/// run's huge-page point at 8 MiB read 87 ns beside 17 ns on 4 KiB pages
/// and 33–38 ns at 12–16 MiB: a non-monotone stretch that the monotone
/// fit pooled into a level of its own between L3 and memory).
pub fn merged(small: &[Point], huge: &[Point]) -> Vec<Point> {
    let first_huge = huge.iter().map(|p| p.size).min().unwrap_or(0);
    let bound = tlb_apart(small, huge)
        .unwrap_or(u64::MAX)
        .min(SMALL_PAGES_BELOW)
        .max(first_huge);
    let mut out: Vec<Point> = small.iter().copied().filter(|p| p.size < bound).collect();
    out.extend(huge.iter().filter(|p| p.size >= bound).map(|h| {
        let s = small.iter().find(|s| s.size == h.size);
        Point {
            ns: s.map_or(h.ns, |s| s.ns.min(h.ns)),
            ..*h
        }
    }));
    out.sort_by_key(|p| p.size);
    out
}

/// The hierarchy from a 4 KiB-page curve and, if measured, a huge-page
/// curve (which need not start as small: below its first point the two
/// are the same, since the TLB covers any tiny working set).
pub fn analyse(small: &[Point], huge: Option<&[Point]>) -> Hierarchy {
    let Some(huge) = huge.filter(|h| h.len() >= 3) else {
        return levels(small);
    };
    let mut h = levels(&merged(small, huge));
    let small_levels = levels(small).levels;
    let huge_at = |size: u64| -> Option<f64> {
        huge.iter()
            .filter(|p| p.size >= size)
            .min_by_key(|p| p.size)
            .map(|p| p.ns)
    };
    h.tlb_steps = small_levels
        .iter()
        .filter(|s| {
            !h.levels.iter().any(|c| {
                let r = s.size.max(c.size) as f64 / s.size.min(c.size).max(1) as f64;
                r <= SAME_STEP_FACTOR
            })
        })
        .filter_map(|s| {
            // The typical ratio past the step, where it has fully happened.
            let mut ratios: Vec<f64> = small
                .iter()
                .filter(|p| p.size >= s.size.saturating_mul(2))
                .filter_map(|p| Some(p.ns / huge_at(p.size)?))
                .filter(|r| r.is_finite())
                .collect();
            ratios.sort_by(f64::total_cmp);
            let ratio = *ratios.get(ratios.len() / 2)?;
            (ratio >= MIN_TLB_STEP).then_some(TlbStep {
                size: s.size,
                ratio,
            })
        })
        .collect();
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The levels and memory of one curve.
    fn lv(points: &[Point]) -> (Vec<Level>, Option<Plateau>) {
        let h = levels(points);
        (h.levels, h.memory)
    }

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;

    /// A synthetic staircase: a working set of W bytes hits a cache of
    /// capacity C with probability min(1, C/W)^k, and each load costs the
    /// latency of the first level it hits. k = 1 is random replacement
    /// (gradual ramps); larger k approaches LRU under a cyclic walk (sharp).
    fn staircase_k(levels: &[(u64, f64)], memory_ns: f64, sizes: &[u64], k: f64) -> Vec<Point> {
        sizes
            .iter()
            .map(|&w| {
                let mut ns = 0.0;
                let mut served = 0.0;
                for &(c, l) in levels {
                    let h = (c as f64 / w as f64).min(1.0).powf(k);
                    ns += (h - served).max(0.0) * l;
                    served = f64::max(served, h);
                }
                ns += (1.0 - served) * memory_ns;
                Point { size: w, ns }
            })
            .collect()
    }

    /// Random replacement: every ramp gradual.
    fn staircase(levels: &[(u64, f64)], memory_ns: f64, sizes: &[u64]) -> Vec<Point> {
        staircase_k(levels, memory_ns, sizes, 1.0)
    }

    /// Sharp steps, as pseudo-LRU caches show under a cyclic walk.
    fn ramped(levels: &[(u64, f64)], memory_ns: f64, sizes: &[u64], k: f64) -> Vec<Point> {
        staircase_k(levels, memory_ns, sizes, k)
    }

    fn grid(per_doubling: u32, from: u64) -> Vec<u64> {
        super::super::sweep(from, 512 * MIB, per_doubling)
    }

    /// Deterministic multiplicative noise of about ±`amp` (fraction).
    fn noisy(mut p: Vec<Point>, amp: f64, seed: u64) -> Vec<Point> {
        let mut rng = fastrand::Rng::with_seed(seed);
        for q in &mut p {
            q.ns *= 1.0 + amp * (2.0 * rng.f64() - 1.0);
        }
        p
    }

    fn within(got: u64, want: u64, factor: f64) -> bool {
        let r = got.max(want) as f64 / got.min(want).max(1) as f64;
        r <= factor
    }

    const MACHINE: [(u64, f64); 3] = [(48 * KIB, 1.2), (MIB, 4.0), (32 * MIB, 15.0)];

    #[test]
    fn clean_curve_gives_every_level_and_memory() {
        let c = ramped(&MACHINE, 100.0, &grid(4, KIB), 8.0);
        let (levels, memory) = lv(&c);
        assert_eq!(levels.len(), 3, "{levels:?}");
        for (l, want) in levels.iter().zip(MACHINE) {
            assert!(within(l.size, want.0, 1.3), "{l:?} vs {want:?}");
            assert!((l.ns / want.1 - 1.0).abs() < 0.1, "{l:?} vs {want:?}");
        }
        let m = memory.unwrap();
        assert!((m.ns / 100.0 - 1.0).abs() < 0.1, "{m:?}");
    }

    #[test]
    fn noisy_curve_with_spikes_still_gives_the_levels_within_a_factor_of_two() {
        for seed in 1..40 {
            let clean = match seed % 3 {
                0 => staircase(&MACHINE, 100.0, &grid(4, KIB)),
                1 => ramped(&MACHINE, 100.0, &grid(4, KIB), 8.0),
                _ => ramped(&MACHINE, 100.0, &grid(4, KIB), 2.0),
            };
            let mut c = noisy(clean, 0.12, seed);
            // Isolated interference: a few points five times too slow, one too fast.
            for i in [5, 20, 33, 47] {
                c[i].ns *= 5.0;
            }
            c[40].ns *= 0.5;
            let (levels, memory) = lv(&c);
            assert_eq!(levels.len(), 3, "seed {seed}: {levels:?}");
            for (l, want) in levels.iter().zip(MACHINE) {
                assert!(
                    within(l.size, want.0, 2.0),
                    "seed {seed}: {l:?} vs {want:?}"
                );
                assert!((l.ns / want.1 - 1.0).abs() < 0.3, "seed {seed}: {l:?}");
            }
            assert!((memory.unwrap().ns / 100.0 - 1.0).abs() < 0.3);
        }
    }

    #[test]
    fn a_tlb_step_is_told_apart_from_cache_levels_with_huge_pages() {
        let sizes = grid(4, KIB);
        let huge_sizes = grid(2, 32 * KIB);
        let huge = ramped(&MACHINE, 100.0, &huge_sizes, 8.0);
        // 4 KiB pages: the L2 TLB runs out at 4 MiB, adding 120% inside L3
        // (and in memory, where a page walk comes on top of each miss).
        let small: Vec<Point> = ramped(&MACHINE, 100.0, &sizes, 8.0)
            .into_iter()
            .map(|p| {
                let x = (p.size as f64).log2() - (4.0 * MIB as f64).log2();
                let w = 1.0 / (1.0 + (-x * 6.0).exp());
                Point {
                    size: p.size,
                    ns: p.ns * (1.0 + 1.2 * w),
                }
            })
            .collect();
        // Alone, the 4 KiB curve shows a fourth step...
        let (alone, _) = lv(&small);
        assert_eq!(alone.len(), 4, "{alone:?}");
        // ...which the huge-page curve shows to be the TLB.
        let h = analyse(&small, Some(&huge));
        assert_eq!(h.levels.len(), 3, "{:?}", h.levels);
        for (l, want) in h.levels.iter().zip(MACHINE) {
            assert!(within(l.size, want.0, 1.5), "{l:?} vs {want:?}");
        }
        assert_eq!(h.tlb_steps.len(), 1, "{:?}", h.tlb_steps);
        assert!(
            within(h.tlb_steps[0].size, 4 * MIB, 1.5),
            "{:?}",
            h.tlb_steps
        );
        assert!(h.tlb_steps[0].ratio > 1.3);
        // Without the huge-page curve it cannot be told apart.
        assert!(analyse(&small, None).tlb_steps.is_empty());
    }

    #[test]
    fn random_replacement_ramps_and_a_hidden_level_still_give_sizes_within_two() {
        // Under random replacement every ramp is gradual.
        let c = staircase(&MACHINE, 100.0, &grid(4, KIB));
        let (found, _) = lv(&c);
        assert!(found.len() >= 2, "{found:?}");
        for (l, want) in found.iter().zip(MACHINE).take(2) {
            assert!(within(l.size, want.0, 2.0), "{l:?} vs {want:?}");
        }
        // An L3 that never shows (shared with other tenants): L2 must not
        // stretch to the middle of the L2-to-memory ramp.
        let c = ramped(&MACHINE[..2], 300.0, &grid(4, KIB), 2.0);
        let (levels, memory) = lv(&c);
        assert_eq!(levels.len(), 2, "{levels:?}");
        assert!(within(levels[1].size, MIB, 2.0), "{levels:?}");
        assert!(memory.unwrap().ns > 200.0);
    }

    /// Latency curves recorded on a 2-vCPU AMD EPYC (Zen 3) KVM guest
    /// (sysfs: 32 KiB L1d, 512 KiB L2, 32 MiB L3 shared with other guests):
    /// the L2 ramp starts at half its capacity, and 4 KiB pages add a
    /// TLB step from 256 KiB on.
    fn recorded_zen3_guest() -> (Vec<Point>, Vec<Point>) {
        let small: &[(u64, f64)] = &[
            (KIB, 1.34),
            (2 * KIB, 1.35),
            (4 * KIB, 1.38),
            (8 * KIB, 1.27),
            (16 * KIB, 1.25),
            (20 * KIB, 1.26),
            (24 * KIB, 1.25),
            (28 * KIB, 1.25),
            (32 * KIB, 1.25),
            (40 * KIB, 3.72),
            (48 * KIB, 3.76),
            (64 * KIB, 3.78),
            (96 * KIB, 3.82),
            (128 * KIB, 3.78),
            (192 * KIB, 4.08),
            (224 * KIB, 3.83),
            (256 * KIB, 3.79),
            (320 * KIB, 4.36),
            (384 * KIB, 9.44),
            (448 * KIB, 11.3),
            (512 * KIB, 10.1),
            (640 * KIB, 12.2),
            (768 * KIB, 15.9),
            (896 * KIB, 16.3),
            (2 * MIB, 16.7),
            (3 * MIB, 17.6),
            (4 * MIB, 17.9),
            (5 * MIB, 19.9),
            (6 * MIB, 187.0),
            (7 * MIB, 135.0),
            (8 * MIB, 136.0),
            (20 * MIB, 159.0),
            (32 * MIB, 159.0),
            (48 * MIB, 167.0),
            (64 * MIB, 175.0),
        ];
        let huge: &[(u64, f64)] = &[
            (32 * KIB, 1.30),
            (48 * KIB, 3.78),
            (64 * KIB, 3.81),
            (96 * KIB, 3.78),
            (128 * KIB, 3.83),
            (192 * KIB, 3.81),
            (256 * KIB, 4.54),
            (384 * KIB, 5.94),
            (512 * KIB, 8.60),
            (768 * KIB, 13.6),
            (MIB, 14.1),
            (1536 * KIB, 15.2),
            (2 * MIB, 16.6),
            (3 * MIB, 17.0),
            (4 * MIB, 17.5),
            (6 * MIB, 18.5),
            (8 * MIB, 118.0),
            (12 * MIB, 128.0),
            (16 * MIB, 132.0),
            (24 * MIB, 137.0),
            (32 * MIB, 141.0),
            (48 * MIB, 139.0),
            (64 * MIB, 157.0),
        ];
        let pts = |v: &[(u64, f64)]| v.iter().map(|&(size, ns)| Point { size, ns }).collect();
        (pts(small), pts(huge))
    }

    #[test]
    fn a_shared_l2_on_a_recorded_guest_is_found_within_a_quarter_of_sysfs() {
        let (small, huge) = recorded_zen3_guest();
        let h = analyse(&small, Some(&huge));
        assert_eq!(h.levels.len(), 3, "{:?}", h.levels);
        assert!(within(h.levels[0].size, 32 * KIB, 1.25), "{:?}", h.levels);
        assert!(within(h.levels[1].size, 512 * KIB, 1.25), "{:?}", h.levels);
        // The usable share of the 32 MiB L3: about 6 MiB on this guest.
        assert!(within(h.levels[2].size, 6 * MIB, 1.5), "{:?}", h.levels);
        assert!(h.memory.unwrap().ns > 100.0);
    }

    #[test]
    fn a_flat_curve_is_one_plateau_and_no_level() {
        let c: Vec<Point> = grid(4, KIB)
            .into_iter()
            .map(|s| Point { size: s, ns: 1.0 })
            .collect();
        let (levels, memory) = lv(&c);
        assert!(levels.is_empty());
        assert_eq!(memory.unwrap().from, KIB);
    }

    #[test]
    fn degenerate_input_gives_nothing_rather_than_panicking() {
        assert_eq!(lv(&[]), (Vec::new(), None));
        let one = [Point {
            size: 1024,
            ns: 1.0,
        }];
        assert!(lv(&one).0.is_empty());
        let bad = [
            Point { size: 0, ns: 1.0 },
            Point {
                size: 1024,
                ns: f64::NAN,
            },
            Point {
                size: 2048,
                ns: -3.0,
            },
            Point {
                size: 4096,
                ns: f64::INFINITY,
            },
        ];
        assert_eq!(lv(&bad), (Vec::new(), None));
        let h = analyse(&[], Some(&[]));
        assert!(h.levels.is_empty() && h.memory.is_none());
    }

    /// A recorded `memory.latency` curve: (4 KiB pages, huge pages, sysfs
    /// data/unified sizes by level). Each fixture is the trimmed JSON of a
    /// real quick run (the fields detection reads).
    fn fixture(json: &str) -> (Vec<Point>, Vec<Point>, Vec<(u8, u64)>) {
        let v: serde_json::Value = serde_json::from_str(json).expect("fixture is JSON");
        let curve = |prefix: &str| -> Vec<Point> {
            let mut c: Vec<Point> = v["points"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["id"].as_str().unwrap().starts_with(prefix))
                .map(|p| Point {
                    size: p["size"].as_u64().unwrap(),
                    ns: p["p5"].as_f64().unwrap(),
                })
                .collect();
            c.sort_by_key(|p| p.size);
            c
        };
        let sysfs = v["sysfs_caches"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] != "Instruction")
            .map(|c| {
                (
                    c["level"].as_u64().unwrap() as u8,
                    c["size_bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        (
            curve("memory.latency.random/"),
            curve("memory.latency.random_thp/"),
            sysfs,
        )
    }

    const EPYC_A: &str = include_str!("../../../tests/fixtures/memory/epyc-guest-a.json");
    const EPYC_B: &str = include_str!("../../../tests/fixtures/memory/epyc-guest-b.json");
    const EPYC_C: &str = include_str!("../../../tests/fixtures/memory/epyc-guest-c.json");
    const EPYC_LOADED: &str = include_str!("../../../tests/fixtures/memory/epyc-guest-loaded.json");

    #[test]
    fn recorded_amd_curves_give_three_levels_at_the_sysfs_sizes_and_memory_above() {
        for (name, json) in [("a", EPYC_A), ("b", EPYC_B), ("c", EPYC_C)] {
            let (small, huge, sysfs) = fixture(json);
            assert_eq!(sysfs, [(1, 32 * KIB), (2, 512 * KIB), (3, 32 * MIB)]);
            let h = analyse(&small, Some(&huge));
            assert_eq!(h.levels.len(), 3, "{name}: {:?}", h.levels);
            // These curves have no point between 32 and 40 KiB: the middle.
            assert!(
                within(h.levels[0].size, 32 * KIB, 1.15),
                "{name}: {:?}",
                h.levels
            );
            assert!(h.levels[0].size_lo <= 32 * KIB && h.levels[0].size_hi >= 34 * KIB);
            assert!(
                within(h.levels[1].size, 512 * KIB, 1.25),
                "{name}: {:?}",
                h.levels
            );
            // The L3 is shared with other guests: about 16-24 MiB of it is
            // usable, and its step lies inside that, below sysfs.
            let l3 = h.levels[2];
            assert!(
                l3.size_hi < 32 * MIB && l3.size > 12 * MIB,
                "{name}: {l3:?}"
            );
            // Each level's latency sits clearly between its neighbours'.
            let mem = h.memory.unwrap();
            let ns: Vec<f64> = h.levels.iter().map(|l| l.ns).chain([mem.ns]).collect();
            assert!(
                ns.windows(2).all(|w| w[1] >= w[0] * MIN_STEP),
                "{name}: {ns:?}"
            );
            assert!(mem.ns > 70.0 && l3.ns < 25.0, "{name}: {mem:?} {l3:?}");
        }
        // One of them stops on the ramp: memory is then a lower bound.
        let (small, huge, _) = fixture(EPYC_B);
        assert!(!analyse(&small, Some(&huge)).memory_reached);
    }

    const EPYC_L3_MOVING: &str =
        include_str!("../../../tests/fixtures/memory/epyc-guest-l3-moving.json");

    #[test]
    fn a_huge_page_point_slower_than_4_kib_pages_makes_no_level_of_its_own() {
        let (small, huge, _) = fixture(EPYC_L3_MOVING);
        // At 8 MiB huge pages read 87 ns, 4 KiB pages 17 ns: the faster is kept.
        let m = merged(&small, &huge);
        let at = |s: u64| m.iter().find(|p| p.size == s).unwrap().ns;
        assert!(at(8 * MIB) < 20.0, "{m:?}");
        assert!(at(64 * MIB) > 100.0, "{m:?}");
        // Where huge pages are faster (past the TLB's reach), they are read.
        let h4 = huge.iter().find(|p| p.size == 4 * MIB).unwrap().ns;
        assert_eq!(
            at(4 * MIB),
            h4.min(small.iter().find(|p| p.size == 4 * MIB).unwrap().ns)
        );
        let h = analyse(&small, Some(&huge));
        // L1d, L2, the L3's share and memory: no level between L3 and memory
        // at the 35-40 ns the mixed stretch read.
        assert_eq!(h.levels.len(), 3, "{:?}", h.levels);
        let l3 = h.levels[2];
        assert!(
            l3.ns < 20.0 && l3.size > 6 * MIB && l3.size < 32 * MIB,
            "{l3:?}"
        );
        assert!(h.memory.unwrap().ns > 100.0, "{:?}", h.memory);
    }

    #[test]
    fn a_loaded_guest_with_a_short_l3_still_gives_three_levels() {
        let (small, huge, _) = fixture(EPYC_LOADED);
        for h in [analyse(&small, Some(&huge)), analyse(&small, None)] {
            assert_eq!(h.levels.len(), 3, "{:?}", h.levels);
            assert!(within(h.levels[0].size, 32 * KIB, 1.15), "{:?}", h.levels);
            // Only about 2-3 MiB of the L3 is usable under that load.
            assert!(h.levels[2].size < 4 * MIB, "{:?}", h.levels);
            assert!(h.memory.unwrap().ns > 100.0, "{:?}", h.memory);
        }
    }

    /// A recorded curve with its L3 plateau pulled down towards L2 by
    /// `factor` (log-linearly, L2 and memory kept): a shallow L3 step made
    /// from a real curve, since none of the recorded ones has one.
    fn shallow_l3(points: &[Point], l2_ns: f64, l3_ns: f64, factor: f64) -> Vec<Point> {
        let (a, b) = (l2_ns.ln(), l3_ns.ln());
        points
            .iter()
            .map(|p| {
                let z = p.ns.ln();
                // Between L2 and L3: squeeze; above L3: shift down with it.
                let ns = if z <= a {
                    p.ns
                } else if z <= b {
                    (a + (z - a) * factor).exp()
                } else {
                    let top = b - (b - a) * (1.0 - factor);
                    let mem = 100f64.ln();
                    let t = ((z - b) / (mem - b)).min(1.0);
                    (top + t * (mem - top) + (z - mem).max(0.0)).exp()
                };
                Point { size: p.size, ns }
            })
            .collect()
    }

    #[test]
    fn a_shallow_l3_step_is_found_and_a_too_shallow_one_is_not_found_never_misnamed() {
        let (small, huge, _) = fixture(EPYC_A);
        // L2 at 3.7 ns, L3 at 16 ns on this curve: an L3 2.5x above L2.
        let f = 2.5f64.ln() / (16.0f64 / 3.7).ln();
        let h = analyse(&shallow_l3(&small, 3.7, 16.0, f), None);
        assert_eq!(h.levels.len(), 3, "{:?}", h.levels);
        assert!(
            h.levels[2].ns < 12.0 && h.levels[2].ns > 7.0,
            "{:?}",
            h.levels
        );
        assert!(within(h.levels[1].size, 512 * KIB, 1.3), "{:?}", h.levels);
        // 1.4x above L2: not a level of its own; L2 is followed by memory,
        // and nothing at memory latency is taken for a cache.
        let f = 1.4f64.ln() / (16.0f64 / 3.7).ln();
        let h = analyse(&shallow_l3(&small, 3.7, 16.0, f), Some(&huge));
        assert!(h.levels.len() <= 3, "{:?}", h.levels);
        let mem = h.memory.unwrap();
        for l in &h.levels {
            assert!(l.ns * MIN_STEP <= mem.ns, "{l:?} vs {mem:?}");
        }
    }

    #[test]
    fn exact_staircase_boundaries_are_recovered() {
        // Sharp steps (LRU-like) at sizes on and off the grid, fine grid.
        for (l1, l2, l3) in [
            (32 * KIB, 512 * KIB, 8 * MIB),
            (48 * KIB, 1280 * KIB, 30 * MIB),
            (32 * KIB, 2 * MIB, 12 * MIB),
        ] {
            let machine = [(l1, 1.2), (l2, 4.0), (l3, 15.0)];
            let mut sizes = grid(4, KIB);
            sizes.extend([l1 / 16 * 17, l1 / 8 * 9, l2 / 16 * 17, l2 / 8 * 9]);
            sizes.sort_unstable();
            sizes.dedup();
            let c = ramped(&machine, 100.0, &sizes, 16.0);
            let h = levels(&noisy(c, 0.03, l3));
            assert_eq!(h.levels.len(), 3, "{:?}", h.levels);
            for (l, want) in h.levels.iter().zip(machine) {
                assert!(within(l.size, want.0, 1.15), "{l:?} vs {want:?}");
                assert!(l.size_lo <= want.0 && l.size_hi as f64 >= want.0 as f64 * 1.06);
            }
            assert!(h.memory_reached);
        }
    }

    #[test]
    fn an_l1d_of_32_kib_reads_28_to_36_kib_with_the_boundary_points() {
        let sizes: Vec<u64> = {
            let mut s = grid(4, KIB);
            s.extend([34 * KIB, 36 * KIB]);
            s.sort_unstable();
            s
        };
        for seed in 1..20 {
            // 8-way LRU: the step is complete at 9/8 of the capacity.
            let machine = [(32 * KIB, 1.2), MACHINE[1], MACHINE[2]];
            let c = ramped(&machine, 100.0, &sizes, 8.0);
            let h = levels(&noisy(c, 0.05, seed));
            let l1 = h.levels[0].size;
            assert!((28 * KIB..=36 * KIB).contains(&l1), "seed {seed}: {l1}");
        }
    }

    #[test]
    fn a_curve_without_an_l3_plateau_gives_two_levels_and_memory_not_l3() {
        // L2 ramps straight to memory: the L3 is too small a share to show.
        let c = ramped(&MACHINE[..2], 120.0, &grid(4, KIB), 4.0);
        let h = levels(&c);
        assert_eq!(h.levels.len(), 2, "{:?}", h.levels);
        let mem = h.memory.unwrap();
        assert!(mem.ns > 80.0, "{mem:?}");
        assert!(h.levels.iter().all(|l| l.ns < 10.0), "{:?}", h.levels);
    }

    #[test]
    fn a_curve_that_stops_on_the_ramp_to_memory_keeps_its_last_cache() {
        // Sweep up to 48 MiB only: memory's plateau is never reached.
        let sizes = super::super::sweep(KIB, 48 * MIB, 4);
        let c = staircase_k(&MACHINE, 100.0, &sizes, 1.5);
        let h = levels(&c);
        assert_eq!(h.levels.len(), 3, "{:?}", h.levels);
        assert!(!h.memory_reached);
        assert!(h.levels[2].ns < 20.0 && h.memory.unwrap().ns > 40.0);
    }

    #[test]
    fn isotonic_fit_is_non_decreasing_and_keeps_sorted_input() {
        let y = [1.0, 3.0, 2.0, 2.0, 5.0, 4.0];
        let z = isotonic(&y);
        assert!(z.windows(2).all(|w| w[0] <= w[1]), "{z:?}");
        assert_eq!(isotonic(&[1.0, 2.0, 3.0]), vec![1.0, 2.0, 3.0]);
        let total: f64 = z.iter().sum();
        assert!((total - y.iter().sum::<f64>()).abs() < 1e-9);
    }
}
