//! What starting work costs (E4): every way to start a process or a thread,
//! how fork grows with the memory the parent has touched while vfork and
//! posix_spawn stay flat, what a context switch costs, and what the first
//! touch of a page costs.
//!
//! One spawn operation is a child started, run to its end and reaped, so
//! the figures are what a program pays per child. The exec'd program is a
//! tiny static ELF embedded in opcost (see `target`), so the dynamic loader
//! is not measured, except in the `/bin/true` row where it is the point.
//! The growth curve writes every page of an N-byte region in the parent
//! before forking; N stops short of what the machine has free. The
//! descriptor-limit sweep (see `nofile`) forks from the small helper with
//! its soft RLIMIT_NOFILE at each point and closes up to it in the child.

mod fault;
mod fds;
mod findings;
mod nofile;
mod sched;
pub mod small_parent;
mod spawn;
mod switch;
mod target;

use super::bench::{FnBench, Suite};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, PrepareError, Profile, Unit};
use crate::host::Host;
use crate::units::size_label;
use fault::{Faults, Kind};
use nofile::Close;
use spawn::{Method, Region, Spawner};
use std::time::Duration;
use switch::{Peer, PingPong};

/// The area name.
const AREA: &str = "process";

/// Parent memory touched before spawning, in bytes: the growth curve.
pub const RSS_POINTS: [u64; 5] = [0, 16 << 20, 64 << 20, 256 << 20, 1 << 30];

/// Bytes in a GiB, the unit of the growth slopes.
const GIB: f64 = (1u64 << 30) as f64;

/// The growth-curve name of fork+exec (ids `process.fork_exec/rss=SIZE`).
const FORK_EXEC: &str = "fork_exec";
/// The growth-curve name of vfork+exec.
const VFORK_EXEC: &str = "vfork_exec";
/// The growth-curve name of posix_spawn.
const POSIX_SPAWN: &str = "posix_spawn";

/// The growth-curve name of clone(CLONE_VM|CLONE_VFORK)+exec with a stdout pipe.
const CLONE_VFORK_EXEC: &str = "clone_vfork_exec";
/// The growth-curve name of popen.
const POPEN: &str = "popen";
/// The growth-curve name of system().
const SYSTEM: &str = "system";
/// The growth-curve name of Rust's `std::process::Command`.
const COMMAND: &str = "command";

/// A method on the growth curve: how it starts, its name in ids, its name
/// in findings, and what one operation does (the summary's start).
struct Growth {
    method: Method,
    name: &'static str,
    what: &'static str,
    summary: &'static str,
}

/// The methods measured along the growth curve. The first three are the
/// original curve; the others are the ways a big program (a web server, a
/// JVM) starts a helper, which the curve answers for a big parent.
const GROWTH: [Growth; 7] = [
    Growth {
        method: Method::ForkExec,
        name: FORK_EXEC,
        what: "fork+exec",
        summary: "fork+exec of a static program that only exits, waitpid",
    },
    Growth {
        method: Method::VforkExec,
        name: VFORK_EXEC,
        what: "vfork+exec",
        summary: "vfork+exec of a static program that only exits, waitpid",
    },
    Growth {
        method: Method::PosixSpawn,
        name: POSIX_SPAWN,
        what: "posix_spawn",
        summary: "posix_spawn of a static program that only exits, waitpid",
    },
    Growth {
        method: Method::CloneVforkExec,
        name: CLONE_VFORK_EXEC,
        what: "clone(CLONE_VM|CLONE_VFORK)+exec",
        summary: "clone(CLONE_VM|CLONE_VFORK) on its own stack, stdout a pipe to the parent (popen's job without a shell), exec of the static program, waitpid",
    },
    Growth {
        method: Method::Popen,
        name: POPEN,
        what: "popen",
        summary: "popen(\"r\") of the static program through /bin/sh, pclose",
    },
    Growth {
        method: Method::System,
        name: SYSTEM,
        what: "system()",
        summary: "system() of the static program through /bin/sh",
    },
    Growth {
        method: Method::Command,
        name: COMMAND,
        what: "std::process::Command",
        summary: "Rust std::process::Command::status() of the static program",
    },
];

