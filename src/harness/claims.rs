//! Claims: the one place where a finding decides its words.
//!
//! Why: a sentence opcost prints ("pipe is faster than unix_stream",
//! "fork+exec grows with the descriptors", "stays flat") is read and quoted
//! more than the numbers under it, so it must come out the same when the
//! run is repeated. A word decided by a point estimate flips whenever two
//! values are equal within their noise, which is most of the time for
//! alternatives that cost the same. So every word here is decided by
//! intervals: two measurements are ordered only when the interval of their
//! ratio excludes 1 *and* the difference is material ([`MATERIAL`]); a set
//! is ranked into tiers whose members cannot be told apart, listed in the
//! caller's (declaration) order, never by their point estimates; a sweep
//! "grows" only when the interval of its slope excludes zero and the
//! change over the sweep is material, "stays flat" only when the interval
//! rules a material change out, and otherwise has "no clear trend".
//!
//! The suites' `findings.rs` build their sentences from these primitives;
//! the numbers they print may move from run to run, the words may not.

use super::Measurement;
use crate::stats::{Z95, normal_cdf, quantile_sorted, t975};

/// Two values closer than this factor are called a tie even when their
/// intervals separate them: a difference of a few per cent is real but
/// not worth a word, and it is the size at which repeated runs disagree.
pub const MATERIAL: f64 = 1.05;

/// An estimate with its 95% interval, and which direction is better.
#[derive(Clone, Copy, PartialEq)]
pub struct Est<'a> {
    /// The point estimate (a median), in the result's base unit.
    pub value: f64,
    /// Lower end of its 95% interval.
    pub low: f64,
    /// Upper end of its 95% interval.
    pub high: f64,
    /// True when a larger value is better (throughputs, rates).
    pub higher_is_better: bool,
    /// The measurement it is, whose rounds pair it with another measured
    /// in the same rounds ([`paired_log_half_width`]); `None` for a
    /// derived estimate or one given a pooled width.
    pub source: Option<&'a Measurement>,
}

impl std::fmt::Debug for Est<'_> {
    /// The figures, and the id of the measurement it is.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Est")
            .field("value", &self.value)
            .field("low", &self.low)
            .field("high", &self.high)
            .field("higher_is_better", &self.higher_is_better)
            .field("source", &self.source.map(|m| &m.id))
            .finish()
    }
}

/// The part of a paired ratio's spread from one run to the next that the
/// run's own rounds cannot see (log scale), added in quadrature to the
/// paired interval's half-width; where the rows' histories say how far
/// they move between runs ([`Measurement::between_runs`]), that instead
/// when wider. Two rows interleaved in the same rounds share the
/// machine's states, so their ratio is steadier than either; but a run
/// also moves their ratio a little as a whole (where its memory and its
/// processes landed). Over the corpus's pairs of interleaved rows
/// (154,174 pairs of a run's interval and another run's ratio, every
/// machine), the paired interval alone held the other run's ratio in
/// 87.3% (76% on the day of whole-run shifts), with 0.03 added 91.4%
/// (81%), and the two rows' own intervals in quadrature 94.0% at half
/// again the width.
pub const PAIRED_FLOOR: f64 = 0.03;

/// The span of one run on the clock of rounds pooled from several runs
/// (`analysis::history_words::pool_runs`), in seconds: the `k`-th earlier
/// run's rounds start `k` spans before this run's, far more than any run
/// lasts, so rounds of two runs never share a start.
pub const POOLED_RUN_SPAN_S: f64 = 1e9;

/// The part of a pooled paired ratio's interval that the runs' spread
/// adds (log scale), when `paired` (round start, log ratio) holds rounds
/// of two runs or more ([`POOLED_RUN_SPAN_S`] apart): the spread of the
/// runs' own mean ratios, over the square root of their number, as the
/// pooled median's is ([`Z95`] standard errors), at least
/// [`PAIRED_FLOOR`]. It replaces the rows' own spread between runs: the
/// runs at hand show how far the pair's ratio moves from run to run,
/// where each row's history shows how far the row does, which is much
/// further when the machine moves both (rounds 20-40% slower alike).
/// `None` for rounds of one run.
fn pooled_runs_spread(paired: &[(f64, f64)]) -> Option<f64> {
    // (run, sum, count); a handful of runs, so a list.
    let mut runs: Vec<(f64, f64, f64)> = Vec::new();
    for &(at, d) in paired {
        let run = (at / POOLED_RUN_SPAN_S).floor();
        match runs.iter_mut().find(|r| r.0 == run) {
            Some(r) => {
                r.1 += d;
                r.2 += 1.0;
            }
            None => runs.push((run, d, 1.0)),
        }
    }
    if runs.len() < 2 {
        return None;
    }
    let means: Vec<f64> = runs.iter().map(|r| r.1 / r.2).collect();
    let k = means.len() as f64;
    let mean = means.iter().sum::<f64>() / k;
    let var = means.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0);
    Some((Z95 * (var / k).sqrt()).max(PAIRED_FLOOR))
}

/// The log of each used round's median of `m` as measured (a slow round's
/// phase correction undone: a state of the machine moves both rows of a
/// pair, so their ratio needs no model of it), by when the round began.
fn round_logs(m: &Measurement) -> impl Iterator<Item = (f64, f64)> + '_ {
    let hib = m.higher_is_better();
    m.rounds.iter().filter(|r| r.used).filter_map(move |r| {
        let f = r
            .phase_factor
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(1.0);
        // A corrected time was divided by f, a corrected rate multiplied.
        let v = if hib { r.median / f } else { r.median * f };
        (v.is_finite() && v > 0.0 && r.at_s.is_finite()).then(|| (r.at_s, v.ln()))
    })
}

/// The 95% half-width (log scale) of the ratio of two estimates measured
/// in the same rounds. The members of an interleaved group are measured in
/// one unit that starts at one instant of the run's clock
/// ([`super::Round::at_s`]), so rounds with the same start were measured
/// together: Student's interval of the mean of their own log ratios, with
/// [`PAIRED_FLOOR`] (or the rows' spread between runs) added in
/// quadrature. `None` unless at least two rounds of each began together.
pub fn paired_log_half_width(a: &Est<'_>, b: &Est<'_>) -> Option<f64> {
    paired_half_width(a, b, false)
}

/// [`paired_log_half_width`] of `a / b`, or of `a · b` with `product` (a
/// ratio of speeds between a time and a rate).
#[inline(never)]
fn paired_half_width(a: &Est<'_>, b: &Est<'_>, product: bool) -> Option<f64> {
    let (ma, mb) = (a.source?, b.source?);
    let sign = if product { 1.0 } else { -1.0 };
    let paired: Vec<(f64, f64)> = round_logs(ma)
        .filter_map(|(at, la)| {
            let (_, lb) = round_logs(mb).find(|&(bt, _)| bt == at)?;
            Some((at, la + sign * lb))
        })
        .collect();
    let d: Vec<f64> = paired.iter().map(|p| p.1).collect();
    let (_, hw) = crate::stats::mean_half_width(&d)?;
    if let Some(between) = pooled_runs_spread(&paired) {
        return Some(hw.hypot(between));
    }
    // What moves the two between runs, from their histories when known
    // (as apart: each row's own), else the floor.
    let between_of = |m: &Measurement| m.between_runs.filter(|b| b.is_finite()).unwrap_or(0.0);
    let between = (Z95 * between_of(ma).hypot(between_of(mb))).max(PAIRED_FLOOR);
    Some(hw.hypot(between))
}

impl<'a> Est<'a> {
    /// A measurement's median and interval (an interval that does not hold
    /// the median, as an old document may have, is widened to hold it).
    pub fn of(m: &'a Measurement) -> Est<'a> {
        Est {
            source: Some(m),
            ..Est::new(m.median, m.ci_low, m.ci_high, m.higher_is_better())
        }
    }

    /// An estimate from its parts; the interval is widened to hold `value`.
    pub fn new(value: f64, low: f64, high: f64, higher_is_better: bool) -> Est<'a> {
        let (low, high) = if low.is_finite() && high.is_finite() && low > 0.0 {
            (low.min(value), high.max(value))
        } else {
            (value, value)
        };
        Est {
            value,
            low,
            high,
            higher_is_better,
            source: None,
        }
    }

