//! File changes: how soon a waiting process hears of a write (inotify,
//! fanotify, a polling loop), what a poll burns while idle, and a command
//! started on the event.

use super::rankings::rtt_tiers;
use super::{AREA, dead_zone, usable};
use crate::harness::claims::{CLEAR_GAP, Est};
use crate::harness::{Finding, Measurement, claims};
use crate::suites::bench::ratio_finding;
use crate::suites::ipc::peer::Placement;
use crate::units::{BaseUnit, ValueUnit, human};

/// The file-change event round trips, with what each names in a finding.
const FILE_EVENTS: [(crate::suites::ipc::notify::Watch, &str); 5] = {
    use crate::suites::ipc::notify::Watch;
    [
        (Watch::Inotify, "inotify IN_MODIFY"),
        (Watch::InotifyRename, "inotify IN_MOVED_TO (rename)"),
        (Watch::InotifyCloseWrite, "inotify IN_CLOSE_WRITE"),
        (Watch::Fanotify, "fanotify FAN_MODIFY"),
        (Watch::FanotifyCloseWrite, "fanotify FAN_CLOSE_WRITE"),
    ]
};

/// "file-change event round trip (same-cpu), in tiers apart by a clear 2×
/// or more: fastest: inotify IN_MODIFY, …": the events ranked.
pub(super) fn file_events(ms: &[Measurement], p: Placement) -> Vec<Finding> {
    let set: Vec<(&str, &Measurement)> = FILE_EVENTS
        .iter()
        .filter_map(|&(w, n)| usable(ms, &crate::suites::ipc::notify_id(w, p)).map(|x| (n, x)))
        .collect();
    rtt_tiers(
        &set,
        &format!("file-change event round trip ({})", p.param()),
    )
}

/// "fanotify's FAN_MODIFY reaches the waiting process in 12 µs (same-cpu,
/// half a round trip), inotify's IN_MODIFY in 10 µs: fanotify is 1.2×
/// (…) slower": the same event by the two interfaces, decided with the
/// two-way comparisons' dead zone.
pub(super) fn fanotify_vs_inotify(ms: &[Measurement], p: Placement) -> Option<Finding> {
    use crate::suites::ipc::notify::Watch;
    let f = usable(ms, &crate::suites::ipc::notify_id(Watch::Fanotify, p))?;
    let i = usable(ms, &crate::suites::ipc::notify_id(Watch::Inotify, p))?;
    let k = dead_zone(p);
    let words = claims::compare_beyond(&Est::of(f), &Est::of(i), k).pick(
        |r| format!("fanotify is {r} quicker"),
        |r| format!("inotify is {r} quicker"),
        |_| format!("no clear difference of {k}× or more"),
    );
    let half = |m: &Measurement| human(m.median / 2.0, BaseUnit::NsPerOp);
    Some(ratio_finding(
        AREA,
        format!(
            "fanotify's FAN_MODIFY reaches the waiting process in {} ({}, half a round trip), inotify's IN_MODIFY in {}: {words}",
            half(f),
            p.param(),
            half(i)
        ),
        f.median / i.median,
    ))
}

/// "a 10 ms fstat() poll sees a write in 10.1 ms (same-cpu, half a round
/// trip): 9.2× (…) the 1 ms poll's wait".
pub(super) fn slow_poll(ms: &[Measurement], p: Placement) -> Option<Finding> {
    use crate::suites::ipc::notify::{POLL, POLL_SLOW, Watch};
    let slow = usable(ms, &crate::suites::ipc::notify_id(Watch::StatPollSlow, p))?;
    let half = |m: &Measurement| human(m.median / 2.0, BaseUnit::NsPerOp);
    let mut text = format!(
        "a {} ms fstat() poll sees a write in {} ({}, half a round trip)",
        POLL_SLOW.as_millis(),
        half(slow),
        p.param()
    );
    let Some(fast) = usable(ms, &crate::suites::ipc::notify_id(Watch::StatPoll, p)) else {
        return Some(Finding {
            area: AREA.into(),
            text,
            value: slow.median / 2.0,
            unit: BaseUnit::NsPerOp.into(),
        });
    };
    let words = claims::compare_beyond(&Est::of(slow), &Est::of(fast), CLEAR_GAP).pick(
        |r| format!("{r} quicker than"),
        |r| format!("{r} the wait of"),
        |_| format!("no clear difference of {CLEAR_GAP}× or more from"),
    );
    text.push_str(&format!(
        ": {words} the {} ms poll ({})",
        POLL.as_millis(),
        half(fast)
    ));
    Some(ratio_finding(AREA, text, slow.median / fast.median))
}

