//! The measuring engine. It knows no suite's benchmarks and imports no
//! suite: a suite hands it [`Bench`]es, it hands back [`Measurement`]s. (The
//! text of every warning, the suites' caveats included, is kept in
//! [`warnings`] so that one situation is always explained the same way.)
//!
//! Why it is shaped this way: the same method (calibrated batches, warm-up,
//! overhead subtraction, robust statistics, interleaving of alternatives)
//! must apply to every benchmark, so a benchmark only says how to set
//! itself up ([`Bench::prepare`]) and how to time `ops` operations
//! ([`Timed::run`]); everything that makes the number trustworthy lives here.

pub mod affinity;
pub mod canary;
pub mod claims;
pub mod clock;
pub mod cpu;
pub mod levels;
mod phase;
pub mod replay;
pub mod response;
pub mod round;
pub mod runner;
pub mod scratch;
pub mod timer;
pub mod warnings;
pub mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::units::ValueUnit;

pub use crate::stats::Summary;
pub use crate::stats::stages::{RoundsDecision, RowHistory};
pub use crate::units::BaseUnit;
pub use round::{RunOptions, RunOutcome, Skipped, row_histories};

/// Named parameters of a benchmark (the sweep point: size, placement...).
pub type Params = BTreeMap<String, serde_json::Value>;

/// How much effort a run spends per benchmark (ordered: quick < default < thorough).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A whole-machine profile in well under a minute.
    Quick,
    /// The everyday setting: a few seconds per benchmark at most.
    Default,
    /// More samples and longer batches, for numbers to publish.
    Thorough,
}

impl Profile {
    /// The name used on the command line and in documents.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Default => "default",
            Profile::Thorough => "thorough",
        }
    }

    /// Target duration of one timed batch; calibration grows `ops` to reach it.
    pub fn sample_target(self) -> Duration {
        match self {
            Profile::Quick => Duration::from_millis(1),
            Profile::Default => Duration::from_millis(5),
            Profile::Thorough => Duration::from_millis(20),
        }
    }

    /// Number of counted samples wanted per benchmark.
    pub fn samples(self) -> usize {
        match self {
            Profile::Quick => 15,
            Profile::Default => 40,
            Profile::Thorough => 100,
        }
    }

    /// Time spent running untimed batches before the first counted sample.
    pub fn warmup(self) -> Duration {
        match self {
            Profile::Quick => Duration::from_millis(10),
            Profile::Default => Duration::from_millis(50),
            Profile::Thorough => Duration::from_millis(200),
        }
    }

    /// Independent rounds each benchmark is measured in; its estimate and
    /// interval come from them.
    pub fn rounds(self) -> usize {
        match self {
            Profile::Quick => 3,
            Profile::Default => 5,
            Profile::Thorough => 8,
        }
    }

    /// The relative half-width the two-stage rule aims a benchmark's
    /// interval at (see [`RunOptions::target_precision`]) when the run does
    /// not say (`--target-precision`): ±2% at every profile (quick plans no
    /// more rounds than the first stage, so nothing is decided there). Why
    /// 2%: `compare` calls changes from 5% on, and two runs each within ±2%
    /// differ by a Welch interval of about ±3%, inside 5%; a benchmark whose
    /// first three rounds already say ±2% gains no verdict from more. A
    /// tighter target is raised to half the run-to-run spread the host's
    /// history shows (earlier, extending rounds to ±2% took 18% more time
    /// and gave `compare` no more power: what two runs disagree by lasts
    /// longer than a run).
    pub fn target_precision(self) -> f64 {
        0.02
    }

    /// Time budget of a benchmark that does not declare its own.
    pub fn default_budget(self) -> Duration {
        match self {
            Profile::Quick => Duration::from_millis(120),
            Profile::Default => Duration::from_millis(800),
            Profile::Thorough => Duration::from_secs(4),
        }
    }
}

/// What a benchmark's per-operation value means, and so its base unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Unit {
    /// Time per operation, reported in ns/op (lower is better).
    Latency,
    /// Bytes moved per second, `bytes_per_op` bytes per operation (higher is better).
    Throughput {
        /// Bytes moved by one operation.
        bytes_per_op: f64,
    },
    /// Operations per second (higher is better).
    Rate,
}

