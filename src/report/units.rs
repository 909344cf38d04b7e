//! Human units for display. Documents keep base units (ns/op, B/s, ops/s);
//! only what a person reads is scaled. Byte rates use decimal prefixes
//! (1 GB/s = 10^9 B/s), as dd, fio and iperf3 print them.

/// Formats a value given in the base unit `unit` (`ns/op`, `B/s`, `ops/s`).
pub fn human(value: f64, unit: &str) -> String {
    match unit {
        "ns/op" | "ns" => human_ns(value),
        "B/s" => scaled(value, &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"]),
        "ops/s" => scaled(value, &["op/s", "kop/s", "Mop/s", "Gop/s", "Top/s"]),
        "B" => human_bytes(value),
        "x" => crate::suites::fmt_ratio(value),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_scale_to_the_right_unit() {
        assert_eq!(human(0.5, "ns/op"), "0.500 ns");
        assert_eq!(human(12.34, "ns/op"), "12.3 ns");
        assert_eq!(human(1234.0, "ns/op"), "1.23 µs");
        assert_eq!(human(2.5e6, "ns/op"), "2.50 ms");
        assert_eq!(human(3e9, "ns/op"), "3.00 s");
    }

    #[test]
    fn rates_use_decimal_prefixes() {
        assert_eq!(human(8.1e9, "B/s"), "8.10 GB/s");
        assert_eq!(human(512.0, "B/s"), "512 B/s");
        assert_eq!(human(2.0e6, "ops/s"), "2.00 Mop/s");
    }

    #[test]
    fn bytes_use_binary_prefixes() {
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(49152.0), "48.0 KiB");
        assert_eq!(human_bytes(2.0 * 1024.0 * 1024.0), "2.00 MiB");
    }
}
