//! Comparing runs, benchmark by benchmark, with an interval that knows
//! how much the machine varies.
//!
//! Method. Each side is one run or several (`A1,A2,A3`). For a benchmark
//! present on both sides with the same unit:
//!
//! - The point estimate is the ratio of the sides' medians, `B / A` (a
//!   side of several runs: the geometric mean of their medians), in base
//!   units (for ns/op 2 is twice as slow, for B/s and ops/s twice as fast).
//! - Its 95% interval comes from the rounds, the top level of variation a
//!   run observes (each round has its own set-up, calibration and time
//!   slot, interleaved with other benchmarks across the run): Welch's t on
//!   the logarithms of the round medians of the two sides (several runs:
//!   all their rounds, so differences between runs widen it). That is the
//!   variation that decides whether two runs agree, which the samples of
//!   one round cannot see.
//! - Documents made before rounds fall back to a percentile bootstrap of
//!   the samples ([`BOOTSTRAP_RESAMPLES`] resamples, seeded from the id), or
//!   to the quotients of the stored CIs when the samples are missing.
//! - The noise floor: where the history holds earlier runs of the same host
//!   and profile with that benchmark (at least [`FLOOR_MIN_RUNS`]), the
//!   spread of their medians is how much the benchmark moves between runs
//!   on that machine; a change inside `1.96 · √2 · sd(log medians)` of it
//!   is no change.
//! - The verdict is about B relative to A, in time (throughputs and rates
//!   inverted first): *slower* when the whole interval lies above 1 and the
//!   time ratio exceeds `1 + max(threshold, floor)`, *faster* in mirror,
//!   otherwise the *same*. The threshold defaults to [`DEFAULT_THRESHOLD`].
//! - The summary of an area is the geometric mean of its time ratios: the
//!   one mean of ratios that does not depend on which side is called A.
//!   Its verdict has a noise floor of its own where the history has one:
//!   how far the host's runs put the area as a whole ([`area_floor`]).

use serde::Serialize;

use crate::document::RunDoc;
use crate::harness::canary::Stability;
use crate::harness::{BaseUnit, Measurement};
use crate::stats;

/// Resamples drawn for each bootstrap interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Fewest samples per side for the bootstrap; below it the stored CIs are used.
pub const MIN_BOOTSTRAP_SAMPLES: usize = 3;
/// Relative difference below which two results are the same (2%): the
/// smallest that kept the A/A false verdicts of real default pairs at or
/// under 5% (one run a side, no history; three pairs at 2%: 1.1, 4.0 and
/// 4.2% of rows; at 5%: 0.7, 3.5, 3.7%), while a 3% change went from
/// 3–5% of rows called to 31–37%. What calls A/A rows is a state that
/// lasts a whole run (every single-thread memory bandwidth 11–23% lower in
/// all of one run's rounds), which no threshold under ~20% keeps out.
pub const DEFAULT_THRESHOLD: f64 = 0.02;
/// Earlier runs of a host needed before their spread is used as the noise floor.
pub const FLOOR_MIN_RUNS: usize = 3;

/// B relative to A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// B takes less time (or moves more) than A, beyond noise and threshold.
    Faster,
    /// B takes more time (or moves less) than A, beyond noise and threshold.
    Slower,
    /// No difference beyond noise and threshold.
    Same,
}

impl Change {
    /// The word shown in tables.
    pub fn label(self) -> &'static str {
        match self {
            Change::Faster => "faster",
            Change::Slower => "slower",
            Change::Same => "same",
        }
    }
}

/// How a ratio's interval was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Welch's t on the log medians of the rounds of each side.
    Rounds,
    /// The same on the rounds as measured, the phase correction undone:
    /// both sides ran in a like mix of the machine's phases.
    RoundsAsMeasured,
    /// Student's t on the differences of paired rounds (`opcost ab`: round
    /// k of A and round k of B ran one after the other, so what the machine
    /// did in between falls on both and leaves the difference).
    PairedRounds,
    /// Percentile bootstrap on the samples.
    Bootstrap,
    /// Quotients of the stored CIs of the medians (samples missing).
    MedianCis,
}

/// One benchmark present in both runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The benchmark id.
    pub id: String,
    /// Its area.
    pub area: String,
    /// The base unit of `a` and `b`.
    pub unit: BaseUnit,
    /// Median in run A.
    pub a: f64,
    /// Median in run B.
    pub b: f64,
    /// `b / a`.
    pub ratio: f64,
    /// Lower bound of the 95% CI of the ratio.
    pub ci_low: f64,
    /// Upper bound of the 95% CI of the ratio.
    pub ci_high: f64,
    /// B relative to A.
    pub verdict: Change,
    /// How the interval was obtained.
    pub method: CiMethod,
    /// True when A's result was marked noisy.
    pub noisy_a: bool,
    /// True when B's result was marked noisy.
    pub noisy_b: bool,
    /// The run-to-run noise floor of this benchmark on A's host, relative
    /// (0.08 = 8%), when the history had enough earlier runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<f64>,
    /// The spread between runs that this row's family showed in this pair,
    /// relative (0.03 = 3%): how far its rows' log ratios scatter around
    /// their median beyond what their rounds explain ([`family_spreads`]),
    /// added to the interval. Only for one run a side without a noise floor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family_spread: Option<f64>,
    /// The spread between runs that whole conditions of this row's class
    /// showed in this pair, relative: how far the shared shifts of the
    /// conditions several families are measured at (`512B/cross`,
    /// `64B/cross`...) scatter beyond what their rounds explain
    /// ([`condition_spreads`]), added to the interval. Only for one run a
    /// side without a noise floor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition_spread: Option<f64>,
    /// Rounds behind A's and B's values (0 for documents made before rounds).
    pub rounds: (usize, usize),
    /// The minimal detectable effect: the smallest change in time, relative
    /// (0.04 = 4%), that this row could have called at 95% — the larger of
    /// its interval's half-width and the threshold (or noise floor) in
    /// force. A row called the same saw no change larger than this.
    pub mde: f64,
    /// Welch's squared standard error of the log ratio and its degrees of
    /// freedom, when the interval came from the rounds of one run a side.
    #[serde(skip)]
    welch: Option<(f64, f64)>,
}

impl Row {
    /// The ratio of times, B over A (the ratio inverted for throughputs and rates).
    pub fn time_ratio(&self) -> f64 {
        if !self.unit.higher_is_better() {
            self.ratio
        } else {
            1.0 / self.ratio
        }
    }

    /// The 95% interval of [`Row::time_ratio`].
    pub fn time_ci(&self) -> (f64, f64) {
        if !self.unit.higher_is_better() {
            (self.ci_low, self.ci_high)
        } else {
            (1.0 / self.ci_high, 1.0 / self.ci_low)
        }
    }
}

/// The summary of one area (or of everything).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The area, or `all`.
    pub area: String,
    /// Benchmarks compared.
    pub n: usize,
    /// Geometric mean of the time ratios B/A (below 1: B faster).
    pub geomean_time_ratio: f64,
    /// 95% interval of the geometric mean, its rows taken as samples of
    /// the area's change (Student's t on their log time ratios; one row:
    /// that row's interval).
    pub geomean_ci: (f64, f64),
    /// The area's verdict: faster or slower only when the interval of its
    /// geometric mean excludes 1 and the mean is beyond the threshold and
    /// the area's noise floor.
    pub verdict: Change,
    /// The run-to-run noise floor of the area's geometric mean on A's host
    /// ([`area_floor`], relative: 0.05 = 5%), when the history had enough
    /// earlier runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<f64>,
    /// Benchmarks where B is faster.
    pub faster: usize,
    /// Benchmarks where B is slower.
    pub slower: usize,
    /// Benchmarks that are the same within noise.
    pub same: usize,
    /// Benchmarks whose minimal detectable effect is at most
    /// [`SEE_REFERENCE`] (5%): rows that could have seen a 5% change.
    pub could_see: usize,
}

/// What makes `compare --fail-on` fail.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gate {
    /// Any row called slower by more than this (relative, 0.03 = 3%).
    Slower(f64),
    /// Any area (or all) whose geometric mean of time ratios is called
    /// slower (its interval above 1, the mean beyond the threshold) and is
    /// slower by more than this.
    Area(f64),
}

impl std::str::FromStr for Gate {
    type Err = String;
    /// `slower`, `slower:PCT`, `area` or `area:PCT` (PCT in percent; without
    /// it, 0: the comparison's own threshold decides).
    fn from_str(s: &str) -> Result<Gate, String> {
        let (kind, pct) = match s.split_once(':') {
            Some((k, p)) => {
                let v: f64 = p
                    .trim()
                    .trim_end_matches('%')
                    .parse()
                    .map_err(|_| format!("'{p}' is not a percentage (e.g. slower:3)"))?;
                if !(v.is_finite() && (0.0..1000.0).contains(&v)) {
                    return Err(format!("{v} is not between 0 and 1000"));
                }
                (k, v / 100.0)
            }
            None => (s, 0.0),
        };
        match kind {
            "slower" => Ok(Gate::Slower(pct)),
            "area" => Ok(Gate::Area(pct)),
            other => Err(format!(
                "'{other}' is not a gate: use slower[:PCT] or area[:PCT]"
            )),
        }
    }
}

/// What failed a gate: the rows slower beyond its limit, and the areas.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GateFailures {
    /// Indices into `rows` of the rows that failed a `slower` gate.
    pub rows: Vec<usize>,
    /// Indices into `summaries` of the areas that failed an `area` gate.
    pub areas: Vec<usize>,
}

impl GateFailures {
    /// True when nothing failed.
    pub fn passed(&self) -> bool {
        self.rows.is_empty() && self.areas.is_empty()
    }
}

impl Comparison {
    /// The rows and areas that fail any of `gates`.
    pub fn gate(&self, gates: &[Gate]) -> GateFailures {
        let mut f = GateFailures::default();
        for g in gates {
            match *g {
                Gate::Slower(pct) => {
                    for (i, r) in self.rows.iter().enumerate() {
                        if r.verdict == Change::Slower
                            && r.time_ratio() > 1.0 + pct
                            && !f.rows.contains(&i)
                        {
                            f.rows.push(i);
                        }
                    }
                }
                Gate::Area(pct) => {
                    for (i, s) in self.summaries.iter().enumerate() {
                        if s.verdict == Change::Slower
                            && s.geomean_time_ratio > 1.0 + pct
                            && !f.areas.contains(&i)
                        {
                            f.areas.push(i);
                        }
                    }
                }
            }
        }
        f
    }
}

/// The change a summary counts the rows able to see (5%).
pub const SEE_REFERENCE: f64 = 0.05;