impl Unit {
    /// The base unit's label as written in documents: `ns/op`, `B/s` or `ops/s`.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Latency => "ns/op",
            Unit::Throughput { .. } => "B/s",
            Unit::Rate => "ops/s",
        }
    }

    /// Converts a time per operation (ns) into this unit's base value.
    pub fn from_ns_per_op(self, ns: f64) -> f64 {
        match self {
            Unit::Latency => ns,
            Unit::Throughput { bytes_per_op } => bytes_per_op * 1e9 / ns,
            Unit::Rate => 1e9 / ns,
        }
    }

    /// True when a larger value means a faster machine.
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Unit::Latency)
    }

    /// The base unit results of this kind are kept in.
    pub fn base(self) -> BaseUnit {
        match self {
            Unit::Latency => BaseUnit::NsPerOp,
            Unit::Throughput { .. } => BaseUnit::BytesPerSec,
            Unit::Rate => BaseUnit::OpsPerSec,
        }
    }
}

/// Whether the harness subtracts loop overhead from a benchmark's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overhead {
    /// Nothing is subtracted (the operation dwarfs the loop).
    None,
    /// The per-op cost of an empty counted loop is measured the same way and subtracted.
    EmptyLoop,
}

/// Everything a benchmark may use while it sets itself up.
#[derive(Clone)]
pub struct Ctx {
    /// The effort level of this run.
    pub profile: Profile,
    /// The machine description, detected once per run.
    pub host: Arc<Host>,
    /// A private temp directory for this run, removed when the run ends.
    pub tmp: PathBuf,
    /// Where file benchmarks write (`--dir`); `tmp` when not given.
    pub dir: PathBuf,
    /// The CPU the run is pinned to (`--cpu`), if any.
    pub cpu: Option<usize>,
    /// Set when the user asked to stop (Ctrl-C); long set-ups should check it.
    pub stop: Arc<AtomicBool>,
    /// What the run was given for one suite's use (the net suite's peer
    /// and target device), carried here unread.
    pub given: Given,
}

/// Values a run carries for the suites, at most one of each type: the
/// harness passes them to every benchmark without knowing what they are.
#[derive(Clone, Default)]
pub struct Given(Vec<Arc<dyn std::any::Any + Send + Sync>>);

impl Given {
    /// These values and `value` (replacing one of its type).
    pub fn with<T: std::any::Any + Send + Sync>(mut self, value: T) -> Given {
        self.0.retain(|v| !v.is::<T>());
        self.0.push(Arc::new(value));
        self
    }

    /// The value of type `T`, if the run was given one.
    pub fn get<T: std::any::Any>(&self) -> Option<&T> {
        self.0.iter().find_map(|v| v.downcast_ref::<T>())
    }
}

