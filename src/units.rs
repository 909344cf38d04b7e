//! Units and their display, below every other module: suites label their
//! sweep points and state findings with these, reports format results with
//! them, and neither has to import the other.
//!
//! Documents keep base units (ns/op, B/s, ops/s); only what a person reads
//! is scaled. Byte rates use decimal prefixes (1 GB/s = 10^9 B/s), as dd,
//! fio and iperf3 print them; sizes use binary ones (KiB, MiB).

use serde::{Deserialize, Serialize};

/// The base unit a result is kept in (serialised as its label: `ns/op`, `B/s`, `ops/s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BaseUnit {
    /// Nanoseconds per operation (lower is better).
    #[serde(rename = "ns/op")]
    NsPerOp,
    /// Bytes per second (higher is better).
    #[serde(rename = "B/s")]
    BytesPerSec,
    /// Operations per second (higher is better).
    #[serde(rename = "ops/s")]
    OpsPerSec,
}

impl BaseUnit {
    /// The label written in documents and tables.
    pub fn label(self) -> &'static str {
        match self {
            BaseUnit::NsPerOp => "ns/op",
            BaseUnit::BytesPerSec => "B/s",
            BaseUnit::OpsPerSec => "ops/s",
        }
    }

    /// The unit of a label, if it is one of the three.
    pub fn from_label(label: &str) -> Option<BaseUnit> {
        [
            BaseUnit::NsPerOp,
            BaseUnit::BytesPerSec,
            BaseUnit::OpsPerSec,
        ]
        .into_iter()
        .find(|u| u.label() == label)
    }

    /// True when a larger value means a faster machine.
    pub fn higher_is_better(self) -> bool {
        self != BaseUnit::NsPerOp
    }
}

impl std::fmt::Display for BaseUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

impl PartialEq<&str> for BaseUnit {
    fn eq(&self, other: &&str) -> bool {
        self.label() == *other
    }
}

/// The unit of a number a finding states or a report formats: a
/// [`BaseUnit`], or one of the units only findings use (serialised as its
/// label, the same text documents and the history have always held).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ValueUnit {
    /// A ratio of two values, `x` (shown as `14.2×`).
    #[serde(rename = "x")]
    Ratio,
    /// A percentage, `%`.
    #[serde(rename = "%")]
    Percent,
    /// A duration in nanoseconds, `ns` (not per operation).
    #[serde(rename = "ns")]
    Ns,
    /// A size in bytes, `B`.
    #[serde(rename = "B")]
    Bytes,
    /// CPU cycles, `cycles`.
    #[serde(rename = "cycles")]
    Cycles,
    /// A frequency, `Hz`.
    #[serde(rename = "Hz")]
    Hz,
    /// A share of CPUs busy, `CPUs` (1 = one CPU all the time).
    #[serde(rename = "CPUs")]
    Cpus,
    /// A count of CPU feature flags, `flags`.
    #[serde(rename = "flags")]
    Flags,
    /// A count of CPU instruction groups, `groups`: documents written
    /// before the crypto suite counted flags instead still hold it.
    #[serde(rename = "groups")]
    Groups,
    /// A count of methods, `methods`.
    #[serde(rename = "methods")]
    Methods,
    /// A count of pairs, `pairs`.
    #[serde(rename = "pairs")]
    Pairs,
    /// A rank correlation, `ρ`.
    #[serde(rename = "ρ")]
    Rho,
    /// Nanoseconds per GiB, `ns/GiB` (a slope over memory size).
    #[serde(rename = "ns/GiB")]
    NsPerGiB,
    /// Nanoseconds per file descriptor, `ns/fd` (a slope over a descriptor count).
    #[serde(rename = "ns/fd")]
    NsPerFd,
    /// Nanoseconds per 1000 file descriptors, `ns/1000fd`.
    #[serde(rename = "ns/1000fd")]
    NsPer1000Fd,
    /// A base unit: `ns/op`, `B/s`, `ops/s`.
    #[serde(untagged)]
    Base(BaseUnit),
}