/// Growth-curve points the methods after the first three measure at the
/// quick profile: the ends of the quick curve, enough for a slope (each
/// point of a shell-started child costs about a millisecond per sample).
const QUICK_POINTS: [u64; 2] = [0, QUICK_MAX_RSS];

/// The spawns measured against open descriptors: method, name in ids, name in findings.
const FD_SPAWNS: [(Method, &str, &str); 3] = [
    (Method::PosixSpawn, POSIX_SPAWN, "posix_spawn"),
    (Method::ForkExec, FORK_EXEC, "fork+exec"),
    (Method::Command, COMMAND, "std::process::Command"),
];

/// The id of a spawn with `fds` descriptors open.
fn fds_id(name: &str, fds: u64) -> String {
    format!("{AREA}.fds.{name}/fds={fds}")
}

/// A spawn of the static program while `fds` descriptors are open in the
/// parent. fork+exec forks from the small helper holding them: forked from
/// opcost itself it copied whatever the round's earlier benchmarks left
/// mapped (at the default profile 2–66 ms per spawn from one round to the
/// next, against ~1 ms at quick), which drowned the descriptors and made
/// its trend read "falls" in one run and "no clear trend" in the next.
/// posix_spawn and Command share the parent's memory (vfork-like), so
/// they spawn from opcost itself.
fn fds_bench(method: Method, name: &str, what: &str, fds: u64) -> FnBench {
    let parent = if method == Method::ForkExec {
        "a small helper (opcost re-executed) holding"
    } else {
        "opcost itself with"
    };
    let b = FnBench::new(
        fds_id(name, fds),
        format!(
            "{what} of the static program from {parent} {fds} close-on-exec descriptors open, waitpid"
        ),
        Unit::Latency,
        move |ctx| {
            let path = target::install_static(&ctx.tmp)?;
            if method == Method::ForkExec {
                let sp = small_parent::SmallParent::holding(&path, fds, ctx)?;
                return Ok(Box::new(sp) as Box<dyn crate::harness::Timed>);
            }
            let set = fds::FdSet::shared(fds)?;
            let s = Spawner::new(method, Some(&path), None, ctx)?;
            Ok(Box::new(fds::WithFds::new(s, set)) as Box<dyn crate::harness::Timed>)
        },
    )
    .param("fds", fds)
    .setup_time(Duration::from_nanos(match method {
        // the helper holds its own; posix_spawn, first of the group, opens
        // the set Command shares
        Method::ForkExec => FD_OPEN_IN_HELPER_NS * fds,
        Method::PosixSpawn => FD_OPEN_IN_OPCOST_NS * fds,
        _ => 0,
    }));
    let b = if method == Method::ForkExec {
        b
    } else {
        b.one_op_samples(nominal_spawn(method, false) + Duration::from_nanos(FD_SPAWN_NS * fds))
    };
    b.refused_when(fds::refused_here, fds)
        .interleave(format!("{AREA}.fds/fds={fds}"))
        .budget_scale(0.5)
        .min_profile(if fds > FDS_QUICK_MAX {
            Profile::Default
        } else {
            Profile::Quick
        })
}

/// The most descriptors a quick run holds: the 100 000 point costs
/// milliseconds per spawn where the hard limit allows it, so it starts at
/// the default profile.
const FDS_QUICK_MAX: u64 = 10_000;

/// The spawns of the descriptor-limit sweep: how the child closes, name
/// in ids, and what one operation does.
const NOFILE_SPAWNS: [(Close, &str, &str); 4] = [
    (
        Close::None,
        "fork_exec",
        "fork+exec without closing anything (close-on-exec trusted)",
    ),
    (
        Close::Loop,
        "close_loop",
        "fork, close(fd) for every fd from 3 up to the soft RLIMIT_NOFILE, exec",
    ),
    (
        Close::Range,
        "close_range",
        "fork, close_range(3, ~0U, 0), exec",
    ),
    (
        Close::Closefrom,
        "closefrom",
        "fork, libc closefrom(3), exec",
    ),
];