impl Ctx {
    /// True once the user asked the run to stop.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Why a benchmark did not produce a measurement.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The machine or kernel lacks what the benchmark needs; not a failure of the run.
    #[error("skipped: {0}")]
    Skip(String),
    /// Set-up went wrong; reported as a failure of this benchmark only.
    #[error(transparent)]
    Fail(#[from] anyhow::Error),
}

impl From<std::io::Error> for PrepareError {
    fn from(e: std::io::Error) -> Self {
        PrepareError::Fail(e.into())
    }
}

impl From<nix::Error> for PrepareError {
    fn from(e: nix::Error) -> Self {
        PrepareError::Fail(e.into())
    }
}

/// One benchmark: a description and a way to set itself up.
pub trait Bench: Send {
    /// Dotted id `area.subject.variant`, with `/param` for a sweep point.
    fn id(&self) -> &str;
    /// One line shown by `opcost list`.
    fn summary(&self) -> &str;
    /// The unit of the result.
    fn unit(&self) -> Unit;
    /// The sweep point or variant as named values (recorded with the result).
    fn params(&self) -> Params {
        Params::new()
    }
    /// Whether loop overhead is subtracted from the samples.
    fn overhead(&self) -> Overhead {
        Overhead::None
    }
    /// The time this benchmark may spend at `profile` (calibration and warm-up included).
    fn budget(&self, profile: Profile) -> Duration {
        profile.default_budget()
    }
    /// The time a run should expect it to take at `profile`, all rounds
    /// with their preparation: by default that of an operation far shorter
    /// than the sample target with nothing to prepare
    /// ([`round::expected_slow`]), which stops at its samples long before
    /// its budget; a benchmark that knows its preparation or operations
    /// take longer says so.
    fn expected(&self, profile: Profile) -> Duration {
        round::expected_slow(
            profile,
            self.budget(profile),
            Duration::ZERO,
            Duration::ZERO,
        )
    }
    /// Set-up its interleave group shares, over all rounds at `profile`:
    /// spent once a round whichever of the group's members are selected
    /// (a parent's memory touched for all of them). The run-time estimate
    /// counts it once per group ([`crate::plan::RunPlan::budget`]).
    fn group_setup(&self, profile: Profile) -> Duration {
        let _ = profile;
        Duration::ZERO
    }
    /// Benchmarks with the same key, selected together, have their samples
    /// interleaved (A B A B) so that drift cannot fake a difference.
    fn interleave(&self) -> Option<&str> {
        None
    }
    /// False when this benchmark is too costly for `profile` (a sweep point
    /// with a 1 GiB working set at quick); runs at that profile leave it out.
    fn runs_at(&self, profile: Profile) -> bool {
        let _ = profile;
        true
    }
    /// True when the CPU time of its samples is accounted (user and
    /// system, of opcost and of the peers its [`Timed::peer_pids`] names)
    /// and reported in `details` as `cpu_*` keys (see [`cpu::details_of`]).
    fn cpu_cost(&self) -> bool {
        false
    }
    /// True when its pace is set by a cap (a requests-per-second limit),
    /// not by the machine's speed: its slow rounds are never corrected for
    /// the machine's phase, which would lift it above its cap.
    fn paced(&self) -> bool {
        false
    }
    /// True when the whole-machine quick profile (`opcost` with no
    /// arguments, which must stay under a minute) leaves it out: it runs at
    /// the quick profile only when a pattern selects it, and at the others
    /// always.
    fn on_request(&self) -> bool {
        false
    }
    /// Sets up (untimed) and returns the thing to time.
    fn prepare(&self, ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError>;
}

/// A prepared benchmark. Dropping it cleans up: children, temp files, memory.
pub trait Timed {
    /// Performs `ops` operations and returns the time of that critical section only.
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration>;
    /// The most operations one batch may hold (a file size, a buffer), if limited.
    fn max_ops(&self) -> Option<u64> {
        None
    }
    /// The fewest operations one batch must hold (a whole file before its
    /// fdatasync, enough ops for a p99); calibration starts there.
    fn min_ops(&self) -> u64 {
        1
    }
    /// Per-operation timings (ns) recorded since the last call, for benchmarks
    /// that time each operation (round trips, fsyncs); used for p99 and bimodality.
    fn take_op_times(&mut self) -> Vec<f64> {
        Vec::new()
    }
    /// Caveats about this result, known after set-up (a fallback path, a cap).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Facts about where or how it was measured (a device, a placement), kept with the result.
    fn details(&self) -> Option<serde_json::Value> {
        None
    }
    /// Processes besides opcost that do the benchmark's work (a child, a
    /// local peer), whose CPU time counts with opcost's.
    fn peer_pids(&self) -> Vec<u32> {
        Vec::new()
    }
    /// True when its first batch is as warm as the later ones (set-up
    /// touched what an operation uses): a calibration batch too long to be
    /// confirmed, with no warm-up after it, is then the round's first
    /// sample instead of being thrown away (a codec operation of seconds).
    fn first_batch_counts(&self) -> bool {
        false
    }
}

/// Statistics of per-operation timings, for benchmarks that time each operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    /// Number of timed operations.
    pub count: usize,
    /// Median per-operation time (ns).
    pub p50: f64,
    /// 90th percentile (ns).
    pub p90: f64,
    /// 99th percentile (ns).
    pub p99: f64,
    /// Lower end of the p99's distribution-free 95% interval (ns); absent
    /// when too few operations bound that side ([`claims::quantile_est`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_low: Option<f64>,
    /// Upper end of the p99's interval (ns); absent when open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_high: Option<f64>,
    /// Largest (ns).
    pub max: f64,
    /// True when the distribution has two well-separated modes.
    pub bimodal: bool,
}

/// One independent round of a benchmark: its own set-up, calibration,
/// warm-up and samples, and what the machine was doing meanwhile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Median of the round's samples, in the base unit.
    pub median: f64,
    /// Samples in the round.
    pub n: usize,
    /// Operations per timed batch, as calibrated for this round.
    pub ops: u64,
    /// Seconds since the run started, when the round began.
    pub at_s: f64,
    /// The stability canary just before the round, relative to the run's
    /// baseline (1.0 = as fast as the machine's fast phase; absent when not taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<f64>,
    /// True when the round ran in a slow phase of the machine.
    #[serde(default)]
    pub slow: bool,
    /// False when the round was left out of the estimate (a slow round that
    /// was measured again).
    #[serde(default = "yes")]
    pub used: bool,
    /// Time stolen by the hypervisor from all CPUs during the round, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ms: Option<f64>,
    /// Involuntary context switches of the measuring thread during the round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nivcsw: Option<u64>,
    /// CPU migrations of the measuring thread during the round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    /// 1-minute load average when the round began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// A slow round kept in the estimate is brought to the machine's fast
    /// phase: its time per operation was divided by this factor (its
    /// canary raised to the benchmark's response to the phase), and
    /// `median` is the corrected value (the measured one is `median` times
    /// the factor for a time, divided by it for a rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_factor: Option<f64>,
    /// The process that measured the round: the run's worker number, from
    /// 1 (absent when the round ran in the run's own process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u32>,
    /// CPU time spent over the round's samples, for benchmarks that
    /// account it ([`Bench::cpu_cost`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<cpu::CpuUse>,
    /// Where the round ran: the CPU of its measuring thread at the start
    /// and the end of its samples, and that of the canary check taken with
    /// it (absent in documents made before it was recorded, and where the
    /// kernel does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
}