    /// A cost in time (lower is better), e.g. a latency in ns.
    pub fn cost(value: f64, low: f64, high: f64) -> Est<'a> {
        Est::new(value, low, high, false)
    }

    /// The half-width of the interval in log terms (the larger side).
    pub fn log_half_width(&self) -> f64 {
        if !(self.value > 0.0 && self.low > 0.0) {
            return 0.0;
        }
        (self.high / self.value)
            .ln()
            .max((self.value / self.low).ln())
            .max(0.0)
    }

    /// The estimate without its measurement: a figure with no rounds to
    /// pair, for a caller that chose another interval than the rounds'.
    pub fn detached(self) -> Est<'static> {
        Est {
            value: self.value,
            low: self.low,
            high: self.high,
            higher_is_better: self.higher_is_better,
            source: None,
        }
    }

    /// The estimate scaled by a constant factor (its interval likewise).
    pub fn scaled(&self, k: f64) -> Est<'a> {
        let (a, b) = (self.low * k, self.high * k);
        Est {
            value: self.value * k,
            low: a.min(b),
            high: a.max(b),
            ..*self
        }
    }

    /// Speed: a value where larger is always better (a cost inverted).
    fn speed(&self) -> (f64, f64) {
        if self.higher_is_better {
            (self.value, self.log_half_width())
        } else {
            (1.0 / self.value, self.log_half_width())
        }
    }
}

/// A ratio with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    /// The point ratio.
    pub ratio: f64,
    /// Lower end of its 95% interval.
    pub low: f64,
    /// Upper end of its 95% interval.
    pub high: f64,
}

impl Ratio {
    /// `a / b` of two estimates, the interval from both half-widths in
    /// quadrature (log scale: the two are measured independently).
    pub fn of(a: &Est, b: &Est) -> Ratio {
        let r = a.value / b.value;
        let hw = ratio_log_half_width(a, b);
        Ratio {
            ratio: r,
            low: r * (-hw).exp(),
            high: r * hw.exp(),
        }
    }

    /// The ratio above 1 or below 1 clearly (interval excludes 1) and by at
    /// least [`MATERIAL`]: `Some(true)` above, `Some(false)` below, `None`
    /// for a tie.
    pub fn direction(&self) -> Option<bool> {
        if self.low > 1.0 && self.ratio >= MATERIAL {
            Some(true)
        } else if self.high < 1.0 && self.ratio <= 1.0 / MATERIAL {
            Some(false)
        } else {
            None
        }
    }

    /// True when the whole interval is at or above `k` (e.g. "at least 2×").
    pub fn at_least(&self, k: f64) -> bool {
        self.low >= k
    }

    /// True when the whole interval is at or below `k`.
    pub fn at_most(&self, k: f64) -> bool {
        self.high <= k
    }

    /// Where the whole interval lies against `k`: `Some(true)` at or above
    /// it, `Some(false)` at or below it, `None` when it straddles `k`.
    pub fn against(&self, k: f64) -> Option<bool> {
        if self.at_least(k) {
            Some(true)
        } else if self.at_most(k) {
            Some(false)
        } else {
            None
        }
    }

    /// True when the whole interval lies within `k` of 1 either way (a
    /// tie that is a bound, not only a failure to tell apart).
    pub fn within(&self, k: f64) -> bool {
        self.at_least(1.0 / k) && self.at_most(k)
    }

    /// "1.31× (1.22–1.40)".
    pub fn text(&self) -> String {
        self.to_string()
    }
}

impl std::fmt::Display for Ratio {
    /// "1.31× (1.22–1.40)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}–{})",
            crate::units::fmt_ratio(self.ratio),
            crate::units::fmt_ratio_number(self.low),
            crate::units::fmt_ratio_number(self.high)
        )
    }
}

/// The outcome of comparing `a` with `b`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// `a` is clearly better, by `speedup` (> 1: how many times faster).
    Better(Ratio),
    /// `a` is clearly worse; the ratio is `b`'s speed over `a`'s (> 1).
    Worse(Ratio),
    /// No clear difference; the ratio is `a`'s speed over `b`'s.
    Tie(Ratio),
}

impl Verdict {
    /// True for a tie.
    pub fn is_tie(&self) -> bool {
        matches!(self, Verdict::Tie(_))
    }

    /// One of three values, made from the verdict's ratio: `better`'s when
    /// `a` is clearly better, `worse`'s when it is clearly worse, `tie`'s
    /// otherwise.
    pub fn pick<T>(
        self,
        better: impl FnOnce(Ratio) -> T,
        worse: impl FnOnce(Ratio) -> T,
        tie: impl FnOnce(Ratio) -> T,
    ) -> T {
        match self {
            Verdict::Better(r) => better(r),
            Verdict::Worse(r) => worse(r),
            Verdict::Tie(r) => tie(r),
        }
    }

    /// The ratio the verdict carries: the better side's speed over the
    /// worse side's (`a`'s over `b`'s for a tie).
    pub fn ratio(self) -> Ratio {
        self.pick(|r| r, |r| r, |r| r)
    }

    /// A clear difference in words, "1.31× (1.22–1.40) faster": the ratio
    /// and `better` when `a` is the better one, `worse` when it is the worse
    /// one; `None` for a tie.
    pub fn worded(self, better: &str, worse: &str) -> Option<String> {
        self.pick(
            |r| Some(format!("{r} {better}")),
            |r| Some(format!("{r} {worse}")),
            |_| None,
        )
    }
}

/// Speed of `a` over speed of `b` (above 1: `a` is faster, whatever the
/// unit), with its interval.
pub fn speedup(a: &Est, b: &Est) -> Ratio {
    let r = a.speed().0 / b.speed().0;
    let hw = speed_log_half_width(a, b);
    Ratio {
        ratio: r,
        low: r * (-hw).exp(),
        high: r * hw.exp(),
    }
}

/// The 95% half-width (log scale) of the ratio of `a` and `b`: from the
/// rounds they were measured in together when they were
/// ([`paired_log_half_width`]), else their own intervals in quadrature
/// (measured apart).
fn ratio_log_half_width(a: &Est, b: &Est) -> f64 {
    paired_log_half_width(a, b).unwrap_or_else(|| a.log_half_width().hypot(b.log_half_width()))
}

/// [`ratio_log_half_width`] of the ratio of the two speeds (a time
/// inverted): the same as of the values' unless one is a time and the
/// other a rate.
fn speed_log_half_width(a: &Est, b: &Est) -> f64 {
    paired_half_width(a, b, a.higher_is_better != b.higher_is_better)
        .unwrap_or_else(|| a.log_half_width().hypot(b.log_half_width()))
}

/// Compares two estimates of the same kind: better, worse or a tie.
pub fn compare(a: &Est, b: &Est) -> Verdict {
    let s = speedup(a, b);
    match s.direction() {
        Some(true) => Verdict::Better(s),
        Some(false) => Verdict::Worse(Ratio {
            ratio: 1.0 / s.ratio,
            low: 1.0 / s.high,
            high: 1.0 / s.low,
        }),
        None => Verdict::Tie(s),
    }
}

/// "a is 1.3× (1.2–1.4) faster than b" / "a and b are within noise of each
/// other", with `faster` the word for the better side ("faster", "cheaper").
pub fn compare_text(a_name: &str, a: &Est, b_name: &str, b: &Est, faster: &str) -> String {
    compare(a, b).pick(
        |r| format!("{a_name} is {r} {faster} than {b_name}"),
        |r| format!("{b_name} is {r} {faster} than {a_name}"),
        |_| format!("{a_name} and {b_name} are within noise of each other"),
    )
}

/// A set of named estimates ranked into tiers, best tier first; members of
/// a tier cannot be told apart from the tier's best, tiers can.
#[derive(Clone, Debug, PartialEq)]
pub struct Tiers {
    /// Indices into the ranked set, per tier, each tier in the caller's order.
    pub tiers: Vec<Vec<usize>>,
    /// The best member of each tier (by point estimate): its representative.
    pub leaders: Vec<usize>,
}