impl ValueUnit {
    /// Every unit, each base unit once.
    pub const ALL: [ValueUnit; 18] = [
        ValueUnit::Ratio,
        ValueUnit::Percent,
        ValueUnit::Ns,
        ValueUnit::Bytes,
        ValueUnit::Cycles,
        ValueUnit::Hz,
        ValueUnit::Cpus,
        ValueUnit::Flags,
        ValueUnit::Groups,
        ValueUnit::Methods,
        ValueUnit::Pairs,
        ValueUnit::Rho,
        ValueUnit::NsPerGiB,
        ValueUnit::NsPerFd,
        ValueUnit::NsPer1000Fd,
        ValueUnit::Base(BaseUnit::NsPerOp),
        ValueUnit::Base(BaseUnit::BytesPerSec),
        ValueUnit::Base(BaseUnit::OpsPerSec),
    ];

    /// The label written in documents, the history and tables.
    pub fn label(self) -> &'static str {
        match self {
            ValueUnit::Ratio => "x",
            ValueUnit::Percent => "%",
            ValueUnit::Ns => "ns",
            ValueUnit::Bytes => "B",
            ValueUnit::Cycles => "cycles",
            ValueUnit::Hz => "Hz",
            ValueUnit::Cpus => "CPUs",
            ValueUnit::Flags => "flags",
            ValueUnit::Groups => "groups",
            ValueUnit::Methods => "methods",
            ValueUnit::Pairs => "pairs",
            ValueUnit::Rho => "ρ",
            ValueUnit::NsPerGiB => "ns/GiB",
            ValueUnit::NsPerFd => "ns/fd",
            ValueUnit::NsPer1000Fd => "ns/1000fd",
            ValueUnit::Base(b) => b.label(),
        }
    }
}

impl From<BaseUnit> for ValueUnit {
    fn from(b: BaseUnit) -> ValueUnit {
        ValueUnit::Base(b)
    }
}

impl PartialEq<BaseUnit> for ValueUnit {
    fn eq(&self, other: &BaseUnit) -> bool {
        *self == ValueUnit::Base(*other)
    }
}

impl std::fmt::Display for ValueUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Formats a value given in `unit` (a base unit such as ns/op, B/s, ops/s
/// scaled to a readable prefix; a ratio as `1.05×`; others as the number
/// and the unit's label).
pub fn human(value: f64, unit: impl Into<ValueUnit>) -> String {
    match unit.into() {
        ValueUnit::Base(BaseUnit::NsPerOp) | ValueUnit::Ns => human_ns(value),
        ValueUnit::Base(BaseUnit::BytesPerSec) => {
            scaled(value, &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"])
        }
        ValueUnit::Base(BaseUnit::OpsPerSec) => {
            scaled(value, &["op/s", "kop/s", "Mop/s", "Gop/s", "Top/s"])
        }
        ValueUnit::Bytes => human_bytes(value),
        ValueUnit::Ratio => fmt_ratio(value),
        other => format!("{} {other}", sig3(value)),
    }
}

/// Formats nanoseconds as ns, µs, ms or s with three significant digits.
pub fn human_ns(ns: f64) -> String {
    let (v, u) = if ns.abs() < 1e3 {
        (ns, "ns")
    } else if ns.abs() < 1e6 {
        (ns / 1e3, "µs")
    } else if ns.abs() < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {u}", sig3(v))
}

/// Formats a byte count with binary prefixes: 512 B, 48 KiB, 2.0 MiB.
pub fn human_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{} {}", sig3(v), units[i])
    }
}

fn scaled(v: f64, units: &[&str]) -> String {
    let mut v = v;
    let mut i = 0;
    while v.abs() >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}", sig3(v), units[i])
}

/// Three significant digits, without exponent: 1.23, 12.3, 123, 1234.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 || a == 0.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