/// The CPUs a round ran on (see [`Round::placement`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The measuring thread's CPU when its samples began.
    pub start: u32,
    /// Its CPU when they ended (another than `start`: it migrated).
    pub end: u32,
    /// The CPU the canary check taken with the round ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<u32>,
}

impl Placement {
    /// The calling thread's CPU now, when the kernel says.
    pub fn current_cpu() -> Option<u32> {
        // SAFETY: sched_getcpu has no preconditions.
        let c = unsafe { libc::sched_getcpu() };
        u32::try_from(c).ok()
    }
}

fn yes() -> bool {
    true
}

/// The relative half-width (a fraction of the median) beyond which an
/// interval is shown as "wider than ±100%" with words instead of a figure.
pub const WIDE_CI: f64 = 1.0;

/// The relative half-width above which an interval at least twice as wide
/// as its samples' p5 … p95 (log scale) is explained in words.
pub const WIDE_VS_DATA: f64 = 0.25;

/// The result of one benchmark, in base units (see [`BaseUnit`]).
///
/// The statistics are an embedded [`Summary`] of all samples of all rounds,
/// except `median`'s interval (`ci_low`, `ci_high`): with two or more rounds
/// it comes from the spread of the rounds, the top level of variation (see
/// [`crate::stats::round_interval`]). Fields of the summary read through `Deref`
/// (`m.median`, `m.p95`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The benchmark id.
    pub id: String,
    /// The first segment of the id.
    pub area: String,
    /// The base unit of every value.
    pub unit: BaseUnit,
    /// Bytes per operation for throughputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_op: Option<f64>,
    /// The sweep point or variant.
    #[serde(default)]
    pub params: Params,
    /// Median, spread and 95% CI of the median.
    #[serde(flatten)]
    pub summary: Summary,
    /// Operations in each timed batch (the first round's).
    pub ops_per_sample: u64,
    /// Loop overhead subtracted from each sample, ns/op (absent when none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<f64>,
    /// True when the CI half-width exceeds the noise threshold.
    pub noisy: bool,
    /// Human-readable caveats.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Per-operation timing statistics, when the benchmark times each op.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_op: Option<OpStats>,
    /// Where or how it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// The rounds, in the order they ran (empty in documents made before rounds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Round>,
    /// The rounds it was planned, the rounds it took and why (absent in
    /// documents made before rounds were decided after a first stage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_decision: Option<crate::stats::stages::RoundsDecision>,
    /// How far the benchmark's median moves from one of the host's runs to
    /// the next beyond what its rounds explain (log-scale standard
    /// deviation, from its earlier runs at this profile and this one:
    /// [`crate::stats::stages::RowHistory::between_runs_var`]), when the
    /// history had enough runs; `1.96 ×` it is in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_runs: Option<f64>,
    /// The samples, in the base unit.
    pub samples: Vec<f64>,
}

