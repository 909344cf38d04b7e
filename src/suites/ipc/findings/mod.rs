//! What the IPC results say: the mechanisms ranked into tiers at each size
//! and placement, what dd's small writes cost a pipe, zero-copy splice
//! next to the copying pipe, and what crossing CPUs costs a round trip.
//!
//! Every word comes from [`crate::harness::claims`]: mechanisms that cannot
//! be told apart share a tier and are listed in declaration order, two
//! results are ordered only when their intervals say so, and a figure with
//! two modes is named bimodal rather than printed at one of its levels.
//! The `splice` throughput benchmark sends its bytes to /dev/null (its
//! receiver never holds them), so it is reported apart from the ranking of
//! mechanisms that deliver bytes ([`Mech::sink_only`]). Also: the
//! notifications (eventfd, futex, a queued signal) ranked, and the
//! large-message paths that avoid the pipe's two copies (a memfd handed
//! over, process_vm_readv's single copy) next to the pipe.
//!
//! One file per family: the rankings (`rankings.rs`), the two-way
//! comparisons (`versus.rs`) and the file-change events (`events.rs`).

use super::peer::Placement;
use super::{Mech, RTT_SIZES, TPUT_SIZES};
use crate::harness::claims::CLEAR_GAP;
use crate::harness::{Finding, Measurement};
use crate::suites::bench::get;

mod events;
mod rankings;
mod versus;

use events::{
    change_to_command, fanotify_vs_inotify, file_change, file_events, poll_burn, slow_poll,
};
use rankings::{notifications, rtt_ranking, tput_ranking};
use versus::{class_ladders, placement_cost, small_writes, vs_pipe};

/// Area of every finding.
const AREA: &str = "ipc";
/// Rankings split mechanisms into tiers only at clear gaps this wide: on a
/// shared machine mechanisms a few tens of per cent apart trade places
/// from run to run, so only wider gaps are worth an order.
pub const TIER_GAP: f64 = 2.0;
/// The gap for throughput rankings: a stream's rate on a shared machine
/// moves more between runs than a round trip's, so its tiers split wider.
pub const TPUT_TIER_GAP: f64 = 3.0;
/// The dead zone of a two-way throughput comparison across CPUs, as wide
/// as the round trips' tier gap: across CPUs the pipe's own rate moved
/// 0.8–1.44 GB/s between quick runs of one machine, so a memfd or splice
/// 1.5–1.7× ahead of it read "faster" in one run and "no clear
/// difference" in the next at 1.25× ([`CLEAR_GAP`],
/// the dead zone of every other two-way comparison here).
pub const CROSS_CLEAR: f64 = TIER_GAP;

/// The dead zone of a two-way comparison at placement `p`: [`CLEAR_GAP`]
/// on one CPU, [`CROSS_CLEAR`] across CPUs.
fn dead_zone(p: Placement) -> f64 {
    match p {
        Placement::Same => CLEAR_GAP,
        _ => CROSS_CLEAR,
    }
}

/// Findings: the ranking at each size and placement, what small writes
/// cost, zero-copy vs copying, and what crossing CPUs costs.
pub fn findings(ms: &[Measurement]) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in Placement::ALL {
        for size in TPUT_SIZES {
            out.extend(tput_ranking(ms, size, p));
        }
        for size in RTT_SIZES {
            out.extend(rtt_ranking(ms, size, p));
        }
    }
    for p in Placement::ALL {
        out.extend(small_writes(ms, p));
    }
    for p in Placement::ALL {
        for size in [64 << 10, 1 << 20] {
            out.extend(vs_pipe(ms, Mech::Splice, size, p));
        }
    }
    for p in Placement::ALL {
        for size in [64 << 10, 1 << 20] {
            for m in [Mech::MemfdPass, Mech::VmReadv] {
                out.extend(vs_pipe(ms, m, size, p));
            }
        }
    }
    out.extend(placement_cost(ms));
    out.extend(class_ladders(ms));
    for p in Placement::ALL {
        out.extend(notifications(ms, p));
    }
    for p in Placement::ALL {
        out.extend(file_change(ms, p));
        out.extend(change_to_command(ms, p));
        out.extend(file_events(ms, p));
        out.extend(fanotify_vs_inotify(ms, p));
        out.extend(slow_poll(ms, p));
    }
    out.extend(poll_burn(ms));
    out
}

