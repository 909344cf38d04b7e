//! The CPU time a benchmark's samples cost: user and system time of opcost
//! (every thread, so an in-process responder counts) and of the peer
//! processes a benchmark names, per sample, summed per round.
//!
//! Why: a throughput alone cannot say whether the device or the CPU limits
//! it (30 MB/s from a disk may be either). fio, bonnie++ and iperf3 report
//! the CPU their jobs used; this is the same figure for opcost's rows. The
//! counters are read just outside [`super::Timed::run`], so the reads cost
//! nothing inside the timed region; the wall time they are set against is
//! the same interval (the call of `run`, its untimed preparation included).
//!
//! Only benchmarks that ask for it ([`super::Bench::cpu_cost`]) are
//! accounted; their results carry `cpu_*` keys in `details`
//! ([`details_of`]).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Round;
use crate::stats::round_interval;

/// User and system CPU time, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Times {
    /// Time in user mode.
    pub user_ns: f64,
    /// Time in the kernel.
    pub sys_ns: f64,
}

impl Times {
    fn minus(self, earlier: Times) -> Times {
        Times {
            user_ns: (self.user_ns - earlier.user_ns).max(0.0),
            sys_ns: (self.sys_ns - earlier.sys_ns).max(0.0),
        }
    }
}

/// The CPU time of this process so far, every thread (`RUSAGE_SELF`).
pub fn process_now() -> Times {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: ru is a valid out-pointer for getrusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return Times::default();
    }
    // SAFETY: getrusage filled it in when it returned 0.
    let ru = unsafe { ru.assume_init() };
    let ns = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    Times {
        user_ns: ns(ru.ru_utime),
        sys_ns: ns(ru.ru_stime),
    }
}

/// The user and system time in a `/proc/PID/stat` line (fields 14 and 15,
/// clock ticks, after the command name in parentheses), ns.
pub fn parse_proc_stat(text: &str, ticks_per_s: f64) -> Option<Times> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, stime 15.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some(Times {
        user_ns: utime * 1e9 / ticks_per_s,
        sys_ns: stime * 1e9 / ticks_per_s,
    })
}

/// The CPU time of process `pid` so far (all its threads), when readable.
pub fn pid_now(pid: u32) -> Option<Times> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    parse_proc_stat(&text, if t > 0 { t as f64 } else { 100.0 })
}

/// The counters at the start of one sample.
pub struct Probe {
    own: Times,
    peers: Vec<(u32, Times)>,
}

impl Probe {
    /// Reads the counters of this process and of `peers` now.
    pub fn start(peers: &[u32]) -> Probe {
        Probe {
            own: process_now(),
            peers: peers
                .iter()
                .filter_map(|&p| Some((p, pid_now(p)?)))
                .collect(),
        }
    }

    /// The CPU time since [`Probe::start`], for a sample of `ops`
    /// operations that took `wall_ns` (the same interval).
    pub fn finish(self, ops: u64, wall_ns: f64) -> CpuUse {
        let own = process_now().minus(self.own);
        let mut peer = Times::default();
        for (p, before) in self.peers {
            if let Some(now) = pid_now(p) {
                let d = now.minus(before);
                peer.user_ns += d.user_ns;
                peer.sys_ns += d.sys_ns;
            }
        }
        CpuUse {
            wall_ns,
            ops,
            user_ns: own.user_ns,
            sys_ns: own.sys_ns,
            peer_user_ns: peer.user_ns,
            peer_sys_ns: peer.sys_ns,
        }
    }
}

/// CPU time spent over timed samples (summed over a round's samples).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// Wall time of the samples, ns.
    pub wall_ns: f64,
    /// Operations in them.
    pub ops: u64,
    /// User time of opcost's process (all threads), ns.
    pub user_ns: f64,
    /// System time of opcost's process, ns.
    pub sys_ns: f64,
    /// User time of the peer processes the benchmark named, ns.
    #[serde(default)]
    pub peer_user_ns: f64,
    /// System time of the peer processes, ns.
    #[serde(default)]
    pub peer_sys_ns: f64,
}

impl CpuUse {
    /// Adds another sample's use.
    pub fn add(&mut self, o: &CpuUse) {
        self.wall_ns += o.wall_ns;
        self.ops += o.ops;
        self.user_ns += o.user_ns;
        self.sys_ns += o.sys_ns;
        self.peer_user_ns += o.peer_user_ns;
        self.peer_sys_ns += o.peer_sys_ns;
    }

    /// All CPU time, opcost's and its peers'.
    pub fn total_ns(&self) -> f64 {
        self.user_ns + self.sys_ns + self.peer_user_ns + self.peer_sys_ns
    }

    /// CPUs kept busy on average (1.0 = one CPU all the time).
    pub fn share(&self) -> Option<f64> {
        (self.wall_ns > 0.0).then(|| self.total_ns() / self.wall_ns)
    }
}