impl std::ops::Deref for Measurement {
    type Target = Summary;
    fn deref(&self) -> &Summary {
        &self.summary
    }
}

impl std::ops::DerefMut for Measurement {
    fn deref_mut(&mut self) -> &mut Summary {
        &mut self.summary
    }
}

impl Measurement {
    /// The value of a named parameter as text, if present.
    pub fn param(&self, name: &str) -> Option<String> {
        self.params.get(name).map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// A measurement whose every sample is `median`, in the base unit
    /// labelled `unit` (`ns/op`, `B/s`, `ops/s`): for tests of findings,
    /// reports and comparisons. Panics on another label.
    pub fn point(id: &str, unit: &str, median: f64) -> Measurement {
        let unit = BaseUnit::from_label(unit)
            .unwrap_or_else(|| panic!("{unit} is not a base unit (ns/op, B/s, ops/s)"));
        Measurement {
            id: id.to_string(),
            area: area_of(id).to_string(),
            unit,
            bytes_per_op: None,
            params: Params::new(),
            summary: Summary::of(&[median]).unwrap_or_else(|| Summary::constant(median)),
            ops_per_sample: 1,
            overhead: None,
            noisy: false,
            warnings: Vec::new(),
            per_op: None,
            details: None,
            rounds: Vec::new(),
            rounds_decision: None,
            between_runs: None,
            samples: vec![median],
        }
    }

    /// A test measurement of one value `median` with a ±`rel` 95% interval.
    #[cfg(test)]
    pub fn within(id: &str, unit: &str, median: f64, rel: f64) -> Measurement {
        let mut m = Measurement::point(id, unit, median);
        m.summary.ci_low = median * (1.0 - rel);
        m.summary.ci_high = median * (1.0 + rel);
        m
    }

    /// A test measurement like [`Measurement::within`] whose 15 samples
    /// spread evenly over the interval, so its fast end is as wide.
    #[cfg(test)]
    pub fn spread(id: &str, unit: &str, median: f64, rel: f64) -> Measurement {
        let mut m = Measurement::within(id, unit, median, rel);
        m.samples = (0..15)
            .map(|i| median * (1.0 - rel + 2.0 * rel * f64::from(i) / 14.0))
            .collect();
        m
    }

    /// The median converted back to nanoseconds per operation, whatever the unit.
    pub fn ns_per_op(&self) -> f64 {
        self.to_ns_per_op(self.median)
    }

    /// A value of this result's unit converted to nanoseconds per operation.
    pub fn to_ns_per_op(&self, v: f64) -> f64 {
        match self.unit {
            BaseUnit::BytesPerSec => self.bytes_per_op.unwrap_or(1.0) * 1e9 / v,
            BaseUnit::OpsPerSec => 1e9 / v,
            BaseUnit::NsPerOp => v,
        }
    }

    /// True when a larger value is better (throughputs, rates).
    pub fn higher_is_better(&self) -> bool {
        self.unit.higher_is_better()
    }

    /// Half-width of the CI relative to the median, as a fraction.
    pub fn ci_rel(&self) -> f64 {
        self.summary.ci_rel()
    }

    /// The interval as a table shows it: `±12.3%`, or `> ±100%` when it
    /// is wider than that (a percentage of that size says nothing a reader
    /// can use; [`Measurement::wide_ci_note`] says why in words).
    pub fn ci_text(&self) -> String {
        let rel = self.ci_rel();
        if rel.is_finite() && rel <= WIDE_CI {
            format!("±{:.1}%", rel * 100.0)
        } else {
            format!("> ±{:.0}%", WIDE_CI * 100.0)
        }
    }

    /// Why the interval cannot be read as a cost, in words, when it is
    /// wider than ±100% or than the samples' own p5…p95 span (the rounds
    /// then disagree more than the samples within them): the interval's
    /// ends and, with rounds, how far apart the slowest and fastest were.
    pub fn wide_ci_note(&self) -> Option<String> {
        let (lo, hi) = (self.p5.min(self.p95), self.p5.max(self.p95));
        let rel = self.ci_rel();
        // Twice as wide as the samples' span (log scale), and wide itself:
        // with three rounds an interval a little wider than a narrow span
        // is the rule, not news.
        let wider_than_data = hi > lo
            && lo > 0.0
            && self.ci_low > 0.0
            && self.ci_low < lo
            && self.ci_high > hi
            && (self.ci_high / self.ci_low).ln() >= 2.0 * (hi / lo).ln()
            && rel > WIDE_VS_DATA;
        if rel.is_finite() && rel <= WIDE_CI && !wider_than_data {
            return None;
        }
        let ends = if self.ci_low > 0.0 && self.ci_high.is_finite() {
            format!(
                "{} … {}",
                crate::units::human(self.ci_low, self.unit),
                crate::units::human(self.ci_high, self.unit)
            )
        } else {
            "unbounded".to_string()
        };
        let (span, so) = if rel.is_finite() && rel <= WIDE_CI {
            (
                "wider than the samples' p5 … p95",
                "more than the samples within them",
            )
        } else {
            (
                "wider than ±100% of the median",
                "so the median is no cost to quote",
            )
        };
        let rounds = self.used_round_medians();
        let (fast, slow) = rounds
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), &r| (a.min(r), b.max(r)));
        let why = if rounds.len() > 1 && fast > 0.0 {
            format!(
                ": its {} rounds disagree (the extreme rounds {} apart), {so}",
                rounds.len(),
                crate::units::fmt_ratio(slow / fast)
            )
        } else {
            format!(", {so}")
        };
        Some(format!("95% interval of the median {ends}, {span}{why}"))
    }

    /// Its warnings other than the noise warning (which reports show as
    /// a mark).
    pub fn other_warnings(&self) -> impl Iterator<Item = &String> {
        self.warnings.iter().filter(|w| !warnings::is_noise(w))
    }

    /// Puts the run-to-run spread the host's history shows (`history`, its
    /// earlier runs of this benchmark) into the interval, as a run does:
    /// records it in `between_runs` and marks the row noisy if it now is.
    /// Nothing without enough history.
    pub fn add_between_runs(&mut self, history: &crate::stats::stages::RowHistory) {
        let rounds = self.used_round_medians();
        if let Some(var) = history.between_runs_var(self.median, &rounds) {
            self.between_runs = Some(var.sqrt());
            self.apply_between_runs();
        }
    }

    /// Widens the interval by `between_runs` (after it was made from the
    /// rounds) and refreshes the noise mark and warning.
    pub fn apply_between_runs(&mut self) {
        let Some(tau) = self.between_runs.filter(|t| *t > 0.0) else {
            return;
        };
        let own = self.ci_rel();
        let between = crate::stats::Z95 * tau;
        (self.summary.ci_low, self.summary.ci_high) =
            crate::stats::widen_interval(self.median, (self.ci_low, self.ci_high), between);
        self.noisy = self.summary.is_noisy();
        self.warnings.retain(|w| !warnings::is_noise(w));
        let noise = warnings::Warning::noise_of(&self.summary).map(|w| match w {
            // more rounds narrow the rounds' part, not this one
            warnings::Warning::Noisy { ci_rel, threshold } if between.exp_m1() > own => {
                warnings::Warning::NoisyBetweenRuns {
                    ci_rel,
                    threshold,
                    between: between.exp_m1(),
                }
            }
            w => w,
        });
        self.warnings.extend(noise.map(|w| w.to_string()));
    }

    /// The medians of the rounds that count toward the estimate.
    pub fn used_round_medians(&self) -> Vec<f64> {
        self.rounds
            .iter()
            .filter(|r| r.used)
            .map(|r| r.median)
            .collect()
    }
}