/// Ranks estimates into tiers. The best remaining estimate leads a tier and
/// every remaining one that ties with it ([`compare`]) joins it; members are
/// listed in the order given, so noise cannot reorder them.
pub fn rank(items: &[Est]) -> Tiers {
    let mut left: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].value.is_finite() && items[i].value > 0.0)
        .collect();
    let speed = |i: usize| items[i].speed().0;
    let mut tiers = Vec::new();
    let mut leaders = Vec::new();
    while !left.is_empty() {
        let lead = *left
            .iter()
            .max_by(|&&a, &&b| speed(a).total_cmp(&speed(b)))
            .expect("non-empty");
        let tier: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&i| i == lead || compare(&items[lead], &items[i]).is_tie())
            .collect();
        left.retain(|i| !tier.contains(i));
        tiers.push(tier);
        leaders.push(lead);
    }
    Tiers { tiers, leaders }
}

/// Joins names as "a", "a and b", "a, b and c".
pub fn join_names(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The tiers of a named set in words: "fastest: a; then b and c, within
/// noise of each other (1.6× slower); then d (3.1× slower)". `best` is the
/// word for the top ("fastest", "cheapest"); the ratios are each tier's
/// best against the top tier's best, in speed. A set in one tier reads
/// "no clear order: a, b and c are within noise of each other".
pub fn tiers_text(names: &[&str], items: &[Est], best: &str) -> String {
    let t = rank(items);
    if t.tiers.len() == 1 {
        let members: Vec<&str> = t.tiers[0].iter().map(|&i| names[i]).collect();
        if members.len() == 1 {
            return format!("{best}: {}", members[0]);
        }
        return format!(
            "no clear order: {} are within noise of each other",
            join_names(&members)
        );
    }
    let top = t.leaders[0];
    let mut parts = Vec::new();
    for (k, tier) in t.tiers.iter().enumerate() {
        let members: Vec<&str> = tier.iter().map(|&i| names[i]).collect();
        let group = join_names(&members);
        let tie = if members.len() > 1 {
            ", within noise of each other"
        } else {
            ""
        };
        if k == 0 {
            parts.push(format!("{best}: {group}{tie}"));
        } else {
            let s = speedup(&items[top], &items[t.leaders[k]]);
            parts.push(format!(
                "then {group}{tie} ({} slower)",
                crate::units::fmt_ratio(s.ratio)
            ));
        }
    }
    parts.join("; ")
}

/// The direction of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrendKind {
    /// The slope's interval is above zero and the change is material.
    Grows,
    /// The slope's interval is below zero and the change is material.
    Falls,
    /// The interval rules out a material change over the sweep.
    Flat,
    /// Neither: the data cannot tell.
    Unclear,
}

/// A straight-line fit of a sweep, with the slope's 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trend {
    /// Change of the value per unit of x.
    pub slope: f64,
    /// Lower end of the slope's 95% interval.
    pub low: f64,
    /// Upper end of the slope's 95% interval.
    pub high: f64,
    /// The fitted value at the smallest x.
    pub start: f64,
    /// The span of x.
    pub span: f64,
    /// What the interval supports.
    pub kind: TrendKind,
}

impl Trend {
    /// The largest change over the sweep the interval allows, relative to
    /// the value at its start (for "stays flat (< 3% over the sweep)").
    pub fn max_rel_change(&self) -> f64 {
        (self.low.abs().max(self.high.abs()) * self.span / self.start.abs()).abs()
    }

    /// The slope scaled to `per` units of x, as "X (±Z)" with `fmt` for
    /// the values (e.g. `|v| human(v, ValueUnit::Ns)`).
    pub fn slope_text(&self, per: f64, fmt: impl Fn(f64) -> String) -> String {
        let hw = (self.high - self.low) / 2.0;
        format!("{} (±{})", fmt(self.slope * per), fmt(hw * per))
    }
}

/// Fits `value = a + slope · x` to points with intervals (weighted least
/// squares, each point weighted by its interval; when the points scatter
/// more than their intervals say, the slope's interval widens by that
/// factor, with Student's t on n − 2 degrees of freedom). `material` is the
/// smallest change over the whole sweep, relative to its start, worth a
/// word (0.10 = 10%). `None` with fewer than two distinct x or a
/// non-positive value.
pub fn trend(points: &[(f64, Est)], material: f64) -> Option<Trend> {
    let pts: Vec<(f64, f64, f64)> = points
        .iter()
        .filter(|(x, e)| x.is_finite() && e.value.is_finite() && e.value > 0.0)
        .map(|(x, e)| {
            // Absolute 1-sigma from the log half-width; a point with no
            // interval gets 1% so it cannot take all the weight.
            let sigma = (e.value * e.log_half_width().max(0.01) / Z95).max(f64::MIN_POSITIVE);
            (*x, e.value, sigma)
        })
        .collect();
    let n = pts.len();
    let xmin = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xmax = pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    if n < 2 || xmax <= xmin {
        return None;
    }
    let w: Vec<f64> = pts.iter().map(|p| 1.0 / (p.2 * p.2)).collect();
    let sw: f64 = w.iter().sum();
    let xm = pts.iter().zip(&w).map(|(p, w)| w * p.0).sum::<f64>() / sw;
    let ym = pts.iter().zip(&w).map(|(p, w)| w * p.1).sum::<f64>() / sw;
    let sxx: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.0 - xm).powi(2))
        .sum();
    let sxy: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.0 - xm) * (p.1 - ym))
        .sum();
    let slope = sxy / sxx;
    let a = ym - slope * xm;
    let se_known = (1.0 / sxx).sqrt();
    let (se, mult) = if n > 2 {
        let chi2: f64 = pts
            .iter()
            .zip(&w)
            .map(|(p, w)| w * (p.1 - a - slope * p.0).powi(2))
            .sum();
        let birge = (chi2 / (n - 2) as f64).sqrt();
        if birge > 1.0 {
            (se_known * birge, t975((n - 2) as f64))
        } else {
            (se_known, Z95)
        }
    } else {
        (se_known, Z95)
    };
    let (low, high) = (slope - mult * se, slope + mult * se);
    let span = xmax - xmin;
    let start = a + slope * xmin;
    let reference = if start > 0.0 {
        start
    } else {
        pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min)
    };
    let change = |s: f64| s * span / reference;
    let kind = if low > 0.0 && change(slope) >= material {
        TrendKind::Grows
    } else if high < 0.0 && -change(slope) >= material {
        TrendKind::Falls
    } else if change(low).abs() < material && change(high).abs() < material {
        TrendKind::Flat
    } else {
        TrendKind::Unclear
    };
    Some(Trend {
        slope,
        low,
        high,
        start: reference,
        span,
        kind,
    })
}

/// Two modes of a distribution, when it has them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Modes {
    /// Median of the lower mode.
    pub low: f64,
    /// Median of the upper mode.
    pub high: f64,
    /// Share of the values in the upper mode.
    pub high_share: f64,
}

impl Modes {
    /// "bimodal: 1.2 µs (70%) or 31 µs (30%)", with `fmt` for the values.
    pub fn text(&self, fmt: impl Fn(f64) -> String) -> String {
        format!(
            "bimodal: {} ({:.0}%) or {} ({:.0}%)",
            fmt(self.low),
            (1.0 - self.high_share) * 100.0,
            fmt(self.high),
            self.high_share * 100.0
        )
    }
}

/// The two modes of `values` when they are well separated: at least 20
/// values, each mode with at least 10% of them, the upper at least twice
/// the lower with a gap wider than either mode's own spread
/// ([`crate::stats::is_bimodal`]). `None` for a one-mode distribution.
pub fn modes(values: &[f64]) -> Option<Modes> {
    if !crate::stats::is_bimodal(values) {
        return None;
    }
    let mut s: Vec<f64> = values.iter().copied().filter(|x| *x > 0.0).collect();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let edge = (n / 10).max(1);
    let split = (edge..=n - edge)
        .filter(|&i| i > 0 && i < n)
        .max_by(|&i, &j| (s[i] / s[i - 1]).total_cmp(&(s[j] / s[j - 1])))?;
    Some(Modes {
        low: quantile_sorted(&s[..split], 0.5),
        high: quantile_sorted(&s[split..], 0.5),
        high_share: (n - split) as f64 / n as f64,
    })
}

/// The two modes of a measurement's samples (batch times), when it has them.
pub fn sample_modes(m: &Measurement) -> Option<Modes> {
    modes(&m.samples)
}

