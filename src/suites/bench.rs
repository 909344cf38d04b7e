//! How a suite declares its benchmarks and reads its results: [`FnBench`]
//! (plain data, a [`Budget`] and a prepare closure), [`Looped`] for the
//! cheap closure-per-operation case, and the lookups findings use.
//!
//! Why one bench type: a budget, an interleave key or a profile gate is a
//! field here, so a suite never needs its own `Bench` implementation that
//! forwards the rest.

use std::time::Duration;

use crate::harness::{
    Bench, Ctx, Finding, Measurement, Overhead, Params, PrepareError, Profile, Timed, Unit,
};
use crate::host::Host;
use crate::units::ValueUnit;

/// The prepare step of a [`FnBench`].
pub type PrepareFn = Box<dyn Fn(&Ctx) -> Result<Box<dyn Timed>, PrepareError> + Send + Sync>;
/// How long a run should expect a benchmark to take, from the profile and
/// its budget there.
type ExpectedFn = Box<dyn Fn(Profile, Duration) -> Duration + Send + Sync>;

/// How long a benchmark may run at each profile, calibration and warm-up
/// included: the one budget mechanism of every benchmark.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// The profile's default budget times a factor per profile (quick,
    /// default, thorough).
    Scaled([f64; 3]),
    /// A fixed time per profile (quick, default, thorough).
    Fixed([Duration; 3]),
}

impl Budget {
    /// The profile's default budget.
    pub const DEFAULT: Budget = Budget::Scaled([1.0; 3]);

    /// The profile's default budget times `f` at every profile.
    pub const fn scaled(f: f64) -> Budget {
        Budget::Scaled([f; 3])
    }

    /// The time allowed at `profile`.
    pub fn at(self, profile: Profile) -> Duration {
        let i = match profile {
            Profile::Quick => 0,
            Profile::Default => 1,
            Profile::Thorough => 2,
        };
        match self {
            Budget::Scaled(f) => profile.default_budget().mul_f64(f[i]),
            Budget::Fixed(d) => d[i],
        }
    }
}

/// A benchmark made of plain data and a prepare closure: the way every
/// suite declares its benchmarks.
pub struct FnBench {
    id: String,
    summary: String,
    unit: Unit,
    params: Params,
    overhead: Overhead,
    interleave: Option<String>,
    budget: Budget,
    min_profile: Profile,
    cpu_cost: bool,
    paced: bool,
    on_request: bool,
    expected: Option<ExpectedFn>,
    setup: Duration,
    group_setup: Duration,
    one_op: Option<Duration>,
    refused: Option<fn(u64) -> bool>,
    refused_arg: u64,
    prepare: PrepareFn,
}

impl FnBench {
    /// A benchmark with the given id, summary, unit and set-up.
    pub fn new(
        id: impl Into<String>,
        summary: impl Into<String>,
        unit: Unit,
        prepare: impl Fn(&Ctx) -> Result<Box<dyn Timed>, PrepareError> + Send + Sync + 'static,
    ) -> FnBench {
        FnBench {
            id: id.into(),
            summary: summary.into(),
            unit,
            params: Params::new(),
            overhead: Overhead::None,
            interleave: None,
            budget: Budget::DEFAULT,
            min_profile: Profile::Quick,
            cpu_cost: false,
            paced: false,
            on_request: false,
            expected: None,
            setup: Duration::ZERO,
            group_setup: Duration::ZERO,
            one_op: None,
            refused: None,
            refused_arg: 0,
            prepare: Box::new(prepare),
        }
    }

    /// Adds a named parameter.
    pub fn param(mut self, name: &str, value: impl Into<serde_json::Value>) -> Self {
        self.params.insert(name.to_string(), value.into());
        self
    }

    /// Subtracts the empty-loop overhead.
    pub fn subtract_loop(mut self) -> Self {
        self.overhead = Overhead::EmptyLoop;
        self
    }

    /// Interleaves samples with the other benchmarks of the same key.
    pub fn interleave(mut self, key: impl Into<String>) -> Self {
        self.interleave = Some(key.into());
        self
    }

    /// Sets the time budget per profile.
    pub fn with_budget(mut self, b: Budget) -> Self {
        self.budget = b;
        self
    }

    /// Multiplies the profile's default budget (2.0 = twice as long): a
    /// shorthand for `with_budget(Budget::scaled(f))`.
    pub fn budget_scale(self, f: f64) -> Self {
        self.with_budget(Budget::scaled(f))
    }

    /// Says how long a run should expect it to take ([`Bench::expected`]):
    /// `f(profile, budget)`.
    pub fn expected_by(
        mut self,
        f: impl Fn(Profile, Duration) -> Duration + Send + Sync + 'static,
    ) -> Self {
        self.expected = Some(Box::new(f));
        self
    }