/// A benchmark that cannot be compared although both runs have it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Incomparable {
    /// The benchmark id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// Two runs side by side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Run A: id, host, label.
    pub a: RunRef,
    /// Run B: id, host, label.
    pub b: RunRef,
    /// The threshold used for verdicts (0.05 = 5%).
    pub threshold: f64,
    /// Benchmarks in both runs, in A's order.
    pub rows: Vec<Row>,
    /// Per area, in A's order, then `all` when there are several areas.
    pub summaries: Vec<Summary>,
    /// Benchmark ids only in A.
    pub only_a: Vec<String>,
    /// Benchmark ids only in B.
    pub only_b: Vec<String>,
    /// In both but not comparable (different units, a zero median...).
    pub incomparable: Vec<Incomparable>,
    /// Every run of side A (the first is `a`).
    pub a_runs: Vec<RunRef>,
    /// Every run of side B (the first is `b`).
    pub b_runs: Vec<RunRef>,
    /// Earlier runs of A's host whose spread gave noise floors (0: none used).
    pub floor_runs: usize,
    /// The machine's own speed in B relative to A when every run is of one
    /// host: the ratio of the geometric means of the runs' stability
    /// canaries (1.15 = the canary took 15% longer in B). `None` across
    /// hosts or without canaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_shift: Option<f64>,
    /// Share of the CPUs other programs used while the runs of A and of B
    /// went on (means over each side's runs), when every run recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub others_share: Option<[f64; 2]>,
    /// The run settings that differ between the first run of A and the
    /// first run of B (environment variables, wrapper, cgroup limits,
    /// CPUs, scheduling: [`crate::host::Settings::differences`]); empty
    /// when either did not record them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings_changes: Vec<crate::host::SettingChange>,
    /// B's time over A's over every row ([`whole_shift`]) when the runs are
    /// of one host and every area moved the same way (1.2 = B took 20%
    /// longer everywhere); `None` otherwise and in `ab`'s paired rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole_shift: Option<f64>,
    /// The kernel canary of B over A's ([`crate::harness::canary::kernel_check`],
    /// geometric means over each side's runs; 0.85 = system calls took 15%
    /// less time in B) when every run is of one host and one kernel (its
    /// release, version and command line) and recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_shift: Option<f64>,
}

impl Comparison {
    /// The machine shift when it exceeds what the canary calls a slow
    /// phase: the host ran in a different phase in A and B.
    pub fn phase_changed(&self) -> Option<f64> {
        self.machine_shift
            .filter(|s| s.ln().abs() > crate::harness::canary::SLOW_PHASE.ln())
    }

    /// The runs that are on both sides (the same run id in A and in B):
    /// their ratios compare a run with itself, and the intervals, made for
    /// independent sides, say nothing about them.
    pub fn shared_runs(&self) -> Vec<&str> {
        self.a_runs
            .iter()
            .filter(|a| self.b_runs.iter().any(|b| b.id == a.id))
            .map(|a| a.id.as_str())
            .collect()
    }

    /// The kernel canary's shift when it exceeds what the stability canary
    /// calls a slow phase: the machine's system calls ran at another speed
    /// in A and B, on one kernel.
    pub fn kernel_changed(&self) -> Option<f64> {
        self.kernel_shift
            .filter(|s| s.ln().abs() > crate::harness::canary::SLOW_PHASE.ln())
    }

    /// Other programs' share of the CPUs on each side, when one side shared
    /// the machine with them by at least [`BUSIER`] more than the other.
    pub fn load_changed(&self) -> Option<[f64; 2]> {
        self.others_share.filter(|[a, b]| (b - a).abs() >= BUSIER)
    }

    /// Other programs' share of the CPUs on each side, when both sides
    /// shared the machine with them (each at least the share a run calls
    /// shared) and neither was busier by [`BUSIER`].
    pub fn both_shared(&self) -> Option<[f64; 2]> {
        use crate::harness::canary::BUSY_SHARE;
        let busy = |[a, b]: &[f64; 2]| a.min(*b) >= BUSY_SHARE;
        self.others_share
            .filter(busy)
            .filter(|_| self.load_changed().is_none())
    }

    /// Of the rows called faster or slower, how many were measured on
    /// several CPUs at once ([`on_several_cpus`]), and how many in all.
    pub fn called_on_several_cpus(&self) -> (usize, usize) {
        let called = self.rows.iter().filter(|r| r.verdict != Change::Same);
        called.fold((0, 0), |(several, all), r| {
            (several + usize::from(on_several_cpus(&r.id)), all + 1)
        })
    }
}

/// True for a benchmark measured on several CPUs at once: a pair across
/// CPUs (`ipc.pipe.tput/64B/cross`) or bandwidth on more than one thread
/// (`memory.bandwidth.copy/threads=all`). Other programs on the machine
/// take whole CPUs from such a row, not only batches of its samples.
pub fn on_several_cpus(id: &str) -> bool {
    condition(id).is_some_and(|c| {
        c.split('/')
            .any(|part| part == "cross" || part.strip_prefix("threads=").is_some_and(|n| n != "1"))
    })
}

/// A difference in other programs' share of the CPUs between the sides
/// from which compare says that one side ran on a busier machine.
pub const BUSIER: f64 = 0.25;

/// The mean share of the CPUs other programs used during a side's runs.
fn others_share(side: &[RunDoc]) -> Option<f64> {
    let shares: Vec<f64> = side
        .iter()
        .map(|d| d.stability.as_ref()?.others_share)
        .collect::<Option<_>>()?;
    (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64)
}

/// Fewest areas, each of at least [`WHOLE_MIN_ROWS`] rows, that must all
/// have moved the same way before compare says the whole run moved.
pub const WHOLE_MIN_AREAS: usize = 3;

/// Fewest rows an area needs to count towards [`WHOLE_MIN_AREAS`].
pub const WHOLE_MIN_ROWS: usize = 5;

/// The shift of the whole run: the geometric mean of every row's time
/// ratio, when every run is of one host and at least [`WHOLE_MIN_AREAS`]
/// areas of [`WHOLE_MIN_ROWS`] rows or more were each called faster (or
/// each slower) as a whole, none of them the other way or the same.
///
/// A shared machine's state can hold for a whole run and move everything
/// it measures alike: two runs of one binary on a guest whose system
/// calls, IPC, process creation and memory all ran 1.15-1.23x faster in
/// the second, while the stability canary (arithmetic on one core) read
/// the same. No run's rounds see such a state, and one run a side cannot
/// tell it from a change that reaches every area, so it is named, not
/// taken out of the rows. `None` for `ab`'s paired rounds, where both
/// sides share the machine's states.
fn whole_shift(a: &[RunDoc], b: &[RunDoc], summaries: &[Summary], paired: bool) -> Option<f64> {
    let host = &a.first()?.host.hostname;
    if paired || a.iter().chain(b).any(|d| &d.host.hostname != host) {
        return None;
    }
    let areas: Vec<&Summary> = summaries
        .iter()
        .filter(|s| s.area != "all" && s.n >= WHOLE_MIN_ROWS)
        .collect();
    let way = areas.first()?.verdict;
    if areas.len() < WHOLE_MIN_AREAS
        || way == Change::Same
        || areas.iter().any(|s| s.verdict != way)
    {
        return None;
    }
    summaries
        .iter()
        .find(|s| s.area == "all")
        .map(|s| s.geomean_time_ratio)
}

/// B's kernel canary over A's (geometric means over each side's runs),
/// when every run is of one host and one kernel and recorded one.
fn kernel_shift(a: &[RunDoc], b: &[RunDoc]) -> Option<f64> {
    let first = a.first()?;
    if a.iter()
        .chain(b)
        .any(|d| d.host.hostname != first.host.hostname || d.host.kernel != first.host.kernel)
    {
        return None;
    }
    let kernel = |s: &Stability| s.kernel_canary_ns;
    Some(canary_geomean(b, kernel)? / canary_geomean(a, kernel)?)
}

