//! The memory suite's findings on bandwidth: one thread's and all
//! threads' copy and read bandwidth against the cache levels, and the copy
//! methods ranked in tiers apart by a clear gap.

use super::*;

pub(in crate::suites::memory) fn bandwidth_findings(ms: &[Measurement]) -> Vec<Finding> {
    use crate::units::human;
    let mut out = Vec::new();
    for kernel in [
        Kernel::Read,
        Kernel::Write,
        Kernel::Copy,
        Kernel::StreamTriad,
    ] {
        let one = crate::suites::bench::get(ms, &bandwidth_id(kernel, false));
        let all = crate::suites::bench::get(ms, &bandwidth_id(kernel, true));
        let (Some(one), Some(all)) = (one, all) else {
            continue;
        };
        let threads = all
            .details
            .as_ref()
            .and_then(|d| d.get("threads")?.as_u64())
            .unwrap_or(0);
        let dynamic = crate::suites::bench::median_of(
            ms,
            &format!("memory.bandwidth.{}/threads=all_dynamic", kernel.name()),
        )
        .map(|d| {
            format!(
                ", {} with blocks handed out dynamically",
                human(d, BaseUnit::BytesPerSec)
            )
        })
        .unwrap_or_default();
        out.push(finding(
            format!(
                "{} bandwidth: {} on one thread, {} on {threads} threads in fixed slices{dynamic} ({}; {} accounting)",
                kernel.name(),
                human(one.median, BaseUnit::BytesPerSec),
                human(all.median, BaseUnit::BytesPerSec),
                fmt_ratio(all.median / one.median),
                kernel.accounting()
            ),
            all.median / one.median,
            ValueUnit::Ratio,
        ));
    }
    let memory = crate::suites::bench::median_of(ms, &bandwidth_id(Kernel::Copy, false));
    // A level sysfs lists but the latency curve did not show ("L3 not
    // found") is named as sysfs's, never as a level found.
    let unseen: Vec<String> = Latency::of(ms)
        .map(|l| l.unseen_levels().into_iter().map(level_name).collect())
        .unwrap_or_default();
    let cached: Vec<(String, f64)> = CACHED_COPY_SIZES
        .iter()
        .filter_map(|&s| {
            let m = crate::suites::bench::get(ms, &cached_copy_id(s))?;
            let fits = m.param("fits").filter(|f| f != "null");
            Some((
                format!(
                    "{}{} {}",
                    crate::units::approx_size(s),
                    fits.map(|f| if unseen.contains(&f) {
                        format!(" ({f} in sysfs, not found on the curve)")
                    } else {
                        format!(" ({f})")
                    })
                    .unwrap_or_default(),
                    human(m.median, BaseUnit::BytesPerSec)
                ),
                m.median,
            ))
        })
        .collect();
    if let (Some(mem), Some(best)) = (memory, cached.iter().map(|c| c.1).max_by(f64::total_cmp)) {
        out.push(finding(
            format!(
                "memcpy within caches: {}; from memory {} ({} slower than the fastest)",
                cached
                    .iter()
                    .map(|c| c.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                human(mem, BaseUnit::BytesPerSec),
                fmt_ratio(best / mem)
            ),
            best / mem,
            ValueUnit::Ratio,
        ));
    }
    out
}

/// Where glibc's default (member `i` of the ranked set, estimate `glibc`)
/// stands against the top tier, said by the tiers of the ranking beside it
/// (`tiers`, `top` the fastest method): in the top tier when the ranking
/// could not set it apart, with its ratio to the fastest and that ratio's
/// interval as measured; else slower than the top tier by that ratio. A
/// word of its own at the tiers' gap ([`CLEAR_GAP`]) against the fastest
/// method alone disagreed with the ranking (glibc in the top tier of "no
/// clear 1.25× gap between …" and "1.58× slower than the top tier" in one
/// run) and flipped between runs where the ranking did not: the fastest of
/// several methods, picked by its point estimate, sits above its tier by
/// its luck.
///
/// [`CLEAR_GAP`]: crate::harness::claims::CLEAR_GAP
pub(in crate::suites::memory) fn glibc_stands(
    tiers: &crate::harness::claims::Tiers,
    i: usize,
    glibc: &crate::harness::claims::Est,
    top: &crate::harness::claims::Est,
) -> String {
    use crate::harness::claims::speedup;
    if tiers.tiers.first().is_some_and(|t| t.contains(&i)) {
        format!("in the top tier: {} of the fastest", speedup(glibc, top))
    } else {
        format!("{} slower than the top tier", speedup(top, glibc))
    }
}

/// The methods of each operation ranked into tiers apart by a clear gap
/// ([`CLEAR_GAP`], on the set's pooled interval widths: methods a few per
/// cent apart chain into one tier instead of splitting with the rounds'
/// luck, and a gap splits only when its whole interval is [`CLEAR_GAP`] or
/// more, [`crate::harness::claims::rank_clearly_apart`], as groups about that far apart read one
/// way in one run and another in the next); the machine's bandwidth is the top
/// tier's. Where glibc's default stands against the top tier
/// ([`glibc_stands`]) is a finding of its own per side of its threshold, so a word that moves in one leaves
/// the others alone.
pub(in crate::suites::memory) fn method_findings(ms: &[Measurement]) -> Vec<Finding> {
    use crate::harness::claims::{
        CLEAR_GAP, Est, rank_clearly_apart, tiers_clearly_apart_text, with_typical_width,
    };
    use crate::units::human;
    let mut out = Vec::new();
    for op in [Op::Read, Op::Write, Op::Copy] {
        let plain_id = format!("memory.bandwidth.{}/threads=1", op.name());
        let plain_name = match op {
            Op::Copy => "memcpy in 32 MiB calls",
            _ => "a plain loop",
        };
        let mut all: Vec<(&str, Est)> = op
            .methods()
            .iter()
            .filter_map(|&m| {
                let r = crate::suites::bench::get(ms, &methods::method_id(op, m))?;
                Some((m.name(op), Est::of(r)))
            })
            .collect();
        if let Some(p) = crate::suites::bench::get(ms, &plain_id) {
            all.push((plain_name, Est::of(p)));
        }
        all.retain(|c| c.1.value.is_finite() && c.1.value > 0.0);
        if all.len() < 2 {
            continue;
        }
        let names: Vec<&str> = all.iter().map(|c| c.0).collect();
        let ests = with_typical_width(&all.iter().map(|c| c.1).collect::<Vec<Est>>());
        let tiers = rank_clearly_apart(&ests, CLEAR_GAP);
        let top = ests[tiers.leaders[0]];
        out.push(Finding {
            area: "memory".into(),
            text: format!(
                "the machine's {} bandwidth (one thread): {} ({})",
                op.name(),
                human(top.value, BaseUnit::BytesPerSec),
                tiers_clearly_apart_text(&names, &ests, "fastest", CLEAR_GAP),
            ),
            value: top.value,
            unit: BaseUnit::BytesPerSec.into(),
        });
        if op == Op::Read {
            continue;
        }
        for (m, side) in [(Method::GlibcAbove, "above"), (Method::GlibcBelow, "below")] {
            let Some(i) = names.iter().position(|n| *n == m.name(op)) else {
                continue;
            };
            let e = &ests[i];
            let stands = glibc_stands(&tiers, i, e, &top);
            out.push(Finding {
                area: "memory".into(),
                text: format!(
                    "{} bandwidth: glibc {} {side} its non-temporal threshold: {} ({stands})",
                    op.name(),
                    if op == Op::Copy { "memcpy" } else { "memset" },
                    human(e.value, BaseUnit::BytesPerSec),
                ),
                value: top.value / e.value,
                unit: ValueUnit::Ratio,
            });
        }
    }
    out
}