    /// Says that each round spends about `per_round` setting it up and
    /// tearing it down (a peer, a socket pair, a file, arrays to fill)
    /// besides its samples: the run-time estimate counts it
    /// ([`Bench::expected`]), nothing else does.
    pub fn setup_time(mut self, per_round: Duration) -> Self {
        self.setup = per_round;
        self
    }

    /// Says that each round spends about `per_round` on a set-up its whole
    /// interleave group shares (a parent's memory touched once for every
    /// member): the run-time estimate counts it once per group, whichever
    /// members are selected ([`Bench::group_setup`]).
    pub fn group_setup_time(mut self, per_round: Duration) -> Self {
        self.group_setup = per_round;
        self
    }

    /// Says that each of its samples is one operation of about `op`
    /// (its `Timed::max_ops` is 1): the run-time estimate counts samples of
    /// that length, not grown to the sample target
    /// ([`crate::harness::round::expected_one_op`]).
    pub fn one_op_samples(mut self, op: Duration) -> Self {
        self.one_op = Some(op);
        self
    }

    /// Says that its preparation will skip it when `refused(arg)` holds (a
    /// limit read at plan time): the run-time estimate counts no time then.
    pub fn refused_when(mut self, refused: fn(u64) -> bool, arg: u64) -> Self {
        self.refused = Some(refused);
        self.refused_arg = arg;
        self
    }

    /// Leaves the benchmark out of runs at profiles below `p`.
    pub fn min_profile(mut self, p: Profile) -> Self {
        self.min_profile = p;
        self
    }

    /// Accounts the CPU time of its samples (`cpu_*` keys in `details`).
    pub fn cpu_cost(mut self) -> Self {
        self.cpu_cost = true;
        self
    }

    /// Its pace is set by a cap, not by the machine (see [`Bench::paced`]).
    pub fn paced(mut self) -> Self {
        self.paced = true;
        self
    }

    /// Left out of the whole-machine quick profile (see
    /// [`Bench::on_request`]).
    pub fn on_request(mut self) -> Self {
        self.on_request = true;
        self
    }

    /// Boxes it for a suite's list.
    pub fn boxed(self) -> Box<dyn Bench> {
        Box::new(self)
    }
}

impl Bench for FnBench {
    fn id(&self) -> &str {
        &self.id
    }
    fn summary(&self) -> &str {
        &self.summary
    }
    fn unit(&self) -> Unit {
        self.unit
    }
    fn params(&self) -> Params {
        self.params.clone()
    }
    fn overhead(&self) -> Overhead {
        self.overhead
    }
    fn budget(&self, profile: Profile) -> Duration {
        self.budget.at(profile)
    }
    fn expected(&self, profile: Profile) -> Duration {
        if self.refused.is_some_and(|f| f(self.refused_arg)) {
            return Duration::ZERO;
        }
        let budget = self.budget.at(profile);
        match &self.expected {
            Some(f) => f(profile, budget),
            None => match self.one_op {
                Some(op) => crate::harness::round::expected_one_op(profile, budget, self.setup, op),
                None => crate::harness::round::expected_slow(
                    profile,
                    budget,
                    self.setup,
                    Duration::ZERO,
                ),
            },
        }
    }
    fn group_setup(&self, profile: Profile) -> Duration {
        if self.refused.is_some_and(|f| f(self.refused_arg)) {
            return Duration::ZERO;
        }
        self.group_setup * profile.rounds() as u32
    }
    fn interleave(&self) -> Option<&str> {
        self.interleave.as_deref()
    }
    fn runs_at(&self, profile: Profile) -> bool {
        profile >= self.min_profile
    }
    fn cpu_cost(&self) -> bool {
        self.cpu_cost
    }
    fn paced(&self) -> bool {
        self.paced
    }
    fn on_request(&self) -> bool {
        self.on_request
    }
    fn prepare(&self, ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
        (self.prepare)(ctx)
    }
}

/// A [`Timed`] that calls a closure once per operation, with owned state
/// and optional warnings: the shape of most cheap benchmarks.
pub struct Looped<F: FnMut()> {
    f: F,
    warnings: Vec<String>,
    details: Option<serde_json::Value>,
}

impl<F: FnMut()> Looped<F> {
    /// Times `f` once per operation.
    pub fn new(f: F) -> Self {
        Looped {
            f,
            warnings: Vec::new(),
            details: None,
        }
    }

    /// Attaches facts to the result (what a check at set-up found).
    pub fn with_details(mut self, d: serde_json::Value) -> Self {
        self.details = Some(d);
        self
    }

    /// Attaches a caveat to the result.
    pub fn warn(mut self, w: impl Into<String>) -> Self {
        self.warnings.push(w.into());
        self
    }