/// True when the measurement timed each operation and their times have two
/// well-separated modes.
pub fn bimodal_per_op(m: &Measurement) -> bool {
    m.per_op.as_ref().is_some_and(|p| p.bimodal)
}

/// The 1-based ranks `(j, k)` of the order statistics that bracket the
/// `q` quantile of `n` values with 95% confidence, distribution-free: the
/// count of values below the true quantile is Binomial(n, q), and
/// `P(B < j) <= 2.5%`, `P(B >= k) <= 2.5%`. A side the sample is too small
/// to bound is `None` (e.g. the upper end of a p99 from fewer than ~370
/// values). Exact for n <= 5000, normal approximation beyond.
pub fn quantile_ranks(n: usize, q: f64) -> (Option<usize>, Option<usize>) {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return (None, None);
    }
    // cdf[i] = P(B <= i), i = 0..n.
    let cdf: Vec<f64> = if n <= 5000 {
        let (lq, lp) = (q.ln(), (1.0 - q).ln());
        let mut log_c = 0.0f64;
        let mut acc = 0.0;
        (0..=n)
            .map(|i| {
                if i > 0 {
                    log_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
                }
                let lpmf = log_c + i as f64 * lq + (n - i) as f64 * lp;
                let pmf = if lpmf.is_finite() { lpmf.exp() } else { 0.0 };
                acc += pmf;
                acc
            })
            .collect()
    } else {
        let (nf, sd) = (n as f64, (n as f64 * q * (1.0 - q)).sqrt().max(1e-9));
        (0..=n)
            .map(|i| normal_cdf((i as f64 + 0.5 - nf * q) / sd))
            .collect()
    };
    // Largest j >= 1 with P(B <= j - 1) <= 2.5%.
    let j = (1..=n).take_while(|&j| cdf[j - 1] <= 0.025).last();
    // Smallest k <= n with P(B <= k - 1) >= 97.5%.
    let k = (1..=n).find(|&k| cdf[k - 1] >= 0.975);
    (j, k)
}

/// The `q` quantile of `values` (e.g. a p99) with its distribution-free
/// 95% interval from [`quantile_ranks`]. A side the sample cannot bound is
/// open (low `f64::MIN_POSITIVE`, high infinite), so any comparison with
/// it is a tie: a p99 of 15 values says nothing about another's. `None`
/// with no positive finite value.
pub fn quantile_est(values: &[f64], q: f64, higher_is_better: bool) -> Option<Est<'static>> {
    let mut s: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let value = quantile_sorted(&s, q);
    let (j, k) = quantile_ranks(s.len(), q);
    Some(Est {
        value,
        low: j.map_or(f64::MIN_POSITIVE, |j| s[j - 1].min(value)),
        high: k.map_or(f64::INFINITY, |k| s[k - 1].max(value)),
        higher_is_better,
        source: None,
    })
}

/// True when both ends of an estimate's interval are bounded.
pub fn bounded(e: &Est) -> bool {
    e.high.is_finite() && e.low > f64::MIN_POSITIVE
}

/// Compares two estimates with a dead zone of `k` (> 1): better or worse
/// only when the whole interval of the speed ratio is at least `k` one way
/// or the other, a tie otherwise. For figures whose run-to-run spread is
/// wider than their intervals say (a tail, a wake-up-bound median), where
/// [`MATERIAL`] would let the word flip.
pub fn compare_beyond(a: &Est, b: &Est, k: f64) -> Verdict {
    let s = speedup(a, b);
    if s.at_least(k) {
        Verdict::Better(s)
    } else if s.at_most(1.0 / k) {
        Verdict::Worse(Ratio {
            ratio: 1.0 / s.ratio,
            low: 1.0 / s.high,
            high: 1.0 / s.low,
        })
    } else {
        Verdict::Tie(s)
    }
}

/// Ranks estimates into tiers split only at clear, wide gaps: sorted by
/// speed, a new tier starts where the next estimate is clearly slower than
/// the one before it (the ratio's interval excludes 1) by at least `k`
/// (the ratio itself, as [`Ratio::direction`] uses [`MATERIAL`]: a width
/// test on the interval would split or join with the rounds' luck).
/// Near-equal neighbours cannot move a boundary, so a set whose members
/// differ by less than `k` reads the same however noise orders them.
/// Members are listed in the caller's order; `leaders` are the fastest
/// (point estimate) of each tier.
pub fn rank_apart(items: &[Est], k: f64) -> Tiers {
    split_sorted(items, |gap| gap.low > 1.0 && gap.ratio >= k)
}

/// Ranks estimates into tiers split only where a gap is clearly `k` or
/// more: sorted by speed, a new tier starts where the whole interval of
/// the ratio between neighbours is at least `k` (as [`compare_beyond`]
/// orders two). [`rank_apart`] splits where the ratio itself reaches `k`,
/// so a set whose groups sit about `k` apart (a machine's copy methods in
/// three groups 1.25-1.3x apart) split one way in one run and another in
/// the next; here such a gap is a tie until its interval clears `k`.
pub fn rank_clearly_apart(items: &[Est], k: f64) -> Tiers {
    split_sorted(items, |gap| gap.low >= k)
}

/// Tiers of `items` sorted by speed, a new tier where `split` holds for
/// the ratio of a member's speed to the one before it; members listed in
/// the caller's order, leaders the fastest of each tier.
fn split_sorted(items: &[Est], split: impl Fn(&Ratio) -> bool) -> Tiers {
    let mut order: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].value.is_finite() && items[i].value > 0.0)
        .collect();
    order.sort_by(|&a, &b| items[b].speed().0.total_cmp(&items[a].speed().0));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (n, &i) in order.iter().enumerate() {
        if n == 0 || split(&speedup(&items[order[n - 1]], &items[i])) {
            groups.push(vec![i]);
        } else if let Some(g) = groups.last_mut() {
            g.push(i);
        }
    }
    let leaders = groups.iter().map(|g| g[0]).collect();
    let tiers = groups
        .into_iter()
        .map(|mut g| {
            g.sort_unstable();
            g
        })
        .collect();
    Tiers { tiers, leaders }
}

/// The tiers of [`rank_apart`] in words: "fastest: a and b; then c, d and
/// e (3.1× slower); then f (12× slower)", or "no clear 1.5× gap between
/// a, b and c" for one tier. The ratios are each tier's fastest against the
/// top tier's fastest.
pub fn tiers_apart_text(names: &[&str], items: &[Est], best: &str, k: f64) -> String {
    tiers_words(&rank_apart(items, k), names, items, best, k)
}

/// The tiers of [`rank_clearly_apart`] in words, as [`tiers_apart_text`] says them.
pub fn tiers_clearly_apart_text(names: &[&str], items: &[Est], best: &str, k: f64) -> String {
    tiers_words(&rank_clearly_apart(items, k), names, items, best, k)
}

/// Tiers `t` of a named set in words (see [`tiers_apart_text`]).
fn tiers_words(t: &Tiers, names: &[&str], items: &[Est], best: &str, k: f64) -> String {
    let group = |tier: &Vec<usize>| {
        let members: Vec<&str> = tier.iter().map(|&i| names[i]).collect();
        join_names(&members)
    };
    match t.tiers.len() {
        0 => String::new(),
        1 if t.tiers[0].len() == 1 => format!("{best}: {}", group(&t.tiers[0])),
        1 => format!("no clear {k}× gap between {}", group(&t.tiers[0])),
        _ => {
            let top = t.leaders[0];
            let mut parts = vec![format!("{best}: {}", group(&t.tiers[0]))];
            for (tier, &lead) in t.tiers.iter().zip(&t.leaders).skip(1) {
                let s = speedup(&items[top], &items[lead]);
                parts.push(format!(
                    "then {} ({} slower)",
                    group(tier),
                    crate::units::fmt_ratio(s.ratio)
                ));
            }
            parts.join("; ")
        }
    }
}