/// A polling row's idle burn from its details: the share of a CPU as an
/// estimate, and the CPU time per look (ns).
fn idle_burn_of(m: &Measurement) -> Option<(Est<'_>, f64)> {
    let d = m.details.as_ref()?.get("idle_cpu")?;
    let f = |k: &str| d.get(k).and_then(serde_json::Value::as_f64);
    let share = f("share").filter(|v| v.is_finite() && *v > 0.0)?;
    let e = Est::cost(
        share,
        f("share_low").unwrap_or(share),
        f("share_high").unwrap_or(share),
    );
    Some((e, f("cpu_per_look_ns").unwrap_or(f64::NAN)))
}

/// A share of a CPU as a percentage with three significant digits: "0.421%".
pub(super) fn percent(share: f64) -> String {
    let p = share * 100.0;
    let digits = if p >= 10.0 {
        1
    } else if p >= 1.0 {
        2
    } else {
        (2.0 - p.log10().floor()).clamp(2.0, 6.0) as usize
    };
    format!("{p:.digits$}%")
}

/// "a 1 ms stat() poll burns 0.42% (0.40–0.45%) of a CPU while idle (4.2
/// µs of CPU per look), a 10 ms one 0.05% (…): the 10 ms loop burns 8.4×
/// (…) less; inotify burns none (its reader sleeps in read() until the
/// event)": from the polling rows' details (the same-cpu row's, else the
/// cross-cpu row's); the comparison decided with [`CLEAR_GAP`].
pub(super) fn poll_burn(ms: &[Measurement]) -> Option<Finding> {
    use crate::suites::ipc::notify::{POLL, POLL_SLOW, Watch};
    let burn = |w: Watch| {
        [Placement::Same, Placement::Cross]
            .into_iter()
            .find_map(|p| usable(ms, &crate::suites::ipc::notify_id(w, p)).and_then(idle_burn_of))
    };
    let range = |e: &Est| {
        let bare = |v: f64| percent(v).trim_end_matches('%').to_string();
        format!("{} ({}–{}%)", percent(e.value), bare(e.low), bare(e.high))
    };
    let fast = burn(Watch::StatPoll);
    let slow = burn(Watch::StatPollSlow);
    let ((first, look), ms_first) = match (fast, slow) {
        (Some(f), _) => (f, POLL),
        (None, Some(s)) => (s, POLL_SLOW),
        (None, None) => return None,
    };
    let mut text = format!(
        "a {} ms stat() poll burns {} of a CPU while idle",
        ms_first.as_millis(),
        range(&first)
    );
    if look.is_finite() {
        text.push_str(&format!(
            " ({} of CPU per look)",
            human(look, BaseUnit::NsPerOp)
        ));
    }
    if let (Some((f, _)), Some((s, _))) = (fast, slow) {
        let words = claims::compare_beyond(&s, &f, CLEAR_GAP).pick(
            |r| format!("the {} ms loop burns {r} less", POLL_SLOW.as_millis()),
            |r| format!("the {} ms loop burns {r} more", POLL_SLOW.as_millis()),
            |_| format!("no clear difference of {CLEAR_GAP}× or more"),
        );
        text.push_str(&format!(
            ", a {} ms one {}: {words}",
            POLL_SLOW.as_millis(),
            range(&s)
        ));
    }
    text.push_str("; inotify burns none (its reader sleeps in read() until the event)");
    Some(Finding {
        area: AREA.into(),
        text,
        value: first.value * 100.0,
        unit: ValueUnit::Percent,
    })
}

