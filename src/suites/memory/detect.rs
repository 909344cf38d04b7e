//! Finding the cache levels in a latency curve: pure functions, no I/O.
//!
//! A latency-vs-working-set curve is a staircase: a plateau per cache level
//! (the working set fits), a ramp where it stops fitting, and a last
//! plateau for memory. Real curves are noisy (a shared machine), ramps are
//! gradual (associativity, pseudo-LRU, physically indexed caches under
//! 4 KiB pages) and TLB misses add steps of their own. So:
//!
//! 1. log latency, a running median of three (isolated spikes go), then
//!    isotonic regression (a bigger working set is never faster: dips go);
//! 2. plateaus: maximal runs of points within [`PLATEAU_TOLERANCE`] of the
//!    run's first point that span at least [`MIN_PLATEAU_DOUBLINGS`];
//! 3. a level's size is where the curve is half way (in log terms) to the
//!    next plateau, at most [`MAX_KNEE_RISE`] above its own: the middle of
//!    the ramp, which a cache shared with other work still puts at its
//!    capacity, and not thrown off when the next level is hidden.
//!
//! With a huge-page curve, levels come from it (TLB misses are rare there)
//! and a step that only the 4 KiB-page curve shows is reported as a TLB step.

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
    /// Estimated capacity in bytes (the middle of the ramp after the plateau).
    pub size: u64,
    /// Latency per load while the working set fits, ns.
    pub ns: f64,
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
    /// The last plateau: memory, when the curve went far enough.
    pub memory: Option<Plateau>,
    /// Steps due to the TLB (only with a huge-page curve).
    pub tlb_steps: Vec<TlbStep>,
}

/// Points within this fraction of a plateau's first point belong to it.
pub const PLATEAU_TOLERANCE: f64 = 0.25;
/// A plateau spans at least this many doublings of the working set.
pub const MIN_PLATEAU_DOUBLINGS: f64 = 1.0;
/// Neighbouring plateaus closer in latency than this factor are one level
/// (a flat stretch inside a ramp, or noise). Cache levels differ by 3x or
/// more; a TLB step inside a level is smaller and belongs to it.
pub const MIN_STEP: f64 = 1.6;
/// A level ends half way (in log terms) between its plateau and the next
/// one, but never more than this factor above its own plateau. The middle
/// of the ramp is where a cache that other work shares (an SMT sibling, a
/// hypervisor's other guests) still shows its capacity: such a cache
/// starts to miss well before it is full, so a fixed small rise placed a
/// 512 KiB L2 at 370 KiB. The cap keeps a level whose next level is
/// hidden (a ramp straight to memory, 50x higher) from stretching up the
/// whole ramp: a 2.5x rise comes within 1.1 C under LRU-like replacement.
pub const MAX_KNEE_RISE: f64 = 2.5;
/// A TLB step is reported when 4 KiB pages are at least this much slower past it.
pub const MIN_TLB_STEP: f64 = 1.2;
/// Two step positions closer than this factor are the same step.
pub const SAME_STEP_FACTOR: f64 = 1.6;

/// The curve cleaned for detection: sorted, finite, smoothed, non-decreasing.
/// Returns (log2 size, ln latency) pairs.
fn clean(points: &[Point]) -> Vec<(f64, f64)> {
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
    let mono = isotonic(&smooth);
    p.iter()
        .zip(mono)
        .map(|(p, z)| ((p.size as f64).log2(), z))
        .collect()
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

/// The plateaus of a curve, smallest working set first.
pub fn plateaus(points: &[Point]) -> Vec<Plateau> {
    let c = clean(points);
    let tol = (1.0 + PLATEAU_TOLERANCE).ln();
    // Maximal runs within the tolerance of their first point, long enough.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let mut j = i;
        while j + 1 < c.len() && c[j + 1].1 - c[i].1 <= tol {
            j += 1;
        }
        if c[j].0 - c[i].0 >= MIN_PLATEAU_DOUBLINGS - 1e-9 {
            runs.push((i, j));
        }
        i = j + 1;
    }
    // Neighbours too close in height are one level: merge the closest pair
    // first, until every step is at least MIN_STEP.
    let level = |r: (usize, usize)| {
        let mut zs: Vec<f64> = c[r.0..=r.1].iter().map(|p| p.1).collect();
        zs.sort_by(f64::total_cmp);
        zs[zs.len() / 2]
    };
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
    runs.into_iter()
        .map(|r| Plateau {
            from: c[r.0].0.exp2().round() as u64,
            to: c[r.1].0.exp2().round() as u64,
            ns: level(r).exp(),
        })
        .collect()
}