    /// Boxes it for [`Bench::prepare`].
    pub fn boxed(self) -> Box<dyn Timed>
    where
        F: 'static,
    {
        Box::new(self)
    }
}

impl<F: FnMut()> Timed for Looped<F> {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        Ok(crate::harness::timer::time_loop(ops, &mut self.f))
    }
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
    fn details(&self) -> Option<serde_json::Value> {
        self.details.clone()
    }
}

/// The median of the measurement with id `id`, if the run has it.
pub fn median_of(ms: &[Measurement], id: &str) -> Option<f64> {
    ms.iter().find(|m| m.id == id).map(|m| m.median)
}

/// The measurement with id `id`, if the run has it.
pub fn get<'a>(ms: &'a [Measurement], id: &str) -> Option<&'a Measurement> {
    ms.iter().find(|m| m.id == id)
}

/// A finding that states `value` (a ratio, unit `x`).
pub fn ratio_finding(area: &str, text: String, value: f64) -> Finding {
    Finding {
        area: area.to_string(),
        text,
        value,
        unit: ValueUnit::Ratio,
    }
}

/// A group of benchmarks of one area, with the findings derived from them.
pub struct Suite {
    /// The area name, the first segment of every id in it.
    pub name: &'static str,
    /// One line describing the suite.
    pub summary: &'static str,
    /// The suite's benchmarks on this machine.
    pub benches: fn(&Host) -> Vec<Box<dyn Bench>>,
    /// Findings from the measurements of a run (any subset may be present).
    pub findings: fn(&[Measurement]) -> Vec<Finding>,
}

/// The id of the effective-clock benchmark.
pub const CLOCK_ID: &str = "cpu.clock";

/// The time per operation of `m` undisturbed: its 5th percentile of time
/// (the 95th of a rate). On a shared machine interference only ever adds
/// time, so for properties of the hardware (cycles per instruction, cache
/// latency) the fast end of the samples is the estimate, not the median.
pub fn fast_ns_per_op(m: &Measurement) -> f64 {
    if m.higher_is_better() {
        m.to_ns_per_op(m.p95)
    } else {
        m.p5
    }
}

/// The clock of a run in GHz: `cpu.clock` if measured (its fast end, see
/// [`fast_ns_per_op`]), else the estimate recorded by a memory latency benchmark.
pub fn run_ghz(ms: &[Measurement]) -> Option<f64> {
    if let Some(m) = get(ms, CLOCK_ID) {
        return Some(1.0 / fast_ns_per_op(m)).filter(|g| g.is_finite() && *g > 0.0);
    }
    ms.iter()
        .filter_map(|m| m.details.as_ref()?.get("ghz_estimate")?.as_f64())
        .find(|g| g.is_finite() && *g > 0.0)
}

/// Share of the CPUs a row's work can use above which, over the whole
/// interval of its CPU share, the CPU is what limits it.
pub const CPU_BOUND: f64 = 0.85;
/// Share below which, over the whole interval, the CPU is not what limits it.
pub const CPU_SPARE: f64 = 0.5;

/// What limits a throughput row, from the CPU its samples kept busy
/// (`cpu_*` details): "the CPU" when the whole interval of its share is at
/// least [`CPU_BOUND`] of the CPUs its work can use (`threads`, at most
/// the CPUs the run had), `other` (the device, the path) when it is at
/// most [`CPU_SPARE`] of them, no verdict in between. The text gives the
/// share, its kernel part and the share per 100 MB/s moved. `None` without
/// the details.
pub fn cpu_limit_finding(m: &Measurement, threads: f64, other: &str) -> Option<Finding> {
    let d = m.details.as_ref()?;
    let f = |k: &str| d.get(k).and_then(serde_json::Value::as_f64);
    let (share, low, high) = (f("cpu_share")?, f("cpu_share_low")?, f("cpu_share_high")?);
    let sys = f("cpu_sys_share")?;
    let per_100 = f("cpu_share_per_100mbps")?;
    let usable = threads.min(f("cpu_cpus").unwrap_or(threads)).max(1.0);
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    let verdict = if low >= CPU_BOUND * usable {
        "the CPU limits it".to_string()
    } else if high <= CPU_SPARE * usable {
        format!("{other}, not the CPU, limits it")
    } else {
        "the CPU is busy but its interval cannot say whether it limits it".to_string()
    };
    let of = if usable > 1.0 {
        format!(" of the {usable:.0} CPUs its work can use")
    } else {
        String::new()
    };
    Some(Finding {
        area: m.area.clone(),
        text: format!(
            "{} at {}: {} of one CPU busy ({}–{}; kernel {}){of}, {} of one CPU per 100 MB/s; {verdict}",
            m.id,
            crate::units::human(m.median, m.unit),
            pct(share),
            pct(low),
            pct(high),
            pct(sys),
            pct(per_100),
        ),
        value: share,
        unit: ValueUnit::Cpus,
    })
}