/// A ratio as shown in findings: `14.2×`, `1.05×`, `312×`.
pub fn fmt_ratio(r: f64) -> String {
    format!("{}×", fmt_ratio_number(r))
}

/// A ratio's number as [`fmt_ratio`] shows it, without the sign (the ends
/// of an interval beside it): `14.2`, `1.05`, `312`.
pub fn fmt_ratio_number(r: f64) -> String {
    if r == f64::INFINITY {
        // An open bound (too few operations to close it).
        return "∞".to_string();
    }
    fmt_decimals_by_size(r, &[(100.0, 0), (10.0, 1)], 2)
}

/// `x` with the decimals of the first `(from, decimals)` step it reaches
/// (steps largest first), else with `rest` decimals: the figures shown
/// stay about as many as the value grows.
pub fn fmt_decimals_by_size(x: f64, steps: &[(f64, usize)], rest: usize) -> String {
    let decimals = steps
        .iter()
        .find(|(from, _)| x >= *from)
        .map_or(rest, |(_, d)| *d);
    format!("{x:.decimals$}")
}

/// Formats a byte count as a sweep label: `64B`, `4KiB`, `1MiB`, `1GiB`.
pub fn size_label(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (scale, name) in UNITS {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{name}", bytes / scale);
        }
    }
    format!("{bytes}B")
}

/// The parameters a sweep varies, as benchmarks record them: a number in
/// base units, and whether it is a byte count. A result whose id has a
/// `/point` part and one of these parameters is a point of a sweep, and
/// reports draw it as a curve over that parameter.
pub const SWEEP_AXES: [(&str, bool); 4] = [
    ("size", true),
    ("rss_bytes", true),
    ("fds", false),
    ("stride", true),
];

/// Parses `32KiB`, `4MiB`, `64B`, `1.5GiB`, `16K`, `100MB`, `8` into a value
/// and whether it is a byte count.
pub fn parse_quantity(s: &str) -> Option<(f64, bool)> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let k = 1024f64;
    let (mult, bytes) = match suffix {
        "" => (1.0, false),
        "B" | "b" => (1.0, true),
        "KiB" | "K" | "k" => (k, true),
        "MiB" | "M" => (k * k, true),
        "GiB" | "G" => (k * k * k, true),
        "TiB" | "T" => (k * k * k * k, true),
        "kB" | "KB" => (1e3, true),
        "MB" => (1e6, true),
        "GB" => (1e9, true),
        _ => return None,
    };
    Some((v * mult, bytes))
}