/// "a file write reaches a process waiting on inotify in 9.8 µs (same-cpu,
/// half a round trip); a 1 ms fstat() poll sees it in 1.1 ms: inotify is
/// 112× (…) quicker": the medians, the words decided with the two-way
/// comparisons' dead zone ([`CLEAR_GAP`], [`CROSS_CLEAR`] across CPUs).
pub(super) fn file_change(ms: &[Measurement], p: Placement) -> Option<Finding> {
    use crate::suites::ipc::notify::{POLL, Watch};
    let i = usable(ms, &crate::suites::ipc::notify_id(Watch::Inotify, p))?;
    let place = p.param();
    let half = |m: &Measurement| human(m.median / 2.0, BaseUnit::NsPerOp);
    let mut text = format!(
        "a file write reaches a process waiting on inotify in {} ({place}, half a round trip)",
        half(i)
    );
    let mut value = i.median / 2.0;
    let mut unit: ValueUnit = BaseUnit::NsPerOp.into();
    if let Some(s) = usable(ms, &crate::suites::ipc::notify_id(Watch::StatPoll, p)) {
        let k = dead_zone(p);
        let (ei, es) = (Est::of(i), Est::of(s));
        let words = claims::compare_beyond(&ei, &es, k).pick(
            |r| format!("inotify is {r} quicker"),
            |r| format!("polling is {r} quicker"),
            |_| format!("no clear difference of {k}× or more"),
        );
        text.push_str(&format!(
            "; a {} ms fstat() poll sees it in {}: {words}",
            POLL.as_millis(),
            half(s)
        ));
        value = claims::speedup(&ei, &es).ratio;
        unit = ValueUnit::Ratio;
    }
    Some(Finding {
        area: AREA.into(),
        text,
        value,
        unit,
    })
}

/// The process rows a command started on a file change costs, the most
/// realistic first: a dynamic program (`/bin/true`), a static one.
const SPAWN_IDS: [(&str, &str); 2] = [
    ("process.posix_spawn_dynamic", "posix_spawn of /bin/true"),
    (
        "process.posix_spawn/rss=0B",
        "posix_spawn of a static program",
    ),
];

/// "a command run on a file change (inotify, same-cpu, then posix_spawn
/// of /bin/true to its exit): 260 µs (240–290 µs) after the write, of
/// which the event 9.8 µs": the two costs the run priced apart, added up
/// (the interval adds their bounds), when the run has both.
pub(super) fn change_to_command(ms: &[Measurement], p: Placement) -> Option<Finding> {
    use crate::suites::ipc::notify::Watch;
    let i = usable(ms, &crate::suites::ipc::notify_id(Watch::Inotify, p))?;
    let (s, how) = SPAWN_IDS
        .iter()
        .find_map(|(id, how)| usable(ms, id).map(|m| (m, *how)))?;
    let (ei, es) = (Est::of(i), Est::of(s));
    let value = ei.value / 2.0 + es.value;
    let (low, high) = (ei.low / 2.0 + es.low, ei.high / 2.0 + es.high);
    let t = |ns: f64| human(ns, BaseUnit::NsPerOp);
    Some(Finding {
        area: AREA.into(),
        text: format!(
            "a command run on a file change (inotify, {}, then {how} to its exit): {} ({}–{}) after the write, of which the event {}",
            p.param(),
            t(value),
            t(low),
            t(high),
            t(ei.value / 2.0)
        ),
        value,
        unit: BaseUnit::NsPerOp.into(),
    })
}
