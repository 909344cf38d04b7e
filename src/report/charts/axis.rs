//! The axes of the charts: scales (linear from 0, or logarithmic over
//! whole decades or powers of two), their ticks at round values, and the
//! ticks' labels in human units.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

use crate::units::{BaseUnit, human};

/// An axis: linear from 0, or logarithmic (base 10 over whole decades, or
/// base 2 over whole powers of two for byte sizes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Scale {
    pub(super) log: bool,
    /// 10, or 2 for byte sizes (ticks at 1 KiB, 16 KiB... instead of 9.77 KiB).
    base: f64,
    pub(super) lo: f64,
    pub(super) hi: f64,
}

impl Scale {
    /// A scale covering the positive finite `values`: log10 over whole
    /// decades when they span more than `log_above` (max / min) or when
    /// `force_log`, else linear from 0.
    pub(super) fn fit(values: impl Iterator<Item = f64>, log_above: f64, force_log: bool) -> Scale {
        let Some((min, max)) = positive_range(values) else {
            return Scale::linear(1.0);
        };
        if force_log || max / min > log_above {
            Scale::log_over(10.0, min, max)
        } else {
            Scale::linear(nice_ceil(max * 1.05))
        }
    }

    /// A log2 scale over whole powers of two (for byte sizes).
    pub(super) fn fit_pow2(values: impl Iterator<Item = f64>) -> Scale {
        match positive_range(values) {
            Some((min, max)) => Scale::log_over(2.0, min, max),
            None => Scale::linear(1.0),
        }
    }

    fn linear(hi: f64) -> Scale {
        Scale {
            log: false,
            base: 10.0,
            lo: 0.0,
            hi,
        }
    }

    fn log_over(base: f64, min: f64, max: f64) -> Scale {
        let lo = min.log(base).floor();
        let mut hi = max.log(base).ceil();
        if hi <= lo {
            hi = lo + 1.0;
        }
        Scale {
            log: true,
            base,
            lo,
            hi,
        }
    }

    /// The plotting coordinate of a value.
    pub(super) fn pos(&self, v: f64) -> f64 {
        if self.log {
            if v > 0.0 {
                v.log(self.base).clamp(self.lo, self.hi)
            } else {
                self.lo
            }
        } else {
            v.clamp(self.lo, self.hi)
        }
    }

    /// The value at a plotting coordinate.
    pub(super) fn value(&self, p: f64) -> f64 {
        if self.log { self.base.powf(p) } else { p }
    }

    /// Tick positions (plotting coordinates).
    pub(super) fn ticks(&self) -> Vec<f64> {
        if self.log && self.base == 2.0 {
            // Every k-th power of two, at most ~10 ticks, aligned to multiples of k.
            let span = (self.hi - self.lo).round() as i64;
            let k = ((span + 9) / 10).max(1);
            let first = (self.lo as i64).div_euclid(k) * k;
            (0..)
                .map(|i| (first + i * k) as f64)
                .take_while(|p| *p <= self.hi)
                .filter(|p| *p >= self.lo)
                .collect()
        } else if self.log {
            let decades = (self.hi - self.lo).round() as i64;
            let mut t = Vec::new();
            for d in 0..=decades {
                let base = self.lo + d as f64;
                t.push(base);
                if decades <= 2 && d < decades {
                    t.push(base + 2f64.log10());
                    t.push(base + 5f64.log10());
                }
            }
            t
        } else {
            let step = nice_step(self.hi / 5.0);
            (0..=((self.hi / step).round() as i64))
                .map(|i| i as f64 * step)
                .filter(|v| *v <= self.hi * 1.0001)
                .collect()
        }
    }
}

/// The smallest and largest positive finite values, if any.
fn positive_range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut min, mut max) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        min = min.min(v);
        max = max.max(v);
    }
    (min.is_finite() && max > 0.0).then_some((min, max))
}

/// A linear axis in plotting coordinates with ticks chosen here (plotters'
/// own key points would fall on round exponents, not on round values).
#[derive(Clone, Debug)]
pub(super) struct Axis {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl Axis {
    pub(super) fn new(lo: f64, hi: f64, ticks: Vec<f64>) -> Axis {
        Axis {
            range: lo..hi,
            ticks,
        }
    }
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let f = if span > 0.0 {
            (v - self.range.start) / span
        } else {
            0.0
        };
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The smallest 1, 2 or 5 × 10^k at or above `x`.
fn nice_ceil(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let e = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * e)
        .find(|v| *v >= x * 0.9999)
        .unwrap_or(10.0 * e)
}

/// A tick step of 1, 2 or 5 × 10^k near `x`.
fn nice_step(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let e = 10f64.powf(x.log10().floor());
    let m = x / e;
    let f = if m < 1.5 {
        1.0
    } else if m < 3.5 {
        2.0
    } else if m < 7.5 {
        5.0
    } else {
        10.0
    };
    f * e
}

/// A tick label in human units; zero is plain `0`.
pub(super) fn tick_label(v: f64, unit: BaseUnit) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        human(v, unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_pick_log_for_wide_ranges() {
        let s = Scale::fit([1.0, 2.0, 3.0].into_iter(), 50.0, false);
        assert!(!s.log);
        assert!(s.hi >= 3.0);
        let s = Scale::fit([1.0, 1e4].into_iter(), 50.0, false);
        assert!(s.log);
        assert_eq!((s.lo, s.hi), (0.0, 4.0));
        assert_eq!(s.ticks().len(), 5);
    }

    #[test]
    fn byte_scales_tick_on_powers_of_two() {
        let s = Scale::fit_pow2([1024.0, 128.0 * 1024.0 * 1024.0].into_iter());
        assert_eq!((s.lo, s.hi), (10.0, 27.0));
        let t = s.ticks();
        assert!(t.len() <= 10 && t.len() >= 5, "{t:?}");
        assert!(t.iter().all(|p| p.fract() == 0.0 && *p as i64 % 2 == 0));
        assert_eq!(s.value(20.0), 1048576.0);
    }

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_ceil(3.2), 5.0);
        assert_eq!(nice_ceil(0.9), 1.0);
        assert_eq!(nice_step(1.3), 1.0);
        assert_eq!(nice_step(27.0), 20.0);
    }
}