/// A count and its noun, singular for one: `1 run`, `3 runs`, `0 runs`
/// (`noun` is the singular; its plural adds `s`).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A size rounded for a finding: `48 KiB`, `4.5 MiB`.
pub fn approx_size(bytes: u64) -> String {
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

/// Every label a finding has carried since schema 1, in the order of
/// [`ValueUnit::ALL`], written out so that a renamed label fails the
/// tests that read old documents.
#[cfg(test)]
pub(crate) const LABELS: [&str; 18] = [
    "x",
    "%",
    "ns",
    "B",
    "cycles",
    "Hz",
    "CPUs",
    "flags",
    "groups",
    "methods",
    "pairs",
    "ρ",
    "ns/GiB",
    "ns/fd",
    "ns/1000fd",
    "ns/op",
    "B/s",
    "ops/s",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_a_thing_is_singular() {
        assert_eq!(count(1, "run"), "1 run");
        assert_eq!(count(0, "run"), "0 runs");
        assert_eq!(count(2, "blocking mechanism"), "2 blocking mechanisms");
    }

    #[test]
    fn latencies_scale_to_the_right_unit() {
        assert_eq!(human(0.5, BaseUnit::NsPerOp), "0.500 ns");
        assert_eq!(human(12.34, BaseUnit::NsPerOp), "12.3 ns");
        assert_eq!(human(1234.0, BaseUnit::NsPerOp), "1.23 µs");
        assert_eq!(human(2.5e6, BaseUnit::NsPerOp), "2.50 ms");
        assert_eq!(human(3e9, BaseUnit::NsPerOp), "3.00 s");
    }

    #[test]
    fn rates_use_decimal_prefixes() {
        assert_eq!(human(8.1e9, BaseUnit::BytesPerSec), "8.10 GB/s");
        assert_eq!(human(512.0, BaseUnit::BytesPerSec), "512 B/s");
        assert_eq!(human(2.0e6, BaseUnit::OpsPerSec), "2.00 Mop/s");
    }

    #[test]
    fn other_units_show_the_number_and_the_label() {
        assert_eq!(human(1234.0, ValueUnit::Ns), "1.23 µs");
        assert_eq!(human(49152.0, ValueUnit::Bytes), "48.0 KiB");
        assert_eq!(human(1.05, ValueUnit::Ratio), "1.05×");
        assert_eq!(human(12.34, ValueUnit::Percent), "12.3 %");
        assert_eq!(human(2.6e9, ValueUnit::Hz), "2600000000 Hz");
        assert_eq!(human(0.5, ValueUnit::Rho), "0.500 ρ");
        assert_eq!(human(3.0, ValueUnit::NsPer1000Fd), "3.00 ns/1000fd");
    }

    #[test]
    fn every_unit_round_trips_through_its_label() {
        assert_eq!(ValueUnit::ALL.map(ValueUnit::label), LABELS);
        for u in ValueUnit::ALL {
            // A new variant fails to compile here until ALL and LABELS have it.
            match u {
                ValueUnit::Ratio
                | ValueUnit::Percent
                | ValueUnit::Ns
                | ValueUnit::Bytes
                | ValueUnit::Cycles
                | ValueUnit::Hz
                | ValueUnit::Cpus
                | ValueUnit::Flags
                | ValueUnit::Groups
                | ValueUnit::Methods
                | ValueUnit::Pairs
                | ValueUnit::Rho
                | ValueUnit::NsPerGiB
                | ValueUnit::NsPerFd
                | ValueUnit::NsPer1000Fd
                | ValueUnit::Base(_) => {}
            }
            let json = serde_json::to_string(&u).unwrap();
            assert_eq!(json, serde_json::to_string(u.label()).unwrap());
            assert_eq!(serde_json::from_str::<ValueUnit>(&json).unwrap(), u);
            assert_eq!(u.to_string(), u.label());
        }
        for b in [
            BaseUnit::NsPerOp,
            BaseUnit::BytesPerSec,
            BaseUnit::OpsPerSec,
        ] {
            assert_eq!(ValueUnit::from(b).label(), b.label());
            assert_eq!(ValueUnit::from(b), b);
        }
        assert!(serde_json::from_str::<ValueUnit>("\"furlongs\"").is_err());
    }

    #[test]
    fn bytes_use_binary_prefixes() {
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(49152.0), "48.0 KiB");
        assert_eq!(human_bytes(2.0 * 1024.0 * 1024.0), "2.00 MiB");
    }

    #[test]
    fn size_labels() {
        assert_eq!(size_label(64), "64B");
        assert_eq!(size_label(4096), "4KiB");
        assert_eq!(size_label(1 << 20), "1MiB");
        assert_eq!(size_label(1536), "1536B");
    }

    #[test]
    fn quantities_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_quantity("32KiB"), Some((32768.0, true)));
        assert_eq!(parse_quantity("64B"), Some((64.0, true)));
        assert_eq!(parse_quantity("1.5MiB"), Some((1.5 * 1048576.0, true)));
        assert_eq!(parse_quantity("100MB"), Some((1e8, true)));
        assert_eq!(parse_quantity("8"), Some((8.0, false)));
        assert_eq!(parse_quantity("fast"), None);
        assert_eq!(parse_quantity("4x"), None);
    }
}
