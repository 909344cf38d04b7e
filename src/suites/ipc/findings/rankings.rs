//! The mechanisms ranked into tiers: throughput and round trip at each
//! size and placement, and the notifications; a bimodal member named in a
//! finding of its own.

use super::{AREA, TIER_GAP, TPUT_TIER_GAP, usable};
use crate::harness::claims::Est;
use crate::harness::{Finding, Measurement, claims};
use crate::suites::ipc::peer::Placement;
use crate::suites::ipc::{Mech, rtt_id, tput_id};
use crate::units::{BaseUnit, ValueUnit, human, size_label};

/// The notification round trips (no payload, or a signal's one value).
pub const NOTIFY: [&str; 3] = ["eventfd", "futex", "sigqueue"];

/// The id of a notification round trip.
pub fn notify_id(name: &str, p: Placement) -> String {
    format!("ipc.{name}.rtt/{}", p.label())
}

/// "notification round trip (same-cpu), …: fastest: futex; then eventfd
/// and sigqueue (2.1× slower)".
pub(super) fn notifications(ms: &[Measurement], p: Placement) -> Vec<Finding> {
    let set: Vec<(&str, &Measurement)> = NOTIFY
        .iter()
        .filter_map(|&n| usable(ms, &notify_id(n, p)).map(|x| (n, x)))
        .collect();
    rtt_tiers(&set, &format!("notification round trip ({})", p.param()))
}

/// The round trips of `set` in tiers apart by a clear [`TIER_GAP`], the
/// quickest named with its time: "`what`, in tiers apart by …"; and the
/// bimodal members in a finding of their own ([`bimodal_finding`]).
pub(super) fn rtt_tiers(set: &[(&str, &Measurement)], what: &str) -> Vec<Finding> {
    let Some((tiers, top)) = tiers_of(set, TIER_GAP) else {
        return Vec::new();
    };
    let mut out = vec![Finding {
        area: AREA.into(),
        text: format!(
            "{what}, in tiers apart by a clear {TIER_GAP}× or more: {tiers} (quickest {})",
            human(top, BaseUnit::NsPerOp),
        ),
        value: top,
        unit: BaseUnit::NsPerOp.into(),
    }];
    out.extend(bimodal_finding(set, what));
    out
}

/// The members of `set` in tiers apart by a clear `gap`, each given the
/// set's typical interval, as words ("fastest: …; then …"), and the
/// fastest's value; `None` with fewer than two members.
fn tiers_of(set: &[(&str, &Measurement)], gap: f64) -> Option<(String, f64)> {
    if set.len() < 2 {
        return None;
    }
    let names: Vec<&str> = set.iter().map(|(n, _)| *n).collect();
    let items =
        claims::with_typical_width(&set.iter().map(|(_, m)| Est::of(m)).collect::<Vec<_>>());
    let tiers = claims::rank_apart(&items, gap);
    let top = items[tiers.leaders[0]].value;
    Some((
        claims::tiers_apart_text(&names, &items, "fastest", gap),
        top,
    ))
}

/// True when a result's figure has two modes: its per-op times where it
/// timed each operation, else its samples.
pub(super) fn bimodal(m: &Measurement) -> bool {
    match &m.per_op {
        Some(_) => claims::bimodal_per_op(m),
        None => claims::sample_modes(m).is_some(),
    }
}

/// The bimodal members of a ranked set (`what`), in a finding of their
/// own, none when no member is: whether a member shows two levels is read
/// from this run's samples and comes and goes with the run, so it no
/// longer changes the ranking's sentence with it (one claim per finding).
fn bimodal_finding(set: &[(&str, &Measurement)], what: &str) -> Option<Finding> {
    let names: Vec<&str> = set
        .iter()
        .filter(|(_, m)| bimodal(m))
        .map(|(n, _)| *n)
        .collect();
    let n = names.len();
    (n > 0).then(|| Finding {
        area: AREA.into(),
        text: format!(
            "{what}: {} bimodal (two levels, so {} place in the order is not firm)",
            claims::join_names(&names),
            if n > 1 { "their" } else { "its" }
        ),
        value: n as f64,
        unit: ValueUnit::Methods,
    })
}

/// "throughput at 64KiB (same-cpu): fastest: ring_spin; then pipe and
/// unix_stream, within noise of each other (3.1× slower); …; splice to
/// /dev/null (sink only, not ranked): 9.8 GB/s".
pub(super) fn tput_ranking(ms: &[Measurement], size: usize, p: Placement) -> Vec<Finding> {
    let set: Vec<(&str, &Measurement)> = Mech::TPUT
        .iter()
        .filter(|m| !m.sink_only())
        .filter_map(|&m| usable(ms, &tput_id(m, size, p)).map(|x| (m.name(), x)))
        .collect();
    let Some((tiers, top)) = tiers_of(&set, TPUT_TIER_GAP) else {
        return Vec::new();
    };
    let splice = match usable(ms, &tput_id(Mech::Splice, size, p)) {
        Some(s) => format!(
            "; splice to /dev/null (sink only, not ranked): {}",
            human(s.median, BaseUnit::BytesPerSec)
        ),
        None => String::new(),
    };
    let what = format!("throughput at {} ({})", size_label(size as u64), p.param());
    let mut out = vec![Finding {
        area: AREA.into(),
        text: format!(
            "{what}, in tiers apart by a clear {TPUT_TIER_GAP}× or more: {tiers}{splice}",
        ),
        value: top,
        unit: BaseUnit::BytesPerSec.into(),
    }];
    out.extend(bimodal_finding(&set, &what));
    out
}

/// "round trip of 8B (cross-cpu): fastest: ring_spin; then pipe, … within
/// noise of each other (30× slower); …".
pub(super) fn rtt_ranking(ms: &[Measurement], size: usize, p: Placement) -> Vec<Finding> {
    let set: Vec<(&str, &Measurement)> = Mech::rtt()
        .filter_map(|m| usable(ms, &rtt_id(m, size, p)).map(|x| (m.name(), x)))
        .collect();
    let what = format!("round trip of {} ({})", size_label(size as u64), p.param());
    rtt_tiers(&set, &what)
}