/// The id of a spawn of the descriptor-limit sweep.
fn nofile_id(name: &str, limit: u64) -> String {
    format!("{AREA}.nofile.{name}/nofile={limit}")
}

/// A spawn from the small helper with its soft RLIMIT_NOFILE at `limit`,
/// the child closing its descriptors the `how` way before exec.
fn nofile_bench(how: Close, name: &str, what: &str, limit: u64) -> FnBench {
    FnBench::new(
        nofile_id(name, limit),
        format!(
            "{what}, of the static program from a small parent with a soft RLIMIT_NOFILE of {limit}, waitpid"
        ),
        Unit::Latency,
        move |ctx| {
            how.closer()
                .map_err(|e| PrepareError::Skip(e.to_string()))?;
            let path = target::install_static(&ctx.tmp)?;
            let sp = small_parent::SmallParent::closing(&path, limit, how, ctx)?;
            Ok(Box::new(sp) as Box<dyn crate::harness::Timed>)
        },
    )
    .param("nofile", limit)
    .param("close", how.name())
    .refused_when(nofile::refused_here, limit)
    .on_request()
    .interleave(format!("{AREA}.nofile/nofile={limit}"))
    .min_profile(if limit > nofile::NOFILE_QUICK_MAX {
        Profile::Default
    } else {
        Profile::Quick
    })
}

/// The process suite.
pub fn suite() -> Suite {
    Suite {
        name: AREA,
        summary: "fork, vfork, posix_spawn, popen, threads; fork vs parent memory; context switches; page faults",
        benches,
        findings: findings::findings,
    }
}

/// The id of a growth-curve point.
fn growth_id(name: &str, rss: u64) -> String {
    format!("{AREA}.{name}/rss={}", size_label(rss))
}

/// The program a spawn row execs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exe {
    /// Nothing (fork/vfork that only exit, threads).
    None,
    /// The embedded static target.
    Static,
    /// `true` from the system, dynamically linked on most systems.
    True,
}

/// The interleave group of a spawn benchmark. At rss=0 every way to start
/// work is compared in one group. With memory touched, fork+exec runs in a
/// group of its own: with its tens of milliseconds of kernel time per fork
/// in the same group, the flat methods on a loaded machine often waited a
/// whole timer tick per spawn (most likely because the scheduler, seeing
/// this CPU busy, placed their children on the other one). vfork+exec and
/// posix_spawn share a group, and the touched region.
fn interleave_key(method: Method, rss: u64) -> String {
    let fork_apart = rss > 0 && method == Method::ForkExec;
    format!(
        "{AREA}.spawn/rss={}{}",
        size_label(rss),
        if fork_apart { "/fork" } else { "" }
    )
}