/// Fraction of currently available memory one benchmark may take.
const MAX_SHARE_OF_AVAILABLE: f64 = 0.5;

/// Refuses (as a skip) a working set larger than half the memory available now.
pub fn check_memory(bytes: u64) -> Result<(), PrepareError> {
    if let Some(avail) = crate::host::mem_available_now()
        && bytes as f64 > avail as f64 * MAX_SHARE_OF_AVAILABLE
    {
        return Err(PrepareError::Skip(format!(
            "needs {} MiB but only {} MiB of memory is available; free memory or use a shorter profile",
            bytes >> 20,
            avail >> 20
        )));
    }
    Ok(())
}

/// Refuses user data (`given`) that no selected benchmark measures: none
/// of `benches` has an id starting with `prefix`. `refusal` says what to
/// select instead.
pub fn require_selected(
    benches: &[Box<dyn Bench>],
    given: bool,
    prefix: &str,
    refusal: &str,
) -> Result<(), String> {
    if !given || benches.iter().any(|b| b.id().starts_with(prefix)) {
        Ok(())
    } else {
        Err(refusal.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cpu(share: f64, low: f64, high: f64) -> Measurement {
        let mut m = Measurement::point("storage.seq.read.cold", "B/s", 1e8);
        m.details = Some(serde_json::json!({
            "cpu_share": share, "cpu_share_low": low, "cpu_share_high": high,
            "cpu_sys_share": share * 0.9, "cpu_share_per_100mbps": share, "cpu_cpus": 2,
        }));
        m
    }

    #[test]
    fn a_one_operation_bench_and_a_refused_one_say_so_in_their_expected_time() {
        let plain = || {
            FnBench::new("t.x", "x", Unit::Latency, |_| {
                Err(PrepareError::Skip("never prepared".into()))
            })
        };
        let p = Profile::Default;
        let op = Duration::from_micros(150);
        let one = plain()
            .setup_time(Duration::from_millis(2))
            .one_op_samples(op);
        assert_eq!(
            one.expected(p),
            crate::harness::round::expected_one_op(
                p,
                p.default_budget(),
                Duration::from_millis(2),
                op
            )
        );
        assert!(one.expected(p) < plain().expected(p));
        let refused = plain().one_op_samples(op).refused_when(|n| n > 10, 11);
        assert_eq!(refused.expected(p), Duration::ZERO);
        let allowed = plain().one_op_samples(op).refused_when(|n| n > 10, 10);
        assert_eq!(
            allowed.expected(p),
            one.expected(p) - 5 * Duration::from_millis(2)
        );
    }

    #[test]
    fn cpu_limit_words_follow_the_interval_of_the_share() {
        let f = cpu_limit_finding(&with_cpu(0.38, 0.3, 0.45), 1.0, "the device").unwrap();
        f.assert_says("38% of one CPU busy");
        assert!(
            f.text.ends_with("the device, not the CPU, limits it"),
            "{}",
            f.text
        );
        let f = cpu_limit_finding(&with_cpu(0.97, 0.9, 1.0), 1.0, "the device").unwrap();
        assert!(f.text.ends_with("the CPU limits it"), "{}", f.text);
        // a point above the line with an interval across it: no verdict
        let f = cpu_limit_finding(&with_cpu(0.9, 0.4, 1.0), 1.0, "the device").unwrap();
        f.assert_says("cannot say");
        // two threads' work on two CPUs: 1.3 CPUs is not saturated
        let f = cpu_limit_finding(&with_cpu(1.3, 1.1, 1.5), 2.0, "the path").unwrap();
        assert!(f.text.contains("cannot say") && f.text.contains("of the 2 CPUs"));
        assert!(cpu_limit_finding(&Measurement::point("a.b", "B/s", 1.0), 1.0, "x").is_none());
    }

    #[test]
    fn budgets_scale_or_fix_per_profile() {
        assert_eq!(
            Budget::DEFAULT.at(Profile::Default),
            Profile::Default.default_budget()
        );
        assert_eq!(
            Budget::scaled(2.0).at(Profile::Quick),
            Profile::Quick.default_budget() * 2
        );
        let ms = Duration::from_millis;
        let fixed = Budget::Fixed([ms(1), ms(2), ms(3)]);
        assert_eq!(fixed.at(Profile::Thorough), ms(3));
        let b = FnBench::new("a.b", "x", Unit::Latency, |_| {
            Err(PrepareError::Skip("test".into()))
        })
        .with_budget(Budget::Scaled([1.0, 1.5, 1.0]));
        assert_eq!(
            b.budget(Profile::Default),
            Profile::Default.default_budget().mul_f64(1.5)
        );
    }
}