/// The set's estimates, each given the set's typical interval: the median
/// of their log half-widths, about each point. Rounds are few, so one
/// measurement's own interval is itself noisy (three rounds give two
/// degrees of freedom) while the typical width of a set measured side by
/// side is steady; ranking on the pooled width keeps a lucky narrow or an
/// unlucky wide interval from moving a tier boundary. Estimates with no
/// positive value are returned unchanged. Every one comes back detached
/// from its measurement ([`Est::detached`]): their ratios take the pooled
/// widths, not paired rounds (paired, words about sets flipped more on the
/// corpus).
pub fn with_typical_width(items: &[Est<'_>]) -> Vec<Est<'static>> {
    let mut hw: Vec<f64> = items
        .iter()
        .filter(|e| e.value.is_finite() && e.value > 0.0)
        .map(Est::log_half_width)
        .filter(|h| h.is_finite())
        .collect();
    if hw.is_empty() {
        return items.iter().map(|e| e.detached()).collect();
    }
    hw.sort_by(f64::total_cmp);
    let h = quantile_sorted(&hw, 0.5);
    items
        .iter()
        .map(|e| {
            if e.value.is_finite() && e.value > 0.0 {
                Est {
                    value: e.value,
                    low: e.value * (-h).exp(),
                    high: e.value * h.exp(),
                    higher_is_better: e.higher_is_better,
                    source: None,
                }
            } else {
                e.detached()
            }
        })
        .collect()
}

/// [`quantile_est`] with a side the sample cannot bound taken at the
/// sample's own extreme (its smallest or largest value) instead of left
/// open: the interval then says what was observed, not 95% of anything,
/// and suits a quantile near the end the runs are bounded by (the fast end
/// of a time, which interference only ever slows).
pub fn quantile_est_observed(
    values: &[f64],
    q: f64,
    higher_is_better: bool,
) -> Option<Est<'static>> {
    let e = quantile_est(values, q, higher_is_better)?;
    let finite = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
    let (min, max) = finite.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    Some(Est {
        low: if e.low > f64::MIN_POSITIVE {
            e.low
        } else {
            min.min(e.value)
        },
        high: if e.high.is_finite() {
            e.high
        } else {
            max.max(e.value)
        },
        ..e
    })
}

/// The fast end of a measurement with its interval: the 5th percentile of
/// its samples as measured ([`measured_samples`]) for a time, the 95th
/// for a rate. For properties of the hardware (cycles per instruction, a
/// cipher's speed) on a shared machine, where interference only ever
/// slows a sample down, this is the estimate that does not move with the
/// neighbours' load.
pub fn fast_end(m: &Measurement) -> Option<Est<'static>> {
    let hib = m.higher_is_better();
    quantile_est_observed(&measured_samples(m), if hib { 0.95 } else { 0.05 }, hib)
}

/// The samples of a measurement as they were measured: a slow round kept
/// in the estimate had its samples brought to the machine's fast phase
/// (`phase_factor`), a model that can overshoot (a benchmark that did not
/// slow down with the canary comes out faster than it ever ran); the fast
/// end needs no model, so the correction is undone. The samples are
/// those of the first used rounds whose counts add up to them (a
/// measurement pooled over runs lists this run's rounds first, then the
/// earlier runs'); the samples as stored when no such rounds account for
/// them.
pub fn measured_samples(m: &Measurement) -> Vec<f64> {
    let mut used: Vec<&super::Round> = Vec::new();
    let mut counted = 0;
    for r in m.rounds.iter().filter(|r| r.used) {
        if counted == m.samples.len() {
            break;
        }
        counted += r.n;
        used.push(r);
    }
    if counted != m.samples.len() || used.iter().all(|r| r.phase_factor.is_none()) {
        return m.samples.clone();
    }
    let hib = m.higher_is_better();
    let mut out = Vec::with_capacity(m.samples.len());
    let mut at = 0;
    for r in used {
        let f = r
            .phase_factor
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(1.0);
        // A corrected time was divided by f, a corrected rate multiplied.
        out.extend(
            m.samples[at..at + r.n]
                .iter()
                .map(|v| if hib { v / f } else { v * f }),
        );
        at += r.n;
    }
    out
}

/// The smallest ratio a ranking or comparison of a run's alternatives puts
/// a word to when its members are close: below it, "no clear gap". Three
/// rounds at the quick profile leave a result's run-to-run spread wider
/// than a 5% step, so a tier boundary or an order set at [`MATERIAL`]
/// moves between runs; 1.25× is where the spread of the quick profile's
/// medians (a few per cent to ~15% between runs on a shared guest) no
/// longer reaches.
pub const CLEAR_GAP: f64 = 1.25;

/// The typical width of the intervals of a run's results, per area: the
/// median of their log half-widths. Three rounds give an interval whose
/// own width varies about twofold from run to run (two degrees of freedom
/// behind its standard deviation), so a word decided on one result's own
/// interval flips with that luck; the median over the dozens of results
/// an area measured in the same interleaved rounds is steady. Findings
/// use it ([`Widths::est`]) to decide words; the results keep their own
/// intervals.
#[derive(Clone, Debug, Default)]
pub struct Widths(std::collections::BTreeMap<String, f64>);

impl Widths {
    /// The median log half-width of each area's results (those with a
    /// positive median and interval).
    pub fn of(ms: &[Measurement]) -> Widths {
        let mut by_area: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
        for m in ms {
            let h = Est::of(m).log_half_width();
            if m.median > 0.0 && h.is_finite() && h > 0.0 {
                by_area.entry(m.area.clone()).or_default().push(h);
            }
        }
        Widths(
            by_area
                .into_iter()
                .map(|(a, mut v)| {
                    v.sort_by(f64::total_cmp);
                    (a, quantile_sorted(&v, 0.5))
                })
                .collect(),
        )
    }

    /// `m`'s median with its area's typical interval (its own interval when
    /// the area has no width), detached from `m`: its ratios take the
    /// widths, not paired rounds (see [`with_typical_width`]).
    pub fn est(&self, m: &Measurement) -> Est<'static> {
        let e = Est::of(m);
        match self.0.get(&m.area) {
            Some(&h) if e.value > 0.0 => Est {
                value: e.value,
                low: e.value * (-h).exp(),
                high: e.value * h.exp(),
                higher_is_better: e.higher_is_better,
                source: None,
            },
            _ => e.detached(),
        }
    }
}