/// The geometric mean over a side's runs of a canary figure of their
/// stability (`figure`); `None` when a run lacks it or it is not positive.
fn canary_geomean(side: &[RunDoc], figure: impl Fn(&Stability) -> Option<f64>) -> Option<f64> {
    let logs = side
        .iter()
        .map(|d| {
            let v = figure(d.stability.as_ref()?)?;
            (v > 0.0).then(|| v.ln())
        })
        .collect::<Option<Vec<f64>>>()?;
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// B's canary over A's (geometric means over each side's runs), when
/// every run is of one host and has a canary of the same kind (a
/// user-space canary is not compared with an older one that made system
/// calls).
fn machine_shift(a: &[RunDoc], b: &[RunDoc]) -> Option<f64> {
    let first = a.first()?;
    let kind = |d: &RunDoc| d.stability.as_ref().map(|s| s.user_canary);
    if a.iter()
        .chain(b)
        .any(|d| d.host.hostname != first.host.hostname || kind(d) != kind(first))
    {
        return None;
    }
    let cpu = |s: &Stability| Some(s.canary_ns);
    Some(canary_geomean(b, cpu)? / canary_geomean(a, cpu)?)
}

/// Which run a side of a comparison is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRef {
    /// The run id.
    pub id: String,
    /// The host name.
    pub host: String,
    /// The user's label.
    pub label: Option<String>,
    /// Start time.
    pub started: String,
    /// True for a run that did not end (its results are those it had).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

impl RunRef {
    /// Identifies the run of a document.
    pub fn of(doc: &RunDoc) -> RunRef {
        RunRef {
            id: doc.run.id.clone(),
            host: doc.host.hostname.clone(),
            label: doc.run.label.clone(),
            started: doc.run.started.clone(),
            incomplete: doc.run.incomplete,
        }
    }

    /// `id on host (label)`, and `incomplete` for a run that did not end.
    pub fn describe(&self) -> String {
        let mut s = match &self.label {
            Some(l) => format!("{} on {} ({l})", self.id, self.host),
            None => format!("{} on {}", self.id, self.host),
        };
        if self.incomplete {
            s.push_str(", incomplete");
        }
        s
    }
}

/// Compares run B with run A over the benchmarks matching `patterns` (all
/// when empty). `threshold` is the smallest relative difference called one.
pub fn compare(a: &RunDoc, b: &RunDoc, patterns: &[String], threshold: f64) -> Comparison {
    compare_sides(
        std::slice::from_ref(a),
        std::slice::from_ref(b),
        patterns,
        threshold,
        &[],
    )
}

/// Compares side B (one or more runs) with side A over the benchmarks
/// matching `patterns`; `history` holds earlier runs of A's host whose
/// spread is the noise floor (see the module doc). Both sides must hold at
/// least one run.
pub fn compare_sides(
    a: &[RunDoc],
    b: &[RunDoc],
    patterns: &[String],
    threshold: f64,
    history: &[RunDoc],
) -> Comparison {
    compare_with(a, b, patterns, threshold, history, false)
}

/// Compares the two sides of `opcost ab`, one run each whose rounds were
/// measured in pairs (round k of A next to round k of B): each row's
/// interval comes from the differences of its paired rounds
/// ([`CiMethod::PairedRounds`]), where both sides have the same number of
/// used rounds, else as [`compare_sides`] does.
pub fn compare_paired(a: &RunDoc, b: &RunDoc, threshold: f64) -> Comparison {
    compare_with(
        std::slice::from_ref(a),
        std::slice::from_ref(b),
        &[],
        threshold,
        &[],
        true,
    )
}

fn compare_with(
    a: &[RunDoc],
    b: &[RunDoc],
    patterns: &[String],
    threshold: f64,
    history: &[RunDoc],
    paired: bool,
) -> Comparison {
    let selected =
        |id: &str| patterns.is_empty() || patterns.iter().any(|p| crate::pattern::matches(p, id));
    let ids_of = |side: &[RunDoc]| {
        let mut ids: Vec<String> = Vec::new();
        for d in side {
            for m in d.results.iter().filter(|m| selected(&m.id)) {
                if !ids.contains(&m.id) {
                    ids.push(m.id.clone());
                }
            }
        }
        ids
    };
    let side_of = |side: &'_ [RunDoc], id: &str| -> Vec<Measurement> {
        side.iter()
            .filter_map(|d| d.results.iter().find(|m| m.id == id).cloned())
            .collect()
    };
    let (a_ids, b_ids) = (ids_of(a), ids_of(b));
    let mut rows = Vec::new();
    let mut only_a = Vec::new();
    let mut incomparable = Vec::new();
    let mut floor_runs = 0;
    for id in &a_ids {
        if !b_ids.contains(id) {
            only_a.push(id.clone());
            continue;
        }
        let floor_ms = side_of(history, id);
        let floor = noise_floor(&floor_ms);
        if floor.is_some() {
            floor_runs = floor_runs.max(floor_ms.len());
        }
        match compare_one_sides(&side_of(a, id), &side_of(b, id), threshold, floor, paired) {
            Ok(row) => rows.push(row),
            Err(reason) => incomparable.push(Incomparable {
                id: id.clone(),
                reason,
            }),
        }
    }
    widen_between_runs(&mut rows, threshold);
    let only_b = b_ids
        .iter()
        .filter(|id| !a_ids.contains(id))
        .cloned()
        .collect();
    let mut areas: Vec<String> = Vec::new();
    for r in &rows {
        if !areas.contains(&r.area) {
            areas.push(r.area.clone());
        }
    }
    let summary = |area: &str, of_area: &dyn Fn(&Row) -> bool| {
        let ids: Vec<&str> = rows
            .iter()
            .filter(|r| of_area(r))
            .map(|r| r.id.as_str())
            .collect();
        let floor = area_floor(history, &ids);
        summarise(area, rows.iter().filter(|r| of_area(r)), threshold, floor)
    };
    let mut summaries: Vec<Summary> = areas
        .iter()
        .map(|area| summary(area, &|r: &Row| &r.area == area))
        .collect();
    if areas.len() > 1 {
        summaries.push(summary("all", &|_: &Row| true));
    }
    let refs = |side: &[RunDoc]| side.iter().map(RunRef::of).collect::<Vec<_>>();
    let (a_runs, b_runs) = (refs(a), refs(b));
    let whole_shift = whole_shift(a, b, &summaries, paired);
    Comparison {
        a: a_runs[0].clone(),
        b: b_runs[0].clone(),
        threshold,
        rows,
        summaries,
        only_a,
        only_b,
        incomparable,
        a_runs,
        b_runs,
        floor_runs,
        machine_shift: machine_shift(a, b),
        others_share: others_share(a).zip(others_share(b)).map(|(a, b)| [a, b]),
        settings_changes: crate::host::Settings::differences(
            &a[0].host.settings,
            &b[0].host.settings,
        ),
        whole_shift,
        kernel_shift: kernel_shift(a, b),
    }
}

/// The run-to-run noise floor of one benchmark from its results in earlier
/// runs of a host: `1.96 · √2 · sd(log median)`, the 95% range of the
/// difference between two runs; `None` with fewer than [`FLOOR_MIN_RUNS`].
pub fn noise_floor(earlier: &[Measurement]) -> Option<f64> {
    if earlier.len() < FLOOR_MIN_RUNS {
        return None;
    }
    let medians: Vec<f64> = earlier.iter().map(|m| m.median).collect();
    floor_of(&medians)
}

/// `1.96 · √2 · sd` of the logs of `values` (one per run), as a relative
/// change: the 95% range of the difference between two runs.
fn floor_of(values: &[f64]) -> Option<f64> {
    let (_, var) = stats::log_mean_var(values)?;
    Some((stats::Z95 * (2.0 * var).sqrt()).exp() - 1.0)
}

/// The run-to-run noise floor of an area's geometric mean of time ratios
/// (the area of the benchmarks `ids`) from earlier runs of a host: each
/// benchmark's log time in a run less its mean over the runs that have it
/// (benchmarks in at least [`FLOOR_MIN_RUNS`] runs), averaged over the
/// benchmarks of each run, is where that run put the area as a whole; the
/// floor is `1.96 · √2 · sd` of those levels, the 95% range of the
/// difference between two runs, as a row's. `None` with fewer than
/// [`FLOOR_MIN_RUNS`] runs.
///
/// States of a shared machine that last a whole run move every benchmark of
/// an area at once (memory's 145 rows 5% apart between two quick runs of
/// one binary, while their rounds agreed): the area's interval, its rows
/// taken as samples of its change, cannot see them, and the host's history can.
pub fn area_floor(history: &[RunDoc], ids: &[&str]) -> Option<f64> {
    let mut levels = vec![(0.0, 0usize); history.len()];
    for id in ids {
        let logs: Vec<(usize, f64)> = history
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                let m = d.results.iter().find(|m| m.id == *id)?;
                let time = if m.higher_is_better() {
                    1.0 / m.median
                } else {
                    m.median
                };
                (time > 0.0 && time.is_finite()).then(|| (i, time.ln()))
            })
            .collect();
        if logs.len() < FLOOR_MIN_RUNS {
            continue;
        }
        let mean = logs.iter().map(|(_, l)| l).sum::<f64>() / logs.len() as f64;
        for (i, l) in logs {
            levels[i].0 += l - mean;
            levels[i].1 += 1;
        }
    }
    let levels: Vec<f64> = levels
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(sum, n)| (sum / *n as f64).exp())
        .collect();
    if levels.len() < FLOOR_MIN_RUNS {
        return None;
    }
    floor_of(&levels)
}

/// Compares one benchmark of two single runs; the error says why it cannot be compared.
pub fn compare_one(a: &Measurement, b: &Measurement, threshold: f64) -> Result<Row, String> {
    compare_one_sides(
        std::slice::from_ref(a),
        std::slice::from_ref(b),
        threshold,
        None,
        false,
    )
}