/// Where the cleaned curve first reaches `ns` after `after` bytes, interpolated.
fn crossing(c: &[(f64, f64)], after: u64, ns: f64) -> Option<u64> {
    let target = ns.ln();
    let start = (after as f64).log2();
    let i = c.iter().position(|p| p.0 > start - 1e-9 && p.1 >= target)?;
    if i == 0 {
        return Some(c[0].0.exp2().round() as u64);
    }
    let (x0, y0) = c[i - 1];
    let (x1, y1) = c[i];
    let t = if y1 > y0 {
        (target - y0) / (y1 - y0)
    } else {
        1.0
    };
    Some((x0 + t.clamp(0.0, 1.0) * (x1 - x0)).exp2().round() as u64)
}

/// Cache levels and the memory plateau of one curve.
pub fn levels(points: &[Point]) -> (Vec<Level>, Option<Plateau>) {
    let ps = plateaus(points);
    let c = clean(points);
    let mut levels = Vec::new();
    for w in ps.windows(2) {
        let rise = MAX_KNEE_RISE.min((w[1].ns / w[0].ns).sqrt());
        let size = crossing(&c, w[0].to, w[0].ns * rise).unwrap_or(w[0].to);
        levels.push(Level { size, ns: w[0].ns });
    }
    (levels, ps.last().copied())
}

/// The hierarchy from a 4 KiB-page curve and, if measured, a huge-page
/// curve (which need not start as small: below its first point the two
/// are the same, since the TLB covers any tiny working set).
pub fn analyse(small: &[Point], huge: Option<&[Point]>) -> Hierarchy {
    let Some(huge) = huge.filter(|h| h.len() >= 3) else {
        let (levels, memory) = levels(small);
        return Hierarchy {
            levels,
            memory,
            tlb_steps: Vec::new(),
        };
    };
    let first_huge = huge.iter().map(|p| p.size).min().unwrap_or(0);
    let mut merged: Vec<Point> = small
        .iter()
        .copied()
        .filter(|p| p.size < first_huge)
        .collect();
    merged.extend_from_slice(huge);
    let (cache_levels, memory) = levels(&merged);
    let (small_levels, _) = levels(small);
    let huge_at = |size: u64| -> Option<f64> {
        huge.iter()
            .filter(|p| p.size >= size)
            .min_by_key(|p| p.size)
            .map(|p| p.ns)
    };
    let tlb_steps = small_levels
        .iter()
        .filter(|s| {
            !cache_levels.iter().any(|c| {
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
    Hierarchy {
        levels: cache_levels,
        memory,
        tlb_steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (levels, memory) = levels(&c);
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
            let (levels, memory) = levels(&c);
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
        // 4 KiB pages: the L2 TLB runs out at 4 MiB, adding 80% inside L3
        // (and in memory, where a page walk comes on top of each miss).
        let small: Vec<Point> = ramped(&MACHINE, 100.0, &sizes, 8.0)
            .into_iter()
            .map(|p| {
                let x = (p.size as f64).log2() - (4.0 * MIB as f64).log2();
                let w = 1.0 / (1.0 + (-x * 6.0).exp());
                Point {
                    size: p.size,
                    ns: p.ns * (1.0 + 0.8 * w),
                }
            })
            .collect();
        // Alone, the 4 KiB curve shows a fourth step...
        let (alone, _) = levels(&small);
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
        let (found, _) = levels(&c);
        assert!(found.len() >= 2, "{found:?}");
        for (l, want) in found.iter().zip(MACHINE).take(2) {
            assert!(within(l.size, want.0, 2.0), "{l:?} vs {want:?}");
        }
        // An L3 that never shows (shared with other tenants): L2 must not
        // stretch to the middle of the L2-to-memory ramp.
        let c = ramped(&MACHINE[..2], 300.0, &grid(4, KIB), 2.0);
        let (levels, memory) = levels(&c);
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
        let (levels, memory) = levels(&c);
        assert!(levels.is_empty());
        assert_eq!(memory.unwrap().from, KIB);
    }

    #[test]
    fn degenerate_input_gives_nothing_rather_than_panicking() {
        assert_eq!(levels(&[]), (Vec::new(), None));
        let one = [Point {
            size: 1024,
            ns: 1.0,
        }];
        assert!(levels(&one).0.is_empty());
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
        assert_eq!(levels(&bad), (Vec::new(), None));
        let h = analyse(&[], Some(&[]));
        assert!(h.levels.is_empty() && h.memory.is_none());
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