/// A spawn benchmark: `method` executing `exe`; `rss` is the growth-curve
/// point (bytes touched in the parent) for the rows that are on the curve.
fn spawn_bench(id: String, summary: &str, method: Method, exe: Exe, rss: Option<u64>) -> FnBench {
    let touched = rss.unwrap_or(0);
    // fork and fork+exec fork from a small helper process (see
    // `small_parent`), except in the row that shows what opcost itself pays.
    let from_opcost = id.ends_with(".from_opcost");
    let b = FnBench::new(id, summary, Unit::Latency, move |ctx| {
        let path = match exe {
            Exe::None => None,
            Exe::Static => Some(target::install_static(&ctx.tmp)?),
            Exe::True => Some(target::find_true().ok_or_else(|| {
                PrepareError::Skip("no `true` program in /bin, /usr/bin or on PATH".into())
            })?),
        };
        if method == Method::ForkExit && !from_opcost || method == Method::ForkExec {
            let sp = small_parent::SmallParent::new(path.as_deref(), touched, ctx)?;
            return Ok(Box::new(sp) as Box<dyn crate::harness::Timed>);
        }
        let region = if touched > 0 {
            Some(Region::shared(touched, ctx)?)
        } else {
            None
        };
        let mut s = Spawner::new(method, path.as_deref(), region, ctx)?;
        if exe == Exe::True {
            let dynamic = path
                .as_deref()
                .and_then(|p| std::fs::read(p).ok())
                .and_then(|b| target::is_dynamic(&b));
            s.detail("dynamic", dynamic.into());
            if dynamic == Some(false) {
                s.warn(Warning::TrueIsStatic);
            }
        }
        Ok(Box::new(s) as Box<dyn crate::harness::Timed>)
    })
    .interleave(interleave_key(method, touched));
    let b = if method == Method::ForkExit && !from_opcost || method == Method::ForkExec {
        b
    } else {
        b.one_op_samples(nominal_spawn(method, exe == Exe::True))
    };
    // The parent's memory is touched (and unmapped) once a round: by
    // fork+exec's helper for itself, and once for the rest of its point,
    // which share one region.
    let b = match (touched, method) {
        (0, _) => b,
        (_, Method::ForkExec) => b.setup_time(touch_setup(touched)),
        _ => b.group_setup_time(touch_setup(touched)),
    };
    match rss {
        Some(r) if r > QUICK_MAX_RSS => b
            .param("rss", size_label(r))
            .param("rss_bytes", r)
            .min_profile(Profile::Default),
        Some(r) => b.param("rss", size_label(r)).param("rss_bytes", r),
        None => b,
    }
}

/// About how long one spawn by `method` of the static target takes (of
/// `true` through the dynamic loader with `dynamic`), as a sample holds one
/// ([`FnBench::one_op_samples`]): medians of a quick run on the 2-vCPU
/// Zen 4 guest, which the run-time estimate uses and nothing else.
fn nominal_spawn(method: Method, dynamic: bool) -> Duration {
    let us = match method {
        Method::VforkExit => 40,
        Method::Thread => 65,
        Method::CloneVforkExec => 110,
        Method::VforkExec => 120,
        Method::PosixSpawn | Method::Command => 150,
        Method::ForkExit | Method::ForkExec => 350,
        Method::System => 850,
        Method::Popen => 900,
    };
    Duration::from_micros(us + if dynamic { 450 } else { 0 })
}

/// What each descriptor open in the parent adds to a spawn (75 ns: 0.9 ms at
/// 10 000 on the same guest), and to a round's set-up: opening and closing
/// them in opcost (10 µs, its descriptor table grown while threads share it)
/// or in the fork helper (4.5 µs).
const FD_SPAWN_NS: u64 = 75;
/// See [`FD_SPAWN_NS`].
const FD_OPEN_IN_OPCOST_NS: u64 = 10_000;
/// See [`FD_SPAWN_NS`].
const FD_OPEN_IN_HELPER_NS: u64 = 4_500;

/// Time a round spends touching a growth-curve parent's memory page by page
/// and unmapping it after, per MiB: 0.42–0.57 ms to touch and about 0.09 ms
/// to unmap on the 2-vCPU Zen 4 guest (16 to 256 MiB, base pages). Only the
/// run-time estimate uses it ([`FnBench::setup_time`]).
const TOUCH_PER_MIB: Duration = Duration::from_micros(600);

/// The set-up a round of a growth-curve group spends on `touched` bytes of
/// parent memory.
fn touch_setup(touched: u64) -> Duration {
    TOUCH_PER_MIB.mul_f64(touched as f64 / (1u64 << 20) as f64)
}

/// The largest parent of the growth curve at the quick profile: touching
/// and forking a 1 GiB parent takes about a second per round, and the
/// points up to 256 MiB already give the slope.
const QUICK_MAX_RSS: u64 = 256 << 20;