/// The `cpu_*` keys of a result from its rounds in the estimate
/// (`bytes_per_op` for a throughput); `None` when no round was accounted.
///
/// Keys: `cpu_user_ns_per_op`, `cpu_sys_ns_per_op` (opcost, every
/// thread), `cpu_peer_user_ns_per_op`, `cpu_peer_sys_ns_per_op` (only with
/// peers), `cpu_share` (CPUs busy over the samples' wall time, all of the
/// above) with `cpu_share_low`/`cpu_share_high` (95% interval from the
/// rounds' shares), `cpu_sys_share`, `cpu_user_share`, and for throughputs
/// `cpu_ns_per_mib` and `cpu_share_per_100mbps` (CPUs busy per 100 MB/s
/// moved: CPU seconds per 100 MB), `cpu_wall_s` (time accounted) and
/// `cpu_cpus` (CPUs the run could use).
pub fn details_of(rounds: &[Round], bytes_per_op: Option<f64>) -> Option<Value> {
    let used: Vec<&CpuUse> = rounds
        .iter()
        .filter(|r| r.used)
        .filter_map(|r| r.cpu.as_ref())
        .filter(|c| c.ops > 0 && c.wall_ns > 0.0)
        .collect();
    if used.is_empty() {
        return None;
    }
    let mut all = CpuUse::default();
    for c in &used {
        all.add(c);
    }
    let ops = all.ops as f64;
    let share = all.share()?;
    let shares: Vec<f64> = used
        .iter()
        .filter_map(|c| c.share())
        .filter(|s| *s > 0.0)
        .collect();
    let (low, high) = if shares.len() == used.len() {
        round_interval(&shares, share).unwrap_or((share, share))
    } else {
        (share, share)
    };
    let mut v = json!({
        "cpu_user_ns_per_op": all.user_ns / ops,
        "cpu_sys_ns_per_op": all.sys_ns / ops,
        "cpu_share": share,
        "cpu_share_low": low.min(share),
        "cpu_share_high": high.max(share),
        "cpu_user_share": (all.user_ns + all.peer_user_ns) / all.wall_ns,
        "cpu_sys_share": (all.sys_ns + all.peer_sys_ns) / all.wall_ns,
        "cpu_wall_s": all.wall_ns / 1e9,
        "cpu_cpus": super::affinity::allowed_cpus().len().max(1),
    });
    let obj = v.as_object_mut().expect("an object");
    if all.peer_user_ns + all.peer_sys_ns > 0.0 {
        obj.insert(
            "cpu_peer_user_ns_per_op".into(),
            json!(all.peer_user_ns / ops),
        );
        obj.insert(
            "cpu_peer_sys_ns_per_op".into(),
            json!(all.peer_sys_ns / ops),
        );
    }
    if let Some(b) = bytes_per_op.filter(|b| *b > 0.0) {
        let per_byte = all.total_ns() / (ops * b);
        obj.insert("cpu_ns_per_mib".into(), json!(per_byte * 1048576.0));
        // ns of CPU per byte × 1e8 bytes = ns per 100 MB; / 1e9 = seconds.
        obj.insert("cpu_share_per_100mbps".into(), json!(per_byte * 0.1));
    }
    Some(v)
}

/// `details` with the `cpu_*` keys of `cpu` merged in (an object made when
/// there was none).
pub fn merge_into(details: Option<Value>, cpu: Option<Value>) -> Option<Value> {
    let Some(Value::Object(add)) = cpu else {
        return details;
    };
    match details {
        Some(Value::Object(mut d)) => {
            d.extend(add);
            Some(Value::Object(d))
        }
        None => Some(Value::Object(add)),
        // Details of another shape are kept whole, under their own key.
        Some(other) => {
            let mut d = add;
            d.insert("details".into(), other);
            Some(Value::Object(d))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_times_come_after_the_command_name() {
        // A command name with spaces and parentheses must not shift fields.
        let line = "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 1 1 1";
        let t = parse_proc_stat(line, 100.0).unwrap();
        assert_eq!(t.user_ns, 2.5e9);
        assert_eq!(t.sys_ns, 0.75e9);
        assert!(parse_proc_stat("garbage", 100.0).is_none());
    }

    #[test]
    fn a_busy_loop_shows_as_user_time_of_about_one_cpu() {
        let p = Probe::start(&[std::process::id()]);
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 60 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let c = p.finish(10, t.elapsed().as_nanos() as f64);
        assert!(c.user_ns > 0.0, "{c:?}");
        // opcost itself read as a peer: at most tick-coarse, never negative
        assert!(c.peer_user_ns >= 0.0);
        assert!(c.share().is_some_and(|s| s > 0.0));
    }

    #[test]
    fn details_sum_the_used_rounds_and_give_per_op_and_per_byte_figures() {
        let use_of = |wall: f64, sys: f64| CpuUse {
            wall_ns: wall,
            ops: 10,
            user_ns: 0.1 * wall,
            sys_ns: sys * wall,
            ..CpuUse::default()
        };
        let mut rounds: Vec<Round> = [0.3, 0.32, 0.28, 5.0]
            .iter()
            .map(|&s| Round {
                used: true,
                cpu: Some(use_of(1e9, s)),
                ..Round::default()
            })
            .collect();
        rounds[3].used = false; // left out: its share does not count
        let d = details_of(&rounds, Some(1048576.0)).unwrap();
        let share = d["cpu_share"].as_f64().unwrap();
        assert!((share - 0.4).abs() < 1e-9, "{share}");
        assert!(d["cpu_share_low"].as_f64().unwrap() < share);
        assert!(d["cpu_share_high"].as_f64().unwrap() > share);
        assert!((d["cpu_sys_share"].as_f64().unwrap() - 0.3).abs() < 1e-9);
        // 0.4 s of CPU per 10 ops of 1 MiB
        assert!((d["cpu_ns_per_mib"].as_f64().unwrap() - 0.4e8).abs() < 1.0);
        assert!(d.get("cpu_peer_user_ns_per_op").is_none());
        assert!(details_of(&[], None).is_none());
        let merged = merge_into(Some(json!({"file_bytes": 1})), Some(d)).unwrap();
        assert_eq!(merged["file_bytes"], 1);
        assert!(merged["cpu_share"].is_number());
    }
}
