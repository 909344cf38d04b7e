//! Two-way comparisons: the paths that avoid the pipe's two copies next
//! to the pipe, small writes against large ones, and what crossing CPUs
//! costs a round trip.

use super::rankings::bimodal;
use super::{AREA, dead_zone, usable};
use crate::harness::claims::{Est, Verdict};
use crate::harness::{Finding, Measurement, claims};
use crate::suites::bench::ratio_finding;
use crate::suites::ipc::peer::Placement;
use crate::suites::ipc::{Mech, rtt_id, tput_id};
use crate::units::{BaseUnit, ValueUnit, human, size_label};

/// A path that avoids the pipe's two copies (zero-copy splice into
/// /dev/null, a handed-over memfd, process_vm_readv) next to the copying
/// pipe.
pub(super) fn vs_pipe(ms: &[Measurement], m: Mech, size: usize, p: Placement) -> Option<Finding> {
    let x = usable(ms, &tput_id(m, size, p))?;
    let c = usable(ms, &tput_id(Mech::Pipe, size, p))?;
    let (what, pipe) = match m {
        Mech::Splice => ("zero-copy vmsplice/splice to /dev/null", "the copying pipe"),
        Mech::MemfdPass => ("a memfd handed over (SCM_RIGHTS)", "the pipe's two copies"),
        _ => ("process_vm_readv's single copy", "the pipe's two copies"),
    };
    let (ex, ec) = (pooled_est(ms, x, size, p), pooled_est(ms, c, size, p));
    let k = dead_zone(p);
    let words = claims::compare_beyond(&ex, &ec, k).pick(
        |r| format!("{} is {r} faster", m.name()),
        |r| format!("the pipe is {r} faster"),
        |_| format!("no clear difference of {k}× or more"),
    );
    Some(ratio_finding(
        AREA,
        format!(
            "{what} vs {pipe} at {} ({}): {words} ({} vs {})",
            size_label(size as u64),
            p.param(),
            human(x.median, BaseUnit::BytesPerSec),
            human(c.median, BaseUnit::BytesPerSec)
        ),
        x.median / c.median,
    ))
}

/// `m`'s estimate with the typical interval of the throughputs at its size
/// and placement (every mechanism's, as the ranking pools them): at the
/// quick profile one result's own interval comes from three rounds, and
/// across CPUs one of them often ran in another state of the machine, so
/// its width is luck, and a two-way word decided on it flips from run to
/// run; the set's typical width is steady.
fn pooled_est<'a>(ms: &[Measurement], m: &'a Measurement, size: usize, p: Placement) -> Est<'a> {
    let set: Vec<&Measurement> = Mech::TPUT
        .iter()
        .filter_map(|&k| usable(ms, &tput_id(k, size, p)))
        .collect();
    let pooled = claims::with_typical_width(&set.iter().map(|x| Est::of(x)).collect::<Vec<_>>());
    set.iter()
        .position(|x| x.id == m.id)
        .map_or_else(|| Est::of(m), |i| pooled[i])
}

/// How 512 B writes (dd's default block) compare with 64 KiB writes on a
/// pipe: clearly slower means the small writes pay for their system calls;
/// no clear difference, or faster, means the write size is not what limits
/// the pipe (on two CPUs a 64 KiB write fills it and waits for a wake-up).
pub(super) fn small_writes(ms: &[Measurement], p: Placement) -> Option<Finding> {
    let s = usable(ms, &tput_id(Mech::Pipe, 512, p))?;
    let b = usable(ms, &tput_id(Mech::Pipe, 64 << 10, p))?;
    let pct = 100.0 * s.median / b.median;
    // Across CPUs the pipe's rate moves between runs as it does against
    // a memfd or splice ([`CROSS_CLEAR`]): 512 B writes at 0.64–0.77 of
    // 64 KiB ones read "faster" in one quick run of three at 1.25×.
    let k = dead_zone(p);
    let why = claims::compare_beyond(&Est::of(b), &Est::of(s), k).pick(
        |r| format!("64KiB writes are {r} faster: small writes are system-call bound"),
        |r| format!("512B writes are {r} faster: the write size is not what limits this pipe (wake-ups are)"),
        |_| format!("no clear difference of {k}× or more: the write size is not what limits this pipe"),
    );
    let modes = match (bimodal(s), bimodal(b)) {
        (false, false) => "",
        _ => " (bimodal: the pipe moves bytes at two levels)",
    };
    Some(Finding {
        area: AREA.into(),
        text: format!(
            "a pipe moves {pct:.0}% as many bytes/s with dd's 512B writes as with 64KiB writes ({}, {} vs {}){modes}: {why}",
            p.param(),
            human(s.median, BaseUnit::BytesPerSec),
            human(b.median, BaseUnit::BytesPerSec)
        ),
        value: pct,
        unit: ValueUnit::Percent,
    })
}