/// The words of a sentence: every number blanked to `#`, with the scaled
/// unit that follows it (`1.2 GB/s` and `950 MB/s` are one figure read at
/// two scales). A digit inside a name (`lz4`, `p99`, `x86_64`, `zstd-19`)
/// is part of the word. Two findings with the same words make the same claim.
pub fn words(text: &str) -> String {
    const UNITS: [&str; 27] = [
        "kop/s", "Mop/s", "Gop/s", "op/s", "kB/s", "MB/s", "GB/s", "TB/s", "B/s", "KiB", "MiB",
        "GiB", "TiB", "kHz", "MHz", "GHz", "Hz", "ns", "µs", "ms", "s", "B", "×", "%", "x",
        "Gbit/s", "Mbit/s",
    ];
    let chars: Vec<char> = text.chars().collect();
    let word_char = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // `lz4-1`, `zstd-19`: a digit after a hyphen that follows a word
        // is a name too.
        let after_name = i >= 2 && chars[i - 1] == '-' && word_char(chars[i - 2]);
        let starts_number =
            c.is_ascii_digit() && (i == 0 || !word_char(chars[i - 1])) && !after_name;
        if !starts_number {
            out.push(c);
            i += 1;
            continue;
        }
        while i < chars.len()
            && (chars[i].is_ascii_digit()
                || ((chars[i] == '.' || chars[i] == ',')
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
        {
            i += 1;
        }
        // The unit right after it (one space allowed), ending a word.
        let at = if chars.get(i) == Some(&' ') { i + 1 } else { i };
        let rest: String = chars[at.min(chars.len())..].iter().take(8).collect();
        if let Some(u) = UNITS.iter().find(|u| {
            rest.starts_with(**u) && rest[u.len()..].chars().next().is_none_or(|n| !word_char(n))
        }) {
            i = at + u.chars().count();
        }
        out.push('#');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(v: f64, rel: f64) -> Est<'static> {
        Est::cost(v, v * (1.0 - rel), v * (1.0 + rel))
    }

    fn rate(v: f64, rel: f64) -> Est<'static> {
        Est::new(v, v * (1.0 - rel), v * (1.0 + rel), true)
    }

    /// A deterministic pseudo-random stream in [0, 1).
    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A time per operation of `median` whose rounds began at `at` and
    /// measured `rounds`, each with its phase correction (a factor of 1.0
    /// is none).
    fn rounds_of(median: f64, at: &[f64], rounds: &[(f64, f64)]) -> Measurement {
        let mut m = Measurement::point("x.y", "ns/op", median);
        m.summary.ci_low = median * 0.5;
        m.summary.ci_high = median * 2.0;
        m.rounds = at
            .iter()
            .zip(rounds)
            .map(|(&at_s, &(median, f))| {
                serde_json::from_value(serde_json::json!({
                    "median": median, "n": 5, "ops": 1, "at_s": at_s,
                    "phase_factor": (f != 1.0).then_some(f),
                }))
                .unwrap()
            })
            .collect();
        m
    }

    #[test]
    fn rounds_pooled_from_runs_take_the_spread_of_the_runs_own_ratios() {
        // Two runs' rounds on the pooled clock (the earlier one a span
        // back): a/b is 0.5 in every round of one run and 0.6 in the
        // other's. The runs' mean ratios spread, over √2, replaces the
        // rows' own spread between runs (20% here, far wider).
        let back = POOLED_RUN_SPAN_S;
        let at = [0.5, 1.7, 2.9, 0.5 - back, 1.7 - back, 2.9 - back];
        let mut a = rounds_of(
            55.0,
            &at,
            &[(50.0, 1.0); 3]
                .into_iter()
                .chain([(60.0, 1.0); 3])
                .collect::<Vec<_>>(),
        );
        let mut b = rounds_of(100.0, &at, &[(100.0, 1.0); 6]);
        a.between_runs = Some(0.2);
        b.between_runs = Some(0.2);
        let hw = paired_log_half_width(&Est::of(&a), &Est::of(&b)).unwrap();
        let (d0, d1) = (0.5f64.ln(), 0.6f64.ln());
        let sd = (d1 - d0).abs() / 2f64.sqrt();
        let between = Z95 * sd / 2f64.sqrt();
        // The rounds' own interval: six log ratios, three of each run.
        let within = crate::stats::mean_half_width(&[d0, d0, d0, d1, d1, d1])
            .unwrap()
            .1;
        assert!((hw - within.hypot(between)).abs() < 1e-9, "{hw}");
        // Runs that agree: the floor.
        let b2 = rounds_of(
            110.0,
            &at,
            &[
                (100.0, 1.0),
                (100.0, 1.0),
                (100.0, 1.0),
                (120.0, 1.0),
                (120.0, 1.0),
                (120.0, 1.0),
            ],
        );
        let hw = paired_log_half_width(&Est::of(&a), &Est::of(&b2)).unwrap();
        assert!((hw - PAIRED_FLOOR).abs() < 1e-9, "{hw}");
    }

    #[test]
    fn rows_measured_in_the_same_rounds_take_the_interval_of_the_rounds_own_ratios() {
        // A state of the machine moves both rows of each round alike.
        let at = [0.5, 1.7, 2.9];
        let raw = rounds_of(107.0, &at, &[(107.0, 1.0), (132.0, 1.0), (107.0, 1.0)]);
        let inf = rounds_of(141.0, &at, &[(141.0, 1.0), (174.0, 1.0), (141.0, 1.0)]);
        let (a, b) = (Est::of(&inf), Est::of(&raw));
        let r = speedup(&b, &a);
        let floor = PAIRED_FLOOR.exp();
        assert!(
            r.low > r.ratio / floor - 0.01 && r.high < r.ratio * floor + 0.01,
            "{r}"
        );
        assert_eq!(r.direction(), Some(true));
        assert_eq!(Ratio::of(&a, &b).direction(), Some(true));
        // Measured apart (rounds that began at other instants): the two
        // intervals in quadrature, and no word.
        let apart = rounds_of(141.0, &[0.6, 1.8, 3.0], &[(141.0, 1.0); 3]);
        let r = speedup(&b, &Est::of(&apart));
        assert!(r.low < 1.0 && r.high > 2.0, "{r}");
        assert_eq!(r.direction(), None);
        // A derived estimate has no rounds to pair; a scaled one keeps them.
        assert!(Est::cost(141.0, 140.0, 142.0).source.is_none());
        assert!(paired_log_half_width(&a.scaled(2.0), &b).is_some());
        assert!(paired_log_half_width(&Est::cost(141.0, 140.0, 142.0), &b).is_none());
    }

    #[test]
    fn paired_rounds_use_the_medians_as_measured_and_rounds_that_disagree_widen() {
        let at = [0.5, 1.7, 2.9];
        // The slow second round was brought to the fast phase (its measured
        // 130 divided by 1.3): the pair is judged on what was measured.
        let a = rounds_of(100.0, &at, &[(100.0, 1.0), (100.0, 1.3), (100.0, 1.0)]);
        let b = rounds_of(200.0, &at, &[(200.0, 1.0), (260.0, 1.0), (200.0, 1.0)]);
        let r = Ratio::of(&Est::of(&b), &Est::of(&a));
        assert!(
            (r.high / r.low - PAIRED_FLOOR.exp().powi(2)).abs() < 1e-6,
            "{r}"
        );
        // Rounds whose own ratios scatter give a wide interval.
        let c = rounds_of(200.0, &at, &[(100.0, 1.0), (390.0, 1.0), (150.0, 1.0)]);
        let r = Ratio::of(&Est::of(&c), &Est::of(&a));
        assert!(r.low < 1.0, "{r}");
        // A time against a rate: the speeds' ratio pairs the product.
        let mut rate = rounds_of(
            1e9 / 200.0,
            &at,
            &[(5e6, 1.0), (5e6 / 1.3, 1.0), (5e6, 1.0)],
        );
        rate.unit = crate::units::BaseUnit::OpsPerSec;
        let r = speedup(&Est::of(&rate), &Est::of(&a));
        assert!(
            (r.high / r.low - PAIRED_FLOOR.exp().powi(2)).abs() < 1e-6,
            "{r}"
        );
        // Rows whose histories say they move between runs: that, not the floor.
        let (mut ha, mut hb) = (a.clone(), b.clone());
        ha.between_runs = Some(0.05);
        hb.between_runs = Some(0.05);
        let hw = paired_log_half_width(&Est::of(&hb), &Est::of(&ha)).unwrap();
        assert!((hw - Z95 * 0.05f64.hypot(0.05)).abs() < 1e-6, "{hw}");
        // One round in common is no pair.
        let d = rounds_of(200.0, &[0.5, 9.0, 9.5], &[(200.0, 1.0); 3]);
        assert!(paired_log_half_width(&Est::of(&d), &Est::of(&a)).is_none());
    }

    #[test]
    fn equal_measurements_never_produce_an_order() {
        let mut seed = 7;
        for _ in 0..1000 {
            // Two estimates of the same true value, each off by noise within
            // its own interval.
            let a = 100.0 * (1.0 + 0.04 * (lcg(&mut seed) - 0.5));
            let b = 100.0 * (1.0 + 0.04 * (lcg(&mut seed) - 0.5));
            assert!(compare(&cost(a, 0.03), &cost(b, 0.03)).is_tie());
            assert!(compare(&rate(a, 0.03), &rate(b, 0.03)).is_tie());
        }
    }

    #[test]
    fn a_two_fold_difference_with_tight_intervals_is_always_ordered() {
        match compare(&cost(100.0, 0.05), &cost(200.0, 0.05)) {
            Verdict::Better(r) => assert!((r.ratio - 2.0).abs() < 1e-9 && r.low > 1.0),
            v => panic!("{v:?}"),
        }
        match compare(&rate(100.0, 0.05), &rate(200.0, 0.05)) {
            Verdict::Worse(r) => assert!((r.ratio - 2.0).abs() < 1e-9),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_small_difference_is_a_tie_even_when_the_intervals_separate_it() {
        // 3% apart with ±0.5% intervals: real, but below MATERIAL.
        assert!(compare(&cost(100.0, 0.005), &cost(103.0, 0.005)).is_tie());
        // 2× apart but each ±80%: cannot tell.
        assert!(compare(&cost(100.0, 0.8), &cost(200.0, 0.8)).is_tie());
    }

    #[test]
    fn ratio_interval_combines_both_half_widths() {
        let r = Ratio::of(&cost(200.0, 0.0), &cost(100.0, 0.0));
        assert_eq!((r.ratio, r.low, r.high), (2.0, 2.0, 2.0));
        let r = Ratio::of(&cost(200.0, 0.1), &cost(100.0, 0.1));
        assert!(r.low < 2.0 && r.high > 2.0 && r.low > 1.6 && r.high < 2.5);
        assert!(r.text().starts_with("2.00× ("));
    }

    #[test]
    fn tiers_group_what_cannot_be_told_apart_in_the_given_order() {
        let names = ["pipe", "ring_spin", "unix_stream", "tcp"];
        // ring_spin clearly fastest; pipe and unix_stream equal; tcp slowest.
        let items = [
            cost(1000.0, 0.03),
            cost(300.0, 0.03),
            cost(990.0, 0.03),
            cost(5000.0, 0.03),
        ];
        let t = rank(&items);
        assert_eq!(t.tiers, vec![vec![1], vec![0, 2], vec![3]]);
        let text = tiers_text(&names, &items, "fastest");
        assert!(
            text.starts_with(
                "fastest: ring_spin; then pipe and unix_stream, within noise of each other ("
            ),
            "{text}"
        );
        assert!(text.contains("then tcp ("), "{text}");
        // Swapping the two equal ones' point estimates changes no word.
        let swapped = [
            cost(990.0, 0.03),
            cost(300.0, 0.03),
            cost(1000.0, 0.03),
            cost(5000.0, 0.03),
        ];
        let strip = |s: String| {
            s.chars()
                .filter(|c| !c.is_ascii_digit() && *c != '.')
                .collect::<String>()
        };
        assert_eq!(
            strip(tiers_text(&names, &swapped, "fastest")),
            strip(text.clone())
        );
    }

    #[test]
    fn one_tier_reads_as_no_clear_order() {
        let items = [rate(100.0, 0.05), rate(101.0, 0.05), rate(99.0, 0.05)];
        assert_eq!(
            tiers_text(&["a", "b", "c"], &items, "fastest"),
            "no clear order: a, b and c are within noise of each other"
        );
        assert_eq!(tiers_text(&["a"], &items[..1], "fastest"), "fastest: a");
    }

    #[test]
    fn a_flat_sweep_with_noise_never_grows() {
        let mut seed = 11;
        for _ in 0..500 {
            let pts: Vec<(f64, Est)> = (0..5)
                .map(|i| {
                    let v = 100.0 * (1.0 + 0.06 * (lcg(&mut seed) - 0.5));
                    ((i * 1000) as f64, cost(v, 0.04))
                })
                .collect();
            let t = trend(&pts, 0.10).expect("fits");
            assert!(
                matches!(t.kind, TrendKind::Flat | TrendKind::Unclear),
                "{t:?}"
            );
        }
    }

    #[test]
    fn a_clear_slope_grows_and_a_tight_flat_one_is_flat() {
        let pts: Vec<(f64, Est)> = (0..5)
            .map(|i| (i as f64, cost(100.0 + 50.0 * i as f64, 0.02)))
            .collect();
        let t = trend(&pts, 0.10).expect("fits");
        assert_eq!(t.kind, TrendKind::Grows);
        assert!((t.slope - 50.0).abs() < 1e-6, "{t:?}");
        assert!(
            t.slope_text(1.0, |v| format!("{v:.0}"))
                .starts_with("50 (±")
        );
        let pts: Vec<(f64, Est)> = (0..5).map(|i| (i as f64, cost(100.0, 0.01))).collect();
        let t = trend(&pts, 0.10).expect("fits");
        assert_eq!(t.kind, TrendKind::Flat);
        assert!(t.max_rel_change() < 0.10);
        let falling: Vec<(f64, Est)> = (0..4)
            .map(|i| (i as f64, cost(400.0 - 100.0 * i as f64, 0.02)))
            .collect();
        assert_eq!(trend(&falling, 0.10).unwrap().kind, TrendKind::Falls);
    }

    #[test]
    fn a_noisy_sweep_is_unclear_and_a_degenerate_one_is_none() {
        let pts = [(0.0, cost(100.0, 0.5)), (1.0, cost(130.0, 0.5))];
        assert_eq!(trend(&pts, 0.10).unwrap().kind, TrendKind::Unclear);
        assert!(trend(&pts[..1], 0.10).is_none());
        assert!(trend(&[(1.0, cost(1.0, 0.1)), (1.0, cost(2.0, 0.1))], 0.1).is_none());
    }

    #[test]
    fn a_two_mode_sample_is_named_bimodal_with_both_modes() {
        let mut v: Vec<f64> = (0..70).map(|i| 1000.0 + i as f64).collect();
        v.extend((0..30).map(|i| 30_000.0 + 10.0 * i as f64));
        let m = modes(&v).expect("bimodal");
        assert!((m.low - 1035.0).abs() < 2.0, "{m:?}");
        assert!((m.high - 30_145.0).abs() < 20.0, "{m:?}");
        assert!((m.high_share - 0.3).abs() < 1e-9);
        let text = m.text(|x| format!("{:.0}", x.round()));
        assert!(text.starts_with("bimodal: 103"), "{text}");
        assert!(
            text.contains(" (70%) or 3014") && text.ends_with(" (30%)"),
            "{text}"
        );
        let one: Vec<f64> = (0..100).map(|i| 1000.0 + i as f64).collect();
        assert!(modes(&one).is_none());
    }

    #[test]
    fn quantile_ranks_bracket_the_quantile() {
        // The median of 100: ranks 40 and 61 (the known distribution-free interval).
        assert_eq!(quantile_ranks(100, 0.5), (Some(40), Some(61)));
        // A p99 of 15 values has no upper bound, of 1000 it has.
        let (j, k) = quantile_ranks(15, 0.99);
        assert!(j.is_some() && k.is_none());
        let (j, k) = quantile_ranks(1000, 0.99);
        let (j, k) = (j.unwrap(), k.unwrap());
        assert!(j < 990 && j > 975 && k > 990 && k <= 1000, "{j} {k}");
        // The normal approximation agrees with the exact sum near the switch.
        let (a, b) = quantile_ranks(5000, 0.99);
        let (c, d) = quantile_ranks(5001, 0.99);
        assert!(a.unwrap().abs_diff(c.unwrap()) <= 2 && b.unwrap().abs_diff(d.unwrap()) <= 2);
        assert_eq!(quantile_ranks(0, 0.5), (None, None));
    }

    #[test]
    fn a_p99_from_few_values_cannot_be_compared() {
        let few: Vec<f64> = (1..=15).map(f64::from).collect();
        let e = quantile_est(&few, 0.99, false).unwrap();
        assert!(!bounded(&e) && e.high.is_infinite());
        let far: Vec<f64> = few.iter().map(|v| v * 1000.0).collect();
        let f = quantile_est(&far, 0.99, false).unwrap();
        assert!(compare(&e, &f).is_tie());
        // With 2000 values each, a 40-fold tail is ordered.
        let idle: Vec<f64> = (0..2000).map(|i| 50.0 + (i % 100) as f64).collect();
        let busy: Vec<f64> = idle
            .iter()
            .enumerate()
            .map(|(i, v)| if i % 20 == 0 { v * 40.0 } else { *v })
            .collect();
        let (a, b) = (
            quantile_est(&idle, 0.99, false).unwrap(),
            quantile_est(&busy, 0.99, false).unwrap(),
        );
        assert!(bounded(&a) && bounded(&b));
        assert!(matches!(compare(&a, &b), Verdict::Better(_)));
        assert!(quantile_est(&[], 0.99, false).is_none());
    }

    #[test]
    fn compare_beyond_needs_the_whole_interval_past_the_dead_zone() {
        // 1.16× with a tight interval: material by MATERIAL, not by 1.25.
        assert!(matches!(
            compare(&cost(100.0, 0.01), &cost(116.0, 0.01)),
            Verdict::Better(_)
        ));
        assert!(compare_beyond(&cost(100.0, 0.01), &cost(116.0, 0.01), 1.25).is_tie());
        match compare_beyond(&cost(300.0, 0.05), &cost(100.0, 0.05), 1.25) {
            Verdict::Worse(r) => assert!((r.ratio - 3.0).abs() < 1e-9 && r.low > 1.25),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn tiers_apart_split_only_at_clear_wide_gaps() {
        let names = ["a", "b", "c", "d"];
        // a and b 1.2× apart (clearly, but under 1.5×); c 3× slower; d like c.
        let items = [
            rate(1200.0, 0.02),
            rate(1000.0, 0.02),
            rate(330.0, 0.02),
            rate(340.0, 0.02),
        ];
        let t = rank_apart(&items, 1.5);
        assert_eq!(t.tiers, vec![vec![0, 1], vec![2, 3]]);
        let text = tiers_apart_text(&names, &items, "fastest", 1.5);
        assert!(
            text.starts_with("fastest: a and b; then c and d ("),
            "{text}"
        );
        // Swapping near-equal point estimates changes nothing.
        let swapped = [
            rate(1000.0, 0.02),
            rate(1200.0, 0.02),
            rate(340.0, 0.02),
            rate(330.0, 0.02),
        ];
        assert_eq!(rank_apart(&swapped, 1.5).tiers, t.tiers);
        assert_eq!(
            tiers_apart_text(&names[..2], &items[..2], "fastest", 1.5),
            "no clear 1.5× gap between a and b"
        );
        assert_eq!(
            tiers_apart_text(&names[..1], &items[..1], "fastest", 1.5),
            "fastest: a"
        );
    }

    #[test]
    fn tiers_clearly_apart_split_only_where_the_gaps_interval_clears_k() {
        // A machine's copy methods: three groups about 1.27x apart, each
        // member's interval ±7%. rank_apart splits on the ratio itself;
        // here the gaps' intervals reach below 1.25, so one tier, while a
        // group 1.7x below the rest is a tier of its own.
        let names = ["glibc", "nt", "plain"];
        let near = [rate(13.8, 0.07), rate(10.9, 0.07), rate(8.6, 0.07)];
        assert_eq!(rank_apart(&near, 1.25).tiers.len(), 3);
        assert_eq!(rank_clearly_apart(&near, 1.25).tiers, vec![vec![0, 1, 2]]);
        assert_eq!(
            tiers_clearly_apart_text(&names, &near, "fastest", 1.25),
            "no clear 1.25× gap between glibc, nt and plain"
        );
        let far = [rate(13.8, 0.07), rate(12.9, 0.07), rate(8.1, 0.07)];
        let t = rank_clearly_apart(&far, 1.25);
        assert_eq!(t.tiers, vec![vec![0, 1], vec![2]]);
        assert_eq!(
            tiers_clearly_apart_text(&names, &far, "fastest", 1.25),
            "fastest: glibc and nt; then plain (1.70× slower)"
        );
    }

    #[test]
    fn pooled_gives_every_member_the_typical_width() {
        let items = [cost(100.0, 0.5), cost(200.0, 0.01), cost(400.0, 0.1)];
        let p = with_typical_width(&items);
        let h = items[2].log_half_width();
        for (a, b) in p.iter().zip(&items) {
            assert_eq!(a.value, b.value);
            assert!((a.log_half_width() - h).abs() < 1e-12, "{a:?}");
        }
        assert!(with_typical_width(&[]).is_empty());
    }

    #[test]
    fn join_names_reads_as_english() {
        assert_eq!(join_names(&[]), "");
        assert_eq!(join_names(&["a"]), "a");
        assert_eq!(join_names(&["a", "b"]), "a and b");
        assert_eq!(join_names(&["a", "b", "c"]), "a, b and c");
    }

    #[test]
    fn a_quantile_interval_brackets_its_quantile_by_binomial_ranks() {
        // 15 values 1..=15: the 5th percentile's interval runs from the
        // smallest (too few values for a lower rank: open in quantile_est,
        // the sample's extreme here) to the 4th.
        let v: Vec<f64> = (1..=15).map(f64::from).collect();
        let e = quantile_est_observed(&v, 0.05, false).expect("values");
        assert_eq!((e.low, e.high), (1.0, 4.0), "{e:?}");
        let open = quantile_est(&v, 0.05, false).expect("values");
        assert!(!bounded(&open) && open.high == 4.0, "{open:?}");
        assert!((e.value - 1.7).abs() < 1e-9, "{e:?}");
        // The median of 100: ranks 40 and 61 (the textbook pair).
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let e = quantile_est_observed(&v, 0.5, false).unwrap();
        assert_eq!((e.low, e.high), (40.0, 61.0), "{e:?}");
        // A rate's fast end is its 95th percentile, higher being better.
        let e = quantile_est_observed(&v, 0.95, true).unwrap();
        assert!(e.higher_is_better && e.low < e.value && e.value <= e.high);
        assert!(e.high <= 100.0 && e.low >= 88.0, "{e:?}");
        // Large samples use the normal ranks and stay ordered.
        let v: Vec<f64> = (1..=5000).map(f64::from).collect();
        let e = quantile_est_observed(&v, 0.05, false).unwrap();
        assert!(
            e.low < e.value && e.value < e.high && e.high - e.low < 80.0,
            "{e:?}"
        );
        assert!(quantile_est_observed(&[], 0.5, false).is_none());
        assert!(quantile_est_observed(&[f64::NAN, -1.0], 0.5, false).is_none());
    }

    #[test]
    fn the_fast_end_ignores_a_slow_phase() {
        // Twelve fast samples and three slowed by a neighbour: the fast
        // end and its interval stay on the fast level.
        let mut v = vec![1.0; 12];
        v.extend([3.0, 3.1, 3.2]);
        let e = quantile_est_observed(&v, 0.05, false).unwrap();
        assert_eq!((e.value, e.low, e.high), (1.0, 1.0, 1.0));
    }

    #[test]
    fn the_fast_end_undoes_a_phase_correction() {
        // A rate measured at 100 in three rounds; the first round was called
        // slow and its samples raised by 1.3 although the benchmark never
        // slowed down: as measured, every sample is 100.
        let mut m = Measurement::point("a.b", "ops/s", 100.0);
        m.samples = vec![130.0, 130.0, 100.0, 100.0, 100.0, 100.0];
        m.rounds = (0..3)
            .map(|i| super::super::Round {
                n: 2,
                used: true,
                slow: i == 0,
                phase_factor: (i == 0).then_some(1.3),
                ..Default::default()
            })
            .collect();
        assert_eq!(measured_samples(&m), vec![100.0; 6]);
        let e = fast_end(&m).unwrap();
        assert!(
            (e.value - 100.0).abs() < 1e-9 && (e.high - 100.0).abs() < 1e-9,
            "{e:?}"
        );
        // A time: the corrected samples were divided by the factor.
        let mut t = Measurement::point("a.c", "ns/op", 10.0);
        t.samples = vec![10.0, 20.0];
        t.rounds = vec![
            super::super::Round {
                n: 1,
                used: true,
                phase_factor: Some(2.0),
                ..Default::default()
            },
            super::super::Round {
                n: 1,
                used: true,
                ..Default::default()
            },
        ];
        assert_eq!(measured_samples(&t), vec![20.0, 20.0]);
        // Pooled over runs: this run's rounds first, then an earlier
        // run's, which have no samples here.
        let mut pooled = t.clone();
        pooled.rounds.push(super::super::Round {
            n: 1,
            used: true,
            phase_factor: Some(3.0),
            ..Default::default()
        });
        assert_eq!(measured_samples(&pooled), vec![20.0, 20.0]);
        // Rounds that do not account for the samples leave them as stored.
        t.rounds.pop();
        assert_eq!(measured_samples(&t), vec![10.0, 20.0]);
    }

    #[test]
    fn an_area_width_is_the_median_of_its_results_and_keeps_each_point() {
        let m = |id: &str, v: f64, rel: f64| Measurement::within(id, "ns/op", v, rel);
        let ms = vec![
            m("p.a", 100.0, 0.02),
            m("p.b", 200.0, 0.04),
            m("p.c", 300.0, 0.60),
            m("q.a", 10.0, 0.10),
        ];
        let w = Widths::of(&ms);
        let e = w.est(&ms[2]);
        // The median of p's widths is b's (about 4%), whatever c's luck.
        assert_eq!(e.value, 300.0);
        assert!((e.log_half_width() - (1.04f64).ln()).abs() < 0.01, "{e:?}");
        // Another area keeps its own.
        let q = w.est(&ms[3]);
        assert!((q.log_half_width() - Est::of(&ms[3]).log_half_width()).abs() < 1e-12);
    }
}