/// A conclusion derived from several measurements, e.g. a ratio.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The area it belongs to.
    pub area: String,
    /// The sentence shown to the user.
    pub text: String,
    /// The number it states.
    pub value: f64,
    /// The unit of `value` (written as its label: `x` for a ratio, `ns/op`, `B/s`, `B`...).
    pub unit: ValueUnit,
}

#[cfg(test)]
impl Finding {
    /// Asserts that the sentence contains `part` (the sentence is the message otherwise).
    #[track_caller]
    pub(crate) fn assert_says(&self, part: &str) {
        assert!(self.text.contains(part), "{}", self.text);
    }

    /// Asserts that the sentence starts with `start` (the sentence is the message otherwise).
    #[track_caller]
    pub(crate) fn assert_starts_with(&self, start: &str) {
        assert!(self.text.starts_with(start), "{}", self.text);
    }
}

/// The finding of `f` whose sentence contains `part` (the test fails,
/// listing them all, when none does).
#[cfg(test)]
#[track_caller]
pub(crate) fn find_saying<'a>(f: &'a [Finding], part: &str) -> &'a Finding {
    find_where(f, part, |t| t.contains(part))
}

/// The finding of `f` whose sentence starts with `start` (the test fails,
/// listing them all, when none does).
#[cfg(test)]
#[track_caller]
pub(crate) fn find_starting<'a>(f: &'a [Finding], start: &str) -> &'a Finding {
    find_where(f, start, |t| t.starts_with(start))
}