/// The log medians of the used rounds of every run of a side: as stored,
/// or as measured (a slow round's phase correction undone).
fn round_logs(side: &[Measurement], measured: bool) -> Vec<f64> {
    side.iter()
        .flat_map(|m| {
            let up = m.unit.higher_is_better();
            m.rounds.iter().filter(|r| r.used).map(move |r| {
                match r.phase_factor.filter(|f| measured && *f > 0.0) {
                    Some(f) if up => r.median / f,
                    Some(f) => r.median * f,
                    None => r.median,
                }
            })
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(f64::ln)
        .collect()
}

/// Largest difference between the sides' shares of slow rounds (among
/// their used rounds) at which they count as having run in a like mix of
/// the machine's phases. Then the phase falls on both sides alike, and the
/// rounds are compared as measured: correcting them would only add the
/// error of the correction's slope, which moves every corrected round of a
/// run the same way (on a host where 60–90% of rounds ran slow, 8 default
/// A/A pairs judged this way called a median 3.4% of results changed,
/// against 10.1% with the corrected rounds and 5.6% with the measured ones
/// throughout; 5 quick pairs: 1.1%, 2.2%, 3.4%; the threshold was chosen
/// on those pairs). When the mixes differ more, the correction is what
/// makes the sides comparable.
pub const LIKE_PHASE_MIX: f64 = 0.5;

/// A side's share of slow rounds among its used rounds, and whether any
/// of them was corrected for the phase.
fn phase_mix(side: &[Measurement]) -> (f64, bool) {
    let used: Vec<_> = side
        .iter()
        .flat_map(|m| &m.rounds)
        .filter(|r| r.used)
        .collect();
    let slow = used.iter().filter(|r| r.slow).count();
    let corrected = used.iter().any(|r| r.phase_factor.is_some());
    (slow as f64 / used.len().max(1) as f64, corrected)
}

/// The value of a side: its one median, or the geometric mean of several.
fn side_value(side: &[Measurement]) -> f64 {
    let logs: f64 = side.iter().map(|m| m.median.ln()).sum();
    (logs / side.len() as f64).exp()
}

/// Welch's squared standard error of `mean(lb) - mean(la)` and its
/// degrees of freedom; `None` without two values a side.
fn welch(la: &[f64], lb: &[f64]) -> Option<(f64, f64)> {
    let var = |x: &[f64]| {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)
    };
    if la.len() < 2 || lb.len() < 2 {
        return None;
    }
    let (va, vb) = (var(la) / la.len() as f64, var(lb) / lb.len() as f64);
    let se2 = va + vb;
    if se2 == 0.0 {
        return Some((0.0, f64::INFINITY));
    }
    let df =
        se2.powi(2) / (va.powi(2) / (la.len() as f64 - 1.0) + vb.powi(2) / (lb.len() as f64 - 1.0));
    Some((se2, df))
}

/// The 95% interval of a ratio whose log has squared standard error
/// `se2` with `df` degrees of freedom.
fn ratio_ci(ratio: f64, se2: f64, df: f64) -> (f64, f64) {
    if se2 == 0.0 {
        return (ratio, ratio);
    }
    let hw = stats::t975(df) * se2.sqrt();
    (ratio * (-hw).exp(), ratio * hw.exp())
}

/// Student's 95% interval of `exp(mean(lb_k - la_k))` for paired log
/// values, centred on `ratio`; `None` without at least two pairs.
fn paired_ratio_ci(la: &[f64], lb: &[f64], ratio: f64) -> Option<(f64, f64)> {
    if la.len() != lb.len() {
        return None;
    }
    let d: Vec<f64> = la.iter().zip(lb).map(|(x, y)| y - x).collect();
    let (_, hw) = stats::mean_half_width(&d)?;
    Some((ratio * (-hw).exp(), ratio * hw.exp()))
}

/// Compares one benchmark of two sides (each one or more runs).
fn compare_one_sides(
    a: &[Measurement],
    b: &[Measurement],
    threshold: f64,
    floor: Option<f64>,
    paired: bool,
) -> Result<Row, String> {
    let (a0, b0) = (&a[0], &b[0]);
    if let Some(m) = a.iter().chain(b).find(|m| m.unit != a0.unit) {
        return Err(format!("unit {} in A, {} in B", a0.unit, m.unit));
    }
    let positive = |m: &Measurement| m.median > 0.0 && m.median.is_finite();
    if !a.iter().chain(b).all(positive) {
        return Err("a median is zero, negative or not finite".to_string());
    }
    let (mut va, mut vb) = (side_value(a), side_value(b));
    let (mix_a, mix_b) = (phase_mix(a), phase_mix(b));
    // Like mixes of phases, and a correction to undo: compare the rounds as
    // measured, each side's value their geometric mean (the centre of the
    // Welch interval on them).
    let as_measured = (mix_a.1 || mix_b.1) && (mix_a.0 - mix_b.0).abs() <= LIKE_PHASE_MIX;
    let (la, lb) = (round_logs(a, as_measured), round_logs(b, as_measured));
    if as_measured && la.len() >= 2 && lb.len() >= 2 {
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        va = mean(&la).exp();
        vb = mean(&lb).exp();
    }
    let ratio = vb / va;
    let usable = |s: &[f64]| s.len() >= MIN_BOOTSTRAP_SAMPLES && s.iter().all(|x| x.is_finite());
    let pairs = (paired && a.len() == 1 && b.len() == 1 && la.len() == lb.len())
        .then(|| paired_ratio_ci(&la, &lb, ratio))
        .flatten();
    let welch = welch(&la, &lb).filter(|_| pairs.is_none());
    let (ci_low, ci_high, method) = if let Some((lo, hi)) = pairs {
        (lo, hi, CiMethod::PairedRounds)
    } else if let Some((lo, hi)) = welch.map(|(se2, df)| ratio_ci(ratio, se2, df)) {
        let m = if as_measured {
            CiMethod::RoundsAsMeasured
        } else {
            CiMethod::Rounds
        };
        (lo, hi, m)
    } else if a.len() == 1 && b.len() == 1 && usable(&a0.samples) && usable(&b0.samples) {
        let (lo, hi) = bootstrap_ratio_ci(&a0.samples, &b0.samples, seed_of(&a0.id));
        (lo, hi, CiMethod::Bootstrap)
    } else if a0.ci_low > 0.0 && a0.ci_high > 0.0 {
        (
            b0.ci_low / a0.ci_high,
            b0.ci_high / a0.ci_low,
            CiMethod::MedianCis,
        )
    } else {
        (ratio, ratio, CiMethod::MedianCis)
    };
    // The interval always contains the point estimate.
    let (ci_low, ci_high) = (ci_low.min(ratio), ci_high.max(ratio));
    let limit = threshold.max(floor.unwrap_or(0.0));
    let t_df = match method {
        CiMethod::Rounds | CiMethod::RoundsAsMeasured => welch.map(|(_, df)| df),
        _ => None,
    };
    let mde = mde(ratio, (ci_low, ci_high), threshold, floor, t_df);
    let (t, t_lo, t_hi) = if a0.unit.higher_is_better() {
        (1.0 / ratio, 1.0 / ci_high, 1.0 / ci_low)
    } else {
        (ratio, ci_low, ci_high)
    };
    Ok(Row {
        id: a0.id.clone(),
        area: a0.area.clone(),
        unit: a0.unit,
        a: va,
        b: vb,
        ratio,
        ci_low,
        ci_high,
        verdict: verdict(t, t_lo, t_hi, limit),
        method,
        noisy_a: a.iter().any(|m| m.noisy),
        noisy_b: b.iter().any(|m| m.noisy),
        noise_floor: floor,
        family_spread: None,
        condition_spread: None,
        rounds: (la.len(), lb.len()),
        mde,
        welch: welch.filter(|_| a.len() == 1 && b.len() == 1 && floor.is_none()),
    })
}

/// Fewest rows of a family in a pair before their scatter is read as the
/// family's spread between runs.
pub const FAMILY_MIN_ROWS: usize = 6;

/// The median of the chi-square distribution with one degree of freedom:
/// the median of `(z - m)²` is `0.4549 σ²` for normal `z` of spread `σ`.
const CHI2_1_MEDIAN: f64 = 0.454_936_4;

/// A benchmark's family: the first two parts of its id (`net.veth`,
/// `memory.latency`, `syscall.io`).
pub fn family(id: &str) -> &str {
    match id.match_indices('.').nth(1) {
        Some((i, _)) => &id[..i],
        None => id,
    }
}

/// The spread between runs of each family of the rows compared from one
/// run a side without a noise floor, as a variance of the log ratio.
///
/// What moves between runs for longer than a run lasts (a file system's
/// state, a process's memory layout, the L3's share of the host) is in no
/// run's rounds, but a pair shows it where it matters: the log time ratios
/// of a family's rows scatter around their common shift by more than their
/// rounds explain. Robustly (a real change of a few rows of the family
/// moves neither median): `median((z - median z)²) / 0.4549 - median(se²)`,
/// the random-effects variance of the family, at least 0, from
/// [`FAMILY_MIN_ROWS`] rows on. A change of the whole family shifts the
/// median and leaves the spread as it was.
pub fn family_spreads(rows: &[Row]) -> Vec<(String, f64)> {
    let mut families: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in rows {
        let Some((se2, _)) = r.welch else { continue };
        let z = r.time_ratio().ln();
        let f = family(&r.id);
        match families.iter_mut().find(|(name, _)| name == f) {
            Some((_, v)) => v.push((z, se2)),
            None => families.push((f.to_string(), vec![(z, se2)])),
        }
    }
    families
        .into_iter()
        .filter(|(_, v)| v.len() >= FAMILY_MIN_ROWS)
        .filter_map(|(name, v)| {
            let z: Vec<f64> = v.iter().map(|p| p.0).collect();
            let m = stats::median(&z)?;
            let d: Vec<f64> = z.iter().map(|x| (x - m).powi(2)).collect();
            let se2: Vec<f64> = v.iter().map(|p| p.1).collect();
            let tau2 = stats::median(&d)? / CHI2_1_MEDIAN - stats::median(&se2)?;
            Some((name, tau2.max(0.0)))
        })
        .collect()
}

/// Fewest families measured at one condition before the condition's
/// shared shift in a pair is read ([`condition_spreads`]).
pub const CONDITION_MIN_FAMILIES: usize = 3;

/// Fewest conditions of one class (of an area and unit) before their
/// scatter is read as the spread of that class's conditions between runs.
pub const CONDITION_MIN_GROUPS: usize = 3;

/// A benchmark's condition: what its id says after the first `/`
/// (`512B/cross` of `ipc.pipe.tput/512B/cross`, `rss=256MiB` of
/// `process.posix_spawn/rss=256MiB`), the setting a family is measured at.
pub fn condition(id: &str) -> Option<&str> {
    id.split_once('/').map(|(_, c)| c)
}

/// A condition's class: the condition without its sizes (`cross` of
/// `512B/cross`, `rss` of `rss=256MiB`, `idle` of `1ms/idle`, empty for
/// `64KiB`). The conditions of a class differ in size only, so their
/// scatter tells how far one of them moves as a whole between runs.
pub fn condition_class(condition: &str) -> String {
    condition
        .split('/')
        .filter(|part| !part.starts_with(|c: char| c.is_ascii_digit()))
        .map(|part| part.split_once('=').map_or(part, |(key, _)| key))
        .collect::<Vec<_>>()
        .join("/")
}

/// A class of conditions: its area, its unit and [`condition_class`].
pub type ConditionClass = (String, BaseUnit, String);

/// The spread between runs of whole conditions, per class of conditions,
/// of the rows compared from one run a side without a noise floor, as a
/// variance of the log ratio.
///
/// Some states of a machine hold for a whole run and fall on one condition
/// of every family measured at it: every transport's cross-CPU throughput
/// of 512-byte messages 1.2-3.5× apart in two runs of one binary, while
/// their other sizes, and each family's other rows, agree. A family's
/// spread ([`family_spreads`]) is robust to a few of its rows moving, so it
/// does not see it; the conditions do. The rows are grouped by area, unit
/// and [`condition`]; a group of at least [`CONDITION_MIN_FAMILIES`]
/// families has a shift (the median of its log time ratios, of variance
/// `π/2 · mean(se²) / n`). With at least [`CONDITION_MIN_GROUPS`] groups in
/// a class ([`condition_class`]: the cross-CPU sizes, the same-CPU sizes,
/// the parent's sizes), the variance of their shifts beyond what their
/// rounds explain, `Σ(s - s̄)² / (k - 1) - mean(v)` at least 0, is that
/// class's spread, added to each row of the class. It is not robust on
/// purpose: one condition that moved as a whole is the state a pair cannot
/// tell from a change. A change of the whole class moves every shift alike
/// and leaves it; a class whose sizes agree (the same-CPU ones) keeps its
/// rows' intervals.
pub fn condition_spreads(rows: &[Row]) -> Vec<(ConditionClass, f64)> {
    type Groups<'a> = Vec<(&'a str, Vec<(&'a str, f64, f64)>)>;
    let mut classes: Vec<(ConditionClass, Groups)> = Vec::new();
    for r in rows {
        let (Some((se2, _)), Some(c)) = (r.welch, condition(&r.id)) else {
            continue;
        };
        let key = (r.area.clone(), r.unit, condition_class(c));
        let groups = match classes.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g,
            None => {
                classes.push((key, Vec::new()));
                &mut classes.last_mut().expect("just pushed").1
            }
        };
        let row = (family(&r.id), r.time_ratio().ln(), se2);
        match groups.iter_mut().find(|(name, _)| *name == c) {
            Some((_, v)) => v.push(row),
            None => groups.push((c, vec![row])),
        }
    }
    classes
        .into_iter()
        .filter_map(|(key, groups)| {
            let shifts: Vec<(f64, f64)> = groups
                .iter()
                .filter(|(_, v)| {
                    let mut fams: Vec<&str> = v.iter().map(|x| x.0).collect();
                    fams.sort_unstable();
                    fams.dedup();
                    fams.len() >= CONDITION_MIN_FAMILIES
                })
                .filter_map(|(_, v)| {
                    let z: Vec<f64> = v.iter().map(|x| x.1).collect();
                    let n = v.len() as f64;
                    let se2 = v.iter().map(|x| x.2).sum::<f64>() / n;
                    Some((stats::median(&z)?, std::f64::consts::FRAC_PI_2 * se2 / n))
                })
                .collect();
            if shifts.len() < CONDITION_MIN_GROUPS {
                return None;
            }
            let k = shifts.len() as f64;
            let mean = shifts.iter().map(|s| s.0).sum::<f64>() / k;
            let scatter = shifts.iter().map(|s| (s.0 - mean).powi(2)).sum::<f64>() / (k - 1.0);
            let rounds = shifts.iter().map(|s| s.1).sum::<f64>() / k;
            Some((key, (scatter - rounds).max(0.0)))
        })
        .collect()
}

/// Widens each row's interval by its family's spread between runs
/// ([`family_spreads`]) and its class's spread of conditions
/// ([`condition_spreads`]), and decides its verdict and detectable effect
/// again.
fn widen_between_runs(rows: &mut [Row], threshold: f64) {
    let families = family_spreads(rows);
    let conditions = condition_spreads(rows);
    for r in rows.iter_mut() {
        let Some((se2, df)) = r.welch else { continue };
        let family_tau2 = families
            .iter()
            .find(|(f, _)| f == family(&r.id))
            .map_or(0.0, |(_, t)| *t);
        let condition_tau2 = condition(&r.id).map_or(0.0, |c| {
            let class = condition_class(c);
            conditions
                .iter()
                .find(|((area, unit, k), _)| *area == r.area && *unit == r.unit && *k == class)
                .map_or(0.0, |(_, t)| *t)
        });
        if family_tau2 <= 0.0 && condition_tau2 <= 0.0 {
            continue;
        }
        let (lo, hi) = ratio_ci(r.ratio, se2 + family_tau2 + condition_tau2, df);
        r.ci_low = lo.min(r.ratio);
        r.ci_high = hi.max(r.ratio);
        let relative = |tau2: f64| (tau2 > 0.0).then(|| tau2.sqrt().exp() - 1.0);
        r.family_spread = relative(family_tau2);
        r.condition_spread = relative(condition_tau2);
        r.mde = mde(r.ratio, (r.ci_low, r.ci_high), threshold, None, Some(df));
        let (t, (t_lo, t_hi)) = (r.time_ratio(), r.time_ci());
        r.verdict = verdict(t, t_lo, t_hi, threshold);
    }
}

/// The minimal detectable effect of a row: the smallest change in time
/// that its verdict calls in 80% of pairs like this one (the usual power
/// of an MDE), relative.
///
/// A change is called when the interval excludes 1 and the ratio is beyond
/// the threshold or noise floor in force. The interval's half-width `hw`
/// (log scale, the wider side) is `q975 · se`; a true change `δ` is then
/// called in 80% of pairs when `δ ≥ hw · (1 + q80 / q975)`, with Student's
/// quantiles at `df` degrees of freedom when the interval came from a t
/// (normal ones otherwise). A noise floor (a run-to-run 95% range) asks the
/// same of its own spread; the threshold alone is a fixed bar.
pub fn mde(
    ratio: f64,
    (ci_low, ci_high): (f64, f64),
    threshold: f64,
    floor: Option<f64>,
    df: Option<f64>,
) -> f64 {
    let hw = if ratio > 0.0 && ci_low > 0.0 {
        (ci_high / ratio).ln().max((ratio / ci_low).ln()).max(0.0)
    } else {
        f64::INFINITY
    };
    let (q975, q80) = df.map_or((stats::Z95, stats::Z80), |d| {
        (stats::t975(d), stats::t80(d))
    });
    let by_interval = (hw * (1.0 + q80 / q975)).exp() - 1.0;
    let by_floor = floor.map_or(0.0, |f| f * (1.0 + stats::Z80 / stats::Z95));
    by_interval.max(by_floor).max(threshold.max(0.0))
}

/// The verdict from a time ratio B/A and its interval.
pub fn verdict(t: f64, lo: f64, hi: f64, threshold: f64) -> Change {
    let limit = 1.0 + threshold.max(0.0);
    if lo > 1.0 && t > limit {
        Change::Slower
    } else if hi < 1.0 && t < 1.0 / limit {
        Change::Faster
    } else {
        Change::Same
    }
}

/// 95% percentile-bootstrap interval of `median(b) / median(a)`.
pub fn bootstrap_ratio_ci(a: &[f64], b: &[f64], seed: u64) -> (f64, f64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for x in ra.iter_mut() {
            *x = a[rng.usize(..a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.usize(..b.len())];
        }
        let r = median_in_place(&mut rb) / median_in_place(&mut ra);
        if r.is_finite() {
            ratios.push(r);
        }
    }
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    ratios.sort_by(f64::total_cmp);
    let q = |p: f64| crate::stats::quantile_sorted(&ratios, p);
    (q(0.025), q(0.975))
}

/// The median of `v`, reordering it (linear time).
fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    let mid = n / 2;
    let (left, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *m;
    if n % 2 == 1 {
        upper
    } else {
        let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// A stable seed from a benchmark id (FNV-1a).
fn seed_of(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn summarise<'a>(
    area: &str,
    rows: impl Iterator<Item = &'a Row>,
    threshold: f64,
    floor: Option<f64>,
) -> Summary {
    let mut s = Summary {
        noise_floor: floor,
        area: area.to_string(),
        n: 0,
        geomean_time_ratio: f64::NAN,
        geomean_ci: (f64::NAN, f64::NAN),
        verdict: Change::Same,
        faster: 0,
        slower: 0,
        same: 0,
        could_see: 0,
    };
    let mut logs: Vec<f64> = Vec::new();
    let mut single_ci = (f64::NAN, f64::NAN);
    for r in rows {
        s.n += 1;
        s.could_see += usize::from(r.mde <= SEE_REFERENCE + 1e-9);
        logs.push(r.time_ratio().ln());
        single_ci = r.time_ci();
        match r.verdict {
            Change::Faster => s.faster += 1,
            Change::Slower => s.slower += 1,
            Change::Same => s.same += 1,
        }
    }
    if s.n > 0 {
        let mean = logs.iter().sum::<f64>() / s.n as f64;
        s.geomean_time_ratio = mean.exp();
        s.geomean_ci = match stats::log_mean_var(&logs.iter().map(|l| l.exp()).collect::<Vec<_>>())
        {
            Some((_, var)) => {
                let hw = stats::t975(s.n as f64 - 1.0) * (var / s.n as f64).sqrt();
                ((mean - hw).exp(), (mean + hw).exp())
            }
            None => single_ci,
        };
        let (lo, hi) = s.geomean_ci;
        s.verdict = verdict(
            s.geomean_time_ratio,
            lo,
            hi,
            threshold.max(floor.unwrap_or(0.0)),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten rounds, none in a slow phase.
    fn rounds10() -> crate::harness::canary::PhaseCounts {
        crate::harness::canary::PhaseCounts {
            rounds: 10,
            ..Default::default()
        }
    }

    #[test]
    fn median_in_place_handles_odd_and_even() {
        assert_eq!(median_in_place(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_in_place(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median_in_place(&mut [5.0]), 5.0);
    }

    #[test]
    fn bootstrap_of_identical_samples_is_a_point() {
        let a = [10.0; 20];
        assert_eq!(bootstrap_ratio_ci(&a, &a, 1), (1.0, 1.0));
    }

    #[test]
    fn bootstrap_interval_brackets_a_known_ratio() {
        let mut rng = fastrand::Rng::with_seed(3);
        let a: Vec<f64> = (0..40).map(|_| 100.0 + rng.f64() * 10.0).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 2.0).collect();
        let (lo, hi) = bootstrap_ratio_ci(&a, &b, 9);
        assert!(lo <= 2.0 + 1e-9 && hi >= 2.0 - 1e-9, "{lo}..{hi}");
        assert!(lo > 1.8 && hi < 2.2, "{lo}..{hi}");
    }

    /// A result of 5 rounds measured at `measured` ns (a little jitter),
    /// the first `slow` of them slow and corrected by `factor`.
    fn phased(measured: f64, slow: usize, factor: f64) -> Measurement {
        let rounds: Vec<crate::harness::Round> = (0..5)
            .map(|k| {
                let m = measured * (1.0 + 0.005 * k as f64);
                let corrected = k < slow;
                crate::harness::Round {
                    median: if corrected { m / factor } else { m },
                    n: 8,
                    used: true,
                    slow: corrected,
                    canary: Some(if corrected { factor } else { 1.0 }),
                    phase_factor: corrected.then_some(factor),
                    ..Default::default()
                }
            })
            .collect();
        let mut m = Measurement::point("t.x", "ns/op", rounds[2].median);
        m.rounds = rounds;
        m
    }

    /// A default-profile run of this machine's description holding `ms`.
    fn run_of(ms: Vec<Measurement>) -> RunDoc {
        let mut d = RunDoc::started_now(
            crate::host::Host::default(),
            crate::harness::Profile::Default,
        );
        d.results = ms;
        d
    }

    #[test]
    fn one_run_a_side_without_a_floor_says_what_its_intervals_leave_out() {
        use crate::report::comparison::{floor_note, method_note};
        let doc = |ns: f64| run_of(vec![phased(ns, 0, 1.0)]);
        let c = compare(&doc(100.0), &doc(101.0), &[], 0.05);
        assert_eq!(c.rows[0].method, CiMethod::Rounds);
        let note = floor_note(&c).expect("a single pair without a floor");
        assert!(note.starts_with("no noise floor"), "{note}");
        assert!(method_note(&c).contains(&note));
        // With a floor from the history, or several runs a side: no caveat.
        let mut floored = c.clone();
        floored.floor_runs = FLOOR_MIN_RUNS;
        assert_eq!(floor_note(&floored), None);
        let sides = compare_sides(&[doc(100.0), doc(99.0)], &[doc(101.0)], &[], 0.05, &[]);
        assert_eq!(floor_note(&sides), None);
        // Documents without rounds: their intervals say nothing of runs.
        let mut old = doc(100.0);
        old.results[0].rounds.clear();
        assert_eq!(floor_note(&compare(&old, &old.clone(), &[], 0.05)), None);
    }

    #[test]
    fn sides_in_a_like_mix_of_phases_are_compared_as_measured() {
        // Both sides wholly slow, corrected by different factors (a slope
        // guessed differently in each run) though nothing changed: the
        // corrected rounds disagree by 18%, the measured ones do not.
        let (a, b) = (phased(100.0, 5, 1.3), phased(100.0, 5, 1.1));
        let row = compare_one(&a, &b, 0.05).unwrap();
        assert_eq!(row.method, CiMethod::RoundsAsMeasured);
        assert_eq!(row.verdict, Change::Same, "{row:?}");
        assert!((row.ratio - 1.0).abs() < 1e-9, "{row:?}");
        // Sides in unlike mixes: the correction is what makes them
        // comparable. A was slow throughout and B fast; A corrected reads
        // as B does.
        let (a, b) = (phased(100.0, 5, 1.3), phased(100.0 / 1.3, 0, 1.0));
        let row = compare_one(&a, &b, 0.05).unwrap();
        assert_eq!(row.method, CiMethod::Rounds);
        assert_eq!(row.verdict, Change::Same, "{row:?}");
        // With nothing corrected on either side, nothing changes.
        let (a, b) = (phased(100.0, 0, 1.0), phased(120.0, 0, 1.0));
        let row = compare_one(&a, &b, 0.05).unwrap();
        assert_eq!(row.method, CiMethod::Rounds);
        assert_eq!(row.verdict, Change::Slower);
        assert!((row.ratio - 1.2).abs() < 1e-9, "{row:?}");
    }

    /// A result of `rounds` rounds around `ns` with log noise of sd `sd`
    /// (seeded), shifted by `shift` (1.05 = 5% slower).
    fn noisy(ns: f64, sd: f64, rounds: usize, seed: u64, shift: f64) -> Measurement {
        let mut rng = fastrand::Rng::with_seed(seed);
        let rounds: Vec<crate::harness::Round> = (0..rounds)
            .map(|_| {
                // Box-Muller from two uniforms.
                let z = (-2.0 * rng.f64().max(1e-12).ln()).sqrt()
                    * (2.0 * std::f64::consts::PI * rng.f64()).cos();
                crate::harness::Round {
                    median: ns * shift * (sd * z).exp(),
                    n: 8,
                    used: true,
                    ..Default::default()
                }
            })
            .collect();
        let mut m = Measurement::point("t.x", "ns/op", ns * shift);
        m.rounds = rounds;
        m
    }

    /// A run of host `host` with `per` rows in each of `areas`, every row
    /// 100 ns × `shift(area)` in 5 rounds of 1% noise.
    fn areas_run(
        host: &str,
        areas: &[&str],
        per: usize,
        seed: u64,
        shift: impl Fn(&str) -> f64,
    ) -> RunDoc {
        let h = crate::host::Host {
            hostname: host.into(),
            ..Default::default()
        };
        let mut d = RunDoc::started_now(h, crate::harness::Profile::Quick);
        for (k, area) in areas.iter().enumerate() {
            for i in 0..per {
                let s = seed * 1000 + (k * per + i) as u64;
                let mut m = noisy(100.0, 0.01, 5, s, shift(area));
                m.id = format!("{area}.fam{}.x/{i}", i % 2);
                m.area = area.to_string();
                d.results.push(m);
            }
        }
        d
    }

    #[test]
    fn an_area_that_moves_as_a_whole_between_the_hosts_runs_has_a_floor() {
        // The host's earlier runs put memory 0.96–1.04× as a whole, syscall
        // within 0.5%.
        let levels = [1.0, 1.04, 0.96, 1.03, 0.97];
        let level = |k: usize| move |area: &str| if area == "memory" { levels[k] } else { 1.0 };
        let areas = ["syscall", "memory"];
        let history: Vec<RunDoc> = (0..levels.len())
            .map(|k| areas_run("h", &areas, 8, 10 + k as u64, level(k)))
            .collect();
        let ids: Vec<String> = history[0].results.iter().map(|m| m.id.clone()).collect();
        let memory: Vec<&str> = ids
            .iter()
            .filter(|i| i.starts_with("memory"))
            .map(String::as_str)
            .collect();
        let floor = area_floor(&history, &memory).expect("five runs");
        // sd of the levels ≈ 3.5%: 1.96 · √2 · sd ≈ 10%
        assert!((0.07..0.13).contains(&floor), "{floor}");
        assert_eq!(
            area_floor(&history[..2], &memory),
            None,
            "two runs: no floor"
        );
        // B's memory 5% slower as a whole: called without the history, not with it
        let a = areas_run("h", &areas, 8, 1, |_| 1.0);
        let b = areas_run(
            "h",
            &areas,
            8,
            2,
            |x| if x == "memory" { 1.05 } else { 1.0 },
        );
        let area = |c: &Comparison, name: &str| {
            c.summaries
                .iter()
                .find(|s| s.area == name)
                .cloned()
                .unwrap()
        };
        let alone = compare(&a, &b, &[], DEFAULT_THRESHOLD);
        assert_eq!(area(&alone, "memory").verdict, Change::Slower);
        assert_eq!(area(&alone, "memory").noise_floor, None);
        let with_history = |b: &RunDoc| {
            compare_sides(
                std::slice::from_ref(&a),
                std::slice::from_ref(b),
                &[],
                DEFAULT_THRESHOLD,
                &history,
            )
        };
        let floored = with_history(&b);
        let m = area(&floored, "memory");
        assert_eq!(m.verdict, Change::Same, "{m:?}");
        assert!(m.noise_floor.is_some_and(|f| f > 0.05));
        let note = crate::report::comparison::render(&floored);
        assert!(note.contains("its own noise floor, for 3 of 3"), "{note}");
        // 25% slower is beyond it
        let far = areas_run(
            "h",
            &areas,
            8,
            3,
            |x| if x == "memory" { 1.25 } else { 1.0 },
        );
        let c = with_history(&far);
        assert_eq!(area(&c, "memory").verdict, Change::Slower);
        assert_eq!(area(&c, "syscall").verdict, Change::Same);
    }

    #[test]
    fn a_whole_run_that_moved_alike_is_named_and_its_rows_kept() {
        let areas = ["syscall", "ipc", "memory", "process"];
        let a = areas_run("h", &areas, 6, 1, |_| 1.0);
        let b = areas_run("h", &areas, 6, 2, |_| 0.83);
        let c = compare(&a, &b, &[], DEFAULT_THRESHOLD);
        let shift = c.whole_shift.expect("every area faster alike");
        assert!((shift - 0.83).abs() < 0.02, "{shift}");
        // the rows stay as measured: the note names the shift, no row is taken out
        assert!(c.rows.iter().all(|r| r.verdict == Change::Faster));
        let note = crate::report::comparison::whole_note(&c).expect("a note");
        assert!(note.starts_with("the whole run moved: B ran 1.2"), "{note}");
        assert!(
            note.contains("syscall 1.2") && note.contains("process 1.2"),
            "{note}"
        );
        assert!(crate::report::comparison::render(&c).contains("the whole run moved"));
        let md = crate::report::render_comparison(&c, crate::report::Format::Md).unwrap();
        assert!(md.contains("the whole run moved"), "{md}");
        // one area the other way, or one that did not move: not the whole run
        let mixed = areas_run(
            "h",
            &areas,
            6,
            3,
            |a| if a == "memory" { 1.2 } else { 0.83 },
        );
        assert_eq!(
            compare(&a, &mixed, &[], DEFAULT_THRESHOLD).whole_shift,
            None
        );
        let held = areas_run("h", &areas, 6, 4, |a| if a == "ipc" { 1.0 } else { 0.83 });
        assert_eq!(compare(&a, &held, &[], DEFAULT_THRESHOLD).whole_shift, None);
        // two areas are too few; an area of 4 rows does not count
        let two = |seed, k| areas_run("h", &areas[..2], 6, seed, move |_| k);
        assert_eq!(
            compare(&two(5, 1.0), &two(6, 0.83), &[], DEFAULT_THRESHOLD).whole_shift,
            None
        );
        let small = |seed, k| {
            let mut d = areas_run("h", &areas[..2], 6, seed, move |_| k);
            d.results
                .extend(areas_run("h", &["memory"], 4, seed + 50, move |_| k).results);
            d
        };
        assert_eq!(
            compare(&small(7, 1.0), &small(8, 0.83), &[], DEFAULT_THRESHOLD).whole_shift,
            None
        );
        // two hosts are expected to differ everywhere; ab's pairs share the states
        let other = areas_run("g", &areas, 6, 9, |_| 0.83);
        assert_eq!(
            compare(&a, &other, &[], DEFAULT_THRESHOLD).whole_shift,
            None
        );
        assert_eq!(compare_paired(&a, &b, DEFAULT_THRESHOLD).whole_shift, None);
        // runs that agree say nothing
        let same = areas_run("h", &areas, 6, 10, |_| 1.0);
        let c = compare(&a, &same, &[], DEFAULT_THRESHOLD);
        assert_eq!(c.whole_shift, None);
        assert!(crate::report::comparison::whole_note(&c).is_none());
    }

    #[test]
    fn a_known_shift_is_called_and_no_shift_is_not() {
        // 1% noise per round, 8 rounds a side.
        let (sd, r) = (0.01, 8);
        let mut called_aa = 0;
        let mut called_shift = 0;
        for seed in 0..200 {
            let a = noisy(100.0, sd, r, seed, 1.0);
            let same = noisy(100.0, sd, r, seed + 1000, 1.0);
            // A shift three times the noise above the 5% threshold's reach.
            let slower = noisy(100.0, sd, r, seed + 2000, 1.08);
            called_aa += usize::from(compare_one(&a, &same, 0.05).unwrap().verdict != Change::Same);
            called_shift +=
                usize::from(compare_one(&a, &slower, 0.05).unwrap().verdict == Change::Slower);
        }
        assert_eq!(called_aa, 0);
        assert!(called_shift >= 195, "{called_shift} of 200");
    }

    /// Two runs of a family of 12 rows (`fam.x.0`...), 3 rounds each with
    /// 1% noise per round; each row of B moved by `between(k)` for the
    /// whole run (a state that lasts a run) times `shift(k)`.
    fn family_pair(
        seed: u64,
        between: impl Fn(usize) -> f64,
        shift: impl Fn(usize) -> f64,
    ) -> (RunDoc, RunDoc) {
        let side = |offset: u64, b: bool| {
            let ms = (0..12)
                .map(|k| {
                    let f = if b { between(k) * shift(k) } else { 1.0 };
                    let mut m = noisy(100.0 + k as f64, 0.01, 3, seed * 100 + offset + k as u64, f);
                    m.id = format!("fam.x.{k}");
                    m.area = "fam".into();
                    m
                })
                .collect();
            run_of(ms)
        };
        (side(0, false), side(50, true))
    }

    /// Two runs of five families (`cond.f0`..`cond.f4`), each measured at
    /// four sizes on the same CPU and on two: `factor(family, condition)`
    /// multiplies B's times.
    fn condition_pair(seed: u64, factor: impl Fn(usize, &str) -> f64) -> (RunDoc, RunDoc) {
        let conditions = [
            "64B/same",
            "512B/same",
            "4KiB/same",
            "64KiB/same",
            "64B/cross",
            "512B/cross",
            "4KiB/cross",
            "64KiB/cross",
        ];
        let side = |offset: u64, b: bool| {
            let mut ms = Vec::new();
            for f in 0..5 {
                for (i, c) in conditions.iter().enumerate() {
                    let k = f * conditions.len() + i;
                    let x = if b { factor(f, c) } else { 1.0 };
                    let mut m = noisy(
                        100.0 + k as f64,
                        0.01,
                        3,
                        seed * 1000 + offset + k as u64,
                        x,
                    );
                    m.id = format!("cond.f{f}.tput/{c}");
                    m.area = "cond".into();
                    ms.push(m);
                }
            }
            run_of(ms)
        };
        (side(0, false), side(500, true))
    }

    #[test]
    fn a_condition_that_moves_as_a_whole_widens_its_class_and_a_whole_class_change_is_called() {
        assert_eq!(condition_class("512B/cross"), "cross");
        assert_eq!(condition_class("rss=256MiB"), "rss");
        assert_eq!(condition_class("1ms/idle"), "idle");
        assert_eq!(condition_class("64KiB"), "");
        assert_eq!(condition("ipc.pipe.tput/512B/cross"), Some("512B/cross"));
        assert_eq!(condition("process.fork_exit"), None);
        // Every family's cross-CPU 512 B 30% slower, nothing else: a state of
        // the run that one pair cannot tell from a change. The cross-CPU
        // class is widened and its rows are not called; the same-CPU rows
        // keep their intervals.
        let (a, b) = condition_pair(1, |_, c| if c == "512B/cross" { 1.30 } else { 1.0 });
        let c = compare(&a, &b, &[], DEFAULT_THRESHOLD);
        let called: Vec<&str> = c
            .rows
            .iter()
            .filter(|r| r.verdict != Change::Same)
            .map(|r| r.id.as_str())
            .collect();
        assert!(called.len() <= 1, "{called:?}");
        for r in &c.rows {
            let cross = r.id.ends_with("/cross");
            assert_eq!(r.condition_spread.is_some(), cross, "{}", r.id);
        }
        let spreads = condition_spreads(&c.rows);
        let widened: Vec<&str> = spreads
            .iter()
            .filter(|(_, tau2)| *tau2 > 0.0)
            .map(|(class, _)| class.2.as_str())
            .collect();
        assert_eq!(widened, ["cross"], "{spreads:?}");
        // Every cross-CPU row 20% slower: the class moved as a whole and its
        // conditions agree, so no condition's spread is read (half of each
        // family moved, which the families' spread answers for).
        let (a, b) = condition_pair(2, |_, c| if c.ends_with("cross") { 1.20 } else { 1.0 });
        let c = compare(&a, &b, &[], DEFAULT_THRESHOLD);
        assert!(
            c.rows
                .iter()
                .all(|r| r.condition_spread.is_none_or(|s| s < 0.01)),
            "{:?}",
            condition_spreads(&c.rows)
        );
        // One family slower at every condition: its own change, called.
        let (a, b) = condition_pair(3, |f, _| if f == 0 { 1.20 } else { 1.0 });
        let c = compare(&a, &b, &[], DEFAULT_THRESHOLD);
        for r in &c.rows {
            let want = if r.id.starts_with("cond.f0.") {
                Change::Slower
            } else {
                Change::Same
            };
            assert_eq!(r.verdict, want, "{}", r.id);
        }
    }

    #[test]
    fn a_family_that_scatters_between_runs_widens_its_rows_and_a_whole_family_change_does_not() {
        // Rows moved by ±10% between the runs (a state of the run, not of
        // any round): unwidened, most of them are called changed.
        let scatter = |k: usize| if k.is_multiple_of(2) { 1.10 } else { 0.91 };
        let (a, b) = family_pair(1, scatter, |_| 1.0);
        let c = compare(&a, &b, &[], DEFAULT_THRESHOLD);
        let spread = c
            .rows
            .iter()
            .filter_map(|r| r.family_spread)
            .fold(0.0, f64::max);
        assert!(spread > 0.05, "{spread}");
        let called = c.rows.iter().filter(|r| r.verdict != Change::Same).count();
        assert!(called <= 2, "{called} of 12 called after widening");
        assert!(family_spreads(&c.rows).iter().any(|(f, _)| f == "fam.x"));
        // The whole family 20% slower, nothing between the runs besides:
        // no spread is read, every row is called slower.
        let (a, b) = family_pair(2, |_| 1.0, |_| 1.20);
        let c = compare(&a, &b, &[], DEFAULT_THRESHOLD);
        assert!(
            c.rows.iter().all(|r| r.verdict == Change::Slower),
            "{:?}",
            c.rows
        );
        assert!(
            c.rows
                .iter()
                .all(|r| r.family_spread.is_none_or(|s| s < 0.01))
        );
        // Three of twelve rows 20% slower: the median keeps them out of the
        // spread, and they are called.
        let (a, b) = family_pair(3, |_| 1.0, |k| if k < 3 { 1.20 } else { 1.0 });
        let c = compare(&a, &b, &[], DEFAULT_THRESHOLD);
        let slower: Vec<&str> = c
            .rows
            .iter()
            .filter(|r| r.verdict == Change::Slower)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(slower, ["fam.x.0", "fam.x.1", "fam.x.2"]);
        // Paired rounds (`ab`) and sides of several runs are left as they are.
        let (a, b) = family_pair(1, scatter, |_| 1.0);
        let paired = compare_paired(&a, &b, DEFAULT_THRESHOLD);
        assert!(paired.rows.iter().all(|r| r.family_spread.is_none()));
        let sides = compare_sides(
            &[a.clone(), a.clone()],
            &[b.clone(), b],
            &[],
            DEFAULT_THRESHOLD,
            &[],
        );
        assert!(sides.rows.iter().all(|r| r.family_spread.is_none()));
    }

    #[test]
    fn paired_rounds_see_a_small_change_that_the_machine_hides_from_welch() {
        // Each round pair shares a state of the machine (±8%), B 3% slower
        // with 0.5% noise of its own: Welch sees only the 8%, the pairs the 3%.
        let (mut paired_called, mut welch_called, mut aa_called) = (0, 0, 0);
        for seed in 0..100 {
            let state = noisy(1.0, 0.08, 6, seed, 1.0);
            let with = |shift: f64, s: u64| {
                let mut m = noisy(100.0, 0.005, 6, s, shift);
                for (r, st) in m.rounds.iter_mut().zip(&state.rounds) {
                    r.median *= st.median;
                }
                run_of(vec![m])
            };
            let (a, b, same) = (
                with(1.0, seed + 100),
                with(1.03, seed + 200),
                with(1.0, seed + 300),
            );
            let p = compare_paired(&a, &b, 0.0);
            assert_eq!(p.rows[0].method, CiMethod::PairedRounds);
            paired_called += usize::from(p.rows[0].verdict == Change::Slower);
            let w = compare(&a, &b, &[], 0.0);
            welch_called += usize::from(w.rows[0].verdict == Change::Slower);
            aa_called +=
                usize::from(compare_paired(&a, &same, 0.0).rows[0].verdict != Change::Same);
        }
        assert!(paired_called >= 95, "{paired_called} of 100");
        assert!(welch_called <= 20, "{welch_called} of 100");
        assert!(aa_called <= 10, "{aa_called} of 100");
    }

    #[test]
    fn the_minimal_detectable_effect_grows_with_noise_and_shrinks_with_rounds() {
        let mde_of = |sd: f64, rounds: usize| {
            let mut sum = 0.0;
            for seed in 0..50 {
                let a = noisy(100.0, sd, rounds, seed, 1.0);
                let b = noisy(100.0, sd, rounds, seed + 500, 1.0);
                sum += compare_one(&a, &b, 0.0).unwrap().mde;
            }
            sum / 50.0
        };
        let (quiet, loud) = (mde_of(0.01, 5), mde_of(0.05, 5));
        assert!(loud > 3.0 * quiet, "{quiet} vs {loud}");
        let (few, many) = (mde_of(0.03, 3), mde_of(0.03, 12));
        assert!(many < few / 2.0, "{few} vs {many}");
        // Never below the threshold in force.
        let a = noisy(100.0, 0.001, 10, 1, 1.0);
        assert!((compare_one(&a, &a.clone(), 0.05).unwrap().mde - 0.05).abs() < 1e-12);
        // The wider side, scaled to 80% power: by (1 + 0.8416 / 1.96) with
        // normal quantiles, by (1 + 1.0607 / 4.303) with Student's at 2.
        let wide = 1.2_f64.ln();
        let normal = (wide * (1.0 + stats::Z80 / stats::Z95)).exp() - 1.0;
        assert!((mde(1.0, (0.9, 1.2), 0.0, None, None) - normal).abs() < 1e-12);
        let student = (wide * (1.0 + 1.0607 / 4.303)).exp() - 1.0;
        assert!((mde(1.0, (0.9, 1.2), 0.0, None, Some(2.0)) - student).abs() < 1e-9);
        assert!(student < normal && normal > 0.2);
        // A noise floor of 8% asks for 8% · 1.43 at 80% power.
        assert!((mde(1.0, (1.0, 1.0), 0.02, Some(0.08), None) - 0.08 * 1.429_4).abs() < 1e-4);
    }

    #[test]
    fn summaries_count_the_rows_that_could_see_five_percent() {
        // Two runs of one result, each of `rounds` rounds with spread `sd`.
        let pair = |sd: f64, rounds: usize| {
            let doc = |seed| run_of(vec![noisy(100.0, sd, rounds, seed, 1.0)]);
            compare(&doc(1), &doc(2), &[], 0.03)
        };
        assert_eq!(pair(0.002, 8).summaries[0].could_see, 1);
        let wide = pair(0.2, 3);
        assert_eq!(wide.summaries[0].could_see, 0);
        let text = crate::report::comparison::render(&wide);
        assert!(text.contains("no change > "), "{text}");
        assert!(
            text.contains("0 of 1 rows could have seen a 5% change"),
            "{text}"
        );
    }

    #[test]
    fn gates_parse_and_fail_only_on_slower_rows_and_areas() {
        assert_eq!("slower".parse::<Gate>(), Ok(Gate::Slower(0.0)));
        assert_eq!("slower:3".parse::<Gate>(), Ok(Gate::Slower(0.03)));
        assert_eq!("area:2.5%".parse::<Gate>(), Ok(Gate::Area(0.025)));
        assert!("faster".parse::<Gate>().is_err());
        assert!("slower:x".parse::<Gate>().is_err());
        assert!("slower:-1".parse::<Gate>().is_err());
        let doc = run_of;
        let named = |id: &str, m: Measurement| Measurement {
            id: id.into(),
            area: crate::harness::area_of(id).into(),
            ..m
        };
        let a = doc(vec![
            named("x.one", noisy(100.0, 0.005, 8, 1, 1.0)),
            named("x.two", noisy(100.0, 0.005, 8, 2, 1.0)),
        ]);
        let slower = doc(vec![
            named("x.one", noisy(100.0, 0.005, 8, 3, 1.10)),
            named("x.two", noisy(100.0, 0.005, 8, 4, 1.0)),
        ]);
        let faster = doc(vec![
            named("x.one", noisy(100.0, 0.005, 8, 3, 0.8)),
            named("x.two", noisy(100.0, 0.005, 8, 4, 1.0)),
        ]);
        let c = compare(&a, &slower, &[], 0.05);
        let f = c.gate(&[Gate::Slower(0.0)]);
        assert_eq!(f.rows, vec![0]);
        assert!(!f.passed());
        // A limit above the change passes it.
        assert!(c.gate(&[Gate::Slower(0.2)]).passed());
        // One row of two 10% slower: the area's mean (~4.9%) has an
        // interval that holds 1, so the area is not called slower.
        assert_eq!(c.summaries[0].verdict, Change::Same);
        assert!(c.gate(&[Gate::Area(0.0)]).passed());
        // Every row 7-9% slower: the area is, and fails at 3%, not at 10%.
        let ids = ["y.a", "y.b", "y.c", "y.d"];
        let side = |shifts: [f64; 4], seed: u64| {
            doc(ids
                .iter()
                .zip(shifts)
                .enumerate()
                .map(|(k, (id, f))| named(id, noisy(100.0, 0.005, 8, seed + k as u64, f)))
                .collect())
        };
        let area = compare(
            &side([1.0; 4], 10),
            &side([1.07, 1.08, 1.09, 1.08], 20),
            &[],
            0.05,
        );
        assert_eq!(
            area.summaries[0].verdict,
            Change::Slower,
            "{:?}",
            area.summaries
        );
        assert_eq!(area.gate(&[Gate::Area(0.03)]).areas, vec![0]);
        assert!(area.gate(&[Gate::Area(0.10)]).passed());
        let text = crate::report::comparison::gate_report(&area, &area.gate(&[Gate::Area(0.0)]));
        assert!(text.contains("area y: time B/A 1.08× (95% CI "), "{text}");
        let report = crate::report::comparison::gate_report(&c, &f);
        assert!(report.starts_with("gate FAILED: 1 rows"), "{report}");
        assert!(report.contains("x.one: time B/A 1.10×"), "{report}");
        // Faster never fails a gate.
        let c = compare(&a, &faster, &[], 0.05);
        assert!(c.gate(&[Gate::Slower(0.0), Gate::Area(0.0)]).passed());
        assert!(
            crate::report::comparison::gate_report(&c, &GateFailures::default())
                .starts_with("gate passed")
        );
    }

    #[test]
    fn verdicts_respect_threshold_and_interval() {
        assert_eq!(verdict(2.0, 1.9, 2.1, 0.05), Change::Slower);
        assert_eq!(verdict(0.5, 0.45, 0.55, 0.05), Change::Faster);
        // Interval includes 1: same.
        assert_eq!(verdict(1.5, 0.9, 2.0, 0.05), Change::Same);
        // Beyond noise but below the threshold: same.
        assert_eq!(verdict(1.02, 1.01, 1.03, 0.05), Change::Same);
        assert_eq!(verdict(1.02, 1.01, 1.03, 0.0), Change::Slower);
    }

    #[test]
    fn a_canary_that_moved_between_the_runs_of_one_host_is_a_phase_change() {
        use crate::harness::canary::Stability;
        let doc = |host: &str, canary_ns: f64| {
            let h = crate::host::Host {
                hostname: host.into(),
                ..Default::default()
            };
            let mut d = RunDoc::started_now(h, crate::harness::Profile::Quick);
            let checks: Vec<f64> = (0..20).map(|_| canary_ns).collect();
            d.stability = Stability::of(&checks, &[], rounds10(), &Default::default());
            d
        };
        let c = compare(&doc("h", 1000.0), &doc("h", 1250.0), &[], 0.05);
        assert!((c.machine_shift.unwrap() - 1.25).abs() < 1e-9);
        assert!(c.phase_changed().is_some());
        let text = crate::report::comparison::render(&c);
        assert!(
            text.lines()
                .nth(2)
                .unwrap()
                .contains("took 25% longer in B"),
            "{text}"
        );
        let c = compare(&doc("h", 1000.0), &doc("h", 1030.0), &[], 0.05);
        assert!(c.machine_shift.is_some() && c.phase_changed().is_none());
        // other hosts: their canaries say nothing about phases
        let c = compare(&doc("h", 1000.0), &doc("g", 1250.0), &[], 0.05);
        assert_eq!(c.machine_shift, None);
        // a side of several runs: the geometric mean of its canaries
        let c = compare_sides(
            &[doc("h", 1000.0)],
            &[doc("h", 800.0), doc("h", 1250.0)],
            &[],
            0.05,
            &[],
        );
        assert!((c.machine_shift.unwrap() - 1.0).abs() < 1e-9);
        // a canary that made system calls (older documents) is other work
        let mut old = doc("h", 1000.0);
        old.stability.as_mut().unwrap().user_canary = false;
        let c = compare(&old, &doc("h", 50.0), &[], 0.05);
        assert_eq!(c.machine_shift, None);
        assert!(c.phase_changed().is_none());
    }

    #[test]
    fn the_kernel_canary_is_compared_between_runs_of_one_host_and_kernel() {
        use crate::harness::canary::Stability;
        let doc = |host: &str, release: &str, kernel_ns: Option<f64>| {
            let mut h = crate::host::Host {
                hostname: host.into(),
                ..Default::default()
            };
            h.kernel.release = Some(release.into());
            let mut d = RunDoc::started_now(h, crate::harness::Profile::Quick);
            let checks = vec![2700.0; 20];
            let mut s = Stability::of(&checks, &[], rounds10(), &Default::default()).unwrap();
            s.kernel_canary_ns = kernel_ns;
            d.stability = Some(s);
            d
        };
        let a = doc("h", "6.18", Some(8000.0));
        let c = compare(&a, &doc("h", "6.18", Some(6480.0)), &[], 0.05);
        assert!((c.kernel_shift.unwrap() - 0.81).abs() < 1e-9);
        assert!(c.kernel_changed().is_some());
        let note = crate::report::comparison::kernel_note(&c).expect("a note");
        assert!(note.contains("took 19% less time in B"), "{note}");
        assert!(crate::report::comparison::render(&c).contains("the kernel canary"));
        // a few per cent is a check's noise, not a state
        let c = compare(&a, &doc("h", "6.18", Some(8300.0)), &[], 0.05);
        assert!(c.kernel_shift.is_some() && c.kernel_changed().is_none());
        assert!(crate::report::comparison::kernel_note(&c).is_none());
        // another kernel moves system calls by itself; another host too;
        // a run without the canary (older documents) says nothing
        for b in [
            doc("h", "6.19", Some(6600.0)),
            doc("g", "6.18", Some(6600.0)),
            doc("h", "6.18", None),
        ] {
            let c = compare(&a, &b, &[], 0.05);
            assert_eq!(c.kernel_shift, None);
            assert!(crate::report::comparison::kernel_note(&c).is_none());
        }
    }

    #[test]
    fn rows_measured_on_several_cpus_are_known_by_their_condition() {
        assert!(on_several_cpus("ipc.pipe.tput/64B/cross"));
        assert!(on_several_cpus("ipc.tcp.rtt/1KiB/cross"));
        assert!(on_several_cpus("memory.bandwidth.copy/threads=all"));
        assert!(on_several_cpus("memory.bandwidth.read/threads=2"));
        assert!(!on_several_cpus("memory.bandwidth.copy/threads=1"));
        assert!(!on_several_cpus("ipc.pipe.tput/64B/same"));
        assert!(!on_several_cpus("syscall.getpid.raw"));
    }

    #[test]
    fn a_side_that_shared_its_cpus_with_other_programs_is_called_busier() {
        use crate::harness::canary::{Interference, Stability};
        let doc = |others: Option<f64>| {
            let mut d =
                RunDoc::started_now(crate::host::Host::default(), crate::harness::Profile::Quick);
            let i = Interference {
                others_share: others,
                ..Interference::default()
            };
            d.stability = Stability::of(&[1000.0; 20], &[], rounds10(), &i);
            d
        };
        let c = compare(&doc(Some(0.02)), &doc(Some(0.64)), &[], 0.05);
        assert_eq!(c.load_changed(), Some([0.02, 0.64]));
        let text = crate::report::comparison::render(&c);
        assert!(
            text.contains("B ran on a busier machine: other programs used 64% of the CPUs during B and 2% during A"),
            "{text}"
        );
        assert!(crate::report::comparison::method_note(&c).contains("busier machine"));
        // the other way round, and a small difference that is no call
        let c = compare(&doc(Some(0.7)), &doc(Some(0.1)), &[], 0.05);
        assert!(crate::report::comparison::render(&c).contains("A ran on a busier machine"));
        let c = compare(&doc(Some(0.02)), &doc(Some(0.15)), &[], 0.05);
        assert_eq!(c.load_changed(), None);
        assert_eq!(c.both_shared(), None);
        // both sides shared alike: said, with the rows that need whole CPUs
        let c = compare(&doc(Some(0.43)), &doc(Some(0.36)), &[], 0.05);
        assert_eq!(
            (c.load_changed(), c.both_shared()),
            (None, Some([0.43, 0.36]))
        );
        let text = crate::report::comparison::render(&c);
        assert!(
            text.contains("both sides shared the machine: other programs used 43% of the CPUs during A and 36% during B"),
            "{text}"
        );
        assert!(text.contains("0 of the 0 rows called changed"), "{text}");
        // a run that did not record it (an older document): no call
        let c = compare(&doc(None), &doc(Some(0.9)), &[], 0.05);
        assert_eq!(c.others_share, None);
        // the run's own line says it
        let s = doc(Some(0.64)).stability.unwrap();
        assert!(
            s.shared() && s.line().contains("other programs used 64% of the CPUs"),
            "{}",
            s.line()
        );
        assert!(
            !doc(Some(0.03))
                .stability
                .unwrap()
                .line()
                .contains("other programs")
        );
    }

    #[test]
    fn seeds_are_stable() {
        assert_eq!(seed_of("a"), seed_of("a"));
        assert_ne!(seed_of("a"), seed_of("b"));
    }
}