/// The id of the thread spawn.
const THREAD: &str = "process.thread";
/// The id of posix_spawn of `/bin/true`.
const POSIX_SPAWN_DYNAMIC: &str = "process.posix_spawn_dynamic";
/// The id of the ping-pong between two processes.
const PINGPONG_PROCESS: &str = "process.switch.pingpong_process";
/// The id of the ping-pong between two threads.
const PINGPONG_THREAD: &str = "process.switch.pingpong_thread";
/// The id of the pipe cost without a switch.
const PIPE_ALONE: &str = "process.switch.pipe_alone";
/// The id of the first touch of a base page.
const FAULT_ANON: &str = "process.page_fault.anon";
/// The id of the first touch of a huge page.
const FAULT_ANON_THP: &str = "process.page_fault.anon_thp";

/// A row of a table of benchmarks: id, summary, and what it runs.
type Row<T> = (&'static str, &'static str, T);

/// The spawns measured before the growth curve, without parent memory.
const FIRST_SPAWNS: [Row<(Method, Exe)>; 4] = [
    (
        THREAD,
        "std::thread::spawn of an empty closure + join",
        (Method::Thread, Exe::None),
    ),
    (
        "process.fork_exit",
        "fork() from a small parent (opcost re-executed, nothing else), the child calls _exit(0), waitpid",
        (Method::ForkExit, Exe::None),
    ),
    (
        "process.fork_exit.from_opcost",
        "fork() from opcost itself (its whole footprint), the child calls _exit(0), waitpid",
        (Method::ForkExit, Exe::None),
    ),
    (
        "process.vfork_exit",
        "vfork(), the child calls _exit(0), waitpid",
        (Method::VforkExit, Exe::None),
    ),
];

/// The other ways to start a program, measured with the rss=0 point of the
/// growth curve (and interleaved with it).
const OTHER_SPAWNS: [Row<(Method, Exe)>; 1] = [(
    POSIX_SPAWN_DYNAMIC,
    "posix_spawn of /bin/true (dynamic loader and libc start-up included), waitpid",
    (Method::PosixSpawn, Exe::True),
)];

/// The context-switch benchmarks.
const SWITCHES: [Row<Peer>; 3] = [
    (
        PINGPONG_PROCESS,
        "round trip of a byte over two pipes between two processes on one CPU (2 switches)",
        Peer::Process,
    ),
    (
        PINGPONG_THREAD,
        "round trip of a byte over two pipes between two threads on one CPU (2 switches)",
        Peer::Thread,
    ),
    (
        PIPE_ALONE,
        "one thread writes a byte to a pipe and reads it back: the pipe cost without a switch",
        Peer::Nobody,
    ),
];