/// How much slower a round trip is when the ends are on different CPUs:
/// the median ratio over the blocking mechanisms at 8 B, how many of them
/// are clearly slower across CPUs, and the pipe's comparison.
pub(super) fn placement_cost(ms: &[Measurement]) -> Option<Finding> {
    let pairs: Vec<(Mech, Est, Est)> = Mech::rtt()
        .filter(|&m| m != Mech::RingSpin)
        .filter_map(|m| {
            let s = usable(ms, &rtt_id(m, 8, Placement::Same))?;
            let c = usable(ms, &rtt_id(m, 8, Placement::Cross))?;
            Some((m, Est::of(s), Est::of(c)))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let mut ratios: Vec<f64> = pairs.iter().map(|(_, s, c)| c.value / s.value).collect();
    ratios.sort_by(f64::total_cmp);
    let mid = ratios[ratios.len() / 2];
    let slower = pairs
        .iter()
        .filter(|(_, s, c)| matches!(claims::compare(s, c), Verdict::Better(_)))
        .count();
    let faster = pairs
        .iter()
        .filter(|(_, s, c)| matches!(claims::compare(s, c), Verdict::Worse(_)))
        .count();
    let pipe = match pairs.iter().find(|(m, _, _)| *m == Mech::Pipe) {
        Some((_, s, c)) => format!(
            "; pipe: {} ({} cross vs {} same)",
            claims::compare_text("same-cpu", s, "cross-cpu", c, "faster"),
            human(c.value, BaseUnit::NsPerOp),
            human(s.value, BaseUnit::NsPerOp)
        ),
        None => String::new(),
    };
    Some(ratio_finding(
        AREA,
        format!(
            "an 8B round trip between two CPUs takes {}{} as long as on one CPU over {}: clearly slower across CPUs for {slower}, clearly faster for {faster}, no clear difference for {}{pipe}",
            if pairs.len() > 1 { "a median " } else { "" },
            crate::units::fmt_ratio(mid),
            crate::units::count(pairs.len(), "blocking mechanism"),
            pairs.len() - slower - faster
        ),
        mid,
    ))
}

/// The smallest round trip of the pipe and of the futex ping-pong class by
/// class, closest first, where the machine has more than one class of
/// two CPUs (`cross` stands for its own class): "across packages 2.4×
/// (2.2–2.6) the same-l3 one".
pub(super) fn class_ladders(ms: &[Measurement]) -> Vec<Finding> {
    use crate::host::PlaceClass;
    use crate::suites::topology::ladder;
    let placements = || {
        std::iter::once(Placement::Cross).chain(PlaceClass::ALL.into_iter().map(Placement::Class))
    };
    let mut out = Vec::new();
    for (what, id) in [
        (
            "an 8B pipe round trip",
            &(|p| rtt_id(Mech::Pipe, 8, p)) as &dyn Fn(Placement) -> String,
        ),
        ("a futex ping-pong round trip", &|p: Placement| {
            format!("ipc.futex.rtt/{}", p.label())
        }),
    ] {
        let ids: Vec<String> = placements().map(id).collect();
        let rungs = ladder::rungs(ms, &ids);
        if rungs.len() < 2 {
            continue;
        }
        out.extend(ladder::finding(AREA, what, &rungs));
    }
    out
}