/// A usable measurement (positive, finite median) of `id`.
fn usable<'a>(ms: &'a [Measurement], id: &str) -> Option<&'a Measurement> {
    get(ms, id).filter(|m| m.median.is_finite() && m.median > 0.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_command_on_a_file_change_adds_the_event_and_the_spawn() {
        let s = Placement::Same;
        let mut ms = vec![m(
            &super::super::notify_id(super::super::notify::Watch::Inotify, s),
            "ns/op",
            20_000.0,
            0.05,
        )];
        // Without a spawn row there is nothing to add up.
        assert!(change_to_command(&ms, s).is_none());
        ms.push(m("process.posix_spawn/rss=0B", "ns/op", 240_000.0, 0.05));
        let f = change_to_command(&ms, s).unwrap();
        f.assert_starts_with("a command run on a file change (inotify, same-cpu, then posix_spawn of a static program to its exit): 250 µs (");
        f.assert_says("after the write, of which the event 10.0 µs");
        assert_eq!(f.value, 250_000.0);
        // The dynamic program is the likelier command: it is preferred.
        ms.push(m("process.posix_spawn_dynamic", "ns/op", 500_000.0, 0.05));
        change_to_command(&ms, s)
            .unwrap()
            .assert_says("then posix_spawn of /bin/true to its exit): 510 µs (");
    }

    #[test]
    fn inotify_against_polling_is_called_only_beyond_the_dead_zone() {
        use super::super::notify::Watch;
        use super::super::notify_id;
        let run = |i: f64, s: f64| {
            file_change(
                &[
                    m(
                        &notify_id(Watch::Inotify, Placement::Same),
                        "ns/op",
                        i,
                        0.05,
                    ),
                    m(
                        &notify_id(Watch::StatPoll, Placement::Same),
                        "ns/op",
                        s,
                        0.05,
                    ),
                ],
                Placement::Same,
            )
            .unwrap()
        };
        let f = run(20_000.0, 2_200_000.0);
        f.assert_starts_with(
            "a file write reaches a process waiting on inotify in 10.0 µs (same-cpu, half a round trip)",
        );
        f.assert_says("; a 1 ms fstat() poll sees it in 1.10 ms: inotify is 110× (");
        assert_eq!(f.unit, ValueUnit::Ratio);
        for (i, s) in [(1.1e6, 1.0e6), (1.0e6, 1.1e6)] {
            run(i, s).assert_says("no clear difference of 1.25× or more");
        }
        let alone = file_change(
            &[m(
                &notify_id(Watch::Inotify, Placement::Cross),
                "ns/op",
                30_000.0,
                0.05,
            )],
            Placement::Cross,
        )
        .unwrap();
        alone.assert_says("in 15.0 µs (cross-cpu, half a round trip)");
        assert!(!alone.text.contains("poll"));
        assert!(file_change(&[], Placement::Same).is_none());
    }

    use super::events::percent;
    use super::rankings::notify_id;
    use super::*;
    use crate::harness::{find_saying, find_starting};
    use crate::suites::ipc::{rtt_id, tput_id};
    use crate::units::{BaseUnit, ValueUnit};

    /// A polling row with an idle burn of `share` (±10%) in its details.
    fn polled(id: &str, median: f64, share: f64) -> Measurement {
        let mut x = m(id, "ns/op", median, 0.05);
        x.details = Some(serde_json::json!({
            "placement": "same-cpu",
            "idle_cpu": {
                "share": share,
                "share_low": share * 0.9,
                "share_high": share * 1.1,
                "cpu_per_look_ns": share * 1e6,
            }
        }));
        x
    }

    #[test]
    fn a_polling_loop_s_idle_burn_is_told_with_its_interval() {
        use super::super::notify::Watch;
        use super::super::notify_id;
        let s = Placement::Same;
        let both = [
            polled(&notify_id(Watch::StatPoll, s), 2.2e6, 0.0042),
            polled(&notify_id(Watch::StatPollSlow, s), 20.4e6, 0.0005),
        ];
        let f = poll_burn(&both).unwrap();
        f.assert_starts_with(
            "a 1 ms stat() poll burns 0.420% (0.378–0.462%) of a CPU while idle (4.20 µs of CPU per look), a 10 ms one 0.0500% (0.0450–0.0550%): the 10 ms loop burns 8.40× (",
        );
        f.assert_says("less; inotify burns none (its reader sleeps in read() until the event)");
        assert_eq!(f.unit, ValueUnit::Percent);
        assert!((f.value - 0.42).abs() < 1e-9);
        // Burns that overlap beyond the dead zone are not ordered.
        let close = [
            polled(&notify_id(Watch::StatPoll, s), 2.2e6, 0.0042),
            polled(&notify_id(Watch::StatPollSlow, s), 20.4e6, 0.0040),
        ];
        poll_burn(&close)
            .unwrap()
            .assert_says(": no clear difference of 1.25× or more;");
        // Only the 10 ms loop, from the cross-cpu row.
        let alone = [polled(
            &notify_id(Watch::StatPollSlow, Placement::Cross),
            20.4e6,
            0.0005,
        )];
        poll_burn(&alone)
            .unwrap()
            .assert_starts_with("a 10 ms stat() poll burns 0.0500% (");
        // No details, no finding.
        let bare = [m(&notify_id(Watch::StatPoll, s), "ns/op", 2.2e6, 0.05)];
        assert!(poll_burn(&bare).is_none());
        assert_eq!(percent(0.123), "12.3%");
        assert_eq!(percent(0.0123), "1.23%");
    }

    #[test]
    fn the_10ms_poll_is_compared_with_the_1ms_one_by_intervals() {
        use super::super::notify::Watch;
        use super::super::notify_id;
        let s = Placement::Same;
        let run = |slow: f64, fast: f64| {
            slow_poll(
                &[
                    m(&notify_id(Watch::StatPollSlow, s), "ns/op", slow, 0.05),
                    m(&notify_id(Watch::StatPoll, s), "ns/op", fast, 0.05),
                ],
                s,
            )
            .unwrap()
        };
        let f = run(20.2e6, 2.2e6);
        f.assert_starts_with(
            "a 10 ms fstat() poll sees a write in 10.1 ms (same-cpu, half a round trip): 9.18× (",
        );
        f.assert_says(") the wait of the 1 ms poll (1.10 ms)");
        run(2.3e6, 2.2e6).assert_says(": no clear difference of 1.25× or more from the 1 ms poll");
        let alone = slow_poll(
            &[m(&notify_id(Watch::StatPollSlow, s), "ns/op", 20.2e6, 0.05)],
            s,
        )
        .unwrap();
        assert_eq!(
            alone.text,
            "a 10 ms fstat() poll sees a write in 10.1 ms (same-cpu, half a round trip)"
        );
    }

    #[test]
    fn file_events_are_ranked_and_fanotify_is_set_against_inotify() {
        use super::super::notify::Watch;
        use super::super::notify_id;
        let s = Placement::Same;
        let ms: Vec<Measurement> = [
            (Watch::Inotify, 20_000.0),
            (Watch::InotifyRename, 24_000.0),
            (Watch::InotifyCloseWrite, 26_000.0),
            (Watch::Fanotify, 30_000.0),
            (Watch::FanotifyCloseWrite, 90_000.0),
        ]
        .into_iter()
        .map(|(w, v)| m(&notify_id(w, s), "ns/op", v, 0.03))
        .collect();
        let f = file_events(&ms, s);
        assert_eq!(f.len(), 1, "no member is bimodal: {f:?}");
        f[0].assert_starts_with("file-change event round trip (same-cpu), in tiers apart by a clear 2× or more: fastest: inotify IN_MODIFY, inotify IN_MOVED_TO (rename), inotify IN_CLOSE_WRITE and fanotify FAN_MODIFY; then fanotify FAN_CLOSE_WRITE");
        let v = fanotify_vs_inotify(&ms, s).unwrap();
        v.assert_starts_with("fanotify's FAN_MODIFY reaches the waiting process in 15.0 µs (same-cpu, half a round trip), inotify's IN_MODIFY in 10.0 µs: inotify is 1.50× (");
        let tie = [
            m(&notify_id(Watch::Fanotify, s), "ns/op", 21_000.0, 0.05),
            m(&notify_id(Watch::Inotify, s), "ns/op", 20_000.0, 0.05),
        ];
        fanotify_vs_inotify(&tie, s)
            .unwrap()
            .assert_says(": no clear difference of 1.25× or more");
        // One event alone is no ranking; a skipped fanotify, no comparison.
        assert!(file_events(&ms[..1], s).is_empty());
        assert!(fanotify_vs_inotify(&ms[..3], s).is_none());
    }

    #[test]
    fn a_bimodal_member_is_a_finding_of_its_own_and_leaves_the_ranking_alone() {
        let s = Placement::Same;
        let set = |two_levels: bool| {
            let mut futex = m(&notify_id("futex", s), "ns/op", 3_000.0, 0.05);
            futex.samples = (0..30)
                .map(|i| {
                    let level = if two_levels && i % 3 == 0 {
                        9_000.0
                    } else {
                        3_000.0
                    };
                    level + f64::from(i)
                })
                .collect();
            vec![
                m(&notify_id("eventfd", s), "ns/op", 3_100.0, 0.05),
                futex,
                m(&notify_id("sigqueue", s), "ns/op", 9_000.0, 0.05),
            ]
        };
        let one = notifications(&set(false), s);
        assert_eq!(one.len(), 1, "{one:?}");
        let two = notifications(&set(true), s);
        assert_eq!(two.len(), 2, "{two:?}");
        // The ranking's sentence is the same whether futex shows two
        // levels in this run or not.
        assert_eq!(two[0].text, one[0].text);
        assert!(!two[0].text.contains("bimodal"), "{}", two[0].text);
        assert_eq!(
            two[1].text,
            "notification round trip (same-cpu): futex bimodal (two levels, so its place in the order is not firm)"
        );
        assert_eq!((two[1].value, two[1].unit), (1.0, ValueUnit::Methods));
    }

    /// A measurement with `median` and a ±`rel` interval.
    fn m(id: &str, unit: &str, median: f64, rel: f64) -> Measurement {
        Measurement::within(id, unit, median, rel)
    }

    fn texts(f: &[Finding]) -> Vec<&str> {
        f.iter().map(|f| f.text.as_str()).collect()
    }

    #[test]
    fn clearly_different_mechanisms_are_ranked_in_tiers() {
        let s = Placement::Same;
        let ms = vec![
            m(&tput_id(Mech::Pipe, 64 << 10, s), "B/s", 1e9, 0.03),
            m(&tput_id(Mech::Tcp, 64 << 10, s), "B/s", 3e8, 0.03),
            m(&tput_id(Mech::UnixStream, 64 << 10, s), "B/s", 1.01e9, 0.03),
            m(&tput_id(Mech::Splice, 64 << 10, s), "B/s", 9e9, 0.03),
        ];
        let f = findings(&ms);
        let rank = find_starting(&f, "throughput at 64KiB (same-cpu)");
        rank.assert_says(
            "in tiers apart by a clear 3× or more: fastest: pipe and unix_stream; then tcp (3.",
        );
        // splice delivers nothing: reported apart, never in the ranking.
        rank.assert_says("; splice to /dev/null (sink only, not ranked): 9.00 GB/s");
        assert!(!rank.text.contains("fastest: splice"), "{}", rank.text);
        assert!(
            !f.iter().any(|x| x.text.contains("bimodal")),
            "no member is bimodal: {f:?}"
        );
        assert_eq!(
            (rank.value, rank.unit),
            (1.01e9, BaseUnit::BytesPerSec.into())
        );
    }

    #[test]
    fn equal_mechanisms_give_no_order_whatever_their_point_estimates() {
        let c = Placement::Cross;
        let mk = |a: f64, b: f64| {
            vec![
                m(&rtt_id(Mech::Pipe, 64, c), "ns/op", a, 0.05),
                m(&rtt_id(Mech::UnixStream, 64, c), "ns/op", b, 0.05),
                m(&rtt_id(Mech::RingSpin, 64, c), "ns/op", 500.0, 0.05),
            ]
        };
        let one = findings(&mk(30_000.0, 31_000.0));
        let two = findings(&mk(31_000.0, 30_000.0));
        let strip = |s: &str| {
            s.chars()
                .filter(|c| !c.is_ascii_digit() && *c != '.')
                .collect::<String>()
        };
        assert_eq!(one.len(), two.len());
        for (a, b) in one.iter().zip(&two) {
            assert_eq!(strip(&a.text), strip(&b.text));
        }
        let rtt = &one[0].text;
        assert!(
            rtt.starts_with(
                "round trip of 64B (cross-cpu), in tiers apart by a clear 2× or more: fastest: ring_spin; then pipe and unix_stream ("
            ),
            "{rtt}"
        );
    }

    #[test]
    fn one_blocking_mechanism_is_one_not_a_median() {
        let ms = vec![
            m(
                &rtt_id(Mech::Pipe, 8, Placement::Same),
                "ns/op",
                4_000.0,
                0.02,
            ),
            m(
                &rtt_id(Mech::Pipe, 8, Placement::Cross),
                "ns/op",
                9_000.0,
                0.02,
            ),
        ];
        let f = findings(&ms);
        let cost = find_starting(&f, "an 8B round trip between two CPUs");
        cost.assert_says("takes 2.25× as long as on one CPU over 1 blocking mechanism:");
    }

    #[test]
    fn a_two_level_figure_is_named_bimodal() {
        let s = Placement::Same;
        let mut pipe = m(&tput_id(Mech::Pipe, 4 << 10, s), "B/s", 1e9, 0.5);
        pipe.samples = (0..60)
            .map(|i| if i % 3 == 0 { 5e7 } else { 2e9 + i as f64 })
            .collect();
        let ms = vec![pipe, m(&tput_id(Mech::Tcp, 4 << 10, s), "B/s", 5e8, 0.03)];
        let f = findings(&ms);
        assert_eq!(
            f[1].text,
            "throughput at 4KiB (same-cpu): pipe bimodal (two levels, so its place in the order is not firm)",
            "{:?}",
            texts(&f)
        );
    }

    #[test]
    fn small_writes_follow_the_comparison() {
        // The small-writes finding of a pipe moving `small` B/s with 512 B
        // writes and `big` B/s with 64 KiB writes, each ±`rel`, on one CPU
        // or across two.
        let placed = |p: Placement, small: f64, big: f64, rel: f64| {
            let ms = [
                m(&tput_id(Mech::Pipe, 512, p), "B/s", small, rel),
                m(&tput_id(Mech::Pipe, 64 << 10, p), "B/s", big, rel),
            ];
            let f = findings(&ms);
            let found = f.iter().find(|f| f.unit == ValueUnit::Percent).cloned();
            found.unwrap_or_else(|| panic!("no small-writes finding: {:?}", texts(&f)))
        };
        let writes = |small: f64, big: f64, rel: f64| placed(Placement::Same, small, big, rel);
        let small = writes(1e8, 1e9, 0.03);
        assert!((small.value - 10.0).abs() < 1e-9, "{}", small.text);
        assert!(small.text.ends_with("system-call bound"), "{}", small.text);
        writes(5.1e8, 5e8, 0.05).assert_says(": no clear difference of 1.25×");
        let odd = writes(6e8, 3e8, 0.02);
        odd.assert_says("not what limits");
        odd.assert_says("512B writes are 2.00× (");
        // 512 B writes at 64% of 64 KiB ones: clear on one CPU, inside the
        // wider dead zone across CPUs.
        writes(6.4e8, 1e9, 0.03).assert_says("64KiB writes are 1.56× (");
        placed(Placement::Cross, 6.4e8, 1e9, 0.03)
            .assert_says(": no clear difference of 2× or more: the write size is not what limits");
        placed(Placement::Cross, 1e8, 1e9, 0.03).assert_says("system-call bound");
    }

    #[test]
    fn notifications_are_ranked_and_large_paths_compared_with_the_pipe() {
        let (s, c) = (Placement::Same, Placement::Cross);
        let ms = vec![
            m(&notify_id("eventfd", s), "ns/op", 2000.0, 0.03),
            m(&notify_id("futex", s), "ns/op", 1900.0, 0.03),
            m(&notify_id("sigqueue", s), "ns/op", 6000.0, 0.03),
            m(&tput_id(Mech::MemfdPass, 1 << 20, c), "B/s", 8e8, 0.03),
            m(&tput_id(Mech::VmReadv, 1 << 20, c), "B/s", 7.5e9, 0.03),
            m(&tput_id(Mech::Pipe, 1 << 20, c), "B/s", 2.5e9, 0.03),
            // 1.5× ahead of the pipe: clear on one CPU, inside the wider
            // dead zone across CPUs.
            m(&tput_id(Mech::MemfdPass, 64 << 10, s), "B/s", 1.5e9, 0.03),
            m(&tput_id(Mech::Pipe, 64 << 10, s), "B/s", 1e9, 0.03),
            m(&tput_id(Mech::MemfdPass, 64 << 10, c), "B/s", 1.5e9, 0.03),
            m(&tput_id(Mech::Pipe, 64 << 10, c), "B/s", 1e9, 0.03),
        ];
        let f = findings(&ms);
        let n = find_starting(&f, "notification round trip (same-cpu)");
        n.assert_says("fastest: eventfd and futex; then sigqueue (3.");
        assert_eq!((n.value, n.unit), (1900.0, BaseUnit::NsPerOp.into()));
        assert!(!f.iter().any(
            |f| f.text.contains("(cross-cpu), in tiers") && f.text.starts_with("notification")
        ));
        find_saying(
            &f,
            "a memfd handed over (SCM_RIGHTS) vs the pipe's two copies at 1MiB",
        )
        .assert_says("at 1MiB (cross-cpu): the pipe is 3.12× (");
        find_saying(
            &f,
            "a memfd handed over (SCM_RIGHTS) vs the pipe's two copies at 64KiB (same-cpu)",
        )
        .assert_says("memfd_pass is 1.50× (");
        find_saying(
            &f,
            "a memfd handed over (SCM_RIGHTS) vs the pipe's two copies at 64KiB (cross-cpu)",
        )
        .assert_says("no clear difference of 2× or more");
        let cma = find_starting(&f, "process_vm_readv's single copy");
        cma.assert_says(": vm_readv is 3.00× (");
        assert!((cma.value - 3.0).abs() < 1e-9);
    }

    #[test]
    fn splice_and_placement_compare_by_intervals() {
        let (s, c) = (Placement::Same, Placement::Cross);
        let ms = vec![
            m(&tput_id(Mech::Splice, 64 << 10, s), "B/s", 2e9, 0.03),
            m(&tput_id(Mech::Pipe, 64 << 10, s), "B/s", 1e9, 0.03),
            m(&rtt_id(Mech::Pipe, 8, s), "ns/op", 2000.0, 0.03),
            m(&rtt_id(Mech::Pipe, 8, c), "ns/op", 60000.0, 0.03),
            m(&rtt_id(Mech::Tcp, 8, s), "ns/op", 9000.0, 0.03),
            m(&rtt_id(Mech::Tcp, 8, c), "ns/op", 9100.0, 0.03),
        ];
        let f = findings(&ms);
        let zc = find_starting(&f, "zero-copy");
        assert!((zc.value - 2.0).abs() < 1e-9);
        zc.assert_says("splice is 2.00× (");
        let cross = find_saying(&f, "between two CPUs");
        cross.assert_says(
            "clearly slower across CPUs for 1, clearly faster for 0, no clear difference for 1",
        );
        cross.assert_says("pipe: same-cpu is 30.0× (");
        assert!(findings(&[]).is_empty());
    }
}