/// The page-fault benchmarks.
const FAULTS: [Row<Kind>; 3] = [
    (
        FAULT_ANON,
        "first write to a page of fresh anonymous memory (base pages, THP off)",
        Kind::Anon,
    ),
    (
        FAULT_ANON_THP,
        "first write to a huge page of fresh anonymous memory (MADV_HUGEPAGE)",
        Kind::AnonThp,
    ),
    (
        "process.page_fault.file",
        "first read of a page of a cached file through a fresh mmap (fault-around included)",
        Kind::File,
    ),
];

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let mut v: Vec<Box<dyn Bench>> = FIRST_SPAWNS
        .iter()
        .map(|&(id, summary, (method, exe))| {
            spawn_bench(id.to_string(), summary, method, exe, None).boxed()
        })
        .collect();
    for rss in RSS_POINTS {
        let touched = if rss == 0 {
            String::new()
        } else {
            format!(", parent has touched {}", size_label(rss))
        };
        for (i, g) in GROWTH.iter().enumerate() {
            let b = spawn_bench(
                growth_id(g.name, rss),
                &format!("{}{touched}", g.summary),
                g.method,
                Exe::Static,
                Some(rss),
            );
            // The original three run at every point at every profile.
            let b = if i < 3 || QUICK_POINTS.contains(&rss) {
                b
            } else {
                b.min_profile(Profile::Default)
            };
            v.push(b.boxed());
        }
        if rss == 0 {
            for (id, summary, (method, exe)) in OTHER_SPAWNS {
                v.push(spawn_bench(id.to_string(), summary, method, exe, None).boxed());
            }
        }
    }
    for n in fds::FD_POINTS {
        for (method, name, what) in FD_SPAWNS {
            v.push(fds_bench(method, name, what, n).boxed());
        }
    }
    for n in nofile::NOFILE_POINTS {
        for (how, name, what) in NOFILE_SPAWNS {
            v.push(nofile_bench(how, name, what, n).boxed());
        }
    }
    for (id, summary, peer) in SWITCHES {
        let b = FnBench::new(id, summary, Unit::Latency, move |ctx| {
            Ok(Box::new(PingPong::new(peer, ctx)?) as Box<dyn crate::harness::Timed>)
        });
        // The two ping-pongs are interleaved; the pipe alone runs after
        // them, not between: its batches keep the CPU busy without a
        // pause, and on a loaded machine the scheduler then made the next
        // ping-pong batch wait behind other work (1.2-1.7x slower rounds).
        v.push(match peer {
            Peer::Nobody => b.boxed(),
            _ => b.interleave(format!("{AREA}.switch")).boxed(),
        });
    }
    for (id, summary, kind) in FAULTS {
        v.push(
            FnBench::new(id, summary, Unit::Latency, move |ctx| {
                Ok(Box::new(Faults::new(kind, ctx)?) as Box<dyn crate::harness::Timed>)
            })
            .param("touch", size_label(fault::touch_bytes(kind) as u64))
            .interleave(format!("{AREA}.page_fault"))
            .boxed(),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_design() {
        assert_eq!(
            growth_id("fork_exec", 256 << 20),
            "process.fork_exec/rss=256MiB"
        );
        assert_eq!(growth_id("posix_spawn", 0), "process.posix_spawn/rss=0B");
        let ids: Vec<String> = benches(&Host::default())
            .iter()
            .map(|b| b.id().to_string())
            .collect();
        for g in GROWTH {
            for rss in RSS_POINTS {
                assert!(ids.contains(&growth_id(g.name, rss)), "{} {rss}", g.name);
            }
        }
        let b = benches(&Host::default());
        let p = b
            .iter()
            .find(|b| b.id() == "process.fork_exec/rss=1GiB")
            .unwrap()
            .params();
        assert_eq!(p.get("rss").and_then(|v| v.as_str()), Some("1GiB"));
    }

    #[test]
    fn helper_rows_run_at_the_curve_ends_at_quick_and_everywhere_after() {
        let b = benches(&Host::default());
        let runs = |id: &str, p: Profile| b.iter().find(|b| b.id() == id).unwrap().runs_at(p);
        assert!(runs("process.popen/rss=0B", Profile::Quick));
        assert!(runs("process.popen/rss=256MiB", Profile::Quick));
        assert!(!runs("process.popen/rss=1GiB", Profile::Quick));
        assert!(!runs("process.popen/rss=64MiB", Profile::Quick));
        assert!(runs("process.popen/rss=64MiB", Profile::Default));
        assert!(runs("process.fork_exec/rss=64MiB", Profile::Quick));
        assert!(runs("process.fds.command/fds=1000", Profile::Quick));
        assert!(runs("process.fds.command/fds=10000", Profile::Quick));
        assert!(!runs("process.fds.command/fds=100000", Profile::Quick));
        assert!(runs("process.fds.command/fds=100000", Profile::Default));
        assert!(runs(
            "process.nofile.close_loop/nofile=65536",
            Profile::Quick
        ));
        assert!(!runs(
            "process.nofile.close_loop/nofile=1048576",
            Profile::Quick
        ));
        assert!(runs(
            "process.nofile.close_range/nofile=1048576",
            Profile::Default
        ));
    }
}