/// The first finding of `f` whose sentence passes `test`; the test fails
/// naming `what` and listing them all when none does.
#[cfg(test)]
#[track_caller]
fn find_where<'a>(f: &'a [Finding], what: &str, test: impl Fn(&str) -> bool) -> &'a Finding {
    f.iter()
        .find(|x| test(&x.text))
        .unwrap_or_else(|| panic!("no '{what}' in {f:#?}"))
}

/// A context for unit tests: quick profile, the system temp dir, no pinning.
#[cfg(test)]
pub(crate) fn test_ctx() -> Ctx {
    test_ctx_with(Host::detect(), &std::env::temp_dir())
}

/// A context for unit tests on `host` that writes in `dir`: quick profile,
/// no pinning.
#[cfg(test)]
pub(crate) fn test_ctx_with(host: Host, dir: &std::path::Path) -> Ctx {
    Ctx {
        profile: Profile::Quick,
        host: Arc::new(host),
        tmp: dir.to_path_buf(),
        dir: dir.to_path_buf(),
        cpu: None,
        stop: Arc::new(AtomicBool::new(false)),
        given: Given::default(),
    }
}

/// The area of an id: its first dotted segment.
pub fn area_of(id: &str) -> &str {
    id.split(['.', '/']).next().unwrap_or(id)
}

#[cfg(test)]
mod wide_interval_tests {
    use super::*;

    /// A throughput whose median interval is `lo … hi`, its samples' span
    /// `p5 … p95`.
    fn tput(median: f64, lo: f64, hi: f64, p5: f64, p95: f64) -> Measurement {
        let mut m = Measurement::point("ipc.fifo.tput/512B/same", "B/s", median);
        m.summary.ci_low = lo;
        m.summary.ci_high = hi;
        m.summary.p5 = p5;
        m.summary.p95 = p95;
        m
    }

    #[test]
    fn a_narrow_interval_is_a_figure_and_needs_no_words() {
        let m = tput(100e6, 95e6, 105e6, 80e6, 120e6);
        assert_eq!(m.ci_text(), "±5.0%");
        assert_eq!(m.wide_ci_note(), None);
    }

    #[test]
    fn an_interval_wider_than_100_percent_is_said_in_words() {
        let mut m = tput(75.6e6, 1.0, 2.2e12, 10e6, 90e6);
        m.rounds = [1.0e6, 70e6, 80e6]
            .iter()
            .map(|&median| Round {
                median,
                used: true,
                ..Round::default()
            })
            .collect();
        assert_eq!(m.ci_text(), "> ±100%");
        let note = m.wide_ci_note().expect("words for a wide interval");
        assert!(note.contains("wider than ±100% of the median"), "{note}");
        assert!(
            note.contains("its 3 rounds disagree (the extreme rounds 80.0× apart)"),
            "{note}"
        );
    }

    #[test]
    fn an_interval_wider_than_the_samples_is_said_in_words() {
        // ±50%, and 3x wide where the samples span 1.3x.
        let m = tput(458e6, 229e6, 687e6, 400e6, 520e6);
        assert_eq!(m.ci_text(), "±50.0%");
        let note = m.wide_ci_note().expect("words for a wide interval");
        assert!(note.contains("wider than the samples' p5 … p95"), "{note}");
        assert!(!note.contains("no cost to quote"), "{note}");
        // A little wider than a narrow span, or narrow itself: the rule
        // with three rounds, no words.
        assert_eq!(tput(458e6, 380e6, 540e6, 400e6, 520e6).wide_ci_note(), None);
        assert_eq!(tput(100e6, 90e6, 110e6, 99e6, 101e6).wide_ci_note(), None);
    }
}
